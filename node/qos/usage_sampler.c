/*
 * The bandwidth sampler (see usage_sampler.h). It keeps one entry per
 * (pod uid, volume id) it saw in the last walk: the usage window, the last
 * counters (the metrics are counters fed by differences, so a restarted
 * plugin's first pass adds the cgroup's whole history, as a fresh
 * Prometheus counter should), when each event was last sent, and its IO
 * stall detector with the stall event's name (to finish the one event when
 * the stall ends). The pass runs on the sampler's own thread; the metrics
 * registry locks itself. Telling a stall costs API calls (a GET of the
 * backend's state, the event's post or patch) on this thread, bounded by the
 * client's timeout: at a stall's start, and at each pass from its end until
 * its event is finished (at most GANTRY_IO_STALL_CAUSE_SETTLE_MS).
 */
#include "usage_sampler.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "backend_name.h"
#include "io_stall.h"
#include "io_usage.h"
#include "log.h"
#include "metrics.h"

#define LABELS_MAX 1200
/* How long an ended stall's event waits for its backend's state to say
 * why: the observer confirms a new state within two polls (~4 s at its
 * default) and rewrites its status every 15 s. */
#define GANTRY_IO_STALL_CAUSE_SETTLE_MS 15000
#define MAX_ENTRIES 1024

enum { EV_AT_CAP, EV_UNDERUSED, EV_N };

struct entry {
        char *key;        /* "<pod uid>/<volume id>" */
        char *pod_uid;
        char *labels;     /* namespace=..,pod=..,volume=..,job=.. */
        char *vol_prefix; /* namespace=..,pod=..,volume=.., (for removal) */
        char *pod_labels; /* namespace=..,pod=..,job=.. */
        char *pod_prefix; /* namespace=..,pod=.., */
        struct gantry_usage_window *window;
        struct gantry_io_usage last;
        bool have_last;
        bool seen;
        bool read_failed; /* logged already */
        uint64_t last_event_ms[EV_N];
        bool event_sent[EV_N];
        /* the stall told last (its event, what it names) */
        struct gantry_io_stall stall;
        time_t stall_started_at;  /* wall clock of the stall's start */
        uint64_t stall_ms;        /* its length, once ended */
        bool stall_writes;
        const char *stall_tier;   /* static string, or NULL */
        char stall_backend[GANTRY_BACKEND_NAME_MAX + 1]; /* "": the volume ID names none */
        char stall_event[254];    /* its event ("": none made) */
        char stall_state[32];     /* the backend's state to tell ("": not known) */
        char stall_reason[384];
        bool stall_finishing;     /* ended; its event waits for the cause a while */
        uint64_t stall_finish_by_ms;
};

struct pod_stall {
        char *uid;
        uint64_t last_us;
        uint64_t pass_no; /* the pass that last advanced the counter */
        bool have;
};

struct gantry_usage_sampler {
        struct gantry_usage_sampler_options o;
        struct entry *entries;
        size_t n;
        /* io.pressure is per pod, not per volume: its last total per pod */
        struct pod_stall *pods;
        size_t n_pods;
        uint64_t pass_no;
        uint64_t now_ms;
        int sampled;

        pthread_t thread;
        bool started;
        bool stopping;
        pthread_mutex_t lock;
        pthread_cond_t cond;
};

