/*
 * Starting, steering and stopping the FAKE Kubernetes API server from a C
 * test (see fake_harness.h). The script path and python come from CMake
 * (FAKE_APISERVER, GANTRY_PYTHON).
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "fake_harness.h"
#include "kube_client.h"

static long now_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

int fake_start(struct fake_api *f, const char *const *argv_extra, const char *ca_file)
{
        const char *argv[48] = { GANTRY_PYTHON, FAKE_APISERVER, "--port", "0", "--max-seconds", "600" };
        int n = 6, pipefd[2];
        char line[256];
        size_t got = 0;
        long deadline;

        memset(f, 0, sizeof(*f));
        /* the fake is on loopback: no proxy from the environment applies */
        unsetenv("http_proxy");
        unsetenv("https_proxy");
        unsetenv("HTTP_PROXY");
        unsetenv("HTTPS_PROXY");
        unsetenv("all_proxy");
        unsetenv("ALL_PROXY");
        for (; argv_extra && *argv_extra && n < 46; argv_extra++)
                argv[n++] = *argv_extra;
        argv[n] = NULL;
        if (pipe2(pipefd, O_CLOEXEC) < 0)
                return -errno;
        f->pid = fork();
        if (f->pid < 0) {
                close(pipefd[0]);
                close(pipefd[1]);
                return -errno;
        }
        if (f->pid == 0) {
                dup2(pipefd[1], STDOUT_FILENO);
                execv(argv[0], (char *const *)argv);
                _exit(127);
        }
        close(pipefd[1]);
        deadline = now_ms() + TEST_WAIT_MS;
        while (got < sizeof(line) - 1 && !memchr(line, '\n', got)) {
                struct pollfd p = { .fd = pipefd[0], .events = POLLIN };
                long left = deadline - now_ms();
                ssize_t r;

                if (left <= 0 || poll(&p, 1, (int)left) <= 0)
                        break;
                r = read(pipefd[0], line + got, sizeof(line) - 1 - got);
                if (r <= 0)
                        break;
                got += (size_t)r;
                line[got] = '\0';
        }
        close(pipefd[0]);
        line[got] = '\0';
        {
                const char *p = strstr(line, "ready port=");

                if (!p) {
                        fprintf(stderr, "fake apiserver did not start: %s\n", line);
                        fake_stop(f);
                        return -EIO;
                }
                f->port = atoi(p + strlen("ready port="));
        }
        f->tls = ca_file != NULL;
        snprintf(f->base, sizeof(f->base), "%s://127.0.0.1:%d", f->tls ? "https" : "http", f->port);
        if (ca_file)
                snprintf(f->ca, sizeof(f->ca), "%s", ca_file);
        return 0;
}

void fake_stop(struct fake_api *f)
{
        long deadline;
        int status;

        if (f->pid <= 0)
                return;
        kill(f->pid, SIGTERM);
        deadline = now_ms() + 5000;
        while (waitpid(f->pid, &status, WNOHANG) == 0) {
                if (now_ms() > deadline) {
                        kill(f->pid, SIGKILL);
                        waitpid(f->pid, &status, 0);
                        break;
                }
                usleep(10000);
        }
        f->pid = 0;
}

struct buf {
        char *data;
        size_t len;
};

static size_t collect(char *data, size_t size, size_t nmemb, void *userp)
{
        struct buf *b = userp;
        size_t n = size * nmemb;
        char *nd = realloc(b->data, b->len + n + 1);

        if (!nd)
                return 0;
        memcpy(nd + b->len, data, n);
        b->data = nd;
        b->len += n;
        b->data[b->len] = '\0';
        return n;
}

int fake_request(struct fake_api *f, const char *method, const char *path, const char *body,
                 json_t **ret_json)
{
        struct curl_slist *h = NULL;
        struct buf b = { 0 };
        char url[512];
        long status = 0;
        CURLcode c;
        CURL *e;

        e = curl_easy_init();
        if (!e)
                return -ENOMEM;
        snprintf(url, sizeof(url), "%s%s", f->base, path);
        curl_easy_setopt(e, CURLOPT_URL, url);
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
        curl_easy_setopt(e, CURLOPT_TIMEOUT, (long)(TEST_WAIT_MS / 1000));
        curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, collect);
        curl_easy_setopt(e, CURLOPT_WRITEDATA, &b);
        if (f->tls)
                curl_easy_setopt(e, CURLOPT_CAINFO, f->ca);
        h = curl_slist_append(h, "Content-Type: application/json");
        curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
        if (body)
                curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
        c = curl_easy_perform(e);
        curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
        curl_easy_cleanup(e);
        curl_slist_free_all(h);
        if (c != CURLE_OK) {
                free(b.data);
                return -EIO;
        }
        if (ret_json)
                *ret_json = b.data ? json_loads(b.data, 0, NULL) : NULL;
        free(b.data);
        return (int)status;
}

