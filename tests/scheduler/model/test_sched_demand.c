/*
 * Unit tests of the extender's cluster view (scheduler-ext/model/sched_state.c,
 * sched_demand.c, sched_topology.c): a pod's GPUs, gang key and flows from
 * its annotations, PVCs, PVs and StorageClasses; node labels; the topology
 * file's checks.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include <jansson.h>

#include "sched_demand.h"
#include "sched_state.h"
#include "sched_topology.h"

struct fx {
        struct gantry_cluster *c;
        struct gantry_sched_state *st;
};

static void apply(struct gantry_sched_state *st, enum gantry_obj_kind k, const char *text)
{
        json_error_t jerr;
        json_t *o = json_loads(text, 0, &jerr);
        struct gantry_error err;

        assert_non_null(o);
        assert_int_equal(gantry_sched_state_apply(st, k, false, o, &err), 0);
        json_decref(o);
}

static int setup(void **state)
{
        struct fx *f = calloc(1, sizeof(*f));

        assert_int_equal(gantry_cluster_new(&f->c), 0);
        assert_int_equal(gantry_sched_state_new(f->c, &f->st), 0);
        apply(f->st, GANTRY_OBJ_STORAGE_CLASS,
              "{\"metadata\":{\"name\":\"ds\"},\"provisioner\":\"csi.gantry.io\","
              "\"parameters\":{\"tier\":\"dataset\",\"clusterID\":\"ceph-a\","
              "\"gantry.io/read-gbps-per-gpu\":\"3\"}}");
        apply(f->st, GANTRY_OBJ_STORAGE_CLASS,
              "{\"metadata\":{\"name\":\"ck\",\"annotations\":{\"gantry.io/write-gbps-per-gpu\":\"2\"}},"
              "\"provisioner\":\"csi.gantry.io\",\"parameters\":{\"tier\":\"checkpoint\","
              "\"targetID\":\"tgt-a\",\"gantry.io/write-gbps-per-gpu\":\"99\"}}");
        apply(f->st, GANTRY_OBJ_PV,
              "{\"metadata\":{\"name\":\"pv-b\"},\"spec\":{\"storageClassName\":\"ds\",\"csi\":"
              "{\"driver\":\"csi.gantry.io\",\"volumeAttributes\":{\"tier\":\"dataset\","
              "\"clusterID\":\"ceph-b\"}}}}");
        apply(f->st, GANTRY_OBJ_PV,
              "{\"metadata\":{\"name\":\"pv-other\"},\"spec\":{\"csi\":{\"driver\":\"ebs.csi.aws.com\","
              "\"volumeAttributes\":{\"clusterID\":\"x\"}}}}");
        apply(f->st, GANTRY_OBJ_PVC,
              "{\"metadata\":{\"name\":\"bound\",\"namespace\":\"ml\"},\"spec\":"
              "{\"storageClassName\":\"ds\",\"volumeName\":\"pv-b\"}}");
        apply(f->st, GANTRY_OBJ_PVC,
              "{\"metadata\":{\"name\":\"unbound\",\"namespace\":\"ml\"},\"spec\":{\"storageClassName\":\"ds\"}}");
        apply(f->st, GANTRY_OBJ_PVC,
              "{\"metadata\":{\"name\":\"ckpt\",\"namespace\":\"ml\"},\"spec\":{\"storageClassName\":\"ck\"}}");
        apply(f->st, GANTRY_OBJ_PVC,
              "{\"metadata\":{\"name\":\"other\",\"namespace\":\"ml\"},\"spec\":{\"volumeName\":\"pv-other\"}}");
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fx *f = *state;

        gantry_sched_state_free(f->st);
        gantry_cluster_free(f->c);
        free(f);
        return 0;
}

/* A pod in namespace ml with @extra merged into metadata and the volumes named. */
static int demand_of(struct fx *f, const char *metadata_extra, const char *claims_json,
                     struct gantry_sched_demand *d, struct gantry_error *err)
{
        char text[2048];
        json_t *pod;
        int r;

