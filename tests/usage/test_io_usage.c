/*
 * Unit tests of node/qos/io_usage.c: the io.stat and io.pressure parsers on
 * contents captured from real kernels (vm_*: a cgroup of the VM's Debian
 * 6.1 kernel that read a null_blk device under an io.max cap of 20 MB/s,
 * captured by bench/qos/bench_qos_guest.sh; host_io.pressure: this
 * machine's cgroup v2 root; in tests/usage/fixtures/cgroup_io/), a
 * two-device io.stat in the kernel's format, malformed lines, and the reader on a
 * directory laid out as a pod cgroup (a plain directory with the two files:
 * the reader only reads them).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "io_usage.h"

#ifndef FIXTURES
#error "FIXTURES must name tests/usage/fixtures/cgroup_io"
#endif

static char *slurp(const char *name, size_t *ret_len)
{
        char path[1024];
        FILE *f;
        char *buf = malloc(GANTRY_IO_USAGE_FILE_MAX);
        size_t n;

        snprintf(path, sizeof(path), "%s/%s", FIXTURES, name);
        f = fopen(path, "rb");
        assert_non_null(f);
        assert_non_null(buf);
        n = fread(buf, 1, GANTRY_IO_USAGE_FILE_MAX, f);
        fclose(f);
        *ret_len = n;
        return buf;
}

/* A pod cgroup's io.stat in the kernel's format with two devices: the one
 * measured is not the first line. */
static const char two_devices[] =
        "254:0 rbytes=8192 wbytes=0 rios=2 wios=0 dbytes=0 dios=0\n"
        "251:0 rbytes=104857600 wbytes=4096 rios=100 wios=1 dbytes=0 dios=0\n";

static void test_stat_picks_the_device(void **state)
{
        struct gantry_io_stat st;

        (void)state;
        assert_int_equal(gantry_io_usage_parse_stat(two_devices, strlen(two_devices), 251, 0, &st), 0);
        assert_int_equal(st.rbytes, 104857600);
        assert_int_equal(st.wbytes, 4096);
        assert_int_equal(st.rios, 100);
        assert_int_equal(st.wios, 1);
        assert_int_equal(st.dbytes, 0);
        assert_int_equal(gantry_io_usage_parse_stat(two_devices, strlen(two_devices), 254, 0, &st), 0);
        assert_int_equal(st.rbytes, 8192);
        assert_int_equal(st.rios, 2);
}

static void test_stat_captured(void **state)
{
        struct gantry_io_stat st = { 0 };
        unsigned maj = 0, min = 0;
        size_t len;
        char *text = slurp("vm_io.stat", &len);
        char *dev = slurp("vm_device", &(size_t){ 0 });

        (void)state;
        assert_int_equal(sscanf(dev, "%u:%u", &maj, &min), 2);
        assert_int_equal(gantry_io_usage_parse_stat(text, len, maj, min, &st), 0);
        /* the capture read for seconds at >= 20 MB/s in 1 MiB direct reads */
        assert_true(st.rbytes >= 20 * 1000 * 1000);
        assert_true(st.rios >= st.rbytes / (1024 * 1024));
        assert_int_equal(st.wbytes, 0);
        free(text);
        free(dev);

        /* the same cgroup's io.pressure: tasks waited on the throttled reads */
        {
                struct gantry_io_pressure pr;

                text = slurp("vm_io.pressure", &len);
                assert_int_equal(gantry_io_usage_parse_pressure(text, len, &pr), 0);
                assert_int_equal(pr.some_us, 3795315);
                assert_true(pr.has_full);
                free(text);
        }
}

