/*
 * Unit tests of the Node service's request checks (node/node.c, fs.c) and
 * of the mountinfo parser (node/host/mount.c), which is how a restarted plugin
 * finds what is staged and published.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <cmocka.h>

#include "clock.h"
#include "node_internal.h"

static void test_mountinfo_line(void **state)
{
        struct node_mount m;

        (void)state;
        assert_int_equal(gantry_node_mountinfo_parse_line(
                                 "36 35 252:3 / /var/lib/kubelet/my\\040vol rw,relatime shared:7 "
                                 "master:1 - ext4 /dev/rbd3 rw,stripe=16\n",
                                 &m),
                         0);
        assert_int_equal(major(m.dev), 252);
        assert_int_equal(minor(m.dev), 3);
        assert_string_equal(m.root, "/");
        assert_string_equal(m.target, "/var/lib/kubelet/my vol");
        assert_string_equal(m.fstype, "ext4");
        assert_string_equal(m.source, "/dev/rbd3");
        assert_false(m.readonly);
        /* a raw block bind: devtmpfs, root is the device node; read-only */
        assert_int_equal(gantry_node_mountinfo_parse_line(
                                 "40 22 0:5 /rbd0 /stage/device ro,nosuid - devtmpfs udev rw", &m),
                         0);
        assert_string_equal(m.root, "/rbd0");
        assert_true(m.readonly);
        assert_int_equal(gantry_node_mountinfo_parse_line("40 22 0:5 /rbd0 /x rw", &m), -EINVAL);
        assert_int_equal(gantry_node_mountinfo_parse_line("garbage", &m), -EINVAL);
}

static void test_paths_and_ids(void **state)
{
        struct gantry_error err = { 0 };

        (void)state;
        assert_int_equal(gantry_node_check_path("target_path", "/var/lib/kubelet/pods/x/mount",
                                                &err),
                         0);
        assert_int_equal(gantry_node_check_path("target_path", "var/lib", &err), -EINVAL);
        assert_string_equal(err.msg, "target_path: must be an absolute path");
        assert_int_equal(gantry_node_check_path("target_path", "/var/../etc", &err), -EINVAL);
        assert_int_equal(gantry_node_check_path("target_path", "/var/./etc", &err), -EINVAL);
        assert_int_equal(gantry_node_check_path("target_path", "/var/..", &err), -EINVAL);
        assert_int_equal(gantry_node_check_path("target_path", "/var/..x/ok", &err), 0);
        assert_int_equal(gantry_node_check_path("target_path", "", &err), -EINVAL);
        assert_int_equal(gantry_node_check_volume_id("0001-0004-ceph-0000000000000002-ab12", &err),
                         0);
        assert_int_equal(gantry_node_check_volume_id("a/b", &err), -EINVAL);
        assert_non_null(strstr(err.msg, "volume_id"));
}

static void test_capability(void **state)
{
        Csi__V1__VolumeCapability cap = CSI__V1__VOLUME_CAPABILITY__INIT;
        Csi__V1__VolumeCapability__AccessMode mode = CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__INIT;
        Csi__V1__VolumeCapability__MountVolume mount = CSI__V1__VOLUME_CAPABILITY__MOUNT_VOLUME__INIT;
        Csi__V1__VolumeCapability__BlockVolume block = CSI__V1__VOLUME_CAPABILITY__BLOCK_VOLUME__INIT;
        struct gantry_error err = { 0 };
        struct node_capability c;

        (void)state;
        assert_int_equal(gantry_node_parse_capability(&cap, NULL, &c, &err), -EINVAL);
        assert_string_equal(err.msg, "volume_capability.access_mode: required");
        cap.access_mode = &mode;
        mode.mode = CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__MULTI_NODE_READER_ONLY;
        assert_int_equal(gantry_node_parse_capability(&cap, NULL, &c, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "access_type"));
        cap.access_type_case = CSI__V1__VOLUME_CAPABILITY__ACCESS_TYPE_MOUNT;
        cap.mount = &mount;
        assert_int_equal(gantry_node_parse_capability(&cap, "xfs", &c, &err), 0);
        assert_string_equal(c.fstype, "xfs"); /* from the volume context */
        assert_true(c.readonly_mode);
        assert_false(c.block);
        assert_int_equal(gantry_node_parse_capability(&cap, NULL, &c, &err), 0);
        assert_string_equal(c.fstype, "ext4"); /* the default */
        mount.fs_type = "btrfs";
        assert_int_equal(gantry_node_parse_capability(&cap, "xfs", &c, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "fs_type"));
        mount.fs_type = "";
        mode.mode = CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__MULTI_NODE_MULTI_WRITER;
        assert_int_equal(gantry_node_parse_capability(&cap, NULL, &c, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "access_mode"));
        /* several writers on a raw block device: the application's business */
        cap.access_type_case = CSI__V1__VOLUME_CAPABILITY__ACCESS_TYPE_BLOCK;
        cap.block = &block;
        assert_int_equal(gantry_node_parse_capability(&cap, NULL, &c, &err), 0);
        assert_true(c.block);
        assert_false(c.readonly_mode);
}

static void test_mount_flags(void **state)
{
        char *good[] = { "noatime", "discard", "stripe=16", "nodev" };
        char *bind[] = { "noatime", "bind" };
        char *space[] = { "a b" };
        char *comma[] = { "ro,remount" };
        struct gantry_error err = { 0 };

        (void)state;
        assert_int_equal(gantry_node_fs_check_flags(good, 4, &err), 0);
        assert_int_equal(gantry_node_fs_check_flags(bind, 2, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "mount_flags: bind"));
        assert_int_equal(gantry_node_fs_check_flags(space, 1, &err), -EINVAL);
        assert_int_equal(gantry_node_fs_check_flags(comma, 1, &err), -EINVAL);
}

static void test_locks(void **state)
{
        struct gantry_error err = { 0 };

        (void)state;
        assert_int_equal(gantry_node_lock_try("vol-a", &err), 0);
        assert_int_equal(gantry_node_lock_try("vol-b", &err), 0);
        assert_int_equal(gantry_node_lock_try("vol-a", &err), -EBUSY);
        assert_non_null(strstr(err.msg, "volume_id: vol-a"));
        gantry_node_lock_release("vol-a");
        assert_int_equal(gantry_node_lock_try("vol-a", &err), 0);
        gantry_node_lock_release("vol-a");
        gantry_node_lock_release("vol-b");
}

static void test_exec(void **state)
{
        const char *ok[] = { "true", NULL };
        const char *fails[] = { "sh", "-c", "echo first; echo 'the reason' >&2; exit 3", NULL };
        const char *slow[] = { "sleep", "5", NULL };
        const char *missing[] = { "no-such-program-gantry", NULL };
        struct gantry_error err = { 0 };

        (void)state;
        assert_int_equal(gantry_node_exec(ok, INT64_MAX, "t", &err), 0);
        assert_int_equal(gantry_node_exec(fails, INT64_MAX, "format", &err), -EIO);
        assert_string_equal(err.msg, "format: sh exited 3: the reason");
        assert_int_equal(gantry_node_exec(slow, gantry_now_ms() + 100, "grow", &err),
                         -ETIMEDOUT);
        assert_int_equal(gantry_node_exec(missing, INT64_MAX, "t", &err), -ENOENT);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_mountinfo_line), cmocka_unit_test(test_paths_and_ids),
                cmocka_unit_test(test_capability),     cmocka_unit_test(test_mount_flags),
                cmocka_unit_test(test_locks),          cmocka_unit_test(test_exec),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
