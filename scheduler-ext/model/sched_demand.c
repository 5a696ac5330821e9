/*
 * A pod's demand on the fabric: GPUs, gang key, and Gbps per storage backend,
 * from its annotations, its PVCs' volumes and their StorageClasses. See
 * sched_demand.h.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "bandwidth_demand.h"
#include "clock.h"
#include "gang_size.h"
#include "pending_class.h"
#include "sched_demand.h"

#define s_(o, k) json_string_value(json_object_get((o), (k)))

/* The class name a pending change stands in under: no VolumeAttributesClass
 * can be named so (a colon is not in a DNS subdomain). */
#define PENDING_CLASS_PREFIX "gantry.io:admitted:"

/* What the demand computation reads: the informer cache, the changes
 * admitted but not yet in force, and a change being considered. */
struct lookup_ctx {
        struct gantry_sched_cache *cache;
        const char *whatif_handle;     /* NULL: none */
        const json_t *whatif_params;
};

/* The parameters admitted (or considered) for volume @handle, a new reference or NULL. */
static json_t *admitted_params(const struct lookup_ctx *ctx, const char *handle)
{
        struct gantry_pending_classes *p = gantry_sched_cache_pending(ctx->cache);

        if (!handle || !*handle)
                return NULL;
        if (ctx->whatif_handle && !strcmp(ctx->whatif_handle, handle))
                return json_incref((json_t *)ctx->whatif_params);
        return p ? gantry_pending_classes_get(p, handle, gantry_now_s()) : NULL;
}

/* The volume handle of the PV @pvc is bound to ("" none) into @buf. */
static void pvc_handle(struct gantry_sched_cache *cache, const json_t *pvc, char *buf, size_t size)
{
        const char *pv_name = s_(json_object_get(pvc, "spec"), "volumeName");
        json_t *pv = pv_name && *pv_name ? gantry_sched_cache_get(cache, GANTRY_OBJ_PV, NULL, pv_name)
                                         : NULL;
        const char *h = s_(json_object_get(json_object_get(pv, "spec"), "csi"), "volumeHandle");

        snprintf(buf, size, "%s", h ? h : "");
        json_decref(pv);
}

/*
 * A PVC whose volume has a change admitted shows, in place of its class in
 * force, a class made of the admitted parameters: the demand is then the
 * admitted one, whatever external-resizer has marked yet.
 */
static json_t *with_admitted_class(const struct lookup_ctx *ctx, json_t *pvc)
{
        char handle[GANTRY_BW_NAME_MAX + 1], name[sizeof(handle) + sizeof(PENDING_CLASS_PREFIX)];
        json_t *params, *copy, *status;

        pvc_handle(ctx->cache, pvc, handle, sizeof(handle));
        if (!(params = admitted_params(ctx, handle)))
                return pvc;
        json_decref(params);
        copy = json_copy(pvc);
        status = copy ? json_copy(json_object_get(pvc, "status")) : NULL;
        if (!status)
                status = json_object();
        snprintf(name, sizeof(name), PENDING_CLASS_PREFIX "%s", handle);
        if (!copy || !status ||
            json_object_set_new(status, "currentVolumeAttributesClassName", json_string(name)) < 0 ||
            json_object_set_new(copy, "status", status) < 0) {
                json_decref(copy);
                return pvc; /* out of memory: the class in force */
        }
        json_decref(pvc);
        return copy;
}

/* The demand computation's view of the informer cache. */
static json_t *cache_lookup(void *userdata, enum gantry_bw_kind kind, const char *namespace,
                            const char *name)
{
        static const enum gantry_obj_kind map[] = {
                [GANTRY_BW_PVC] = GANTRY_OBJ_PVC,
                [GANTRY_BW_PV] = GANTRY_OBJ_PV,
                [GANTRY_BW_STORAGE_CLASS] = GANTRY_OBJ_STORAGE_CLASS,
                [GANTRY_BW_ATTRIBUTES_CLASS] = GANTRY_OBJ_ATTRIBUTES_CLASS,
        };
        const struct lookup_ctx *ctx = userdata;
        json_t *obj, *params;

        if (kind == GANTRY_BW_ATTRIBUTES_CLASS && name &&
            !strncmp(name, PENDING_CLASS_PREFIX, strlen(PENDING_CLASS_PREFIX))) {
                params = admitted_params(ctx, name + strlen(PENDING_CLASS_PREFIX));
                obj = params ? json_pack("{s:{s:s},s:o}", "metadata", "name", name, "parameters",
                                         params)
                             : NULL;
                return obj;
        }
        obj = gantry_sched_cache_get(ctx->cache, map[kind], namespace, name);
        if (obj && kind == GANTRY_BW_PVC)
                obj = with_admitted_class(ctx, obj);
        return obj;
}

