/*
 * The kube client's configuration and parsers, without a server: kubeconfig
 * variants (token, tokenFile, client certificate, CA inline and as a file,
 * relative paths, context selection), every bad or missing field named in
 * the error, no secret in an error or a log line, the in-cluster config from
 * the environment and the service-account files, base64, the watch-line
 * splitter and decoder, and the backoff bound.
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
#include "kube_internal.h"

#define SECRET_TOKEN "GANTRYCANARY-kubeconfig-token" /* the secret canary: tests/canary/ */
/* base64 of "-----BEGIN CERTIFICATE-----\nfake\n-----END CERTIFICATE-----\n" */
#define PEM_B64 "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCmZha2UKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo="
#define PEM_TEXT "-----BEGIN CERTIFICATE-----\nfake\n-----END CERTIFICATE-----\n"

static char dir[256];

static int group_setup(void **state)
{
        (void)state;
        return test_tmpdir("config", dir, sizeof(dir));
}

static int group_teardown(void **state)
{
        (void)state;
        test_rmtree(dir);
        return 0;
}

/* A kubeconfig with one cluster, user and context; @cluster_extra and
 * @user_extra are indented YAML lines added to each. */
static void kubeconfig(char *buf, size_t size, const char *cluster_extra, const char *user_extra)
{
        snprintf(buf, size,
                 "apiVersion: v1\n"
                 "kind: Config\n"
                 "preferences: {}\n"
                 "current-context: admin@prod\n"
                 "clusters:\n"
                 "- name: staging\n"
                 "  cluster:\n"
                 "    server: https://staging.example:6443\n"
                 "- name: prod\n"
                 "  cluster:\n"
                 "    server: https://10.0.0.1:6443/\n"
                 "%s"
                 "users:\n"
                 "- name: admin\n"
                 "  user:\n"
                 "%s"
                 "contexts:\n"
                 "- name: admin@staging\n"
                 "  context:\n"
                 "    cluster: staging\n"
                 "    user: admin\n"
                 "- name: admin@prod\n"
                 "  context:\n"
                 "    cluster: prod\n"
                 "    user: admin\n"
                 "    namespace: gantry-system\n",
                 cluster_extra, user_extra);
}

static int parse(const char *yaml, const char *context, struct kube_conn **conn, struct gantry_error *err)
{
        gantry_error_clear(err);
        return kube_conn_from_kubeconfig(yaml, strlen(yaml), "kubeconfig test", dir, context, conn, err);
}

/* Parses and expects failure with @errnum and @needle in the message. */
static void expect_error(const char *yaml, int errnum, const char *needle)
{
        struct kube_conn *conn = NULL;
        struct gantry_error err;
        int r = parse(yaml, NULL, &conn, &err);

        if (r != -errnum || !strstr(err.msg, needle))
                fail_msg("want -%d with \"%s\", got %d \"%s\"", errnum, needle, r, err.msg);
        assert_null(conn);
        assert_null(strstr(err.msg, SECRET_TOKEN));
}

static void test_token_and_current_context(void **state)
{
        struct kube_conn *conn = NULL;
        struct gantry_error err;
        char y[2048];

        (void)state;
        kubeconfig(y, sizeof(y), "", "    token: " SECRET_TOKEN "\n");
        assert_int_equal(parse(y, NULL, &conn, &err), 0);
        assert_string_equal(conn->server, "https://10.0.0.1:6443"); /* trailing '/' dropped */
        assert_string_equal(conn->namespace, "gantry-system");
        assert_string_equal(conn->token, SECRET_TOKEN);
        assert_string_equal(conn->origin, "kubeconfig test context admin@prod");
        assert_int_equal(conn->ca.len, 0);
        assert_false(conn->insecure);
        kube_conn_free(conn);

        /* an explicit context wins over current-context */
        assert_int_equal(parse(y, "admin@staging", &conn, &err), 0);
        assert_string_equal(conn->server, "https://staging.example:6443");
        assert_string_equal(conn->namespace, "default");
        kube_conn_free(conn);
}

static void test_inline_data(void **state)
{
        struct kube_conn *conn = NULL;
        struct gantry_error err;
        char y[4096];

        (void)state;
        kubeconfig(y, sizeof(y), "    certificate-authority-data: " PEM_B64 "\n    tls-server-name: api.internal\n",
                   "    client-certificate-data: " PEM_B64 "\n    client-key-data: " PEM_B64 "\n");
        assert_int_equal(parse(y, NULL, &conn, &err), 0);
        assert_int_equal(conn->ca.len, strlen(PEM_TEXT));
        assert_memory_equal(conn->ca.data, PEM_TEXT, conn->ca.len);
        assert_memory_equal(conn->cert.data, PEM_TEXT, conn->cert.len);
        assert_memory_equal(conn->key.data, PEM_TEXT, conn->key.len);
        assert_string_equal(conn->tls_server_name, "api.internal");
        assert_null(conn->proxy_url);
        assert_null(conn->token);
        kube_conn_free(conn);
}

