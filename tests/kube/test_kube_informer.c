/*
 * The kube client's informers against the FAKE Kubernetes API server (a
 * real kube-apiserver cannot run here): paged initial list + SYNCED, watch
 * events, bookmarks advancing the resourceVersion, 410 Gone (as an ERROR
 * event and as HTTP 410) leading to a re-list whose diff reports what the
 * watch missed, a dropped watch resumed without losing or repeating
 * events, a server-side watch timeout that is not an error, bounded error
 * backoff and giving up after max_errors, an event
 * longer than the line limit, and a clean stop in the middle of a watch or
 * of a backoff.
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

#include "fake_harness.h"
#include "kube_client.h"
#include "kube_internal.h"
#include "recorder.h"

#define TOKEN "GANTRYCANARY-informer-token" /* the secret canary: tests/canary/ */

struct fixture {
        struct fake_api fake;
        char dir[256];
        struct gantry_kube_client *client;
        struct recorder rec;
        struct gantry_kube_informer *inf;
};

static int teardown(void **state)
{
        struct fixture *fx = *state;

        gantry_kube_informer_stop(fx->inf);
        fake_stop_with_client(&fx->fake, fx->dir, fx->client);
        recorder_destroy(&fx->rec);
        free(fx);
        return 0;
}

/* cmocka runs no teardown after a failed setup: on failure it stops the
 * fake and removes the directory itself (teardown copes with a half-made
 * fixture). */
static int setup(void **state)
{
        static const char *const args[] = { "--token", TOKEN, "--nodes", "6", "--leaves", "2", NULL };
        struct fixture *fx = calloc(1, sizeof(*fx));

        if (!fx)
                return -1;
        recorder_init(&fx->rec);
        *state = fx;
        if (fake_start_with_client(&fx->fake, "informer", args, TOKEN, fx->dir, sizeof(fx->dir), &fx->client) < 0) {
                teardown(state);
                *state = NULL;
                return -1;
        }
        return 0;
}

static struct gantry_kube_informer_options fast_opts(void)
{
        return (struct gantry_kube_informer_options){
                .initial_backoff_ms = 10, .max_backoff_ms = 40, .watch_timeout_seconds = 60,
        };
}

static void start(struct fixture *fx, enum gantry_kube_kind kind, const struct gantry_kube_informer_options *o)
{
        struct gantry_error err = { 0 };

        assert_int_equal(gantry_kube_informer_start(fx->client, kind, o, recorder_cb, &fx->rec, &fx->inf, &err), 0);
}

static bool watching(void *ctx)
{
        struct gantry_kube_informer_state st;

        gantry_kube_informer_state(ctx, &st);
        return st.watching;
}

static bool fake_has_open_watch(void *ctx)
{
        return fake_state_long(ctx, "openWatches") >= 1;
}

static bool fake_has_held_watch(void *ctx)
{
        return fake_state_long(ctx, "heldWatches") >= 1;
}

/* Waits until the informer has a watch open on the fake's side too. */
static void wait_watching(struct fixture *fx)
{
        assert_true(test_wait_for(watching, fx->inf, TEST_WAIT_MS));
        assert_true(test_wait_for(fake_has_open_watch, &fx->fake, TEST_WAIT_MS));
}

static void node_json(char *buf, size_t size, const char *name, const char *leaf)
{
        snprintf(buf, size,
                 "{\"metadata\":{\"name\":\"%s\",\"labels\":{\"network.topology.nvidia.com/leaf\":\"%s\"}},"
                 "\"status\":{\"allocatable\":{\"nvidia.com/gpu\":\"8\"}}}",
                 name, leaf);
}

/* Counts the requests the fake saw with @verb (and, when not NULL, a query
 * parameter @param present). */
static int count_requests(struct fake_api *f, const char *verb, const char *param)
{
        int n = fake_count_requests(f, verb, NULL, param);

        assert_true(n >= 0);
        return n;
}

/* ---------------------------------------------------------------- tests */

static void test_initial_list_paged_then_synced(void **state)
{
        struct fixture *fx = *state;
        struct gantry_kube_informer_options o = fast_opts();
        struct gantry_kube_informer_state st;
        char key[16];

        o.page_size = 4; /* 6 nodes: two pages, the second by continue */
        start(fx, GANTRY_KUBE_NODE, &o);
        assert_int_equal(gantry_kube_informer_wait_synced(fx->inf, TEST_WAIT_MS), 0);
        assert_int_equal(recorder_find(&fx->rec, 0, GANTRY_KUBE_ADDED, NULL), 6);
        assert_int_equal(recorder_find(&fx->rec, 0, GANTRY_KUBE_SYNCED, NULL), 1);
        /* SYNCED comes after every ADDED of the list */
        assert_int_equal(recorder_get(&fx->rec, 6).event, GANTRY_KUBE_SYNCED);
        for (int i = 0; i < 6; i++) {
                struct recorded_event e = recorder_get(&fx->rec, i);

                snprintf(key, sizeof(key), "gpu-%04d", i);
                assert_int_equal(recorder_find(&fx->rec, 0, GANTRY_KUBE_ADDED, key), 1);
                assert_int_equal(e.kind, GANTRY_KUBE_NODE);
                assert_true(e.has_kind); /* list items get kind and apiVersion back */
        }
        gantry_kube_informer_state(fx->inf, &st);
        assert_true(st.synced);
        assert_int_equal(st.lists, 1);
        assert_int_equal(atol(st.resource_version), fake_state_rv(&fx->fake));
        assert_int_equal(count_requests(&fx->fake, "list", "continue"), 1);
        assert_int_equal(count_requests(&fx->fake, "list", NULL), 2);
}

