/*
 * Prints the Kubernetes API calls gantry-scheduler's client makes, one
 * "verb group resource" line each ("-" for the core group), from the table
 * compiled into the client (gantry_kube_api_calls(), kube/
 * kube_client.c). test_rbac.py compares them with the ClusterRole of the
 * gantry-scheduler ServiceAccount in manifests/ and in the chart.
 */
#include <stdio.h>

#include "kube_client.h"

int main(void)
{
        size_t n = 0;
        const struct gantry_kube_api_call *calls = gantry_kube_api_calls(&n);

        for (size_t i = 0; i < n; i++)
                printf("%s %s %s\n", calls[i].verb,
                       calls[i].api_group[0] ? calls[i].api_group : "-", calls[i].resource);
        return n > 0 ? 0 : 1;
}
