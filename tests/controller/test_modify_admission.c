/*
 * Unit tests of the controller's check with gantry-scheduler
 * (controller/modify_admission.c) that need no scheduler: which changes of
 * a volume's class may raise a rate and so must be asked (a rate new,
 * dropped or larger; not one unchanged or smaller, nor a key that is no
 * rate), the URL check at start, and no check at all without a URL. The
 * conversation itself runs against a real gantry-scheduler in
 * tests/gantry-target/test_checkpoint_modify_admission.py.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "modify_admission.h"

#define PER_GPU "gantry.io/read-gbps-per-gpu"
#define DEFAULT "gantry.io/default-gbps"

static bool raises(const char *old, const char *key, const char *value)
{
        const char *keys[] = { key }, *values[] = { value };

        return gantry_modify_admission_raises(old, keys, values, 1);
}

static void test_which_changes_are_asked(void **state)
{
        (void)state;
        /* larger, new, dropped (the StorageClass's applies), unknown record */
        assert_true(raises("{\"" PER_GPU "\":\"10\"}", PER_GPU, "12"));
        assert_true(raises("{}", PER_GPU, "1"));
        assert_true(raises("{\"" DEFAULT "\":\"1\"}", PER_GPU, "1"));
        assert_true(raises(NULL, PER_GPU, "1"));
        assert_true(raises("", PER_GPU, "1"));
        assert_true(raises("not json", PER_GPU, "1"));
        /* the same, smaller, or no rate at all: not asked */
        assert_false(raises("{\"" PER_GPU "\":\"10\"}", PER_GPU, "10"));
        assert_false(raises("{\"" PER_GPU "\":\"10\"}", PER_GPU, "2.5"));
        assert_false(raises("{\"bandwidthPolicy\":\"cap\"}", "bandwidthPolicy", "burst"));
}

static void test_no_url_no_check(void **state)
{
        struct gantry_error err = { 0 };
        const char *keys[] = { PER_GPU }, *values[] = { "99" };

        (void)state;
        assert_int_equal(gantry_modify_admission_configure(
                                 &(struct gantry_modify_admission_options){ .url = "" }, &err), 0);
        assert_int_equal(gantry_modify_admission_check("vol-1", keys, values, 1, &err), 0);
        assert_int_equal(gantry_modify_admission_configure(
                                 &(struct gantry_modify_admission_options){ .url = "gantry-scheduler:8888" },
                                 &err), -EINVAL);
        assert_non_null(strstr(err.msg, "--scheduler-url"));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_which_changes_are_asked),
                cmocka_unit_test(test_no_url_no_check),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
