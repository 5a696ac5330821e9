/*
 * Unit tests of the gang table (scheduler-ext/placement/gang*.c): a gang
 * planned and reserved whole on one leaf, members passing only their slot,
 * bind moving the slot's charge (never counted twice), a failed bind giving
 * it back, refusal of a gang that does not fit with one reason and no
 * charge, the queue's fill-in rule, oversize gangs, a slot moved when its
 * node is not offered, expiry, and a gang left partly bound planned first.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "gang.h"

#define LEAVES 3
#define PER_LEAF 2
#define N (LEAVES * PER_LEAF)

static const char *names[N] = { "n0", "n1", "n2", "n3", "n4", "n5" };

/* 3 leaves of 2 nodes (8 GPUs, 400 Gbps NICs), 800 Gbps uplinks, one spine. */
static struct gantry_cluster *cluster(void)
{
        struct gantry_cluster *c;
        struct gantry_error err;
        char leaf[16];

        assert_int_equal(gantry_cluster_new(&c), 0);
        for (int i = 0; i < N; i++) {
                snprintf(leaf, sizeof(leaf), "leaf-%d", i / PER_LEAF);
                assert_int_equal(gantry_cluster_set_leaf(c, &(struct gantry_leaf_spec){
                        .name = leaf, .spine = "spine-0", .uplink_gbps = 800 }, &err), 0);
                assert_int_equal(gantry_cluster_set_node(c, &(struct gantry_node_spec){
                        .name = names[i], .leaf = leaf, .nic_gbps = 400, .gpus = 8 }, &err), 0);
        }
        return c;
}

static struct gantry_pod_demand member(const char *uid, const char *job, double gbps)
{
        struct gantry_pod_demand d = { .uid = uid, .name = uid, .job = job, .gpus = 1, .n_flows = 1 };

        d.flows[0].gbps = gbps;
        return d;
}

/* The one node member @uid is sent to, or -1 when refused (reason in @why). */
static int filter_one(struct gantry_gangs *g, const struct gantry_gang_spec *spec, const char *uid,
                      double gbps, const char *const *nodes, size_t n, char *why, size_t size)
{
        struct gantry_pod_demand d = member(uid, spec->key, gbps);
        struct gantry_node_verdict v[N];
        struct gantry_error err;
        int at = -1, passed = 0;

        assert_int_equal(gantry_gangs_filter(g, spec, &d, nodes, n, 0, v, &err), 0);
        for (size_t i = 0; i < n; i++)
                if (v[i].fits) {
                        at = (int)i;
                        passed++;
                }
        assert_true(passed <= 1);
        if (why && n)
                snprintf(why, size, "%s", v[n - 1].reason);
        return at;
}

static double uplink_used(struct gantry_cluster *c, const char *node)
{
        struct gantry_node_usage u;

        assert_int_equal(gantry_cluster_node_usage(c, node, &u), 0);
        return u.uplink_used_gbps;
}

static void test_planned_whole_on_one_leaf(void **state)
{
        struct gantry_cluster *c = cluster();
        struct gantry_gangs *g;
        struct gantry_gang_spec spec = { .key = "ns/a", .size = 8 };
        struct gantry_error err;
        char uid[16];
        int leaf = -1;

        (void)state;
        assert_int_equal(gantry_gangs_new(c, 60, &g), 0);
        for (int i = 0; i < 8; i++) {
                int at;

                snprintf(uid, sizeof(uid), "a%d", i);
                at = filter_one(g, &spec, uid, 100, names, N, NULL, 0);
                assert_true(at >= 0);
                if (i == 0) {
                        leaf = at / PER_LEAF;
                        /* the first member reserved all eight: 800 Gbps on its leaf */
                        assert_int_equal((int)uplink_used(c, names[at]), 800);
                }
                assert_int_equal(at / PER_LEAF, leaf);
                struct gantry_pod_demand d = member(uid, spec.key, 100);
                assert_int_equal(gantry_gangs_bind(g, &spec, &d, names[at], 0, 0, NULL, &err), 0);
                /* the slot's charge moved to the member: never counted twice */
                assert_int_equal((int)uplink_used(c, names[at]), 800);
        }
        struct gantry_gangs_stats s;
        gantry_gangs_stats(g, &s);
        assert_int_equal(s.held_slots, 0);
        assert_int_equal(s.planned, 0); /* whole: nothing reserved any more */
        gantry_gangs_free(g);
        gantry_cluster_free(c);
}

