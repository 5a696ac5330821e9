/*
 * The Kubernetes API client object: made from a kubeconfig or the in-cluster
 * config (kube_config.c), it owns the HTTP layer (kube_http.c) that the
 * informers (kube_informer.c) and gantry_kube_bind_pod() use. Also the
 * table of API kinds and of the (verb, resource) pairs the client requests,
 * which the RBAC manifest of gantry-scheduler must grant.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube_internal.h"
#include "log.h"

static const struct kube_kind_info kinds[GANTRY_KUBE_KIND_COUNT] = {
        [GANTRY_KUBE_NODE] = { "Node", "NodeList", "v1", "", "/api/v1", "nodes", false },
        [GANTRY_KUBE_POD] = { "Pod", "PodList", "v1", "", "/api/v1", "pods", true },
        [GANTRY_KUBE_PVC] = { "PersistentVolumeClaim", "PersistentVolumeClaimList", "v1", "",
                              "/api/v1", "persistentvolumeclaims", true },
        [GANTRY_KUBE_PV] = { "PersistentVolume", "PersistentVolumeList", "v1", "", "/api/v1",
                             "persistentvolumes", false },
        [GANTRY_KUBE_STORAGE_CLASS] = { "StorageClass", "StorageClassList", "storage.k8s.io/v1",
                                        "storage.k8s.io", "/apis/storage.k8s.io/v1",
                                        "storageclasses", false },
        [GANTRY_KUBE_JOB] = { "Job", "JobList", "batch/v1", "batch", "/apis/batch/v1", "jobs", true },
        [GANTRY_KUBE_POD_GROUP] = { "PodGroup", "PodGroupList", "scheduling.x-k8s.io/v1alpha1",
                                    "scheduling.x-k8s.io", "/apis/scheduling.x-k8s.io/v1alpha1",
                                    "podgroups", true },
        [GANTRY_KUBE_WORKLOAD_POD_GROUP] = { "PodGroup", "PodGroupList", "scheduling.k8s.io/v1alpha2",
                                             "scheduling.k8s.io", "/apis/scheduling.k8s.io/v1alpha2",
                                             "podgroups", true, "PodGroup.scheduling.k8s.io" },
        [GANTRY_KUBE_ATTRIBUTES_CLASS] = { "VolumeAttributesClass", "VolumeAttributesClassList",
                                           "storage.k8s.io/v1", "storage.k8s.io",
                                           "/apis/storage.k8s.io/v1", "volumeattributesclasses",
                                           false },
        [GANTRY_KUBE_STORAGE_BACKEND] = { "StorageBackend", "StorageBackendList", "gantry.io/v1alpha1",
                                          "gantry.io", "/apis/gantry.io/v1alpha1", "storagebackends",
                                          false },
};

/* Every request the client makes; keep in step with the code (a test checks
 * each request the fake API server saw against this table). */
static const struct gantry_kube_api_call api_calls[] = {
        { "list", "", "nodes" },
        { "watch", "", "nodes" },
        { "list", "", "pods" },
        { "watch", "", "pods" },
        { "list", "", "persistentvolumeclaims" },
        { "watch", "", "persistentvolumeclaims" },
        { "list", "", "persistentvolumes" },
        { "watch", "", "persistentvolumes" },
        { "list", "storage.k8s.io", "storageclasses" },
        { "watch", "storage.k8s.io", "storageclasses" },
        { "list", "batch", "jobs" },
        { "watch", "batch", "jobs" },
        { "list", "scheduling.x-k8s.io", "podgroups" },
        { "watch", "scheduling.x-k8s.io", "podgroups" },
        { "list", "scheduling.k8s.io", "podgroups" },
        { "watch", "scheduling.k8s.io", "podgroups" },
        { "list", "storage.k8s.io", "volumeattributesclasses" },
        { "watch", "storage.k8s.io", "volumeattributesclasses" },
        { "list", "gantry.io", "storagebackends" },
        { "watch", "gantry.io", "storagebackends" },
        { "create", "", "events" },
        { "create", "", "pods/binding" },
        { "patch", "", "pods" },
        { "get", "coordination.k8s.io", "leases" },
        { "create", "coordination.k8s.io", "leases" },
        { "update", "coordination.k8s.io", "leases" },
};

