/*
 * The TLS front of gantry-scheduler's HTTPS port; see tls_front.h. An
 * accept thread, then a detached thread per connection (bounded in number):
 * handshake, client check, and either the HTTP/2 connection or the
 * HTTP/1.1 relay. The relay copies bytes both ways between the TLS session
 * and a socketpair whose other end libmicrohttpd reads in plaintext, so the
 * HTTP/1.1 server keeps every behaviour it has without TLS of its own.
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
#include "h2_conn.h"
#include "log.h"
#include "metrics.h"
#include "tls_front.h"
#include "tls_io.h"

#define RELAY_BUF (16u << 10)

enum conn_state { CONN_HANDSHAKE, CONN_H2, CONN_RELAY };

struct front_conn {
        struct front_conn *prev, *next;
        struct gantry_sched_tls_front *f;
        int fd;
        int wake; /* eventfd: stop, and the h2 connection's finished binds */
        enum conn_state state;
        struct sockaddr_storage peer;
        socklen_t peer_len;
};

struct gantry_sched_tls_front {
        struct gantry_sched_tls_front_options o;
        gnutls_certificate_credentials_t cred;
        int listen_fd;
        pthread_t acceptor;
        bool accepting;
        atomic_bool stopping;
        pthread_mutex_t lock;
        pthread_cond_t gone; /* a connection thread ended */
        struct front_conn *conns;
        unsigned int n_conns;
};

static const gnutls_datum_t alpn_protos[] = {
        { (unsigned char *)"h2", 2 },
        { (unsigned char *)"http/1.1", 8 },
};

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
        gnutls_handshake_set_timeout(s, f->o.timeout_s * 1000);
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
        if (h2) {
                pthread_mutex_lock(&f->lock);
                c->state = CONN_H2;
                pthread_mutex_unlock(&f->lock);
                gantry_sched_h2_serve(s, c->fd, c->wake, &f->stopping, f->o.router, refused,
                                      f->o.timeout_s);
        } else {
                relay(c, s, refused);
        }
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

static void start_conn(struct gantry_sched_tls_front *f, int fd, struct sockaddr_storage *peer,
                       socklen_t peer_len)
{
        struct front_conn *c;
        pthread_attr_t attr;
        pthread_t t;
        int r = -ENOMEM;

        pthread_mutex_lock(&f->lock);
        if (f->n_conns >= f->o.max_connections || atomic_load(&f->stopping)) {
                pthread_mutex_unlock(&f->lock);
                log_warn("sched.connection_refused", "reason=\"%u connections open, the limit\"",
                         f->o.max_connections);
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

static void *accept_main(void *arg)
{
        struct gantry_sched_tls_front *f = arg;

        for (;;) {
                struct sockaddr_storage peer;
                socklen_t len = sizeof(peer);
                int fd = accept4(f->listen_fd, (struct sockaddr *)&peer, &len, SOCK_CLOEXEC);

                if (fd < 0) {
                        if (atomic_load(&f->stopping) || errno == EINVAL || errno == EBADF)
                                return NULL;
                        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
                            errno == ENOMEM) {
                                /* out of descriptors: let connections end */
                                struct timespec ts = { 0, 100 * 1000 * 1000 };

                                nanosleep(&ts, NULL);
                        }
                        continue;
                }
                start_conn(f, fd, &peer, len);
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

        f->listen_fd = socket(f->o.addr->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (f->listen_fd < 0)
                return gantry_error_set(err, errno, "--listen: socket: %s", strerror(errno));
        setsockopt(f->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (bind(f->listen_fd, f->o.addr, f->o.addr_len) < 0 || listen(f->listen_fd, 128) < 0 ||
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
        pthread_mutex_init(&f->lock, NULL);
        pthread_cond_init(&f->gone, NULL);
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
        if (!f || !f->accepting)
                return;
        atomic_store(&f->stopping, true);
        /* wakes accept() with EINVAL */
        shutdown(f->listen_fd, SHUT_RDWR);
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
        if (f->cred)
                gnutls_certificate_free_credentials(f->cred);
        pthread_mutex_destroy(&f->lock);
        pthread_cond_destroy(&f->gone);
        free(f);
}
