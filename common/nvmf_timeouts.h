/*
 * The NVMe-oF controller timeouts a checkpoint volume is connected with:
 * how long the kernel keeps retrying a lost path (ctrl_loss_tmo) and how
 * often (reconnect_delay). A StorageClass may set both (parameters
 * ctrlLossTmoSeconds, reconnectDelaySeconds); the controller checks them and
 * passes them to the node in the volume_context under the same keys, where
 * they are checked again before the attach. A volume without them gets the
 * defaults below.
 */
#pragma once

#include "error.h"

/*
 * Defaults chosen for checkpoints: a checkpoint burst blocks the whole job,
 * so a path that drops is retried every 2 s, I/O fails over (or fails)
 * after 10 s instead of queueing, and a controller that stays lost for 60 s
 * is given up so the job sees an error within a minute rather than hanging
 * for the kernel's default 10 minutes.
 */
#define GANTRY_NVMF_RECONNECT_DELAY_S 2
#define GANTRY_NVMF_FAST_IO_FAIL_TMO_S 10
#define GANTRY_NVMF_CTRL_LOSS_TMO_S 60

/* No "retry forever" (-1): a writer blocked without an error is what the timeout is for. */
#define GANTRY_NVMF_CTRL_LOSS_TMO_MAX_S 3600
#define GANTRY_NVMF_RECONNECT_DELAY_MAX_S 60

struct gantry_nvmf_timeouts {
        int ctrl_loss_tmo_s;
        int reconnect_delay_s;
        int fast_io_fail_tmo_s; /* the default, or ctrl_loss_tmo when shorter */
};

/*
 * Fills @ret from the text values @ctrl_loss_tmo and @reconnect_delay
 * (either may be NULL: the default). Both are whole seconds:
 * ctrlLossTmoSeconds 1 to GANTRY_NVMF_CTRL_LOSS_TMO_MAX_S,
 * reconnectDelaySeconds 1 to GANTRY_NVMF_RECONNECT_DELAY_MAX_S and at most
 * ctrlLossTmoSeconds (its default too, when shorter). Errors name the field as @prefix.key ("parameters",
 * "volume_context"). Returns 0 or -EINVAL; @ret is untouched on failure.
 */
int gantry_nvmf_timeouts_parse(const char *ctrl_loss_tmo, const char *reconnect_delay, const char *prefix,
                               struct gantry_nvmf_timeouts *ret, struct gantry_error *err) GANTRY_MUST_CHECK;