        snprintf(text, sizeof(text),
                 "{\"metadata\":{\"name\":\"p\",\"namespace\":\"ml\",\"uid\":\"u1\"%s%s},"
                 "\"spec\":{\"containers\":[{\"resources\":{\"requests\":{\"nvidia.com/gpu\":\"2\"}}},"
                 "{\"resources\":{\"limits\":{\"nvidia.com/gpu\":2}}}],\"volumes\":%s}}",
                 metadata_extra ? "," : "", metadata_extra ? metadata_extra : "", claims_json);
        pod = json_loads(text, 0, NULL);
        assert_non_null(pod);
        r = gantry_sched_demand_from_pod(gantry_sched_state_cache(f->st), pod, d, err);
        json_decref(pod);
        return r;
}

static void test_rates_from_storage_class(void **state)
{
        struct fx *f = *state;
        struct gantry_sched_demand d;
        struct gantry_error err;

        assert_int_equal(demand_of(f, NULL,
                                   "[{\"name\":\"a\",\"persistentVolumeClaim\":{\"claimName\":\"bound\"}},"
                                   "{\"name\":\"b\",\"persistentVolumeClaim\":{\"claimName\":\"unbound\"}},"
                                   "{\"name\":\"c\",\"persistentVolumeClaim\":{\"claimName\":\"ckpt\"}},"
                                   "{\"name\":\"d\",\"persistentVolumeClaim\":{\"claimName\":\"other\"}},"
                                   "{\"name\":\"e\",\"emptyDir\":{}}]", &d, &err), 0);
        assert_string_equal(d.d.name, "ml/p");
        assert_string_equal(d.d.uid, "u1");
        assert_null(d.d.job);
        assert_int_equal(d.d.gpus, 4); /* requests, else limits */
        assert_int_equal(d.d.n_flows, 3); /* the non-Gantry PV takes nothing */
        /* bound PVC: the PV's clusterID (ceph-b), rate from its class: 4 x 3 */
        assert_string_equal(d.d.flows[0].backend, "ceph-b");
        assert_true(fabs(d.d.flows[0].gbps - 12) < 1e-9);
        /* unbound PVC: the class's parameters */
        assert_string_equal(d.d.flows[1].backend, "ceph-a");
        assert_true(fabs(d.d.flows[1].gbps - 12) < 1e-9);
        /* checkpoint: the annotation wins over the parameter: 4 x 2 */
        assert_string_equal(d.d.flows[2].backend, "tgt-a");
        assert_true(fabs(d.d.flows[2].gbps - 8) < 1e-9);
}

