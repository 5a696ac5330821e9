/*
 * Unit tests of `gantryctl plan`'s input parsing (gantryctl/plan_input.c):
 * JSON and flags fill the same fields, flags override the file, defaults
 * apply, and every kind of bad input is refused with the field named.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "plan_input.h"

static const char *full_json =
        "{ \"cluster\": { \"gpus\": 1024, \"nodeNicGbps\": 200, \"oversubscription\": 2 },"
        "  \"reads\": { \"ingestMBps\": 400, \"datasetGB\": 100000, \"nodeCacheGB\": 1000,"
        "               \"storageNodes\": 8, \"storageReadGBps\": 40, \"storageNicGbps\": 400 },"
        "  \"capacity\": { \"rawTB\": 1000, \"ecK\": 4, \"ecM\": 2 },"
        "  \"checkpoint\": { \"paramsBillion\": 70, \"intervalMinutes\": 30,"
        "                    \"tiers\": [ { \"name\": \"nvmeof\", \"writeGBps\": 200 } ] } }";

static void test_json_full_and_defaults(void **state)
{
        struct gantry_plan_input in;
        struct gantry_error err = { 0 };

        (void)state;
        assert_int_equal(gantry_plan_input_parse_json(full_json, &in, &err), 0);
        assert_true(in.has_reads && in.has_capacity && in.has_checkpoint);
        assert_true(in.cluster.gpus == 1024);
        assert_true(in.cluster.gpus_per_node == 8);      /* default */
        assert_true(in.reads.rebuild_share == 0.25);     /* default */
        assert_true(in.capacity.replicas == 3);          /* default */
        assert_true(in.capacity.fill == 0.85);           /* default */
        assert_true(in.checkpoint.bytes_per_param == 2); /* default */
        assert_true(in.checkpoint.optimizer_multiplier == 7);
        assert_int_equal(in.checkpoint.n_tiers, 1);
        assert_string_equal(in.checkpoint.tiers[0].name, "nvmeof");
}

static void test_capacity_alone_needs_no_cluster(void **state)
{
        struct gantry_plan_input in;
        struct gantry_error err = { 0 };

        (void)state;
        assert_int_equal(gantry_plan_input_parse_json("{\"capacity\": {\"rawTB\": 10}}", &in, &err), 0);
        assert_false(in.has_reads);
        assert_true(in.has_capacity);
        assert_true(in.capacity.ec_k == 4 && in.capacity.ec_m == 2);
}

static void expect_json_error(const char *json, const char *msg)
{
        struct gantry_plan_input in;
        struct gantry_error err = { 0 };

        assert_int_equal(gantry_plan_input_parse_json(json, &in, &err), -EINVAL);
        if (!strstr(err.msg, msg))
                fail_msg("error '%s' does not contain '%s'", err.msg, msg);
}

static void test_json_errors_name_the_field(void **state)
{
        (void)state;
        expect_json_error("{\"cluster\": {\"gpus\": 8}, \"reads\": {\"ingestMBps\": 1}}",
                          "cluster.nodeNicGbps (--node-nic-gbps): required");
        expect_json_error("{\"cluster\": {\"gpus\": -1}}", "cluster.gpus: must be a number > 0");
        expect_json_error("{\"cluster\": {\"gpus\": 7.5}}", "cluster.gpus: must be a whole number");
        expect_json_error("{\"cluster\": {\"gpus\": \"8\"}}", "cluster.gpus: must be a number");
        expect_json_error("{\"reads\": {\"datasetGb\": 1}}", "reads.datasetGb: unknown field");
        expect_json_error("{\"read\": {}}", "read: unknown section");
        expect_json_error("{\"capacity\": {\"rawTB\": 1, \"fill\": 1.5}}", "capacity.fill: must be");
        expect_json_error("{\"cluster\": {\"oversubscription\": 0.5}}", "cluster.oversubscription");
        expect_json_error("{}", "nothing to plan");
        expect_json_error("[1]", "top level: must be an object");
        expect_json_error("{\"capacity\": ", "line 1");
        expect_json_error("{\"capacity\": {\"rawTB\": 1}, \"capacity\": {}}", "duplicate");
}

