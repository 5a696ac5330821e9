/*
 * Kubernetes API client for gantry-scheduler: connection config, informers
 * (list + watch) and pod binding, on libcurl + jansson.
 *
 * A client is made either from the in-cluster config (the pod's
 * service-account token and CA, KUBERNETES_SERVICE_HOST/PORT) or from a
 * kubeconfig file as kubectl writes it (--kubeconfig). It holds no cache of
 * its own: an informer lists one kind of object, then watches it from the
 * list's resourceVersion, and hands every change to a callback on the
 * informer's own thread. The placement code keeps whatever state it needs.
 *
 * An informer re-lists when the server answers 410 Gone or sends an ERROR
 * event, reconnects when a watch ends or drops, and backs off (exponential,
 * capped, with jitter) on errors. After a re-list it reports what changed
 * while it was not watching (ADDED / MODIFIED / DELETED against what it
 * delivered before), then SYNCED, so the consumer never has to diff.
 *
 * Tokens and keys are never logged and never put in an error message.
 * Everything here is thread-safe: informers run on their own threads and
 * gantry_kube_bind_pod() may be called from any thread at the same time.
 */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "error.h"

struct gantry_metrics;

/* The kinds of object an informer can follow. */
enum gantry_kube_kind {
        GANTRY_KUBE_NODE = 0,          /* core/v1 nodes */
        GANTRY_KUBE_POD,               /* core/v1 pods */
        GANTRY_KUBE_PVC,               /* core/v1 persistentvolumeclaims */
        GANTRY_KUBE_PV,                /* core/v1 persistentvolumes */
        GANTRY_KUBE_STORAGE_CLASS,     /* storage.k8s.io/v1 storageclasses */
        GANTRY_KUBE_JOB,               /* batch/v1 jobs (a gang's size) */
        GANTRY_KUBE_POD_GROUP,         /* scheduling.x-k8s.io/v1alpha1 podgroups (CRD) */
        /* scheduling.k8s.io/v1alpha2 podgroups: Kubernetes' own gangs
         * (KEP-4671, GenericWorkload feature gate; v1.36 and later) */
        GANTRY_KUBE_WORKLOAD_POD_GROUP,
        GANTRY_KUBE_ATTRIBUTES_CLASS,  /* storage.k8s.io/v1 volumeattributesclasses */
        GANTRY_KUBE_STORAGE_BACKEND,   /* gantry.io/v1alpha1 storagebackends (CRD, cluster-scoped) */
        GANTRY_KUBE_KIND_COUNT,
};

enum gantry_kube_event {
        GANTRY_KUBE_ADDED = 0,
        GANTRY_KUBE_MODIFIED,
        GANTRY_KUBE_DELETED,
        /* The informer's view is complete: sent after the initial list and
         * after every re-list, once the changes it found were delivered. */
        GANTRY_KUBE_SYNCED,
};

/* "Node", "Pod", "PersistentVolumeClaim", "PersistentVolume", "StorageClass",
 * "Job", "PodGroup", "PodGroup.scheduling.k8s.io", "VolumeAttributesClass",
 * "StorageBackend";
 * "?" when out of range. */
const char *gantry_kube_kind_name(enum gantry_kube_kind kind);
/* "ADDED", "MODIFIED", "DELETED", "SYNCED"; "?" when out of range. */
const char *gantry_kube_event_name(enum gantry_kube_event event);

/* ------------------------------------------------------------------ client */

struct gantry_kube_client;

struct gantry_kube_client_options {
        /* Path of a kubeconfig file; NULL (or "") uses the in-cluster config. */
        const char *kubeconfig;
        /* Context to use from the kubeconfig; NULL uses its current-context. */
        const char *context;
        /* In-cluster only: the folder with token, ca.crt and namespace;
         * NULL means /var/run/secrets/kubernetes.io/serviceaccount. The
         * server comes from KUBERNETES_SERVICE_HOST / KUBERNETES_SERVICE_PORT. */
        const char *service_account_dir;
        /* Request counters and latency go here when not NULL (borrowed; must
         * outlive the client): gantry_kube_requests_total{verb,resource,code},
         * gantry_kube_request_seconds{verb,resource},
         * gantry_kube_watch_events_total{kind,type},
         * gantry_kube_relists_total{kind}. */
        struct gantry_metrics *metrics;
        /* Seconds to connect (default 10) and for a non-watch request
         * (default 60; a list page, a binding). 0 means the default. */
        int connect_timeout_seconds;
        int request_timeout_seconds;
        /* Seconds for a Binding POST; 0: the request timeout. Keep it below
         * kube-scheduler's extender httpTimeout, so a slow API server fails
         * the bind rather than the extender call. */
        int bind_timeout_seconds;
};

