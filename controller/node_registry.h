/*
 * Node IDs our node plugins reported (node_registry.c), for the
 * ControllerPublishVolume of every tier.
 */
#pragma once

#include "error.h"

struct gantry_kube_client;

/*
 * Reads node IDs from the CSINode objects through @kube (borrowed until
 * gantry_node_registry_shutdown()); NULL: no API access, node IDs are not
 * checked and the start log says so.
 */
void gantry_node_registry_init(struct gantry_kube_client *kube);
/*
 * The node ID of the node service in this same process (--mode all), set
 * before gantry_node_registry_init(): without API access it is then the one
 * node ID that exists, and any other is -ENOENT.
 */
void gantry_node_registry_own(const char *node_id);
void gantry_node_registry_shutdown(void);
/*
 * 0 when @node_id is one a node plugin of ours reported (or, without API
 * access, is this process's own node; or nothing can be checked); -ENOENT
 * naming node_id when none did; -ENOTCONN / -EACCES when
 * the API cannot be read.
 */
int gantry_node_registry_check(const char *node_id, struct gantry_error *err);
