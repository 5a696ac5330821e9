/*
 * Unit tests of the modify verb (scheduler-ext/verbs/volume_modify.c) over
 * the real placement library and model: a live bandwidth change of a
 * volume that fits is charged at once to the pod bound with it; one a link
 * cannot hold is refused naming the link, its free Gbps and the extra, with
 * nothing charged; a decrease is admitted and frees capacity only when the
 * class is marked in force on the PVC; the same change again charges
 * nothing more, nor does the PVC's class coming into force afterwards; and
 * two changes racing for the last headroom never both get it.
 *
 * The world: leaf-1 (uplink 100 Gbps) with nodes n1 and n2; Ceph cluster
 * ceph-a on leaf-9, so every read crosses leaf-1's uplink. Pods p1 (on n1,
 * volume vol-1) and p2 (on n2, volume vol-2) have 4 GPUs each, and their
 * StorageClass gives 10 Gbps per GPU: 80 of the uplink's 100 Gbps are used.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <jansson.h>

#include "extender.h"
#include "pending_class.h"
#include "placement.h"
#include "sched_state.h"

struct world {
        struct gantry_cluster *c;
        struct gantry_sched_state *st;
        struct gantry_extender *ext;
};

static void apply(struct world *w, enum gantry_obj_kind kind, const char *fmt, ...)
{
        struct gantry_error err = { 0 };
        char text[2048];
        va_list ap;
        json_t *o;

        va_start(ap, fmt);
        vsnprintf(text, sizeof(text), fmt, ap);
        va_end(ap);
        o = json_loads(text, 0, NULL);
        assert_non_null(o);
        assert_int_equal(gantry_sched_state_apply(w->st, kind, false, o, &err), 0);
        json_decref(o);
}

/* PVC c<i> of volume vol-<i>, with class @in_force marked in force ("" none). */
static void claim(struct world *w, int i, const char *in_force)
{
        apply(w, GANTRY_OBJ_PVC,
              "{\"metadata\":{\"name\":\"c%d\",\"namespace\":\"ns\"},"
              "\"spec\":{\"storageClassName\":\"fast\",\"volumeName\":\"pv-%d\"},"
              "\"status\":{\"phase\":\"Bound\"%s%s%s}}",
              i, i, *in_force ? ",\"currentVolumeAttributesClassName\":\"" : "", in_force,
              *in_force ? "\"" : "");
}

static void world_new(struct world *w)
{
        struct gantry_error err = { 0 };

        memset(w, 0, sizeof(*w));
        assert_int_equal(gantry_cluster_new(&w->c), 0);
        assert_int_equal(gantry_sched_state_new(w->c, &w->st), 0);
        assert_int_equal(gantry_extender_new(w->st, NULL, &w->ext), 0);
        assert_int_equal(gantry_cluster_set_leaf(w->c, &(struct gantry_leaf_spec){
                .name = "leaf-1", .spine = "spine-1", .uplink_gbps = 100 }, &err), 0);
        assert_int_equal(gantry_cluster_set_leaf(w->c, &(struct gantry_leaf_spec){
                .name = "leaf-9", .spine = "spine-1", .uplink_gbps = 1000 }, &err), 0);
        assert_int_equal(gantry_cluster_set_backend(w->c, &(struct gantry_backend_spec){
                .name = "ceph-a", .kind = GANTRY_BACKEND_CEPH, .gbps = 1000,
                .leaves = (const char *[]){ "leaf-9" }, .n_leaves = 1 }, &err), 0);
        apply(w, GANTRY_OBJ_STORAGE_CLASS,
              "{\"metadata\":{\"name\":\"fast\"},\"provisioner\":\"csi.gantry.io\","
              "\"parameters\":{\"tier\":\"dataset\",\"clusterID\":\"ceph-a\","
              "\"gantry.io/read-gbps-per-gpu\":\"10\"}}");
        apply(w, GANTRY_OBJ_ATTRIBUTES_CLASS,
              "{\"metadata\":{\"name\":\"mid\"},\"driverName\":\"csi.gantry.io\","
              "\"parameters\":{\"gantry.io/read-gbps-per-gpu\":\"12\"}}");
        apply(w, GANTRY_OBJ_ATTRIBUTES_CLASS,
              "{\"metadata\":{\"name\":\"slow\"},\"driverName\":\"csi.gantry.io\","
              "\"parameters\":{\"gantry.io/read-gbps-per-gpu\":\"5\"}}");
        for (int i = 1; i <= 2; i++) {
                apply(w, GANTRY_OBJ_PV,
                      "{\"metadata\":{\"name\":\"pv-%d\"},\"spec\":{\"storageClassName\":\"fast\","
                      "\"csi\":{\"driver\":\"csi.gantry.io\",\"volumeHandle\":\"vol-%d\","
                      "\"volumeAttributes\":{\"tier\":\"dataset\",\"clusterID\":\"ceph-a\"}}}}",
                      i, i);
                claim(w, i, "");
                apply(w, GANTRY_OBJ_NODE,
                      "{\"metadata\":{\"name\":\"n%d\",\"labels\":{"
                      "\"" GANTRY_LABEL_LEAF "\":\"leaf-1\",\"" GANTRY_LABEL_SPINE "\":\"spine-1\","
                      "\"" GANTRY_LABEL_NIC_GBPS "\":\"400\"}},"
                      "\"status\":{\"allocatable\":{\"nvidia.com/gpu\":\"8\"}}}",
                      i);
                apply(w, GANTRY_OBJ_POD,
                      "{\"metadata\":{\"name\":\"p%d\",\"namespace\":\"ns\",\"uid\":\"u%d\"},"
                      "\"spec\":{\"nodeName\":\"n%d\",\"containers\":[{\"name\":\"c\","
                      "\"resources\":{\"requests\":{\"nvidia.com/gpu\":\"4\"}}}],"
                      "\"volumes\":[{\"name\":\"d\",\"persistentVolumeClaim\":{\"claimName\":\"c%d\"}}]}}",
                      i, i, i, i);
        }
}

