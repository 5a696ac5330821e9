/*
 * Unit tests of a copy's record (tier/record.c): demotion's fields
 * ("lastUsed", "demoted") survive a round trip, a record without them (an
 * older writer) reads as never used, the idle clock, and the operator's
 * line of the demotion states.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "record.h"

static void test_round_trip_keeps_demotion_fields(void **state)
{
        struct gantry_tier_record r = { 0 }, back;
        char *json;

        (void)state;
        strcpy(r.kind, "promote");
        strcpy(r.id, "0b8f7f6e-0000-4000-8000-000000000001");
        strcpy(r.state, "demoted");
        r.updated = 1764000100;
        r.last_used = 1764000200;
        r.demoted = 1764000300;
        assert_int_equal(gantry_tier_record_encode(&r, &json), 0);
        assert_non_null(strstr(json, "\"lastUsed\":1764000200"));
        assert_non_null(strstr(json, "\"demoted\":1764000300"));
        assert_int_equal(gantry_tier_record_decode(json, strlen(json), &back), 0);
        free(json);
        assert_int_equal(back.last_used, 1764000200);
        assert_int_equal(back.demoted, 1764000300);
        assert_string_equal(back.state, "demoted");
        gantry_tier_record_clear(&back);
}

static void test_older_record_and_idle_clock(void **state)
{
        static const char old[] = "{\"kind\":\"promote\",\"state\":\"done\",\"updated\":1764000100}";
        struct gantry_tier_record r;

        (void)state;
        assert_int_equal(gantry_tier_record_decode(old, strlen(old), &r), 0);
        assert_int_equal(r.last_used, 0);
        assert_int_equal(r.demoted, 0);
        /* never published: idle since the copy completed */
        assert_int_equal(gantry_tier_record_idle_since(&r), 1764000100);
        r.last_used = 1764000500;
        assert_int_equal(gantry_tier_record_idle_since(&r), 1764000500);
        gantry_tier_record_clear(&r);
}

static void test_format_demotion_states(void **state)
{
        struct gantry_tier_record r = { 0 };
        char line[128];

        (void)state;
        strcpy(r.state, "demoted");
        gantry_tier_record_format(&r, line, sizeof(line));
        assert_string_equal(line, "demoted: copied again at the next ControllerPublishVolume");
        strcpy(r.state, "demoting");
        gantry_tier_record_format(&r, line, sizeof(line));
        assert_string_equal(line, "demoting: its data is being discarded");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_round_trip_keeps_demotion_fields),
                cmocka_unit_test(test_older_record_and_idle_clock),
                cmocka_unit_test(test_format_demotion_states),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