/* A promoted copy counts where it is only once it is done. */
static void test_copy_in_progress_has_no_backend(void **state)
{
        struct fx *f = *state;
        struct gantry_sched_demand d;
        struct gantry_error err;

        /* pending with a data source: the promotion's copy is still running */
        apply(f->st, GANTRY_OBJ_PVC,
              "{\"metadata\":{\"name\":\"copying\",\"namespace\":\"ml\"},\"spec\":"
              "{\"storageClassName\":\"ds\",\"dataSource\":{\"apiGroup\":"
              "\"snapshot.storage.k8s.io\",\"kind\":\"VolumeSnapshot\",\"name\":\"s1\"}}}");
        apply(f->st, GANTRY_OBJ_PVC,
              "{\"metadata\":{\"name\":\"copying-ref\",\"namespace\":\"ml\"},\"spec\":"
              "{\"storageClassName\":\"ds\",\"dataSourceRef\":{\"kind\":"
              "\"PersistentVolumeClaim\",\"name\":\"bound\"}}}");
        /* bound to a PV whose copy is done, is demoted, or says nothing */
        apply(f->st, GANTRY_OBJ_PV,
              "{\"metadata\":{\"name\":\"pv-done\",\"annotations\":{\"gantry.io/copy-state\":"
              "\"done\"}},\"spec\":{\"storageClassName\":\"ds\",\"csi\":{\"driver\":"
              "\"csi.gantry.io\",\"volumeAttributes\":{\"tier\":\"dataset\",\"clusterID\":\"perf\"}}}}");
        apply(f->st, GANTRY_OBJ_PV,
              "{\"metadata\":{\"name\":\"pv-demoted\",\"annotations\":{\"gantry.io/copy-state\":"
              "\"demoted\"}},\"spec\":{\"storageClassName\":\"ds\",\"csi\":{\"driver\":"
              "\"csi.gantry.io\",\"volumeAttributes\":{\"tier\":\"dataset\",\"clusterID\":\"perf\"}}}}");
        apply(f->st, GANTRY_OBJ_PVC,
              "{\"metadata\":{\"name\":\"done\",\"namespace\":\"ml\"},\"spec\":{\"storageClassName\":"
              "\"ds\",\"volumeName\":\"pv-done\",\"dataSource\":{\"kind\":\"VolumeSnapshot\","
              "\"name\":\"s1\"}}}");
        apply(f->st, GANTRY_OBJ_PVC,
              "{\"metadata\":{\"name\":\"demoted\",\"namespace\":\"ml\"},\"spec\":"
              "{\"storageClassName\":\"ds\",\"volumeName\":\"pv-demoted\"}}");
        assert_int_equal(demand_of(f, NULL,
                                   "[{\"name\":\"a\",\"persistentVolumeClaim\":{\"claimName\":\"copying\"}},"
                                   "{\"name\":\"b\",\"persistentVolumeClaim\":{\"claimName\":\"copying-ref\"}},"
                                   "{\"name\":\"c\",\"persistentVolumeClaim\":{\"claimName\":\"done\"}},"
                                   "{\"name\":\"d\",\"persistentVolumeClaim\":{\"claimName\":\"demoted\"}},"
                                   "{\"name\":\"e\",\"persistentVolumeClaim\":{\"claimName\":\"bound\"}}]",
                                   &d, &err), 0);
        assert_int_equal(d.d.n_flows, 5);
        /* still charged (NIC, uplink) at the class's rate, but near no backend */
        assert_null(d.d.flows[0].backend);
        assert_true(fabs(d.d.flows[0].gbps - 12) < 1e-9);
        assert_null(d.d.flows[1].backend);
        assert_string_equal(d.d.flows[2].backend, "perf"); /* done: counts where it is */
        assert_null(d.d.flows[3].backend);
        assert_string_equal(d.d.flows[4].backend, "ceph-b"); /* no annotation: in place */
}

static void test_annotations_split_and_job(void **state)
{
        struct fx *f = *state;
        struct gantry_sched_demand d;
        struct gantry_error err;

        assert_int_equal(demand_of(f,
                                   "\"annotations\":{\"gantry.io/dataset-read-gbps\":\"30\","
                                   "\"gantry.io/checkpoint-write-gbps\":\"7\"},"
                                   "\"labels\":{\"jobset.sigs.k8s.io/jobset-name\":\"js\"},"
                                   "\"ownerReferences\":[{\"kind\":\"Job\",\"name\":\"j\",\"controller\":true}]",
                                   "[{\"name\":\"a\",\"persistentVolumeClaim\":{\"claimName\":\"bound\"}},"
                                   "{\"name\":\"b\",\"persistentVolumeClaim\":{\"claimName\":\"unbound\"}}]",
                                   &d, &err), 0);
        assert_string_equal(d.d.job, "ml/JobSet/js");
        assert_int_equal(d.d.n_flows, 3);
        assert_true(fabs(d.d.flows[0].gbps - 15) < 1e-9); /* 30 over two dataset volumes */
        assert_true(fabs(d.d.flows[1].gbps - 15) < 1e-9);
        assert_null(d.d.flows[2].backend); /* a write with no checkpoint volume */
        assert_true(fabs(d.d.flows[2].gbps - 7) < 1e-9);

        assert_int_equal(demand_of(f, "\"labels\":{\"gantry.io/job\":\"llm\"},"
                                      "\"ownerReferences\":[{\"kind\":\"PyTorchJob\",\"name\":\"t\","
                                      "\"controller\":true}]", "[]", &d, &err), 0);
        assert_string_equal(d.d.job, "ml/llm");
        assert_int_equal(demand_of(f, "\"ownerReferences\":[{\"kind\":\"ReplicaSet\",\"name\":\"r\","
                                      "\"controller\":true},{\"kind\":\"PyTorchJob\",\"name\":\"t\","
                                      "\"controller\":true}]", "[]", &d, &err), 0);
        assert_string_equal(d.d.job, "ml/PyTorchJob/t");
}

