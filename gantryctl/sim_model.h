/*
 * The placement simulator's world: a cluster (leaves of GPU nodes under one
 * spine, storage backends attached to leaves) and a job trace, as read from
 * the two JSON files `gantryctl sim` takes (sim_input.c), plus the results of
 * one simulated run (sim_engine.c).
 *
 * Bandwidth is in Gbit/s throughout, as the placement library counts it.
 * A job's per-GPU ingest is given in MB/s (as in `gantryctl plan`) and turned
 * into Gbit/s once: MB/s x 8 / 1000.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

#define GANTRY_SIM_NAME_MAX 64
#define GANTRY_SIM_MAX_NODES 16384
#define GANTRY_SIM_MAX_LEAVES 1024
#define GANTRY_SIM_MAX_BACKENDS 64
#define GANTRY_SIM_MAX_ATTACH 16
#define GANTRY_SIM_MAX_JOBS 100000
#define GANTRY_SIM_MAX_PODS 1024 /* pods per job */
#define GANTRY_SIM_MAX_CHECKPOINTS 1000000 /* over the whole trace: each is two events */

enum gantry_sim_backend_kind { GANTRY_SIM_CEPH = 1, GANTRY_SIM_NVMEOF = 2 };

struct gantry_sim_leaf {
        char name[GANTRY_SIM_NAME_MAX];
        double uplink_gbps;     /* each direction of the leaf's uplinks to the spine */
        double oversubscription;
};

struct gantry_sim_node {
        char name[GANTRY_SIM_NAME_MAX];
        int leaf;
        int gpus;
        double nic_gbps;
};

struct gantry_sim_backend {
        char name[GANTRY_SIM_NAME_MAX];
        enum gantry_sim_backend_kind kind;
        double gbps;            /* aggregate; striped evenly over its leaves */
        int leaves[GANTRY_SIM_MAX_ATTACH];
        int n_leaves;
};

struct gantry_sim_cluster {
        struct gantry_sim_leaf *leaves;
        int n_leaves;
        struct gantry_sim_node *nodes;
        int n_nodes;
        struct gantry_sim_backend backends[GANTRY_SIM_MAX_BACKENDS];
        int n_backends;
        int total_gpus;
};

struct gantry_sim_job {
        char name[GANTRY_SIM_NAME_MAX];
        double arrival_s;
        int gpus;
        int gpus_per_pod;       /* gpus is a multiple of it */
        double ingest_gbps_per_gpu;
        int backend;            /* dataset backend index */
        double step_s;          /* compute time of one step at full speed */
        double steps;
        double checkpoint_gb;   /* 0: no checkpoints */
        double checkpoint_every_steps;
        int checkpoint_target;  /* backend index, -1 with no checkpoints */
};

struct gantry_sim_trace {
        struct gantry_sim_job *jobs; /* sorted by arrival, then file order */
        int n_jobs;
};

/*
 * Parses a cluster file's text. Returns 0 with *ret owned by the caller
 * (gantry_sim_cluster_free), or -EINVAL / -ENOMEM with @err naming the field.
 */
int gantry_sim_cluster_parse(const char *text, struct gantry_sim_cluster **ret,
                             struct gantry_error *err);
void gantry_sim_cluster_free(struct gantry_sim_cluster *c);

/* Parses a trace against @c (backend names, GPU counts). Same contract. */
int gantry_sim_trace_parse(const char *text, const struct gantry_sim_cluster *c,
                           struct gantry_sim_trace **ret, struct gantry_error *err);
void gantry_sim_trace_free(struct gantry_sim_trace *t);

/* A job's full-speed read demand in Gbit/s: gpus x ingest. */
double gantry_sim_job_demand_gbps(const struct gantry_sim_job *j);
