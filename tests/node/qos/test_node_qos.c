/*
 * Unit tests of node/qos/ and of the one demand computation
 * (common/bandwidth_demand.c): the pod cgroup paths of both kubelet cgroup
 * drivers and every QoS class; io.max lines; apply, remove and reconcile
 * with their records; and that for the same pod and volumes the
 * scheduler's charge and the node's cap are the same number.
 *
 * The cgroup tree here is a STAND-IN: plain directories and files in a
 * temporary dir laid out as the kubelet lays out /sys/fs/cgroup (io.max a
 * regular file). Writes to it go through __wrap_gantry_qos_iomax_write, a
 * STAND-IN of the kernel: a line replaces only its own device's line, and a
 * line for a device that does not exist (major ABSENT_MAJOR) is refused.
 * The kernel's io.max is exercised in the VM (tests/vm).
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include <jansson.h>

#include "attr_file.h"
#include "qos.h"
#include "qos_internal.h"
#include "usage_qos_source.h"
#include "sched_demand.h"
#include "sched_state.h"

#define UID_A "0b6f2c5a-1111-4a4a-9b9b-000000000001"
#define UID_B "0b6f2c5a-2222-4a4a-9b9b-000000000002"

static char root[256], state_dir[300], cg[300];

#define ABSENT_MAJOR 250

int __real_gantry_qos_iomax_write(const char *cgroup_root, const char *cgroup_dir, unsigned major,
                                  unsigned minor, const struct gantry_qos_rates *r);

/* The STAND-IN of the kernel's io.max write (see the top of the file). */
int __wrap_gantry_qos_iomax_write(const char *cgroup_root, const char *cgroup_dir, unsigned major,
                                  unsigned minor, const struct gantry_qos_rates *r)
{
        char path[1100], others[4096] = "", line[256], dev[32];
        FILE *f;
        int ret;

        if (major == ABSENT_MAJOR)
                return -ENODEV;
        snprintf(path, sizeof(path), "%s/io.max", cgroup_dir);
        snprintf(dev, sizeof(dev), "%u:%u ", major, minor);
        if ((f = fopen(path, "re"))) {
                while (fgets(line, sizeof(line), f))
                        if (strncmp(line, dev, strlen(dev)) != 0 && line[0] != '\n' &&
                            strlen(others) + strlen(line) + 1 < sizeof(others)) {
                                line[strcspn(line, "\n")] = '\0';
                                strcat(strcat(others, line), "\n");
                        }
                fclose(f);
        }
        ret = __real_gantry_qos_iomax_write(cgroup_root, cgroup_dir, major, minor, r);
        if (ret < 0 || !others[0])
                return ret;
        assert_true(gantry_attr_read(path, line, sizeof(line)) > 0);
        f = fopen(path, "we");
        assert_non_null(f);
        fprintf(f, "%s%s\n", others, line);
        fclose(f);
        return 0;
}

static void mkdirs(const char *rel)
{
        char path[1024], *p;

        snprintf(path, sizeof(path), "%s/%s", cg, rel);
        for (p = path + strlen(cg) + 1; (p = strchr(p, '/')); p++) {
                *p = '\0';
                mkdir(path, 0755);
                *p = '/';
        }
        assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
}

static void put(const char *rel, const char *text)
{
        char path[1024];
        FILE *f;

        snprintf(path, sizeof(path), "%s/%s", cg, rel);
        f = fopen(path, "w");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
}

static void get(const char *dir, char *buf, size_t size)
{
        char path[1100];

        snprintf(path, sizeof(path), "%s/io.max", dir);
        assert_true(gantry_attr_read(path, buf, size) >= 0);
}

static int setup(void **state)
{
        (void)state;
        snprintf(root, sizeof(root), "/tmp/gantry-qos-XXXXXX");
        assert_non_null(mkdtemp(root));
        snprintf(state_dir, sizeof(state_dir), "%s/state", root);
        snprintf(cg, sizeof(cg), "%s/cgroup", root);
        assert_int_equal(mkdir(cg, 0755), 0);
        return 0;
}

static int teardown(void **state)
{
        char cmd[600];

        (void)state;
        gantry_qos_shutdown();
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
        assert_int_equal(system(cmd), 0);
        return 0;
}

