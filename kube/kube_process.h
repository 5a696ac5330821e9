/*
 * The process's one client of the Kubernetes API. gantry-csi in --mode all
 * runs the Controller and the Node service in one process: both borrow this
 * client, so the process has one pool of connections, one set of request
 * metrics and one decision of where the API is: the --kubeconfig file, else
 * the in-cluster config of the pod's ServiceAccount when
 * KUBERNETES_SERVICE_HOST is set, else nowhere. "Nowhere" is a supported
 * mode (a plugin run outside a cluster, the conformance tests): each user
 * then says in its start log what it cannot do.
 */
#pragma once

#include "error.h"

struct gantry_kube_client;
struct gantry_metrics;

/*
 * Takes a reference to the process's client, opening it on the first call
 * (@metrics borrowed for its request counters; NULL: none; later callers'
 * @kubeconfig and @metrics are those of the first). No API access at all is
 * 0 with no client; a kubeconfig that cannot be used is -errno with @err
 * filled (a typo must not silently turn a feature off), and no reference.
 */
int gantry_kube_process_open(const char *kubeconfig, struct gantry_metrics *metrics,
                             struct gantry_error *err);

/* The client, borrowed while a reference is held; NULL: no API access. */
struct gantry_kube_client *gantry_kube_process_client(void);

/*
 * The process is stopping (a signal, any thread): the client's requests in
 * flight are aborted and later ones fail at once (gantry_kube_client_stop()),
 * also those of a client opened after this call (until the last reference
 * is given back).
 */
void gantry_kube_process_stop(void);

/* Gives a reference back; the last one frees the client, once its users
 * stopped. Safe without a reference. */
void gantry_kube_process_close(void);
