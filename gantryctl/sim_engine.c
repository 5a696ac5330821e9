/*
 * The simulator's event loop; see sim_engine.h for the model.
 */
#include "sim_engine.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_fabric.h"

#define STEP_EPS 1e-7 /* steps: progress this close to a boundary has reached it */
#define TIME_EPS 1e-9

enum job_state { JOB_PENDING = 0, JOB_TRAINING, JOB_CHECKPOINT, JOB_DONE };

struct job_run {
        enum job_state state;
        int *nodes;                  /* node of each pod while placed */
        struct gantry_sim_load load; /* full-speed link demand while placed */
        double progress;             /* steps done */
        double next_checkpoint;      /* step of the next checkpoint; INFINITY: none */
        double checkpoint_end;
        double rate;                 /* x in [0, 1] this interval */
        double busy_gpu_s;
};

struct engine {
        const struct gantry_sim_cluster *c;
        const struct gantry_sim_trace *t;
        enum gantry_sim_policy policy;
        struct gantry_sim_fabric *fabric;
        struct gantry_sim_placer *placer;
        struct job_run *runs;
        int *free_gpus;
        /* scratch for one interval, sized n_jobs */
        const struct gantry_sim_load **loads;
        const struct gantry_sim_job **reading;
        int *reading_index;
        double *x;
        struct gantry_sim_result *res;
        size_t seg_cap;
};

static int push_segment(struct engine *e, const struct gantry_sim_segment *s)
{
        struct gantry_sim_result *r = e->res;

        if (r->n_segments == e->seg_cap) {
                size_t nc = e->seg_cap ? 2 * e->seg_cap : 256;
                struct gantry_sim_segment *ns = realloc(r->segments, nc * sizeof(*ns));

                if (!ns)
                        return -ENOMEM;
                r->segments = ns;
                e->seg_cap = nc;
        }
        r->segments[r->n_segments++] = *s;
        return 0;
}

static int start_job(struct engine *e, int j, double now)
{
        const struct gantry_sim_job *job = &e->t->jobs[j];
        struct job_run *run = &e->runs[j];
        int r = gantry_sim_fabric_job_load(e->fabric, job, run->nodes, &run->load);
        bool seen[GANTRY_SIM_MAX_LEAVES] = { false };
        int leaves = 0;

        if (r < 0)
                return r;
        run->state = JOB_TRAINING;
        run->next_checkpoint = job->checkpoint_gb > 0 ? job->checkpoint_every_steps : INFINITY;
        e->res->jobs[j].start_s = now;
        for (int p = 0; p < job->gpus / job->gpus_per_pod; p++) {
                int l = e->c->nodes[run->nodes[p]].leaf;

                leaves += !seen[l];
                seen[l] = true;
        }
        e->res->jobs[j].leaves = leaves;
        return 0;
}

/*
 * Places waiting jobs in arrival order. A job that does not fit now stays
 * pending and the next one is tried, as kube-scheduler moves on from an
 * unschedulable pod. Room (GPUs, ledger headroom, an idle cluster) only
 * appears when a job ends, so a job that did not fit is tried again only
 * after one has ended (@retry); otherwise only the new arrivals from
 * @first_new on are tried.
 */
static int schedule(struct engine *e, int first_new, int arrived, bool retry, int *running, double now,
                    int *ret_failed)
{
        for (int j = retry ? 0 : first_new; j < arrived; j++) {
                int r;

                if (e->runs[j].state != JOB_PENDING)
                        continue;
                r = gantry_sim_placer_place(e->placer, &e->t->jobs[j], j, e->free_gpus, *running == 0,
                                            e->runs[j].nodes);
                if (r == -ENOSPC) {
                        snprintf(e->res->jobs[j].wait_reason, sizeof(e->res->jobs[j].wait_reason), "%s",
                                 gantry_sim_placer_last_reason(e->placer));
                        continue;
                }
                if (r == 0)
                        r = start_job(e, j, now);
                if (r < 0) {
                        *ret_failed = j;
                        return r;
                }
                (*running)++;
        }
        return 0;
}

