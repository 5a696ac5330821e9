/*
 * Unit tests of the extender's bind verb (scheduler-ext/verbs/extender.c)
 * over the real placement library and model, with a bind function that
 * stands in for the Binding POST and fails late: two binds of one pod
 * overlap (kube-scheduler retried a bind that timed out while the first one
 * still waited on the API server), the second to another node succeeds, the
 * first then fails. The pod is bound where the second sent it: the ledger
 * must still charge it there, for a pod on its own and for a gang member.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <jansson.h>

#include "extender.h"
#include "gang.h"
#include "placement.h"
#include "sched_state.h"

#define UID "5d1e3c1a-0000-4000-8000-000000000001"

struct world {
        struct gantry_cluster *c;
        struct gantry_sched_state *st;
        struct gantry_gangs *gangs;
        struct gantry_extender *ext;
        int binds;         /* calls of the bind function */
        const char *late;  /* the node whose bind fails, after a second bind */
};

static void apply(struct world *w, enum gantry_obj_kind kind, const char *text)
{
        struct gantry_error err = { 0 };
        json_t *o = json_loads(text, 0, NULL);

        assert_non_null(o);
        assert_int_equal(gantry_sched_state_apply(w->st, kind, false, o, &err), 0);
        json_decref(o);
}

static int handle(struct world *w, enum gantry_extender_verb verb, const char *body, char *error,
                  size_t size)
{
        char *reply = NULL;
        int status = gantry_extender_handle(w->ext, verb, body, strlen(body), &reply);
        json_t *o = reply ? json_loads(reply, 0, NULL) : NULL;
        const char *msg = json_string_value(json_object_get(o, "Error"));

        if (error)
                snprintf(error, size, "%s", msg ? msg : "");
        json_decref(o);
        free(reply);
        return status;
}

static char *bind_body(const char *node)
{
        char *body;

        assert_true(asprintf(&body, "{\"PodName\":\"p\",\"PodNamespace\":\"ns\",\"PodUID\":\"" UID
                                    "\",\"Node\":\"%s\"}", node) > 0);
        return body;
}

/*
 * The Binding POST: the bind to w->late waits (a second bind of the same
 * pod, to the other node, runs and succeeds meanwhile), then fails.
 */
static int late_bind(void *ctx, const char *namespace, const char *name, const char *uid,
                     const char *node, struct gantry_error *err)
{
        struct world *w = ctx;
        char error[256];
        char *body;

        (void)namespace;
        (void)name;
        (void)uid;
        w->binds++;
        if (strcmp(node, w->late) != 0)
                return 0;
        body = bind_body(!strcmp(node, "node-a") ? "node-b" : "node-a");
        assert_int_equal(handle(w, GANTRY_VERB_BIND, body, error, sizeof(error)), 200);
        assert_string_equal(error, "");
        free(body);
        return gantry_error_set(err, ETIMEDOUT, "Binding: timed out");
}

/* Two nodes of 8 GPUs on one leaf; the pod asks 4 GPUs (a gang of @gang_size when > 1). */
static void world_new(struct world *w, int gang_size)
{
        char pod[1024], filter[1200];
        struct gantry_extender_options opts = { .reservation_ttl_seconds = 60, .bind = late_bind,
                                                .bind_ctx = w };

        memset(w, 0, sizeof(*w));
        assert_int_equal(gantry_cluster_new(&w->c), 0);
        assert_int_equal(gantry_sched_state_new(w->c, &w->st), 0);
        if (gang_size > 1) {
                assert_int_equal(gantry_gangs_new(w->c, 60, &w->gangs), 0);
                gantry_sched_state_set_gangs(w->st, w->gangs);
                opts.gangs = w->gangs;
        }
        assert_int_equal(gantry_extender_new(w->st, &opts, &w->ext), 0);
        for (int i = 0; i < 2; i++) {
                char node[400];

                snprintf(node, sizeof(node),
                         "{\"metadata\":{\"name\":\"node-%c\",\"labels\":{"
                         "\"" GANTRY_LABEL_LEAF "\":\"leaf-1\",\"" GANTRY_LABEL_SPINE "\":\"spine-1\","
                         "\"" GANTRY_LABEL_NIC_GBPS "\":\"400\"}},"
                         "\"status\":{\"allocatable\":{\"nvidia.com/gpu\":\"8\"}}}",
                         'a' + i);
                apply(w, GANTRY_OBJ_NODE, node);
        }
        snprintf(pod, sizeof(pod),
                 "{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\",\"uid\":\"" UID "\","
                 "\"labels\":{\"gantry.io/job\":\"train\"},"
                 "\"annotations\":{\"gantry.io/job-size\":\"%d\"}},"
                 "\"spec\":{\"containers\":[{\"name\":\"w\",\"resources\":{"
                 "\"requests\":{\"nvidia.com/gpu\":\"4\"},\"limits\":{\"nvidia.com/gpu\":\"4\"}}}]},"
                 "\"status\":{\"phase\":\"Pending\"}}",
                 gang_size);
        /* a filter first: bind finds the pod's demand by its UID */
        snprintf(filter, sizeof(filter), "{\"Pod\":%s,\"NodeNames\":[\"node-a\",\"node-b\"]}", pod);
        assert_int_equal(handle(w, GANTRY_VERB_FILTER, filter, NULL, 0), 200);
}

static void world_free(struct world *w)
{
        gantry_extender_free(w->ext);
        gantry_gangs_free(w->gangs);
        gantry_sched_state_free(w->st);
        gantry_cluster_free(w->c);
}

static int gpus_used(struct world *w, const char *node)
{
        struct gantry_node_usage u;

        assert_int_equal(gantry_cluster_node_usage(w->c, node, &u), 0);
        return u.gpus_used;
}

/* Bind #1 to node-a fails after bind #2 to node-b succeeded: node-b keeps the pod. */
static void overlapping_binds(struct world *w)
{
        char *body = bind_body("node-a"), error[256], node[64];

        w->late = "node-a";
        assert_int_equal(handle(w, GANTRY_VERB_BIND, body, error, sizeof(error)), 200);
        assert_non_null(strstr(error, "timed out"));
        assert_int_equal(w->binds, 2);
        free(body);
        assert_int_equal(gantry_cluster_lookup(w->c, UID, node, sizeof(node)), 0);
        assert_string_equal(node, "node-b");
}

static void test_failed_bind_keeps_a_later_binds_reservation(void **state)
{
        struct world w;

        (void)state;
        world_new(&w, 1);
        overlapping_binds(&w);
        assert_int_equal(gpus_used(&w, "node-b"), 4);
        assert_int_equal(gpus_used(&w, "node-a"), 0);
        world_free(&w);
}

static void test_failed_gang_bind_keeps_a_later_binds_reservation(void **state)
{
        struct gantry_gangs_stats s;
        struct world w;

        (void)state;
        world_new(&w, 2);
        overlapping_binds(&w);
        /* the member on node-b, and the other member's place still held */
        gantry_gangs_stats(w.gangs, &s);
        assert_int_equal(s.held_slots, 1);
        assert_int_equal(gpus_used(&w, "node-a") + gpus_used(&w, "node-b"), 8);
        world_free(&w);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_failed_bind_keeps_a_later_binds_reservation),
                cmocka_unit_test(test_failed_gang_bind_keeps_a_later_binds_reservation),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
