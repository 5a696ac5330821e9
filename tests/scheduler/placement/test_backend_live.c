/*
 * Unit tests of a backend's live state in the placement library
 * (scheduler-ext/placement/backend_live.c): the effective-capacity formula,
 * filter, reserve and whole-gang admission charging against it, pods
 * already placed kept (never evicted), a stale or forgotten observation
 * back to nominal, Gantry's own bound pods never counted twice, and the
 * reasons: folded (no names or free Gbps) and detailed (backend, state,
 * free of effective, nominal, the gang's need).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "gang.h"

#define N 4
static const char *names[N] = { "n0", "n1", "n2", "n3" };

/* One leaf of 4 nodes (8 GPUs, 400 Gbps NICs), Ceph cluster ceph-a of 40 Gbps
 * on the same leaf. */
static struct gantry_cluster *cluster(void)
{
        struct gantry_cluster *c;
        struct gantry_error err;

        assert_int_equal(gantry_cluster_new(&c), 0);
        assert_int_equal(gantry_cluster_set_leaf(c, &(struct gantry_leaf_spec){
                .name = "leaf-0", .spine = "spine-0", .uplink_gbps = 800 }, &err), 0);
        for (int i = 0; i < N; i++)
                assert_int_equal(gantry_cluster_set_node(c, &(struct gantry_node_spec){
                        .name = names[i], .leaf = "leaf-0", .nic_gbps = 400, .gpus = 8 }, &err), 0);
        assert_int_equal(gantry_cluster_set_backend(c, &(struct gantry_backend_spec){
                .name = "ceph-a", .kind = GANTRY_BACKEND_CEPH, .gbps = 40,
                .leaves = (const char *[]){ "leaf-0" }, .n_leaves = 1 }, &err), 0);
        return c;
}

static struct gantry_pod_demand pod(const char *uid, const char *job, double gbps)
{
        struct gantry_pod_demand d = { .uid = uid, .name = uid, .job = job, .gpus = 1, .n_flows = 1 };

        d.flows[0] = (struct gantry_flow){ .backend = "ceph-a", .gbps = gbps };
        return d;
}

static void set_live(struct gantry_cluster *c, enum gantry_backend_state s, double client,
                     double recovery, bool stale)
{
        struct gantry_error err;

        assert_int_equal(gantry_cluster_set_backend_live(c, "ceph-a", &(struct gantry_backend_live){
                .state = s, .client_gbps = client, .recovery_gbps = recovery, .stale = stale }, &err), 0);
}

static struct gantry_backend_view view(struct gantry_cluster *c)
{
        struct gantry_backend_view v;

        assert_int_equal(gantry_cluster_backend_view(c, 0, &v), 0);
        assert_string_equal(v.name, "ceph-a");
        return v;
}

/* How many of @n pods of @gbps each reserve() admits, one after the other
 * (binds not yet confirmed by the watch). */
static int admit(struct gantry_cluster *c, const char *prefix, int n, double gbps)
{
        struct gantry_error err;
        char uid[32];
        int ok = 0;

        for (int i = 0; i < n; i++) {
                struct gantry_pod_demand d;

                snprintf(uid, sizeof(uid), "%s-%d", prefix, i);
                d = pod(uid, NULL, gbps);
                if (gantry_cluster_reserve(c, &d, names[i % N], 1000, NULL, &err) == 0)
                        ok++;
        }
        return ok;
}

static void test_formula(void **state)
{
        (void)state;
        /* nominal x factor - recovery - unaccounted */
        assert_float_equal(gantry_backend_effective_gbps(40, 1, 0, 0, 0), 40, 1e-9);
        assert_float_equal(gantry_backend_effective_gbps(40, 0.65, 0, 0, 0), 26, 1e-9);
        assert_float_equal(gantry_backend_effective_gbps(40, 0.65, 4, 0, 0), 22, 1e-9);
        /* 10 Gbps of client IO, 6 of which Gantry's bound pods: 4 unaccounted */
        assert_float_equal(gantry_backend_effective_gbps(40, 1, 0, 10, 6), 36, 1e-9);
        /* Gantry's own pods doing more than observed: nothing unaccounted,
         * never a bonus */
        assert_float_equal(gantry_backend_effective_gbps(40, 1, 0, 2, 6), 40, 1e-9);
        /* never below 0 */
        assert_float_equal(gantry_backend_effective_gbps(40, 0.65, 30, 0, 0), 0, 1e-9);
        assert_float_equal(gantry_backend_effective_gbps(40, 0, 0, 0, 0), 0, 1e-9);
}

