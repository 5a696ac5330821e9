/*
 * A pod's demand on the fabric: GPUs, gang key, and Gbps per storage backend,
 * from its annotations, its PVCs' volumes and their StorageClasses. See
 * sched_demand.h.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "gang_size.h"
#include "sched_demand.h"

enum tier { TIER_DATASET = 0, TIER_CHECKPOINT = 1, TIER_COUNT };

/* One Gantry volume of the pod. */
struct volume {
        enum tier tier;
        char backend[GANTRY_PLACEMENT_NAME_MAX + 1]; /* "" when unknown */
        double gbps_per_gpu;                          /* from its StorageClass; 0 none */
};

#define s_(o, k) json_string_value(json_object_get((o), (k)))

static int count_gpus(const json_t *pod, int *ret, struct gantry_error *err)
{
        const json_t *containers = json_object_get(json_object_get(pod, "spec"), "containers");
        const json_t *c;
        size_t i;
        int total = 0, r;

        json_array_foreach(containers, i, c) {
                const json_t *res = json_object_get(c, "resources");
                const json_t *q = json_object_get(json_object_get(res, "requests"), GANTRY_RESOURCE_GPU);
                int n;

                if (!q)
                        q = json_object_get(json_object_get(res, "limits"), GANTRY_RESOURCE_GPU);
                if ((r = gantry_sched_parse_count("spec.containers[].resources nvidia.com/gpu", q,
                                                  &n, err)) < 0)
                        return r;
                total += n;
        }
        *ret = total;
        return 0;
}

static bool gang_kind(const char *kind)
{
        size_t n = kind ? strlen(kind) : 0;

        return n && (!strcmp(kind, "JobSet") || !strcmp(kind, "PodGroup") ||
                     (n >= 3 && !strcmp(kind + n - 3, "Job")));
}

static void job_key(const json_t *pod, const char *ns, char *buf, size_t size)
{
        const json_t *md = json_object_get(pod, "metadata");
        const json_t *labels = json_object_get(md, "labels");
        const json_t *owners = json_object_get(md, "ownerReferences"), *o;
        const char *v;
        size_t i;

        buf[0] = '\0';
        if (((v = s_(labels, GANTRY_LABEL_JOB)) && *v) ||
            ((v = s_(json_object_get(md, "annotations"), GANTRY_LABEL_JOB)) && *v)) {
                snprintf(buf, size, "%s/%s", ns, v);
                return;
        }
        if ((v = s_(labels, "jobset.sigs.k8s.io/jobset-name")) && *v) {
                snprintf(buf, size, "%s/JobSet/%s", ns, v);
                return;
        }
        if ((v = s_(labels, "scheduling.x-k8s.io/pod-group")) && *v) {
                snprintf(buf, size, "%s/PodGroup/%s", ns, v);
                return;
        }
        json_array_foreach(owners, i, o) {
                if (json_is_true(json_object_get(o, "controller")) && gang_kind(s_(o, "kind")) &&
                    s_(o, "name")) {
                        snprintf(buf, size, "%s/%s/%s", ns, s_(o, "kind"), s_(o, "name"));
                        return;
                }
        }
}

/* The StorageClass's per-GPU rate for @tier (annotation, else parameter), 0 when absent. */
static int sc_rate(struct gantry_sched_state *st, const char *sc_name, enum tier tier, double *ret,
                   struct gantry_error *err)
{
        const char *key = tier == TIER_CHECKPOINT ? GANTRY_SC_WRITE_PER_GPU : GANTRY_SC_READ_PER_GPU;
        json_t *sc = sc_name ? gantry_sched_state_get(st, GANTRY_OBJ_STORAGE_CLASS, NULL, sc_name) : NULL;
        const char *v = s_(json_object_get(json_object_get(sc, "metadata"), "annotations"), key);
        char field[96];
        int r = 0;

        if (!v)
                v = s_(json_object_get(sc, "parameters"), key);
        *ret = 0;
        if (v) {
                r = gantry_sched_parse_gbps(key, v, ret, err);
                if (r < 0) {
                        snprintf(field, sizeof(field), "StorageClass %.60s", sc_name);
                        gantry_error_prefix(err, field);
                }
        }
        json_decref(sc);
        return r;
}