static void test_watch_events(void **state)
{
        struct fixture *fx = *state;
        struct gantry_kube_informer_options o = fast_opts();
        char node[512];
        int from;

        start(fx, GANTRY_KUBE_NODE, &o);
        assert_int_equal(gantry_kube_informer_wait_synced(fx->inf, TEST_WAIT_MS), 0);
        wait_watching(fx);
        from = recorder_count(&fx->rec);

        node_json(node, sizeof(node), "gpu-new", "leaf-9");
        assert_int_equal(fake_upsert(&fx->fake, "nodes", node), 200);
        assert_true(recorder_wait(&fx->rec, from, GANTRY_KUBE_ADDED, "gpu-new", 1, TEST_WAIT_MS));
        node_json(node, sizeof(node), "gpu-new", "leaf-8");
        assert_int_equal(fake_upsert(&fx->fake, "nodes", node), 200);
        assert_true(recorder_wait(&fx->rec, from, GANTRY_KUBE_MODIFIED, "gpu-new", 1, TEST_WAIT_MS));
        assert_int_equal(fake_request(&fx->fake, "DELETE", "/fake/objects/nodes/_/gpu-0001", NULL, NULL), 200);
        assert_true(recorder_wait(&fx->rec, from, GANTRY_KUBE_DELETED, "gpu-0001", 1, TEST_WAIT_MS));

        /* in order, and no SYNCED from a watch */
        assert_int_equal(recorder_count(&fx->rec) - from, 3);
        assert_int_equal(recorder_get(&fx->rec, from).event, GANTRY_KUBE_ADDED);
        assert_int_equal(recorder_get(&fx->rec, from + 1).event, GANTRY_KUBE_MODIFIED);
        assert_int_equal(recorder_get(&fx->rec, from + 2).event, GANTRY_KUBE_DELETED);
        assert_true(recorder_get(&fx->rec, from + 2).has_kind);
        assert_int_equal(count_requests(&fx->fake, "watch", "allowWatchBookmarks"),
                         count_requests(&fx->fake, "watch", NULL));
}

struct rv_wait {
        struct gantry_kube_informer *inf;
        long rv;
        struct fake_api *fake;
        long watches; /* the fake's watch count before */
};

/* A new watch was served (and is still open) since w->watches was read. */
static bool another_watch(void *ctx)
{
        struct rv_wait *w = ctx;

        return fake_state_long(w->fake, "watches") > w->watches && fake_state_long(w->fake, "openWatches") >= 1;
}

static bool rv_reached(void *ctx)
{
        struct rv_wait *w = ctx;
        struct gantry_kube_informer_state st;

        gantry_kube_informer_state(w->inf, &st);
        return atol(st.resource_version) == w->rv;
}

static void test_bookmark_advances_resource_version(void **state)
{
        struct fixture *fx = *state;
        struct gantry_kube_informer_options o = fast_opts();
        struct gantry_kube_informer_state st;
        struct rv_wait w;
        int from;

        start(fx, GANTRY_KUBE_NODE, &o);
        assert_int_equal(gantry_kube_informer_wait_synced(fx->inf, TEST_WAIT_MS), 0);
        wait_watching(fx);
        from = recorder_count(&fx->rec);
        /* changes to another kind move the server's resourceVersion on,
         * but only a bookmark tells the node watch about it */
        assert_int_equal(fake_upsert(&fx->fake, "storageclasses",
                                     "{\"metadata\":{\"name\":\"sc-x\"},\"provisioner\":\"csi.gantry.io\"}"),
                         200);
        gantry_kube_informer_state(fx->inf, &st);
        assert_true(atol(st.resource_version) < fake_state_rv(&fx->fake));
        assert_int_equal(fake_request(&fx->fake, "POST", "/fake/bookmark", "{}", NULL), 200);
        w.inf = fx->inf;
        w.rv = fake_state_rv(&fx->fake);
        assert_true(test_wait_for(rv_reached, &w, TEST_WAIT_MS));
        assert_int_equal(recorder_count(&fx->rec), from); /* a bookmark is not an event */

        /* the next watch resumes from the bookmark: drop it and compact
         * history; no 410 follows since the bookmark's RV is current */
        assert_int_equal(fake_request(&fx->fake, "POST", "/fake/compact", "{}", NULL), 200);
        w.watches = fake_state_long(&fx->fake, "watches");
        w.fake = &fx->fake;
        assert_int_equal(fake_request(&fx->fake, "POST", "/fake/drop", "{}", NULL), 200);
        assert_true(test_wait_for(another_watch, &w, TEST_WAIT_MS));
        assert_int_equal(fake_upsert(&fx->fake, "nodes", "{\"metadata\":{\"name\":\"gpu-after-bookmark\"}}"), 200);
        assert_true(recorder_wait(&fx->rec, from, GANTRY_KUBE_ADDED, "gpu-after-bookmark", 1, TEST_WAIT_MS));
        gantry_kube_informer_state(fx->inf, &st);
        assert_int_equal(st.lists, 1);
        assert_int_equal(count_requests(&fx->fake, "list", NULL), 1);
        assert_int_equal(recorder_count(&fx->rec), from + 1);
}

/*
 * While the informer cannot watch (held by the fake), a node is added, one
 * deleted and one modified, and history is compacted: the resumed watch
 * gets 410 and the re-list must report exactly those three changes.
 */
