/*
 * Rendering simulator runs; see sim_report.h. Ratios against the bound are
 * printed next to each policy so the table reads as a verdict: delivered /
 * bound is the share of what the fabric could have delivered to the same
 * running jobs that the policy's placement actually delivered.
 */
#include "sim_report.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "svg.h"

#define BUCKETS 200

/* Mean number of leaves a job's pods spanned. */
static double spanned(const struct gantry_sim_result *r)
{
        double sum = 0;

        for (int j = 0; j < r->n_jobs; j++)
                sum += r->jobs[j].leaves;
        return r->n_jobs ? sum / r->n_jobs : 0;
}

void gantry_sim_report_table(FILE *f, const struct gantry_sim_cluster *c, const struct gantry_sim_trace *t,
                             struct gantry_sim_result *const *runs, size_t n, bool per_job)
{
        double demand = 0;

        for (int j = 0; j < t->n_jobs; j++)
                demand += gantry_sim_job_demand_gbps(&t->jobs[j]);
        fprintf(f, "cluster: %d nodes, %d GPUs, %d leaves, %d backends; trace: %d jobs, %.0f Gbps of "
                   "demand in all\n\n",
                c->n_nodes, c->total_gpus, c->n_leaves, c->n_backends, t->n_jobs, demand);
        fprintf(f, "%-8s %12s %9s %9s %11s %15s %10s %16s %11s\n", "policy", "makespan s", "GPU util",
                "job util", "mean wait s", "mean complete s", "leaves/job", "delivered/bound",
                "violations");
        for (size_t i = 0; i < n; i++) {
                const struct gantry_sim_result *r = runs[i];
                double leaves = spanned(r);

                fprintf(f, "%-8s %12.1f %8.1f%% %8.1f%% %11.1f %15.1f %10.2f %15.1f%% %11zu\n",
                        gantry_sim_policy_name(r->policy), r->makespan_s, 100 * r->gpu_utilization,
                        100 * r->mean_job_utilization, r->mean_wait_s, r->mean_completion_s, leaves,
                        100 * r->bound_fraction, r->violations);
        }
        if (!per_job)
                return;
        for (size_t i = 0; i < n; i++) {
                const struct gantry_sim_result *r = runs[i];

                fprintf(f, "\n%s: per job\n%-16s %5s %10s %8s %10s %12s %8s %8s %8s %7s  %s\n",
                        gantry_sim_policy_name(r->policy), "job", "GPUs", "start s", "wait s", "end s",
                        "completion s", "steps/s", "util", "ckpt s", "leaves", "why it waited");
                for (int j = 0; j < r->n_jobs; j++) {
                        const struct gantry_sim_job_result *jr = &r->jobs[j];

                        fprintf(f, "%-16s %5d %10.1f %8.1f %10.1f %12.1f %8.3f %7.1f%% %8.1f %7d  %s\n",
                                t->jobs[j].name, t->jobs[j].gpus, jr->start_s,
                                jr->start_s - t->jobs[j].arrival_s, jr->end_s, jr->completion_s,
                                jr->steps_per_s, 100 * jr->utilization,
                                jr->checkpoint_s, jr->leaves, jr->wait_reason);
                }
        }
}

json_t *gantry_sim_report_json(const struct gantry_sim_cluster *c, const struct gantry_sim_trace *t,
                               struct gantry_sim_result *const *runs, size_t n, uint64_t seed)
{
        json_t *arr = json_array(), *root;

