/*
 * The worked examples of docs/planning.md, each checked against a hand
 * calculation written out step by step (plan_model.c computes the same
 * quantities its own way; if either drifts, the test fails).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "plan_model.h"

#define assert_near(a, b) assert_true(fabs((double)(a) - (double)(b)) <= 1e-9 * fmax(1, fabs((double)(b))))

/* docs/planning.md, example 1: 1,024 GPUs against 8 storage nodes */
static void test_example1_reads_storage_bound(void **state)
{
        struct gantry_plan_cluster c = { .gpus = 1024, .gpus_per_node = 8, .node_nic_gbps = 200,
                                         .oversubscription = 2 };
        struct gantry_plan_reads_in in = { .ingest_mbps = 400, .dataset_gb = 100000,
                                           .node_cache_gb = 1000, .storage_nodes = 8,
                                           .storage_read_gbytes = 40, .storage_nic_gbps = 400,
                                           .rebuild_share = 0.25 };
        struct gantry_plan_reads_out o;

        (void)state;
        gantry_plan_reads(&c, &in, &o);
        /* 1024 GPUs / 8 per node = 128 nodes */
        assert_near(o.nodes, 128);
        /* 400 MB/s = 0.4 GB/s per GPU; 1024 x 0.4 = 409.6 GB/s at the barrier */
        assert_near(o.per_gpu_gbytes, 0.4);
        assert_near(o.required_gbytes, 409.6);
        /* storage 8 x 40 = 320; storage NICs 8 x 400/8 = 400;
         * leaf uplinks 128 x 200/8 / 2 = 1600; node NICs 128 x 25 = 3200 */
        assert_near(o.limit_gbytes[GANTRY_PLAN_LIMIT_STORAGE], 320);
        assert_near(o.limit_gbytes[GANTRY_PLAN_LIMIT_STORAGE_NICS], 400);
        assert_near(o.limit_gbytes[GANTRY_PLAN_LIMIT_LEAF_UPLINKS], 1600);
        assert_near(o.limit_gbytes[GANTRY_PLAN_LIMIT_NODE_NICS], 3200);
        /* network cap min(400, 1600, 3200) = 400 GB/s; storage 320 is below it */
        assert_near(o.network_gbytes, 400);
        assert_int_equal(o.bottleneck, GANTRY_PLAN_LIMIT_STORAGE);
        assert_near(o.deliverable_gbytes, 320);
        /* 320 - 409.6 = -89.6 GB/s; -89.6 / 409.6 = -0.21875 */
        assert_near(o.headroom_gbytes, -89.6);
        assert_near(o.headroom_fraction, -0.21875);
        /* 1000 GB of cache for 100000 GB: 1% hits, does not fit */
        assert_false(o.fits_in_cache);
        assert_near(o.cache_hit, 0.01);
        /* cold: GPUs consume 320 GB/s, 320/409.6 = 78.125%, epoch 100000/320 = 312.5 s */
        assert_near(o.cold_utilization, 0.78125);
        assert_near(o.epoch_cold_s, 312.5);
        /* warm: storage serves 99%, so GPUs consume 320/0.99 = 323.23 GB/s
         * (< 409.6); epoch = 100000 x 0.99 / 320 = 309.375 s */
        assert_near(o.warm_gbytes, 320 / 0.99);
        assert_near(o.epoch_warm_s, 309.375);
        /* rebuild: 7 survivors x 40 x (1 - 0.25) = 210 GB/s; their NICs
         * 7 x 50 x 0.75 = 262.5; storage limits; epoch 100000/210 s */
        assert_true(o.rebuild_possible);
        assert_near(o.rebuild_deliverable_gbytes, 210);
        assert_int_equal(o.rebuild_bottleneck, GANTRY_PLAN_LIMIT_STORAGE);
        assert_near(o.rebuild_utilization, 210 / 409.6);
        assert_near(o.epoch_rebuild_s, 100000.0 / 210);
}

