/*
 * StorageClass parameters of dataset volumes, decoded by a table.
 *
 * Every key is checked before anything is created: an unknown key (a typo
 * such as "datapool") or a malformed value is refused with the parameter
 * named, so a StorageClass never silently means something else. Keys under
 * csi.storage.k8s.io/ are the provisioner's own and are ignored here.
 */
#include <errno.h>
#include <rbd/features.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bandwidth_class.h"
#include "dataset_internal.h"

static const struct {
        const char *name;
        uint64_t bit;
} features[] = {
        { "layering", RBD_FEATURE_LAYERING },
        { "exclusive-lock", RBD_FEATURE_EXCLUSIVE_LOCK },
        { "object-map", RBD_FEATURE_OBJECT_MAP },
        { "fast-diff", RBD_FEATURE_FAST_DIFF },
        { "deep-flatten", RBD_FEATURE_DEEP_FLATTEN },
};

static int parse_features(const char *text, uint64_t *ret, struct gantry_error *err)
{
        char buf[256], *save = NULL, *tok;
        uint64_t bits = 0;

        if (strlen(text) >= sizeof(buf))
                return gantry_error_set(err, EINVAL, "parameters.imageFeatures: too long");
        strcpy(buf, text);
        for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                size_t i;
                for (i = 0; i < sizeof(features) / sizeof(features[0]); i++)
                        if (strcmp(tok, features[i].name) == 0)
                                break;
                if (i == sizeof(features) / sizeof(features[0]))
                        return gantry_error_set(err, EINVAL,
                                                "parameters.imageFeatures: unknown or unsupported "
                                                "feature \"%s\" (krbd maps layering, exclusive-lock, "
                                                "object-map, fast-diff, deep-flatten)",
                                                tok);
                bits |= features[i].bit;
        }
        if ((bits & RBD_FEATURE_OBJECT_MAP) && !(bits & RBD_FEATURE_EXCLUSIVE_LOCK))
                return gantry_error_set(err, EINVAL,
                                        "parameters.imageFeatures: object-map needs exclusive-lock");
        if ((bits & RBD_FEATURE_FAST_DIFF) && !(bits & RBD_FEATURE_OBJECT_MAP))
                return gantry_error_set(err, EINVAL,
                                        "parameters.imageFeatures: fast-diff needs object-map");
        *ret = bits | RBD_FEATURE_LAYERING; /* clones need layering */
        return 0;
}

/* A power of two from 4 KiB to 32 MiB (RBD's object and stripe sizes). */
static int parse_size(const char *key, const char *text, uint64_t min, uint64_t *ret,
                      struct gantry_error *err)
{
        char *end;
        unsigned long long v = strtoull(text, &end, 10);

        if (*text == '\0' || *end != '\0' || v < min || v > (32ull << 20) || (v & (v - 1)) != 0)
                return gantry_error_set(err, EINVAL,
                                        "parameters.%s: must be a power of two from %llu to 33554432 bytes",
                                        key, (unsigned long long)min);
        *ret = v;
        return 0;
}

static int valid_name(const char *s)
{
        if (!*s || strlen(s) > 100)
                return 0;
        for (; *s; s++)
                if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
                      *s == '-' || *s == '_' || *s == '.'))
                        return 0;
        return 1;
}

int gantry_params_parse_dataset(void *const *entries, size_t n, struct gantry_dataset_params *ret,
                                struct gantry_error *err)
{
        static const char *const known[] = { "tier", "clusterID", "pool", "dataPool",
                                             "imageFeatures", "objectSize", "stripeUnit",
                                             "stripeCount", "fsType", "mkfsOptions",
                                             "mapOptions", NULL };
        struct gantry_dataset_params p = { 0 };
        void *const *e = entries;
        const char *v;
        int r;