static void relist_after_gone(struct fixture *fx, const char *gone_mode)
{
        struct gantry_kube_informer_options o = fast_opts();
        struct gantry_kube_informer_state st;
        char node[512], body[64];
        int from;

        snprintf(body, sizeof(body), "{\"mode\":\"%s\"}", gone_mode);
        assert_int_equal(fake_request(&fx->fake, "POST", "/fake/gone-mode", body, NULL), 200);
        start(fx, GANTRY_KUBE_NODE, &o);
        assert_int_equal(gantry_kube_informer_wait_synced(fx->inf, TEST_WAIT_MS), 0);
        wait_watching(fx);

        assert_int_equal(fake_request(&fx->fake, "POST", "/fake/hold", "{}", NULL), 200);
        assert_true(test_wait_for(fake_has_held_watch, &fx->fake, TEST_WAIT_MS));
        from = recorder_count(&fx->rec);
        node_json(node, sizeof(node), "gpu-late", "leaf-1");
        assert_int_equal(fake_upsert(&fx->fake, "nodes", node), 200);
        node_json(node, sizeof(node), "gpu-0002", "leaf-7");
        assert_int_equal(fake_upsert(&fx->fake, "nodes", node), 200);
        assert_int_equal(fake_request(&fx->fake, "DELETE", "/fake/objects/nodes/_/gpu-0003", NULL, NULL), 200);
        assert_int_equal(fake_request(&fx->fake, "POST", "/fake/compact", "{}", NULL), 200);
        assert_int_equal(fake_request(&fx->fake, "POST", "/fake/release", "{}", NULL), 200);

        assert_true(recorder_wait(&fx->rec, from, GANTRY_KUBE_SYNCED, NULL, 1, TEST_WAIT_MS));
        assert_int_equal(recorder_find(&fx->rec, from, GANTRY_KUBE_ADDED, "gpu-late"), 1);
        assert_int_equal(recorder_find(&fx->rec, from, GANTRY_KUBE_MODIFIED, "gpu-0002"), 1);
        assert_int_equal(recorder_find(&fx->rec, from, GANTRY_KUBE_DELETED, "gpu-0003"), 1);
        /* nothing else: unchanged nodes are not re-announced */
        assert_int_equal(recorder_count(&fx->rec) - from, 4);
        assert_int_equal(recorder_get(&fx->rec, recorder_count(&fx->rec) - 1).event, GANTRY_KUBE_SYNCED);
        gantry_kube_informer_state(fx->inf, &st);
        assert_int_equal(st.lists, 2);
        assert_int_equal(atol(st.resource_version), fake_state_rv(&fx->fake));
}

static void test_gone_event_relists(void **state)
{
        relist_after_gone(*state, "event");
}

static void test_gone_http_relists(void **state)
{
        relist_after_gone(*state, "http");
}

/* Index of the first event @event for @key at or after @from, or -1. */
static int event_index(struct recorder *rec, int from, enum gantry_kube_event event, const char *key)
{
        for (int i = from; i < recorder_count(rec); i++) {
                struct recorded_event e = recorder_get(rec, i);

                if (e.event == event && strcmp(e.key, key) == 0)
                        return i;
        }
        return -1;
}

/*
 * A node deleted and re-created under the same name (new metadata.uid) while
 * the watch is held, then history compacted: the re-list must end the old
 * object (DELETED) before announcing the new one (ADDED) — as a StatefulSet
 * pod re-created as job-worker-0 must give back its predecessor's charge.
 */
static void test_relist_recreated_same_name(void **state)
{
        struct fixture *fx = *state;
        struct gantry_kube_informer_options o = fast_opts();
        char node[512];
        int from, del, add;

        start(fx, GANTRY_KUBE_NODE, &o);
        assert_int_equal(gantry_kube_informer_wait_synced(fx->inf, TEST_WAIT_MS), 0);
        wait_watching(fx);
        assert_int_equal(fake_request(&fx->fake, "POST", "/fake/hold", "{}", NULL), 200);
        assert_true(test_wait_for(fake_has_held_watch, &fx->fake, TEST_WAIT_MS));
        from = recorder_count(&fx->rec);
        assert_int_equal(fake_request(&fx->fake, "DELETE", "/fake/objects/nodes/_/gpu-0004", NULL, NULL), 200);
        node_json(node, sizeof(node), "gpu-0004", "leaf-1");
        assert_int_equal(fake_upsert(&fx->fake, "nodes", node), 200);
        assert_int_equal(fake_request(&fx->fake, "POST", "/fake/compact", "{}", NULL), 200);
        assert_int_equal(fake_request(&fx->fake, "POST", "/fake/release", "{}", NULL), 200);

        assert_true(recorder_wait(&fx->rec, from, GANTRY_KUBE_SYNCED, NULL, 1, TEST_WAIT_MS));
        del = event_index(&fx->rec, from, GANTRY_KUBE_DELETED, "gpu-0004");
        add = event_index(&fx->rec, from, GANTRY_KUBE_ADDED, "gpu-0004");
        assert_true(del >= 0);
        assert_true(add > del);
        assert_int_equal(recorder_find(&fx->rec, from, GANTRY_KUBE_MODIFIED, "gpu-0004"), 0);
        assert_int_equal(recorder_count(&fx->rec) - from, 3);
}

static bool fake_has_held_list(void *ctx)
{
        return fake_state_long(ctx, "heldLists") >= 1;
}

static void put_pod(struct fixture *fx, const char *name, const char *node)
{
        char pod[256];

        snprintf(pod, sizeof(pod), "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"train\"},"
                 "\"spec\":{\"nodeName\":\"%s\"}}", name, node);
        assert_int_equal(fake_upsert(&fx->fake, "pods", pod), 200);
}

/* Pods p-0 .. p-(@n-1), on nodes gpu-0000 .. */
static void put_pods(struct fixture *fx, int n)
{
        char name[32], node[32];

        for (int i = 0; i < n; i++) {
                snprintf(name, sizeof(name), "p-%d", i);
                snprintf(node, sizeof(node), "gpu-%04d", i);
                put_pod(fx, name, node);
        }
}

/* The fake holds the second list request of pods until released: before
 * computing it when @fresh, else once it is computed. */