static void test_states_and_factors(void **state)
{
        struct gantry_cluster *c = cluster();
        struct gantry_error err;
        enum gantry_backend_state s;

        (void)state;
        assert_float_equal(view(c).effective_gbps, 40, 1e-9); /* not observed: nominal */
        set_live(c, GANTRY_BACKEND_STATE_HEALTHY, 0, 0, false);
        assert_float_equal(view(c).effective_gbps, 40, 1e-9);
        set_live(c, GANTRY_BACKEND_STATE_DEGRADED, 0, 0, false);
        assert_float_equal(view(c).effective_gbps, 34, 1e-9);
        set_live(c, GANTRY_BACKEND_STATE_RECOVERING, 0, 2, false);
        assert_float_equal(view(c).effective_gbps, 24, 1e-9);
        set_live(c, GANTRY_BACKEND_STATE_UNAVAILABLE, 0, 0, false);
        assert_float_equal(view(c).effective_gbps, 0, 1e-9);
        assert_int_equal(gantry_cluster_set_backend_factors(c, &(struct gantry_backend_factors){
                .degraded = 0.5, .recovering = 0.25 }, &err), 0);
        set_live(c, GANTRY_BACKEND_STATE_RECOVERING, 0, 0, false);
        assert_float_equal(view(c).effective_gbps, 10, 1e-9);
        assert_int_equal(gantry_cluster_set_backend_factors(c, &(struct gantry_backend_factors){
                .degraded = 1.5, .recovering = 0.25 }, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "degraded"));
        assert_int_equal(gantry_backend_state_parse("Recovering", &s), 0);
        assert_int_equal(s, GANTRY_BACKEND_STATE_RECOVERING);
        assert_int_equal(gantry_backend_state_parse("recovering", &s), -EINVAL);
        assert_int_equal(gantry_cluster_set_backend_live(c, "ceph-z", &(struct gantry_backend_live){
                .state = GANTRY_BACKEND_STATE_HEALTHY }, &err), -ENOENT);
        assert_int_equal(gantry_cluster_set_backend_live(c, "ceph-a", &(struct gantry_backend_live){
                .state = GANTRY_BACKEND_STATE_HEALTHY, .client_gbps = -1 }, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "clientGbps"));
        gantry_cluster_free(c);
}

static void test_stale_or_forgotten_is_nominal(void **state)
{
        struct gantry_cluster *c = cluster();
        struct gantry_error err;

        (void)state;
        set_live(c, GANTRY_BACKEND_STATE_UNAVAILABLE, 0, 0, true);
        assert_float_equal(view(c).effective_gbps, 40, 1e-9); /* stale: never zero */
        assert_true(view(c).stale);
        assert_int_equal(admit(c, "s", 4, 10), 4);
        set_live(c, GANTRY_BACKEND_STATE_UNAVAILABLE, 0, 0, false);
        assert_int_equal(admit(c, "t", 1, 1), 0);
        assert_int_equal(gantry_cluster_set_backend_live(c, "ceph-a", NULL, &err), 0);
        assert_float_equal(view(c).effective_gbps, 40, 1e-9);
        gantry_cluster_free(c);
}

