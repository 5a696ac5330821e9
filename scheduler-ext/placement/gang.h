/*
 * Gangs: all-or-nothing placement of a job's pods, on top of the placement
 * library (placement.h). gantry-scheduler's extender and `gantryctl sim`
 * both drive it.
 *
 * The model
 *   A gang is the pods that share a gang key (a job) and a size N (where the
 *   size comes from: gang_size.c). When its first member is filtered, the
 *   gang is planned whole: N slots, one per member, each a node chosen so
 *   that all N fit at once (GPUs, NICs, leaf uplinks, backends): one leaf
 *   when one leaf can feed the gang, else the fewest leaves under one spine.
 *   Every slot's charge is taken from the cluster at once: that is the gang
 *   reservation. Nothing else (another pod, another gang) can use it.
 *
 *   Members then take slots: a member's filter passes the node of its slot
 *   (only that one), its prioritize ranks it first, its bind moves the slot's
 *   charge to the member's own ledger entry in one step (no double count).
 *   A planned node missing from the nodes kube-scheduler offered (it sends a
 *   sample) or refused at bind (another plugin vetoed it): the member's slot
 *   moves to an offered node with room, within the gang's leaves first:
 *   re-planned within the reservation.
 *
 *   The reservation lives until every member is bound (the gang is whole:
 *   nothing held; a member deleted later gives its place back to the gang
 *   for its replacement, for @ttl), until all its pods are deleted, or until
 *   it expires (@ttl after the last member activity): then the slots not yet
 *   used are given back. Members that come later re-plan the gang around the members
 *   already bound (the same happens after a restart: the bound members are
 *   in the ledger, rebuilt from the API server).
 *
 * All or nothing, in order
 *   A gang that does not fit whole takes nothing: every member is refused
 *   with one reason naming the gang and the shortage, never a node or leaf
 *   (kube-scheduler folds identical reasons into one count). Gangs that do
 *   not fit wait in a queue ordered by their first member's arrival. A gang
 *   that is not the head of the queue is planned only when this cannot delay
 *   the head: if the head fits now, the newcomer must leave it fitting; if
 *   the head does not fit, the newcomer may not use the leaf the head is
 *   closest to fitting on (its "waiting leaf").
 *
 * Oversize gangs
 *   A gang that would not fit even on an empty cluster within one spine is
 *   refused with a reason that says so, unless its pods opt into spreading
 *   (spec.spread, the annotation gantry.io/gang-spread: "true"): then it is
 *   planned over the fewest leaves of any spines.
 *
 * Locking: every call takes the cluster's write lock (the reservation and the
 * gang table change together); calls are thread-safe.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "placement.h"

#define GANTRY_GANG_SIZE_MAX 4096 /* members of one gang */
/* How a filter's reason ends when the member's reserved place was not among
 * the nodes offered (kube-scheduler's sample): worth another try at once,
 * with another sample, rather than a refusal (see extender.c). */
#define GANTRY_GANG_RETRY_SUFFIX "; retry"

/* Which gang a member belongs to. */
struct gantry_gang_spec {
        const char *key; /* the gang's identity ("ns/job"); required */
        int size;        /* 1..GANTRY_GANG_SIZE_MAX */
        bool spread;     /* oversize: may span spines */
};

struct gantry_gangs;

/*
 * A new gang table over @c (borrowed; must outlive it). A reservation
 * expires @ttl seconds (> 0) after its gang's last member activity.
 * Returns 0 or -ENOMEM / -EINVAL.
 */
int gantry_gangs_new(struct gantry_cluster *c, double ttl, struct gantry_gangs **ret_gangs);
/* Gives back every reservation and frees the table; NULL is a no-op. */
void gantry_gangs_free(struct gantry_gangs *g);

/*
 * Filter for member @d (uid required) of gang @spec at time @now: plans the
 * gang when it has no plan, then passes only the member's slot node among
 * @nodes. @ret_verdicts as gantry_cluster_filter(). Returns 0, or -EINVAL
 * (bad spec / demand) / -ENOMEM with @err.
 */
