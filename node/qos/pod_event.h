/*
 * Posts a core/v1 Event on a pod through the Kubernetes API: the node
 * plugin's way to tell a job's owner that a pod sits at its bandwidth cap,
 * pulls far less than it declared, or that its IO stalled and why
 * (`kubectl describe pod` shows it). The
 * client is optional: a node plugin without API access (no kubeconfig, not
 * in a cluster) only logs the event.
 */
#pragma once

#include "error.h"
#include "usage_sampler.h"

struct gantry_kube_client;

struct gantry_pod_events {
        struct gantry_kube_client *kube; /* borrowed; NULL: log only */
        const char *node;                /* source.host (borrowed) */
        unsigned window_s;               /* BandwidthNotEnforced: once per window; 0: 600 */
};

#define GANTRY_POD_EVENT_NOT_ENFORCED "BandwidthNotEnforced"

/*
 * Posts the Event (involvedObject: the pod of @t by namespace, name and UID;
 * source.component "gantry-csi", source.host the node) to
 * /api/v1/namespaces/<ns>/events. @type "Warning" or "Normal". Returns 0,
 * -ENOTCONN when there is no client, or -errno with @err from the API.
 */
int gantry_pod_event_post(const struct gantry_pod_events *pe, const struct gantry_usage_target *t,
                          const char *type, const char *reason, const char *message,
                          struct gantry_error *err);

/*
 * Tells the pod of @t that its IO stalled (a Warning with reason
 * IOStalled, @message from gantry_io_stall_message): when @event_name is
 * "" it posts a new Event and writes the name the API server gave it to
 * @event_name (@size bytes; left "" when the answer names none); else it
 * merge-patches that Event's message and lastTimestamp (the stall's end:
 * one Event per stall). Returns 0, -ENOTCONN when there is no client, or
 * -errno with @err from the API.
 */
int gantry_pod_event_stall(const struct gantry_pod_events *pe, const struct gantry_usage_target *t,
                           const char *message, char *event_name, size_t size,
                           struct gantry_error *err);

/*
 * Tells the pod of @t (and its volume_id) that its bandwidth cap is not enforced, and why (@why:
 * "cgroup_v1", "no_pod_cgroup", "volume_not_in_pod", else shown as is): a
 * Warning with reason BandwidthNotEnforced, once per (pod UID, volume, why)
 * and window, as the sampler sends its own. Returns 1 posted, 0 held back
 * (sent within the window), -errno with @err (-ENOTCONN: no client).
 */
int gantry_pod_event_not_enforced(const struct gantry_pod_events *pe,
                                  const struct gantry_usage_target *t, const char *why,
                                  struct gantry_error *err);

/* A gantry_usage_event_fn over gantry_pod_event_post; @ctx is a struct
 * gantry_pod_events; failures are logged. */
int gantry_pod_event_sink(void *ctx, const struct gantry_usage_target *t, const char *type,
                          const char *reason, const char *message);
