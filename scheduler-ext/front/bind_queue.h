/*
 * Binds off the serving threads. A bind waits for the Binding POST to the
 * API server (milliseconds, up to --bind-timeout); done on the thread that
 * read it, it would stall every other request that thread serves, among
 * them kube-scheduler's next filter. Both transports hand a bind's body to
 * this queue's workers and go on serving: HTTP/1.1 (libmicrohttpd)
 * suspends the bind's connection and resumes it from the completion
 * callback; HTTP/2 (h2_conn.c) wakes its connection's thread, which
 * submits the answer on the bind's stream.
 */
#pragma once

#include <stddef.h>

#include "extender.h"

struct gantry_metrics;
struct gantry_sched_bind_queue;

/*
 * A finished bind: its HTTP status and *reply* (malloc'd JSON, the
 * callback's to free; NULL when out of memory). Called on a bind worker
 * (or, for the binds still queued at stop, on the thread that stops).
 */
typedef void (*gantry_sched_bind_done_fn)(void *arg, int status, char *reply);

/*
 * Starts @workers threads (at least 1) running binds through @ext; each
 * bind's wait for a worker goes to @metrics (may be NULL) as the histogram
 * gantry_scheduler_bind_queue_wait_seconds.
 * Returns 0 and *ret_queue, or -errno (-ENOMEM, or pthread_create()'s error).
 */
int gantry_sched_bind_queue_start(struct gantry_extender *ext, struct gantry_metrics *metrics,
                                  unsigned int workers, struct gantry_sched_bind_queue **ret_queue);

/*
 * Queues the bind whose body is @body, @len (borrowed: valid until @done is
 * called). Returns 0 (@done will be called exactly once, with @arg), or
 * -ENOMEM / -ESHUTDOWN (@done is never called: the caller binds inline).
 */
int gantry_sched_bind_queue_submit(struct gantry_sched_bind_queue *q, const char *body, size_t len,
                                   gantry_sched_bind_done_fn done, void *arg);

/*
 * Runs the binds still queued (their callbacks run before this returns) and
 * joins the workers; later submits fail with -ESHUTDOWN. Call before the
 * transports stop (a suspended connection must be resumed first). NULL is a
 * no-op.
 */
void gantry_sched_bind_queue_stop(struct gantry_sched_bind_queue *q);

/* Frees a stopped @q. NULL: no-op. */
void gantry_sched_bind_queue_free(struct gantry_sched_bind_queue *q);
