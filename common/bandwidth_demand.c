/*
 * The one bandwidth demand computation shared by gantry-scheduler (its
 * charge) and the node plugin (its io.max cap). See bandwidth_demand.h.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bandwidth_demand.h"

#define s_(o, k) json_string_value(json_object_get((o), (k)))

int gantry_bw_parse_gbps(const char *field, const char *s, double *ret, struct gantry_error *err)
{
        char *end;
        double v;

        errno = 0;
        v = strtod(s, &end);
        if (errno || end == s || *end || !isfinite(v) || v < 0)
                return gantry_error_set(err, EINVAL, "%s: \"%.64s\" is not a number of Gbps >= 0",
                                        field, s);
        *ret = v;
        return 0;
}

int gantry_bw_parse_count(const char *field, const json_t *q, int *ret, struct gantry_error *err)
{
        char *end;
        long v;

        if (!q || json_is_null(q)) {
                *ret = 0;
                return 0;
        }
        if (json_is_integer(q)) {
                v = (long)json_integer_value(q);
        } else if (json_is_string(q)) {
                errno = 0;
                v = strtol(json_string_value(q), &end, 10);
                if (errno || end == json_string_value(q) || *end)
                        v = -1;
        } else {
                v = -1;
        }
        if (v < 0 || v > 1000000)
                return gantry_error_set(err, EINVAL, "%s: must be a whole number >= 0", field);
        *ret = (int)v;
        return 0;
}

static bool gang_kind(const char *kind)
{
        size_t n = kind ? strlen(kind) : 0;

        return n && (!strcmp(kind, "JobSet") || !strcmp(kind, "PodGroup") ||
                     (n >= 3 && !strcmp(kind + n - 3, "Job")));
}

void gantry_bw_job_of_pod(const json_t *pod, const char *ns, char *buf, size_t size)
{
        const json_t *md = json_object_get(pod, "metadata");
        const json_t *labels = json_object_get(md, "labels");
        const json_t *owners = json_object_get(md, "ownerReferences"), *o;
        const char *v;
        size_t i;

        buf[0] = '\0';
        if (((v = s_(labels, GANTRY_BW_LABEL_JOB)) && *v) ||
            ((v = s_(json_object_get(md, "annotations"), GANTRY_BW_LABEL_JOB)) && *v)) {
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

unsigned long long gantry_bw_bytes_per_second(double gbps)
{
        return gbps > 0 ? (unsigned long long)llround(gbps * 1e9 / 8) : 0;
}

static int count_gpus(const json_t *pod, int *ret, struct gantry_error *err)
{
        const json_t *containers = json_object_get(json_object_get(pod, "spec"), "containers");
        const json_t *c;
        size_t i;
        int total = 0;

        json_array_foreach(containers, i, c) {
                const json_t *res = json_object_get(c, "resources");
                const json_t *q =
                        json_object_get(json_object_get(res, "requests"), GANTRY_BW_RESOURCE_GPU);
                int n, r;

                if (!q)
                        q = json_object_get(json_object_get(res, "limits"), GANTRY_BW_RESOURCE_GPU);
                if ((r = gantry_bw_parse_count("spec.containers[].resources nvidia.com/gpu", q, &n,
                                               err)) < 0)
                        return r;
                total += n;
        }
        *ret = total;
        return 0;
}

/* A StorageClass rate @key (annotation, else parameter); 0 when absent. */
const char *gantry_bw_param_in_force(const json_t *vac, const json_t *sc, bool sc_annotations,
                                     const char *key)
{
        const json_t *vp = json_object_get(vac, "parameters");
        const char *v = s_(vp, key);

        if (v)
                return v;
        if (sc_annotations && (v = s_(json_object_get(json_object_get(sc, "metadata"), "annotations"), key)))
                return v;
        return s_(json_object_get(sc, "parameters"), key);
}

