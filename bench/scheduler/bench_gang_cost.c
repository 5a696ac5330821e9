/*
 * What one pod costs gantry-scheduler: filter + prioritize + bind, in
 * process (gantry_extender_handle, no HTTP, bind reserving only), in CPU
 * time of the calling thread, so a loaded machine does not blur it.
 *
 * The cluster is the gang scenario's: 8 nodes a leaf, 8 GPUs and a 400 Gbps NIC a
 * node, 800 Gbps leaf uplinks, 4 spines; at 500 and 5,000 nodes. The pods
 * are two waves of jobs of 8 one-GPU pods reading 100 Gbps (each wave
 * enough for 3/4 of the leaves: the second does not all fit), interleaved;
 * each filter
 * sent kube-scheduler's sample of the nodes (50 - n/125 % of them, at least
 * 100, from a rotating start). Two kinds of pod: with gantry.io/job-size
 * "8" (a gang) and without (placed one by one), so the same source built
 * against an older tree (without gangs) gives the baseline: the README of
 * bench/ says how. Prints microseconds per pod; asserts nothing.
 *
 *   bench_gang_cost [NODES...]      default: 500 5000
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "extender.h"
#include "log.h"
#include "placement.h"
#include "sched_state.h"
#include "sched_topology.h"

#define JOB_SIZE 8

static double cpu_now(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
        fprintf(stderr, "bench_gang_cost: %s\n", what);
        exit(1);
}

static void build_cluster(struct gantry_sched_state *st, int n)
{
        struct gantry_error err;
        json_t *topo = json_pack("{s:{s:f},s:[]}", "defaults", "nicGbps", 400.0, "leaves");
        int leaves = (n + 7) / 8;
        char name[64], leaf[32], spine[32], *text;

        for (int l = 0; l < leaves; l++) {
                snprintf(leaf, sizeof(leaf), "leaf-%d", l);
                snprintf(spine, sizeof(spine), "spine-%d", l % 4);
                json_array_append_new(json_object_get(topo, "leaves"),
                                      json_pack("{s:s,s:s,s:f}", "name", leaf, "spine", spine,
                                                "uplinkGbps", 800.0));
        }
        text = json_dumps(topo, 0);
        if (!text || gantry_sched_topology_parse(st, text, "bench", &err) < 0)
                die(err.msg);
        free(text);
        json_decref(topo);
        for (int i = 0; i < n; i++) {
                snprintf(name, sizeof(name), "node-%d", i);
                snprintf(leaf, sizeof(leaf), "leaf-%d", i / 8);
                snprintf(spine, sizeof(spine), "spine-%d", (i / 8) % 4);
                json_t *node = json_pack(
                        "{s:{s:s,s:{s:s,s:s,s:s}},s:{s:{s:s}}}", "metadata", "name", name, "labels",
                        "network.topology.nvidia.com/leaf", leaf,
                        "network.topology.nvidia.com/spine", spine, "gantry.io/nic-gbps", "400",
                        "status", "allocatable", "nvidia.com/gpu", "8");
                if (gantry_sched_state_apply(st, GANTRY_OBJ_NODE, false, node, &err) < 0)
                        die(err.msg);
                json_decref(node);
        }
}

static json_t *make_pod(int job, int member, bool gang)
{
        char name[64], uid[64], jobname[32];
        json_t *ann = json_pack("{s:s}", "gantry.io/dataset-read-gbps", "100");

        snprintf(name, sizeof(name), "train-%d-%d", job, member);
        snprintf(uid, sizeof(uid), "uid-%d-%d-%d", gang, job, member);
        snprintf(jobname, sizeof(jobname), "train-%d", job);
        if (gang)
                json_object_set_new(ann, "gantry.io/job-size", json_string("8"));
        return json_pack("{s:{s:s,s:s,s:s,s:{s:s},s:o},s:{s:[{s:s,s:{s:{s:s}}}]}}", "metadata",
                         "name", name, "namespace", "default", "uid", uid, "labels",
                         "gantry.io/job", jobname, "annotations", ann, "spec", "containers",
                         "name", "w", "resources", "requests", "nvidia.com/gpu", "1");
}

struct result {
        double cpu;
        int pods, bound;
};

static void run(int n, bool gang, struct result *ret)
{
        struct gantry_cluster *cluster;
        struct gantry_sched_state *st;
        struct gantry_extender *ext;
        int jobs = n / JOB_SIZE * 3 / 4; /* a wave fills about 3/4 of the leaves */
        int pct = 50 - n / 125 > 5 ? 50 - n / 125 : 5;
        int sample = n * pct / 100 > 100 ? n * pct / 100 : (n < 100 ? n : 100);
        int start = 0, total = jobs * JOB_SIZE;
        unsigned rng = 12345;
        int *order = calloc(total, sizeof(int));
        struct result r = { 0 };

        if (!order || gantry_cluster_new(&cluster) < 0 || gantry_sched_state_new(cluster, &st) < 0)
                die("out of memory");
        build_cluster(st, n);
        if (gantry_extender_new(st, NULL, &ext) < 0)
                die("extender");
        for (int i = 0; i < total; i++)
                order[i] = i;
        for (int i = total - 1; i > 0; i--) { /* interleaved jobs, the same every run */
                int j, t;

                rng = rng * 1103515245u + 12345u;
                j = (int)((rng >> 8) % (unsigned)(i + 1));
                t = order[i];
                order[i] = order[j];
                order[j] = t;
        }
        for (int round = 0; round < 2; round++) {
                for (int k = 0; k < total; k++) {
                        /* a second wave of new jobs: it does not all fit */
                        int job = round * jobs + order[k] / JOB_SIZE, member = order[k] % JOB_SIZE;
                        json_t *pod = make_pod(job, member, gang), *names = json_array(), *args;
                        char *body, *reply = NULL, chosen[64] = "";
                        const char *md_uid;

                        for (int i = 0; i < sample; i++) {
                                char name[32];

                                snprintf(name, sizeof(name), "node-%d", (start + i) % n);
                                json_array_append_new(names, json_string(name));
                        }
                        start = (start + sample) % n;
                        args = json_pack("{s:O,s:n,s:o}", "Pod", pod, "Nodes", "NodeNames", names);
                        body = json_dumps(args, JSON_COMPACT);
                        md_uid = json_string_value(json_object_get(json_object_get(pod, "metadata"), "uid"));

                        double t0 = cpu_now();
                        gantry_extender_handle(ext, GANTRY_VERB_FILTER, body, strlen(body), &reply);
                        r.cpu += cpu_now() - t0;
                        json_t *fr = reply ? json_loads(reply, 0, NULL) : NULL;
                        json_t *passed = json_object_get(fr, "NodeNames");
                        free(reply);
                        reply = NULL;
                        if (json_array_size(passed) > 0) {
                                json_object_set(args, "NodeNames", passed);
                                free(body);
                                body = json_dumps(args, JSON_COMPACT);
                                t0 = cpu_now();
                                gantry_extender_handle(ext, GANTRY_VERB_PRIORITIZE, body, strlen(body),
                                                       &reply);
                                r.cpu += cpu_now() - t0;
                                json_t *sr = reply ? json_loads(reply, 0, NULL) : NULL;
                                json_t *h;
                                size_t i;
                                json_int_t best = -1;

                                json_array_foreach(sr, i, h) {
                                        if (json_integer_value(json_object_get(h, "Score")) > best) {
                                                best = json_integer_value(json_object_get(h, "Score"));
                                                snprintf(chosen, sizeof(chosen), "%s",
                                                         json_string_value(json_object_get(h, "Host")));
                                        }
                                }
                                json_decref(sr);
                                free(reply);
                                reply = NULL;
                        }
                        if (chosen[0]) {
                                json_t *b = json_pack("{s:s,s:s,s:s,s:s}", "PodName",
                                                      json_string_value(json_object_get(
                                                              json_object_get(pod, "metadata"), "name")),
                                                      "PodNamespace", "default", "PodUID", md_uid,
                                                      "Node", chosen);
                                char *bt = json_dumps(b, JSON_COMPACT);
                                json_t *br;

                                const char *e;

                                t0 = cpu_now();
                                gantry_extender_handle(ext, GANTRY_VERB_BIND, bt, strlen(bt), &reply);
                                r.cpu += cpu_now() - t0;
                                br = reply ? json_loads(reply, 0, NULL) : NULL;
                                e = json_string_value(json_object_get(br, "Error"));
                                if (e && !*e)
                                        r.bound++;
                                json_decref(br);
                                free(bt);
                                json_decref(b);
                        }
                        r.pods++;
                        free(reply);
                        json_decref(fr);
                        free(body);
                        json_decref(args);
                        json_decref(pod);
                }
        }
        gantry_extender_free(ext);
        gantry_sched_state_free(st);
        gantry_cluster_free(cluster);
        free(order);
        *ret = r;
}

int main(int argc, char **argv)
{
        int sizes[8] = { 500, 5000 }, n_sizes = 2;

        if (argc > 1) {
                n_sizes = 0;
                for (int i = 1; i < argc && n_sizes < 8; i++)
                        sizes[n_sizes++] = atoi(argv[i]);
        }
        gantry_log_set_level(GANTRY_LOG_ERROR);
        for (int i = 0; i < n_sizes; i++) {
                struct result g, p;

                run(sizes[i], true, &g);
                run(sizes[i], false, &p);
                printf("nodes=%d  per pod (filter+prioritize+bind, CPU): gang pods %.1f us (%d of %d "
                       "calls bound)  single pods %.1f us (%d of %d bound)\n",
                       sizes[i], 1e6 * g.cpu / g.pods, g.bound, g.pods, 1e6 * p.cpu / p.pods, p.bound,
                       p.pods);
                fflush(stdout);
        }
        return 0;
}