static void hold_second_pod_list(struct fixture *fx, bool fresh)
{
        char body[96];

        snprintf(body, sizeof(body), "{\"resource\":\"pods\",\"skip\":1,\"count\":1,\"fresh\":%s}",
                 fresh ? "true" : "false");
        assert_int_equal(fake_request(&fx->fake, "POST", "/fake/hold-lists", body, NULL), 200);
}

/*
 * Pods p-0 .. p-(@n-1) listed two a page by a pod informer, the second
 * page's request held (before it is computed) until released: returns once
 * the first page is delivered.
 */
static void start_with_second_page_held(struct fixture *fx, int n)
{
        struct gantry_kube_informer_options o = fast_opts();

        put_pods(fx, n);
        hold_second_pod_list(fx, true);
        o.page_size = 2;
        start(fx, GANTRY_KUBE_POD, &o);
        assert_true(test_wait_for(fake_has_held_list, &fx->fake, TEST_WAIT_MS));
        assert_true(recorder_wait(&fx->rec, 0, GANTRY_KUBE_ADDED, "train/p-1", 1, TEST_WAIT_MS));
}

/*
 * A paged list whose continue token expires between pages (410) starts
 * over: every pod is announced once, what the first page delivered is not
 * announced again, and a pod gone meanwhile ends with a DELETED that
 * carries its identity and node (the informer keeps no whole objects, so
 * that is all it can carry) -- what the ledger needs to give its charge back.
 */
static void test_paged_list_restarts_after_expired_continue(void **state)
{
        struct fixture *fx = *state;
        char name[32];
        int del;

        /* the first page is answered, the second waits */
        start_with_second_page_held(fx, 5);
        assert_int_equal(fake_request(&fx->fake, "DELETE", "/fake/objects/pods/train/p-0", NULL, NULL), 200);
        put_pod(fx, "p-5", "gpu-0005");
        assert_int_equal(fake_request(&fx->fake, "POST", "/fake/compact", "{}", NULL), 200);
        assert_int_equal(fake_request(&fx->fake, "POST", "/fake/release-lists", "{}", NULL), 200);

        assert_int_equal(gantry_kube_informer_wait_synced(fx->inf, TEST_WAIT_MS), 0);
        for (int i = 0; i < 6; i++) {
                snprintf(name, sizeof(name), "train/p-%d", i);
                assert_int_equal(recorder_find(&fx->rec, 0, GANTRY_KUBE_ADDED, name), 1);
        }
        assert_int_equal(recorder_find(&fx->rec, 0, GANTRY_KUBE_MODIFIED, NULL), 0);
        assert_int_equal(recorder_find(&fx->rec, 0, GANTRY_KUBE_DELETED, NULL), 1);
        del = event_index(&fx->rec, 0, GANTRY_KUBE_DELETED, "train/p-0");
        assert_true(del >= 0);
        assert_string_equal(recorder_get(&fx->rec, del).node_name, "gpu-0000");
        assert_true(recorder_get(&fx->rec, del).has_kind);
        assert_int_equal(recorder_count(&fx->rec), 8); /* 6 ADDED, 1 DELETED, SYNCED */
        assert_int_equal(count_requests(&fx->fake, "list", "continue") >= 2, 1);
}

/* An informer callback that, on the first ADDED, waits for the fake to hold a list request. */
struct page_gate {
        struct fixture *fx;
        bool first_seen, held_meanwhile;
};

static void gate_cb(void *ctx, enum gantry_kube_kind kind, enum gantry_kube_event event, const json_t *obj)
{
        struct page_gate *g = ctx;

        if (event == GANTRY_KUBE_ADDED && !g->first_seen) {
                g->first_seen = true;
                g->held_meanwhile = test_wait_for(fake_has_held_list, &g->fx->fake, TEST_WAIT_MS);
        }
        recorder_cb(&g->fx->rec, kind, event, obj);
}

/*
 * The next page is asked for while this one is delivered (the API server's
 * work for it overlaps the decoding): the first page's first item is held
 * in the callback until the fake holds the second page's request, which
 * only a request sent before the first page is done can satisfy. Every
 * item is still delivered once, in three requests.
 */
static void test_next_page_asked_for_while_this_one_is_delivered(void **state)
{
        struct fixture *fx = *state;
        struct gantry_kube_informer_options o = fast_opts();
        struct page_gate g = { .fx = fx };
        struct gantry_error err = { 0 };
        char name[32];

        put_pods(fx, 5);
        hold_second_pod_list(fx, false);
        o.page_size = 2;
        assert_int_equal(gantry_kube_informer_start(fx->client, GANTRY_KUBE_POD, &o, gate_cb, &g, &fx->inf, &err),
                         0);
        assert_true(recorder_wait(&fx->rec, 0, GANTRY_KUBE_ADDED, "train/p-0", 1, TEST_WAIT_MS));
        assert_true(g.held_meanwhile);
        assert_int_equal(fake_request(&fx->fake, "POST", "/fake/release-lists", "{}", NULL), 200);
        assert_int_equal(gantry_kube_informer_wait_synced(fx->inf, TEST_WAIT_MS), 0);
        for (int i = 0; i < 5; i++) {
                snprintf(name, sizeof(name), "train/p-%d", i);
                assert_int_equal(recorder_find(&fx->rec, 0, GANTRY_KUBE_ADDED, name), 1);
        }
        assert_int_equal(recorder_count(&fx->rec), 6); /* 5 ADDED, SYNCED */
        assert_int_equal(count_requests(&fx->fake, "list", NULL), 3);
        assert_int_equal(count_requests(&fx->fake, "list", "continue"), 2);
}

