/*
 * Unit tests of the extender's JSON text writer (scheduler-ext/verbs/json_out.c):
 * escaping checked by parsing the output back with jansson.
 */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <jansson.h>

#include "json_out.h"

static void test_strings_round_trip(void **state)
{
        const char *cases[] = { "", "gpu-1", "a\"b", "back\\slash", "tab\there", "nl\n",
                                "\x01\x1f", "caf\xc3\xa9", "</script>" };
        (void)state;
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct json_out o = { 0 };
                char *text;
                json_t *v;

                json_out_raw(&o, "[");
                json_out_string(&o, cases[i]);
                json_out_raw(&o, ",");
                json_out_int(&o, -42);
                json_out_raw(&o, "]");
                text = json_out_finish(&o);
                assert_non_null(text);
                v = json_loads(text, 0, NULL);
                assert_non_null(v);
                assert_string_equal(json_string_value(json_array_get(v, 0)), cases[i]);
                assert_int_equal(json_integer_value(json_array_get(v, 1)), -42);
                json_decref(v);
                free(text);
        }
}

/* Integers are written as printf("%ld") writes them, the extremes included. */
static void test_ints_as_printf(void **state)
{
        const long cases[] = { 0, 1, -1, 9, 10, 99, 100, -100, 12345, LONG_MAX, LONG_MIN };

        (void)state;
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct json_out o = { 0 };
                char want[32], *text;

                snprintf(want, sizeof(want), "%ld", cases[i]);
                json_out_int(&o, cases[i]);
                text = json_out_finish(&o);
                assert_non_null(text);
                assert_string_equal(text, want);
                free(text);
        }
}

static void test_large_output_grows(void **state)
{
        struct json_out o = { 0 };
        char *text;
        json_t *v;

        (void)state;
        json_out_raw(&o, "[");
        for (int i = 0; i < 20000; i++) {
                json_out_raw(&o, i ? "," : "");
                json_out_string(&o, "gpu-node-with-a-long-name");
        }
        json_out_raw(&o, "]");
        text = json_out_finish(&o);
        assert_non_null(text);
        v = json_loads(text, 0, NULL);
        assert_int_equal(json_array_size(v), 20000);
        json_decref(v);
        free(text);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_strings_round_trip),
                cmocka_unit_test(test_ints_as_printf),
                cmocka_unit_test(test_large_output_grows),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
