/*
 * The placement library: Gantry's cluster model, bandwidth ledger and the
 * filter / score / reserve decisions of the scheduler extender.
 *
 * Plain C over an in-memory model: no HTTP, no Kubernetes client, no JSON.
 * gantry-scheduler feeds it from the API server's watch; `gantryctl sim`
 * feeds it from a topology file and a job trace. Both ask it the very same
 * questions, so the simulator measures the code that runs in the cluster.
 *
 * The model
 *   spine ─┬─ leaf ─┬─ node (NIC Gbps, GPUs, NVMe-oF transports)
 *          │        └─ node ...
 *          └─ leaf ── backend (a Ceph cluster or an NVMe-oF target:
 *                      capacity Gbps, the leaves it attaches to)
 *   Capacities: each node's NIC, each leaf's uplink to its spine, each
 *   backend's aggregate bandwidth. A capacity of 0 means "unknown": it is
 *   never checked. A backend's bandwidth is its nominal capacity until its
 *   live state is set (gantry_cluster_set_backend_live(): what its observer
 *   publishes); then admission charges against its effective capacity
 *   (nominal x state factor - recovery - client IO no Gantry pod accounts
 *   for, never below 0). A stale observation counts as none: nominal. A leaf's uplink is either given in Gbps, or derived as
 *   (sum of its nodes' NIC Gbps) / oversubscription when that ratio is given.
 *
 * What a pod consumes on node N (its "charge")
 *   Each flow (backend B, g Gbps) takes g from N's NIC and g from B; when B
 *   does not attach to N's leaf, the traffic crosses the fabric and takes g
 *   from N's leaf uplink too, and g/k from the uplink of each of the k
 *   leaves B attaches to (the storage leaves' side of the same crossing). A flow with no backend (an annotation without a
 *   Gantry volume) is assumed to cross the fabric. GPUs are taken from N's
 *   GPU count when the node has one (0 = not tracked). One pool per link:
 *   reads and writes add up (conservative for full-duplex links).
 *
 * The ledger
 *   One entry per pod UID: the node, and the amounts charged. Entries come
 *   from two sources: gantry_cluster_record() (a bound pod seen by the watch,
 *   or a job running in the simulator: no capacity check, reality wins) and
 *   gantry_cluster_reserve() (the extender's bind: check and charge in one
 *   step under the write lock, so two pods can never take the same
 *   headroom). A reservation carries an expiry time; gantry_cluster_expire()
 *   drops it if the watch has not confirmed it (record() of the same UID
 *   replaces it and clears the expiry). Times are caller-supplied seconds
 *   (monotonic clock in the server, virtual time in the simulator).
 *
 * How a caller uses it
 *     struct gantry_cluster *c;
 *     gantry_cluster_new(&c);
 *     gantry_cluster_set_leaf(c, &(struct gantry_leaf_spec){
 *             .name = "leaf-1", .spine = "spine-1", .uplink_gbps = 400 });
 *     gantry_cluster_set_node(c, &(struct gantry_node_spec){
 *             .name = "gpu-1", .leaf = "leaf-1", .nic_gbps = 200, .gpus = 8,
 *             .transports = GANTRY_TRANSPORT_TCP });
 *     gantry_cluster_set_backend(c, &(struct gantry_backend_spec){
 *             .name = "ceph-a", .kind = GANTRY_BACKEND_CEPH, .gbps = 800,
 *             .leaves = (const char *[]){ "leaf-2" }, .n_leaves = 1 });
 *     struct gantry_pod_demand d = { .uid = "u1", .name = "ns/p1", .job = "ns/j",
 *             .gpus = 8, .n_flows = 1,
 *             .flows = { { .backend = "ceph-a", .gbps = 25 } } };
 *     gantry_cluster_filter(c, &d, names, n, verdicts);    // fits + reason
 *     gantry_cluster_prioritize(c, &d, names, n, scores);  // 0..100
 *     gantry_cluster_reserve(c, &d, "gpu-1", now + 30, NULL, &err); // atomic
 *     gantry_cluster_record(c, &d, "gpu-1");  // the watch saw it bound
 *     gantry_cluster_release(c, "u1");        // the pod finished / deleted
 *
 * Leaves and spines referenced by a node or backend spec are created on first
 * use (unknown capacities); set_* of an existing name updates it in place.
 * Every function is thread-safe: one reader-writer lock per cluster; filter
 * and prioritize take it shared, every change takes it exclusive. Strings in
 * specs and demands are copied; the caller keeps ownership of its own.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define GANTRY_PLACEMENT_NAME_MAX 253    /* a Kubernetes object name */
