/*
 * The kube-scheduler extender verbs, transport-free: a request body in, a
 * reply body and an HTTP status out. extender_http.c serves them over HTTP;
 * tests and the benchmark may call them directly.
 *
 *   filter      ExtenderArgs {Pod, Nodes | NodeNames} -> ExtenderFilterResult
 *               {Nodes | NodeNames, FailedNodes, FailedAndUnresolvableNodes, Error}
 *   prioritize  ExtenderArgs -> HostPriorityList [{Host, Score 0..10}]
 *   bind        ExtenderBindingArgs {PodName, PodNamespace, PodUID, Node}
 *               -> ExtenderBindingResult {Error}
 *   modify      not kube-scheduler's: the CSI controller's check of a volume's
 *               live bandwidth change (volume_modify.h)
 *
 * Keys are kube-scheduler's Go field names (capitalised), as it sends them.
 * With nodeCacheCapable false the request carries whole Node objects: they
 * are applied to the model before deciding (their labels are the freshest).
 * A malformed body (bad JSON, wrong types, neither Nodes nor NodeNames) is a
 * 400 with {"Error": "..."} naming the field; a pod Gantry cannot place is a
 * 200 with its reasons, as the protocol expects.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "sched_state.h"

struct gantry_metrics;
struct gantry_gangs;

enum gantry_extender_verb {
        GANTRY_VERB_FILTER = 0,
        GANTRY_VERB_PRIORITIZE,
        GANTRY_VERB_BIND,
        GANTRY_VERB_MODIFY, /* a volume's live bandwidth change (volume_modify.h) */
        GANTRY_VERB_COUNT,
};

/*
 * Posts the Binding to the API server (the Kubernetes client's
 * gantry_kube_bind_pod). Returns 0 or -errno with @err filled. Called from
 * HTTP threads concurrently.
 */
typedef int (*gantry_extender_bind_fn)(void *ctx, const char *namespace, const char *name,
                                       const char *uid, const char *node, struct gantry_error *err);

/*
 * Tells the pod's owner why it is held (an Event on the pod), without
 * blocking: called from HTTP threads; the daemon queues it. @reason is a
 * CamelCase word, @message one line.
 */
typedef void (*gantry_extender_event_fn)(void *ctx, const char *namespace, const char *name,
                                         const char *uid, const char *reason, const char *message);

struct gantry_extender_options {
        double reservation_ttl_seconds;  /* a bind's reservation until the watch confirms; default 60 */
        gantry_extender_bind_fn bind;    /* NULL: no API server (e.g. --state): a bind charges
                                          * the ledger for good, never expires */
        void *bind_ctx;
        struct gantry_metrics *metrics;  /* may be NULL; borrowed */
        size_t max_nodes;                /* per request; default 100000 */
        struct gantry_gangs *gangs;      /* pods of a gang are placed whole (gang.h);
                                          * NULL: every pod on its own; borrowed */
        gantry_extender_event_fn event;  /* a pod held for a storage backend; may be NULL */
        void *event_ctx;
};

struct gantry_extender;

/* A new extender over @state (borrowed). Returns 0 or -ENOMEM. */
int gantry_extender_new(struct gantry_sched_state *state, const struct gantry_extender_options *opts,
                        struct gantry_extender **ret_extender);
void gantry_extender_free(struct gantry_extender *ext);

/* "filter", "prioritize", "bind", "modify"; -EINVAL for anything else. */
int gantry_extender_verb_parse(const char *name, enum gantry_extender_verb *ret_verb);
const char *gantry_extender_verb_name(enum gantry_extender_verb verb);

/*
 * Handles one request. Returns the HTTP status (200, 400, 500) and in
 * *ret_reply a malloc'd JSON text (caller frees); *ret_reply is NULL only
 * when out of memory (status 500). Thread-safe.
 */
int gantry_extender_handle(struct gantry_extender *ext, enum gantry_extender_verb verb,
                           const char *body, size_t len, char **ret_reply);

/*
 * Readiness. An extender starts ready. Not ready (the model still syncing,
 * a standby replica, a recovery under way), every verb answers 503 with
 * {"Error": "gantry-scheduler is not ready (@why); retry"}: kube-scheduler
 * takes any answer but 200 as an extender error, and a pod whose scheduling
 * failed with an error goes to its backoff queue (seconds) instead of the
 * unschedulable pool (until a cluster event or the 5-minute flush) that a
 * refusal leads to. gantry_extender_ready() copies @why when not NULL.
 */
void gantry_extender_set_ready(struct gantry_extender *ext, bool ready, const char *why);
bool gantry_extender_ready(struct gantry_extender *ext, char *why, size_t size);

/* The Event reason on a pod held because a storage backend lacks headroom. */
#define GANTRY_EVENT_BACKEND_HELD "StorageBackendShort"

/* Refreshes the model gauges in the metrics registry (before a /metrics
 * render), the per-backend gauges gantry_backend_* among them. */
void gantry_extender_update_gauges(struct gantry_extender *ext);

/* gantry_now_s(): the monotonic clock in seconds, the time base of reservations. */
double gantry_extender_now(void);
