/*
 * The glue between gantry-csi's main and its services; see services.h.
 *
 * The controller and node services land with their issues; until a service
 * is built, its methods stay without a handler and answer UNIMPLEMENTED.
 */
#include "services.h"

int gantry_services_init(const struct gantry_config *config, const char *node_id, bool controller,
                         bool node, struct gantry_identity_options *idopts,
                         struct gantry_error *err)
{
        (void)config;
        (void)node_id;
        (void)controller;
        (void)node;
        (void)idopts;
        (void)err;
        return 0;
}

void gantry_services_shutdown(void)
{
}
