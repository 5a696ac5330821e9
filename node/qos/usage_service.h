/*
 * The node plugin's bandwidth measuring loop, started with the Node
 * service: the sampler (usage_sampler.h) over the caps in force
 * (usage_targets.h), its metrics in the plugin's registry, and the events
 * posted on pods when the plugin can reach the Kubernetes API (the
 * --kubeconfig file, else the in-cluster service account when
 * KUBERNETES_SERVICE_HOST is set, else log lines only).
 */
#pragma once

#include "error.h"

struct gantry_metrics;

struct gantry_usage_service_options {
        struct gantry_metrics *metrics; /* borrowed; NULL: no metrics */
        const char *kubeconfig;         /* NULL/"": in-cluster or none */
        const char *node;               /* the node's name (events' source.host) */
        unsigned interval_ms;           /* 0: 10 s */
        unsigned window_s;              /* 0: 600 s */
};

/*
 * Starts the loop. An unusable kubeconfig is an error (a typo must not
 * silently turn events off); no API access at all is not. Returns 0 or
 * -errno with @err filled.
 */
int gantry_usage_service_start(const struct gantry_usage_service_options *o,
                               struct gantry_error *err) GANTRY_MUST_CHECK;

/* Stops the loop and frees it; safe when not started. */
void gantry_usage_service_stop(void);