const struct kube_kind_info *kube_kind_info(enum gantry_kube_kind kind)
{
        return (unsigned)kind < GANTRY_KUBE_KIND_COUNT ? &kinds[kind] : NULL;
}

const char *gantry_kube_kind_name(enum gantry_kube_kind kind)
{
        return (unsigned)kind < GANTRY_KUBE_KIND_COUNT ? kube_kind_label(&kinds[kind]) : "?";
}

const char *gantry_kube_event_name(enum gantry_kube_event event)
{
        static const char *const names[] = { "ADDED", "MODIFIED", "DELETED", "SYNCED" };

        return (unsigned)event < sizeof(names) / sizeof(names[0]) ? names[event] : "?";
}

const struct gantry_kube_api_call *gantry_kube_api_calls(size_t *ret_n)
{
        *ret_n = sizeof(api_calls) / sizeof(api_calls[0]);
        return api_calls;
}

static const char *auth_kind(const struct kube_conn *c)
{
        if (c->cert.len)
                return "client-certificate";
        if (c->token || c->token_file)
                return "token";
        if (c->username)
                return "basic";
        return "none";
}

int gantry_kube_client_new(const struct gantry_kube_client_options *opts,
                           struct gantry_kube_client **ret_client, struct gantry_error *err)
{
        struct gantry_kube_client *client;
        struct kube_conn *conn = NULL;
        int r;

        if (!ret_client)
                return gantry_error_set(err, EINVAL, "kube client: ret_client is NULL");
        if (opts && opts->kubeconfig && *opts->kubeconfig)
                r = kube_conn_from_kubeconfig_file(opts->kubeconfig, opts->context, &conn, err);
        else
                r = kube_conn_in_cluster(opts ? opts->service_account_dir : NULL, &conn, err);
        if (r < 0)
                return r;
        client = calloc(1, sizeof(*client));
        if (!client) {
                kube_conn_free(conn);
                return gantry_error_set(err, ENOMEM, "out of memory");
        }
        r = kube_http_init(&client->http, conn, opts, err);
        if (r < 0) {
                kube_conn_free(conn);
                free(client);
                return r;
        }
        client->bind_timeout = opts && opts->bind_timeout_seconds > 0 ? opts->bind_timeout_seconds : 0;
        {
                char origin[300], ns[300];

                log_info("kube.client", "server=%s source=%s auth=%s tls=%s namespace=%s", conn->server,
                         gantry_log_quote(conn->origin, origin, sizeof(origin)), auth_kind(conn),
                         strncmp(conn->server, "http://", 7) == 0 ? "off"
                         : conn->insecure                        ? "insecure-skip-verify"
                         : conn->ca.len                          ? "ca"
                                                                 : "system-ca",
                         gantry_log_quote(conn->namespace, ns, sizeof(ns)));
        }
        *ret_client = client;
        return 0;
}

void gantry_kube_client_free(struct gantry_kube_client *client)
{
        struct kube_conn *conn;

        if (!client)
                return;
        conn = client->http.conn;
        kube_http_destroy(&client->http);
        kube_conn_free(conn);
        free(client);
}

void gantry_kube_client_cancel(struct gantry_kube_client *client)
{
        if (client)
                kube_http_cancel(&client->http);
}

const char *gantry_kube_client_server(const struct gantry_kube_client *client)
{
        return client->http.conn->server;
}

const char *gantry_kube_client_namespace(const struct gantry_kube_client *client)
{
        return client->http.conn->namespace;
}

