/*
 * The optional kinds (kube/kube_optional.c) against the FAKE Kubernetes API
 * server (a real kube-apiserver cannot run here; the fake's /fake/serve
 * stands for a CRD applied or deleted): a kind not served at start costs
 * no informer and no warning, one info line names it; served later, it is
 * followed from the next re-check and its objects are delivered; a kind
 * served at start is listed before gantry_kube_optional_add() returns; a
 * kind no longer served ends its informer on the 404, quietly, then has
 * its objects delivered DELETED; a served kind whose list is refused is said once and retried.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fake_harness.h"
#include "kube_client.h"
#include "kube_optional.h"
#include "recorder.h"

#define TOKEN "GANTRYCANARY-optional-token" /* the secret canary: tests/canary/ */
#define RECHECK_SECONDS 0.2 /* fast, so that a test waits little; waits are bounded by TEST_WAIT_MS */
#define BACKEND "{\"metadata\":{\"name\":\"ceph-a\"},\"spec\":{\"type\":\"ceph\"}}"

struct fixture {
        struct fake_api fake;
        char dir[256];
        char log_path[512];
        int saved_stderr; /* -1: stderr not redirected */
        struct gantry_kube_client *client;
        struct recorder rec;
        struct gantry_kube_optional *set;
};

/* Puts stderr (where the log goes) back; returns what was logged meanwhile
 * (caller frees). */
static char *take_log(struct fixture *fx)
{
        char *text = calloc(1, 1 << 20);
        int fd;

        if (fx->saved_stderr >= 0) {
                dup2(fx->saved_stderr, STDERR_FILENO);
                close(fx->saved_stderr);
                fx->saved_stderr = -1;
        }
        fd = open(fx->log_path, O_RDONLY);
        if (fd >= 0 && text) {
                ssize_t n = read(fd, text, (1 << 20) - 1);

                text[n > 0 ? n : 0] = '\0';
        }
        if (fd >= 0)
                close(fd);
        return text;
}

static int teardown(void **state)
{
        struct fixture *fx = *state;

        char *log;

        gantry_kube_optional_free(fx->set);
        log = take_log(fx);
        if (log && *log) /* shown by ctest --output-on-failure */
                fprintf(stderr, "--- log of the test ---\n%s", log);
        free(log);
        fake_stop_with_client(&fx->fake, fx->dir, fx->client);
        recorder_destroy(&fx->rec);
        free(fx);
        return 0;
}

/* The fake serves no storagebackends (the CRD not applied yet); the log
 * goes to a file the test reads. */
static int setup(void **state)
{
        static const char *const args[] = { "--token", TOKEN, "--nodes", "2", "--leaves", "1",
                                            "--not-served", "storagebackends", NULL };
        struct fixture *fx = calloc(1, sizeof(*fx));
        int fd;

        if (!fx)
                return -1;
        fx->saved_stderr = -1;
        recorder_init(&fx->rec);
        *state = fx;
        if (fake_start_with_client(&fx->fake, "optional", args, TOKEN, fx->dir, sizeof(fx->dir), &fx->client) < 0)
                goto fail;
        snprintf(fx->log_path, sizeof(fx->log_path), "%s/log", fx->dir);
        fd = open(fx->log_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd < 0)
                goto fail;
        fflush(stderr);
        fx->saved_stderr = dup(STDERR_FILENO);
        dup2(fd, STDERR_FILENO);
        close(fd);
        return 0;
fail:
        teardown(state);
        *state = NULL;
        return -1;
}

static void new_set(struct fixture *fx)
{
        struct gantry_kube_optional_options o = { .recheck_seconds = RECHECK_SECONDS,
                                                  .sync_timeout_ms = TEST_WAIT_MS };
        struct gantry_error err = { 0 };

        assert_int_equal(gantry_kube_optional_new(fx->client, recorder_cb, &fx->rec, &o, &fx->set, &err), 0);
}

