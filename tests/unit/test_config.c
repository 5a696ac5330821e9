/*
 * Unit tests of the driver config loader (common/config.c): a full config
 * round-trips, and every kind of bad input names the file and the field.
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

#include "config.h"

static const char *full =
        "{ \"logLevel\": \"debug\","
        "  \"clusters\": [ { \"clusterID\": \"nvme\", \"monitors\": [\"127.0.0.1:3300\"],"
        "                  \"tier\": \"performance\", \"rbdTimeoutSeconds\": 5,"
        "                  \"location\": { \"leaves\": [\"leaf-1\", \"leaf-2\"], \"readGBps\": 40 } },"
        "                { \"clusterID\": \"cap\", \"monitors\": [\"127.0.0.1:3301\"],"
        "                  \"copy\": { \"readMBps\": 1500, \"objectsInFlight\": 32, \"waitSeconds\": 30,"
        "                            \"mode\": \"rbd-mirror\", \"mirrorTo\": [\"nvme\"] } } ],"
        "  \"targets\": [ { \"id\": \"tgt-a\", \"url\": \"https://10.0.1.5:8009/\","
        "                 \"addresses\": [ { \"transport\": \"tcp\", \"traddr\": \"10.0.1.5\","
        "                                  \"trsvcid\": \"4420\" } ],"
        "                 \"leaf\": \"leaf-1\", \"capacityBytes\": 1099511627776 } ],"
        "  \"node\": { \"topology\": { \"network.topology.nvidia.com/leaf\": \"leaf-1\" },"
        "            \"maxVolumesPerNode\": 64, \"readFromReplica\": \"localize\" } }";

static void test_full_config(void **state)
{
        struct gantry_config *c = NULL;
        struct gantry_error err = { 0 };
        const struct gantry_cluster_config *cl;

        (void)state;
        assert_int_equal(gantry_config_parse(full, "t.json", &c, &err), 0);
        assert_int_equal(c->log_level, GANTRY_LOG_DEBUG);
        assert_int_equal(c->n_clusters, 2);
        cl = gantry_config_find_cluster(c, "nvme");
        assert_non_null(cl);
        assert_string_equal(cl->monitors[0], "127.0.0.1:3300");
        assert_string_equal(cl->tier, "performance");
        assert_int_equal(cl->rbd_timeout_seconds, 5);
        assert_int_equal(cl->n_leaves, 2);
        assert_string_equal(cl->leaves[1], "leaf-2");
        assert_true(cl->read_gbps == 40);
        assert_int_equal(gantry_config_find_cluster(c, "cap")->rbd_timeout_seconds, 10);
        assert_true(gantry_config_find_cluster(c, "cap")->copy_read_bytes_per_s == 1500000000ull);
        assert_int_equal(gantry_config_find_cluster(c, "cap")->copy_objects_in_flight, 32);
        assert_int_equal(gantry_config_find_cluster(c, "cap")->copy_wait_seconds, 30);
        assert_true(cl->copy_read_bytes_per_s == 0); /* no cap unless configured */
        assert_int_equal(cl->copy_objects_in_flight, 16);
        assert_int_equal(cl->copy_wait_seconds, 0);
        /* rbd-mirror serves the pair cap -> nvme only */
        assert_true(gantry_config_rbd_mirror(gantry_config_find_cluster(c, "cap"), "nvme"));
        assert_false(gantry_config_rbd_mirror(gantry_config_find_cluster(c, "cap"), "other"));
        assert_false(gantry_config_rbd_mirror(cl, "cap")); /* "copy" unless configured */
        assert_null(gantry_config_find_cluster(c, "nope"));
        assert_int_equal(c->n_targets, 1);
        assert_string_equal(c->targets[0].addresses[0].trsvcid, "4420");
        assert_true(c->targets[0].capacity_bytes == 1099511627776ULL);
        assert_non_null(gantry_config_find_target(c, "tgt-a"));
        assert_int_equal(c->node.n_topology, 1);
        assert_string_equal(c->node.topology[0].value, "leaf-1");
        assert_int_equal(c->node.max_volumes_per_node, 64);
        assert_int_equal(c->node.max_parallel_maps, 8);
        assert_int_equal(c->node.bandwidth_window_seconds, 600);
        assert_int_equal(c->node.bandwidth_sample_seconds, 10);
        assert_false(cl->evict.enabled); /* no eviction unless configured */
        gantry_config_free(c);
}

