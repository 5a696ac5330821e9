/*
 * Unit tests of the checkpoint tier's names (common/nvmf_names.c), its volume
 * IDs (controller/checkpoint/checkpoint_ids.c) and the node's volume_context parser
 * (node/nvmf/nvmf_volume.c): the pure parts both sides must agree on.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "checkpoint_internal.h"
#include "config.h"
#include "nvmf.h"
#include "nvmf_names.h"

static void test_volume_uuid_is_stable_and_distinct(void **state)
{
        char a[37], b[37], c[37];

        (void)state;
        gantry_nvmf_volume_uuid("pvc-1", a);
        gantry_nvmf_volume_uuid("pvc-1", b);
        gantry_nvmf_volume_uuid("pvc-2", c);
        assert_string_equal(a, b);
        assert_string_not_equal(a, c);
        assert_true(gantry_nvmf_is_uuid(a));
        assert_int_equal(a[14], '4'); /* shaped as a v4 UUID */
}

static void test_nqns(void **state)
{
        char buf[GANTRY_NQN_MAX + 1], nguid[33];

        (void)state;
        assert_int_equal(gantry_nvmf_volume_nqn("11111111-2222-4333-8444-555555555555", buf, sizeof(buf)), 0);
        assert_string_equal(buf, "nqn.2026-11.io.gantry:vol:11111111-2222-4333-8444-555555555555");
        assert_int_equal(gantry_nvmf_volume_nqn("not-a-uuid", buf, sizeof(buf)), -EINVAL);
        assert_int_equal(gantry_nvmf_volume_nguid("11111111-2222-4333-8444-555555555555", nguid), 0);
        assert_string_equal(nguid, "11111111222243338444555555555555");
        assert_int_equal(gantry_nvmf_host_nqn("gpu-1.rack2", buf, sizeof(buf)), 0);
        assert_string_equal(buf, "nqn.2014-08.io.gantry:node:gpu-1.rack2");
        assert_int_equal(gantry_nvmf_host_nqn("gpu/1", buf, sizeof(buf)), -EINVAL);
        assert_int_equal(gantry_nvmf_host_nqn("", buf, sizeof(buf)), -EINVAL);
        assert_int_equal(gantry_nvmf_host_nqn(NULL, buf, sizeof(buf)), -EINVAL);
}

static void test_volume_id_round_trip(void **state)
{
        struct gantry_config *cfg = NULL;
        struct gantry_error err = { 0 };
        struct ckpt_ref ref, back;
        char id[CKPT_ID_MAX + 1];

        (void)state;
        assert_int_equal(gantry_config_parse("{\"targets\":[{\"id\":\"tgt-a\",\"url\":\"http://127.0.0.1:1/\","
                                             "\"addresses\":[{\"transport\":\"tcp\",\"traddr\":\"127.0.0.1\","
                                             "\"trsvcid\":\"4420\"}]}]}",
                                             "test", &cfg, &err),
                         0);
        assert_int_equal(ckpt_ref_init(&cfg->targets[0], "11111111-2222-4333-8444-555555555555", &ref), 0);
        assert_int_equal(ckpt_id_encode(&ref, id, sizeof(id)), 0);
        assert_string_equal(id, "0002-0005-tgt-a-0000000000000000-11111111-2222-4333-8444-555555555555");
        assert_true(gantry_checkpoint_is_volume_id(id));
        assert_int_equal(ckpt_id_decode(cfg, id, "volume_id", &back, &err), 0);
        assert_ptr_equal(back.target, &cfg->targets[0]);
        assert_string_equal(back.nqn, ref.nqn);
        /* wrong version, bad length, unknown target, bad uuid */
        assert_int_equal(ckpt_id_decode(cfg, "0001-0005-tgt-a-0000000000000000-11111111-2222-4333-8444-555555555555",
                                        "volume_id", &back, &err), -EINVAL);
        assert_int_equal(ckpt_id_decode(cfg, "0002-0009-tgt-a-0000000000000000-11111111-2222-4333-8444-555555555555",
                                        "volume_id", &back, &err), -EINVAL);
        assert_int_equal(ckpt_id_decode(cfg, "0002-0005-tgt-b-0000000000000000-11111111-2222-4333-8444-555555555555",
                                        "volume_id", &back, &err), -ENOENT);
        assert_non_null(strstr(err.msg, "volume_id: target tgt-b"));
        assert_int_equal(ckpt_id_decode(cfg, "0002-0005-tgt-a-0000000000000000-11111111-2222-4333-8444-55555555555X",
                                        "volume_id", &back, &err), -EINVAL);
        gantry_config_free(cfg);
}

static void test_volume_context_parse(void **state)
{
        const char *keys[] = { "tier", "nqn", "nguid", "uuid", "addresses", "fsType" };
        const char *vals[] = { "checkpoint", "nqn.2026-11.io.gantry:vol:11111111-2222-4333-8444-555555555555",
                               "11111111222243338444555555555555", "11111111-2222-4333-8444-555555555555",
                               "tcp:10.0.0.1:4420,tcp:fd00::1:4421", "xfs" };
        struct gantry_error err = { 0 };
        struct gantry_nvmf_volume v;

        (void)state;
        assert_int_equal(gantry_nvmf_volume_parse(keys, vals, 6, NULL, "gpu-1", &v, &err), 0);
        assert_int_equal(v.n_paths, 2);
        assert_string_equal(v.paths[1].traddr, "fd00::1");
        assert_string_equal(v.paths[1].trsvcid, "4421");
        assert_string_equal(v.host_nqn, "nqn.2014-08.io.gantry:node:gpu-1");
        assert_string_equal(v.fs_type, "xfs");
        /* the publish context's hostNQN wins */
        assert_int_equal(gantry_nvmf_volume_parse(keys, vals, 6, "nqn.2014-08.io.gantry:node:x", "gpu-1", &v, &err), 0);
        assert_string_equal(v.host_nqn, "nqn.2014-08.io.gantry:node:x");
        /* an NQN that does not follow from the uuid is refused */
        vals[1] = "nqn.2026-11.io.gantry:vol:other";
        assert_int_equal(gantry_nvmf_volume_parse(keys, vals, 6, NULL, "gpu-1", &v, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "volume_context.nqn"));
        vals[1] = "nqn.2026-11.io.gantry:vol:11111111-2222-4333-8444-555555555555";
        vals[4] = "tcp:10.0.0.1";
        assert_int_equal(gantry_nvmf_volume_parse(keys, vals, 6, NULL, "gpu-1", &v, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "volume_context.addresses"));
        vals[4] = "udp:10.0.0.1:4420";
        assert_int_equal(gantry_nvmf_volume_parse(keys, vals, 6, NULL, "gpu-1", &v, &err), -EINVAL);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_volume_uuid_is_stable_and_distinct),
                cmocka_unit_test(test_nqns),
                cmocka_unit_test(test_volume_id_round_trip),
                cmocka_unit_test(test_volume_context_parse),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