/* example 2: 64 GPUs, samples x bytes, behind 8:1 leaves; the data fits in cache */
static void test_example2_reads_cached_uplink_bound(void **state)
{
        struct gantry_plan_cluster c = { .gpus = 64, .gpus_per_node = 8, .node_nic_gbps = 100,
                                         .oversubscription = 8 };
        struct gantry_plan_reads_in in = { .samples_per_s = 2000, .bytes_per_sample = 150000,
                                           .dataset_gb = 500, .node_cache_gb = 512,
                                           .storage_nodes = 4, .storage_read_gbytes = 10,
                                           .storage_nic_gbps = 100, .rebuild_share = 0.25 };
        struct gantry_plan_reads_out o;

        (void)state;
        gantry_plan_reads(&c, &in, &o);
        /* 2000 samples/s x 150000 B = 3e8 B/s = 0.3 GB/s; x 64 = 19.2 GB/s */
        assert_near(o.per_gpu_gbytes, 0.3);
        assert_near(o.required_gbytes, 19.2);
        /* 8 nodes x 100/8 = 100 GB/s of NICs, / 8 = 12.5 GB/s of uplinks;
         * storage 4 x 10 = 40, storage NICs 4 x 12.5 = 50 */
        assert_near(o.limit_gbytes[GANTRY_PLAN_LIMIT_LEAF_UPLINKS], 12.5);
        assert_near(o.network_gbytes, 12.5);
        assert_int_equal(o.bottleneck, GANTRY_PLAN_LIMIT_LEAF_UPLINKS);
        /* 12.5 - 19.2 = -6.7 GB/s */
        assert_near(o.headroom_gbytes, -6.7);
        /* 512 GB >= 500 GB: fits, every warm read is a hit */
        assert_true(o.fits_in_cache);
        assert_near(o.cache_hit, 1);
        /* cold epoch 500 / 12.5 = 40 s; warm epoch 500 / 19.2 = 26.0417 s */
        assert_near(o.epoch_cold_s, 40);
        assert_near(o.epoch_warm_s, 500 / 19.2);
        assert_near(o.warm_utilization, 1);
        /* rebuild: 3 x 10 x 0.75 = 22.5 GB/s of storage, uplinks still 12.5 */
        assert_near(o.rebuild_deliverable_gbytes, 12.5);
        assert_int_equal(o.rebuild_bottleneck, GANTRY_PLAN_LIMIT_LEAF_UPLINKS);
}

/* example 3: 1,000 TB raw, EC 8+3 against 3 copies and mirroring, 85% fill */
static void test_example3_capacity(void **state)
{
        struct gantry_plan_capacity_in in = { .raw_tb = 1000, .ec_k = 8, .ec_m = 3, .replicas = 3,
                                              .fill = 0.85 };
        struct gantry_plan_capacity_out o;

        (void)state;
        gantry_plan_capacity(&in, &o);
        /* 8 / (8 + 3) = 0.727272...; 1000 x 0.7272 x 0.85 = 618.18 TB */
        assert_near(o.ec.fraction, 8.0 / 11);
        assert_near(o.ec.usable_tb, 8000.0 / 11 * 0.85);
        assert_near(o.ec.overhead, 1.375);
        assert_near(o.ec.failures_tolerated, 3);
        /* 1000 / 3 x 0.85 = 283.33 TB, survives 2 */
        assert_near(o.replication.usable_tb, 1000.0 / 3 * 0.85);
        assert_near(o.replication.failures_tolerated, 2);
        /* 1000 / 2 x 0.85 = 425 TB, survives 1 */
        assert_near(o.mirror.usable_tb, 425);
        assert_near(o.mirror.overhead, 2);
}

