/*
 * Where the controller reaches the Kubernetes API, decided once: the
 * --kubeconfig file when one is given, else the in-cluster config of the
 * pod's ServiceAccount when KUBERNETES_SERVICE_HOST is set, else nowhere.
 * "Nowhere" is a supported mode (a controller run outside a cluster, the
 * conformance tests): each user of the client then says in its start log
 * what it cannot check. The client is safe to share between threads
 * (kube_http.c keeps a pool of handles), so one is made per process.
 */
#include <stdlib.h>

#include "api_access.h"
#include "kube_client.h"

int gantry_api_access_open(const char *kubeconfig, struct gantry_kube_client **ret,
                           struct gantry_error *err)
{
        struct gantry_kube_client_options o = { .kubeconfig = kubeconfig };
        const char *host = getenv("KUBERNETES_SERVICE_HOST");

        *ret = NULL;
        if ((!kubeconfig || !*kubeconfig) && (!host || !*host))
                return 0;
        return gantry_kube_client_new(&o, ret, err);
}
