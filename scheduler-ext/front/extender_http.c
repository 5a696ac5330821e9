/*
 * gantry-scheduler's server: the HTTP/1.1 transport on libmicrohttpd, and
 * the start and stop of the whole. With TLS the port is the TLS front's
 * (tls_front.c): it serves h2 itself and relays every other connection in
 * plaintext to libmicrohttpd, started without a listening socket, with
 * the client certificate's outcome handed over by descriptor. With
 * --insecure-http libmicrohttpd listens itself, its connections limited in
 * all, per source and in time by the HTTP guard (http_guard.h), as nobody
 * is authenticated there. Both transports answer
 * through the router (sched_router.c); a bind runs on the bind queue's
 * workers (bind_queue.c) with its connection suspended, so the thread
 * that read it goes on serving filters. See extender_http.h.
 */
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "attr_file.h"
#include "bind_queue.h"
#include "client_auth.h"
#include "extender_http.h"
#include "http_body.h"
#include "http_guard.h"
#include "log.h"
#include "metrics.h"
#include "netaddr.h"
#include "sched_router.h"
#include "tls_front.h"

#define DEFAULT_MAX_BODY (64u << 20)
#define TLS_FILE_MAX (1u << 20)
#define TIMEOUT_S 30u          /* libmicrohttpd's connection timeout behind the TLS front */
#define DEFAULT_MAX_UNAUTHENTICATED 256u
#define DEFAULT_MAX_PER_SOURCE 32u
#define DEFAULT_MAX_AUTHENTICATED 256u
#define DEFAULT_HANDSHAKE_TIMEOUT_S 5.0
#define STOP_GRACE_S 10u       /* for connections to end at stop before they are cut */

/* A relayed connection's client certificate outcome, until libmicrohttpd
 * announces the connection (by its descriptor). */
struct handoff {
        struct handoff *next;
        int fd;
        char *refused; /* NULL: verified */
};

struct gantry_sched_server {
        struct MHD_Daemon *daemon;
        struct gantry_sched_router router;
        struct gantry_sched_tls_front *front; /* NULL: --insecure-http */
        struct gantry_http_guard *guard;      /* --insecure-http's limits */
        char *tls_cert, *tls_key; /* PEM in memory; the key is never logged */
        char *client_ca;          /* PEM; NULL: plain HTTP, no caller checked */
        struct gantry_sched_client_cache *verified; /* the client chains that verified */
        pthread_mutex_t lock;                       /* handoffs */
        struct handoff *handoffs;
};

/* Per libmicrohttpd connection. */
struct conn_state {
        struct MHD_Connection *conn;
        struct gantry_sched_server *s;
        char *refused;                   /* the client certificate's outcome; NULL: verified */
        double bind_start;
        bool has_answer;                 /* a bind's answer, waiting for the resumed handler */
        struct gantry_sched_reply answer;
        void *guard_entry;               /* --insecure-http: the guard's (NULL: unguarded) */
};

static enum MHD_Result send_reply(struct MHD_Connection *conn, const struct gantry_sched_reply *r)
{
        if (r->owned)
                return gantry_http_reply_owned(conn, r->status, r->type, r->text);
        return gantry_http_reply(conn, r->status, r->type, r->text);
}

static void drop_answer(struct conn_state *cs)
{
        if (cs->has_answer && cs->answer.owned)
                free(cs->answer.text);
        cs->has_answer = false;
}

static char *take_handoff(struct gantry_sched_server *s, int fd, bool *found)
{
        struct handoff **p, *h;
        char *refused = NULL;

        *found = false;
        pthread_mutex_lock(&s->lock);
        for (p = &s->handoffs; *p; p = &(*p)->next)
                if ((*p)->fd == fd) {
                        h = *p;
                        *p = h->next;
                        refused = h->refused;
                        *found = true;
                        free(h);
                        break;
                }
        pthread_mutex_unlock(&s->lock);
        return refused;
}

