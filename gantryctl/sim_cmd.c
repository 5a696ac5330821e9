/*
 * `gantryctl sim`'s command line (placeholder until the simulator lands).
 */
#include "sim_cmd.h"

#include <stdio.h>

int gantry_sim_main(int argc, char **argv)
{
        (void)argc;
        (void)argv;
        fprintf(stderr, "gantryctl sim: not built yet\n");
        return 1;
}
