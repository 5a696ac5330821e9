/*
 * Limits for a libmicrohttpd server reachable by hostile clients (the
 * /metrics ports of gantry-csi and gantry-target, gantry-target's JSON-RPC
 * port): connections in all and per source address (refused at accept, by
 * libmicrohttpd's accept policy callback), and a budget in time for each
 * request (from accept, or from the answer before, until the whole request
 * is in): a connection past it is cut, a byte a second or none, by a
 * thread of the guard's own. A request being answered is never cut. When
 * the total is reached, a newcomer from a source holding fewer connections
 * than the greediest source takes the place of that one's oldest.
 * Refusals and cuts are counted on
 * gantry_http_connections_refused_total{port="<name>",reason="..."}
 * (reason total, per_source, evicted or budget).
 *
 * Use: MHD_OPTION_ACCEPT_POLICY gantry_http_guard_accept and
 * MHD_OPTION_NOTIFY_CONNECTION gantry_http_guard_notify with the guard as
 * their closure; gantry_http_guard_answering() once a request is whole;
 * gantry_http_guard_completed() from MHD_OPTION_NOTIFY_COMPLETED. A
 * server whose connections carry a socket context of their own keeps the
 * guard's entry in it (gantry_http_guard_notify() with a pointer to that
 * field) and calls the _entry_ variants. The server may use a pool of
 * threads: a connection is counted from its admission on.
 */
#pragma once

#include <microhttpd.h>
#include <sys/socket.h>

struct gantry_metrics;
struct gantry_http_guard;

struct gantry_http_guard_options {
        unsigned int max_connections; /* 0: 64 */
        unsigned int max_per_source;  /* 0: 8 */
        double request_budget_s;      /* 0: 10 */
        struct gantry_metrics *metrics; /* may be NULL */
        const char *port;               /* the port label: "metrics", "rpc" */
};

/* Starts the guard's thread. Returns 0 and *ret_guard, or -errno. */
int gantry_http_guard_new(const struct gantry_http_guard_options *opts,
                          struct gantry_http_guard **ret_guard);

/* Stops its thread and frees it; after MHD_stop_daemon(). NULL: no-op. */
void gantry_http_guard_free(struct gantry_http_guard *g);

/* MHD_AcceptPolicyCallback; @cls is the guard. */
enum MHD_Result gantry_http_guard_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen);

/* MHD_NotifyConnectionCallback; @cls is the guard. */
void gantry_http_guard_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                              enum MHD_ConnectionNotificationCode code);

/* The request on @conn is whole and being answered: not cut until answered. */
void gantry_http_guard_answering(struct MHD_Connection *conn);

/* The request on @conn was answered: the next one's budget starts now. */
void gantry_http_guard_completed(struct MHD_Connection *conn);

/* The same, by the entry gantry_http_guard_notify() stored (NULL: no-op). */
void gantry_http_guard_entry_answering(void *entry);
void gantry_http_guard_entry_completed(void *entry);
