/*
 * Unit tests of backend-independent request validation (csi/validate.c):
 * required fields per method, capability shape, and size bounds, each error
 * naming the field.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "csi.pb-c.h"
#include "csi_internal.h"

static int validate(const char *full_name, const ProtobufCMessage *msg, struct gantry_error *err)
{
        const struct gantry_csi_method *m = gantry_csi_method_find(full_name);

        assert_non_null(m);
        gantry_error_clear(err);
        return gantry_csi_validate(m, msg, err);
}

static void test_create_volume(void **state)
{
        Csi__V1__CreateVolumeRequest req = CSI__V1__CREATE_VOLUME_REQUEST__INIT;
        Csi__V1__VolumeCapability cap = CSI__V1__VOLUME_CAPABILITY__INIT;
        Csi__V1__VolumeCapability__MountVolume mount = CSI__V1__VOLUME_CAPABILITY__MOUNT_VOLUME__INIT;
        Csi__V1__VolumeCapability__AccessMode mode = CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__INIT;
        Csi__V1__VolumeCapability *caps[] = { &cap };
        struct gantry_error err;
        const char *create = "/csi.v1.Controller/CreateVolume";

        (void)state;
        assert_int_equal(validate(create, &req.base, &err), -EINVAL);
        assert_string_equal(err.msg, "name: required");

        req.name = "pvc-1";
        assert_int_equal(validate(create, &req.base, &err), -EINVAL);
        assert_string_equal(err.msg, "volume_capabilities: required");

        req.volume_capabilities = caps;
        req.n_volume_capabilities = 1;
        assert_int_equal(validate(create, &req.base, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "volume_capabilities[0].access_type"));

        cap.access_type_case = CSI__V1__VOLUME_CAPABILITY__ACCESS_TYPE_MOUNT;
        cap.mount = &mount;
        assert_int_equal(validate(create, &req.base, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "volume_capabilities[0].access_mode"));

        mode.mode = CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__MULTI_NODE_READER_ONLY;
        cap.access_mode = &mode;
        assert_int_equal(validate(create, &req.base, &err), 0);
}

static void test_bounds(void **state)
{
        Csi__V1__DeleteVolumeRequest req = CSI__V1__DELETE_VOLUME_REQUEST__INIT;
        struct gantry_error err;
        char *big = malloc(5000);

        (void)state;
        memset(big, 'a', 4999);
        big[4999] = '\0';
        req.volume_id = big;
        assert_int_equal(validate("/csi.v1.Controller/DeleteVolume", &req.base, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "volume_id: longer than"));
        req.volume_id = "ok";
        assert_int_equal(validate("/csi.v1.Controller/DeleteVolume", &req.base, &err), 0);
        free(big);
}

static void test_node_stage(void **state)
{
        Csi__V1__NodeStageVolumeRequest req = CSI__V1__NODE_STAGE_VOLUME_REQUEST__INIT;
        struct gantry_error err;
        const char *stage = "/csi.v1.Node/NodeStageVolume";

        (void)state;
        req.volume_id = "v";
        assert_int_equal(validate(stage, &req.base, &err), -EINVAL);
        assert_string_equal(err.msg, "staging_target_path: required");
        req.staging_target_path = "/var/lib/kubelet/x";
        assert_int_equal(validate(stage, &req.base, &err), -EINVAL);
        assert_string_equal(err.msg, "volume_capability: required");
}

static void test_identity_has_no_required_fields(void **state)
{
        Csi__V1__ProbeRequest req = CSI__V1__PROBE_REQUEST__INIT;
        struct gantry_error err;

        (void)state;
        assert_int_equal(validate("/csi.v1.Identity/Probe", &req.base, &err), 0);
}

static void test_every_method_has_types(void **state)
{
        size_t n;
        const struct gantry_csi_method *m = gantry_csi_methods(&n);

        (void)state;
        assert_true(n >= 30);
        for (size_t i = 0; i < n; i++) {
                assert_non_null(m[i].request);
                assert_non_null(m[i].response);
                assert_int_equal(strncmp(m[i].full_name, "/csi.v1.", 8), 0);
        }
        assert_int_equal(gantry_csi_register("/csi.v1.Controller/NoSuch", NULL), -ENOENT);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_create_volume),
                cmocka_unit_test(test_bounds),
                cmocka_unit_test(test_node_stage),
                cmocka_unit_test(test_identity_has_no_required_fields),
                cmocka_unit_test(test_every_method_has_types),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
