/*
 * The HTTP layer of the Kubernetes API client, on libcurl.
 *
 * kube_http_do() turns a struct kube_conn (server, CA, client certificate,
 * bearer token) into libcurl options and performs one request: a bounded
 * body for lists and bindings, or a stream handed chunk by chunk to a
 * callback for watches. Informer requests run on the informer's own multi
 * handle so that kube_waker_wake() interrupts them at once (a clean stop,
 * no waiting for a watch timeout); other requests (bindings, from any
 * thread) share one connection cache through a CURLSH.
 *
 * The bearer token is put only in the Authorization header, wiped after
 * each request, and never in an error or log line. An in-cluster token file
 * is re-read when its mtime changes: kubelet rotates projected tokens.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "clock.h"
#include "kube_internal.h"
#include "log.h"
#include "metrics.h"

#define KUBE_DEFAULT_MAX_BODY (16u * 1024 * 1024)
#ifndef GANTRY_VERSION
#define GANTRY_VERSION "unknown"
#endif
#define KUBE_USER_AGENT "gantry-scheduler/" GANTRY_VERSION

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static int curl_init_result;

static void curl_init_once(void)
{
        curl_init_result = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -EIO;
}

/* ------------------------------------------------------------------ waker */

int kube_waker_init(struct kube_waker *w)
{
        pthread_condattr_t attr;

        memset(w, 0, sizeof(*w));
        pthread_once(&curl_once, curl_init_once);
        if (curl_init_result < 0)
                return curl_init_result;
        w->multi = curl_multi_init();
        if (!w->multi)
                return -ENOMEM;
        pthread_mutex_init(&w->lock, NULL);
        pthread_condattr_init(&attr);
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        pthread_cond_init(&w->cond, &attr);
        pthread_condattr_destroy(&attr);
        return 0;
}

void kube_waker_destroy(struct kube_waker *w)
{
        if (!w->multi)
                return;
        curl_multi_cleanup(w->multi);
        w->multi = NULL;
        pthread_cond_destroy(&w->cond);
        pthread_mutex_destroy(&w->lock);
}

void kube_waker_wake(struct kube_waker *w)
{
        pthread_mutex_lock(&w->lock);
        w->stop = true;
        curl_multi_wakeup(w->multi); /* thread-safe by design */
        pthread_cond_broadcast(&w->cond);
        pthread_mutex_unlock(&w->lock);
}

bool kube_waker_stopped(struct kube_waker *w)
{
        bool stop;

        pthread_mutex_lock(&w->lock);
        stop = w->stop;
        pthread_mutex_unlock(&w->lock);
        return stop;
}

int kube_waker_sleep(struct kube_waker *w, long ms)
{
        struct timespec until;
        int r = 0;

        gantry_clock_deadline(&until, ms);
        pthread_mutex_lock(&w->lock);
        while (!w->stop && r != ETIMEDOUT)
                r = pthread_cond_timedwait(&w->cond, &w->lock, &until);
        r = w->stop ? -ECANCELED : 0;
        pthread_mutex_unlock(&w->lock);
        return r;
}

/* ------------------------------------------------------------ shared cache */

static void share_lock(CURL *e, curl_lock_data data, curl_lock_access access, void *userp)
{
        struct kube_http *h = userp;

        (void)e;
        (void)access;
        /* one lock per kind of data: curl may hold one while taking another */
        pthread_mutex_lock(&h->share_locks[(unsigned)data % CURL_LOCK_DATA_LAST]);
}

static void share_unlock(CURL *e, curl_lock_data data, void *userp)
{
        struct kube_http *h = userp;

        (void)e;
        pthread_mutex_unlock(&h->share_locks[(unsigned)data % CURL_LOCK_DATA_LAST]);
}

/* ------------------------------------------------------------------- token */

