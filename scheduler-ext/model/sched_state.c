/*
 * gantry-scheduler's cluster view: Kubernetes objects in, the placement
 * library's model and ledger out. See sched_state.h.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "gang.h"
#include "pending_class.h"
#include "sched_demand.h"
#include "sched_state.h"
#include "strmap.h"

#define REMEMBERED_PODS_MAX 4096
#define DELETED_PODS_MAX 4096

struct gantry_sched_state {
        struct gantry_cluster *cluster;
        pthread_mutex_t lock; /* guards everything below */
        struct gantry_sched_defaults defaults;
        struct strmap *declared_leaves;             /* leaf -> (void *)1 */
        struct gantry_sched_cache *cache;           /* has its own lock */
        /* pods remembered from filter requests: a ring of UIDs */
        char *remembered[REMEMBERED_PODS_MAX];
        size_t next_remembered;
        struct strmap *remembered_pods; /* uid -> json_t * */
        /* pods the watch showed deleted lately: a ring of UIDs, so that a
         * filter arriving after the DELETED (kube-scheduler popped the pod
         * before its own informer saw it go) reserves nothing for it */
        char *deleted[DELETED_PODS_MAX];
        size_t next_deleted;
        struct strmap *deleted_pods; /* uid -> (void *)1 */
        /* pods bound to a node the model does not have yet, recorded when
         * the node appears: node name -> json object { uid: pod } */
        struct strmap *waiting_pods;
        /* held (before lock) while the pods waiting for a node are recorded
         * and while a pod's DELETED is applied, so that a pod deleted as its
         * node appears is never recorded after its release */
        pthread_mutex_t waiting_lock;
        struct gantry_gangs *gangs; /* borrowed; may be NULL */
        struct gantry_sched_backends *backends; /* borrowed; may be NULL */
        /* bound pods with a PVC the watch showed: uid -> pod, so that a
         * volume's live bandwidth change finds the pods it applies to */
        json_t *bound_pods;
        struct gantry_pending_classes *pending; /* changes admitted, not yet in force */
};

void gantry_sched_state_set_backends(struct gantry_sched_state *st, struct gantry_sched_backends *b)
{
        st->backends = b;
}

struct gantry_sched_backends *gantry_sched_state_backends(struct gantry_sched_state *st)
{
        return st->backends;
}

void gantry_sched_state_set_gangs(struct gantry_sched_state *st, struct gantry_gangs *gangs)
{
        st->gangs = gangs;
}

int gantry_sched_state_new(struct gantry_cluster *cluster, struct gantry_sched_state **ret_state)
{
        struct gantry_sched_state *st = calloc(1, sizeof(*st));
        int r = 0;

        if (!st)
                return -ENOMEM;
        st->cluster = cluster;
        pthread_mutex_init(&st->lock, NULL);
        pthread_mutex_init(&st->waiting_lock, NULL);
        r |= strmap_new(&st->declared_leaves);
        r |= strmap_new(&st->remembered_pods);
        r |= strmap_new(&st->deleted_pods);
        r |= strmap_new(&st->waiting_pods);
        r |= gantry_sched_cache_new(&st->cache);
        r |= gantry_pending_classes_new(&st->pending);
        if (!r && !(st->bound_pods = json_object()))
                r = -ENOMEM;
        if (r) {
                gantry_sched_state_free(st);
                return -ENOMEM;
        }
        gantry_sched_cache_set_pending(st->cache, st->pending);
        *ret_state = st;
        return 0;
}

static void value_decref(void *v)
{
        json_decref(v);
}

void gantry_sched_state_free(struct gantry_sched_state *st)
{
        if (!st)
                return;
        gantry_sched_cache_free(st->cache);
        gantry_pending_classes_free(st->pending);
        json_decref(st->bound_pods);
        strmap_free_with(st->remembered_pods, value_decref);
        strmap_free(st->deleted_pods);
        for (size_t i = 0; i < DELETED_PODS_MAX; i++)
                free(st->deleted[i]);
        strmap_free_with(st->waiting_pods, value_decref);
        for (size_t i = 0; i < REMEMBERED_PODS_MAX; i++)
                free(st->remembered[i]);
        strmap_free(st->declared_leaves);
        pthread_mutex_destroy(&st->lock);
        pthread_mutex_destroy(&st->waiting_lock);
        free(st);
}

struct gantry_cluster *gantry_sched_state_cluster(struct gantry_sched_state *st)
{
        return st->cluster;
}