static int add(struct fixture *fx, enum gantry_kube_kind kind)
{
        struct gantry_kube_informer_options io = { .initial_backoff_ms = 10, .max_backoff_ms = 40 };
        struct gantry_error err = { 0 };

        return gantry_kube_optional_add(fx->set, kind, &io, &err);
}

static void run(struct fixture *fx)
{
        struct gantry_error err = { 0 };

        assert_int_equal(gantry_kube_optional_run(fx->set, &err), 0);
}

static void serve(struct fixture *fx, const char *resource, bool served)
{
        char body[128];

        snprintf(body, sizeof(body), "{\"resource\":\"%s\",\"served\":%s}", resource, served ? "true" : "false");
        assert_int_equal(fake_request(&fx->fake, "POST", "/fake/serve", body, NULL), 200);
}

/* Requests the fake saw with @verb on @resource. */
static int count_requests(struct fake_api *f, const char *verb, const char *resource)
{
        int n = fake_count_requests(f, verb, resource, NULL);

        assert_true(n >= 0);
        return n;
}

struct following_ctx {
        struct gantry_kube_optional *set;
        enum gantry_kube_kind kind;
        bool want;
};

static bool following_is(void *ctx)
{
        struct following_ctx *c = ctx;

        return gantry_kube_optional_following(c->set, c->kind) == c->want;
}

static void wait_following(struct fixture *fx, enum gantry_kube_kind kind, bool want)
{
        struct following_ctx c = { fx->set, kind, want };

        assert_true(test_wait_for(following_is, &c, TEST_WAIT_MS));
}

/* ---------------------------------------------------------------- tests */

static void test_absent_at_start_quiet_then_followed_once_served(void **state)
{
        struct fixture *fx = *state;
        char *log;

        new_set(fx);
        assert_int_equal(add(fx, GANTRY_KUBE_STORAGE_BACKEND), 0);
        assert_int_equal(add(fx, GANTRY_KUBE_POD_GROUP), 1); /* served by the fake, empty */
        run(fx);
        assert_false(gantry_kube_optional_following(fx->set, GANTRY_KUBE_STORAGE_BACKEND));
        assert_true(gantry_kube_optional_following(fx->set, GANTRY_KUBE_POD_GROUP));
        /* discovery said no: the kind was never listed */
        assert_int_equal(count_requests(&fx->fake, "list", "storagebackends"), 0);

        /* the CRD applied, an object made: followed from a re-check on */
        assert_int_equal(fake_upsert(&fx->fake, "storagebackends", BACKEND), 200);
        serve(fx, "storagebackends", true);
        assert_true(recorder_wait(&fx->rec, 0, GANTRY_KUBE_ADDED, "ceph-a", 1, TEST_WAIT_MS));
        assert_true(gantry_kube_optional_following(fx->set, GANTRY_KUBE_STORAGE_BACKEND));

        log = take_log(fx);
        assert_non_null(log);
        assert_non_null(strstr(log, "event=kube.optional.absent kinds=StorageBackend recheck_seconds=0.2"));
        assert_non_null(strstr(log, "event=kube.optional.served kind=StorageBackend"));
        if (strstr(log, "level=warn") || strstr(log, "level=error"))
                fail_msg("a kind not served is no warning or error:\n%s", log);
        free(log);
}

