/*
 * Bandwidth changes admitted but not yet in force: when gantry-scheduler
 * admits a live change of a volume's VolumeAttributesClass (the modify verb,
 * verbs/volume_modify.c), it charges the bound pods the new rate at once;
 * until external-resizer marks the class in force on the PVC
 * (status.currentVolumeAttributesClassName), every demand computed for the
 * volume (sched_demand.c: a pod re-seen by the watch, a new pod using it)
 * reads the admitted class's parameters, so the reservation the check made
 * is never given back by a stale computation, nor charged twice.
 *
 * An entry goes when the PVC's class in force changes from the one it had
 * at admission (the change took effect, or another replaced it), or when it
 * expires (the change was never completed: the controller failed after the
 * admission and nobody retried). Keyed by the PV's volumeHandle.
 *
 * Thread-safe (one mutex).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

/* How long an admitted change waits to be marked in force, by default. */
#define GANTRY_PENDING_CLASS_TTL_SECONDS 600.0

struct gantry_pending_classes;

int gantry_pending_classes_new(struct gantry_pending_classes **ret);
void gantry_pending_classes_free(struct gantry_pending_classes *p);

/*
 * Records that volume @handle's parameters @parameters (an object of
 * strings; copied) were admitted while its PVC's class in force was
 * @admitted_over ("" none), until @expires_at (gantry_now_s()). Replaces an
 * entry of the same handle. Returns 0 or -ENOMEM.
 */
int gantry_pending_classes_set(struct gantry_pending_classes *p, const char *handle,
                               const json_t *parameters, const char *admitted_over,
                               double expires_at);
/* The admitted parameters of @handle not expired at @now: a new reference, or NULL. */
json_t *gantry_pending_classes_get(struct gantry_pending_classes *p, const char *handle, double now);
/*
 * The PVC of @handle now has class @in_force in force ("" none): drops the
 * entry when that differs from the class at admission. Returns true when
 * an entry went.
 */
bool gantry_pending_classes_settle(struct gantry_pending_classes *p, const char *handle,
                                   const char *in_force);
/* Drops @handle's entry (the admission was undone). */
void gantry_pending_classes_drop(struct gantry_pending_classes *p, const char *handle);
/* Drops the entries expired at @now; their handles in a new array of
 * strings (json_decref it; NULL when none went or out of memory). */
json_t *gantry_pending_classes_expire(struct gantry_pending_classes *p, double now);
size_t gantry_pending_classes_count(struct gantry_pending_classes *p);
