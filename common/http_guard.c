/*
 * Connection limits and request budgets for libmicrohttpd servers; see
 * http_guard.h. The guard keeps one entry per open connection, made when
 * the accept policy admits it (so that with a pool of threads, each
 * accepting on its own, a connection admitted on one is counted before
 * another thread's next decision), given its descriptor when libmicrohttpd
 * announces the connection on the same thread, gone when it announces the
 * close, which comes before the descriptor is closed: the thread that cuts
 * never shuts down a descriptor reused by another connection. An admitted
 * connection never announced (libmicrohttpd failed to set it up) is dropped
 * at its budget.
 */
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "http_guard.h"
#include "log.h"
#include "metrics.h"
#include "netaddr.h"

#define DEFAULT_MAX_CONNECTIONS 64u
#define DEFAULT_MAX_PER_SOURCE 8u
#define DEFAULT_BUDGET_S 10.0
#define CHECK_INTERVAL_MS 200
#define REFUSAL_LOG_S 10

struct guarded_conn {
        struct guarded_conn *prev, *next;
        struct gantry_http_guard *g;
        int fd; /* -1: admitted, not announced yet */
        struct sockaddr_storage peer;
        double deadline; /* CLOCK_MONOTONIC seconds */
        bool answering;
        bool cut;
};

struct gantry_http_guard {
        struct gantry_http_guard_options o;
        pthread_mutex_t lock;
        pthread_cond_t wake;
        bool stopping;
        pthread_t thread;
        struct guarded_conn *conns;
        unsigned int n_conns; /* open, the cut ones still closing included */
        unsigned int n_cut;
        double logged_at;
        unsigned long unlogged;
};

/* Under g->lock. */
static void count(struct gantry_http_guard *g, const char *reason)
{
        char labels[96];
        double now;

        if (g->o.metrics) {
                snprintf(labels, sizeof(labels), "port=\"%s\",reason=\"%s\"",
                         g->o.port ? g->o.port : "http", reason);
                gantry_metrics_counter_add(g->o.metrics, "gantry_http_connections_refused_total",
                                           "Connections refused at accept or cut past their "
                                           "request budget, by reason", labels, 1);
        }
        /* an attack must not fill the log: at most one line every 10 s */
        g->unlogged++;
        now = gantry_now_s();
        if (now - g->logged_at >= REFUSAL_LOG_S) {
                log_warn("http.connections_refused", "port=%s last_reason=%s count=%lu open=%u",
                         g->o.port ? g->o.port : "http", reason, g->unlogged, g->n_conns);
                g->unlogged = 0;
                g->logged_at = now;
        }
}

/* The connection this thread's accept policy admitted last, for the
 * announcement that follows on the same thread. initial-exec: this library
 * is position-independent but only ever linked into executables, where the
 * default model would make them need the dynamic loader's __tls_get_addr. */
static __thread struct guarded_conn *admitted __attribute__((tls_model("initial-exec")));

/* Unlinks @c (under g->lock). */
static void unlink_conn(struct gantry_http_guard *g, struct guarded_conn *c)
{
        if (c->prev)
                c->prev->next = c->next;
        else
                g->conns = c->next;
        if (c->next)
                c->next->prev = c->prev;
        g->n_conns--;
        if (c->cut)
                g->n_cut--;
}

/* Links a new entry for @peer (under g->lock); NULL when out of memory. */
static struct guarded_conn *link_conn(struct gantry_http_guard *g, const struct sockaddr *peer)
{
        struct guarded_conn *c = calloc(1, sizeof(*c));

        if (!c)
                return NULL;
        c->g = g;
        c->fd = -1;
        if (peer)
                memcpy(&c->peer, peer, peer->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                                                   : sizeof(struct sockaddr_in));
        c->deadline = gantry_now_s() + g->o.request_budget_s;
        c->next = g->conns;
        if (g->conns)
                g->conns->prev = c;
        g->conns = c;
        g->n_conns++;
        return c;
}

