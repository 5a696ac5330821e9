/*
 * The modify verb: admits (and charges) or refuses a live change of a
 * volume's bandwidth for the pods bound with it. See volume_modify.h.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "clock.h"
#include "log.h"
#include "pending_class.h"
#include "sched_demand.h"
#include "status.h"
#include "volume_modify.h"

#define Q(value, buf) gantry_log_quote((value), (buf), sizeof(buf))

static pthread_mutex_t modify_lock = PTHREAD_MUTEX_INITIALIZER;

static int reply_error(int status, const char *msg, char **ret_reply)
{
        json_t *o = json_pack("{s:s}", "Error", msg);

        *ret_reply = o ? json_dumps(o, JSON_COMPACT) : NULL;
        json_decref(o);
        return *ret_reply ? status : 500;
}

/* Decodes the body: the handle and the parameters (borrowed from *@ret_root). */
static int parse_request(const char *body, size_t len, json_t **ret_root, const char **ret_handle,
                         const json_t **ret_params, struct gantry_error *err)
{
        json_error_t jerr;
        json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr), *v;
        const json_t *params;
        const char *handle, *key;

        if (!root)
                return gantry_error_set(err, EINVAL, "request body: not JSON: %s", jerr.text);
        *ret_root = root;
        handle = json_string_value(json_object_get(root, "volumeHandle"));
        if (!handle || !*handle)
                return gantry_error_set(err, EINVAL, "volumeHandle: must be a non-empty string");
        if (strlen(handle) > GANTRY_BW_NAME_MAX)
                return gantry_error_set(err, EINVAL, "volumeHandle: longer than %d bytes",
                                        GANTRY_BW_NAME_MAX);
        params = json_object_get(root, "parameters");
        if (!json_is_object(params))
                return gantry_error_set(err, EINVAL, "parameters: must be an object of strings");
        if (json_object_size(params) > GANTRY_VOLUME_MODIFY_MAX_PARAMETERS)
                return gantry_error_set(err, EINVAL, "parameters: more than %d",
                                        GANTRY_VOLUME_MODIFY_MAX_PARAMETERS);
        json_object_foreach((json_t *)params, key, v)
                if (!json_is_string(v))
                        return gantry_error_set(err, EINVAL, "parameters.%.100s: must be a string", key);
        *ret_handle = handle;
        *ret_params = params;
        return 0;
}

/* The class in force on the PVC of volume @handle that @pod mounts ("" none) into @buf. */
static void class_in_force(struct gantry_sched_cache *cache, const json_t *pod, const char *handle,
                           char *buf, size_t size)
{
        const json_t *md = json_object_get(pod, "metadata");
        const json_t *vols = json_object_get(json_object_get(pod, "spec"), "volumes"), *v;
        const char *ns = json_string_value(json_object_get(md, "namespace"));
        size_t i;

        buf[0] = '\0';
        json_array_foreach(vols, i, v) {
                const char *claim = json_string_value(
                        json_object_get(json_object_get(v, "persistentVolumeClaim"), "claimName"));
                json_t *pvc = claim ? gantry_sched_cache_get(cache, GANTRY_OBJ_PVC, ns ? ns : "default", claim)
                                    : NULL;
                const char *pv_name = json_string_value(
                        json_object_get(json_object_get(pvc, "spec"), "volumeName"));
                json_t *pv = pv_name ? gantry_sched_cache_get(cache, GANTRY_OBJ_PV, NULL, pv_name) : NULL;
                const char *h = json_string_value(json_object_get(
                        json_object_get(json_object_get(pv, "spec"), "csi"), "volumeHandle"));
                const char *cls = json_string_value(json_object_get(
                        json_object_get(pvc, "status"), "currentVolumeAttributesClassName"));
                bool found = h && !strcmp(h, handle);

                if (found)
                        snprintf(buf, size, "%s", cls ? cls : "");
                json_decref(pv);
                json_decref(pvc);
                if (found)
                        return;
        }
}

/*
 * The demands to charge: each pod's new demand, where a flow of the volume
 * that would fall keeps its charge now (a decrease frees when it takes
 * effect). Sets *@ret_increase when some flow grows. 0 or -EINVAL (a
 * parameter that does not parse, @err naming it).
 */
static int new_demands(struct gantry_sched_cache *cache, const json_t *pods, const char *handle,
                       const json_t *params, struct gantry_sched_demand *now,
                       struct gantry_sched_demand *next, bool *ret_increase, struct gantry_error *err)
{
        const json_t *pod;
        size_t i;
        int r;

