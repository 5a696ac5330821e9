/*
 * Unit tests of the placement library's model and ledger (scheduler-ext/
 * placement/fabric.c, ledger.c): building a fabric, capacities, validation, filter
 * reasons, reservations, their expiry and replacement.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "placement.h"

/* leaf-1 (spine-1): gpu-1, gpu-2, ceph-a; leaf-2 (spine-1): gpu-3; leaf-3 (spine-2): gpu-4 */
static struct gantry_cluster *small_cluster(void)
{
        struct gantry_cluster *c;
        struct gantry_error err;

        assert_int_equal(gantry_cluster_new(&c), 0);
        assert_int_equal(gantry_cluster_set_leaf(c, &(struct gantry_leaf_spec){
                .name = "leaf-1", .spine = "spine-1", .uplink_gbps = 100 }, &err), 0);
        assert_int_equal(gantry_cluster_set_leaf(c, &(struct gantry_leaf_spec){
                .name = "leaf-2", .spine = "spine-1", .uplink_gbps = 30 }, &err), 0);
        assert_int_equal(gantry_cluster_set_leaf(c, &(struct gantry_leaf_spec){
                .name = "leaf-3", .spine = "spine-2", .oversubscription = 2 }, &err), 0);
        const char *names[] = { "gpu-1", "gpu-2", "gpu-3", "gpu-4" };
        const char *leaves[] = { "leaf-1", "leaf-1", "leaf-2", "leaf-3" };
        for (int i = 0; i < 4; i++)
                assert_int_equal(gantry_cluster_set_node(c, &(struct gantry_node_spec){
                        .name = names[i], .leaf = leaves[i], .nic_gbps = 100, .gpus = 8 }, &err), 0);
        assert_int_equal(gantry_cluster_set_backend(c, &(struct gantry_backend_spec){
                .name = "ceph-a", .kind = GANTRY_BACKEND_CEPH, .gbps = 150,
                .leaves = (const char *[]){ "leaf-1" }, .n_leaves = 1 }, &err), 0);
        assert_int_equal(gantry_cluster_set_backend(c, &(struct gantry_backend_spec){
                .name = "tgt-rdma", .kind = GANTRY_BACKEND_NVMEOF, .gbps = 400,
                .transport = GANTRY_TRANSPORT_RDMA,
                .leaves = (const char *[]){ "leaf-2" }, .n_leaves = 1 }, &err), 0);
        return c;
}

static struct gantry_pod_demand demand(const char *uid, const char *backend, double gbps)
{
        struct gantry_pod_demand d = { .uid = uid, .name = uid, .gpus = 1, .n_flows = 1 };

        d.flows[0].backend = backend;
        d.flows[0].gbps = gbps;
        return d;
}

static void test_build_and_stats(void **state)
{
        struct gantry_cluster *c = small_cluster();
        struct gantry_cluster_stats s;
        struct gantry_node_usage u;

        (void)state;
        gantry_cluster_stats(c, &s);
        assert_int_equal(s.nodes, 4);
        assert_int_equal(s.leaves, 3);
        assert_int_equal(s.spines, 2);
        assert_int_equal(s.backends, 2);
        assert_true(gantry_cluster_has_node(c, "gpu-3"));
        assert_false(gantry_cluster_has_node(c, "gpu-9"));
        /* leaf-3's uplink is derived: one 100 Gbps node at 2:1 */
        assert_int_equal(gantry_cluster_node_usage(c, "gpu-4", &u), 0);
        assert_true(fabs(u.uplink_gbps - 50) < 1e-9);
        /* a second node on leaf-3 doubles it; removing it halves it again */
        assert_int_equal(gantry_cluster_set_node(c, &(struct gantry_node_spec){
                .name = "gpu-5", .leaf = "leaf-3", .nic_gbps = 100 }, NULL), 0);
        assert_int_equal(gantry_cluster_node_usage(c, "gpu-4", &u), 0);
        assert_true(fabs(u.uplink_gbps - 100) < 1e-9);
        assert_int_equal(gantry_cluster_remove_node(c, "gpu-5"), 0);
        assert_int_equal(gantry_cluster_remove_node(c, "gpu-5"), -ENOENT);
        assert_int_equal(gantry_cluster_node_usage(c, "gpu-4", &u), 0);
        assert_true(fabs(u.uplink_gbps - 50) < 1e-9);
        /* updating a node in place moves its NIC to the new leaf */
        assert_int_equal(gantry_cluster_set_node(c, &(struct gantry_node_spec){
                .name = "gpu-4", .leaf = "leaf-3", .nic_gbps = 200 }, NULL), 0);
        assert_int_equal(gantry_cluster_node_usage(c, "gpu-4", &u), 0);
        assert_true(fabs(u.uplink_gbps - 100) < 1e-9);
        gantry_cluster_stats(c, &s);
        assert_int_equal(s.nodes, 4);
        gantry_cluster_free(c);
}

