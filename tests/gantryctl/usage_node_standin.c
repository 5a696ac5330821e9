/*
 * A node plugin's bandwidth metrics endpoint for `gantryctl usage`'s tests:
 * the real sampler (node/qos/usage_sampler.c) and the real registry and
 * /metrics server (common/metrics.c) over pod cgroups that are plain
 * directories this program fills (io.stat, io.pressure) at made-up times.
 * Only the cgroups and the clock are stand-ins: no kernel here enforces or
 * counts IO per pod (that runs in the VM).
 *
 *   usage_node_standin SPEC.json WORKDIR
 *
 * SPEC: {"passes": N, "targets": [{"uid", "namespace", "pod", "job", "volume",
 * "major", "minor", "rcap", "wcap", "rdecl", "wdecl", "rbps", "wbps",
 * "stallMsPer10s"}]}: N passes 10 s apart, each target's counters advanced
 * at rbps/wbps. Then serves /metrics on 127.0.0.1, prints "port N" and
 * waits until stdin closes.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "metrics.h"
#include "usage_sampler.h"

#define MAX_T 64

struct t {
        struct gantry_usage_target t;
        char dir[512];
        uint64_t rbps, wbps, stall_ms, rbytes, wbytes, stall_us;
};

static struct t ts[MAX_T];
static size_t n_ts;

static int iterate(void *ctx, gantry_usage_visit_fn visit, void *vctx)
{
        (void)ctx;
        for (size_t i = 0; i < n_ts; i++)
                if (visit(vctx, &ts[i].t) < 0)
                        break;
        return 0;
}

static int write_pod(const char *dir)
{
        char path[600];
        uint64_t stall = 0;
        FILE *f;

        snprintf(path, sizeof(path), "%s/io.stat", dir);
        if (!(f = fopen(path, "w")))
                return -errno;
        for (size_t i = 0; i < n_ts; i++)
                if (!strcmp(ts[i].dir, dir)) {
                        fprintf(f, "%u:%u rbytes=%llu wbytes=%llu rios=%llu wios=%llu dbytes=0 dios=0\n",
                                ts[i].t.major, ts[i].t.minor, (unsigned long long)ts[i].rbytes,
                                (unsigned long long)ts[i].wbytes,
                                (unsigned long long)(ts[i].rbytes >> 20),
                                (unsigned long long)(ts[i].wbytes >> 20));
                        stall = ts[i].stall_us;
                }
        fclose(f);
        snprintf(path, sizeof(path), "%s/io.pressure", dir);
        if (!(f = fopen(path, "w")))
                return -errno;
        fprintf(f, "some avg10=0.00 avg60=0.00 avg300=0.00 total=%llu\n"
                   "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
                (unsigned long long)stall);
        fclose(f);
        return 0;
}

static uint64_t u64(json_t *o, const char *k)
{
        return (uint64_t)json_number_value(json_object_get(o, k));
}

static const char *str(json_t *o, const char *k)
{
        const char *s = json_string_value(json_object_get(o, k));
        return s ? s : "";
}

int main(int argc, char **argv)
{
        struct gantry_metrics *m = gantry_metrics_new();
        struct gantry_usage_sampler_options o = { .iterate = iterate };
        struct gantry_usage_sampler *s = NULL;
        struct gantry_metrics_server *srv = NULL;
        json_error_t jerr;
        json_t *spec, *targets, *x;
        size_t i;
        int passes, port = 0;

        if (argc != 3) {
                fprintf(stderr, "usage: usage_node_standin SPEC.json WORKDIR\n");
                return 2;
        }
        if (!(spec = json_load_file(argv[1], 0, &jerr))) {
                fprintf(stderr, "%s: %s\n", argv[1], jerr.text);
                return 2;
        }
        passes = (int)json_integer_value(json_object_get(spec, "passes"));
        targets = json_object_get(spec, "targets");
        json_array_foreach(targets, i, x) {
                struct t *t = &ts[n_ts];

                if (n_ts == MAX_T)
                        break;
                snprintf(t->dir, sizeof(t->dir), "%s/pod%s", argv[2], str(x, "uid"));
                mkdir(t->dir, 0755);
                t->t = (struct gantry_usage_target){
                        .pod_uid = str(x, "uid"), .pod_namespace = str(x, "namespace"),
                        .pod_name = str(x, "pod"), .job = str(x, "job"), .volume_id = str(x, "volume"),
                        .cgroup_dir = t->dir, .major = (unsigned)u64(x, "major"),
                        .minor = (unsigned)u64(x, "minor"), .rbps_cap = u64(x, "rcap"),
                        .wbps_cap = u64(x, "wcap"), .declared_rbps = u64(x, "rdecl"),
                        .declared_wbps = u64(x, "wdecl"), .policy = "cap",
                };
                t->rbps = u64(x, "rbps");
                t->wbps = u64(x, "wbps");
                t->stall_ms = u64(x, "stallMsPer10s");
                n_ts++;
        }
        o.metrics = m;
        if (!m || gantry_usage_sampler_new(&o, &s) < 0)
                return 1;
        for (int p = 0; p <= passes; p++) {
                for (i = 0; i < n_ts && p > 0; i++) {
                        ts[i].rbytes += ts[i].rbps * 10;
                        ts[i].wbytes += ts[i].wbps * 10;
                        ts[i].stall_us += ts[i].stall_ms * 1000;
                }
                for (i = 0; i < n_ts; i++)
                        if (write_pod(ts[i].dir) < 0)
                                return 1;
                if (gantry_usage_sampler_pass(s, (uint64_t)p * 10000) < 0)
                        return 1;
        }
        if (gantry_metrics_server_start(m, "127.0.0.1:0", &srv, &port) < 0)
                return 1;
        printf("port %d\n", port);
        fflush(stdout);
        while (getchar() != EOF)
                ;
        gantry_metrics_server_stop(srv);
        gantry_usage_sampler_free(s);
        gantry_metrics_free(m);
        json_decref(spec);
        return 0;
}
