/*
 * The kube client over TLS and its binding call, against the FAKE
 * Kubernetes API server serving HTTPS with a CA made for the test run
 * (make_test_pki.sh): the CA as a file and inline, a client certificate,
 * tls-server-name, insecure-skip-tls-verify, an unknown CA refused; the
 * in-cluster config over TLS with a rotating token file; Binding POSTs
 * recorded by the fake and every refusal mapped to its errno; and the
 * client's table of API calls compared with the requests it really made
 * (what the RBAC rules of gantry-scheduler must grant).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "fake_harness.h"
#include "kube_client.h"
#include "metrics.h"
#include "recorder.h"

#define TOKEN "GANTRYCANARY-tls-bind-token" /* the secret canary: tests/canary/ */

static struct {
        char dir[256];
        char ca[512], ca_b64[8192];
        struct fake_api fake;
} g;

static void read_text(const char *path, char *buf, size_t size)
{
        FILE *f = fopen(path, "r");
        size_t n;

        assert_non_null(f);
        n = fread(buf, 1, size - 1, f);
        buf[n] = '\0';
        fclose(f);
        while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
                buf[--n] = '\0';
}

static int group_teardown(void **state);

/* cmocka runs no group teardown after a failed group setup: on failure it
 * stops what it started and removes its directory itself. */
static int group_setup(void **state)
{
        char cmd[1024], cert[512], key[512], b64[512];
        const char *args[] = { "--token", TOKEN, "--tls-cert", cert, "--tls-key", key, "--client-ca", g.ca,
                               "--pods", "3", "--nodes", "2", NULL };

        (void)state;
        if (test_tmpdir("tls", g.dir, sizeof(g.dir)) < 0)
                return -1;
        snprintf(cmd, sizeof(cmd), "%s %s/pki && base64 -w0 %s/pki/ca.crt > %s/ca.b64", PKI_SCRIPT, g.dir, g.dir,
                 g.dir);
        if (test_run(cmd) != 0) {
                group_teardown(state);
                return -1;
        }
        snprintf(g.ca, sizeof(g.ca), "%s/pki/ca.crt", g.dir);
        snprintf(cert, sizeof(cert), "%s/pki/server.crt", g.dir);
        snprintf(key, sizeof(key), "%s/pki/server.key", g.dir);
        snprintf(b64, sizeof(b64), "%s/ca.b64", g.dir);
        read_text(b64, g.ca_b64, sizeof(g.ca_b64));
        if (fake_start(&g.fake, args, g.ca) < 0) {
                group_teardown(state);
                return -1;
        }
        return 0;
}

static int group_teardown(void **state)
{
        (void)state;
        fake_stop(&g.fake);
        test_rmtree(g.dir);
        return 0;
}

/* Writes a kubeconfig with @server, @cluster_extra and @user_extra lines;
 * returns a client made from it, or NULL with @err filled. */
static struct gantry_kube_client *client_from_opts(const char *name, const char *server, const char *cluster_extra,
                                                   const char *user_extra, struct gantry_metrics *metrics,
                                                   struct gantry_error *err)
{
        struct gantry_kube_client_options o = { .connect_timeout_seconds = 5, .request_timeout_seconds = 20,
                                                .metrics = metrics };
        struct gantry_kube_client *c = NULL;
        char path[512];

        assert_int_equal(test_write_kubeconfig(g.dir, name, server, cluster_extra, user_extra, "training", path,
                                               sizeof(path)),
                         0);
        o.kubeconfig = path;
        if (gantry_kube_client_new(&o, &c, err) < 0)
                return NULL;
        return c;
}

static struct gantry_kube_client *client_from(const char *name, const char *server, const char *cluster_extra,
                                              const char *user_extra, struct gantry_error *err)
{
        return client_from_opts(name, server, cluster_extra, user_extra, NULL, err);
}

