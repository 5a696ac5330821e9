/*
 * The simulator's fabric: link loads, max-min fair sharing, checkpoint time
 * and the max-flow bound; see sim_fabric.h for the model.
 */
#include "sim_fabric.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "maxflow.h"

#define EPS 1e-9

struct gantry_sim_fabric {
        const struct gantry_sim_cluster *c;
        int n_links;
        double *cap;
        double *scratch;      /* one per link, zero between uses */
        double *remaining;
        double *active_sum;
};

/* link ids */
static int nic(const struct gantry_sim_fabric *f, int node) { (void)f; return node; }
static int down(const struct gantry_sim_fabric *f, int leaf) { return f->c->n_nodes + leaf; }
static int up(const struct gantry_sim_fabric *f, int leaf) { return f->c->n_nodes + f->c->n_leaves + leaf; }
static int backend(const struct gantry_sim_fabric *f, int b) { return f->c->n_nodes + 2 * f->c->n_leaves + b; }

int gantry_sim_fabric_new(const struct gantry_sim_cluster *c, struct gantry_sim_fabric **ret)
{
        struct gantry_sim_fabric *f = calloc(1, sizeof(*f));

        if (!f)
                return -ENOMEM;
        f->c = c;
        f->n_links = c->n_nodes + 2 * c->n_leaves + c->n_backends;
        f->cap = calloc(f->n_links, sizeof(double));
        f->scratch = calloc(f->n_links, sizeof(double));
        f->remaining = calloc(f->n_links, sizeof(double));
        f->active_sum = calloc(f->n_links, sizeof(double));
        if (!f->cap || !f->scratch || !f->remaining || !f->active_sum) {
                gantry_sim_fabric_free(f);
                return -ENOMEM;
        }
        for (int n = 0; n < c->n_nodes; n++)
                f->cap[nic(f, n)] = c->nodes[n].nic_gbps;
        for (int l = 0; l < c->n_leaves; l++)
                f->cap[down(f, l)] = f->cap[up(f, l)] = c->leaves[l].uplink_gbps;
        for (int b = 0; b < c->n_backends; b++)
                f->cap[backend(f, b)] = c->backends[b].gbps;
        *ret = f;
        return 0;
}

void gantry_sim_fabric_free(struct gantry_sim_fabric *f)
{
        if (!f)
                return;
        free(f->cap);
        free(f->scratch);
        free(f->remaining);
        free(f->active_sum);
        free(f);
}

int gantry_sim_fabric_links(const struct gantry_sim_fabric *f)
{
        return f->n_links;
}

double gantry_sim_fabric_capacity(const struct gantry_sim_fabric *f, int link)
{
        return link >= 0 && link < f->n_links ? f->cap[link] : 0;
}

void gantry_sim_load_clear(struct gantry_sim_load *l)
{
        free(l->link);
        free(l->gbps);
        memset(l, 0, sizeof(*l));
}

int gantry_sim_fabric_job_load(struct gantry_sim_fabric *f, const struct gantry_sim_job *job,
                               const int *pod_nodes, struct gantry_sim_load *ret)
{
        const struct gantry_sim_backend *b = &f->c->backends[job->backend];
        int pods = job->gpus / job->gpus_per_pod, n = 0;
        struct gantry_sim_load l = { 0 };
        double *s = f->scratch;

        for (int p = 0; p < pods; p++) {
                int node = pod_nodes[p], leaf = f->c->nodes[node].leaf;
                double d = job->gpus_per_pod * job->ingest_gbps_per_gpu, share = d / b->n_leaves;

                s[nic(f, node)] += d;
                s[backend(f, job->backend)] += d;
                for (int a = 0; a < b->n_leaves; a++)
                        if (b->leaves[a] != leaf) {
                                s[up(f, b->leaves[a])] += share;
                                s[down(f, leaf)] += share;
                        }
                l.total_gbps += d;
        }
        for (int i = 0; i < f->n_links; i++)
                n += s[i] > 0;
        l.link = malloc((n ? n : 1) * sizeof(int));
        l.gbps = malloc((n ? n : 1) * sizeof(double));
        if (!l.link || !l.gbps) {
                memset(s, 0, f->n_links * sizeof(double));
                gantry_sim_load_clear(&l);
                return -ENOMEM;
        }
        for (int i = 0; i < f->n_links; i++)
                if (s[i] > 0) {
                        l.link[l.n] = i;
                        l.gbps[l.n++] = s[i];
                        s[i] = 0;
                }
        gantry_sim_load_clear(ret);
        *ret = l;
        return 0;
}

int gantry_sim_fabric_share(struct gantry_sim_fabric *f, const struct gantry_sim_load *const *loads,
                            size_t n, double *ret_x)
{
        bool *frozen = calloc(n ? n : 1, sizeof(bool));
        double level = 0;
        size_t left = 0;

        if (!frozen)
                return -ENOMEM;
        memcpy(f->remaining, f->cap, f->n_links * sizeof(double));
        for (size_t j = 0; j < n; j++) {
                ret_x[j] = 0;
                if (!loads[j] || loads[j]->n == 0) {
                        frozen[j] = true;
                        ret_x[j] = loads[j] ? 1 : 0; /* reads nothing: never waits */
                } else {
                        left++;
                }
        }
        while (left > 0) {
                double step = 1 - level;

                memset(f->active_sum, 0, f->n_links * sizeof(double));
                for (size_t j = 0; j < n; j++)
                        for (int k = 0; !frozen[j] && k < loads[j]->n; k++)
                                f->active_sum[loads[j]->link[k]] += loads[j]->gbps[k];
                for (int e = 0; e < f->n_links; e++)
                        if (f->active_sum[e] > 0)
                                step = fmin(step, fmax(0, f->remaining[e]) / f->active_sum[e]);
                level += step;
                for (int e = 0; e < f->n_links; e++)
                        f->remaining[e] -= step * f->active_sum[e];
                for (size_t j = 0; j < n; j++) {
                        bool stop = level >= 1 - EPS;

                        if (frozen[j])
                                continue;
                        for (int k = 0; !stop && k < loads[j]->n; k++)
                                stop = f->remaining[loads[j]->link[k]] <= EPS * f->cap[loads[j]->link[k]];
                        if (stop) {
                                frozen[j] = true;
                                ret_x[j] = fmin(1, level);
                                left--;
                        }
                }
        }
        free(frozen);
        return 0;
}

