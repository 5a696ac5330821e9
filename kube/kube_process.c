/*
 * The process's one Kubernetes API client (see kube_process.h), counted by
 * reference: the Controller and the Node service open and close it each in
 * their own init and shutdown, in whatever order main runs them. The client
 * itself is safe to share between threads (kube_http.c keeps a pool of
 * handles).
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "kube_client.h"
#include "kube_process.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct gantry_kube_client *client;
static unsigned int refs;
static bool stopping; /* gantry_kube_process_stop(): for good */

int gantry_kube_process_open(const char *kubeconfig, struct gantry_metrics *metrics,
                             struct gantry_error *err)
{
        struct gantry_kube_client_options o = { .kubeconfig = kubeconfig, .metrics = metrics };
        const char *host = getenv("KUBERNETES_SERVICE_HOST");
        int r = 0;

        pthread_mutex_lock(&lock);
        if (refs == 0 && ((kubeconfig && *kubeconfig) || (host && *host)))
                r = gantry_kube_client_new(&o, &client, err);
        if (r == 0 && stopping)
                gantry_kube_client_stop(client);
        if (r == 0)
                refs++;
        pthread_mutex_unlock(&lock);
        return r;
}

struct gantry_kube_client *gantry_kube_process_client(void)
{
        struct gantry_kube_client *c;

        pthread_mutex_lock(&lock);
        c = client;
        pthread_mutex_unlock(&lock);
        return c;
}

void gantry_kube_process_stop(void)
{
        pthread_mutex_lock(&lock);
        stopping = true;
        gantry_kube_client_stop(client);
        pthread_mutex_unlock(&lock);
}

void gantry_kube_process_close(void)
{
        pthread_mutex_lock(&lock);
        if (refs > 0 && --refs == 0) {
                gantry_kube_client_free(client);
                client = NULL;
                stopping = false; /* an open after this is a new start */
        }
        pthread_mutex_unlock(&lock);
}
