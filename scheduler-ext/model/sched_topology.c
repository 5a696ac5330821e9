/*
 * The topology file: leaves, backends, defaults and score weights, checked
 * key by key and applied to the cluster model. See sched_topology.h.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "sched_topology.h"

/* Every key of @obj must be in @allowed (NULL-terminated). */
static int check_keys(const json_t *obj, const char *const *allowed, const char *where,
                      struct gantry_error *err)
{
        const char *key;
        json_t *v;

        if (!json_is_object(obj))
                return gantry_error_set(err, EINVAL, "%s: must be an object", where);
        json_object_foreach((json_t *)obj, key, v) {
                const char *const *a;

                for (a = allowed; *a && strcmp(*a, key); a++)
                        ;
                if (!*a)
                        return gantry_error_set(err, EINVAL, "%s.%s: unknown key", where, key);
        }
        return 0;
}

static int get_number(const json_t *obj, const char *key, const char *where, double *ret,
                      struct gantry_error *err)
{
        const json_t *v = json_object_get(obj, key);

        if (!v)
                return 0;
        if (!json_is_number(v) || json_number_value(v) < 0)
                return gantry_error_set(err, EINVAL, "%s.%s: must be a number >= 0", where, key);
        *ret = json_number_value(v);
        return 0;
}

static int get_string(const json_t *obj, const char *key, const char *where, const char **ret,
                      struct gantry_error *err)
{
        const json_t *v = json_object_get(obj, key);

        if (!v)
                return 0;
        if (!json_is_string(v) || !*json_string_value(v))
                return gantry_error_set(err, EINVAL, "%s.%s: must be a non-empty string", where, key);
        *ret = json_string_value(v);
        return 0;
}

static int load_leaf(struct gantry_sched_state *st, const json_t *o, const char *where,
                     struct gantry_error *err)
{
        static const char *const keys[] = { "name", "spine", "uplinkGbps", "oversubscription", NULL };
        struct gantry_leaf_spec s = { 0 };
        int r;

        if ((r = check_keys(o, keys, where, err)) < 0 ||
            (r = get_string(o, "name", where, &s.name, err)) < 0 ||
            (r = get_string(o, "spine", where, &s.spine, err)) < 0 ||
            (r = get_number(o, "uplinkGbps", where, &s.uplink_gbps, err)) < 0 ||
            (r = get_number(o, "oversubscription", where, &s.oversubscription, err)) < 0)
                return r;
        if (!s.name)
                return gantry_error_set(err, EINVAL, "%s.name: required", where);
        if ((r = gantry_cluster_set_leaf(gantry_sched_state_cluster(st), &s, err)) < 0)
                return gantry_error_prefix(err, where);
        return gantry_sched_state_declare_leaf(st, s.name);
}

static int load_backend(struct gantry_sched_state *st, const json_t *o, const char *where,
                        struct gantry_error *err)
{
        static const char *const keys[] = { "name", "kind", "gbps", "leaves", "transport",
                                            "sameLeafOnly", NULL };
        const char *leaves[GANTRY_PLACEMENT_MAX_ATTACH];
        struct gantry_backend_spec s = { .leaves = leaves };
        const char *kind = NULL, *transport = NULL;
        const json_t *arr = json_object_get(o, "leaves"), *v, *same;
        size_t i;
        int r;

        if ((r = check_keys(o, keys, where, err)) < 0 ||
            (r = get_string(o, "name", where, &s.name, err)) < 0 ||
            (r = get_string(o, "kind", where, &kind, err)) < 0 ||
            (r = get_string(o, "transport", where, &transport, err)) < 0 ||
            (r = get_number(o, "gbps", where, &s.gbps, err)) < 0)
                return r;
        if (!s.name)
                return gantry_error_set(err, EINVAL, "%s.name: required", where);
        if (!kind || (strcmp(kind, "ceph") && strcmp(kind, "nvmeof")))
                return gantry_error_set(err, EINVAL, "%s.kind: must be \"ceph\" or \"nvmeof\"", where);
        s.kind = !strcmp(kind, "ceph") ? GANTRY_BACKEND_CEPH : GANTRY_BACKEND_NVMEOF;
        if (transport && strcmp(transport, "tcp") && strcmp(transport, "rdma"))
                return gantry_error_set(err, EINVAL, "%s.transport: must be \"tcp\" or \"rdma\"", where);
        s.transport = transport && !strcmp(transport, "rdma") ? GANTRY_TRANSPORT_RDMA
                                                             : GANTRY_TRANSPORT_TCP;
        same = json_object_get(o, "sameLeafOnly");
        if (same && !json_is_boolean(same))
                return gantry_error_set(err, EINVAL, "%s.sameLeafOnly: must be true or false", where);
        s.same_leaf_only = json_is_true(same);
        if (arr && (!json_is_array(arr) || json_array_size(arr) > GANTRY_PLACEMENT_MAX_ATTACH))
                return gantry_error_set(err, EINVAL, "%s.leaves: must be an array of at most %d names",
                                        where, GANTRY_PLACEMENT_MAX_ATTACH);
        json_array_foreach(arr, i, v) {
                if (!json_is_string(v) || !*json_string_value(v))
                        return gantry_error_set(err, EINVAL, "%s.leaves[%zu]: must be a non-empty string",
                                                where, i);
                leaves[i] = json_string_value(v);
        }
        s.n_leaves = arr ? json_array_size(arr) : 0;
        if ((r = gantry_cluster_set_backend(gantry_sched_state_cluster(st), &s, err)) < 0)
                return gantry_error_prefix(err, where);
        return 0;
}

