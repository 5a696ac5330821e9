/*
 * Unit tests of the key=value logger (common/log.c): level parsing,
 * filtering, one line per event, and quoting of awkward values.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "log.h"

/* Runs @fn with stderr redirected to a temp file; returns what it wrote. */
static char *capture(void (*fn)(void))
{
        char path[] = "/tmp/gantry-test-log-XXXXXX";
        int fd = mkstemp(path), saved = dup(STDERR_FILENO);
        char *buf = calloc(1, 8192);
        ssize_t n;

        dup2(fd, STDERR_FILENO);
        fn();
        dup2(saved, STDERR_FILENO);
        close(saved);
        lseek(fd, 0, SEEK_SET);
        n = read(fd, buf, 8191);
        (void)n;
        close(fd);
        unlink(path);
        return buf;
}

static void emit(void)
{
        gantry_log_set_level(GANTRY_LOG_INFO);
        log_debug("hidden", "k=%d", 1);
        log_info("shown", "method=%s n=%d", "Probe", 2);
        log_error("bare", NULL);
}

static void test_levels_and_lines(void **state)
{
        char *out = capture(emit);

        (void)state;
        assert_null(strstr(out, "hidden"));
        assert_non_null(strstr(out, "level=info event=shown method=Probe n=2\n"));
        assert_non_null(strstr(out, "level=error event=bare\n"));
        assert_int_equal(strncmp(out, "ts=", 3), 0);
        free(out);
}

static void test_parse(void **state)
{
        enum gantry_log_level l = GANTRY_LOG_INFO;

        (void)state;
        assert_int_equal(gantry_log_level_parse("warn", &l), 0);
        assert_int_equal(l, GANTRY_LOG_WARN);
        assert_int_equal(gantry_log_level_parse("verbose", &l), -EINVAL);
        assert_int_equal(l, GANTRY_LOG_WARN);
        assert_int_equal(gantry_log_level_parse(NULL, &l), -EINVAL);
}

static void test_quote(void **state)
{
        char buf[64];

        (void)state;
        assert_string_equal(gantry_log_quote("plain", buf, sizeof(buf)), "plain");
        assert_string_equal(gantry_log_quote("two words", buf, sizeof(buf)), "\"two words\"");
        assert_string_equal(gantry_log_quote("a\"b", buf, sizeof(buf)), "\"a\\\"b\"");
        assert_string_equal(gantry_log_quote("k=v", buf, sizeof(buf)), "\"k=v\"");
        assert_string_equal(gantry_log_quote("", buf, sizeof(buf)), "\"\"");
        assert_string_equal(gantry_log_quote("line\nbreak", buf, sizeof(buf)), "\"line\\nbreak\"");
        gantry_log_quote("a very long value with spaces that will not fit", buf, 12);
        assert_int_equal(buf[0], '"');
        assert_true(strlen(buf) < 12);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_levels_and_lines),
                cmocka_unit_test(test_parse),
                cmocka_unit_test(test_quote),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