/* A stop while the next page's request hangs in the API server ends it: the stop does not wait for it. */
static void test_stop_ends_the_page_asked_for_ahead(void **state)
{
        struct fixture *fx = *state;

        /* the second page's request is held until released, which this test does only after the stop */
        start_with_second_page_held(fx, 4);
        gantry_kube_informer_stop(fx->inf); /* returns only once the held request is given up */
        fx->inf = NULL;
        assert_int_equal(recorder_find(&fx->rec, 0, GANTRY_KUBE_SYNCED, NULL), 0);
        assert_int_equal(fake_state_long(&fx->fake, "heldLists"), 1); /* still held: the stop did not wait */
        assert_int_equal(fake_request(&fx->fake, "POST", "/fake/release-lists", "{}", NULL), 200);
}

/* The continue token is read off a page's head, whatever the spacing; a head that does not tell says so. */
static void test_continue_read_off_the_head(void **state)
{
        static const struct {
                const char *body;
                int r;
                const char *cont;
        } cases[] = {
                { "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"7\","
                  "\"continue\":\"abc=\",\"remainingItemCount\":3},\"items\":[{\"items\":1}]}", 1, "abc=" },
                { "{\"kind\": \"PodList\", \"metadata\": {\"resourceVersion\": \"7\", \"continue\": \"x\"},\n"
                  "  \"items\": []}", 1, "x" },
                { "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"7\"},\"items\":[]}", 1, NULL },
                { "{\"items\":[],\"metadata\":{\"continue\":\"late\"}}", 0, NULL },
                { "{\"kind\":\"PodList\",\"items\":[],\"metadata\":{\"continue\":\"late\"}}", 0, NULL },
                { "{\"kind\":\"PodList\",\"metadata\":{\"continue\":\"x\"", 0, NULL },
                { "not json, \"items\": []", 0, NULL },
        };

        (void)state;
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char *cont = (char *)"unset";

                assert_int_equal(kube_list_peek_continue(cases[i].body, strlen(cases[i].body), &cont), cases[i].r);
                if (cases[i].cont)
                        assert_string_equal(cont, cases[i].cont);
                else
                        assert_null(cont);
                free(cont);
        }
}

static void test_dropped_watch_resumes_without_loss(void **state)
{
        struct fixture *fx = *state;
        struct gantry_kube_informer_options o = fast_opts();
        struct gantry_kube_informer_state st;
        char node[512], name[32];
        int from;

        start(fx, GANTRY_KUBE_NODE, &o);
        assert_int_equal(gantry_kube_informer_wait_synced(fx->inf, TEST_WAIT_MS), 0);
        wait_watching(fx);
        from = recorder_count(&fx->rec);

        /* one change seen live, then the connection is cut mid-stream */
        node_json(node, sizeof(node), "gpu-live", "leaf-1");
        assert_int_equal(fake_upsert(&fx->fake, "nodes", node), 200);
        assert_true(recorder_wait(&fx->rec, from, GANTRY_KUBE_ADDED, "gpu-live", 1, TEST_WAIT_MS));
        assert_int_equal(fake_request(&fx->fake, "POST", "/fake/hold", "{}", NULL), 200);
        assert_true(test_wait_for(fake_has_held_watch, &fx->fake, TEST_WAIT_MS));
        for (int i = 0; i < 5; i++) {
                snprintf(name, sizeof(name), "gpu-gap-%d", i);
                node_json(node, sizeof(node), name, "leaf-0");
                assert_int_equal(fake_upsert(&fx->fake, "nodes", node), 200);
        }
        assert_int_equal(fake_request(&fx->fake, "DELETE", "/fake/objects/nodes/_/gpu-live", NULL, NULL), 200);
        assert_int_equal(fake_request(&fx->fake, "POST", "/fake/release", "{}", NULL), 200);

        assert_true(recorder_wait(&fx->rec, from, GANTRY_KUBE_DELETED, "gpu-live", 1, TEST_WAIT_MS));
        for (int i = 0; i < 5; i++) {
                snprintf(name, sizeof(name), "gpu-gap-%d", i);
                assert_int_equal(recorder_find(&fx->rec, from, GANTRY_KUBE_ADDED, name), 1);
        }
        /* exactly once each, in order, and no re-list was needed */
        assert_int_equal(recorder_count(&fx->rec) - from, 7);
        assert_int_equal(recorder_find(&fx->rec, from, GANTRY_KUBE_SYNCED, NULL), 0);
        gantry_kube_informer_state(fx->inf, &st);
        assert_int_equal(st.lists, 1);
        assert_true(st.watches >= 2);
        assert_int_equal(count_requests(&fx->fake, "list", NULL), 1);
}

static bool three_watches(void *ctx)
{
        struct gantry_kube_informer_state st;

        gantry_kube_informer_state(ctx, &st);
        return st.watches >= 3;
}

/* The server ends each watch after timeoutSeconds: a normal end, not an
 * error; the informer watches again from where it was, without a re-list. */
static void test_watch_timeout_reconnects_quietly(void **state)
{
        struct fixture *fx = *state;
        struct gantry_kube_informer_options o = fast_opts();
        struct gantry_kube_informer_state st;
        char node[512];
        int from;

        o.watch_timeout_seconds = 1;
        start(fx, GANTRY_KUBE_NODE, &o);
        assert_int_equal(gantry_kube_informer_wait_synced(fx->inf, TEST_WAIT_MS), 0);
        assert_true(test_wait_for(three_watches, fx->inf, TEST_WAIT_MS));
        from = recorder_count(&fx->rec);
        node_json(node, sizeof(node), "gpu-after-timeouts", "leaf-3");
        assert_int_equal(fake_upsert(&fx->fake, "nodes", node), 200);
        assert_true(recorder_wait(&fx->rec, from, GANTRY_KUBE_ADDED, "gpu-after-timeouts", 1, TEST_WAIT_MS));
        gantry_kube_informer_state(fx->inf, &st);
        assert_int_equal(st.errors, 0);
        assert_int_equal(st.lists, 1);
        assert_int_equal(count_requests(&fx->fake, "watch", "timeoutSeconds"), count_requests(&fx->fake, "watch", NULL));
}