static void test_either_or_and_cross_field(void **state)
{
        (void)state;
        expect_json_error("{\"cluster\": {\"gpus\": 8, \"nodeNicGbps\": 100},"
                          " \"reads\": {\"datasetGB\": 1, \"storageNodes\": 2, \"storageReadGBps\": 1,"
                          " \"storageNicGbps\": 1}}",
                          "reads.ingestMBps (--ingest-mbps): required (or samplesPerSecond");
        expect_json_error("{\"cluster\": {\"gpus\": 8, \"nodeNicGbps\": 100},"
                          " \"reads\": {\"ingestMBps\": 5, \"samplesPerSecond\": 9, \"datasetGB\": 1,"
                          " \"storageNodes\": 2, \"storageReadGBps\": 1, \"storageNicGbps\": 1}}",
                          "not both");
        expect_json_error("{\"cluster\": {\"gpus\": 8, \"nodeNicGbps\": 100},"
                          " \"reads\": {\"samplesPerSecond\": 9, \"datasetGB\": 1,"
                          " \"storageNodes\": 2, \"storageReadGBps\": 1, \"storageNicGbps\": 1}}",
                          "reads.bytesPerSample (--bytes-per-sample): required with");
        expect_json_error("{\"cluster\": {\"gpus\": 8, \"nodeNicGbps\": 100},"
                          " \"reads\": {\"ingestMBps\": 5, \"datasetGB\": 1, \"storageNodes\": 4,"
                          " \"storageReadGBps\": 1, \"storageNicGbps\": 1},"
                          " \"capacity\": {\"rawTB\": 1, \"ecK\": 4, \"ecM\": 2}}",
                          "capacity.ecK + capacity.ecM: 6 chunks need 6 storage nodes");
        expect_json_error("{\"cluster\": {\"gpus\": 8, \"nodeNicGbps\": 100},"
                          " \"checkpoint\": {\"intervalMinutes\": 5, \"sizeGB\": 3}}",
                          "checkpoint.tiers (--tier NAME=GBPS): at least one");
        expect_json_error("{\"cluster\": {\"gpus\": 8, \"nodeNicGbps\": 100},"
                          " \"checkpoint\": {\"intervalMinutes\": 5, \"tiers\": [{\"name\": \"a\","
                          " \"writeGBps\": 1}]}}",
                          "checkpoint.sizeGB (--ckpt-size-gb): required (or paramsBillion)");
        expect_json_error("{\"checkpoint\": {\"tiers\": [{\"name\": \"a\"}]}}",
                          "checkpoint.tiers[0]: must be {");
        expect_json_error("{\"checkpoint\": {\"tiers\": [{\"name\": \"\", \"writeGBps\": 1}]}}",
                          "checkpoint.tiers[0]: name must have");
}

static int parse_argv(struct gantry_plan_input *in, struct gantry_error *err, ...)
{
        char *argv[64];
        int argc = 0;
        va_list ap;

        va_start(ap, err);
        for (char *a; (a = va_arg(ap, char *)) != NULL && argc < 64;)
                argv[argc++] = a;
        va_end(ap);
        return gantry_plan_input_parse(argc, argv, in, err);
}

static void test_flags_and_file_override(void **state)
{
        char path[] = "/tmp/gantry-planner-test-XXXXXX";
        int fd = mkstemp(path);
        struct gantry_plan_input in;
        struct gantry_error err = { 0 };

        (void)state;
        assert_true(fd >= 0);
        assert_int_equal(write(fd, full_json, strlen(full_json)), (ssize_t)strlen(full_json));
        close(fd);
        /* flags after or before --input both override the file */
        assert_int_equal(parse_argv(&in, &err, "--gpus", "512", "--input", path, "--tier", "ceph=60",
                                    "--json", "--svg", "/tmp/x.svg", NULL),
                         0);
        assert_true(in.cluster.gpus == 512);
        assert_true(in.reads.storage_nodes == 8);
        assert_int_equal(in.checkpoint.n_tiers, 1); /* flags replace the file's tiers */
        assert_string_equal(in.checkpoint.tiers[0].name, "ceph");
        assert_true(in.json);
        assert_string_equal(in.svg_path, "/tmp/x.svg");
        /* an error in the file names the file and the field */
        assert_int_equal(parse_argv(&in, &err, "--input", path, "--gpus", "x", NULL), -EINVAL);
        assert_string_equal(err.msg, "--gpus: 'x' is not a number");
        unlink(path);
        assert_true(parse_argv(&in, &err, "--input", path, NULL) < 0);
        assert_non_null(strstr(err.msg, path));
}

static void test_flag_errors(void **state)
{
        struct gantry_plan_input in;
        struct gantry_error err = { 0 };

        (void)state;
        assert_int_equal(parse_argv(&in, &err, "--raw-tb", "10", "--bogus", "1", NULL), -EINVAL);
        assert_string_equal(err.msg, "--bogus: unknown flag (see --help)");
        assert_int_equal(parse_argv(&in, &err, "--raw-tb", NULL), -EINVAL);
        assert_string_equal(err.msg, "--raw-tb: needs a value");
        assert_int_equal(parse_argv(&in, &err, "--raw-tb", "10", "--fill", "0", NULL), -EINVAL);
        assert_non_null(strstr(err.msg, "--fill: must be a number > 0"));
        assert_int_equal(parse_argv(&in, &err, "--tier", "nvme", NULL), -EINVAL);
        assert_string_equal(err.msg, "--tier: 'nvme' is not NAME=GBPS");
        assert_int_equal(parse_argv(&in, &err, "--tier", "nvme=-3", NULL), -EINVAL);
        assert_non_null(strstr(err.msg, "--tier: write GB/s"));
        assert_int_equal(parse_argv(&in, &err, "stray", NULL), -EINVAL);
        assert_string_equal(err.msg, "stray: unexpected argument");
        assert_int_equal(parse_argv(&in, &err, "--raw-tb", "10", NULL), 0);
        assert_true(in.has_capacity && !in.has_reads && !in.has_checkpoint);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_json_full_and_defaults),
                cmocka_unit_test(test_capacity_alone_needs_no_cluster),
                cmocka_unit_test(test_json_errors_name_the_field),
                cmocka_unit_test(test_either_or_and_cross_field),
                cmocka_unit_test(test_flags_and_file_override),
                cmocka_unit_test(test_flag_errors),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
