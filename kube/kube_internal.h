/*
 * Private declarations of the Kubernetes API client (kube_*.c): the resolved
 * connection settings, the HTTP layer on libcurl, and the watch-stream
 * decoder. Not for use outside kube/kube_*.c and its tests.
 */
#pragma once

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include <curl/curl.h>
#include <jansson.h>

#include "byte_buf.h"
#include "error.h"
#include "kube_client.h"

#define KUBE_CONFIG_MAX_BYTES (1024 * 1024) /* kubeconfig, token, CA, key files */
#define KUBE_DEFAULT_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

/* ------------------------------------------------------------ kube_config.c */

/* Bytes read from a file or decoded from *-data; owned, NUL-terminated. */
struct kube_blob {
        unsigned char *data;
        size_t len;
};

/* Where to connect and how to authenticate; read-only once resolved. */
struct kube_conn {
        char *origin;          /* "kubeconfig PATH context NAME" or "in-cluster" */
        char *server;          /* base URL without a trailing '/' */
        char *namespace;       /* never NULL ("default" when none given) */
        char *tls_server_name; /* may be NULL */
        char *proxy_url;       /* kubeconfig proxy-url; NULL: curl's *_proxy env */
        bool insecure;         /* insecure-skip-tls-verify */
        struct kube_blob ca;   /* PEM; len 0: the system's CAs */
        struct kube_blob cert; /* client certificate PEM; len 0: none */
        struct kube_blob key;  /* client key PEM; len 0: none */
        char *token;           /* static bearer token; may be NULL */
        char *token_file;      /* re-read when it changes; may be NULL */
        char *username;        /* basic auth; may be NULL */
        char *password;
};

/*
 * Parses kubeconfig YAML @yaml (@len bytes) and resolves @context (NULL:
 * current-context). Relative file paths resolve against @base_dir (NULL: the
 * working directory). @origin names the file in errors. Files named by the
 * config are read now. Returns 0 and *ret_conn, or -errno with @err naming
 * the field.
 */
int kube_conn_from_kubeconfig(const char *yaml, size_t len, const char *origin,
                              const char *base_dir, const char *context,
                              struct kube_conn **ret_conn, struct gantry_error *err);

/* Loads the kubeconfig file @path (see kube_conn_from_kubeconfig). */
int kube_conn_from_kubeconfig_file(const char *path, const char *context,
                                   struct kube_conn **ret_conn, struct gantry_error *err);

/* In-cluster: KUBERNETES_SERVICE_HOST/PORT and @sa_dir (NULL: the default). */
int kube_conn_in_cluster(const char *sa_dir, struct kube_conn **ret_conn,
                         struct gantry_error *err);

void kube_conn_free(struct kube_conn *conn);

/* Reads a whole regular file of at most KUBE_CONFIG_MAX_BYTES into *ret_blob
 * (gantry_file_read(): -EINVAL for a non-regular file, -EFBIG when larger). */
int kube_read_file(const char *path, struct kube_blob *ret_blob);
void kube_blob_clear(struct kube_blob *blob); /* wipes and frees */

/* Decodes standard base64 (whitespace ignored, padding optional). */
int kube_base64_decode(const char *in, size_t len, struct kube_blob *ret_blob);

/* -------------------------------------------------------------- kube_http.c */

/* Per-client HTTP state: the connection and the current bearer token. */
#define KUBE_IDLE_HANDLES 8 /* easy handles kept for reuse: about the extender's threads */
/* Connections the shared cache keeps open: twice the binds in flight at once
 * by default (--bind-workers 32; more workers than this reopen some). curl's
 * default, 5, closes the connection of every request finishing while more
 * are open, and the next one pays a new TLS handshake on both sides (about
 * 1 ms of CPU each). */
#define KUBE_MAX_CONNECTS 64L

struct kube_http {
        struct kube_conn *conn; /* owned */
        struct gantry_metrics *metrics;
        long connect_timeout;
        long request_timeout;
        pthread_mutex_t token_lock;
        char *token;                 /* current token (file or static) */
        struct timespec token_mtime; /* of token_file when last read */
        CURLSH *share;               /* connection cache of non-informer requests */
        pthread_mutex_t share_locks[CURL_LOCK_DATA_LAST];
        char *url_base;   /* with tls-server-name: the URL naming it, else NULL */
        char *connect_to; /* with tls-server-name: "name:port:host:port" */
        /* easy handles of finished non-informer requests (bindings, lists),
         * reset and kept for the next: a new handle per request also made a
         * new internal multi handle (its hash tables, a wakeup socketpair) */
        pthread_mutex_t idle_lock;
        CURL *idle[KUBE_IDLE_HANDLES];
        size_t n_idle;
        /* bumped by kube_http_cancel(): a request started under another
         * value is aborted (informers have their waker instead) */
        atomic_uint cancel_gen;
        /* set by kube_http_stop(): every later request fails at once too */
        atomic_bool stopped;
};

