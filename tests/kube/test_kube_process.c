/*
 * The process's one Kubernetes API client (kube/kube_process.c), without a
 * server: gantry-csi in --mode all opens it from the Controller and from the
 * Node service, and both must get the same client, freed only when the last
 * of them gives its reference back. No API access (no kubeconfig, not in a
 * pod) is no client and no error; a broken kubeconfig is an error that
 * takes no reference.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fake_harness.h"
#include "kube_process.h"

static char dir[256], good[300], broken[300];

static int group_setup(void **state)
{
        FILE *f;

        (void)state;
        unsetenv("KUBERNETES_SERVICE_HOST");
        if (test_tmpdir("process", dir, sizeof(dir)) < 0)
                return -1;
        snprintf(good, sizeof(good), "%s/kubeconfig", dir);
        snprintf(broken, sizeof(broken), "%s/broken", dir);
        if (!(f = fopen(good, "w")))
                return -1;
        fputs("apiVersion: v1\nkind: Config\ncurrent-context: c\n"
              "clusters:\n- name: k\n  cluster:\n    server: https://127.0.0.1:1\n"
              "    insecure-skip-tls-verify: true\n"
              "users:\n- name: u\n  user:\n    token: t\n"
              "contexts:\n- name: c\n  context:\n    cluster: k\n    user: u\n", f);
        fclose(f);
        if (!(f = fopen(broken, "w")))
                return -1;
        fputs("apiVersion: v1\nkind: Config\ncurrent-context: missing\n", f);
        fclose(f);
        return 0;
}

static int group_teardown(void **state)
{
        (void)state;
        test_rmtree(dir);
        return 0;
}

static void test_both_services_share_one_client(void **state)
{
        struct gantry_error err = { 0 };
        struct gantry_kube_client *first;

        (void)state;
        assert_int_equal(gantry_kube_process_open(good, NULL, &err), 0);
        first = gantry_kube_process_client();
        assert_non_null(first);
        /* the second service's open, with its own (ignored) arguments */
        assert_int_equal(gantry_kube_process_open(good, NULL, &err), 0);
        assert_ptr_equal(gantry_kube_process_client(), first);
        gantry_kube_process_close();
        assert_ptr_equal(gantry_kube_process_client(), first); /* the other still uses it */
        gantry_kube_process_close();
        assert_null(gantry_kube_process_client());
        gantry_kube_process_close(); /* without a reference: no-op */
        assert_null(gantry_kube_process_client());
}

static void test_no_api_access_is_no_client(void **state)
{
        struct gantry_error err = { 0 };

        (void)state;
        assert_int_equal(gantry_kube_process_open(NULL, NULL, &err), 0);
        assert_null(gantry_kube_process_client());
        gantry_kube_process_close();
}

static void test_a_broken_kubeconfig_takes_no_reference(void **state)
{
        struct gantry_error err = { 0 };

        (void)state;
        assert_true(gantry_kube_process_open(broken, NULL, &err) < 0);
        assert_non_null(strstr(err.msg, "context"));
        assert_null(gantry_kube_process_client());
        /* a later good open is the first reference, and one close frees it */
        assert_int_equal(gantry_kube_process_open(good, NULL, &err), 0);
        assert_non_null(gantry_kube_process_client());
        gantry_kube_process_close();
        assert_null(gantry_kube_process_client());
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_both_services_share_one_client),
                cmocka_unit_test(test_no_api_access_is_no_client),
                cmocka_unit_test(test_a_broken_kubeconfig_takes_no_reference),
        };

        return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