static void test_failed_bind_gives_the_place_back(void **state)
{
        struct gantry_cluster *c = cluster();
        struct gantry_gangs *g;
        struct gantry_gang_spec spec = { .key = "ns/a", .size = 2 };
        struct gantry_pod_demand d = member("a0", "ns/a", 100);
        struct gantry_gangs_stats s;
        struct gantry_error err;
        uint64_t token;
        int at;

        (void)state;
        assert_int_equal(gantry_gangs_new(c, 60, &g), 0);
        at = filter_one(g, &spec, "a0", 100, names, N, NULL, 0);
        assert_int_equal(gantry_gangs_bind(g, &spec, &d, names[at], 0, 100, &token, &err), 0);
        assert_int_equal(gantry_gangs_unbind(g, "a0", token), 0);
        gantry_gangs_stats(g, &s);
        assert_int_equal(s.held_slots, 2);
        assert_int_equal((int)uplink_used(c, names[at]), 200);
        /* and the member gets the same place again */
        assert_int_equal(filter_one(g, &spec, "a0", 100, names, N, NULL, 0), at);
        gantry_gangs_free(g);
        assert_int_equal((int)uplink_used(c, names[at]), 0); /* free gives it all back */
        gantry_cluster_free(c);
}

static void test_refused_whole_with_one_reason(void **state)
{
        struct gantry_cluster *c = cluster();
        struct gantry_gangs *g;
        struct gantry_gang_spec big = { .key = "ns/big", .size = 5 };
        struct gantry_node_verdict v[N];
        struct gantry_pod_demand d = member("b0", "ns/big", 300); /* 2 a leaf: three leaves */
        struct gantry_error err;

        (void)state;
        assert_int_equal(gantry_gangs_new(c, 60, &g), 0);
        /* a job takes a leaf and half of another: 5 x 300 no longer fits */
        struct gantry_gang_spec a = { .key = "ns/a", .size = 3 };
        assert_true(filter_one(g, &a, "a0", 400, names, N, NULL, 0) >= 0);
        assert_int_equal(gantry_gangs_filter(g, &big, &d, names, N, 0, v, &err), 0);
        for (int i = 0; i < N; i++) {
                assert_false(v[i].fits);
                assert_string_equal(v[i].reason, v[0].reason);
        }
        assert_non_null(strstr(v[0].reason, "gang ns/big: 5 pods need 5 GPUs and 1500 Gbps"));
        assert_null(strstr(v[0].reason, "leaf-"));
        assert_null(strstr(v[0].reason, "n0"));
        /* it took nothing: only the first job's 1200 Gbps are used */
        assert_int_equal((int)(uplink_used(c, "n0") + uplink_used(c, "n2") + uplink_used(c, "n4")),
                         1200);
        struct gantry_gangs_stats s;
        gantry_gangs_stats(g, &s);
        assert_int_equal(s.waiting, 1);
        gantry_gangs_free(g);
        gantry_cluster_free(c);
}

static void test_oversize_gang_names_the_policy(void **state)
{
        struct gantry_cluster *c = cluster();
        struct gantry_gangs *g;
        struct gantry_gang_spec huge = { .key = "ns/huge", .size = 40 }; /* 4000 Gbps > 2400 */
        char why[GANTRY_PLACEMENT_REASON_MAX];

        (void)state;
        assert_int_equal(gantry_gangs_new(c, 60, &g), 0);
        assert_int_equal(filter_one(g, &huge, "h0", 100, names, N, why, sizeof(why)), -1);
        assert_non_null(strstr(why, "more than one spine can feed"));
        assert_non_null(strstr(why, "gantry.io/gang-spread"));
        struct gantry_gangs_stats s;
        gantry_gangs_stats(g, &s);
        assert_int_equal(s.waiting, 0); /* never fits: it does not block the queue */
        gantry_gangs_free(g);
        gantry_cluster_free(c);
}

