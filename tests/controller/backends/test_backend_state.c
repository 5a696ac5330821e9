/*
 * The parser of Ceph's `status` answer and the backend smoother, on answers
 * a real Ceph 16.2 cluster gave while healthy, degraded and recovering
 * (fixtures/README.md), absent fields included, and on a whole recorded
 * fault: kill an OSD, mark it out, recover.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "backend_state.h"
#include "ceph_status.h"

static char *read_fixture(const char *name, size_t *ret_len)
{
        char path[512];
        FILE *f;
        char *buf;
        long n;

        snprintf(path, sizeof(path), "%s/%s", FIXTURES_DIR, name);
        f = fopen(path, "rb");
        assert_non_null(f);
        assert_int_equal(fseek(f, 0, SEEK_END), 0);
        n = ftell(f);
        rewind(f);
        buf = malloc((size_t)n + 1);
        assert_non_null(buf);
        assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
        buf[n] = '\0';
        fclose(f);
        *ret_len = (size_t)n;
        return buf;
}

static void parse_fixture(const char *name, struct gantry_backend_sample *s)
{
        struct gantry_error err = { 0 };
        size_t len;
        char *json = read_fixture(name, &len);

        assert_int_equal(gantry_ceph_status_parse(json, len, s, &err), 0);
        free(json);
}

static bool has_check(const struct gantry_backend_sample *s, const char *code)
{
        for (size_t i = 0; i < s->n_checks; i++)
                if (strcmp(s->checks[i].code, code) == 0)
                        return true;
        return false;
}

static void test_healthy(void **state)
{
        struct gantry_backend_sample s;

        (void)state;
        parse_fixture("status-healthy.json", &s);
        assert_true(s.reachable);
        assert_int_equal(s.read_bytes_per_sec, 18467747);
        assert_int_equal(s.write_bytes_per_sec, 0); /* absent: 0 */
        assert_int_equal(s.recovery_bytes_per_sec, 0);
        assert_true(s.degraded_ratio == 0);
        assert_int_equal(s.pgs, 41);
        assert_int_equal(s.pgs_inactive, 0);
        assert_int_equal(s.pgs_recovering, 0);
        assert_int_equal(s.pgs_degraded, 0);
        assert_int_equal(s.pgs_unclean, 0);
        assert_int_equal(s.n_checks, 0);
        assert_int_equal(gantry_backend_sample_state(&s), GANTRY_OBSERVED_HEALTHY);
}

static void test_idle_has_no_rate_fields(void **state)
{
        struct gantry_backend_sample s;

        (void)state;
        parse_fixture("status-idle.json", &s);
        assert_int_equal(s.read_bytes_per_sec, 0);
        assert_int_equal(s.write_bytes_per_sec, 0);
        assert_int_equal(s.recovery_bytes_per_sec, 0);
        assert_int_equal(gantry_backend_sample_state(&s), GANTRY_OBSERVED_HEALTHY);
}

static void test_just_down(void **state)
{
        struct gantry_backend_sample s;

        (void)state;
        parse_fixture("status-just-down.json", &s);
        assert_true(has_check(&s, "OSD_DOWN"));
        assert_true(has_check(&s, "PG_DEGRADED"));
        assert_true(s.degraded_ratio > 0.19 && s.degraded_ratio < 0.2);
        assert_int_equal(s.pgs_degraded, 29 + 3); /* undersized+degraded, undersized */
        assert_int_equal(s.pgs_inactive, 0);
        assert_int_equal(s.read_bytes_per_sec, 0);
        assert_int_equal(gantry_backend_sample_state(&s), GANTRY_OBSERVED_DEGRADED);
}

static void test_peering_is_unavailable(void **state)
{
        struct gantry_backend_sample s;

        (void)state;
        parse_fixture("status-peering.json", &s);
        assert_int_equal(s.pgs_inactive, 4);
        assert_true(has_check(&s, "PG_AVAILABILITY"));
        assert_int_equal(gantry_backend_sample_state(&s), GANTRY_OBSERVED_UNAVAILABLE);
}

static void test_recovering(void **state)
{
        struct gantry_backend_sample s;

        (void)state;
        parse_fixture("status-recovering.json", &s);
        assert_int_equal(s.recovery_bytes_per_sec, 39887358);
        assert_int_equal(s.read_bytes_per_sec, 21716450);
        assert_int_equal(s.write_bytes_per_sec, 108);
        assert_int_equal(s.pgs_recovering, 29);
        assert_false(has_check(&s, "OSD_DOWN")); /* out: no longer reported down */
        assert_int_equal(gantry_backend_sample_state(&s), GANTRY_OBSERVED_RECOVERING);
}