static char *read_token_file(const char *path)
{
        struct kube_blob b = { 0 };
        size_t n;

        if (kube_read_file(path, &b) < 0)
                return NULL;
        n = b.len;
        while (n > 0 && (b.data[n - 1] == '\n' || b.data[n - 1] == '\r' || b.data[n - 1] == ' '))
                b.data[--n] = '\0';
        if (n == 0 || memchr(b.data, '\n', n) || memchr(b.data, '\r', n)) {
                kube_blob_clear(&b);
                return NULL;
        }
        return (char *)b.data; /* takes the buffer */
}

static void wipe_free(char *s)
{
        if (!s)
                return;
        explicit_bzero(s, strlen(s));
        free(s);
}

/* A malloc'd "Authorization: Bearer ..." header, or NULL when no token. */
static char *auth_header(struct kube_http *h)
{
        char *hdr = NULL;
        struct stat st;

        pthread_mutex_lock(&h->token_lock);
        if (h->conn->token_file && stat(h->conn->token_file, &st) == 0 &&
            (st.st_mtim.tv_sec != h->token_mtime.tv_sec || st.st_mtim.tv_nsec != h->token_mtime.tv_nsec)) {
                char *t = read_token_file(h->conn->token_file);

                if (t) {
                        wipe_free(h->token);
                        h->token = t;
                        h->token_mtime = st.st_mtim;
                        log_info("kube.token.loaded", "file=%s", h->conn->token_file);
                } else {
                        log_warn("kube.token.unreadable", "file=%s keeping=%s", h->conn->token_file,
                                 h->token ? "previous" : "none");
                }
        }
        if (h->token && asprintf(&hdr, "Authorization: Bearer %s", h->token) < 0)
                hdr = NULL;
        pthread_mutex_unlock(&h->token_lock);
        return hdr;
}

/* -------------------------------------------------------------- init/free */

