/*
 * The driver configuration file (JSON), shared by gantry-csi's controller and
 * node modes.
 *
 *   {
 *     "logLevel": "info",
 *     "clusters": [ { "clusterID": "nvme", "monitors": ["10.0.0.1:3300"],
 *                     "tier": "performance",
 *                     "rbdTimeoutSeconds": 10,
 *                     "userID": "gantry", "keyFile": "/etc/gantry/ceph/nvme.key",
 *                     "location": { "leaves": ["leaf-1"], "readGBps": 40 },
 *                     "copy": { "readMBps": 2000, "objectsInFlight": 16 },
 *                     "evict": { "highWatermark": 0.85, "lowWatermark": 0.7,
 *                                "idleSeconds": 3600, "intervalSeconds": 60 } } ],
 *     "targets":  [ { "id": "tgt-a", "url": "https://10.0.1.5:8009/",
 *                     "tokenFile": "/etc/gantry/target-token",
 *                     "caFile": "/etc/gantry/target-ca.pem",
 *                     "addresses": [ { "transport": "tcp", "traddr": "10.0.1.5",
 *                                      "trsvcid": "4420" } ],
 *                     "leaf": "leaf-1", "capacityBytes": 1099511627776 } ],
 *     "node": { "topology": { "network.topology.nvidia.com/leaf": "leaf-1" },
 *               "maxVolumesPerNode": 64, "maxParallelMaps": 8,
 *               "crushLocation": "host=gpu-1|rack=r1",
 *               "readFromReplica": "localize",
 *               "hostNQN": "nqn.2014-08.org.nvmexpress:uuid:..." }
 *   }
 *
 * Every field is checked at load; an error names the file and the field
 * ("gantry.json: clusters[1].monitors: must be a non-empty array of strings").
 * The parsed struct is read-only after load and shared by all threads.
 */
#pragma once

#include <stdbool.h>

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "log.h"

#define GANTRY_CONFIG_MAX_CLUSTERS 64
#define GANTRY_CONFIG_MAX_TARGETS 256
#define GANTRY_CONFIG_MAX_LIST 64 /* monitors, leaves, addresses, labels */
#define GANTRY_CONFIG_ID_MAX 64   /* clusterID, target id: [A-Za-z0-9._-] */

/*
 * When promoted copies in a cluster are demoted ("evict"): above
 * @high_watermark of a pool's capacity, copies idle for at least
 * @idle_seconds go, idle longest first, until usage is at @low_watermark.
 */
struct gantry_evict_policy {
        bool enabled;             /* an "evict" object is configured */
        double high_watermark;    /* fraction of the capacity, default 0.85 */
        double low_watermark;     /* < high_watermark, default 0.70 */
        int64_t idle_seconds;     /* default 3600 */
        int interval_seconds;     /* between two passes, default 60 */
        uint64_t capacity_bytes;  /* 0: each pool's stored + max_avail (ceph df) */
};

struct gantry_cluster_config {
        char *cluster_id;
        char **monitors; /* "host:port" or "[v2:host:port]" */
        size_t n_monitors;
        char *tier;      /* free text, e.g. "performance", "capacity" */
        int rbd_timeout_seconds; /* librados op/mount timeout; default 10 */
        char *user_id;   /* Ceph user for calls that carry no secrets (List, */
        char *key_file;  /* GetCapacity, Probe); the key is read at connect */
        char **leaves;   /* fabric leaves its OSD hosts hang off (may be empty) */
        size_t n_leaves;
        double read_gbps; /* aggregate read GB/s, 0 when unknown */
        /* copies that read from this cluster (dataset promotion, "copy"): */
        uint64_t copy_read_bytes_per_s; /* shared cap of their reads, 0: none */
        int copy_objects_in_flight;     /* objects in flight per copy, default 16 */
        int copy_wait_seconds;          /* a CreateVolume finding the copy running waits this long
                                         * for its end (within its deadline); default 0 */
        struct gantry_evict_policy evict; /* demoting promoted copies held here ("evict") */
        /* copy.mode "rbd-mirror": promotions into these clusters go through rbd-mirror */
        bool copy_rbd_mirror;
        char **mirror_to; /* copy.mirrorTo: destination clusterIDs running rbd-mirror */
        size_t n_mirror_to;
};

struct gantry_target_address {
        char *transport; /* "tcp" or "rdma" */
        char *traddr;
        char *trsvcid;
};

struct gantry_target_config {
        char *id;
        char *url;
        char *token_file; /* bearer token, read at call time; may be NULL */
        char *ca_file;    /* CA bundle for https; may be NULL */
        struct gantry_target_address *addresses;
        size_t n_addresses;
        char *leaf; /* may be NULL */
        uint64_t capacity_bytes;
};

struct gantry_label {
        char *key;
        char *value;
};

struct gantry_node_config {
        struct gantry_label *topology; /* accessible_topology segments */
        size_t n_topology;
        int64_t max_volumes_per_node; /* 0: no limit reported */
        int max_parallel_maps;        /* default 8 */
        char *crush_location;         /* may be NULL */
        char *read_from_replica;      /* may be NULL: "balance" or "localize" */
        char *host_nqn;               /* may be NULL: read from /etc/nvme/hostnqn */
        bool kernel_modules_set;      /* false: the node's built-in list */
        char **kernel_modules;        /* modules loaded at start ("rbd", "nvme-tcp", ...) */
        size_t n_kernel_modules;
        int bandwidth_window_seconds; /* the usage window of the bandwidth sampler; default 600 */
        int bandwidth_sample_seconds; /* between its passes; default 10 */
};

struct gantry_config {
        char *path; /* the file it was loaded from, or "<defaults>" */
        enum gantry_log_level log_level;
        struct gantry_cluster_config *clusters;
        size_t n_clusters;
        struct gantry_target_config *targets;
        size_t n_targets;
        struct gantry_node_config node;
        /*
         * DH-HMAC-CHAP keys, one file per host NQN ("<host NQN>.key", and
         * "<host NQN>.ctrl.key" for bidirectional authentication): the
         * controller makes them (0600) at the first publish to a host; the node
         * plugin reads its own. NULL: no volume with auth other than none can be
         * published or staged.
         */
        char *dhchap_key_dir;
};

/*
 * Loads and validates @path. On success returns 0 and a new config in
 * *ret_config (free with gantry_config_free). On failure returns -errno and
 * fills @err with "PATH: FIELD: problem".
 */
int gantry_config_load(const char *path, struct gantry_config **ret_config,
                       struct gantry_error *err) GANTRY_MUST_CHECK;

/* Same as gantry_config_load() but from a JSON string; @origin names it in errors. */
int gantry_config_parse(const char *json, const char *origin, struct gantry_config **ret_config,
                        struct gantry_error *err) GANTRY_MUST_CHECK;

/* An empty config (no clusters, no targets, defaults), for running without --config. */
int gantry_config_new_default(struct gantry_config **ret_config) GANTRY_MUST_CHECK;

void gantry_config_free(struct gantry_config *config);

/* The cluster with @cluster_id, or NULL (borrowed). */
/* True when promotions from @src into cluster @dst_id use rbd-mirror (copy.mode). */
bool gantry_config_rbd_mirror(const struct gantry_cluster_config *src, const char *dst_id);

const struct gantry_cluster_config *gantry_config_find_cluster(const struct gantry_config *config,
                                                               const char *cluster_id);
/* The target with @id, or NULL (borrowed). */
const struct gantry_target_config *gantry_config_find_target(const struct gantry_config *config,
                                                             const char *id);
