/*
 * gantryctl: Gantry's command-line tools for platform teams.
 *
 *   gantryctl plan ...   sizing calculators (plan_report.c, plan_model.c)
 *   gantryctl sim  ...   the placement simulator (sim_*.c)
 *   gantryctl tier ...   tiering copies: status, promote (tier_cmd.c)
 *   gantryctl usage ...  declared vs used bandwidth per job (usage_cmd.c)
 *   gantryctl backends . storage backends' live state and reservations (backends_cmd.c)
 *   gantryctl dhchap ... DH-HMAC-CHAP key rotation on the targets (dhchap_cmd.c)
 *
 * Exit codes: 0 success, 1 failure while running, 2 bad usage or input.
 */
#include <stdio.h>
#include <string.h>

#include "backends_cmd.h"
#include "dhchap_cmd.h"
#include "plan_report.h"
#include "sim_cmd.h"
#include "tier_cmd.h"
#include "usage_cmd.h"

static void usage(FILE *f)
{
        fprintf(f, "usage: gantryctl plan [flags]   sizing: dataset reads, capacity, checkpoints\n"
                   "       gantryctl sim  [flags]   placement simulator against the max-flow bound\n"
                   "       gantryctl tier status|promote [flags]   tiering copies: progress, promote an image\n"
                   "       gantryctl usage --metrics URL... [--json]   declared vs used bandwidth per job\n"
                   "       gantryctl backends --metrics URL [--json]   storage backends' live state and reservations\n"
                   "       gantryctl dhchap rotate [flags]   a host's new DH-HMAC-CHAP key on the targets\n"
                   "       gantryctl --version\n"
                   "Run a command with --help for its flags.\n");
}

int main(int argc, char **argv)
{
        if (argc < 2) {
                usage(stderr);
                return 2;
        }
        if (strcmp(argv[1], "plan") == 0)
                return gantry_plan_main(argc - 2, argv + 2);
        if (strcmp(argv[1], "sim") == 0)
                return gantry_sim_main(argc - 2, argv + 2);
        if (strcmp(argv[1], "tier") == 0)
                return gantry_tier_main(argc - 2, argv + 2);
        if (strcmp(argv[1], "usage") == 0)
                return gantry_usage_main(argc - 2, argv + 2);
        if (strcmp(argv[1], "backends") == 0)
                return gantry_backends_main(argc - 2, argv + 2);
        if (strcmp(argv[1], "dhchap") == 0)
                return gantry_dhchap_main(argc - 2, argv + 2);
        if (strcmp(argv[1], "--version") == 0) {
                printf("gantryctl %s\n", GANTRY_VERSION);
                return 0;
        }
        if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
                usage(stdout);
                return 0;
        }
        fprintf(stderr, "gantryctl: %s: unknown command\n", argv[1]);
        usage(stderr);
        return 2;
}