static const char *const vol_counters[] = {
        "gantry_node_volume_read_bytes_total",
        "gantry_node_volume_written_bytes_total",
        "gantry_node_volume_read_ios_total",
        "gantry_node_volume_write_ios_total",
};
static const char *const vol_counter_help[] = {
        "Bytes the pod read from the volume's device (cgroup io.stat rbytes)",
        "Bytes the pod wrote to the volume's device (cgroup io.stat wbytes)",
        "Read IOs of the pod on the volume's device (cgroup io.stat rios)",
        "Write IOs of the pod on the volume's device (cgroup io.stat wios)",
};
static const char *const vol_gauges[] = {
        "gantry_node_volume_cap_bytes_per_second",
        "gantry_node_volume_declared_bytes_per_second",
        "gantry_node_volume_rate_bytes_per_second",
        "gantry_node_volume_at_cap_ratio",
};
static const char *const vol_gauge_help[] = {
        "The io.max cap in force for the pod on the volume's device, bytes/s (0: none)",
        "The rate the pod declared for the volume (what the scheduler charged), bytes/s",
        "The pod's mean rate on the volume's device over the usage window, bytes/s",
        "Share of the usage window the pod spent at its cap (>= 95 % of its bytes/s or IOPS cap), 0-1",
};
#define STALL_TOTAL "gantry_node_pod_io_stall_seconds_total"
#define STALL_TOTAL_HELP "Seconds some of the pod's tasks waited on IO (cgroup io.pressure some)"
#define STALL_RATIO "gantry_node_pod_io_stall_ratio"
#define STALL_RATIO_HELP "Share of the usage window some of the pod's tasks waited on IO, 0-1"
#define ERRORS "gantry_node_bandwidth_sample_errors_total"
#define ERRORS_HELP "Pod cgroups the bandwidth sampler could not read"
#define EVENTS "gantry_node_bandwidth_events_total"
#define EVENTS_HELP "Bandwidth events about pods, by reason and result (posted, logged, failed)"
#define STALLS "gantry_node_io_stalls_total"
#define STALLS_HELP "IO stalls of a pod on a volume that reached --io-stall-seconds (each told by one IOStalled event)"
#define STALLS_SECONDS "gantry_node_io_stalls_seconds_total"
#define STALLS_SECONDS_HELP "Length of those stalls, seconds, added when each ends"
#define TARGETS "gantry_node_bandwidth_targets"
#define TARGETS_HELP "Pod and volume pairs the bandwidth sampler follows"

/* A label value in the exposition format: \ " and newline escaped. */
static void put_label(char *buf, size_t size, size_t *len, const char *key, const char *value,
                      bool comma)
{
        size_t n = *len;

        n += (size_t)snprintf(buf + n, n < size ? size - n : 0, "%s%s=\"", comma ? "," : "", key);
        for (const char *p = value ? value : ""; *p && n + 3 < size; p++) {
                if (*p == '\\' || *p == '"') {
                        buf[n++] = '\\';
                        buf[n++] = *p;
                } else if (*p == '\n') {
                        buf[n++] = '\\';
                        buf[n++] = 'n';
                } else {
                        buf[n++] = *p;
                }
        }
        if (n + 1 < size)
                buf[n++] = '"';
        buf[n < size ? n : size - 1] = '\0';
        *len = n;
}

static void entry_clear(struct entry *e)
{
        free(e->key);
        free(e->pod_uid);
        free(e->labels);
        free(e->vol_prefix);
        free(e->pod_labels);
        free(e->pod_prefix);
        gantry_usage_window_free(e->window);
        memset(e, 0, sizeof(*e));
}

/* The label text of @t: namespace and pod, then the volume when
 * @volume, then the job when @job; a trailing comma when @comma (a prefix
 * that never matches a longer name: pod "w-1" is not "w-10"). */
static char *labels_of(const struct gantry_usage_target *t, bool volume, bool job, bool comma)
{
        char buf[LABELS_MAX];
        size_t len = 0;

        put_label(buf, sizeof(buf), &len, "namespace", t->pod_namespace, false);
        put_label(buf, sizeof(buf), &len, "pod", t->pod_name, true);
        if (volume)
                put_label(buf, sizeof(buf), &len, "volume", t->volume_id, true);
        if (job)
                put_label(buf, sizeof(buf), &len, "job", t->job, true);
        if (comma && len + 1 < sizeof(buf)) {
                buf[len++] = ',';
                buf[len] = '\0';
        }
        return strdup(buf);
}

static int entry_init(struct gantry_usage_sampler *s, struct entry *e,
                      const struct gantry_usage_target *t)
{
        memset(e, 0, sizeof(*e));
        if (gantry_usage_window_new(&s->o.window, &e->window) < 0)
                return -ENOMEM;
        if (asprintf(&e->key, "%s/%s", t->pod_uid, t->volume_id) < 0)
                e->key = NULL;
        e->pod_uid = strdup(t->pod_uid);
        e->labels = labels_of(t, true, true, false);
        e->vol_prefix = labels_of(t, true, false, true);
        e->pod_labels = labels_of(t, false, true, false);
        e->pod_prefix = labels_of(t, false, false, true);
        if (!e->key || !e->pod_uid || !e->labels || !e->vol_prefix || !e->pod_labels ||
            !e->pod_prefix) {
                entry_clear(e);
                return -ENOMEM;
        }
        return 0;
}