/* The refusal of @v on @node as a log line reads it. */
static const char *detail(const struct gantry_node_verdict *v, const char *node)
{
        static char buf[512];

        gantry_node_verdict_detail(v, node, buf, sizeof(buf));
        return buf;
}

static void test_validation(void **state)
{
        struct gantry_cluster *c = small_cluster();
        struct gantry_error err;
        struct gantry_pod_demand d = demand("u", "ceph-a", NAN);
        struct gantry_node_verdict v;
        char longname[300];

        (void)state;
        assert_int_equal(gantry_cluster_set_node(c, &(struct gantry_node_spec){ .name = "" }, &err),
                         -EINVAL);
        assert_string_equal(err.msg, "node.name: must not be empty");
        assert_int_equal(gantry_cluster_set_node(c, &(struct gantry_node_spec){
                .name = "x", .nic_gbps = -1 }, &err), -EINVAL);
        assert_string_equal(err.msg, "node.nicGbps: must be a number >= 0");
        memset(longname, 'a', sizeof(longname) - 1);
        longname[sizeof(longname) - 1] = '\0';
        assert_int_equal(gantry_cluster_set_leaf(c, &(struct gantry_leaf_spec){ .name = longname },
                                                 &err), -EINVAL);
        assert_int_equal(gantry_cluster_set_backend(c, &(struct gantry_backend_spec){
                .name = "b", .kind = 7 }, &err), -EINVAL);
        assert_string_equal(err.msg, "backend.kind: must be ceph or nvmeof");
        assert_int_equal(gantry_cluster_filter(c, &d, (const char *[]){ "gpu-1" }, 1, &v, &err),
                         -EINVAL);
        assert_string_equal(err.msg, "pod u: flows[0].gbps: must be a number >= 0");
        d = demand(NULL, "ceph-a", 1);
        assert_int_equal(gantry_cluster_reserve(c, &d, "gpu-1", 0, NULL, &err), -EINVAL);
        d = demand("u", "ceph-a", 1);
        d.n_flows = GANTRY_PLACEMENT_MAX_FLOWS + 1;
        assert_int_equal(gantry_cluster_reserve(c, &d, "gpu-1", 0, NULL, &err), -EINVAL);
        gantry_cluster_free(c);
}