static void test_fill_in_cannot_delay_the_head(void **state)
{
        struct gantry_cluster *c = cluster();
        struct gantry_gangs *g;
        struct gantry_gang_spec a = { .key = "ns/a", .size = 8 }, small = { .key = "ns/small", .size = 2 },
                                head = { .key = "ns/head", .size = 16 },
                                late = { .key = "ns/late", .size = 2 },
                                late8 = { .key = "ns/late8", .size = 8 };
        char why[GANTRY_PLACEMENT_REASON_MAX];
        int leaf_a, leaf_small, at;

        (void)state;
        assert_int_equal(gantry_gangs_new(c, 60, &g), 0);
        leaf_a = filter_one(g, &a, "a0", 100, names, N, NULL, 0) / PER_LEAF;      /* a whole leaf */
        leaf_small = filter_one(g, &small, "s0", 100, names, N, NULL, 0) / PER_LEAF;
        assert_int_not_equal(leaf_a, leaf_small);
        /* the head needs two whole leaves: one is free, one has 600 Gbps left */
        assert_int_equal(filter_one(g, &head, "h0", 100, names, N, why, sizeof(why)), -1);
        assert_non_null(strstr(why, "gang ns/head: 16 pods need"));
        /* a later small gang fits in the small one's leaf, not on the free leaf
         * the head waits for */
        at = filter_one(g, &late, "l0", 100, names, N, NULL, 0);
        assert_int_equal(at / PER_LEAF, leaf_small);
        /* a later gang of a whole leaf would fit only on the head's leaf: refused */
        assert_int_equal(filter_one(g, &late8, "m0", 100, names, N, why, sizeof(why)), -1);
        assert_non_null(strstr(why, "gang ns/late8"));
        gantry_gangs_free(g);
        gantry_cluster_free(c);
}

static void test_slot_moves_to_an_offered_node_of_its_leaf(void **state)
{
        struct gantry_cluster *c = cluster();
        struct gantry_gangs *g;
        struct gantry_gang_spec spec = { .key = "ns/a", .size = 2 };
        int at, other;

        (void)state;
        assert_int_equal(gantry_gangs_new(c, 60, &g), 0);
        at = filter_one(g, &spec, "a0", 100, names, N, NULL, 0);
        other = at % 2 ? at - 1 : at + 1; /* the other node of the same leaf */
        /* the second member is offered only the other node of the leaf */
        const char *offer[] = { names[other] };
        assert_int_equal(filter_one(g, &spec, "a1", 100, offer, 1, NULL, 0), 0);
        /* offered nodes of other leaves only: refused, told to retry */
        struct gantry_gang_spec b = { .key = "ns/b", .size = 2 };
        at = filter_one(g, &b, "b0", 100, names, N, NULL, 0);
        const char *far[] = { names[(at + 2) % N] };
        char why[GANTRY_PLACEMENT_REASON_MAX];
        assert_int_equal(filter_one(g, &b, "b1", 100, far, 1, why, sizeof(why)), -1);
        assert_non_null(strstr(why, "retry"));
        gantry_gangs_free(g);
        gantry_cluster_free(c);
}

static void test_reservation_expires(void **state)
{
        struct gantry_cluster *c = cluster();
        struct gantry_gangs *g;
        struct gantry_gang_spec spec = { .key = "ns/a", .size = 4 };
        int at;

        (void)state;
        assert_int_equal(gantry_gangs_new(c, 60, &g), 0);
        at = filter_one(g, &spec, "a0", 100, names, N, NULL, 0);
        assert_int_equal((int)uplink_used(c, names[at]), 400);
        assert_int_equal(gantry_gangs_expire(g, 59), 0);
        assert_int_equal(gantry_gangs_expire(g, 60), 1);
        assert_int_equal((int)uplink_used(c, names[at]), 0);
        gantry_gangs_free(g);
        gantry_cluster_free(c);
}

