/*
 * The bounded byte buffer of the HTTP clients (common/byte_buf.c): bytes
 * appended in pieces come out whole and NUL-terminated, a body at the limit
 * is taken, one byte past it is refused whole (too_large set, nothing
 * appended), and the curl write callback says so with 0.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "byte_buf.h"

static void test_pieces_then_limit(void **state)
{
        struct gantry_buf b = { .max = 6000 };
        char big[5000];

        (void)state;
        memset(big, 'a', sizeof(big));
        assert_int_equal(gantry_buf_append(&b, "ab", 2), 0);
        assert_int_equal(gantry_buf_append(&b, big, sizeof(big)), 0); /* grows past 4096 */
        assert_int_equal(b.len, 5002);
        assert_int_equal(b.data[b.len], '\0');
        assert_memory_equal(b.data, "abaa", 4);
        assert_int_equal(gantry_buf_append(&b, big, 998), 0); /* exactly at the limit */
        assert_int_equal(b.len, 6000);
        assert_false(b.too_large);
        assert_int_equal(gantry_buf_append(&b, "x", 1), -EMSGSIZE);
        assert_true(b.too_large);
        assert_int_equal(b.len, 6000);
        assert_int_equal(b.data[6000], '\0');
        free(b.data);
}

static void test_curl_write(void **state)
{
        struct gantry_buf b = { .max = 8 };

        (void)state;
        assert_int_equal(gantry_buf_curl_write("abcd", 1, 4, &b), 4);
        assert_int_equal(gantry_buf_curl_write("efgh", 2, 2, &b), 4);
        assert_string_equal(b.data, "abcdefgh");
        assert_int_equal(gantry_buf_curl_write("i", 1, 1, &b), 0);
        assert_true(b.too_large);
        assert_string_equal(b.data, "abcdefgh");
        free(b.data);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_pieces_then_limit),
                cmocka_unit_test(test_curl_write),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