        for (size_t i = 0; arr && i < n; i++) {
                const struct gantry_sim_result *r = runs[i];
                json_t *jobs = json_array();
                double leaves = spanned(r);

                for (int j = 0; jobs && j < r->n_jobs; j++) {
                        const struct gantry_sim_job_result *jr = &r->jobs[j];
                        json_t *o = json_pack("{s:s, s:i, s:f, s:f, s:f, s:f, s:f, s:f, s:i}",
                                                              "name", t->jobs[j].name, "gpus",
                                                              t->jobs[j].gpus, "startSeconds", jr->start_s,
                                                              "endSeconds", jr->end_s, "completionSeconds",
                                                              jr->completion_s, "stepsPerSecond",
                                                              jr->steps_per_s, "utilization",
                                                              jr->utilization, "checkpointSeconds",
                                                              jr->checkpoint_s, "leaves", jr->leaves);

                        if (o && jr->wait_reason[0])
                                json_object_set_new(o, "waitReason", json_string(jr->wait_reason));
                        json_array_append_new(jobs, o);
                }
                json_array_append_new(arr, json_pack("{s:s, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f,"
                                                     " s:I, s:o}",
                                                     "policy", gantry_sim_policy_name(r->policy),
                                                     "makespanSeconds", r->makespan_s, "gpuUtilization",
                                                     r->gpu_utilization, "meanJobUtilization",
                                                     r->mean_job_utilization, "meanWaitSeconds",
                                                     r->mean_wait_s, "meanCompletionSeconds",
                                                     r->mean_completion_s, "meanLeavesPerJob", leaves,
                                                     "deliveredGbit", r->delivered_gbit, "boundGbit",
                                                     r->bound_gbit, "boundFraction", r->bound_fraction,
                                                     "violations", (json_int_t)r->violations, "jobs",
                                                     jobs));
        }
        root = json_pack("{s:{s:i, s:i, s:i, s:i}, s:i, s:I, s:o}", "cluster", "nodes", c->n_nodes, "gpus",
                         c->total_gpus, "leaves", c->n_leaves, "backends", c->n_backends, "jobs",
                         t->n_jobs, "seed", (json_int_t)seed, "runs", arr);
        return root;
}

/* Time-weighted mean of a segment field per bucket over [0, end]. */
static void buckets(const struct gantry_sim_result *r, double end, int which, double *x, double *y)
{
        double w = end / BUCKETS;

        for (int b = 0; b < BUCKETS; b++) {
                x[b] = (b + 0.5) * w;
                y[b] = 0;
        }
        for (size_t s = 0; s < r->n_segments; s++) {
                const struct gantry_sim_segment *g = &r->segments[s];
                double v = which == 0 ? g->delivered_gbps : g->busy_gpus;

                for (int b = (int)(g->t0 / w); b < BUCKETS && b * w < g->t1; b++) {
                        double lo = fmax(g->t0, b * w), hi = fmin(g->t1, (b + 1) * w);

                        if (hi > lo)
                                y[b] += v * (hi - lo) / w;
                }
        }
}

int gantry_sim_report_svg(const char *path, struct gantry_sim_result *const *runs, size_t n)
{
        double *data = calloc(n * 4 * BUCKETS, sizeof(double)), end = 0;
        struct gantry_svg_series *series = calloc(2 * n, sizeof(*series));
        struct gantry_svg_chart charts[2];
        int r;

        if (!data || !series) {
                free(data);
                free(series);
                return -ENOMEM;
        }
        for (size_t i = 0; i < n; i++)
                end = fmax(end, runs[i]->makespan_s);
        for (size_t i = 0; i < n; i++)
                for (int which = 0; which < 2; which++) {
                        double *x = data + (i * 4 + which * 2) * BUCKETS, *y = x + BUCKETS;

                        buckets(runs[i], end > 0 ? end : 1, which, x, y);
                        series[which * n + i] = (struct gantry_svg_series){
                                gantry_sim_policy_name(runs[i]->policy), x, y, BUCKETS };
                }
        charts[0] = (struct gantry_svg_chart){ "Read bandwidth delivered to the running jobs", "seconds",
                                               "Gbit/s", series, n };
        charts[1] = (struct gantry_svg_chart){ "GPUs doing useful work", "seconds", "GPUs", series + n, n };
        r = gantry_svg_write_file(path, charts, 2);
        free(data);
        free(series);
        return r;
}
