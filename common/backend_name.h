/*
 * Names of storage backends (a Ceph cluster's clusterID, a checkpoint
 * target's targetID) as the rest of the cluster sees them: the name of the
 * StorageBackend object the controller's observer publishes a backend's
 * live state under, and the backend a volume ID names (every Gantry volume
 * ID starts "<version>-<length:4 hex>-<backend>-": dataset IDs version 0001
 * name their clusterID, checkpoint IDs 0002 their targetID), so that a node
 * that only knows a volume can read its backend's state.
 */
#pragma once

#include <stddef.h>

#define GANTRY_BACKEND_NAME_MAX 64

/*
 * The object name of backend @id (a clusterID or targetID): lower-cased,
 * every character outside [a-z0-9.-] made '-', leading and trailing '-'
 * and '.' dropped -- a DNS-1123 subdomain. Returns 0, or -EINVAL when
 * nothing is left or @id is longer than GANTRY_BACKEND_NAME_MAX.
 */
int gantry_backend_object_name(const char *id, char *buf, size_t size);

/*
 * The backend volume ID @volume_id names, written to @buf (at most
 * GANTRY_BACKEND_NAME_MAX + 1 bytes needed), and its tier in *@ret_tier
 * ("dataset" for version 0001, "checkpoint" for 0002; may be NULL).
 * Returns 0, or -EINVAL when @volume_id is not of that shape or @buf is too
 * small (nothing written then).
 */
int gantry_backend_of_volume(const char *volume_id, char *buf, size_t size,
                             const char **ret_tier);
