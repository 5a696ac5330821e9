/*
 * Unit tests of a copy's resumable position (copier/position.c): the
 * watermark over done and unplanned objects, the window, the text form.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "position.h"

static void test_plan_next(void **state)
{
        uint64_t plan[3] = { 0 };

        (void)state;
        plan[0] = 1ull << 5;
        plan[2] = 1ull << 1; /* object 129 */
        assert_int_equal(gantry_copier_plan_next(plan, 150, 0), 5);
        assert_int_equal(gantry_copier_plan_next(plan, 150, 5), 5);
        assert_int_equal(gantry_copier_plan_next(plan, 150, 6), 129);
        assert_int_equal(gantry_copier_plan_next(plan, 150, 130), 150);
        assert_int_equal(gantry_copier_plan_next(plan, 129, 6), 129); /* beyond count: none */
        assert_int_equal(gantry_copier_plan_next(NULL, 10, 3), 3);
        assert_int_equal(gantry_copier_plan_next(NULL, 10, 12), 10);
}

static void test_watermark(void **state)
{
        struct gantry_copier_position p;

        (void)state;
        gantry_copier_position_init(&p, 10, NULL, 4);
        assert_int_equal(p.watermark, 0);
        assert_true(gantry_copier_position_may_start(&p, 3));
        assert_false(gantry_copier_position_may_start(&p, 4));
        /* done out of order: the watermark waits for object 0 */
        gantry_copier_position_mark_done(&p, 2);
        gantry_copier_position_mark_done(&p, 1);
        assert_int_equal(p.watermark, 0);
        assert_true(gantry_copier_position_is_done(&p, 2));
        assert_false(gantry_copier_position_is_done(&p, 0));
        gantry_copier_position_mark_done(&p, 0);
        assert_int_equal(p.watermark, 3);
        assert_true(gantry_copier_position_may_start(&p, 6));
        for (uint64_t i = 3; i < 10; i++)
                gantry_copier_position_mark_done(&p, i);
        assert_true(gantry_copier_position_complete(&p));
}

static void test_holes_count_as_done(void **state)
{
        uint64_t plan[2] = { 0 };
        struct gantry_copier_position p;

        (void)state;
        /* objects 3, 4 and 100 hold data; the rest are holes */
        plan[0] = (1ull << 3) | (1ull << 4);
        plan[1] = 1ull << (100 - 64);
        gantry_copier_position_init(&p, 120, plan, 2);
        assert_int_equal(p.watermark, 3);
        assert_true(gantry_copier_position_is_done(&p, 50));
        gantry_copier_position_mark_done(&p, 4);
        assert_int_equal(p.watermark, 3);
        gantry_copier_position_mark_done(&p, 3);
        assert_int_equal(p.watermark, 100); /* over the hole at once */
        assert_false(gantry_copier_position_complete(&p));
        gantry_copier_position_mark_done(&p, 100);
        assert_int_equal(p.watermark, 120);
        assert_true(gantry_copier_position_complete(&p));
}

static void test_text_round_trip(void **state)
{
        struct gantry_copier_position p, q;
        char buf[GANTRY_COPIER_POSITION_MAX];

        (void)state;
        gantry_copier_position_init(&p, 5000, NULL, 64);
        assert_int_equal(gantry_copier_position_encode(&p, buf, sizeof(buf)), 1);
        assert_string_equal(buf, "0");
        for (uint64_t i = 0; i < 1000; i++)
                gantry_copier_position_mark_done(&p, i);
        gantry_copier_position_mark_done(&p, 1003);
        gantry_copier_position_mark_done(&p, 1010);
        gantry_copier_position_encode(&p, buf, sizeof(buf));
        assert_string_equal(buf, "1000:1003,1010");

        gantry_copier_position_init(&q, 5000, NULL, 64);
        assert_int_equal(gantry_copier_position_decode(&q, buf), 0);
        assert_int_equal(q.watermark, 1000);
        assert_true(gantry_copier_position_is_done(&q, 1003));
        assert_true(gantry_copier_position_is_done(&q, 1010));
        assert_false(gantry_copier_position_is_done(&q, 1001));
        /* the restored set behaves: finishing 1000..1002 moves to 1004 */
        for (uint64_t i = 1000; i < 1003; i++)
                gantry_copier_position_mark_done(&q, i);
        assert_int_equal(q.watermark, 1004);
        /* too small a buffer says so */
        assert_int_equal(gantry_copier_position_encode(&p, buf, 6), -ENOBUFS);
        /* NULL and "" are the start */
        gantry_copier_position_init(&q, 5000, NULL, 64);
        assert_int_equal(gantry_copier_position_decode(&q, NULL), 0);
        assert_int_equal(gantry_copier_position_decode(&q, ""), 0);
        assert_int_equal(q.watermark, 0);
}

static void test_decode_rejects(void **state)
{
        static const char *const bad[] = {
                "x", "-1", "5001", "10:", "10:10", "10:12,11", "10:12,12", "10:5000",
                "10:1034", "10,12", "10:12 ", " 10", "99999999999999999999999",
        };
        struct gantry_copier_position q;

        (void)state;
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                gantry_copier_position_init(&q, 5000, NULL, 64);
                assert_int_equal(gantry_copier_position_decode(&q, bad[i]), -EINVAL);
                assert_int_equal(q.watermark, 0); /* untouched */
        }
        gantry_copier_position_init(&q, 5000, NULL, 64);
        assert_int_equal(gantry_copier_position_decode(&q, "5000"), 0);
        assert_true(gantry_copier_position_complete(&q));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_plan_next),
                cmocka_unit_test(test_watermark),
                cmocka_unit_test(test_holes_count_as_done),
                cmocka_unit_test(test_text_round_trip),
                cmocka_unit_test(test_decode_rejects),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