static void test_filter_reasons(void **state)
{
        struct gantry_cluster *c = small_cluster();
        struct gantry_error err;
        const char *nodes[] = { "gpu-1", "gpu-3", "gpu-4", "gpu-9" };
        struct gantry_node_verdict v[4];
        struct gantry_pod_demand d = demand("p1", "ceph-a", 40);

        (void)state;
        assert_int_equal(gantry_cluster_filter(c, &d, nodes, 4, v, &err), 0);
        assert_true(v[0].fits);                 /* same leaf as ceph-a: no uplink */
        assert_false(v[1].fits);                /* leaf-2 uplink is 30 */
        assert_string_equal(v[1].reason, "leaf uplink full (pod needs 40 Gbps)");
        assert_int_equal(v[1].cause, GANTRY_REFUSAL_UPLINK);
        assert_string_equal(detail(&v[1], nodes[1]), "leaf-2 uplink: 30 Gbps free, pod needs 40 Gbps");
        assert_false(v[1].unresolvable);
        assert_true(v[2].fits);                 /* leaf-3 uplink 50 */
        assert_false(v[3].fits);
        assert_string_equal(v[3].reason, "node unknown to gantry-scheduler (no Node seen yet)");
        assert_string_equal(detail(&v[3], nodes[3]),
                            "gpu-9: unknown to gantry-scheduler (no Node seen yet)");

        /* NIC: 100 Gbps; 70 already taken by another pod */
        struct gantry_pod_demand other = demand("p0", NULL, 70);
        assert_int_equal(gantry_cluster_record(c, &other, "gpu-1", &err), 0);
        d = demand("p1", "ceph-a", 40);
        assert_int_equal(gantry_cluster_filter(c, &d, nodes, 1, v, &err), 0);
        assert_false(v[0].fits);
        assert_string_equal(v[0].reason, "node NIC full (pod needs 40 Gbps)");
        assert_string_equal(detail(&v[0], "gpu-1"), "gpu-1 NIC: 30 Gbps free, pod needs 40 Gbps");

        /* backend: 150 Gbps; gpu-2 same leaf */
        struct gantry_pod_demand big = demand("p2", "ceph-a", 99.5);
        assert_int_equal(gantry_cluster_record(c, &big, "gpu-2", &err), 0);
        d = demand("p3", "ceph-a", 60);
        /* widen leaf-3's uplink (an update in place), and leaf-1's that
         * ceph-a's reads leave by, so the backend is the limit */
        assert_int_equal(gantry_cluster_set_leaf(c, &(struct gantry_leaf_spec){
                .name = "leaf-3", .spine = "spine-2", .uplink_gbps = 400 }, &err), 0);
        assert_int_equal(gantry_cluster_set_leaf(c, &(struct gantry_leaf_spec){
                .name = "leaf-1", .spine = "spine-1", .uplink_gbps = 400 }, &err), 0);
        assert_int_equal(gantry_cluster_filter(c, &d, (const char *[]){ "gpu-4" }, 1, v, &err), 0);
        assert_false(v[0].fits);
        assert_string_equal(v[0].reason, "storage backend full (pod needs 60 Gbps)");
        assert_string_equal(detail(&v[0], "gpu-4"), "backend ceph-a: 50.5 Gbps free, pod needs 60 Gbps");

        /* reachability: an rdma target from a tcp-only node */
        d = demand("p4", "tgt-rdma", 1);
        assert_int_equal(gantry_cluster_filter(c, &d, (const char *[]){ "gpu-3" }, 1, v, &err), 0);
        assert_false(v[0].fits);
        assert_string_equal(v[0].reason, "checkpoint target serves rdma only, node has no rdma");
        assert_string_equal(detail(&v[0], "gpu-3"), "target tgt-rdma: serves rdma only, gpu-3 has no rdma");
        assert_true(v[0].unresolvable);
        assert_int_equal(gantry_cluster_set_node(c, &(struct gantry_node_spec){
                .name = "gpu-3", .leaf = "leaf-2", .nic_gbps = 100,
                .transports = GANTRY_TRANSPORT_TCP | GANTRY_TRANSPORT_RDMA }, &err), 0);
        assert_int_equal(gantry_cluster_filter(c, &d, (const char *[]){ "gpu-3" }, 1, v, &err), 0);
        assert_true(v[0].fits);

        /* GPUs */
        d = demand("p5", NULL, 0);
        d.gpus = 9;
        assert_int_equal(gantry_cluster_filter(c, &d, (const char *[]){ "gpu-4" }, 1, v, &err), 0);
        assert_false(v[0].fits);
        assert_string_equal(v[0].reason, "not enough free GPUs (pod needs 9)");
        assert_string_equal(detail(&v[0], "gpu-4"), "gpu-4: 8 GPUs free, pod needs 9");
        gantry_cluster_free(c);
}