/* Lists and syncs StorageClasses once; returns wait_synced's result. */
static int sync_storage_classes(struct gantry_kube_client *c, struct recorder *rec)
{
        struct gantry_kube_informer_options o = { .max_errors = 1, .initial_backoff_ms = 10 };
        struct gantry_kube_informer *inf = NULL;
        struct gantry_error err = { 0 };
        int r;

        assert_int_equal(gantry_kube_informer_start(c, GANTRY_KUBE_STORAGE_CLASS, &o, recorder_cb, rec, &inf, &err), 0);
        r = gantry_kube_informer_wait_synced(inf, TEST_WAIT_MS);
        gantry_kube_informer_stop(inf);
        return r;
}

static void expect_sync(struct gantry_kube_client *c, int want)
{
        struct recorder rec;

        recorder_init(&rec);
        assert_non_null(c);
        assert_int_equal(sync_storage_classes(c, &rec), want);
        if (want == 0) {
                assert_int_equal(recorder_find(&rec, 0, GANTRY_KUBE_ADDED, "gantry-dataset"), 1);
                assert_int_equal(recorder_find(&rec, 0, GANTRY_KUBE_ADDED, "gantry-checkpoint"), 1);
        }
        recorder_destroy(&rec);
        gantry_kube_client_free(c);
}

static void test_ca_file(void **state)
{
        struct gantry_error err = { 0 };
        char extra[700];

        (void)state;
        snprintf(extra, sizeof(extra), "    certificate-authority: %s\n", g.ca);
        expect_sync(client_from("kc-ca-file", g.fake.base, extra, "    token: " TOKEN "\n", &err), 0);
}

static void test_ca_data(void **state)
{
        struct gantry_error err = { 0 };
        char extra[9000];

        (void)state;
        snprintf(extra, sizeof(extra), "    certificate-authority-data: %s\n", g.ca_b64);
        expect_sync(client_from("kc-ca-data", g.fake.base, extra, "    token: " TOKEN "\n", &err), 0);
}

static void test_client_certificate(void **state)
{
        struct gantry_error err = { 0 };
        char extra[700], user[1400];

        (void)state;
        snprintf(extra, sizeof(extra), "    certificate-authority: %s\n", g.ca);
        snprintf(user, sizeof(user), "    client-certificate: %s/pki/client.crt\n    client-key: %s/pki/client.key\n",
                 g.dir, g.dir);
        expect_sync(client_from("kc-cert", g.fake.base, extra, user, &err), 0);
        /* and without any credential the fake answers 401 */
        expect_sync(client_from("kc-anon", g.fake.base, extra, "", &err), -EACCES);
}

static void test_tls_server_name(void **state)
{
        struct gantry_error err = { 0 };
        char extra[800];

        (void)state;
        /* the server's certificate names fake-apiserver.test, not the URL's host */
        snprintf(extra, sizeof(extra), "    certificate-authority: %s\n    tls-server-name: fake-apiserver.test\n", g.ca);
        expect_sync(client_from("kc-sni", g.fake.base, extra, "    token: " TOKEN "\n", &err), 0);
        snprintf(extra, sizeof(extra), "    certificate-authority: %s\n    tls-server-name: wrong.test\n", g.ca);
        expect_sync(client_from("kc-sni-bad", g.fake.base, extra, "    token: " TOKEN "\n", &err), -EPROTO);
}

static void test_unknown_ca_refused_insecure_accepted(void **state)
{
        struct gantry_kube_client *c;
        struct gantry_error err = { 0 };
        char other[512], extra[700];

        (void)state;
        /* a CA that did not sign the server's certificate */
        snprintf(other, sizeof(other), "%s/pki/client.crt", g.dir);
        snprintf(extra, sizeof(extra), "    certificate-authority: %s\n", other);
        c = client_from("kc-wrong-ca", g.fake.base, extra, "    token: " TOKEN "\n", &err);
        assert_non_null(c);
        assert_int_equal(gantry_kube_bind_pod(c, "training", "llm-worker-2", NULL, "gpu-0000", &err), -EPROTO);
        assert_non_null(strstr(err.msg, "bind training/llm-worker-2 to gpu-0000"));
        gantry_kube_client_free(c);
        expect_sync(client_from("kc-insecure", g.fake.base, "    insecure-skip-tls-verify: true\n",
                                "    token: " TOKEN "\n", &err),
                    0);
}

