/*
 * Optional kinds: informers for kinds an API server may or may not serve --
 * CRDs (scheduler-plugins' PodGroup, Gantry's StorageBackend), APIs of a
 * newer Kubernetes (VolumeAttributesClass) or behind a feature gate
 * (Kubernetes' own PodGroup). Each kind is asked of API discovery first, so
 * a kind not served costs one request and no informer, no error. A thread
 * asks again every re-check period: a kind served later (a CRD applied
 * after the daemon started, a cluster upgraded) gets its informer then,
 * without a restart, and a kind no longer served (its CRD deleted) has its
 * informer stopped and its objects delivered DELETED.
 *
 * One set serves one consumer (one callback). Its informers run on their
 * own threads; the callback also runs on the re-check thread, for the
 * DELETED of a kind that went.
 */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>

#include "error.h"
#include "kube_client.h"

/* Seconds between two discovery re-checks when the options say 0. */
#define GANTRY_KUBE_OPTIONAL_RECHECK_SECONDS 60

struct gantry_kube_optional;

struct gantry_kube_optional_options {
        /* Seconds between re-checks; 0: GANTRY_KUBE_OPTIONAL_RECHECK_SECONDS. */
        double recheck_seconds;
        /* At most this long gantry_kube_optional_add() waits for a served
         * kind's first list; 0: 120 s. */
        int sync_timeout_ms;
        /* gantry_kube_optional_add() gives up within a tenth of a second
         * once *stop is set (a SIGTERM at start); may be NULL. Borrowed. */
        const atomic_bool *stop;
        /* Failed lists after which a served kind's informer that never
         * listed gives up until the next re-check (the kind is served, its
         * list is refused: RBAC); 0: 3. */
        int max_errors;
};

/*
 * Makes an empty set on @client (borrowed; must outlive the set) whose
 * informers call @fn(@ctx, ...) (see gantry_kube_event_fn). @opts may be
 * NULL (defaults). Returns 0 and the set in *ret_set, or -errno (-EINVAL
 * for a bad option, -ENOMEM) with @err.
 */
int gantry_kube_optional_new(struct gantry_kube_client *client, gantry_kube_event_fn fn, void *ctx,
                             const struct gantry_kube_optional_options *opts,
                             struct gantry_kube_optional **ret_set, struct gantry_error *err);

/*
 * Adds @kind to the set (before gantry_kube_optional_run() only): asks
 * discovery whether it is served and, when it is, starts its informer with
 * @informer_opts (NULL: defaults; its strings borrowed for the set's life;
 * its max_errors is the set's) and waits for its first list. Returns 1 when
 * the kind is followed (listed), 0 when it is not for now (not served:
 * quietly; discovery or the list failed: one warning) -- the re-check tries
 * again --, -ECANCELED when *stop was set, other -errno (-EINVAL, -ENOMEM,
 * -EEXIST the kind twice, -E2BIG too many kinds) with @err.
 */
int gantry_kube_optional_add(struct gantry_kube_optional *set, enum gantry_kube_kind kind,
                             const struct gantry_kube_informer_options *informer_opts,
                             struct gantry_error *err);

/*
 * Says in one info line which added kinds are not followed
 * (kube.optional.absent), then starts the re-check thread. Returns 0, or
 * -errno with @err when the thread cannot start.
 */
int gantry_kube_optional_run(struct gantry_kube_optional *set, struct gantry_error *err);

/* Whether @kind's informer runs now (thread-safe): for tests and status. */
bool gantry_kube_optional_following(struct gantry_kube_optional *set, enum gantry_kube_kind kind);

/*
 * Stops the re-check thread (interrupting its discovery request) and every
 * informer of the set; no callback runs after it returns. The objects are
 * not delivered DELETED: the consumer is stopping. NULL is a no-op.
 */
void gantry_kube_optional_free(struct gantry_kube_optional *set);
