/*
 * gantry-scheduler's view of the cluster, fed by Kubernetes objects: it turns
 * Nodes into the placement library's model (topology labels), bound Pods into
 * ledger entries, and keeps the PVCs, PVs and StorageClasses a pod's demand
 * is derived from (in a sched_cache.h, which sched_demand.c reads). Objects
 * come from the API client's informers, from a --state file, or from a
 * filter request's Nodes.
 *
 * Node labels read:
 *   the leaf, spine and accelerator domain: Topograph v1's
 *     fabric.topograph.run/tier-0, fabric.topograph.run/tier-1 and
 *     accelerator.topograph.run/domain, else v0's
 *     network.topology.nvidia.com/leaf, .../spine, .../accelerator
 *     (the topology file's "labels" may name other keys: Kueue's Topology
 *     levels, a site's own)
 *   gantry.io/nic-gbps            the node's NIC bandwidth in Gbps
 *   gantry.io/nvmeof-transports   "tcp", "rdma" or "tcp,rdma" (default tcp)
 *   status.allocatable["nvidia.com/gpu"]  GPUs
 * The topology file (sched_topology.c) adds leaf uplinks, oversubscription
 * and where each backend attaches.
 *
 * Thread-safe: informer threads and HTTP threads call in at the same time.
 */
#pragma once

#include <stdbool.h>
#include <jansson.h>

#include "error.h"
#include "placement.h"
#include "sched_cache.h"

/* The topology labels read by default, in order of precedence. */
#define GANTRY_LABEL_LEAF_V1 "fabric.topograph.run/tier-0"
#define GANTRY_LABEL_SPINE_V1 "fabric.topograph.run/tier-1"
#define GANTRY_LABEL_ACCELERATOR_V1 "accelerator.topograph.run/domain"
#define GANTRY_LABEL_LEAF "network.topology.nvidia.com/leaf"
#define GANTRY_LABEL_SPINE "network.topology.nvidia.com/spine"
#define GANTRY_LABEL_ACCELERATOR "network.topology.nvidia.com/accelerator"
#define GANTRY_LABEL_NIC_GBPS "gantry.io/nic-gbps"
#define GANTRY_LABEL_TRANSPORTS "gantry.io/nvmeof-transports"
#define GANTRY_RESOURCE_GPU "nvidia.com/gpu"

/* Defaults the topology file may set for what labels do not say. */
/* A label key: a DNS-1123 prefix (253), '/', a name (63). */
#define GANTRY_SCHED_LABEL_KEY_MAX 318
/* Keys one topology level may be read from. */
#define GANTRY_SCHED_LABEL_KEYS 4

/*
 * The label keys a node's leaf, spine and accelerator domain are read from,
 * each in order of precedence (the first key a node has wins); a level whose
 * first key is empty reads the default keys above.
 */
struct gantry_sched_label_keys {
        char leaf[GANTRY_SCHED_LABEL_KEYS][GANTRY_SCHED_LABEL_KEY_MAX];
        char spine[GANTRY_SCHED_LABEL_KEYS][GANTRY_SCHED_LABEL_KEY_MAX];
        char accelerator[GANTRY_SCHED_LABEL_KEYS][GANTRY_SCHED_LABEL_KEY_MAX];
};

struct gantry_sched_defaults {
        double nic_gbps;          /* a node without gantry.io/nic-gbps; 0 unknown */
        double oversubscription;  /* a leaf the file does not list; 0 none */
        struct gantry_sched_label_keys labels;
};

struct gantry_sched_state;

/*
 * A new state over @cluster (borrowed; must outlive the state).
 * Returns 0 or -ENOMEM.
 */
int gantry_sched_state_new(struct gantry_cluster *cluster, struct gantry_sched_state **ret_state);
void gantry_sched_state_free(struct gantry_sched_state *st);

/* The cluster it feeds (borrowed). */
struct gantry_cluster *gantry_sched_state_cluster(struct gantry_sched_state *st);
/* The cache of the objects a pod's demand is read from (owned by the state). */
struct gantry_sched_cache *gantry_sched_state_cache(struct gantry_sched_state *st);

void gantry_sched_state_set_defaults(struct gantry_sched_state *st,
                                     const struct gantry_sched_defaults *d);