static const char *pod_uid(const char *ns_name)
{
        static char uid[64];
        json_t *pods = NULL, *p;
        size_t i;

        uid[0] = '\0';
        assert_int_equal(fake_request(&g.fake, "GET", "/fake/objects/pods", NULL, &pods), 200);
        json_array_foreach(pods, i, p) {
                json_t *md = json_object_get(p, "metadata");
                char key[128];

                snprintf(key, sizeof(key), "%s/%s", json_string_value(json_object_get(md, "namespace")),
                         json_string_value(json_object_get(md, "name")));
                if (strcmp(key, ns_name) == 0)
                        snprintf(uid, sizeof(uid), "%s", json_string_value(json_object_get(md, "uid")));
        }
        json_decref(pods);
        return uid;
}

static void test_bind(void **state)
{
        struct gantry_kube_informer_options o = { .initial_backoff_ms = 10, .namespace = "training" };
        struct gantry_kube_informer *inf = NULL;
        struct gantry_kube_client *c;
        struct gantry_error err = { 0 };
        struct recorder rec;
        json_t *bindings = NULL, *b;
        char extra[700], uid[64];
        int from;

        (void)state;
        snprintf(extra, sizeof(extra), "    certificate-authority: %s\n", g.ca);
        c = client_from("kc-bind", g.fake.base, extra, "    token: " TOKEN "\n", &err);
        assert_non_null(c);
        recorder_init(&rec);
        assert_int_equal(gantry_kube_informer_start(c, GANTRY_KUBE_POD, &o, recorder_cb, &rec, &inf, &err), 0);
        assert_int_equal(gantry_kube_informer_wait_synced(inf, TEST_WAIT_MS), 0);
        from = recorder_count(&rec);

        snprintf(uid, sizeof(uid), "%s", pod_uid("training/llm-worker-0"));
        assert_true(strlen(uid) > 0);
        assert_int_equal(gantry_kube_bind_pod(c, "training", "llm-worker-0", uid, "gpu-0001", &err), 0);
        assert_int_equal(fake_request(&g.fake, "GET", "/fake/bindings", NULL, &bindings), 200);
        assert_int_equal(json_array_size(bindings), 1);
        b = json_array_get(bindings, 0);
        assert_string_equal(json_string_value(json_object_get(b, "namespace")), "training");
        assert_string_equal(json_string_value(json_object_get(b, "name")), "llm-worker-0");
        assert_string_equal(json_string_value(json_object_get(b, "node")), "gpu-0001");
        assert_string_equal(json_string_value(json_object_get(b, "uid")), uid);
        json_decref(bindings);
        /* the watch shows the pod bound */
        assert_true(recorder_wait(&rec, from, GANTRY_KUBE_MODIFIED, "training/llm-worker-0", 1, TEST_WAIT_MS));
        assert_string_equal(recorder_get(&rec, recorder_count(&rec) - 1).node_name, "gpu-0001");

        /* refusals and their errno */
        assert_int_equal(gantry_kube_bind_pod(c, "training", "llm-worker-0", NULL, "gpu-0002", &err), -EEXIST);
        assert_non_null(strstr(err.msg, "HTTP 409"));
        assert_non_null(strstr(err.msg, "already assigned to node \"gpu-0001\""));
        assert_int_equal(gantry_kube_bind_pod(c, "training", "llm-worker-1", "00000000-0000-0000-0000-000000000000",
                                              "gpu-0002", &err),
                         -EEXIST);
        assert_non_null(strstr(err.msg, "Precondition failed"));
        assert_int_equal(gantry_kube_bind_pod(c, "training", "no-such-pod", NULL, "gpu-0002", &err), -ENOENT);
        assert_non_null(strstr(err.msg, "pods \"no-such-pod\" not found"));
        assert_int_equal(fake_request(&g.fake, "POST", "/fake/fail",
                                      "{\"verb\":\"create\",\"resource\":\"pods/binding\",\"status\":503,\"count\":1}", NULL),
                         200);
        assert_int_equal(gantry_kube_bind_pod(c, "training", "llm-worker-1", NULL, "gpu-0002", &err), -EAGAIN);

        /* checked before any request */
        assert_int_equal(gantry_kube_bind_pod(c, "training", "Bad_Name", NULL, "gpu-0002", &err), -EINVAL);
        assert_non_null(strstr(err.msg, "pod name"));
        assert_int_equal(gantry_kube_bind_pod(c, "", "p", NULL, "gpu-0002", &err), -EINVAL);
        assert_non_null(strstr(err.msg, "namespace"));
        assert_int_equal(gantry_kube_bind_pod(c, "training", "p", NULL, NULL, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "node"));
        assert_int_equal(gantry_kube_bind_pod(c, "training", "p", "", "n", &err), -EINVAL);

        /* no pod was bound by any refused call */
        assert_int_equal(fake_request(&g.fake, "GET", "/fake/bindings", NULL, &bindings), 200);
        assert_int_equal(json_array_size(bindings), 1);
        json_decref(bindings);
        gantry_kube_informer_stop(inf);
        recorder_destroy(&rec);
        gantry_kube_client_free(c);

        c = client_from("kc-bad-token", g.fake.base, extra, "    token: wrong\n", &err);
        assert_int_equal(gantry_kube_bind_pod(c, "training", "llm-worker-1", NULL, "gpu-0002", &err), -EACCES);
        assert_non_null(strstr(err.msg, "HTTP 401"));
        gantry_kube_client_free(c);
}

