/*
 * Informers -> sched_state: the glue between the Kubernetes API client and
 * the extender's cluster view. See sched_feed.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "kube_optional.h"
#include "log.h"
#include "sched_backends.h"
#include "sched_feed.h"

/* Start order: what a pod's demand (and its gang's size) needs is known
 * before the pod. */
static const enum gantry_kube_kind start_order[] = {
        GANTRY_KUBE_STORAGE_CLASS, GANTRY_KUBE_ATTRIBUTES_CLASS, GANTRY_KUBE_PV, GANTRY_KUBE_PVC,
        GANTRY_KUBE_JOB, GANTRY_KUBE_POD_GROUP, GANTRY_KUBE_WORKLOAD_POD_GROUP,
        GANTRY_KUBE_STORAGE_BACKEND, GANTRY_KUBE_NODE, GANTRY_KUBE_POD,
};

/* The optional kinds: scheduler-plugins' PodGroup and StorageBackend
 * (Gantry's observer) are CRDs, VolumeAttributesClass is served from
 * Kubernetes v1.31 on (GA in v1.34), and Kubernetes' own PodGroup
 * (scheduling.k8s.io/v1alpha2) only where the GenericWorkload feature gate
 * is on. They are followed while API discovery says they are served
 * (kube_optional.h): one not served at start is said in one info line and
 * gantry-scheduler runs on without it (those gang sizes; live classes;
 * backends' live state: nominal capacities) until a re-check finds it. */
static bool is_optional(enum gantry_kube_kind k)
{
        return k == GANTRY_KUBE_POD_GROUP || k == GANTRY_KUBE_WORKLOAD_POD_GROUP ||
               k == GANTRY_KUBE_ATTRIBUTES_CLASS || k == GANTRY_KUBE_STORAGE_BACKEND;
}

#define N_INFORMERS (sizeof(start_order) / sizeof(start_order[0]))

struct gantry_sched_feed {
        struct gantry_sched_state *state;
        struct gantry_kube_informer *informers[N_INFORMERS]; /* the kinds always served */
        struct gantry_kube_optional *optional;                /* the others */
};

static enum gantry_obj_kind obj_kind(enum gantry_kube_kind k)
{
        switch (k) {
        case GANTRY_KUBE_NODE: return GANTRY_OBJ_NODE;
        case GANTRY_KUBE_POD: return GANTRY_OBJ_POD;
        case GANTRY_KUBE_PVC: return GANTRY_OBJ_PVC;
        case GANTRY_KUBE_PV: return GANTRY_OBJ_PV;
        case GANTRY_KUBE_STORAGE_CLASS: return GANTRY_OBJ_STORAGE_CLASS;
        case GANTRY_KUBE_JOB: return GANTRY_OBJ_JOB;
        case GANTRY_KUBE_POD_GROUP: return GANTRY_OBJ_POD_GROUP;
        case GANTRY_KUBE_WORKLOAD_POD_GROUP: return GANTRY_OBJ_WORKLOAD_POD_GROUP;
        case GANTRY_KUBE_ATTRIBUTES_CLASS: return GANTRY_OBJ_ATTRIBUTES_CLASS;
        default: return GANTRY_OBJ_KIND_COUNT;
        }
}

