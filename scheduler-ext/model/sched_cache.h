/*
 * gantry-scheduler's cache of the Kubernetes objects a pod's demand and its
 * gang are read from: PersistentVolumeClaims, PersistentVolumes and
 * StorageClasses (sched_demand.c), Jobs and PodGroups (gang_size.c). The
 * cluster view (sched_state.c) keeps one and applies the informers' events
 * of those kinds to it; the demand and the gang code only read it, so they
 * need nothing of the cluster view.
 *
 * Thread-safe: informer threads and HTTP threads call in at the same time.
 */
#pragma once

#include <stdbool.h>
#include <jansson.h>

#include "error.h"

/* The kinds gantry-scheduler follows; the cache keeps PVC .. WORKLOAD_POD_GROUP. */
enum gantry_obj_kind {
        GANTRY_OBJ_NODE = 0,
        GANTRY_OBJ_POD,
        GANTRY_OBJ_PVC,
        GANTRY_OBJ_PV,
        GANTRY_OBJ_STORAGE_CLASS,
        GANTRY_OBJ_JOB,       /* batch/v1 Job: a gang's size (gang_size.c) */
        GANTRY_OBJ_POD_GROUP, /* scheduling.x-k8s.io PodGroup: a gang's size */
        GANTRY_OBJ_WORKLOAD_POD_GROUP, /* scheduling.k8s.io PodGroup: Kubernetes' own gang */
        GANTRY_OBJ_ATTRIBUTES_CLASS, /* storage.k8s.io VolumeAttributesClass: rates set live */
        GANTRY_OBJ_KIND_COUNT,
};

/* "Node" -> GANTRY_OBJ_NODE ...; -EINVAL for a kind it does not follow. */
int gantry_sched_obj_kind_parse(const char *kind, enum gantry_obj_kind *ret_kind);

struct gantry_sched_cache;

/* An empty cache. Returns 0 or -ENOMEM. */
int gantry_sched_cache_new(struct gantry_sched_cache **ret_cache);
void gantry_sched_cache_free(struct gantry_sched_cache *c);

/*
 * Keeps (@deleted false) or forgets (@deleted true) one object of a cached
 * kind (PVC, PV, StorageClass, Job, either PodGroup). A Job is kept without its pod
 * template. Returns 0, -EINVAL with @err naming the field of a malformed
 * object, or -ENOMEM.
 */
int gantry_sched_cache_apply(struct gantry_sched_cache *c, enum gantry_obj_kind kind, bool deleted,
                             const json_t *obj, struct gantry_error *err);

/*
 * Looks up a cached object: a PVC, Job or PodGroup by namespace+name, a PV or
 * StorageClass by name (@namespace ignored). Returns a new reference
 * (json_decref it) or NULL.
 */
json_t *gantry_sched_cache_get(struct gantry_sched_cache *c, enum gantry_obj_kind kind,
                               const char *namespace, const char *name);

struct gantry_pending_classes;
/* The bandwidth changes admitted but not yet in force (pending_class.h) that
 * demands computed from this cache count (borrowed; NULL: none). Set before
 * the informers start. */
void gantry_sched_cache_set_pending(struct gantry_sched_cache *c, struct gantry_pending_classes *p);
struct gantry_pending_classes *gantry_sched_cache_pending(struct gantry_sched_cache *c);
