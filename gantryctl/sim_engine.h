/*
 * The simulation itself: jobs arrive, are placed whole by a policy (waiting
 * jobs are tried in arrival order at every event; one that does not fit is
 * skipped, as kube-scheduler skips an unschedulable pod), train in
 * synchronized steps and checkpoint, then leave.
 *
 * Time is event-driven: between two events (an arrival, a job finishing,
 * a checkpoint starting or ending) every rate is constant. At each event the
 * running jobs' rates are recomputed (max-min fair sharing of the links,
 * sim_fabric.h); a training job at rate x completes x / stepSeconds steps
 * per second (each step waits for the slowest worker's data, and x is the
 * same for all its workers). During a checkpoint it makes no progress.
 *
 * Alongside, at every interval, the max-flow bound for the jobs that are
 * reading is computed: what the fabric and storage could deliver to them
 * under any placement. The "bound" policy runs the same trace with its jobs
 * given that bound in proportion to their demand.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "sim_model.h"
#include "sim_policy.h"

struct gantry_sim_job_result {
        double start_s, end_s;
        double completion_s;    /* end - arrival: queueing included */
        double steps_per_s;     /* synchronized throughput: steps / (end - start) */
        double utilization;     /* useful GPU time / allocated GPU time */
        double checkpoint_s;    /* total time spent checkpointing */
        int leaves;             /* leaves its pods spanned */
        char wait_reason[192];  /* why it last could not be placed; "" if never */
};

struct gantry_sim_segment {
        double t0, t1;
        double delivered_gbps;  /* what the reading jobs got */
        double bound_gbps;      /* max-flow bound for the same jobs */
        double busy_gpus;       /* GPUs doing useful work (sum of gpus x rate) */
};

struct gantry_sim_result {
        enum gantry_sim_policy policy;
        int n_jobs;
        struct gantry_sim_job_result *jobs; /* in trace order (sorted by arrival) */
        double makespan_s;
        double gpu_utilization;        /* busy GPU-seconds / (all GPUs x makespan) */
        double mean_job_utilization;
        double mean_completion_s;
        double mean_wait_s;
        double delivered_gbit, bound_gbit;
        double bound_fraction;         /* delivered / bound over the run */
        size_t violations;             /* intervals where delivered > bound: must be 0 */
        struct gantry_sim_segment *segments;
        size_t n_segments;
};

/*
 * Runs @t on @c under @policy with @seed. Returns 0 with *ret owned by the
 * caller (gantry_sim_result_free), or -errno with @err.
 */
int gantry_sim_run(const struct gantry_sim_cluster *c, const struct gantry_sim_trace *t,
                   enum gantry_sim_policy policy, uint64_t seed, struct gantry_sim_result **ret,
                   struct gantry_error *err);
void gantry_sim_result_free(struct gantry_sim_result *r);