/*
 * Whether the data of a dataset volume is where its attributes say: a
 * PVC still unbound with a data source is being made from it, which for a
 * source in another cluster is a promotion copy in progress (CreateVolume
 * answers ABORTED until it is done; the PV only appears then); a PV
 * annotated gantry.io/copy-state other than "done" names a copy that is not
 * (or no longer) complete. Such a volume is scored as if its data were
 * nowhere near yet: it attracts no pod to its cluster's leaves.
 */
static bool data_in_place(const json_t *pvc, const json_t *pv)
{
        const json_t *spec = json_object_get(pvc, "spec");
        const char *state;

        if (!pv)
                return !json_is_object(json_object_get(spec, "dataSource")) &&
                       !json_is_object(json_object_get(spec, "dataSourceRef"));
        state = s_(json_object_get(json_object_get(pv, "metadata"), "annotations"),
                   GANTRY_ANN_COPY_STATE);
        return !state || !strcmp(state, "done");
}

/* Fills @vol from a PV's CSI attributes, or an unbound PVC's StorageClass. 1 if Gantry's. */
static int resolve_volume(struct gantry_sched_state *st, const char *ns, const char *claim,
                          struct volume *vol, struct gantry_error *err)
{
        json_t *pvc = gantry_sched_state_get(st, GANTRY_OBJ_PVC, ns, claim);
        json_t *pv = NULL, *sc = NULL;
        const json_t *attrs = NULL;
        const char *sc_name, *pv_name, *tier, *backend;
        int r = 0;

        if (!pvc)
                return 0; /* not seen (yet): nothing known */
        sc_name = s_(json_object_get(pvc, "spec"), "storageClassName");
        pv_name = s_(json_object_get(pvc, "spec"), "volumeName");
        if (pv_name && *pv_name)
                pv = gantry_sched_state_get(st, GANTRY_OBJ_PV, NULL, pv_name);
        if (pv) {
                const json_t *csi = json_object_get(json_object_get(pv, "spec"), "csi");

                if (!s_(csi, "driver") || strcmp(s_(csi, "driver"), GANTRY_CSI_DRIVER) != 0)
                        goto out;
                attrs = json_object_get(csi, "volumeAttributes");
                if (!sc_name)
                        sc_name = s_(json_object_get(pv, "spec"), "storageClassName");
        } else {
                sc = sc_name ? gantry_sched_state_get(st, GANTRY_OBJ_STORAGE_CLASS, NULL, sc_name) : NULL;
                if (!sc || !s_(sc, "provisioner") || strcmp(s_(sc, "provisioner"), GANTRY_CSI_DRIVER))
                        goto out;
                attrs = json_object_get(sc, "parameters");
        }
        tier = s_(attrs, "tier");
        vol->tier = tier && !strcmp(tier, "checkpoint") ? TIER_CHECKPOINT : TIER_DATASET;
        backend = s_(attrs, vol->tier == TIER_CHECKPOINT ? "targetID" : "clusterID");
        if (vol->tier == TIER_DATASET && !data_in_place(pvc, pv))
                backend = NULL;
        snprintf(vol->backend, sizeof(vol->backend), "%s", backend ? backend : "");
        r = sc_rate(st, sc_name, vol->tier, &vol->gbps_per_gpu, err);
        if (r == 0)
                r = 1;
out:
        json_decref(pvc);
        json_decref(pv);
        json_decref(sc);
        return r;
}

static int add_flow(struct gantry_sched_demand *d, const char *backend, double gbps,
                    struct gantry_error *err)
{
        size_t i = d->d.n_flows;

        if (i >= GANTRY_PLACEMENT_MAX_FLOWS)
                return gantry_error_set(err, EINVAL, "pod %s: more than %d Gantry volumes",
                                        d->name, GANTRY_PLACEMENT_MAX_FLOWS);
        if (backend && *backend) {
                snprintf(d->backend[i], sizeof(d->backend[i]), "%s", backend);
                d->d.flows[i].backend = d->backend[i];
        } else {
                d->d.flows[i].backend = NULL;
        }
        d->d.flows[i].gbps = gbps;
        d->d.n_flows++;
        return 0;
}

