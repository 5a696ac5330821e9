/*
 * Unit tests of the deadline a handler sees (gantry_csi_bound_deadline_ms in
 * csi/server.c): a call without a client deadline gets a finite one, now +
 * --max-call-seconds; a client's own deadline passes through untouched.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "server.h"

static void test_missing_deadline_is_bounded(void **state)
{
        int64_t now = 123456789;
        int64_t d = gantry_csi_bound_deadline_ms(INT64_MAX, now, 600);

        (void)state;
        assert_true(d != INT64_MAX);
        assert_int_equal(d - now, 600 * 1000);
        assert_int_equal(gantry_csi_bound_deadline_ms(INT64_MAX, now, 1) - now, 1000);
}

static void test_client_deadline_kept(void **state)
{
        int64_t now = 5000;

        (void)state;
        /* shorter and longer than the bound, and already past: all kept */
        assert_int_equal(gantry_csi_bound_deadline_ms(now + 2000, now, 600), now + 2000);
        assert_int_equal(gantry_csi_bound_deadline_ms(now + 3600000, now, 600), now + 3600000);
        assert_int_equal(gantry_csi_bound_deadline_ms(now - 1, now, 600), now - 1);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_missing_deadline_is_bounded),
                cmocka_unit_test(test_client_deadline_kept),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