static struct entry *find(struct gantry_usage_sampler *s, const char *uid, const char *vol)
{
        size_t ul = strlen(uid);

        for (size_t i = 0; i < s->n; i++) {
                const char *k = s->entries[i].key;

                if (strncmp(k, uid, ul) == 0 && k[ul] == '/' && strcmp(k + ul + 1, vol) == 0)
                        return &s->entries[i];
        }
        return NULL;
}

int gantry_usage_sampler_new(const struct gantry_usage_sampler_options *opts,
                             struct gantry_usage_sampler **ret_sampler)
{
        struct gantry_usage_sampler *s;
        struct gantry_usage_window *probe;

        if (!opts || !opts->iterate)
                return -EINVAL;
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->o = *opts;
        if (s->o.window.window_ms == 0)
                gantry_usage_window_config_default(&s->o.window);
        if (s->o.interval_ms == 0)
                s->o.interval_ms = 10000;
        if (gantry_usage_window_new(&s->o.window, &probe) < 0) {
                free(s);
                return -EINVAL;
        }
        gantry_usage_window_free(probe);
        pthread_mutex_init(&s->lock, NULL);
        {
                pthread_condattr_t a;

                pthread_condattr_init(&a);
                pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
                pthread_cond_init(&s->cond, &a);
                pthread_condattr_destroy(&a);
        }
        if (s->o.metrics) {
                gantry_metrics_counter_add(s->o.metrics, ERRORS, ERRORS_HELP, NULL, 0);
                gantry_metrics_gauge_set(s->o.metrics, TARGETS, TARGETS_HELP, NULL, 0);
        }
        *ret_sampler = s;
        return 0;
}

static void count_delta(struct gantry_metrics *m, const char *name, const char *help,
                        const char *labels, uint64_t cur, uint64_t last, bool have_last)
{
        /* a counter that went back: the cgroup was made again; count it afresh */
        double d = !have_last || cur < last ? (double)cur : (double)(cur - last);

        gantry_metrics_counter_add(m, name, help, labels, d);
}

/* The stall counter of @uid's pod: advanced once per pass, by the first of
 * its volumes visited, from the pod's own last total (a volume published
 * later must not count the pod's history again). */
static void count_stall(struct gantry_usage_sampler *s, const struct entry *e,
                        const struct gantry_io_usage *u)
{
        struct pod_stall *p = NULL;
        double d;

        for (size_t i = 0; i < s->n_pods; i++)
                if (strcmp(s->pods[i].uid, e->pod_uid) == 0)
                        p = &s->pods[i];
        if (!p) {
                struct pod_stall *n = realloc(s->pods, (s->n_pods + 1) * sizeof(*n));

                if (!n)
                        return;
                s->pods = n;
                p = &s->pods[s->n_pods];
                memset(p, 0, sizeof(*p));
                if (!(p->uid = strdup(e->pod_uid)))
                        return;
                s->n_pods++;
        }
        if (p->pass_no == s->pass_no)
                return;
        d = !p->have || u->pressure.some_us < p->last_us ? (double)u->pressure.some_us
                                                         : (double)(u->pressure.some_us - p->last_us);
        gantry_metrics_counter_add(s->o.metrics, STALL_TOTAL, STALL_TOTAL_HELP, e->pod_labels, d / 1e6);
        p->last_us = u->pressure.some_us;
        p->have = true;
        p->pass_no = s->pass_no;
}

