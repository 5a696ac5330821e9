/*
 * Recovery once the model is complete (see sched_recover.h): partly bound
 * gangs planned, ready, then the pending gang members requeued in
 * kube-scheduler by an annotation update.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "clock.h"
#include "extender.h"
#include "gang.h"
#include "gang_size.h"
#include "kube_client.h"
#include "log.h"
#include "sched_demand.h"
#include "sched_recover.h"
#include "sched_state.h"

/* Pending pods not yet bound: the ones kube-scheduler may hold. */
#define PENDING_PODS "/api/v1/pods?fieldSelector=spec.nodeName%3D%2Cstatus.phase%3DPending"

static const char *str_at(const json_t *o, const char *k)
{
        return json_string_value(json_object_get(o, k));
}

/* The gang key of @pod, "" when it has none. */
static void gang_of(struct gantry_sched_state *st, const json_t *pod, char *key, size_t size)
{
        const json_t *md = json_object_get(pod, "metadata");
        const char *ns = str_at(md, "namespace"), *own;
        char job[256] = "";
        bool spread;
        int n = 0;

        key[0] = '\0';
        own = str_at(json_object_get(md, "labels"), GANTRY_LABEL_JOB);
        if (!own || !*own)
                own = str_at(json_object_get(md, "annotations"), GANTRY_LABEL_JOB);
        if (own && *own)
                snprintf(job, sizeof(job), "%s/%s", ns, own);
        if (gantry_sched_gang_of_pod(gantry_sched_state_cache(st), pod, ns, job, key, size, &n,
                                     &spread, NULL) <= 0 ||
            n < 2)
                key[0] = '\0';
}

static int requeue(struct gantry_kube_client *kube, const json_t *pod, const char *stamp)
{
        const json_t *md = json_object_get(pod, "metadata");
        const char *ns = str_at(md, "namespace"), *name = str_at(md, "name");
        struct gantry_error err = { 0 };
        char path[600];
        json_t *patch;
        int r;

        if (!ns || !name)
                return -EINVAL;
        snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", ns, name);
        patch = json_pack("{s:{s:{s:s}}}", "metadata", "annotations", GANTRY_ANN_REQUEUE, stamp);
        if (!patch)
                return -ENOMEM;
        r = gantry_kube_merge_patch(kube, path, "pods", patch, &err);
        json_decref(patch);
        if (r < 0 && r != -ENOENT) {
                char pod[2 * GANTRY_PLACEMENT_NAME_MAX + 2], qpod[sizeof(pod) + 16];
                char q[GANTRY_ERROR_MSG_MAX + 8];

                /* the API server's answer may quote anything a webhook said */
                snprintf(pod, sizeof(pod), "%s/%s", ns, name);
                log_warn("sched.requeue_failed", "pod=%s error=%s",
                         gantry_log_quote(pod, qpod, sizeof(qpod)),
                         gantry_log_quote(err.msg, q, sizeof(q)));
        }
        return r == -ENOENT ? 0 : r;
}

/* The pending pods kube-scheduler may hold (a new reference), NULL when the
 * list failed (logged); @stamp gets the annotation's value, now. */
static json_t *pending_pods(struct gantry_kube_client *kube, char *stamp, size_t size)
{
        struct gantry_error err = { 0 };
        json_t *list = NULL;
        time_t t = time(NULL);
        struct tm tm;

        gmtime_r(&t, &tm);
        strftime(stamp, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
        if (gantry_kube_get(kube, PENDING_PODS, "list", "pods", &list, &err) < 0) {
                char q[GANTRY_ERROR_MSG_MAX + 8];

                log_warn("sched.requeue_list_failed", "error=%s",
                         gantry_log_quote(err.msg, q, sizeof(q)));
                return NULL;
        }
        return list;
}

static void requeue_pending(struct gantry_kube_client *kube, struct gantry_sched_state *st,
                            struct gantry_gangs *gangs, const atomic_bool *stop,
                            struct gantry_sched_recovery *rec)
{
        json_t *list, *items, *pod;
        char stamp[40], key[256];
        size_t i;

        if (!(list = pending_pods(kube, stamp, sizeof(stamp))))
                return;
        items = json_object_get(list, "items");
        /* partly bound gangs first: they hold GPUs that wait for them */
        for (int pass = 0; pass < 2; pass++)
                json_array_foreach(items, i, pod) {
                        if (stop && atomic_load(stop))
                                goto out;
                        if (json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp"))
                                continue;
                        gang_of(st, pod, key, sizeof(key));
                        if (!*key || gantry_gangs_has_bound_member(gangs, key) != (pass == 0))
                                continue;
                        if (requeue(kube, pod, stamp) < 0)
                                rec->failed++;
                        else
                                rec->requeued++;
                }
out:
        json_decref(list);
}

void gantry_sched_recover(struct gantry_kube_client *kube, struct gantry_sched_state *st,
                          struct gantry_gangs *gangs, struct gantry_extender *ext,
                          const atomic_bool *stop, struct gantry_sched_recovery *ret)
{
        struct gantry_sched_recovery rec = { 0 };
        double t0 = gantry_now_s();

        if (gangs) {
                rec.planned = gantry_gangs_recover(gangs, gantry_extender_now());
                rec.left = gantry_gangs_partial(gangs);
        }
        gantry_extender_set_ready(ext, true, NULL);
        if (kube && gangs)
                requeue_pending(kube, st, gangs, stop, &rec);
        rec.seconds = gantry_now_s() - t0;
        log_info("sched.recovered", "partial_gangs_planned=%zu partial_gangs_waiting=%zu "
                 "pods_requeued=%zu requeue_failures=%zu seconds=%.3f",
                 rec.planned, rec.left, rec.requeued, rec.failed, rec.seconds);
        if (ret)
                *ret = rec;
}

size_t gantry_sched_requeue_backend(struct gantry_kube_client *kube, struct gantry_sched_state *st,
                                    const char *backend)
{
        struct gantry_sched_demand d;
        struct gantry_error err = { 0 };
        json_t *list, *pod;
        size_t i, n = 0, failed = 0;
        char stamp[40];

        if (!(list = pending_pods(kube, stamp, sizeof(stamp))))
                return 0;
        json_array_foreach(json_object_get(list, "items"), i, pod) {
                bool uses = false;

                if (json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp") ||
                    gantry_sched_demand_from_pod(gantry_sched_state_cache(st), pod, &d, &err) < 0)
                        continue;
                for (size_t f = 0; f < d.d.n_flows && !uses; f++)
                        uses = d.d.flows[f].backend && !strcmp(d.d.flows[f].backend, backend);
                if (!uses)
                        continue;
                if (requeue(kube, pod, stamp) < 0)
                        failed++;
                else
                        n++;
        }
        json_decref(list);
        log_info("sched.backend_requeued", "backend=%s pods_requeued=%zu requeue_failures=%zu",
                 backend, n, failed);
        return n;
}
