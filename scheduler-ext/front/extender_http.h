/*
 * gantry-scheduler's HTTP server: the extender verbs at POST
 * <prefix>/filter, /prioritize, /bind (the last path segment names the
 * verb, so any urlPrefix works), GET /healthz, /readyz and /metrics
 * (Prometheus text). HTTPS from PEM files with client certificates checked
 * against a CA (client_auth.h): one port serving HTTP/2 to clients that
 * offer h2 by ALPN (kube-scheduler's Go client) and HTTP/1.1 to the others
 * (tls_front.h); or plain HTTP/1.1 with no caller authenticated when the
 * caller asks for it by name. A body over the size limit is refused with
 * 413 before it is read when Content-Length says so, or as soon as it
 * passes the limit.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "extender.h"

struct gantry_metrics;

struct gantry_sched_server_options {
        const char *addr;            /* "HOST:PORT"; port 0 picks a free one */
        int threads;                 /* HTTP/1.1 thread pool size; default 4 */
        int bind_workers;            /* binds in flight at once; default 32 */
        size_t max_body_bytes;       /* default 64 MiB */
        const char *tls_cert_file;   /* HTTPS: all three, or none with */
        const char *tls_key_file;
        const char *client_ca_file;  /* ... the CA(s) client certificates must chain to */
        bool insecure_http;          /* plain HTTP: anyone who reaches the port may bind */
        /* Hostile clients (0: the default). Connections without a verified
         * client certificate, in all (256) and from one address (32), must
         * be done with their handshake, and if they never verify with their
         * requests, @handshake_timeout_s (5) after accept; verified ones have
         * @max_authenticated (256) of their own. With @insecure_http every
         * connection is unauthenticated: the first two limit them all and
         * the timeout is libmicrohttpd's idle one. */
        unsigned int max_unauthenticated, max_per_source, max_authenticated;
        double handshake_timeout_s;
        struct gantry_metrics *metrics; /* for /metrics and request metrics; may be NULL */
};

struct gantry_sched_server;

/*
 * Starts serving @ext (borrowed; must outlive the server). Returns 0, the
 * server and (when @ret_port is not NULL) the bound port; or -errno with
 * @err ("--listen: ...", "--tls-cert FILE: ...", "--client-ca: ..."). Without
 * @opts->insecure_http, all of the TLS files are required.
 */
int gantry_sched_server_start(struct gantry_extender *ext,
                              const struct gantry_sched_server_options *opts,
                              struct gantry_sched_server **ret_server, int *ret_port,
                              struct gantry_error *err);
/* Stops (requests in flight finish) and frees; NULL is a no-op. */
void gantry_sched_server_stop(struct gantry_sched_server *s);