static void test_partly_bound_gang_is_planned_first(void **state)
{
        struct gantry_cluster *c = cluster();
        struct gantry_gangs *g;
        struct gantry_gang_spec a = { .key = "ns/a", .size = 8 }, b = { .key = "ns/b", .size = 2 };
        struct gantry_error err;
        char uid[16];

        (void)state;
        assert_int_equal(gantry_gangs_new(c, 60, &g), 0);
        /* a restart: the watch shows 6 of gang a's 8 members bound on leaf 0 */
        for (int i = 0; i < 6; i++) {
                struct gantry_pod_demand d;

                snprintf(uid, sizeof(uid), "a%d", i);
                d = member(uid, "ns/a", 100);
                assert_int_equal(gantry_cluster_record(c, &d, names[i % 2], &err), 0);
                gantry_gangs_pod_bound(g, &a, &d, names[i % 2], 0);
        }
        /* a new gang comes first: gang a's two missing places are reserved
         * before it, on leaf 0 */
        assert_true(filter_one(g, &b, "b0", 100, names, N, NULL, 0) >= 2);
        assert_int_equal((int)uplink_used(c, "n0"), 800);
        assert_true(filter_one(g, &a, "a6", 100, names, N, NULL, 0) < 2);
        gantry_gangs_free(g);
        gantry_cluster_free(c);
}

/* Filter and bind member @uid of @spec at time 0, its reservation expiring
 * at @expires_at (0: confirmed at once); its node index. */
static int place(struct gantry_gangs *g, const struct gantry_gang_spec *spec, const char *uid,
                 double expires_at)
{
        struct gantry_pod_demand d = member(uid, spec->key, 100);
        struct gantry_error err;
        int at = filter_one(g, spec, uid, 100, names, N, NULL, 0);

        assert_true(at >= 0);
        assert_int_equal(gantry_gangs_bind(g, spec, &d, names[at], 0, expires_at, NULL, &err), 0);
        return at;
}

static void test_member_bound_again_elsewhere_keeps_one_place(void **state)
{
        struct gantry_cluster *c = cluster();
        struct gantry_gangs *g;
        struct gantry_gang_spec spec = { .key = "ns/a", .size = 2 };
        struct gantry_pod_demand d = member("a0", "ns/a", 100);
        struct gantry_gangs_stats s;
        struct gantry_error err;
        char node[16];
        int at, other;

        (void)state;
        assert_int_equal(gantry_gangs_new(c, 60, &g), 0);
        at = place(g, &spec, "a0", 100);
        /* a second bind of a0 (kube-scheduler retried) to a node of another leaf */
        other = (at + PER_LEAF) % N;
        assert_int_equal(gantry_gangs_bind(g, &spec, &d, names[other], 0, 100, NULL, &err), 0);
        assert_int_equal(gantry_cluster_lookup(c, "a0", node, sizeof(node)), 0);
        assert_string_equal(node, names[other]);
        /* a1's place is still held, and a1 gets it */
        gantry_gangs_stats(g, &s);
        assert_int_equal(s.held_slots, 1);
        assert_int_equal(s.planned, 1);
        assert_true(filter_one(g, &spec, "a1", 100, names, N, NULL, 0) >= 0);
        gantry_gangs_free(g);
        gantry_cluster_free(c);
}

