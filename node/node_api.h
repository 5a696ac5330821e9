/*
 * The node plugin's one Kubernetes API client, opened once by the Node
 * service and lent to both of its users: the bandwidth caps' GETs of a
 * publishing pod and its volumes (node/qos/qos_api.c) and the events posted
 * on pods (node/qos/pod_event.c). Where it reaches the API is decided once:
 * the --kubeconfig file, else the in-cluster config of the pod's
 * ServiceAccount when KUBERNETES_SERVICE_HOST is set, else nowhere (caps not
 * enforced, events only logged: each user says so in its start log).
 */
#pragma once

#include "error.h"

struct gantry_kube_client;
struct gantry_metrics;

/*
 * Opens the client (@metrics borrowed: its request counters; NULL: none).
 * No API access at all is 0 with no client; a kubeconfig that cannot be
 * used is -errno with @err filled (a typo must not silently turn caps off).
 */
int gantry_node_api_open(const char *kubeconfig, struct gantry_metrics *metrics,
                         struct gantry_error *err);

/* The client, borrowed until gantry_node_api_close(); NULL: no API access. */
struct gantry_kube_client *gantry_node_api(void);

/* Frees the client; call after its users stopped. Safe when not open. */
void gantry_node_api_close(void);