static void test_admission_charges_against_effective(void **state)
{
        struct gantry_cluster *c = cluster();
        struct gantry_pod_demand d = pod("f", NULL, 8);
        struct gantry_node_verdict v[N];
        struct gantry_error err;
        char detail[256];

        (void)state;
        set_live(c, GANTRY_BACKEND_STATE_RECOVERING, 0, 2, false); /* 40 x .65 - 2 = 24 */
        assert_int_equal(admit(c, "a", 5, 8), 3); /* 24 Gbps: three of 8 */
        assert_true(view(c).reserved_gbps <= view(c).effective_gbps + 1e-9);
        assert_int_equal(gantry_cluster_filter(c, &d, names, N, v, &err), 0);
        for (int i = 0; i < N; i++) {
                assert_false(v[i].fits);
                assert_int_equal(v[i].cause, GANTRY_REFUSAL_BACKEND);
                /* folded: the same words on every node, no name, no free Gbps */
                assert_string_equal(v[i].reason, "storage backend recovering (pod needs 8 Gbps)");
        }
        gantry_node_verdict_detail(&v[0], names[0], detail, sizeof(detail));
        assert_string_equal(detail, "backend ceph-a recovering: 0 of 40 Gbps free (effective 24), "
                                    "pod needs 8 Gbps");
        /* healthy again: the rest fits */
        set_live(c, GANTRY_BACKEND_STATE_HEALTHY, 0, 0, false);
        assert_int_equal(gantry_cluster_filter(c, &d, names, N, v, &err), 0);
        assert_true(v[0].fits);
        assert_int_equal(admit(c, "b", 2, 8), 2);
        gantry_cluster_free(c);
}

static void test_running_pods_are_kept(void **state)
{
        struct gantry_cluster *c = cluster();
        struct gantry_pod_demand d = pod("x", NULL, 1);
        struct gantry_node_verdict v[N];
        struct gantry_error err;

        (void)state;
        assert_int_equal(admit(c, "run", 4, 8), 4); /* 32 of 40 */
        set_live(c, GANTRY_BACKEND_STATE_RECOVERING, 0, 0, false); /* 26 < 32 */
        assert_float_equal(view(c).reserved_gbps, 32, 1e-9); /* nothing evicted */
        assert_int_equal(gantry_cluster_filter(c, &d, names, N, v, &err), 0);
        assert_false(v[0].fits);
        /* the detail says 0 free, never a negative number */
        assert_float_equal(v[0].free, 0, 1e-9);
        assert_int_equal(gantry_cluster_release(c, "run-0"), 0);
        assert_int_equal(gantry_cluster_release(c, "run-1"), 0); /* 16 of 26 */
        assert_int_equal(admit(c, "new", 2, 8), 1);
        gantry_cluster_free(c);
}

static void test_bound_pods_are_not_counted_twice(void **state)
{
        struct gantry_cluster *c = cluster();
        struct gantry_pod_demand d = pod("bound-0", NULL, 10);
        struct gantry_error err;

        (void)state;
        /* a pod the watch saw bound, doing its 10 Gbps of IO */
        assert_int_equal(gantry_cluster_record(c, &d, "n0", &err), 0);
        /* the observer sees 16: 10 Gantry's, 6 someone else's */
        set_live(c, GANTRY_BACKEND_STATE_HEALTHY, 16, 0, false);
        assert_float_equal(view(c).unaccounted_gbps, 6, 1e-9);
        assert_float_equal(view(c).effective_gbps, 34, 1e-9);
        /* 34 - 10 reserved = 24 free: three pods of 8 */
        assert_int_equal(admit(c, "r", 4, 8), 3);
        {
                struct gantry_pod_demand x = pod("x", NULL, 8);
                struct gantry_node_verdict v[N];
                char detail[256];

                assert_int_equal(gantry_cluster_filter(c, &x, names, N, v, &err), 0);
                assert_string_equal(v[0].reason, "storage backend full (pod needs 8 Gbps)");
                gantry_node_verdict_detail(&v[0], names[0], detail, sizeof(detail));
                assert_string_equal(detail, "backend ceph-a: 0 of 40 Gbps free (effective 34), "
                                            "pod needs 8 Gbps");
        }
        /* a bind not yet confirmed does no IO yet: it is not subtracted from
         * the observed IO (only bound pods are) */
        assert_float_equal(view(c).bound_gbps, 10, 1e-9);
        assert_float_equal(view(c).reserved_gbps, 34, 1e-9);
        gantry_cluster_free(c);
}

