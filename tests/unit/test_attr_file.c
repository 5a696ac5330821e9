/*
 * Unit tests of gantry_attr_read() (common/attr_file.c) on real files in a
 * temporary directory: the bare value without "\n", "\r\n" or padding, an
 * exact fit, a value too long for the buffer (-EFBIG, never cut short), an
 * empty file and a missing one. And gantry_file_read(): a whole file as it
 * is (newlines and NUL bytes kept), the size cap, a directory, a missing file.
 * And gantry_block_dev_name() against the DEVNAME of the same device's
 * uevent (another sysfs source), and for a device that does not exist.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <cmocka.h>

#include "attr_file.h"

struct dir {
        char path[64];
        char file[96];
};

static int dir_make(void **state)
{
        struct dir *d = calloc(1, sizeof(*d));

        snprintf(d->path, sizeof(d->path), "/tmp/gantry-attr-test-XXXXXX");
        if (!mkdtemp(d->path)) {
                free(d);
                return -1;
        }
        snprintf(d->file, sizeof(d->file), "%s/value", d->path);
        *state = d;
        return 0;
}

static int dir_remove(void **state)
{
        struct dir *d = *state;

        unlink(d->file);
        rmdir(d->path);
        free(d);
        return 0;
}

/* writes @len bytes of @text to the test file and reads it into a @size buffer */
static ssize_t write_read(struct dir *d, const char *text, size_t len, char *buf, size_t size)
{
        FILE *f = fopen(d->file, "we");

        assert_non_null(f);
        assert_int_equal(fwrite(text, 1, len, f), len);
        assert_int_equal(fclose(f), 0);
        memset(buf, 'X', size);
        return gantry_attr_read(d->file, buf, size);
}

static void test_trailing_newlines_go(void **state)
{
        const struct {
                const char *in, *out;
        } cases[] = {
                { "live\n", "live" },
                { "live", "live" },
                { "AQBx==\r\n", "AQBx==" },       /* a key saved on Windows */
                { "token\r\n\r\n", "token" },
                { "64 \n", "64" },                /* sysfs padding */
                { "a b\r\nc\r\n", "a b\r\nc" },   /* only the end is trimmed */
                { "\r\n", "" },
        };
        char buf[64];

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                ssize_t n = write_read(*state, cases[i].in, strlen(cases[i].in), buf, sizeof(buf));

                assert_int_equal(n, (ssize_t)strlen(cases[i].out));
                assert_string_equal(buf, cases[i].out);
        }
}

static void test_exact_fit_and_too_long(void **state)
{
        char buf[8];

        /* 7 bytes fill an 8-byte buffer exactly */
        assert_int_equal(write_read(*state, "1234567", 7, buf, sizeof(buf)), 7);
        assert_string_equal(buf, "1234567");
        /* 8 would be cut short: refused, and the buffer holds no half value */
        assert_int_equal(write_read(*state, "12345678", 8, buf, sizeof(buf)), -EFBIG);
        assert_string_equal(buf, "");
        /* the newline counts against the buffer too */
        assert_int_equal(write_read(*state, "1234567\n", 8, buf, sizeof(buf)), -EFBIG);
}

static void test_big_file_read_whole(void **state)
{
        size_t len = 200000;
        char *text = malloc(len + 2), *buf = malloc(len + 3);

        for (size_t i = 0; i < len; i++)
                text[i] = (char)('a' + i % 26);
        memcpy(text + len, "\r\n", 2);
        assert_int_equal(write_read(*state, text, len + 2, buf, len + 3), (ssize_t)len);
        assert_memory_equal(buf, text, len);
        assert_int_equal(buf[len], '\0');
        free(text);
        free(buf);
}

static void test_empty_and_missing(void **state)
{
        struct dir *d = *state;
        char buf[16], path[128];

        assert_int_equal(write_read(d, "", 0, buf, sizeof(buf)), 0);
        assert_string_equal(buf, "");
        snprintf(path, sizeof(path), "%s/absent", d->path);
        memset(buf, 'X', sizeof(buf));
        assert_int_equal(gantry_attr_read(path, buf, sizeof(buf)), -ENOENT);
        assert_string_equal(buf, "");
        assert_int_equal(gantry_attr_read(d->path, buf, sizeof(buf)), -EISDIR);
}

