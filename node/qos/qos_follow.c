/*
 * The node's follow of PVC changes, so that a VolumeAttributesClass
 * changed on a live volume reaches the running pods' io.max within seconds.
 * See qos_follow.h.
 *
 * A PVC event names a namespace and a claim, not the pods on this node that
 * use it; the caps recorded here are few (one per published target path),
 * so each cap of a pod in the PVC's namespace is computed again with the
 * one demand computation (gantry_qos_api_apply: the pod, its PVCs, PVs,
 * StorageClasses and the class in force) and written again; a cap whose
 * figures did not change is written unchanged. The caps are copied out of
 * the module first: gantry_qos_for_each() holds its lock during the walk.
 *
 * The informer's first list after a start delivers every PVC as ADDED: a
 * class marked in force while the plugin was down (or while it rewrote one
 * pod's cap of several when it crashed) is only in that list, and the
 * records the reconcile re-applies hold the figures of before. So the first
 * PVC listed in a namespace where this node holds caps computes them all
 * again, once per namespace and start; later ADDED events (claims created
 * since) cannot change a running pod's cap and are left alone.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kube_client.h"
#include "log.h"
#include "qos.h"
#include "qos_api.h"
#include "qos_follow.h"

#define FOLLOW_MAX 256 /* caps rewritten for one PVC event; a node holds far fewer */
#define CAUGHT_UP_MAX 64 /* namespaces remembered as caught up; past it, each ADDED recomputes */

static struct gantry_kube_informer *informer;

/* The namespaces whose caps were computed again since the start (informer thread only). */
static char caught_up[CAUGHT_UP_MAX][GANTRY_QOS_NAME_MAX + 1];
static size_t n_caught_up;

/* One cap to compute again: the identity gantry_qos_api_apply() needs. */
struct follow_cap {
        char pod_uid[GANTRY_QOS_NAME_MAX + 1];
        char pod_namespace[GANTRY_QOS_NAME_MAX + 1];
        char pod_name[GANTRY_QOS_NAME_MAX + 1];
        char volume_id[GANTRY_QOS_NAME_MAX + 1];
        char target_path[GANTRY_QOS_PATH_MAX];
        unsigned dev_major, dev_minor;
};

struct follow_walk {
        const char *namespace;
        struct follow_cap *caps;
        size_t n;
};

static void copy_str(char *dst, size_t size, const char *src)
{
        size_t len = src ? strnlen(src, size - 1) : 0;

        memcpy(dst, src ? src : "", len);
        dst[len] = '\0';
}

static int collect(const struct gantry_qos_entry *e, void *userdata)
{
        struct follow_walk *w = userdata;
        struct follow_cap *c;

        if (!e->pod_namespace || strcmp(e->pod_namespace, w->namespace) != 0)
                return 0;
        if (w->n == FOLLOW_MAX)
                return 1;
        c = &w->caps[w->n++];
        copy_str(c->pod_uid, sizeof(c->pod_uid), e->pod_uid);
        copy_str(c->pod_namespace, sizeof(c->pod_namespace), e->pod_namespace);
        copy_str(c->pod_name, sizeof(c->pod_name), e->pod_name);
        copy_str(c->volume_id, sizeof(c->volume_id), e->volume_id);
        copy_str(c->target_path, sizeof(c->target_path), e->target_path);
        c->dev_major = e->dev_major;
        c->dev_minor = e->dev_minor;
        return 0;
}

static bool is_caught_up(const char *ns)
{
        for (size_t i = 0; i < n_caught_up; i++)
                if (!strcmp(caught_up[i], ns))
                        return true;
        return false;
}

static void on_pvc(void *ctx, enum gantry_kube_kind kind, enum gantry_kube_event event,
                   const json_t *obj)
{
        struct gantry_kube_client *kube = ctx;
        const char *ns = json_string_value(json_object_get(json_object_get(obj, "metadata"), "namespace"));
        struct follow_walk w = { .namespace = ns };

        (void)kind;
        if (!ns || (event != GANTRY_KUBE_MODIFIED && event != GANTRY_KUBE_ADDED))
                return;
        if (event == GANTRY_KUBE_ADDED && is_caught_up(ns))
                return;
        w.caps = calloc(FOLLOW_MAX, sizeof(*w.caps));
        if (!w.caps)
                return;
        gantry_qos_for_each(collect, &w);
        /* a namespace without caps here needs no catching up: a publish reads the API afresh */
        if (event == GANTRY_KUBE_ADDED && w.n > 0 && n_caught_up < CAUGHT_UP_MAX)
                copy_str(caught_up[n_caught_up++], sizeof(caught_up[0]), ns);
        for (size_t i = 0; i < w.n; i++) {
                struct follow_cap *c = &w.caps[i];
                struct gantry_qos_request who = {
                        .pod_uid = c->pod_uid, .pod_namespace = c->pod_namespace,
                        .pod_name = c->pod_name, .volume_id = c->volume_id,
                        .target_path = c->target_path, .dev_major = c->dev_major,
                        .dev_minor = c->dev_minor, .update_only = true,
                };
                struct gantry_error err = { 0 };
                char q[GANTRY_ERROR_MSG_MAX + 8];

                /* -ENOENT: unpublished meanwhile, or no longer the pod's volume (the reconcile keeps
                 * the cap it had) */
                if (gantry_qos_api_apply(kube, &who, &err) < 0 && err.err != ENOENT)
                        log_warn("node.qos_follow_failed", "target_path=%s error=%s", c->target_path,
                                 gantry_log_quote(err.msg, q, sizeof(q)));
        }
        free(w.caps);
}

int gantry_qos_follow_start(struct gantry_kube_client *kube, struct gantry_error *err)
{
        if (informer || !kube)
                return 0;
        n_caught_up = 0;
        return gantry_kube_informer_start(kube, GANTRY_KUBE_PVC, NULL, on_pvc, kube, &informer, err);
}

void gantry_qos_follow_stop(void)
{
        gantry_kube_informer_stop(informer);
        informer = NULL;
}
