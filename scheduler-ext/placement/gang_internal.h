/*
 * Private state of the gang table (gang.h): gangs and their slots (gang.c),
 * their reservation (gang_reserve.c), the member verbs (gang_member.c), the
 * watch's events (gang_watch.c) and the planner that chooses the slots'
 * nodes (gang_plan.c). Every function here expects the caller to hold the
 * cluster's write lock.
 */
#pragma once

#include <stdint.h>

#include "gang.h"
#include "placement_internal.h"

/* One member's place in a gang's plan. */
struct gp_slot {
        int node;                /* -1: lost (its node went away), to be placed again */
        struct gp_charge charge; /* what the slot holds on its node */
        bool held;               /* the charge is taken from the cluster now */
        bool used;               /* the member is bound here: its ledger entry carries it */
        char *member;            /* uid of the member it is assigned to; NULL free */
};

/* A copy of the members' demand the gang was planned with (owned strings). */
struct gp_gang_demand {
        struct gantry_pod_demand d;
        char *backend[GANTRY_PLACEMENT_MAX_FLOWS];
};

struct gp_gang {
        char *key;
        int size;
        bool spread;
        bool planned;            /* slots chosen and reserved */
        bool oversize;           /* does not fit even on an empty cluster */
        bool partial;            /* seen with members bound and not planned: plan first */
        bool retired;            /* expired with members still bound: kept (their events
                                  * must not make it partial again), out of the queue */
        uint64_t arrival;        /* first member's arrival: the queue order */
        double expires_at;       /* planned: reservation expiry */
        double last_seen;        /* last member activity */
        struct gp_gang_demand demand;
        /* the last plan's miss when a backend was what it lacked: where,
         * free, need (the gang's), capacity, condition; where NULL: none */
        struct gantry_node_verdict shortfall;
        struct gp_slot *slots;
        size_t n_slots;
        char **members;          /* uids seen (filter, ledger) */
        size_t n_members, cap_members;
};

struct gantry_gangs {
        struct gantry_cluster *c;
        double ttl;
        uint64_t next_arrival;
        struct strmap *by_key;    /* key -> struct gp_gang * */
        struct strmap *by_member; /* uid -> struct gp_gang * */
        struct gp_gang **gangs;   /* dense, for scans */
        size_t n_gangs, cap_gangs;
};

/* What a plan found out when it failed: for the refusal reason and the queue. */
struct gp_plan_miss {
        int best_fit;            /* most members one leaf can take now */
        int best_group;          /* that leaf's group index (see gang_plan.c), -1 none */
        const char *short_of;    /* gantry_refusal_cause_words(): "GPUs", "leaf uplink", ... */
};

/*
 * Plans @k members of demand @d: chooses a node per member so that all fit at
 * once (one leaf, else the fewest leaves under one spine; any spines when
 * @spread), preferring the leaves counted in @prefer (indexed by leaf; may be
 * NULL) and never using leaf group @avoid (-1: none). On success takes the
 * charges from the cluster, writes them to @ret_charges (room for @k) and
 * returns 0. Otherwise takes nothing, returns -ENOSPC and fills @ret_miss.
 * Returns -ENOMEM when out of memory.
 */
int gp_gang_plan(struct gantry_cluster *c, const struct gantry_pod_demand *d, int k,
                 const int *prefer, int avoid, bool spread, struct gp_charge *ret_charges,
                 struct gp_plan_miss *ret_miss);

/* Whether @k members of @d would fit on the cluster with nothing charged. */
bool gp_gang_fits_empty(struct gantry_cluster *c, const struct gantry_pod_demand *d, int k,
                        bool spread);

/* The group (leaf index, or the group of leafless nodes) of node @node. */
int gp_gang_node_group(const struct gantry_cluster *c, int node);

/* The table (gang.c). */
/* Checks a gang spec: key non-empty and short, size 1..GANTRY_GANG_SIZE_MAX. */
int gp_gang_spec_validate(const struct gantry_gang_spec *spec, struct gantry_error *err);
/* Gang @spec's entry, added (queued last) when new; NULL when out of memory or full. */
struct gp_gang *gp_gang_get_or_add(struct gantry_gangs *g, const struct gantry_gang_spec *spec,
                                   const struct gantry_pod_demand *d);
/* Forgets a gang: its reservation, its members, its place in the queue; frees it. */
void gp_gang_drop(struct gantry_gangs *g, struct gp_gang *gang);
/* Maps @uid to @gang (a member seen). 0 or -ENOMEM / -E2BIG. */
int gp_gang_member_add(struct gantry_gangs *g, struct gp_gang *gang, const char *uid);
void gp_gang_member_remove(struct gantry_gangs *g, struct gp_gang *gang, const char *uid);
/* The slot assigned to member @uid, NULL when none. */
struct gp_slot *gp_gang_slot_of(struct gp_gang *gang, const char *uid);
/*
 * The slot a member bound to node @node takes (@mine: its own, or NULL): its
 * own when planned there and free, else a free one planned there; not a
 * planned node (another plugin chose it): its own place moves here, else any
 * free one. NULL: none left. The bind and the watch's bound pod both ask.
 */
struct gp_slot *gp_gang_slot_bound_to(struct gp_gang *gang, struct gp_slot *mine, int node);
/* Planned, and every member bound: nothing is held for it. */
bool gp_gang_whole(const struct gp_gang *gang);
/* A used slot its member left (gone, or bound elsewhere) goes back to the
 * reservation while it fits on its node, else it is lost (node -1). */
void gp_gang_slot_give_back(struct gantry_gangs *g, struct gp_slot *s);
/* Members of @gang the ledger charges (bound, or bind in flight). */
int gp_gang_bound_members(const struct gantry_gangs *g, const struct gp_gang *gang);

/*
 * The reservation (gang_reserve.c): plans @gang around its members in the
 * ledger and reserves slots for the rest, in queue order. @nested: for
 * another gang's plan (no recursion). @spare: the pod at hand needs a place
 * even when the gang is whole. Returns 0, -ENOSPC / -E2BIG (oversize) /
 * -EBUSY (behind the head) with @reason written, or -ENOMEM.
 */
int gp_gang_reserve(struct gantry_gangs *g, struct gp_gang *gang, double now, char *reason,
                    size_t size, bool nested, bool spare);