#define GANTRY_PLACEMENT_MAX_FLOWS 16    /* flows (volumes) per pod */
#define GANTRY_PLACEMENT_MAX_ATTACH 64   /* leaves a backend attaches to */
#define GANTRY_PLACEMENT_REASON_MAX 192  /* one filter reason, with NUL */
#define GANTRY_PLACEMENT_SCORE_MAX 100

enum gantry_transport {
        GANTRY_TRANSPORT_TCP = 1 << 0,
        GANTRY_TRANSPORT_RDMA = 1 << 1,
};

enum gantry_backend_kind {
        GANTRY_BACKEND_CEPH = 1,   /* a Ceph cluster (dataset volumes) */
        GANTRY_BACKEND_NVMEOF = 2, /* an NVMe-oF target (checkpoint volumes) */
};

struct gantry_leaf_spec {
        const char *name;           /* required */
        const char *spine;          /* may be NULL: unknown spine */
        double uplink_gbps;         /* 0: derive from oversubscription, or unknown */
        double oversubscription;    /* downlink:uplink, e.g. 2.0; 0: none given */
};

struct gantry_node_spec {
        const char *name;           /* required */
        const char *leaf;           /* may be NULL: no uplink check, no locality */
        const char *spine;          /* may be NULL: taken from the leaf */
        const char *accelerator;    /* NVLink domain; may be NULL (informational) */
        double nic_gbps;            /* 0: unknown, not checked */
        int gpus;                   /* 0: GPUs not tracked here */
        unsigned transports;        /* GANTRY_TRANSPORT_*; 0 means TCP only */
};

struct gantry_backend_spec {
        const char *name;           /* clusterID or targetID; required */
        enum gantry_backend_kind kind;
        double gbps;                /* aggregate bandwidth; 0: unknown */
        const char *const *leaves;  /* leaves it attaches to; may be empty */
        size_t n_leaves;
        enum gantry_transport transport; /* NVMe-oF: TCP or RDMA; 0 = TCP */
        bool same_leaf_only;        /* reachable only from its own leaves */
};

/* A backend's live state as its observer publishes it (StorageBackend status). */
enum gantry_backend_state {
        GANTRY_BACKEND_STATE_NONE = 0,  /* never observed: nominal capacity */
        GANTRY_BACKEND_STATE_HEALTHY,
        GANTRY_BACKEND_STATE_DEGRADED,
        GANTRY_BACKEND_STATE_RECOVERING,
        GANTRY_BACKEND_STATE_UNAVAILABLE,
        GANTRY_BACKEND_STATE_COUNT
};

struct gantry_backend_live {
        enum gantry_backend_state state;
        double client_gbps;   /* all client IO it serves now, Gantry's pods included */
        double recovery_gbps; /* recovery / backfill traffic */
        bool stale;           /* the observation is too old: nominal capacity */
};

/* Capacity factors of the states between healthy (1) and unavailable (0). */
struct gantry_backend_factors {
        double degraded;   /* default 0.85 */
        double recovering; /* default 0.65 */
};

/* A backend as admission sees it now (gantry_cluster_backend_view()). */
struct gantry_backend_view {
        char name[GANTRY_PLACEMENT_NAME_MAX + 1];
        enum gantry_backend_kind kind;
        enum gantry_backend_state state;
        bool stale;
        double nominal_gbps;     /* the topology file's; 0 unknown */
        double effective_gbps;   /* what admission charges against (nominal when not observed) */
        double reserved_gbps;    /* Gantry's charges on it: bound pods, binds, gang places */
        double bound_gbps;       /* of which pods the watch saw bound (they do IO) */
        double unaccounted_gbps; /* client IO no bound Gantry pod accounts for */
        double recovery_gbps;
        double client_gbps;
};

struct gantry_flow {
        const char *backend;        /* NULL: not served by a known backend */
        double gbps;                /* >= 0 */
};

struct gantry_pod_demand {
        const char *uid;            /* ledger key; required for reserve/record */
        const char *name;           /* "namespace/name", for logs */
        const char *job;            /* gang key ("namespace/job"); may be NULL */
        int gpus;
        size_t n_flows;
        struct gantry_flow flows[GANTRY_PLACEMENT_MAX_FLOWS];
};

