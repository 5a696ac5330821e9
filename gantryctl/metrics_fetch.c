/*
 * A GET of a /metrics page with libcurl (see metrics_fetch.h).
 */
#include "metrics_fetch.h"

#include <curl/curl.h>
#include <errno.h>

int gantry_metrics_fetch(const char *url, long timeout_s, const struct gantry_metrics_tls *tls,
                         struct gantry_buf *ret, struct gantry_error *err)
{
        CURL *c = curl_easy_init();
        char cerr[CURL_ERROR_SIZE] = "";
        long status = 0;
        CURLcode rc;

        if (!c)
                return gantry_error_set(err, ENOMEM, "%s: cannot make a curl handle", url);
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, gantry_buf_curl_write);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, ret);
        curl_easy_setopt(c, CURLOPT_TIMEOUT, timeout_s);
        curl_easy_setopt(c, CURLOPT_ERRORBUFFER, cerr);
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
        if (tls && tls->cacert)
                curl_easy_setopt(c, CURLOPT_CAINFO, tls->cacert);
        if (tls && tls->cert)
                curl_easy_setopt(c, CURLOPT_SSLCERT, tls->cert);
        if (tls && tls->key)
                curl_easy_setopt(c, CURLOPT_SSLKEY, tls->key);
        rc = curl_easy_perform(c);
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
        curl_easy_cleanup(c);
        if (ret->too_large)
                return gantry_error_set(err, E2BIG, "%s: more than %zu bytes", url, ret->max);
        if (rc != CURLE_OK)
                return gantry_error_set(err, EIO, "%s: %s", url, *cerr ? cerr : curl_easy_strerror(rc));
        if (status != 200)
                return gantry_error_set(err, EIO, "%s: HTTP %ld", url, status);
        return 0;
}