struct gantry_sched_cache *gantry_sched_state_cache(struct gantry_sched_state *st)
{
        return st->cache;
}

void gantry_sched_state_set_defaults(struct gantry_sched_state *st,
                                     const struct gantry_sched_defaults *d)
{
        pthread_mutex_lock(&st->lock);
        st->defaults = *d;
        pthread_mutex_unlock(&st->lock);
}

int gantry_sched_state_declare_leaf(struct gantry_sched_state *st, const char *leaf)
{
        int r;

        pthread_mutex_lock(&st->lock);
        r = strmap_put(st->declared_leaves, leaf, (void *)1);
        pthread_mutex_unlock(&st->lock);
        return r;
}

/* Parses a Gbps label / annotation: a finite number >= 0. */
int gantry_sched_parse_gbps(const char *field, const char *s, double *ret, struct gantry_error *err)
{
        return gantry_bw_parse_gbps(field, s, ret, err);
}

/* A Kubernetes quantity of whole units ("4", 4); 0 when absent. */
int gantry_sched_parse_count(const char *field, const json_t *q, int *ret, struct gantry_error *err)
{
        return gantry_bw_parse_count(field, q, ret, err);
}

/* Topograph v1's keys first: a node being relabelled may carry both. */
static const char *const default_leaf_keys[] = { GANTRY_LABEL_LEAF_V1, GANTRY_LABEL_LEAF, NULL };
static const char *const default_spine_keys[] = { GANTRY_LABEL_SPINE_V1, GANTRY_LABEL_SPINE, NULL };
static const char *const default_accelerator_keys[] = { GANTRY_LABEL_ACCELERATOR_V1,
                                                        GANTRY_LABEL_ACCELERATOR, NULL };

/* The value of the first of @keys that @labels has (@fallback when @keys
 * names none), or NULL. */
static const char *topology_label(const json_t *labels,
                                  const char (*keys)[GANTRY_SCHED_LABEL_KEY_MAX],
                                  const char *const *fallback)
{
        const char *v;

        if (keys && keys[0][0]) {
                for (int i = 0; i < GANTRY_SCHED_LABEL_KEYS && keys[i][0]; i++)
                        if ((v = json_string_value(json_object_get(labels, keys[i]))))
                                return v;
                return NULL;
        }
        for (; *fallback; fallback++)
                if ((v = json_string_value(json_object_get(labels, *fallback))))
                        return v;
        return NULL;
}

int gantry_sched_node_spec(const json_t *node, const struct gantry_sched_defaults *defaults,
                           struct gantry_node_spec *ret_spec, struct gantry_error *err)
{
        const json_t *labels = json_object_get(json_object_get(node, "metadata"), "labels");
        const char *name = json_string_value(json_object_get(json_object_get(node, "metadata"), "name"));
        const struct gantry_sched_label_keys *k = defaults ? &defaults->labels : NULL;
        const char *nic, *tr;
        struct gantry_node_spec s = { .name = name };
        int r;

        if (!name || !*name)
                return gantry_error_set(err, EINVAL, "Node: metadata.name: must be a non-empty string");
        if (labels && !json_is_object(labels))
                return gantry_error_set(err, EINVAL, "Node %s: metadata.labels: must be an object", name);
        s.leaf = topology_label(labels, k ? k->leaf : NULL, default_leaf_keys);
        s.spine = topology_label(labels, k ? k->spine : NULL, default_spine_keys);
        s.accelerator = topology_label(labels, k ? k->accelerator : NULL, default_accelerator_keys);
        s.nic_gbps = defaults ? defaults->nic_gbps : 0;
        nic = json_string_value(json_object_get(labels, GANTRY_LABEL_NIC_GBPS));
        if (nic && (r = gantry_sched_parse_gbps("Node label " GANTRY_LABEL_NIC_GBPS, nic,
                                                &s.nic_gbps, err)) < 0)
                return gantry_error_prefix(err, name);
        tr = json_string_value(json_object_get(labels, GANTRY_LABEL_TRANSPORTS));
        if (tr) {
                char buf[64], *save = NULL, *t;

                snprintf(buf, sizeof(buf), "%s", tr);
                for (t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                        if (!strcmp(t, "tcp"))
                                s.transports |= GANTRY_TRANSPORT_TCP;
                        else if (!strcmp(t, "rdma"))
                                s.transports |= GANTRY_TRANSPORT_RDMA;
                        else
                                return gantry_error_set(err, EINVAL,
                                                        "Node %s: label " GANTRY_LABEL_TRANSPORTS
                                                        ": unknown transport \"%.16s\" (tcp, rdma)",
                                                        name, t);
                }
        }
        r = gantry_sched_parse_count(
                "Node status.allocatable[nvidia.com/gpu]",
                json_object_get(json_object_get(json_object_get(node, "status"), "allocatable"),
                                GANTRY_RESOURCE_GPU),
                &s.gpus, err);
        if (r < 0)
                return gantry_error_prefix(err, name);
        *ret_spec = s;
        return 0;
}