static void test_cgroup_find_both_drivers_every_qos(void **state)
{
        static const struct {
                const char *uid, *rel;
        } cases[] = {
                { "11111111-aaaa-0000-0000-000000000001", "kubepods/pod11111111-aaaa-0000-0000-000000000001" },
                { "11111111-aaaa-0000-0000-000000000002",
                  "kubepods/burstable/pod11111111-aaaa-0000-0000-000000000002" },
                { "11111111-aaaa-0000-0000-000000000003",
                  "kubepods/besteffort/pod11111111-aaaa-0000-0000-000000000003" },
                { "11111111-aaaa-0000-0000-000000000004",
                  "kubepods.slice/kubepods-pod11111111_aaaa_0000_0000_000000000004.slice" },
                { "11111111-aaaa-0000-0000-000000000005",
                  "kubepods.slice/kubepods-burstable.slice/"
                  "kubepods-burstable-pod11111111_aaaa_0000_0000_000000000005.slice" },
                { "11111111-aaaa-0000-0000-000000000006",
                  "kubepods.slice/kubepods-besteffort.slice/"
                  "kubepods-besteffort-pod11111111_aaaa_0000_0000_000000000006.slice" },
        };
        char buf[1024], want[1024];

        (void)state;
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
                mkdirs(cases[i].rel);
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                snprintf(want, sizeof(want), "%s/%s", cg, cases[i].rel);
                assert_int_equal(gantry_qos_cgroup_find(cg, cases[i].uid, buf, sizeof(buf)), 1);
                assert_string_equal(buf, want);
        }
        assert_int_equal(gantry_qos_cgroup_find(cg, "11111111-aaaa-0000-0000-000000000009", buf,
                                                sizeof(buf)), 0);
        assert_int_equal(gantry_qos_cgroup_find(cg, "../../etc", buf, sizeof(buf)), -EINVAL);
        assert_int_equal(gantry_qos_cgroup_find(cg, "", buf, sizeof(buf)), -EINVAL);
}

static void test_iomax_line_and_policies(void **state)
{
        struct gantry_qos_rates d = { .rbps = 5000000, .riops = 300 }, c;
        struct gantry_error err;
        enum gantry_qos_policy p;
        char line[128];

        (void)state;
        assert_true(gantry_qos_iomax_line(251, 3, &d, line, sizeof(line)) > 0);
        assert_string_equal(line, "251:3 rbps=5000000 wbps=max riops=300 wiops=max");
        c = gantry_qos_cap_of(&d, GANTRY_QOS_POLICY_CAP, 3);
        assert_int_equal(c.rbps, 5000000);
        c = gantry_qos_cap_of(&d, GANTRY_QOS_POLICY_BURST, 1.5);
        assert_int_equal(c.rbps, 7500000);
        assert_int_equal(c.riops, 450);
        assert_int_equal(c.wbps, 0);
        c = gantry_qos_cap_of(&d, GANTRY_QOS_POLICY_NONE, 1);
        assert_int_equal(c.rbps, 0);
        assert_int_equal(gantry_qos_policy_parse("parameters.bandwidthPolicy", "throttle", &p, &err),
                         -EINVAL);
        assert_string_equal(err.msg, "parameters.bandwidthPolicy: must be cap, burst or none");
}

static const char *param(void *ud, const char *key)
{
        return json_string_value(json_object_get(ud, key));
}

static void test_class_parameters_validated(void **state)
{
        struct gantry_bw_class c;
        struct gantry_error err;
        json_t *p;

        (void)state;
        p = json_pack("{}");
        assert_int_equal(gantry_bw_class_parse(param, p, "parameters", &c, &err), 0);
        assert_int_equal(c.policy, GANTRY_BW_POLICY_CAP);
        json_decref(p);
        p = json_pack("{s:s}", "bandwidthPolicy", "burst");
        assert_int_equal(gantry_bw_class_parse(param, p, "parameters", &c, &err), 0);
        assert_true(fabs(c.burst_factor - 2) < 1e-9);
        json_decref(p);
        p = json_pack("{s:s,s:s}", "bandwidthPolicy", "cap", "bandwidthBurstFactor", "3");
        assert_int_equal(gantry_bw_class_parse(param, p, "parameters", &c, &err), -EINVAL);
        assert_string_equal(err.msg, "parameters.bandwidthBurstFactor: only with bandwidthPolicy burst");
        json_decref(p);
        p = json_pack("{s:s,s:s}", "bandwidthPolicy", "burst", "bandwidthBurstFactor", "0.5");
        assert_int_equal(gantry_bw_class_parse(param, p, "parameters", &c, &err), -EINVAL);
        assert_string_equal(err.msg, "parameters.bandwidthBurstFactor: must be a number from 1 to 1000");
        json_decref(p);
        p = json_pack("{s:s}", "bandwidthReadIOPS", "-4");
        assert_int_equal(gantry_bw_class_parse(param, p, "parameters", &c, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "parameters.bandwidthReadIOPS:"));
        json_decref(p);
        p = json_pack("{s:s}", "bandwidthPolicy", "fast");
        assert_int_equal(gantry_bw_class_parse(param, p, "parameters", &c, &err), -EINVAL);
        assert_string_equal(err.msg, "parameters.bandwidthPolicy: must be cap, burst or none");
        json_decref(p);
}

static const char *published_paths[8];

static bool published(const char *target)
{
        for (size_t i = 0; i < 8; i++)
                if (published_paths[i] && !strcmp(published_paths[i], target))
                        return true;
        return false;
}

static int count_visit(const struct gantry_qos_entry *e, void *ud)
{
        (*(int *)ud) += e->enforced;
        return 0;
}

static size_t count_records(void)
{
        char cmd[600];
        FILE *f;
        size_t n = 0;
        char line[64];

        snprintf(cmd, sizeof(cmd), "ls '%s' | grep -c '^qos-.*\\.rec$'", state_dir);
        f = popen(cmd, "r");
        assert_non_null(f);
        if (fgets(line, sizeof(line), f))
                n = strtoul(line, NULL, 10);
        pclose(f);
        return n;
}

