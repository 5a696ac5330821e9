/*
 * The CSI Node service: what runs on each GPU node. It attaches a volume
 * (krbd for datasets), formats it when blank, mounts it at the staging path,
 * bind-mounts it into pods, reports usage and condition, and grows file
 * systems online. All state is rediscovered from sysfs and
 * /proc/self/mountinfo, so a restarted plugin picks up where it left off.
 */
#pragma once

#include <stdint.h>

#include "config.h"
#include "error.h"
#include "node_qos.h"

/*
 * Registers the Node handlers, opens the node's one Kubernetes API client
 * (kube/kube_process.h: @kubeconfig, else the in-cluster service account, else none)
 * and starts the bandwidth measuring loop (node/qos/usage_service.h: its
 * pod events go through that client, else the log). @config and @node_id are
 * borrowed and must outlive the server. Returns 0 or -errno with @err
 * filled.
 */
int gantry_node_init(const struct gantry_config *config, const char *node_id,
                     const char *kubeconfig, struct gantry_error *err);

/*
 * Identity.Probe check for node modes: the kernel's rbd interface
 * (/sys/bus/rbd/add_single_major) is present. Returns 0 or -ENODEV.
 */
int gantry_node_probe(const struct gantry_config *config, int64_t deadline_ms,
                      struct gantry_error *err);

struct gantry_metrics;

/*
 * Where the node service reports its own metrics (degraded NVMe multipath
 * stages, missing paths, the bandwidth sampler's per pod and volume IO). @m is borrowed and must outlive the service;
 * NULL: none. Call before the server starts.
 */
void gantry_node_set_metrics(struct gantry_metrics *m);

/*
 * The IO stall that makes an IOStalled event on a pod (--io-stall-seconds;
 * node/qos/io_stall.h): @seconds of io.pressure stall with no IO moving on
 * the volume; 0 turns stall events off; < 0 the default (5). Call before
 * gantry_node_init().
 */
void gantry_node_set_io_stall_seconds(int seconds);

/* Releases what gantry_node_init() set up. */
/* From the signal thread, at any point of start-up: the process's API
 * requests in flight are aborted and later ones fail at once. */
void gantry_node_stop_now(void);
void gantry_node_shutdown(void);