static void test_recovery_without_rate_field(void **state)
{
        struct gantry_backend_sample s;

        (void)state;
        parse_fixture("status-recovery-no-rate.json", &s);
        assert_int_equal(s.recovery_bytes_per_sec, 0);
        assert_int_equal(s.pgs_recovering, 7); /* backfill_wait + backfilling */
        assert_int_equal(gantry_backend_sample_state(&s), GANTRY_OBSERVED_RECOVERING);
}

static void expect_parse_error(const char *json, const char *needle)
{
        struct gantry_backend_sample s = { .pgs = 77 };
        struct gantry_error err = { 0 };

        assert_int_equal(gantry_ceph_status_parse(json, strlen(json), &s, &err), -EINVAL);
        assert_non_null(strstr(err.msg, needle));
        assert_int_equal(s.pgs, 77); /* untouched on failure */
}

/* Ceph's recovery rate outlives the recovery by seconds: all PGs clean is not Recovering. */
static void test_rate_left_after_recovery(void **state)
{
        const char *json = "{\"pgmap\":{\"num_pgs\":2,\"recovering_bytes_per_sec\":3000000,"
                           "\"pgs_by_state\":[{\"state_name\":\"active+clean\",\"count\":2}]}}";
        struct gantry_backend_sample s;
        struct gantry_error err = { 0 };

        (void)state;
        assert_int_equal(gantry_ceph_status_parse(json, strlen(json), &s, &err), 0);
        assert_int_equal(s.recovery_bytes_per_sec, 3000000);
        assert_int_equal(gantry_backend_sample_state(&s), GANTRY_OBSERVED_HEALTHY);
        parse_fixture("status-recovering.json", &s);
        assert_true(s.pgs_unclean > 0);
}

static void test_bad_answers(void **state)
{
        (void)state;
        expect_parse_error("{\"pgmap\":", "status: not JSON");
        expect_parse_error("{\"health\":{}}", "status: pgmap: missing");
        expect_parse_error("[]", "status: pgmap: missing");
        expect_parse_error("{\"pgmap\":{\"pgs_by_state\":{}}}", "pgmap.pgs_by_state: must be a list");
        expect_parse_error("{\"pgmap\":{\"pgs_by_state\":[{\"count\":1}]}}", "pgs_by_state[0]");
        expect_parse_error("{\"pgmap\":{\"read_bytes_sec\":-5}}", "pgmap.read_bytes_sec");
        expect_parse_error("{\"pgmap\":{\"write_bytes_sec\":\"9\"}}", "pgmap.write_bytes_sec");
        expect_parse_error("{\"pgmap\":{\"degraded_ratio\":1.5}}", "pgmap.degraded_ratio");
}

static void test_state_words_are_whole(void **state)
{
        /* "active" must not match "inactive" nor "clean" match "unclean" */
        const char *json = "{\"pgmap\":{\"num_pgs\":3,\"pgs_by_state\":["
                           "{\"state_name\":\"inactive\",\"count\":1},"
                           "{\"state_name\":\"active+clean\",\"count\":2}]}}";
        struct gantry_backend_sample s;
        struct gantry_error err = { 0 };

        (void)state;
        assert_int_equal(gantry_ceph_status_parse(json, strlen(json), &s, &err), 0);
        assert_int_equal(s.pgs_inactive, 1);
        assert_int_equal(gantry_backend_sample_state(&s), GANTRY_OBSERVED_UNAVAILABLE);
}

static void add(struct gantry_backend_smoother *sm, double t, const char *fixture,
                struct gantry_backend_view *v)
{
        struct gantry_backend_sample s;

        parse_fixture(fixture, &s);
        gantry_backend_smoother_add(sm, t, &s, v);
}