static void send_event(struct gantry_usage_sampler *s, struct entry *e,
                       const struct gantry_usage_target *t, const struct gantry_usage_summary *sum)
{
        const int ev = sum->verdict == GANTRY_USAGE_AT_CAP ? EV_AT_CAP : EV_UNDERUSED;
        const int d = sum->verdict_direction;
        const char *reason = gantry_usage_verdict_reason(sum->verdict);
        const char *type = ev == EV_AT_CAP ? "Warning" : "Normal";
        const char *result = "logged";
        char msg[512], quoted[600], labels[160];
        int r = 0;

        if (e->event_sent[ev] && s->now_ms - e->last_event_ms[ev] < s->o.window.window_ms)
                return; /* once per window */
        gantry_usage_window_message(sum, s->o.window.window_ms, d ? t->wbps_cap : t->rbps_cap,
                                    d ? t->declared_wbps : t->declared_rbps, msg, sizeof(msg));
        if (s->o.post_event) {
                r = s->o.post_event(s->o.event_ctx, t, type, reason, msg);
                result = r < 0 ? "failed" : "posted";
        }
        e->event_sent[ev] = true;
        e->last_event_ms[ev] = s->now_ms;
        log_info("qos.bandwidth_event", "namespace=%s pod=%s volume=%s reason=%s result=%s message=%s",
                 t->pod_namespace, t->pod_name, t->volume_id, reason, result,
                 gantry_log_quote(msg, quoted, sizeof(quoted)));
        if (s->o.metrics) {
                snprintf(labels, sizeof(labels), "reason=\"%s\",result=\"%s\"", reason, result);
                gantry_metrics_counter_add(s->o.metrics, EVENTS, EVENTS_HELP, labels, 1);
        }
}

/* Reads the backend's state now into @e when it is known and (once the
 * stall ended) not Healthy, or when @e has none yet. Returns 1 when @e now
 * holds a state other than Healthy, 0 when the backend reads Healthy now,
 * -1 when its state cannot be read (no CRD, no RBAC, stale, no backend). */
static int read_cause(struct gantry_usage_sampler *s, struct entry *e, bool ending)
{
        char state[sizeof(e->stall_state)] = "", reason[sizeof(e->stall_reason)] = "";

        if (!s->o.backend_state || !e->stall_backend[0] ||
            s->o.backend_state(s->o.stall_ctx, e->stall_backend, state, sizeof(state), reason,
                               sizeof(reason)) < 0)
                state[0] = '\0';
        if (state[0] && (!ending || strcmp(state, "Healthy") != 0 || !e->stall_state[0])) {
                memcpy(e->stall_state, state, sizeof(state));
                memcpy(e->stall_reason, reason, sizeof(reason));
        }
        if (e->stall_state[0] && strcmp(e->stall_state, "Healthy") != 0)
                return 1;
        return state[0] ? 0 : -1;
}

/* Posts or updates @e's stall event with the text of its state now, and logs it. */
static void say_stall(struct gantry_usage_sampler *s, struct entry *e,
                      const struct gantry_usage_target *t, bool ending)
{
        char msg[1024], quoted[1100];
        struct gantry_io_stall_report rep = {
                .tier = e->stall_tier, .writes = e->stall_writes, .volume_id = t->volume_id,
                .stalled_ms = ending ? e->stall_ms : gantry_io_stall_length_ms(&e->stall),
                .started_at = e->stall_started_at, .ongoing = !ending,
                .backend = { e->stall_backend, e->stall_state, e->stall_reason },
        };
        const char *result = "logged";

        gantry_io_stall_message(&rep, msg, sizeof(msg));
        if (s->o.tell_stall && (!ending || e->stall_event[0]))
                result = s->o.tell_stall(s->o.stall_ctx, t, msg, e->stall_event,
                                         sizeof(e->stall_event)) < 0 ? "failed" : "posted";
        if (ending) {
                log_info("qos.io_stall_ended", "namespace=%s pod=%s volume=%s seconds=%.1f "
                         "result=%s message=%s", t->pod_namespace, t->pod_name, t->volume_id,
                         (double)rep.stalled_ms / 1000, result,
                         gantry_log_quote(msg, quoted, sizeof(quoted)));
                return;
        }
        log_warn("qos.io_stalled", "namespace=%s pod=%s volume=%s result=%s message=%s",
                 t->pod_namespace, t->pod_name, t->volume_id, result,
                 gantry_log_quote(msg, quoted, sizeof(quoted)));
        if (s->o.metrics) {
                char labels[160];

                snprintf(labels, sizeof(labels), "reason=\"%s\",result=\"%s\"",
                         GANTRY_IO_STALL_REASON, result);
                gantry_metrics_counter_add(s->o.metrics, EVENTS, EVENTS_HELP, labels, 1);
        }
}