static void world_free(struct world *w)
{
        gantry_extender_free(w->ext);
        gantry_sched_state_free(w->st);
        gantry_cluster_free(w->c);
}

static double uplink_used(struct world *w)
{
        struct gantry_node_usage u;

        assert_int_equal(gantry_cluster_node_usage(w->c, "n1", &u), 0);
        return u.uplink_used_gbps;
}

/* POSTs a modify of vol-<i> to @per_gpu Gbps per GPU; the status, and the Error in @error. */
static int modify(struct world *w, int i, const char *per_gpu, char *error, size_t size)
{
        char body[256], *reply = NULL;
        json_t *o;
        int status;

        snprintf(body, sizeof(body),
                 "{\"volumeHandle\":\"vol-%d\",\"parameters\":{\"gantry.io/read-gbps-per-gpu\":\"%s\"}}",
                 i, per_gpu);
        status = gantry_extender_handle(w->ext, GANTRY_VERB_MODIFY, body, strlen(body), &reply);
        o = reply ? json_loads(reply, 0, NULL) : NULL;
        assert_non_null(o);
        if (error)
                snprintf(error, size, "%s", json_string_value(json_object_get(o, "Error")) ?: "");
        json_decref(o);
        free(reply);
        return status;
}

static void test_increase_that_fits_is_charged_once(void **state)
{
        struct world w;
        char error[256];

        (void)state;
        world_new(&w);
        assert_float_equal(uplink_used(&w), 80, 1e-9);
        /* 10 -> 12 Gbps per GPU: 8 more of the 20 free */
        assert_int_equal(modify(&w, 1, "12", error, sizeof(error)), 200);
        assert_float_equal(uplink_used(&w), 88, 1e-9);
        assert_int_equal(gantry_pending_classes_count(gantry_sched_state_pending(w.st)), 1);
        /* the same call again (external-resizer retries): nothing more */
        assert_int_equal(modify(&w, 1, "12", error, sizeof(error)), 200);
        assert_float_equal(uplink_used(&w), 88, 1e-9);
        /* the watch re-sees the pod before the class is in force: the admitted rate stays */
        apply(&w, GANTRY_OBJ_POD,
              "{\"metadata\":{\"name\":\"p1\",\"namespace\":\"ns\",\"uid\":\"u1\"},"
              "\"spec\":{\"nodeName\":\"n1\",\"containers\":[{\"name\":\"c\","
              "\"resources\":{\"requests\":{\"nvidia.com/gpu\":\"4\"}}}],"
              "\"volumes\":[{\"name\":\"d\",\"persistentVolumeClaim\":{\"claimName\":\"c1\"}}]}}");
        assert_float_equal(uplink_used(&w), 88, 1e-9);
        /* external-resizer marks "mid" in force: the same charge, not twice */
        claim(&w, 1, "mid");
        assert_float_equal(uplink_used(&w), 88, 1e-9);
        assert_int_equal(gantry_pending_classes_count(gantry_sched_state_pending(w.st)), 0);
        world_free(&w);
}