static void test_errors_back_off_then_recover(void **state)
{
        struct fixture *fx = *state;
        struct gantry_kube_informer_options o = fast_opts();
        struct gantry_kube_informer_state st;

        assert_int_equal(fake_request(&fx->fake, "POST", "/fake/fail",
                                      "{\"verb\":\"list\",\"status\":500,\"count\":3}", NULL), 200);
        start(fx, GANTRY_KUBE_NODE, &o);
        assert_int_equal(gantry_kube_informer_wait_synced(fx->inf, TEST_WAIT_MS), 0);
        gantry_kube_informer_state(fx->inf, &st);
        assert_int_equal(st.errors, 3);
        assert_int_equal(st.consecutive_errors, 0);
        assert_int_equal(st.last_error.err, EIO);
        assert_non_null(strstr(st.last_error.msg, "HTTP 500"));
        assert_non_null(strstr(st.last_error.msg, "fake failure injected"));
        assert_int_equal(count_requests(&fx->fake, "list", NULL), 4);
        assert_int_equal(recorder_find(&fx->rec, 0, GANTRY_KUBE_SYNCED, NULL), 1);
}

static void test_gives_up_after_max_errors(void **state)
{
        struct fixture *fx = *state;
        struct gantry_kube_informer_options o = fast_opts();
        struct gantry_kube_informer_state st;

        assert_int_equal(fake_request(&fx->fake, "POST", "/fake/fail",
                                      "{\"verb\":\"list\",\"status\":403,\"count\":100}", NULL), 200);
        o.max_errors = 3;
        start(fx, GANTRY_KUBE_POD, &o);
        assert_int_equal(gantry_kube_informer_wait_synced(fx->inf, TEST_WAIT_MS), -EACCES);
        gantry_kube_informer_state(fx->inf, &st);
        assert_true(st.failed);
        assert_false(st.synced);
        assert_int_equal(st.errors, 3);
        assert_non_null(strstr(st.last_error.msg, "list pods: HTTP 403"));
        /* exactly max_errors attempts, then nothing more */
        assert_int_equal(count_requests(&fx->fake, "list", NULL), 3);
        assert_int_equal(recorder_count(&fx->rec), 0);
}

static bool six_errors(void *ctx)
{
        struct gantry_kube_informer_state st;

        gantry_kube_informer_state(ctx, &st);
        return st.errors >= 6;
}

/*
 * max_errors counts only before the first sync: an informer that has listed
 * its kind once (PodGroups) rides out an API server outage of any length
 * and delivers what changed after it.
 */
static void test_max_errors_only_before_sync(void **state)
{
        struct fixture *fx = *state;
        struct gantry_kube_informer_options o = fast_opts();
        struct gantry_kube_informer_state st;
        char node[512];
        int from;

        o.max_errors = 3;
        start(fx, GANTRY_KUBE_NODE, &o);
        assert_int_equal(gantry_kube_informer_wait_synced(fx->inf, TEST_WAIT_MS), 0);
        wait_watching(fx);
        /* the next watch fails with an ERROR event, then five re-lists fail */
        assert_int_equal(fake_request(&fx->fake, "POST", "/fake/fail",
                                      "{\"verb\":\"watch\",\"status\":500,\"count\":1,\"mode\":\"event\"}", NULL),
                         200);
        assert_int_equal(fake_request(&fx->fake, "POST", "/fake/fail",
                                      "{\"verb\":\"list\",\"status\":503,\"count\":5}", NULL), 200);
        from = recorder_count(&fx->rec);
        assert_int_equal(fake_request(&fx->fake, "POST", "/fake/drop", "{}", NULL), 200);
        assert_true(test_wait_for(six_errors, fx->inf, TEST_WAIT_MS));
        assert_true(recorder_wait(&fx->rec, from, GANTRY_KUBE_SYNCED, NULL, 1, TEST_WAIT_MS));
        gantry_kube_informer_state(fx->inf, &st);
        assert_false(st.failed);
        assert_int_equal(st.errors, 6);
        assert_int_equal(st.consecutive_errors, 0);
        wait_watching(fx);
        from = recorder_count(&fx->rec);
        node_json(node, sizeof(node), "gpu-after-outage", "leaf-2");
        assert_int_equal(fake_upsert(&fx->fake, "nodes", node), 200);
        assert_true(recorder_wait(&fx->rec, from, GANTRY_KUBE_ADDED, "gpu-after-outage", 1, TEST_WAIT_MS));
}

static void test_watch_error_event_relists_with_backoff(void **state)
{
        struct fixture *fx = *state;
        struct gantry_kube_informer_options o = fast_opts();
        struct gantry_kube_informer_state st;
        int from;

        start(fx, GANTRY_KUBE_NODE, &o);
        assert_int_equal(gantry_kube_informer_wait_synced(fx->inf, TEST_WAIT_MS), 0);
        wait_watching(fx);
        /* the next watch answers 200 then an ERROR event with code 500 */
        assert_int_equal(fake_request(&fx->fake, "POST", "/fake/fail",
                                      "{\"verb\":\"watch\",\"status\":500,\"count\":1,\"mode\":\"event\"}", NULL),
                         200);
        from = recorder_count(&fx->rec);
        assert_int_equal(fake_request(&fx->fake, "POST", "/fake/drop", "{}", NULL), 200);
        assert_true(recorder_wait(&fx->rec, from, GANTRY_KUBE_SYNCED, NULL, 1, TEST_WAIT_MS));
        gantry_kube_informer_state(fx->inf, &st);
        assert_int_equal(st.lists, 2);
        assert_int_equal(st.errors, 1);
        assert_non_null(strstr(st.last_error.msg, "ERROR event 500"));
        /* the re-list found nothing changed: SYNCED alone */
        assert_int_equal(recorder_count(&fx->rec) - from, 1);
}

