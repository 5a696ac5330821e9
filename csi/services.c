/*
 * The glue between gantry-csi's main and its services; see services.h.
 *
 * Until a service is built, its methods stay without a handler and answer
 * UNIMPLEMENTED.
 */
#include "services.h"

#include "controller.h"
#include "node.h"
#include "node_registry.h"

int gantry_services_init(const struct gantry_config *config, const char *node_id,
                         const char *kubeconfig, bool controller, bool node,
                         struct gantry_identity_options *idopts, struct gantry_error *err)
{
        int r;

        if (controller) {
                /* --mode all: the controller knows its own node even without the API */
                gantry_node_registry_own(controller && node ? node_id : NULL);
                r = gantry_controller_init(config, kubeconfig, err);
                if (r < 0)
                        return r;
                idopts->probes[idopts->n_probes] = gantry_controller_probe;
                idopts->probe_names[idopts->n_probes++] = "ceph";
        }
        if (node) {
                if ((r = gantry_node_init(config, node_id, kubeconfig, err)) < 0)
                        return r;
                idopts->probes[idopts->n_probes] = gantry_node_probe;
                idopts->probe_names[idopts->n_probes++] = "krbd";
        }
        return 0;
}

void gantry_services_stop_now(bool controller)
{
        gantry_node_stop_now();
        if (controller)
                gantry_controller_stop_now();
}

void gantry_services_shutdown(void)
{
        gantry_controller_shutdown();
        gantry_node_shutdown();
}