static int add_flow(struct gantry_sched_demand *d, const char *backend, const char *handle,
                    double gbps, struct gantry_error *err)
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
        snprintf(d->volume_handle[i], sizeof(d->volume_handle[i]), "%s", handle ? handle : "");
        d->d.flows[i].gbps = gbps;
        d->d.n_flows++;
        return 0;
}

int gantry_sched_demand_from_pod(struct gantry_sched_cache *cache, const json_t *pod,
                                 struct gantry_sched_demand *ret_demand, struct gantry_error *err)
{
        return gantry_sched_demand_whatif(cache, NULL, NULL, pod, ret_demand, err);
}

int gantry_sched_demand_whatif(struct gantry_sched_cache *cache, const char *handle,
                               const json_t *parameters, const json_t *pod,
                               struct gantry_sched_demand *ret_demand, struct gantry_error *err)
{
        struct lookup_ctx ctx = { .cache = cache, .whatif_handle = handle,
                                  .whatif_params = parameters };
        const json_t *md = json_object_get(pod, "metadata");
        const json_t *ann = json_object_get(md, "annotations");
        const char *ns = s_(md, "namespace"), *name = s_(md, "name"), *uid = s_(md, "uid");
        struct gantry_sched_demand *d = ret_demand;
        struct gantry_bw_demand bw;
        char who[sizeof(d->name) + 8];
        size_t i;
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
        gantry_bw_job_of_pod(pod, ns, d->job, sizeof(d->job));
        {
                /* only gantry.io/job names the gang; other keys are guesses */
                const char *own = s_(json_object_get(md, "labels"), GANTRY_LABEL_JOB);
                char gang[sizeof(d->job)];

                if (!own || !*own)
                        own = s_(ann, GANTRY_LABEL_JOB);
                r = gantry_sched_gang_of_pod(cache, pod, ns, own && *own ? d->job : "", gang,
                                             sizeof(gang), &d->gang_size, &d->gang_spread, err);
                if (r < 0)
                        return gantry_error_prefix(err, d->name);
                if (r > 0)
                        memcpy(d->job, gang, sizeof(d->job));
        }
        d->d.job = d->job[0] ? d->job : NULL;

        /* the same computation the node plugin caps with (common/bandwidth_demand.c) */
        snprintf(who, sizeof(who), "pod %s", d->name);
        if ((r = gantry_bw_demand_of_pod(pod, cache ? cache_lookup : NULL, &ctx, who, &bw, err)) < 0)
                return r;
        d->d.gpus = bw.gpus;
        for (int t = 0; t < GANTRY_BW_TIER_COUNT; t++) {
                size_t n_tier = 0;

                for (i = 0; i < bw.n_volumes; i++) {
                        if (bw.volumes[i].tier != (enum gantry_bw_tier)t)
                                continue;
                        n_tier++;
                        if ((r = add_flow(d, bw.volumes[i].backend, bw.volumes[i].volume_handle,
                                            bw.volumes[i].gbps, err)) < 0)
                                return r;
                }
                /* a declaration with no volume of its tier: NIC and leaf uplink only */
                if (n_tier == 0 && bw.declared[t] && bw.declared_gbps[t] > 0 &&
                    (r = add_flow(d, NULL, NULL, bw.declared_gbps[t], err)) < 0)
                        return r;
        }
        return 0;
}

bool gantry_sched_demand_uses(const struct gantry_sched_demand *d, const char *handle)
{
        for (size_t i = 0; i < d->d.n_flows; i++)
                if (handle && *handle && !strcmp(d->volume_handle[i], handle))
                        return true;
        return false;
}