static void test_in_cluster_rotating_token(void **state)
{
        struct gantry_kube_client_options o = { 0 };
        struct gantry_kube_client *c = NULL;
        struct gantry_error err = { 0 };
        struct timespec times[2];
        char sa[300], path[512], port[16], cmd[1200];
        struct recorder rec;

        (void)state;
        snprintf(sa, sizeof(sa), "%s/sa", g.dir);
        assert_int_equal(mkdir(sa, 0700), 0);
        snprintf(cmd, sizeof(cmd), "cp %s %s/ca.crt", g.ca, sa);
        assert_int_equal(test_run(cmd), 0);
        assert_int_equal(test_write_file(sa, "token", "rotating-one\n", path, sizeof(path)), 0);
        assert_int_equal(test_write_file(sa, "namespace", "training\n", path, sizeof(path)), 0);
        snprintf(port, sizeof(port), "%d", g.fake.port);
        setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1", 1);
        setenv("KUBERNETES_SERVICE_PORT", port, 1);
        o.service_account_dir = sa;
        assert_int_equal(gantry_kube_client_new(&o, &c, &err), 0);
        assert_string_equal(gantry_kube_client_namespace(c), "training");

        assert_int_equal(fake_request(&g.fake, "POST", "/fake/tokens", "{\"tokens\":[\"rotating-one\"]}", NULL), 200);
        recorder_init(&rec);
        assert_int_equal(sync_storage_classes(c, &rec), 0);
        /* the kubelet rotates the token: the old one stops working */
        assert_int_equal(fake_request(&g.fake, "POST", "/fake/tokens", "{\"tokens\":[\"rotating-two\"]}", NULL), 200);
        assert_int_equal(sync_storage_classes(c, &rec), -EACCES);
        assert_int_equal(test_write_file(sa, "token", "rotating-two\n", path, sizeof(path)), 0);
        clock_gettime(CLOCK_REALTIME, &times[0]);
        times[0].tv_sec += 5; /* a distinct mtime even on coarse clocks */
        times[1] = times[0];
        assert_int_equal(utimensat(AT_FDCWD, path, times, 0), 0);
        assert_int_equal(sync_storage_classes(c, &rec), 0);
        recorder_destroy(&rec);
        gantry_kube_client_free(c);
        assert_int_equal(fake_request(&g.fake, "POST", "/fake/tokens", "{\"tokens\":[\"" TOKEN "\"]}", NULL), 200);
        unsetenv("KUBERNETES_SERVICE_HOST");
        unsetenv("KUBERNETES_SERVICE_PORT");
}

