/*
 * gantry-target's HTTP(S) front: POST / carries one JSON-RPC request
 * (libmicrohttpd, one internal polling thread). Requests must carry
 * "Authorization: Bearer <token>" when a token is configured; the token is
 * compared in constant time and never logged. With a certificate and key the
 * server speaks TLS only.
 */
#include <errno.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "netaddr.h"
#include "target_internal.h"

#define MAX_BODY (1024 * 1024)

struct tgt_server {
        struct MHD_Daemon *daemon;
        struct tgt_context *ctx;
        char *token;
};

struct request {
        char *body;
        size_t len;
        bool too_large;
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

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned int status, char *text)
{
        struct MHD_Response *resp;
        enum MHD_Result ret;

        resp = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
        if (!resp) {
                free(text);
                return MHD_NO;
        }
        MHD_add_response_header(resp, "Content-Type", "application/json");
        ret = MHD_queue_response(conn, status, resp);
        MHD_destroy_response(resp);
        return ret;
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version, const char *data,
                              size_t *data_size, void **con_cls)
{
        struct tgt_server *s = cls;
        struct request *req = *con_cls;
        char *text;

        (void)url;
        (void)version;
        if (!req) {
                if (strcmp(method, "POST") != 0)
                        return reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED,
                                     strdup("{\"error\":\"POST a JSON-RPC request\"}"));
                if (!token_ok(s, conn)) {
                        log_warn("target.unauthorized", "reason=bad_or_missing_bearer_token");
                        return reply(conn, MHD_HTTP_UNAUTHORIZED, strdup("{\"error\":\"unauthorized\"}"));
                }
                req = calloc(1, sizeof(*req));
                if (!req)
                        return MHD_NO;
                *con_cls = req;
                return MHD_YES;
        }
        if (*data_size) {
                if (req->len + *data_size > MAX_BODY) {
                        req->too_large = true;
                } else if (!req->too_large) {
                        char *b = realloc(req->body, req->len + *data_size + 1);
                        if (!b)
                                return MHD_NO;
                        memcpy(b + req->len, data, *data_size);
                        req->body = b;
                        req->len += *data_size;
                }
                *data_size = 0;
                return MHD_YES;
        }
        if (req->too_large)
                return reply(conn, MHD_HTTP_CONTENT_TOO_LARGE, strdup("{\"error\":\"body too large\"}"));
        text = tgt_rpc_handle(s->ctx, req->body ? req->body : "", req->len);
        if (!text)
                text = strdup("");
        return text ? reply(conn, MHD_HTTP_OK, text) : MHD_NO;
}

static void completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
        struct request *req = *con_cls;

        (void)cls;
        (void)conn;
        (void)toe;
        if (req) {
                free(req->body);
                free(req);
                *con_cls = NULL;
        }
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
        if (opts->tls_cert)
                s->daemon = MHD_start_daemon(
                        flags, 0, NULL, NULL, answer, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
                        MHD_OPTION_NOTIFY_COMPLETED, completed, s, MHD_OPTION_CONNECTION_TIMEOUT,
                        (unsigned int)30, MHD_OPTION_HTTPS_MEM_CERT, opts->tls_cert,
                        MHD_OPTION_HTTPS_MEM_KEY, opts->tls_key, MHD_OPTION_END);
        else
                s->daemon = MHD_start_daemon(flags, 0, NULL, NULL, answer, s, MHD_OPTION_SOCK_ADDR,
                                             (struct sockaddr *)&ss, MHD_OPTION_NOTIFY_COMPLETED,
                                             completed, s, MHD_OPTION_CONNECTION_TIMEOUT,
                                             (unsigned int)30, MHD_OPTION_END);
        if (!s->daemon) {
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
        if (s->token)
                explicit_bzero(s->token, strlen(s->token));
        free(s->token);
        free(s);
}