static void test_apply_remove_reconcile(void **state)
{
        const char *a_rel = "kubepods.slice/kubepods-burstable.slice/"
                            "kubepods-burstable-pod0b6f2c5a_1111_4a4a_9b9b_000000000001.slice";
        const char *b_rel = "kubepods/besteffort/pod" UID_B;
        struct gantry_qos_options o = { .state_dir = state_dir, .cgroup_root = cg,
                                        .published = published };
        struct gantry_qos_request ra = {
                .pod_uid = UID_A, .pod_namespace = "ml", .pod_name = "a", .volume_id = "ds-1",
                .target_path = "/var/lib/kubelet/pods/a/volumes/x/mount", .dev_major = 251,
                .dev_minor = 0, .declared = { .rbps = 4000000 }, .policy = GANTRY_QOS_POLICY_CAP,
        };
        struct gantry_qos_request rb = ra;
        struct gantry_error err = { 0 };
        char dir_a[1024], dir_b[1024], line[256];
        int n = 0;

        (void)state;
        put("cgroup.controllers", "cpuset cpu io memory pids\n");
        mkdirs(a_rel);
        mkdirs(b_rel);
        snprintf(dir_a, sizeof(dir_a), "%s/%s", cg, a_rel);
        snprintf(dir_b, sizeof(dir_b), "%s/%s", cg, b_rel);
        put("kubepods.slice/kubepods-burstable.slice/"
            "kubepods-burstable-pod0b6f2c5a_1111_4a4a_9b9b_000000000001.slice/io.max", "");
        put("kubepods/besteffort/pod" UID_B "/io.max", "");
        rb.pod_uid = UID_B;
        rb.pod_name = "b";
        rb.target_path = "/var/lib/kubelet/pods/b/volumes/x/mount";
        rb.declared.rbps = 8000000;
        rb.policy = GANTRY_QOS_POLICY_BURST;
        rb.burst_factor = 1.5;
        published_paths[0] = ra.target_path;
        published_paths[1] = rb.target_path;

        assert_int_equal(gantry_qos_init(&o, &err), 0);
        /* one ROX device, two pods: each cgroup its own line */
        assert_int_equal(gantry_qos_apply(&ra, &err), 0);
        assert_int_equal(gantry_qos_apply(&rb, &err), 0);
        get(dir_a, line, sizeof(line));
        assert_string_equal(line, "251:0 rbps=4000000 wbps=max riops=max wiops=max");
        get(dir_b, line, sizeof(line));
        assert_string_equal(line, "251:0 rbps=12000000 wbps=max riops=max wiops=max");
        assert_int_equal(gantry_qos_for_each(count_visit, &n), 0);
        assert_int_equal(n, 2);
        assert_int_equal(count_records(), 2);
        /* idempotent */
        assert_int_equal(gantry_qos_apply(&ra, &err), 0);
        assert_int_equal(count_records(), 2);

        /* a restart: the records come back and reconcile re-applies them */
        put("kubepods/besteffort/pod" UID_B "/io.max", "");
        gantry_qos_shutdown();
        assert_int_equal(gantry_qos_init(&o, &err), 0);
        assert_int_equal(gantry_qos_reconcile(), 2);
        get(dir_b, line, sizeof(line));
        assert_string_equal(line, "251:0 rbps=12000000 wbps=max riops=max wiops=max");

        /* unpublish takes the line back and drops the record */
        assert_int_equal(gantry_qos_remove(ra.target_path, &err), 0);
        get(dir_a, line, sizeof(line));
        assert_string_equal(line, "251:0 rbps=max wbps=max riops=max wiops=max");
        assert_int_equal(count_records(), 1);
        assert_int_equal(gantry_qos_remove(ra.target_path, &err), 0); /* none: fine */

        /* pod b deleted while the plugin was down: nothing left behind */
        gantry_qos_shutdown();
        assert_int_equal(rmdir(dir_b) == 0 || (unlink(strcat(strcpy(line, dir_b), "/io.max")) == 0 &&
                                               rmdir(dir_b) == 0), 1);
        assert_int_equal(gantry_qos_init(&o, &err), 0);
        assert_int_equal(gantry_qos_reconcile(), 0);
        assert_int_equal(count_records(), 0);
        n = 0;
        assert_int_equal(gantry_qos_for_each(count_visit, &n), 0);
        assert_int_equal(n, 0);

        /* a target path kubelet unpublished while the plugin was down */
        assert_int_equal(gantry_qos_apply(&ra, &err), 0);
        published_paths[0] = NULL;
        assert_int_equal(gantry_qos_reconcile(), 0);
        get(dir_a, line, sizeof(line));
        assert_string_equal(line, "251:0 rbps=max wbps=max riops=max wiops=max");
        assert_int_equal(count_records(), 0);
}

