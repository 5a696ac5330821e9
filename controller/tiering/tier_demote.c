/*
 * `gantryctl tier demote`'s part in the controller library: finds the one
 * promoted copy a name stands for among the records of every configured
 * cluster, and demotes it with the eviction policy's own function
 * (eviction.c), VolumeAttachments read through the API when there is one.
 *
 * A name is a PVC "NAMESPACE/NAME" (its PV looked up through the API), a PV
 * name (CreateVolume's name), a volume uuid, an image name, or the
 * "CLUSTER/POOL/IMAGE" destination `gantryctl tier status` shows.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "tier_admin.h"
#include "copy_in_use.h"
#include "eviction.h"
#include "kube_client.h"
#include "kube_process.h"
#include "record.h"

struct match {
        const char *what;
        char cluster[GANTRY_CONFIG_ID_MAX + 1];
        char pool[128];
        char key[168]; /* a record id */
        char name[256];
        int n;
};

static int find(const char *cluster_id, const char *pool, const struct gantry_copier_record *rec,
                void *arg)
{
        struct match *m = arg;
        const char *slash = strrchr(rec->destination, '/');

        if (strcmp(rec->kind, "promote") != 0)
                return 0;
        if (strcmp(rec->name, m->what) != 0 && strcmp(rec->id, m->what) != 0 &&
            strcmp(rec->destination, m->what) != 0 && !(slash && strcmp(slash + 1, m->what) == 0))
                return 0;
        if (m->n++ == 0) {
                snprintf(m->cluster, sizeof(m->cluster), "%s", cluster_id);
                snprintf(m->pool, sizeof(m->pool), "%s", pool);
                snprintf(m->key, sizeof(m->key), "%s", rec->id);
                snprintf(m->name, sizeof(m->name), "%s", rec->name);
        }
        return 0;
}

/* The PV bound to PVC "NAMESPACE/NAME" @pvc, into @buf. */
static int pvc_volume(struct gantry_kube_client *kube, const char *pvc, char *buf, size_t size,
                      struct gantry_error *err)
{
        const char *slash = strchr(pvc, '/'), *pv;
        char path[600];
        json_t *o = NULL;
        int r;

        if (!kube)
                return gantry_error_set(err, EINVAL, "%s: a PVC needs API access (--kubeconfig, "
                                        "or run in the cluster); name its PV instead", pvc);
        snprintf(path, sizeof(path), "/api/v1/namespaces/%.*s/persistentvolumeclaims/%s",
                 (int)(slash - pvc), pvc, slash + 1);
        if ((r = gantry_kube_get(kube, path, "get", "persistentvolumeclaims", &o, err)) < 0)
                return r == -ENOENT ? gantry_error_set(err, ENOENT, "PVC %s does not exist", pvc) : r;
        pv = json_string_value(json_object_get(json_object_get(o, "spec"), "volumeName"));
        r = pv && *pv ? 0 : gantry_error_set(err, ENOENT, "PVC %s is not bound to a PV", pvc);
        if (r == 0)
                snprintf(buf, size, "%s", pv);
        json_decref(o);
        return r;
}

static bool valid_pvc(const char *s)
{
        const char *slash = strchr(s, '/');

        return slash && slash != s && slash[1] && !strchr(slash + 1, '/') && strlen(s) < 300 &&
               strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-./") == strlen(s);
}

int gantry_controller_demote(const struct gantry_config *config, const char *what,
                             const char *kubeconfig, char *out, size_t out_size,
                             struct gantry_error *err)
{
        struct gantry_kube_client *kube = NULL;
        struct gantry_attachments *attached = NULL;
        struct gantry_dataset_target t = { 0 };
        struct match m = { .what = what };
        char pv[256];
        const char *why = NULL;
        uint64_t freed = 0;
        int r;

        if (!what || !*what || strlen(what) > 600)
                return gantry_error_set(err, EINVAL, "name a PVC (NAMESPACE/NAME), a PV, a volume "
                                        "uuid or an image");
        if ((r = gantry_kube_process_open(kubeconfig, NULL, err)) < 0)
                return r;
        kube = gantry_kube_process_client();
        if (strchr(what, '/') && !strchr(strchr(what, '/') + 1, '/')) {
                if (!valid_pvc(what)) {
                        r = gantry_error_set(err, EINVAL, "%s: not a NAMESPACE/NAME of a PVC", what);
                        goto out;
                }
                if ((r = pvc_volume(kube, what, pv, sizeof(pv), err)) < 0)
                        goto out;
                m.what = pv;
        }
        if (gantry_controller_list_copies(config, find, NULL, &m) < 0 && m.n == 0) {
                r = gantry_error_set(err, EIO, "cannot read the copy records of every cluster");
                goto out;
        }
        if (m.n == 0) {
                r = gantry_error_set(err, ENOENT, "%s: no promoted copy has this name", m.what);
                goto out;
        }
        if (m.n > 1) {
                r = gantry_error_set(err, EINVAL, "%s names %d copies: give CLUSTER/POOL/IMAGE "
                                     "(gantryctl tier status)", m.what, m.n);
                goto out;
        }
        if (kube && (r = gantry_attachments_list(kube, &attached, err)) < 0)
                goto out; /* cannot tell whether it is attached: never guess */
        if ((r = gantry_dataset_target_open_pool(config, m.cluster, m.pool, NULL, 0, &t, err)) < 0)
                goto out;
        r = gantry_eviction_demote(m.cluster, t.io, m.key, "manual", -1, attached, kube, &freed,
                                   &why, err);
        if (r == 0)
                snprintf(out, out_size, "demoted %s (%s/%s, %llu bytes of copy discarded); the "
                         "next ControllerPublishVolume copies it again", m.name, m.cluster, m.pool,
                         (unsigned long long)freed);
        else if (r == 1)
                snprintf(out, out_size, "%s is already demoted", m.name);
out:
        gantry_dataset_target_close(&t);
        gantry_attachments_free(attached);
        gantry_kube_process_close();
        return r;
}
