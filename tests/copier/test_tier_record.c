/*
 * Unit tests of a copy's status record (copier/record.c): the JSON round trip,
 * with and without the refresh fields, and what decode refuses;
 * demotion's fields ("lastUsed", "demoted") survive a round trip, a record
 * without them (an older writer) reads as never used, the idle clock, and
 * the operator's line of the demotion states.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "record.h"

static void sample(struct gantry_copier_record *r)
{
        memset(r, 0, sizeof(*r));
        strcpy(r->kind, "promote");
        strcpy(r->id, "0b6c1f2e-0000-4000-8000-000000000001");
        strcpy(r->state, "copying");
        strcpy(r->src_image, "gantry-vol-x");
        strcpy(r->src_snap, "gantry-snap-2");
        r->position = strdup("12:14");
        r->bytes_total = 20u << 20;
        r->src_pool_id = 3;
}

static void test_plain_copy_has_no_refresh_fields(void **state)
{
        struct gantry_copier_record r, back;
        char *json;

        (void)state;
        sample(&r);
        assert_int_equal(gantry_copier_record_encode(&r, &json), 0);
        assert_null(strstr(json, "refresh"));
        assert_null(strstr(json, "promotedSnap"));
        assert_int_equal(gantry_copier_record_decode(json, strlen(json), &back), 0);
        assert_string_equal(back.refresh_of, "");
        assert_string_equal(back.promoted_snap, "");
        assert_string_equal(back.position, "12:14");
        assert_int_equal(back.src_pool_id, 3);
        free(json);
        gantry_copier_record_clear(&back);
        gantry_copier_record_clear(&r);
}

static void test_refresh_fields_round_trip(void **state)
{
        struct gantry_copier_record r, back;
        char *json;

        (void)state;
        sample(&r);
        strcpy(r.promoted_snap, "gantry-promoted");
        strcpy(r.refresh_of, "0b6c1f2e-0000-4000-8000-000000000000");
        strcpy(r.refresh_from, "gantry-snap-1");
        strcpy(r.refresh_parent, "gantry-vol-y@gantry-promoted");
        assert_int_equal(gantry_copier_record_encode(&r, &json), 0);
        assert_int_equal(gantry_copier_record_decode(json, strlen(json), &back), 0);
        assert_string_equal(back.promoted_snap, "gantry-promoted");
        assert_string_equal(back.refresh_of, r.refresh_of);
        assert_string_equal(back.refresh_from, "gantry-snap-1");
        assert_string_equal(back.refresh_parent, "gantry-vol-y@gantry-promoted");
        assert_int_equal(back.bytes_total, 20u << 20);
        free(json);
        gantry_copier_record_clear(&back);
        gantry_copier_record_clear(&r);
}

static void test_decode_refuses_what_is_not_a_record(void **state)
{
        struct gantry_copier_record back;
        static const char *const bad[] = { "[]", "{\"kind\":\"promote\"}", "{\"state\":\"done\"}",
                                           "not json" };

        (void)state;
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                assert_int_equal(gantry_copier_record_decode(bad[i], strlen(bad[i]), &back), -EINVAL);
        /* fields of other writers are ignored, not refused */
        const char *other = "{\"kind\":\"promote\",\"state\":\"demoted\",\"lastUsed\":17,"
                            "\"refreshOf\":\"u\"}";
        assert_int_equal(gantry_copier_record_decode(other, strlen(other), &back), 0);
        assert_string_equal(back.state, "demoted");
        assert_string_equal(back.refresh_of, "u");
        gantry_copier_record_clear(&back);
}

static void test_round_trip_keeps_demotion_fields(void **state)
{
        struct gantry_copier_record r = { 0 }, back;
        char *json;

        (void)state;
        strcpy(r.kind, "promote");
        strcpy(r.id, "0b8f7f6e-0000-4000-8000-000000000001");
        strcpy(r.state, "demoted");
        r.updated = 1764000100;
        r.last_used = 1764000200;
        r.demoted = 1764000300;
        assert_int_equal(gantry_copier_record_encode(&r, &json), 0);
        assert_non_null(strstr(json, "\"lastUsed\":1764000200"));
        assert_non_null(strstr(json, "\"demoted\":1764000300"));
        assert_int_equal(gantry_copier_record_decode(json, strlen(json), &back), 0);
        free(json);
        assert_int_equal(back.last_used, 1764000200);
        assert_int_equal(back.demoted, 1764000300);
        assert_string_equal(back.state, "demoted");
        gantry_copier_record_clear(&back);
}

static void test_older_record_and_idle_clock(void **state)
{
        static const char old[] = "{\"kind\":\"promote\",\"state\":\"done\",\"updated\":1764000100}";
        struct gantry_copier_record r;

        (void)state;
        assert_int_equal(gantry_copier_record_decode(old, strlen(old), &r), 0);
        assert_int_equal(r.last_used, 0);
        assert_int_equal(r.demoted, 0);
        /* never published: idle since the copy completed */
        assert_int_equal(gantry_copier_record_idle_since(&r), 1764000100);
        r.last_used = 1764000500;
        assert_int_equal(gantry_copier_record_idle_since(&r), 1764000500);
        gantry_copier_record_clear(&r);
}

static void test_format_demotion_states(void **state)
{
        struct gantry_copier_record r = { 0 };
        char line[128];

        (void)state;
        strcpy(r.state, "demoted");
        gantry_copier_record_format(&r, line, sizeof(line));
        assert_string_equal(line, "demoted: copied again at the next ControllerPublishVolume");
        strcpy(r.state, "demoting");
        gantry_copier_record_format(&r, line, sizeof(line));
        assert_string_equal(line, "demoting: its data is being discarded");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_plain_copy_has_no_refresh_fields),
                cmocka_unit_test(test_refresh_fields_round_trip),
                cmocka_unit_test(test_decode_refuses_what_is_not_a_record),
                cmocka_unit_test(test_round_trip_keeps_demotion_fields),
                cmocka_unit_test(test_older_record_and_idle_clock),
                cmocka_unit_test(test_format_demotion_states),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