/* A rate (Gbps) in force for the volume: see gantry_bw_param_in_force(); 0 when unset. */
static int rate_value(const json_t *vac, const char *vac_name, const json_t *sc, const char *sc_name,
                      const char *key, double *ret, struct gantry_error *err)
{
        const char *v = gantry_bw_param_in_force(vac, sc, true, key);
        int r;

        *ret = 0;
        if (!v)
                return 0;
        r = gantry_bw_parse_gbps(key, v, ret, err);
        if (r < 0) {
                char field[96];

                if (s_(json_object_get(vac, "parameters"), key))
                        snprintf(field, sizeof(field), "VolumeAttributesClass %.60s", vac_name);
                else
                        snprintf(field, sizeof(field), "StorageClass %.60s", sc_name);
                gantry_error_prefix(err, field);
        }
        return r;
}

static bool data_in_place(const json_t *pvc, const json_t *pv)
{
        const json_t *spec = json_object_get(pvc, "spec");
        const char *state;

        if (!pv)
                return !json_is_object(json_object_get(spec, "dataSource")) &&
                       !json_is_object(json_object_get(spec, "dataSourceRef"));
        state = s_(json_object_get(json_object_get(pv, "metadata"), "annotations"),
                   GANTRY_BW_ANN_COPY_STATE);
        return !state || !strcmp(state, "done");
}

static void copy_name(char *dst, size_t size, const char *src)
{
        snprintf(dst, size, "%s", src ? src : "");
}

/*
 * Fills @vol (and the class's per-GPU and default rates) from a PV's CSI
 * attributes, or an unbound PVC's StorageClass. Returns 1 if the volume is
 * Gantry's, 0 if not (or not known), -errno.
 */
static int resolve_volume(gantry_bw_lookup_fn lookup, void *ud, const char *ns, const char *claim,
                          struct gantry_bw_volume *vol, double *ret_per_gpu, double *ret_default,
                          struct gantry_error *err)
{
        json_t *pvc = lookup(ud, GANTRY_BW_PVC, ns, claim);
        json_t *pv = NULL, *sc = NULL, *vac = NULL;
        const json_t *attrs = NULL;
        const char *sc_name, *pv_name, *tier, *backend, *vac_name;
        int r = 0;

        if (!pvc)
                return 0; /* not seen (yet): nothing known */
        sc_name = s_(json_object_get(pvc, "spec"), "storageClassName");
        pv_name = s_(json_object_get(pvc, "spec"), "volumeName");
        if (pv_name && *pv_name)
                pv = lookup(ud, GANTRY_BW_PV, NULL, pv_name);
        if (sc_name && *sc_name)
                sc = lookup(ud, GANTRY_BW_STORAGE_CLASS, NULL, sc_name);
        if (pv) {
                const json_t *csi = json_object_get(json_object_get(pv, "spec"), "csi");

                if (!s_(csi, "driver") || strcmp(s_(csi, "driver"), GANTRY_BW_CSI_DRIVER) != 0)
                        goto out;
                attrs = json_object_get(csi, "volumeAttributes");
                copy_name(vol->volume_handle, sizeof(vol->volume_handle), s_(csi, "volumeHandle"));
                if (!sc_name || !*sc_name) {
                        sc_name = s_(json_object_get(pv, "spec"), "storageClassName");
                        if (sc_name && *sc_name)
                                sc = lookup(ud, GANTRY_BW_STORAGE_CLASS, NULL, sc_name);
                }
        } else {
                if (!sc || !s_(sc, "provisioner") || strcmp(s_(sc, "provisioner"), GANTRY_BW_CSI_DRIVER))
                        goto out;
                attrs = json_object_get(sc, "parameters");
        }
        copy_name(vol->claim, sizeof(vol->claim), claim);
        copy_name(vol->storage_class, sizeof(vol->storage_class), sc_name);
        /* the class external-resizer says is in force (after a successful modify) */
        vac_name = s_(json_object_get(pvc, "status"), "currentVolumeAttributesClassName");
        if ((!vac_name || !*vac_name) && pv)
                vac_name = s_(json_object_get(pv, "spec"), "volumeAttributesClassName");
        if (vac_name && *vac_name) {
                copy_name(vol->attributes_class, sizeof(vol->attributes_class), vac_name);
                vac = lookup(ud, GANTRY_BW_ATTRIBUTES_CLASS, NULL, vac_name);
        }
        tier = s_(attrs, "tier");
        vol->tier = tier && !strcmp(tier, "checkpoint") ? GANTRY_BW_CHECKPOINT : GANTRY_BW_DATASET;
        backend = s_(attrs, vol->tier == GANTRY_BW_CHECKPOINT ? "targetID" : "clusterID");
        if (vol->tier == GANTRY_BW_DATASET && !data_in_place(pvc, pv))
                backend = NULL;
        copy_name(vol->backend, sizeof(vol->backend), backend);
        r = rate_value(vac, vac_name, sc, sc_name,
                       vol->tier == GANTRY_BW_CHECKPOINT ? GANTRY_BW_SC_WRITE_PER_GPU
                                                         : GANTRY_BW_SC_READ_PER_GPU,
                       ret_per_gpu, err);
        if (r == 0)
                r = rate_value(vac, vac_name, sc, sc_name, GANTRY_BW_SC_DEFAULT, ret_default, err);
        if (r == 0)
                r = 1;
out:
        json_decref(pvc);
        json_decref(pv);
        json_decref(sc);
        json_decref(vac);
        return r;
}

