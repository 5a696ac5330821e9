/*
 * Unit tests of node/qos/usage_sampler.c: passes over pod cgroups laid out
 * as plain directories holding io.stat and io.pressure (the sampler only
 * reads those two files), at made-up times. Checks the metrics it renders
 * (counters from differences, gauges per direction, the stall counted once
 * per pod), the events (at cap, underused, once per window; an IO stall
 * told once and finished once, with its backend's state), a pod that
 * goes away (its series go too) and a cgroup that cannot be read.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "metrics.h"
#include "usage_sampler.h"

#define MB 1000000ull

struct pod {
        const char *uid, *ns, *name, *job;
        char dir[256];
        uint64_t stall_us;
};

struct vol {
        struct pod *pod;
        const char *id;
        unsigned major, minor;
        uint64_t rcap, wcap, rdecl, wdecl;
        uint64_t rbytes, wbytes;
        bool present;
};

static char root[] = "/tmp/gantry-usage-sampler-XXXXXX";
static struct pod pods[2] = {
        { .uid = "uid-a", .ns = "ml", .name = "train-0", .job = "train" },
        { .uid = "uid-b", .ns = "ml", .name = "eval-0", .job = "" },
};
static struct vol vols[3];

/* what the event function was given */
static char events[16][600];
static unsigned n_events;

static int iterate(void *ctx, gantry_usage_visit_fn visit, void *vctx)
{
        (void)ctx;
        for (unsigned i = 0; i < 3; i++) {
                struct vol *v = &vols[i];
                struct gantry_usage_target t = {
                        .pod_uid = v->pod->uid, .pod_namespace = v->pod->ns, .pod_name = v->pod->name,
                        .job = v->pod->job, .volume_id = v->id, .cgroup_dir = v->pod->dir,
                        .major = v->major, .minor = v->minor, .rbps_cap = v->rcap, .wbps_cap = v->wcap,
                        .declared_rbps = v->rdecl, .declared_wbps = v->wdecl, .policy = "cap",
                };

                if (v->present && visit(vctx, &t) < 0)
                        break;
        }
        return 0;
}

static int post_event(void *ctx, const struct gantry_usage_target *t, const char *type,
                      const char *reason, const char *message)
{
        (void)ctx;
        if (n_events < 16)
                snprintf(events[n_events++], sizeof(events[0]), "%s/%s %s %s %s: %s", t->pod_namespace,
                         t->pod_name, t->volume_id, type, reason, message);
        return 0;
}

/* Writes each pod's io.stat (one line per volume device) and io.pressure. */
static void write_cgroups(void)
{
        for (unsigned p = 0; p < 2; p++) {
                char path[300];
                FILE *f;

                snprintf(path, sizeof(path), "%s/io.stat", pods[p].dir);
                f = fopen(path, "w");
                assert_non_null(f);
                for (unsigned i = 0; i < 3; i++)
                        if (vols[i].pod == &pods[p])
                                fprintf(f, "%u:%u rbytes=%llu wbytes=%llu rios=%llu wios=%llu dbytes=0 dios=0\n",
                                        vols[i].major, vols[i].minor,
                                        (unsigned long long)vols[i].rbytes,
                                        (unsigned long long)vols[i].wbytes,
                                        (unsigned long long)(vols[i].rbytes >> 20),
                                        (unsigned long long)(vols[i].wbytes >> 20));
                fclose(f);
                snprintf(path, sizeof(path), "%s/io.pressure", pods[p].dir);
                f = fopen(path, "w");
                assert_non_null(f);
                fprintf(f, "some avg10=0.00 avg60=0.00 avg300=0.00 total=%llu\n"
                           "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
                        (unsigned long long)pods[p].stall_us);
                fclose(f);
        }
}

static int setup(void **state)
{
        static bool made;

        (void)state;
        if (!made)
                assert_non_null(mkdtemp(root));
        made = true;
        for (unsigned p = 0; p < 2; p++) {
                snprintf(pods[p].dir, sizeof(pods[p].dir), "%s/pod%s", root, pods[p].uid);
                assert_true(mkdir(pods[p].dir, 0755) == 0 || errno == EEXIST);
                pods[p].stall_us = 0;
        }
        /* train-0: a dataset at its 100 MB/s cap, a checkpoint volume writing 10 of 50 declared;
         * eval-0: a dataset reading 100 of the 800 MB/s it declared (cap 800) */
        vols[0] = (struct vol){ &pods[0], "0001-ds", 251, 0, 100 * MB, 0, 100 * MB, 0, 0, 0, true };
        vols[1] = (struct vol){ &pods[0], "0002-ck", 259, 1, 0, 50 * MB, 0, 50 * MB, 0, 0, true };
        vols[2] = (struct vol){ &pods[1], "0001-ds", 251, 0, 800 * MB, 0, 800 * MB, 0, 0, 0, true };
        return 0;
}