static void record_waiting_pods(struct gantry_sched_state *st, const char *node);

static int apply_node(struct gantry_sched_state *st, bool deleted, const json_t *obj,
                      struct gantry_error *err)
{
        const char *name = json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
        struct gantry_node_spec spec;
        struct gantry_sched_defaults defaults;
        bool declare = false;
        int r;

        if (deleted) {
                /* by name alone: a tombstone's labels need not parse */
                if (!name || !*name)
                        return gantry_error_set(err, EINVAL, "Node: metadata.name: must be a non-empty string");
                gantry_cluster_remove_node(st->cluster, name);
                return 0;
        }
        pthread_mutex_lock(&st->lock);
        defaults = st->defaults;
        pthread_mutex_unlock(&st->lock);
        if ((r = gantry_sched_node_spec(obj, &defaults, &spec, err)) < 0)
                return r;
        if (spec.leaf && *spec.leaf && defaults.oversubscription > 0) {
                pthread_mutex_lock(&st->lock);
                declare = !strmap_get(st->declared_leaves, spec.leaf);
                pthread_mutex_unlock(&st->lock);
        }
        if (declare) {
                /* a leaf the topology file does not describe: the default ratio */
                r = gantry_cluster_set_leaf(st->cluster, &(struct gantry_leaf_spec){
                        .name = spec.leaf, .spine = spec.spine,
                        .oversubscription = defaults.oversubscription }, err);
                if (r < 0)
                        return r;
                gantry_sched_state_declare_leaf(st, spec.leaf);
        }
        if ((r = gantry_cluster_set_node(st->cluster, &spec, err)) < 0)
                return r;
        record_waiting_pods(st, spec.name);
        return 0;
}

/* Keeps (@pod) or forgets (NULL) pod @uid as waiting for @node. */
static void set_waiting_pod(struct gantry_sched_state *st, const char *node, const char *uid,
                            const json_t *pod)
{
        json_t *pods, *copy = pod ? json_deep_copy(pod) : NULL;

        pthread_mutex_lock(&st->lock);
        pods = strmap_get(st->waiting_pods, node);
        if (copy && !pods && (pods = json_object()) && strmap_put(st->waiting_pods, node, pods) < 0) {
                json_decref(pods);
                pods = NULL;
        }
        if (pods && copy)
                json_object_set_new(pods, uid, copy);
        else if (pods)
                json_object_del(pods, uid);
        else
                json_decref(copy);
        if (pods && json_object_size(pods) == 0)
                json_decref(strmap_remove(st->waiting_pods, node));
        pthread_mutex_unlock(&st->lock);
}

/* Records the pods that were waiting for @node (now in the model). */
static void record_waiting_pods(struct gantry_sched_state *st, const char *node)
{
        struct gantry_sched_demand d;
        struct gantry_error err;
        const char *uid;
        json_t *pods, *pod;

        pthread_mutex_lock(&st->waiting_lock);
        pthread_mutex_lock(&st->lock);
        pods = strmap_remove(st->waiting_pods, node);
        pthread_mutex_unlock(&st->lock);
        json_object_foreach(pods, uid, pod) {
                if (gantry_sched_demand_from_pod(st->cache, pod, &d, &err) == 0)
                        gantry_cluster_record(st->cluster, &d.d, node, &err);
        }
        pthread_mutex_unlock(&st->waiting_lock);
        json_decref(pods);
}

static void remember(struct gantry_sched_state *st, const json_t *pod, bool add);

/* Notes @uid deleted, forgetting the oldest such note when the ring is full. */
void gantry_sched_state_note_deleted(struct gantry_sched_state *st, const char *uid)
{
        char *copy = strdup(uid), **slot;

        if (!copy)
                return;
        pthread_mutex_lock(&st->lock);
        if (strmap_get(st->deleted_pods, uid) || strmap_put(st->deleted_pods, uid, (void *)1) < 0) {
                pthread_mutex_unlock(&st->lock);
                free(copy);
                return;
        }
        slot = &st->deleted[st->next_deleted];
        if (*slot)
                strmap_remove(st->deleted_pods, *slot);
        free(*slot);
        *slot = copy;
        st->next_deleted = (st->next_deleted + 1) % DELETED_PODS_MAX;
        pthread_mutex_unlock(&st->lock);
}

