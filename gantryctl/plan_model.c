/*
 * The sizing formulas of `gantryctl plan`; see plan_model.h and, for the
 * reasoning and worked examples, docs/planning.md.
 */
#include "plan_model.h"

#include <math.h>

static const char *const limit_names[GANTRY_PLAN_LIMIT_COUNT] = {
        [GANTRY_PLAN_LIMIT_STORAGE] = "storage",
        [GANTRY_PLAN_LIMIT_STORAGE_NICS] = "storage NICs",
        [GANTRY_PLAN_LIMIT_LEAF_UPLINKS] = "leaf uplinks",
        [GANTRY_PLAN_LIMIT_NODE_NICS] = "GPU node NICs",
};

static const char *const limit_keys[GANTRY_PLAN_LIMIT_COUNT] = {
        [GANTRY_PLAN_LIMIT_STORAGE] = "storage",
        [GANTRY_PLAN_LIMIT_STORAGE_NICS] = "storageNics",
        [GANTRY_PLAN_LIMIT_LEAF_UPLINKS] = "leafUplinks",
        [GANTRY_PLAN_LIMIT_NODE_NICS] = "nodeNics",
};

/* @table[@i] of @n entries, "unknown" out of range. */
static const char *entry(const char *const *table, unsigned n, unsigned i)
{
        return i < n ? table[i] : "unknown";
}

const char *gantry_plan_limit_name(enum gantry_plan_limit l)
{
        return entry(limit_names, GANTRY_PLAN_LIMIT_COUNT, l);
}

const char *gantry_plan_limit_key(enum gantry_plan_limit l)
{
        return entry(limit_keys, GANTRY_PLAN_LIMIT_COUNT, l);
}

double gantry_plan_nodes(const struct gantry_plan_cluster *c)
{
        return ceil(c->gpus / c->gpus_per_node);
}

/* Index of the smallest limit; the first one wins a tie. */
static enum gantry_plan_limit smallest(const double *limits)
{
        enum gantry_plan_limit best = 0;

        for (int i = 1; i < GANTRY_PLAN_LIMIT_COUNT; i++)
                if (limits[i] < limits[best])
                        best = i;
        return best;
}

/*
 * What the GPUs consume when the storage side can deliver @deliverable and a
 * fraction @hit of their reads is served by the page cache: the storage only
 * sees (1 - hit) of the consumption, so consumption may reach
 * deliverable / (1 - hit), and never more than @required.
 */
static double consumption(double required, double deliverable, double hit)
{
        if (hit >= 1)
                return required;
        return fmin(required, deliverable / (1 - hit));
}

void gantry_plan_reads(const struct gantry_plan_cluster *c, const struct gantry_plan_reads_in *in,
                       struct gantry_plan_reads_out *ret)
{
        struct gantry_plan_reads_out o = { 0 };
        double survivors = in->storage_nodes - 1;
        double rb[GANTRY_PLAN_LIMIT_COUNT];

        o.nodes = gantry_plan_nodes(c);
        o.per_gpu_gbytes = in->ingest_mbps > 0 ? in->ingest_mbps / 1e3
                                               : in->samples_per_s * in->bytes_per_sample / 1e9;
        /* a synchronized job's workers all fetch their next batch together */
        o.required_gbytes = c->gpus * o.per_gpu_gbytes;

        o.limit_gbytes[GANTRY_PLAN_LIMIT_STORAGE] = in->storage_nodes * in->storage_read_gbytes;
        o.limit_gbytes[GANTRY_PLAN_LIMIT_STORAGE_NICS] = in->storage_nodes * in->storage_nic_gbps / 8;
        /* storage sits on its own leaves: every byte crosses the GPU leaves' uplinks */
        o.limit_gbytes[GANTRY_PLAN_LIMIT_LEAF_UPLINKS] =
                o.nodes * c->node_nic_gbps / 8 / c->oversubscription;
        o.limit_gbytes[GANTRY_PLAN_LIMIT_NODE_NICS] = o.nodes * c->node_nic_gbps / 8;
        o.network_gbytes = fmin(o.limit_gbytes[GANTRY_PLAN_LIMIT_STORAGE_NICS],
                                fmin(o.limit_gbytes[GANTRY_PLAN_LIMIT_LEAF_UPLINKS],
                                     o.limit_gbytes[GANTRY_PLAN_LIMIT_NODE_NICS]));
        o.bottleneck = smallest(o.limit_gbytes);
        o.deliverable_gbytes = o.limit_gbytes[o.bottleneck];
        o.headroom_gbytes = o.deliverable_gbytes - o.required_gbytes;
        o.headroom_fraction = o.headroom_gbytes / o.required_gbytes;