static double wall_now(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A StorageBackend: the backend's live state. One that the topology does not
 * list is said when it appears, not at every heartbeat of its observer. */
static void on_backend(struct gantry_sched_feed *feed, enum gantry_kube_event event,
                       const json_t *obj)
{
        struct gantry_sched_backends *b = gantry_sched_state_backends(feed->state);
        struct gantry_error err = { 0 };
        char q[GANTRY_ERROR_MSG_MAX + 8];
        int r;

        if (!b)
                return;
        r = gantry_sched_backends_apply(b, obj, event == GANTRY_KUBE_DELETED, wall_now(), &err);
        if (r == -ENOENT && event != GANTRY_KUBE_ADDED)
                return;
        if (r < 0)
                log_warn("sched.object_ignored", "kind=StorageBackend event=%s error=%s",
                         gantry_kube_event_name(event), gantry_log_quote(err.msg, q, sizeof(q)));
}

static void on_event(void *ctx, enum gantry_kube_kind kind, enum gantry_kube_event event,
                     const json_t *obj)
{
        struct gantry_sched_feed *feed = ctx;
        struct gantry_error err = { 0 };
        char q[GANTRY_ERROR_MSG_MAX + 8];
        int r;

        if (event == GANTRY_KUBE_SYNCED || !obj)
                return;
        if (kind == GANTRY_KUBE_STORAGE_BACKEND) {
                on_backend(feed, event, obj);
                return;
        }
        r = gantry_sched_state_apply(feed->state, obj_kind(kind), event == GANTRY_KUBE_DELETED, obj,
                                     &err);
        if (r < 0)
                log_warn("sched.object_ignored", "kind=%s event=%s error=%s",
                         gantry_kube_kind_name(kind), gantry_kube_event_name(event),
                         gantry_log_quote(err.msg, q, sizeof(q)));
}

int gantry_sched_feed_start(struct gantry_kube_client *client, struct gantry_sched_state *st,
                            const struct gantry_sched_feed_options *opts,
                            struct gantry_sched_feed **ret_feed, struct gantry_error *err)
{
        struct gantry_sched_feed *feed = calloc(1, sizeof(*feed));
        struct gantry_kube_optional_options oo = {
                .recheck_seconds = opts->optional_recheck_seconds,
                .sync_timeout_ms = opts->sync_timeout_ms, .stop = opts->stop };
        int r;

        if (!feed)
                return gantry_error_set(err, ENOMEM, "out of memory");
        feed->state = st;
        r = gantry_kube_optional_new(client, on_event, feed, &oo, &feed->optional, err);
        if (r < 0)
                goto fail;
        for (size_t i = 0; i < N_INFORMERS; i++) {
                enum gantry_kube_kind k = start_order[i];
                struct gantry_kube_informer_state s;

                if (is_optional(k)) {
                        r = gantry_kube_optional_add(feed->optional, k, NULL, err);
                        if (r < 0)
                                goto fail;
                        if (r == 1)
                                log_info("sched.synced", "kind=%s", gantry_kube_kind_name(k));
                        continue;
                }
                r = gantry_kube_informer_start(client, k, NULL, on_event, feed, &feed->informers[i], err);
                if (r < 0)
                        goto fail;
                r = gantry_kube_informer_wait_synced_or_stop(feed->informers[i], opts->sync_timeout_ms,
                                                             opts->stop);
                if (r == -ECANCELED) {
                        gantry_error_set(err, ECANCELED, "stopped while the %s informer synced",
                                         gantry_kube_kind_name(k));
                        goto fail;
                }
                if (r < 0) {
                        gantry_kube_informer_state(feed->informers[i], &s);
                        r = gantry_error_set(err, -r, "%s informer did not sync: %s",
                                             gantry_kube_kind_name(k),
                                             s.last_error.err ? s.last_error.msg : "timed out");
                        goto fail;
                }
                log_info("sched.synced", "kind=%s", gantry_kube_kind_name(k));
        }
        r = gantry_kube_optional_run(feed->optional, err);
        if (r < 0)
                goto fail;
        *ret_feed = feed;
        return 0;
fail:
        gantry_sched_feed_stop(feed);
        return r;
}

void gantry_sched_feed_stop(struct gantry_sched_feed *feed)
{
        if (!feed)
                return;
        gantry_kube_optional_free(feed->optional);
        for (size_t i = N_INFORMERS; i-- > 0;)
                gantry_kube_informer_stop(feed->informers[i]);
        free(feed);
}

int gantry_sched_feed_bind(void *ctx, const char *namespace, const char *name, const char *uid,
                           const char *node, struct gantry_error *err)
{
        return gantry_kube_bind_pod(ctx, namespace, name, uid, node, err);
}
