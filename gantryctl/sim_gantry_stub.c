/*
 * Stand-in for sim_gantry.c until the placement library (scheduler-ext/) is
 * on this branch: the gantry policy reports that it is not built.
 */
#include "sim_gantry.h"

#include <errno.h>

int gantry_sim_gantry_new(const struct gantry_sim_cluster *c, uint64_t seed,
                          struct gantry_sim_gantry **ret, struct gantry_error *err)
{
        (void)c;
        (void)seed;
        (void)ret;
        return gantry_error_set(err, ENOTSUP, "policy gantry: the placement library is not built in");
}

void gantry_sim_gantry_free(struct gantry_sim_gantry *g)
{
        (void)g;
}

int gantry_sim_gantry_place_pod(struct gantry_sim_gantry *g, const struct gantry_sim_job *job,
                                int job_index, int pod, const int *free_gpus, bool idle)
{
        (void)g, (void)job, (void)job_index, (void)pod, (void)free_gpus, (void)idle;
        return -ENOTSUP;
}

void gantry_sim_gantry_release_pod(struct gantry_sim_gantry *g, const struct gantry_sim_job *job,
                                   int job_index, int pod)
{
        (void)g, (void)job, (void)job_index, (void)pod;
}
