/*
 * Writes a backend's live state as a StorageBackend object
 * (gantry.io/v1alpha1, cluster-scoped; manifests/storagebackend-crd.yaml):
 * the object is created when missing (spec.type only: the API server
 * ignores a status sent on create when the status subresource is on), then
 * its status is merge-patched through the status subresource.
 */
#pragma once

#include <stddef.h>

#include <jansson.h>

#include "backend_name.h"
#include "backend_state.h"
#include "error.h"

struct gantry_kube_client;

/*
 * The status object of @view: state, reason, the three rates, degradedRatio,
 * observedAt (@observed_at, RFC 3339 UTC) and observer. NULL on out of memory.
 */
json_t *gantry_backend_status_new(const struct gantry_backend_view *view, const char *observed_at,
                                  const char *observer);

/*
 * Publishes @status (borrowed) for backend @name of @type ("ceph" or
 * "nvmeof"): merge-patches storagebackends/@name/status, and when the
 * object does not exist creates it and patches again. Returns 0 or -errno
 * with @err as gantry_kube_merge_patch() fills it. Any thread.
 */
int gantry_backend_publish(struct gantry_kube_client *api, const char *name, const char *type,
                           const json_t *status, struct gantry_error *err);