/* A DNS subdomain (pod, namespace and node names): [a-z0-9.-], at most 253. */
static bool valid_name(const char *s)
{
        size_t n = s ? strlen(s) : 0;

        if (n == 0 || n > 253)
                return false;
        for (const char *p = s; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-' || *p == '.'))
                        return false;
        return true;
}

int gantry_kube_bind_pod(struct gantry_kube_client *client, const char *namespace,
                         const char *name, const char *uid, const char *node,
                         struct gantry_error *err)
{
        struct kube_response resp = { 0 };
        char path[600], what[600], body[1280]; /* names <= 253, uid <= 128 */
        int r;

        if (!client)
                return gantry_error_set(err, EINVAL, "bind: client is NULL");
        if (!valid_name(namespace))
                return gantry_error_set(err, EINVAL, "bind: namespace: not a valid name");
        if (!valid_name(name))
                return gantry_error_set(err, EINVAL, "bind: pod name: not a valid name");
        if (!valid_name(node))
                return gantry_error_set(err, EINVAL, "bind: node: not a valid name");
        if (uid && (strlen(uid) > 128 || !*uid))
                return gantry_error_set(err, EINVAL, "bind: uid: empty or longer than 128");
        if (uid && strspn(uid, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-") !=
                           strlen(uid))
                return gantry_error_set(err, EINVAL, "bind: uid: not a UID (letters, digits, '-')");

        /* Every field is checked above to need no JSON escaping: the body is
         * printed, not built and dumped with jansson (on every bind). */
        snprintf(body, sizeof(body),
                 "{\"apiVersion\":\"v1\",\"kind\":\"Binding\",\"metadata\":{\"name\":\"%s\","
                 "\"namespace\":\"%s\"%s%s%s},\"target\":{\"apiVersion\":\"v1\",\"kind\":\"Node\","
                 "\"name\":\"%s\"}}",
                 name, namespace, uid ? ",\"uid\":\"" : "", uid ? uid : "", uid ? "\"" : "", node);

        snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s/binding", namespace, name);
        snprintf(what, sizeof(what), "bind %s/%s to %s", namespace, name, node);
        {
                struct kube_request req = {
                        .method = "POST", .path = path, .body = body, .verb = "create",
                        .resource = "pods/binding", .max_body = 1024 * 1024,
                        .outlives_cancel = true,
                        .timeout = client->bind_timeout,
                };

                r = kube_http_do(&client->http, &req, &resp, err);
        }
        if (r < 0) {
                gantry_error_prefix(err, what);
        } else if (resp.status / 100 != 2) {
                r = kube_http_status_error(&resp, what, err);
        }
        if (r < 0) {
                char quoted[GANTRY_ERROR_MSG_MAX + 8];

                log_warn("kube.bind", "namespace=%s pod=%s node=%s result=%s status=%ld error=%s", namespace,
                         name, node, resp.status ? "refused" : "error", resp.status,
                         gantry_log_quote(err ? err->msg : "", quoted, sizeof(quoted)));
        } else {
                log_info("kube.bind", "namespace=%s pod=%s node=%s result=bound status=%ld", namespace, name,
                         node, resp.status);
        }
        kube_response_clear(&resp);
        return r;
}

/* The answer's body as a JSON object into *ret_obj; clears @resp. */
static int take_object(struct kube_response *resp, const char *path, json_t **ret_obj,
                       struct gantry_error *err)
{
        json_error_t jerr;
        json_t *obj = json_loadb(resp->body ? resp->body : "", resp->len, 0, &jerr);

        kube_response_clear(resp);
        if (!json_is_object(obj)) {
                json_decref(obj);
                return gantry_error_set(err, EBADMSG, "%s: not a JSON object", path);
        }
        *ret_obj = obj;
        return 0;
}

/* A GET of one object, interrupted by @waker when not NULL; @final_timeout > 0: a
 * request of a clean stop (kube_internal.h). */
static int get_object(struct gantry_kube_client *client, const char *path, const char *verb,
                      const char *resource, struct kube_waker *waker, long final_timeout,
                      json_t **ret_obj,
                      struct gantry_error *err)
{
        struct kube_request req = {
                .method = "GET", .path = path, .verb = verb, .resource = resource,
                .max_body = 16 * 1024 * 1024, .waker = waker,
                .outlives_cancel = final_timeout > 0, .timeout = final_timeout,
        };
        struct kube_response resp = { 0 };
        int r;

        if (!client)
                return gantry_error_set(err, EINVAL, "get: client is NULL");
        r = kube_http_do(&client->http, &req, &resp, err);
        if (r == 0 && resp.status / 100 != 2)
                r = kube_http_status_error(&resp, path, err);
        if (r < 0) {
                kube_response_clear(&resp);
                return r;
        }
        return take_object(&resp, path, ret_obj, err);
}

int gantry_kube_get(struct gantry_kube_client *client, const char *path, const char *verb,
                    const char *resource, json_t **ret_obj, struct gantry_error *err)
{
        return get_object(client, path, verb, resource, NULL, 0, ret_obj, err);
}

int kube_get_final(struct gantry_kube_client *client, const char *path, const char *resource,
                   long timeout_s, json_t **ret_obj, struct gantry_error *err)
{
        return get_object(client, path, "get", resource, NULL, timeout_s > 0 ? timeout_s : 1,
                          ret_obj, err);
}

int kube_served(struct gantry_kube_client *client, enum gantry_kube_kind kind,
                struct kube_waker *waker, struct gantry_error *err)
{
        const struct kube_kind_info *info = kube_kind_info(kind);
        const json_t *res;
        json_t *doc = NULL;
        size_t i;
        int r, served = 0;

        if (!info)
                return gantry_error_set(err, EINVAL, "served: kind out of range");
        r = get_object(client, info->prefix, "get", "discovery", waker, 0, &doc, err);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        json_array_foreach(json_object_get(doc, "resources"), i, res)
                if (json_is_string(json_object_get(res, "name")) &&
                    !strcmp(json_string_value(json_object_get(res, "name")), info->resource))
                        served = 1;
        json_decref(doc);
        return served;
}

int gantry_kube_served(struct gantry_kube_client *client, enum gantry_kube_kind kind,
                       struct gantry_error *err)
{
        return kube_served(client, kind, NULL, err);
}

/*
 * Sends @obj as the JSON body of a @method to @path; 2xx is success. With
 * @ret_obj, the object the server answered (caller decrefs).
 */
static int send_object(struct gantry_kube_client *client, const char *method, const char *verb,
                       const char *content_type, const char *path, const char *resource,
                       const json_t *obj, long final_timeout, json_t **ret_obj,
                       struct gantry_error *err)
{
        struct kube_request req = {
                .method = method, .path = path, .verb = verb, .resource = resource,
                .content_type = content_type, .max_body = 16 * 1024 * 1024,
                .outlives_cancel = final_timeout > 0, .timeout = final_timeout,
        };
        struct kube_response resp = { 0 };
        int r;

        if (!client)
                return gantry_error_set(err, EINVAL, "%s: client is NULL", verb);
        if (!json_is_object(obj))
                return gantry_error_set(err, EINVAL, "%s %s: not a JSON object", verb, path);
        if (!(req.body = json_dumps(obj, JSON_COMPACT)))
                return gantry_error_set(err, ENOMEM, "%s %s: cannot encode the body", verb, path);
        r = kube_http_do(&client->http, &req, &resp, err);
        if (r < 0)
                gantry_error_prefix(err, path);
        else if (resp.status / 100 != 2)
                r = kube_http_status_error(&resp, path, err);
        free((char *)req.body);
        if (r < 0 || !ret_obj) {
                kube_response_clear(&resp);
                return r;
        }
        return take_object(&resp, path, ret_obj, err);
}

int gantry_kube_merge_patch(struct gantry_kube_client *client, const char *path,
                            const char *resource, const json_t *patch, struct gantry_error *err)
{
        return send_object(client, "PATCH", "patch", "application/merge-patch+json", path, resource,
                           patch, 0, NULL, err);
}

int gantry_kube_create(struct gantry_kube_client *client, const char *path, const char *resource,
                       const json_t *obj, struct gantry_error *err)
{
        return send_object(client, "POST", "create", NULL, path, resource, obj, 0, NULL, err);
}

int gantry_kube_write(struct gantry_kube_client *client, const char *method, const char *path,
                      const char *resource, const json_t *body, json_t **ret_obj,
                      struct gantry_error *err)
{
        bool create = method && !strcmp(method, "POST");

        if (!create && !(method && !strcmp(method, "PUT")))
                return gantry_error_set(err, EINVAL, "write %s: method: POST or PUT", path);
        return send_object(client, method, create ? "create" : "update", NULL, path, resource, body,
                           0, ret_obj, err);
}

int kube_put_final(struct gantry_kube_client *client, const char *path, const char *resource,
                   const json_t *body, long timeout_s, struct gantry_error *err)
{
        return send_object(client, "PUT", "update", NULL, path, resource, body,
                           timeout_s > 0 ? timeout_s : 1, NULL, err);
}

void gantry_kube_client_stop(struct gantry_kube_client *client)
{
        if (client)
                kube_http_stop(&client->http);
}
