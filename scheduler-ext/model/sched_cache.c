/*
 * The objects a pod's demand and its gang are read from, by kind and key.
 * See sched_cache.h.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "placement.h"
#include "sched_cache.h"
#include "strmap.h"

struct gantry_sched_cache {
        pthread_mutex_t lock;                       /* guards objs */
        struct strmap *objs[GANTRY_OBJ_KIND_COUNT]; /* key -> json_t * (owned) */
        struct gantry_pending_classes *pending;     /* borrowed; may be NULL */
};

void gantry_sched_cache_set_pending(struct gantry_sched_cache *c, struct gantry_pending_classes *p)
{
        c->pending = p;
}

struct gantry_pending_classes *gantry_sched_cache_pending(struct gantry_sched_cache *c)
{
        return c ? c->pending : NULL;
}

static const char *const kind_names[GANTRY_OBJ_KIND_COUNT] = {
        [GANTRY_OBJ_NODE] = "Node",
        [GANTRY_OBJ_POD] = "Pod",
        [GANTRY_OBJ_PVC] = "PersistentVolumeClaim",
        [GANTRY_OBJ_PV] = "PersistentVolume",
        [GANTRY_OBJ_STORAGE_CLASS] = "StorageClass",
        [GANTRY_OBJ_JOB] = "Job",
        [GANTRY_OBJ_POD_GROUP] = "PodGroup",
        [GANTRY_OBJ_WORKLOAD_POD_GROUP] = "PodGroup.scheduling.k8s.io",
        [GANTRY_OBJ_ATTRIBUTES_CLASS] = "VolumeAttributesClass",
};

static bool namespaced(enum gantry_obj_kind kind)
{
        return kind == GANTRY_OBJ_PVC || kind == GANTRY_OBJ_JOB || kind == GANTRY_OBJ_POD_GROUP ||
               kind == GANTRY_OBJ_WORKLOAD_POD_GROUP;
}

int gantry_sched_obj_kind_parse(const char *kind, enum gantry_obj_kind *ret_kind)
{
        for (int k = 0; k < GANTRY_OBJ_KIND_COUNT; k++)
                if (kind && strcmp(kind, kind_names[k]) == 0) {
                        *ret_kind = k;
                        return 0;
                }
        return -EINVAL;
}

int gantry_sched_cache_new(struct gantry_sched_cache **ret_cache)
{
        struct gantry_sched_cache *c = calloc(1, sizeof(*c));
        int r = 0;

        if (!c)
                return -ENOMEM;
        pthread_mutex_init(&c->lock, NULL);
        for (int k = 0; k < GANTRY_OBJ_KIND_COUNT; k++)
                r |= strmap_new(&c->objs[k]);
        if (r) {
                gantry_sched_cache_free(c);
                return -ENOMEM;
        }
        *ret_cache = c;
        return 0;
}

static void value_decref(void *v)
{
        json_decref(v);
}

void gantry_sched_cache_free(struct gantry_sched_cache *c)
{
        if (!c)
                return;
        for (int k = 0; k < GANTRY_OBJ_KIND_COUNT; k++)
                strmap_free_with(c->objs[k], value_decref);
        pthread_mutex_destroy(&c->lock);
        free(c);
}

/* Key of a cached object: "namespace/name" or "name". */
static void obj_key(const char *namespace, const char *name, char *buf, size_t size)
{
        if (namespace)
                snprintf(buf, size, "%s/%s", namespace, name);
        else
                snprintf(buf, size, "%s", name);
}

/* A Job as the gang code reads it: its name and sizes, not its pod template
 * (a cluster may hold thousands of Jobs). */
static json_t *slim_job(const json_t *job)
{
        const json_t *md = json_object_get(job, "metadata"), *spec = json_object_get(job, "spec");

        return json_pack("{s:{s:O*,s:O*},s:{s:O*,s:O*}}", "metadata", "name",
                         json_object_get(md, "name"), "namespace", json_object_get(md, "namespace"),
                         "spec", "parallelism", json_object_get(spec, "parallelism"),
                         "completions", json_object_get(spec, "completions"));
}

int gantry_sched_cache_apply(struct gantry_sched_cache *c, enum gantry_obj_kind kind, bool deleted,
                             const json_t *obj, struct gantry_error *err)
{
        const json_t *md = json_object_get(obj, "metadata");
        const char *name = json_string_value(json_object_get(md, "name"));
        const char *ns = namespaced(kind) ? json_string_value(json_object_get(md, "namespace"))
                                                : NULL;
        char key[2 * GANTRY_PLACEMENT_NAME_MAX + 2];
        json_t *old;
        int r = 0;

        if (!name || !*name || (namespaced(kind) && (!ns || !*ns)))
                return gantry_error_set(err, EINVAL, "%s: metadata.name/namespace: missing",
                                        kind_names[kind]);
        if (strlen(name) > GANTRY_PLACEMENT_NAME_MAX || (ns && strlen(ns) > GANTRY_PLACEMENT_NAME_MAX))
                return gantry_error_set(err, EINVAL, "%s: metadata.name: too long", kind_names[kind]);
        obj_key(ns, name, key, sizeof(key));
        pthread_mutex_lock(&c->lock);
        old = strmap_remove(c->objs[kind], key);
        if (!deleted) {
                json_t *copy = kind == GANTRY_OBJ_JOB ? slim_job(obj) : json_deep_copy(obj);

                if (!copy || strmap_put(c->objs[kind], key, copy) < 0) {
                        json_decref(copy);
                        r = gantry_error_set(err, ENOMEM, "out of memory");
                }
        }
        pthread_mutex_unlock(&c->lock);
        json_decref(old);
        return r;
}

json_t *gantry_sched_cache_get(struct gantry_sched_cache *c, enum gantry_obj_kind kind,
                               const char *namespace, const char *name)
{
        char key[2 * GANTRY_PLACEMENT_NAME_MAX + 2];
        json_t *v;

        if (!name || strlen(name) > GANTRY_PLACEMENT_NAME_MAX ||
            (namespace && strlen(namespace) > GANTRY_PLACEMENT_NAME_MAX))
                return NULL;
        obj_key(namespaced(kind) ? namespace : NULL, name, key, sizeof(key));
        pthread_mutex_lock(&c->lock);
        v = json_incref(strmap_get(c->objs[kind], key));
        pthread_mutex_unlock(&c->lock);
        return v;
}
