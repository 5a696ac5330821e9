/*
 * One HTTP/2 connection of gantry-scheduler (nghttp2 does the framing and
 * HPACK), over a TLS session the front has handshaken (tls_front.h). Each
 * stream's head and body go to the router (sched_router.h) as libmicrohttpd's
 * requests do: filters, prioritizes and GETs are answered on this
 * connection's thread, a bind goes to the bind queue and its answer is
 * submitted when the worker wakes the thread. Only this thread touches the
 * nghttp2 session and the TLS session.
 */
#pragma once

#include <gnutls/gnutls.h>
#include <stdatomic.h>
#include <stdbool.h>

struct gantry_sched_router;

/*
 * The streams a client may open at once. Go's client opens another
 * connection (another handshake) when a request finds every stream taken,
 * and kube-scheduler's binds pile up while the API server is slow (hundreds
 * in flight at 200 pods/s and a p99 Binding of 0.25-0.5 s): beyond the bind
 * workers they wait in the bind queue, on this connection.
 */
#define GANTRY_SCHED_H2_MAX_STREAMS 256

/*
 * Serves the connection until the client closes it, it fails, it has no
 * stream open for @idle_s seconds, or *@stopping is set and @wake (an
 * eventfd, the thread's wake-up also for its finished binds) is written:
 * then GOAWAY, and the streams already open are finished first. Returns once
 * every bind it queued has been answered. @refused: why the client's
 * certificate was refused (NULL: it verified, or none is checked).
 */
void gantry_sched_h2_serve(gnutls_session_t tls, int fd, int wake, const atomic_bool *stopping,
                           struct gantry_sched_router *router, const char *refused,
                           unsigned int idle_s);
