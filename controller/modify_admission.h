/*
 * The controller's check with gantry-scheduler before a live bandwidth
 * change (ControllerModifyVolume) is recorded: the scheduler admits the
 * change and charges it to the pods bound with the volume, or refuses it
 * because a NIC, leaf uplink or storage backend on their paths cannot carry
 * the increase (scheduler-ext/verbs/volume_modify.h).
 *
 *   admitted            0
 *   refused             -ENOSPC, the scheduler's reason in @err
 *                       (RESOURCE_EXHAUSTED: external-resizer keeps the PVC
 *                       InProgress, shows the reason in a VolumeModifyFailed
 *                       event and its ModifyVolumeError condition, and
 *                       retries, so the change goes through once capacity
 *                       frees)
 *   bad parameter       -EINVAL (INVALID_ARGUMENT: Infeasible)
 *   scheduler unreachable, not ready, or an answer it cannot read
 *                       -EAGAIN (UNAVAILABLE: retried; nothing recorded)
 *
 * Without a scheduler URL the check is skipped (logged once): every change
 * is recorded as asked, as before gantry-scheduler could be asked.
 *
 * Thread-safe after gantry_modify_admission_configure(), which runs once at
 * start-up, before the server.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "csi.pb-c.h"
#include "error.h"

struct gantry_modify_admission_options {
        const char *url;         /* gantry-scheduler's base URL, e.g. https://gantry-scheduler:8888;
                                  * NULL or "": no check */
        const char *client_cert; /* PEM client certificate (its --client-ca's); may be NULL */
        const char *client_key;  /* its key; may be NULL */
        const char *ca_file;     /* PEM CA of the scheduler's serving certificate; may be NULL */
        long timeout_ms;         /* per check; 0: 10000 */
};

/* Keeps copies of @o's strings. Returns 0, -EINVAL (a URL that is neither
 * http:// nor https://) or -ENOMEM. */
int gantry_modify_admission_configure(const struct gantry_modify_admission_options *o,
                                      struct gantry_error *err);

/*
 * Asks gantry-scheduler whether volume @volume_id can have the class
 * parameters @keys[i] = @values[i] (@n of them: the whole
 * mutable_parameters). Returns as the table above says.
 */
int gantry_modify_admission_check(const char *volume_id, const char *const *keys,
                                  const char *const *values, size_t n, struct gantry_error *err);

/*
 * Whether changing a volume's recorded class parameters @old_json (a JSON
 * object of strings, as the dataset journal keeps them; NULL or "" when
 * unknown) to @keys/@values could raise any pod's rate, so that the
 * scheduler must be asked: a rate key (per-GPU read or write Gbps, the
 * default Gbps) that is new, gone (the StorageClass's value applies) or
 * larger. False only when every rate key is unchanged or smaller.
 */
bool gantry_modify_admission_raises(const char *old_json, const char *const *keys,
                                    const char *const *values, size_t n);

/*
 * The check as ControllerModifyVolume makes it, after the volume was found
 * and before anything is recorded: asks gantry-scheduler (as
 * gantry_modify_admission_check) when the change of @req's
 * mutable_parameters from @recorded (the parameters recorded for the
 * volume; NULL when the tier keeps none) may raise a rate
 * (gantry_modify_admission_raises); else 0 at once.
 */
int gantry_modify_admission_ask(const Csi__V1__ControllerModifyVolumeRequest *req,
                                const char *recorded, struct gantry_error *err);