bool gantry_sched_state_pod_deleted(struct gantry_sched_state *st, const char *uid)
{
        bool r;

        if (!uid)
                return false;
        pthread_mutex_lock(&st->lock);
        r = strmap_get(st->deleted_pods, uid) != NULL;
        pthread_mutex_unlock(&st->lock);
        return r;
}

static bool pod_finished(const json_t *pod)
{
        const char *phase = json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));

        return phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed"));
}

/* Whether @pod mounts a PersistentVolumeClaim (of any driver). */
static bool has_claim(const json_t *pod)
{
        const json_t *vols = json_object_get(json_object_get(pod, "spec"), "volumes"), *v;
        size_t i;

        json_array_foreach(vols, i, v)
                if (json_object_get(v, "persistentVolumeClaim"))
                        return true;
        return false;
}

/* Keeps (@pod with a claim) or forgets (NULL, or no claim) bound pod @uid. */
static void set_bound_pod(struct gantry_sched_state *st, const char *uid, const json_t *pod)
{
        json_t *copy = pod && has_claim(pod) ? json_deep_copy(pod) : NULL;

        pthread_mutex_lock(&st->lock);
        if (copy)
                json_object_set_new(st->bound_pods, uid, copy);
        else
                json_object_del(st->bound_pods, uid);
        pthread_mutex_unlock(&st->lock);
}

static int apply_pod(struct gantry_sched_state *st, bool deleted, const json_t *obj,
                     struct gantry_error *err)
{
        const char *uid = json_string_value(json_object_get(json_object_get(obj, "metadata"), "uid"));
        const char *node = json_string_value(json_object_get(json_object_get(obj, "spec"), "nodeName"));
        struct gantry_sched_demand d;
        int r;

        if (!uid || !*uid)
                return gantry_error_set(err, EINVAL, "Pod: metadata.uid: must be a non-empty string");
        if (deleted || pod_finished(obj)) {
                set_bound_pod(st, uid, NULL);
                pthread_mutex_lock(&st->waiting_lock);
                if (node && *node)
                        set_waiting_pod(st, node, uid, NULL);
                gantry_cluster_release(st->cluster, uid);
                pthread_mutex_unlock(&st->waiting_lock);
                if (deleted)
                        gantry_sched_state_note_deleted(st, uid);
                if (st->gangs)
                        gantry_gangs_pod_gone(st->gangs, uid, gantry_now_s());
                return 0;
        }
        if (!node || !*node) {
                /* pending: a pod filter saw is kept up to date for bind; the
                 * others (every pending pod cluster-wide) would only push the
                 * pods bind needs out of the ring */
                remember(st, obj, false);
                return 0;
        }
        if ((r = gantry_sched_demand_from_pod(st->cache, obj, &d, err)) < 0)
                return r;
        r = gantry_cluster_record(st->cluster, &d.d, node, err);
        set_bound_pod(st, uid, obj);
        if (r == 0 && st->gangs)
                gantry_gangs_pod_bound(st->gangs,
                                       d.gang_size > 1 && d.d.job
                                               ? &(struct gantry_gang_spec){ .key = d.d.job,
                                                                             .size = d.gang_size,
                                                                             .spread = d.gang_spread }
                                               : NULL,
                                       &d.d, node, gantry_now_s());
        if (r != -ENOENT)
                return r;
        /* a node not (yet) in the model: charged when the node appears (or
         * now, if it appeared meanwhile) */
        set_waiting_pod(st, node, uid, obj);
        if (gantry_cluster_has_node(st->cluster, node))
                record_waiting_pods(st, node);
        return 0;
}

/* The class external-resizer marks in force on @pvc ("" none). */
static const char *class_in_force(const json_t *pvc)
{
        const char *v = json_string_value(
                json_object_get(json_object_get(pvc, "status"), "currentVolumeAttributesClassName"));

        return v ? v : "";
}

/*
 * A PVC: kept in the cache; when its class in force changed, a change
 * admitted for its volume has taken effect (or been replaced): the pending
 * entry goes and the bound pods using the volume are charged what the
 * class in force now says (a decrease frees capacity here).
 */