/* Cuts @c (libmicrohttpd sees the end and closes it). Under g->lock. */
static void cut(struct gantry_http_guard *g, struct guarded_conn *c, const char *reason)
{
        if (c->fd >= 0)
                shutdown(c->fd, SHUT_RDWR);
        c->cut = true;
        g->n_cut++;
        count(g, reason);
}

/*
 * The oldest connection not being answered of the source holding the most
 * of them, when that is more than a newcomer holding @held would with one
 * more: it makes room for the newcomer, so that an address of its own (a
 * scraper's, the csi controller's) always gets in. Under g->lock.
 */
static struct guarded_conn *eviction_victim(struct gantry_http_guard *g, const struct sockaddr *newcomer,
                                            unsigned int held)
{
        struct tally {
                struct guarded_conn *oldest;
                unsigned int n;
        } *t = calloc(g->n_conns + 1, sizeof(*t));
        struct guarded_conn *victim = NULL;
        unsigned int d = 0, most = held + 1;

        if (!t)
                return NULL;
        for (struct guarded_conn *c = g->conns; c; c = c->next) {
                unsigned int i;

                if (c->cut || gantry_netaddr_same_host((struct sockaddr *)&c->peer, newcomer))
                        continue;
                for (i = 0; i < d && !gantry_netaddr_same_host((struct sockaddr *)&t[i].oldest->peer, (struct sockaddr *)&c->peer); i++)
                        ;
                if (i == d)
                        d++;
                t[i].n++;
                /* newest first: the last one seen is the oldest */
                if (!c->answering || !t[i].oldest)
                        t[i].oldest = c;
        }
        for (unsigned int i = 0; i < d; i++)
                if (t[i].n > most && !t[i].oldest->answering) {
                        most = t[i].n;
                        victim = t[i].oldest;
                }
        free(t);
        return victim;
}

enum MHD_Result gantry_http_guard_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
        struct gantry_http_guard *g = cls;
        unsigned int from = 0;
        const char *refused = NULL;
        struct guarded_conn *victim;

        (void)addrlen;
        pthread_mutex_lock(&g->lock);
        for (struct guarded_conn *c = g->conns; c; c = c->next)
                if (!c->cut && gantry_netaddr_same_host((struct sockaddr *)&c->peer, addr))
                        from++;
        if (from >= g->o.max_per_source) {
                refused = "per_source";
        } else if (g->n_conns - g->n_cut >= g->o.max_connections) {
                victim = eviction_victim(g, addr, from);
                if (victim)
                        cut(g, victim, "evicted");
                else
                        refused = "total";
        }
        if (refused)
                count(g, refused);
        else
                admitted = link_conn(g, addr); /* NULL: announced unguarded */
        pthread_mutex_unlock(&g->lock);
        return refused ? MHD_NO : MHD_YES;
}

void gantry_http_guard_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                              enum MHD_ConnectionNotificationCode code)
{
        struct gantry_http_guard *g = cls;
        struct guarded_conn *c = *socket_context;
        const union MHD_ConnectionInfo *fd, *addr;

        if (code == MHD_CONNECTION_NOTIFY_STARTED) {
                fd = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
                addr = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
                pthread_mutex_lock(&g->lock);
                /* this thread's admission, unless the guard's thread dropped it meanwhile */
                for (c = g->conns; c && c != admitted; c = c->next)
                        ;
                if (c && c->fd >= 0)
                        c = NULL;
                admitted = NULL;
                if (!c && fd) /* not through the accept policy (an added connection) */
                        c = link_conn(g, addr ? addr->client_addr : NULL);
                if (c && fd)
                        c->fd = fd->connect_fd;
                else if (c) { /* no descriptor to cut: not guarded, it meets libmicrohttpd's timeout */
                        unlink_conn(g, c);
                        free(c);
                        c = NULL;
                }
                pthread_mutex_unlock(&g->lock);
                *socket_context = c;
        } else if (c) {
                pthread_mutex_lock(&g->lock);
                unlink_conn(g, c);
                pthread_mutex_unlock(&g->lock);
                free(c);
                *socket_context = NULL;
        }
}