/* The bandwidth sampler's window and pace, when given. */
static void test_bandwidth_window(void **state)
{
        struct gantry_config *c = NULL;
        struct gantry_error err = { 0 };

        (void)state;
        assert_int_equal(gantry_config_parse("{\"node\": {\"bandwidthWindowSeconds\": 120, "
                                             "\"bandwidthSampleSeconds\": 5}}",
                                             "t.json", &c, &err),
                         0);
        assert_int_equal(c->node.bandwidth_window_seconds, 120);
        assert_int_equal(c->node.bandwidth_sample_seconds, 5);
        gantry_config_free(c);
}

/* Each bad config must fail with EINVAL and a message containing @needle. */
static void expect_error(const char *json, const char *needle)
{
        struct gantry_config *c = NULL;
        struct gantry_error err = { 0 };

        assert_int_equal(gantry_config_parse(json, "bad.json", &c, &err), -EINVAL);
        assert_null(c);
        if (!strstr(err.msg, needle) || strncmp(err.msg, "bad.json", 8) != 0)
                fail_msg("error \"%s\" does not name \"%s\" and the file", err.msg, needle);
}

static void test_bad_configs(void **state)
{
        (void)state;
        expect_error("{", "line 1");
        expect_error("[]", "must be a JSON object");
        expect_error("{\"logLevel\": \"loud\"}", "logLevel");
        expect_error("{\"cluster\": []}", "cluster: unknown field");
        expect_error("{\"clusters\": [{\"monitors\": [\"a\"]}]}", "clusters[0].clusterID: required");
        expect_error("{\"clusters\": [{\"clusterID\": \"a b\", \"monitors\": [\"a\"]}]}",
                     "clusters[0].clusterID");
        expect_error("{\"clusters\": [{\"clusterID\": \"a\", \"monitors\": []}]}",
                     "clusters[0].monitors");
        expect_error("{\"clusters\": [{\"clusterID\": \"a\", \"monitors\": [\"m\"], \"monitor\": 1}]}",
                     "clusters[0].monitor: unknown field");
        expect_error("{\"clusters\": [{\"clusterID\": \"a\", \"monitors\": [\"m\"]},"
                     "{\"clusterID\": \"a\", \"monitors\": [\"m\"]}]}",
                     "clusters[1].clusterID: duplicate");
        expect_error("{\"clusters\": [{\"clusterID\": \"a\", \"monitors\": [\"m\"],"
                     " \"location\": {\"readGBps\": -1}}]}",
                     "clusters[0].location.readGBps");
        expect_error("{\"clusters\": [{\"clusterID\": \"a\", \"monitors\": [\"m\"],"
                     " \"copy\": {\"objectsInFlight\": 0}}]}",
                     "clusters[0].copy.objectsInFlight");
        expect_error("{\"clusters\": [{\"clusterID\": \"a\", \"monitors\": [\"m\"],"
                     " \"copy\": {\"waitSeconds\": -1}}]}",
                     "clusters[0].copy.waitSeconds: must be a number from 0 to 3600");
        expect_error("{\"clusters\": [{\"clusterID\": \"a\", \"monitors\": [\"m\"],"
                     " \"copy\": {\"readMbps\": 10}}]}",
                     "clusters[0].copy.readMbps: unknown field");
        expect_error("{\"clusters\": [{\"clusterID\": \"a\", \"monitors\": [\"m\"],"
                     " \"copy\": {\"mode\": \"mirror\"}}]}",
                     "clusters[0].copy.mode: must be \"copy\" or \"rbd-mirror\"");
        expect_error("{\"clusters\": [{\"clusterID\": \"a\", \"monitors\": [\"m\"],"
                     " \"copy\": {\"mode\": \"rbd-mirror\"}}]}",
                     "clusters[0].copy.mirrorTo: required");
        expect_error("{\"clusters\": [{\"clusterID\": \"a\", \"monitors\": [\"m\"],"
                     " \"copy\": {\"mirrorTo\": [\"b\"]}}]}",
                     "clusters[0].copy.mirrorTo: only with mode \"rbd-mirror\"");
        expect_error("{\"clusters\": [{\"clusterID\": \"a\", \"monitors\": [\"m\"],"
                     " \"copy\": {\"mode\": \"rbd-mirror\", \"mirrorTo\": [\"b\"]}}]}",
                     "clusters[0].copy.mirrorTo[0]: b is not another configured clusterID");
        expect_error("{\"targets\": [{\"id\": \"t\", \"url\": \"ftp://x\", \"addresses\": []}]}",
                     "targets[0].url");
        expect_error("{\"targets\": [{\"id\": \"t\", \"url\": \"http://x\", \"addresses\": "
                     "[{\"transport\": \"fc\", \"traddr\": \"a\", \"trsvcid\": \"1\"}]}]}",
                     "targets[0].addresses[0].transport");
        expect_error("{\"node\": {\"readFromReplica\": \"nearest\"}}", "node.readFromReplica");
        expect_error("{\"node\": {\"bandwidthWindowSeconds\": 5}}", "node.bandwidthWindowSeconds");
        expect_error("{\"node\": {\"bandwidthSampleSeconds\": 0}}", "node.bandwidthSampleSeconds");
        expect_error("{\"node\": {\"bandwidthWindowSeconds\": 60, \"bandwidthSampleSeconds\": 31}}",
                     "node.bandwidthSampleSeconds: must be at most half");
        expect_error("{\"node\": {\"topology\": {\"k\": 1}}}", "node.topology.k");
        expect_error("{\"logLevel\": \"info\", \"logLevel\": \"debug\"}", "duplicate");
}