static void test_bad_values_name_the_field(void **state)
{
        struct fx *f = *state;
        struct gantry_sched_demand d;
        struct gantry_error err;

        assert_int_equal(demand_of(f, "\"annotations\":{\"gantry.io/checkpoint-write-gbps\":\"-1\"}",
                                   "[]", &d, &err), -EINVAL);
        assert_string_equal(err.msg, "pod ml/p: annotation gantry.io/checkpoint-write-gbps: \"-1\" "
                                     "is not a number of Gbps >= 0");
        apply(f->st, GANTRY_OBJ_STORAGE_CLASS,
              "{\"metadata\":{\"name\":\"ds\",\"annotations\":{\"gantry.io/read-gbps-per-gpu\":\"fast\"}},"
              "\"provisioner\":\"csi.gantry.io\",\"parameters\":{\"clusterID\":\"ceph-a\"}}");
        assert_int_equal(demand_of(f, NULL,
                                   "[{\"name\":\"b\",\"persistentVolumeClaim\":{\"claimName\":\"unbound\"}}]",
                                   &d, &err), -EINVAL);
        assert_string_equal(err.msg, "StorageClass ds: gantry.io/read-gbps-per-gpu: \"fast\" is not "
                                     "a number of Gbps >= 0");
}

static void test_node_labels(void **state)
{
        struct fx *f = *state;
        struct gantry_node_spec s;
        struct gantry_error err;
        json_t *n = json_loads("{\"metadata\":{\"name\":\"g\",\"labels\":{"
                               "\"network.topology.nvidia.com/leaf\":\"l1\","
                               "\"network.topology.nvidia.com/spine\":\"s1\","
                               "\"gantry.io/nvmeof-transports\":\"rdma,tcp\"}},"
                               "\"status\":{\"allocatable\":{\"nvidia.com/gpu\":\"8\"}}}", 0, NULL);
        struct gantry_sched_defaults def = { .nic_gbps = 200 };

        (void)f;
        assert_int_equal(gantry_sched_node_spec(n, &def, &s, &err), 0);
        assert_string_equal(s.leaf, "l1");
        assert_string_equal(s.spine, "s1");
        assert_true(s.nic_gbps == 200);
        assert_int_equal(s.gpus, 8);
        assert_int_equal(s.transports, GANTRY_TRANSPORT_TCP | GANTRY_TRANSPORT_RDMA);
        json_object_set_new(json_object_get(json_object_get(n, "metadata"), "labels"),
                            "gantry.io/nvmeof-transports", json_string("fc"));
        assert_int_equal(gantry_sched_node_spec(n, &def, &s, &err), -EINVAL);
        assert_string_equal(err.msg, "Node g: label gantry.io/nvmeof-transports: unknown transport "
                                     "\"fc\" (tcp, rdma)");
        json_object_set_new(json_object_get(json_object_get(n, "metadata"), "labels"),
                            "gantry.io/nvmeof-transports", json_string("tcp"));
        json_object_set_new(json_object_get(json_object_get(n, "metadata"), "labels"),
                            "gantry.io/nic-gbps", json_string("40G"));
        assert_int_equal(gantry_sched_node_spec(n, &def, &s, &err), -EINVAL);
        assert_string_equal(err.msg, "g: Node label gantry.io/nic-gbps: \"40G\" is not a number of "
                                     "Gbps >= 0");
        json_decref(n);
}