static void test_files_relative_to_kubeconfig(void **state)
{
        struct kube_conn *conn = NULL;
        struct gantry_error err = { 0 };
        char y[4096], path[512], kc[512];

        (void)state;
        assert_int_equal(test_write_file(dir, "ca.pem", PEM_TEXT, path, sizeof(path)), 0);
        assert_int_equal(test_write_file(dir, "tok", SECRET_TOKEN "\n", path, sizeof(path)), 0);
        assert_int_equal(test_write_file(dir, "client.pem", PEM_TEXT, path, sizeof(path)), 0);
        assert_int_equal(test_write_file(dir, "client.key", PEM_TEXT, path, sizeof(path)), 0);
        kubeconfig(y, sizeof(y), "    certificate-authority: ca.pem\n",
                   "    tokenFile: tok\n    client-certificate: client.pem\n    client-key: client.key\n");
        assert_int_equal(test_write_file(dir, "kubeconfig", y, kc, sizeof(kc)), 0);
        assert_int_equal(kube_conn_from_kubeconfig_file(kc, NULL, &conn, &err), 0);
        assert_memory_equal(conn->ca.data, PEM_TEXT, conn->ca.len);
        assert_int_equal(conn->cert.len, strlen(PEM_TEXT));
        snprintf(path, sizeof(path), "%s/tok", dir);
        assert_string_equal(conn->token_file, path);
        assert_null(conn->token); /* read at request time, so it can rotate */
        kube_conn_free(conn);

        /* -data wins over the file form, as in client-go */
        kubeconfig(y, sizeof(y), "    certificate-authority: missing.pem\n    certificate-authority-data: " PEM_B64 "\n",
                   "    token: x\n");
        assert_int_equal(parse(y, NULL, &conn, &err), 0);
        kube_conn_free(conn);
}

static void test_missing_file_named(void **state)
{
        char y[4096];

        (void)state;
        kubeconfig(y, sizeof(y), "    certificate-authority: /nonexistent/ca.pem\n", "    token: " SECRET_TOKEN "\n");
        expect_error(y, ENOENT, "clusters[1].cluster.certificate-authority: /nonexistent/ca.pem");
        kubeconfig(y, sizeof(y), "", "    token: " SECRET_TOKEN "\n    client-certificate: nope.pem\n    client-key: nope.key\n");
        expect_error(y, ENOENT, "users[0].user.client-certificate:");
        kubeconfig(y, sizeof(y), "", "    tokenFile: /nonexistent/token\n");
        expect_error(y, ENOENT, "users[0].user.tokenFile: /nonexistent/token");
}