/* The TLS front's relay: @fd to libmicrohttpd, with its client's outcome. */
static int relay_to_mhd(void *arg, int fd, const struct sockaddr *peer, socklen_t peer_len,
                        const char *refused)
{
        struct gantry_sched_server *s = arg;
        struct handoff *h = calloc(1, sizeof(*h));
        bool found;

        if (!h || (refused && !(h->refused = strdup(refused)))) {
                free(h);
                close(fd);
                return -ENOMEM;
        }
        h->fd = fd;
        pthread_mutex_lock(&s->lock);
        h->next = s->handoffs;
        s->handoffs = h;
        pthread_mutex_unlock(&s->lock);
        if (MHD_add_connection(s->daemon, fd, peer, peer_len) != MHD_YES) {
                /* libmicrohttpd closed @fd */
                free(take_handoff(s, fd, &found));
                return -EIO;
        }
        return 0;
}

static void connection_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                              enum MHD_ConnectionNotificationCode code)
{
        struct gantry_sched_server *s = cls;
        struct conn_state *cs = *socket_context;
        const union MHD_ConnectionInfo *info;
        bool found = false;

        if (code == MHD_CONNECTION_NOTIFY_STARTED) {
                cs = calloc(1, sizeof(*cs)); /* NULL: refused, binds inline */
                info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
                if (cs) {
                        cs->conn = conn;
                        cs->s = s;
                        if (s->front && info)
                                cs->refused = take_handoff(s, info->connect_fd, &found);
                        if (s->front && !found && !cs->refused)
                                cs->refused = strdup("no TLS session");
                }
                if (s->guard && cs) /* without cs: unguarded, MHD's timeout (its admission lapses) */
                        gantry_http_guard_notify(s->guard, conn, &cs->guard_entry, code);
                *socket_context = cs;
        } else if (cs) {
                if (s->guard)
                        gantry_http_guard_notify(s->guard, conn, &cs->guard_entry, code);
                drop_answer(cs);
                free(cs->refused);
                free(cs);
                *socket_context = NULL;
        }
}

/* A bind worker's answer: kept for the handler, which runs once resumed. */
static void bind_done(void *arg, int status, char *reply)
{
        struct conn_state *cs = arg;

        gantry_sched_route_json(&cs->s->router, GANTRY_VERB_BIND, status, reply, cs->bind_start,
                                &cs->answer);
        cs->has_answer = true;
        MHD_resume_connection(cs->conn);
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version, const char *upload_data,
                              size_t *upload_data_size, void **con_cls)
{
        struct gantry_sched_server *s = cls;
        const union MHD_ConnectionInfo *info =
                MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
        struct conn_state *cs = info ? info->socket_context : NULL;
        const struct gantry_http_body *got, *req;
        struct gantry_sched_reply reply;
        enum gantry_extender_verb verb;
        const char *cl, *refused = NULL;
        int r;

        (void)version;
        if (s->router.check_clients)
                refused = cs ? cs->refused : "out of memory";
        if (gantry_sched_route_head(&s->router, method, url, refused, &verb, &reply) ==
            GANTRY_SCHED_ROUTE_REPLY) {
                gantry_http_guard_entry_answering(cs ? cs->guard_entry : NULL);
                return send_reply(conn, &reply);
        }
        r = gantry_http_body_feed(conn, con_cls, s->router.max_body, upload_data, upload_data_size,
                                  &got);
        if (r == GANTRY_HTTP_BODY_READING)
                return MHD_YES;
        /* the request is whole (or refused): no longer cut at its budget */
        gantry_http_guard_entry_answering(cs ? cs->guard_entry : NULL);
        if (r == -ENOMEM)
                return MHD_NO;
        if (r == -EFBIG) {
                cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
                req = *con_cls;
                gantry_sched_route_too_large(&s->router, verb, cl && !req ? strtoull(cl, NULL, 10) : 0,
                                             req ? req->start : gantry_extender_now(), &reply);
                return send_reply(conn, &reply);
        }
        if (cs && cs->has_answer) {
                /* called again once a worker has bound: its answer */
                cs->has_answer = false;
                return send_reply(conn, &cs->answer);
        }
        if (verb == GANTRY_VERB_BIND && cs) {
                /* suspended before any worker can resume it */
                cs->bind_start = got->start;
                MHD_suspend_connection(conn);
                if (gantry_sched_route_verb(&s->router, verb, got->data, got->len, got->start,
                                            bind_done, cs, &cs->answer) == GANTRY_SCHED_ROUTE_REPLY) {
                        /* bound inline (no queue, or stopping): answered once resumed */
                        cs->has_answer = true;
                        MHD_resume_connection(conn);
                }
                return MHD_YES;
        }
        gantry_sched_route_verb(&s->router, verb, got->data, got->len, got->start, NULL, NULL,
                                &reply);
        return send_reply(conn, &reply);
}