static bool two_errors(void *ctx)
{
        struct gantry_kube_informer_state st;

        gantry_kube_informer_state(ctx, &st);
        return st.errors >= 2;
}

static void test_line_limit(void **state)
{
        struct fixture *fx = *state;
        struct gantry_kube_informer_options o = fast_opts();
        struct gantry_kube_informer_state st;
        char *big;
        size_t pad = 6000;
        int from;

        o.max_line_bytes = 4096;
        o.page_size = 1; /* each list page holds one ~1 KiB node */
        start(fx, GANTRY_KUBE_NODE, &o);
        assert_int_equal(gantry_kube_informer_wait_synced(fx->inf, TEST_WAIT_MS), 0);
        wait_watching(fx);
        from = recorder_count(&fx->rec);

        big = malloc(pad + 256);
        assert_non_null(big);
        snprintf(big, 256, "{\"metadata\":{\"name\":\"gpu-huge\",\"annotations\":{\"x\":\"");
        memset(big + strlen(big), 'a', pad);
        strcpy(big + strlen("{\"metadata\":{\"name\":\"gpu-huge\",\"annotations\":{\"x\":\"") + pad, "\"}}}");
        assert_int_equal(fake_upsert(&fx->fake, "nodes", big), 200);
        free(big);

        /* the watch line and then every list page with it are refused */
        assert_true(test_wait_for(two_errors, fx->inf, TEST_WAIT_MS));
        gantry_kube_informer_state(fx->inf, &st);
        assert_true(strstr(st.last_error.msg, "longer than 4096") || strstr(st.last_error.msg, "larger than 4096"));
        assert_int_equal(st.last_error.err, EMSGSIZE);
        assert_int_equal(recorder_find(&fx->rec, from, GANTRY_KUBE_ADDED, "gpu-huge"), 0);

        /* once the object is gone the informer recovers by itself */
        assert_int_equal(fake_request(&fx->fake, "DELETE", "/fake/objects/nodes/_/gpu-huge", NULL, NULL), 200);
        assert_true(recorder_wait(&fx->rec, from, GANTRY_KUBE_SYNCED, NULL, 1, TEST_WAIT_MS));
        assert_int_equal(recorder_count(&fx->rec) - from, 1); /* nothing changed that it knew */
}

static void test_selectors_and_namespace(void **state)
{
        struct fixture *fx = *state;
        struct gantry_kube_informer_options o = fast_opts();
        json_t *reqs = NULL;
        const char *q;

        o.label_selector = "gantry.io/job=llm";
        o.field_selector = "status.phase!=Succeeded,status.phase!=Failed";
        o.namespace = "training";
        assert_int_equal(fake_upsert(&fx->fake, "pods",
                                     "{\"metadata\":{\"name\":\"a\",\"namespace\":\"training\",\"labels\":{\"gantry.io/job\":\"llm\"}},"
                                     "\"status\":{\"phase\":\"Pending\"}}"),
                         200);
        assert_int_equal(fake_upsert(&fx->fake, "pods",
                                     "{\"metadata\":{\"name\":\"b\",\"namespace\":\"training\",\"labels\":{\"gantry.io/job\":\"llm\"}},"
                                     "\"status\":{\"phase\":\"Succeeded\"}}"),
                         200);
        assert_int_equal(fake_upsert(&fx->fake, "pods",
                                     "{\"metadata\":{\"name\":\"c\",\"namespace\":\"other\",\"labels\":{\"gantry.io/job\":\"llm\"}}}"),
                         200);
        start(fx, GANTRY_KUBE_POD, &o);
        assert_int_equal(gantry_kube_informer_wait_synced(fx->inf, TEST_WAIT_MS), 0);
        assert_int_equal(recorder_find(&fx->rec, 0, GANTRY_KUBE_ADDED, NULL), 1);
        assert_int_equal(recorder_find(&fx->rec, 0, GANTRY_KUBE_ADDED, "training/a"), 1);
        assert_int_equal(fake_request(&fx->fake, "GET", "/fake/requests", NULL, &reqs), 200);
        q = json_string_value(json_object_get(json_array_get(reqs, json_array_size(reqs) - 1), "path"));
        assert_string_equal(q, "/api/v1/namespaces/training/pods");
        json_decref(reqs);
}

/* The node list and the persistent volumes' failed list reached the fake. */
static bool two_lists(void *ctx)
{
        return count_requests(ctx, "list", NULL) >= 2;
}

/* The informer has recorded its failure, so it is sleeping out its backoff. */
static bool backing_off(void *ctx)
{
        struct gantry_kube_informer_state st;

        gantry_kube_informer_state(ctx, &st);
        return st.errors >= 1;
}

