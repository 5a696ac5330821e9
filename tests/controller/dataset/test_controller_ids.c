/* Volume IDs (controller/dataset/ids.c, an empty volume's uuid too), the names the journal keeps,
 * the per-name try-locks (locks.c), and the cephx key check of the credentials (ceph_conn.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "dataset_internal.h"

static void test_round_trip(void **state)
{
        struct gantry_volume_ref ref = { .cluster_id = "nvme", .pool_id = 2 }, back;
        char id[GANTRY_ID_MAX + 1];

        (void)state;
        gantry_uuid_generate(ref.uuid);
        assert_int_equal(gantry_id_encode(&ref, id, sizeof(id)), 0);
        assert_int_equal(strncmp(id, "0001-0004-nvme-0000000000000002-", 32), 0);
        assert_int_equal(gantry_id_decode(id, &back), 0);
        assert_string_equal(back.cluster_id, "nvme");
        assert_int_equal(back.pool_id, 2);
        assert_string_equal(back.uuid, ref.uuid);
}

static void test_longest_cluster_fits_128(void **state)
{
        struct gantry_volume_ref ref = { .pool_id = 1 }, back;
        char id[GANTRY_ID_MAX + 1];

        (void)state;
        memset(ref.cluster_id, 'c', 64);
        gantry_uuid_generate(ref.uuid);
        /* 4+1+4+1+64+1+16+1+36 = 128 */
        assert_int_equal(gantry_id_encode(&ref, id, sizeof(id)), 0);
        assert_int_equal(strlen(id), 128);
        assert_int_equal(gantry_id_decode(id, &back), 0);
}

/* An empty volume's uuid (version 8) says so, and decodes like any other; no version-4 one does. */
static void test_plain_uuid(void **state)
{
        struct gantry_volume_ref ref = { .cluster_id = "perf", .pool_id = 2 }, back;
        char id[GANTRY_ID_MAX + 1];

        (void)state;
        for (int i = 0; i < 64; i++) {
                gantry_uuid_generate(ref.uuid);
                assert_false(gantry_uuid_is_plain(ref.uuid));
        }
        gantry_uuid_mark_plain(ref.uuid);
        assert_true(gantry_uuid_is_plain(ref.uuid));
        assert_int_equal(ref.uuid[14], '8');
        assert_int_equal(gantry_id_encode(&ref, id, sizeof(id)), 0);
        assert_int_equal(gantry_id_decode(id, &back), 0);
        assert_true(gantry_uuid_is_plain(back.uuid));
        assert_false(gantry_uuid_is_plain("5f1c1a52-8a2e-4a7b-9d3c-0c1e2f3a4b5c"));
}

/* Names the journal can keep: not from U+10FFFF (its record keys) on. */
static void test_journal_names(void **state)
{
        (void)state;
        assert_int_equal(gantry_journal_check_name("pvc-5f1c1a52"), 0);
        assert_int_equal(gantry_journal_check_name("\xc3\xa9t\xc3\xa9"), 0);
        assert_int_equal(gantry_journal_check_name("\xf4\x8f\xbf\xbe"), 0); /* U+10FFFE */
        assert_int_equal(gantry_journal_check_name("\xf4\x8f"), 0);
        assert_int_equal(gantry_journal_check_name("\xf4\x8f\xbf\xbf"), -EINVAL);
        assert_int_equal(gantry_journal_check_name("\xf4\x8f\xbf\xbfx"), -EINVAL);
        assert_int_equal(gantry_journal_check_name("\xff"), -EINVAL);
}

static void test_malformed(void **state)
{
        static const char *bad[] = {
                "",
                "garbage",
                "0002-0004-nvme-0000000000000002-5f1c1a52-8a2e-4a7b-9d3c-0c1e2f3a4b5c",
                "0001-0005-nvme-0000000000000002-5f1c1a52-8a2e-4a7b-9d3c-0c1e2f3a4b5c",
                "0001-0004-nvme-000000000000002-5f1c1a52-8a2e-4a7b-9d3c-0c1e2f3a4b5c",
                "0001-0004-nvme-0000000000000002-5f1c1a52-8a2e-4a7b-9d3c-0c1e2f3a4b5",
                "0001-0004-nvme-0000000000000002-5F1C1A52-8A2E-4A7B-9D3C-0C1E2F3A4B5C",
                "0001-0004-nvme-000000000000000g-5f1c1a52-8a2e-4a7b-9d3c-0c1e2f3a4b5c",
                "0001-0000--0000000000000002-5f1c1a52-8a2e-4a7b-9d3c-0c1e2f3a4b5c",
                "0001-0004-nvme-0000000000000002-5f1c1a52-8a2e-4a7b-9d3c-0c1e2f3a4b5c-",
        };
        struct gantry_volume_ref ref;

        (void)state;
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                assert_int_equal(gantry_id_decode(bad[i], &ref), -EINVAL);
}

static void test_try_lock(void **state)
{
        (void)state;
        assert_int_equal(gantry_lock_try("volume-name:a"), 0);
        assert_int_equal(gantry_lock_try("volume-name:a"), -EBUSY);
        assert_int_equal(gantry_lock_try("volume-name:b"), 0);
        gantry_lock_release("volume-name:a");
        assert_int_equal(gantry_lock_try("volume-name:a"), 0);
        gantry_lock_release("volume-name:a");
        gantry_lock_release("volume-name:b");
}

static void test_credentials_check_the_key(void **state)
{
        struct gantry_cluster_config cluster = { .cluster_id = "nvme" };
        Csi__V1__CreateVolumeRequest__SecretsEntry user = { .key = "userID", .value = "gantry" };
        Csi__V1__CreateVolumeRequest__SecretsEntry key = { .key = "userKey" };
        void *secrets[2] = { &user, &key };
        struct gantry_ceph_credentials creds;
        struct gantry_error err = { 0 };
        char buf[128];

        (void)state;
        key.value = "AQBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB==";
        assert_int_equal(gantry_ceph_credentials(&cluster, secrets, 2, buf, sizeof(buf), &creds, &err),
                         -EINVAL);
        assert_non_null(strstr(err.msg, "secrets.userKey"));
        assert_null(strstr(err.msg, key.value));
        key.value = "AQAPiwNrrIbcHxAAOA/SQlmFcxvWueYzu3VPOA==";
        assert_int_equal(gantry_ceph_credentials(&cluster, secrets, 2, buf, sizeof(buf), &creds, &err),
                         0);
        assert_string_equal(creds.user_id, "gantry");
        assert_int_equal(gantry_ceph_credentials(&cluster, secrets, 1, buf, sizeof(buf), &creds, &err),
                         -EINVAL);
        assert_non_null(strstr(err.msg, "secrets.userKey"));
        /* no secrets and no userID/keyFile in the config */
        assert_int_equal(gantry_ceph_credentials(&cluster, NULL, 0, buf, sizeof(buf), &creds, &err),
                         -EINVAL);
        assert_non_null(strstr(err.msg, "secrets.userID"));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_round_trip),
                cmocka_unit_test(test_longest_cluster_fits_128),
                cmocka_unit_test(test_plain_uuid),
                cmocka_unit_test(test_journal_names),
                cmocka_unit_test(test_malformed),
                cmocka_unit_test(test_try_lock),
                cmocka_unit_test(test_credentials_check_the_key),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