/* clusters[].evict: given values, defaults, and the errors naming the key. */
static void test_evict_policy(void **state)
{
        static const char *head = "{\"clusters\": [{\"clusterID\": \"p\", \"monitors\": [\"m\"], "
                                  "\"userID\": \"u\", \"keyFile\": \"/k\", \"evict\": ";
        const struct gantry_evict_policy *e;
        struct gantry_config *c = NULL;
        struct gantry_error err = { 0 };
        char json[512];

        (void)state;
        snprintf(json, sizeof(json), "%s{\"highWatermark\": 0.9, \"lowWatermark\": 0.5, "
                 "\"idleSeconds\": 600, \"intervalSeconds\": 5, \"capacityBytes\": 1e12}}]}", head);
        assert_int_equal(gantry_config_parse(json, "t.json", &c, &err), 0);
        e = &c->clusters[0].evict;
        assert_true(e->enabled);
        assert_true(e->high_watermark == 0.9 && e->low_watermark == 0.5);
        assert_int_equal(e->idle_seconds, 600);
        assert_int_equal(e->interval_seconds, 5);
        assert_true(e->capacity_bytes == 1000000000000ull);
        gantry_config_free(c);
        snprintf(json, sizeof(json), "%s{}}]}", head);
        assert_int_equal(gantry_config_parse(json, "t.json", &c, &err), 0);
        e = &c->clusters[0].evict;
        assert_true(e->enabled && e->high_watermark == 0.85 && e->low_watermark == 0.70);
        assert_int_equal(e->idle_seconds, 3600);
        assert_int_equal(e->interval_seconds, 60);
        assert_true(e->capacity_bytes == 0);
        gantry_config_free(c);
        snprintf(json, sizeof(json), "%s{\"highWatermark\": 0.5}}]}", head);
        assert_int_equal(gantry_config_parse(json, "t.json", &c, &err), 0);
        assert_true(c->clusters[0].evict.low_watermark == 0.5);
        gantry_config_free(c);
        snprintf(json, sizeof(json), "%s{\"highWatermark\": 0.5, \"lowWatermark\": 0.6}}]}", head);
        expect_error(json, "clusters[0].evict.lowWatermark: must not exceed highWatermark");
        snprintf(json, sizeof(json), "%s{\"highWatermark\": 1.5}}]}", head);
        expect_error(json, "clusters[0].evict.highWatermark");
        snprintf(json, sizeof(json), "%s{\"intervalSeconds\": 0}}]}", head);
        expect_error(json, "clusters[0].evict.intervalSeconds");
        snprintf(json, sizeof(json), "%s{\"idle\": 1}}]}", head);
        expect_error(json, "clusters[0].evict.idle: unknown field");
        snprintf(json, sizeof(json), "%s[]}]}", head);
        expect_error(json, "clusters[0].evict: must be an object");
        expect_error("{\"clusters\": [{\"clusterID\": \"p\", \"monitors\": [\"m\"], "
                     "\"evict\": {}}]}", "clusters[0].evict: needs the cluster's userID");
}

static void test_load_file(void **state)
{
        char path[] = "/tmp/gantry-test-config-XXXXXX";
        struct gantry_config *c = NULL;
        struct gantry_error err = { 0 };
        int fd = mkstemp(path);
        FILE *f;

        (void)state;
        assert_true(fd >= 0);
        f = fdopen(fd, "w");
        fputs(full, f);
        fclose(f);
        assert_int_equal(gantry_config_load(path, &c, &err), 0);
        assert_string_equal(c->path, path);
        gantry_config_free(c);
        unlink(path);
        assert_int_equal(gantry_config_load(path, &c, &err), -ENOENT);
        assert_non_null(strstr(err.msg, path));
        gantry_config_free(NULL);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_full_config),
                cmocka_unit_test(test_bandwidth_window),
                cmocka_unit_test(test_bad_configs),
                cmocka_unit_test(test_evict_policy),
                cmocka_unit_test(test_load_file),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
