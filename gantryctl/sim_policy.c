/*
 * The simulator's placement policies; see sim_policy.h. The gantry policy
 * delegates to sim_gantry.c, which drives the placement library.
 */
#include "sim_policy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_gantry.h"

static const char *const names[GANTRY_SIM_POLICY_COUNT] = { "gantry", "spread", "random", "bound",
                                                                    "gantry-gang" };

struct gantry_sim_placer {
        enum gantry_sim_policy policy;
        const struct gantry_sim_cluster *c;
        struct gantry_sim_rng rng;
        struct gantry_sim_gantry *lib; /* gantry policies only */
        char reason[64];
};

const char *gantry_sim_policy_name(enum gantry_sim_policy p)
{
        return (unsigned)p < GANTRY_SIM_POLICY_COUNT ? names[p] : "unknown";
}

int gantry_sim_policy_parse(const char *name, enum gantry_sim_policy *ret)
{
        for (int i = 0; i < GANTRY_SIM_POLICY_COUNT; i++)
                if (strcmp(names[i], name) == 0) {
                        *ret = i;
                        return 0;
                }
        return -EINVAL;
}

int gantry_sim_placer_new(enum gantry_sim_policy policy, const struct gantry_sim_cluster *c, uint64_t seed,
                          struct gantry_sim_placer **ret, struct gantry_error *err)
{
        struct gantry_sim_placer *p = calloc(1, sizeof(*p));
        int r;

        if (!p)
                return -ENOMEM;
        p->policy = policy;
        p->c = c;
        p->rng.state = seed;
        if (policy == GANTRY_SIM_POLICY_GANTRY || policy == GANTRY_SIM_POLICY_GANTRY_GANG) {
                r = gantry_sim_gantry_new(c, seed, policy == GANTRY_SIM_POLICY_GANTRY_GANG, &p->lib,
                                          err);
                if (r < 0) {
                        free(p);
                        return r;
                }
        }
        *ret = p;
        return 0;
}

void gantry_sim_placer_free(struct gantry_sim_placer *p)
{
        if (!p)
                return;
        gantry_sim_gantry_free(p->lib);
        free(p);
}

/*
 * One pod by a simple rule: spread takes the most free GPUs, random any
 * node with room, bound the first node with room. Ties among equal
 * candidates are broken uniformly (reservoir sampling). Returns the node or -1.
 */
static int pick_simple(struct gantry_sim_placer *p, int need, const int *free_gpus)
{
        int best = -1, best_free = -1;
        uint64_t ties = 0;

        for (int n = 0; n < p->c->n_nodes; n++) {
                if (free_gpus[n] < need)
                        continue;
                if (p->policy == GANTRY_SIM_POLICY_BOUND)
                        return n;
                if (p->policy == GANTRY_SIM_POLICY_SPREAD) {
                        if (free_gpus[n] < best_free)
                                continue;
                        if (free_gpus[n] > best_free) {
                                best = n;
                                best_free = free_gpus[n];
                                ties = 1;
                                continue;
                        }
                }
                if (gantry_sim_rng_below(&p->rng, ++ties) == 0)
                        best = n;
        }
        return best;
}

static void release_pods(struct gantry_sim_placer *p, const struct gantry_sim_job *job, int job_index,
                         const int *nodes, int count, int *free_gpus)
{
        for (int i = 0; i < count; i++) {
                free_gpus[nodes[i]] += job->gpus_per_pod;
                if (p->lib)
                        gantry_sim_gantry_release_pod(p->lib, job, job_index, i);
        }
}

int gantry_sim_placer_place(struct gantry_sim_placer *p, const struct gantry_sim_job *job,
                            int job_index, int *free_gpus, bool idle, int *ret_nodes)
{
        int pods = job->gpus / job->gpus_per_pod, placed = 0, r = 0;

        for (; placed < pods; placed++) {
                int n;

                if (p->lib) {
                        n = r = gantry_sim_gantry_place_pod(p->lib, job, job_index, placed, free_gpus,
                                                            idle);
                        if (r < 0)
                                break;
                } else {
                        n = pick_simple(p, job->gpus_per_pod, free_gpus);
                        if (n < 0) {
                                snprintf(p->reason, sizeof(p->reason), "no node has %d free GPUs",
                                         job->gpus_per_pod);
                                r = -ENOSPC;
                                break;
                        }
                }
                free_gpus[n] -= job->gpus_per_pod;
                ret_nodes[placed] = n;
        }
        if (placed == pods)
                return 0;
        /* gang: all or nothing */
        release_pods(p, job, job_index, ret_nodes, placed, free_gpus);
        return r;
}

const char *gantry_sim_placer_last_reason(const struct gantry_sim_placer *p)
{
        return p->lib ? gantry_sim_gantry_last_reason(p->lib) : p->reason;
}

void gantry_sim_placer_release(struct gantry_sim_placer *p, const struct gantry_sim_job *job,
                               int job_index, const int *nodes, int *free_gpus)
{
        release_pods(p, job, job_index, nodes, job->gpus / job->gpus_per_pod, free_gpus);
}