static void test_one_odd_sample_does_not_flap(void **state)
{
        struct gantry_backend_smoother sm;
        struct gantry_backend_view v;

        (void)state;
        gantry_backend_smoother_init(&sm, NULL);
        add(&sm, 0, "status-healthy.json", &v);
        add(&sm, 2, "status-healthy.json", &v);
        add(&sm, 4, "status-just-down.json", &v);
        assert_int_equal(v.state, GANTRY_OBSERVED_HEALTHY);
        add(&sm, 6, "status-healthy.json", &v);
        assert_int_equal(v.state, GANTRY_OBSERVED_HEALTHY);
        add(&sm, 8, "status-just-down.json", &v);
        add(&sm, 10, "status-just-down.json", &v);
        assert_int_equal(v.state, GANTRY_OBSERVED_DEGRADED);
        assert_non_null(strstr(v.reason, "OSD_DOWN: 1 osds down"));
        assert_non_null(strstr(v.reason, "PG_DEGRADED: Degraded data redundancy"));
        add(&sm, 12, "status-healthy.json", &v);
        assert_int_equal(v.state, GANTRY_OBSERVED_DEGRADED);
        add(&sm, 14, "status-healthy.json", &v);
        assert_int_equal(v.state, GANTRY_OBSERVED_HEALTHY);
        assert_string_equal(v.reason, "all 41 PGs active+clean");
}

/* PGs peering for a moment after an OSD dies are not an outage; PGs that stay inactive are. */
static void test_inactive_pgs_after_the_grace(void **state)
{
        struct gantry_backend_smoother sm;
        struct gantry_backend_view v;

        (void)state;
        gantry_backend_smoother_init(&sm, NULL);
        add(&sm, 0, "status-healthy.json", &v);
        add(&sm, 2, "status-peering.json", &v);
        add(&sm, 4, "status-peering.json", &v);
        assert_int_equal(v.state, GANTRY_OBSERVED_DEGRADED); /* OSD_DOWN, PGs peering: not yet out */
        for (double t = 6; t <= 10; t += 2)
                add(&sm, t, "status-peering.json", &v);
        assert_int_equal(v.state, GANTRY_OBSERVED_DEGRADED);
        add(&sm, 12, "status-peering.json", &v);
        add(&sm, 14, "status-peering.json", &v);
        assert_int_equal(v.state, GANTRY_OBSERVED_UNAVAILABLE); /* inactive 10 s, seen twice */
        assert_non_null(strstr(v.reason, "4 of 41 PGs inactive"));
        assert_non_null(strstr(v.reason, "PG_AVAILABILITY: Reduced data availability"));
        add(&sm, 16, "status-just-down.json", &v);
        add(&sm, 18, "status-just-down.json", &v);
        assert_int_equal(v.state, GANTRY_OBSERVED_DEGRADED);
}

static void test_rates_average_over_the_window(void **state)
{
        struct gantry_backend_smoother_options o = { .window_seconds = 10, .confirm_samples = 2 };
        struct gantry_backend_smoother sm;
        struct gantry_backend_sample s = { .reachable = true, .pgs = 1 };
        struct gantry_backend_view v;

        (void)state;
        gantry_backend_smoother_init(&sm, &o);
        for (int i = 0; i < 5; i++) {
                s.read_bytes_per_sec = (uint64_t)(i + 1) * 1000000; /* 1..5 MB/s */
                s.write_bytes_per_sec = i == 2 ? 5000000 : 0;       /* one burst */
                gantry_backend_smoother_add(&sm, 2.0 * i, &s, &v);
        }
        assert_int_equal(v.read_bytes_per_sec, 3000000);
        assert_int_equal(v.write_bytes_per_sec, 1000000);
        /* t=10: the sample of t=0 has left the window */
        s.read_bytes_per_sec = 6000000;
        s.write_bytes_per_sec = 0;
        gantry_backend_smoother_add(&sm, 10, &s, &v);
        assert_int_equal(v.read_bytes_per_sec, 4000000);
        assert_int_equal(v.write_bytes_per_sec, 1000000);
}

static void test_unreachable(void **state)
{
        struct gantry_backend_smoother sm;
        struct gantry_backend_sample down = { .reachable = false };
        struct gantry_backend_view v;

        (void)state;
        snprintf(down.error, sizeof(down.error), "status: Ceph did not answer in time");
        gantry_backend_smoother_init(&sm, NULL);
        add(&sm, 0, "status-healthy.json", &v);
        gantry_backend_smoother_add(&sm, 2, &down, &v);
        assert_int_equal(v.state, GANTRY_OBSERVED_HEALTHY);
        assert_int_equal(v.read_bytes_per_sec, (18467747 + 1) / 2); /* a failed poll served nothing */
        gantry_backend_smoother_add(&sm, 4, &down, &v);
        assert_int_equal(v.state, GANTRY_OBSERVED_UNAVAILABLE);
        assert_string_equal(v.reason, "unreachable: status: Ceph did not answer in time");
        gantry_backend_smoother_add(&sm, 14, &down, &v);
        assert_int_equal(v.read_bytes_per_sec, 0);
}