static void test_increase_refused_names_the_link(void **state)
{
        struct world w;
        char error[256];

        (void)state;
        world_new(&w);
        /* 10 -> 20 Gbps per GPU: 40 more, 20 free */
        assert_int_equal(modify(&w, 2, "20", error, sizeof(error)), 409);
        assert_string_equal(error, "leaf uplink leaf-1: 20.0 of 100.0 Gbps free, the change needs 40.0 more");
        assert_float_equal(uplink_used(&w), 80, 1e-9);
        assert_int_equal(gantry_pending_classes_count(gantry_sched_state_pending(w.st)), 0);
        /* a parameter that does not parse is a bad request, named */
        assert_int_equal(modify(&w, 2, "fast", error, sizeof(error)), 400);
        assert_non_null(strstr(error, "gantry.io/read-gbps-per-gpu"));
        world_free(&w);
}

static void test_decrease_frees_when_in_force(void **state)
{
        struct world w;
        char error[256];

        (void)state;
        world_new(&w);
        assert_int_equal(modify(&w, 1, "12", error, sizeof(error)), 200); /* 88 used */
        /* a decrease is admitted even with the uplink nearly full ... */
        assert_int_equal(modify(&w, 2, "5", error, sizeof(error)), 200);
        /* ... and frees nothing until the node caps the pod at the new rate */
        assert_float_equal(uplink_used(&w), 88, 1e-9);
        claim(&w, 2, "slow");
        assert_float_equal(uplink_used(&w), 68, 1e-9);
        world_free(&w);
}

struct race {
        struct world *w;
        int volume, status;
        pthread_barrier_t *start;
};

static void *race_one(void *arg)
{
        struct race *r = arg;

        pthread_barrier_wait(r->start);
        r->status = modify(r->w, r->volume, "13", NULL, 0);
        return NULL;
}

static void test_two_increases_for_the_last_headroom(void **state)
{
        pthread_barrier_t start;
        struct world w;
        struct race r[2];
        pthread_t t[2];

        (void)state;
        /* each asks 12 more of the 20 free: one gets it, the other is refused */
        for (int round = 0; round < 20; round++) {
                world_new(&w);
                pthread_barrier_init(&start, NULL, 2);
                for (int i = 0; i < 2; i++) {
                        r[i] = (struct race){ .w = &w, .volume = i + 1, .start = &start };
                        assert_int_equal(pthread_create(&t[i], NULL, race_one, &r[i]), 0);
                }
                for (int i = 0; i < 2; i++)
                        pthread_join(t[i], NULL);
                pthread_barrier_destroy(&start);
                assert_true((r[0].status == 200 && r[1].status == 409) ||
                            (r[0].status == 409 && r[1].status == 200));
                assert_float_equal(uplink_used(&w), 92, 1e-9);
                world_free(&w);
        }
}

static void test_malformed_requests(void **state)
{
        static const char *const bodies[] = {
                "not json", "{}", "{\"volumeHandle\":\"\",\"parameters\":{}}",
                "{\"volumeHandle\":\"vol-1\"}", "{\"volumeHandle\":\"vol-1\",\"parameters\":{\"k\":1}}",
        };
        struct world w;

        (void)state;
        world_new(&w);
        for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
                char *reply = NULL;

                assert_int_equal(gantry_extender_handle(w.ext, GANTRY_VERB_MODIFY, bodies[i],
                                                        strlen(bodies[i]), &reply), 400);
                free(reply);
        }
        assert_float_equal(uplink_used(&w), 80, 1e-9);
        world_free(&w);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_increase_that_fits_is_charged_once),
                cmocka_unit_test(test_increase_refused_names_the_link),
                cmocka_unit_test(test_decrease_frees_when_in_force),
                cmocka_unit_test(test_two_increases_for_the_last_headroom),
                cmocka_unit_test(test_malformed_requests),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
