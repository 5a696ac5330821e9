/*
 * Which node IDs exist, for ControllerPublishVolume's NOT_FOUND: the IDs our
 * own node plugins reported in NodeGetInfo. kubelet writes each one into the
 * node's CSINode object (spec.drivers[name=csi.gantry.io].nodeID) when it
 * registers the plugin, so the CSINode objects are the registry: nothing of
 * ours to keep in step, gone when the node is gone.
 *
 * The controller reads them through the Kubernetes API (in-cluster, or
 * --kubeconfig); the attacher sidecar beside it already needs the same
 * "list csinodes" grant. Without API access (a controller run outside a
 * cluster, the conformance tests) node IDs are not checked and every node
 * ID is taken as existing; the start log says so.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "identity.h"
#include "kube_client.h"
#include "log.h"
#include "node_registry.h"

#define CSINODES_PATH "/apis/storage.k8s.io/v1/csinodes?limit=500"
#define MAX_PAGES 200

static struct gantry_kube_client *client;

int gantry_node_registry_init(const char *kubeconfig, struct gantry_error *err)
{
        struct gantry_kube_client_options o = { .kubeconfig = kubeconfig };
        const char *host = getenv("KUBERNETES_SERVICE_HOST");
        int r;

        if ((!kubeconfig || !*kubeconfig) && (!host || !*host)) {
                log_info("controller.node_ids_unchecked",
                         "reason=\"no API access (neither --kubeconfig nor in-cluster)\"");
                return 0;
        }
        r = gantry_kube_client_new(&o, &client, err);
        if (r < 0)
                return r;
        log_info("controller.node_registry", "source=csinodes server=%s",
                 gantry_kube_client_server(client));
        return 0;
}

void gantry_node_registry_shutdown(void)
{
        gantry_kube_client_free(client);
        client = NULL;
}

/* Whether CSINode @node lists driver csi.gantry.io with @node_id. */
static bool lists(json_t *node, const char *node_id)
{
        json_t *d;
        size_t i;

        json_array_foreach(json_object_get(json_object_get(node, "spec"), "drivers"), i, d) {
                const char *name = json_string_value(json_object_get(d, "name"));
                const char *id = json_string_value(json_object_get(d, "nodeID"));
                if (name && id && strcmp(name, GANTRY_CSI_DRIVER_NAME) == 0 &&
                    strcmp(id, node_id) == 0)
                        return true;
        }
        return false;
}

int gantry_node_registry_check(const char *node_id, struct gantry_error *err)
{
        char path[1024], *cont = NULL;
        bool found = false;
        int r = 0;

        if (!client)
                return 0;
        for (int page = 0; page < MAX_PAGES && !found; page++) {
                json_t *list = NULL, *item;
                const char *next;
                size_t i;

                snprintf(path, sizeof(path), "%s%s%s", CSINODES_PATH, cont ? "&continue=" : "",
                         cont ? cont : "");
                free(cont);
                cont = NULL;
                r = gantry_kube_get(client, path, "list", "csinodes", &list, err);
                if (r < 0) {
                        /* the API is away or refuses: say so, never "no such node" */
                        char why[GANTRY_ERROR_MSG_MAX];
                        snprintf(why, sizeof(why), "%s", err->msg);
                        return gantry_error_set(err, r == -EACCES ? EACCES : ENOTCONN,
                                                "node_id: cannot read the CSINode objects: %s",
                                                why);
                }
                json_array_foreach(json_object_get(list, "items"), i, item)
                        if (lists(item, node_id))
                                found = true;
                next = json_string_value(json_object_get(json_object_get(list, "metadata"),
                                                         "continue"));
                if (next && *next && strspn(next, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                                  "0123456789-_=") == strlen(next) &&
                    strlen(next) < 512)
                        cont = strdup(next);
                json_decref(list);
                if (!cont)
                        break;
        }
        free(cont);
        if (!found)
                return gantry_error_set(err, ENOENT,
                                        "node_id: %s: no node runs the %s node plugin with this "
                                        "ID (no CSINode lists it)",
                                        node_id, GANTRY_CSI_DRIVER_NAME);
        return 0;
}