static void test_gang_refused_then_admitted(void **state)
{
        struct gantry_cluster *c = cluster();
        struct gantry_gangs *g;
        struct gantry_gang_spec spec = { .key = "ml/train", .size = 4 };
        struct gantry_node_verdict v[N];
        struct gantry_error err;
        char detail[256];

        (void)state;
        assert_int_equal(gantry_gangs_new(c, 60, &g), 0);
        assert_int_equal(admit(c, "other", 1, 4), 1); /* 4 of 40 taken */
        /* 40 x .65 = 26 effective, 22 free; the gang needs 4 x 8 = 32 */
        set_live(c, GANTRY_BACKEND_STATE_RECOVERING, 0, 0, false);
        struct gantry_pod_demand d = pod("m0", "ml/train", 8);
        assert_int_equal(gantry_gangs_filter(g, &spec, &d, names, N, 0, v, &err), 0);
        for (int i = 0; i < N; i++) {
                assert_false(v[i].fits);
                assert_int_equal(v[i].cause, GANTRY_REFUSAL_GANG);
        }
        /* folded: the gang, its size and the state, not the backend's numbers */
        assert_non_null(strstr(v[0].reason, "(storage backend recovering)"));
        assert_null(strstr(v[0].reason, "ceph-a"));
        gantry_node_verdict_detail(&v[0], names[0], detail, sizeof(detail));
        assert_string_equal(detail, "backend ceph-a recovering: 22 of 40 Gbps free (effective 26), "
                                    "gang needs 32 Gbps");
        assert_float_equal(view(c).reserved_gbps, 4, 1e-9); /* nothing held */
        /* back to healthy: planned whole, within 40 */
        set_live(c, GANTRY_BACKEND_STATE_HEALTHY, 0, 0, false);
        d = pod("m0", "ml/train", 8);
        assert_int_equal(gantry_gangs_filter(g, &spec, &d, names, N, 1, v, &err), 0);
        int passed = 0;
        for (int i = 0; i < N; i++)
                passed += v[i].fits;
        assert_int_equal(passed, 1);
        assert_float_equal(view(c).reserved_gbps, 36, 1e-9);
        gantry_gangs_free(g);
        gantry_cluster_free(c);
}

/* A recovering backend does not make a gang "oversize": that is measured on
 * the empty cluster at nominal capacity. */
static void test_gang_not_called_oversize(void **state)
{
        struct gantry_cluster *c = cluster();
        struct gantry_gangs *g;
        struct gantry_gang_spec spec = { .key = "ml/big", .size = 4 };
        struct gantry_node_verdict v[N];
        struct gantry_error err;
        struct gantry_pod_demand d = pod("b0", "ml/big", 9);

        (void)state;
        assert_int_equal(gantry_gangs_new(c, 60, &g), 0);
        set_live(c, GANTRY_BACKEND_STATE_UNAVAILABLE, 0, 0, false);
        assert_int_equal(gantry_gangs_filter(g, &spec, &d, names, N, 0, v, &err), 0);
        assert_false(v[0].fits);
        assert_null(strstr(v[0].reason, "spread"));
        assert_non_null(strstr(v[0].reason, "(storage backend unavailable)"));
        gantry_gangs_free(g);
        gantry_cluster_free(c);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_formula),
                cmocka_unit_test(test_states_and_factors),
                cmocka_unit_test(test_stale_or_forgotten_is_nominal),
                cmocka_unit_test(test_admission_charges_against_effective),
                cmocka_unit_test(test_running_pods_are_kept),
                cmocka_unit_test(test_bound_pods_are_not_counted_twice),
                cmocka_unit_test(test_gang_refused_then_admitted),
                cmocka_unit_test(test_gang_not_called_oversize),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