int gantry_gangs_filter(struct gantry_gangs *g, const struct gantry_gang_spec *spec,
                        const struct gantry_pod_demand *d, const char *const *nodes, size_t n,
                        double now, struct gantry_node_verdict *ret_verdicts,
                        struct gantry_error *err);

/*
 * Prioritize for a member: the member's slot node GANTRY_PLACEMENT_SCORE_MAX,
 * other nodes of the gang's plan half of it, every other node 0.
 * Returns 0 or -EINVAL.
 */
int gantry_gangs_prioritize(struct gantry_gangs *g, const struct gantry_gang_spec *spec,
                            const struct gantry_pod_demand *d, const char *const *nodes, size_t n,
                            int *ret_scores, struct gantry_error *err);

/*
 * Bind-time reservation of a member on @node: its slot's charge becomes the
 * member's ledger entry (expiring at @expires_at until the watch confirms
 * it), in one step. A node without a slot of the gang: the member's own
 * place moves there when it fits (a member bound before to another node
 * gives that place back to the reservation: the last bind wins), else one
 * of the gang's free slots. A gang with no plan (expired): the plain
 * gantry_cluster_reserve(). *@ret_token (may be NULL): the reservation's
 * token, for gantry_gangs_unbind(). Returns as gantry_cluster_reserve().
 */
int gantry_gangs_bind(struct gantry_gangs *g, const struct gantry_gang_spec *spec,
                      const struct gantry_pod_demand *d, const char *node, double now,
                      double expires_at, uint64_t *ret_token, struct gantry_error *err);

/*
 * A bind that failed after gantry_gangs_bind() (the API server refused):
 * drops the member's unconfirmed entry that the bind of @token made and
 * gives the charge back to its slot, in one step; a later bind's entry is
 * left alone. Returns 0, -EALREADY (confirmed: kept) or -ENOENT (none, or
 * another bind's: kept).
 */
int gantry_gangs_unbind(struct gantry_gangs *g, const char *uid, uint64_t token);

/*
 * The watch saw pod @d (uid required) bound to @node at @now (the ledger
 * charges it already). @spec: its gang, NULL when it has none. A member's
 * slot is used (bound elsewhere: one free slot is given back). A member of
 * a gang the table does not know (a restart) makes the gang known: a gang
 * left partly bound is then planned first, before any new gang, so the
 * members it still waits for find room.
 */
void gantry_gangs_pod_bound(struct gantry_gangs *g, const struct gantry_gang_spec *spec,
                            const struct gantry_pod_demand *d, const char *node, double now);

/*
 * Pod @uid is gone (deleted or finished; the ledger released it) at @now:
 * a member's place goes back to its gang's reservation (the replacement pod
 * takes it; it expires like any reservation); a gang without members left
 * is dropped.
 */
void gantry_gangs_pod_gone(struct gantry_gangs *g, const char *uid, double now);

/*
 * Recovery after a start (or on taking over from another replica), once the
 * ledger holds every bound pod: plans at once every gang met with members
 * bound but not whole (partial), around its bound members (their leaves
 * first), so that its pending members find their places on their next
 * filter, ahead of any gang not yet started. A gang that cannot be planned
 * now stays partial (planned first at the next filter). Returns how many
 * gangs it planned.
 */
size_t gantry_gangs_recover(struct gantry_gangs *g, double now);
/* Gangs partial and not planned (what gantry_gangs_recover() could not place). */
size_t gantry_gangs_partial(struct gantry_gangs *g);
/* Whether gang @key is known with at least one member in the ledger. */
bool gantry_gangs_has_bound_member(struct gantry_gangs *g, const char *key);

/* Drops the reservations that expired at @now. Returns how many gangs. */
size_t gantry_gangs_expire(struct gantry_gangs *g, double now);

struct gantry_gangs_stats {
        size_t planned;    /* gangs holding a reservation */
        size_t waiting;    /* gangs in the queue (not fitting whole) */
        size_t held_slots; /* slots reserved, not yet used by a member */
};
void gantry_gangs_stats(struct gantry_gangs *g, struct gantry_gangs_stats *ret_stats);
