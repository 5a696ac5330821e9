/*
 * Unit tests of the placement library's scores (scheduler-ext/placement/placement.c):
 * closeness to backends, headroom, gang locality, each checked against a
 * hand calculation of the weighted mean (weights 5 locality, 3 headroom,
 * 2 closeness; locality only for pods of a job).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "placement.h"

/* leaf-1 (spine-1, 100 up): gpu-1, gpu-2, ceph-a; leaf-2 (spine-1, 30 up): gpu-3;
 * leaf-3 (spine-2, 2:1 of one 100 Gbps node = 50 up): gpu-4 */
static struct gantry_cluster *small_cluster(void)
{
        struct gantry_cluster *c;

        assert_int_equal(gantry_cluster_new(&c), 0);
        assert_int_equal(gantry_cluster_set_leaf(c, &(struct gantry_leaf_spec){
                .name = "leaf-1", .spine = "spine-1", .uplink_gbps = 100 }, NULL), 0);
        assert_int_equal(gantry_cluster_set_leaf(c, &(struct gantry_leaf_spec){
                .name = "leaf-2", .spine = "spine-1", .uplink_gbps = 30 }, NULL), 0);
        assert_int_equal(gantry_cluster_set_leaf(c, &(struct gantry_leaf_spec){
                .name = "leaf-3", .spine = "spine-2", .oversubscription = 2 }, NULL), 0);
        const char *names[] = { "gpu-1", "gpu-2", "gpu-3", "gpu-4" };
        const char *leaves[] = { "leaf-1", "leaf-1", "leaf-2", "leaf-3" };
        for (int i = 0; i < 4; i++)
                assert_int_equal(gantry_cluster_set_node(c, &(struct gantry_node_spec){
                        .name = names[i], .leaf = leaves[i], .nic_gbps = 100 }, NULL), 0);
        assert_int_equal(gantry_cluster_set_backend(c, &(struct gantry_backend_spec){
                .name = "ceph-a", .kind = GANTRY_BACKEND_CEPH,
                .leaves = (const char *[]){ "leaf-1" }, .n_leaves = 1 }, NULL), 0);
        return c;
}

static const char *all[] = { "gpu-1", "gpu-2", "gpu-3", "gpu-4", "gpu-9" };

static void test_closeness_and_headroom(void **state)
{
        struct gantry_cluster *c = small_cluster();
        struct gantry_pod_demand d = { .uid = "p", .n_flows = 1,
                                       .flows = { { .backend = "ceph-a", .gbps = 10 } } };
        int s[5];

        (void)state;
        assert_int_equal(gantry_cluster_prioritize(c, &d, all, 5, s, NULL), 0);
        /* gpu-1: headroom min(NIC 90/100, uplink 100/100)=.9, close 1: (2.7+2)/5 */
        assert_int_equal(s[0], 94);
        assert_int_equal(s[1], 94);
        /* gpu-3: headroom min(.9, 20/30), same spine .5: (2+1)/5 */
        assert_int_equal(s[2], 60);
        /* gpu-4: headroom min(.9, 40/50)=.8, other spine 0: 2.4/5 */
        assert_int_equal(s[3], 48);
        assert_int_equal(s[4], 0);
        gantry_cluster_free(c);
}

static void test_gang_locality(void **state)
{
        struct gantry_cluster *c = small_cluster();
        struct gantry_pod_demand first = { .uid = "w0", .job = "ns/j" };
        struct gantry_pod_demand next = { .uid = "w1", .job = "ns/j" };
        struct gantry_pod_demand stranger = { .uid = "x", .job = "ns/other" };
        int s[5];

        (void)state;
        assert_int_equal(gantry_cluster_record(c, &first, "gpu-1", NULL), 0);
        assert_int_equal(gantry_cluster_prioritize(c, &next, all, 5, s, NULL), 0);
        /* no flows: headroom 1, closeness 1; locality same leaf 1, spine .5, else 0 */
        assert_int_equal(s[1], 100);
        assert_int_equal(s[2], 75);
        assert_int_equal(s[3], 50);
        /* the job's own entry does not count for itself */
        assert_int_equal(gantry_cluster_prioritize(c, &first, all, 5, s, NULL), 0);
        assert_int_equal(s[0], 100); /* first pod: leaf-1 uplink fully free */
        /* another job's pods do not pull */
        assert_int_equal(gantry_cluster_prioritize(c, &stranger, all, 5, s, NULL), 0);
        assert_int_equal(s[0], s[3]);
        gantry_cluster_free(c);
}

static void test_first_pod_prefers_free_leaf(void **state)
{
        struct gantry_cluster *c = small_cluster();
        struct gantry_pod_demand busy = { .uid = "b", .n_flows = 1, .flows = { { .gbps = 50 } } };
        struct gantry_pod_demand first = { .uid = "w0", .job = "ns/j" };
        int s[5];

        (void)state;
        /* 50 Gbps off-fabric traffic on gpu-2 takes half of leaf-1's uplink */
        assert_int_equal(gantry_cluster_record(c, &busy, "gpu-2", NULL), 0);
        assert_int_equal(gantry_cluster_prioritize(c, &first, all, 5, s, NULL), 0);
        /* gpu-1: locality .5, headroom min(1, .5): (2.5+1.5+2)/10 */
        assert_int_equal(s[0], 60);
        /* gpu-3: leaf-2 untouched: (5+3+2)/10 */
        assert_int_equal(s[2], 100);
        gantry_cluster_free(c);
}

static void test_weights(void **state)
{
        struct gantry_cluster *c = small_cluster();
        struct gantry_pod_demand d = { .uid = "p", .n_flows = 1,
                                       .flows = { { .backend = "ceph-a", .gbps = 10 } } };
        int s[5];

        (void)state;
        gantry_cluster_set_weights(c, &(struct gantry_score_weights){ .closeness = 1 });
        assert_int_equal(gantry_cluster_prioritize(c, &d, all, 5, s, NULL), 0);
        assert_int_equal(s[0], 100);
        assert_int_equal(s[2], 50);
        assert_int_equal(s[3], 0);
        gantry_cluster_free(c);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_closeness_and_headroom),
                cmocka_unit_test(test_gang_locality),
                cmocka_unit_test(test_first_pod_prefers_free_leaf),
                cmocka_unit_test(test_weights),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
