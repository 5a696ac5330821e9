/*
 * Test harness around the FAKE Kubernetes API server
 * (tests/fakeapi/fake_kube_apiserver.py): start it on a free loopback port,
 * steer it through its /fake/ control requests, stop it. Used by the kube
 * client's tests; the extender's HTTP tests can use it too.
 *
 * Every wait is bounded; fake_stop() kills and reaps the process, and the
 * fake exits by itself when its parent dies, so a crashed test leaves
 * nothing running.
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include <jansson.h>

struct gantry_kube_client;

struct fake_api {
        pid_t pid;
        int port;
        bool tls;
        char base[64]; /* "http://127.0.0.1:PORT" or "https://..." */
        char ca[512];  /* TLS: the CA file that signed the server's cert */
};

/*
 * The bound on every wait of these tests: on the fake's readiness, on an
 * informer, on an event. Generous, because CI runs the tests on a busy
 * 2-core machine where starting python alone took 5-8 s at load 16; it is
 * only reached when something is really wrong.
 */
#define TEST_WAIT_MS 60000

/*
 * Starts the fake with @argv_extra (NULL-terminated extra arguments, may be
 * NULL) and waits (at most TEST_WAIT_MS) for its "ready port=N" line. @ca_file, when
 * not NULL, is the CA of a TLS fake (passed in argv_extra as --tls-cert...):
 * control requests then verify against it. Returns 0 or -errno.
 */
int fake_start(struct fake_api *f, const char *const *argv_extra, const char *ca_file);

/* SIGTERM, bounded wait, SIGKILL if needed, reap. Safe to call twice. */
void fake_stop(struct fake_api *f);

/*
 * A control or API request to the fake. @body may be NULL. Returns the HTTP
 * status (or -errno) and, when @ret_json is not NULL, the parsed answer
 * (NULL when not JSON).
 */
int fake_request(struct fake_api *f, const char *method, const char *path, const char *body,
                 json_t **ret_json);

/* POST /fake/objects/@resource with a JSON text; returns the HTTP status. */
int fake_upsert(struct fake_api *f, const char *resource, const char *json_text);

/* An integer field of GET /fake/state ("openWatches", "resourceVersion"
 * is a string: use fake_state_rv), or -1. */
long fake_state_long(struct fake_api *f, const char *field);
long fake_state_rv(struct fake_api *f);

/* How many requests the fake saw (GET /fake/requests) with @verb, on
 * @resource when not NULL, with the query parameter @param when not NULL;
 * -1 when the fake does not answer. */
int fake_count_requests(struct fake_api *f, const char *verb, const char *resource, const char *param);

/* Makes a unique temp dir named after the test and the PID; removes one. */
int test_tmpdir(const char *name, char *buf, size_t size);
void test_rmtree(const char *dir);

/* Writes @text to @dir/@name (mode 0600) and puts the path in @path. */
int test_write_file(const char *dir, const char *name, const char *text, char *path, size_t size);

/*
 * Writes a kubeconfig named @name in @dir with one context (current) whose
 * cluster has @server plus the YAML lines @cluster_extra and whose user has
 * the lines @user_extra (each indented four spaces, ending in '\n'; "" for
 * none); @namespace may be NULL. Puts the path in @path.
 */
int test_write_kubeconfig(const char *dir, const char *name, const char *server, const char *cluster_extra,
                          const char *user_extra, const char *namespace, char *path, size_t size);

/*
 * What most kube tests start from: makes a temp dir named after @name (into
 * @dir; "" when not made), starts the fake with @argv_extra, writes
 * @dir/kubeconfig for it with bearer @token, and makes a client of it.
 * Returns 0, or -1 (said on stderr) leaving what was made for the caller's
 * teardown to stop and remove.
 */
int fake_start_with_client(struct fake_api *f, const char *name, const char *const *argv_extra,
                           const char *token, char *dir, size_t dir_size,
                           struct gantry_kube_client **ret_client);

/* Undoes fake_start_with_client(): frees @client (may be NULL), stops the
 * fake, removes @dir (may be ""). */
void fake_stop_with_client(struct fake_api *f, const char *dir, struct gantry_kube_client *client);

/* Runs a shell command; returns its exit status, or -1. */
int test_run(const char *cmd);

/* Polls @pred(@ctx) every 10 ms until true or @timeout_ms elapse. */
bool test_wait_for(bool (*pred)(void *ctx), void *ctx, int timeout_ms);