int gantry_bw_demand_of_pod(const json_t *pod, gantry_bw_lookup_fn lookup, void *userdata,
                            const char *who, struct gantry_bw_demand *ret,
                            struct gantry_error *err)
{
        static const char *const ann_key[GANTRY_BW_TIER_COUNT] = {
                GANTRY_BW_ANN_DATASET_READ, GANTRY_BW_ANN_CHECKPOINT_WRITE
        };
        const json_t *md = json_object_get(pod, "metadata");
        const json_t *ann = json_object_get(md, "annotations");
        const json_t *vols = json_object_get(json_object_get(pod, "spec"), "volumes"), *v;
        const char *ns = s_(md, "namespace");
        double per_gpu[GANTRY_BW_MAX_VOLUMES], dflt[GANTRY_BW_MAX_VOLUMES];
        size_t n_tier[GANTRY_BW_TIER_COUNT] = { 0 }, i;
        struct gantry_bw_demand *d = ret;
        int r;

        if (!ns || !*ns)
                ns = "default";
        memset(d, 0, sizeof(*d));
        if ((r = count_gpus(pod, &d->gpus, err)) < 0)
                return gantry_error_prefix(err, who);
        json_array_foreach(vols, i, v) {
                const char *claim = s_(json_object_get(v, "persistentVolumeClaim"), "claimName");

                if (!claim || !lookup)
                        continue;
                if (d->n_volumes == GANTRY_BW_MAX_VOLUMES)
                        return gantry_error_set(err, EINVAL, "%s: more than %d volumes", who,
                                                GANTRY_BW_MAX_VOLUMES);
                memset(&d->volumes[d->n_volumes], 0, sizeof(d->volumes[0]));
                r = resolve_volume(lookup, userdata, ns, claim, &d->volumes[d->n_volumes],
                                   &per_gpu[d->n_volumes], &dflt[d->n_volumes], err);
                if (r < 0)
                        return r;
                if (r > 0)
                        n_tier[d->volumes[d->n_volumes++].tier]++;
        }
        for (int t = 0; t < GANTRY_BW_TIER_COUNT; t++) {
                const char *a = s_(ann, ann_key[t]);
                char field[2 * GANTRY_BW_NAME_MAX + 96];

                if (!a)
                        continue;
                snprintf(field, sizeof(field), "%s: annotation %s", who, ann_key[t]);
                if ((r = gantry_bw_parse_gbps(field, a, &d->declared_gbps[t], err)) < 0)
                        return r;
                d->declared[t] = true;
        }
        for (i = 0; i < d->n_volumes; i++) {
                struct gantry_bw_volume *vol = &d->volumes[i];

                if (d->declared[vol->tier])
                        vol->gbps = d->declared_gbps[vol->tier] / (double)n_tier[vol->tier];
                else if (per_gpu[i] * d->gpus > 0)
                        vol->gbps = per_gpu[i] * d->gpus;
                else
                        vol->gbps = dflt[i];
        }
        return 0;
}

const struct gantry_bw_volume *gantry_bw_demand_find(const struct gantry_bw_demand *d,
                                                     const char *volume_id)
{
        for (size_t i = 0; i < d->n_volumes; i++)
                if (volume_id && d->volumes[i].volume_handle[0] &&
                    !strcmp(d->volumes[i].volume_handle, volume_id))
                        return &d->volumes[i];
        return NULL;
}