/* Why a node was refused: one cause per verdict, the first one found. */
enum gantry_refusal_cause {
        GANTRY_REFUSAL_NONE = 0,
        GANTRY_REFUSAL_UNKNOWN_NODE,   /* no Node seen yet */
        GANTRY_REFUSAL_TRANSPORT,      /* target's transport missing on the node (unresolvable) */
        GANTRY_REFUSAL_TARGET_LEAF,    /* sameLeafOnly target, node elsewhere (unresolvable) */
        GANTRY_REFUSAL_GPUS,
        GANTRY_REFUSAL_NIC,
        GANTRY_REFUSAL_UPLINK,         /* the node's leaf uplink */
        GANTRY_REFUSAL_STORAGE_UPLINK, /* the uplink of a backend's own leaf */
        GANTRY_REFUSAL_BACKEND,        /* a Ceph cluster's bandwidth */
        GANTRY_REFUSAL_TARGET,         /* an NVMe-oF target's bandwidth */
        GANTRY_REFUSAL_GANG,           /* the pod's gang: refused whole, or placed elsewhere */
        GANTRY_REFUSAL_CAUSE_COUNT
};

struct gantry_node_verdict {
        bool fits;
        bool unresolvable; /* unreachable backend: preempting pods would not help */
        /*
         * Why not, when !fits, free of node, leaf and backend names and of
         * numbers that differ between nodes, so kube-scheduler folds equal
         * reasons into "N <reason>": "leaf uplink full (pod needs 25 Gbps)".
         */
        char reason[GANTRY_PLACEMENT_REASON_MAX];
        /* The specifics, for logs (gantry_node_verdict_detail()) and metrics. */
        enum gantry_refusal_cause cause;
        const char *where; /* the short leaf / backend / target; borrowed from the
                            * model (names live as long as the cluster); NULL for
                            * the node itself */
        double free, need; /* Gbps (GPUs for GANTRY_REFUSAL_GPUS) */
        /* A backend or target refusal (or a gang's, when a backend is what
         * it is short of): the capacity checked (effective) and nominal, and
         * the backend's state when not healthy ("recovering"), else NULL. */
        double capacity, nominal;
        const char *condition;
};

/* Relative weights of the three parts of a score (any scale; >= 0). */
struct gantry_score_weights {
        double locality;  /* gang: keep a job within few leaves and spines */
        double headroom;  /* bandwidth left on the node's links after placement */
        double closeness; /* the pod's backends on the node's leaf / spine */
};

/* Headroom of one node's links as seen now (for /metrics, the simulator). */
struct gantry_node_usage {
        double nic_gbps, nic_used_gbps;
        double uplink_gbps, uplink_used_gbps; /* the node's leaf */
        int gpus, gpus_used;
};

struct gantry_cluster;

/* A new empty cluster in *ret_cluster. Returns 0 or -ENOMEM. */
int gantry_cluster_new(struct gantry_cluster **ret_cluster);
/* Frees the cluster and its ledger; NULL is a no-op. No call may be in flight. */
void gantry_cluster_free(struct gantry_cluster *c);

/* Default score weights: locality 5, headroom 3, closeness 2. */
void gantry_cluster_set_weights(struct gantry_cluster *c, const struct gantry_score_weights *w);

/*
 * Adds or updates a leaf / node / backend. Validates the spec first (names
 * non-empty, at most GANTRY_PLACEMENT_NAME_MAX, numbers finite and >= 0);
 * returns 0, -EINVAL with @err naming the field, or -ENOMEM. A node that
 * moves to another leaf keeps its ledger entries charged where they were
 * charged (they are released from there).
 */
int gantry_cluster_set_leaf(struct gantry_cluster *c, const struct gantry_leaf_spec *spec,
                            struct gantry_error *err);
int gantry_cluster_set_node(struct gantry_cluster *c, const struct gantry_node_spec *spec,
                            struct gantry_error *err);
int gantry_cluster_set_backend(struct gantry_cluster *c, const struct gantry_backend_spec *spec,
                               struct gantry_error *err);
/* Forgets a node (deleted from the cluster) and gives back what the ledger
 * charged on it (its pods' entries are dropped). Returns 0 or -ENOENT. */
int gantry_cluster_remove_node(struct gantry_cluster *c, const char *name);
/* True when @name is a node of the model. */
bool gantry_cluster_has_node(struct gantry_cluster *c, const char *name);