static bool all_watching(void *ctx)
{
        return fake_state_long(ctx, "openWatches") >= GANTRY_KUBE_KIND_COUNT;
}

/* Every (verb, group, resource) the client sends is in its table, and every
 * entry of the table is sent by some code path. */
static void test_api_call_table_matches_requests(void **state)
{
        struct gantry_kube_informer *inf[GANTRY_KUBE_KIND_COUNT] = { 0 };
        const struct gantry_kube_api_call *calls;
        struct gantry_kube_client *c;
        struct gantry_error err = { 0 };
        struct recorder rec;
        json_t *reqs = NULL, *r;
        bool used[32] = { false };
        struct gantry_metrics *metrics;
        char *text = NULL;
        char extra[700];
        size_t n, i;

        (void)state;
        calls = gantry_kube_api_calls(&n);
        assert_true(n > 0 && n < 32);
        snprintf(extra, sizeof(extra), "    certificate-authority: %s\n", g.ca);
        metrics = gantry_metrics_new();
        assert_non_null(metrics);
        c = client_from_opts("kc-rbac", g.fake.base, extra, "    token: " TOKEN "\n", metrics, &err);
        assert_non_null(c);
        assert_int_equal(fake_request(&g.fake, "DELETE", "/fake/requests", NULL, NULL), 200);
        recorder_init(&rec);
        for (int k = 0; k < GANTRY_KUBE_KIND_COUNT; k++) {
                assert_int_equal(gantry_kube_informer_start(c, k, NULL, recorder_cb, &rec, &inf[k], &err), 0);
                assert_int_equal(gantry_kube_informer_wait_synced(inf[k], TEST_WAIT_MS), 0);
        }
        assert_true(test_wait_for(all_watching, &g.fake, TEST_WAIT_MS));
        assert_int_equal(gantry_kube_bind_pod(c, "training", "llm-worker-2", NULL, "gpu-0000", &err), 0);
        {
                /* the recovery's requeue annotation, the leader election's Lease, an Event */
                const char *lease = "/apis/coordination.k8s.io/v1/namespaces/training/leases/sched";
                json_t *patch = json_pack("{s:{s:{s:s}}}", "metadata", "annotations",
                                          "gantry.io/requeued-at", "now");
                json_t *body = json_pack("{s:s, s:s, s:{s:s}, s:{s:s}}", "apiVersion",
                                         "coordination.k8s.io/v1", "kind", "Lease", "metadata", "name",
                                         "sched", "spec", "holderIdentity", "a");
                json_t *got = NULL, *stale = NULL;

                assert_int_equal(gantry_kube_merge_patch(c, "/api/v1/namespaces/training/pods/llm-worker-2",
                                                         "pods", patch, &err), 0);
                assert_int_equal(gantry_kube_get(c, lease, "get", "leases", &got, &err), -ENOENT);
                assert_int_equal(gantry_kube_write(c, "POST", "/apis/coordination.k8s.io/v1/namespaces/"
                                                   "training/leases", "leases", body, &got, &err), 0);
                assert_int_equal(gantry_kube_write(c, "POST", "/apis/coordination.k8s.io/v1/namespaces/"
                                                   "training/leases", "leases", body, NULL, &err), -EEXIST);
                stale = json_deep_copy(got);
                json_object_set_new(json_object_get(got, "spec"), "holderIdentity", json_string("b"));
                assert_int_equal(gantry_kube_write(c, "PUT", lease, "leases", got, NULL, &err), 0);
                /* a write from what was read before the last one: 409 */
                assert_int_equal(gantry_kube_write(c, "PUT", lease, "leases", stale, NULL, &err), -EEXIST);
                json_decref(got);
                assert_int_equal(gantry_kube_get(c, lease, "get", "leases", &got, &err), 0);
                assert_string_equal(json_string_value(json_object_get(json_object_get(got, "spec"),
                                                                      "holderIdentity")), "b");
                json_decref(got);
                json_decref(stale);
                json_decref(body);
                json_decref(patch);
                /* an Event on a pod held for a storage backend */
                body = json_pack("{s:s, s:s, s:{s:s}, s:{s:s, s:s}, s:s, s:s}", "apiVersion", "v1",
                                 "kind", "Event", "metadata", "generateName", "llm-worker-2.",
                                 "involvedObject", "kind", "Pod", "name", "llm-worker-2", "reason",
                                 "StorageBackendShort", "message", "backend ceph-a recovering");
                assert_int_equal(gantry_kube_create(c, "/api/v1/namespaces/training/events", "events",
                                                    body, &err), 0);
                json_decref(body);
        }
        for (int k = 0; k < GANTRY_KUBE_KIND_COUNT; k++)
                gantry_kube_informer_stop(inf[k]);
        recorder_destroy(&rec);
        gantry_kube_client_free(c);

        /* the same calls, counted in the registry the scheduler serves */
        assert_int_equal(gantry_metrics_render(metrics, &text), 0);
        assert_non_null(strstr(text, "gantry_kube_requests_total{verb=\"create\",resource=\"pods/binding\",code=\"201\"} 1"));
        assert_non_null(strstr(text, "gantry_kube_requests_total{verb=\"list\",resource=\"storageclasses\",code=\"200\"} 1"));
        assert_non_null(strstr(text, "gantry_kube_requests_total{verb=\"watch\",resource=\"nodes\",code=\"200\"}"));
        assert_non_null(strstr(text, "gantry_kube_request_seconds_count{verb=\"list\",resource=\"pods\"} 1"));
        assert_non_null(strstr(text, "gantry_kube_watch_events_total{kind=\"StorageClass\",type=\"ADDED\"} 2"));
        assert_non_null(strstr(text, "gantry_kube_relists_total{kind=\"Node\"} 1"));
        free(text);
        gantry_metrics_free(metrics);

        assert_int_equal(fake_request(&g.fake, "GET", "/fake/requests", NULL, &reqs), 200);
        assert_true(json_array_size(reqs) >= n);
        json_array_foreach(reqs, i, r) {
                const char *verb = json_string_value(json_object_get(r, "verb"));
                const char *group = json_string_value(json_object_get(r, "group"));
                const char *res = json_string_value(json_object_get(r, "resource"));
                bool found = false;

                assert_non_null(verb);
                assert_non_null(res);
                for (size_t k = 0; k < n; k++)
                        if (!strcmp(calls[k].verb, verb) && !strcmp(calls[k].api_group, group ? group : "") &&
                            !strcmp(calls[k].resource, res)) {
                                used[k] = found = true;
                        }
                if (!found)
                        fail_msg("request %s %s/%s is not in gantry_kube_api_calls()", verb, group, res);
        }
        for (size_t k = 0; k < n; k++)
                if (!used[k])
                        fail_msg("gantry_kube_api_calls() lists %s %s/%s but nothing sent it", calls[k].verb,
                                 calls[k].api_group, calls[k].resource);
        json_decref(reqs);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_ca_file),
                cmocka_unit_test(test_ca_data),
                cmocka_unit_test(test_client_certificate),
                cmocka_unit_test(test_tls_server_name),
                cmocka_unit_test(test_unknown_ca_refused_insecure_accepted),
                cmocka_unit_test(test_bind),
                cmocka_unit_test(test_in_cluster_rotating_token),
                cmocka_unit_test(test_api_call_table_matches_requests),
        };

        return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
