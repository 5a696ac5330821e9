/*
 * StorageBackend objects on the API server (see backend_publish.h). The
 * status goes through the status subresource with a JSON merge patch: the
 * observer owns status whole, so a patch of every field is as good as a PUT
 * and needs no resourceVersion round trip.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "backend_publish.h"
#include "kube_client.h"

#define API_PATH "/apis/gantry.io/v1alpha1/storagebackends"

json_t *gantry_backend_status_new(const struct gantry_backend_view *view, const char *observed_at,
                                  const char *observer)
{
        return json_pack("{s:s, s:s, s:I, s:I, s:I, s:f, s:s, s:s}", "state",
                         gantry_observed_state_name(view->state), "reason", view->reason,
                         "clientReadBytesPerSec", (json_int_t)view->read_bytes_per_sec,
                         "clientWriteBytesPerSec", (json_int_t)view->write_bytes_per_sec,
                         "recoveryBytesPerSec", (json_int_t)view->recovery_bytes_per_sec,
                         "degradedRatio", view->degraded_ratio, "observedAt", observed_at,
                         "observer", observer);
}

static int patch_status(struct gantry_kube_client *api, const char *name, const json_t *status,
                        struct gantry_error *err)
{
        char path[sizeof(API_PATH) + GANTRY_BACKEND_NAME_MAX + 16];
        json_t *patch = json_pack("{s:O}", "status", (json_t *)status);
        int r;

        if (!patch)
                return gantry_error_set(err, ENOMEM, "out of memory");
        snprintf(path, sizeof(path), API_PATH "/%s/status", name);
        r = gantry_kube_merge_patch(api, path, "storagebackends/status", patch, err);
        json_decref(patch);
        return r;
}

int gantry_backend_publish(struct gantry_kube_client *api, const char *name, const char *type,
                           const json_t *status, struct gantry_error *err)
{
        json_t *obj;
        int r = patch_status(api, name, status, err);

        if (r != -ENOENT)
                return r;
        obj = json_pack("{s:s, s:s, s:{s:s}, s:{s:s}}", "apiVersion", "gantry.io/v1alpha1", "kind",
                        "StorageBackend", "metadata", "name", name, "spec", "type", type);
        if (!obj)
                return gantry_error_set(err, ENOMEM, "out of memory");
        r = gantry_kube_create(api, API_PATH, "storagebackends", obj, err);
        json_decref(obj);
        if (r < 0 && r != -EEXIST) /* EEXIST: a replica that just lost the lease made it */
                return r;
        return patch_status(api, name, status, err);
}