/* example 4: a 70B-parameter model checkpointed every 30 minutes */
static void test_example4_checkpoint(void **state)
{
        struct gantry_plan_cluster c = { .gpus = 1024, .gpus_per_node = 8, .node_nic_gbps = 200,
                                         .oversubscription = 2 };
        struct gantry_plan_checkpoint_in in = { .params_billion = 70, .bytes_per_param = 2,
                                                .optimizer_multiplier = 7,
                                                .tiers = { { "nvmeof", 200 }, { "ceph", 60 } },
                                                .n_tiers = 2, .gds_efficiency = 0.9,
                                                .bounce_efficiency = 0.6, .interval_min = 30,
                                                .mtbf_hours = 24 };
        struct gantry_plan_checkpoint_out o;
        double window;

        (void)state;
        gantry_plan_checkpoint(&c, &in, &o);
        /* 70e9 params x 2 B x 7 = 980e9 B = 980 GB */
        assert_near(o.size_gb, 980);
        /* 128 nodes x 25 GB/s / 2 = 1600 GB/s: the tiers limit, not the fabric */
        assert_near(o.fabric_gbytes, 1600);
        assert_false(o.tiers[0].fabric_limited);
        /* nvmeof with GDS: 200 x 0.9 = 180 GB/s; 980 / 180 = 5.444 s;
         * 5.444 / 1800 s = 0.3025% of the time */
        window = 980.0 / 180;
        assert_near(o.tiers[0].gds.gbytes, 180);
        assert_near(o.tiers[0].gds.window_s, window);
        assert_near(o.tiers[0].gds.lost_fraction, window / 1800);
        /* Young: sqrt(2 x 5.444 x 86400) = sqrt(940800) = 969.95 s */
        assert_near(o.tiers[0].gds.optimal_interval_s, sqrt(940800));
        /* with failures: 5.444/1800 + 1800/(2 x 86400) = 0.003025 + 0.0104167 */
        assert_near(o.tiers[0].gds.overhead_with_failures, window / 1800 + 1800.0 / 172800);
        /* nvmeof through a bounce buffer: 200 x 0.6 = 120 GB/s; 980/120 = 8.1667 s */
        assert_near(o.tiers[0].bounce.window_s, 980.0 / 120);
        /* ceph with GDS: 60 x 0.9 = 54 GB/s; 980 / 54 = 18.148 s */
        assert_near(o.tiers[1].gds.window_s, 980.0 / 54);
}

/* Example 4 gains a drain: can Ceph absorb each 980 GB checkpoint within the 30 min? */
static void test_checkpoint_drain_fits(void **state)
{
        struct gantry_plan_cluster c = { .gpus = 1024, .gpus_per_node = 8, .node_nic_gbps = 200,
                                         .oversubscription = 2 };
        struct gantry_plan_checkpoint_in in = { .params_billion = 70, .bytes_per_param = 2,
                                                .optimizer_multiplier = 7, .tiers = { { "nvmeof", 200 } },
                                                .n_tiers = 1, .gds_efficiency = 0.9, .bounce_efficiency = 0.6,
                                                .interval_min = 30, .drain_gbytes = 60,
                                                .drain_cap_gbytes = 32 };
        struct gantry_plan_checkpoint_out o;
        const struct gantry_plan_drain *d = &o.tiers[0].drain;

        (void)state;
        gantry_plan_checkpoint(&c, &in, &o);
        /* 16 targets x 2 GB/s cap = 32 GB/s < Ceph's 60: the cap rules */
        assert_near(d->gbytes, 32);
        /* 980 GB / 32 GB/s = 30.625 s */
        assert_near(d->drain_s, 30.625);
        /* burst 980 / 180 = 5.4444 s, then the drain: 36.0694 s of 1800 */
        assert_near(d->busy_s, 980.0 / 180 + 30.625);
        assert_true(d->fits);
        assert_near(d->slack_s, 1800 - (980.0 / 180 + 30.625));
        /* the least rate that fits: 980 / (1800 - 5.4444) = 0.54612 GB/s */
        assert_near(d->needed_gbytes, 980 / (1800 - 980.0 / 180));
}

