/*
 * Who may call gantry-scheduler: the client certificate check of its HTTPS
 * server. With a client CA, the TLS handshake asks every client for a
 * certificate (it does not demand one, so kubelet's probes of /healthz still
 * connect) and each request then needs one that chains to that CA, is in its
 * validity period and may be used for TLS client authentication. Plain HTTP
 * serves no one authenticated: it is only reached through --insecure-http.
 */
#pragma once

#include <gnutls/gnutls.h>
#include <stdbool.h>
#include <stddef.h>

/*
 * True for the paths served to anyone who reaches the port: the liveness
 * and readiness probes that kubelet makes without a client certificate.
 * Every other path (the verbs, /metrics) needs one.
 */
bool gantry_sched_client_path_is_open(const char *url);

/*
 * The chains that verified, so that a client's next connection (a new TLS
 * handshake, which still proves the client holds the key) is not verified
 * again: kube-scheduler opens a connection for each bind in flight beyond
 * its 2 idle ones, and the chain's parse and signature check are one of the
 * costly steps of gantry-scheduler's side of a handshake. An entry is keyed
 * by the SHA-256 of the chain the client sent and holds until the earliest
 * expiry of that chain and of the trust list @ca_pem (PEM; the one given to
 * the server): the outcome of a verification cannot change before then (no
 * CRLs). Only verifications that succeeded are kept, at most 32 chains (one
 * per client identity in practice; the oldest goes first).
 */
struct gantry_sched_client_cache;

/* A new cache for the trust list @ca_pem; -ENOMEM, or -EINVAL when @ca_pem
 * holds no certificate. Free with gantry_sched_client_cache_free(). */
int gantry_sched_client_cache_new(const char *ca_pem, struct gantry_sched_client_cache **ret_cache);
void gantry_sched_client_cache_free(struct gantry_sched_client_cache *cache);

/*
 * Checks the client certificate of the handshaken server @session against
 * the trust list of its credentials. Returns 0 when it verifies (1 when it
 * did by a chain @cache, when not NULL, holds: verified by an earlier
 * connection); -EACCES when the client sent one that does not verify,
 * -ENOKEY when it sent none; with the reason (no key material, only the
 * certificate's standing: "no client certificate", "certificate signed by
 * an unknown authority", ...) in @why (@why_len bytes, always terminated).
 * Call from the thread that owns @session; @cache is safe from any thread.
 */
int gantry_sched_client_verify(gnutls_session_t session, struct gantry_sched_client_cache *cache,
                               char *why, size_t why_len);
