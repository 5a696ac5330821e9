/*
 * Feeds gantry-scheduler's cluster view from the API server: one informer
 * per kind (StorageClasses, PVs, PVCs, Nodes, then Pods, each synced before
 * the next starts so a pod's volumes are known when the pod is seen), every
 * event applied to the sched_state on the informer's thread. Also the bind
 * callback of the extender, on the same client.
 */
#pragma once

#include <stdatomic.h>

#include "error.h"
#include "kube_client.h"
#include "sched_state.h"

struct gantry_sched_feed;

/*
 * Starts the informers on @client (borrowed) into @st (borrowed); waits for
 * each to sync, at most @sync_timeout_ms each, and gives up within a tenth of
 * a second once *@stop (may be NULL) is set: a SIGTERM during the sync.
 * Returns 0 and the feed, or -errno with @err (what failed to sync, and
 * why; -ECANCELED when stopped).
 */
int gantry_sched_feed_start(struct gantry_kube_client *client, struct gantry_sched_state *st,
                            int sync_timeout_ms, const atomic_bool *stop,
                            struct gantry_sched_feed **ret_feed, struct gantry_error *err);
/* Stops every informer (no callback runs after) and frees; NULL is a no-op. */
void gantry_sched_feed_stop(struct gantry_sched_feed *feed);

/* gantry_extender_bind_fn over gantry_kube_bind_pod; @ctx is the client. */
int gantry_sched_feed_bind(void *ctx, const char *namespace, const char *name, const char *uid,
                           const char *node, struct gantry_error *err);