static void test_cgroup_v1_not_enforced(void **state)
{
        struct gantry_qos_options o = { .state_dir = state_dir, .cgroup_root = cg };
        struct gantry_qos_request r = {
                .pod_uid = UID_A, .pod_namespace = "ml", .pod_name = "a", .volume_id = "ds-1",
                .target_path = "/t", .dev_major = 8, .dev_minor = 0,
                .declared = { .rbps = 1000 },
        };
        struct gantry_error err = { 0 };
        int n = 0;

        (void)state;
        /* no cgroup.controllers: a v1 (or hybrid) hierarchy */
        assert_int_equal(gantry_qos_init(&o, &err), 0);
        assert_int_equal(gantry_qos_apply(&r, &err), 0);
        assert_int_equal(gantry_qos_for_each(count_visit, &n), 0);
        assert_int_equal(n, 0);
        assert_int_equal(count_records(), 1);
        assert_int_equal(gantry_qos_reconcile(), 0);
        assert_int_equal(count_records(), 1); /* kept: nothing says the pod is gone */
}

static void test_refused_line_is_an_error_and_no_record(void **state)
{
        struct gantry_qos_options o = { .state_dir = state_dir, .cgroup_root = cg };
        struct gantry_qos_request r = {
                .pod_uid = UID_A, .pod_namespace = "ml", .pod_name = "a", .volume_id = "ds-1",
                .target_path = "/t", .dev_major = 8, .dev_minor = 0,
                .declared = { .rbps = 1000 },
        };
        struct gantry_error err = { 0 };
        char io_max[600];

        (void)state;
        put("cgroup.controllers", "io\n");
        mkdirs("kubepods/pod" UID_A);
        /* io.max that cannot be written (a directory): what a refused line looks like */
        snprintf(io_max, sizeof(io_max), "%s/kubepods/pod" UID_A "/io.max", cg);
        assert_int_equal(mkdir(io_max, 0755), 0);
        assert_int_equal(gantry_qos_init(&o, &err), 0);
        assert_true(gantry_qos_apply(&r, &err) < 0);
        assert_non_null(strstr(err.msg, "io.max of pod ml/a"));
        assert_int_equal(count_records(), 0);
        /* a bad UID never becomes a path */
        r.pod_uid = "../../x";
        assert_int_equal(gantry_qos_apply(&r, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "pod uid"));
}

static int find_dev(const struct gantry_qos_entry *e, void *ud)
{
        unsigned *dev = ud;

        dev[0] = e->dev_major;
        dev[1] = e->dev_minor;
        dev[2] = e->enforced;
        return 0;
}

/* The rbps cap io.max holds for a device of @dir; -1 when it has no line. */
static long long rbps_of(const char *dir, unsigned major)
{
        struct gantry_qos_rates got;
        int found = gantry_qos_iomax_read(dir, major, 0, &got);

        assert_true(found >= 0);
        return found ? (long long)got.rbps : -1;
}

static void test_republish_moves_the_cap_whole_or_not_at_all(void **state)
{
        struct gantry_qos_options o = { .state_dir = state_dir, .cgroup_root = cg };
        struct gantry_qos_request r = {
                .pod_uid = UID_A, .pod_namespace = "ml", .pod_name = "a", .volume_id = "ds-1",
                .target_path = "/t", .dev_major = 251, .dev_minor = 0,
                .declared = { .rbps = 4000000 }, .policy = GANTRY_QOS_POLICY_CAP,
        };
        struct gantry_error err = { 0 };
        unsigned dev[3] = { 0 };
        char dir[600];

        (void)state;
        put("cgroup.controllers", "io\n");
        mkdirs("kubepods/pod" UID_A);
        put("kubepods/pod" UID_A "/io.max", "");
        snprintf(dir, sizeof(dir), "%s/kubepods/pod" UID_A, cg);
        assert_int_equal(gantry_qos_init(&o, &err), 0);
        assert_int_equal(gantry_qos_apply(&r, &err), 0);
        assert_int_equal(rbps_of(dir, 251), 4000000);

        /* the same target path re-published on another device: the cap moves */
        r.dev_major = 252;
        assert_int_equal(gantry_qos_apply(&r, &err), 0);
        assert_int_equal(rbps_of(dir, 252), 4000000);
        assert_int_equal(rbps_of(dir, 251), 0); /* taken back ("max") */

        /* a re-publish on a device whose line is refused: the cap stays where it was, recorded */
        r.dev_major = ABSENT_MAJOR;
        assert_int_equal(gantry_qos_apply(&r, &err), -ENODEV);
        assert_int_equal(count_records(), 1);
        assert_int_equal(gantry_qos_for_each(find_dev, dev), 0);
        assert_int_equal(dev[0], 252);
        assert_int_equal(dev[2], 1);
        assert_int_equal(rbps_of(dir, 252), 4000000);
        /* and so on disk: a restart finds the device whose line is in force */
        gantry_qos_shutdown();
        assert_int_equal(gantry_qos_init(&o, &err), 0);
        assert_int_equal(gantry_qos_for_each(find_dev, dev), 0);
        assert_int_equal(dev[0], 252);

        /* so the unpublish can take it back */
        assert_int_equal(gantry_qos_remove(r.target_path, &err), 0);
        assert_int_equal(rbps_of(dir, 252), 0);
        assert_int_equal(count_records(), 0);
}

/* ---- the scheduler's charge and the node's cap: one number ---- */