/* A stall reached the threshold: a new event, with the backend's state now. */
static void stall_started(struct gantry_usage_sampler *s, struct entry *e,
                          const struct gantry_usage_target *t)
{
        e->stall_started_at = time(NULL) - (time_t)((s->now_ms - e->stall.start_ms) / 1000);
        e->stall_writes = e->stall.writes;
        e->stall_event[0] = e->stall_state[0] = e->stall_reason[0] = '\0';
        if (gantry_backend_of_volume(t->volume_id, e->stall_backend, sizeof(e->stall_backend),
                                     &e->stall_tier) < 0) {
                e->stall_backend[0] = '\0';
                e->stall_tier = NULL;
        }
        if (s->o.metrics)
                gantry_metrics_counter_add(s->o.metrics, STALLS, STALLS_HELP, e->labels, 1);
        (void)read_cause(s, e, false);
        say_stall(s, e, t, false);
}

/* The told stall is over: counted, and its event finished -- at once when
 * the backend's state says why or cannot be read, else (it reads Healthy)
 * once a state other than Healthy shows or the settle time is up (the
 * observer publishes what hung the IO a few seconds after it ended the
 * stall, as when Ceph marks a stopped OSD down). */
static void stall_ended(struct gantry_usage_sampler *s, struct entry *e)
{
        e->stall_ms = gantry_io_stall_length_ms(&e->stall);
        if (s->o.metrics)
                gantry_metrics_counter_add(s->o.metrics, STALLS_SECONDS, STALLS_SECONDS_HELP,
                                           e->labels, (double)e->stall_ms / 1000);
        e->stall_finishing = true;
        e->stall_finish_by_ms = s->now_ms + GANTRY_IO_STALL_CAUSE_SETTLE_MS;
}

/* Finishes @e's ended stall when its cause is known or its time is up (@force: now). */
static void stall_finish(struct gantry_usage_sampler *s, struct entry *e,
                         const struct gantry_usage_target *t, bool force)
{
        /* wait only while the backend reads Healthy: one that cannot be read will not say more */
        if (read_cause(s, e, true) == 0 && !force && s->now_ms < e->stall_finish_by_ms)
                return;
        e->stall_finishing = false;
        say_stall(s, e, t, true);
}

/* Feeds @e's stall detector and tells what changed. */
static void watch_stall(struct gantry_usage_sampler *s, struct entry *e,
                        const struct gantry_usage_target *t, const struct gantry_io_usage *u)
{
        const struct gantry_io_stall_config sc = { .threshold_ms = s->o.io_stall_ms };
        enum gantry_io_stall_change c = gantry_io_stall_feed(&e->stall, &sc, s->now_ms,
                                                             u->pressure.some_us, u->stat.rios,
                                                             u->stat.wios);

        if (c == GANTRY_IO_STALL_STARTED) {
                if (e->stall_finishing)
                        stall_finish(s, e, t, true); /* the last one first */
                stall_started(s, e, t);
        } else if (c == GANTRY_IO_STALL_ENDED) {
                stall_ended(s, e);
        }
        if (e->stall_finishing)
                stall_finish(s, e, t, false);
}

static void update_gauges(struct gantry_metrics *m, const struct entry *e,
                          const struct gantry_usage_target *t,
                          const struct gantry_usage_summary *sum)
{
        static const char *const dir[2] = { "read", "write" };
        const double cap[2] = { (double)t->rbps_cap, (double)t->wbps_cap };
        const double declared[2] = { (double)t->declared_rbps, (double)t->declared_wbps };
        char labels[LABELS_MAX + 32];

        for (int d = 0; d < 2; d++) {
                const double v[4] = { cap[d], declared[d], sum->bps[d], sum->at_cap_share[d] };

                snprintf(labels, sizeof(labels), "%s,direction=\"%s\"", e->labels, dir[d]);
                for (int i = 0; i < 4; i++)
                        gantry_metrics_gauge_set(m, vol_gauges[i], vol_gauge_help[i], labels, v[i]);
        }
}

