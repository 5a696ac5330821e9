/*
 * Private state of the placement library (placement.h): the fabric model,
 * the ledger, and the helpers the model, ledger and decision files share.
 * Every function here expects the caller to hold the cluster's lock.
 */
#pragma once

#include <pthread.h>
#include <stdint.h>

#include "placement.h"
#include "strmap.h"

#define GANTRY_GBPS_EPSILON 1e-9

struct gp_spine {
        char *name;
};

struct gp_leaf {
        char *name;
        int spine;             /* index, -1 unknown */
        double uplink_gbps;    /* as given; 0 = derive or unknown */
        double oversub;        /* 0 = none given */
        double nic_sum;        /* NIC Gbps of the present nodes on it */
        double uplink_used;
};

struct gp_node {
        char *name;
        char *accelerator;
        int leaf;              /* -1: none */
        int spine;             /* -1: take the leaf's */
        double nic_gbps, nic_used;
        int gpus, gpus_used;
        unsigned transports;
        bool present;          /* false once removed; the slot is reused on re-add */
};

struct gp_backend {
        char *name;
        enum gantry_backend_kind kind;
        double gbps, used;
        int *leaves;
        size_t n_leaves;
        enum gantry_transport transport;
        bool same_leaf_only;
        double bound;          /* of used: confirmed ledger entries (pods doing IO) */
        struct gantry_backend_live live;
};

/* Storage leaves whose uplinks one pod's charge can hold (see gp_charge). */
#define GP_MAX_SOURCE_LEAVES 16

/* What one pod takes, and where it was charged. */
struct gp_charge {
        int node, leaf;        /* leaf -1: no uplink charged */
        double nic, uplink;
        /* the uplinks of the leaves its backends sit on, for the reads that
         * leave them towards the node's leaf: a backend on k leaves sends
         * 1/k of a flow from each (the simulator's model) */
        size_t n_sources;
        int source_leaf[GP_MAX_SOURCE_LEAVES];
        double source_gbps[GP_MAX_SOURCE_LEAVES];
        int gpus;
        size_t n_backends;     /* distinct backends, flows merged */
        int backend[GANTRY_PLACEMENT_MAX_FLOWS];
        double backend_gbps[GANTRY_PLACEMENT_MAX_FLOWS];
};

struct gp_entry {
        char *uid;
        char *job;             /* NULL: none */
        size_t index;          /* position in cluster->entries */
        size_t job_index;      /* position in its job's members (job set) */
        double expires_at;     /* 0: confirmed, never expires */
        uint64_t token;        /* which add made it: a failed bind undoes its own only */
        struct gp_charge charge;
};

/* The entries of one job, kept by the ledger as it adds and drops them, so
 * that prioritize counts a job's pods without scanning every entry. */
struct gp_job_members {
        struct gp_entry **v;
        size_t n, cap;
};

struct gantry_cluster {
        pthread_rwlock_t lock;
        struct gantry_score_weights weights;

        struct gp_spine *spines;
        size_t n_spines, cap_spines;
        struct gp_leaf *leaves;
        size_t n_leaves, cap_leaves;
        struct gp_node *nodes;
        size_t n_nodes, cap_nodes, n_present;
        struct gp_backend *backends;
        size_t n_backends, cap_backends;
        struct strmap *spine_by_name, *leaf_by_name, *node_by_name, *backend_by_name;

        struct gp_entry **entries; /* dense, for the scans of expiry and node removal */
        size_t n_entries, cap_entries, n_reservations;
        uint64_t last_token;       /* the ledger's entry tokens, from 1 */
        struct strmap *entry_by_uid;
        struct gantry_backend_factors factors;
        bool nominal_only;         /* live states ignored (an empty cluster's what-if) */
        struct strmap *job_members; /* job -> struct gp_job_members * */
};

/* The entries of job @job, NULL when it has none. */
const struct gp_job_members *gp_job_members_get(const struct gantry_cluster *c, const char *job);