/*
 * Makes a client from @opts (NULL: all defaults, i.e. in-cluster). Reads and
 * checks the whole config (files, base64 data, URLs) before returning; makes
 * no network call. On success returns 0 and the client in *ret_client (free
 * with gantry_kube_client_free). On failure returns -errno and fills @err with
 * a message naming the source and the field, e.g.
 * "kubeconfig /root/.kube/config: users[0].user.client-key-data: invalid base64"
 * or "in-cluster: KUBERNETES_SERVICE_HOST: not set".
 * An in-cluster token file is re-read when it changes (bound service-account
 * tokens rotate), so a long-running client keeps working.
 */
int gantry_kube_client_new(const struct gantry_kube_client_options *opts,
                           struct gantry_kube_client **ret_client, struct gantry_error *err);

/* Frees the client. Every informer made from it must be stopped first. NULL is a no-op. */
void gantry_kube_client_free(struct gantry_kube_client *client);

/*
 * Aborts the client's requests in flight now on any thread (gets, writes;
 * not binds, whose answers a clean stop hands back within their short
 * timeout, nor the informers', which gantry_kube_informer_stop() stops):
 * they fail with -ECANCELED within about a second. Requests started after
 * it run as usual (a clean stop still gives its Lease up). For a SIGTERM
 * that must not wait out a request timeout. Callable from any thread.
 */
void gantry_kube_client_cancel(struct gantry_kube_client *client);

/*
 * As gantry_kube_client_cancel(), and every request started later fails at
 * once with -ECANCELED too (binds and informers excepted, as there): for a
 * process that is stopping, whose threads must not start a request that a
 * dead API server would hold for its whole timeout. The Lease is still given
 * up (kube_lease.c: with a timeout of 1 s). Callable from any thread.
 */
void gantry_kube_client_stop(struct gantry_kube_client *client);

/* The API server's base URL, e.g. "https://10.96.0.1:443" (borrowed). */
const char *gantry_kube_client_server(const struct gantry_kube_client *client);

/* The namespace of the kubeconfig context or of the service account, or
 * "default" (borrowed). */
const char *gantry_kube_client_namespace(const struct gantry_kube_client *client);

/* ----------------------------------------------------------------- binding */

/*
 * Binds pod @namespace/@name to @node: POSTs a v1 Binding to
 * /api/v1/namespaces/@namespace/pods/@name/binding. When @uid is not NULL
 * the Binding carries it, so the API server refuses to bind a pod that was
 * deleted and re-created under the same name. Blocks for at most the bind
 * timeout; callable from any thread.
 *
 * Returns 0 when bound. Otherwise -errno and @err holds the reason (the API
 * server's Status message when there is one):
 *   -EINVAL   an argument is empty or not a valid name; 400/422 from the server
 *   -ENOENT   404: no such pod
 *   -EEXIST   409: the pod is already bound, or the UID does not match
 *   -EACCES   401/403: the credentials may not create pods/binding
 *   -ETIMEDOUT, -ECONNREFUSED, -EHOSTUNREACH, -EPROTO (TLS)   transport
 *   -EAGAIN   429 / 503: the server asks to retry later
 *   -EIO      any other answer
 */
int gantry_kube_bind_pod(struct gantry_kube_client *client, const char *namespace,
                         const char *name, const char *uid, const char *node,
                         struct gantry_error *err);

/* --------------------------------------------------------------------- get */

/*
 * GETs @path ("/apis/storage.k8s.io/v1/csinodes?limit=500", already escaped)
 * and parses the answer; @verb and @resource name it in metrics ("list",
 * "csinodes"). Blocks for at most the request timeout; callable from any
 * thread. Returns 0 and the object in *ret_obj (caller decrefs), or -errno
 * with @err as for gantry_kube_bind_pod (-ENOENT: 404).
 */
int gantry_kube_get(struct gantry_kube_client *client, const char *path, const char *verb,
                    const char *resource, json_t **ret_obj, struct gantry_error *err);