/* A bind's answer that its connection never took (the client went away). */
static void request_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                              enum MHD_RequestTerminationCode toe)
{
        const union MHD_ConnectionInfo *info =
                MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

        (void)cls;
        if (info && info->socket_context) {
                struct conn_state *cs = info->socket_context;

                drop_answer(cs);
                gantry_http_guard_entry_completed(cs->guard_entry); /* the next request's budget */
        }
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

static void server_free(struct gantry_sched_server *s)
{
        struct handoff *h;

        gantry_sched_bind_queue_free(s->router.binds);
        while ((h = s->handoffs)) {
                s->handoffs = h->next;
                free(h->refused);
                free(h);
        }
        pthread_mutex_destroy(&s->lock);
        free(s->tls_cert);
        free(s->client_ca);
        gantry_sched_client_cache_free(s->verified);
        if (s->tls_key) {
                explicit_bzero(s->tls_key, strlen(s->tls_key));
                free(s->tls_key);
        }
        free(s);
}

/*
 * The HTTP/1.1 server on @addr: it listens there itself (--insecure-http),
 * unless @flags has MHD_USE_NO_LISTEN_SOCKET (TLS: the front feeds it).
 */
static struct MHD_Daemon *start_http1(struct gantry_sched_server *s, unsigned int flags,
                                      const struct sockaddr *addr, unsigned int threads)
{
        return MHD_start_daemon(flags, 0, NULL, NULL, answer, s, MHD_OPTION_SOCK_ADDR, addr,
                                MHD_OPTION_THREAD_POOL_SIZE, threads, MHD_OPTION_CONNECTION_TIMEOUT,
                                TIMEOUT_S, MHD_OPTION_NOTIFY_COMPLETED, request_completed, s,
                                MHD_OPTION_NOTIFY_CONNECTION, connection_notify, s, MHD_OPTION_END);
}

/*
 * The HTTP/1.1 server listening itself (--insecure-http): no client is
 * authenticated, so every connection meets the guard's limits (s->guard):
 * in all (--max-unauthenticated), per address (--max-per-source), and a
 * request whole within --handshake-timeout of accept or of the answer
 * before (a byte a second or none: cut), refusals counted by reason.
 * libmicrohttpd's own idle timeout stays as a backstop.
 */
static struct MHD_Daemon *start_http1_listening(struct gantry_sched_server *s, unsigned int flags,
                                                const struct sockaddr *addr, unsigned int threads)
{
        return MHD_start_daemon(flags, 0, gantry_http_guard_accept, s->guard, answer, s,
                                MHD_OPTION_SOCK_ADDR, addr, MHD_OPTION_THREAD_POOL_SIZE, threads,
                                MHD_OPTION_CONNECTION_TIMEOUT, TIMEOUT_S,
                                MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned int)SOMAXCONN,
                                MHD_OPTION_NOTIFY_COMPLETED, request_completed, s,
                                MHD_OPTION_NOTIFY_CONNECTION, connection_notify, s, MHD_OPTION_END);
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
        struct gantry_sched_server_options o = *opts;
        int r, port = 0;

        if (!o.max_unauthenticated)
                o.max_unauthenticated = DEFAULT_MAX_UNAUTHENTICATED;
        if (!o.max_per_source)
                o.max_per_source = DEFAULT_MAX_PER_SOURCE;
        if (!o.max_authenticated)
                o.max_authenticated = DEFAULT_MAX_AUTHENTICATED;
        if (!(o.handshake_timeout_s > 0))
                o.handshake_timeout_s = DEFAULT_HANDSHAKE_TIMEOUT_S;

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
        pthread_mutex_init(&s->lock, NULL);
        s->router.ext = ext;
        s->router.metrics = opts->metrics;
        s->router.max_body = opts->max_body_bytes ? opts->max_body_bytes : DEFAULT_MAX_BODY;
        /* kube-scheduler binds from as many goroutines as pods in their
         * binding cycle: each worker waits on one Binding round trip */
        if ((r = gantry_sched_bind_queue_start(ext, opts->metrics, opts->bind_workers > 0 ?
                                                   (unsigned int)opts->bind_workers : 32,
                                               &s->router.binds)) < 0) {
                gantry_error_set(err, -r, "bind workers: %s", strerror(-r));
                goto fail;
        }
        if (opts->tls_cert_file) {
                if ((r = read_pem("--tls-cert", opts->tls_cert_file, &s->tls_cert, err)) < 0 ||
                    (r = read_pem("--tls-key", opts->tls_key_file, &s->tls_key, err)) < 0 ||
                    (r = read_pem("--client-ca", opts->client_ca_file, &s->client_ca, err)) < 0)
                        goto fail;
                /* a CA file GnuTLS's list import cannot read: no cache, every
                 * connection verified in full */
                if ((r = gantry_sched_client_cache_new(s->client_ca, &s->verified)) == -ENOMEM) {
                        gantry_error_set(err, ENOMEM, "out of memory");
                        goto fail;
                }
                s->router.check_clients = true;
                /* plaintext, fed by the TLS front's relays */
                s->daemon = start_http1(s, flags | MHD_USE_NO_LISTEN_SOCKET, (struct sockaddr *)&ss,
                                        threads);
                if (!s->daemon) {
                        r = gantry_error_set(err, ENOMEM, "the HTTP/1.1 server did not start");
                        goto fail;
                }
                r = gantry_sched_tls_front_start(
                        &(struct gantry_sched_tls_front_options){
                                .addr = (struct sockaddr *)&ss,
                                .addr_len = ss.ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                                                     : sizeof(struct sockaddr_in),
                                .cert_pem = s->tls_cert, .key_pem = s->tls_key,
                                .ca_pem = s->client_ca,
                                .max_unauthenticated = o.max_unauthenticated,
                                .max_per_source = o.max_per_source,
                                .max_authenticated = o.max_authenticated,
                                .unauthenticated_budget_s = o.handshake_timeout_s,
                                .timeout_s = TIMEOUT_S, .verified = s->verified,
                                .metrics = opts->metrics, .router = &s->router,
                                .relay = relay_to_mhd, .relay_arg = s },
                        &s->front, &port, err);
                if (r < 0) {
                        if (r == -EADDRINUSE || r == -EADDRNOTAVAIL || r == -EACCES)
                                gantry_error_set(err, -r, "--listen %s: cannot serve there: %s",
                                                 opts->addr, strerror(-r));
                        goto fail;
                }
        } else {
                r = gantry_http_guard_new(&(struct gantry_http_guard_options){
                                                  .max_connections = o.max_unauthenticated,
                                                  .max_per_source = o.max_per_source,
                                                  .request_budget_s = o.handshake_timeout_s,
                                                  .metrics = opts->metrics, .port = "extender" },
                                          &s->guard);
                if (r < 0) {
                        gantry_error_set(err, -r, "connection guard: %s", strerror(-r));
                        goto fail;
                }
                s->daemon = start_http1_listening(s, flags, (struct sockaddr *)&ss, threads);
                if (!s->daemon) {
                        r = gantry_error_set(err, EADDRNOTAVAIL,
                                             "--listen %s: cannot serve there (address in use?)",
                                             opts->addr);
                        goto fail;
                }
                info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
                port = info ? info->port : 0;
        }
        if (ret_port)
                *ret_port = port;
        *ret_server = s;
        return 0;
fail:
        gantry_sched_bind_queue_stop(s->router.binds);
        if (s->daemon)
                MHD_stop_daemon(s->daemon);
        gantry_http_guard_free(s->guard);
        server_free(s);
        return r;
}

void gantry_sched_server_stop(struct gantry_sched_server *s)
{
        if (!s)
                return;
        gantry_sched_tls_front_stop_accepting(s->front);
        /* binds in flight end and their answers are handed back first:
         * libmicrohttpd's connections resumed, h2 streams answered */
        gantry_sched_bind_queue_stop(s->router.binds);
        /* h2: GOAWAY, the open streams finished; no new relay */
        gantry_sched_tls_front_stop_connections(s->front);
        /* closes the relays' plaintext ends: they end */
        MHD_stop_daemon(s->daemon);
        gantry_http_guard_free(s->guard);
        gantry_sched_tls_front_free(s->front, STOP_GRACE_S);
        server_free(s);
}
