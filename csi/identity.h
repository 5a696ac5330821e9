/*
 * The CSI Identity service: who the plugin is, what it can do, and whether
 * the backends it needs are reachable.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "error.h"

#define GANTRY_CSI_DRIVER_NAME "csi.gantry.io"

/*
 * A backend reachability check for Probe: returns 0 when ready, or -errno and
 * a message in @err. Bounded by @deadline_ms (CLOCK_MONOTONIC ms).
 */
typedef int (*gantry_csi_probe_fn)(const struct gantry_config *config, int64_t deadline_ms,
                                   struct gantry_error *err);

struct gantry_identity_options {
        bool controller_service; /* advertise CONTROLLER_SERVICE */
        gantry_csi_probe_fn probes[4];
        const char *probe_names[4];
        int n_probes;
};

/* Registers the Identity handlers. @opts is copied. Returns 0 or -errno. */
int gantry_identity_init(const struct gantry_identity_options *opts);