/*
 * Whether the API server serves @kind: asks the discovery document of its
 * group and version ("/apis/scheduling.k8s.io/v1alpha2", which every
 * authenticated client may read) whether it lists the resource. Returns 1
 * served, 0 not served (404: the group or version is off, as an alpha API
 * is by default), or -errno with @err.
 */
int gantry_kube_served(struct gantry_kube_client *client, enum gantry_kube_kind kind,
                       struct gantry_error *err);

/* ------------------------------------------------------------------- patch */

/*
 * Sends @patch (a JSON object) as a JSON merge patch (RFC 7386,
 * "application/merge-patch+json") to @path ("/api/v1/persistentvolumes/pv-1",
 * already escaped); @resource names it in metrics ("persistentvolumes", verb
 * "patch"). Blocks for at most the request timeout; callable from any thread.
 * Returns 0 when the server took it, or -errno with @err as for
 * gantry_kube_bind_pod (-ENOENT: 404).
 */
int gantry_kube_merge_patch(struct gantry_kube_client *client, const char *path,
                            const char *resource, const json_t *patch, struct gantry_error *err);

/* ------------------------------------------------------------------ create */

/*
 * POSTs @obj (a JSON object) to the collection @path
 * ("/api/v1/namespaces/ml/events", already escaped); @resource names it in
 * metrics ("events", verb "create"). Blocks for at most the request
 * timeout; callable from any thread. Returns 0 when the server made it
 * (2xx), or -errno with @err as for gantry_kube_bind_pod (-EEXIST: 409).
 */
int gantry_kube_create(struct gantry_kube_client *client, const char *path, const char *resource,
                       const json_t *obj, struct gantry_error *err);

/* ------------------------------------------------------------------- write */

/*
 * Creates (@method "POST", verb "create") or replaces (@method "PUT", verb
 * "update") the object at @path with @body; a PUT carrying
 * metadata.resourceVersion is refused with -EEXIST (409) when the object
 * changed since (optimistic concurrency: what a Lease's holder relies on).
 * @resource names it in metrics ("leases"). On success returns 0 and, when
 * @ret_obj is not NULL, the object as stored (caller decrefs); otherwise
 * -errno with @err as for gantry_kube_bind_pod.
 */
int gantry_kube_write(struct gantry_kube_client *client, const char *method, const char *path,
                      const char *resource, const json_t *body, json_t **ret_obj,
                      struct gantry_error *err);

/* --------------------------------------------------------------- informers */

/*
 * Called on the informer's thread for each event, in order. @obj is the
 * object (a Node, Pod, ... as the API server sent it, with its kind and
 * apiVersion filled in); it is borrowed for the duration of the call
 * (json_incref it to keep it). For DELETED it is the last state known: the
 * object as the watch sent it, or, for an object that went while nobody
 * watched (found by a re-list), a tombstone with only metadata.name,
 * namespace, uid, resourceVersion and spec.nodeName (the informer keeps no
 * whole objects). For
 * SYNCED @obj is NULL. The callback must not call gantry_kube_informer_stop()
 * on its own informer and should return quickly: the watch waits for it.
 */
typedef void (*gantry_kube_event_fn)(void *ctx, enum gantry_kube_kind kind,
                                     enum gantry_kube_event event, const json_t *obj);

struct gantry_kube_informer;

struct gantry_kube_informer_options {
        /* Only objects matching these selectors (URL-unescaped; NULL: all),
         * e.g. field_selector "status.phase!=Succeeded,status.phase!=Failed". */
        const char *label_selector;
        const char *field_selector;
        /* Only this namespace (namespaced kinds); NULL: all namespaces. */
        const char *namespace;
        /* Items per list page (limit/continue); 0: 500. */
        int page_size;
        /* Server-side watch timeout; 0: a random value in 300..600 s, as
         * client-go does, so that a fleet does not reconnect in step. */
        int watch_timeout_seconds;
        /* Backoff after an error: starts at initial_backoff_ms (0: 500),
         * doubles up to max_backoff_ms (0: 30000), +-25% jitter; reset by a
         * successful list or a watch that delivered an event. */
        int initial_backoff_ms;
        int max_backoff_ms;
        /* Consecutive failed attempts after which the informer gives up and
         * its thread ends (gantry_kube_informer_state() reports it failed),
         * counted only until the first sync: after it, errors are retried
         * for ever; 0: retry for ever from the start. */
        int max_errors;
        /* A 404 to a list or watch (the kind is no longer served: its CRD
         * was deleted) ends the informer as failed (state.failed, error
         * ENOENT) with one info line, instead of retrying it as an error:
         * for a caller that follows API discovery (kube_optional.h). */
        bool end_when_not_found;
        /* Longest watch line (one JSON event) or list page accepted, in
         * bytes; 0: 16 MiB. A longer one is an error (then re-list). */
        size_t max_line_bytes;
};

