/*
 * Unit tests of node/qos/usage_window.c on synthetic sample series: a
 * sample every 10 s with counters advanced by a chosen rate, timestamps made
 * up (no wall clock). Checks rates, IOPS, stall share, the at-cap share
 * (the 95 % threshold, a cap changed mid-window), the verdicts and their
 * event texts, the window sliding, counters going back, bad input.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "usage_window.h"

#define MB 1000000ull
#define STEP_MS 10000ull

/* A series under construction: the counters of the last sample. */
struct series {
        struct gantry_usage_window *w;
        struct gantry_usage_sample s;
};

static void series_init(struct series *x)
{
        memset(x, 0, sizeof(*x));
        assert_int_equal(gantry_usage_window_new(NULL, &x->w), 0);
        assert_int_equal(gantry_usage_window_add(x->w, &x->s), 0);
}

/* @n steps of 10 s at @rbps/@wbps bytes/s under caps @rcap/@wcap, with
 * @stall_ms of IO pressure per step and 1 MiB per IO. */
static void steps(struct series *x, unsigned n, uint64_t rbps, uint64_t wbps, uint64_t rcap,
                  uint64_t wcap, uint64_t stall_ms)
{
        for (unsigned i = 0; i < n; i++) {
                x->s.t_ms += STEP_MS;
                x->s.rbytes += rbps * STEP_MS / 1000;
                x->s.wbytes += wbps * STEP_MS / 1000;
                x->s.rios += rbps * STEP_MS / 1000 / (1024 * 1024);
                x->s.wios += wbps * STEP_MS / 1000 / (1024 * 1024);
                x->s.stall_us += stall_ms * 1000;
                x->s.rbps_cap = rcap;
                x->s.wbps_cap = wcap;
                assert_int_equal(gantry_usage_window_add(x->w, &x->s), 0);
        }
}

static void test_at_cap(void **state)
{
        const uint64_t cap = 3125000000ull; /* 25 Gbps */
        struct gantry_usage_summary s;
        struct series x;
        char msg[256];

        (void)state;
        series_init(&x);
        /* 5 of 60 intervals well below, 55 at 96 % of the cap: 91.7 % */
        steps(&x, 5, cap / 2, 0, cap, 0, 0);
        steps(&x, 55, cap / 100 * 96, 0, cap, 0, 0);
        gantry_usage_window_summary(x.w, cap, 0, &s);
        assert_int_equal(s.span_ms, 600000);
        assert_int_equal(s.verdict, GANTRY_USAGE_AT_CAP);
        assert_int_equal(s.verdict_direction, GANTRY_USAGE_READ);
        assert_float_equal(s.at_cap_share[0], 55.0 / 60, 1e-9);
        assert_float_equal(s.at_cap_share[1], 0, 1e-9);
        assert_string_equal(gantry_usage_verdict_reason(s.verdict), "BandwidthAtCap");
        gantry_usage_window_message(&s, 600000, cap, cap, msg, sizeof(msg));
        assert_string_equal(msg, "reads at its 25 Gbps cap 92 % of the last 10 min: declare more, "
                                 "or expect slower epochs");
        gantry_usage_window_free(x.w);
}

static void test_threshold_is_95_percent(void **state)
{
        struct gantry_usage_summary s;
        struct series x;

        (void)state;
        series_init(&x);
        steps(&x, 60, 94 * MB, 0, 100 * MB, 0, 0);
        gantry_usage_window_summary(x.w, 100 * MB, 0, &s);
        assert_float_equal(s.at_cap_share[0], 0, 1e-9);
        assert_int_equal(s.verdict, GANTRY_USAGE_FINE);
        steps(&x, 60, 95 * MB, 0, 100 * MB, 0, 0);
        gantry_usage_window_summary(x.w, 100 * MB, 0, &s);
        assert_float_equal(s.at_cap_share[0], 1, 1e-9);
        assert_int_equal(s.verdict, GANTRY_USAGE_AT_CAP);
        gantry_usage_window_free(x.w);
}

static void test_writes_at_cap_and_no_cap(void **state)
{
        struct gantry_usage_summary s;
        struct series x;
        char msg[256];

        (void)state;
        series_init(&x);
        /* reads uncapped (cap 0) at any rate are never "at cap" */
        steps(&x, 60, 900 * MB, 40 * MB, 0, 40 * MB, 0);
        gantry_usage_window_summary(x.w, 0, 40 * MB, &s);
        assert_float_equal(s.at_cap_share[0], 0, 1e-9);
        assert_int_equal(s.verdict, GANTRY_USAGE_AT_CAP);
        assert_int_equal(s.verdict_direction, GANTRY_USAGE_WRITE);
        gantry_usage_window_message(&s, 600000, 40 * MB, 40 * MB, msg, sizeof(msg));
        assert_string_equal(msg, "writes at its 0.32 Gbps cap 100 % of the last 10 min: declare more, "
                                 "or expect slower epochs");
        gantry_usage_window_free(x.w);
}

