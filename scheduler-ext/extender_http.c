/*
 * The HTTP face of gantry-scheduler on libmicrohttpd: routing, body
 * accumulation with a size limit, request metrics, TLS and the client
 * certificate check before any verb (client_auth.c). The verbs
 * themselves are in extender.c. A bind waits on the API server: it runs on
 * the bind queue's workers (bind_queue.c) with its connection suspended, so
 * the thread that read it goes on serving filters. See extender_http.h.
 */
#include <errno.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "attr_file.h"
#include "bind_queue.h"
#include "client_auth.h"
#include "extender_http.h"
#include "http_body.h"
#include "log.h"
#include "metrics.h"
#include "netaddr.h"

#define DEFAULT_MAX_BODY (64u << 20)
#define TLS_FILE_MAX (1u << 20)

struct gantry_sched_server {
        struct MHD_Daemon *daemon;
        struct gantry_extender *ext;
        struct gantry_sched_bind_queue *binds;
        struct gantry_metrics *metrics;
        size_t max_body;
        char *tls_cert, *tls_key; /* PEM in memory for MHD; the key is never logged */
        char *client_ca;          /* PEM; NULL: plain HTTP, no caller checked */
        struct gantry_sched_client_cache *verified; /* the client chains that verified */
};

static enum MHD_Result send_text(struct MHD_Connection *conn, unsigned int status,
                                 const char *type, char *text, bool owned)
{
        if (owned)
                return gantry_http_reply_owned(conn, status, type, text);
        return gantry_http_reply(conn, status, type, text);
}

static void count_request(struct gantry_sched_server *s, const char *verb, int status, double start)
{
        char labels[96];

        if (!s->metrics)
                return;
        snprintf(labels, sizeof(labels), "verb=\"%s\",code=\"%d\"", verb, status);
        gantry_metrics_counter_add(s->metrics, "gantry_scheduler_requests_total",
                                   "Extender requests by verb and HTTP status", labels, 1);
        snprintf(labels, sizeof(labels), "verb=\"%s\"", verb);
        gantry_metrics_histogram_observe(s->metrics, "gantry_scheduler_request_seconds",
                                         "Extender request latency by verb", labels,
                                         gantry_extender_now() - start);
}

static enum MHD_Result serve_get(struct gantry_sched_server *s, struct MHD_Connection *conn,
                                 const char *url)
{
        char *text = NULL;

        if (!strcmp(url, "/healthz"))
                return send_text(conn, MHD_HTTP_OK, "text/plain", "ok\n", false);
        if (!strcmp(url, "/readyz")) {
                char why[128];

                if (gantry_extender_ready(s->ext, why, sizeof(why)))
                        return send_text(conn, MHD_HTTP_OK, "text/plain", "ok\n", false);
                if (asprintf(&text, "not ready: %s\n", why) < 0)
                        return send_text(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "text/plain",
                                         "not ready\n", false);
                return send_text(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "text/plain", text, true);
        }
        if (!strcmp(url, "/metrics") && s->metrics) {
                gantry_extender_update_gauges(s->ext);
                if (gantry_metrics_render(s->metrics, &text) < 0)
                        return send_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "text/plain",
                                         "render failed\n", false);
                return send_text(conn, MHD_HTTP_OK, "text/plain; version=0.0.4", text, true);
        }
        return send_text(conn, MHD_HTTP_NOT_FOUND, "text/plain", "not found\n", false);
}

static enum MHD_Result reply_json(struct gantry_sched_server *s, struct MHD_Connection *conn,
                                  const char *verb, int status, char *json, double start)
{
        count_request(s, verb, status, start);
        if (!json)
                return send_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "application/json",
                                 "{\"Error\":\"out of memory\"}", false);
        return send_text(conn, (unsigned int)status, "application/json", json, true);
}

/* Per TLS connection: whether its client certificate was verified. */
struct conn_state {
        bool verified;
};

static void connection_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                              enum MHD_ConnectionNotificationCode code)
{
        struct gantry_sched_server *s = cls;

        (void)conn;
        if (code == MHD_CONNECTION_NOTIFY_STARTED) {
                /* each is a TLS handshake, with its public-key work on both
                 * sides: kept-alive clients open few */
                if (s->metrics)
                        gantry_metrics_counter_add(s->metrics, "gantry_scheduler_connections_total",
                                                   "TLS connections accepted (each a handshake)",
                                                   NULL, 1);
                *socket_context = calloc(1, sizeof(struct conn_state)); /* NULL: verify each time */
        } else {
                free(*socket_context);
                *socket_context = NULL;
        }
}

/*
 * Whether @conn's client certificate is refused (@msg says why). A session's
 * peer certificate is fixed by its handshake (libmicrohttpd never completes a
 * renegotiation), so a verified connection is not verified again: the
 * signature checks cost more than a filter at 500 nodes, three times a pod.
 */
