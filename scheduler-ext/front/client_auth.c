/*
 * The client certificate check of gantry-scheduler's HTTPS server: GnuTLS
 * verifies the peer's chain against the trust list of the TLS front's
 * credentials (--client-ca), its dates, and that it may authenticate a
 * TLS client; a small cache of the chains that verified spares a client's
 * later connections the same check. See client_auth.h.
 */
#include <errno.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client_auth.h"

/* Probes kubelet makes without a client certificate: nothing in them to protect. */
static const char *const open_paths[] = { "/healthz", "/readyz", "/livez" };

bool gantry_sched_client_path_is_open(const char *url)
{
        size_t i;

        for (i = 0; i < sizeof(open_paths) / sizeof(open_paths[0]); i++)
                if (url && !strcmp(url, open_paths[i]))
                        return true;
        return false;
}

static const char *status_reason(unsigned int status)
{
        if (status & GNUTLS_CERT_SIGNER_NOT_FOUND)
                return "certificate signed by an unknown authority";
        if (status & GNUTLS_CERT_EXPIRED)
                return "certificate expired";
        if (status & GNUTLS_CERT_NOT_ACTIVATED)
                return "certificate not yet valid";
        if (status & GNUTLS_CERT_REVOKED)
                return "certificate revoked";
        if (status & GNUTLS_CERT_PURPOSE_MISMATCH)
                return "certificate not for TLS client authentication";
        if (status & GNUTLS_CERT_INSECURE_ALGORITHM)
                return "certificate signed with an insecure algorithm";
        if (status & GNUTLS_CERT_SIGNER_NOT_CA)
                return "certificate's signer is not a CA";
        return "certificate does not verify";
}

#define VERIFIED_MAX 32
#define DIGEST_LEN 32 /* SHA-256 */

struct verified_chain {
        unsigned char digest[DIGEST_LEN];
        time_t not_after; /* 0: a free slot */
};

struct gantry_sched_client_cache {
        pthread_mutex_t lock;
        time_t ca_not_after; /* the trust list's earliest expiry */
        size_t next;         /* the slot the next chain takes */
        struct verified_chain chains[VERIFIED_MAX];
};

static void take_earliest(time_t *min, time_t t)
{
        if (t != (time_t)-1 && (*min == (time_t)-1 || t < *min))
                *min = t;
}

/* The earliest expiry of the certificates in @pem; -1 when there is none. */
static time_t pem_expiry(const char *pem)
{
        gnutls_datum_t d = { (unsigned char *)pem, (unsigned int)strlen(pem) };
        gnutls_x509_crt_t *list = NULL;
        unsigned int n = 0;
        time_t min = -1;

        if (gnutls_x509_crt_list_import2(&list, &n, &d, GNUTLS_X509_FMT_PEM, 0) < 0)
                return -1;
        for (unsigned int i = 0; i < n; i++) {
                take_earliest(&min, gnutls_x509_crt_get_expiration_time(list[i]));
                gnutls_x509_crt_deinit(list[i]);
        }
        gnutls_free(list);
        return min;
}

/* The earliest expiry of the @n DER certificates @peers; -1 when one does
 * not parse. */
static time_t chain_expiry(const gnutls_datum_t *peers, unsigned int n)
{
        time_t min = -1;

        for (unsigned int i = 0; i < n; i++) {
                gnutls_x509_crt_t crt;
                time_t t = -1;

                if (gnutls_x509_crt_init(&crt) < 0)
                        return -1;
                if (gnutls_x509_crt_import(crt, &peers[i], GNUTLS_X509_FMT_DER) == 0)
                        t = gnutls_x509_crt_get_expiration_time(crt);
                gnutls_x509_crt_deinit(crt);
                if (t == (time_t)-1)
                        return -1;
                take_earliest(&min, t);
        }
        return min;
}