int gantry_sched_demand_from_pod(struct gantry_sched_state *st, const json_t *pod,
                                 struct gantry_sched_demand *ret_demand, struct gantry_error *err)
{
        static const char *const ann_key[TIER_COUNT] = { GANTRY_ANN_DATASET_READ,
                                                          GANTRY_ANN_CHECKPOINT_WRITE };
        const json_t *md = json_object_get(pod, "metadata");
        const json_t *ann = json_object_get(md, "annotations");
        const json_t *vols = json_object_get(json_object_get(pod, "spec"), "volumes"), *v;
        const char *ns = s_(md, "namespace"), *name = s_(md, "name"), *uid = s_(md, "uid");
        struct volume found[GANTRY_PLACEMENT_MAX_FLOWS];
        size_t n_found = 0, i;
        struct gantry_sched_demand *d = ret_demand;
        int r;

        if (!json_is_object(pod) || !name || !*name)
                return gantry_error_set(err, EINVAL, "Pod.metadata.name: must be a non-empty string");
        if (!ns || !*ns)
                ns = "default";
        if (strlen(name) > GANTRY_PLACEMENT_NAME_MAX || strlen(ns) > GANTRY_PLACEMENT_NAME_MAX ||
            (uid && strlen(uid) > GANTRY_PLACEMENT_NAME_MAX))
                return gantry_error_set(err, EINVAL, "Pod.metadata: name, namespace or uid too long");
        if (ann && !json_is_object(ann))
                return gantry_error_set(err, EINVAL, "Pod.metadata.annotations: must be an object");
        memset(d, 0, sizeof(*d));
        snprintf(d->name, sizeof(d->name), "%s/%s", ns, name);
        snprintf(d->uid, sizeof(d->uid), "%s", uid ? uid : "");
        d->d.name = d->name;
        d->d.uid = d->uid[0] ? d->uid : NULL;
        job_key(pod, ns, d->job, sizeof(d->job));
        {
                /* only gantry.io/job names the gang; other keys are guesses */
                const char *own = s_(json_object_get(md, "labels"), GANTRY_LABEL_JOB);
                char gang[sizeof(d->job)];

                if (!own || !*own)
                        own = s_(ann, GANTRY_LABEL_JOB);
                r = gantry_sched_gang_of_pod(st, pod, ns, own && *own ? d->job : "", gang,
                                             sizeof(gang), &d->gang_size, &d->gang_spread, err);
                if (r < 0)
                        return gantry_error_prefix(err, d->name);
                if (r > 0)
                        memcpy(d->job, gang, sizeof(d->job));
        }
        d->d.job = d->job[0] ? d->job : NULL;
        if ((r = count_gpus(pod, &d->d.gpus, err)) < 0)
                return gantry_error_prefix(err, d->name);

        json_array_foreach(vols, i, v) {
                const char *claim = s_(json_object_get(v, "persistentVolumeClaim"), "claimName");

                if (!claim || !st)
                        continue;
                if (n_found == GANTRY_PLACEMENT_MAX_FLOWS)
                        return gantry_error_set(err, EINVAL, "pod %s: more than %d volumes",
                                                d->name, GANTRY_PLACEMENT_MAX_FLOWS);
                memset(&found[n_found], 0, sizeof(found[n_found]));
                r = resolve_volume(st, ns, claim, &found[n_found], err);
                if (r < 0)
                        return r;
                n_found += r;
        }

        for (int t = 0; t < TIER_COUNT; t++) {
                const char *a = s_(ann, ann_key[t]);
                size_t n_tier = 0;
                double total;

                for (i = 0; i < n_found; i++)
                        n_tier += found[i].tier == (enum tier)t;
                if (a) {
                        char field[sizeof(d->name) + 64];

                        snprintf(field, sizeof(field), "pod %s: annotation %s", d->name, ann_key[t]);
                        if ((r = gantry_sched_parse_gbps(field, a, &total, err)) < 0)
                                return r;
                        if (n_tier == 0) {
                                if (total > 0 && (r = add_flow(d, NULL, total, err)) < 0)
                                        return r;
                                continue;
                        }
                        for (i = 0; i < n_found; i++)
                                if (found[i].tier == (enum tier)t &&
                                    (r = add_flow(d, found[i].backend, total / n_tier, err)) < 0)
                                        return r;
                        continue;
                }
                for (i = 0; i < n_found; i++)
                        if (found[i].tier == (enum tier)t &&
                            (r = add_flow(d, found[i].backend, found[i].gbps_per_gpu * d->d.gpus,
                                          err)) < 0)
                                return r;
        }
        return 0;
}