int kube_http_init(struct kube_http *h, struct kube_conn *conn,
                   const struct gantry_kube_client_options *opts, struct gantry_error *err)
{
        memset(h, 0, sizeof(*h));
        pthread_once(&curl_once, curl_init_once);
        if (curl_init_result < 0)
                return gantry_error_set(err, EIO, "libcurl: global init failed");
        h->conn = conn;
        h->metrics = opts ? opts->metrics : NULL;
        h->connect_timeout = opts && opts->connect_timeout_seconds > 0 ? opts->connect_timeout_seconds : 10;
        h->request_timeout = opts && opts->request_timeout_seconds > 0 ? opts->request_timeout_seconds : 60;
        pthread_mutex_init(&h->token_lock, NULL);
        pthread_mutex_init(&h->idle_lock, NULL);
        for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
                pthread_mutex_init(&h->share_locks[i], NULL);
        if (conn->token) {
                h->token = strdup(conn->token);
                if (!h->token)
                        goto oom;
        }
        h->share = curl_share_init();
        if (!h->share)
                goto oom;
        curl_share_setopt(h->share, CURLSHOPT_LOCKFUNC, share_lock);
        curl_share_setopt(h->share, CURLSHOPT_UNLOCKFUNC, share_unlock);
        curl_share_setopt(h->share, CURLSHOPT_USERDATA, h);
        curl_share_setopt(h->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT);
        curl_share_setopt(h->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
        curl_share_setopt(h->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
        if (conn->tls_server_name) {
                /* Verify the certificate against tls-server-name while
                 * connecting to the server's real address, as client-go
                 * does: the URL names the TLS name, CONNECT_TO the address. */
                CURLU *u = curl_url();
                char *host = NULL, *port = NULL, *url = NULL;

                if (!u || curl_url_set(u, CURLUPART_URL, conn->server, 0) ||
                    curl_url_get(u, CURLUPART_HOST, &host, 0) ||
                    curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) ||
                    curl_url_set(u, CURLUPART_HOST, conn->tls_server_name, 0) ||
                    curl_url_get(u, CURLUPART_URL, &url, 0) ||
                    asprintf(&h->connect_to, "%s:%s:%s:%s", conn->tls_server_name, port, host, port) < 0) {
                        h->connect_to = NULL;
                        curl_free(host);
                        curl_free(port);
                        curl_free(url);
                        curl_url_cleanup(u);
                        kube_http_destroy(h);
                        return gantry_error_set(err, EINVAL, "%s: tls-server-name: cannot be used with server %s",
                                                conn->origin, conn->server);
                }
                h->url_base = strdup(url);
                curl_free(host);
                curl_free(port);
                curl_free(url);
                curl_url_cleanup(u);
                if (!h->url_base)
                        goto oom;
                /* curl_url_get adds a '/' path */
                if (h->url_base[strlen(h->url_base) - 1] == '/')
                        h->url_base[strlen(h->url_base) - 1] = '\0';
        }
        return 0;
oom:
        kube_http_destroy(h);
        return gantry_error_set(err, ENOMEM, "out of memory");
}

void kube_http_destroy(struct kube_http *h)
{
        /* before the share: a handle that used it holds a reference */
        for (size_t i = 0; i < h->n_idle; i++)
                curl_easy_cleanup(h->idle[i]);
        h->n_idle = 0;
        pthread_mutex_destroy(&h->idle_lock);
        if (h->share)
                curl_share_cleanup(h->share);
        h->share = NULL;
        wipe_free(h->token);
        h->token = NULL;
        free(h->connect_to);
        free(h->url_base);
        h->connect_to = h->url_base = NULL;
        pthread_mutex_destroy(&h->token_lock);
        for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
                pthread_mutex_destroy(&h->share_locks[i]);
}

/* --------------------------------------------------------------- requests */

/* An easy handle for a request: a kept one (reset) or a new one. Informer
 * requests (@pooled false) run on their own threads for long: always new. */
static CURL *handle_get(struct kube_http *h, bool pooled)
{
        CURL *e = NULL;

        if (pooled) {
                pthread_mutex_lock(&h->idle_lock);
                if (h->n_idle)
                        e = h->idle[--h->n_idle];
                pthread_mutex_unlock(&h->idle_lock);
        }
        return e ? e : curl_easy_init();
}

/* Gives back a handle got from handle_get(): kept when there is room. */
static void handle_put(struct kube_http *h, CURL *e, bool pooled)
{
        if (!e)
                return;
        if (pooled) {
                curl_easy_reset(e); /* options and buffers of this request gone */
                pthread_mutex_lock(&h->idle_lock);
                if (h->n_idle < KUBE_IDLE_HANDLES) {
                        h->idle[h->n_idle++] = e;
                        e = NULL;
                }
                pthread_mutex_unlock(&h->idle_lock);
        }
        curl_easy_cleanup(e);
}

struct transfer {
        const struct kube_request *req;
        CURL *e;
        long status;    /* stream: known once the headers are in */
        struct gantry_buf body;
        bool overflow;  /* a buffered body went over its limit */
        int cb_error;   /* why a write callback aborted */
};

static size_t on_write(char *data, size_t size, size_t nmemb, void *userp)
{
        struct transfer *t = userp;
        size_t n = size * nmemb;
        int r;

        if (t->req->stream && t->status / 100 == 2)
                r = t->req->on_body(t->req->ctx, data, n);
        else
                r = gantry_buf_append(&t->body, data, n);
        if (r < 0) {
                t->cb_error = r;
                t->overflow = r == -EMSGSIZE && !(t->req->stream && t->status / 100 == 2);
                return 0;
        }
        return n;
}

/* The end of the headers: the stream learns its status before any body. */
static size_t on_header(char *data, size_t size, size_t nmemb, void *userp)
{
        struct transfer *t = userp;
        size_t n = size * nmemb;
        long status = 0;

        if (n <= 2 && (data[0] == '\r' || data[0] == '\n')) {
                curl_easy_getinfo(t->e, CURLINFO_RESPONSE_CODE, &status);
                if (status >= 200) { /* not a 100 Continue */
                        t->status = status;
                        if (t->req->on_open)
                                t->req->on_open(t->req->ctx, status);
                }
        }
        return n;
}

static int errno_from_curl(CURLcode c)
{
        switch (c) {
        case CURLE_OPERATION_TIMEDOUT:
                return -ETIMEDOUT;
        case CURLE_COULDNT_CONNECT:
                return -ECONNREFUSED;
        case CURLE_COULDNT_RESOLVE_HOST:
        case CURLE_COULDNT_RESOLVE_PROXY:
                return -EHOSTUNREACH;
        case CURLE_SSL_CONNECT_ERROR:
        case CURLE_PEER_FAILED_VERIFICATION:
        case CURLE_SSL_CERTPROBLEM:
        case CURLE_SSL_CACERT_BADFILE:
        case CURLE_SSL_CIPHER:
        case CURLE_SSL_ISSUER_ERROR:
                return -EPROTO;
        case CURLE_GOT_NOTHING:
        case CURLE_RECV_ERROR:
        case CURLE_SEND_ERROR:
        case CURLE_PARTIAL_FILE:
                return -ECONNRESET;
        case CURLE_OUT_OF_MEMORY:
                return -ENOMEM;
        default:
                return -EIO;
        }
}

static void count_request(struct kube_http *h, const struct kube_request *req, long status,
                          double seconds)
{
        char labels[160];

        if (!h->metrics)
                return;
        snprintf(labels, sizeof(labels), "verb=\"%s\",resource=\"%s\",code=\"%ld\"", req->verb,
                 req->resource, status);
        gantry_metrics_counter_add(h->metrics, "gantry_kube_requests_total",
                                   "Requests to the Kubernetes API server, by verb, resource and HTTP code (0: no answer)",
                                   labels, 1);
        if (req->stream)
                return;
        snprintf(labels, sizeof(labels), "verb=\"%s\",resource=\"%s\"", req->verb, req->resource);
        gantry_metrics_histogram_observe(h->metrics, "gantry_kube_request_seconds",
                                         "Latency of non-watch requests to the Kubernetes API server",
                                         labels, seconds);
}

/* Runs @e on the waker's multi handle so that kube_waker_wake() interrupts it. */
static CURLcode perform_interruptible(struct kube_waker *w, CURL *e, bool *ret_cancelled)
{
        CURLcode result = CURLE_OK;
        CURLMsg *msg;
        int running = 1, left;

        *ret_cancelled = false;
        if (curl_multi_add_handle(w->multi, e) != CURLM_OK)
                return CURLE_FAILED_INIT;
        for (;;) {
                if (curl_multi_perform(w->multi, &running) != CURLM_OK) {
                        result = CURLE_FAILED_INIT;
                        break;
                }
                if (!running)
                        break;
                if (kube_waker_stopped(w)) {
                        *ret_cancelled = true;
                        break;
                }
                curl_multi_poll(w->multi, NULL, 0, 1000, NULL);
        }
        while ((msg = curl_multi_info_read(w->multi, &left)))
                if (msg->msg == CURLMSG_DONE && msg->easy_handle == e)
                        result = msg->data.result;
        curl_multi_remove_handle(w->multi, e);
        return result;
}

void kube_http_cancel(struct kube_http *h)
{
        atomic_fetch_add(&h->cancel_gen, 1);
}

void kube_http_stop(struct kube_http *h)
{
        /* stopped before the bump: a request that saw it unset took its
         * generation before the bump, so the bump aborts it */
        atomic_store(&h->stopped, true);
        atomic_fetch_add(&h->cancel_gen, 1);
}

struct cancel_check {
        struct kube_http *h;
        unsigned int gen; /* cancel_gen when the request started */
};

/* curl's progress callback, at least once a second: non-zero aborts. */
static int on_progress(void *ctx, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
        struct cancel_check *cc = ctx;

        (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
        return atomic_load(&cc->h->cancel_gen) != cc->gen || atomic_load(&cc->h->stopped);
}

int kube_http_do(struct kube_http *h, const struct kube_request *req,
                 struct kube_response *ret_resp, struct gantry_error *err)
{
        struct transfer t = { .req = req, .body.max = req->max_body ? req->max_body : KUBE_DEFAULT_MAX_BODY };
        struct curl_blob ca, cert, key;
        struct curl_slist *headers = NULL, *connect_to = NULL;
        uint64_t t0, t1;
        char errbuf[CURL_ERROR_SIZE] = "", *url = NULL, *auth;
        bool cancelled = false;
        struct cancel_check cc = { h, atomic_load(&h->cancel_gen) };
        CURLcode c;
        long status = 0;
        CURL *e;
        int r;

        if (!req->waker && !req->outlives_cancel && atomic_load(&h->stopped))
                return gantry_error_set(err, ECANCELED, "%s %s: stopped", req->method, req->resource);
        e = handle_get(h, !req->waker);
        if (!e || asprintf(&url, "%s%s", h->url_base ? h->url_base : h->conn->server, req->path) < 0) {
                handle_put(h, e, !req->waker);
                return gantry_error_set(err, ENOMEM, "out of memory");
        }
        curl_easy_setopt(e, CURLOPT_URL, url);
        curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(e, CURLOPT_ERRORBUFFER, errbuf);
        curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT, h->connect_timeout);
        if (!req->stream || req->timeout > 0)
                curl_easy_setopt(e, CURLOPT_TIMEOUT, req->timeout > 0 ? req->timeout : h->request_timeout);
        curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
        curl_easy_setopt(e, CURLOPT_USERAGENT, KUBE_USER_AGENT);
        curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
        curl_easy_setopt(e, CURLOPT_WRITEDATA, &t);
        t.e = e;
        if (req->stream) {
                curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
                curl_easy_setopt(e, CURLOPT_HEADERDATA, &t);
        }
        if (!req->stream)
                curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, ""); /* gzip'd lists */
        if (!req->waker) {
                curl_easy_setopt(e, CURLOPT_SHARE, h->share);
                curl_easy_setopt(e, CURLOPT_MAXCONNECTS, KUBE_MAX_CONNECTS);
        }
        if (h->conn->proxy_url) /* else curl follows https_proxy / no_proxy, as client-go does */
                curl_easy_setopt(e, CURLOPT_PROXY, h->conn->proxy_url);
        if (h->connect_to) {
                connect_to = curl_slist_append(NULL, h->connect_to);
                curl_easy_setopt(e, CURLOPT_CONNECT_TO, connect_to);
        }

        if (h->conn->insecure) {
                curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
                curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
        } else if (h->conn->ca.len) {
                ca = (struct curl_blob){ h->conn->ca.data, h->conn->ca.len, CURL_BLOB_NOCOPY };
                curl_easy_setopt(e, CURLOPT_CAINFO_BLOB, &ca);
        }
        if (h->conn->cert.len) {
                cert = (struct curl_blob){ h->conn->cert.data, h->conn->cert.len, CURL_BLOB_NOCOPY };
                key = (struct curl_blob){ h->conn->key.data, h->conn->key.len, CURL_BLOB_NOCOPY };
                curl_easy_setopt(e, CURLOPT_SSLCERT_BLOB, &cert);
                curl_easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
                curl_easy_setopt(e, CURLOPT_SSLKEY_BLOB, &key);
                curl_easy_setopt(e, CURLOPT_SSLKEYTYPE, "PEM");
        }
        if (h->conn->username) {
                curl_easy_setopt(e, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
                curl_easy_setopt(e, CURLOPT_USERNAME, h->conn->username);
                curl_easy_setopt(e, CURLOPT_PASSWORD, h->conn->password);
        }

        headers = curl_slist_append(headers, "Accept: application/json");
        auth = auth_header(h);
        if (auth)
                headers = curl_slist_append(headers, auth);
        if (req->body) {
                char ctype[96];

                snprintf(ctype, sizeof(ctype), "Content-Type: %s",
                         req->content_type ? req->content_type : "application/json");
                headers = curl_slist_append(headers, ctype);
                curl_easy_setopt(e, CURLOPT_POSTFIELDS, req->body);
        }
        if (strcmp(req->method, "GET") != 0 && strcmp(req->method, "POST") != 0)
                curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, req->method);
        curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers);

        t0 = gantry_now_ns();
        if (req->waker) {
                c = perform_interruptible(req->waker, e, &cancelled);
        } else {
                if (!req->outlives_cancel) {
                        curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, on_progress);
                        curl_easy_setopt(e, CURLOPT_XFERINFODATA, &cc);
                        curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
                }
                c = curl_easy_perform(e);
                cancelled = c == CURLE_ABORTED_BY_CALLBACK;
        }
        t1 = gantry_now_ns();
        curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);

        /* the token is gone from memory before anything else happens */
        for (struct curl_slist *s = headers; s; s = s->next)
                explicit_bzero(s->data, strlen(s->data));
        curl_slist_free_all(headers);
        wipe_free(auth);
        curl_slist_free_all(connect_to);
        handle_put(h, e, !req->waker);
        free(url);
        count_request(h, req, c == CURLE_OK ? status : 0,
                      (double)(t1 - t0) / 1e9);

        if (cancelled) {
                free(t.body.data);
                return gantry_error_set(err, ECANCELED, "%s %s: stopped", req->method, req->resource);
        }
        if (c != CURLE_OK) {
                free(t.body.data);
                if (t.overflow)
                        return gantry_error_set(err, EMSGSIZE, "%s %s: answer larger than %zu bytes",
                                                req->verb, req->resource, t.body.max);
                if (t.cb_error < 0 && c == CURLE_WRITE_ERROR)
                        return t.cb_error; /* the stream callback filled err already */
                r = errno_from_curl(c);
                return gantry_error_set(err, r, "%s %s: %s", req->verb, req->resource,
                                        errbuf[0] ? errbuf : curl_easy_strerror(c));
        }
        ret_resp->status = status;
        ret_resp->body = t.body.data;
        ret_resp->len = t.body.len;
        if (!ret_resp->body && (!req->stream || status / 100 != 2)) {
                ret_resp->body = strdup("");
                if (!ret_resp->body)
                        return gantry_error_set(err, ENOMEM, "out of memory");
        }
        return 0;
}

void kube_response_clear(struct kube_response *resp)
{
        free(resp->body);
        resp->body = NULL;
        resp->len = 0;
        resp->status = 0;
}

int kube_http_status_error(const struct kube_response *resp, const char *what,
                           struct gantry_error *err)
{
        const char *msg = NULL;
        json_t *status = NULL;
        int e;

        switch (resp->status) {
        case 400:
        case 422:
                e = EINVAL;
                break;
        case 401:
        case 403:
                e = EACCES;
                break;
        case 404:
                e = ENOENT;
                break;
        case 409:
                e = EEXIST;
                break;
        case 410:
                e = ESTALE;
                break;
        case 429:
        case 503:
                e = EAGAIN;
                break;
        default:
                e = EIO;
        }
        if (resp->body && resp->len)
                status = json_loadb(resp->body, resp->len, 0, NULL);
        if (json_is_object(status))
                msg = json_string_value(json_object_get(status, "message"));
        gantry_error_set(err, e, "%s: HTTP %ld%s%.300s", what, resp->status, msg ? ": " : "",
                         msg ? msg : "");
        json_decref(status);
        return -e;
}