int fake_upsert(struct fake_api *f, const char *resource, const char *json_text)
{
        char path[128];

        snprintf(path, sizeof(path), "/fake/objects/%s", resource);
        return fake_request(f, "POST", path, json_text, NULL);
}

long fake_state_long(struct fake_api *f, const char *field)
{
        json_t *st = NULL;
        long v = -1;

        if (fake_request(f, "GET", "/fake/state", NULL, &st) == 200 && json_is_integer(json_object_get(st, field)))
                v = (long)json_integer_value(json_object_get(st, field));
        json_decref(st);
        return v;
}

long fake_state_rv(struct fake_api *f)
{
        json_t *st = NULL;
        long v = -1;

        if (fake_request(f, "GET", "/fake/state", NULL, &st) == 200 &&
            json_string_value(json_object_get(st, "resourceVersion")))
                v = atol(json_string_value(json_object_get(st, "resourceVersion")));
        json_decref(st);
        return v;
}

int test_tmpdir(const char *name, char *buf, size_t size)
{
        snprintf(buf, size, "/tmp/gantry-kube-%s-%d-XXXXXX", name, (int)getpid());
        return mkdtemp(buf) ? 0 : -errno;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
        (void)st;
        (void)flag;
        (void)ftw;
        return remove(path);
}

void test_rmtree(const char *dir)
{
        if (dir && *dir)
                nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

int test_write_file(const char *dir, const char *name, const char *text, char *path, size_t size)
{
        FILE *fp;

        snprintf(path, size, "%s/%s", dir, name);
        fp = fopen(path, "w");
        if (!fp)
                return -errno;
        fputs(text, fp);
        fclose(fp);
        chmod(path, 0600);
        return 0;
}

int test_write_kubeconfig(const char *dir, const char *name, const char *server, const char *cluster_extra,
                          const char *user_extra, const char *namespace, char *path, size_t size)
{
        char yaml[16384], ns[128] = "";

        if (namespace)
                snprintf(ns, sizeof(ns), "    namespace: %s\n", namespace);
        snprintf(yaml, sizeof(yaml),
                 "apiVersion: v1\nkind: Config\ncurrent-context: test\n"
                 "clusters:\n- name: fake\n  cluster:\n    server: %s\n%s"
                 "users:\n- name: u\n  user:\n%s"
                 "contexts:\n- name: test\n  context:\n    cluster: fake\n    user: u\n%s",
                 server, cluster_extra, *user_extra ? user_extra : "    {}\n", ns);
        return test_write_file(dir, name, yaml, path, size);
}

int test_run(const char *cmd)
{
        int st = system(cmd);

        return st < 0 || !WIFEXITED(st) ? -1 : WEXITSTATUS(st);
}

bool test_wait_for(bool (*pred)(void *ctx), void *ctx, int timeout_ms)
{
        long deadline = now_ms() + timeout_ms;

        while (!pred(ctx)) {
                if (now_ms() > deadline)
                        return false;
                usleep(10000);
        }
        return true;
}

int fake_start_with_client(struct fake_api *f, const char *name, const char *const *argv_extra,
                           const char *token, char *dir, size_t dir_size,
                           struct gantry_kube_client **ret_client)
{
        struct gantry_kube_client_options opts = { 0 };
        struct gantry_error err = { 0 };
        char kubeconfig[512], user[256];

        if (test_tmpdir(name, dir, dir_size) < 0) {
                dir[0] = '\0';
                return -1;
        }
        snprintf(user, sizeof(user), "    token: %s\n", token);
        if (fake_start(f, argv_extra, NULL) < 0 ||
            test_write_kubeconfig(dir, "kubeconfig", f->base, "", user, NULL, kubeconfig, sizeof(kubeconfig)) < 0)
                return -1;
        opts.kubeconfig = kubeconfig;
        if (gantry_kube_client_new(&opts, ret_client, &err) < 0) {
                fprintf(stderr, "setup: %s\n", err.msg);
                return -1;
        }
        return 0;
}

void fake_stop_with_client(struct fake_api *f, const char *dir, struct gantry_kube_client *client)
{
        gantry_kube_client_free(client);
        fake_stop(f);
        test_rmtree(dir);
}

int fake_count_requests(struct fake_api *f, const char *verb, const char *resource, const char *param)
{
        json_t *reqs = NULL, *r;
        size_t i;
        int n = 0;

        if (fake_request(f, "GET", "/fake/requests", NULL, &reqs) != 200) {
                json_decref(reqs);
                return -1;
        }
        json_array_foreach(reqs, i, r) {
                const char *v = json_string_value(json_object_get(r, "verb"));
                const char *res = json_string_value(json_object_get(r, "resource"));

                if (v && !strcmp(v, verb) && (!resource || (res && !strcmp(res, resource))) &&
                    (!param || json_object_get(json_object_get(r, "query"), param)))
                        n++;
        }
        json_decref(reqs);
        return n;
}