static void test_bad_fields_named(void **state)
{
        char y[4096];

        (void)state;
        kubeconfig(y, sizeof(y), "    certificate-authority-data: \"not base64!\"\n", "    token: " SECRET_TOKEN "\n");
        expect_error(y, EINVAL, "clusters[1].cluster.certificate-authority-data: invalid base64");
        kubeconfig(y, sizeof(y), "", "    token: " SECRET_TOKEN "\n    client-key-data: \"%%%\"\n    client-certificate-data: " PEM_B64 "\n");
        expect_error(y, EINVAL, "users[0].user.client-key-data: invalid base64");
        kubeconfig(y, sizeof(y), "", "    client-certificate-data: " PEM_B64 "\n");
        expect_error(y, EINVAL, "users[0].user.client-key: missing");
        kubeconfig(y, sizeof(y), "    insecure-skip-tls-verify: maybe\n", "    token: " SECRET_TOKEN "\n");
        expect_error(y, EINVAL, "clusters[1].cluster.insecure-skip-tls-verify: must be true or false");
        kubeconfig(y, sizeof(y), "    insecure-skip-tls-verify: true\n    certificate-authority-data: " PEM_B64 "\n",
                   "    token: " SECRET_TOKEN "\n");
        expect_error(y, EINVAL, "insecure-skip-tls-verify: must not be true");
        kubeconfig(y, sizeof(y), "", "    token: " SECRET_TOKEN "\n    exec:\n      command: aws\n");
        expect_error(y, ENOTSUP, "users[0].user.exec: credential plugins are not supported");
        kubeconfig(y, sizeof(y), "", "    auth-provider:\n      name: oidc\n");
        expect_error(y, ENOTSUP, "users[0].user.auth-provider");
        kubeconfig(y, sizeof(y), "", "    token:\n      - " SECRET_TOKEN "\n");
        expect_error(y, EINVAL, "users[0].user.token: must be a string");
        kubeconfig(y, sizeof(y), "", "    token: \"abc\\r\\nX-Injected: 1\"\n");
        expect_error(y, EINVAL, "users[0].user.token: contains a control character");
        kubeconfig(y, sizeof(y), "    proxy-url: ftp://proxy:21\n", "    token: " SECRET_TOKEN "\n");
        expect_error(y, EINVAL, "clusters[1].cluster.proxy-url: must be an http://, https:// or socks5:// URL");
        kubeconfig(y, sizeof(y), "", "    username: admin\n");
        expect_error(y, EINVAL, "users[0].user.password: missing");

        expect_error("clusters:\n- name: c\n  cluster:\n    certificate-authority-data: " PEM_B64 "\n"
                     "users: []\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n",
                     EINVAL, "clusters[0].cluster.server: missing");
        expect_error("clusters:\n- name: c\n  cluster: {server: \"ftp://x\"}\n"
                     "contexts:\n- name: x\n  context: {cluster: c}\ncurrent-context: x\n",
                     EINVAL, "clusters[0].cluster.server: must be an http:// or https:// URL");
        expect_error("clusters:\n- name: c\n  cluster: {server: \"https://x\"}\n"
                     "contexts:\n- name: x\n  context: {cluster: c, user: nobody}\ncurrent-context: x\n",
                     EINVAL, "users: missing");
        expect_error("clusters:\n- name: c\n  cluster: {server: \"https://x\"}\nusers: []\n"
                     "contexts:\n- name: x\n  context: {cluster: c, user: nobody}\ncurrent-context: x\n",
                     ENOENT, "users: no entry named \"nobody\"");
        expect_error("clusters:\n- name: c\n  cluster: {server: \"https://x\"}\n"
                     "contexts:\n- name: x\n  context: {user: u}\ncurrent-context: x\n",
                     EINVAL, "contexts[0].context.cluster: missing");
        expect_error("clusters: []\ncontexts: []\n", EINVAL, "current-context: not set");
        expect_error("clusters: []\ncontexts: []\ncurrent-context: gone\n", ENOENT, "contexts: no entry named \"gone\"");
        expect_error("- just\n- a list\n", EINVAL, "the top level must be a mapping");
        expect_error("clusters: [\n", EINVAL, "kubeconfig test: invalid YAML at line");
        expect_error("", EINVAL, "the top level must be a mapping");
        expect_error("contexts: 7\ncurrent-context: x\n", EINVAL, "contexts: must be a list");
}

/* Runs gantry_kube_client_new with stderr captured; returns its result and
 * whether the log contained @secret. */
static int client_new_captured(const struct gantry_kube_client_options *o, const char *secret, bool *ret_leak,
                               struct gantry_error *err)
{
        struct gantry_kube_client *c = NULL;
        char path[512], logbuf[8192];
        int saved, fd, r;
        ssize_t n;

        snprintf(path, sizeof(path), "%s/stderr.log", dir);
        fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
        assert_true(fd >= 0);
        fflush(stderr);
        saved = dup(STDERR_FILENO);
        dup2(fd, STDERR_FILENO);
        r = gantry_kube_client_new(o, &c, err);
        fflush(stderr);
        dup2(saved, STDERR_FILENO);
        close(saved);
        n = pread(fd, logbuf, sizeof(logbuf) - 1, 0);
        close(fd);
        logbuf[n > 0 ? n : 0] = '\0';
        *ret_leak = strstr(logbuf, secret) != NULL;
        fputs(logbuf, stderr);
        gantry_kube_client_free(c);
        return r;
}

static void test_client_never_logs_token(void **state)
{
        struct gantry_kube_client_options o = { 0 };
        struct gantry_error err;
        char y[2048], kc[512];
        bool leak;

        (void)state;
        kubeconfig(y, sizeof(y), "", "    token: " SECRET_TOKEN "\n");
        assert_int_equal(test_write_file(dir, "kc-token", y, kc, sizeof(kc)), 0);
        o.kubeconfig = kc;
        assert_int_equal(client_new_captured(&o, SECRET_TOKEN, &leak, &err), 0);
        assert_false(leak);
        kubeconfig(y, sizeof(y), "    certificate-authority: /nonexistent\n", "    token: " SECRET_TOKEN "\n");
        assert_int_equal(test_write_file(dir, "kc-bad", y, kc, sizeof(kc)), 0);
        assert_int_equal(client_new_captured(&o, SECRET_TOKEN, &leak, &err), -ENOENT);
        assert_false(leak);
        assert_null(strstr(err.msg, SECRET_TOKEN));
        assert_non_null(strstr(err.msg, kc)); /* names the file */
}

