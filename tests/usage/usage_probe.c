/*
 * The node plugin's sampler (node/qos/usage_sampler.c) over real pod
 * cgroups, for the VM test (tests/usage/vm_usage.sh): samples the given
 * cgroups at the given interval on the real clock, then prints the metrics
 * it rendered; the events go to the log (no API access), as on a node
 * without a kubeconfig.
 *
 *   usage_probe WINDOW_MS INTERVAL_MS PASSES TARGET...
 *   TARGET = NAME:CGROUP_DIR:MAJ:MIN:RBPS_CAP:DECLARED_RBPS
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "metrics.h"
#include "usage_sampler.h"

#define MAX_T 16

static struct gantry_usage_target ts[MAX_T];
static size_t n_ts;

static int iterate(void *ctx, gantry_usage_visit_fn visit, void *vctx)
{
        (void)ctx;
        for (size_t i = 0; i < n_ts; i++)
                if (visit(vctx, &ts[i]) < 0)
                        break;
        return 0;
}

static uint64_t now_ms(void)
{
        struct timespec t;

        clock_gettime(CLOCK_MONOTONIC, &t);
        return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

int main(int argc, char **argv)
{
        struct gantry_metrics *m = gantry_metrics_new();
        struct gantry_usage_sampler_options o = { .iterate = iterate, .metrics = m };
        struct gantry_usage_sampler *s = NULL;
        char *text = NULL;
        int passes;

        if (argc < 5 || !m) {
                fprintf(stderr, "usage: usage_probe WINDOW_MS INTERVAL_MS PASSES "
                                "NAME:CGROUP_DIR:MAJ:MIN:RBPS_CAP:DECLARED_RBPS...\n");
                return 2;
        }
        gantry_usage_window_config_default(&o.window);
        o.window.window_ms = strtoull(argv[1], NULL, 10);
        o.interval_ms = (unsigned)strtoul(argv[2], NULL, 10);
        passes = atoi(argv[3]);
        for (int i = 4; i < argc && n_ts < MAX_T; i++) {
                char *f[6], *save = NULL, *p = argv[i];
                int k = 0;

                while (k < 6 && (f[k] = strtok_r(p, ":", &save)))
                        k++, p = NULL;
                if (k != 6) {
                        fprintf(stderr, "usage_probe: %s: want NAME:DIR:MAJ:MIN:CAP:DECLARED\n", argv[i]);
                        return 2;
                }
                ts[n_ts++] = (struct gantry_usage_target){
                        .pod_uid = f[0], .pod_namespace = "bench", .pod_name = f[0], .job = "probe",
                        .volume_id = "vol", .cgroup_dir = f[1],
                        .major = (unsigned)strtoul(f[2], NULL, 10),
                        .minor = (unsigned)strtoul(f[3], NULL, 10),
                        .rbps_cap = strtoull(f[4], NULL, 10), .declared_rbps = strtoull(f[5], NULL, 10),
                        .policy = "cap",
                };
        }
        if (gantry_usage_sampler_new(&o, &s) < 0)
                return 1;
        for (int p = 0; p < passes; p++) {
                struct timespec d = { (time_t)(o.interval_ms / 1000),
                                      (long)(o.interval_ms % 1000) * 1000000 };

                if (p)
                        nanosleep(&d, NULL);
                if (gantry_usage_sampler_pass(s, now_ms()) < (int)n_ts) {
                        fprintf(stderr, "usage_probe: pass %d: a cgroup could not be read\n", p);
                        return 1;
                }
        }
        if (gantry_metrics_render(m, &text) < 0)
                return 1;
        fputs(text, stdout);
        free(text);
        gantry_usage_sampler_free(s);
        gantry_metrics_free(m);
        return 0;
}
