/*
 * A StorageClass's bandwidth enforcement parameters, validated the same way
 * by CreateVolume (which rejects a bad one naming the field) and by the node
 * plugin (which caps a pod's IO with them, node/qos/):
 *
 *   bandwidthPolicy       cap (default): the cap is the reservation;
 *                         burst: the reservation x bandwidthBurstFactor;
 *                         none: no cap
 *   bandwidthBurstFactor  a number >= 1 (default 2); only with burst
 *   bandwidthReadIOPS     read IOs/s cap per pod and volume (default none)
 *   bandwidthWriteIOPS    write IOs/s cap per pod and volume (default none)
 *
 * The reservation itself is the one demand computation's figure
 * (bandwidth_demand.h).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "error.h"

#define GANTRY_BW_PARAM_POLICY "bandwidthPolicy"
#define GANTRY_BW_PARAM_BURST_FACTOR "bandwidthBurstFactor"
#define GANTRY_BW_PARAM_READ_IOPS "bandwidthReadIOPS"
#define GANTRY_BW_PARAM_WRITE_IOPS "bandwidthWriteIOPS"
#define GANTRY_BW_DEFAULT_BURST_FACTOR 2.0

enum gantry_bw_policy {
        GANTRY_BW_POLICY_CAP = 0,
        GANTRY_BW_POLICY_BURST,
        GANTRY_BW_POLICY_NONE,
};

struct gantry_bw_class {
        enum gantry_bw_policy policy;
        double burst_factor; /* 1 unless policy is burst */
        uint64_t riops;      /* 0: none */
        uint64_t wiops;      /* 0: none */
};

/*
 * Looks up a StorageClass parameter: its value, or NULL when absent.
 * @userdata is the caller's (a CSI parameter map, a JSON object).
 */
typedef const char *(*gantry_bw_param_fn)(void *userdata, const char *key);

/*
 * Parses and validates the parameters above. @prefix names where they come
 * from in errors ("parameters", "StorageClass fast"). Returns 0, or -EINVAL
 * with @err naming the field (e.g. "parameters.bandwidthPolicy: must be cap,
 * burst or none").
 */
int gantry_bw_class_parse(gantry_bw_param_fn get, void *userdata, const char *prefix,
                          struct gantry_bw_class *ret, struct gantry_error *err);

/* "cap", "burst", "none" ("?" when out of range). */
const char *gantry_bw_policy_name(enum gantry_bw_policy policy);

/*
 * Whether @key is one of the bandwidth parameters above or a rate of
 * bandwidth_demand.h (gantry.io/read-gbps-per-gpu, gantry.io/write-gbps-per-gpu,
 * gantry.io/default-gbps): keys CreateVolume accepts besides its tier's own.
 */
bool gantry_bw_class_is_param(const char *key);

/*
 * gantry_bw_class_parse() plus the rates (a number of Gbps >= 0): what
 * CreateVolume checks. Returns 0 or -EINVAL with @err naming the field.
 */
int gantry_bw_class_check(gantry_bw_param_fn get, void *userdata, const char *prefix,
                          struct gantry_error *err);