int kube_http_init(struct kube_http *h, struct kube_conn *conn,
                   const struct gantry_kube_client_options *opts, struct gantry_error *err);
void kube_http_destroy(struct kube_http *h);
/* Aborts the requests without a waker (nor outlives_cancel) in flight now (-ECANCELED, within
 * about a second: curl's progress callback); later ones run. Any thread. */
void kube_http_cancel(struct kube_http *h);
/* As kube_http_cancel(), and every request started later (without a waker,
 * nor outlives_cancel) fails at once with -ECANCELED. Any thread. */
void kube_http_stop(struct kube_http *h);

/*
 * The requests of a clean stop (a Lease given up): they outlive
 * gantry_kube_client_cancel() and _stop(), with a timeout of their own
 * (@timeout_s, 0: 1 s) so that a stop against a dead API server stays short.
 * As gantry_kube_get() and gantry_kube_write("PUT") otherwise.
 */
int kube_get_final(struct gantry_kube_client *client, const char *path, const char *resource,
                   long timeout_s, json_t **ret_obj, struct gantry_error *err);
int kube_put_final(struct gantry_kube_client *client, const char *path, const char *resource,
                   const json_t *body, long timeout_s, struct gantry_error *err);

/* Called with each received chunk; return 0 to go on, -errno to abort. */
typedef int (*kube_body_fn)(void *ctx, const char *data, size_t len);

struct kube_request {
        const char *method;   /* "GET", "POST" */
        const char *path;     /* "/api/v1/nodes?limit=500" (already escaped) */
        const char *body;     /* POST/PATCH body (JSON) or NULL */
        const char *content_type; /* of the body; NULL: "application/json" */
        const char *verb;     /* for metrics: "list", "watch", "create" */
        const char *resource; /* for metrics: "nodes", "pods/binding" */
        bool stream;          /* watch: no overall timeout, body to on_body */
        long timeout;         /* seconds; 0: the client's request timeout */
        size_t max_body;      /* non-stream bodies: limit (0: 16 MiB) */
        kube_body_fn on_body; /* stream only, 2xx answers only */
        /* stream only: called once the status line and headers are in */
        void (*on_open)(void *ctx, long status);
        void *ctx;
        /* When not NULL, polled between transfers and interrupted by
         * kube_waker_wake(): the stop switch of an informer. */
        struct kube_waker *waker;
        /* Not aborted by kube_http_cancel(): a bind, whose answer a clean
         * stop still hands back (its own timeout is short). */
        bool outlives_cancel;
};

struct kube_response {
        long status;  /* HTTP status, 0 when none arrived */
        char *body;   /* NUL-terminated body; for a stream, only a non-2xx one */
        size_t len;
};

/*
 * Performs @req. Returns 0 when an HTTP answer arrived (any status, in
 * ret_resp->status; the caller owns ret_resp->body) or -errno for a
 * transport failure (-ECANCELED when woken to stop; -EMSGSIZE over the
 * limit; the on_body error), with @err describing it.
 */
int kube_http_do(struct kube_http *h, const struct kube_request *req,
                 struct kube_response *ret_resp, struct gantry_error *err);
void kube_response_clear(struct kube_response *resp);

/*
 * Turns a non-2xx answer into -errno and a message in @err: "@what: HTTP
 * 409: <the Status message>" (see gantry_kube_bind_pod for the mapping).
 */
int kube_http_status_error(const struct kube_response *resp, const char *what,
                           struct gantry_error *err);

/* An interruptible wait, shared by an informer's transfers and backoff sleeps. */
struct kube_waker {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        bool stop;
        CURLM *multi; /* the transfer in flight, woken by curl_multi_wakeup */
};

int kube_waker_init(struct kube_waker *w);
void kube_waker_destroy(struct kube_waker *w);
void kube_waker_wake(struct kube_waker *w); /* sets stop, interrupts */
bool kube_waker_stopped(struct kube_waker *w);
/* Sleeps @ms or until woken. Returns -ECANCELED when stopped, else 0. */
int kube_waker_sleep(struct kube_waker *w, long ms);

/* gantry_kube_served(), its discovery request interrupted by @waker when
 * not NULL (the optional kinds' re-check thread, stopped at once). */
int kube_served(struct gantry_kube_client *client, enum gantry_kube_kind kind,
                struct kube_waker *waker, struct gantry_error *err);

/* --------------------------------------------------------- kube_list_ahead.c */