        o.fits_in_cache = in->node_cache_gb >= in->dataset_gb;
        o.cache_hit = fmin(1, in->node_cache_gb / in->dataset_gb);
        o.cold_gbytes = fmin(o.required_gbytes, o.deliverable_gbytes);
        o.warm_gbytes = consumption(o.required_gbytes, o.deliverable_gbytes, o.cache_hit);
        o.cold_utilization = o.cold_gbytes / o.required_gbytes;
        o.warm_utilization = o.warm_gbytes / o.required_gbytes;
        o.epoch_cold_s = in->dataset_gb / o.cold_gbytes;
        o.epoch_warm_s = in->dataset_gb / o.warm_gbytes;

        /* one storage node lost; survivors spend rebuild_share on the rebuild */
        o.rebuild_possible = survivors >= 1;
        if (o.rebuild_possible) {
                rb[GANTRY_PLAN_LIMIT_STORAGE] =
                        survivors * in->storage_read_gbytes * (1 - in->rebuild_share);
                rb[GANTRY_PLAN_LIMIT_STORAGE_NICS] =
                        survivors * in->storage_nic_gbps / 8 * (1 - in->rebuild_share);
                rb[GANTRY_PLAN_LIMIT_LEAF_UPLINKS] = o.limit_gbytes[GANTRY_PLAN_LIMIT_LEAF_UPLINKS];
                rb[GANTRY_PLAN_LIMIT_NODE_NICS] = o.limit_gbytes[GANTRY_PLAN_LIMIT_NODE_NICS];
                o.rebuild_bottleneck = smallest(rb);
                o.rebuild_deliverable_gbytes = rb[o.rebuild_bottleneck];
                o.rebuild_gbytes = fmin(o.required_gbytes, o.rebuild_deliverable_gbytes);
                o.rebuild_utilization = o.rebuild_gbytes / o.required_gbytes;
                o.epoch_rebuild_s = in->dataset_gb / o.rebuild_gbytes;
        }
        *ret = o;
}

static void scheme(double raw_tb, double fill, double fraction, double tolerated,
                   struct gantry_plan_scheme *ret)
{
        ret->fraction = fraction;
        ret->usable_tb = raw_tb * fraction * fill;
        ret->overhead = 1 / fraction;
        ret->failures_tolerated = tolerated;
}

void gantry_plan_capacity(const struct gantry_plan_capacity_in *in,
                          struct gantry_plan_capacity_out *ret)
{
        struct gantry_plan_capacity_out o;

        scheme(in->raw_tb, in->fill, in->ec_k / (in->ec_k + in->ec_m), in->ec_m, &o.ec);
        scheme(in->raw_tb, in->fill, 1 / in->replicas, in->replicas - 1, &o.replication);
        scheme(in->raw_tb, in->fill, 0.5, 1, &o.mirror);
        *ret = o;
}

double gantry_plan_checkpoint_size_gb(const struct gantry_plan_checkpoint_in *in)
{
        if (in->size_gb > 0)
                return in->size_gb;
        /* 1e9 parameters x bytes each = GB */
        return in->params_billion * in->bytes_per_param * in->optimizer_multiplier;
}

void gantry_plan_path(double size_gb, double gbytes, double interval_s, double mtbf_s,
                      struct gantry_plan_path *ret)
{
        struct gantry_plan_path p = { 0 };

        p.gbytes = gbytes;
        p.window_s = size_gb / gbytes;
        p.window_exceeds_interval = p.window_s >= interval_s;
        p.lost_fraction = fmin(1, p.window_s / interval_s);
        if (mtbf_s > 0) {
                /* Young (1974): the interval that minimises window + rework */
                p.optimal_interval_s = sqrt(2 * p.window_s * mtbf_s);
                /* each failure loses half an interval of work on average */
                p.overhead_with_failures = fmin(1, p.lost_fraction + interval_s / (2 * mtbf_s));
        }
        *ret = p;
}

void gantry_plan_drain(double size_gb, double window_s, double interval_s, double drain_gbytes,
                       double cap_gbytes, struct gantry_plan_drain *ret)
{
        struct gantry_plan_drain d = { 0 };

        if (drain_gbytes > 0) {
                d.gbytes = cap_gbytes > 0 ? fmin(drain_gbytes, cap_gbytes) : drain_gbytes;
                d.drain_s = size_gb / d.gbytes;
                d.busy_s = window_s + d.drain_s;
                d.fits = d.busy_s <= interval_s;
                d.slack_s = interval_s - d.busy_s;
                d.needed_gbytes = interval_s > window_s ? size_gb / (interval_s - window_s) : 0;
        }
        *ret = d;
}

