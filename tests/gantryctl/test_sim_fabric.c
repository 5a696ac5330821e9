/*
 * The simulator's fabric model (gantryctl/sim_fabric.c, maxflow.c) against
 * hand calculations on a four-node cluster, and a property test on the
 * reference cluster: for random placements, max-min fair rates never
 * overload a link and never deliver more than the max-flow bound.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "maxflow.h"
#include "read_file.h"
#include "sim_fabric.h"
#include "sim_policy.h"

#define assert_near(a, b) assert_true(fabs((double)(a) - (double)(b)) <= 1e-6 * fmax(1, fabs((double)(b))))

/* 2 leaves x 2 nodes x 8 GPUs, 100 Gbps NICs, 2:1 -> 2 x 100 / 2 = 100 Gbps uplinks */
static const char *tiny_cluster =
        "{ \"gpuLeaves\": 2, \"nodesPerLeaf\": 2, \"gpusPerNode\": 8, \"nodeNicGbps\": 100,"
        "  \"spineOversubscription\": 2,"
        "  \"backends\": [ { \"name\": \"ceph-a\", \"kind\": \"ceph\", \"gbps\": 200, \"leaves\": [\"leaf-00\"] },"
        "                  { \"name\": \"tgt\", \"kind\": \"nvmeof\", \"gbps\": 400, \"leaves\": [\"leaf-00\"] } ] }";

/* A: 16 GPUs at 1000 MB/s = 8 Gbps per GPU, 64 per pod; B: 8 GPUs, same rate */
static const char *tiny_trace =
        "{ \"jobs\": [ { \"name\": \"A\", \"arrivalSeconds\": 0, \"gpus\": 16, \"ingestMBpsPerGpu\": 1000,"
        "                \"dataset\": \"ceph-a\", \"stepSeconds\": 1, \"steps\": 10, \"checkpointGB\": 100,"
        "                \"checkpointEverySteps\": 5, \"checkpointTarget\": \"tgt\" },"
        "              { \"name\": \"B\", \"arrivalSeconds\": 0, \"gpus\": 8, \"ingestMBpsPerGpu\": 1000,"
        "                \"dataset\": \"ceph-a\", \"stepSeconds\": 1, \"steps\": 10 } ] }";

static void test_maxflow_textbook(void **state)
{
        /* CLRS figure 26.6: s=0, v1..v4 = 1..4, t=5; maximum flow 23 */
        struct gantry_maxflow *g;
        int e;

        (void)state;
        assert_int_equal(gantry_maxflow_new(6, &g), 0);
        e = gantry_maxflow_add_edge(g, 0, 1, 16);
        gantry_maxflow_add_edge(g, 0, 2, 13);
        gantry_maxflow_add_edge(g, 1, 3, 12);
        gantry_maxflow_add_edge(g, 2, 1, 4);
        gantry_maxflow_add_edge(g, 2, 4, 14);
        gantry_maxflow_add_edge(g, 3, 2, 9);
        gantry_maxflow_add_edge(g, 3, 5, 20);
        gantry_maxflow_add_edge(g, 4, 3, 7);
        gantry_maxflow_add_edge(g, 4, 5, 4);
        assert_int_equal(gantry_maxflow_add_edge(g, 0, 9, 1), -EINVAL);
        assert_int_equal(gantry_maxflow_add_edge(g, 0, 1, -1), -EINVAL);
        /* the cut {s, v1, v2, v4}: v1->v3 12 + v4->v3 7 + v4->t 4 = 23 */
        assert_near(gantry_maxflow_solve(g, 0, 5), 23);
        assert_true(gantry_maxflow_edge_flow(g, e) <= 16 + 1e-9);
        gantry_maxflow_free(g);
}

struct tiny {
        struct gantry_sim_cluster *c;
        struct gantry_sim_trace *t;
        struct gantry_sim_fabric *f;
};