/*
 * Starts an informer for @kind on a new thread: list (paged), deliver the
 * items, SYNCED, then watch from the list's resourceVersion with
 * allowWatchBookmarks. @opts may be NULL (defaults). @fn and @ctx must stay
 * valid until gantry_kube_informer_stop() returns.
 * Returns 0 and the informer in *ret_informer, or -errno (-EINVAL for a bad
 * option, -ENOMEM, or pthread_create's error) with @err filled.
 */
int gantry_kube_informer_start(struct gantry_kube_client *client, enum gantry_kube_kind kind,
                               const struct gantry_kube_informer_options *opts,
                               gantry_kube_event_fn fn, void *ctx,
                               struct gantry_kube_informer **ret_informer,
                               struct gantry_error *err);

/*
 * Stops the informer: interrupts the request in flight (no wait for a
 * timeout), joins its thread, frees it. No callback runs after it returns.
 * NULL is a no-op.
 */
void gantry_kube_informer_stop(struct gantry_kube_informer *informer);

/*
 * As gantry_kube_informer_stop(), but first delivers DELETED (a tombstone,
 * as after a re-list) for every object the informer delivered and did not
 * see go, on the caller's thread: for a kind the API server no longer
 * serves (a CRD deleted), whose objects went with it. NULL is a no-op.
 */
void gantry_kube_informer_stop_forgetting(struct gantry_kube_informer *informer);

/*
 * Waits until the informer has sent SYNCED once, for at most @timeout_ms.
 * Returns 0 when synced, -ETIMEDOUT, or the informer's error (negative
 * errno) when it gave up first. For a main that serves only once its view
 * is complete.
 */
int gantry_kube_informer_wait_synced(struct gantry_kube_informer *informer, int timeout_ms);

/*
 * gantry_kube_informer_wait_synced() that also gives up within a tenth of a
 * second once *@stop (may be NULL) is set: -ECANCELED (a SIGTERM while an
 * informer lists).
 */
int gantry_kube_informer_wait_synced_or_stop(struct gantry_kube_informer *informer, int timeout_ms,
                                             const atomic_bool *stop);

struct gantry_kube_informer_state {
        bool synced;        /* at least one list completed (SYNCED was sent) */
        bool failed;        /* gave up (max_errors, end_when_not_found); the thread has ended */
        bool watching;      /* a watch stream is open now */
        uint64_t lists;     /* completed lists (initial + re-lists) */
        uint64_t watches;   /* watch requests that got a 200 answer */
        uint64_t events;    /* ADDED/MODIFIED/DELETED delivered */
        uint64_t errors;    /* failed attempts, all causes */
        int consecutive_errors;
        char resource_version[64]; /* last resourceVersion seen ("" before the list) */
        struct gantry_error last_error; /* the latest failure, err 0 when none */
};

/* Copies the informer's current state into *ret_state (thread-safe). */
void gantry_kube_informer_state(struct gantry_kube_informer *informer,
                                struct gantry_kube_informer_state *ret_state);

/* ------------------------------------------------------ API calls (for RBAC) */

/*
 * One kind of API request this client makes, in RBAC terms: the ClusterRole
 * of gantry-scheduler must grant exactly these (tests/manifests/test_rbac.py
 * compares them). @resource may carry a subresource ("pods/binding").
 */
struct gantry_kube_api_call {
        const char *verb;      /* "list", "watch", "create", "patch", "get", "update" */
        const char *api_group; /* "" for the core group, "storage.k8s.io" */
        const char *resource;  /* "nodes", "pods/binding", ... */
};

/* The full table (static storage), *ret_n entries. */
const struct gantry_kube_api_call *gantry_kube_api_calls(size_t *ret_n);