static bool client_refused(struct gantry_sched_server *s, struct MHD_Connection *conn, char *msg,
                           size_t size)
{
        const union MHD_ConnectionInfo *info =
                MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
        struct conn_state *cs = info ? info->socket_context : NULL;
        int r;

        if (cs && cs->verified)
                return false;
        r = gantry_sched_client_verify(conn, s->verified, msg, size);
        if (r != 1 && s->metrics)
                gantry_metrics_counter_add(s->metrics, "gantry_scheduler_client_verifications_total",
                                           "Client certificate chains verified (a chain that "
                                           "verified is not verified again until it expires)",
                                           NULL, 1);
        if (r < 0)
                return true;
        if (cs)
                cs->verified = true;
        return false;
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version, const char *upload_data,
                              size_t *upload_data_size, void **con_cls)
{
        struct gantry_sched_server *s = cls;
        const struct gantry_http_body *got, *req;
        enum gantry_extender_verb verb;
        const char *slash, *cl;
        char *reply = NULL, msg[128];
        int status, r;

        (void)version;
        /* before a request's body is read (the first call has no body state),
         * once per connection: its TLS session's certificate cannot change */
        if (s->client_ca && !*con_cls && !gantry_sched_client_path_is_open(url) &&
            client_refused(s, conn, msg, sizeof(msg))) {
                log_warn("sched.client_refused", "method=%s path=%s reason=\"%s\"", method, url, msg);
                count_request(s, "refused", MHD_HTTP_FORBIDDEN, gantry_extender_now());
                return send_text(conn, MHD_HTTP_FORBIDDEN, "application/json",
                                 "{\"Error\":\"a client certificate signed by gantry-scheduler's "
                                 "--client-ca is required\"}", false);
        }
        if (strcmp(method, "POST") != 0) {
                if (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0)
                        return serve_get(s, conn, url);
                return send_text(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain",
                                 "method not allowed\n", false);
        }
        slash = strrchr(url, '/');
        if (gantry_extender_verb_parse(slash ? slash + 1 : url, &verb) < 0)
                return send_text(conn, MHD_HTTP_NOT_FOUND, "application/json",
                                 "{\"Error\":\"no such verb: POST to .../filter, .../prioritize "
                                 "or .../bind\"}", false);
        r = gantry_http_body_feed(conn, con_cls, s->max_body, upload_data, upload_data_size, &got);
        if (r == GANTRY_HTTP_BODY_READING)
                return MHD_YES;
        if (r == -ENOMEM)
                return MHD_NO;
        if (r == -EFBIG) {
                cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
                if (cl && !*con_cls)
                        snprintf(msg, sizeof(msg), "request body: %s bytes, the limit is %zu", cl,
                                 s->max_body);
                else
                        snprintf(msg, sizeof(msg), "request body: more than %zu bytes", s->max_body);
                status = 413;
                goto too_large;
        }
        if (verb == GANTRY_VERB_BIND && s->binds) {
                /* called again once a worker has bound: its answer */
                status = gantry_sched_bind_queue_take(s->binds, conn, &reply);
                if (status > 0)
                        return reply_json(s, conn, gantry_extender_verb_name(verb), status, reply,
                                          got->start);
                if (gantry_sched_bind_queue_submit(s->binds, conn, got->data, got->len) == 0)
                        return MHD_YES;
        }
        status = gantry_extender_handle(s->ext, verb, got->data, got->len, &reply);
        return reply_json(s, conn, gantry_extender_verb_name(verb), status, reply, got->start);

too_large:
        log_warn("sched.request_too_large", "verb=%s", gantry_extender_verb_name(verb));
        {
                char body[200];

                snprintf(body, sizeof(body), "{\"Error\":\"%s\"}", msg);
                reply = strdup(body);
        }
        req = *con_cls;
        return reply_json(s, conn, gantry_extender_verb_name(verb), status, reply,
                          req ? req->start : gantry_extender_now());
}

/* A bind's answer that its connection never took (the client went away). */
static void request_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                              enum MHD_RequestTerminationCode toe)
{
        struct gantry_sched_server *s = cls;
        char *reply = NULL;

        if (s->binds && gantry_sched_bind_queue_take(s->binds, conn, &reply) > 0)
                free(reply);
        gantry_http_body_completed(NULL, conn, con_cls, toe);
}

static int read_pem(const char *flag, const char *path, char **ret, struct gantry_error *err)
{
        char *pem = NULL;
        size_t len = 0;
        int r = gantry_file_read(path, TLS_FILE_MAX, &pem, &len);

        if (r == -EFBIG || r == -EINVAL || (r == 0 && len == 0)) {
                free(pem);
                return gantry_error_set(err, EINVAL, "%s %s: empty, not a file, or larger than 1 MiB", flag,
                                        path);
        }
        if (r < 0)
                return gantry_error_set(err, r, "%s %s: %s", flag, path, strerror(-r));
        *ret = pem;
        return 0;
}

int gantry_sched_server_start(struct gantry_extender *ext,
                              const struct gantry_sched_server_options *opts,
                              struct gantry_sched_server **ret_server, int *ret_port,
                              struct gantry_error *err)
{
        unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG |
                             MHD_ALLOW_SUSPEND_RESUME;
        struct gantry_sched_server *s;
        struct sockaddr_storage ss;
        const union MHD_DaemonInfo *info;
        unsigned int threads = opts->threads > 0 ? (unsigned int)opts->threads : 4;
        int r;

