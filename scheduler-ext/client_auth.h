/*
 * Who may call gantry-scheduler: the client certificate check of its HTTPS
 * server. With a client CA, the TLS handshake asks every client for a
 * certificate (it does not demand one, so kubelet's probes of /healthz still
 * connect) and each request then needs one that chains to that CA, is in its
 * validity period and may be used for TLS client authentication. Plain HTTP
 * serves no one authenticated: it is only reached through --insecure-http.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct MHD_Connection;

/*
 * True for the paths served to anyone who reaches the port: the liveness
 * and readiness probes that kubelet makes without a client certificate.
 * Every other path (the verbs, /metrics) needs one.
 */
bool gantry_sched_client_path_is_open(const char *url);

/*
 * Checks the client certificate of @conn's TLS session against the trust
 * list the server was started with. Returns 0 when it verifies; -EACCES when
 * the client sent none or one that does not verify, with the reason (no key
 * material, only the certificate's standing: "no client certificate",
 * "certificate signed by an unknown authority", ...) in @why (@why_len
 * bytes, always terminated). -ENOTCONN when @conn has no TLS session. Safe
 * from any of the server's threads.
 */
int gantry_sched_client_verify(struct MHD_Connection *conn, char *why, size_t why_len);