static void test_topology_file(void **state)
{
        struct fx *f = *state;
        struct gantry_error err;
        struct gantry_node_usage u;

        assert_int_equal(gantry_sched_topology_parse(f->st, "{\"leavs\":[]}", "t.json", &err), -EINVAL);
        assert_string_equal(err.msg, "t.json: topology.leavs: unknown key");
        assert_int_equal(gantry_sched_topology_parse(
                                 f->st, "{\"backends\":[{\"name\":\"b\",\"kind\":\"nfs\"}]}", "t.json", &err),
                         -EINVAL);
        assert_string_equal(err.msg, "t.json: backends[0].kind: must be \"ceph\" or \"nvmeof\"");
        assert_int_equal(gantry_sched_topology_parse(f->st, "{\"leaves\":[{\"name\":\"l\",\"uplinkGbps\":\"9\"}]}",
                                                     "t.json", &err), -EINVAL);
        assert_string_equal(err.msg, "t.json: leaves[0].uplinkGbps: must be a number >= 0");
        /* defaults: a leaf the file does not list gets the default ratio */
        assert_int_equal(gantry_sched_topology_parse(
                                 f->st, "{\"defaults\":{\"nicGbps\":100,\"oversubscription\":4},"
                                        "\"leaves\":[{\"name\":\"listed\",\"uplinkGbps\":30}]}",
                                 "t.json", &err), 0);
        apply(f->st, GANTRY_OBJ_NODE, "{\"metadata\":{\"name\":\"a\",\"labels\":"
                                      "{\"network.topology.nvidia.com/leaf\":\"unlisted\"}}}");
        apply(f->st, GANTRY_OBJ_NODE, "{\"metadata\":{\"name\":\"b\",\"labels\":"
                                      "{\"network.topology.nvidia.com/leaf\":\"listed\"}}}");
        assert_int_equal(gantry_cluster_node_usage(f->c, "a", &u), 0);
        assert_true(fabs(u.uplink_gbps - 25) < 1e-9 && fabs(u.nic_gbps - 100) < 1e-9);
        assert_int_equal(gantry_cluster_node_usage(f->c, "b", &u), 0);
        assert_true(fabs(u.uplink_gbps - 30) < 1e-9);
}

/* Topograph v1's labels (tier-0 the leaf, tier-1 the spine, the accelerator
 * domain) are read as v0's are, and win where a node carries both. */
static void test_topograph_v1_labels(void **state)
{
        struct gantry_node_spec s;
        struct gantry_error err;
        struct gantry_sched_defaults def = { .nic_gbps = 200 };
        json_t *n = json_loads("{\"metadata\":{\"name\":\"g\",\"labels\":{"
                               "\"fabric.topograph.run/tier-0\":\"S-leaf\","
                               "\"fabric.topograph.run/tier-1\":\"S-spine\","
                               "\"accelerator.topograph.run/domain\":\"nvl-1\"}}}", 0, NULL);
        json_t *labels = json_object_get(json_object_get(n, "metadata"), "labels");

        (void)state;
        assert_int_equal(gantry_sched_node_spec(n, &def, &s, &err), 0);
        assert_string_equal(s.leaf, "S-leaf");
        assert_string_equal(s.spine, "S-spine");
        assert_string_equal(s.accelerator, "nvl-1");
        /* a node being relabelled carries both: v1 wins */
        json_object_set_new(labels, "network.topology.nvidia.com/leaf", json_string("old-leaf"));
        assert_int_equal(gantry_sched_node_spec(n, NULL, &s, &err), 0);
        assert_string_equal(s.leaf, "S-leaf");
        json_object_del(labels, "fabric.topograph.run/tier-0");
        assert_int_equal(gantry_sched_node_spec(n, &def, &s, &err), 0);
        assert_string_equal(s.leaf, "old-leaf");
        json_decref(n);
}

