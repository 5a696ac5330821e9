/*
 * The CSI gRPC server on grpc core's C API.
 *
 * One completion queue, polled by a small pool of worker threads. Every CSI
 * method is registered before start and one registered-call request per
 * method is kept armed; a worker that receives a call re-arms the request
 * first, then unpacks, validates and handles the call synchronously, so a
 * slow call (a Ceph create, a krbd map) ties up one worker, never the server.
 * Each call has one context whose state enum is the completion tag.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "error.h"
#include "metrics.h"

struct gantry_csi_server;

struct gantry_csi_server_options {
        const char *endpoint;      /* "unix:///path/csi.sock" or "unix:/path" */
        int workers;               /* worker threads; default 4 */
        int max_message_bytes;     /* default 4 MiB */
        int drain_timeout_seconds; /* how long SIGTERM waits for calls in flight; default 30 */
        int max_call_seconds;      /* deadline given to a call that brings none; default 600 */
        const struct gantry_config *config;
        struct gantry_metrics *metrics; /* may be NULL */
};

/*
 * Creates the server, registers every CSI method, removes a stale socket file
 * at the endpoint and binds it. Does not start serving.
 * Returns 0 and the server in *ret_server, or -errno with @err filled.
 */
int gantry_csi_server_new(const struct gantry_csi_server_options *opts,
                          struct gantry_csi_server **ret_server, struct gantry_error *err);

/*
 * The deadline a handler sees (CLOCK_MONOTONIC ms): @deadline_ms, or, when
 * the client sent none (INT64_MAX), @now_ms + @max_call_seconds, so every wait
 * in a handler is bounded.
 */
int64_t gantry_csi_bound_deadline_ms(int64_t deadline_ms, int64_t now_ms, int max_call_seconds);

/* Starts the workers. Returns 0 or -errno. */
int gantry_csi_server_start(struct gantry_csi_server *s);

/*
 * Stops accepting calls, lets calls in flight finish for up to the drain
 * timeout, then cancels what is left and joins the workers. Safe to call once.
 */
void gantry_csi_server_shutdown(struct gantry_csi_server *s);

/* Frees a server (shut down first if started); NULL is a no-op. */
void gantry_csi_server_free(struct gantry_csi_server *s);

/* The filesystem path of the server's socket (borrowed). */
const char *gantry_csi_server_socket_path(const struct gantry_csi_server *s);

/*
 * Parses a CSI endpoint into a socket path. Accepts unix:///abs/path and
 * unix:/abs/path. Returns 0 and writes the path into @buf, or -EINVAL.
 */
int gantry_csi_endpoint_parse(const char *endpoint, char *buf, size_t size);
