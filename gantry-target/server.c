/*
 * gantry-target's HTTP(S) front: POST / carries one JSON-RPC request
 * (libmicrohttpd, one internal polling thread). Requests must carry
 * "Authorization: Bearer <token>" when a token is configured; the token is
 * compared in constant time and never logged. With a certificate and key the
 * server speaks TLS only. The port is reachable from the storage and pod
 * networks: connections are limited in all and per source address, and
 * each request must be whole within a budget (http_guard.h), the token
 * still checked on every request.
 */
#include <errno.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_body.h"
#include "http_guard.h"
#include "log.h"
#include "netaddr.h"
#include "target_internal.h"

#define MAX_BODY (1024 * 1024)

/* A JSON-RPC client is one csi controller (a few requests at once); 16 per
 * source leaves it room, and 64 in all a few controllers and probes. */
#define MAX_CONNECTIONS 64u
#define MAX_PER_SOURCE 16u
#define REQUEST_BUDGET_S 10.0

struct tgt_server {
        struct MHD_Daemon *daemon;
        struct gantry_http_guard *guard;
        struct tgt_context *ctx;
        char *token;
};

static bool token_ok(const struct tgt_server *s, struct MHD_Connection *conn)
{
        const char *h = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
        size_t n, want;
        unsigned char diff = 0;

        if (!s->token)
                return true;
        if (!h || strncmp(h, "Bearer ", 7) != 0)
                return false;
        h += 7;
        n = strlen(h);
        want = strlen(s->token);
        for (size_t i = 0; i < want; i++)
                diff |= (unsigned char)(s->token[i] ^ (i < n ? h[i] : 0));
        return diff == 0 && n == want;
}

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned int status, const char *json)
{
        return gantry_http_reply(conn, status, "application/json", json);
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version, const char *data,
                              size_t *data_size, void **con_cls)
{
        struct tgt_server *s = cls;
        const struct gantry_http_body *body;
        char *text;
        int r;

        (void)url;
        (void)version;
        if (!*con_cls) {
                if (strcmp(method, "POST") != 0)
                        return reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED,
                                     "{\"error\":\"POST a JSON-RPC request\"}");
                if (!token_ok(s, conn)) {
                        log_warn("target.unauthorized", "reason=bad_or_missing_bearer_token");
                        return reply(conn, MHD_HTTP_UNAUTHORIZED, "{\"error\":\"unauthorized\"}");
                }
        }
        r = gantry_http_body_feed(conn, con_cls, MAX_BODY, data, data_size, &body);
        if (r == -EFBIG)
                return reply(conn, MHD_HTTP_CONTENT_TOO_LARGE, "{\"error\":\"body too large\"}");
        if (r < 0)
                return MHD_NO;
        if (r == GANTRY_HTTP_BODY_READING)
                return MHD_YES;
        gantry_http_guard_answering(conn); /* an RPC may take a while: not cut meanwhile */
        text = tgt_rpc_handle(s->ctx, body->data, body->len);
        if (!text)
                return reply(conn, MHD_HTTP_OK, "");
        return gantry_http_reply_owned(conn, MHD_HTTP_OK, "application/json", text);
}

static void request_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                              enum MHD_RequestTerminationCode toe)
{
        gantry_http_body_completed(cls, conn, con_cls, toe);
        gantry_http_guard_completed(conn);
}

int tgt_server_start(struct tgt_context *ctx, const struct tgt_server_options *opts,
                     struct tgt_server **ret_server, int *ret_port, struct gantry_error *err)
{
        unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
        struct sockaddr_storage ss;
        const union MHD_DaemonInfo *info;
        struct tgt_server *s;

        if (gantry_netaddr_parse(opts->listen, &ss) < 0)
                return gantry_error_set(err, EINVAL, "--listen: %s is not HOST:PORT", opts->listen);
        if (ss.ss_family == AF_INET6)
                flags |= MHD_USE_IPv6;
        if (opts->tls_cert)
                flags |= MHD_USE_TLS;
        s = calloc(1, sizeof(*s));
        if (!s || (opts->token && !(s->token = strdup(opts->token)))) {
                free(s);
                return gantry_error_set(err, ENOMEM, "out of memory");
        }
        s->ctx = ctx;
        if (gantry_http_guard_new(&(struct gantry_http_guard_options){
                                          .max_connections = opts->max_connections ? opts->max_connections
                                                                                   : MAX_CONNECTIONS,
                                          .max_per_source = opts->max_per_source ? opts->max_per_source
                                                                                 : MAX_PER_SOURCE,
                                          .request_budget_s = opts->request_budget_s > 0
                                                                      ? opts->request_budget_s
                                                                      : REQUEST_BUDGET_S,
                                          .metrics = ctx->metrics, .port = "rpc" },
                                  &s->guard) < 0) {
                free(s->token);
                free(s);
                return gantry_error_set(err, ENOMEM, "out of memory");
        }
        if (opts->tls_cert)
                s->daemon = MHD_start_daemon(
                        flags, 0, gantry_http_guard_accept, s->guard, answer, s, MHD_OPTION_SOCK_ADDR,
                        (struct sockaddr *)&ss, MHD_OPTION_NOTIFY_COMPLETED, request_completed, s,
                        MHD_OPTION_NOTIFY_CONNECTION, gantry_http_guard_notify, s->guard,
                        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)30, MHD_OPTION_HTTPS_MEM_CERT,
                        opts->tls_cert, MHD_OPTION_HTTPS_MEM_KEY, opts->tls_key, MHD_OPTION_END);
        else
                s->daemon = MHD_start_daemon(flags, 0, gantry_http_guard_accept, s->guard, answer, s,
                                             MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
                                             MHD_OPTION_NOTIFY_COMPLETED, request_completed, s,
                                             MHD_OPTION_NOTIFY_CONNECTION, gantry_http_guard_notify,
                                             s->guard, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)30,
                                             MHD_OPTION_END);
        if (!s->daemon) {
                gantry_http_guard_free(s->guard);
                free(s->token);
                free(s);
                return gantry_error_set(err, EADDRNOTAVAIL, "--listen: cannot serve on %s",
                                        opts->listen);
        }
        info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
        if (ret_port)
                *ret_port = info ? info->port : 0;
        *ret_server = s;
        return 0;
}

void tgt_server_stop(struct tgt_server *s)
{
        if (!s)
                return;
        MHD_stop_daemon(s->daemon);
        gantry_http_guard_free(s->guard);
        if (s->token)
                explicit_bzero(s->token, strlen(s->token));
        free(s->token);
        free(s);
}