        for (size_t i = 0; i < n; i++) {
                const char *key = ((const Csi__V1__CreateVolumeRequest__ParametersEntry *)e[i])->key;
                int ok = strncmp(key, "csi.storage.k8s.io/", 19) == 0 || gantry_bw_class_is_param(key);
                for (const char *const *k = known; *k && !ok; k++)
                        ok = strcmp(*k, key) == 0;
                if (!ok)
                        return gantry_error_set(err, EINVAL, "parameters.%s: unknown parameter", key);
        }
        p.cluster_id = gantry_csi_map_get(e, n, "clusterID");
        if (!p.cluster_id || !*p.cluster_id)
                return gantry_error_set(err, EINVAL, "parameters.clusterID: required");
        p.pool = gantry_csi_map_get(e, n, "pool");
        if (!p.pool || !valid_name(p.pool))
                return gantry_error_set(err, EINVAL,
                                        "parameters.pool: required, a pool name of [A-Za-z0-9._-]");
        p.data_pool = gantry_csi_map_get(e, n, "dataPool");
        if (p.data_pool && !*p.data_pool)
                p.data_pool = NULL; /* "" in a StorageClass: data with the metadata */
        if (p.data_pool && !valid_name(p.data_pool))
                return gantry_error_set(err, EINVAL, "parameters.dataPool: not a pool name");
        p.features_text = gantry_csi_map_get(e, n, "imageFeatures");
        if (!p.features_text)
                p.features_text = "layering";
        if ((r = parse_features(p.features_text, &p.features, err)) < 0)
                return r;
        if ((v = gantry_csi_map_get(e, n, "objectSize")) &&
            (r = parse_size("objectSize", v, 4096, &p.object_size, err)) < 0)
                return r;
        if ((v = gantry_csi_map_get(e, n, "stripeUnit")) &&
            (r = parse_size("stripeUnit", v, 4096, &p.stripe_unit, err)) < 0)
                return r;
        if ((v = gantry_csi_map_get(e, n, "stripeCount"))) {
                char *end;
                unsigned long long c = strtoull(v, &end, 10);
                if (!*v || *end || c < 1 || c > 256)
                        return gantry_error_set(err, EINVAL,
                                                "parameters.stripeCount: must be 1 to 256");
                p.stripe_count = c;
        }
        if (!p.stripe_unit != !p.stripe_count)
                return gantry_error_set(err, EINVAL, "parameters.%s: required with %s",
                                        p.stripe_unit ? "stripeCount" : "stripeUnit",
                                        p.stripe_unit ? "stripeUnit" : "stripeCount");
        if (p.stripe_unit && p.object_size && p.stripe_unit > p.object_size)
                return gantry_error_set(err, EINVAL,
                                        "parameters.stripeUnit: must not exceed objectSize");
        p.fs_type = gantry_csi_map_get(e, n, "fsType");
        if (p.fs_type && strcmp(p.fs_type, "ext4") && strcmp(p.fs_type, "xfs"))
                return gantry_error_set(err, EINVAL, "parameters.fsType: must be ext4 or xfs");
        p.mkfs_options = gantry_csi_map_get(e, n, "mkfsOptions");
        p.map_options = gantry_csi_map_get(e, n, "mapOptions");
        if (p.map_options && (strchr(p.map_options, ' ') || strstr(p.map_options, "secret") ||
                              strstr(p.map_options, "name=")))
                return gantry_error_set(err, EINVAL,
                                        "parameters.mapOptions: a comma-separated krbd option "
                                        "list without spaces, credentials or name=");
        *ret = p;
        return 0;
}

int gantry_params_fingerprint(const struct gantry_dataset_params *p, char *buf, size_t size)
{
        int n = snprintf(buf, size, "pool=%s;dataPool=%s;features=%llx;objectSize=%llu;"
                         "stripe=%llu/%llu",
                         p->pool, p->data_pool ? p->data_pool : "",
                         (unsigned long long)p->features, (unsigned long long)p->object_size,
                         (unsigned long long)p->stripe_unit, (unsigned long long)p->stripe_count);
        return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}