/*
 * The continue token of a list page read off its head (the metadata the API
 * server writes before the items), before the page is decoded. Returns 1
 * with *ret_continue (NULL on the last page; the caller frees it), or 0
 * when the head does not tell.
 */
int kube_list_peek_continue(const char *body, size_t len, char **ret_continue);

/* A list's next page, fetched on a thread of its own while the caller
 * decodes the one before. */
struct kube_list_ahead {
        struct kube_http *http;
        struct kube_waker waker; /* its own: a multi handle serves one thread */
        struct kube_request req;
        char *path;              /* req's, owned */
        struct kube_response resp;
        struct gantry_error err;
        int r;
        pthread_t thread;
        bool running;
};

int kube_list_ahead_init(struct kube_list_ahead *a, struct kube_http *http);
void kube_list_ahead_destroy(struct kube_list_ahead *a);
/* Stops for good: the fetch in flight ends with -ECANCELED, later ones at once. */
void kube_list_ahead_wake(struct kube_list_ahead *a);
/* Starts @req (copied, path too) on the thread; 0, or -errno when it cannot. */
int kube_list_ahead_start(struct kube_list_ahead *a, const struct kube_request *req);
/* Waits for the started fetch: kube_http_do()'s result, its answer in @ret_resp. */
int kube_list_ahead_finish(struct kube_list_ahead *a, struct kube_response *ret_resp,
                           struct gantry_error *err);

/* ------------------------------------------------------- kube_watch_decode.c */

/*
 * Splits a watch stream into lines (one JSON event each) as bytes arrive,
 * keeping at most @max bytes of an unfinished line.
 */
struct kube_lines {
        struct gantry_buf b;
};

void kube_lines_init(struct kube_lines *l, size_t max);
void kube_lines_clear(struct kube_lines *l);
/* Feeds @len bytes; calls @fn(ctx, line, n) for each complete non-empty line
 * (without the '\n', NUL-terminated). Returns 0, -EMSGSIZE when a line
 * exceeds the limit, or the first non-zero @fn result. */
int kube_lines_feed(struct kube_lines *l, const char *data, size_t len,
                    int (*fn)(void *ctx, char *line, size_t n), void *ctx);

enum kube_watch_type {
        KUBE_WATCH_ADDED = 0,
        KUBE_WATCH_MODIFIED,
        KUBE_WATCH_DELETED,
        KUBE_WATCH_BOOKMARK,
        KUBE_WATCH_ERROR,
};

struct kube_watch_event {
        enum kube_watch_type type;
        json_t *object;              /* owned reference */
        const char *resource_version; /* inside object; may be NULL for ERROR */
        long code;                   /* ERROR: the Status code (e.g. 410), else 0 */
};

/*
 * Decodes one watch line {"type": ..., "object": {...}}. Returns 0 and
 * *ret_ev (json_decref ret_ev->object when done) or -EBADMSG with @err
 * saying what is wrong. Objects other than ERROR must carry
 * metadata.name and metadata.resourceVersion.
 */
int kube_watch_decode(const char *line, size_t len, struct kube_watch_event *ret_ev,
                      struct gantry_error *err);

/* "namespace/name" or "name" of @obj into @buf; -EBADMSG when it has none. */
int kube_object_key(const json_t *obj, char *buf, size_t size);
/* metadata.resourceVersion of @obj, or NULL. */
const char *kube_object_resource_version(const json_t *obj);

/* ---------------------------------------------------------- kube_informer.c */

/* The wait before retry number @consecutive (1, 2, ...): @initial_ms
 * doubled per failure, +-25% jitter, never above @max_ms, at least 1. */
long kube_backoff_ms(int initial_ms, int max_ms, int consecutive, unsigned int *seed);

/* --------------------------------------------------------- kube_client.c */

struct gantry_kube_client {
        struct kube_http http;
        long bind_timeout; /* seconds; 0: the request timeout */
};

/* Per-kind API facts: the REST path and the RBAC names. */
struct kube_kind_info {
        const char *kind;      /* "Node" */
        const char *list_kind; /* "NodeList" */
        const char *api_version; /* "v1", "storage.k8s.io/v1" */
        const char *group;     /* "", "storage.k8s.io" */
        const char *prefix;    /* "/api/v1", "/apis/storage.k8s.io/v1" */
        const char *resource;  /* "nodes" */
        bool namespaced;
        /* in logs and metrics where two groups have a kind of the same
         * name ("PodGroup.scheduling.k8s.io"); NULL: the kind */
        const char *name;
};

const struct kube_kind_info *kube_kind_info(enum gantry_kube_kind kind);

/* What logs and metrics call objects of @info's kind. */
static inline const char *kube_kind_label(const struct kube_kind_info *info)
{
        return info->name ? info->name : info->kind;
}