/* A backend on its own leaf sends everything it serves to other leaves
 * through that leaf's uplink, 1/k from each of its k leaves. */
static void test_storage_leaf_uplink(void **state)
{
        struct gantry_cluster *c = small_cluster();
        struct gantry_pod_demand d;
        struct gantry_node_verdict v[2];
        struct gantry_error err;
        const char *nodes[] = { "gpu-3", "gpu-4" };

        (void)state;
        /* leaf-2 and leaf-3 wide enough; ceph-s on storage-leaf (100 Gbps up) */
        assert_int_equal(gantry_cluster_set_leaf(c, &(struct gantry_leaf_spec){
                .name = "leaf-2", .spine = "spine-1", .uplink_gbps = 1000 }, &err), 0);
        assert_int_equal(gantry_cluster_set_leaf(c, &(struct gantry_leaf_spec){
                .name = "leaf-3", .spine = "spine-2", .uplink_gbps = 1000 }, &err), 0);
        assert_int_equal(gantry_cluster_set_leaf(c, &(struct gantry_leaf_spec){
                .name = "storage-leaf", .spine = "spine-1", .uplink_gbps = 100 }, &err), 0);
        assert_int_equal(gantry_cluster_set_backend(c, &(struct gantry_backend_spec){
                .name = "ceph-s", .kind = GANTRY_BACKEND_CEPH, .gbps = 1000,
                .leaves = (const char *[]){ "storage-leaf" }, .n_leaves = 1 }, &err), 0);
        d = demand("s1", "ceph-s", 40);
        assert_int_equal(gantry_cluster_reserve(c, &d, "gpu-3", 0, NULL, &err), 0);
        d = demand("s2", "ceph-s", 40);
        assert_int_equal(gantry_cluster_reserve(c, &d, "gpu-4", 0, NULL, &err), 0);
        /* 80 of the storage leaf's 100 are taken, whatever leaf the pods are on */
        d = demand("s3", "ceph-s", 40);
        assert_int_equal(gantry_cluster_filter(c, &d, nodes, 2, v, &err), 0);
        for (int i = 0; i < 2; i++) {
                assert_false(v[i].fits);
                assert_int_equal(v[i].cause, GANTRY_REFUSAL_STORAGE_UPLINK);
                assert_string_equal(v[i].reason, "storage leaf uplink full (pod needs 40 Gbps)");
        }
        assert_string_equal(detail(&v[0], "gpu-3"),
                            "storage leaf storage-leaf uplink: 20 Gbps free, pod needs 40 Gbps");
        assert_int_equal(gantry_cluster_reserve(c, &d, "gpu-3", 0, NULL, &err), -ENOSPC);
        assert_string_equal(err.msg, "storage leaf storage-leaf uplink: 20 Gbps free, pod needs 40 Gbps");
        /* a pod finishing gives its share back */
        assert_int_equal(gantry_cluster_release(c, "s1"), 0);
        assert_int_equal(gantry_cluster_filter(c, &d, nodes, 2, v, &err), 0);
        assert_true(v[0].fits && v[1].fits);
        /* attached to two leaves, the backend sends half from each */
        assert_int_equal(gantry_cluster_set_leaf(c, &(struct gantry_leaf_spec){
                .name = "storage-leaf-2", .spine = "spine-1", .uplink_gbps = 100 }, &err), 0);
        assert_int_equal(gantry_cluster_set_backend(c, &(struct gantry_backend_spec){
                .name = "ceph-s", .kind = GANTRY_BACKEND_CEPH, .gbps = 1000,
                .leaves = (const char *[]){ "storage-leaf", "storage-leaf-2" }, .n_leaves = 2 },
                &err), 0);
        d = demand("s4", "ceph-s", 100);
        assert_int_equal(gantry_cluster_reserve(c, &d, "gpu-3", 0, NULL, &err), 0);
        assert_int_equal(gantry_cluster_release(c, "s2"), 0); /* charged on storage-leaf alone */
        assert_int_equal(gantry_cluster_release(c, "s4"), 0);
        /* everything was given back where it was taken: two pods of 100
         * fill both storage leaves' 100 exactly (50 + 50 each) */
        d = demand("s5", "ceph-s", 100);
        assert_int_equal(gantry_cluster_reserve(c, &d, "gpu-3", 0, NULL, &err), 0);
        d = demand("s6", "ceph-s", 100);
        assert_int_equal(gantry_cluster_reserve(c, &d, "gpu-4", 0, NULL, &err), 0);
        d = demand("s7", "ceph-s", 1);
        assert_int_equal(gantry_cluster_reserve(c, &d, "gpu-2", 0, NULL, &err), -ENOSPC);
        assert_string_equal(err.msg, "storage leaf storage-leaf uplink: 0 Gbps free, pod needs 0.5 Gbps");
        gantry_cluster_free(c);
}