static void test_stop_during_watch_and_backoff(void **state)
{
        struct fixture *fx = *state;
        struct gantry_kube_informer_options o = fast_opts();
        struct gantry_error err = { 0 };
        struct gantry_kube_informer *second = NULL;
        struct recorder rec2;
        int n;

        /* a watch open and idle: stop must not wait for its timeout */
        o.watch_timeout_seconds = 1800;
        start(fx, GANTRY_KUBE_NODE, &o);
        assert_int_equal(gantry_kube_informer_wait_synced(fx->inf, TEST_WAIT_MS), 0);
        wait_watching(fx);
        gantry_kube_informer_stop(fx->inf);
        fx->inf = NULL;
        n = recorder_count(&fx->rec);
        assert_int_equal(fake_upsert(&fx->fake, "nodes", "{\"metadata\":{\"name\":\"after-stop\"}}"), 200);

        /* an informer in a 60 s backoff: stop must not wait for it either */
        recorder_init(&rec2);
        o.initial_backoff_ms = o.max_backoff_ms = 60000;
        assert_int_equal(fake_request(&fx->fake, "POST", "/fake/fail",
                                      "{\"verb\":\"list\",\"resource\":\"persistentvolumes\",\"status\":503,\"count\":5}",
                                      NULL),
                         200);
        assert_int_equal(gantry_kube_informer_start(fx->client, GANTRY_KUBE_PV, &o, recorder_cb, &rec2, &second, &err), 0);
        /* in the backoff, not still in its first list */
        assert_true(test_wait_for(two_lists, &fx->fake, TEST_WAIT_MS));
        assert_true(test_wait_for(backing_off, second, TEST_WAIT_MS));
        gantry_kube_informer_stop(second);
        assert_int_equal(recorder_count(&rec2), 0);
        recorder_destroy(&rec2);
        assert_int_equal(recorder_count(&fx->rec), n); /* nothing after stop */
}

/* proxy-url: the requests go to the proxy (here the fake itself, which
 * serves absolute-form request lines), never to the unresolvable server. */
static void test_proxy_url(void **state)
{
        struct fixture *fx = *state;
        struct gantry_kube_client_options co = { 0 };
        struct gantry_kube_client *c = NULL;
        struct gantry_kube_informer *inf = NULL;
        struct gantry_error err = { 0 };
        char proxy[128], path[512];

        snprintf(proxy, sizeof(proxy), "    proxy-url: %s\n", fx->fake.base);
        assert_int_equal(test_write_kubeconfig(fx->dir, "kc-proxy", "http://apiserver.invalid:6443", proxy,
                                               "    token: " TOKEN "\n", NULL, path, sizeof(path)),
                         0);
        co.kubeconfig = path;
        assert_int_equal(gantry_kube_client_new(&co, &c, &err), 0);
        assert_int_equal(gantry_kube_informer_start(c, GANTRY_KUBE_NODE, NULL, recorder_cb, &fx->rec, &inf, &err), 0);
        assert_int_equal(gantry_kube_informer_wait_synced(inf, TEST_WAIT_MS), 0);
        assert_int_equal(recorder_find(&fx->rec, 0, GANTRY_KUBE_ADDED, NULL), 6);
        gantry_kube_informer_stop(inf);
        gantry_kube_client_free(c);
}

static void test_bad_options(void **state)
{
        struct fixture *fx = *state;
        struct gantry_kube_informer_options o = { .namespace = "Not_A_Label" };
        struct gantry_kube_informer *inf = NULL;
        struct gantry_error err = { 0 };

        assert_int_equal(gantry_kube_informer_start(fx->client, GANTRY_KUBE_POD, &o, recorder_cb, &fx->rec, &inf, &err),
                         -EINVAL);
        assert_non_null(strstr(err.msg, "namespace"));
        o = (struct gantry_kube_informer_options){ .max_errors = -1 };
        assert_int_equal(gantry_kube_informer_start(fx->client, GANTRY_KUBE_POD, &o, recorder_cb, &fx->rec, &inf, &err),
                         -EINVAL);
        assert_int_equal(gantry_kube_informer_start(fx->client, GANTRY_KUBE_KIND_COUNT, NULL, recorder_cb, &fx->rec,
                                                    &inf, &err),
                         -EINVAL);
        assert_int_equal(gantry_kube_informer_start(fx->client, GANTRY_KUBE_POD, NULL, NULL, NULL, &inf, &err), -EINVAL);
        assert_null(inf);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_initial_list_paged_then_synced, setup, teardown),
                cmocka_unit_test_setup_teardown(test_watch_events, setup, teardown),
                cmocka_unit_test_setup_teardown(test_bookmark_advances_resource_version, setup, teardown),
                cmocka_unit_test_setup_teardown(test_gone_event_relists, setup, teardown),
                cmocka_unit_test_setup_teardown(test_gone_http_relists, setup, teardown),
                cmocka_unit_test_setup_teardown(test_relist_recreated_same_name, setup, teardown),
                cmocka_unit_test_setup_teardown(test_paged_list_restarts_after_expired_continue, setup, teardown),
                cmocka_unit_test_setup_teardown(test_next_page_asked_for_while_this_one_is_delivered, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_stop_ends_the_page_asked_for_ahead, setup, teardown),
                cmocka_unit_test(test_continue_read_off_the_head),
                cmocka_unit_test_setup_teardown(test_dropped_watch_resumes_without_loss, setup, teardown),
                cmocka_unit_test_setup_teardown(test_watch_timeout_reconnects_quietly, setup, teardown),
                cmocka_unit_test_setup_teardown(test_errors_back_off_then_recover, setup, teardown),
                cmocka_unit_test_setup_teardown(test_gives_up_after_max_errors, setup, teardown),
                cmocka_unit_test_setup_teardown(test_max_errors_only_before_sync, setup, teardown),
                cmocka_unit_test_setup_teardown(test_watch_error_event_relists_with_backoff, setup, teardown),
                cmocka_unit_test_setup_teardown(test_line_limit, setup, teardown),
                cmocka_unit_test_setup_teardown(test_selectors_and_namespace, setup, teardown),
                cmocka_unit_test_setup_teardown(test_stop_during_watch_and_backoff, setup, teardown),
                cmocka_unit_test_setup_teardown(test_proxy_url, setup, teardown),
                cmocka_unit_test_setup_teardown(test_bad_options, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