/*
 * Checks a demand before use: flows <= GANTRY_PLACEMENT_MAX_FLOWS, Gbps finite
 * and >= 0, gpus >= 0. Returns 0 or -EINVAL with @err naming the field.
 * Every function below that takes a demand calls it.
 */
int gantry_pod_demand_validate(const struct gantry_pod_demand *d, struct gantry_error *err);

/*
 * Filter: for each of @n node names, whether the pod fits there now, and if
 * not, its cause and one reason that folds in `kubectl describe pod` (the
 * same for every node refused for the same cause):
 *   "leaf uplink full (pod needs 25 Gbps)"
 *   "storage leaf uplink full (pod needs 25 Gbps)"
 *   "node NIC full (pod needs 50 Gbps)"
 *   "storage backend full (pod needs 25 Gbps)"
 *   "checkpoint target serves rdma only, node has no rdma"
 *   "node unknown to gantry-scheduler (no Node seen yet)"
 * @ret_verdicts has room for @n. Returns 0 or -EINVAL (bad demand, @err).
 */
int gantry_cluster_filter(struct gantry_cluster *c, const struct gantry_pod_demand *d,
                          const char *const *nodes, size_t n,
                          struct gantry_node_verdict *ret_verdicts, struct gantry_error *err);

/*
 * The refusal of @v on node @node with its names and numbers, for a log line
 * or an error message: "leaf-3 uplink: 12 Gbps free, pod needs 25 Gbps",
 * "gpu-7: 2 GPUs free, pod needs 4". Writes "" when @v fits.
 */
void gantry_node_verdict_detail(const struct gantry_node_verdict *v, const char *node, char *buf,
                                size_t size);
/* A cause's short name ("uplink", "storage_uplink", "gpus", ...), for metric labels. */
const char *gantry_refusal_cause_name(enum gantry_refusal_cause cause);
/*
 * What ran short, in words for a person ("leaf uplink", "node NIC", "GPUs",
 * "reachability", ...): the one table behind the refusal reasons ("leaf
 * uplink full (pod needs 25 Gbps)") and a gang's "(leaf uplink full)".
 */
const char *gantry_refusal_cause_words(enum gantry_refusal_cause cause);

/*
 * Prioritize: a score 0..GANTRY_PLACEMENT_SCORE_MAX per node (higher is
 * better), a weighted mean of: gang locality (the job's pods already in the
 * ledger: same leaf best, then same spine; a job's first pod prefers the leaf
 * with the most uplink headroom), the smallest headroom fraction left on the
 * links the pod would use, and closeness to the pod's backends (attached to
 * the node's leaf 1, same spine 0.5, else 0, weighted by Gbps). Unknown nodes
 * score 0. Returns 0 or -EINVAL / -ENOMEM.
 */
int gantry_cluster_prioritize(struct gantry_cluster *c, const struct gantry_pod_demand *d,
                              const char *const *nodes, size_t n, int *ret_scores,
                              struct gantry_error *err);

/*
 * Bind-time reservation: checks the pod fits on @node and charges it, in one
 * step under the write lock. The entry expires at @expires_at (caller's
 * clock; 0 = never) unless gantry_cluster_record() confirms it first. If the
 * UID already holds a reservation, it is replaced (a retried bind never
 * charges twice); if it holds a confirmed entry, nothing changes and the
 * answer is -EALREADY with "already bound to NODE" in @err. *@ret_token (may
 * be NULL) gets this reservation's token, for its undo: two binds of one pod
 * may overlap (kube-scheduler retries a bind that timed out while the first
 * still runs), and the one that fails must not give back the other's.
 * Returns 0; -ENOSPC with the detailed reason (gantry_node_verdict_detail())
 * in @err; -ENOENT when @node is unknown; -EINVAL for a bad demand (uid
 * required).
 */
int gantry_cluster_reserve(struct gantry_cluster *c, const struct gantry_pod_demand *d,
                           const char *node, double expires_at, uint64_t *ret_token,
                           struct gantry_error *err);

/*
 * A pod known to run (or be bound) on @node: charges it without a capacity
 * check, replacing any entry of the same UID (and its expiry). Returns 0,
 * -ENOENT (unknown node), -EINVAL or -ENOMEM.
 */
int gantry_cluster_record(struct gantry_cluster *c, const struct gantry_pod_demand *d,
                          const char *node, struct gantry_error *err);