/* 6 TB every 10 minutes into 10 GB/s of Ceph: the drains fall behind. */
static void test_checkpoint_drain_falls_behind(void **state)
{
        struct gantry_plan_cluster c = { .gpus = 1024, .gpus_per_node = 8, .node_nic_gbps = 200,
                                         .oversubscription = 2 };
        struct gantry_plan_checkpoint_in in = { .size_gb = 6000, .tiers = { { "nvmeof", 200 } }, .n_tiers = 1,
                                                .gds_efficiency = 0.9, .bounce_efficiency = 0.6,
                                                .interval_min = 10, .drain_gbytes = 10 };
        struct gantry_plan_checkpoint_out o;
        const struct gantry_plan_drain *d = &o.tiers[0].drain;

        (void)state;
        gantry_plan_checkpoint(&c, &in, &o);
        /* no cap: 10 GB/s; 6000 / 10 = 600 s, after a 6000 / 180 = 33.333 s burst */
        assert_near(d->gbytes, 10);
        assert_near(d->drain_s, 600);
        assert_near(d->busy_s, 6000.0 / 180 + 600);
        assert_false(d->fits);
        assert_near(d->slack_s, -6000.0 / 180);
        /* 6000 / (600 - 33.333) = 10.588 GB/s would fit */
        assert_near(d->needed_gbytes, 6000 / (600 - 6000.0 / 180));
        /* no drain asked: nothing computed */
        in.drain_gbytes = 0;
        gantry_plan_checkpoint(&c, &in, &o);
        assert_near(o.tiers[0].drain.drain_s, 0);
}

/* A small cluster whose fabric is slower than the tier: the path is the fabric. */
static void test_checkpoint_fabric_limited_and_window_over_interval(void **state)
{
        struct gantry_plan_cluster c = { .gpus = 128, .gpus_per_node = 8, .node_nic_gbps = 100,
                                         .oversubscription = 2 };
        struct gantry_plan_checkpoint_in in = { .size_gb = 6000, .tiers = { { "nvmeof", 200 } },
                                                .n_tiers = 1, .gds_efficiency = 1,
                                                .bounce_efficiency = 0.5, .interval_min = 1 };
        struct gantry_plan_checkpoint_out o;

        (void)state;
        gantry_plan_checkpoint(&c, &in, &o);
        /* 16 nodes x 12.5 GB/s / 2 = 100 GB/s < 200 */
        assert_near(o.fabric_gbytes, 100);
        assert_true(o.tiers[0].fabric_limited);
        assert_near(o.tiers[0].path_gbytes, 100);
        /* 6000 / 100 = 60 s: the window fills the whole 60 s interval */
        assert_near(o.tiers[0].gds.window_s, 60);
        assert_true(o.tiers[0].gds.window_exceeds_interval);
        assert_near(o.tiers[0].gds.lost_fraction, 1);
        /* bounce: 6000 / 50 = 120 s, still capped at 100% lost */
        assert_near(o.tiers[0].bounce.lost_fraction, 1);
        /* no MTBF given: no optimum */
        assert_near(o.tiers[0].gds.optimal_interval_s, 0);
}

static void test_single_storage_node_cannot_rebuild(void **state)
{
        struct gantry_plan_cluster c = { .gpus = 4, .gpus_per_node = 8, .node_nic_gbps = 100,
                                         .oversubscription = 1 };
        struct gantry_plan_reads_in in = { .ingest_mbps = 1000, .dataset_gb = 10, .storage_nodes = 1,
                                           .storage_read_gbytes = 100, .storage_nic_gbps = 800 };
        struct gantry_plan_reads_out o;

        (void)state;
        gantry_plan_reads(&c, &in, &o);
        /* 4 GPUs on ceil(4/8) = 1 node, 4 GB/s needed, one 12.5 GB/s NIC */
        assert_near(o.nodes, 1);
        assert_near(o.headroom_gbytes, 12.5 - 4);
        assert_false(o.rebuild_possible);
        /* no cache: warm = cold = 10 / 4 = 2.5 s */
        assert_near(o.epoch_warm_s, 2.5);
        assert_string_equal(gantry_plan_limit_name(o.bottleneck), "leaf uplinks");
}

