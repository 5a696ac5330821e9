/*
 * Rendering `gantryctl plan`'s results (table, JSON, SVG) and the plan
 * subcommand itself; see plan_report.h. The numbers all come from
 * plan_model.c: this file only lays them out.
 */
#include "plan_report.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "svg.h"

#define CHART_POINTS 33

void gantry_plan_compute(const struct gantry_plan_input *in, struct gantry_plan_result *ret)
{
        struct gantry_plan_result r = { 0 };

        if (in->has_reads)
                gantry_plan_reads(&in->cluster, &in->reads, &r.reads);
        if (in->has_capacity)
                gantry_plan_capacity(&in->capacity, &r.capacity);
        if (in->has_checkpoint)
                gantry_plan_checkpoint(&in->cluster, &in->checkpoint, &r.checkpoint);
        if (in->has_promotion)
                gantry_plan_promotion(&in->promotion, &r.promotion);
        *ret = r;
}

static void row(FILE *f, const char *label, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void row(FILE *f, const char *label, const char *fmt, ...)
{
        va_list ap;

        fprintf(f, "  %-34s ", label);
        va_start(ap, fmt);
        vfprintf(f, fmt, ap);
        va_end(ap);
        fputc('\n', f);
}

/* "1h 02m 03s", "4m 05s", "12.3s" */
static const char *duration(double s, char *buf, size_t size)
{
        if (!isfinite(s))
                snprintf(buf, size, "never");
        else if (s >= 3600)
                snprintf(buf, size, "%.0fh %02.0fm %02.0fs", floor(s / 3600), floor(fmod(s, 3600) / 60),
                         floor(fmod(s, 60)));
        else if (s >= 60)
                snprintf(buf, size, "%.0fm %02.0fs", floor(s / 60), floor(fmod(s, 60)));
        else
                snprintf(buf, size, "%.1fs", s);
        return buf;
}

static void table_reads(FILE *f, const struct gantry_plan_input *in, const struct gantry_plan_reads_out *o)
{
        char a[32], b[32], c[32];

        fprintf(f, "Dataset reads\n");
        row(f, "GPUs / nodes", "%g GPUs on %g nodes", in->cluster.gpus, o->nodes);
        row(f, "per-GPU ingest", "%.3f GB/s", o->per_gpu_gbytes);
        row(f, "required at the barrier", "%.1f GB/s", o->required_gbytes);
        row(f, "storage aggregate", "%.1f GB/s", o->limit_gbytes[GANTRY_PLAN_LIMIT_STORAGE]);
        row(f, "network cap", "%.1f GB/s  (storage NICs %.1f, leaf uplinks %.1f, GPU node NICs %.1f)",
            o->network_gbytes, o->limit_gbytes[GANTRY_PLAN_LIMIT_STORAGE_NICS],
            o->limit_gbytes[GANTRY_PLAN_LIMIT_LEAF_UPLINKS], o->limit_gbytes[GANTRY_PLAN_LIMIT_NODE_NICS]);
        row(f, "deliverable", "%.1f GB/s  (bottleneck: %s)", o->deliverable_gbytes,
            gantry_plan_limit_name(o->bottleneck));
        row(f, "headroom", "%+.1f GB/s  (%+.1f%%)", o->headroom_gbytes, 100 * o->headroom_fraction);
        row(f, "dataset fits in node cache", "%s  (cache hit %.1f%%)", o->fits_in_cache ? "yes" : "no",
            100 * o->cache_hit);
        row(f, "GPU utilization cold / warm", "%.1f%% / %.1f%%", 100 * o->cold_utilization,
            100 * o->warm_utilization);
        row(f, "epoch cold / warm", "%s / %s", duration(o->epoch_cold_s, a, sizeof(a)),
            duration(o->epoch_warm_s, b, sizeof(b)));
        if (o->rebuild_possible)
                row(f, "one storage node rebuilding", "%.1f GB/s (%s), utilization %.1f%%, epoch %s",
                    o->rebuild_deliverable_gbytes, gantry_plan_limit_name(o->rebuild_bottleneck),
                    100 * o->rebuild_utilization, duration(o->epoch_rebuild_s, c, sizeof(c)));
        else
                row(f, "one storage node rebuilding", "n/a (one storage node)");
}

static void table_capacity(FILE *f, const struct gantry_plan_input *in,
                           const struct gantry_plan_capacity_out *o)
{
        char label[64];
        const struct { const char *name; const struct gantry_plan_scheme *s; } rows[] = {
                { "", &o->ec }, { "", &o->replication }, { "mirroring (2 copies)", &o->mirror },
        };

        fprintf(f, "Capacity (%g TB raw, filled to %.0f%%)\n", in->capacity.raw_tb, 100 * in->capacity.fill);
        for (size_t i = 0; i < 3; i++) {
                if (i == 0)
                        snprintf(label, sizeof(label), "erasure code k=%g m=%g", in->capacity.ec_k,
                                 in->capacity.ec_m);
                else if (i == 1)
                        snprintf(label, sizeof(label), "replication x%g", in->capacity.replicas);
                else
                        snprintf(label, sizeof(label), "%s", rows[i].name);
                row(f, label, "%.1f TB usable  (%.1f%% of raw, overhead %.2fx, tolerates %g lost nodes)",
                    rows[i].s->usable_tb, 100 * rows[i].s->fraction, rows[i].s->overhead,
                    rows[i].s->failures_tolerated);
        }
}

static void table_path(FILE *f, const char *label, const struct gantry_plan_path *p, double mtbf)
{
        char a[32], b[32];

        row(f, label, "%.1f GB/s, window %s, %.2f%% of time lost%s", p->gbytes,
            duration(p->window_s, a, sizeof(a)), 100 * p->lost_fraction,
            p->window_exceeds_interval ? "  (window >= interval!)" : "");
        if (mtbf > 0)
                row(f, "", "with failures %.2f%% lost; best interval %s", 100 * p->overhead_with_failures,
                    duration(p->optimal_interval_s, b, sizeof(b)));
}

static void table_drain(FILE *f, const struct gantry_plan_drain *d)
{
        char a[32], b[32];

        row(f, "  drain to the durable tier", "%.1f GB/s, %s after the burst, done %s %s the next", d->gbytes,
            duration(d->drain_s, a, sizeof(a)), duration(fabs(d->slack_s), b, sizeof(b)),
            d->fits ? "before" : "AFTER");
        if (!d->fits)
                row(f, "  drain rate that fits", d->needed_gbytes > 0 ? "%.1f GB/s" : "none (burst >= interval)",
                    d->needed_gbytes);
}

static void table_checkpoint(FILE *f, const struct gantry_plan_input *in,
                             const struct gantry_plan_checkpoint_out *o)
{
        const struct gantry_plan_checkpoint_in *c = &in->checkpoint;
        char label[64];

        fprintf(f, "Checkpoints (every %g min)\n", c->interval_min);
        row(f, "checkpoint size", "%.1f GB", o->size_gb);
        row(f, "GPU fabric toward targets", "%.1f GB/s", o->fabric_gbytes);
        for (int i = 0; i < c->n_tiers; i++) {
                row(f, c->tiers[i].name, "path %.1f GB/s (%s)", o->tiers[i].path_gbytes,
                    o->tiers[i].fabric_limited ? "fabric-limited" : "tier-limited");
                snprintf(label, sizeof(label), "  GPUDirect Storage (x%.2f)", c->gds_efficiency);
                table_path(f, label, &o->tiers[i].gds, c->mtbf_hours);
                snprintf(label, sizeof(label), "  bounce buffer (x%.2f)", c->bounce_efficiency);
                table_path(f, label, &o->tiers[i].bounce, c->mtbf_hours);
                if (c->drain_gbytes > 0)
                        table_drain(f, &o->tiers[i].drain);
        }
}

static void table_promotion(FILE *f, const struct gantry_plan_input *in,
                            const struct gantry_plan_promotion_out *o)
{
        const struct gantry_plan_promotion_in *p = &in->promotion;
        char a[32], b[32], limits[256] = "";
        size_t used = 0;

        fprintf(f, "Promotion (%g GB, %g at once from the source)\n", p->dataset_gb, p->promotions);
        for (int i = 0; i < GANTRY_PLAN_COPY_LIMIT_COUNT && used < sizeof(limits); i++)
                if (isfinite(o->limit_gbytes[i]))
                        used += snprintf(limits + used, sizeof(limits) - used, "%s%s %.2f", used ? ", " : "",
                                         gantry_plan_copy_limit_name(i), o->limit_gbytes[i]);
        row(f, "limits per promotion", "%s GB/s", limits);
        row(f, "copy rate", "%.2f GB/s  (bottleneck: %s)", o->rate_gbytes,
            gantry_plan_copy_limit_name(o->bottleneck));
        row(f, "estimated time", "%s", duration(o->seconds, a, sizeof(a)));
        if (o->bottleneck == GANTRY_PLAN_COPY_CAP)
                row(f, "without the cap", "%s", duration(o->uncapped_seconds, b, sizeof(b)));
}

void gantry_plan_report_table(FILE *f, const struct gantry_plan_input *in,
                              const struct gantry_plan_result *res)
{
        const char *sep = "";

        if (in->has_reads) {
                table_reads(f, in, &res->reads);
                sep = "\n";
        }
        if (in->has_capacity) {
                fputs(sep, f);
                table_capacity(f, in, &res->capacity);
                sep = "\n";
        }
        if (in->has_checkpoint) {
                fputs(sep, f);
                table_checkpoint(f, in, &res->checkpoint);
                sep = "\n";
        }
        if (in->has_promotion) {
                fputs(sep, f);
                table_promotion(f, in, &res->promotion);
        }
}

static json_t *json_limits(const double *limits)
{
        json_t *o = json_object();

        for (int i = 0; o && i < GANTRY_PLAN_LIMIT_COUNT; i++)
                json_object_set_new(o, gantry_plan_limit_key(i), json_real(limits[i]));
        return o;
}

static json_t *json_reads(const struct gantry_plan_reads_out *o)
{
        json_t *j = json_pack("{s:f, s:f, s:f, s:o, s:f, s:f, s:s, s:f, s:f, s:b, s:f, s:f, s:f, s:f,"
                              " s:f, s:f, s:f}",
                              "nodes", o->nodes, "perGpuGBps", o->per_gpu_gbytes, "requiredGBps",
                              o->required_gbytes, "limitsGBps", json_limits(o->limit_gbytes),
                              "networkCapGBps", o->network_gbytes, "deliverableGBps", o->deliverable_gbytes, "bottleneck",
                              gantry_plan_limit_key(o->bottleneck), "headroomGBps", o->headroom_gbytes,
                              "headroomFraction", o->headroom_fraction, "fitsInNodeCache",
                              o->fits_in_cache, "cacheHit", o->cache_hit, "coldGBps", o->cold_gbytes,
                              "warmGBps", o->warm_gbytes, "coldUtilization", o->cold_utilization,
                              "warmUtilization", o->warm_utilization, "epochColdSeconds",
                              o->epoch_cold_s, "epochWarmSeconds", o->epoch_warm_s);

        if (j && o->rebuild_possible)
                json_object_set_new(j, "rebuild",
                                    json_pack("{s:f, s:s, s:f, s:f, s:f}", "deliverableGBps",
                                              o->rebuild_deliverable_gbytes, "bottleneck",
                                              gantry_plan_limit_key(o->rebuild_bottleneck),
                                              "GBps", o->rebuild_gbytes, "utilization",
                                              o->rebuild_utilization, "epochSeconds",
                                              o->epoch_rebuild_s));
        return j;
}

static json_t *json_scheme(const struct gantry_plan_scheme *s)
{
        return json_pack("{s:f, s:f, s:f, s:f}", "fraction", s->fraction, "usableTB", s->usable_tb,
                         "overhead", s->overhead, "failuresTolerated", s->failures_tolerated);
}

static json_t *json_path(const struct gantry_plan_path *p)
{
        json_t *j = json_pack("{s:f, s:f, s:f, s:b}", "GBps", p->gbytes, "windowSeconds", p->window_s,
                              "lostFraction", p->lost_fraction, "windowExceedsInterval",
                              p->window_exceeds_interval);

        if (j && p->optimal_interval_s > 0) {
                json_object_set_new(j, "optimalIntervalSeconds", json_real(p->optimal_interval_s));
                json_object_set_new(j, "overheadWithFailures", json_real(p->overhead_with_failures));
        }
        return j;
}

static json_t *json_checkpoint(const struct gantry_plan_checkpoint_in *in,
                               const struct gantry_plan_checkpoint_out *o)
{
        json_t *tiers = json_array();

        for (int i = 0; tiers && i < in->n_tiers; i++) {
                const struct gantry_plan_drain *d = &o->tiers[i].drain;
                json_t *t = json_pack("{s:s, s:f, s:b, s:o, s:o}", "name", in->tiers[i].name, "pathGBps",
                                      o->tiers[i].path_gbytes, "fabricLimited", o->tiers[i].fabric_limited,
                                      "gds", json_path(&o->tiers[i].gds), "bounce",
                                      json_path(&o->tiers[i].bounce));
                if (t && in->drain_gbytes > 0)
                        json_object_set_new(t, "drain",
                                            json_pack("{s:f, s:f, s:f, s:b, s:f, s:f}", "GBps", d->gbytes,
                                                      "drainSeconds", d->drain_s, "busySeconds", d->busy_s,
                                                      "fits", d->fits, "slackSeconds", d->slack_s,
                                                      "neededGBps", d->needed_gbytes));
                json_array_append_new(tiers, t);
        }
        return json_pack("{s:f, s:f, s:o}", "sizeGB", o->size_gb, "fabricGBps", o->fabric_gbytes,
                         "tiers", tiers);
}

static json_t *json_promotion(const struct gantry_plan_promotion_out *o)
{
        json_t *limits = json_object();

        /* a limit that was not given is left out (JSON has no infinity) */
        for (int i = 0; limits && i < GANTRY_PLAN_COPY_LIMIT_COUNT; i++)
                if (isfinite(o->limit_gbytes[i]))
                        json_object_set_new(limits, gantry_plan_copy_limit_key(i),
                                            json_real(o->limit_gbytes[i]));
        return json_pack("{s:o, s:f, s:s, s:f, s:f}", "limitsGBps", limits, "rateGBps", o->rate_gbytes,
                         "bottleneck", gantry_plan_copy_limit_key(o->bottleneck), "seconds", o->seconds,
                         "uncappedSeconds", o->uncapped_seconds);
}

json_t *gantry_plan_report_json(const struct gantry_plan_input *in,
                                const struct gantry_plan_result *res)
{
        json_t *j = json_object();

        if (!j)
                return NULL;
        json_object_set_new(j, "inputs", gantry_plan_input_json(in));
        if (in->has_reads)
                json_object_set_new(j, "reads", json_reads(&res->reads));
        if (in->has_capacity)
                json_object_set_new(j, "capacity",
                                    json_pack("{s:o, s:o, s:o}", "erasureCode",
                                              json_scheme(&res->capacity.ec), "replication",
                                              json_scheme(&res->capacity.replication), "mirror",
                                              json_scheme(&res->capacity.mirror)));
        if (in->has_checkpoint)
                json_object_set_new(j, "checkpoint", json_checkpoint(&in->checkpoint, &res->checkpoint));
        if (in->has_promotion)
                json_object_set_new(j, "promotion", json_promotion(&res->promotion));
        return j;
}

struct chart_data {
        double x[3][CHART_POINTS], y[3][CHART_POINTS];
        struct gantry_svg_series series[3];
};

/* Epoch minutes against GPU count, from one node up to 4x the input's GPUs. */
static void chart_epochs(const struct gantry_plan_input *in, struct chart_data *d,
                         struct gantry_svg_chart *ret)
{
        struct gantry_plan_cluster c = in->cluster;
        struct gantry_plan_reads_out o;

        for (int i = 0; i < CHART_POINTS; i++) {
                double step = ceil(4 * in->cluster.gpus / (CHART_POINTS - 1) / c.gpus_per_node);

                c.gpus = i == 0 ? c.gpus_per_node : i * step * c.gpus_per_node;
                gantry_plan_reads(&c, &in->reads, &o);
                d->x[0][i] = d->x[1][i] = d->x[2][i] = c.gpus;
                d->y[0][i] = o.epoch_cold_s / 60;
                d->y[1][i] = o.epoch_warm_s / 60;
                d->y[2][i] = in->reads.dataset_gb / o.required_gbytes / 60;
        }
        d->series[0] = (struct gantry_svg_series){ "cold epoch", d->x[0], d->y[0], CHART_POINTS };
        d->series[1] = (struct gantry_svg_series){ "warm epoch", d->x[1], d->y[1], CHART_POINTS };
        d->series[2] = (struct gantry_svg_series){ "GPU-bound", d->x[2], d->y[2], CHART_POINTS };
        *ret = (struct gantry_svg_chart){ "Epoch time against GPU count", "GPUs", "minutes",
                                          d->series, 3 };
}

/* Checkpoint window against path bandwidth, up to twice the best tier's path. */
static void chart_windows(const struct gantry_plan_input *in, const struct gantry_plan_result *res,
                          struct chart_data *d, struct gantry_svg_chart *ret)
{
        const struct gantry_plan_checkpoint_in *c = &in->checkpoint;
        double top = 0;

        for (int i = 0; i < c->n_tiers; i++)
                top = fmax(top, res->checkpoint.tiers[i].path_gbytes);
        for (int i = 0; i < CHART_POINTS; i++) {
                double bw = 2 * top * (i + 1) / CHART_POINTS;

                d->x[0][i] = d->x[1][i] = bw;
                d->y[0][i] = res->checkpoint.size_gb / (bw * c->gds_efficiency);
                d->y[1][i] = res->checkpoint.size_gb / (bw * c->bounce_efficiency);
        }
        d->series[0] = (struct gantry_svg_series){ "GPUDirect Storage", d->x[0], d->y[0], CHART_POINTS };
        d->series[1] = (struct gantry_svg_series){ "bounce buffer", d->x[1], d->y[1], CHART_POINTS };
        *ret = (struct gantry_svg_chart){ "Checkpoint window against write path bandwidth",
                                          "path GB/s", "seconds", d->series, 2 };
}

/* Usable TB against raw TB for the three schemes, up to twice the input. */
static void chart_capacity(const struct gantry_plan_input *in, const struct gantry_plan_result *res,
                           struct chart_data *d, struct gantry_svg_chart *ret)
{
        const struct gantry_plan_scheme *s[3] = { &res->capacity.ec, &res->capacity.replication,
                                                  &res->capacity.mirror };
        static const char *const names[3] = { "erasure code", "replication", "mirroring" };

        for (int k = 0; k < 3; k++) {
                for (int i = 0; i < CHART_POINTS; i++) {
                        d->x[k][i] = 2 * in->capacity.raw_tb * i / (CHART_POINTS - 1);
                        d->y[k][i] = d->x[k][i] * s[k]->fraction * in->capacity.fill;
                }
                d->series[k] = (struct gantry_svg_series){ names[k], d->x[k], d->y[k], CHART_POINTS };
        }
        *ret = (struct gantry_svg_chart){ "Usable capacity against raw", "raw TB", "usable TB",
                                          d->series, 3 };
}

int gantry_plan_report_svg(const char *path, const struct gantry_plan_input *in,
                           const struct gantry_plan_result *res)
{
        struct chart_data *d = calloc(3, sizeof(*d));
        struct gantry_svg_chart charts[3];
        size_t n = 0;
        int r;

        if (!d)
                return -ENOMEM;
        if (in->has_reads)
                chart_epochs(in, &d[n], &charts[n]), n++;
        if (in->has_checkpoint)
                chart_windows(in, res, &d[n], &charts[n]), n++;
        if (in->has_capacity)
                chart_capacity(in, res, &d[n], &charts[n]), n++;
        r = gantry_svg_write_file(path, charts, n);
        free(d);
        return r;
}

int gantry_plan_main(int argc, char **argv)
{
        struct gantry_plan_input in;
        struct gantry_plan_result res;
        struct gantry_error err = { 0 };
        int r = gantry_plan_input_parse(argc, argv, &in, &err);

        if (r == 1)
                return 0;
        if (r < 0) {
                fprintf(stderr, "gantryctl plan: %s\n", err.msg[0] ? err.msg : strerror(-r));
                return 2;
        }
        gantry_plan_compute(&in, &res);
        if (in.json) {
                json_t *j = gantry_plan_report_json(&in, &res);

                if (!j || json_dumpf(j, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(10)) < 0) {
                        json_decref(j);
                        fprintf(stderr, "gantryctl plan: writing JSON failed\n");
                        return 1;
                }
                fputc('\n', stdout);
                json_decref(j);
        } else {
                gantry_plan_report_table(stdout, &in, &res);
        }
        if (in.svg_path) {
                r = gantry_plan_report_svg(in.svg_path, &in, &res);
                if (r < 0) {
                        fprintf(stderr, "gantryctl plan: --svg %s: %s\n", in.svg_path, strerror(-r));
                        return 1;
                }
        }
        return 0;
}