static const char *const objects[] = {
        "{\"kind\":\"StorageClass\",\"metadata\":{\"name\":\"ds\"},\"provisioner\":\"csi.gantry.io\","
        "\"parameters\":{\"tier\":\"dataset\",\"clusterID\":\"ceph-a\","
        "\"gantry.io/read-gbps-per-gpu\":\"3\",\"bandwidthPolicy\":\"burst\","
        "\"bandwidthBurstFactor\":\"1.5\"}}",
        "{\"kind\":\"StorageClass\",\"metadata\":{\"name\":\"dflt\"},\"provisioner\":\"csi.gantry.io\","
        "\"parameters\":{\"tier\":\"dataset\",\"clusterID\":\"ceph-a\",\"gantry.io/default-gbps\":\"0.25\"}}",
        "{\"kind\":\"StorageClass\",\"metadata\":{\"name\":\"ck\",\"annotations\":"
        "{\"gantry.io/write-gbps-per-gpu\":\"2\"}},\"provisioner\":\"csi.gantry.io\","
        "\"parameters\":{\"tier\":\"checkpoint\",\"targetID\":\"tgt-a\",\"bandwidthWriteIOPS\":\"900\"}}",
        "{\"kind\":\"PersistentVolume\",\"metadata\":{\"name\":\"pv-1\"},\"spec\":{\"storageClassName\":\"ds\","
        "\"csi\":{\"driver\":\"csi.gantry.io\",\"volumeHandle\":\"ds-vol-1\",\"volumeAttributes\":"
        "{\"tier\":\"dataset\",\"clusterID\":\"ceph-b\"}}}}",
        "{\"kind\":\"PersistentVolume\",\"metadata\":{\"name\":\"pv-2\"},\"spec\":{\"storageClassName\":\"ds\","
        "\"csi\":{\"driver\":\"csi.gantry.io\",\"volumeHandle\":\"ds-vol-2\",\"volumeAttributes\":"
        "{\"tier\":\"dataset\",\"clusterID\":\"ceph-b\"}}}}",
        "{\"kind\":\"PersistentVolume\",\"metadata\":{\"name\":\"pv-3\"},\"spec\":{\"storageClassName\":\"ck\","
        "\"csi\":{\"driver\":\"csi.gantry.io\",\"volumeHandle\":\"ck-vol-3\",\"volumeAttributes\":"
        "{\"tier\":\"checkpoint\",\"targetID\":\"tgt-a\"}}}}",
        "{\"kind\":\"PersistentVolume\",\"metadata\":{\"name\":\"pv-4\"},\"spec\":{\"storageClassName\":\"dflt\","
        "\"csi\":{\"driver\":\"csi.gantry.io\",\"volumeHandle\":\"ds-vol-4\",\"volumeAttributes\":"
        "{\"tier\":\"dataset\",\"clusterID\":\"ceph-a\"}}}}",
        "{\"kind\":\"PersistentVolumeClaim\",\"metadata\":{\"name\":\"c1\",\"namespace\":\"ml\"},"
        "\"spec\":{\"storageClassName\":\"ds\",\"volumeName\":\"pv-1\"}}",
        "{\"kind\":\"PersistentVolumeClaim\",\"metadata\":{\"name\":\"c2\",\"namespace\":\"ml\"},"
        "\"spec\":{\"storageClassName\":\"ds\",\"volumeName\":\"pv-2\"}}",
        "{\"kind\":\"PersistentVolumeClaim\",\"metadata\":{\"name\":\"c3\",\"namespace\":\"ml\"},"
        "\"spec\":{\"storageClassName\":\"ck\",\"volumeName\":\"pv-3\"}}",
        "{\"kind\":\"PersistentVolumeClaim\",\"metadata\":{\"name\":\"c4\",\"namespace\":\"ml\"},"
        "\"spec\":{\"storageClassName\":\"dflt\",\"volumeName\":\"pv-4\"}}",
        /* a volume of class ds whose bandwidth was changed live: the class in force is fast */
        "{\"kind\":\"VolumeAttributesClass\",\"metadata\":{\"name\":\"fast\"},"
        "\"driverName\":\"csi.gantry.io\",\"parameters\":{\"gantry.io/read-gbps-per-gpu\":\"5\","
        "\"bandwidthPolicy\":\"cap\",\"bandwidthReadIOPS\":\"4000\"}}",
        "{\"kind\":\"PersistentVolume\",\"metadata\":{\"name\":\"pv-5\"},\"spec\":{\"storageClassName\":\"ds\","
        "\"csi\":{\"driver\":\"csi.gantry.io\",\"volumeHandle\":\"ds-vol-5\",\"volumeAttributes\":"
        "{\"tier\":\"dataset\",\"clusterID\":\"ceph-b\"}}}}",
        "{\"kind\":\"PersistentVolumeClaim\",\"metadata\":{\"name\":\"c5\",\"namespace\":\"ml\"},"
        "\"spec\":{\"storageClassName\":\"ds\",\"volumeName\":\"pv-5\","
        "\"volumeAttributesClassName\":\"fast\"},"
        "\"status\":{\"currentVolumeAttributesClassName\":\"fast\"}}",
};