/* Index lookups; -1 when absent (nodes: also when not present). */
int gp_find_leaf(const struct gantry_cluster *c, const char *name);
int gp_find_node(const struct gantry_cluster *c, const char *name);
int gp_find_backend(const struct gantry_cluster *c, const char *name);
/* The node's spine (its own, else its leaf's), -1 when unknown. */
int gp_node_spine(const struct gantry_cluster *c, const struct gp_node *n);
/* The leaf's uplink capacity in Gbps (given, or derived), 0 when unknown. */
double gp_leaf_uplink_capacity(const struct gp_leaf *l);
/* The capacity admission charges @b against now (backend_live.c): its
 * effective capacity, or nominal when not observed; 0 unknown. */
double gp_backend_capacity(const struct gantry_cluster *c, const struct gp_backend *b);
/* @b's state in words when not healthy ("recovering"), else NULL. */
const char *gp_backend_condition(const struct gantry_cluster *c, const struct gp_backend *b);
/* Whether @need more Gbps of @b do not fit now; when so, fills @v's cause,
 * where, free, need, capacity, nominal and condition. */
bool gp_backend_short(const struct gantry_cluster *c, const struct gp_backend *b, double need,
                      struct gantry_node_verdict *v);
/*
 * Whether @k pods of demand @d would take more of one of their backends than
 * it has free now; when so, fills @v's where, free, need (the @k pods'),
 * capacity, nominal and condition, and returns true.
 */
bool gp_backend_shortfall(const struct gantry_cluster *c, const struct gantry_pod_demand *d, int k,
                          struct gantry_node_verdict *v);
/* True when backend @b attaches to leaf @leaf. */
bool gp_backend_on_leaf(const struct gp_backend *b, int leaf);
/* Takes present node @n's NIC out of its leaf's sum (before it goes or moves). */
void gp_node_detach(struct gantry_cluster *c, struct gp_node *n);

/* Computes what @d would take on node @node (present). */
void gp_charge_compute(const struct gantry_cluster *c, const struct gantry_pod_demand *d,
                       int node, struct gp_charge *ret_charge);
/* Adds (@sign 1) or gives back (@sign -1) a charge. */
void gp_charge_apply(struct gantry_cluster *c, const struct gp_charge *ch, int sign);
/*
 * Whether charge @ch fits on top of what is used now. When not, fills in
 * @v's cause, where, free, need and unresolvable (not its reason text) and
 * returns false.
 */
bool gp_charge_fits(const struct gantry_cluster *c, const struct gp_charge *ch,
                    struct gantry_node_verdict *v);
/* The folded reason of refusal @v (placement.h) into @buf. */
void gp_refusal_reason(const struct gantry_node_verdict *v, char *buf, size_t size);

/* Drops the entries charged on @node and gives their charges back; how many. */
size_t gp_ledger_release_node(struct gantry_cluster *c, int node);
/*
 * The ledger's core, for the gang bind (gang_member.c), which must give back
 * a slot and charge the member in one step under the held write lock:
 * adds (or replaces) @d's entry on node index @node, with the capacity check
 * when @check. Same answers as gantry_cluster_reserve(), with the new
 * entry's token in *@ret_token (may be NULL); @d's uid required.
 */
int gp_ledger_add_locked(struct gantry_cluster *c, const struct gantry_pod_demand *d, int node,
                         double expires_at, bool check, uint64_t *ret_token,
                         struct gantry_error *err);
/* Replaces entry @e's charge (same node) with @charge, giving back the old
 * one: the bookkeeping of gantry_cluster_recharge(), no capacity check. */
void gp_ledger_recharge_locked(struct gantry_cluster *c, struct gp_entry *e,
                               const struct gp_charge *charge);
/* Drops @uid's entry under the held write lock. 0 or -ENOENT. */
int gp_ledger_release_locked(struct gantry_cluster *c, const char *uid);
/*
 * The entry of @uid while it is the unconfirmed reservation that the add
 * which handed out @token made; NULL otherwise (none, replaced since, or
 * confirmed: *@ret_confirmed true then, may be NULL).
 */
struct gp_entry *gp_ledger_reservation_locked(struct gantry_cluster *c, const char *uid,
                                              uint64_t token, bool *ret_confirmed);

/* Frees every ledger entry (cluster teardown). */
void gp_ledger_clear(struct gantry_cluster *c);
/* Grows a dynamic array of @elem bytes to hold one more; 0 or -ENOMEM. */
int gp_grow(void **array, size_t *cap, size_t n, size_t elem);