static struct guarded_conn *entry_of(struct MHD_Connection *conn)
{
        const union MHD_ConnectionInfo *info =
                MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

        return info ? info->socket_context : NULL;
}

void gantry_http_guard_answering(struct MHD_Connection *conn)
{
        gantry_http_guard_entry_answering(entry_of(conn));
}

void gantry_http_guard_completed(struct MHD_Connection *conn)
{
        gantry_http_guard_entry_completed(entry_of(conn));
}

void gantry_http_guard_entry_answering(void *entry)
{
        struct guarded_conn *c = entry;

        if (!c)
                return;
        pthread_mutex_lock(&c->g->lock);
        c->answering = true;
        pthread_mutex_unlock(&c->g->lock);
}

void gantry_http_guard_entry_completed(void *entry)
{
        struct guarded_conn *c = entry;

        if (!c)
                return;
        pthread_mutex_lock(&c->g->lock);
        c->answering = false;
        c->deadline = gantry_now_s() + c->g->o.request_budget_s;
        pthread_mutex_unlock(&c->g->lock);
}

static void *guard_main(void *arg)
{
        struct gantry_http_guard *g = arg;

        pthread_mutex_lock(&g->lock);
        while (!g->stopping) {
                struct timespec ts;
                double now = gantry_now_s();

                for (struct guarded_conn *c = g->conns, *next; c; c = next) {
                        next = c->next;
                        if (c->fd < 0 && now >= c->deadline) { /* admitted, never announced */
                                unlink_conn(g, c);
                                free(c);
                        } else if (!c->cut && !c->answering && now >= c->deadline) {
                                cut(g, c, "budget");
                        }
                }
                clock_gettime(CLOCK_MONOTONIC, &ts);
                ts.tv_nsec += CHECK_INTERVAL_MS * 1000000L;
                ts.tv_sec += ts.tv_nsec / 1000000000L;
                ts.tv_nsec %= 1000000000L;
                pthread_cond_timedwait(&g->wake, &g->lock, &ts);
        }
        pthread_mutex_unlock(&g->lock);
        return NULL;
}

int gantry_http_guard_new(const struct gantry_http_guard_options *opts,
                          struct gantry_http_guard **ret_guard)
{
        struct gantry_http_guard *g = calloc(1, sizeof(*g));
        pthread_condattr_t ca;
        int r;

        if (!g)
                return -ENOMEM;
        g->o = *opts;
        if (!g->o.max_connections)
                g->o.max_connections = DEFAULT_MAX_CONNECTIONS;
        if (!g->o.max_per_source)
                g->o.max_per_source = DEFAULT_MAX_PER_SOURCE;
        if (!(g->o.request_budget_s > 0))
                g->o.request_budget_s = DEFAULT_BUDGET_S;
        g->logged_at = -REFUSAL_LOG_S;
        pthread_mutex_init(&g->lock, NULL);
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&g->wake, &ca);
        pthread_condattr_destroy(&ca);
        r = -pthread_create(&g->thread, NULL, guard_main, g);
        if (r < 0) {
                pthread_cond_destroy(&g->wake);
                pthread_mutex_destroy(&g->lock);
                free(g);
                return r;
        }
        pthread_setname_np(g->thread, "http-guard");
        *ret_guard = g;
        return 0;
}

void gantry_http_guard_free(struct gantry_http_guard *g)
{
        if (!g)
                return;
        pthread_mutex_lock(&g->lock);
        g->stopping = true;
        pthread_cond_signal(&g->wake);
        pthread_mutex_unlock(&g->lock);
        pthread_join(g->thread, NULL);
        pthread_cond_destroy(&g->wake);
        pthread_mutex_destroy(&g->lock);
        free(g);
}
