/*
 * Which node IDs exist, for ControllerPublishVolume's NOT_FOUND: the IDs our
 * own node plugins reported in NodeGetInfo. kubelet writes each one into the
 * node's CSINode object (spec.drivers[name=csi.gantry.io].nodeID) when it
 * registers the plugin, so the CSINode objects are the registry: nothing of
 * ours to keep in step, gone when the node is gone.
 *
 * kubelet names the CSINode after the node, and our node ID is normally
 * the node name: one GET of csinodes/<node_id> settles the usual case. Only
 * when that object does not exist or does not carry the ID for our driver
 * (a node plugin started with another --node-id) are all CSINodes listed,
 * in pages, to look for it under another name.
 *
 * The controller reads them through the Kubernetes API (in-cluster, or
 * --kubeconfig); the attacher sidecar beside it already needs the same
 * "get/list csinodes" grants. Without API access a controller that serves
 * the node service in the same process (--mode all) still knows one node
 * for certain, its own: that ID is the only one that exists, any other is
 * NOT_FOUND. A bare controller without API access (run outside a cluster)
 * cannot tell: every node ID is taken as existing; the start log says so.
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

#define CSINODES "/apis/storage.k8s.io/v1/csinodes"
#define CSINODES_PATH CSINODES "?limit=500"
#define OBJECT_NAME_MAX 253
#define MAX_PAGES 200

static struct gantry_kube_client *client; /* borrowed from controller.c */
static char own_node[OBJECT_NAME_MAX + 1];   /* --mode all: this process's node ID */

void gantry_node_registry_own(const char *node_id)
{
        snprintf(own_node, sizeof(own_node), "%s", node_id ? node_id : "");
}

void gantry_node_registry_init(struct gantry_kube_client *kube)
{
        client = kube;
        if (!client && own_node[0]) {
                log_info("controller.node_registry",
                         "source=own_node node_id=%s reason=\"no API access: the node plugin "
                         "of this process is the only node known\"", own_node);
                return;
        }
        if (!client) {
                log_info("controller.node_ids_unchecked",
                         "reason=\"no API access (neither --kubeconfig nor in-cluster)\"");
                return;
        }
        log_info("controller.node_registry", "source=csinodes server=%s",
                 gantry_kube_client_server(client));
}

void gantry_node_registry_shutdown(void)
{
        client = NULL;
        own_node[0] = '\0';
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

/* An API error as the answer: "cannot tell", never "no such node". */
static int api_error(int r, struct gantry_error *err)
{
        char why[GANTRY_ERROR_MSG_MAX];

        snprintf(why, sizeof(why), "%s", err->msg);
        return gantry_error_set(err, r == -EACCES ? EACCES : ENOTCONN,
                                "node_id: cannot read the CSINode objects: %s", why);
}

/* Whether @s can be an object name (a DNS subdomain), so needs no escaping in a path. */
static bool object_name(const char *s)
{
        size_t n = strlen(s);

        return n > 0 && n <= OBJECT_NAME_MAX &&
               strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-.") == n;
}

/*
 * The fast path: CSINode @node_id itself. 1 when it lists our driver with
 * this ID, 0 when it is absent or does not, -errno when the API failed.
 */
static int named_after(const char *node_id, struct gantry_error *err)
{
        char path[sizeof(CSINODES) + OBJECT_NAME_MAX + 2];
        json_t *node = NULL;
        bool found;
        int r;

        if (!object_name(node_id))
                return 0;
        snprintf(path, sizeof(path), "%s/%s", CSINODES, node_id);
        r = gantry_kube_get(client, path, "get", "csinodes", &node, err);
        if (r == -ENOENT) {
                gantry_error_clear(err);
                return 0;
        }
        if (r < 0)
                return r;
        found = lists(node, node_id);
        json_decref(node);
        return found;
}

int gantry_node_registry_check(const char *node_id, struct gantry_error *err)
{
        char path[1024], *cont = NULL;
        bool found = false;
        int r = 0;

        if (!client && own_node[0]) {
                if (strcmp(node_id, own_node) == 0)
                        return 0;
                return gantry_error_set(err, ENOENT,
                                        "node_id: %s: not a node of this plugin (without API "
                                        "access it knows only its own node, %s)",
                                        node_id, own_node);
        }
        if (!client)
                return 0;
        r = named_after(node_id, err);
        if (r < 0)
                return api_error(r, err);
        if (r > 0)
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
                if (r < 0)
                        return api_error(r, err);
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