int gantry_sched_client_cache_new(const char *ca_pem, struct gantry_sched_client_cache **ret_cache)
{
        struct gantry_sched_client_cache *c;
        time_t t = ca_pem ? pem_expiry(ca_pem) : -1;

        if (t == (time_t)-1)
                return -EINVAL;
        if (!(c = calloc(1, sizeof(*c))))
                return -ENOMEM;
        pthread_mutex_init(&c->lock, NULL);
        c->ca_not_after = t;
        *ret_cache = c;
        return 0;
}

void gantry_sched_client_cache_free(struct gantry_sched_client_cache *cache)
{
        if (!cache)
                return;
        pthread_mutex_destroy(&cache->lock);
        free(cache);
}

/* SHA-256 of the chain @peers (each certificate's length, then its DER). */
static int chain_digest(const gnutls_datum_t *peers, unsigned int n, unsigned char *out)
{
        gnutls_hash_hd_t h;

        if (gnutls_hash_init(&h, GNUTLS_DIG_SHA256) < 0)
                return -ENOMEM;
        for (unsigned int i = 0; i < n; i++) {
                uint32_t len = peers[i].size;

                gnutls_hash(h, &len, sizeof(len));
                gnutls_hash(h, peers[i].data, peers[i].size);
        }
        gnutls_hash_deinit(h, out);
        return 0;
}

static bool cache_holds(struct gantry_sched_client_cache *c, const unsigned char *digest)
{
        time_t now = time(NULL);
        bool found = false;

        pthread_mutex_lock(&c->lock);
        for (size_t i = 0; i < VERIFIED_MAX && !found; i++)
                found = c->chains[i].not_after > now &&
                        !memcmp(c->chains[i].digest, digest, DIGEST_LEN);
        pthread_mutex_unlock(&c->lock);
        return found;
}

static void cache_add(struct gantry_sched_client_cache *c, const unsigned char *digest,
                      const gnutls_datum_t *peers, unsigned int n)
{
        time_t t = chain_expiry(peers, n);

        if (t == (time_t)-1)
                return;
        if (t > c->ca_not_after)
                t = c->ca_not_after;
        pthread_mutex_lock(&c->lock);
        for (size_t i = 0; i < VERIFIED_MAX; i++)
                if (!memcmp(c->chains[i].digest, digest, DIGEST_LEN) && c->chains[i].not_after) {
                        c->chains[i].not_after = t; /* two connections verified it at once */
                        goto out;
                }
        memcpy(c->chains[c->next].digest, digest, DIGEST_LEN);
        c->chains[c->next].not_after = t;
        c->next = (c->next + 1) % VERIFIED_MAX;
out:
        pthread_mutex_unlock(&c->lock);
}

int gantry_sched_client_verify(gnutls_session_t session, struct gantry_sched_client_cache *cache,
                               char *why, size_t why_len)
{
        unsigned char digest[DIGEST_LEN];
        const gnutls_datum_t *peers;
        bool digested = false;
        gnutls_typed_vdata_st purpose = { .type = GNUTLS_DT_KEY_PURPOSE_OID,
                                          .data = (unsigned char *)GNUTLS_KP_TLS_WWW_CLIENT };
        unsigned int status = 0, n = 0;
        int r;

        if (gnutls_certificate_type_get(session) != GNUTLS_CRT_X509 ||
            !(peers = gnutls_certificate_get_peers(session, &n)) || n == 0) {
                snprintf(why, why_len, "no client certificate");
                return -ENOKEY;
        }
        if (cache && chain_digest(peers, n, digest) == 0) {
                digested = true;
                if (cache_holds(cache, digest)) {
                        why[0] = '\0';
                        return 1;
                }
        }
        r = gnutls_certificate_verify_peers(session, &purpose, 1, &status);
        if (r < 0) {
                snprintf(why, why_len, "client certificate: %s", gnutls_strerror(r));
                return -EACCES;
        }
        if (status) {
                snprintf(why, why_len, "client %s", status_reason(status));
                return -EACCES;
        }
        if (digested)
                cache_add(cache, digest, peers, n);
        why[0] = '\0';
        return 0;
}
