/*
 * Unit tests of a copy's progress arithmetic (copier/progress.c): the smoothed
 * rate over a fake clock, the ETA and the operator's line.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "progress.h"

#define S 1000000000ull
#define MB 1000000ull

static void test_rate_steady(void **state)
{
        struct gantry_copier_rate m;
        double r = 0;

        (void)state;
        gantry_copier_rate_start(&m, 10 * S, 0);
        /* 100 MB/s for 30 s, sampled every second */
        for (uint64_t t = 1; t <= 30; t++)
                r = gantry_copier_rate_update(&m, (10 + t) * S, t * 100 * MB);
        assert_true(r > 99.9 * MB && r < 100.1 * MB);
}

static void test_rate_follows_change(void **state)
{
        struct gantry_copier_rate m;
        uint64_t bytes = 0;
        double r = 0;

        (void)state;
        gantry_copier_rate_start(&m, 0, 0);
        for (uint64_t t = 1; t <= 20; t++)
                r = gantry_copier_rate_update(&m, t * S, bytes += 100 * MB);
        /* the rate halves: after one time constant the average moved most of the way */
        for (uint64_t t = 21; t <= 25; t++)
                r = gantry_copier_rate_update(&m, t * S, bytes += 50 * MB);
        assert_true(r < 70 * MB && r > 50 * MB);
        for (uint64_t t = 26; t <= 60; t++)
                r = gantry_copier_rate_update(&m, t * S, bytes += 50 * MB);
        assert_true(r < 50.5 * MB && r > 49.5 * MB);
}

static void test_rate_resume_and_close_samples(void **state)
{
        struct gantry_copier_rate m;

        (void)state;
        /* a resumed copy starts at 3 GB done: that is not speed */
        gantry_copier_rate_start(&m, 5 * S, 3000 * MB);
        assert_true(gantry_copier_rate_update(&m, 5 * S + S / 10, 3001 * MB) == 0);
        /* the sample 100 ms later was folded into this one: 20 MB in 1 s */
        assert_true(gantry_copier_rate_update(&m, 6 * S, 3020 * MB) == 20.0 * MB);
        /* a clock that did not move changes nothing */
        assert_true(gantry_copier_rate_update(&m, 6 * S, 4000 * MB) == 20.0 * MB);
}

static void test_eta(void **state)
{
        (void)state;
        assert_true(gantry_copier_eta(0, 0) == 0);
        assert_true(gantry_copier_eta(100, 0) < 0);
        assert_true(gantry_copier_eta(600 * MB, 2 * MB) == 300);
}

static void test_format(void **state)
{
        struct gantry_copier_progress p = { .planned = true };
        char buf[128];

        (void)state;
        p.bytes_total = 1000 * MB;
        p.bytes_done = 419 * MB;
        p.rate = 2.3e9;
        p.eta_seconds = 6 * 60 + 10;
        gantry_copier_progress_format(&p, buf, sizeof(buf));
        assert_string_equal(buf, "41 %, 2.3 GB/s, about 6 min left");
        p.rate = 0;
        gantry_copier_progress_format(&p, buf, sizeof(buf));
        assert_string_equal(buf, "41 %, starting");
        /* 99.99 % is not done */
        p.bytes_done = p.bytes_total - 1;
        p.rate = 250e6;
        p.eta_seconds = 0.4;
        gantry_copier_progress_format(&p, buf, sizeof(buf));
        assert_string_equal(buf, "99 %, 250 MB/s, about 0 s left");
        p.bytes_done = p.bytes_total;
        gantry_copier_progress_format(&p, buf, sizeof(buf));
        assert_string_equal(buf, "100 %");
        /* a source that is all holes has nothing to copy: done */
        p.bytes_total = p.bytes_done = 0;
        gantry_copier_progress_format(&p, buf, sizeof(buf));
        assert_string_equal(buf, "100 %");
        p.planned = false;
        gantry_copier_progress_format(&p, buf, sizeof(buf));
        assert_string_equal(buf, "planning");
        /* truncation is snprintf's */
        p.planned = true;
        p.bytes_total = 10;
        p.bytes_done = 5;
        p.rate = 1;
        assert_int_equal(gantry_copier_progress_format(&p, buf, 4), 27); /* "50 %, 1 B/s, about 0 s left" */
        assert_string_equal(buf, "50 ");
}

static void test_units(void **state)
{
        char buf[32];

        (void)state;
        gantry_copier_format_rate(999, buf, sizeof(buf));
        assert_string_equal(buf, "999 B/s");
        gantry_copier_format_rate(1500, buf, sizeof(buf));
        assert_string_equal(buf, "1.5 kB/s");
        gantry_copier_format_rate(42e6, buf, sizeof(buf));
        assert_string_equal(buf, "42 MB/s");
        gantry_copier_format_duration(-1, buf, sizeof(buf));
        assert_string_equal(buf, "?");
        gantry_copier_format_duration(89, buf, sizeof(buf));
        assert_string_equal(buf, "89 s");
        gantry_copier_format_duration(90, buf, sizeof(buf));
        assert_string_equal(buf, "2 min");
        gantry_copier_format_duration(2 * 3600 + 10 * 60 + 5, buf, sizeof(buf));
        assert_string_equal(buf, "2 h 10 min");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_rate_steady),
                cmocka_unit_test(test_rate_follows_change),
                cmocka_unit_test(test_rate_resume_and_close_samples),
                cmocka_unit_test(test_eta),
                cmocka_unit_test(test_format),
                cmocka_unit_test(test_units),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