/* The topology file's "labels" name the keys (Kueue's Topology levels, a
 * site's own), which then replace the defaults; bad keys name the field. */
static void test_topology_label_keys(void **state)
{
        struct fx *f = *state;
        struct gantry_error err;
        struct gantry_node_usage u;

        assert_int_equal(gantry_sched_topology_parse(f->st, "{\"labels\":{\"rack\":[\"x\"]}}",
                                                     "t.json", &err), -EINVAL);
        assert_string_equal(err.msg, "t.json: labels.rack: unknown key");
        assert_int_equal(gantry_sched_topology_parse(f->st, "{\"labels\":{\"leaf\":[]}}", "t.json",
                                                     &err), -EINVAL);
        assert_string_equal(err.msg, "t.json: labels.leaf: must be an array of 1 to 4 label keys");
        assert_int_equal(gantry_sched_topology_parse(f->st, "{\"labels\":{\"spine\":[\"a b\"]}}",
                                                     "t.json", &err), -EINVAL);
        assert_string_equal(err.msg, "t.json: labels.spine[0]: not a label key (letters, digits, "
                                     "'-', '_', '.', '/')");
        assert_int_equal(gantry_sched_topology_parse(
                                 f->st, "{\"labels\":{\"leaf\":[\"cloud.example/block\"]},"
                                        "\"leaves\":[{\"name\":\"b1\",\"uplinkGbps\":30}]}",
                                 "t.json", &err), 0);
        /* the named key is read; the default keys no longer are */
        apply(f->st, GANTRY_OBJ_NODE, "{\"metadata\":{\"name\":\"a\",\"labels\":"
                                      "{\"cloud.example/block\":\"b1\"}}}");
        apply(f->st, GANTRY_OBJ_NODE, "{\"metadata\":{\"name\":\"b\",\"labels\":"
                                      "{\"fabric.topograph.run/tier-0\":\"b1\"}}}");
        assert_int_equal(gantry_cluster_node_usage(f->c, "a", &u), 0);
        assert_true(fabs(u.uplink_gbps - 30) < 1e-9);
        assert_int_equal(gantry_cluster_node_usage(f->c, "b", &u), 0);
        assert_true(u.uplink_gbps == 0); /* leafless: no uplink of b1's */
}

static void apply_event(struct gantry_sched_state *st, enum gantry_obj_kind k, bool deleted,
                        const char *text)
{
        json_t *o = json_loads(text, 0, NULL);
        struct gantry_error err = { 0 };

        assert_non_null(o);
        assert_int_equal(gantry_sched_state_apply(st, k, deleted, o, &err), 0);
        json_decref(o);
}

static void bound_pod(struct gantry_sched_state *st, bool deleted, const char *uid, const char *node)
{
        char text[512];

        snprintf(text, sizeof(text),
                 "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ml\",\"uid\":\"%s\"},"
                 "\"spec\":{\"nodeName\":\"%s\",\"containers\":[{\"resources\":"
                 "{\"requests\":{\"nvidia.com/gpu\":\"2\"}}}]}}",
                 uid, uid, node);
        apply_event(st, GANTRY_OBJ_POD, deleted, text);
}

/* A pending pod's update refreshes the pod that filter kept for bind (bind
 * reads it back by UID); a pending pod filter never saw is not kept by its
 * updates, however many. */
