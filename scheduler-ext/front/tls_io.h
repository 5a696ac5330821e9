/*
 * Blocking I/O on a TLS session that a connection's own thread owns: the
 * HTTP/1.1 relay of the front (tls_front.c) and an HTTP/2 connection
 * (h2_conn.c) read and write their sessions through these two.
 */
#pragma once

#include <gnutls/gnutls.h>
#include <sys/types.h>

/*
 * Sends all @len bytes of @data on @s (blocking). 0, or -EIO when the
 * connection failed or the peer stopped reading (the socket's send timeout).
 */
int gantry_sched_tls_send(gnutls_session_t s, const void *data, size_t len);

/*
 * Receives up to @size bytes: > 0, 0 when the peer closed (with or without
 * close_notify), or -EIO.
 */
ssize_t gantry_sched_tls_recv(gnutls_session_t s, void *buf, size_t size);