static void test_in_cluster(void **state)
{
        struct kube_conn *conn = NULL;
        struct gantry_error err = { 0 };
        char sa[300], path[512];

        (void)state;
        snprintf(sa, sizeof(sa), "%s/sa", dir);
        assert_int_equal(mkdir(sa, 0700), 0);

        unsetenv("KUBERNETES_SERVICE_HOST");
        unsetenv("KUBERNETES_SERVICE_PORT");
        assert_int_equal(kube_conn_in_cluster(sa, &conn, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "in-cluster: KUBERNETES_SERVICE_HOST: not set"));
        setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
        assert_int_equal(kube_conn_in_cluster(sa, &conn, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "KUBERNETES_SERVICE_PORT: not set"));
        setenv("KUBERNETES_SERVICE_PORT", "70000", 1);
        assert_int_equal(kube_conn_in_cluster(sa, &conn, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "KUBERNETES_SERVICE_PORT: not a port number"));
        setenv("KUBERNETES_SERVICE_PORT", "443", 1);
        assert_int_equal(kube_conn_in_cluster(sa, &conn, &err), -ENOENT);
        assert_non_null(strstr(err.msg, "in-cluster: token file"));
        assert_non_null(strstr(err.msg, "/sa/token"));
        assert_int_equal(test_write_file(sa, "token", SECRET_TOKEN "\n", path, sizeof(path)), 0);
        assert_int_equal(kube_conn_in_cluster(sa, &conn, &err), -ENOENT);
        assert_non_null(strstr(err.msg, "in-cluster: CA file"));
        assert_null(strstr(err.msg, SECRET_TOKEN));
        assert_int_equal(test_write_file(sa, "ca.crt", PEM_TEXT, path, sizeof(path)), 0);

        assert_int_equal(kube_conn_in_cluster(sa, &conn, &err), 0);
        assert_string_equal(conn->server, "https://10.96.0.1:443");
        assert_string_equal(conn->namespace, "default"); /* no namespace file */
        assert_string_equal(conn->origin, "in-cluster");
        assert_memory_equal(conn->ca.data, PEM_TEXT, conn->ca.len);
        assert_non_null(conn->token_file);
        kube_conn_free(conn);

        assert_int_equal(test_write_file(sa, "namespace", "gantry-system\n", path, sizeof(path)), 0);
        setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
        assert_int_equal(kube_conn_in_cluster(sa, &conn, &err), 0);
        assert_string_equal(conn->server, "https://[fd00::1]:443");
        assert_string_equal(conn->namespace, "gantry-system");
        kube_conn_free(conn);

        setenv("KUBERNETES_SERVICE_HOST", "evil/path", 1);
        assert_int_equal(kube_conn_in_cluster(sa, &conn, &err), -EINVAL);
        unsetenv("KUBERNETES_SERVICE_HOST");
        unsetenv("KUBERNETES_SERVICE_PORT");
}

static void test_base64(void **state)
{
        struct kube_blob b = { 0 };

        (void)state;
        assert_int_equal(kube_base64_decode("aGVsbG8=", 8, &b), 0);
        assert_int_equal(b.len, 5);
        assert_memory_equal(b.data, "hello", 5);
        kube_blob_clear(&b);
        assert_int_equal(kube_base64_decode("aGVs\nbG8", 8, &b), 0); /* unpadded, wrapped */
        assert_memory_equal(b.data, "hello", 5);
        kube_blob_clear(&b);
        assert_int_equal(kube_base64_decode("", 0, &b), 0);
        assert_int_equal(b.len, 0);
        kube_blob_clear(&b);
        assert_int_equal(kube_base64_decode("aGVsbG8=x", 9, &b), -EINVAL); /* data after padding */
        assert_int_equal(kube_base64_decode("a", 1, &b), -EINVAL);       /* a lone sextet */
        assert_int_equal(kube_base64_decode("a-b_", 4, &b), -EINVAL);    /* URL alphabet */
        assert_int_equal(kube_base64_decode("YQ===", 5, &b), -EINVAL);
}

static int collect_line(void *ctx, char *line, size_t n)
{
        char *out = ctx;

        assert_int_equal(strlen(line), n);
        strcat(out, "[");
        strcat(out, line);
        strcat(out, "]");
        return 0;
}

