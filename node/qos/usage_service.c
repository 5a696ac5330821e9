/*
 * The measuring loop's lifetime in the node plugin (see usage_service.h):
 * one sampler thread; events through the node's client, when it has one. The caps it
 * walks are the enforcement side's (qos.h) when it is built in, else the
 * table of usage_targets.h.
 */
#include "usage_service.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "io_stall.h"
#include "log.h"
#include "pod_event.h"
#include "stall_cause.h"
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

/* A gantry_usage_stall_fn over gantry_pod_event_stall; failures are logged. */
static int stall_sink(void *ctx, const struct gantry_usage_target *t, const char *message,
                      char *event_name, size_t size)
{
        struct gantry_error err = { 0 };
        char quoted[GANTRY_ERROR_MSG_MAX + 8];
        int r = gantry_pod_event_stall(ctx, t, message, event_name, size, &err);

        if (r < 0)
                log_warn("qos.event_post_failed", "namespace=%s pod=%s reason=%s error=%s",
                         t->pod_namespace, t->pod_name, GANTRY_IO_STALL_REASON,
                         gantry_log_quote(err.msg, quoted, sizeof(quoted)));
        return r;
}

/* A gantry_usage_backend_fn over gantry_stall_cause_get: a backend whose
 * state cannot be read (no CRD, no RBAC, stale) is logged, and has no cause. */
static int backend_state(void *ctx, const char *backend, char *state, size_t state_size,
                         char *reason, size_t reason_size)
{
        const struct gantry_pod_events *pe = ctx;
        struct gantry_stall_cause c;
        struct gantry_error err = { 0 };
        char quoted[GANTRY_ERROR_MSG_MAX + 8];
        int r = gantry_stall_cause_get(pe->kube, backend, &c, &err);

        if (r < 0) {
                log_info("qos.backend_state_unknown", "backend=%s error=%s", backend,
                         gantry_log_quote(err.msg, quoted, sizeof(quoted)));
                return r;
        }
        snprintf(state, state_size, "%s", c.state);
        snprintf(reason, reason_size, "%s", c.reason);
        return 0;
}

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
        so.io_stall_ms = o->io_stall_seconds * 1000;
        so.tell_stall = o->kube ? stall_sink : NULL;
        so.backend_state = o->kube ? backend_state : NULL;
        so.stall_ctx = &events;
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
