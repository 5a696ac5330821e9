/*
 * Unit tests of the DHHC-1 key parser, formatter and generator
 * (common/dhchap_key.c): nvme-cli's documented example key parses and
 * formats back to itself; every damage (prefix, transform, length, base64,
 * CRC, trailing text) is refused and the error never quotes the key; a
 * generated key parses, carries a correct CRC (checked against an
 * independent bitwise CRC here) and two generated keys differ.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "base64.h"
#include "dhchap_key.h"

/* nvme-cli's example (Documentation/nvme-gen-dhchap-key.txt), public test data. */
#define EXAMPLE "DHHC-1:00:ia6zGodOr4SEG0Zzaw398rpY0wqipUWj4jWjUh4HWUz6aQ2n:"
#define EXAMPLE_B64 "ia6zGodOr4SEG0Zzaw398rpY0wqipUWj4jWjUh4HWUz6aQ2n"

static void test_example_round_trip(void **state)
{
        struct gantry_dhchap_key k;
        struct gantry_error err = { 0 };
        char out[GANTRY_DHCHAP_KEY_TEXT_MAX + 1];

        (void)state;
        assert_int_equal(gantry_dhchap_key_parse(EXAMPLE, strlen(EXAMPLE), &k, &err), 0);
        assert_int_equal(k.transform, 0);
        assert_int_equal(k.len, 32);
        gantry_dhchap_key_format(&k, out);
        assert_string_equal(out, EXAMPLE);
        /* a key file's trailing newline is allowed */
        assert_int_equal(gantry_dhchap_key_parse(EXAMPLE "\n", strlen(EXAMPLE) + 1, &k, &err), 0);
}

static void expect_refused(const char *text, const char *why)
{
        struct gantry_dhchap_key k = { .len = 7 };
        struct gantry_error err = { 0 };

        assert_int_equal(gantry_dhchap_key_parse(text, strlen(text), &k, &err), -EINVAL);
        assert_int_equal(k.len, 7); /* untouched */
        assert_non_null(strstr(err.msg, why));
        assert_null(strstr(err.msg, EXAMPLE_B64));
        assert_null(strstr(err.msg, "ia6zGod"));
}

static void test_damage_refused(void **state)
{
        (void)state;
        expect_refused("", "DHHC-1");
        expect_refused("DHHC-2:00:" EXAMPLE_B64 ":", "DHHC-1");
        expect_refused("DHHC-1:04:" EXAMPLE_B64 ":", "transform");
        expect_refused("DHHC-1:0:" EXAMPLE_B64 ":", "transform");
        expect_refused("DHHC-1:00:" EXAMPLE_B64, "end with");
        expect_refused("DHHC-1:00:" EXAMPLE_B64 ":x", "end with");
        expect_refused("DHHC-1:00:" EXAMPLE_B64 "::", "unexpected character");
        expect_refused("DHHC-1:00:ia6z GodOr4SEG0Zzaw398rpY0wqipUWj4jWjUh4HWUz6aQ2n:", "unexpected character");
        expect_refused("DHHC-1:00:ia6zGodOr4SEG0Zzaw398rpY0wqipUWj4jWjUh4HWUz6aQ2!:", "base64");
        /* one character changed: the CRC catches it */
        expect_refused("DHHC-1:00:ja6zGodOr4SEG0Zzaw398rpY0wqipUWj4jWjUh4HWUz6aQ2n:", "CRC-32");
        /* 24 bytes: not a secret length */
        expect_refused("DHHC-1:00:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA:", "32, 48 or 64");
        /* transform 02 (SHA-384) needs 48 bytes */
        expect_refused("DHHC-1:02:" EXAMPLE_B64 ":", "48-byte");
        expect_refused("DHHC-1:00:" EXAMPLE_B64 EXAMPLE_B64 EXAMPLE_B64 ":", "longer than");
}

static uint32_t reference_crc32(const unsigned char *p, size_t n)
{
        uint32_t table[256], c = 0xffffffffu;

        for (uint32_t i = 0; i < 256; i++) {
                uint32_t v = i;
                for (int b = 0; b < 8; b++)
                        v = v & 1 ? 0xedb88320u ^ (v >> 1) : v >> 1;
                table[i] = v;
        }
        for (size_t i = 0; i < n; i++)
                c = table[(c ^ p[i]) & 0xff] ^ (c >> 8);
        return c ^ 0xffffffffu;
}

static void test_generate(void **state)
{
        char a[GANTRY_DHCHAP_KEY_TEXT_MAX + 1], b[GANTRY_DHCHAP_KEY_TEXT_MAX + 1];
        unsigned char raw[80];
        struct gantry_dhchap_key k;
        struct gantry_error err = { 0 };
        size_t n;

        (void)state;
        assert_int_equal(gantry_dhchap_key_generate(a), 0);
        assert_int_equal(gantry_dhchap_key_generate(b), 0);
        assert_int_equal(strncmp(a, "DHHC-1:00:", 10), 0);
        assert_int_equal(gantry_dhchap_key_parse(a, strlen(a), &k, &err), 0);
        assert_int_equal(k.len, 32);
        assert_int_equal(gantry_base64_decode(a + 10, strlen(a) - 11, raw, sizeof(raw), &n), 0);
        assert_int_equal(n, 36);
        assert_int_equal(reference_crc32(raw, 32), (uint32_t)raw[32] | (uint32_t)raw[33] << 8 |
                                                   (uint32_t)raw[34] << 16 | (uint32_t)raw[35] << 24);
        assert_false(gantry_dhchap_key_equal(a, b));
        assert_true(gantry_dhchap_key_equal(a, a));
        assert_false(gantry_dhchap_key_equal(a, NULL));
        /* the standard check value of CRC-32 */
        assert_int_equal(gantry_dhchap_crc32((const unsigned char *)"123456789", 9), 0xcbf43926u);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_example_round_trip),
                cmocka_unit_test(test_damage_refused),
                cmocka_unit_test(test_generate),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