/* Small random reads held by an IOPS cap: at cap though far below any
 * bytes/s cap, and the event names the IOPS cap. */
static void test_iops_cap(void **state)
{
        struct gantry_usage_summary s;
        struct series x;
        char msg[256];

        (void)state;
        series_init(&x);
        for (unsigned i = 0; i < 60; i++) {
                x.s.t_ms += STEP_MS;
                x.s.rbytes += 5000ull * 10 * 4096; /* 5,000 IOPS of 4 KiB: 20 MB/s */
                x.s.rios += 5000ull * 10;
                x.s.rbps_cap = 1000 * MB;
                x.s.riops_cap = 5000;
                assert_int_equal(gantry_usage_window_add(x.w, &x.s), 0);
        }
        gantry_usage_window_summary(x.w, 1000 * MB, 0, &s);
        assert_float_equal(s.iops[0], 5000, 1e-9);
        assert_float_equal(s.at_cap_share[0], 1, 1e-9);
        assert_true(s.at_iops_cap[0]);
        assert_int_equal(s.verdict, GANTRY_USAGE_AT_CAP);
        gantry_usage_window_message(&s, 600000, 1000 * MB, 1000 * MB, msg, sizeof(msg));
        assert_string_equal(msg, "reads at its 5000 IOPS cap 100 % of the last 10 min: declare more, "
                                 "or expect slower epochs");
        /* at 90 % of the IOPS cap: not at cap, and underused against 1 GB/s declared */
        for (unsigned i = 0; i < 60; i++) {
                x.s.t_ms += STEP_MS;
                x.s.rbytes += 4500ull * 10 * 4096;
                x.s.rios += 4500ull * 10;
                assert_int_equal(gantry_usage_window_add(x.w, &x.s), 0);
        }
        gantry_usage_window_summary(x.w, 1000 * MB, 0, &s);
        assert_float_equal(s.at_cap_share[0], 0, 1e-9);
        assert_false(s.at_iops_cap[0]);
        assert_int_equal(s.verdict, GANTRY_USAGE_UNDERUSED);
        gantry_usage_window_free(x.w);
}

static void test_underused(void **state)
{
        struct gantry_usage_summary s;
        struct series x;
        char msg[256];

        (void)state;
        series_init(&x);
        steps(&x, 60, 250 * MB, 0, 1250 * MB, 0, 0); /* 2 Gbps of a 10 Gbps declaration */
        gantry_usage_window_summary(x.w, 1250 * MB, 0, &s);
        assert_float_equal(s.bps[0], 250 * MB, 1e-3);
        assert_float_equal(s.used_share[0], 0.2, 1e-9);
        assert_int_equal(s.verdict, GANTRY_USAGE_UNDERUSED);
        assert_string_equal(gantry_usage_verdict_reason(s.verdict), "BandwidthUnderused");
        gantry_usage_window_message(&s, 600000, 1250 * MB, 1250 * MB, msg, sizeof(msg));
        assert_string_equal(msg, "reads 2.0 Gbps of the 10 Gbps it declared (20 %) over the last "
                                 "10 min: declare less, and the scheduler can place more on its links");
        /* nothing declared: never underused */
        gantry_usage_window_summary(x.w, 0, 0, &s);
        assert_int_equal(s.verdict, GANTRY_USAGE_FINE);
        /* 30 % of the declaration is fine */
        gantry_usage_window_summary(x.w, 250 * MB * 10 / 3, 0, &s);
        assert_int_equal(s.verdict, GANTRY_USAGE_FINE);
        gantry_usage_window_free(x.w);
}

static void test_rates_iops_stall(void **state)
{
        struct gantry_usage_summary s;
        struct series x;

        (void)state;
        series_init(&x);
        steps(&x, 30, 100 * 1048576ull, 10 * 1048576ull, 0, 0, 300);
        gantry_usage_window_summary(x.w, 0, 0, &s);
        assert_int_equal(s.span_ms, 300000);
        assert_int_equal(s.verdict, GANTRY_USAGE_WARMING); /* half a window */
        assert_float_equal(s.bps[0], 100 * 1048576.0, 1e-3);
        assert_float_equal(s.bps[1], 10 * 1048576.0, 1e-3);
        assert_float_equal(s.iops[0], 100, 1e-9);
        assert_float_equal(s.iops[1], 10, 1e-9);
        assert_float_equal(s.stall_share, 0.03, 1e-9);
        gantry_usage_window_free(x.w);
}

