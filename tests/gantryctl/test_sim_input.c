/*
 * Unit tests of the simulator's cluster and trace files
 * (gantryctl/sim_input.c): the compact cluster expands as documented, jobs
 * are ordered by arrival, and every bad field is named.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "sim_model.h"

static const char *cluster_json =
        "{ \"gpuLeaves\": 2, \"nodesPerLeaf\": 3, \"nodeNicGbps\": 100, \"spineOversubscription\": 3,"
        "  \"storageLeaves\": [ { \"name\": \"sleaf\", \"uplinkGbps\": 400 } ],"
        "  \"backends\": [ { \"name\": \"ceph-a\", \"kind\": \"ceph\", \"gbps\": 200,"
        "                    \"leaves\": [\"sleaf\", \"leaf-01\"] },"
        "                  { \"name\": \"tgt\", \"kind\": \"nvmeof\", \"gbps\": 50, \"leaves\": [\"leaf-00\"] } ] }";

static void test_cluster_expands(void **state)
{
        struct gantry_sim_cluster *c;
        struct gantry_error err = { 0 };

        (void)state;
        assert_int_equal(gantry_sim_cluster_parse(cluster_json, &c, &err), 0);
        assert_int_equal(c->n_nodes, 6);
        assert_int_equal(c->total_gpus, 48); /* gpusPerNode defaults to 8 */
        assert_int_equal(c->n_leaves, 3);
        assert_string_equal(c->leaves[1].name, "leaf-01");
        assert_string_equal(c->nodes[4].name, "gpu-004");
        assert_int_equal(c->nodes[4].leaf, 1);
        /* 3 nodes x 100 Gbps / 3 = 100 Gbps of uplink */
        assert_true(c->leaves[0].uplink_gbps == 100);
        assert_true(c->leaves[2].uplink_gbps == 400);
        assert_int_equal(c->backends[0].n_leaves, 2);
        assert_int_equal(c->backends[0].leaves[0], 2);
        assert_int_equal(c->backends[1].kind, GANTRY_SIM_NVMEOF);
        gantry_sim_cluster_free(c);
}

static void expect_cluster_error(const char *json, const char *msg)
{
        struct gantry_sim_cluster *c = NULL;
        struct gantry_error err = { 0 };

        assert_int_equal(gantry_sim_cluster_parse(json, &c, &err), -EINVAL);
        if (!strstr(err.msg, msg))
                fail_msg("error '%s' does not contain '%s'", err.msg, msg);
        assert_null(c);
}

static void test_cluster_errors(void **state)
{
        (void)state;
        expect_cluster_error("{\"gpuLeaves\": 2}", "cluster.nodesPerLeaf: required");
        expect_cluster_error("{\"gpuLeaves\": 2, \"nodesPerLeaf\": 1, \"nodeNicGbps\": 0}",
                             "cluster.nodeNicGbps: must be a number > 0");
        expect_cluster_error("{\"gpuLeaves\": 2, \"nodesPerLeaf\": 1, \"nodeNicGbps\": 1, \"backend\": []}",
                             "cluster.backend: unknown field");
        expect_cluster_error("{\"gpuLeaves\": 2, \"nodesPerLeaf\": 1, \"nodeNicGbps\": 1, \"backends\": []}",
                             "cluster.backends: must be an array of 1 to");
        expect_cluster_error("{\"gpuLeaves\": 1, \"nodesPerLeaf\": 1, \"nodeNicGbps\": 1, \"backends\": "
                             "[{\"name\": \"b\", \"kind\": \"s3\", \"gbps\": 1, \"leaves\": [\"leaf-00\"]}]}",
                             "cluster.backends[0].kind: must be \"ceph\" or \"nvmeof\"");
        expect_cluster_error("{\"gpuLeaves\": 1, \"nodesPerLeaf\": 1, \"nodeNicGbps\": 1, \"backends\": "
                             "[{\"name\": \"b\", \"kind\": \"ceph\", \"gbps\": 1, \"leaves\": [\"leaf-07\"]}]}",
                             "cluster.backends[0].leaves[0]: not a leaf of the cluster");
        expect_cluster_error("{\"gpuLeaves\": 1, \"nodesPerLeaf\": 1, \"nodeNicGbps\": 1, \"backends\": "
                             "[{\"name\": \"b\", \"kind\": \"ceph\", \"gbps\": 1, \"leaves\": [\"leaf-00\"]},"
                             " {\"name\": \"b\", \"kind\": \"ceph\", \"gbps\": 1, \"leaves\": [\"leaf-00\"]}]}",
                             "cluster.backends[1].name: 'b' is not unique");
        expect_cluster_error("{\"gpuLeaves\": 1, \"nodesPerLeaf\": 1.5}", "cluster.nodesPerLeaf: must be a whole");
        expect_cluster_error("{", "cluster: line 1");
}

static void expect_trace_error(const char *json, const char *msg)
{
        struct gantry_sim_cluster *c;
        struct gantry_sim_trace *t = NULL;
        struct gantry_error err = { 0 };

        assert_int_equal(gantry_sim_cluster_parse(cluster_json, &c, &err), 0);
        assert_int_equal(gantry_sim_trace_parse(json, c, &t, &err), -EINVAL);
        if (!strstr(err.msg, msg))
                fail_msg("error '%s' does not contain '%s'", err.msg, msg);
        assert_null(t);
        gantry_sim_cluster_free(c);
}