static void test_pending_updates_refresh_only_kept_pods(void **state)
{
        struct fx *f = *state;
        const char *pending = "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ml\",\"uid\":\"%s\","
                              "\"labels\":{\"v\":\"%d\"}},\"spec\":{\"containers\":[]}}";
        char text[512];
        json_t *pod, *got;

        snprintf(text, sizeof(text), pending, "seen", "u-seen", 1);
        pod = json_loads(text, 0, NULL);
        assert_non_null(pod);
        gantry_sched_state_remember_pod(f->st, pod);
        json_decref(pod);
        for (int v = 2; v <= 3; v++) {
                snprintf(text, sizeof(text), pending, "seen", "u-seen", v);
                apply_event(f->st, GANTRY_OBJ_POD, false, text);
                snprintf(text, sizeof(text), pending, "unseen", "u-unseen", v);
                apply_event(f->st, GANTRY_OBJ_POD, false, text);
        }
        got = gantry_sched_state_get_pod(f->st, "u-seen");
        assert_non_null(got);
        assert_string_equal(json_string_value(json_object_get(
                                    json_object_get(json_object_get(got, "metadata"), "labels"), "v")),
                            "3");
        json_decref(got);
        assert_null(gantry_sched_state_get_pod(f->st, "u-unseen"));
}

/* Pods seen bound to a node the model does not have yet are charged when
 * the node appears (the pod informer may sync first); a node's DELETED
 * needs only its name. */
static void test_pods_wait_for_their_node(void **state)
{
        struct fx *f = *state;
        struct gantry_node_usage u;
        const char *node = "{\"metadata\":{\"name\":\"%s\",\"labels\":"
                           "{\"network.topology.nvidia.com/leaf\":\"l1\"}},"
                           "\"status\":{\"allocatable\":{\"nvidia.com/gpu\":\"8\"}}}";
        char text[512];

        bound_pod(f->st, false, "a1", "late-1");
        bound_pod(f->st, false, "a2", "late-1");
        bound_pod(f->st, false, "b1", "late-2");
        bound_pod(f->st, true, "a2", "late-1"); /* gone before its node came */
        snprintf(text, sizeof(text), node, "late-1");
        apply_event(f->st, GANTRY_OBJ_NODE, false, text);
        assert_int_equal(gantry_cluster_node_usage(f->c, "late-1", &u), 0);
        assert_int_equal(u.gpus_used, 2);
        snprintf(text, sizeof(text), node, "late-2");
        apply_event(f->st, GANTRY_OBJ_NODE, false, text);
        assert_int_equal(gantry_cluster_node_usage(f->c, "late-2", &u), 0);
        assert_int_equal(u.gpus_used, 2);
        /* a DELETED tombstone with only a name (labels no longer parse) */
        apply_event(f->st, GANTRY_OBJ_NODE, true,
                    "{\"metadata\":{\"name\":\"late-2\",\"labels\":"
                    "{\"gantry.io/nic-gbps\":\"fast\"}}}");
        assert_false(gantry_cluster_has_node(f->c, "late-2"));
}

static const char *const late_node =
        "{\"metadata\":{\"name\":\"%s\",\"labels\":"
        "{\"network.topology.nvidia.com/leaf\":\"l1\"}},"
        "\"status\":{\"allocatable\":{\"nvidia.com/gpu\":\"8\"}}}";

/* Whether @node has no GPU charged and the ledger no entry (node re-added to look). */
static void assert_nothing_charged(struct fx *f, const char *node)
{
        struct gantry_cluster_stats s;
        struct gantry_node_usage u;
        char text[512];

        snprintf(text, sizeof(text), late_node, node);
        apply_event(f->st, GANTRY_OBJ_NODE, false, text);
        assert_int_equal(gantry_cluster_node_usage(f->c, node, &u), 0);
        assert_int_equal(u.gpus_used, 0);
        gantry_cluster_stats(f->c, &s);
        assert_int_equal(s.entries, 0);
}

/* A node's DELETED gives back what its pods held; a pod that outlives
 * it is charged again when the node comes back. */