/*
 * A live change of the demands of pods already in the ledger (a volume's
 * bandwidth changed while they run, placement/recharge.c): each of the @n
 * pods (by uid) is charged @demands[i] on the node its entry is on, in one
 * step under the write lock, if every link that would carry more has the
 * extra free now; links whose share falls are not checked, so a decrease
 * always succeeds. A pod without an entry is skipped. On success returns 0
 * and how many entries changed in *@ret_changed (may be NULL); when a link
 * is short, nothing changes and the answer is -ENOSPC with @err naming the
 * link, its free and total Gbps and the extra the change needs:
 *   "leaf uplink leaf-3: 4.0 of 100.0 Gbps free, the change needs 8.0 more"
 *   "storage backend ceph-a: 2.0 of 40.0 Gbps free (effective 26.0,
 *    recovering), the change needs 4.0 more" (free of the effective
 *    capacity, out of the nominal)
 * -EINVAL for a bad demand (uid required), -ENOMEM.
 */
int gantry_cluster_recharge(struct gantry_cluster *c, const struct gantry_pod_demand *const *demands,
                            size_t n, size_t *ret_changed, struct gantry_error *err);

/* Drops the entry of @uid and gives back its charge. Returns 0 or -ENOENT. */
int gantry_cluster_release(struct gantry_cluster *c, const char *uid);

/*
 * A failed bind's undo: drops @uid's entry only while it is the unconfirmed
 * reservation that gantry_cluster_reserve() made with @token. Returns 0,
 * -EALREADY (confirmed: kept) or -ENOENT (none, or a later bind's: kept).
 */
int gantry_cluster_release_reservation(struct gantry_cluster *c, const char *uid, uint64_t token);

/* Drops every reservation whose expiry is <= @now. Returns how many. */
size_t gantry_cluster_expire(struct gantry_cluster *c, double now);

/* Node name of @uid's entry copied into @buf; 0, -ENOENT or -ENAMETOOLONG. */
int gantry_cluster_lookup(struct gantry_cluster *c, const char *uid, char *buf, size_t size);

/* Counts for /metrics: nodes, leaves, backends, ledger entries, pending reservations. */
struct gantry_cluster_stats {
        size_t nodes, leaves, spines, backends, entries, reservations;
};
void gantry_cluster_stats(struct gantry_cluster *c, struct gantry_cluster_stats *ret_stats);

/* Usage of one node's links. Returns 0 or -ENOENT. */
int gantry_cluster_node_usage(struct gantry_cluster *c, const char *node,
                              struct gantry_node_usage *ret_usage);
/*
 * Sets backend @name's live state (@live NULL: forgets it, nominal again).
 * Validates first (numbers finite and >= 0, a known state). Returns 0,
 * -ENOENT (no such backend: the topology file does not list it) or -EINVAL
 * with @err naming the field. Pods already placed keep their charges: a
 * backend whose effective capacity falls below them admits nothing new.
 */
int gantry_cluster_set_backend_live(struct gantry_cluster *c, const char *name,
                                    const struct gantry_backend_live *live,
                                    struct gantry_error *err);
/* The state factors (defaults 0.85 and 0.65); each in [0, 1] or -EINVAL. */
int gantry_cluster_set_backend_factors(struct gantry_cluster *c,
                                       const struct gantry_backend_factors *f,
                                       struct gantry_error *err);
/*
 * The effective capacity of a backend: max(0, nominal x factor - recovery -
 * unaccounted), unaccounted = max(0, client - bound), all in Gbps. Pure: the
 * one formula, for admission, metrics and tests.
 */
double gantry_backend_effective_gbps(double nominal, double factor, double recovery_gbps,
                                     double client_gbps, double bound_gbps);
/* "Healthy", "Degraded", "Recovering", "Unavailable" (as the CRD spells
 * them); "" for none; the parser of the same. */
const char *gantry_backend_state_name(enum gantry_backend_state s);
int gantry_backend_state_parse(const char *s, enum gantry_backend_state *ret_state);
/* Backend number @index (0 .. stats.backends - 1) as admission sees it now.
 * Returns 0 or -ENOENT. */
int gantry_cluster_backend_view(struct gantry_cluster *c, size_t index,
                                struct gantry_backend_view *ret_view);
/* Nominal capacity and used Gbps of a backend. Returns 0 or -ENOENT. */
int gantry_cluster_backend_usage(struct gantry_cluster *c, const char *backend,
                                 double *ret_gbps, double *ret_used_gbps);
