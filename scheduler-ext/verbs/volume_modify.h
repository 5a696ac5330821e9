/*
 * The modify verb: the CSI controller asks, before it records a live change
 * of a volume's bandwidth (ControllerModifyVolume of a new
 * VolumeAttributesClass), whether the pods bound with the volume can have
 * the new rate.
 *
 *   POST .../modify  {"volumeHandle": "<PV volumeHandle>",
 *                     "parameters": {"gantry.io/read-gbps-per-gpu": "8", ...}}
 *   200 {"Admitted": true, "Pods": n, "Charged": m, "Increase": bool}
 *   409 {"Error": "leaf uplink leaf-3: 4.0 of 100.0 Gbps free, the change needs 8.0 more"}
 *   400 {"Error": "..."} a malformed request or a parameter that does not parse
 *
 * parameters are the whole class's (what ControllerModifyVolume carries in
 * mutable_parameters). Each bound pod's demand with them is set against its
 * demand now: when some flow of the volume grows, the growth is checked on
 * every link of the pods' paths and charged at once (placement's
 * gantry_cluster_recharge, one step under the ledger's lock), and the
 * change is kept as admitted (model/pending_class.h) until external-resizer
 * marks the class in force on the PVC. A flow that falls keeps its charge
 * until then: a decrease is always admitted and frees capacity when it
 * takes effect. The same request again finds the change charged already
 * and admits it with nothing more to charge.
 *
 * Requests are taken one at a time (they are rare; the ledger's own lock
 * already makes each check-and-charge atomic).
 */
#pragma once

#include <stddef.h>

#include "sched_state.h"

/* The most parameters one request may carry. */
#define GANTRY_VOLUME_MODIFY_MAX_PARAMETERS 64

/*
 * Answers one modify request against @state. Returns the HTTP status and in
 * *@ret_reply a malloc'd JSON text (caller frees; NULL only when out of
 * memory, status 500). Thread-safe.
 */
int gantry_volume_modify_handle(struct gantry_sched_state *state, const char *body, size_t len,
                                char **ret_reply);