static int apply_claim(struct gantry_sched_state *st, bool deleted, const json_t *obj,
                       struct gantry_error *err)
{
        const json_t *md = json_object_get(obj, "metadata");
        json_t *old = gantry_sched_cache_get(st->cache, GANTRY_OBJ_PVC,
                                             json_string_value(json_object_get(md, "namespace")),
                                             json_string_value(json_object_get(md, "name")));
        const char *pv_name = json_string_value(json_object_get(json_object_get(obj, "spec"), "volumeName"));
        bool changed = !deleted && old && strcmp(class_in_force(old), class_in_force(obj)) != 0;
        json_t *pv = NULL;
        const char *handle;
        int r;

        json_decref(old);
        if ((r = gantry_sched_cache_apply(st->cache, GANTRY_OBJ_PVC, deleted, obj, err)) < 0 || !changed)
                return r;
        if (pv_name && *pv_name)
                pv = gantry_sched_cache_get(st->cache, GANTRY_OBJ_PV, NULL, pv_name);
        handle = json_string_value(json_object_get(json_object_get(json_object_get(pv, "spec"), "csi"),
                                                   "volumeHandle"));
        if (handle && *handle) {
                gantry_pending_classes_settle(st->pending, handle, class_in_force(obj));
                gantry_sched_state_rerecord_volume(st, handle);
        }
        json_decref(pv);
        return 0;
}

int gantry_sched_state_apply(struct gantry_sched_state *st, enum gantry_obj_kind kind,
                             bool deleted, const json_t *obj, struct gantry_error *err)
{
        if (!json_is_object(obj))
                return gantry_error_set(err, EINVAL, "object: must be a JSON object");
        switch (kind) {
        case GANTRY_OBJ_NODE:
                return apply_node(st, deleted, obj, err);
        case GANTRY_OBJ_POD:
                return apply_pod(st, deleted, obj, err);
        case GANTRY_OBJ_PVC:
                return apply_claim(st, deleted, obj, err);
        case GANTRY_OBJ_PV:
        case GANTRY_OBJ_STORAGE_CLASS:
        case GANTRY_OBJ_JOB:
        case GANTRY_OBJ_POD_GROUP:
        case GANTRY_OBJ_WORKLOAD_POD_GROUP:
        case GANTRY_OBJ_ATTRIBUTES_CLASS:
                return gantry_sched_cache_apply(st->cache, kind, deleted, obj, err);
        default:
                return gantry_error_set(err, EINVAL, "kind: not followed");
        }
}

json_t *gantry_sched_state_get_pod(struct gantry_sched_state *st, const char *uid)
{
        json_t *v;

        pthread_mutex_lock(&st->lock);
        v = json_incref(strmap_get(st->remembered_pods, uid));
        pthread_mutex_unlock(&st->lock);
        return v;
}

/* Keeps @pod by UID; with !@add only refreshes a pod already kept. */
static void remember(struct gantry_sched_state *st, const json_t *pod, bool add)
{
        const char *uid = json_string_value(json_object_get(json_object_get(pod, "metadata"), "uid"));
        size_t slot;
        json_t *copy;

        if (!uid || !*uid || strlen(uid) > GANTRY_PLACEMENT_NAME_MAX)
                return;
        if (!add) {
                /* most pending pods' updates are of pods filter has not seen:
                 * nothing to refresh, no copy of a whole pod to make */
                pthread_mutex_lock(&st->lock);
                bool kept = strmap_get(st->remembered_pods, uid) != NULL;
                pthread_mutex_unlock(&st->lock);
                if (!kept)
                        return;
        }
        copy = json_deep_copy(pod);
        if (!copy)
                return;
        pthread_mutex_lock(&st->lock);
        json_t *old = strmap_get(st->remembered_pods, uid);
        if (old) {
                /* already in the ring: refresh the object only */
                json_decref(old);
                strmap_put(st->remembered_pods, uid, copy);
                pthread_mutex_unlock(&st->lock);
                return;
        }
        if (!add) {
                pthread_mutex_unlock(&st->lock);
                json_decref(copy);
                return;
        }
        slot = st->next_remembered;
        st->next_remembered = (slot + 1) % REMEMBERED_PODS_MAX;
        if (st->remembered[slot]) {
                json_decref(strmap_remove(st->remembered_pods, st->remembered[slot]));
                free(st->remembered[slot]);
        }
        st->remembered[slot] = strdup(uid);
        if (!st->remembered[slot] || strmap_put(st->remembered_pods, uid, copy) < 0) {
                free(st->remembered[slot]);
                st->remembered[slot] = NULL;
                json_decref(copy);
        }
        pthread_mutex_unlock(&st->lock);
}