static int teardown(void **state)
{
        char cmd[300];

        (void)state;
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
        return system(cmd) == 0 ? 0 : -1;
}

/* @n passes 10 s apart from @t0_s, the volumes advancing at these rates */
static void run(struct gantry_usage_sampler *s, unsigned t0_s, unsigned n, const uint64_t rate[3][2])
{
        for (unsigned k = 0; k < n; k++) {
                for (unsigned i = 0; i < 3; i++) {
                        vols[i].rbytes += rate[i][0] * 10;
                        vols[i].wbytes += rate[i][1] * 10;
                }
                pods[0].stall_us += 2000000; /* 20 % of every 10 s */
                write_cgroups();
                assert_true(gantry_usage_sampler_pass(s, (uint64_t)(t0_s + 10 * (k + 1)) * 1000) >= 0);
        }
}

static char *render(struct gantry_metrics *m)
{
        char *text = NULL;

        assert_int_equal(gantry_metrics_render(m, &text), 0);
        return text;
}

static void test_sampler(void **state)
{
        static const uint64_t rates[3][2] = { { 99 * MB, 0 }, { 0, 10 * MB }, { 100 * MB, 0 } };
        struct gantry_metrics *m = gantry_metrics_new();
        struct gantry_usage_sampler_options o = {
                .iterate = iterate, .post_event = post_event, .metrics = m,
        };
        struct gantry_usage_sampler *s = NULL;
        char *text;

        (void)state;
        assert_int_equal(gantry_usage_sampler_new(&o, &s), 0);
        write_cgroups();
        assert_int_equal(gantry_usage_sampler_pass(s, 0), 3);

        /* 9 min 50 s: not a whole window yet, no event */
        run(s, 0, 59, rates);
        assert_int_equal(n_events, 0);
        /* 10 min: train-0's dataset at its cap, its checkpoint volume and eval-0 underused */
        run(s, 590, 1, rates);
        assert_int_equal(n_events, 3);
        assert_string_equal(events[0], "ml/train-0 0001-ds Warning BandwidthAtCap: reads at its 0.80 Gbps "
                                       "cap 100 % of the last 10 min: declare more, or expect slower epochs");
        assert_string_equal(events[1], "ml/train-0 0002-ck Normal BandwidthUnderused: writes 0.08 Gbps of "
                                       "the 0.40 Gbps it declared (20 %) over the last 10 min: declare "
                                       "less, and the scheduler can place more on its links");
        assert_non_null(strstr(events[2], "ml/eval-0 0001-ds Normal BandwidthUnderused: reads 0.80 Gbps of "
                                          "the 6.4 Gbps it declared (12 %)"));
        /* once per window: nothing more until 10 min after the first */
        run(s, 600, 59, rates);
        assert_int_equal(n_events, 3);
        run(s, 1190, 1, rates);
        assert_int_equal(n_events, 6);

        text = render(m);
        /* counters: the cgroup's totals (120 passes of 10 s) */
        assert_non_null(strstr(text, "gantry_node_volume_read_bytes_total{namespace=\"ml\",pod=\"train-0\","
                                     "volume=\"0001-ds\",job=\"train\"} 118800000000\n"));
        assert_non_null(strstr(text, "gantry_node_volume_written_bytes_total{namespace=\"ml\",pod=\"train-0\","
                                     "volume=\"0002-ck\",job=\"train\"} 12000000000\n"));
        assert_non_null(strstr(text, "gantry_node_volume_read_ios_total{namespace=\"ml\",pod=\"eval-0\","
                                     "volume=\"0001-ds\",job=\"\"} 114440\n"));
        /* the stall of train-0 counted once though it has two volumes: 120 × 2 s */
        assert_non_null(strstr(text, "gantry_node_pod_io_stall_seconds_total{namespace=\"ml\",pod=\"train-0\","
                                     "job=\"train\"} 240\n"));
        assert_non_null(strstr(text, "gantry_node_pod_io_stall_ratio{namespace=\"ml\",pod=\"train-0\","
                                     "job=\"train\"} 0.20000000000000001\n"));
        assert_non_null(strstr(text, "gantry_node_volume_cap_bytes_per_second{namespace=\"ml\",pod=\"train-0\","
                                     "volume=\"0001-ds\",job=\"train\",direction=\"read\"} 100000000\n"));
        assert_non_null(strstr(text, "gantry_node_volume_declared_bytes_per_second{namespace=\"ml\",pod=\"eval-0\","
                                     "volume=\"0001-ds\",job=\"\",direction=\"read\"} 800000000\n"));
        assert_non_null(strstr(text, "gantry_node_volume_rate_bytes_per_second{namespace=\"ml\",pod=\"eval-0\","
                                     "volume=\"0001-ds\",job=\"\",direction=\"read\"} 100000000\n"));
        assert_non_null(strstr(text, "gantry_node_volume_at_cap_ratio{namespace=\"ml\",pod=\"train-0\","
                                     "volume=\"0001-ds\",job=\"train\",direction=\"read\"} 1\n"));
        assert_non_null(strstr(text, "gantry_node_bandwidth_events_total{reason=\"BandwidthAtCap\","
                                     "result=\"posted\"} 2\n"));
        assert_non_null(strstr(text, "gantry_node_bandwidth_targets 3\n"));
        free(text);

        /* eval-0 unpublished: its series go, train-0's stay */
        vols[2].present = false;
        run(s, 1200, 1, rates);
        text = render(m);
        assert_null(strstr(text, "pod=\"eval-0\""));
        assert_non_null(strstr(text, "pod=\"train-0\",volume=\"0001-ds\""));
        assert_non_null(strstr(text, "gantry_node_bandwidth_targets 2\n"));
        free(text);

        /* train-0's cgroup gone (the pod deleted before its unpublish): an error, not a crash */
        snprintf(pods[0].dir, sizeof(pods[0].dir), "%s/gone", root);
        assert_int_equal(gantry_usage_sampler_pass(s, 1300000), 0);
        text = render(m);
        assert_non_null(strstr(text, "gantry_node_bandwidth_sample_errors_total 2\n"));
        free(text);

        gantry_usage_sampler_free(s);
        gantry_metrics_free(m);
}

