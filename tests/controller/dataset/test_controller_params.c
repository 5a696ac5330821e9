/* StorageClass parameters of dataset volumes (controller/dataset/params.c): every
 * bad key or value is refused with the parameter named; the fingerprint
 * tells requests apart. */
#include <errno.h>
#include <rbd/features.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "dataset_internal.h"

#define MAX_PARAMS 16

struct params {
        Csi__V1__CreateVolumeRequest__ParametersEntry e[MAX_PARAMS];
        void *p[MAX_PARAMS];
        size_t n;
};

/* Builds a map from "key", "value", ..., NULL. */
static void build(struct params *m, ...)
{
        va_list ap;
        const char *k;

        memset(m, 0, sizeof(*m));
        va_start(ap, m);
        while ((k = va_arg(ap, const char *)) && m->n < MAX_PARAMS) {
                m->e[m->n].key = (char *)k;
                m->e[m->n].value = va_arg(ap, char *);
                m->p[m->n] = &m->e[m->n];
                m->n++;
        }
        va_end(ap);
}

static int parse(struct params *m, struct gantry_dataset_params *ret, struct gantry_error *err)
{
        return gantry_params_parse_dataset(m->p, m->n, ret, err);
}

static void test_good(void **state)
{
        struct params m;
        struct gantry_dataset_params p;
        struct gantry_error err = { 0 };

        (void)state;
        build(&m, "clusterID", "nvme", "pool", "rbd", "dataPool", "ecdata", "imageFeatures",
              "layering,exclusive-lock,object-map,fast-diff", "objectSize", "8388608", "stripeUnit",
              "65536", "stripeCount", "4", "fsType", "xfs", "mapOptions", "ms_mode=crc",
              "csi.storage.k8s.io/pvc/name", "data", NULL);
        assert_int_equal(parse(&m, &p, &err), 0);
        assert_string_equal(p.pool, "rbd");
        assert_string_equal(p.data_pool, "ecdata");
        assert_int_equal(p.object_size, 8388608);
        assert_int_equal(p.stripe_count, 4);
        assert_true(p.features & RBD_FEATURE_FAST_DIFF);
        build(&m, "clusterID", "nvme", "pool", "rbd", "dataPool", "", NULL);
        assert_int_equal(parse(&m, &p, &err), 0);
        /* the bandwidth parameters are the node's (checked by CreateVolume) */
        build(&m, "clusterID", "nvme", "pool", "rbd", "bandwidthPolicy", "burst",
              "bandwidthBurstFactor", "1.5", "bandwidthReadIOPS", "2000",
              "gantry.io/read-gbps-per-gpu", "3", "gantry.io/default-gbps", "1", NULL);
        assert_int_equal(parse(&m, &p, &err), 0);
        build(&m, "clusterID", "nvme", "pool", "rbd", "dataPool", "", NULL);
        assert_int_equal(parse(&m, &p, &err), 0);
        assert_null(p.data_pool);
        assert_int_equal(p.features, RBD_FEATURE_LAYERING);
}

static void test_bad_named(void **state)
{
        static const struct {
                const char *k1, *v1, *field;
        } cases[] = {
                { "datapool", "ecdata", "parameters.datapool" },
                { "objectSize", "3000", "parameters.objectSize" },
                { "objectSize", "67108864", "parameters.objectSize" },
                { "imageFeatures", "journaling", "parameters.imageFeatures" },
                { "imageFeatures", "object-map", "parameters.imageFeatures" },
                { "stripeUnit", "65536", "parameters.stripeCount" },
                { "stripeCount", "0", "parameters.stripeCount" },
                { "fsType", "btrfs", "parameters.fsType" },
                { "mapOptions", "secret=AQB", "parameters.mapOptions" },
                { "dataPool", "a b", "parameters.dataPool" },
        };
        struct params m;
        struct gantry_dataset_params p;

        (void)state;
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct gantry_error err = { 0 };
                build(&m, "clusterID", "nvme", "pool", "rbd", cases[i].k1, cases[i].v1, NULL);
                assert_int_equal(parse(&m, &p, &err), -EINVAL);
                assert_non_null(strstr(err.msg, cases[i].field));
        }
        {
                struct gantry_error err = { 0 };
                build(&m, "pool", "rbd", NULL);
                assert_int_equal(parse(&m, &p, &err), -EINVAL);
                assert_non_null(strstr(err.msg, "parameters.clusterID"));
                build(&m, "clusterID", "nvme", NULL);
                assert_int_equal(parse(&m, &p, &err), -EINVAL);
                assert_non_null(strstr(err.msg, "parameters.pool"));
        }
}

static void test_fingerprint_tells_apart(void **state)
{
        struct params m;
        struct gantry_dataset_params p;
        struct gantry_error err = { 0 };
        char a[400], b[400];

        (void)state;
        build(&m, "clusterID", "nvme", "pool", "rbd", "dataPool", "ecdata", NULL);
        assert_int_equal(parse(&m, &p, &err), 0);
        assert_int_equal(gantry_params_fingerprint(&p, a, sizeof(a)), 0);
        build(&m, "clusterID", "nvme", "pool", "rbd", NULL);
        assert_int_equal(parse(&m, &p, &err), 0);
        assert_int_equal(gantry_params_fingerprint(&p, b, sizeof(b)), 0);
        assert_string_not_equal(a, b);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_good),
                cmocka_unit_test(test_bad_named),
                cmocka_unit_test(test_fingerprint_tells_apart),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
