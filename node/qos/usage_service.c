/*
 * The measuring loop's lifetime in the node plugin (see usage_service.h):
 * one sampler thread; events through the node's client, when it has one. The caps it
 * walks are the enforcement side's (qos.h) when it is built in, else the
 * table of usage_targets.h.
 */
#include "usage_service.h"

#include <errno.h>
#include <string.h>

#include "log.h"
#include "pod_event.h"
#include "usage_sampler.h"
#include "usage_targets.h"
#ifdef GANTRY_USAGE_FROM_QOS
#include "usage_qos_source.h"
#define CAPS_IN_FORCE gantry_usage_qos_iterate
#else
#define CAPS_IN_FORCE gantry_usage_targets_iterate
#endif

static struct gantry_usage_sampler *sampler;
static struct gantry_pod_events events;

int gantry_usage_service_start(const struct gantry_usage_service_options *o,
                               struct gantry_error *err)
{
        struct gantry_usage_sampler_options so = { 0 };
        int r;

        if (sampler)
                return 0;
        events.kube = o->kube;
        events.node = o->node;
        so.iterate = CAPS_IN_FORCE;
        so.post_event = o->kube ? gantry_pod_event_sink : NULL;
        so.event_ctx = &events;
        so.metrics = o->metrics;
        so.interval_ms = o->interval_ms;
        if (o->window_s) {
                gantry_usage_window_config_default(&so.window);
                so.window.window_ms = (uint64_t)o->window_s * 1000;
        }
        r = gantry_usage_sampler_new(&so, &sampler);
        if (r == 0)
                r = gantry_usage_sampler_start(sampler);
        if (r < 0) {
                gantry_usage_service_stop();
                return gantry_error_set(err, r, "bandwidth sampler: cannot start: %s", strerror(-r));
        }
        if (!o->kube)
                log_info("qos.events_log_only",
                         "reason=\"no Kubernetes API access (no --kubeconfig, not in a cluster)\"");
        return 0;
}

void gantry_usage_service_stop(void)
{
        gantry_usage_sampler_free(sampler);
        sampler = NULL;
        events.kube = NULL;
}
