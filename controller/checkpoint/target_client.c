/*
 * JSON-RPC over HTTP(S) to an NVMe-oF target; see target_client.h.
 */
#include "target_client.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attr_file.h"
#include "byte_buf.h"
#include "log.h"
#include "status.h"

#define MAX_RESPONSE (4 * 1024 * 1024)
#define MAX_TOKEN 4096

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static atomic_bool stopping; /* gantry_target_calls_stop() */

void gantry_target_calls_stop(bool stop)
{
        atomic_store(&stopping, stop);
}

/* curl's progress callback, at least once a second: non-zero aborts the call. */
static int on_progress(void *ctx, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
        (void)ctx, (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
        return atomic_load(&stopping);
}

static void curl_init(void)
{
        curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* "Authorization: Bearer <token>" from @path, in @buf. */
static int auth_header(const char *path, char *buf, size_t size)
{
        char token[MAX_TOKEN];
        ssize_t n = gantry_attr_read(path, token, sizeof(token));

        if (n > 0)
                snprintf(buf, size, "Authorization: Bearer %s", token);
        explicit_bzero(token, sizeof(token));
        return n < 0 ? (int)n : n == 0 ? -EINVAL : 0;
}

static int rpc_error(const struct gantry_target_config *t, const char *method, json_t *e,
                     struct gantry_error *err)
{
        json_int_t code = json_integer_value(json_object_get(e, "code"));
        const char *msg = json_string_value(json_object_get(e, "message"));
        int r;

        if (code == -32602)
                r = EINVAL;
        else if (code == -32601)
                r = EOPNOTSUPP;
        else if (code < 0 && code > -4096)
                r = (int)-code;
        else
                r = EIO;
        return gantry_error_set(err, r, "target %s: %s: %s", t->id, method, msg ? msg : "error");
}

int gantry_target_call(const struct gantry_target_config *t, const char *method, json_t *params,
                       int64_t timeout_ms, json_t **ret_result, struct gantry_error *err)
{
        char auth[MAX_TOKEN + 64], errbuf[CURL_ERROR_SIZE] = "";
        struct curl_slist *headers = NULL;
        struct gantry_buf body = { .max = MAX_RESPONSE };
        json_t *req, *resp = NULL, *result;
        static int next_id;
        char *text = NULL;
        long status = 0;
        CURLcode cc;
        CURL *curl;
        int r = 0;

        if (atomic_load(&stopping)) {
                json_decref(params);
                return gantry_error_set(err, ECANCELED, "target %s: %s: stopped", t->id, method);
        }
        pthread_once(&curl_once, curl_init);
        req = json_pack("{s:s, s:i, s:s, s:o}", "jsonrpc", "2.0", "id",
                        __atomic_add_fetch(&next_id, 1, __ATOMIC_RELAXED), "method", method, "params",
                        params ? params : json_object());
        text = req ? json_dumps(req, JSON_COMPACT) : NULL;
        json_decref(req);
        if (!text)
                return gantry_error_set(err, ENOMEM, "out of memory");
        curl = curl_easy_init();
        if (!curl) {
                free(text);
                return gantry_error_set(err, ENOMEM, "out of memory");
        }
        headers = curl_slist_append(headers, "Content-Type: application/json");
        if (t->token_file) {
                if ((r = auth_header(t->token_file, auth, sizeof(auth))) < 0) {
                        /* the operator's file: never NOT_FOUND, which would say the volume is gone */
                        r = gantry_error_set(err, GANTRY_ENOCONFIG, "tokenFile: target %s: %s: %s", t->id,
                                             t->token_file, strerror(-r));
                        goto out;
                }
                headers = curl_slist_append(headers, auth);
                explicit_bzero(auth, sizeof(auth));
        }
        curl_easy_setopt(curl, CURLOPT_URL, t->url);
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, text);
        curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
        curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, gantry_buf_curl_write);
        curl_easy_setopt(curl, CURLOPT_WRITEDATA, &body);
        curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
        curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, (long)(timeout_ms > 0 ? timeout_ms : 1));
        curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, (long)(timeout_ms > 0 ? timeout_ms : 1));
        curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
        if (t->ca_file)
                curl_easy_setopt(curl, CURLOPT_CAINFO, t->ca_file);
        curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
        curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
        cc = curl_easy_perform(curl);
        if (cc == CURLE_ABORTED_BY_CALLBACK) {
                r = gantry_error_set(err, ECANCELED, "target %s: %s: stopped", t->id, method);
                goto out;
        }
        if (cc != CURLE_OK) {
                r = gantry_error_set(err, cc == CURLE_OPERATION_TIMEDOUT ? ETIMEDOUT : EHOSTUNREACH,
                                     "target %s unreachable at %s: %s: %s", t->id, t->url, method,
                                     errbuf[0] ? errbuf : curl_easy_strerror(cc));
                goto out;
        }
        curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
        if (status == 401 || status == 403) {
                /* the controller's token, from the driver config: not the CSI caller's permission */
                r = gantry_error_set(err, GANTRY_ENOCONFIG, "tokenFile: target %s refused the token: %s: HTTP %ld",
                                     t->id, method, status);
                goto out;
        }
        resp = body.data ? json_loads(body.data, 0, NULL) : NULL;
        if (status != 200 || !json_is_object(resp)) {
                r = gantry_error_set(err, EIO, "target %s: %s: HTTP %ld, %s", t->id, method, status,
                                     resp ? "not a JSON-RPC response" : "no JSON body");
                goto out;
        }
        if (json_object_get(resp, "error")) {
                r = rpc_error(t, method, json_object_get(resp, "error"), err);
                goto out;
        }
        result = json_object_get(resp, "result");
        if (!result) {
                r = gantry_error_set(err, EIO, "target %s: %s: response without result", t->id, method);
                goto out;
        }
        *ret_result = json_incref(result);
out:
        log_debug("controller.target_call", "target=%s method=%s result=%d", t->id, method, r);
        json_decref(resp);
        free(body.data);
        curl_slist_free_all(headers);
        curl_easy_cleanup(curl);
        free(text);
        return r;
}
