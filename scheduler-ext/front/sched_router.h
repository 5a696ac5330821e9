/*
 * What gantry-scheduler answers, whichever transport carried the request:
 * HTTP/1.1 through libmicrohttpd (extender_http.c) or HTTP/2 (h2_conn.c).
 * Both hand the router a request's head (method, path, the caller's client
 * certificate outcome) and, for a verb, its whole body; the router refuses
 * (403, 404, 405, 413), serves GET /healthz, /readyz and /metrics, runs
 * filter and prioritize inline and queues a bind on the bind queue, and
 * counts the request metrics. The transport only moves bytes.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "bind_queue.h"
#include "extender.h"

struct gantry_metrics;

struct gantry_sched_router {
        struct gantry_extender *ext;         /* borrowed */
        struct gantry_sched_bind_queue *binds; /* may be NULL: binds inline */
        struct gantry_metrics *metrics;      /* may be NULL */
        size_t max_body;                     /* the largest body accepted, bytes */
        bool check_clients;                  /* TLS with a client CA: verbs need a verified client */
};

/* An answer: HTTP @status, Content-Type @type (a literal) and @text, owned
 * (malloc'd, the transport frees it) or a literal. */
struct gantry_sched_reply {
        unsigned int status;
        const char *type;
        char *text;
        bool owned;
};

/* gantry_sched_route_head() and _verb() results */
#define GANTRY_SCHED_ROUTE_REPLY 1  /* *ret_reply is the answer */
#define GANTRY_SCHED_ROUTE_BODY 0   /* a verb: read its body, then _verb() */
#define GANTRY_SCHED_ROUTE_QUEUED 2 /* a bind went to the bind queue */

/*
 * A request's head: @method, @path, and @refused (why the caller's client
 * certificate was refused, or NULL when it verified or when
 * !@r->check_clients). Returns GANTRY_SCHED_ROUTE_REPLY with *ret_reply (a
 * refusal, a GET route, 404, 405), or GANTRY_SCHED_ROUTE_BODY with
 * *ret_verb. Has no side effect but metrics and a log line, so a transport
 * may ask again for the same request.
 */
int gantry_sched_route_head(struct gantry_sched_router *r, const char *method, const char *path,
                            const char *refused, enum gantry_extender_verb *ret_verb,
                            struct gantry_sched_reply *ret_reply);

/*
 * The 413 for a @verb body over the limit: @content_length is the size the
 * header announced (0: found while reading); @start is
 * when the request's head arrived (gantry_extender_now()).
 */
void gantry_sched_route_too_large(struct gantry_sched_router *r, enum gantry_extender_verb verb,
                                  unsigned long long content_length, double start,
                                  struct gantry_sched_reply *ret_reply);

/*
 * Runs @verb on the whole body @body, @len (NUL-terminated; borrowed until
 * the answer is given). A bind goes to the bind queue when there is one:
 * GANTRY_SCHED_ROUTE_QUEUED, and @done(@arg, status, reply) is called once,
 * from a bind worker, with the JSON to hand to gantry_sched_route_json().
 * Otherwise GANTRY_SCHED_ROUTE_REPLY with *ret_reply. A transport that must
 * prepare before a worker can call @done (libmicrohttpd suspends the
 * connection) does so before calling.
 */
int gantry_sched_route_verb(struct gantry_sched_router *r, enum gantry_extender_verb verb,
                            const char *body, size_t len, double start,
                            gantry_sched_bind_done_fn done, void *arg,
                            struct gantry_sched_reply *ret_reply);

/*
 * The answer for a verb's @status and @json (malloc'd, taken over; NULL:
 * out of memory, answered 500), counted in the request metrics with the
 * time since @start.
 */
void gantry_sched_route_json(struct gantry_sched_router *r, enum gantry_extender_verb verb,
                             int status, char *json, double start,
                             struct gantry_sched_reply *ret_reply);
