/*
 * Feeds gantry-scheduler's cluster view from the API server: one informer
 * per kind (StorageClasses, PVs, PVCs, Nodes, then Pods, each synced before
 * the next starts so a pod's volumes are known when the pod is seen), every
 * event applied to the sched_state on the informer's thread. The optional
 * kinds (CRDs, newer APIs) are followed while API discovery says they are
 * served, re-checked periodically: one installed later is picked up
 * without a restart. Also the bind
 * callback of the extender, on the same client.
 */
#pragma once

#include <stdatomic.h>

#include "error.h"
#include "kube_client.h"
#include "sched_state.h"

struct gantry_sched_feed;

struct gantry_sched_feed_options {
        /* How long each informer may take to list, in ms. */
        int sync_timeout_ms;
        /* Seconds between two API discovery re-checks of the optional kinds
         * (PodGroups, VolumeAttributesClass, StorageBackend); 0: 60. */
        double optional_recheck_seconds;
        /* Set by a SIGTERM during the start: the start gives up within a
         * tenth of a second (may be NULL; borrowed). */
        const atomic_bool *stop;
};

/*
 * Starts the informers on @client (borrowed) into @st (borrowed), waiting
 * for each to sync (the optional kinds: those API discovery says are
 * served), then the optional kinds' re-check (kube_optional.h). Returns 0
 * and the feed, or -errno with @err (what failed to sync, and why;
 * -ECANCELED when stopped).
 */
int gantry_sched_feed_start(struct gantry_kube_client *client, struct gantry_sched_state *st,
                            const struct gantry_sched_feed_options *opts,
                            struct gantry_sched_feed **ret_feed, struct gantry_error *err);
/* Stops every informer (no callback runs after) and frees; NULL is a no-op. */
void gantry_sched_feed_stop(struct gantry_sched_feed *feed);

/* gantry_extender_bind_fn over gantry_kube_bind_pod; @ctx is the client. */
int gantry_sched_feed_bind(void *ctx, const char *namespace, const char *name, const char *uid,
                           const char *node, struct gantry_error *err);
