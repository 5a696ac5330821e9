/*
 * The controller's one client of the Kubernetes API (api_access.c): the
 * node registry, the eviction policy and the PV copy-state annotation all
 * borrow it from gantry_controller_init().
 */
#pragma once

#include "error.h"

struct gantry_kube_client;

/*
 * A client of the Kubernetes API: @kubeconfig when given, else in-cluster
 * when KUBERNETES_SERVICE_HOST is set. *@ret is NULL (and 0 returned) when
 * neither is there: the controller then runs without API access. -errno
 * with @err filled when the API config is broken.
 */
int gantry_api_access_open(const char *kubeconfig, struct gantry_kube_client **ret,
                           struct gantry_error *err);
