/*
 * Unit tests of the krbd request a node builds (node/rbd/rbd_map.c): the
 * volume_context and secrets it accepts, and the add_single_major options it
 * writes. Mapping itself needs krbd and runs in the VM (tests/vm).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "rbd.h"

#define KEY "AQBe8E5jAAAAABAA7Ml6Hq1Wbbm4t4TaiFHsmg=="

static const char *keys[] = { "tier", "monitors", "pool", "imageName", "mapOptions", "fsType" };

static int parse(const char *monitors, const char *image, const char *opts, const char *key,
                 bool ro, struct rbd_spec *spec, struct gantry_error *err)
{
        const char *values[] = { "dataset", monitors, "rbd", image, opts, "ext4" };
        return gantry_node_rbd_spec_parse(keys, values, 6, "gantry", key, ro, spec, err);
}

static void test_spec_good(void **state)
{
        struct gantry_error err = { 0 };
        struct rbd_spec s;

        (void)state;
        assert_int_equal(parse("[v2:10.0.0.1:3300],10.0.0.2:3300", "csi-vol-1", "ms_mode=crc", KEY,
                               false, &s, &err),
                         0);
        assert_string_equal(s.monitors, "10.0.0.1:3300,10.0.0.2:3300");
        assert_string_equal(s.pool, "rbd");
        assert_string_equal(s.image, "csi-vol-1");
        assert_string_equal(s.map_options, "ms_mode=crc");
        assert_string_equal(s.user_id, "gantry");
        assert_false(s.readonly);
}

static void test_spec_refusals_name_the_field(void **state)
{
        static const struct {
                const char *monitors, *image, *opts, *key, *field;
        } cases[] = {
                { "10.0.0.1:3300", "img", "", "", "secrets.userKey" },
                { "10.0.0.1:3300", "img", "", "AQB$(reboot)", "secrets.userKey" },
                { "", "img", "", KEY, "volume_context.monitors" },
                { "10.0.0.1", "img", "", KEY, "volume_context.monitors" },
                { "10.0.0.1:3300 x", "img", "", KEY, "volume_context.monitors" },
                { "10.0.0.1:3300", "img x", "", KEY, "volume_context.imageName" },
                { "10.0.0.1:3300", "", "", KEY, "volume_context.imageName" },
                { "10.0.0.1:3300", "img", "ms_mode=crc,secret=abc", KEY, "volume_context.mapOptions" },
                { "10.0.0.1:3300", "img", "name=admin", KEY, "volume_context.mapOptions" },
                { "10.0.0.1:3300", "img", "rw", KEY, "volume_context.mapOptions" },
                { "10.0.0.1:3300", "img", "a b", KEY, "volume_context.mapOptions" },
        };
        (void)state;
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct gantry_error err = { 0 };
                struct rbd_spec s;
                assert_int_equal(parse(cases[i].monitors, cases[i].image, cases[i].opts,
                                       cases[i].key, false, &s, &err),
                                 -EINVAL);
                assert_non_null(strstr(err.msg, cases[i].field));
                assert_null(strstr(err.msg, "reboot")); /* the key is never echoed */
        }
}

static void test_spec_missing_keys(void **state)
{
        const char *k[] = { "monitors", "pool" };
        const char *v[] = { "10.0.0.1:3300", "rbd" };
        struct gantry_error err = { 0 };
        struct rbd_spec s;

        (void)state;
        assert_int_equal(gantry_node_rbd_spec_parse(k, v, 2, "u", KEY, false, &s, &err), -EINVAL);
        assert_string_equal(err.msg, "volume_context.imageName: required");
        assert_int_equal(gantry_node_rbd_spec_parse(k, v, 1, "u", KEY, false, &s, &err), -EINVAL);
        assert_string_equal(err.msg, "volume_context.pool: required");
}

static void test_options(void **state)
{
        struct gantry_node_config node = { .read_from_replica = "localize",
                                           .crush_location = "host=gpu-1|rack=r1" };
        struct gantry_error err = { 0 };
        struct rbd_spec s;
        char buf[1024];

        (void)state;
        /* msgr2-only monitors and no ms_mode: the plugin asks for it */
        assert_int_equal(parse("10.0.0.1:3300", "img", "", KEY, true, &s, &err), 0);
        assert_int_equal(gantry_node_rbd_options(&s, NULL, "gantry.1.0", buf, sizeof(buf)), 0);
        assert_string_equal(buf, "name=gantry,key=gantry.1.0,ms_mode=prefer-crc,ro");
        /* an explicit ms_mode wins; node topology options are added */
        assert_int_equal(parse("10.0.0.1:3300", "img", "ms_mode=secure,queue_depth=128", KEY, false,
                               &s, &err),
                         0);
        assert_int_equal(gantry_node_rbd_options(&s, &node, "k", buf, sizeof(buf)), 0);
        assert_string_equal(buf, "name=gantry,key=k,ms_mode=secure,queue_depth=128,"
                                 "read_from_replica=localize,crush_location=host:gpu-1|rack:r1");
        /* msgr1 monitors: no ms_mode; without a keyring the secret is inline */
        assert_int_equal(parse("10.0.0.1:6789", "img", "", KEY, false, &s, &err), 0);
        assert_int_equal(gantry_node_rbd_options(&s, NULL, NULL, buf, sizeof(buf)), 0);
        assert_string_equal(buf, "name=gantry,secret=" KEY);
        /* too small a buffer is an error, not a truncated line */
        assert_int_equal(gantry_node_rbd_options(&s, NULL, NULL, buf, 20), -ENAMETOOLONG);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_spec_good),
                cmocka_unit_test(test_spec_refusals_name_the_field),
                cmocka_unit_test(test_spec_missing_keys),
                cmocka_unit_test(test_options),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