/* Rates of the training jobs and the bound for them; returns delivered Gbps. */
static int rates(struct engine *e, double *ret_delivered, double *ret_bound, double *ret_busy)
{
        size_t n = 0;
        double bound, demand = 0, delivered = 0, busy = 0;

        for (int j = 0; j < e->t->n_jobs; j++) {
                e->runs[j].rate = 0;
                if (e->runs[j].state != JOB_TRAINING)
                        continue;
                e->reading[n] = &e->t->jobs[j];
                e->loads[n] = &e->runs[j].load;
                e->reading_index[n++] = j;
                demand += e->runs[j].load.total_gbps;
        }
        bound = gantry_sim_fabric_bound(e->fabric, e->reading, n, NULL);
        if (bound < 0)
                return (int)bound;
        if (e->policy == GANTRY_SIM_POLICY_BOUND) {
                /* the ideal fabric: everyone gets the same share of the bound */
                double x = demand > 0 ? fmin(1, bound / demand) : 1;

                for (size_t i = 0; i < n; i++)
                        e->x[i] = x;
        } else {
                int r = gantry_sim_fabric_share(e->fabric, e->loads, n, e->x);

                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < n; i++) {
                struct job_run *run = &e->runs[e->reading_index[i]];

                run->rate = e->x[i];
                delivered += e->x[i] * run->load.total_gbps;
                busy += e->x[i] * e->reading[i]->gpus;
        }
        *ret_delivered = delivered;
        *ret_bound = bound;
        *ret_busy = busy;
        return 0;
}

/* Time to the next event after @now, INFINITY when there is none. */
static double next_event(const struct engine *e, int arrived, double now)
{
        double dt = INFINITY;

        if (arrived < e->t->n_jobs)
                dt = e->t->jobs[arrived].arrival_s - now;
        for (int j = 0; j < e->t->n_jobs; j++) {
                const struct job_run *run = &e->runs[j];
                const struct gantry_sim_job *job = &e->t->jobs[j];

                if (run->state == JOB_TRAINING && run->rate > 0) {
                        double target = fmin(job->steps, run->next_checkpoint);

                        dt = fmin(dt, (target - run->progress) * job->step_s / run->rate);
                } else if (run->state == JOB_CHECKPOINT) {
                        dt = fmin(dt, run->checkpoint_end - now);
                }
        }
        return fmax(dt, 0);
}

/* Moves jobs across the boundaries they reached at @now. */
static void transitions(struct engine *e, double now, int *running, int *done)
{
        for (int j = 0; j < e->t->n_jobs; j++) {
                const struct gantry_sim_job *job = &e->t->jobs[j];
                struct job_run *run = &e->runs[j];
                struct gantry_sim_job_result *jr = &e->res->jobs[j];

                if (run->state == JOB_CHECKPOINT && run->checkpoint_end <= now + TIME_EPS) {
                        run->state = JOB_TRAINING;
                        run->next_checkpoint += job->checkpoint_every_steps;
                } else if (run->state == JOB_TRAINING && run->progress >= job->steps - STEP_EPS) {
                        run->state = JOB_DONE;
                        jr->end_s = now;
                        gantry_sim_placer_release(e->placer, job, j, run->nodes, e->free_gpus);
                        gantry_sim_load_clear(&run->load);
                        (*running)--;
                        (*done)++;
                } else if (run->state == JOB_TRAINING && run->progress >= run->next_checkpoint - STEP_EPS) {
                        double s = gantry_sim_fabric_checkpoint_s(e->fabric, job, run->nodes);

                        run->state = JOB_CHECKPOINT;
                        run->checkpoint_end = now + s;
                        jr->checkpoint_s += s;
                }
        }
}

static void summarize(struct engine *e)
{
        struct gantry_sim_result *r = e->res;
        double busy = 0;

        for (int j = 0; j < e->t->n_jobs; j++) {
                const struct gantry_sim_job *job = &e->t->jobs[j];
                struct gantry_sim_job_result *jr = &r->jobs[j];
                double held = job->gpus * (jr->end_s - jr->start_s);

                jr->completion_s = jr->end_s - job->arrival_s;
                jr->steps_per_s = jr->end_s > jr->start_s ? job->steps / (jr->end_s - jr->start_s) : 0;
                jr->utilization = held > 0 ? e->runs[j].busy_gpu_s / held : 1;
                r->makespan_s = fmax(r->makespan_s, jr->end_s);
                r->mean_job_utilization += jr->utilization / e->t->n_jobs;
                r->mean_completion_s += jr->completion_s / e->t->n_jobs;
                r->mean_wait_s += (jr->start_s - job->arrival_s) / e->t->n_jobs;
                busy += e->runs[j].busy_gpu_s;
        }
        r->gpu_utilization = r->makespan_s > 0 ? busy / (e->c->total_gpus * r->makespan_s) : 0;
        r->bound_fraction = r->bound_gbit > 0 ? r->delivered_gbit / r->bound_gbit : 1;
}

