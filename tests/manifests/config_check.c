/*
 * Loads driver config files with the driver's own loader (common/config.c)
 * and prints, for each, "ok PATH" or the error it gives at start. Used by
 * test_config.py on the gantry.json of manifests/ and of chart renders, so a
 * shipped config is one gantry-csi accepts.
 */
#include <stdio.h>

#include "config.h"
#include "error.h"

int main(int argc, char **argv)
{
        int failed = 0;

        for (int i = 1; i < argc; i++) {
                struct gantry_config *config = NULL;
                struct gantry_error err = { 0 };

                if (gantry_config_load(argv[i], &config, &err) < 0) {
                        printf("error %s: %s\n", argv[i], err.msg);
                        failed = 1;
                        continue;
                }
                printf("ok %s\n", argv[i]);
                gantry_config_free(config);
        }
        return argc > 1 ? failed : 2;
}
