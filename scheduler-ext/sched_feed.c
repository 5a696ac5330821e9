/*
 * Informers -> sched_state: the glue between the Kubernetes API client and
 * the extender's cluster view. See sched_feed.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

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
 * is on: a cluster without one answers 404. Such an informer gives up after
 * this many failures at start and gantry-scheduler runs on without it
 * (those gang sizes; live classes; backends' live state: nominal
 * capacities), with one log line; once it has synced it retries for ever,
 * as the others do. */
#define OPTIONAL_MAX_ERRORS 3
#define N_INFORMERS (sizeof(start_order) / sizeof(start_order[0]))
#define STOP_CHECK_MS 100 /* how long a stop may wait while an informer syncs */

struct gantry_sched_feed {
        struct gantry_sched_state *state;
        struct gantry_kube_informer *informers[N_INFORMERS];
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

/*
 * Kubernetes' own PodGroups are served only where the GenericWorkload feature
 * gate is on, off on most clusters yet: asked of the discovery document
 * first, so that a cluster without them costs one request and an info line,
 * not an informer's failures.
 */
static bool workload_api_served(struct gantry_kube_client *client)
{
        struct gantry_error err = { 0 };
        char q[GANTRY_ERROR_MSG_MAX + 8];
        int r = gantry_kube_served(client, GANTRY_KUBE_WORKLOAD_POD_GROUP, &err);

        if (r == 0)
                log_info("sched.optional_kind_unavailable", "kind=%s error=\"not served\"",
                         gantry_kube_kind_name(GANTRY_KUBE_WORKLOAD_POD_GROUP));
        else if (r < 0)
                log_warn("sched.optional_kind_unavailable", "kind=%s error=%s",
                         gantry_kube_kind_name(GANTRY_KUBE_WORKLOAD_POD_GROUP),
                         gantry_log_quote(err.msg, q, sizeof(q)));
        return r == 1;
}

/* gantry_kube_informer_wait_synced() in slices, so that @stop is seen. */
static int wait_synced(struct gantry_kube_informer *inf, int timeout_ms, const atomic_bool *stop)
{
        int r = -ETIMEDOUT;

        for (int waited = 0; waited < timeout_ms; waited += STOP_CHECK_MS) {
                if (stop && atomic_load(stop))
                        return -ECANCELED;
                r = gantry_kube_informer_wait_synced(inf, timeout_ms - waited < STOP_CHECK_MS
                                                                  ? timeout_ms - waited
                                                                  : STOP_CHECK_MS);
                if (r != -ETIMEDOUT)
                        return r;
        }
        return r;
}

int gantry_sched_feed_start(struct gantry_kube_client *client, struct gantry_sched_state *st,
                            int sync_timeout_ms, const atomic_bool *stop,
                            struct gantry_sched_feed **ret_feed, struct gantry_error *err)
{
        struct gantry_sched_feed *feed = calloc(1, sizeof(*feed));
        int r;

        if (!feed)
                return gantry_error_set(err, ENOMEM, "out of memory");
        feed->state = st;
        for (size_t i = 0; i < N_INFORMERS; i++) {
                enum gantry_kube_kind k = start_order[i];
                bool optional = k == GANTRY_KUBE_POD_GROUP || k == GANTRY_KUBE_WORKLOAD_POD_GROUP ||
                                k == GANTRY_KUBE_ATTRIBUTES_CLASS || k == GANTRY_KUBE_STORAGE_BACKEND;
                struct gantry_kube_informer_options o = {
                        .max_errors = optional ? OPTIONAL_MAX_ERRORS : 0 };

                if (k == GANTRY_KUBE_WORKLOAD_POD_GROUP && !workload_api_served(client))
                        continue;
                r = gantry_kube_informer_start(client, k, &o, on_event, feed, &feed->informers[i], err);
                if (r < 0)
                        goto fail;
                r = wait_synced(feed->informers[i], sync_timeout_ms, stop);
                if (r == -ECANCELED) {
                        gantry_error_set(err, ECANCELED, "stopped while the %s informer synced",
                                         gantry_kube_kind_name(k));
                        goto fail;
                }
                if (r < 0 && optional) {
                        struct gantry_kube_informer_state s;
                        char q[GANTRY_ERROR_MSG_MAX + 8];

                        gantry_kube_informer_state(feed->informers[i], &s);
                        log_warn("sched.optional_kind_unavailable", "kind=%s error=%s",
                                 gantry_kube_kind_name(k),
                                 gantry_log_quote(s.last_error.err ? s.last_error.msg : "timed out",
                                                  q, sizeof(q)));
                        gantry_kube_informer_stop(feed->informers[i]);
                        feed->informers[i] = NULL;
                        continue;
                }
                if (r < 0) {
                        struct gantry_kube_informer_state s;

                        gantry_kube_informer_state(feed->informers[i], &s);
                        r = gantry_error_set(err, -r, "%s informer did not sync: %s",
                                             gantry_kube_kind_name(k),
                                             s.last_error.err ? s.last_error.msg : "timed out");
                        goto fail;
                }
                log_info("sched.synced", "kind=%s", gantry_kube_kind_name(k));
        }
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
        for (size_t i = N_INFORMERS; i-- > 0;)
                gantry_kube_informer_stop(feed->informers[i]);
        free(feed);
}

int gantry_sched_feed_bind(void *ctx, const char *namespace, const char *name, const char *uid,
                           const char *node, struct gantry_error *err)
{
        return gantry_kube_bind_pod(ctx, namespace, name, uid, node, err);
}