static void test_removed_node_gives_back_its_pods(void **state)
{
        struct fx *f = *state;
        struct gantry_cluster_stats s;
        struct gantry_node_usage u;
        char text[512];

        snprintf(text, sizeof(text), late_node, "gone-1");
        apply_event(f->st, GANTRY_OBJ_NODE, false, text);
        bound_pod(f->st, false, "r1", "gone-1");
        bound_pod(f->st, false, "r2", "gone-1");
        gantry_cluster_stats(f->c, &s);
        assert_int_equal(s.entries, 2);
        apply_event(f->st, GANTRY_OBJ_NODE, true, "{\"metadata\":{\"name\":\"gone-1\"}}");
        gantry_cluster_stats(f->c, &s);
        assert_int_equal(s.entries, 0);
        /* r1 is still reported bound there (a status update): it waits for the node */
        bound_pod(f->st, false, "r1", "gone-1");
        bound_pod(f->st, true, "r2", "gone-1");
        apply_event(f->st, GANTRY_OBJ_NODE, false, text);
        assert_int_equal(gantry_cluster_node_usage(f->c, "gone-1", &u), 0);
        assert_int_equal(u.gpus_used, 2);
        bound_pod(f->st, true, "r1", "gone-1");
        assert_nothing_charged(f, "gone-1");
}

struct churn {
        struct gantry_sched_state *st;
        int rounds;
        pthread_barrier_t waiting, done;
};

/* The pod informer's thread: pod i is seen bound to node churn-i before the
 * node exists, then deleted while the node informer adds churn-i. */
static void *pod_churn(void *arg)
{
        struct churn *ch = arg;
        char uid[32], node[32];

        for (int i = 0; i < ch->rounds; i++) {
                snprintf(uid, sizeof(uid), "c%d", i);
                snprintf(node, sizeof(node), "churn-%d", i);
                bound_pod(ch->st, false, uid, node);
                pthread_barrier_wait(&ch->waiting);
                bound_pod(ch->st, true, uid, node);
                pthread_barrier_wait(&ch->done);
        }
        return NULL;
}

/* A pod's DELETED racing its node's ADDED (the node informer recording
 * the pods that waited for it) never leaves the pod charged. Two threads, as
 * the two informers, each round racing one pod's DELETED against its node's
 * ADDED; the ledger must be empty after. */
static void test_pod_deleted_while_its_node_appears(void **state)
{
        struct fx *f = *state;
        struct churn ch = { .st = f->st, .rounds = 20000 };
        struct gantry_cluster_stats s;
        pthread_t t;
        char text[512], node[32];

        pthread_barrier_init(&ch.waiting, NULL, 2);
        pthread_barrier_init(&ch.done, NULL, 2);
        assert_int_equal(pthread_create(&t, NULL, pod_churn, &ch), 0);
        for (int i = 0; i < ch.rounds; i++) {
                snprintf(node, sizeof(node), "churn-%d", i);
                snprintf(text, sizeof(text), late_node, node);
                pthread_barrier_wait(&ch.waiting);
                apply_event(f->st, GANTRY_OBJ_NODE, false, text);
                pthread_barrier_wait(&ch.done);
        }
        pthread_join(t, NULL);
        pthread_barrier_destroy(&ch.waiting);
        pthread_barrier_destroy(&ch.done);
        gantry_cluster_stats(f->c, &s);
        assert_int_equal(s.entries, 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_rates_from_storage_class, setup, teardown),
                cmocka_unit_test_setup_teardown(test_copy_in_progress_has_no_backend, setup, teardown),
                cmocka_unit_test_setup_teardown(test_annotations_split_and_job, setup, teardown),
                cmocka_unit_test_setup_teardown(test_bad_values_name_the_field, setup, teardown),
                cmocka_unit_test_setup_teardown(test_node_labels, setup, teardown),
                cmocka_unit_test_setup_teardown(test_topology_file, setup, teardown),
                cmocka_unit_test_setup_teardown(test_topograph_v1_labels, setup, teardown),
                cmocka_unit_test_setup_teardown(test_topology_label_keys, setup, teardown),
                cmocka_unit_test_setup_teardown(test_pending_updates_refresh_only_kept_pods, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_pods_wait_for_their_node, setup, teardown),
                cmocka_unit_test_setup_teardown(test_removed_node_gives_back_its_pods, setup, teardown),
                cmocka_unit_test_setup_teardown(test_pod_deleted_while_its_node_appears, setup,
                                                teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
