/*
 * Unit tests of the one errno -> gRPC / HTTP status mapping (common/status.c).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "error.h"
#include "status.h"

static void test_grpc_mapping(void **state)
{
        (void)state;
        assert_int_equal(gantry_status_grpc_from_errno(0), GANTRY_GRPC_OK);
        assert_int_equal(gantry_status_grpc_from_errno(-EINVAL), GANTRY_GRPC_INVALID_ARGUMENT);
        assert_int_equal(gantry_status_grpc_from_errno(EINVAL), GANTRY_GRPC_INVALID_ARGUMENT);
        assert_int_equal(gantry_status_grpc_from_errno(-ENOENT), GANTRY_GRPC_NOT_FOUND);
        assert_int_equal(gantry_status_grpc_from_errno(-EEXIST), GANTRY_GRPC_ALREADY_EXISTS);
        assert_int_equal(gantry_status_grpc_from_errno(-EBUSY), GANTRY_GRPC_ABORTED);
        assert_int_equal(gantry_status_grpc_from_errno(-ENOSPC), GANTRY_GRPC_RESOURCE_EXHAUSTED);
        assert_int_equal(gantry_status_grpc_from_errno(-ETIMEDOUT), GANTRY_GRPC_DEADLINE_EXCEEDED);
        assert_int_equal(gantry_status_grpc_from_errno(-ENOTCONN), GANTRY_GRPC_UNAVAILABLE);
        assert_int_equal(gantry_status_grpc_from_errno(-ENOSYS), GANTRY_GRPC_UNIMPLEMENTED);
        /* the operator's configuration, not the caller's input or credentials */
        assert_int_equal(gantry_status_grpc_from_errno(-GANTRY_ENOCONFIG), GANTRY_GRPC_FAILED_PRECONDITION);
        /* an errno nobody mapped is INTERNAL, never OK */
        assert_int_equal(gantry_status_grpc_from_errno(-EXDEV), GANTRY_GRPC_INTERNAL);
}

static void test_http_mapping(void **state)
{
        (void)state;
        assert_int_equal(gantry_status_http_from_errno(0), 200);
        assert_int_equal(gantry_status_http_from_errno(-EINVAL), 400);
        assert_int_equal(gantry_status_http_from_errno(-ENOENT), 404);
        assert_int_equal(gantry_status_http_from_errno(-EEXIST), 409);
        assert_int_equal(gantry_status_http_from_errno(-E2BIG), 413);
        assert_int_equal(gantry_status_http_from_errno(-EXDEV), 500);
}

static void test_names(void **state)
{
        (void)state;
        assert_string_equal(gantry_status_grpc_name(GANTRY_GRPC_ABORTED), "ABORTED");
        assert_string_equal(gantry_status_grpc_name(GANTRY_GRPC_UNAUTHENTICATED), "UNAUTHENTICATED");
        assert_string_equal(gantry_status_grpc_name(99), "UNKNOWN");
        assert_string_equal(gantry_status_grpc_name(-1), "UNKNOWN");
}

static void test_error_set_and_prefix(void **state)
{
        struct gantry_error e = { 0 };

        (void)state;
        assert_int_equal(gantry_error_set(&e, EINVAL, "parameters.%s: bad", "pool"), -EINVAL);
        assert_int_equal(e.err, EINVAL);
        assert_string_equal(e.msg, "parameters.pool: bad");
        assert_int_equal(gantry_error_set(&e, -ENOENT, "x"), -ENOENT);
        assert_int_equal(e.err, ENOENT);
        assert_int_equal(gantry_error_prefix(&e, "file.json"), -ENOENT);
        assert_string_equal(e.msg, "file.json: x");
        assert_int_equal(gantry_error_set(NULL, EIO, "ignored"), -EIO);
        gantry_error_clear(&e);
        assert_int_equal(e.err, 0);
        assert_string_equal(e.msg, "");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_grpc_mapping),
                cmocka_unit_test(test_http_mapping),
                cmocka_unit_test(test_names),
                cmocka_unit_test(test_error_set_and_prefix),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
