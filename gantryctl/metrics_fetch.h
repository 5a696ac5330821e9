/*
 * One GET of a Prometheus /metrics page for gantryctl's commands that read
 * the services' metrics (`usage`, `backends`), over HTTP or HTTPS, with a
 * client certificate when the endpoint asks for one (gantry-scheduler's).
 */
#pragma once

#include "byte_buf.h"
#include "error.h"

#define GANTRY_METRICS_FETCH_MAX (64 * 1024 * 1024) /* largest page read */

/* HTTPS trust and client identity; any field may be NULL. */
struct gantry_metrics_tls {
        const char *cacert; /* PEM CA bundle to verify the server with */
        const char *cert;   /* PEM client certificate ... */
        const char *key;    /* ... and its key */
};

/*
 * GETs @url into *@ret (its max set by the caller) within @timeout_s
 * seconds, with @tls (may be NULL). Returns 0, or -errno with @err naming
 * the URL: -E2BIG past ret->max, -EIO transport error or a status not 200.
 */
int gantry_metrics_fetch(const char *url, long timeout_s, const struct gantry_metrics_tls *tls,
                         struct gantry_buf *ret, struct gantry_error *err);
