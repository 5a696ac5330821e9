/*
 * Placement policies of the simulator: where each pod of a job goes.
 *
 *   gantry  the placement library of gantry-scheduler (scheduler-ext/placement/):
 *           filter, then prioritize, then reserve, pod by pod
 *   gantry-gang  the same library with gangs (scheduler-ext/placement/gang.h), as the
 *           extender places a job whose size it knows: the whole job is
 *           planned (one leaf, else fewest leaves under a spine) and
 *           reserved at once, refused whole, queued first come first served
 *   spread  kube-scheduler's default flavour: the node with the most free
 *           GPUs (LeastAllocated), ties broken at random
 *   random  any node with room, uniformly
 *   bound   no placement constraint beyond GPU counts (first fit); the
 *           engine gives its jobs the max-flow bound (see sim_fabric.h)
 *
 * A job is placed whole (gang) or not at all. Randomness comes from a
 * seeded generator, so a seed always gives the same run.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "sim_model.h"
#include "sim_rng.h"

enum gantry_sim_policy {
        GANTRY_SIM_POLICY_GANTRY = 0,
        GANTRY_SIM_POLICY_SPREAD,
        GANTRY_SIM_POLICY_RANDOM,
        GANTRY_SIM_POLICY_BOUND,
        GANTRY_SIM_POLICY_GANTRY_GANG,
        GANTRY_SIM_POLICY_COUNT,
};

const char *gantry_sim_policy_name(enum gantry_sim_policy p);
/* "gantry", "spread", "random", "bound", "gantry-gang". Returns 0 or -EINVAL. */
int gantry_sim_policy_parse(const char *name, enum gantry_sim_policy *ret);

struct gantry_sim_placer;

/* Returns 0, -ENOMEM, or -EINVAL with @err (e.g. the library refused the cluster). */
int gantry_sim_placer_new(enum gantry_sim_policy p, const struct gantry_sim_cluster *c, uint64_t seed,
                          struct gantry_sim_placer **ret, struct gantry_error *err);
void gantry_sim_placer_free(struct gantry_sim_placer *p);

/*
 * Places every pod of @job (index @job_index in the trace) or none.
 * @free_gpus (per node) is updated on success. @idle is true when no job is
 * running: a policy that would wait on bandwidth must place anyway then,
 * since nothing will free up. Returns 0 with ret_nodes[pod] filled, -ENOSPC
 * when the job does not fit now, or another -errno.
 */
int gantry_sim_placer_place(struct gantry_sim_placer *p, const struct gantry_sim_job *job,
                            int job_index, int *free_gpus, bool idle, int *ret_nodes);

/* Why the last job that got -ENOSPC did not fit, for the report. Borrowed. */
const char *gantry_sim_placer_last_reason(const struct gantry_sim_placer *p);

/* The job finished: give back its GPUs (and its ledger entries). */
void gantry_sim_placer_release(struct gantry_sim_placer *p, const struct gantry_sim_job *job,
                               int job_index, const int *nodes, int *free_gpus);
