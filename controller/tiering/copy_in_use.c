/*
 * Whether a promoted copy is in use, for its demotion (eviction.c). Two
 * independent signs, both must be absent:
 *
 * - a VolumeAttachment of csi.gantry.io names the copy's PV (the external
 *   attacher makes it before ControllerPublishVolume and removes it after
 *   ControllerUnpublishVolume). The record's name is CreateVolume's name,
 *   which the external provisioner makes the PV's name. Read through the
 *   Kubernetes API (--kubeconfig, or in-cluster), once per pass; without API
 *   access this sign is not available and only the watchers count; with API
 *   access that fails, nothing is demoted (we cannot tell).
 * - a watcher on the image: a node maps it with krbd, or any librbd client
 *   holds it open for writing, other than the caller's own handle.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "copy_in_use.h"
#include "identity.h"
#include "kube_client.h"
#include "log.h"

#define VA_PATH "/apis/storage.k8s.io/v1/volumeattachments?limit=500"
#define MAX_PAGES 200
#define MAX_ATTACHED 100000

struct gantry_attachments {
        char **pv;   /* PV names, parallel to node */
        char **node;
        size_t n, cap;
};

void gantry_attachments_free(struct gantry_attachments *a)
{
        if (!a)
                return;
        for (size_t i = 0; i < a->n; i++) {
                free(a->pv[i]);
                free(a->node[i]);
        }
        free(a->pv);
        free(a->node);
        free(a);
}

static int add(struct gantry_attachments *a, const char *pv, const char *node)
{
        if (a->n == MAX_ATTACHED)
                return -E2BIG;
        if (a->n == a->cap) {
                size_t cap = a->cap ? a->cap * 2 : 16;
                char **p = realloc(a->pv, cap * sizeof(*p));
                if (!p)
                        return -ENOMEM;
                a->pv = p;
                if (!(p = realloc(a->node, cap * sizeof(*p))))
                        return -ENOMEM;
                a->node = p;
                a->cap = cap;
        }
        a->pv[a->n] = strdup(pv);
        a->node[a->n] = strdup(node ? node : "?");
        if (!a->pv[a->n] || !a->node[a->n]) {
                free(a->pv[a->n]);
                free(a->node[a->n]);
                return -ENOMEM;
        }
        a->n++;
        return 0;
}

/* Adds the VolumeAttachments of our driver in @list. */
static int add_page(struct gantry_attachments *a, json_t *list)
{
        json_t *item;
        size_t i;
        int r;

        json_array_foreach(json_object_get(list, "items"), i, item) {
                json_t *spec = json_object_get(item, "spec");
                const char *attacher = json_string_value(json_object_get(spec, "attacher"));
                const char *pv = json_string_value(
                        json_object_get(json_object_get(spec, "source"), "persistentVolumeName"));

                if (!attacher || strcmp(attacher, GANTRY_CSI_DRIVER_NAME) != 0 || !pv)
                        continue;
                if ((r = add(a, pv, json_string_value(json_object_get(spec, "nodeName")))) < 0)
                        return r;
        }
        return 0;
}

int gantry_attachments_list(struct gantry_kube_client *client, struct gantry_attachments **ret,
                            struct gantry_error *err)
{
        struct gantry_attachments *a = calloc(1, sizeof(*a));
        char path[1024], *cont = NULL;
        int r = 0;

        if (!a)
                return gantry_error_set(err, ENOMEM, "out of memory");
        for (int page = 0; page < MAX_PAGES; page++) {
                json_t *list = NULL;
                const char *next;

                snprintf(path, sizeof(path), "%s%s%s", VA_PATH, cont ? "&continue=" : "",
                         cont ? cont : "");
                free(cont);
                cont = NULL;
                if ((r = gantry_kube_get(client, path, "list", "volumeattachments", &list, err)) < 0) {
                        char why[GANTRY_ERROR_MSG_MAX];
                        snprintf(why, sizeof(why), "%s", err->msg);
                        r = gantry_error_set(err, r == -EACCES ? EACCES : ENOTCONN,
                                             "cannot read the VolumeAttachments: %s", why);
                        break;
                }
                r = add_page(a, list);
                next = json_string_value(json_object_get(json_object_get(list, "metadata"), "continue"));
                if (r == 0 && next && *next && strlen(next) < 512 &&
                    strspn(next, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_=") ==
                            strlen(next))
                        cont = strdup(next);
                json_decref(list);
                if (r < 0) {
                        r = gantry_error_set(err, -r, "VolumeAttachments: %s", strerror(-r));
                        break;
                }
                if (!cont)
                        break;
        }
        free(cont);
        if (r < 0) {
                gantry_attachments_free(a);
                return r;
        }
        *ret = a;
        return 0;
}

const char *gantry_attachments_node(const struct gantry_attachments *a, const char *pv)
{
        for (size_t i = 0; a && i < a->n; i++)
                if (strcmp(a->pv[i], pv) == 0)
                        return a->node[i];
        return NULL;
}