/* The first sample sets the state: a fresh observer of a sick cluster says so at once. */
static void test_first_sample_sets_state(void **state)
{
        struct gantry_backend_smoother sm;
        struct gantry_backend_view v;

        (void)state;
        gantry_backend_smoother_init(&sm, NULL);
        add(&sm, 0, "status-recovering.json", &v);
        assert_int_equal(v.state, GANTRY_OBSERVED_RECOVERING);
        assert_int_equal(v.recovery_bytes_per_sec, 39887358);
        assert_true(v.degraded_ratio > 0.21 && v.degraded_ratio < 0.22);
        assert_non_null(strstr(v.reason, "29 of 41 PGs recovering or waiting to"));
}

/*
 * The whole recorded fault, polled every ~2 s: kill -9 of an OSD at t=0,
 * `osd out` at t=32.79, all PGs active+clean at t=126.36. The observer says
 * Degraded within 10 s of the kill, Recovering within 10 s of the out,
 * Healthy within 15 s of clean, and goes through no other state change.
 */
static void test_recorded_fault(void **state)
{
        const double out_at = 32.79, clean_at = 126.36;
        struct gantry_backend_smoother sm;
        struct gantry_backend_view v;
        enum gantry_observed_state prev = GANTRY_OBSERVED_STATE_COUNT;
        double degraded_at = -1, recovering_at = -1, healthy_at = -1;
        int changes = 0;
        size_t len;
        char *text = read_fixture("series-out-rand.jsonl", &len);
        char *save = NULL;

        (void)state;
        gantry_backend_smoother_init(&sm, NULL);
        for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                json_t *row = json_loads(line, 0, NULL);
                struct gantry_backend_sample s;
                struct gantry_error err = { 0 };
                char *status;
                double t;

                assert_non_null(row);
                t = json_number_value(json_object_get(row, "t"));
                status = json_dumps(json_object_get(row, "status"), JSON_COMPACT);
                assert_non_null(status);
                assert_int_equal(gantry_ceph_status_parse(status, strlen(status), &s, &err), 0);
                gantry_backend_smoother_add(&sm, t, &s, &v);
                if (t < 0)
                        assert_int_equal(v.state, GANTRY_OBSERVED_HEALTHY);
                if (v.state != prev)
                        changes++, prev = v.state;
                if (v.state == GANTRY_OBSERVED_DEGRADED && degraded_at < 0)
                        degraded_at = t;
                if (v.state == GANTRY_OBSERVED_RECOVERING && recovering_at < 0)
                        recovering_at = t;
                if (v.state == GANTRY_OBSERVED_HEALTHY && t > clean_at && healthy_at < 0)
                        healthy_at = t;
                free(status);
                json_decref(row);
        }
        free(text);
        print_message("degraded %.1f s after kill, recovering %.1f s after out, healthy %.1f s "
                      "after clean, %d states\n", degraded_at, recovering_at - out_at,
                      healthy_at - clean_at, changes);
        assert_true(degraded_at >= 0 && degraded_at <= 10);
        assert_true(recovering_at >= out_at && recovering_at <= out_at + 10);
        assert_true(healthy_at >= clean_at && healthy_at <= clean_at + 15);
        assert_int_equal(changes, 4); /* Healthy, Degraded, Recovering, Healthy */
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_healthy),
                cmocka_unit_test(test_idle_has_no_rate_fields),
                cmocka_unit_test(test_just_down),
                cmocka_unit_test(test_peering_is_unavailable),
                cmocka_unit_test(test_recovering),
                cmocka_unit_test(test_recovery_without_rate_field),
                cmocka_unit_test(test_rate_left_after_recovery),
                cmocka_unit_test(test_bad_answers),
                cmocka_unit_test(test_state_words_are_whole),
                cmocka_unit_test(test_one_odd_sample_does_not_flap),
                cmocka_unit_test(test_inactive_pgs_after_the_grace),
                cmocka_unit_test(test_rates_average_over_the_window),
                cmocka_unit_test(test_unreachable),
                cmocka_unit_test(test_first_sample_sets_state),
                cmocka_unit_test(test_recorded_fault),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
