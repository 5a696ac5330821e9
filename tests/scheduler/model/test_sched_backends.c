/*
 * Unit tests of StorageBackend objects -> each backend's live state
 * (scheduler-ext/model/sched_backends.c): byte rates to Gbps with absent
 * fields as 0, the lower-cased name matched to the topology's, a status
 * older than the stale bound nominal (and turning stale with time), a
 * deleted object or one without a state nominal, malformed fields named,
 * and a rise noted only for a backend that held pods.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "sched_backends.h"

#define NOW 1796601600.0 /* 2026-12-07T00:00:00Z */

static struct gantry_cluster *cluster(void)
{
        struct gantry_cluster *c;
        struct gantry_error err;

        assert_int_equal(gantry_cluster_new(&c), 0);
        assert_int_equal(gantry_cluster_set_backend(c, &(struct gantry_backend_spec){
                .name = "Ceph-A", .kind = GANTRY_BACKEND_CEPH, .gbps = 40 }, &err), 0);
        return c;
}

static struct gantry_backend_view view(struct gantry_cluster *c)
{
        struct gantry_backend_view v;

        assert_int_equal(gantry_cluster_backend_view(c, 0, &v), 0);
        return v;
}

static json_t *obj(const char *status_json)
{
        char text[1024];
        json_t *o;

        snprintf(text, sizeof(text), "{\"metadata\":{\"name\":\"ceph-a\"},\"spec\":{\"type\":\"ceph\"},"
                 "\"status\":%s}", status_json);
        o = json_loads(text, 0, NULL);
        assert_non_null(o);
        return o;
}

static int apply(struct gantry_sched_backends *b, const char *status_json, bool deleted, double now,
                 struct gantry_error *err)
{
        json_t *o = obj(status_json);
        int r = gantry_sched_backends_apply(b, o, deleted, now, err);

        json_decref(o);
        return r;
}

static void test_rates_and_absent_fields(void **state)
{
        struct gantry_cluster *c = cluster();
        struct gantry_sched_backends *b;
        struct gantry_error err;

        (void)state;
        assert_int_equal(gantry_sched_backends_new(c, 60, &b), 0);
        /* 1.25e9 B/s of reads = 10 Gbps unaccounted; no write field, no
         * recovery field (Ceph leaves out zeros) */
        assert_int_equal(apply(b, "{\"state\":\"Degraded\",\"clientReadBytesPerSec\":1250000000,"
                               "\"observedAt\":\"2026-12-07T00:00:00Z\"}", false, NOW + 5, &err), 0);
        assert_int_equal(view(c).state, GANTRY_BACKEND_STATE_DEGRADED);
        assert_float_equal(view(c).unaccounted_gbps, 10, 1e-9);
        assert_float_equal(view(c).recovery_gbps, 0, 1e-9);
        assert_float_equal(view(c).effective_gbps, 40 * 0.85 - 10, 1e-9);
        assert_int_equal(apply(b, "{\"state\":\"Recovering\",\"recoveryBytesPerSec\":500000000,"
                               "\"observedAt\":\"2026-12-07T00:00:10.250Z\"}", false, NOW + 12, &err), 0);
        assert_float_equal(view(c).effective_gbps, 40 * 0.65 - 4, 1e-9);
        /* deleted, or no state: nominal */
        assert_int_equal(apply(b, "{}", false, NOW + 13, &err), 0);
        assert_float_equal(view(c).effective_gbps, 40, 1e-9);
        assert_int_equal(apply(b, "{\"state\":\"Unavailable\",\"observedAt\":\"2026-12-07T00:00:13Z\"}",
                               false, NOW + 13, &err), 0);
        assert_float_equal(view(c).effective_gbps, 0, 1e-9);
        assert_int_equal(apply(b, "{\"state\":\"Unavailable\",\"observedAt\":\"2026-12-07T00:00:13Z\"}",
                               true, NOW + 14, &err), 0);
        assert_float_equal(view(c).effective_gbps, 40, 1e-9);
        gantry_sched_backends_free(b);
        gantry_cluster_free(c);
}

