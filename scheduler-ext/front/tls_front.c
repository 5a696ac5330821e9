/*
 * The TLS front of gantry-scheduler's HTTPS port; see tls_front.h. An
 * accept thread, then a detached thread per connection (bounded in number):
 * handshake, client check, and either the HTTP/2 connection or the
 * HTTP/1.1 relay. The relay copies bytes both ways between the TLS session
 * and a socketpair whose other end libmicrohttpd reads in plaintext, so the
 * HTTP/1.1 server keeps every behaviour it has without TLS of its own.
 *
 * A connection is unauthenticated from accept until its client certificate
 * verifies: such connections share a pool of their own (so a crowd of them
 * never takes the authenticated clients' threads), are limited per source
 * address, and must be done within a budget from accept (handshake, and for
 * one that never verifies, its probe too); the accept thread cuts those
 * past it, a byte a second or none. When the pool is full, a newcomer from
 * a source holding fewer of its connections than the greediest source takes
 * the oldest connection of that one: an address of its own always gets a
 * handshake, kube-scheduler's and kubelet's among them.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "client_auth.h"
#include "clock.h"
#include "h2_conn.h"
#include "log.h"
#include "metrics.h"
#include "netaddr.h"
#include "tls_front.h"
#include "tls_io.h"

#define RELAY_BUF (16u << 10)
#define REAP_INTERVAL_MS 200 /* how late a connection past its budget may be cut */
#define ACCEPT_BATCH 64      /* connections accepted between two reaps */
#define REFUSAL_LOG_S 10     /* refusals of one reason are logged at most this often */

enum conn_state { CONN_HANDSHAKE, CONN_H2, CONN_RELAY };

/* Which limit a connection counts against; CLASS_NONE: cut, on its way out. */
enum conn_class { CLASS_UNAUTHENTICATED, CLASS_AUTHENTICATED, CLASS_NONE };

enum refusal {
        REFUSED_PER_SOURCE,
        REFUSED_UNAUTHENTICATED,
        REFUSED_AUTHENTICATED,
        REFUSED_THREADS,
        REFUSED_STOPPING,
        REFUSAL_COUNT,
};

static const char *const refusal_names[REFUSAL_COUNT] = {
        [REFUSED_PER_SOURCE] = "per_source",
        [REFUSED_UNAUTHENTICATED] = "unauthenticated_total",
        [REFUSED_AUTHENTICATED] = "authenticated_total",
        [REFUSED_THREADS] = "threads",
        [REFUSED_STOPPING] = "stopping",
};

struct front_conn {
        struct front_conn *prev, *next;
        struct gantry_sched_tls_front *f;
        int fd;
        int wake; /* eventfd: stop, and the h2 connection's finished binds */
        enum conn_state state;
        enum conn_class class;
        double deadline; /* CLOCK_MONOTONIC seconds: cut past it while unauthenticated */
        struct sockaddr_storage peer;
        socklen_t peer_len;
};

struct gantry_sched_tls_front {
        struct gantry_sched_tls_front_options o;
        gnutls_certificate_credentials_t cred;
        int listen_fd;
        int stop_fd; /* eventfd: wakes the accept thread to stop */
        pthread_t acceptor;
        bool accepting;
        atomic_bool stopping;
        pthread_mutex_t lock;
        pthread_cond_t gone; /* a connection thread ended */
        struct front_conn *conns; /* newest first */
        unsigned int n_conns;     /* threads, the cut ones still ending included */
        unsigned int n_unauthenticated, n_authenticated;
        /* refusals not yet logged, and when each reason was last logged */
        unsigned long unlogged[REFUSAL_COUNT];
        double logged_at[REFUSAL_COUNT];
};

static const gnutls_datum_t alpn_protos[] = {
        { (unsigned char *)"h2", 2 },
        { (unsigned char *)"http/1.1", 8 },
};

/* Unauthenticated connections from @peer's address. Under f->lock. */
static unsigned int unauthenticated_from(struct gantry_sched_tls_front *f,
                                         const struct sockaddr_storage *peer)
{
        unsigned int n = 0;

        for (struct front_conn *c = f->conns; c; c = c->next)
                if (c->class == CLASS_UNAUTHENTICATED && gantry_netaddr_same_host((struct sockaddr *)&c->peer, (struct sockaddr *)peer))
                        n++;
        return n;
}