/* The node's lookup: the same objects, by kind and name (the API GETs' stand-in). */
static json_t *objects_lookup(void *ud, enum gantry_bw_kind kind, const char *ns, const char *name)
{
        static const char *const kinds[] = { "PersistentVolumeClaim", "PersistentVolume",
                                             "StorageClass", "VolumeAttributesClass" };
        json_t *all = ud, *o;
        size_t i;

        json_array_foreach(all, i, o) {
                const json_t *md = json_object_get(o, "metadata");
                const char *ons = json_string_value(json_object_get(md, "namespace"));

                if (!strcmp(json_string_value(json_object_get(o, "kind")), kinds[kind]) &&
                    !strcmp(json_string_value(json_object_get(md, "name")), name) &&
                    (!ns || (ons && !strcmp(ons, ns))))
                        return json_incref(o);
        }
        return NULL;
}

static void check_equal(const char *pod_text, const char *const *volume_ids, size_t n_vol,
                        const double *want_gbps)
{
        static const enum gantry_obj_kind sk[] = { GANTRY_OBJ_STORAGE_CLASS, GANTRY_OBJ_PV,
                                                   GANTRY_OBJ_PVC, GANTRY_OBJ_ATTRIBUTES_CLASS };
        struct gantry_cluster *c;
        struct gantry_sched_state *st;
        struct gantry_sched_demand d;
        struct gantry_error err = { 0 };
        json_t *all = json_array(), *pod = json_loads(pod_text, 0, NULL);

        assert_non_null(pod);
        assert_int_equal(gantry_cluster_new(&c), 0);
        assert_int_equal(gantry_sched_state_new(c, &st), 0);
        for (size_t i = 0; i < sizeof(objects) / sizeof(objects[0]); i++) {
                json_t *o = json_loads(objects[i], 0, NULL);
                const char *k = json_string_value(json_object_get(o, "kind"));
                enum gantry_obj_kind kind = !strcmp(k, "StorageClass") ? sk[0]
                                            : !strcmp(k, "PersistentVolume") ? sk[1]
                                            : !strcmp(k, "VolumeAttributesClass") ? sk[3] : sk[2];

                assert_int_equal(gantry_sched_state_apply(st, kind, false, o, &err), 0);
                json_array_append_new(all, o);
        }
        assert_int_equal(
                gantry_sched_demand_from_pod(gantry_sched_state_cache(st), pod, &d, &err), 0);
        assert_int_equal(d.d.n_flows, n_vol);
        for (size_t i = 0; i < n_vol; i++) {
                struct gantry_qos_request req;
                unsigned long long charge = gantry_bw_bytes_per_second(d.d.flows[i].gbps);

                assert_int_equal(gantry_qos_request_from_pod(pod, objects_lookup, all, volume_ids[i],
                                                             &req, &err), 0);
                /* the scheduler's charge, in bytes/s, is the node's reservation */
                assert_int_equal(charge, req.declared.rbps + req.declared.wbps);
                assert_true(fabs(d.d.flows[i].gbps - want_gbps[i]) < 1e-9);
                /* the job the scheduler gangs the pod by is the one the node labels */
                assert_string_equal(req.job, d.job);
        }
        json_decref(pod);
        json_decref(all);
        gantry_sched_state_free(st);
        gantry_cluster_free(c);
}