/* Marks @leaf as described by the topology file (its defaults are not applied). */
int gantry_sched_state_declare_leaf(struct gantry_sched_state *st, const char *leaf);

/*
 * Applies one object: @deleted false for ADDED/MODIFIED, true for DELETED.
 * Returns 0, or -EINVAL with @err naming the field of a malformed object
 * (the object is then ignored), or -ENOMEM.
 */
int gantry_sched_state_apply(struct gantry_sched_state *st, enum gantry_obj_kind kind,
                             bool deleted, const json_t *obj, struct gantry_error *err);

/*
 * Loads a --state file: a JSON object with optional arrays "nodes", "pods",
 * "persistentVolumeClaims", "persistentVolumes", "storageClasses", "jobs",
 * "podGroups" of
 * Kubernetes objects as the API server serves them. Returns 0 or -errno with
 * @err naming the file and the element.
 */
int gantry_sched_state_load_file(struct gantry_sched_state *st, const char *path,
                                 struct gantry_error *err);

struct gantry_gangs;
/*
 * Tells the gang table (borrowed; NULL: none) about pods the watch shows
 * bound (after the ledger charged them) and pods gone (after the ledger
 * released them), so a gang's reservation follows its members. Set before
 * the informers start.
 */
void gantry_sched_state_set_gangs(struct gantry_sched_state *st, struct gantry_gangs *gangs);

struct gantry_sched_backends;
/* The backends' live view (sched_backends.h; borrowed; NULL: none), for the
 * extender to note the backends it holds pods for. Set before serving. */
void gantry_sched_state_set_backends(struct gantry_sched_state *st, struct gantry_sched_backends *b);
struct gantry_sched_backends *gantry_sched_state_backends(struct gantry_sched_state *st);

/*
 * The pod with @uid, as last seen (from the watch or a filter request), or
 * NULL. A new reference. Pods seen in filter requests are kept so that bind
 * (which carries only names and the UID) can find their demand.
 */
json_t *gantry_sched_state_get_pod(struct gantry_sched_state *st, const char *uid);
/*
 * Whether the watch showed pod @uid deleted lately (the last 4096 deletions):
 * a filter for it (kube-scheduler had popped it before it saw it go) must not
 * plan a gang's reservation that no member would ever use or give back.
 */
bool gantry_sched_state_pod_deleted(struct gantry_sched_state *st, const char *uid);
/* Records pod @uid as deleted: the watch's DELETED, or a bind the API
 * server answered 404 (the pod is gone; its event may have passed). */
void gantry_sched_state_note_deleted(struct gantry_sched_state *st, const char *uid);
/* Remembers @pod (a filter request's Pod) by its UID; bounded, oldest
 * dropped. The watch only refreshes pods remembered this way. */
void gantry_sched_state_remember_pod(struct gantry_sched_state *st, const json_t *pod);

/* The node labels' parsers (common/bandwidth_demand.c): Gbps text; a
 * whole-unit quantity (NULL = 0). */
int gantry_sched_parse_gbps(const char *field, const char *s, double *ret, struct gantry_error *err);
int gantry_sched_parse_count(const char *field, const json_t *q, int *ret, struct gantry_error *err);
/* Node spec from a Node object (strings borrowed from @node). 0 or -EINVAL. */
int gantry_sched_node_spec(const json_t *node, const struct gantry_sched_defaults *defaults,
                           struct gantry_node_spec *ret_spec, struct gantry_error *err);

struct gantry_pending_classes;
/* The bandwidth changes admitted but not yet in force (pending_class.h;
 * owned by the state, which counts them in every demand it computes). */
struct gantry_pending_classes *gantry_sched_state_pending(struct gantry_sched_state *st);
/*
 * The bound pods (as the watch last showed them) that use the volume with
 * PV volumeHandle @handle: a new array of Pod objects (json_decref it), NULL
 * when out of memory.
 */
json_t *gantry_sched_state_pods_of_volume(struct gantry_sched_state *st, const char *handle);
/* Charges the bound pods using volume @handle their demand now (the class in
 * force, or a change admitted), without a capacity check. How many. */
size_t gantry_sched_state_rerecord_volume(struct gantry_sched_state *st, const char *handle);
/* Drops the admitted changes expired at @now and charges their pods the
 * class in force again. How many went. */
size_t gantry_sched_state_expire_pending(struct gantry_sched_state *st, double now);