static void test_stat_absent_and_malformed(void **state)
{
        struct gantry_io_stat st = { .rbytes = 7 };
        static const char *bad[] = {
                "251:0 rbytes=12x wbytes=0\n",
                "251:0 rbytes wbytes=0\n",
                "251:0 rbytes=99999999999999999999999\n", /* > UINT64_MAX */
                "251:0 rbytes=-1\n",
                "251:0 rbytes=\n",
        };

        (void)state;
        assert_int_equal(gantry_io_usage_parse_stat(two_devices, strlen(two_devices), 8, 0, &st),
                         -ENOENT);
        assert_int_equal(gantry_io_usage_parse_stat("", 0, 8, 0, &st), -ENOENT);
        /* "251:01" is not parsed as another device's prefix */
        assert_int_equal(gantry_io_usage_parse_stat("2510:0 rbytes=1\n", 16, 251, 0, &st), -ENOENT);
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                assert_int_equal(gantry_io_usage_parse_stat(bad[i], strlen(bad[i]), 251, 0, &st),
                                 -EINVAL);
        assert_int_equal(st.rbytes, 7); /* untouched on failure */
        /* no trailing newline, unknown keys skipped, length bounds the text */
        assert_int_equal(gantry_io_usage_parse_stat("251:0 rbytes=5 cost.usage=9 rios=1xyz", 34, 251,
                                                    0, &st),
                         0);
        assert_int_equal(st.rbytes, 5);
        assert_int_equal(st.rios, 1);
}

static void test_pressure(void **state)
{
        struct gantry_io_pressure pr = { 0 };
        size_t len;
        char *text = slurp("host_io.pressure", &len);

        (void)state;
        assert_int_equal(gantry_io_usage_parse_pressure(text, len, &pr), 0);
        assert_int_equal(pr.some_us, 2990450);
        assert_int_equal(pr.full_us, 2675452);
        assert_true(pr.has_full);
        free(text);

        /* older kernels have no "full" line for io in the root */
        assert_int_equal(gantry_io_usage_parse_pressure("some avg10=0.00 total=5\n", 24, &pr), 0);
        assert_int_equal(pr.some_us, 5);
        assert_false(pr.has_full);
        assert_int_equal(gantry_io_usage_parse_pressure("full avg10=0.00 total=5\n", 24, &pr), -EINVAL);
        assert_int_equal(gantry_io_usage_parse_pressure("some avg10=0.00\n", 16, &pr), -EINVAL);
        assert_int_equal(gantry_io_usage_parse_pressure("some total=1z\n", 14, &pr), -EINVAL);
}

static void write_file(const char *dir, const char *name, const char *text)
{
        char path[1024];
        FILE *f;

        snprintf(path, sizeof(path), "%s/%s", dir, name);
        f = fopen(path, "w");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
}

static void test_read(void **state)
{
        char dir[] = "/tmp/gantry-io-usage-XXXXXX";
        char path[1100];
        struct gantry_io_usage u = { 0 };
        struct gantry_error err = { 0 };

        (void)state;
        assert_non_null(mkdtemp(dir));
        write_file(dir, "io.stat", two_devices);
        write_file(dir, "io.pressure", "some avg10=1.00 avg60=0.50 avg300=0.10 total=1500000\n"
                                       "full avg10=0.00 avg60=0.00 avg300=0.00 total=700\n");
        assert_int_equal(gantry_io_usage_read(dir, 251, 0, &u, &err), 0);
        assert_int_equal(u.stat.rbytes, 104857600);
        assert_true(u.has_pressure);
        assert_int_equal(u.pressure.some_us, 1500000);

        /* a device the pod has not touched reads as zeros */
        assert_int_equal(gantry_io_usage_read(dir, 259, 3, &u, &err), 0);
        assert_int_equal(u.stat.rbytes, 0);

        /* no io.pressure (PSI off): counters still read */
        snprintf(path, sizeof(path), "%s/io.pressure", dir);
        unlink(path);
        assert_int_equal(gantry_io_usage_read(dir, 251, 0, &u, &err), 0);
        assert_false(u.has_pressure);

        /* a malformed line names the file and the device */
        write_file(dir, "io.stat", "251:0 rbytes=abc\n");
        assert_int_equal(gantry_io_usage_read(dir, 251, 0, &u, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "/io.stat: line of device 251:0"));

        /* the cgroup is gone: -ENOENT naming io.stat */
        snprintf(path, sizeof(path), "%s/io.stat", dir);
        unlink(path);
        assert_int_equal(gantry_io_usage_read(dir, 251, 0, &u, &err), -ENOENT);
        assert_non_null(strstr(err.msg, path));
        rmdir(dir);

        assert_int_equal(gantry_io_usage_read("", 251, 0, &u, &err), -EINVAL);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_stat_picks_the_device),
                cmocka_unit_test(test_stat_captured),
                cmocka_unit_test(test_stat_absent_and_malformed),
                cmocka_unit_test(test_pressure),
                cmocka_unit_test(test_read),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
