/*
 * The backend observer of gantry-csi's controller: one thread per
 * configured Ceph cluster (with its own userID/keyFile) and per checkpoint
 * target polls the backend every few seconds, smooths what it reads
 * (backend_state.h) and, while this replica holds the Lease
 * "gantry-backend-observer" of its namespace (kube/kube_lease.h; the
 * controller runs as two replicas), publishes each backend's live state as
 * a StorageBackend object (backend_publish.h) -- when it changes, and at
 * least every 15 s as a heartbeat.
 *
 * A Ceph cluster is asked one mon command per poll, `status` (read-only:
 * mon 'allow r' is all it needs), over the controller's cached connection
 * of that cluster (dataset/ceph_conn.c), bounded by the cluster's
 * rbdTimeoutSeconds. A target is asked `bdev_lvol_get_lvstores` over the
 * JSON-RPC client of checkpoint/ (reachability only: no target reports its
 * throughput).
 */
#pragma once

#include "config.h"
#include "error.h"

struct gantry_kube_client;
struct gantry_metrics;

struct gantry_backend_observer_options {
        double poll_seconds;     /* between two polls of a backend; default 2 */
        double heartbeat_seconds; /* longest time between two writes of a status; default 15 */
        const char *identity;    /* this replica (its pod name): the Lease holder, status.observer */
        const char *lease_namespace; /* NULL: the API client's namespace */
        const char *lease_name;  /* NULL: "gantry-backend-observer" */
        struct gantry_metrics *metrics; /* may be NULL */
};

struct gantry_backend_observer;

/*
 * Starts observing every Ceph cluster of @config that has a userID and
 * every target, publishing through @api (borrowed; must outlive the
 * observer). Returns 0 and the observer in *@ret (NULL when there is
 * nothing to observe), or -errno with @err filled.
 */
int gantry_backend_observer_start(const struct gantry_config *config,
                                  struct gantry_kube_client *api,
                                  const struct gantry_backend_observer_options *opts,
                                  struct gantry_backend_observer **ret, struct gantry_error *err);

/* Stops every thread (each ends within one poll's timeout), gives the Lease up. NULL: no-op. */
void gantry_backend_observer_stop(struct gantry_backend_observer *o);
