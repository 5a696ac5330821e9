/*
 * A small Prometheus metrics registry and its text exposition.
 *
 * Counters, gauges and histograms are identified by a metric name plus a
 * rendered label set (e.g. `method="Probe",code="OK"`). Series are created on
 * first use, so callers need no registration step. Thread-safe (one mutex:
 * metrics are updated once per request, never in a hot inner loop).
 *
 * gantry_metrics_render() writes the Prometheus text format 0.0.4; any HTTP
 * server can serve it. gantry_metrics_server_start() is a ready /metrics
 * endpoint on libmicrohttpd for binaries that have no HTTP server of their own
 * (gantry-csi's --metrics-addr).
 */
#pragma once

#include <stddef.h>

#include "error.h"

struct gantry_metrics;
struct gantry_metrics_server;

/* Returns a new empty registry, or NULL when out of memory. */
struct gantry_metrics *gantry_metrics_new(void);
/* Frees the registry; NULL is a no-op. */
void gantry_metrics_free(struct gantry_metrics *m);

/*
 * Adds @value to counter @name{@labels}. @help is used the first time @name is
 * seen. @labels is the text between the braces, or NULL/"" for none; label
 * values must already be escaped (they come from fixed method names and
 * codes). Returns 0 or -ENOMEM / -EINVAL (name used with another type).
 */
int gantry_metrics_counter_add(struct gantry_metrics *m, const char *name, const char *help,
                               const char *labels, double value);

/* Sets gauge @name{@labels} to @value. Same rules as the counter. */
int gantry_metrics_gauge_set(struct gantry_metrics *m, const char *name, const char *help,
                             const char *labels, double value);

/*
 * Records one observation of @value (seconds) in histogram @name{@labels},
 * with fixed latency buckets from 1 ms to 60 s. Same rules as the counter.
 */
int gantry_metrics_histogram_observe(struct gantry_metrics *m, const char *name, const char *help,
                                     const char *labels, double value);

/*
 * Removes every series of @name whose label text starts with @label_prefix
 * (e.g. `namespace="ml",pod="w-0",` for all the series of one pod; "" or
 * NULL: all of @name). For series of things that go away (a pod's volumes):
 * a gone pod must not be reported for ever. Returns the number removed.
 */
int gantry_metrics_remove(struct gantry_metrics *m, const char *name, const char *label_prefix);

/*
 * Renders every series in the Prometheus text format. On success returns 0
 * and a malloc'd NUL-terminated string in *ret_text (caller frees).
 */
int gantry_metrics_render(struct gantry_metrics *m, char **ret_text) GANTRY_MUST_CHECK;

/*
 * Serves GET /metrics for @m on @addr ("HOST:PORT", IPv4 or "[::1]:PORT";
 * port 0 picks a free one) from a libmicrohttpd thread. On success returns 0,
 * the server in *ret_server and, when @ret_port is not NULL, the bound port.
 */
int gantry_metrics_server_start(struct gantry_metrics *m, const char *addr,
                                struct gantry_metrics_server **ret_server, int *ret_port) GANTRY_MUST_CHECK;
/* Stops and frees the server; NULL is a no-op. */
void gantry_metrics_server_stop(struct gantry_metrics_server *s);
