/*
 * Start and stop of the node service's bandwidth enforcement (node_qos.c,
 * on top of node/qos/): a header of its own so that node_qos.c needs
 * nothing of the service's registration in node.h.
 */
#pragma once

#include "error.h"

struct gantry_metrics;

struct gantry_node_qos_options {
        const char *state_dir;   /* the cap records (e.g. <plugin dir>/qos) */
        const char *cgroup_root; /* NULL: /sys/fs/cgroup */
        int interval_seconds;    /* reconcile period; 0: 60 */
        const char *node;        /* the node's name: source.host of the events (borrowed) */
        unsigned event_window_s; /* a BandwidthNotEnforced event once per window; 0: 600 */
        struct gantry_metrics *metrics; /* borrowed; NULL: none */
};

/*
 * Starts bandwidth enforcement (node/qos/): loads the cap records (the API
 * client is the one gantry_node_init() opened), re-applies every cap still
 * published and starts the periodic
 * reconcile. Without API access caps are not enforced (logged). Returns 0
 * or -errno with @err filled.
 */
int gantry_node_qos_start(const struct gantry_node_qos_options *o, struct gantry_error *err);
void gantry_node_qos_stop(void);
