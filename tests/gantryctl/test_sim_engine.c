/*
 * The simulator's engine (gantryctl/sim_engine.c) with the gantry policy
 * (the real placement library) on a four-node cluster, against a timeline
 * worked out by hand, and the same inputs under every policy for the
 * invariants: every job ends, utilization within [0, 1], never above the
 * bound, the same seed gives the same run.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "sim_engine.h"

#define assert_near(a, b) assert_true(fabs((double)(a) - (double)(b)) <= 1e-6 * fmax(1, fabs((double)(b))))

/* 2 leaves x 2 nodes x 8 GPUs, 100 Gbps NICs, 100 Gbps uplinks (2:1);
 * ceph-a (200 Gbps) and tgt (400 Gbps) both on leaf-00 */
static const char *cluster_json =
        "{ \"gpuLeaves\": 2, \"nodesPerLeaf\": 2, \"gpusPerNode\": 8, \"nodeNicGbps\": 100,"
        "  \"spineOversubscription\": 2,"
        "  \"backends\": [ { \"name\": \"ceph-a\", \"kind\": \"ceph\", \"gbps\": 200, \"leaves\": [\"leaf-00\"] },"
        "                  { \"name\": \"tgt\", \"kind\": \"nvmeof\", \"gbps\": 400, \"leaves\": [\"leaf-00\"] } ] }";

/* A: 16 GPUs x 8 Gbps = 128 Gbps, 10 steps, 100 GB checkpoint every 5 steps;
 * B: 8 GPUs x 8 Gbps = 64 Gbps, 10 steps, arrives at t = 0 after A */
static const char *trace_json =
        "{ \"jobs\": [ { \"name\": \"A\", \"arrivalSeconds\": 0, \"gpus\": 16, \"ingestMBpsPerGpu\": 1000,"
        "                \"dataset\": \"ceph-a\", \"stepSeconds\": 1, \"steps\": 10, \"checkpointGB\": 100,"
        "                \"checkpointEverySteps\": 5, \"checkpointTarget\": \"tgt\" },"
        "              { \"name\": \"B\", \"arrivalSeconds\": 0, \"gpus\": 8, \"ingestMBpsPerGpu\": 1000,"
        "                \"dataset\": \"ceph-a\", \"stepSeconds\": 1, \"steps\": 10 } ] }";

struct world {
        struct gantry_sim_cluster *c;
        struct gantry_sim_trace *t;
};

static int setup(void **state)
{
        static struct world w;
        struct gantry_error err = { 0 };

        if (gantry_sim_cluster_parse(cluster_json, &w.c, &err) < 0 ||
            gantry_sim_trace_parse(trace_json, w.c, &w.t, &err) < 0)
                return -1;
        *state = &w;
        return 0;
}

static int teardown(void **state)
{
        struct world *w = *state;

        gantry_sim_trace_free(w->t);
        gantry_sim_cluster_free(w->c);
        return 0;
}

static void test_gantry_timeline_by_hand(void **state)
{
        struct world *w = *state;
        struct gantry_sim_result *r;
        struct gantry_error err = { 0 };

        assert_int_equal(gantry_sim_run(w->c, w->t, GANTRY_SIM_POLICY_GANTRY, 1, &r, &err), 0);
        /* The library puts A's two pods next to ceph-a: leaf-00 (closeness 1,
         * no uplink), one per node; B then gets leaf-01, the only room left.
         * Rates: A reads 128 locally, B 64 across the spine (uplinks 100):
         * ceph-a carries 192 <= 200, every link fits, both run at full speed. */
        assert_int_equal(r->jobs[0].leaves, 1);
        assert_int_equal(r->jobs[1].leaves, 1);
        assert_near(r->jobs[0].start_s, 0);
        assert_near(r->jobs[1].start_s, 0);
        /* A: steps 0-5 in 5 s; checkpoint 100 GB = 800 Gbit, each node's NIC
         * writes 400 Gbit at 100 Gbps = 4 s (tgt: 800/400 = 2 s; same leaf,
         * no uplink) -> 5..9 s; steps 5-10 in 5 s -> ends at 14 s (no
         * checkpoint at the last step). B: 10 steps at full speed -> 10 s. */
        assert_near(r->jobs[0].checkpoint_s, 4);
        assert_near(r->jobs[0].end_s, 14);
        assert_near(r->jobs[1].end_s, 10);
        assert_near(r->makespan_s, 14);
        /* busy GPU-seconds: A 16 x 10 + B 8 x 10 = 240 of 32 GPUs x 14 s */
        assert_near(r->gpu_utilization, 240.0 / (32 * 14));
        assert_near(r->jobs[0].utilization, 160.0 / (16 * 14));
        assert_near(r->jobs[1].utilization, 1);
        /* synchronized throughput: A 10 steps in 14 s, B 10 in 10 s */
        assert_near(r->jobs[0].steps_per_s, 10.0 / 14);
        assert_near(r->jobs[1].steps_per_s, 1);
        /* delivered: 192 Gbps for 5 s, 64 for 4 s (A checkpoints), 192 for
         * 1 s, 128 for 4 s = 960 + 256 + 192 + 512 = 1920 Gbit; the bound is
         * the same here (everyone at full demand) */
        assert_near(r->delivered_gbit, 1920);
        assert_near(r->bound_gbit, 1920);
        assert_int_equal(r->violations, 0);
        gantry_sim_result_free(r);
}

static void test_every_policy_keeps_the_invariants(void **state)
{
        struct world *w = *state;

        for (int p = 0; p < GANTRY_SIM_POLICY_COUNT; p++) {
                struct gantry_sim_result *r, *again;
                struct gantry_error err = { 0 };

                assert_int_equal(gantry_sim_run(w->c, w->t, p, 99, &r, &err), 0);
                assert_int_equal(gantry_sim_run(w->c, w->t, p, 99, &again, &err), 0);
                assert_int_equal(r->violations, 0);
                assert_true(r->delivered_gbit <= r->bound_gbit * (1 + 1e-9));
                assert_true(r->gpu_utilization > 0 && r->gpu_utilization <= 1 + 1e-9);
                for (int j = 0; j < r->n_jobs; j++) {
                        assert_true(r->jobs[j].end_s >= r->jobs[j].start_s + w->t->jobs[j].steps - 1e-6);
                        assert_true(r->jobs[j].utilization > 0 && r->jobs[j].utilization <= 1 + 1e-9);
                        assert_true(r->jobs[j].end_s == again->jobs[j].end_s);
                }
                assert_true(r->makespan_s == again->makespan_s);
                gantry_sim_result_free(r);
                gantry_sim_result_free(again);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_gantry_timeline_by_hand),
                cmocka_unit_test(test_every_policy_keeps_the_invariants),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