static void test_expired_gang_stays_retired_while_members_run(void **state)
{
        struct gantry_cluster *c = cluster();
        struct gantry_gangs *g;
        struct gantry_gang_spec a = { .key = "ns/a", .size = 2 }, b = { .key = "ns/b", .size = 2 };
        struct gantry_pod_demand d1 = member("a1", "ns/a", 100);
        struct gantry_gangs_stats s;
        struct gantry_error err;
        int at1;

        (void)state;
        assert_int_equal(gantry_gangs_new(c, 60, &g), 0);
        place(g, &a, "a0", 0);
        at1 = place(g, &a, "a1", 0);
        /* a0 finishes; its place waits one TTL for a replacement that never comes */
        assert_int_equal(gantry_cluster_release(c, "a0"), 0);
        gantry_gangs_pod_gone(g, "a0", 10);
        assert_int_equal(gantry_gangs_expire(g, 70), 1);
        assert_int_equal((int)uplink_used(c, names[at1]), 100);
        /* a1 still runs: the watch's MODIFIED event of it */
        assert_int_equal(gantry_cluster_record(c, &d1, names[at1], &err), 0);
        gantry_gangs_pod_bound(g, &a, &d1, names[at1], 80);
        assert_int_equal(gantry_gangs_partial(g), 0);
        /* the next plan reserves nothing for a0, who will never come back */
        assert_true(filter_one(g, &b, "b0", 100, names, N, NULL, 0) >= 0);
        gantry_gangs_stats(g, &s);
        assert_int_equal(s.planned, 1);
        assert_int_equal(s.held_slots, 2);
        assert_int_equal(s.waiting, 0);
        gantry_gangs_free(g);
        gantry_cluster_free(c);
}

static void test_gpu_gang_not_planned_on_nodes_without_gpus(void **state)
{
        struct gantry_cluster *c;
        struct gantry_gangs *g;
        struct gantry_gang_spec small = { .key = "ns/a", .size = 4 }, big = { .key = "ns/b", .size = 20 };
        const char *all[4] = { "gpu-0", "gpu-1", "cpu-0", "cpu-1" };
        struct gantry_error err;

        (void)state;
        assert_int_equal(gantry_cluster_new(&c), 0);
        /* leaf-0: two nodes of 8 GPUs; leaf-1: two CPU-only nodes (GPUs 0) */
        for (int i = 0; i < 4; i++) {
                const char *leaf = i < 2 ? "leaf-0" : "leaf-1";

                assert_int_equal(gantry_cluster_set_leaf(c, &(struct gantry_leaf_spec){
                        .name = leaf, .spine = "spine-0", .uplink_gbps = 800 }, &err), 0);
                assert_int_equal(gantry_cluster_set_node(c, &(struct gantry_node_spec){
                        .name = all[i], .leaf = leaf, .nic_gbps = 400, .gpus = i < 2 ? 8 : 0 },
                        &err), 0);
        }
        assert_int_equal(gantry_gangs_new(c, 60, &g), 0);
        /* 4 members of 1 GPU: on the GPU leaf, not on the "tightest" CPU-only one */
        int at = filter_one(g, &small, "a0", 10, all, 4, NULL, 0);
        assert_true(at >= 0 && at < 2);
        /* 20 GPUs are more than the 16 there are: refused, not put on CPU nodes */
        assert_int_equal(filter_one(g, &big, "b0", 10, all, 4, NULL, 0), -1);
        assert_int_equal((int)uplink_used(c, "cpu-0") + (int)uplink_used(c, "cpu-1"), 0);
        gantry_gangs_free(g);
        gantry_cluster_free(c);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_planned_whole_on_one_leaf),
                cmocka_unit_test(test_failed_bind_gives_the_place_back),
                cmocka_unit_test(test_refused_whole_with_one_reason),
                cmocka_unit_test(test_oversize_gang_names_the_policy),
                cmocka_unit_test(test_fill_in_cannot_delay_the_head),
                cmocka_unit_test(test_slot_moves_to_an_offered_node_of_its_leaf),
                cmocka_unit_test(test_reservation_expires),
                cmocka_unit_test(test_partly_bound_gang_is_planned_first),
                cmocka_unit_test(test_member_bound_again_elsewhere_keeps_one_place),
                cmocka_unit_test(test_expired_gang_stays_retired_while_members_run),
                cmocka_unit_test(test_gpu_gang_not_planned_on_nodes_without_gpus),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
