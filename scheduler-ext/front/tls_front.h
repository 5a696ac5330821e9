/*
 * gantry-scheduler's TLS front: it owns the HTTPS listening socket, and on a
 * thread per connection does the GnuTLS server handshake (the client
 * certificate asked for, not demanded, so kubelet's probes connect; ALPN
 * offering h2, then http/1.1) and checks the client's chain once
 * (client_auth.h). Then an h2 connection is served on that thread
 * (h2_conn.h), and any other is relayed in plaintext over a socketpair to
 * the HTTP/1.1 server (libmicrohttpd, handed the other end). kube-scheduler's
 * Go client speaks h2 when offered: its binds in parallel become streams of
 * one connection, where HTTP/1.1 opened a connection (a handshake, with its
 * public-key work on both sides) for each beyond its two idle ones.
 *
 * Connections without a verified client certificate (any, until its
 * handshake is done) have limits of their own, apart from the verified
 * ones': in all, per source address, and in time from accept; the
 * refusals and cuts are counted on the metrics
 * (gantry_scheduler_connections_refused_total{reason},
 * gantry_scheduler_connections_cut_total{reason},
 * gantry_scheduler_connections_open{class}).
 */
#pragma once

#include <gnutls/gnutls.h>
#include <stddef.h>
#include <sys/socket.h>

#include "error.h"

struct gantry_metrics;
struct gantry_sched_client_cache;
struct gantry_sched_router;

/*
 * Hands the plaintext end @fd of an HTTP/1.1 connection to the HTTP/1.1
 * server (which owns and closes it, also on failure), with the client's
 * address and its certificate outcome @refused (why it was refused; NULL:
 * it verified). Returns 0 or -errno. Called on the connection's thread.
 */
typedef int (*gantry_sched_tls_relay_fn)(void *arg, int fd, const struct sockaddr *peer,
                                         socklen_t peer_len, const char *refused);

struct gantry_sched_tls_front_options {
        const struct sockaddr *addr; /* where to listen; port 0 picks one */
        socklen_t addr_len;
        const char *cert_pem, *key_pem, *ca_pem; /* --tls-cert, --tls-key, --client-ca */
        /* Connections whose client certificate has not verified (yet): in
         * all, and from one source address; beyond, closed at accept (a
         * newcomer may evict the oldest of the source holding the most). */
        unsigned int max_unauthenticated, max_per_source;
        /* Connections whose certificate verified; beyond, closed once it has. */
        unsigned int max_authenticated;
        /* Seconds from accept an unauthenticated connection may live: its
         * handshake, and for one that never verifies (a probe) its requests. */
        double unauthenticated_budget_s;
        unsigned int timeout_s;            /* an idle h2 connection's; socket timeouts */
        struct gantry_sched_client_cache *verified; /* may be NULL */
        struct gantry_metrics *metrics;    /* may be NULL */
        struct gantry_sched_router *router; /* serves the h2 streams */
        gantry_sched_tls_relay_fn relay;   /* takes the HTTP/1.1 connections */
        void *relay_arg;
};

struct gantry_sched_tls_front;

/*
 * Listens and accepts on a thread of its own. Returns 0, *ret_front and
 * *ret_port (the bound port), or -errno with @err naming the flag (a
 * certificate or key GnuTLS cannot load, the address).
 */
int gantry_sched_tls_front_start(const struct gantry_sched_tls_front_options *opts,
                                 struct gantry_sched_tls_front **ret_front, int *ret_port,
                                 struct gantry_error *err);

/* Closes the listening socket: no new connection. NULL: no-op. */
void gantry_sched_tls_front_stop_accepting(struct gantry_sched_tls_front *f);

/*
 * Ends the connections: no new relay; each h2 connection sends GOAWAY,
 * finishes its streams (the bind queue must be stopped first, so that every
 * bind is answered) and closes. Returns at once; the relays end when the
 * HTTP/1.1 server closes its ends. NULL: no-op.
 */
void gantry_sched_tls_front_stop_connections(struct gantry_sched_tls_front *f);

/* Waits for every connection thread to end (after @timeout_s, it cuts
 * the sockets of those left), then frees @f. NULL: no-op. */
void gantry_sched_tls_front_free(struct gantry_sched_tls_front *f, unsigned int timeout_s);
