/*
 * Posts one bandwidth Event on a pod with the node plugin's poster
 * (node/qos/pod_event.c) and the project's Kubernetes client, for
 * test_pod_events.py against a real kube-apiserver.
 *
 *   pod_event_post KUBECONFIG NAMESPACE POD UID TYPE REASON MESSAGE
 *
 * Prints "posted", or "error <errno name> <message>" and exits 1.
 *
 *   pod_event_post KUBECONFIG NAMESPACE POD UID not-enforced WHY -
 *
 * Tells the pod its cap is not enforced (gantry_pod_event_not_enforced)
 * twice in a row: prints "posted held" when the second is held back.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "kube_client.h"
#include "pod_event.h"

int main(int argc, char **argv)
{
        struct gantry_kube_client_options ko = { 0 };
        struct gantry_kube_client *kube = NULL;
        struct gantry_error err = { 0 };
        struct gantry_pod_events pe = { .node = "gpu-7" };
        struct gantry_usage_target t = { 0 };
        int r;

        if (argc != 8) {
                fprintf(stderr, "usage: pod_event_post KUBECONFIG NAMESPACE POD UID TYPE REASON MESSAGE\n");
                return 2;
        }
        ko.kubeconfig = argv[1];
        if ((r = gantry_kube_client_new(&ko, &kube, &err)) < 0) {
                printf("error client %s\n", err.msg);
                return 1;
        }
        pe.kube = kube;
        t.pod_namespace = argv[2];
        t.pod_name = argv[3];
        t.pod_uid = argv[4];
        t.volume_id = "0001-ds";
        if (!strcmp(argv[5], "not-enforced")) {
                int r2 = 0;

                r = gantry_pod_event_not_enforced(&pe, &t, argv[6], &err);
                if (r >= 0)
                        r2 = gantry_pod_event_not_enforced(&pe, &t, argv[6], &err);
                if (r >= 0 && r2 >= 0)
                        printf("%s %s\n", r ? "posted" : "held", r2 ? "posted" : "held");
                r = r < 0 ? r : r2;
        } else {
                r = gantry_pod_event_post(&pe, &t, argv[5], argv[6], argv[7], &err);
        }
        if (r < 0)
                printf("error %s %s\n", r == -EACCES ? "EACCES" : r == -ENOENT ? "ENOENT" : r == -EINVAL ? "EINVAL" : "other",
                       err.msg);
        else if (strcmp(argv[5], "not-enforced"))
                printf("posted\n");
        gantry_kube_client_free(kube);
        return r < 0 ? 1 : 0;
}