static int visit(void *ctx, const struct gantry_usage_target *t)
{
        struct gantry_usage_sampler *s = ctx;
        struct gantry_metrics *m = s->o.metrics;
        struct gantry_error err = { 0 };
        struct gantry_usage_summary sum;
        struct gantry_usage_sample smp;
        struct gantry_io_usage u;
        struct entry *e;

        if (!t || !t->pod_uid || !*t->pod_uid || !t->volume_id || !*t->volume_id || !t->cgroup_dir)
                return 0;
        e = find(s, t->pod_uid, t->volume_id);
        if (!e) {
                struct entry *n;

                if (s->n >= MAX_ENTRIES)
                        return 0;
                n = realloc(s->entries, (s->n + 1) * sizeof(*n));
                if (!n)
                        return 0;
                s->entries = n;
                if (entry_init(s, &s->entries[s->n], t) < 0)
                        return 0;
                e = &s->entries[s->n++];
                /* from 0, so that a rate or increase() sees the first stall too */
                if (m && s->o.io_stall_ms) {
                        gantry_metrics_counter_add(m, STALLS, STALLS_HELP, e->labels, 0);
                        gantry_metrics_counter_add(m, STALLS_SECONDS, STALLS_SECONDS_HELP,
                                                   e->labels, 0);
                }
        }
        e->seen = true;
        if (gantry_io_usage_read(t->cgroup_dir, t->major, t->minor, &u, &err) < 0) {
                char quoted[GANTRY_ERROR_MSG_MAX + 8];

                if (!e->read_failed)
                        log_warn("qos.sample_failed", "namespace=%s pod=%s volume=%s error=%s",
                                 t->pod_namespace, t->pod_name, t->volume_id,
                                 gantry_log_quote(err.msg, quoted, sizeof(quoted)));
                e->read_failed = true;
                if (m)
                        gantry_metrics_counter_add(m, ERRORS, ERRORS_HELP, NULL, 1);
                return 0;
        }
        e->read_failed = false;
        s->sampled++;

        if (m) {
                const uint64_t cur[4] = { u.stat.rbytes, u.stat.wbytes, u.stat.rios, u.stat.wios };
                const uint64_t last[4] = { e->last.stat.rbytes, e->last.stat.wbytes,
                                           e->last.stat.rios, e->last.stat.wios };

                for (int i = 0; i < 4; i++)
                        count_delta(m, vol_counters[i], vol_counter_help[i], e->labels, cur[i],
                                    last[i], e->have_last);
                if (u.has_pressure)
                        count_stall(s, e, &u);
        }
        if (u.has_pressure)
                watch_stall(s, e, t, &u);
        e->last = u;
        e->have_last = true;
        smp = (struct gantry_usage_sample){
                .t_ms = s->now_ms, .rbytes = u.stat.rbytes, .wbytes = u.stat.wbytes,
                .rios = u.stat.rios, .wios = u.stat.wios,
                .stall_us = u.has_pressure ? u.pressure.some_us : 0,
                .rbps_cap = t->rbps_cap, .wbps_cap = t->wbps_cap,
                .riops_cap = t->riops_cap, .wiops_cap = t->wiops_cap,
        };
        if (gantry_usage_window_add(e->window, &smp) < 0)
                return 0; /* the same instant twice: nothing new */
        gantry_usage_window_summary(e->window, t->declared_rbps, t->declared_wbps, &sum);
        if (m) {
                update_gauges(m, e, t, &sum);
                if (u.has_pressure)
                        gantry_metrics_gauge_set(m, STALL_RATIO, STALL_RATIO_HELP, e->pod_labels,
                                                 sum.stall_share);
        }
        if (sum.verdict == GANTRY_USAGE_AT_CAP || sum.verdict == GANTRY_USAGE_UNDERUSED)
                send_event(s, e, t, &sum);
        return 0;
}