static void publish_open(struct gantry_sched_tls_front *f)
{
        if (!f->o.metrics)
                return;
        gantry_metrics_gauge_set(f->o.metrics, "gantry_scheduler_connections_open",
                                 "TLS connections open, by whether their client certificate verified",
                                 "class=\"unauthenticated\"", f->n_unauthenticated);
        gantry_metrics_gauge_set(f->o.metrics, "gantry_scheduler_connections_open",
                                 "TLS connections open, by whether their client certificate verified",
                                 "class=\"authenticated\"", f->n_authenticated);
}

/* Counts a connection closed at accept (or at verification), and logs it at
 * most every REFUSAL_LOG_S per reason: an attack must not fill the log. */
static void count_refusal(struct gantry_sched_tls_front *f, enum refusal why, double now)
{
        char labels[48];

        if (f->o.metrics) {
                snprintf(labels, sizeof(labels), "reason=\"%s\"", refusal_names[why]);
                gantry_metrics_counter_add(f->o.metrics, "gantry_scheduler_connections_refused_total",
                                           "TLS connections closed at accept or once verified, by "
                                           "the limit they met", labels, 1);
        }
        f->unlogged[why]++;
        if (now - f->logged_at[why] >= REFUSAL_LOG_S) {
                log_warn("sched.connections_refused", "reason=%s count=%lu unauthenticated=%u "
                         "authenticated=%u", refusal_names[why], f->unlogged[why],
                         f->n_unauthenticated, f->n_authenticated);
                f->unlogged[why] = 0;
                f->logged_at[why] = now;
        }
}

/* Cuts @c's socket (its thread sees the end and exits) and frees its slot.
 * Under f->lock. */
static void cut_conn(struct gantry_sched_tls_front *f, struct front_conn *c, const char *reason)
{
        char labels[48];

        shutdown(c->fd, SHUT_RDWR);
        if (c->class == CLASS_UNAUTHENTICATED)
                f->n_unauthenticated--;
        else if (c->class == CLASS_AUTHENTICATED)
                f->n_authenticated--;
        c->class = CLASS_NONE;
        if (f->o.metrics) {
                snprintf(labels, sizeof(labels), "reason=\"%s\"", reason);
                gantry_metrics_counter_add(f->o.metrics, "gantry_scheduler_connections_cut_total",
                                           "Unauthenticated TLS connections cut: past their budget, "
                                           "or evicted for a newcomer from a source holding fewer",
                                           labels, 1);
        }
}

static int write_all(int fd, const char *p, size_t len)
{
        while (len > 0) {
                ssize_t n = write(fd, p, len);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return -EIO;
                p += n;
                len -= (size_t)n;
        }
        return 0;
}

