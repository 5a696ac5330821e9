/*
 * Unit tests of request logging (csi/request_log.c): requests render as
 * JSON, and no secret ever reaches the text, at any depth.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "csi.pb-c.h"
#include "csi_internal.h"

static void test_secrets_stripped(void **state)
{
        Csi__V1__NodeStageVolumeRequest req = CSI__V1__NODE_STAGE_VOLUME_REQUEST__INIT;
        Csi__V1__NodeStageVolumeRequest__SecretsEntry e1 =
                CSI__V1__NODE_STAGE_VOLUME_REQUEST__SECRETS_ENTRY__INIT;
        Csi__V1__NodeStageVolumeRequest__SecretsEntry e2 =
                CSI__V1__NODE_STAGE_VOLUME_REQUEST__SECRETS_ENTRY__INIT;
        Csi__V1__NodeStageVolumeRequest__SecretsEntry *secrets[] = { &e1, &e2 };
        Csi__V1__NodeStageVolumeRequest__VolumeContextEntry c1 =
                CSI__V1__NODE_STAGE_VOLUME_REQUEST__VOLUME_CONTEXT_ENTRY__INIT;
        Csi__V1__NodeStageVolumeRequest__VolumeContextEntry *ctx[] = { &c1 };
        char *text;

        (void)state;
        e1.key = "userID";
        e1.value = "gantry";
        e2.key = "userKey";
        e2.value = "AQBSECRETKEYMATERIAL==";
        c1.key = "pool";
        c1.value = "rbd";
        req.volume_id = "0001-nvme-rbd-abc";
        req.staging_target_path = "/staging";
        req.secrets = secrets;
        req.n_secrets = 2;
        req.volume_context = ctx;
        req.n_volume_context = 1;

        text = gantry_csi_request_to_log(&req.base);
        assert_non_null(text);
        assert_null(strstr(text, "AQBSECRETKEYMATERIAL"));
        assert_null(strstr(text, "userKey"));
        assert_null(strstr(text, "gantry\""));
        assert_non_null(strstr(text, "\"secrets\":\"<2 stripped>\""));
        assert_non_null(strstr(text, "\"volume_id\":\"0001-nvme-rbd-abc\""));
        assert_non_null(strstr(text, "\"volume_context\":{\"pool\":\"rbd\"}"));
        free(text);
}

static void test_nested_and_enums(void **state)
{
        Csi__V1__CreateVolumeRequest req = CSI__V1__CREATE_VOLUME_REQUEST__INIT;
        Csi__V1__VolumeCapability cap = CSI__V1__VOLUME_CAPABILITY__INIT;
        Csi__V1__VolumeCapability__AccessMode mode = CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__INIT;
        Csi__V1__VolumeCapability__BlockVolume block = CSI__V1__VOLUME_CAPABILITY__BLOCK_VOLUME__INIT;
        Csi__V1__VolumeCapability *caps[] = { &cap };
        Csi__V1__CapacityRange range = CSI__V1__CAPACITY_RANGE__INIT;
        char *text;

        (void)state;
        mode.mode = CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__MULTI_NODE_READER_ONLY;
        cap.access_mode = &mode;
        cap.access_type_case = CSI__V1__VOLUME_CAPABILITY__ACCESS_TYPE_BLOCK;
        cap.block = &block;
        range.required_bytes = 1 << 30;
        req.name = "pvc-x";
        req.volume_capabilities = caps;
        req.n_volume_capabilities = 1;
        req.capacity_range = &range;
        text = gantry_csi_request_to_log(&req.base);
        assert_non_null(strstr(text, "\"mode\":\"MULTI_NODE_READER_ONLY\""));
        assert_non_null(strstr(text, "\"block\":{}"));
        assert_non_null(strstr(text, "\"required_bytes\":1073741824"));
        free(text);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_secrets_stripped),
                cmocka_unit_test(test_nested_and_enums),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