#define JOB(extra) \
        "{\"jobs\": [{\"name\": \"j\", \"arrivalSeconds\": 0, \"gpus\": 16, \"ingestMBpsPerGpu\": 10," \
        " \"dataset\": \"ceph-a\", \"stepSeconds\": 1, \"steps\": 5" extra "}]}"

static void test_trace_errors(void **state)
{
        (void)state;
        expect_trace_error("{\"jobs\": []}", "trace.jobs: must be an array of 1 to");
        expect_trace_error(JOB(", \"gpu\": 1"), "trace.jobs[0].gpu: unknown field");
        expect_trace_error(JOB(", \"gpusPerPod\": 6"), "trace.jobs[0].gpus: 16 is not a multiple of gpusPerPod 6");
        expect_trace_error(JOB(", \"gpusPerPod\": 16"), "trace.jobs[0].gpusPerPod: must be a number >= 1 and <= 8");
        expect_trace_error("{\"jobs\": [{\"name\": \"j\", \"arrivalSeconds\": 0, \"gpus\": 64,"
                           " \"ingestMBpsPerGpu\": 1, \"dataset\": \"ceph-a\", \"stepSeconds\": 1, \"steps\": 1}]}",
                           "trace.jobs[0].gpus: must be a number >= 1 and <= 48");
        expect_trace_error("{\"jobs\": [{\"name\": \"j\", \"arrivalSeconds\": 0, \"gpus\": 8,"
                           " \"ingestMBpsPerGpu\": 1, \"dataset\": \"tgt\", \"stepSeconds\": 1, \"steps\": 1}]}",
                           "trace.jobs[0].dataset: 'tgt' is not a ceph backend");
        expect_trace_error(JOB(", \"checkpointGB\": 5, \"checkpointEverySteps\": 2"),
                           "trace.jobs[0].checkpointTarget: must be a string");
        expect_trace_error(JOB(", \"checkpointGB\": 5, \"checkpointEverySteps\": 2, \"checkpointTarget\": \"ceph-a\""),
                           "trace.jobs[0].checkpointTarget: 'ceph-a' is not an nvmeof backend");
        expect_trace_error(JOB(", \"checkpointTarget\": \"tgt\""), "trace.jobs[0].checkpointGB: required with");
        expect_trace_error(JOB(", \"stepSeconds\": 0"), "duplicate");
        /* 5e8 steps, a checkpoint every step: refused before it can run for ever */
        expect_trace_error("{\"jobs\": [{\"name\": \"j\", \"arrivalSeconds\": 0, \"gpus\": 8,"
                           " \"ingestMBpsPerGpu\": 1, \"dataset\": \"ceph-a\", \"stepSeconds\": 1,"
                           " \"steps\": 5e8, \"checkpointGB\": 1, \"checkpointEverySteps\": 1,"
                           " \"checkpointTarget\": \"tgt\"}]}",
                           "trace.jobs[0].checkpointEverySteps: the trace would take more than");
}

static void test_trace_sorted_by_arrival_stably(void **state)
{
        struct gantry_sim_cluster *c;
        struct gantry_sim_trace *t;
        struct gantry_error err = { 0 };
        const char *json =
                "{\"jobs\": ["
                " {\"name\": \"late\", \"arrivalSeconds\": 9, \"gpus\": 8, \"ingestMBpsPerGpu\": 1,"
                "  \"dataset\": \"ceph-a\", \"stepSeconds\": 1, \"steps\": 1},"
                " {\"name\": \"first\", \"arrivalSeconds\": 1, \"gpus\": 4, \"ingestMBpsPerGpu\": 1000,"
                "  \"dataset\": \"ceph-a\", \"stepSeconds\": 1, \"steps\": 1},"
                " {\"name\": \"second\", \"arrivalSeconds\": 1, \"gpus\": 8, \"ingestMBpsPerGpu\": 1,"
                "  \"dataset\": \"ceph-a\", \"stepSeconds\": 1, \"steps\": 1}]}";

        (void)state;
        assert_int_equal(gantry_sim_cluster_parse(cluster_json, &c, &err), 0);
        assert_int_equal(gantry_sim_trace_parse(json, c, &t, &err), 0);
        assert_string_equal(t->jobs[0].name, "first");
        assert_string_equal(t->jobs[1].name, "second");
        assert_string_equal(t->jobs[2].name, "late");
        /* gpusPerPod defaults to min(gpus, gpusPerNode) */
        assert_int_equal(t->jobs[0].gpus_per_pod, 4);
        /* 4 GPUs x 1000 MB/s x 8 / 1000 = 32 Gbps */
        assert_true(gantry_sim_job_demand_gbps(&t->jobs[0]) == 32);
        assert_int_equal(t->jobs[0].checkpoint_target, -1);
        gantry_sim_trace_free(t);
        gantry_sim_cluster_free(c);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_cluster_expands),
                cmocka_unit_test(test_cluster_errors),
                cmocka_unit_test(test_trace_errors),
                cmocka_unit_test(test_trace_sorted_by_arrival_stably),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