static void test_present_at_start_then_removed_is_forgotten(void **state)
{
        struct fixture *fx = *state;
        char *log;
        int from;

        serve(fx, "storagebackends", true);
        assert_int_equal(fake_upsert(&fx->fake, "storagebackends", BACKEND), 200);
        new_set(fx);
        /* listed before add() returns, as the informers of the kinds always served */
        assert_int_equal(add(fx, GANTRY_KUBE_STORAGE_BACKEND), 1);
        assert_int_equal(recorder_find(&fx->rec, 0, GANTRY_KUBE_ADDED, "ceph-a"), 1);
        assert_int_equal(recorder_find(&fx->rec, 0, GANTRY_KUBE_SYNCED, NULL), 1);
        run(fx);

        /* the CRD deleted: its objects went with it */
        from = recorder_count(&fx->rec);
        serve(fx, "storagebackends", false);
        assert_true(recorder_wait(&fx->rec, from, GANTRY_KUBE_DELETED, "ceph-a", 1, TEST_WAIT_MS));
        wait_following(fx, GANTRY_KUBE_STORAGE_BACKEND, false);
        log = take_log(fx);
        assert_non_null(log);
        assert_null(strstr(log, "event=kube.optional.absent"));
        assert_non_null(strstr(log, "event=kube.optional.gone kind=StorageBackend"));
        assert_non_null(strstr(log, "event=kube.informer.stop kind=StorageBackend forgotten=1"));
        /* its watch's 404 ended the informer (unless the re-check came
         * first): no retries logged as errors either way */
        if (strstr(log, "level=warn") || strstr(log, "level=error"))
                fail_msg("a kind that went is no warning or error:\n%s", log);
        free(log);

        /* and back: followed again, its object ADDED again */
        from = recorder_count(&fx->rec);
        serve(fx, "storagebackends", true);
        assert_true(recorder_wait(&fx->rec, from, GANTRY_KUBE_ADDED, "ceph-a", 1, TEST_WAIT_MS));
}

static bool lists_at_least_4(void *ctx)
{
        return count_requests(ctx, "list", "storagebackends") >= 4;
}

/* A kind served whose list is refused (RBAC): not followed, one warning at
 * start; the re-check tries again and follows it once the list works. */
static void test_served_but_refused_is_retried(void **state)
{
        struct fixture *fx = *state;
        char *log;

        serve(fx, "storagebackends", true);
        assert_int_equal(fake_upsert(&fx->fake, "storagebackends", BACKEND), 200);
        assert_int_equal(fake_request(&fx->fake, "POST", "/fake/fail",
                                      "{\"verb\":\"list\",\"resource\":\"storagebackends\",\"status\":403,"
                                      "\"count\":3}",
                                      NULL),
                         200);
        new_set(fx);
        assert_int_equal(add(fx, GANTRY_KUBE_STORAGE_BACKEND), 0);
        assert_int_equal(count_requests(&fx->fake, "list", "storagebackends"), 3); /* max_errors */
        run(fx);
        assert_true(recorder_wait(&fx->rec, 0, GANTRY_KUBE_ADDED, "ceph-a", 1, TEST_WAIT_MS));
        assert_true(test_wait_for(lists_at_least_4, &fx->fake, TEST_WAIT_MS));
        wait_following(fx, GANTRY_KUBE_STORAGE_BACKEND, true);
        log = take_log(fx);
        assert_non_null(log);
        assert_non_null(strstr(log, "level=warn event=kube.optional.unavailable kind=StorageBackend"));
        assert_non_null(strstr(log, "event=kube.optional.absent kinds=StorageBackend"));
        free(log);
}

static void test_bad_uses(void **state)
{
        struct fixture *fx = *state;
        struct gantry_kube_optional_options bad = { .recheck_seconds = -1 };
        struct gantry_kube_optional *set = NULL;
        struct gantry_error err = { 0 };

        assert_int_equal(gantry_kube_optional_new(fx->client, recorder_cb, &fx->rec, &bad, &set, &err), -EINVAL);
        assert_null(set);
        new_set(fx);
        assert_int_equal(add(fx, GANTRY_KUBE_POD_GROUP), 1);
        assert_int_equal(add(fx, GANTRY_KUBE_POD_GROUP), -EEXIST);
        run(fx);
        assert_int_equal(add(fx, GANTRY_KUBE_ATTRIBUTES_CLASS), -EINVAL); /* after run */
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_absent_at_start_quiet_then_followed_once_served, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_present_at_start_then_removed_is_forgotten, setup, teardown),
                cmocka_unit_test_setup_teardown(test_served_but_refused_is_retried, setup, teardown),
                cmocka_unit_test_setup_teardown(test_bad_uses, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