static void test_file_read_whole_as_is(void **state)
{
        static const char text[] = "-----BEGIN CERTIFICATE-----\r\nab\0cd\n";
        struct dir *d = *state;
        char buf[8], *data = NULL;
        size_t len = 0;

        write_read(d, text, sizeof(text) - 1, buf, sizeof(buf));
        assert_int_equal(gantry_file_read(d->file, sizeof(text) - 1, &data, &len), 0);
        assert_int_equal(len, sizeof(text) - 1);
        assert_memory_equal(data, text, len);
        assert_int_equal(data[len], '\0');
        free(data);
        /* one byte over the cap: refused, outputs untouched */
        data = NULL;
        len = 7;
        assert_int_equal(gantry_file_read(d->file, sizeof(text) - 2, &data, &len), -EFBIG);
        assert_null(data);
        assert_int_equal(len, 7);
        write_read(d, "", 0, buf, sizeof(buf));
        assert_int_equal(gantry_file_read(d->file, 16, &data, &len), 0);
        assert_int_equal(len, 0);
        assert_string_equal(data, "");
        free(data);
}

static void test_file_write_atomic(void **state)
{
        struct dir *d = *state;
        char tmp[sizeof(d->file) + 8], buf[32];

        snprintf(tmp, sizeof(tmp), "%s.tmp", d->file);
        assert_int_equal(gantry_file_write_atomic(d->file, "a=1\nb=2\n", 8), 0);
        assert_int_equal(gantry_attr_read(d->file, buf, sizeof(buf)), 7);
        assert_string_equal(buf, "a=1\nb=2");
        /* replaced whole, and no temporary file left behind */
        assert_int_equal(gantry_file_write_atomic(d->file, "c=3\n", 4), 0);
        assert_int_equal(gantry_attr_read(d->file, buf, sizeof(buf)), 3);
        assert_string_equal(buf, "c=3");
        assert_int_equal(access(tmp, F_OK), -1);
        /* a folder that is not there: the open() error */
        snprintf(tmp, sizeof(tmp), "%s/missing/value", d->path);
        assert_int_equal(gantry_file_write_atomic(tmp, "x", 1), -ENOENT);
}

static void test_file_read_not_a_file(void **state)
{
        struct dir *d = *state;
        char path[128], *data = NULL;
        size_t len = 0;

        assert_int_equal(gantry_file_read(d->path, 16, &data, &len), -EINVAL);
        snprintf(path, sizeof(path), "%s/absent", d->path);
        assert_int_equal(gantry_file_read(path, 16, &data, &len), -ENOENT);
        assert_null(data);
}

static void test_block_dev_name(void **state)
{
        DIR *d = opendir("/sys/dev/block");
        struct dirent *e;
        char name[64], small[2];
        int checked = 0;

        (void)state;
        while (d && (e = readdir(d))) {
                unsigned int maj, min;
                char uevent[600], text[1024], *devname;

                if (sscanf(e->d_name, "%u:%u", &maj, &min) != 2)
                        continue;
                snprintf(uevent, sizeof(uevent), "/sys/dev/block/%s/uevent", e->d_name);
                if (gantry_attr_read(uevent, text, sizeof(text)) < 0 || !(devname = strstr(text, "DEVNAME=")))
                        continue;
                devname += strlen("DEVNAME=");
                devname[strcspn(devname, "\n")] = '\0';
                assert_int_equal(gantry_block_dev_name(makedev(maj, min), name, sizeof(name)), 0);
                for (char *c = devname; *c; c++) /* sysfs spells "cciss/c0d0" "cciss!c0d0" */
                        if (*c == '/')
                                *c = '!';
                assert_string_equal(name, devname);
                assert_int_equal(gantry_block_dev_name(makedev(maj, min), small, sizeof(small)), -ENAMETOOLONG);
                checked++;
        }
        if (d)
                closedir(d);
        assert_int_equal(gantry_block_dev_name(makedev(4095, 1048575), name, sizeof(name)), -ENODEV);
        if (!checked)
                skip(); /* no block device in this sandbox */
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_trailing_newlines_go, dir_make, dir_remove),
                cmocka_unit_test_setup_teardown(test_exact_fit_and_too_long, dir_make, dir_remove),
                cmocka_unit_test_setup_teardown(test_big_file_read_whole, dir_make, dir_remove),
                cmocka_unit_test_setup_teardown(test_empty_and_missing, dir_make, dir_remove),
                cmocka_unit_test_setup_teardown(test_file_read_whole_as_is, dir_make, dir_remove),
                cmocka_unit_test_setup_teardown(test_file_read_not_a_file, dir_make, dir_remove),
                cmocka_unit_test_setup_teardown(test_file_write_atomic, dir_make, dir_remove),
                cmocka_unit_test(test_block_dev_name),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