static void test_scheduler_charge_equals_node_cap(void **state)
{
        static const char *const ids[] = { "ds-vol-1", "ds-vol-2", "ck-vol-3" };
        static const double per_gpu[] = { 12, 12, 8 }, declared[] = { 12.5, 12.5, 7 };
        static const char *const dflt_ids[] = { "ds-vol-4" };
        static const double dflt[] = { 0.25 };
        struct gantry_qos_request req;
        struct gantry_error err;
        json_t *all = json_array(), *pod;

        (void)state;
        /* from the classes' per-GPU rates: 4 GPUs x 3 (dataset), x 2 (checkpoint) */
        check_equal("{\"metadata\":{\"name\":\"p\",\"namespace\":\"ml\",\"uid\":\"" UID_A "\"},"
                    "\"spec\":{\"containers\":[{\"resources\":{\"requests\":{\"nvidia.com/gpu\":\"4\"}}}],"
                    "\"volumes\":[{\"name\":\"a\",\"persistentVolumeClaim\":{\"claimName\":\"c1\"}},"
                    "{\"name\":\"b\",\"persistentVolumeClaim\":{\"claimName\":\"c2\"}},"
                    "{\"name\":\"c\",\"persistentVolumeClaim\":{\"claimName\":\"c3\"}}]}}",
                    ids, 3, per_gpu);
        /* declared: 25 Gbps split over two datasets, 7 over the checkpoint */
        check_equal("{\"metadata\":{\"name\":\"p\",\"namespace\":\"ml\",\"uid\":\"" UID_A "\","
                    "\"annotations\":{\"gantry.io/dataset-read-gbps\":\"25\","
                    "\"gantry.io/checkpoint-write-gbps\":\"7\"}},"
                    "\"spec\":{\"containers\":[{\"resources\":{\"requests\":{\"nvidia.com/gpu\":\"4\"}}}],"
                    "\"volumes\":[{\"name\":\"a\",\"persistentVolumeClaim\":{\"claimName\":\"c1\"}},"
                    "{\"name\":\"b\",\"persistentVolumeClaim\":{\"claimName\":\"c2\"}},"
                    "{\"name\":\"c\",\"persistentVolumeClaim\":{\"claimName\":\"c3\"}}]}}",
                    ids, 3, declared);
        /* a JobSet's pod: same charge, same job key on both sides */
        check_equal("{\"metadata\":{\"name\":\"p\",\"namespace\":\"ml\",\"uid\":\"" UID_A "\","
                    "\"labels\":{\"jobset.sigs.k8s.io/jobset-name\":\"llama\"}},"
                    "\"spec\":{\"containers\":[{\"resources\":{\"requests\":{\"nvidia.com/gpu\":\"4\"}}}],"
                    "\"volumes\":[{\"name\":\"a\",\"persistentVolumeClaim\":{\"claimName\":\"c1\"}},"
                    "{\"name\":\"b\",\"persistentVolumeClaim\":{\"claimName\":\"c2\"}},"
                    "{\"name\":\"c\",\"persistentVolumeClaim\":{\"claimName\":\"c3\"}}]}}",
                    ids, 3, per_gpu);
        /* declared nothing, no GPU: the class's default rate, charged and capped */
        check_equal("{\"metadata\":{\"name\":\"p\",\"namespace\":\"ml\",\"uid\":\"" UID_A "\"},"
                    "\"spec\":{\"containers\":[{}],"
                    "\"volumes\":[{\"name\":\"a\",\"persistentVolumeClaim\":{\"claimName\":\"c4\"}}]}}",
                    dflt_ids, 1, dflt);

        /* the node's request carries the class's policy and IOPS */
        for (size_t i = 0; i < sizeof(objects) / sizeof(objects[0]); i++)
                json_array_append_new(all, json_loads(objects[i], 0, NULL));
        pod = json_loads("{\"metadata\":{\"name\":\"p\",\"namespace\":\"ml\",\"uid\":\"" UID_A "\"},"
                         "\"spec\":{\"containers\":[{\"resources\":{\"limits\":{\"nvidia.com/gpu\":2}}}],"
                         "\"volumes\":[{\"name\":\"a\",\"persistentVolumeClaim\":{\"claimName\":\"c1\"}},"
                         "{\"name\":\"c\",\"persistentVolumeClaim\":{\"claimName\":\"c3\"}}]}}",
                         0, NULL);
        assert_int_equal(gantry_qos_request_from_pod(pod, objects_lookup, all, "ds-vol-1", &req, &err), 0);
        assert_int_equal(req.policy, GANTRY_QOS_POLICY_BURST);
        assert_true(fabs(req.burst_factor - 1.5) < 1e-9);
        assert_int_equal(req.declared.rbps, 750000000ULL); /* 2 x 3 Gbps */
        assert_string_equal(req.pod_uid, UID_A);
        assert_int_equal(gantry_qos_request_from_pod(pod, objects_lookup, all, "ck-vol-3", &req, &err), 0);
        assert_int_equal(req.policy, GANTRY_QOS_POLICY_CAP);
        assert_int_equal(req.declared.wbps, 500000000ULL); /* 2 x 2 Gbps */
        assert_int_equal(req.declared.wiops, 900);
        assert_int_equal(gantry_qos_request_from_pod(pod, objects_lookup, all, "nope", &req, &err),
                         -ENOENT);
        json_decref(pod);
        json_decref(all);
}

/*
 * A VolumeAttributesClass in force (the PVC's status says so) replaces the
 * StorageClass's rate and policy on both sides: the scheduler charges 4 GPUs
 * x 5 Gbps, the node caps at the same figure under the class's policy cap,
 * without the StorageClass's burst factor.
 */
static void test_attributes_class_in_force(void **state)
{
        static const char *const ids[] = { "ds-vol-5" };
        static const double want[] = { 20 };
        const char *pod_text =
                "{\"metadata\":{\"name\":\"p\",\"namespace\":\"ml\",\"uid\":\"" UID_A "\"},"
                "\"spec\":{\"containers\":[{\"resources\":{\"requests\":{\"nvidia.com/gpu\":\"4\"}}}],"
                "\"volumes\":[{\"name\":\"a\",\"persistentVolumeClaim\":{\"claimName\":\"c5\"}}]}}";
        struct gantry_qos_request req;
        struct gantry_error err = { 0 };
        json_t *all = json_array(), *pod = json_loads(pod_text, 0, NULL);

        (void)state;
        check_equal(pod_text, ids, 1, want);
        for (size_t i = 0; i < sizeof(objects) / sizeof(objects[0]); i++)
                json_array_append_new(all, json_loads(objects[i], 0, NULL));
        assert_int_equal(gantry_qos_request_from_pod(pod, objects_lookup, all, "ds-vol-5", &req, &err), 0);
        assert_int_equal(req.policy, GANTRY_QOS_POLICY_CAP);
        assert_true(fabs(req.burst_factor - 1) < 1e-9);
        assert_int_equal(req.declared.rbps, 2500000000ULL); /* 4 x 5 Gbps */
        assert_int_equal(req.declared.riops, 4000);

        /* the same volume before the class is in force: the StorageClass's figures */
        json_object_del(json_object_get(json_array_get(all, sizeof(objects) / sizeof(objects[0]) - 1),
                                        "status"),
                        "currentVolumeAttributesClassName");
        assert_int_equal(gantry_qos_request_from_pod(pod, objects_lookup, all, "ds-vol-5", &req, &err), 0);
        assert_int_equal(req.policy, GANTRY_QOS_POLICY_BURST);
        assert_int_equal(req.declared.rbps, 1500000000ULL); /* 4 x 3 Gbps */
        json_decref(pod);
        json_decref(all);
}