static void test_cap_changed_mid_window(void **state)
{
        struct gantry_usage_summary s;
        struct series x;

        (void)state;
        series_init(&x);
        steps(&x, 30, 100 * MB, 0, 100 * MB, 0, 0); /* at its cap */
        steps(&x, 30, 100 * MB, 0, 200 * MB, 0, 0); /* cap raised, same rate */
        gantry_usage_window_summary(x.w, 200 * MB, 0, &s);
        assert_float_equal(s.at_cap_share[0], 0.5, 1e-9);
        assert_int_equal(s.verdict, GANTRY_USAGE_FINE);
        gantry_usage_window_free(x.w);
}

static void test_window_slides(void **state)
{
        struct gantry_usage_summary s;
        struct series x;

        (void)state;
        series_init(&x);
        steps(&x, 60, 100 * MB, 0, 100 * MB, 0, 0);
        gantry_usage_window_summary(x.w, 100 * MB, 0, &s);
        assert_int_equal(s.verdict, GANTRY_USAGE_AT_CAP);
        /* another 10 min well below: the first 10 min fall out */
        steps(&x, 60, 50 * MB, 0, 100 * MB, 0, 0);
        assert_int_equal(gantry_usage_window_count(x.w), 61);
        gantry_usage_window_summary(x.w, 100 * MB, 0, &s);
        assert_int_equal(s.span_ms, 600000);
        assert_float_equal(s.at_cap_share[0], 0, 1e-9);
        assert_float_equal(s.bps[0], 50 * MB, 1e-3);
        assert_int_equal(s.verdict, GANTRY_USAGE_FINE);
        /* fast sampling never holds more than the bound */
        for (unsigned i = 0; i < 2 * GANTRY_USAGE_WINDOW_MAX_SAMPLES; i++) {
                x.s.t_ms += 100;
                assert_int_equal(gantry_usage_window_add(x.w, &x.s), 0);
        }
        assert_int_equal(gantry_usage_window_count(x.w), GANTRY_USAGE_WINDOW_MAX_SAMPLES);
        gantry_usage_window_free(x.w);
}

static void test_counters_back_and_bad_input(void **state)
{
        struct gantry_usage_summary s;
        struct gantry_usage_window_config c;
        struct gantry_usage_window *w = NULL;
        struct series x;

        (void)state;
        series_init(&x);
        steps(&x, 60, 100 * MB, 0, 100 * MB, 0, 0);
        /* a sample not after the last is refused, the window unchanged */
        assert_int_equal(gantry_usage_window_add(x.w, &x.s), -EINVAL);
        assert_int_equal(gantry_usage_window_count(x.w), 61);
        /* the cgroup was made again: counters restart from small values */
        x.s.t_ms += STEP_MS;
        x.s.rbytes = 4096;
        assert_int_equal(gantry_usage_window_add(x.w, &x.s), 0);
        assert_int_equal(gantry_usage_window_count(x.w), 1);
        gantry_usage_window_summary(x.w, 100 * MB, 0, &s);
        assert_int_equal(s.verdict, GANTRY_USAGE_WARMING);
        assert_float_equal(s.bps[0], 0, 1e-9);
        gantry_usage_window_free(x.w);

        gantry_usage_window_config_default(&c);
        c.window_ms = 0;
        assert_int_equal(gantry_usage_window_new(&c, &w), -EINVAL);
        gantry_usage_window_config_default(&c);
        c.at_cap_share = 1.5;
        assert_int_equal(gantry_usage_window_new(&c, &w), -EINVAL);
        assert_null(w);
        gantry_usage_window_free(NULL);
        gantry_usage_window_summary(NULL, 0, 0, &s);
        assert_int_equal(s.verdict, GANTRY_USAGE_WARMING);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_at_cap),
                cmocka_unit_test(test_threshold_is_95_percent),
                cmocka_unit_test(test_writes_at_cap_and_no_cap),
                cmocka_unit_test(test_iops_cap),
                cmocka_unit_test(test_underused),
                cmocka_unit_test(test_rates_iops_stall),
                cmocka_unit_test(test_cap_changed_mid_window),
                cmocka_unit_test(test_window_slides),
                cmocka_unit_test(test_counters_back_and_bad_input),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
