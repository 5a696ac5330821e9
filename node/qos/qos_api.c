/*
 * The bandwidth caps' calls to the Kubernetes API, over the node plugin's
 * process's one client (kube/kube_process.c, lent): at NodePublishVolume it reads the pod (podInfoOnMount gives its namespace, name and UID) and
 * the PVCs, PVs and StorageClasses of its volumes, so that the one demand
 * computation gives the node the figure gantry-scheduler charged, and
 * applies the cap. Read-only GETs, nothing cached: a publish is rare next to
 * the reads it caps. Calls (granted to the gantry-node ServiceAccount):
 *   get pods, persistentvolumeclaims, persistentvolumes (core),
 *   get storageclasses, volumeattributesclasses (storage.k8s.io)
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <curl/curl.h>

#include "kube_client.h"
#include "log.h"
#include "qos_api.h"

/* A path segment, escaped; "" when it cannot be. */
static void escaped(const char *s, char *buf, size_t size)
{
        char *e = curl_easy_escape(NULL, s, 0);

        snprintf(buf, size, "%s", e ? e : "");
        curl_free(e);
}

struct lookup_ctx {
        struct gantry_kube_client *kube;
        int failed; /* the first GET error other than 404 */
        struct gantry_error err;
};

static json_t *api_lookup(void *userdata, enum gantry_bw_kind kind, const char *ns,
                          const char *name)
{
        struct lookup_ctx *c = userdata;
        char path[2 * 3 * GANTRY_BW_NAME_MAX + 128], en[3 * GANTRY_BW_NAME_MAX + 1], ens[3 * GANTRY_BW_NAME_MAX + 1];
        json_t *obj = NULL;
        int r;

        escaped(name, en, sizeof(en));
        escaped(ns ? ns : "", ens, sizeof(ens));
        switch (kind) {
        case GANTRY_BW_PVC:
                snprintf(path, sizeof(path), "/api/v1/namespaces/%s/persistentvolumeclaims/%s", ens, en);
                r = gantry_kube_get(c->kube, path, "get", "persistentvolumeclaims", &obj, &c->err);
                break;
        case GANTRY_BW_PV:
                snprintf(path, sizeof(path), "/api/v1/persistentvolumes/%s", en);
                r = gantry_kube_get(c->kube, path, "get", "persistentvolumes", &obj, &c->err);
                break;
        case GANTRY_BW_STORAGE_CLASS:
                snprintf(path, sizeof(path), "/apis/storage.k8s.io/v1/storageclasses/%s", en);
                r = gantry_kube_get(c->kube, path, "get", "storageclasses", &obj, &c->err);
                break;
        case GANTRY_BW_ATTRIBUTES_CLASS:
                snprintf(path, sizeof(path), "/apis/storage.k8s.io/v1/volumeattributesclasses/%s", en);
                r = gantry_kube_get(c->kube, path, "get", "volumeattributesclasses", &obj, &c->err);
                break;
        default:
                return NULL;
        }
        if (r < 0 && r != -ENOENT && !c->failed)
                c->failed = r;
        return r < 0 ? NULL : obj;
}

int gantry_qos_api_apply(struct gantry_kube_client *kube, const struct gantry_qos_request *who,
                         struct gantry_error *err)
{
        struct lookup_ctx c = { .kube = kube };
        struct gantry_qos_request req;
        char path[2 * 3 * GANTRY_BW_NAME_MAX + 128], en[3 * GANTRY_BW_NAME_MAX + 1], ens[3 * GANTRY_BW_NAME_MAX + 1];
        const char *uid;
        json_t *pod = NULL;
        int r;

        escaped(who->pod_name, en, sizeof(en));
        escaped(who->pod_namespace, ens, sizeof(ens));
        snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", ens, en);
        r = gantry_kube_get(kube, path, "get", "pods", &pod, err);
        if (r < 0)
                return gantry_error_prefix(err, "bandwidth cap: reading the pod");
        uid = json_string_value(json_object_get(json_object_get(pod, "metadata"), "uid"));
        if (!uid || strcmp(uid, who->pod_uid) != 0) {
                r = gantry_error_set(err, EAGAIN, "bandwidth cap: pod %s/%s has UID %s, not %s",
                                     who->pod_namespace, who->pod_name, uid ? uid : "-",
                                     who->pod_uid);
                goto out;
        }
        r = gantry_qos_request_from_pod(pod, api_lookup, &c, who->volume_id, &req, err);
        if (c.failed) {
                r = gantry_error_set(err, c.failed, "bandwidth cap: reading the pod's volumes: %s",
                                     c.err.msg);
                goto out;
        }
        if (r < 0)
                goto out;
        req.target_path = who->target_path;
        req.dev_major = who->dev_major;
        req.dev_minor = who->dev_minor;
        req.update_only = who->update_only;
        r = gantry_qos_apply(&req, err);
out:
        json_decref(pod);
        return r;
}