static int tiny_setup(void **state)
{
        struct tiny *x = calloc(1, sizeof(*x));
        struct gantry_error err = { 0 };

        if (!x || gantry_sim_cluster_parse(tiny_cluster, &x->c, &err) < 0 ||
            gantry_sim_trace_parse(tiny_trace, x->c, &x->t, &err) < 0 ||
            gantry_sim_fabric_new(x->c, &x->f) < 0) {
                fprintf(stderr, "setup: %s\n", err.msg);
                return -1;
        }
        *state = x;
        return 0;
}

static int tiny_teardown(void **state)
{
        struct tiny *x = *state;

        gantry_sim_fabric_free(x->f);
        gantry_sim_trace_free(x->t);
        gantry_sim_cluster_free(x->c);
        free(x);
        return 0;
}

static void test_share_and_bound_by_hand(void **state)
{
        struct tiny *x = *state;
        const struct gantry_sim_job *a = &x->t->jobs[0], *b = &x->t->jobs[1];
        int a_nodes[2] = { 2, 3 }, b_nodes[1] = { 0 }; /* A on leaf-01 (remote), B on leaf-00 */
        struct gantry_sim_load la = { 0 }, lb = { 0 };
        const struct gantry_sim_load *loads[2] = { &la, &lb };
        const struct gantry_sim_job *jobs[2] = { a, b };
        double rate[2], per_job[2];

        assert_int_equal(gantry_sim_fabric_job_load(x->f, a, a_nodes, &la), 0);
        assert_int_equal(gantry_sim_fabric_job_load(x->f, b, b_nodes, &lb), 0);
        /* A: 2 pods x 64 = 128 Gbps, on: 2 NICs, ceph-a, leaf-00 up, leaf-01 down */
        assert_near(la.total_gbps, 128);
        assert_int_equal(la.n, 5);
        /* B: 64 Gbps on its NIC and ceph-a only (local) */
        assert_near(lb.total_gbps, 64);
        assert_int_equal(lb.n, 2);

        /* alone, A is held by the 100 Gbps uplinks: 100 / 128 = 0.78125 */
        assert_int_equal(gantry_sim_fabric_share(x->f, loads, 1, rate), 0);
        assert_near(rate[0], 0.78125);
        /* together: raising both, leaf-00 up saturates first at x = 100/128
         * (ceph-a would at 200/192 = 1.0417); A freezes at 0.78125. ceph-a then
         * has 200 - 192 x 0.78125 = 50 left, B needs 64 x 0.21875 = 14 more to
         * reach 1: B runs at full speed. */
        assert_int_equal(gantry_sim_fabric_share(x->f, loads, 2, rate), 0);
        assert_near(rate[0], 0.78125);
        assert_near(rate[1], 1);
        /* delivered: 128 x 0.78125 + 64 = 164 Gbps. The bound, placement
         * relaxed: leaf-00's two nodes take min(100 NIC, 8 GPUs x 8) = 64 each
         * locally = 128; 100 more crosses the spine to leaf-01; demand is
         * 192 and ceph-a has 200: the bound is min(192, 200, 128 + 100) = 192 */
        assert_near(gantry_sim_fabric_bound(x->f, jobs, 2, per_job), 192);
        assert_near(per_job[0] + per_job[1], 192);
        assert_near(gantry_sim_fabric_bound(x->f, jobs, 0, NULL), 0);

        /* checkpoint of A, 100 GB = 800 Gbit to tgt (400 Gbps, on leaf-00):
         * target 800/400 = 2 s; each pod's NIC 400/100 = 4 s; leaf-01's
         * uplink carries it all: 800/100 = 8 s. The slowest: 8 s */
        assert_near(gantry_sim_fabric_checkpoint_s(x->f, a, a_nodes), 8);
        /* placed on leaf-00 (the target's leaf) both pods on one node:
         * that NIC carries 800 Gbit at 100 Gbps = 8 s, no uplink */
        a_nodes[0] = a_nodes[1] = 0;
        assert_near(gantry_sim_fabric_checkpoint_s(x->f, a, a_nodes), 8);
        a_nodes[1] = 1;
        /* split over nodes 0 and 1: 4 s each, target 2 s: 4 s */
        assert_near(gantry_sim_fabric_checkpoint_s(x->f, a, a_nodes), 4);
        /* B has no checkpoints */
        assert_near(gantry_sim_fabric_checkpoint_s(x->f, b, b_nodes), 0);
        gantry_sim_load_clear(&la);
        gantry_sim_load_clear(&lb);
}

