/*
 * The bandwidth sampler of the node plugin: every interval it walks the
 * caps in force (one per pod and published volume, as the enforcement side
 * knows them), reads each pod cgroup's io.stat line for the volume's device
 * and its io.pressure, feeds the pod's usage window, and updates the
 * gantry_node_volume_* / gantry_node_pod_* metrics. When a window's verdict
 * says a pod sits at its cap most of the window, or uses far less than it
 * declared, it hands an event to the event function (posted on the pod), at
 * most once per window per pod, volume and reason. It also watches each
 * pod and volume for IO stalls (io_stall.h): a stall that reaches the
 * threshold is told once, as one IOStalled event on the pod naming the
 * volume, the stall's length, when it started and -- where the backend's
 * live state is known -- the backend's state; the same event is finished
 * when the stall ends. What goes away (a pod unpublished) loses its window
 * and its series at the next pass.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "usage_window.h"

struct gantry_metrics;

/* One cap in force: a pod's IO to one volume's block device. Every string
 * is borrowed for the duration of the visit. */
struct gantry_usage_target {
        const char *pod_uid;
        const char *pod_namespace;
        const char *pod_name;
        const char *job;        /* owner or gang the pod belongs to; "" or NULL: none known */
        const char *volume_id;
        const char *cgroup_dir; /* the pod's cgroup v2 directory */
        unsigned major, minor;  /* the volume's block device */
        uint64_t rbps_cap, wbps_cap;   /* io.max in force, bytes/s; 0: no limit */
        uint64_t riops_cap, wiops_cap; /* 0: no limit */
        uint64_t declared_rbps, declared_wbps; /* the demand the scheduler charged */
        const char *policy;     /* "cap", "burst", "none" (for the log) */
};

/* Called once per target; returns 0 to go on, < 0 to stop the walk. */
typedef int (*gantry_usage_visit_fn)(void *visit_ctx, const struct gantry_usage_target *t);
/* Walks every cap in force, calling @visit for each; called on the sampler's
 * thread, so it must lock what it shares with the publish path. */
typedef int (*gantry_usage_iterate_fn)(void *ctx, gantry_usage_visit_fn visit, void *visit_ctx);
/* Posts an event on @t's pod; returns 0 or -errno (then the event is only
 * logged). @type is "Warning" or "Normal". */
typedef int (*gantry_usage_event_fn)(void *ctx, const struct gantry_usage_target *t,
                                     const char *type, const char *reason, const char *message);

/* Tells an IO stall (see gantry_pod_event_stall): @event_name "" posts a new
 * event and fills its name (@size bytes), else updates that event. Returns 0
 * or -errno (then the stall is only logged). */
typedef int (*gantry_usage_stall_fn)(void *ctx, const struct gantry_usage_target *t,
                                     const char *message, char *event_name, size_t size);
/* The live state of backend @backend (a clusterID / targetID): fills
 * @state and @reason; returns 0, or < 0 when it is not known. */
typedef int (*gantry_usage_backend_fn)(void *ctx, const char *backend, char *state,
                                       size_t state_size, char *reason, size_t reason_size);

struct gantry_usage_sampler_options {
        gantry_usage_iterate_fn iterate; /* required */
        void *iterate_ctx;
        gantry_usage_event_fn post_event; /* NULL: events are log lines only */
        void *event_ctx;
        struct gantry_metrics *metrics;   /* borrowed; NULL: none */
        struct gantry_usage_window_config window; /* window_ms 0: the defaults */
        unsigned interval_ms;             /* between passes; 0: 10000 */
        unsigned io_stall_ms;             /* a stall this long is told; 0: no stall events */
        gantry_usage_stall_fn tell_stall; /* NULL: stalls are log lines only */
        gantry_usage_backend_fn backend_state; /* NULL: stalls are told without a cause */
        void *stall_ctx;                  /* for both */
};

struct gantry_usage_sampler;

/* Makes a sampler (no thread yet). Returns 0 and *ret_sampler, or -EINVAL
 * (no iterate function, a bad window), -ENOMEM. */
int gantry_usage_sampler_new(const struct gantry_usage_sampler_options *opts,
                             struct gantry_usage_sampler **ret_sampler) GANTRY_MUST_CHECK;

/*
 * One pass at monotonic time @now_ms (the thread passes the clock; tests
 * pass made-up times). Returns the number of targets sampled, or -errno
 * when the walk itself failed. A target whose cgroup cannot be read is
 * counted in gantry_node_bandwidth_sample_errors_total and logged once.
 */
int gantry_usage_sampler_pass(struct gantry_usage_sampler *s, uint64_t now_ms);

/* Starts the thread that runs a pass every interval. Returns 0 or -errno. */
int gantry_usage_sampler_start(struct gantry_usage_sampler *s) GANTRY_MUST_CHECK;

/* Stops the thread (if started) and frees everything; NULL is a no-op. */
void gantry_usage_sampler_free(struct gantry_usage_sampler *s);
