/*
 * The simulator's physical model of the fabric: which links a placed job's
 * reads cross, how running jobs share those links, how long a checkpoint
 * takes, and the max-flow upper bound on what the fabric and storage could
 * deliver to a set of running jobs whatever their placement.
 *
 * Links (Gbit/s, one direction each): every node's NIC (receive), every
 * leaf's uplinks down from the spine and up to the spine, every storage
 * backend. A job reading from backend B striped over k leaves sends 1/k of
 * each pod's reads from each of B's leaves; the part whose source leaf is not
 * the pod's leaf crosses the source leaf's uplink (up) and the pod's leaf's
 * uplink (down).
 *
 * Sharing: training is synchronized, so a job is only as fast as its
 * slowest worker: each job runs at one rate x in [0, 1] of its full-speed
 * demand on every link, and the rates are max-min fair (progressive filling:
 * raise every unfrozen job's x together until a link saturates, freeze the
 * jobs on it, repeat).
 */
#pragma once

#include <stddef.h>

#include "sim_model.h"

struct gantry_sim_fabric;

/* A job's full-speed demand on each link it crosses (sparse). */
struct gantry_sim_load {
        int n;
        int *link;
        double *gbps;
        double total_gbps; /* what its pods read, in all */
};

int gantry_sim_fabric_new(const struct gantry_sim_cluster *c, struct gantry_sim_fabric **ret);
void gantry_sim_fabric_free(struct gantry_sim_fabric *f);

/*
 * The load of @job placed with pod i on node @pod_nodes[i]. Replaces what
 * *ret held (free it with gantry_sim_load_clear). Returns 0 or -ENOMEM.
 */
int gantry_sim_fabric_job_load(struct gantry_sim_fabric *f, const struct gantry_sim_job *job,
                               const int *pod_nodes, struct gantry_sim_load *ret);
void gantry_sim_load_clear(struct gantry_sim_load *l);

/* Number of links, and the capacity of link @link (Gbit/s), for checks. */
int gantry_sim_fabric_links(const struct gantry_sim_fabric *f);
double gantry_sim_fabric_capacity(const struct gantry_sim_fabric *f, int link);

/*
 * Max-min fair rates of @n jobs with loads @loads (NULL entries are not
 * reading: rate 0). Writes ret_x[i] in [0, 1]. Returns 0 or -ENOMEM.
 */
int gantry_sim_fabric_share(struct gantry_sim_fabric *f, const struct gantry_sim_load *const *loads,
                            size_t n, double *ret_x);

/*
 * Seconds a checkpoint of @job takes when placed on @pod_nodes: each pod
 * writes its share (its GPUs / the job's GPUs) through its node's NIC; the
 * shares of pods on a leaf other than the target's leaves cross that leaf's
 * uplink; the target's bandwidth bounds the whole. The slowest of these
 * constraints sets the time (other jobs' checkpoints are not modelled).
 */
double gantry_sim_fabric_checkpoint_s(const struct gantry_sim_fabric *f,
                                      const struct gantry_sim_job *job, const int *pod_nodes);

/*
 * The upper bound: the maximum flow from the storage backends to the @n
 * reading jobs @jobs (full-speed demands) over the real link capacities,
 * with the placement relaxed: any node may receive any job's data, up to its
 * NIC and its GPUs x the largest per-GPU ingest among the jobs. Every real
 * placement's shared rates are a feasible flow of this graph, so no policy
 * can deliver more. Returns the bound in Gbit/s, or a negative -errno.
 * When @ret_job_gbps is not NULL it receives each job's share of the flow.
 */
double gantry_sim_fabric_bound(const struct gantry_sim_fabric *f, const struct gantry_sim_job *const *jobs,
                               size_t n, double *ret_job_gbps);
