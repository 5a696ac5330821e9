/*
 * Node IDs our node plugins reported (node_registry.c), for the
 * ControllerPublishVolume of every tier.
 */
#pragma once

#include "error.h"

/*
 * Reads node IDs from the CSINode objects through the Kubernetes API:
 * @kubeconfig, else in-cluster when KUBERNETES_SERVICE_HOST is set, else
 * not at all (node IDs unchecked). -errno when the API config is broken.
 */
int gantry_node_registry_init(const char *kubeconfig, struct gantry_error *err);
void gantry_node_registry_shutdown(void);
/*
 * 0 when @node_id is one a node plugin of ours reported (or nothing can be
 * checked); -ENOENT naming node_id when none did; -ENOTCONN / -EACCES when
 * the API cannot be read.
 */
int gantry_node_registry_check(const char *node_id, struct gantry_error *err);
