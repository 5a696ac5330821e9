/*
 * Unit tests of a live change of bound pods' demands in the placement
 * library (scheduler-ext/placement/recharge.c): only the growth on each
 * link is checked, against its free capacity now (a node NIC, a backend at
 * its effective capacity); a refusal names the link, its free and total
 * Gbps and the extra, and changes nothing; a decrease always succeeds, even
 * on a backend already over its effective capacity; a pod without an entry
 * is skipped; the new charges replace the old ones (no double count).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "placement.h"

/* Node n0 (NIC 100 Gbps) on leaf-0 with Ceph cluster ceph-a (40 Gbps). */
static struct gantry_cluster *cluster(void)
{
        struct gantry_cluster *c;
        struct gantry_error err;

        assert_int_equal(gantry_cluster_new(&c), 0);
        assert_int_equal(gantry_cluster_set_leaf(c, &(struct gantry_leaf_spec){
                .name = "leaf-0", .spine = "spine-0", .uplink_gbps = 800 }, &err), 0);
        assert_int_equal(gantry_cluster_set_node(c, &(struct gantry_node_spec){
                .name = "n0", .leaf = "leaf-0", .nic_gbps = 100, .gpus = 8 }, &err), 0);
        assert_int_equal(gantry_cluster_set_backend(c, &(struct gantry_backend_spec){
                .name = "ceph-a", .kind = GANTRY_BACKEND_CEPH, .gbps = 40,
                .leaves = (const char *[]){ "leaf-0" }, .n_leaves = 1 }, &err), 0);
        return c;
}

static struct gantry_pod_demand pod(const char *uid, const char *backend, double gbps)
{
        struct gantry_pod_demand d = { .uid = uid, .name = uid, .gpus = 1, .n_flows = 1 };

        d.flows[0] = (struct gantry_flow){ .backend = backend, .gbps = gbps };
        return d;
}

static void record(struct gantry_cluster *c, const char *uid, const char *backend, double gbps)
{
        struct gantry_pod_demand d = pod(uid, backend, gbps);
        struct gantry_error err;

        assert_int_equal(gantry_cluster_record(c, &d, "n0", &err), 0);
}

static int recharge(struct gantry_cluster *c, const char *uid, const char *backend, double gbps,
                    size_t *changed, struct gantry_error *err)
{
        struct gantry_pod_demand d = pod(uid, backend, gbps);
        const struct gantry_pod_demand *ds[] = { &d };

        return gantry_cluster_recharge(c, ds, 1, changed, err);
}

static double backend_used(struct gantry_cluster *c)
{
        double gbps, used;

        assert_int_equal(gantry_cluster_backend_usage(c, "ceph-a", &gbps, &used), 0);
        return used;
}

static double nic_used(struct gantry_cluster *c)
{
        struct gantry_node_usage u;

        assert_int_equal(gantry_cluster_node_usage(c, "n0", &u), 0);
        return u.nic_used_gbps;
}

static void test_growth_checked_on_the_nic(void **state)
{
        struct gantry_cluster *c = cluster();
        struct gantry_error err = { 0 };
        size_t changed = 9;

        (void)state;
        record(c, "u1", NULL, 60);
        record(c, "u2", NULL, 30);
        /* 30 -> 35: 5 more of the 10 free */
        assert_int_equal(recharge(c, "u2", NULL, 35, &changed, &err), 0);
        assert_int_equal(changed, 1);
        assert_float_equal(nic_used(c), 95, 1e-9);
        /* 35 -> 45: 10 more of the 5 free */
        assert_int_equal(recharge(c, "u2", NULL, 45, NULL, &err), -ENOSPC);
        assert_string_equal(err.msg, "node NIC n0: 5.0 of 100.0 Gbps free, the change needs 10.0 more");
        assert_float_equal(nic_used(c), 95, 1e-9);
        /* a pod the ledger does not hold: nothing to charge */
        assert_int_equal(recharge(c, "nobody", NULL, 500, &changed, &err), 0);
        assert_int_equal(changed, 0);
        assert_float_equal(nic_used(c), 95, 1e-9);
        gantry_cluster_free(c);
}

static void test_backend_at_its_effective_capacity(void **state)
{
        struct gantry_cluster *c = cluster();
        struct gantry_error err = { 0 };

        (void)state;
        record(c, "u1", "ceph-a", 20);
        /* recovering: 40 x 0.65 = 26 effective, 6 free */
        assert_int_equal(gantry_cluster_set_backend_live(c, "ceph-a", &(struct gantry_backend_live){
                .state = GANTRY_BACKEND_STATE_RECOVERING, .client_gbps = 20 }, &err), 0);
        assert_int_equal(recharge(c, "u1", "ceph-a", 30, NULL, &err), -ENOSPC);
        assert_string_equal(err.msg, "storage backend ceph-a: 6.0 of 40.0 Gbps free (effective 26.0, "
                                     "recovering), the change needs 10.0 more");
        assert_float_equal(backend_used(c), 20, 1e-9);
        assert_int_equal(recharge(c, "u1", "ceph-a", 26, NULL, &err), 0);
        assert_float_equal(backend_used(c), 26, 1e-9);
        gantry_cluster_free(c);
}

static void test_decrease_on_an_overfull_backend(void **state)
{
        struct gantry_cluster *c = cluster();
        struct gantry_error err = { 0 };

        (void)state;
        record(c, "u1", "ceph-a", 35);
        /* unavailable: nothing effective, the pod already over it */
        assert_int_equal(gantry_cluster_set_backend_live(c, "ceph-a", &(struct gantry_backend_live){
                .state = GANTRY_BACKEND_STATE_UNAVAILABLE }, &err), 0);
        assert_int_equal(recharge(c, "u1", "ceph-a", 10, NULL, &err), 0);
        assert_float_equal(backend_used(c), 10, 1e-9);
        assert_float_equal(nic_used(c), 10, 1e-9);
        /* the same figure again: no growth, nothing checked or added */
        assert_int_equal(recharge(c, "u1", "ceph-a", 10, NULL, &err), 0);
        assert_float_equal(backend_used(c), 10, 1e-9);
        /* and gone, it gives back the new charge, not the old */
        assert_int_equal(gantry_cluster_release(c, "u1"), 0);
        assert_float_equal(backend_used(c), 0, 1e-9);
        assert_float_equal(nic_used(c), 0, 1e-9);
        gantry_cluster_free(c);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_growth_checked_on_the_nic),
                cmocka_unit_test(test_backend_at_its_effective_capacity),
                cmocka_unit_test(test_decrease_on_an_overfull_backend),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