/* A pod's io.pressure is per pod: a volume published later (and visited
 * first) must not count the pod's stall history again; a pass at the same
 * instant as the last adds nothing twice. */
static void test_stall_once_per_pod(void **state)
{
        struct gantry_metrics *m = gantry_metrics_new();
        struct gantry_usage_sampler_options o = { .iterate = iterate, .metrics = m };
        struct gantry_usage_sampler *s = NULL;
        char *text;

        (void)state;
        vols[0] = (struct vol){ &pods[0], "0002-ck", 259, 1, 0, 0, 0, 0, 0, 0, false };
        vols[1] = (struct vol){ &pods[0], "0001-ds", 251, 0, 0, 0, 0, 0, 4096, 0, true };
        vols[2].present = false;
        pods[0].stall_us = 5000000; /* 5 s of history before the plugin started */
        write_cgroups();
        assert_int_equal(gantry_usage_sampler_new(&o, &s), 0);
        assert_int_equal(gantry_usage_sampler_pass(s, 0), 1);
        pods[0].stall_us = 6000000;
        vols[1].rbytes = 8192;
        write_cgroups();
        assert_int_equal(gantry_usage_sampler_pass(s, 10000), 1);
        /* the checkpoint volume is published: visited before the dataset */
        vols[0].present = true;
        pods[0].stall_us = 7000000;
        vols[1].rbytes = 12288;
        write_cgroups();
        assert_int_equal(gantry_usage_sampler_pass(s, 20000), 2);
        vols[1].rbytes = 16384;
        write_cgroups();
        assert_int_equal(gantry_usage_sampler_pass(s, 20000), 2); /* the same instant */
        text = render(m);
        assert_non_null(strstr(text, "gantry_node_pod_io_stall_seconds_total{namespace=\"ml\",pod=\"train-0\","
                                     "job=\"train\"} 7\n"));
        assert_non_null(strstr(text, "gantry_node_volume_read_bytes_total{namespace=\"ml\",pod=\"train-0\","
                                     "volume=\"0001-ds\",job=\"train\"} 16384\n"));
        free(text);
        gantry_usage_sampler_free(s);
        gantry_metrics_free(m);
        setup(NULL); /* the next test starts from the initial layout */
}

/* what the stall function was given: "new <message>" or "update <name> <message>" */
static char stalls[12][700];
static unsigned n_stalls;
static const char *backend_now = "Healthy"; /* NULL: not readable */

static int tell_stall(void *ctx, const struct gantry_usage_target *t, const char *message,
                      char *event_name, size_t size)
{
        (void)ctx;
        (void)t;
        if (n_stalls < 12)
                snprintf(stalls[n_stalls++], sizeof(stalls[0]), "%s %s%s%s",
                         event_name[0] ? "update" : "new", event_name, event_name[0] ? " " : "",
                         message);
        if (!event_name[0])
                snprintf(event_name, size, "train-0.%u", n_stalls);
        return 0;
}

