/*
 * gantry-scheduler's view of each storage backend's live state: the
 * StorageBackend objects (storagebackends.gantry.io/v1alpha1, cluster-scoped,
 * written by the observer in gantry-csi's controller) turned into the
 * placement library's gantry_backend_live, so that admission charges
 * against each backend's effective capacity.
 *
 *   metadata.name          the backend, as the topology file names it (or
 *                          that name lower-cased)
 *   status.state           Healthy | Degraded | Recovering | Unavailable
 *   status.clientReadBytesPerSec + clientWriteBytesPerSec   client IO
 *   status.recoveryBytesPerSec                              recovery traffic
 *   status.observedAt      RFC 3339 UTC; older than the stale bound: the
 *                          backend is nominal again (a warning, once)
 *
 * A missing number is 0 (Ceph leaves out a field whose value is 0); an
 * object without status.state, or deleted, leaves its backend nominal.
 * It also remembers the backends pods were held for (the extender's
 * refusals), so that the daemon requeues those pods in kube-scheduler when
 * such a backend's effective capacity rises.
 *
 * Thread-safe: the informer thread, the daemon's ticker and HTTP threads.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "error.h"
#include "placement.h"

#define GANTRY_SCHED_BACKENDS_MAX 256 /* StorageBackends followed */

struct gantry_sched_backends;

/*
 * A new view over @c (borrowed; must outlive it); an observation older than
 * @stale_seconds (> 0) counts as none. Returns 0 or -ENOMEM / -EINVAL.
 */
int gantry_sched_backends_new(struct gantry_cluster *c, double stale_seconds,
                              struct gantry_sched_backends **ret_backends);
void gantry_sched_backends_free(struct gantry_sched_backends *b);

/*
 * Applies one StorageBackend (@deleted: it went) at wall-clock time @now
 * (seconds since the epoch). Returns 0; -EINVAL with @err naming the field
 * of a malformed object (ignored); -ENOENT when the topology has no such
 * backend (ignored; logged once per name by the caller's choice); -ENOMEM.
 */
int gantry_sched_backends_apply(struct gantry_sched_backends *b, const json_t *obj, bool deleted,
                                double now, struct gantry_error *err);

/* Re-reads every observation's age at @now: a stale one is nominal, with a
 * warning logged once when it turns stale. */
void gantry_sched_backends_tick(struct gantry_sched_backends *b, double now);

/* A pod was refused for backend @name (the extender): remember it. */
void gantry_sched_backends_note_held(struct gantry_sched_backends *b, const char *name);

/*
 * Backends whose effective capacity rose while pods were held for them,
 * since the last call: up to @max names copied to @ret_names, and forgotten.
 * Returns how many.
 */
size_t gantry_sched_backends_take_risen(struct gantry_sched_backends *b,
                                        char (*ret_names)[GANTRY_PLACEMENT_NAME_MAX + 1],
                                        size_t max);

/* @fn(@ctx) is called when a backend that held pods rises (with the view's
 * lock held: it must only wake someone, e.g. signal a condition). */
void gantry_sched_backends_set_on_rise(struct gantry_sched_backends *b, void (*fn)(void *ctx),
                                       void *ctx);

/* RFC 3339 UTC ("2026-12-07T15:56:47Z", fraction allowed) to seconds since
 * the epoch. 0 or -EINVAL. */
int gantry_sched_parse_rfc3339(const char *s, double *ret_seconds);
