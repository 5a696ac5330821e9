/*
 * The gantry policy of the simulator: each pod is placed by the placement
 * library of gantry-scheduler (scheduler-ext/placement/placement.h), asked the same
 * questions the extender asks -- filter, prioritize, reserve -- over a model
 * built from the simulator's cluster file, and released when its job ends.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "sim_model.h"

struct gantry_sim_gantry;

/* Builds the library's model of @c; @gangs: a job of several pods is a gang
 * (scheduler-ext/placement/gang.h). Returns 0, -ENOMEM or -EINVAL (@err). */
int gantry_sim_gantry_new(const struct gantry_sim_cluster *c, uint64_t seed, bool gangs,
                          struct gantry_sim_gantry **ret, struct gantry_error *err);
void gantry_sim_gantry_free(struct gantry_sim_gantry *g);

/*
 * Places pod @pod of @job among the nodes with enough free GPUs: the
 * library's filter, then the best score (ties at random), then a
 * reservation. When no node passes the filter the pod waits (-ENOSPC),
 * unless @idle (nothing runs, nothing will free up): then the best-scored
 * node with room is taken. Returns the node index or -errno.
 */
int gantry_sim_gantry_place_pod(struct gantry_sim_gantry *g, const struct gantry_sim_job *job,
                                int job_index, int pod, const int *free_gpus, bool idle);

/* Why the last pod that had to wait waited (the library's filter reason). */
const char *gantry_sim_gantry_last_reason(const struct gantry_sim_gantry *g);

/* Releases the ledger entry of pod @pod of @job. */
void gantry_sim_gantry_release_pod(struct gantry_sim_gantry *g, const struct gantry_sim_job *job,
                                   int job_index, int pod);