/* docs/operations.md's ImageNet promotion: 150 GB from an HDD cluster into NVMe. */
static void test_promotion_cap_binds(void **state)
{
        struct gantry_plan_promotion_in in = { .dataset_gb = 150, .source_read_gbytes = 12,
                                               .dest_write_gbytes = 40, .read_cap_mbps = 2000,
                                               .link_gbps = 100, .promotions = 1 };
        struct gantry_plan_promotion_out o;

        (void)state;
        gantry_plan_promotion(&in, &o);
        /* limits: 12, 40, 2000 MB/s = 2 GB/s, 100 Gbit/s / 8 = 12.5 GB/s */
        assert_near(o.limit_gbytes[GANTRY_PLAN_COPY_CAP], 2);
        assert_near(o.limit_gbytes[GANTRY_PLAN_COPY_LINK], 12.5);
        assert_true(isinf(o.limit_gbytes[GANTRY_PLAN_COPY_COPIER]));
        assert_int_equal(o.bottleneck, GANTRY_PLAN_COPY_CAP);
        assert_near(o.rate_gbytes, 2);
        /* 150 / 2 = 75 s; without the cap the source's 12 GB/s: 12.5 s */
        assert_near(o.seconds, 75);
        assert_near(o.uncapped_seconds, 12.5);
        assert_string_equal(gantry_plan_copy_limit_name(o.bottleneck), "copy.readMBps cap");

        /* four at once share the cap: 0.5 GB/s each, 300 s */
        in.promotions = 4;
        gantry_plan_promotion(&in, &o);
        assert_near(o.rate_gbytes, 0.5);
        assert_near(o.seconds, 300);
}

/* No cap, a slow destination, then one copier's own pace below it. */
static void test_promotion_destination_then_copier_bind(void **state)
{
        struct gantry_plan_promotion_in in = { .dataset_gb = 20000, .source_read_gbytes = 30,
                                               .dest_write_gbytes = 5, .promotions = 2 };
        struct gantry_plan_promotion_out o;

        (void)state;
        gantry_plan_promotion(&in, &o);
        /* two copies share 5 GB/s of writes: 2.5 each; 20 TB / 2.5 = 8000 s */
        assert_int_equal(o.bottleneck, GANTRY_PLAN_COPY_DESTINATION);
        assert_near(o.rate_gbytes, 2.5);
        assert_near(o.seconds, 8000);
        assert_near(o.uncapped_seconds, o.seconds);
        assert_true(isinf(o.limit_gbytes[GANTRY_PLAN_COPY_CAP]));
        /* a copier measured at 1.6 GB/s is not shared: it binds first */
        in.copier_gbytes = 1.6;
        gantry_plan_promotion(&in, &o);
        assert_int_equal(o.bottleneck, GANTRY_PLAN_COPY_COPIER);
        assert_near(o.seconds, 12500);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_example1_reads_storage_bound),
                cmocka_unit_test(test_example2_reads_cached_uplink_bound),
                cmocka_unit_test(test_example3_capacity),
                cmocka_unit_test(test_example4_checkpoint),
                cmocka_unit_test(test_checkpoint_drain_fits),
                cmocka_unit_test(test_checkpoint_drain_falls_behind),
                cmocka_unit_test(test_checkpoint_fabric_limited_and_window_over_interval),
                cmocka_unit_test(test_single_storage_node_cannot_rebuild),
                cmocka_unit_test(test_promotion_cap_binds),
                cmocka_unit_test(test_promotion_destination_then_copier_bind),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