/* Drops the entries the last walk did not see, and their series. */
static void forget_unseen(struct gantry_usage_sampler *s)
{
        struct gantry_metrics *m = s->o.metrics;

        for (size_t i = 0; i < s->n;) {
                struct entry *e = &s->entries[i];
                bool pod_left = false;

                if (e->seen) {
                        i++;
                        continue;
                }
                if (m) {
                        for (int k = 0; k < 4; k++) {
                                gantry_metrics_remove(m, vol_counters[k], e->vol_prefix);
                                gantry_metrics_remove(m, vol_gauges[k], e->vol_prefix);
                        }
                        gantry_metrics_remove(m, STALLS, e->vol_prefix);
                        gantry_metrics_remove(m, STALLS_SECONDS, e->vol_prefix);
                        pod_left = true;
                        for (size_t j = 0; j < s->n; j++)
                                if (j != i && strcmp(s->entries[j].pod_uid, e->pod_uid) == 0 &&
                                    s->entries[j].seen)
                                        pod_left = false;
                        if (pod_left) {
                                gantry_metrics_remove(m, STALL_TOTAL, e->pod_prefix);
                                gantry_metrics_remove(m, STALL_RATIO, e->pod_prefix);
                        }
                }
                entry_clear(e);
                memmove(e, e + 1, (s->n - i - 1) * sizeof(*e));
                s->n--;
        }
        for (size_t k = 0; k < s->n_pods;) {
                bool used = false;

                for (size_t j = 0; j < s->n && !used; j++)
                        used = strcmp(s->entries[j].pod_uid, s->pods[k].uid) == 0;
                if (used) {
                        k++;
                        continue;
                }
                free(s->pods[k].uid);
                memmove(&s->pods[k], &s->pods[k + 1], (s->n_pods - k - 1) * sizeof(s->pods[0]));
                s->n_pods--;
        }
}

int gantry_usage_sampler_pass(struct gantry_usage_sampler *s, uint64_t now_ms)
{
        int r;

        if (!s)
                return -EINVAL;
        for (size_t i = 0; i < s->n; i++)
                s->entries[i].seen = false;
        s->now_ms = now_ms;
        s->sampled = 0;
        s->pass_no++;
        r = s->o.iterate(s->o.iterate_ctx, visit, s);
        if (r < 0) {
                log_warn("qos.sample_walk_failed", "error=%s", strerror(-r));
                return r; /* keep every entry: a failed walk says nothing about what is gone */
        }
        forget_unseen(s);
        if (s->o.metrics)
                gantry_metrics_gauge_set(s->o.metrics, TARGETS, TARGETS_HELP, NULL, (double)s->n);
        return s->sampled;
}

static void *run(void *arg)
{
        struct gantry_usage_sampler *s = arg;

        pthread_mutex_lock(&s->lock);
        while (!s->stopping) {
                struct timespec until;
                uint64_t next;

                pthread_mutex_unlock(&s->lock);
                (void)gantry_usage_sampler_pass(s, gantry_now_ms());
                next = gantry_now_ms() + s->o.interval_ms;
                until.tv_sec = (time_t)(next / 1000);
                until.tv_nsec = (long)(next % 1000) * 1000000;
                pthread_mutex_lock(&s->lock);
                while (!s->stopping &&
                       pthread_cond_timedwait(&s->cond, &s->lock, &until) != ETIMEDOUT)
                        ;
        }
        pthread_mutex_unlock(&s->lock);
        return NULL;
}

int gantry_usage_sampler_start(struct gantry_usage_sampler *s)
{
        int r;

        if (!s || s->started)
                return -EINVAL;
        r = pthread_create(&s->thread, NULL, run, s);
        if (r != 0)
                return -r;
        s->started = true;
        log_info("qos.sampler_started", "interval_ms=%u window_ms=%llu io_stall_ms=%u events=%s",
                 s->o.interval_ms, (unsigned long long)s->o.window.window_ms, s->o.io_stall_ms,
                 s->o.post_event ? "posted" : "logged");
        return 0;
}

void gantry_usage_sampler_free(struct gantry_usage_sampler *s)
{
        if (!s)
                return;
        if (s->started) {
                pthread_mutex_lock(&s->lock);
                s->stopping = true;
                pthread_cond_signal(&s->cond);
                pthread_mutex_unlock(&s->lock);
                pthread_join(s->thread, NULL);
        }
        for (size_t i = 0; i < s->n; i++)
                entry_clear(&s->entries[i]);
        free(s->entries);
        for (size_t i = 0; i < s->n_pods; i++)
                free(s->pods[i].uid);
        free(s->pods);
        pthread_cond_destroy(&s->cond);
        pthread_mutex_destroy(&s->lock);
        free(s);
}
