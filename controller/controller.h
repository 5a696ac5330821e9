/*
 * The CSI Controller service of gantry-csi: provisioning of dataset volumes
 * (Ceph RBD, data in an erasure-coded pool, dataset/), checkpoint volumes
 * (NVMe-oF namespaces on gantry-target, checkpoint/) and their snapshots,
 * and datasets tiered between clusters (tiering/). A request for a tier
 * this build does not serve is refused with the parameter named.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "error.h"
/* what gantryctl asks of the tiering: list the copy records, promote, refresh, demote */
#include "tier_admin.h"

/*
 * Registers the Controller handlers with the CSI server (csi/csi_call.h).
 * Call before the server starts. Returns 0 or -errno with @err filled.
 */
int gantry_controller_init(const struct gantry_config *config, const char *kubeconfig,
                           struct gantry_error *err);

/*
 * Identity.Probe's check: every configured Ceph cluster that has
 * credentials in the config answers within @deadline_ms (CLOCK_MONOTONIC
 * ms). Returns 0, or -errno with @err naming the cluster.
 */
int gantry_controller_probe(const struct gantry_config *config, int64_t deadline_ms,
                            struct gantry_error *err);

struct gantry_metrics;

/*
 * Seconds between two polls of each storage backend by the backend
 * observer (backends/backend_observer.h); 0 turns it off. Default 2; call
 * before init.
 */
void gantry_controller_set_backend_poll(double seconds);

/* Where the controller counts what it does besides requests (copies); call before init. */
void gantry_controller_set_metrics(struct gantry_metrics *m);

/* Stops the running copies (each persists its position), closes every cached Ceph connection. */
void gantry_controller_shutdown(void);

/*
 * The process is stopping (a signal; any thread, at any point of the start):
 * API requests, Ceph connects in progress and target calls in flight are
 * given up, and new ones fail at once, so gantry_controller_shutdown() joins its threads within
 * a second or two. Cleared by gantry_controller_shutdown().
 */
void gantry_controller_stop_now(void);