void gantry_sched_state_remember_pod(struct gantry_sched_state *st, const json_t *pod)
{
        remember(st, pod, true);
}

static const struct {
        const char *key;
        enum gantry_obj_kind kind;
} state_file_keys[] = {
        /* the order matters: storage objects before the pods that use them */
        { "storageClasses", GANTRY_OBJ_STORAGE_CLASS },
        { "volumeAttributesClasses", GANTRY_OBJ_ATTRIBUTES_CLASS },
        { "persistentVolumes", GANTRY_OBJ_PV },
        { "persistentVolumeClaims", GANTRY_OBJ_PVC },
        { "jobs", GANTRY_OBJ_JOB },
        { "podGroups", GANTRY_OBJ_POD_GROUP },
        { "workloadPodGroups", GANTRY_OBJ_WORKLOAD_POD_GROUP },
        { "nodes", GANTRY_OBJ_NODE },
        { "pods", GANTRY_OBJ_POD },
};

int gantry_sched_state_load_file(struct gantry_sched_state *st, const char *path,
                                 struct gantry_error *err)
{
        json_error_t jerr;
        json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
        int r = 0;

        if (!root)
                return gantry_error_set(err, EINVAL, "%s: line %d: %s", path, jerr.line, jerr.text);
        if (!json_is_object(root)) {
                r = gantry_error_set(err, EINVAL, "%s: must be a JSON object", path);
                goto out;
        }
        for (size_t i = 0; i < sizeof(state_file_keys) / sizeof(state_file_keys[0]); i++) {
                const json_t *arr = json_object_get(root, state_file_keys[i].key);
                size_t j;
                json_t *obj;

                if (!arr)
                        continue;
                if (!json_is_array(arr)) {
                        r = gantry_error_set(err, EINVAL, "%s: %s: must be an array", path,
                                             state_file_keys[i].key);
                        goto out;
                }
                json_array_foreach(arr, j, obj) {
                        r = gantry_sched_state_apply(st, state_file_keys[i].kind, false, obj, err);
                        if (r < 0) {
                                char where[256];

                                snprintf(where, sizeof(where), "%s: %s[%zu]", path,
                                         state_file_keys[i].key, j);
                                gantry_error_prefix(err, where);
                                goto out;
                        }
                }
        }
out:
        json_decref(root);
        return r;
}

struct gantry_pending_classes *gantry_sched_state_pending(struct gantry_sched_state *st)
{
        return st->pending;
}

json_t *gantry_sched_state_pods_of_volume(struct gantry_sched_state *st, const char *handle)
{
        json_t *pods, *out = json_array(), *pod;
        struct gantry_error err;
        const char *uid;

        pthread_mutex_lock(&st->lock);
        pods = json_copy(st->bound_pods); /* the pods are shared, never changed in place */
        pthread_mutex_unlock(&st->lock);
        if (!pods || !out) {
                json_decref(pods);
                json_decref(out);
                return NULL;
        }
        json_object_foreach(pods, uid, pod) {
                struct gantry_sched_demand d;

                /* the volume's handle is in its demand: the one resolution of pod -> PVC -> PV */
                if (gantry_sched_demand_from_pod(st->cache, pod, &d, &err) < 0)
                        continue;
                if (gantry_sched_demand_uses(&d, handle))
                        json_array_append(out, pod);
        }
        json_decref(pods);
        return out;
}

size_t gantry_sched_state_rerecord_volume(struct gantry_sched_state *st, const char *handle)
{
        json_t *pods = gantry_sched_state_pods_of_volume(st, handle), *pod;
        struct gantry_sched_demand d;
        struct gantry_error err;
        size_t i, n = 0;

        json_array_foreach(pods, i, pod) {
                const char *node = json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName"));

                if (gantry_sched_demand_from_pod(st->cache, pod, &d, &err) == 0 && node &&
                    gantry_cluster_record(st->cluster, &d.d, node, &err) == 0)
                        n++;
        }
        json_decref(pods);
        return n;
}

size_t gantry_sched_state_expire_pending(struct gantry_sched_state *st, double now)
{
        json_t *gone = gantry_pending_classes_expire(st->pending, now), *h;
        size_t i;

        json_array_foreach(gone, i, h)
                gantry_sched_state_rerecord_volume(st, json_string_value(h));
        i = json_array_size(gone);
        json_decref(gone);
        return i;
}
