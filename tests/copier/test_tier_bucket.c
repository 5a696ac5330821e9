/*
 * Unit tests of the shared bandwidth cap (copier/bucket.c) over a fake clock,
 * and of its cancel-aware wait.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "bucket.h"

#define MS 1000000ull
#define S 1000000000ull

static void test_unlimited(void **state)
{
        struct gantry_copier_bucket *b;

        (void)state;
        assert_int_equal(gantry_copier_bucket_new(0, &b), 0);
        for (int i = 0; i < 100; i++)
                assert_int_equal(gantry_copier_bucket_reserve(b, 0, 1ull << 30), 0);
        assert_int_equal(gantry_copier_bucket_reserve(NULL, 0, 1ull << 30), 0);
        gantry_copier_bucket_free(b);
        gantry_copier_bucket_free(NULL);
}

/* Takers that always move as soon as the bucket lets them: the rate holds. */
static void test_rate_holds(void **state)
{
        struct gantry_copier_bucket *b;
        uint64_t now = 7 * S, moved = 0;

        (void)state;
        assert_int_equal(gantry_copier_bucket_new(100000000, &b), 0); /* 100 MB/s */
        /* the burst: 100 ms worth goes at once */
        assert_int_equal(gantry_copier_bucket_reserve(b, now, 4000000), 0);
        assert_int_equal(gantry_copier_bucket_reserve(b, now, 6000000), 0);
        /* the next 4 MB waits its 40 ms */
        assert_int_equal(gantry_copier_bucket_reserve(b, now, 4000000), 40 * MS);
        moved = 14000000;
        /* ten seconds of back-to-back 4 MB objects */
        while (now < 17 * S) {
                now += gantry_copier_bucket_reserve(b, now, 4000000);
                moved += 4000000;
        }
        /* 10 s at 100 MB/s, plus the burst and the last object */
        assert_true(moved >= 1000000000ull && moved <= 1000000000ull + 14000000 + 4000000);
        gantry_copier_bucket_free(b);
}

/* Two copies sharing one cap get half each. */
static void test_shared(void **state)
{
        struct gantry_copier_bucket *b;
        uint64_t t[2] = { 0, 0 }, moved[2] = { 0, 0 };

        (void)state;
        assert_int_equal(gantry_copier_bucket_new(200000000, &b), 0);
        while (t[0] < 5 * S || t[1] < 5 * S) {
                int k = t[0] <= t[1] ? 0 : 1;
                t[k] += gantry_copier_bucket_reserve(b, t[k], 4000000);
                moved[k] += 4000000;
        }
        assert_true(moved[0] + moved[1] <= 5 * 200000000ull + 30000000);
        assert_true(moved[0] > 400000000 && moved[1] > 400000000);
        gantry_copier_bucket_free(b);
}

/* An idle bucket does not bank more than its burst. */
static void test_idle_banks_burst_only(void **state)
{
        struct gantry_copier_bucket *b;

        (void)state;
        assert_int_equal(gantry_copier_bucket_new(100000000, &b), 0);
        assert_int_equal(gantry_copier_bucket_reserve(b, 0, 1000000), 0);
        /* an hour idle, then 50 MB: only 10 MB go without waiting */
        assert_int_equal(gantry_copier_bucket_reserve(b, 3600 * S, 50000000), 400 * MS);
        gantry_copier_bucket_set_rate(b, 0);
        assert_int_equal(gantry_copier_bucket_rate(b), 0);
        assert_int_equal(gantry_copier_bucket_reserve(b, 3600 * S, 50000000), 0);
        gantry_copier_bucket_free(b);
}

static void test_take_cancel(void **state)
{
        struct gantry_copier_bucket *b;
        atomic_bool cancel;

        (void)state;
        atomic_init(&cancel, false);
        assert_int_equal(gantry_copier_bucket_new(1000, &b), 0); /* 1 kB/s */
        assert_int_equal(gantry_copier_bucket_take(b, 10, &cancel), 0);
        /* a taker that would wait for hours leaves as soon as it is cancelled */
        atomic_store(&cancel, true);
        assert_int_equal(gantry_copier_bucket_take(b, 100000000, &cancel), -ECANCELED);
        gantry_copier_bucket_free(b);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_unlimited),
                cmocka_unit_test(test_rate_holds),
                cmocka_unit_test(test_shared),
                cmocka_unit_test(test_idle_banks_burst_only),
                cmocka_unit_test(test_take_cancel),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