/* Copies both ways until either side closes. */
static void relay(struct front_conn *c, gnutls_session_t s, const char *refused)
{
        struct gantry_sched_tls_front *f = c->f;
        char *buf = malloc(RELAY_BUF);
        bool client_open = true, mhd_reading = true;
        int sp[2], r = -ESHUTDOWN;

        if (!buf || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0) {
                free(buf);
                return;
        }
        /* under the lock: never handed over once the HTTP/1.1 server may be gone */
        pthread_mutex_lock(&f->lock);
        c->state = CONN_RELAY;
        if (!atomic_load(&f->stopping))
                r = f->o.relay(f->o.relay_arg, sp[1], (struct sockaddr *)&c->peer, c->peer_len,
                               refused);
        else
                close(sp[1]);
        pthread_mutex_unlock(&f->lock);
        if (r < 0) {
                close(sp[0]);
                free(buf);
                return;
        }
        /* until libmicrohttpd closes its end: what it wrote before closing
         * (a 413 or 403 answered before the body) is still relayed */
        for (;;) {
                struct pollfd p[2] = { { .fd = client_open ? c->fd : -1, .events = POLLIN },
                                       { .fd = sp[0], .events = POLLIN } };
                bool pending = client_open && gnutls_record_check_pending(s) > 0;
                ssize_t n;

                if (poll(p, 2, pending ? 0 : -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        break;
                }
                if (pending || p[0].revents) {
                        n = gantry_sched_tls_recv(s, buf, RELAY_BUF);
                        if (n <= 0) {
                                /* the client is done: libmicrohttpd sees the end too */
                                client_open = false;
                                shutdown(sp[0], SHUT_WR);
                        } else if (mhd_reading && write_all(sp[0], buf, (size_t)n) < 0) {
                                /* closed early: the rest is read and dropped */
                                mhd_reading = false;
                        }
                }
                if (p[1].revents) {
                        n = read(sp[0], buf, RELAY_BUF);
                        if (n < 0 && errno == EINTR)
                                continue;
                        if (n <= 0 || gantry_sched_tls_send(s, buf, (size_t)n) < 0)
                                break;
                }
        }
        close(sp[0]);
        free(buf);
}

static void count_connection(struct gantry_sched_tls_front *f, const char *protocol)
{
        char labels[48];

        if (!f->o.metrics)
                return;
        snprintf(labels, sizeof(labels), "protocol=\"%s\"", protocol);
        /* each is a TLS handshake, with its public-key work on both sides */
        gantry_metrics_counter_add(f->o.metrics, "gantry_scheduler_connections_total",
                                   "TLS connections accepted (each a handshake), by the protocol "
                                   "ALPN chose", labels, 1);
}

/* The client's certificate, checked once: NULL when it verified, else why not. */
static const char *check_client(struct gantry_sched_tls_front *f, gnutls_session_t s, char *why,
                                size_t size)
{
        int r = gantry_sched_client_verify(s, f->o.verified, why, size);

        if ((r == 0 || r == -EACCES) && f->o.metrics)
                gantry_metrics_counter_add(f->o.metrics, "gantry_scheduler_client_verifications_total",
                                           "Client certificate chains verified (a chain that "
                                           "verified is not verified again until it expires)",
                                           NULL, 1);
        return r < 0 ? why : NULL;
}

/*
 * @c's certificate verified: it leaves the unauthenticated pool for the
 * authenticated one, and its budget no longer applies. Returns false when
 * the authenticated pool is full (or @c was cut meanwhile): close it.
 */
static bool promote(struct gantry_sched_tls_front *f, struct front_conn *c)
{
        bool ok = false;

        pthread_mutex_lock(&f->lock);
        if (c->class == CLASS_UNAUTHENTICATED) {
                f->n_unauthenticated--;
                if (f->n_authenticated < f->o.max_authenticated) {
                        c->class = CLASS_AUTHENTICATED;
                        f->n_authenticated++;
                        ok = true;
                } else {
                        c->class = CLASS_NONE;
                        count_refusal(f, REFUSED_AUTHENTICATED, gantry_now_s());
                }
                publish_open(f);
        }
        pthread_mutex_unlock(&f->lock);
        return ok;
}

static void *conn_main(void *arg)
{
        struct front_conn *c = arg;
        struct gantry_sched_tls_front *f = c->f;
        gnutls_session_t s = NULL;
        gnutls_datum_t proto = { 0 };
        char why[128];
        const char *refused;
        bool h2;
        int r;

        /* for top -H and per-thread CPU: handshakes, h2 and the relay */
        pthread_setname_np(pthread_self(), "tls-conn");
        if (gnutls_init(&s, GNUTLS_SERVER | GNUTLS_NO_SIGNAL) < 0) {
                s = NULL;
                goto out;
        }
        if (gnutls_set_default_priority(s) < 0 ||
            gnutls_credentials_set(s, GNUTLS_CRD_CERTIFICATE, f->cred) < 0 ||
            gnutls_alpn_set_protocols(s, alpn_protos, 2, GNUTLS_ALPN_SERVER_PRECEDENCE) < 0)
                goto out;
        /* asks, does not demand: kubelet's probes come without one */
        gnutls_certificate_server_set_request(s, GNUTLS_CERT_REQUEST);
        gnutls_transport_set_int(s, c->fd);
        /* the accept thread cuts it at the budget; this ends GnuTLS's own wait */
        gnutls_handshake_set_timeout(s, (unsigned int)(f->o.unauthenticated_budget_s * 1000));
        do
                r = gnutls_handshake(s);
        while (r < 0 && !gnutls_error_is_fatal(r) && !atomic_load(&f->stopping));
        if (r < 0) {
                log_debug("sched.tls_handshake_failed", "error=\"%s\"", gnutls_strerror(r));
                goto out;
        }
        h2 = gnutls_alpn_get_selected_protocol(s, &proto) == 0 && proto.size == 2 &&
             !memcmp(proto.data, "h2", 2);
        count_connection(f, h2 ? "h2" : "http/1.1");
        refused = check_client(f, s, why, sizeof(why));
        if (!refused && !promote(f, c))
                goto bye;
        if (h2) {
                pthread_mutex_lock(&f->lock);
                c->state = CONN_H2;
                pthread_mutex_unlock(&f->lock);
                gantry_sched_h2_serve(s, c->fd, c->wake, &f->stopping, f->o.router, refused,
                                      f->o.timeout_s);
        } else {
                relay(c, s, refused);
        }
bye:
        gnutls_bye(s, GNUTLS_SHUT_WR);
out:
        if (s)
                gnutls_deinit(s);
        close(c->fd);
        close(c->wake);
        pthread_mutex_lock(&f->lock);
        if (c->prev)
                c->prev->next = c->next;
        else
                f->conns = c->next;
        if (c->next)
                c->next->prev = c->prev;
        f->n_conns--;
        if (c->class == CLASS_UNAUTHENTICATED)
                f->n_unauthenticated--;
        else if (c->class == CLASS_AUTHENTICATED)
                f->n_authenticated--;
        publish_open(f);
        pthread_cond_broadcast(&f->gone);
        pthread_mutex_unlock(&f->lock);
        free(c);
        return NULL;
}

static void set_socket_options(int fd, unsigned int seconds)
{
        struct timeval tv = { .tv_sec = seconds };
        int one = 1;

        /* a peer that stops reading (or stalls mid-record) fails the call */
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        /* every write is a whole answer (or as much of one as is ready):
         * Nagle would hold a small one back until the client's delayed ACK
         * of the one before, tens of milliseconds in kube-scheduler's
         * serial scheduling cycle */
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/*
 * The oldest unauthenticated connection of the source holding the most of
 * them, when that is more than @newcomer's source would hold with one more
 * (@held + 1): the one a newcomer may take the place of. NULL: none. Under
 * f->lock; one pass over the connections, a tally per source.
 */
static struct front_conn *eviction_victim(struct gantry_sched_tls_front *f,
                                          const struct sockaddr_storage *newcomer, unsigned int held)
{
        struct tally {
                struct front_conn *oldest;
                unsigned int n;
        } *t = calloc(f->n_unauthenticated + 1, sizeof(*t));
        struct front_conn *victim = NULL;
        unsigned int d = 0, most = held + 1;

        if (!t)
                return NULL;
        for (struct front_conn *c = f->conns; c; c = c->next) {
                unsigned int i;

                if (c->class != CLASS_UNAUTHENTICATED || gantry_netaddr_same_host((struct sockaddr *)&c->peer, (struct sockaddr *)newcomer))
                        continue;
                for (i = 0; i < d && !gantry_netaddr_same_host((struct sockaddr *)&t[i].oldest->peer, (struct sockaddr *)&c->peer); i++)
                        ;
                if (i == d) {
                        if (d == f->n_unauthenticated)
                                break; /* cannot be: every one is counted */
                        d++;
                }
                /* newest first: the last one seen is the oldest */
                t[i].oldest = c;
                t[i].n++;
        }
        for (unsigned int i = 0; i < d; i++)
                if (t[i].n > most) {
                        most = t[i].n;
                        victim = t[i].oldest;
                }
        free(t);
        return victim;
}

/* Which limit refuses a new connection from @peer, or REFUSAL_COUNT when
 * it may start (after an eviction, maybe). Under f->lock. */
static enum refusal admit(struct gantry_sched_tls_front *f, const struct sockaddr_storage *peer)
{
        unsigned int held;
        struct front_conn *victim;

        if (atomic_load(&f->stopping))
                return REFUSED_STOPPING;
        /* the cut ones still ending hold a thread a moment longer */
        if (f->n_conns >= 2 * f->o.max_unauthenticated + f->o.max_authenticated)
                return REFUSED_THREADS;
        held = unauthenticated_from(f, peer);
        if (held >= f->o.max_per_source)
                return REFUSED_PER_SOURCE;
        if (f->n_unauthenticated < f->o.max_unauthenticated)
                return REFUSAL_COUNT;
        victim = eviction_victim(f, peer, held);
        if (!victim)
                return REFUSED_UNAUTHENTICATED;
        cut_conn(f, victim, "evicted");
        return REFUSAL_COUNT;
}

static void start_conn(struct gantry_sched_tls_front *f, int fd, struct sockaddr_storage *peer,
                       socklen_t peer_len)
{
        struct front_conn *c;
        pthread_attr_t attr;
        pthread_t t;
        enum refusal why;
        double now = gantry_now_s();
        int r = -ENOMEM;

        pthread_mutex_lock(&f->lock);
        why = admit(f, peer);
        if (why != REFUSAL_COUNT) {
                count_refusal(f, why, now);
                pthread_mutex_unlock(&f->lock);
                close(fd);
                return;
        }
        c = calloc(1, sizeof(*c));
        if (c && (c->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
                free(c);
                c = NULL;
        }
        if (c) {
                c->f = f;
                c->fd = fd;
                c->peer = *peer;
                c->peer_len = peer_len;
                c->class = CLASS_UNAUTHENTICATED;
                c->deadline = now + f->o.unauthenticated_budget_s;
                set_socket_options(fd, f->o.timeout_s);
                pthread_attr_init(&attr);
                pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
                r = -pthread_create(&t, &attr, conn_main, c);
                pthread_attr_destroy(&attr);
        }
        if (r == 0) {
                c->next = f->conns;
                if (f->conns)
                        f->conns->prev = c;
                f->conns = c;
                f->n_conns++;
                f->n_unauthenticated++;
                publish_open(f);
        }
        pthread_mutex_unlock(&f->lock);
        if (r < 0) {
                if (c) {
                        close(c->wake);
                        free(c);
                }
                close(fd);
        }
}

/* Cuts the unauthenticated connections past their budget. */
static void reap(struct gantry_sched_tls_front *f)
{
        double now = gantry_now_s();

        pthread_mutex_lock(&f->lock);
        for (struct front_conn *c = f->conns; c; c = c->next)
                if (c->class == CLASS_UNAUTHENTICATED && now >= c->deadline)
                        cut_conn(f, c, "budget");
        publish_open(f);
        pthread_mutex_unlock(&f->lock);
}

static void *accept_main(void *arg)
{
        struct gantry_sched_tls_front *f = arg;

        for (;;) {
                struct pollfd p[2] = { { .fd = f->listen_fd, .events = POLLIN },
                                       { .fd = f->stop_fd, .events = POLLIN } };

                if (poll(p, 2, REAP_INTERVAL_MS) < 0 && errno != EINTR)
                        return NULL;
                if (p[1].revents || atomic_load(&f->stopping))
                        return NULL;
                for (int i = 0; p[0].revents && i < ACCEPT_BATCH; i++) {
                        struct sockaddr_storage peer;
                        socklen_t len = sizeof(peer);
                        int fd = accept4(f->listen_fd, (struct sockaddr *)&peer, &len, SOCK_CLOEXEC);

                        if (fd < 0) {
                                if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
                                    errno == ENOMEM) {
                                        /* out of descriptors: let connections end */
                                        struct timespec ts = { 0, 100 * 1000 * 1000 };

                                        nanosleep(&ts, NULL);
                                }
                                break; /* EAGAIN: the queue is empty */
                        }
                        start_conn(f, fd, &peer, len);
                }
                reap(f);
        }
}

static int load_credentials(struct gantry_sched_tls_front *f, struct gantry_error *err)
{
        const struct gantry_sched_tls_front_options *o = &f->o;
        gnutls_datum_t cert = { (unsigned char *)o->cert_pem, (unsigned int)strlen(o->cert_pem) };
        gnutls_datum_t key = { (unsigned char *)o->key_pem, (unsigned int)strlen(o->key_pem) };
        gnutls_datum_t ca = { (unsigned char *)o->ca_pem, (unsigned int)strlen(o->ca_pem) };
        int r;

        if (gnutls_certificate_allocate_credentials(&f->cred) < 0) {
                f->cred = NULL;
                return gantry_error_set(err, ENOMEM, "out of memory");
        }
        r = gnutls_certificate_set_x509_key_mem(f->cred, &cert, &key, GNUTLS_X509_FMT_PEM);
        if (r < 0)
                return gantry_error_set(err, EINVAL, "--tls-cert/--tls-key: %s", gnutls_strerror(r));
        r = gnutls_certificate_set_x509_trust_mem(f->cred, &ca, GNUTLS_X509_FMT_PEM);
        if (r <= 0)
                return gantry_error_set(err, EINVAL, "--client-ca: %s",
                                        r < 0 ? gnutls_strerror(r) : "no certificate in it");
        return 0;
}

static int listen_on(struct gantry_sched_tls_front *f, int *ret_port, struct gantry_error *err)
{
        struct sockaddr_storage ss;
        socklen_t len = sizeof(ss);
        int one = 1;

        /* non-blocking: the accept thread also cuts connections past their budget */
        f->listen_fd = socket(f->o.addr->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (f->listen_fd < 0)
                return gantry_error_set(err, errno, "--listen: socket: %s", strerror(errno));
        setsockopt(f->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (bind(f->listen_fd, f->o.addr, f->o.addr_len) < 0 || listen(f->listen_fd, SOMAXCONN) < 0 ||
            getsockname(f->listen_fd, (struct sockaddr *)&ss, &len) < 0)
                return gantry_error_set(err, errno, "--listen: %s", strerror(errno));
        *ret_port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                   : ((struct sockaddr_in *)&ss)->sin_port);
        return 0;
}

int gantry_sched_tls_front_start(const struct gantry_sched_tls_front_options *opts,
                                 struct gantry_sched_tls_front **ret_front, int *ret_port,
                                 struct gantry_error *err)
{
        struct gantry_sched_tls_front *f = calloc(1, sizeof(*f));
        int port = 0, r;

        if (!f)
                return gantry_error_set(err, ENOMEM, "out of memory");
        f->o = *opts;
        f->listen_fd = -1;
        f->stop_fd = -1;
        pthread_mutex_init(&f->lock, NULL);
        pthread_cond_init(&f->gone, NULL);
        f->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (f->stop_fd < 0) {
                r = gantry_error_set(err, errno, "eventfd: %s", strerror(errno));
                goto fail;
        }
        for (int i = 0; i < REFUSAL_COUNT; i++)
                f->logged_at[i] = -REFUSAL_LOG_S;
        if ((r = load_credentials(f, err)) < 0 || (r = listen_on(f, &port, err)) < 0)
                goto fail;
        if ((r = -pthread_create(&f->acceptor, NULL, accept_main, f)) < 0) {
                gantry_error_set(err, -r, "accept thread: %s", strerror(-r));
                goto fail;
        }
        pthread_setname_np(f->acceptor, "tls-accept");
        f->accepting = true;
        *ret_front = f;
        if (ret_port)
                *ret_port = port;
        return 0;
fail:
        gantry_sched_tls_front_free(f, 0);
        return r;
}

void gantry_sched_tls_front_stop_accepting(struct gantry_sched_tls_front *f)
{
        uint64_t one = 1;

        if (!f || !f->accepting)
                return;
        atomic_store(&f->stopping, true);
        if (write(f->stop_fd, &one, sizeof(one)) < 0) {
                /* a full eventfd wakes the poll all the same */
        }
        pthread_join(f->acceptor, NULL);
        f->accepting = false;
}

static void wake_all(struct gantry_sched_tls_front *f, bool cut)
{
        uint64_t one = 1;

        for (struct front_conn *c = f->conns; c; c = c->next) {
                if (write(c->wake, &one, sizeof(one)) < 0) {
                        /* an eventfd full of wake-ups is awake */
                }
                if (cut || c->state == CONN_HANDSHAKE)
                        shutdown(c->fd, SHUT_RDWR);
        }
}

void gantry_sched_tls_front_stop_connections(struct gantry_sched_tls_front *f)
{
        if (!f)
                return;
        gantry_sched_tls_front_stop_accepting(f);
        pthread_mutex_lock(&f->lock);
        atomic_store(&f->stopping, true);
        wake_all(f, false);
        pthread_mutex_unlock(&f->lock);
}

void gantry_sched_tls_front_free(struct gantry_sched_tls_front *f, unsigned int timeout_s)
{
        struct timespec deadline;

        if (!f)
                return;
        gantry_sched_tls_front_stop_connections(f);
        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_sec += timeout_s;
        pthread_mutex_lock(&f->lock);
        while (f->n_conns > 0)
                if (pthread_cond_timedwait(&f->gone, &f->lock, &deadline) == ETIMEDOUT) {
                        log_warn("sched.connections_cut", "count=%u", f->n_conns);
                        wake_all(f, true);
                        deadline.tv_sec += 3600;
                }
        pthread_mutex_unlock(&f->lock);
        if (f->listen_fd >= 0)
                close(f->listen_fd);
        if (f->stop_fd >= 0)
                close(f->stop_fd);
        if (f->cred)
                gnutls_certificate_free_credentials(f->cred);
        pthread_mutex_destroy(&f->lock);
        pthread_cond_destroy(&f->gone);
        free(f);
}