static int simulate(struct engine *e, struct gantry_error *err)
{
        int arrived = 0, running = 0, done = 0, failed = 0, first_new, ended = 0, r;
        double now = 0;

        while (done < e->t->n_jobs) {
                struct gantry_sim_segment seg = { 0 };
                double dt;

                first_new = arrived;
                while (arrived < e->t->n_jobs && e->t->jobs[arrived].arrival_s <= now + TIME_EPS)
                        arrived++;
                r = schedule(e, first_new, arrived, done > ended, &running, now, &failed);
                ended = done;
                if (r < 0) {
                        char why[GANTRY_ERROR_MSG_MAX];

                        snprintf(why, sizeof(why), "%s", err->msg[0] ? err->msg : strerror(-r));
                        return gantry_error_set(err, r, "placing job %s: %s",
                                                e->t->jobs[failed].name, why);
                }
                r = rates(e, &seg.delivered_gbps, &seg.bound_gbps, &seg.busy_gpus);
                if (r < 0)
                        return r;
                if (seg.delivered_gbps > seg.bound_gbps * (1 + 1e-6) + 1e-6)
                        e->res->violations++;
                dt = next_event(e, arrived, now);
                if (!isfinite(dt))
                        return gantry_error_set(err, EDEADLK, "stuck at t=%.1fs: jobs wait and "
                                                "nothing runs", now);
                seg.t0 = now;
                seg.t1 = now + dt;
                if (dt > 0 && push_segment(e, &seg) < 0)
                        return -ENOMEM;
                e->res->delivered_gbit += seg.delivered_gbps * dt;
                e->res->bound_gbit += seg.bound_gbps * dt;
                for (int j = 0; j < e->t->n_jobs; j++)
                        if (e->runs[j].state == JOB_TRAINING) {
                                e->runs[j].progress += e->runs[j].rate * dt / e->t->jobs[j].step_s;
                                e->runs[j].busy_gpu_s += e->t->jobs[j].gpus * e->runs[j].rate * dt;
                        }
                now += dt;
                transitions(e, now, &running, &done);
        }
        summarize(e);
        return 0;
}

int gantry_sim_run(const struct gantry_sim_cluster *c, const struct gantry_sim_trace *t,
                   enum gantry_sim_policy policy, uint64_t seed, struct gantry_sim_result **ret,
                   struct gantry_error *err)
{
        struct engine e = { .c = c, .t = t, .policy = policy };
        size_t n = t->n_jobs;
        int r = -ENOMEM;

        e.res = calloc(1, sizeof(*e.res));
        e.runs = calloc(n, sizeof(*e.runs));
        e.free_gpus = calloc(c->n_nodes, sizeof(int));
        e.loads = calloc(n, sizeof(*e.loads));
        e.reading = calloc(n, sizeof(*e.reading));
        e.reading_index = calloc(n, sizeof(int));
        e.x = calloc(n, sizeof(double));
        if (!e.res || !e.runs || !e.free_gpus || !e.loads || !e.reading || !e.reading_index || !e.x)
                goto out;
        e.res->policy = policy;
        e.res->n_jobs = t->n_jobs;
        e.res->jobs = calloc(n, sizeof(*e.res->jobs));
        if (!e.res->jobs)
                goto out;
        for (size_t j = 0; j < n; j++)
                if (!(e.runs[j].nodes = calloc(t->jobs[j].gpus / t->jobs[j].gpus_per_pod, sizeof(int))))
                        goto out;
        for (int v = 0; v < c->n_nodes; v++)
                e.free_gpus[v] = c->nodes[v].gpus;
        r = gantry_sim_fabric_new(c, &e.fabric);
        if (r < 0)
                goto out;
        r = gantry_sim_placer_new(policy, c, seed, &e.placer, err);
        if (r < 0)
                goto out;
        r = simulate(&e, err);
        if (r < 0)
                goto out;
        *ret = e.res;
        e.res = NULL;
out:
        gantry_sim_result_free(e.res);
        for (size_t j = 0; e.runs && j < n; j++) {
                free(e.runs[j].nodes);
                gantry_sim_load_clear(&e.runs[j].load);
        }
        free(e.runs);
        free(e.free_gpus);
        free(e.loads);
        free(e.reading);
        free(e.reading_index);
        free(e.x);
        gantry_sim_placer_free(e.placer);
        gantry_sim_fabric_free(e.fabric);
        return r;
}

void gantry_sim_result_free(struct gantry_sim_result *r)
{
        if (!r)
                return;
        free(r->jobs);
        free(r->segments);
        free(r);
}