        *ret_increase = false;
        json_array_foreach(pods, i, pod) {
                if ((r = gantry_sched_demand_from_pod(cache, pod, &now[i], err)) < 0 ||
                    (r = gantry_sched_demand_whatif(cache, handle, params, pod, &next[i], err)) < 0)
                        return r;
                if (next[i].d.n_flows != now[i].d.n_flows)
                        continue; /* a pod changed under us: the watch records it anew */
                for (size_t f = 0; f < next[i].d.n_flows; f++) {
                        double *g = &next[i].d.flows[f].gbps, was = now[i].d.flows[f].gbps;

                        if (strcmp(next[i].volume_handle[f], handle) != 0)
                                continue;
                        if (*g > was + 1e-9)
                                *ret_increase = true;
                        else
                                *g = was;
                }
        }
        return 0;
}

static int admit(struct gantry_sched_state *state, const char *handle, const json_t *params,
                 json_t *pods, char **ret_reply)
{
        struct gantry_sched_cache *cache = gantry_sched_state_cache(state);
        size_t n = json_array_size(pods), changed = 0;
        struct gantry_sched_demand *now = NULL, *next = NULL;
        const struct gantry_pod_demand **charge = NULL;
        struct gantry_error err = { 0 };
        char over[GANTRY_BW_NAME_MAX + 1] = "", qh[2 * GANTRY_BW_NAME_MAX + 8];
        bool increase = false;
        json_t *reply;
        int r;

        now = calloc(n + 1, sizeof(*now));
        next = calloc(n + 1, sizeof(*next));
        charge = calloc(n + 1, sizeof(*charge));
        if (!now || !next || !charge) {
                r = reply_error(500, "out of memory", ret_reply);
                goto out;
        }
        if ((r = new_demands(cache, pods, handle, params, now, next, &increase, &err)) < 0) {
                r = reply_error(gantry_status_http_from_errno(r), err.msg, ret_reply);
                goto out;
        }
        if (increase) {
                for (size_t i = 0; i < n; i++)
                        charge[i] = &next[i].d;
                r = gantry_cluster_recharge(gantry_sched_state_cluster(state), charge, n, &changed, &err);
                if (r == -ENOSPC) {
                        log_info("sched.volume_modify_refused", "volume=%s pods=%zu reason=\"%s\"",
                                 Q(handle, qh), n, err.msg);
                        r = reply_error(409, err.msg, ret_reply);
                        goto out;
                }
                if (r < 0) {
                        r = reply_error(gantry_status_http_from_errno(r), err.msg, ret_reply);
                        goto out;
                }
                /* kept until the class is in force; then the pods are
                 * charged what it says, the same, so nothing is counted twice */
                class_in_force(cache, json_array_get(pods, 0), handle, over, sizeof(over));
                if (gantry_pending_classes_set(gantry_sched_state_pending(state), handle, params, over,
                                               gantry_now_s() + GANTRY_PENDING_CLASS_TTL_SECONDS) < 0) {
                        r = reply_error(500, "out of memory", ret_reply);
                        goto out;
                }
                /* a watch event between the charge and the record above
                 * computed the old rate: charge the admitted one again */
                gantry_sched_state_rerecord_volume(state, handle);
        }
        log_info("sched.volume_modify_admitted", "volume=%s pods=%zu charged=%zu increase=%s",
                 Q(handle, qh), n, changed, increase ? "yes" : "no");
        reply = json_pack("{s:b,s:I,s:I,s:b}", "Admitted", 1, "Pods", (json_int_t)n, "Charged",
                          (json_int_t)changed, "Increase", increase);
        *ret_reply = reply ? json_dumps(reply, JSON_COMPACT) : NULL;
        json_decref(reply);
        r = *ret_reply ? 200 : 500;
out:
        free(now);
        free(next);
        free(charge);
        return r;
}

int gantry_volume_modify_handle(struct gantry_sched_state *state, const char *body, size_t len,
                                char **ret_reply)
{
        struct gantry_error err = { 0 };
        const json_t *params = NULL;
        const char *handle = NULL;
        json_t *root = NULL, *pods;
        int r;

        *ret_reply = NULL;
        if ((r = parse_request(body, len, &root, &handle, &params, &err)) < 0) {
                json_decref(root);
                return reply_error(400, err.msg, ret_reply);
        }
        pthread_mutex_lock(&modify_lock);
        pods = gantry_sched_state_pods_of_volume(state, handle);
        r = pods ? admit(state, handle, params, pods, ret_reply)
                 : reply_error(500, "out of memory", ret_reply);
        pthread_mutex_unlock(&modify_lock);
        json_decref(pods);
        json_decref(root);
        return r;
}
