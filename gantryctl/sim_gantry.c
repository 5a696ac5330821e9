/*
 * The gantry policy: the simulator asks gantry-scheduler's placement library
 * (scheduler-ext/placement/placement.h) what the extender would answer; see
 * sim_gantry.h.
 *
 * The library gets the simulator's cluster as the extender would learn it
 * from node labels and its topology file: every leaf under one spine with
 * its uplink Gbps, every node with its NIC, GPUs and leaf, every backend
 * with its Gbps and leaves. A pod's demand is what its annotations would
 * say: a read flow from its dataset's backend (its GPUs x per-GPU ingest)
 * and, when it checkpoints, a write flow to its target at the average rate
 * (its share of the checkpoint per checkpoint period at full speed).
 *
 * With gangs (policy gantry-gang), a job of several pods is a gang, as for the extender (scheduler-ext/
 * placement/gang.h): its first pod plans the whole job and reserves it, every pod then
 * takes its planned node, and a job that does not fit whole is refused with
 * the gang's one reason. Simulated time does not advance inside a
 * placement, so reservations never expire here.
 */
#include "sim_gantry.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gang.h"
#include "placement.h"
#include "sim_rng.h"

#define SPINE "spine-0"

struct gantry_sim_gantry {
        struct gantry_cluster *lib;
        struct gantry_gangs *gangs;
        const struct gantry_sim_cluster *c;
        struct gantry_sim_rng rng;
        const char **names;                   /* candidate node names */
        int *index;                           /* candidate -> node index */
        struct gantry_node_verdict *verdicts;
        int *scores;
        char reason[GANTRY_PLACEMENT_REASON_MAX];
};

static int build_model(struct gantry_sim_gantry *g, struct gantry_error *err)
{
        const struct gantry_sim_cluster *c = g->c;
        int r = 0;

        for (int l = 0; l < c->n_leaves && r >= 0; l++)
                r = gantry_cluster_set_leaf(g->lib, &(struct gantry_leaf_spec){
                                                    .name = c->leaves[l].name, .spine = SPINE,
                                                    .uplink_gbps = c->leaves[l].uplink_gbps },
                                            err);
        for (int n = 0; n < c->n_nodes && r >= 0; n++)
                r = gantry_cluster_set_node(g->lib, &(struct gantry_node_spec){
                                                    .name = c->nodes[n].name,
                                                    .leaf = c->leaves[c->nodes[n].leaf].name,
                                                    .nic_gbps = c->nodes[n].nic_gbps,
                                                    .gpus = c->nodes[n].gpus,
                                                    .transports = GANTRY_TRANSPORT_TCP },
                                            err);
        for (int b = 0; b < c->n_backends && r >= 0; b++) {
                const struct gantry_sim_backend *be = &c->backends[b];
                const char *leaves[GANTRY_SIM_MAX_ATTACH];

                for (int a = 0; a < be->n_leaves; a++)
                        leaves[a] = c->leaves[be->leaves[a]].name;
                r = gantry_cluster_set_backend(g->lib, &(struct gantry_backend_spec){
                                                       .name = be->name,
                                                       .kind = be->kind == GANTRY_SIM_CEPH
                                                                       ? GANTRY_BACKEND_CEPH
                                                                       : GANTRY_BACKEND_NVMEOF,
                                                       .gbps = be->gbps, .leaves = leaves,
                                                       .n_leaves = be->n_leaves,
                                                       .transport = GANTRY_TRANSPORT_TCP },
                                               err);
        }
        return r;
}

int gantry_sim_gantry_new(const struct gantry_sim_cluster *c, uint64_t seed, bool gangs,
                          struct gantry_sim_gantry **ret, struct gantry_error *err)
{
        struct gantry_sim_gantry *g = calloc(1, sizeof(*g));
        int r = -ENOMEM;

        if (!g)
                return -ENOMEM;
        g->c = c;
        g->rng.state = seed;
        g->names = calloc(c->n_nodes, sizeof(*g->names));
        g->index = calloc(c->n_nodes, sizeof(int));
        g->verdicts = calloc(c->n_nodes, sizeof(*g->verdicts));
        g->scores = calloc(c->n_nodes, sizeof(int));
        if (!g->names || !g->index || !g->verdicts || !g->scores || gantry_cluster_new(&g->lib) < 0 ||
            (gangs && gantry_gangs_new(g->lib, 1e18, &g->gangs) < 0))
                goto fail;
        r = build_model(g, err);
        if (r < 0)
                goto fail;
        *ret = g;
        return 0;
fail:
        gantry_sim_gantry_free(g);
        return r;
}

void gantry_sim_gantry_free(struct gantry_sim_gantry *g)
{
        if (!g)
                return;
        gantry_gangs_free(g->gangs);
        gantry_cluster_free(g->lib);
        free(g->names);
        free(g->index);
        free(g->verdicts);
        free(g->scores);
        free(g);
}

static void pod_uid(const struct gantry_sim_job *job, int pod, char *buf, size_t size)
{
        snprintf(buf, size, "%s/%d", job->name, pod);
}

