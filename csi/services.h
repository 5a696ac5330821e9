/*
 * Which services a gantry-csi process runs: the glue between main.c and the
 * controller (controller/) and node (node/) services, so main.c stays free of
 * backend details.
 */
#pragma once

#include <stdbool.h>

#include "config.h"
#include "error.h"
#include "identity.h"

/*
 * Registers the Controller handlers when @controller, the Node handlers when
 * @node (@kubeconfig: the controller's API access, may be NULL), and adds
 * their backend probes to @idopts for Identity.Probe.
 * Returns 0 or -errno with @err filled.
 */
int gantry_services_init(const struct gantry_config *config, const char *node_id,
                         const char *kubeconfig, bool controller, bool node,
                         struct gantry_identity_options *idopts, struct gantry_error *err);

/*
 * A signal came (any thread, also before or during gantry_services_init()):
 * the Kubernetes API requests, Ceph connects and target calls in flight are
 * given up and new ones fail at once, so that the shutdown that follows is
 * quick whatever the API server or a cluster does.
 */
void gantry_services_stop_now(bool controller);

/* Releases what the services hold (connections, caches). */
void gantry_services_shutdown(void);
