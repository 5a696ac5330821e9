/*
 * Unit tests of where a gang's size and identity come from
 * (scheduler-ext/model/gang_size.c), over a real object cache: Kubernetes'
 * own PodGroup (scheduling.k8s.io, spec.schedulingGroup) first after the
 * annotation, its basic policy no gang, then the Job, scheduler-plugins'
 * PodGroup and Kueue, in that order.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include <jansson.h>

#include "gang_size.h"
#include "sched_cache.h"

static int setup(void **state)
{
        struct gantry_sched_cache *c;

        if (gantry_sched_cache_new(&c) < 0)
                return -1;
        *state = c;
        return 0;
}

static int teardown(void **state)
{
        gantry_sched_cache_free(*state);
        return 0;
}

static void keep(struct gantry_sched_cache *c, enum gantry_obj_kind kind, const char *text)
{
        json_t *o = json_loads(text, 0, NULL);
        struct gantry_error err = { 0 };

        assert_non_null(o);
        assert_int_equal(gantry_sched_cache_apply(c, kind, false, o, &err), 0);
        json_decref(o);
}

/* The gang of @pod_text in namespace "ml": its size, or 0 when none. */
static int gang_of(struct gantry_sched_cache *c, const char *pod_text, const char *job_key,
                   char *key, size_t size)
{
        json_t *pod = json_loads(pod_text, 0, NULL);
        struct gantry_error err = { 0 };
        bool spread = false;
        int n = 0, r;

        assert_non_null(pod);
        r = gantry_sched_gang_of_pod(c, pod, "ml", job_key, key, size, &n, &spread, &err);
        json_decref(pod);
        assert_true(r >= 0);
        return r == 1 ? n : 0;
}

#define POD_OF_JOB_IN_GROUP                                                                  \
        "{\"metadata\":{\"name\":\"w-0\",\"ownerReferences\":[{\"kind\":\"Job\",\"name\":\"train\"," \
        "\"controller\":true}]},\"spec\":{\"schedulingGroup\":{\"podGroupName\":\"train-pg\"}}}"

static void test_workload_pod_group_sizes_the_gang(void **state)
{
        struct gantry_sched_cache *c = *state;
        char key[256];

        keep(c, GANTRY_OBJ_JOB, "{\"metadata\":{\"name\":\"train\",\"namespace\":\"ml\"},"
                                "\"spec\":{\"parallelism\":8,\"completions\":8}}");
        /* the PodGroup not seen yet: the Job's parallelism */
        assert_int_equal(gang_of(c, POD_OF_JOB_IN_GROUP, "", key, sizeof(key)), 8);
        assert_string_equal(key, "ml/Job/train");
        /* kube-scheduler's own gang: its minCount, keyed by the PodGroup */
        keep(c, GANTRY_OBJ_WORKLOAD_POD_GROUP,
             "{\"metadata\":{\"name\":\"train-pg\",\"namespace\":\"ml\"},"
             "\"spec\":{\"schedulingPolicy\":{\"gang\":{\"minCount\":6}}}}");
        assert_int_equal(gang_of(c, POD_OF_JOB_IN_GROUP, "", key, sizeof(key)), 6);
        assert_string_equal(key, "ml/PodGroup.scheduling.k8s.io/train-pg");
        /* gantry.io/job still names the gang */
        assert_int_equal(gang_of(c, POD_OF_JOB_IN_GROUP, "ml/mine", key, sizeof(key)), 6);
        assert_string_equal(key, "ml/mine");
}

static void test_basic_policy_is_no_gang(void **state)
{
        struct gantry_sched_cache *c = *state;
        char key[256];

        keep(c, GANTRY_OBJ_WORKLOAD_POD_GROUP,
             "{\"metadata\":{\"name\":\"loose\",\"namespace\":\"ml\"},"
             "\"spec\":{\"schedulingPolicy\":{\"basic\":{}}}}");
        assert_int_equal(gang_of(c, "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"schedulingGroup\":"
                                    "{\"podGroupName\":\"loose\"}}}", "", key, sizeof(key)), 0);
        /* the same name in another namespace is another PodGroup */
        keep(c, GANTRY_OBJ_WORKLOAD_POD_GROUP,
             "{\"metadata\":{\"name\":\"g\",\"namespace\":\"other\"},"
             "\"spec\":{\"schedulingPolicy\":{\"gang\":{\"minCount\":4}}}}");
        assert_int_equal(gang_of(c, "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"schedulingGroup\":"
                                    "{\"podGroupName\":\"g\"}}}", "", key, sizeof(key)), 0);
}

static void test_annotation_sizes_the_pod_group(void **state)
{
        struct gantry_sched_cache *c = *state;
        char key[256];

        assert_int_equal(gang_of(c, "{\"metadata\":{\"name\":\"p\",\"annotations\":"
                                    "{\"gantry.io/job-size\":\"3\"}},\"spec\":{\"schedulingGroup\":"
                                    "{\"podGroupName\":\"pg\"}}}", "", key, sizeof(key)), 3);
        assert_string_equal(key, "ml/PodGroup.scheduling.k8s.io/pg");
}

static void test_other_sources_in_order(void **state)
{
        struct gantry_sched_cache *c = *state;
        char key[256];

        keep(c, GANTRY_OBJ_POD_GROUP, "{\"metadata\":{\"name\":\"spg\",\"namespace\":\"ml\"},"
                                      "\"spec\":{\"minMember\":5}}");
        assert_int_equal(gang_of(c, "{\"metadata\":{\"name\":\"p\",\"labels\":"
                                    "{\"scheduling.x-k8s.io/pod-group\":\"spg\"}}}", "", key,
                                 sizeof(key)), 5);
        assert_string_equal(key, "ml/PodGroup/spg");
        assert_int_equal(gang_of(c, "{\"metadata\":{\"name\":\"p\",\"labels\":"
                                    "{\"kueue.x-k8s.io/pod-group-name\":\"kg\"},\"annotations\":"
                                    "{\"kueue.x-k8s.io/pod-group-total-count\":\"7\"}}}", "", key,
                                 sizeof(key)), 7);
        assert_string_equal(key, "ml/KueueGroup/kg");
        /* no source at all: no gang */
        assert_int_equal(gang_of(c, "{\"metadata\":{\"name\":\"p\"}}", "", key, sizeof(key)), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_workload_pod_group_sizes_the_gang, setup, teardown),
                cmocka_unit_test_setup_teardown(test_basic_policy_is_no_gang, setup, teardown),
                cmocka_unit_test_setup_teardown(test_annotation_sizes_the_pod_group, setup, teardown),
                cmocka_unit_test_setup_teardown(test_other_sources_in_order, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