double gantry_sim_fabric_checkpoint_s(const struct gantry_sim_fabric *f,
                                      const struct gantry_sim_job *job, const int *pod_nodes)
{
        const struct gantry_sim_backend *t;
        int pods = job->gpus / job->gpus_per_pod;
        double gbit, worst, share, *leaf_share = f->scratch;

        if (job->checkpoint_target < 0 || job->checkpoint_gb <= 0)
                return 0;
        t = &f->c->backends[job->checkpoint_target];
        gbit = job->checkpoint_gb * 8;
        share = (double)job->gpus_per_pod / job->gpus;
        worst = gbit / t->gbps;
        for (int p = 0; p < pods; p++) {
                int leaf = f->c->nodes[pod_nodes[p]].leaf;
                bool local = false;

                for (int a = 0; a < t->n_leaves; a++)
                        local = local || t->leaves[a] == leaf;
                if (!local)
                        leaf_share[leaf] += share;
        }
        for (int p = 0; p < pods; p++) {
                const struct gantry_sim_node *node = &f->c->nodes[pod_nodes[p]];
                int same = 0;

                /* pods on one node add up on its NIC */
                for (int q = 0; q < pods; q++)
                        same += pod_nodes[q] == pod_nodes[p];
                worst = fmax(worst, same * share * gbit / node->nic_gbps);
                if (leaf_share[node->leaf] > 0)
                        worst = fmax(worst, leaf_share[node->leaf] * gbit /
                                                    f->c->leaves[node->leaf].uplink_gbps);
        }
        for (int p = 0; p < pods; p++)
                leaf_share[f->c->nodes[pod_nodes[p]].leaf] = 0;
        return worst;
}

double gantry_sim_fabric_bound(const struct gantry_sim_fabric *f, const struct gantry_sim_job *const *jobs,
                               size_t n, double *ret_job_gbps)
{
        const struct gantry_sim_cluster *c = f->c;
        /* vertices: source, sink, spine, jobs, backend in/out, leaves, nodes */
        size_t S = 0, T = 1, SPINE = 2, J0 = 3, B0 = J0 + n, L0 = B0 + 2 * c->n_backends,
               N0 = L0 + c->n_leaves, total = N0 + c->n_nodes;
        struct gantry_maxflow *g;
        int *job_edge = calloc(n ? n : 1, sizeof(int));
        double max_ingest = 0, flow;
        int r = 0;

        if (!job_edge || gantry_maxflow_new(total, &g) < 0) {
                free(job_edge);
                return -ENOMEM;
        }
        for (size_t j = 0; j < n && r >= 0; j++) {
                max_ingest = fmax(max_ingest, jobs[j]->ingest_gbps_per_gpu);
                r = job_edge[j] = gantry_maxflow_add_edge(g, S, J0 + j, gantry_sim_job_demand_gbps(jobs[j]));
                if (r >= 0)
                        r = gantry_maxflow_add_edge(g, J0 + j, B0 + 2 * jobs[j]->backend, INFINITY);
        }
        for (int b = 0; b < c->n_backends && r >= 0; b++) {
                r = gantry_maxflow_add_edge(g, B0 + 2 * b, B0 + 2 * b + 1, c->backends[b].gbps);
                for (int a = 0; a < c->backends[b].n_leaves && r >= 0; a++)
                        r = gantry_maxflow_add_edge(g, B0 + 2 * b + 1, L0 + c->backends[b].leaves[a],
                                                    INFINITY);
        }
        for (int l = 0; l < c->n_leaves && r >= 0; l++) {
                r = gantry_maxflow_add_edge(g, L0 + l, SPINE, f->cap[up(f, l)]);
                if (r >= 0)
                        r = gantry_maxflow_add_edge(g, SPINE, L0 + l, f->cap[down(f, l)]);
        }
        for (int v = 0; v < c->n_nodes && r >= 0; v++) {
                const struct gantry_sim_node *node = &c->nodes[v];

                r = gantry_maxflow_add_edge(g, L0 + node->leaf, N0 + v, node->nic_gbps);
                if (r >= 0)
                        r = gantry_maxflow_add_edge(g, N0 + v, T,
                                                    fmin(node->nic_gbps, node->gpus * max_ingest));
        }
        if (r < 0) {
                gantry_maxflow_free(g);
                free(job_edge);
                return r;
        }
        flow = gantry_maxflow_solve(g, S, T);
        for (size_t j = 0; ret_job_gbps && j < n; j++)
                ret_job_gbps[j] = gantry_maxflow_edge_flow(g, job_edge[j]);
        gantry_maxflow_free(g);
        free(job_edge);
        return flow;
}