static char *read_source(const char *rel)
{
        char path[1024];
        char *text = NULL;
        struct gantry_error err = { 0 };

        snprintf(path, sizeof(path), "%s/%s", GANTRY_SOURCE_DIR, rel);
        assert_int_equal(gantryctl_read_file(path, 1 << 24, &text, &err), 0);
        return text;
}

/* Random placements of random subsets of the reference trace's jobs. */
static void test_property_rates_within_links_and_bound(void **state)
{
        char *ct = read_source("gantryctl/examples/reference-cluster.json");
        char *tt = read_source("gantryctl/examples/reference-trace.json");
        struct gantry_sim_cluster *c;
        struct gantry_sim_trace *t;
        struct gantry_sim_fabric *f;
        struct gantry_error err = { 0 };
        struct gantry_sim_rng rng = { 42 };

        (void)state;
        assert_int_equal(gantry_sim_cluster_parse(ct, &c, &err), 0);
        assert_int_equal(gantry_sim_trace_parse(tt, c, &t, &err), 0);
        assert_int_equal(gantry_sim_fabric_new(c, &f), 0);
        for (int round = 0; round < 200; round++) {
                struct gantry_sim_load loads[24] = { 0 };
                const struct gantry_sim_load *lp[24];
                const struct gantry_sim_job *jobs[24];
                int free_gpus[GANTRY_SIM_MAX_NODES / 16], nodes[GANTRY_SIM_MAX_PODS], n = 0;
                double x[24], delivered = 0, *use = calloc(gantry_sim_fabric_links(f), sizeof(double));

                assert_non_null(use);
                for (int v = 0; v < c->n_nodes; v++)
                        free_gpus[v] = c->nodes[v].gpus;
                for (int k = 0; k < 24; k++) {
                        const struct gantry_sim_job *j = &t->jobs[gantry_sim_rng_below(&rng, t->n_jobs)];
                        int pods = j->gpus / j->gpus_per_pod, ok = 1;

                        for (int p = 0; p < pods && ok; p++) {
                                int v = (int)gantry_sim_rng_below(&rng, c->n_nodes), tries = 0;

                                while (free_gpus[v] < j->gpus_per_pod && tries++ < c->n_nodes)
                                        v = (v + 1) % c->n_nodes;
                                ok = free_gpus[v] >= j->gpus_per_pod;
                                if (ok) {
                                        free_gpus[v] -= j->gpus_per_pod;
                                        nodes[p] = v;
                                }
                        }
                        if (!ok)
                                break;
                        assert_int_equal(gantry_sim_fabric_job_load(f, j, nodes, &loads[n]), 0);
                        lp[n] = &loads[n];
                        jobs[n++] = j;
                }
                assert_int_equal(gantry_sim_fabric_share(f, lp, n, x), 0);
                for (int k = 0; k < n; k++) {
                        assert_true(x[k] >= 0 && x[k] <= 1);
                        delivered += x[k] * loads[k].total_gbps;
                        for (int e = 0; e < loads[k].n; e++)
                                use[loads[k].link[e]] += x[k] * loads[k].gbps[e];
                }
                for (int e = 0; e < gantry_sim_fabric_links(f); e++)
                        assert_true(use[e] <= gantry_sim_fabric_capacity(f, e) * (1 + 1e-9));
                assert_true(delivered <= gantry_sim_fabric_bound(f, jobs, n, NULL) * (1 + 1e-9));
                for (int k = 0; k < n; k++)
                        gantry_sim_load_clear(&loads[k]);
                free(use);
        }
        gantry_sim_fabric_free(f);
        gantry_sim_trace_free(t);
        gantry_sim_cluster_free(c);
        free(ct);
        free(tt);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_maxflow_textbook),
                cmocka_unit_test_setup_teardown(test_share_and_bound_by_hand, tiny_setup, tiny_teardown),
                cmocka_unit_test(test_property_rates_within_links_and_bound),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
