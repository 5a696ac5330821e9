/*
 * Blocking send and receive on a TLS session; see tls_io.h. GnuTLS returns
 * GNUTLS_E_INTERRUPTED when a signal interrupts the socket call: both retry
 * it, and every other failure is one -EIO for the caller.
 */
#include <errno.h>

#include "tls_io.h"

int gantry_sched_tls_send(gnutls_session_t s, const void *data, size_t len)
{
        const char *p = data;

        while (len > 0) {
                ssize_t n = gnutls_record_send(s, p, len);

                if (n == GNUTLS_E_INTERRUPTED)
                        continue;
                if (n <= 0)
                        return -EIO; /* GNUTLS_E_AGAIN too: the send timeout passed */
                p += n;
                len -= (size_t)n;
        }
        return 0;
}

ssize_t gantry_sched_tls_recv(gnutls_session_t s, void *buf, size_t size)
{
        for (;;) {
                ssize_t n = gnutls_record_recv(s, buf, size);

                if (n == GNUTLS_E_INTERRUPTED)
                        continue;
                if (n == GNUTLS_E_PREMATURE_TERMINATION)
                        return 0;
                return n < 0 ? -EIO : n;
        }
}