static int backend_state(void *ctx, const char *backend, char *state, size_t state_size,
                         char *reason, size_t reason_size)
{
        (void)ctx;
        if (strcmp(backend, "ceph-a") != 0 || !backend_now)
                return -ENOENT; /* NULL: as without the CRD, or forbidden */
        snprintf(state, state_size, "%s", backend_now);
        snprintf(reason, reason_size, "%s",
                 strcmp(backend_now, "Healthy") ? "OSD_DOWN: 1 osds down" : "all 40 PGs active+clean");
        return 0;
}

/* One pass @dt_s after @t_s: @stall_s more io.pressure stall, @bytes more read. */
static void stall_pass(struct gantry_usage_sampler *s, uint64_t *t_s, unsigned dt_s,
                       unsigned stall_s, uint64_t bytes)
{
        *t_s += dt_s;
        pods[0].stall_us += stall_s * 1000000ull;
        vols[0].rbytes += bytes;
        write_cgroups();
        assert_int_equal(gantry_usage_sampler_pass(s, *t_s * 1000), 1);
}

/* A hang of a pod's reads: one IOStalled event when it reaches the
 * threshold, the same one finished when it ends (the backend's state then,
 * not Healthy, is the cause; a Healthy one is waited on a while), counted;
 * a new hang is a new event. */
