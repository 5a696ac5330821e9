/*
 * Unit tests of the checkpoint tier's names (common/nvmf_names.c), its volume
 * IDs (controller/checkpoint/checkpoint_ids.c) and the node's volume_context parser
 * (node/nvmf/nvmf_volume.c): the pure parts both sides must agree on.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
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

static void test_volume_context_timeouts(void **state)
{
        const char *keys[] = { "nqn", "nguid", "uuid", "addresses", "ctrlLossTmoSeconds", "reconnectDelaySeconds" };
        const char *vals[] = { "nqn.2026-11.io.gantry:vol:11111111-2222-4333-8444-555555555555",
                               "11111111222243338444555555555555", "11111111-2222-4333-8444-555555555555",
                               "tcp:10.0.0.1:4420", "5", "1" };
        struct gantry_error err = { 0 };
        struct gantry_nvmf_volume v;

        (void)state;
        /* none given: the defaults */
        assert_int_equal(gantry_nvmf_volume_parse(keys, vals, 4, NULL, "gpu-1", &v, &err), 0);
        assert_int_equal(v.timeouts.ctrl_loss_tmo_s, GANTRY_NVMF_CTRL_LOSS_TMO_S);
        assert_int_equal(v.timeouts.reconnect_delay_s, GANTRY_NVMF_RECONNECT_DELAY_S);
        assert_int_equal(v.timeouts.fast_io_fail_tmo_s, GANTRY_NVMF_FAST_IO_FAIL_TMO_S);
        /* a short ctrl_loss_tmo shortens fast_io_fail_tmo with it */
        assert_int_equal(gantry_nvmf_volume_parse(keys, vals, 6, NULL, "gpu-1", &v, &err), 0);
        assert_int_equal(v.timeouts.ctrl_loss_tmo_s, 5);
        assert_int_equal(v.timeouts.reconnect_delay_s, 1);
        assert_int_equal(v.timeouts.fast_io_fail_tmo_s, 5);
        /* the default reconnect delay follows a ctrl_loss_tmo shorter than it */
        vals[4] = "1";
        assert_int_equal(gantry_nvmf_volume_parse(keys, vals, 5, NULL, "gpu-1", &v, &err), 0);
        assert_int_equal(v.timeouts.reconnect_delay_s, 1);
        /* refused, naming the field: no "forever", no units, no sign, a delay past the loss */
        static const char *const bad_loss[] = { "-1", "0", "3601", "10s", " 5", "+5", "" };
        for (size_t i = 0; i < sizeof(bad_loss) / sizeof(bad_loss[0]); i++) {
                vals[4] = bad_loss[i];
                assert_int_equal(gantry_nvmf_volume_parse(keys, vals, 5, NULL, "gpu-1", &v, &err), -EINVAL);
                assert_non_null(strstr(err.msg, "volume_context.ctrlLossTmoSeconds"));
        }
        vals[4] = "5";
        vals[5] = "6";
        assert_int_equal(gantry_nvmf_volume_parse(keys, vals, 6, NULL, "gpu-1", &v, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "volume_context.reconnectDelaySeconds: 6 is longer than ctrlLossTmoSeconds 5"));
        vals[5] = "0";
        assert_int_equal(gantry_nvmf_volume_parse(keys, vals, 6, NULL, "gpu-1", &v, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "volume_context.reconnectDelaySeconds"));
}

static void test_report_names_lost_controllers(void **state)
{
        struct gantry_nvmf_attach_report rep = { .n_paths = 3, .n_missing = 2 };
        char buf[512];

        (void)state;
        snprintf(rep.paths[0].addr, sizeof(rep.paths[0].addr), "10.0.0.11:4420");
        snprintf(rep.paths[0].ctrl, sizeof(rep.paths[0].ctrl), "nvme1");
        rep.paths[1] = rep.paths[0];
        rep.paths[2] = rep.paths[0];
        rep.paths[1].state = GANTRY_NVMF_PATH_CTRL_DOWN;
        snprintf(rep.paths[1].addr, sizeof(rep.paths[1].addr), "10.0.0.12:4421");
        snprintf(rep.paths[1].ctrl, sizeof(rep.paths[1].ctrl), "nvme2");
        snprintf(rep.paths[1].ctrl_state, sizeof(rep.paths[1].ctrl_state), "connecting");
        rep.paths[2].state = GANTRY_NVMF_PATH_CTRL_DOWN;
        snprintf(rep.paths[2].addr, sizeof(rep.paths[2].addr), "10.0.0.13:4422");
        snprintf(rep.paths[2].ctrl, sizeof(rep.paths[2].ctrl), "nvme3");
        snprintf(rep.paths[2].ctrl_state, sizeof(rep.paths[2].ctrl_state), "gone");
        assert_int_equal(gantry_nvmf_report_describe(&rep, buf, sizeof(buf)), 2);
        assert_string_equal(buf, "2 of 3 NVMe paths missing: 10.0.0.12:4421 (controller nvme2 state connecting), "
                                 "10.0.0.13:4422 (controller nvme3 gone: deleted after ctrl_loss_tmo, or "
                                 "disconnected)");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_volume_uuid_is_stable_and_distinct),
                cmocka_unit_test(test_nqns),
                cmocka_unit_test(test_volume_id_round_trip),
                cmocka_unit_test(test_volume_context_parse),
                cmocka_unit_test(test_volume_context_timeouts),
                cmocka_unit_test(test_report_names_lost_controllers),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