void gantry_plan_checkpoint(const struct gantry_plan_cluster *c,
                            const struct gantry_plan_checkpoint_in *in,
                            struct gantry_plan_checkpoint_out *ret)
{
        struct gantry_plan_checkpoint_out o = { 0 };
        double interval_s = in->interval_min * 60, mtbf_s = in->mtbf_hours * 3600;

        o.size_gb = gantry_plan_checkpoint_size_gb(in);
        /* checkpoint targets sit off the GPU leaves: writes cross the uplinks */
        o.fabric_gbytes = gantry_plan_nodes(c) * c->node_nic_gbps / 8 / c->oversubscription;
        for (int i = 0; i < in->n_tiers; i++) {
                struct gantry_plan_tier_out *t = &o.tiers[i];

                t->fabric_limited = o.fabric_gbytes < in->tiers[i].write_gbytes;
                t->path_gbytes = fmin(in->tiers[i].write_gbytes, o.fabric_gbytes);
                gantry_plan_path(o.size_gb, t->path_gbytes * in->gds_efficiency, interval_s, mtbf_s,
                                 &t->gds);
                gantry_plan_path(o.size_gb, t->path_gbytes * in->bounce_efficiency, interval_s,
                                 mtbf_s, &t->bounce);
                gantry_plan_drain(o.size_gb, t->gds.window_s, interval_s, in->drain_gbytes,
                                  in->drain_cap_gbytes, &t->drain);
        }
        *ret = o;
}

static const char *const copy_limit_names[GANTRY_PLAN_COPY_LIMIT_COUNT] = {
        [GANTRY_PLAN_COPY_SOURCE] = "source reads",
        [GANTRY_PLAN_COPY_DESTINATION] = "destination writes",
        [GANTRY_PLAN_COPY_CAP] = "copy.readMBps cap",
        [GANTRY_PLAN_COPY_LINK] = "link between the clusters",
        [GANTRY_PLAN_COPY_COPIER] = "one copier",
};

static const char *const copy_limit_keys[GANTRY_PLAN_COPY_LIMIT_COUNT] = {
        [GANTRY_PLAN_COPY_SOURCE] = "sourceReads",
        [GANTRY_PLAN_COPY_DESTINATION] = "destinationWrites",
        [GANTRY_PLAN_COPY_CAP] = "copyReadCap",
        [GANTRY_PLAN_COPY_LINK] = "link",
        [GANTRY_PLAN_COPY_COPIER] = "copier",
};

const char *gantry_plan_copy_limit_name(enum gantry_plan_copy_limit l)
{
        return entry(copy_limit_names, GANTRY_PLAN_COPY_LIMIT_COUNT, l);
}

const char *gantry_plan_copy_limit_key(enum gantry_plan_copy_limit l)
{
        return entry(copy_limit_keys, GANTRY_PLAN_COPY_LIMIT_COUNT, l);
}

void gantry_plan_promotion(const struct gantry_plan_promotion_in *in,
                           struct gantry_plan_promotion_out *ret)
{
        struct gantry_plan_promotion_out o = { 0 };
        double n = in->promotions, uncapped = INFINITY;

        /* the cap is one token bucket per source cluster: its copies share it */
        o.limit_gbytes[GANTRY_PLAN_COPY_SOURCE] = in->source_read_gbytes / n;
        o.limit_gbytes[GANTRY_PLAN_COPY_DESTINATION] = in->dest_write_gbytes / n;
        o.limit_gbytes[GANTRY_PLAN_COPY_CAP] = in->read_cap_mbps > 0 ? in->read_cap_mbps / 1000 / n
                                                                      : INFINITY;
        o.limit_gbytes[GANTRY_PLAN_COPY_LINK] = in->link_gbps > 0 ? in->link_gbps / 8 / n : INFINITY;
        o.limit_gbytes[GANTRY_PLAN_COPY_COPIER] = in->copier_gbytes > 0 ? in->copier_gbytes : INFINITY;
        o.bottleneck = GANTRY_PLAN_COPY_SOURCE;
        for (int i = 0; i < GANTRY_PLAN_COPY_LIMIT_COUNT; i++) {
                if (o.limit_gbytes[i] < o.limit_gbytes[o.bottleneck])
                        o.bottleneck = i;
                if (i != GANTRY_PLAN_COPY_CAP)
                        uncapped = fmin(uncapped, o.limit_gbytes[i]);
        }
        o.rate_gbytes = o.limit_gbytes[o.bottleneck];
        o.seconds = in->dataset_gb / o.rate_gbytes;
        o.uncapped_seconds = in->dataset_gb / uncapped;
        *ret = o;
}