/* One level's keys: a non-empty array of label keys, in order of precedence. */
static int load_label_keys(const json_t *o, const char *where,
                           char (*keys)[GANTRY_SCHED_LABEL_KEY_MAX], struct gantry_error *err)
{
        const json_t *v;
        size_t i;

        if (!o)
                return 0;
        if (!json_is_array(o) || json_array_size(o) == 0 ||
            json_array_size(o) > GANTRY_SCHED_LABEL_KEYS)
                return gantry_error_set(err, EINVAL, "labels.%s: must be an array of 1 to %d label keys",
                                        where, GANTRY_SCHED_LABEL_KEYS);
        json_array_foreach(o, i, v) {
                const char *k = json_string_value(v);
                size_t n = k ? strlen(k) : 0, j;

                if (n == 0 || n >= GANTRY_SCHED_LABEL_KEY_MAX)
                        return gantry_error_set(err, EINVAL, "labels.%s[%zu]: must be a label key of "
                                                "1 to %d characters", where, i,
                                                GANTRY_SCHED_LABEL_KEY_MAX - 1);
                for (j = 0; j < n; j++)
                        if (!isalnum((unsigned char)k[j]) && !strchr("-_./", k[j]))
                                return gantry_error_set(err, EINVAL, "labels.%s[%zu]: not a label "
                                                        "key (letters, digits, '-', '_', '.', '/')",
                                                        where, i);
                memcpy(keys[i], k, n + 1);
        }
        return 0;
}

/* "labels": which node labels name a node's leaf, spine and accelerator domain. */
static int load_labels(const json_t *o, struct gantry_sched_label_keys *ret, struct gantry_error *err)
{
        static const char *const keys[] = { "leaf", "spine", "accelerator", NULL };
        int r;

        if ((r = check_keys(o, keys, "labels", err)) < 0 ||
            (r = load_label_keys(json_object_get(o, "leaf"), "leaf", ret->leaf, err)) < 0 ||
            (r = load_label_keys(json_object_get(o, "spine"), "spine", ret->spine, err)) < 0 ||
            (r = load_label_keys(json_object_get(o, "accelerator"), "accelerator", ret->accelerator,
                                 err)) < 0)
                return r;
        return 0;
}

static int load_root(struct gantry_sched_state *st, const json_t *root, struct gantry_error *err)
{
        static const char *const keys[] = { "defaults", "labels", "weights", "leaves", "backends",
                                            NULL };
        static const char *const dkeys[] = { "nicGbps", "oversubscription", NULL };
        static const char *const wkeys[] = { "locality", "headroom", "closeness", NULL };
        const json_t *o, *v;
        char where[64];
        size_t i;
        int r;

        if ((r = check_keys(root, keys, "topology", err)) < 0)
                return r;
        if (json_object_get(root, "defaults") || json_object_get(root, "labels")) {
                struct gantry_sched_defaults d = { 0 };

                if ((o = json_object_get(root, "defaults")) &&
                    ((r = check_keys(o, dkeys, "defaults", err)) < 0 ||
                     (r = get_number(o, "nicGbps", "defaults", &d.nic_gbps, err)) < 0 ||
                     (r = get_number(o, "oversubscription", "defaults", &d.oversubscription, err)) < 0))
                        return r;
                if ((o = json_object_get(root, "labels")) && (r = load_labels(o, &d.labels, err)) < 0)
                        return r;
                gantry_sched_state_set_defaults(st, &d);
        }
        if ((o = json_object_get(root, "weights"))) {
                struct gantry_score_weights w = { .locality = 5, .headroom = 3, .closeness = 2 };

                if ((r = check_keys(o, wkeys, "weights", err)) < 0 ||
                    (r = get_number(o, "locality", "weights", &w.locality, err)) < 0 ||
                    (r = get_number(o, "headroom", "weights", &w.headroom, err)) < 0 ||
                    (r = get_number(o, "closeness", "weights", &w.closeness, err)) < 0)
                        return r;
                gantry_cluster_set_weights(gantry_sched_state_cluster(st), &w);
        }
        if ((o = json_object_get(root, "leaves")) && !json_is_array(o))
                return gantry_error_set(err, EINVAL, "leaves: must be an array");
        json_array_foreach(o, i, v) {
                snprintf(where, sizeof(where), "leaves[%zu]", i);
                if ((r = load_leaf(st, v, where, err)) < 0)
                        return r;
        }
        if ((o = json_object_get(root, "backends")) && !json_is_array(o))
                return gantry_error_set(err, EINVAL, "backends: must be an array");
        json_array_foreach(o, i, v) {
                snprintf(where, sizeof(where), "backends[%zu]", i);
                if ((r = load_backend(st, v, where, err)) < 0)
                        return r;
        }
        return 0;
}

int gantry_sched_topology_parse(struct gantry_sched_state *st, const char *json,
                                const char *origin, struct gantry_error *err)
{
        json_error_t jerr;
        json_t *root = json_loads(json, JSON_REJECT_DUPLICATES, &jerr);
        int r;

        if (!root)
                return gantry_error_set(err, EINVAL, "%s: line %d: %s", origin, jerr.line, jerr.text);
        r = load_root(st, root, err);
        json_decref(root);
        return r < 0 ? gantry_error_prefix(err, origin) : 0;
}

int gantry_sched_topology_load(struct gantry_sched_state *st, const char *path,
                               struct gantry_error *err)
{
        json_error_t jerr;
        json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
        int r;

        if (!root)
                return gantry_error_set(err, EINVAL, "%s: line %d: %s", path, jerr.line, jerr.text);
        r = load_root(st, root, err);
        json_decref(root);
        return r < 0 ? gantry_error_prefix(err, path) : 0;
}
