/*
 * The sizing formulas behind `gantryctl plan`: dataset reads, capacity under
 * erasure coding against replication, checkpoint windows, and the time a
 * dataset promotion (tiering) takes between two clusters.
 *
 * Pure arithmetic on plain structs: no I/O, no allocation, so tests can check
 * each result against a hand calculation and docs/planning.md can explain
 * each line. Units are decimal and written into every field name: GB = 1e9
 * bytes, MB = 1e6 bytes, TB = 1e12 bytes, Gbps = 1e9 bits/s, so a NIC of
 * G Gbps moves G/8 GB/s.
 */
#pragma once

#include <stdbool.h>

#define GANTRY_PLAN_MAX_TIERS 8
#define GANTRY_PLAN_NAME_MAX 32

/* The GPU side of the cluster, shared by the read and checkpoint sections. */
struct gantry_plan_cluster {
        double gpus;            /* GPUs in the job (or cluster) */
        double gpus_per_node;
        double node_nic_gbps;   /* storage-facing NIC per GPU node, Gbit/s */
        double oversubscription; /* leaf downlink : uplink, >= 1 (2 means 2:1) */
};

struct gantry_plan_reads_in {
        double ingest_mbps;       /* per GPU, MB/s; 0: samples x bytes below */
        double samples_per_s;     /* per GPU */
        double bytes_per_sample;
        double dataset_gb;
        double node_cache_gb;     /* page cache per node available for data */
        double storage_nodes;
        double storage_read_gbytes; /* per storage node, GB/s */
        double storage_nic_gbps;  /* per storage node, Gbit/s */
        double rebuild_share;     /* survivors' bandwidth spent on a rebuild */
};

enum gantry_plan_limit {
        GANTRY_PLAN_LIMIT_STORAGE = 0,  /* storage nodes' read bandwidth */
        GANTRY_PLAN_LIMIT_STORAGE_NICS, /* storage nodes' NICs */
        GANTRY_PLAN_LIMIT_LEAF_UPLINKS, /* GPU leaves' uplinks toward the spine */
        GANTRY_PLAN_LIMIT_NODE_NICS,    /* GPU nodes' NICs */
        GANTRY_PLAN_LIMIT_COUNT,
};

struct gantry_plan_reads_out {
        double nodes;             /* ceil(gpus / gpus_per_node) */
        double per_gpu_gbytes;    /* GB/s one GPU consumes at full speed */
        double required_gbytes;   /* all GPUs at the barrier, GB/s */
        double limit_gbytes[GANTRY_PLAN_LIMIT_COUNT];
        double network_gbytes;    /* network cap: min of the three network limits */
        double deliverable_gbytes; /* min of the limits: min(storage, network cap) */
        enum gantry_plan_limit bottleneck;
        double headroom_gbytes;   /* deliverable - required (negative: short) */
        double headroom_fraction; /* headroom / required */
        bool fits_in_cache;
        double cache_hit;         /* min(1, cache / dataset) */
        double cold_gbytes;       /* consumption rate, first epoch */
        double warm_gbytes;       /* consumption rate, later epochs */
        double cold_utilization;  /* cold / required */
        double warm_utilization;
        double epoch_cold_s;
        double epoch_warm_s;
        bool rebuild_possible;    /* needs two or more storage nodes */
        double rebuild_deliverable_gbytes;
        enum gantry_plan_limit rebuild_bottleneck;
        double rebuild_gbytes;    /* consumption rate while rebuilding (cold) */
        double rebuild_utilization;
        double epoch_rebuild_s;
};

struct gantry_plan_capacity_in {
        double raw_tb;
        double ec_k, ec_m;
        double replicas;          /* n-way replication */
        double fill;              /* fraction of raw you may fill, e.g. 0.85 */
};

struct gantry_plan_scheme {
        double fraction;          /* usable / raw before the fill ceiling */
        double usable_tb;         /* raw * fraction * fill */
        double overhead;          /* raw bytes written per user byte */
        double failures_tolerated;
};

struct gantry_plan_capacity_out {
        struct gantry_plan_scheme ec, replication, mirror;
};

struct gantry_plan_tier {
        char name[GANTRY_PLAN_NAME_MAX];
        double write_gbytes;      /* aggregate write GB/s of the tier */
};

struct gantry_plan_checkpoint_in {
        double size_gb;           /* given directly; 0: from the parameters */
        double params_billion;
        double bytes_per_param;
        double optimizer_multiplier;
        struct gantry_plan_tier tiers[GANTRY_PLAN_MAX_TIERS];
        int n_tiers;
        double gds_efficiency;    /* GPUDirect Storage: GPU memory -> NIC */
        double bounce_efficiency; /* GPU -> host bounce buffer -> NIC */
        double interval_min;      /* checkpoint start to next start */
        double mtbf_hours;        /* cluster mean time between failures; 0: none */
        double drain_gbytes;      /* durable tier's write GB/s for drains; 0: no drain planned */
        double drain_cap_gbytes;  /* sum of the targets' drain caps (bandwidthMBps); 0: no cap */
};

/*
 * The drain of one checkpoint from the fast tier into the durable one: it
 * starts when the burst (the window) ends and must end before the next
 * checkpoint starts, or drains pile up (and, capped, still slow bursts).
 */
struct gantry_plan_drain {
        double gbytes;            /* min(durable write, cap) */
        double drain_s;           /* checkpoint size / gbytes */
        double busy_s;            /* window + drain: burst start to drained */
        bool fits;                /* busy_s <= interval */
        double slack_s;           /* interval - busy_s (negative: falls behind) */
        double needed_gbytes;     /* size / (interval - window): the least drain rate that fits; 0: none can */
};