static void test_job_of_pod(void **state)
{
        static const struct {
                const char *metadata, *want;
        } cases[] = {
                { "{\"labels\":{\"gantry.io/job\":\"llama\",\"jobset.sigs.k8s.io/jobset-name\":\"x\"}}",
                  "ml/llama" },
                { "{\"annotations\":{\"gantry.io/job\":\"llama\"}}", "ml/llama" },
                { "{\"labels\":{\"jobset.sigs.k8s.io/jobset-name\":\"js\"}}", "ml/JobSet/js" },
                { "{\"labels\":{\"scheduling.x-k8s.io/pod-group\":\"pg\"}}", "ml/PodGroup/pg" },
                { "{\"ownerReferences\":[{\"kind\":\"ReplicaSet\",\"name\":\"rs\",\"controller\":true},"
                  "{\"kind\":\"PyTorchJob\",\"name\":\"pt\",\"controller\":true}]}",
                  "ml/PyTorchJob/pt" },
                { "{\"ownerReferences\":[{\"kind\":\"Job\",\"name\":\"j\"}]}", "" }, /* not controller */
                { "{\"labels\":{\"gantry.io/job\":\"\"}}", "" },
        };
        char buf[GANTRY_BW_JOB_MAX];

        (void)state;
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                json_t *md = json_loads(cases[i].metadata, 0, NULL), *pod;

                assert_non_null(md);
                pod = json_pack("{s:o}", "metadata", md);
                gantry_bw_job_of_pod(pod, "ml", buf, sizeof(buf));
                assert_string_equal(buf, cases[i].want);
                json_decref(pod);
        }
}

static int job_visit(void *ctx, const struct gantry_usage_target *t)
{
        snprintf(ctx, GANTRY_BW_JOB_MAX, "%s", t->job);
        return 0;
}

static int entry_job(const struct gantry_qos_entry *e, void *ud)
{
        snprintf(ud, GANTRY_BW_JOB_MAX, "%s", e->job);
        return 0;
}

/* The job is recorded with the cap, survives a restart and labels the usage. */
static void test_job_recorded_and_labelled(void **state)
{
        struct gantry_qos_options o = { .state_dir = state_dir, .cgroup_root = cg };
        struct gantry_qos_request r = {
                .pod_uid = UID_B, .pod_namespace = "ml", .pod_name = "a", .job = "ml/JobSet/llama",
                .volume_id = "ds-1", .target_path = "/var/lib/kubelet/pods/a/volumes/x/mount",
                .dev_major = 251, .declared = { .rbps = 4000000 },
        };
        struct gantry_error err = { 0 };
        char job[GANTRY_BW_JOB_MAX] = "";

        (void)state;
        put("cgroup.controllers", "io\n");
        mkdirs("kubepods/besteffort/pod" UID_B);
        put("kubepods/besteffort/pod" UID_B "/io.max", "");
        assert_int_equal(gantry_qos_init(&o, &err), 0);
        assert_int_equal(gantry_qos_apply(&r, &err), 0);
        gantry_qos_shutdown();
        assert_int_equal(gantry_qos_init(&o, &err), 0);
        assert_int_equal(gantry_qos_reconcile(), 1);
        assert_int_equal(gantry_qos_for_each(entry_job, job), 0);
        assert_string_equal(job, "ml/JobSet/llama");
        /* the metrics' job label: the namespace is a label of its own */
        assert_int_equal(gantry_usage_qos_iterate(NULL, job_visit, job), 0);
        assert_string_equal(job, "JobSet/llama");

        /* a job that is no line is refused before anything is written */
        snprintf(r.job, sizeof(r.job), "ml/a\nb");
        assert_int_equal(gantry_qos_apply(&r, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "job"));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_cgroup_find_both_drivers_every_qos, setup, teardown),
                cmocka_unit_test(test_iomax_line_and_policies),
                cmocka_unit_test(test_job_of_pod),
                cmocka_unit_test_setup_teardown(test_job_recorded_and_labelled, setup, teardown),
                cmocka_unit_test(test_class_parameters_validated),
                cmocka_unit_test_setup_teardown(test_apply_remove_reconcile, setup, teardown),
                cmocka_unit_test_setup_teardown(test_cgroup_v1_not_enforced, setup, teardown),
                cmocka_unit_test_setup_teardown(test_refused_line_is_an_error_and_no_record, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_republish_moves_the_cap_whole_or_not_at_all, setup,
                                                teardown),
                cmocka_unit_test(test_scheduler_charge_equals_node_cap),
                cmocka_unit_test(test_attributes_class_in_force),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
