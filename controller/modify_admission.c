/*
 * The controller's check with gantry-scheduler before a live bandwidth
 * change is recorded: one POST .../modify with libcurl. See
 * modify_admission.h.
 */
#include <curl/curl.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "bandwidth_demand.h"
#include "byte_buf.h"
#include "log.h"
#include "modify_admission.h"

#define REPLY_MAX (64 * 1024)

static struct {
        char *url; /* the modify endpoint; NULL: no check */
        char *client_cert, *client_key, *ca_file;
        long timeout_ms;
} conf;

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static pthread_once_t skipped_once = PTHREAD_ONCE_INIT;
static int curl_ready;

static void curl_init_once(void)
{
        curl_ready = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
}

static void log_skipped_once(void)
{
        log_info("controller.modify_unchecked",
                 "reason=\"no --scheduler-url: bandwidth changes are recorded without asking "
                 "gantry-scheduler whether the pods' links can carry them\"");
}

static char *dup_or_null(const char *s)
{
        return s && *s ? strdup(s) : NULL;
}

int gantry_modify_admission_configure(const struct gantry_modify_admission_options *o,
                                      struct gantry_error *err)
{
        size_t len;

        if (!o->url || !*o->url)
                return 0;
        if (strncmp(o->url, "http://", 7) != 0 && strncmp(o->url, "https://", 8) != 0)
                return gantry_error_set(err, EINVAL, "--scheduler-url: must start with http:// or https://");
        len = strlen(o->url);
        while (len > 0 && o->url[len - 1] == '/')
                len--;
        if (asprintf(&conf.url, "%.*s/modify", (int)len, o->url) < 0) {
                conf.url = NULL;
                return gantry_error_set(err, ENOMEM, "out of memory");
        }
        conf.client_cert = dup_or_null(o->client_cert);
        conf.client_key = dup_or_null(o->client_key);
        conf.ca_file = dup_or_null(o->ca_file);
        conf.timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 10000;
        return 0;
}

static const char *const rate_keys[] = { GANTRY_BW_SC_READ_PER_GPU, GANTRY_BW_SC_WRITE_PER_GPU,
                                         GANTRY_BW_SC_DEFAULT };

static const char *value_of(const char *key, const char *const *keys, const char *const *values,
                            size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (!strcmp(keys[i], key))
                        return values[i];
        return NULL;
}

bool gantry_modify_admission_raises(const char *old_json, const char *const *keys,
                                    const char *const *values, size_t n)
{
        json_t *old = old_json && *old_json ? json_loads(old_json, 0, NULL) : NULL;
        bool raises = false;

        if (!json_is_object(old)) {
                json_decref(old);
                return true; /* nothing recorded to compare with */
        }
        for (size_t k = 0; k < sizeof(rate_keys) / sizeof(rate_keys[0]) && !raises; k++) {
                const char *was = json_string_value(json_object_get(old, rate_keys[k]));
                const char *now = value_of(rate_keys[k], keys, values, n);
                double a, b;

                if (!was && !now)
                        continue;
                /* a key set or dropped: the StorageClass's value may be more */
                if (!was || !now || gantry_bw_parse_gbps(rate_keys[k], was, &a, NULL) < 0 ||
                    gantry_bw_parse_gbps(rate_keys[k], now, &b, NULL) < 0 || b > a)
                        raises = true;
        }
        json_decref(old);
        return raises;
}

/* The request body: {"volumeHandle": ..., "parameters": {...}}. */
static char *request_body(const char *volume_id, const char *const *keys,
                          const char *const *values, size_t n)
{
        json_t *params = json_object(), *o;
        char *text = NULL;

        for (size_t i = 0; params && i < n; i++)
                json_object_set_new(params, keys[i], json_string(values[i]));
        o = params ? json_pack("{s:s,s:o}", "volumeHandle", volume_id, "parameters", params) : NULL;
        if (o)
                text = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
        json_decref(o);
        return text;
}

int gantry_modify_admission_check(const char *volume_id, const char *const *keys,
                                  const char *const *values, size_t n, struct gantry_error *err)
{
        struct gantry_buf reply = { .max = REPLY_MAX };
        struct curl_slist *headers = NULL;
        char cerr[CURL_ERROR_SIZE] = "";
        const char *why;
        json_t *answer = NULL;
        char *body;
        long status = 0;
        CURLcode rc;
        CURL *c;
        int r;

        if (!conf.url) {
                pthread_once(&skipped_once, log_skipped_once);
                return 0;
        }
        pthread_once(&curl_once, curl_init_once);
        if (!curl_ready)
                return gantry_error_set(err, EAGAIN, "gantry-scheduler: libcurl did not initialise");
        if (!(body = request_body(volume_id, keys, values, n)))
                return gantry_error_set(err, ENOMEM, "out of memory");
        if (!(c = curl_easy_init())) {
                free(body);
                return gantry_error_set(err, ENOMEM, "out of memory");
        }
        headers = curl_slist_append(headers, "Content-Type: application/json");
        curl_easy_setopt(c, CURLOPT_URL, conf.url);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, gantry_buf_curl_write);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, &reply);
        curl_easy_setopt(c, CURLOPT_ERRORBUFFER, cerr);
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, conf.timeout_ms);
        curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, conf.timeout_ms);
        curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
        if (conf.ca_file)
                curl_easy_setopt(c, CURLOPT_CAINFO, conf.ca_file);
        if (conf.client_cert)
                curl_easy_setopt(c, CURLOPT_SSLCERT, conf.client_cert);
        if (conf.client_key)
                curl_easy_setopt(c, CURLOPT_SSLKEY, conf.client_key);
        rc = curl_easy_perform(c);
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
        curl_easy_cleanup(c);
        curl_slist_free_all(headers);
        free(body);
        if (rc != CURLE_OK) {
                r = gantry_error_set(err, EAGAIN, "gantry-scheduler unreachable, the change is not "
                                     "recorded: %s", *cerr ? cerr : curl_easy_strerror(rc));
                goto out;
        }
        answer = reply.data ? json_loads(reply.data, 0, NULL) : NULL;
        why = json_string_value(json_object_get(answer, "Error"));
        if (status == 200 && json_is_true(json_object_get(answer, "Admitted")))
                r = 0;
        else if (status == 409 && why)
                r = gantry_error_set(err, ENOSPC, "gantry-scheduler refused the bandwidth change: %s", why);
        else if (status == 400 && why)
                r = gantry_error_set(err, EINVAL, "mutable_parameters: %s", why);
        else
                r = gantry_error_set(err, EAGAIN, "gantry-scheduler answered HTTP %ld%s%s", status,
                                     why ? ": " : "", why ? why : "");
out:
        json_decref(answer);
        free(reply.data);
        return r;
}

int gantry_modify_admission_ask(const Csi__V1__ControllerModifyVolumeRequest *req,
                                const char *recorded, struct gantry_error *err)
{
        size_t n = req->n_mutable_parameters;
        const char **keys = calloc(n + 1, sizeof(*keys)), **values = calloc(n + 1, sizeof(*values));
        int r = 0;

        if (!keys || !values) {
                r = gantry_error_set(err, ENOMEM, "out of memory");
                goto out;
        }
        for (size_t i = 0; i < n; i++) {
                keys[i] = req->mutable_parameters[i]->key;
                values[i] = req->mutable_parameters[i]->value;
        }
        if (gantry_modify_admission_raises(recorded, keys, values, n))
                r = gantry_modify_admission_check(req->volume_id, keys, values, n, err);
out:
        free(keys);
        free(values);
        return r;
}