struct gantry_plan_path {
        double gbytes;            /* effective write GB/s */
        double window_s;          /* checkpoint size / gbytes */
        double lost_fraction;     /* window / interval, at most 1 */
        bool window_exceeds_interval;
        double optimal_interval_s; /* Young: sqrt(2 * window * MTBF); 0 w/o MTBF */
        double overhead_with_failures; /* window/interval + interval/(2 MTBF) */
};

struct gantry_plan_tier_out {
        double path_gbytes;       /* min(tier write, fabric) before efficiency */
        bool fabric_limited;
        struct gantry_plan_path gds, bounce;
        struct gantry_plan_drain drain; /* after a GDS burst; all 0 without drain_gbytes */
};

struct gantry_plan_checkpoint_out {
        double size_gb;
        double fabric_gbytes;     /* nodes * nic / 8 / oversubscription */
        struct gantry_plan_tier_out tiers[GANTRY_PLAN_MAX_TIERS];
};

/* What may bound a promotion's copy, per promotion. */
enum gantry_plan_copy_limit {
        GANTRY_PLAN_COPY_SOURCE = 0,     /* the source cluster's reads */
        GANTRY_PLAN_COPY_DESTINATION,    /* the destination cluster's writes */
        GANTRY_PLAN_COPY_CAP,            /* clusters[].copy.readMBps of the source */
        GANTRY_PLAN_COPY_LINK,           /* the network between the clusters */
        GANTRY_PLAN_COPY_COPIER,         /* one copier's own pace (its objects in flight) */
        GANTRY_PLAN_COPY_LIMIT_COUNT,
};

struct gantry_plan_promotion_in {
        double dataset_gb;        /* bytes the copy moves (the allocated extents), GB */
        double source_read_gbytes; /* the source cluster's aggregate read GB/s left for copies */
        double dest_write_gbytes; /* the destination's aggregate write GB/s */
        double read_cap_mbps;     /* the source's clusters[].copy.readMBps; 0: no cap */
        double link_gbps;         /* network between the clusters, Gbit/s; 0: not a limit */
        double copier_gbytes;     /* one copy's own top speed, GB/s (bench/tier); 0: not a limit */
        double promotions;        /* copies at once from this source, sharing all of the above */
};

struct gantry_plan_promotion_out {
        double limit_gbytes[GANTRY_PLAN_COPY_LIMIT_COUNT]; /* per promotion; INFINITY: none given */
        double rate_gbytes;       /* the smallest limit */
        enum gantry_plan_copy_limit bottleneck;
        double seconds;           /* dataset / rate */
        double uncapped_seconds;  /* the same without the cap (= seconds when the cap does not bind) */
};

/* Name of a limit for tables ("storage", "storage NICs", ...). */
const char *gantry_plan_limit_name(enum gantry_plan_limit l);
/* Its JSON key ("storage", "storageNics", "leafUplinks", "nodeNics"). */
const char *gantry_plan_limit_key(enum gantry_plan_limit l);

/* GPU nodes the cluster's GPUs need: ceil(gpus / gpus_per_node). */
double gantry_plan_nodes(const struct gantry_plan_cluster *c);

/*
 * The read section. Inputs must already be validated (plan_input.c): every
 * count > 0, oversubscription >= 1, rebuild_share in [0, 1). Fills *ret.
 */
void gantry_plan_reads(const struct gantry_plan_cluster *c, const struct gantry_plan_reads_in *in,
                       struct gantry_plan_reads_out *ret);

/* The capacity section; inputs validated (k, m, replicas >= 1, fill in (0,1]). */
void gantry_plan_capacity(const struct gantry_plan_capacity_in *in,
                          struct gantry_plan_capacity_out *ret);

/* The drain of a @size_gb checkpoint after a @window_s burst, every @interval_s. */
void gantry_plan_drain(double size_gb, double window_s, double interval_s, double drain_gbytes,
                       double cap_gbytes, struct gantry_plan_drain *ret);

/* Checkpoint size in GB: size_gb when given, else params x bytes x multiplier. */
double gantry_plan_checkpoint_size_gb(const struct gantry_plan_checkpoint_in *in);

/*
 * One write path: @gbytes effective bandwidth, @size_gb, @interval_s and
 * @mtbf_s (0: no failures modelled). Fills *ret.
 */
void gantry_plan_path(double size_gb, double gbytes, double interval_s, double mtbf_s,
                      struct gantry_plan_path *ret);

/* The checkpoint section; inputs validated. Fills *ret. */
void gantry_plan_checkpoint(const struct gantry_plan_cluster *c,
                            const struct gantry_plan_checkpoint_in *in,
                            struct gantry_plan_checkpoint_out *ret);

/* Name and JSON key of a promotion limit ("copy.readMBps cap", "copyReadCap"). */
const char *gantry_plan_copy_limit_name(enum gantry_plan_copy_limit l);
const char *gantry_plan_copy_limit_key(enum gantry_plan_copy_limit l);

/*
 * The promotion estimate: the copy runs at the smallest of the source's
 * reads, the destination's writes, the read cap and the link, each shared
 * evenly by @in->promotions copies at once, and one copier's own pace. Inputs validated (sizes and
 * bandwidths > 0, promotions >= 1). Fills *ret.
 */
void gantry_plan_promotion(const struct gantry_plan_promotion_in *in,
                           struct gantry_plan_promotion_out *ret);