        if (!opts->addr || gantry_netaddr_parse(opts->addr, &ss) < 0)
                return gantry_error_set(err, EINVAL, "--listen %s: must be HOST:PORT",
                                        opts->addr ? opts->addr : "(none)");
        if (opts->insecure_http && (opts->tls_cert_file || opts->tls_key_file || opts->client_ca_file))
                return gantry_error_set(err, EINVAL, "--insecure-http: not with --tls-cert, --tls-key "
                                        "or --client-ca");
        if (!opts->insecure_http && (!opts->tls_cert_file || !opts->tls_key_file || !opts->client_ca_file))
                return gantry_error_set(err, EINVAL, "--tls-cert, --tls-key and --client-ca are all "
                                        "required (or --insecure-http to serve plain HTTP to anyone)");
        if (ss.ss_family == AF_INET6)
                flags |= MHD_USE_IPv6;
        s = calloc(1, sizeof(*s));
        if (!s)
                return gantry_error_set(err, ENOMEM, "out of memory");
        s->ext = ext;
        s->metrics = opts->metrics;
        s->max_body = opts->max_body_bytes ? opts->max_body_bytes : DEFAULT_MAX_BODY;
        /* kube-scheduler binds from as many goroutines as pods in their
         * binding cycle: each worker waits on one Binding round trip */
        if ((r = gantry_sched_bind_queue_start(ext, opts->metrics, opts->bind_workers > 0 ?
                                                   (unsigned int)opts->bind_workers : 32,
                                               &s->binds)) < 0) {
                gantry_error_set(err, -r, "bind workers: %s", strerror(-r));
                goto fail;
        }
        if (opts->tls_cert_file) {
                if ((r = read_pem("--tls-cert", opts->tls_cert_file, &s->tls_cert, err)) < 0 ||
                    (r = read_pem("--tls-key", opts->tls_key_file, &s->tls_key, err)) < 0 ||
                    (r = read_pem("--client-ca", opts->client_ca_file, &s->client_ca, err)) < 0)
                        goto fail;
                /* a CA file GnuTLS's list import cannot read (MHD may still
                 * take it): no cache, every connection verified in full */
                if ((r = gantry_sched_client_cache_new(s->client_ca, &s->verified)) == -ENOMEM) {
                        gantry_error_set(err, ENOMEM, "out of memory");
                        goto fail;
                }
                flags |= MHD_USE_TLS;
                s->daemon = MHD_start_daemon(
                        flags, 0, NULL, NULL, answer, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
                        MHD_OPTION_THREAD_POOL_SIZE, threads, MHD_OPTION_CONNECTION_TIMEOUT,
                        (unsigned int)30, MHD_OPTION_NOTIFY_COMPLETED, request_completed, s,
                        MHD_OPTION_HTTPS_MEM_CERT, s->tls_cert, MHD_OPTION_HTTPS_MEM_KEY, s->tls_key,
                        MHD_OPTION_HTTPS_MEM_TRUST, s->client_ca, MHD_OPTION_NOTIFY_CONNECTION,
                        connection_notify, s, MHD_OPTION_END);
        } else {
                s->daemon = MHD_start_daemon(
                        flags, 0, NULL, NULL, answer, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
                        MHD_OPTION_THREAD_POOL_SIZE, threads, MHD_OPTION_CONNECTION_TIMEOUT,
                        (unsigned int)30, MHD_OPTION_NOTIFY_COMPLETED, request_completed, s,
                        MHD_OPTION_END);
        }
        if (!s->daemon) {
                r = gantry_error_set(err, EADDRNOTAVAIL,
                                     "--listen %s: cannot serve there (address in use, or a bad "
                                     "TLS certificate, key or client CA)", opts->addr);
                goto fail;
        }
        if (ret_port) {
                info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
                *ret_port = info ? info->port : 0;
        }
        *ret_server = s;
        return 0;
fail:
        gantry_sched_bind_queue_stop(s->binds);
        gantry_sched_bind_queue_free(s->binds);
        free(s->tls_cert);
        free(s->client_ca);
        gantry_sched_client_cache_free(s->verified);
        if (s->tls_key)
                explicit_bzero(s->tls_key, strlen(s->tls_key));
        free(s->tls_key);
        free(s);
        return r;
}

void gantry_sched_server_stop(struct gantry_sched_server *s)
{
        if (!s)
                return;
        /* binds in flight end and their connections are resumed first */
        gantry_sched_bind_queue_stop(s->binds);
        MHD_stop_daemon(s->daemon);
        gantry_sched_bind_queue_free(s->binds);
        free(s->tls_cert);
        free(s->client_ca);
        gantry_sched_client_cache_free(s->verified);
        if (s->tls_key) {
                explicit_bzero(s->tls_key, strlen(s->tls_key));
                free(s->tls_key);
        }
        free(s);
}
