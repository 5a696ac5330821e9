/*
 * Leader election for the replicas of a Gantry daemon (gantry-scheduler;
 * the backend observer of gantry-csi's controller) over a
 * coordination.k8s.io/v1 Lease, as client-go's leaderelection does it: one replica holds the Lease
 * and renews it; the others watch it (by polling) and take it over once its
 * holder has not renewed it for its leaseDurationSeconds, measured on their
 * own clock from the moment they last saw it change (never against the
 * holder's clock). Every write is a PUT carrying the resourceVersion read
 * before, so two replicas can never both win: the API server refuses the
 * second with 409.
 *
 * A holder that cannot renew within the renew deadline stops leading (its
 * callback is told, once); a stopped election gives the Lease up (holder
 * emptied, duration 1 s) so that a standby takes over at once.
 */
#pragma once

#include <stdbool.h>

#include "error.h"

struct gantry_kube_client;
struct gantry_kube_lease;

/* Called on the election's thread when this replica starts or stops leading. */
typedef void (*gantry_kube_lease_fn)(void *ctx, bool leading);

struct gantry_kube_lease_options {
        const char *namespace;   /* of the Lease; required */
        const char *name;        /* of the Lease; required */
        const char *identity;    /* this replica (its pod name); required */
        double duration;         /* seconds a Lease holds without renewal; default 15 */
        double renew_deadline;   /* seconds the holder keeps trying to renew; default 10 */
        double retry_period;     /* seconds between tries; default 2 */
        const char *log_prefix;  /* its log events are "<prefix>.lease_acquired", ...; default "kube" */
        gantry_kube_lease_fn on_change;
        void *ctx;
};

/*
 * Starts the election on its own thread. Returns 0 or -errno (-EINVAL with
 * @err naming the option: names must be DNS labels, the durations ordered
 * duration > renew_deadline > retry_period > 0).
 */
int gantry_kube_lease_start(struct gantry_kube_client *client,
                             const struct gantry_kube_lease_options *opts,
                             struct gantry_kube_lease **ret_lease, struct gantry_error *err);

/* Whether this replica holds the Lease now. */
bool gantry_kube_lease_leading(struct gantry_kube_lease *l);

/* Stops the election (joins its thread), gives the Lease up when held. NULL: no-op. */
void gantry_kube_lease_stop(struct gantry_kube_lease *l);