static void demand(const struct gantry_sim_gantry *g, const struct gantry_sim_job *job, const char *uid,
                   struct gantry_pod_demand *ret)
{
        struct gantry_pod_demand d = { .uid = uid, .name = uid, .job = job->name,
                                       .gpus = job->gpus_per_pod, .n_flows = 1 };

        d.flows[0].backend = g->c->backends[job->backend].name;
        d.flows[0].gbps = job->gpus_per_pod * job->ingest_gbps_per_gpu;
        if (job->checkpoint_target >= 0) {
                double share = (double)job->gpus_per_pod / job->gpus;

                d.flows[1].backend = g->c->backends[job->checkpoint_target].name;
                d.flows[1].gbps = share * job->checkpoint_gb * 8 /
                                  (job->checkpoint_every_steps * job->step_s);
                d.n_flows = 2;
        }
        *ret = d;
}

int gantry_sim_gantry_place_pod(struct gantry_sim_gantry *g, const struct gantry_sim_job *job,
                                int job_index, int pod, const int *free_gpus, bool idle)
{
        struct gantry_error err = { 0 };
        struct gantry_pod_demand d;
        char uid[GANTRY_SIM_NAME_MAX + 16];
        size_t n = 0, fit = 0;
        int best = -1, best_score = -1, r, pods = g->gangs ? job->gpus / job->gpus_per_pod : 1;
        uint64_t ties = 0;
        struct gantry_gang_spec spec = { .key = job->name, .size = pods };

        (void)job_index;
        pod_uid(job, pod, uid, sizeof(uid));
        demand(g, job, uid, &d);
        for (int v = 0; v < g->c->n_nodes; v++)
                if (free_gpus[v] >= job->gpus_per_pod) {
                        g->names[n] = g->c->nodes[v].name;
                        g->index[n++] = v;
                }
        if (n == 0) {
                snprintf(g->reason, sizeof(g->reason), "no node has %d free GPUs", job->gpus_per_pod);
                return -ENOSPC;
        }
        if (pods > 1)
                r = gantry_gangs_filter(g->gangs, &spec, &d, g->names, n, 0, g->verdicts, &err);
        else
                r = gantry_cluster_filter(g->lib, &d, g->names, n, g->verdicts, &err);
        if (r < 0)
                return r;
        /* keep the nodes that pass, in order */
        for (size_t i = 0; i < n; i++)
                if (g->verdicts[i].fits) {
                        g->names[fit] = g->names[i];
                        g->index[fit++] = g->index[i];
                }
        if (fit == 0 && !idle) {
                /* the pod stays pending until bandwidth frees up */
                gantry_node_verdict_detail(&g->verdicts[0], g->names[0], g->reason, sizeof(g->reason));
                return -ENOSPC;
        }
        if (fit > 0)
                n = fit;
        else /* nothing runs, nothing will free up: take the best of all, pod by pod */
                pods = 1;
        if (fit == 0)
                for (size_t i = 0, k = 0; k < (size_t)g->c->n_nodes; k++)
                        if (free_gpus[k] >= job->gpus_per_pod) {
                                g->names[i] = g->c->nodes[k].name;
                                g->index[i++] = (int)k;
                        }
        if (pods > 1 && fit > 0)
                r = gantry_gangs_prioritize(g->gangs, &spec, &d, g->names, n, g->scores, &err);
        else
                r = gantry_cluster_prioritize(g->lib, &d, g->names, n, g->scores, &err);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                if (g->scores[i] < best_score)
                        continue;
                if (g->scores[i] > best_score) {
                        best_score = g->scores[i];
                        ties = 0;
                }
                /* kube-scheduler picks uniformly among the best scores */
                if (gantry_sim_rng_below(&g->rng, ++ties) == 0)
                        best = (int)i;
        }
        if (fit > 0 && pods > 1)
                r = gantry_gangs_bind(g->gangs, &spec, &d, g->names[best], 0, 0, NULL, &err);
        else
                r = fit > 0 ? gantry_cluster_reserve(g->lib, &d, g->names[best], 0, NULL, &err)
                            : gantry_cluster_record(g->lib, &d, g->names[best], &err);
        if (r == -ENOSPC) { /* another pod of the gang took the headroom */
                snprintf(g->reason, sizeof(g->reason), "%.*s", (int)sizeof(g->reason) - 1, err.msg);
                return r;
        }
        return r < 0 ? r : g->index[best];
}

const char *gantry_sim_gantry_last_reason(const struct gantry_sim_gantry *g)
{
        return g->reason;
}

void gantry_sim_gantry_release_pod(struct gantry_sim_gantry *g, const struct gantry_sim_job *job,
                                   int job_index, int pod)
{
        char uid[GANTRY_SIM_NAME_MAX + 16];

        (void)job_index;
        pod_uid(job, pod, uid, sizeof(uid));
        gantry_cluster_release(g->lib, uid);
        if (g->gangs)
                gantry_gangs_pod_gone(g->gangs, uid, 0);
}