static void test_io_stall_event(void **state)
{
        struct gantry_metrics *m = gantry_metrics_new();
        struct gantry_usage_sampler_options o = {
                .iterate = iterate, .metrics = m, .io_stall_ms = 5000, .tell_stall = tell_stall,
                .backend_state = backend_state,
        };
        struct gantry_usage_sampler *s = NULL;
        uint64_t t_s = 0;
        char *text;

        (void)state;
        vols[0] = (struct vol){ &pods[0], "0001-0006-ceph-a-0000000000000001-ds", 251, 0,
                                0, 0, 0, 0, 0, 0, true };
        vols[1].present = vols[2].present = false;
        write_cgroups();
        assert_int_equal(gantry_usage_sampler_new(&o, &s), 0);
        assert_int_equal(gantry_usage_sampler_pass(s, 0), 1);
        text = render(m); /* the counter starts at 0: increase() sees the first stall */
        assert_non_null(strstr(text, "gantry_node_io_stalls_total{namespace=\"ml\",pod=\"train-0\","
                                     "volume=\"0001-0006-ceph-a-0000000000000001-ds\",job=\"train\"} 0\n"));
        free(text);
        for (int i = 0; i < 3; i++)
                stall_pass(s, &t_s, 1, 1, 8 << 20); /* flat out: waiting, but moving */
        for (int i = 0; i < 4; i++)
                stall_pass(s, &t_s, 1, 1, 0);
        assert_int_equal(n_stalls, 0);
        stall_pass(s, &t_s, 1, 1, 0); /* 5 s */
        assert_int_equal(n_stalls, 1);
        assert_non_null(strstr(stalls[0], "new dataset reads stalled since "));
        assert_non_null(strstr(stalls[0], " on volume 0001-0006-ceph-a-0000000000000001-ds, 5 s so "
                                          "far: backend ceph-a is Healthy (all 40 PGs active+clean)"));
        backend_now = "Degraded";
        for (int i = 0; i < 17; i++)
                stall_pass(s, &t_s, 1, 1, 0);
        assert_int_equal(n_stalls, 1); /* never one per sample */
        stall_pass(s, &t_s, 1, 0, 8 << 20);
        assert_int_equal(n_stalls, 2);
        assert_non_null(strstr(stalls[1], "update train-0.1 dataset reads stalled 22 s at "));
        assert_non_null(strstr(stalls[1], ": backend ceph-a was Degraded (OSD_DOWN: 1 osds down)"));
        text = render(m);
        assert_non_null(strstr(text, "gantry_node_io_stalls_total{namespace=\"ml\",pod=\"train-0\","
                                     "volume=\"0001-0006-ceph-a-0000000000000001-ds\",job=\"train\"} 1\n"));
        assert_non_null(strstr(text, "gantry_node_io_stalls_seconds_total{namespace=\"ml\",pod=\"train-0\","
                                     "volume=\"0001-0006-ceph-a-0000000000000001-ds\",job=\"train\"} 22\n"));
        assert_non_null(strstr(text, "gantry_node_bandwidth_events_total{reason=\"IOStalled\","
                                     "result=\"posted\"} 1\n"));
        free(text);
        /* recovered, then a new hang: a new event */
        backend_now = "Healthy";
        for (int i = 0; i < 3; i++)
                stall_pass(s, &t_s, 1, 0, 8 << 20);
        for (int i = 0; i < 6; i++)
                stall_pass(s, &t_s, 1, 1, 0);
        assert_int_equal(n_stalls, 3);
        assert_non_null(strstr(stalls[2], "new dataset reads stalled since "));
        /* it ends while the backend still looks Healthy: the event waits for the
         * observer to say why (as it does a few seconds after Ceph marks an OSD down) */
        stall_pass(s, &t_s, 1, 0, 8 << 20);
        stall_pass(s, &t_s, 1, 0, 8 << 20);
        assert_int_equal(n_stalls, 3);
        backend_now = "Degraded";
        stall_pass(s, &t_s, 1, 0, 8 << 20);
        assert_int_equal(n_stalls, 4);
        assert_non_null(strstr(stalls[3], "update train-0.3 dataset reads stalled 6 s at "));
        assert_non_null(strstr(stalls[3], ": backend ceph-a was Degraded (OSD_DOWN: 1 osds down)"));
        /* Healthy throughout: finished once the settle time is up, as it was */
        backend_now = "Healthy";
        for (int i = 0; i < 7; i++)
                stall_pass(s, &t_s, 1, 1, 0);
        assert_int_equal(n_stalls, 5);
        stall_pass(s, &t_s, 1, 0, 8 << 20);
        stall_pass(s, &t_s, 14, 0, 8 << 20);
        assert_int_equal(n_stalls, 5);
        stall_pass(s, &t_s, 1, 0, 8 << 20);
        assert_int_equal(n_stalls, 6);
        assert_non_null(strstr(stalls[5], "update train-0.5 dataset reads stalled 7 s at "));
        assert_non_null(strstr(stalls[5], ": backend ceph-a was Healthy (all 40 PGs active+clean)"));
        /* a new stall while the last one waits: the last one is finished first */
        for (int i = 0; i < 6; i++)
                stall_pass(s, &t_s, 1, 1, 0);
        stall_pass(s, &t_s, 1, 0, 8 << 20);
        for (int i = 0; i < 6; i++)
                stall_pass(s, &t_s, 1, 1, 0);
        assert_int_equal(n_stalls, 9);
        assert_non_null(strstr(stalls[6], "new dataset reads stalled since "));
        assert_non_null(strstr(stalls[7], "update train-0.7 dataset reads stalled 6 s at "));
        assert_non_null(strstr(stalls[8], "new dataset reads stalled since "));
        /* a state that cannot be read now will not say more: finished at once */
        backend_now = NULL;
        stall_pass(s, &t_s, 1, 0, 8 << 20);
        assert_int_equal(n_stalls, 10);
        assert_non_null(strstr(stalls[9], "update train-0.9 dataset reads stalled 6 s at "));
        backend_now = "Healthy";
        /* the pod goes: its stall series go too */
        vols[0].present = false;
        assert_int_equal(gantry_usage_sampler_pass(s, (t_s + 1) * 1000), 0);
        text = render(m);
        assert_null(strstr(text, "gantry_node_io_stalls_total{"));
        free(text);
        gantry_usage_sampler_free(s);
        gantry_metrics_free(m);
        setup(NULL);
}

static int walk_fails(void *ctx, gantry_usage_visit_fn visit, void *vctx)
{
        (void)ctx;
        (void)visit;
        (void)vctx;
        return -EIO;
}

static void test_thread_and_bad_options(void **state)
{
        struct gantry_usage_sampler_options o = { 0 };
        struct gantry_usage_sampler *s = NULL;

        (void)state;
        assert_int_equal(gantry_usage_sampler_new(&o, &s), -EINVAL);
        o.iterate = walk_fails;
        o.window.window_ms = 1000;
        o.window.at_cap_rate = 2; /* not a share */
        assert_int_equal(gantry_usage_sampler_new(&o, &s), -EINVAL);
        o.window.window_ms = 0;
        assert_int_equal(gantry_usage_sampler_new(&o, &s), 0);
        assert_int_equal(gantry_usage_sampler_pass(s, 1), -EIO);
        /* the thread starts and stops at once (free wakes it) */
        assert_int_equal(gantry_usage_sampler_start(s), 0);
        assert_int_equal(gantry_usage_sampler_start(s), -EINVAL);
        gantry_usage_sampler_free(s);
        gantry_usage_sampler_free(NULL);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_stall_once_per_pod),
                cmocka_unit_test(test_io_stall_event),
                cmocka_unit_test(test_sampler),
                cmocka_unit_test(test_thread_and_bad_options),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
