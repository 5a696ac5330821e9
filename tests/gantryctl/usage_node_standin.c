/*
 * A node plugin's bandwidth metrics endpoint for `gantryctl usage`'s tests:
 * the real caps (node/qos/qos.c: each target applied with gantry_qos_apply,
 * its job recorded with it), the real sampler (node/qos/usage_sampler.c)
 * walking them as the node plugin does (usage_qos_source.c), and the real
 * registry and /metrics server (common/metrics.c), over pod cgroups that
 * are plain directories (WORKDIR/cgroup, laid out as kubelet's cgroupfs
 * driver makes them) this program fills (io.stat, io.pressure) at made-up
 * times.
 * Only the cgroups and the clock are stand-ins: no kernel here enforces or
 * counts IO per pod (that runs in the VM).
 *
 *   usage_node_standin SPEC.json WORKDIR
 *
 * SPEC: {"passes": N, "targets": [{"uid", "namespace", "pod", "job", "volume",
 * "major", "minor", "rcap", "wcap", "rdecl", "wdecl", "rbps", "wbps",
 * "stallMsPer10s"}]}, "uid" a pod UID, "job" the key the node records
 * ("<ns>/<job>"), rcap = rdecl and wcap = wdecl (policy cap): N passes 10 s
 * apart, each target's counters advanced at rbps/wbps. Then serves /metrics on 127.0.0.1, prints "port N" and
 * waits until stdin closes.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "metrics.h"
#include "qos.h"
#include "usage_qos_source.h"
#include "usage_sampler.h"

#define MAX_T 64

struct t {
        struct gantry_usage_target t;
        char dir[1024];
        uint64_t rbps, wbps, stall_ms, rbytes, wbytes, stall_us;
};

static struct t ts[MAX_T];
static size_t n_ts;

static void put(const char *path, const char *text)
{
        FILE *f = fopen(path, "w");

        if (f) {
                fputs(text, f);
                fclose(f);
        }
}

/* Applies target @i's cap as NodePublishVolume does; its cgroup dir is made first. */
static int apply(const char *work, size_t i)
{
        struct gantry_qos_request req = {
                .pod_uid = ts[i].t.pod_uid, .pod_namespace = ts[i].t.pod_namespace,
                .pod_name = ts[i].t.pod_name, .volume_id = ts[i].t.volume_id,
                .dev_major = ts[i].t.major, .dev_minor = ts[i].t.minor,
                .declared = { .rbps = ts[i].t.declared_rbps, .wbps = ts[i].t.declared_wbps },
                .policy = GANTRY_QOS_POLICY_CAP,
        };
        struct gantry_error err = { 0 };
        char target[600], iomax[sizeof(ts[0].dir) + sizeof("/io.max")];

        snprintf(req.job, sizeof(req.job), "%s", ts[i].t.job);
        snprintf(target, sizeof(target), "%s/target-%zu", work, i);
        req.target_path = target;
        snprintf(iomax, sizeof(iomax), "%s/io.max", ts[i].dir);
        put(iomax, "");
        if (gantry_qos_apply(&req, &err) < 0) {
                fprintf(stderr, "target %zu: %s\n", i, err.msg);
                return -1;
        }
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
        struct gantry_usage_sampler_options o = { .iterate = gantry_usage_qos_iterate };
        struct gantry_qos_options qo = { 0 };
        struct gantry_error err = { 0 };
        char cg[256], state[512], path[600];
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
        snprintf(cg, sizeof(cg), "%s/cgroup", argv[2]);
        snprintf(state, sizeof(state), "%s/state", argv[2]);
        snprintf(path, sizeof(path), "%s/kubepods", cg);
        mkdir(cg, 0755);
        mkdir(path, 0755);
        snprintf(path, sizeof(path), "%s/kubepods/besteffort", cg);
        mkdir(path, 0755);
        snprintf(path, sizeof(path), "%s/cgroup.controllers", cg);
        put(path, "cpu io memory pids\n");
        qo.state_dir = state;
        qo.cgroup_root = cg;
        if (gantry_qos_init(&qo, &err) < 0) {
                fprintf(stderr, "qos: %s\n", err.msg);
                return 1;
        }
        targets = json_object_get(spec, "targets");
        json_array_foreach(targets, i, x) {
                struct t *t = &ts[n_ts];

                if (n_ts == MAX_T)
                        break;
                snprintf(t->dir, sizeof(t->dir), "%s/kubepods/besteffort/pod%s", cg, str(x, "uid"));
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
                if (apply(argv[2], n_ts) < 0)
                        return 1;
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
        gantry_qos_shutdown();
        gantry_metrics_free(m);
        json_decref(spec);
        return 0;
}
