/*
 * The client certificate check of gantry-scheduler's HTTPS server: GnuTLS
 * verifies the peer's chain against the CA given to MHD
 * (MHD_OPTION_HTTPS_MEM_TRUST), its dates, and that it may authenticate a
 * TLS client. See client_auth.h.
 */
#include <errno.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <microhttpd.h>
#include <stdio.h>
#include <string.h>

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

int gantry_sched_client_verify(struct MHD_Connection *conn, char *why, size_t why_len)
{
        const union MHD_ConnectionInfo *info;
        gnutls_session_t session;
        gnutls_typed_vdata_st purpose = { .type = GNUTLS_DT_KEY_PURPOSE_OID,
                                          .data = (unsigned char *)GNUTLS_KP_TLS_WWW_CLIENT };
        unsigned int status = 0, n = 0;
        int r;

        info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
        if (!info || !info->tls_session) {
                snprintf(why, why_len, "not a TLS connection");
                return -ENOTCONN;
        }
        session = (gnutls_session_t)info->tls_session;
        if (gnutls_certificate_type_get(session) != GNUTLS_CRT_X509 ||
            !gnutls_certificate_get_peers(session, &n) || n == 0) {
                snprintf(why, why_len, "no client certificate");
                return -EACCES;
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
        why[0] = '\0';
        return 0;
}
