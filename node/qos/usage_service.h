/*
 * The node plugin's bandwidth measuring loop, started with the Node
 * service: the sampler (usage_sampler.h) over the caps in force
 * (usage_targets.h), its metrics in the plugin's registry, and the events
 * posted on pods through the node plugin's one Kubernetes API client when
 * it has one (kube/kube_process.h), else log lines only; an IO stall's
 * event names its backend's state read with the same client
 * (stall_cause.h).
 */
#pragma once

#include "error.h"

struct gantry_kube_client;
struct gantry_metrics;

struct gantry_usage_service_options {
        struct gantry_metrics *metrics; /* borrowed; NULL: no metrics */
        struct gantry_kube_client *kube; /* borrowed (the node's one client); NULL: log only */
        const char *node;               /* the node's name (events' source.host) */
        unsigned interval_ms;           /* 0: 10 s */
        unsigned window_s;              /* 0: 600 s */
        unsigned io_stall_seconds;      /* an IO stall this long is told (IOStalled); 0: off */
};

/* Starts the loop. Returns 0 or -errno with @err filled. */
int gantry_usage_service_start(const struct gantry_usage_service_options *o,
                               struct gantry_error *err) GANTRY_MUST_CHECK;

/* Stops the loop and frees it; safe when not started. */
void gantry_usage_service_stop(void);