static void test_stale(void **state)
{
        struct gantry_cluster *c = cluster();
        struct gantry_sched_backends *b;
        struct gantry_error err;

        (void)state;
        assert_int_equal(gantry_sched_backends_new(c, 60, &b), 0);
        /* observed 90 s ago: stale at once, nominal */
        assert_int_equal(apply(b, "{\"state\":\"Unavailable\",\"observedAt\":\"2026-12-07T00:00:00Z\"}",
                               false, NOW + 90, &err), 0);
        assert_true(view(c).stale);
        assert_float_equal(view(c).effective_gbps, 40, 1e-9);
        /* fresh, then aging past the bound with no new status */
        assert_int_equal(apply(b, "{\"state\":\"Unavailable\",\"observedAt\":\"2026-12-07T00:02:00Z\"}",
                               false, NOW + 121, &err), 0);
        assert_false(view(c).stale);
        assert_float_equal(view(c).effective_gbps, 0, 1e-9);
        gantry_sched_backends_tick(b, NOW + 170);
        assert_false(view(c).stale);
        gantry_sched_backends_tick(b, NOW + 181);
        assert_true(view(c).stale);
        assert_float_equal(view(c).effective_gbps, 40, 1e-9);
        gantry_sched_backends_free(b);
        gantry_cluster_free(c);
}

static void test_bad_fields_are_named(void **state)
{
        struct gantry_cluster *c = cluster();
        struct gantry_sched_backends *b;
        struct gantry_error err;
        json_t *o;

        (void)state;
        assert_int_equal(gantry_sched_backends_new(c, 60, &b), 0);
        assert_int_equal(apply(b, "{\"state\":\"Sick\",\"observedAt\":\"2026-12-07T00:00:00Z\"}", false,
                               NOW, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "status.state"));
        assert_int_equal(apply(b, "{\"state\":\"Healthy\",\"clientReadBytesPerSec\":-1,"
                               "\"observedAt\":\"2026-12-07T00:00:00Z\"}", false, NOW, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "clientReadBytesPerSec"));
        assert_int_equal(apply(b, "{\"state\":\"Healthy\",\"observedAt\":\"yesterday\"}", false, NOW,
                               &err), -EINVAL);
        assert_non_null(strstr(err.msg, "observedAt"));
        assert_int_equal(apply(b, "{\"state\":\"Healthy\"}", false, NOW, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "observedAt"));
        o = json_loads("{\"metadata\":{\"name\":\"ceph-z\"},\"status\":{\"state\":\"Healthy\"}}", 0,
                       NULL);
        assert_int_equal(gantry_sched_backends_apply(b, o, false, NOW, &err), -ENOENT);
        json_decref(o);
        assert_int_equal(view(c).state, GANTRY_BACKEND_STATE_NONE); /* nothing applied */
        gantry_sched_backends_free(b);
        gantry_cluster_free(c);
}

static void test_rise_noted_only_when_pods_were_held(void **state)
{
        struct gantry_cluster *c = cluster();
        struct gantry_sched_backends *b;
        struct gantry_error err;
        char names[4][GANTRY_PLACEMENT_NAME_MAX + 1];

        (void)state;
        assert_int_equal(gantry_sched_backends_new(c, 60, &b), 0);
        assert_int_equal(apply(b, "{\"state\":\"Recovering\",\"observedAt\":\"2026-12-07T00:00:00Z\"}",
                               false, NOW, &err), 0);
        assert_int_equal(apply(b, "{\"state\":\"Healthy\",\"observedAt\":\"2026-12-07T00:00:01Z\"}",
                               false, NOW + 1, &err), 0);
        assert_int_equal(gantry_sched_backends_take_risen(b, names, 4), 0); /* nobody waited */
        assert_int_equal(apply(b, "{\"state\":\"Recovering\",\"observedAt\":\"2026-12-07T00:00:02Z\"}",
                               false, NOW + 2, &err), 0);
        gantry_sched_backends_note_held(b, "Ceph-A");
        assert_int_equal(apply(b, "{\"state\":\"Recovering\",\"observedAt\":\"2026-12-07T00:00:03Z\"}",
                               false, NOW + 3, &err), 0);
        assert_int_equal(gantry_sched_backends_take_risen(b, names, 4), 0); /* no rise */
        assert_int_equal(apply(b, "{\"state\":\"Healthy\",\"observedAt\":\"2026-12-07T00:00:04Z\"}",
                               false, NOW + 4, &err), 0);
        assert_int_equal(gantry_sched_backends_take_risen(b, names, 4), 1);
        assert_string_equal(names[0], "Ceph-A"); /* the topology's name */
        assert_int_equal(gantry_sched_backends_take_risen(b, names, 4), 0); /* taken once */
        gantry_sched_backends_free(b);
        gantry_cluster_free(c);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_rates_and_absent_fields),
                cmocka_unit_test(test_stale),
                cmocka_unit_test(test_bad_fields_are_named),
                cmocka_unit_test(test_rise_noted_only_when_pods_were_held),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