static void test_same_leaf_only(void **state)
{
        struct gantry_cluster *c = small_cluster();
        struct gantry_node_verdict v[2];
        struct gantry_pod_demand d = demand("p", "tgt-l1", 1);

        (void)state;
        assert_int_equal(gantry_cluster_set_backend(c, &(struct gantry_backend_spec){
                .name = "tgt-l1", .kind = GANTRY_BACKEND_NVMEOF, .same_leaf_only = true,
                .leaves = (const char *[]){ "leaf-1" }, .n_leaves = 1 }, NULL), 0);
        assert_int_equal(gantry_cluster_filter(c, &d, (const char *[]){ "gpu-1", "gpu-4" }, 2, v,
                                               NULL), 0);
        assert_true(v[0].fits);
        assert_false(v[1].fits);
        assert_string_equal(v[1].reason, "checkpoint target reachable only from its own leaves");
        assert_string_equal(detail(&v[1], "gpu-4"),
                            "target tgt-l1: reachable only from its own leaves, gpu-4 is elsewhere");
        gantry_cluster_free(c);
}

static void test_reserve_expire_replace(void **state)
{
        struct gantry_cluster *c = small_cluster();
        struct gantry_error err;
        struct gantry_node_usage u;
        struct gantry_cluster_stats s;
        struct gantry_pod_demand d = demand("p1", NULL, 20);
        char node[64];
        double used, cap;

        (void)state;
        assert_int_equal(gantry_cluster_reserve(c, &d, "gpu-3", 100, NULL, &err), 0);
        /* a retried bind of the same pod replaces, never adds */
        assert_int_equal(gantry_cluster_reserve(c, &d, "gpu-3", 100, NULL, &err), 0);
        assert_int_equal(gantry_cluster_node_usage(c, "gpu-3", &u), 0);
        assert_true(fabs(u.nic_used_gbps - 20) < 1e-9);
        assert_true(fabs(u.uplink_used_gbps - 20) < 1e-9);
        assert_int_equal(u.gpus_used, 1);
        assert_int_equal(gantry_cluster_lookup(c, "p1", node, sizeof(node)), 0);
        assert_string_equal(node, "gpu-3");
        /* leaf-2 has 10 Gbps left */
        struct gantry_pod_demand d2 = demand("p2", NULL, 11);
        assert_int_equal(gantry_cluster_reserve(c, &d2, "gpu-3", 100, NULL, &err), -ENOSPC);
        assert_string_equal(err.msg, "leaf-2 uplink: 10 Gbps free, pod needs 11 Gbps");
        assert_int_equal(gantry_cluster_reserve(c, &d2, "gpu-9", 100, NULL, &err), -ENOENT);
        /* a re-reserve that no longer fits keeps the old entry */
        struct gantry_pod_demand bigger = demand("p1", NULL, 31);
        assert_int_equal(gantry_cluster_reserve(c, &bigger, "gpu-3", 100, NULL, &err), -ENOSPC);
        assert_int_equal(gantry_cluster_node_usage(c, "gpu-3", &u), 0);
        assert_true(fabs(u.nic_used_gbps - 20) < 1e-9);
        /* expiry */
        gantry_cluster_stats(c, &s);
        assert_int_equal(s.reservations, 1);
        assert_int_equal(gantry_cluster_expire(c, 99), 0);
        assert_int_equal(gantry_cluster_expire(c, 100), 1);
        assert_int_equal(gantry_cluster_node_usage(c, "gpu-3", &u), 0);
        assert_true(fabs(u.nic_used_gbps) < 1e-9);
        assert_true(fabs(u.uplink_used_gbps) < 1e-9);
        /* the watch confirms a reservation: it stops expiring */
        assert_int_equal(gantry_cluster_reserve(c, &d, "gpu-3", 100, NULL, &err), 0);
        assert_int_equal(gantry_cluster_record(c, &d, "gpu-3", &err), 0);
        assert_int_equal(gantry_cluster_expire(c, 1e9), 0);
        gantry_cluster_stats(c, &s);
        assert_int_equal(s.entries, 1);
        assert_int_equal(s.reservations, 0);
        /* a bind of a pod already confirmed leaves its entry alone */
        assert_int_equal(gantry_cluster_reserve(c, &d, "gpu-4", 100, NULL, &err), -EALREADY);
        assert_string_equal(err.msg, "already bound to gpu-3");
        /* and a failed bind's release drops only reservations */
        assert_int_equal(gantry_cluster_release_reservation(c, "p1", 0), -EALREADY);
        assert_int_equal(gantry_cluster_lookup(c, "p1", node, sizeof(node)), 0);
        assert_string_equal(node, "gpu-3");
        assert_int_equal(gantry_cluster_release_reservation(c, "nobody", 1), -ENOENT);
        struct gantry_pod_demand d3 = demand("p3", NULL, 1);
        uint64_t first, second;
        assert_int_equal(gantry_cluster_reserve(c, &d3, "gpu-3", 100, &first, &err), 0);
        /* two binds of one pod overlap: the second replaces the first's
         * reservation, and the first's failure leaves the second's alone */
        assert_int_equal(gantry_cluster_reserve(c, &d3, "gpu-4", 100, &second, &err), 0);
        assert_int_equal(gantry_cluster_release_reservation(c, "p3", first), -ENOENT);
        assert_int_equal(gantry_cluster_lookup(c, "p3", node, sizeof(node)), 0);
        assert_string_equal(node, "gpu-4");
        assert_int_equal(gantry_cluster_release_reservation(c, "p3", second), 0);
        gantry_cluster_stats(c, &s);
        assert_int_equal(s.entries, 1);
        assert_int_equal(s.reservations, 0);
        /* release gives back everything */
        d = demand("p6", "ceph-a", 10);
        assert_int_equal(gantry_cluster_record(c, &d, "gpu-4", &err), 0);
        assert_int_equal(gantry_cluster_backend_usage(c, "ceph-a", &cap, &used), 0);
        assert_true(fabs(used - 10) < 1e-9 && fabs(cap - 150) < 1e-9);
        assert_int_equal(gantry_cluster_release(c, "p6"), 0);
        assert_int_equal(gantry_cluster_release(c, "p6"), -ENOENT);
        assert_int_equal(gantry_cluster_backend_usage(c, "ceph-a", &cap, &used), 0);
        assert_true(fabs(used) < 1e-9);
        assert_int_equal(gantry_cluster_release(c, "p1"), 0);
        assert_int_equal(gantry_cluster_node_usage(c, "gpu-3", &u), 0);
        assert_true(fabs(u.nic_used_gbps) < 1e-9 && u.gpus_used == 0);
        gantry_cluster_free(c);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_build_and_stats),
                cmocka_unit_test(test_validation),
                cmocka_unit_test(test_filter_reasons),
                cmocka_unit_test(test_storage_leaf_uplink),
                cmocka_unit_test(test_same_leaf_only),
                cmocka_unit_test(test_reserve_expire_replace),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
