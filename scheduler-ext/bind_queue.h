/*
 * Binds off the HTTP threads. A bind waits for the Binding POST to the API
 * server (milliseconds, up to --bind-timeout); done on the libmicrohttpd
 * thread that read it, it would stall every other connection that thread
 * serves, among them kube-scheduler's next filter. The HTTP face suspends the
 * bind's connection, hands the request to this queue's workers, and answers
 * it when a worker has run the verb and resumed the connection.
 */
#pragma once

#include <microhttpd.h>
#include <stddef.h>

#include "extender.h"

struct gantry_metrics;
struct gantry_sched_bind_queue;

/*
 * Starts @workers threads (at least 1) running binds through @ext; each
 * bind's wait for a worker goes to @metrics (may be NULL) as the histogram
 * gantry_scheduler_bind_queue_wait_seconds.
 * Returns 0 and *ret_queue, or -errno (-ENOMEM, or pthread_create()'s error).
 */
int gantry_sched_bind_queue_start(struct gantry_extender *ext, struct gantry_metrics *metrics,
                                  unsigned int workers, struct gantry_sched_bind_queue **ret_queue);

/*
 * From the access handler of a connection whose bind body (@body, @len:
 * borrowed, valid until the request completes) is complete: suspends @conn
 * and queues the bind. Returns 0 (the handler returns MHD_YES; the
 * connection is resumed when the bind is done), or -ENOMEM / -ESHUTDOWN
 * (nothing suspended: the caller binds inline).
 */
int gantry_sched_bind_queue_submit(struct gantry_sched_bind_queue *q, struct MHD_Connection *conn,
                                   const char *body, size_t len);

/*
 * From the access handler once more for @conn: the finished bind's HTTP
 * status (> 0) with *ret_reply (malloc'd JSON, the caller's), or 0 when
 * @conn has no finished bind (not submitted yet).
 */
int gantry_sched_bind_queue_take(struct gantry_sched_bind_queue *q, struct MHD_Connection *conn,
                                 char **ret_reply);

/*
 * Runs the binds still queued, resumes their connections and joins the
 * workers. Call before MHD_stop_daemon() (a suspended connection must be
 * resumed first). NULL is a no-op.
 */
void gantry_sched_bind_queue_stop(struct gantry_sched_bind_queue *q);

/* Frees @q after MHD_stop_daemon() (the answers nobody took). NULL: no-op. */
void gantry_sched_bind_queue_free(struct gantry_sched_bind_queue *q);