static void test_lines(void **state)
{
        struct kube_lines l;
        char out[256] = "";

        (void)state;
        kube_lines_init(&l, 16);
        assert_int_equal(kube_lines_feed(&l, "ab", 2, collect_line, out), 0);
        assert_string_equal(out, "");
        assert_int_equal(kube_lines_feed(&l, "c\r\n\nde\nf", 8, collect_line, out), 0);
        assert_string_equal(out, "[abc][de]");
        assert_int_equal(kube_lines_feed(&l, "gh\n", 3, collect_line, out), 0);
        assert_string_equal(out, "[abc][de][fgh]");
        /* a line over the limit fails even before its newline arrives */
        assert_int_equal(kube_lines_feed(&l, "0123456789abcdefX", 17, collect_line, out), -EMSGSIZE);
        kube_lines_clear(&l);
}

static void test_watch_decode(void **state)
{
        struct kube_watch_event ev;
        struct gantry_error err;
        const char *ok = "{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"Pod\",\"metadata\":"
                         "{\"name\":\"p\",\"namespace\":\"ns\",\"resourceVersion\":\"42\"}}}";
        const char *bm = "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"resourceVersion\":\"77\"}}}";
        const char *gone = "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,\"reason\":\"Expired\"}}";
        char key[64];

        (void)state;
        assert_int_equal(kube_watch_decode(ok, strlen(ok), &ev, &err), 0);
        assert_int_equal(ev.type, KUBE_WATCH_MODIFIED);
        assert_string_equal(ev.resource_version, "42");
        assert_int_equal(kube_object_key(ev.object, key, sizeof(key)), 0);
        assert_string_equal(key, "ns/p");
        json_decref(ev.object);
        assert_int_equal(kube_watch_decode(bm, strlen(bm), &ev, &err), 0);
        assert_int_equal(ev.type, KUBE_WATCH_BOOKMARK);
        assert_string_equal(ev.resource_version, "77");
        json_decref(ev.object);
        assert_int_equal(kube_watch_decode(gone, strlen(gone), &ev, &err), 0);
        assert_int_equal(ev.type, KUBE_WATCH_ERROR);
        assert_int_equal(ev.code, 410);
        json_decref(ev.object);

#define BAD(text, needle)                                                                    \
        do {                                                                                 \
                assert_int_equal(kube_watch_decode(text, strlen(text), &ev, &err), -EBADMSG); \
                assert_non_null(strstr(err.msg, needle));                                    \
        } while (0)
        BAD("{\"type\":\"ADDED\"", "invalid JSON");
        BAD("{\"object\":{}}", "type: missing");
        BAD("{\"type\":\"SYNC\",\"object\":{}}", "type: unknown");
        BAD("{\"type\":\"ADDED\",\"object\":[]}", "object: missing or not an object");
        BAD("{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"x\"}}}", "resourceVersion: missing");
        BAD("{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"resourceVersion\":\"1\"}}}", "metadata.name");
        BAD("{\"type\":\"ADDED\",\"type\":\"DELETED\",\"object\":{}}", "invalid JSON"); /* duplicate key */
#undef BAD
}

static void test_backoff_bounded(void **state)
{
        unsigned int seed = 7;
        long prev_max = 0;

        (void)state;
        for (int n = 1; n < 2000; n++) {
                long ms = kube_backoff_ms(500, 30000, n, &seed);

                assert_true(ms >= 375);   /* initial - 25% */
                assert_true(ms <= 30000); /* never above the maximum */
                if (n <= 6) { /* 500 * 2^(n-1) +- 25% while below the cap */
                        long base = 500L << (n - 1);

                        assert_true(ms >= base - base / 4 && ms <= base + base / 4);
                }
                prev_max = ms > prev_max ? ms : prev_max;
        }
        assert_true(prev_max > 20000); /* it does grow to the cap */
        assert_int_equal(kube_backoff_ms(0, 0, 5, &seed), 1);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_token_and_current_context),
                cmocka_unit_test(test_inline_data),
                cmocka_unit_test(test_files_relative_to_kubeconfig),
                cmocka_unit_test(test_missing_file_named),
                cmocka_unit_test(test_bad_fields_named),
                cmocka_unit_test(test_client_never_logs_token),
                cmocka_unit_test(test_in_cluster),
                cmocka_unit_test(test_base64),
                cmocka_unit_test(test_lines),
                cmocka_unit_test(test_watch_decode),
                cmocka_unit_test(test_backoff_bounded),
        };

        return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
