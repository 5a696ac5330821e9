/*
 * The node plugin's one Kubernetes API client (see node_api.h). The client
 * is safe to share between threads (kube_http.c keeps a pool of handles):
 * NodePublishVolume's GETs and the sampler's events go through the same one.
 */
#include <stdlib.h>

#include "kube_client.h"
#include "node_api.h"

static struct gantry_kube_client *client;

int gantry_node_api_open(const char *kubeconfig, struct gantry_metrics *metrics,
                         struct gantry_error *err)
{
        struct gantry_kube_client_options o = { .kubeconfig = kubeconfig, .metrics = metrics };
        const char *host = getenv("KUBERNETES_SERVICE_HOST");

        if (client)
                return 0;
        if ((!kubeconfig || !*kubeconfig) && (!host || !*host))
                return 0;
        return gantry_kube_client_new(&o, &client, err);
}

struct gantry_kube_client *gantry_node_api(void)
{
        return client;
}

void gantry_node_api_close(void)
{
        gantry_kube_client_free(client);
        client = NULL;
}
