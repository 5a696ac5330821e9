/*
 * What a gang member's extender verbs get from the gang table: its filter
 * passes only its slot's node (moving the slot to an offered node near the
 * gang when kube-scheduler's sample missed it), its prioritize ranks that
 * node first, its bind moves the slot's charge to the member's ledger entry
 * in one step, and a failed bind gives it back. See gang.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gang_internal.h"

static int name_index(const char *const *nodes, size_t n, const char *name)
{
        for (size_t i = 0; i < n; i++)
                if (!strcmp(nodes[i], name))
                        return (int)i;
        return -1;
}

/* Whether @node (index) is among the offered @nodes. */
static bool offered(const struct gantry_cluster *c, int node, const char *const *nodes, size_t n)
{
        return node >= 0 && name_index(nodes, n, c->nodes[node].name) >= 0;
}

/*
 * Moves @s (held, or lost) to an offered node with room for it on one of the
 * gang's leaves (never a new leaf: that would take a piece of a leaf another
 * gang may need whole). Returns 0 or -ENOSPC (@s unchanged).
 */
static int slot_move(struct gantry_gangs *g, struct gp_gang *gang, struct gp_slot *s,
                     const char *const *nodes, size_t n)
{
        struct gantry_cluster *c = g->c;
        struct gantry_node_verdict v;

        if (s->held)
                gp_charge_apply(c, &s->charge, -1);
        for (size_t i = 0; i < n; i++) {
                int node = gp_find_node(c, nodes[i]);
                bool near = false;
                struct gp_charge ch;

                if (node < 0)
                        continue;
                for (size_t j = 0; j < gang->n_slots && !near; j++)
                        near = gang->slots[j].node >= 0 &&
                               gp_gang_node_group(c, gang->slots[j].node) ==
                                       gp_gang_node_group(c, node);
                if (!near)
                        continue;
                gp_charge_compute(c, &gang->demand.d, node, &ch);
                if (!gp_charge_fits(c, &ch, &v))
                        continue;
                gp_charge_apply(c, &ch, 1);
                s->node = node;
                s->charge = ch;
                s->held = true;
                return 0;
        }
        if (s->held)
                gp_charge_apply(c, &s->charge, 1);
        return -ENOSPC;
}

/* The slot a member filtered now should take: its own, else a free one on an
 * offered node, else any free one. NULL when every place is taken. */
static struct gp_slot *slot_for(struct gantry_gangs *g, struct gp_gang *gang, const char *uid,
                                const char *const *nodes, size_t n)
{
        struct gp_slot *s = gp_gang_slot_of(gang, uid), *any = NULL;

        if (s)
                return s;
        for (size_t i = 0; i < gang->n_slots; i++) {
                struct gp_slot *x = &gang->slots[i];

                if (x->member || x->used)
                        continue;
                if (x->held && offered(g->c, x->node, nodes, n))
                        return x;
                if (!any || (!any->held && x->held))
                        any = x;
        }
        return any;
}

static void refuse_all(struct gantry_node_verdict *v, size_t n, const char *reason)
{
        for (size_t i = 0; i < n; i++) {
                v[i].fits = false;
                v[i].unresolvable = false;
                v[i].cause = GANTRY_REFUSAL_GANG;
                v[i].where = NULL;
                v[i].free = v[i].need = v[i].capacity = v[i].nominal = 0;
                v[i].condition = NULL;
                snprintf(v[i].reason, sizeof(v[i].reason), "%s", reason);
        }
}

/* The backend a refused gang is short of, for the log and the held pods'
 * events (gantry_node_verdict_detail()); the reasons stay as they are. */
static void shortfall_copy(struct gantry_node_verdict *v, size_t n,
                           const struct gantry_node_verdict *s)
{
        for (size_t i = 0; i < n; i++) {
                v[i].where = s->where;
                v[i].free = s->free;
                v[i].need = s->need;
                v[i].capacity = s->capacity;
                v[i].nominal = s->nominal;
                v[i].condition = s->condition;
        }
}

int gantry_gangs_filter(struct gantry_gangs *g, const struct gantry_gang_spec *spec,
                        const struct gantry_pod_demand *d, const char *const *nodes, size_t n,
                        double now, struct gantry_node_verdict *ret_verdicts,
                        struct gantry_error *err)
{
        char reason[GANTRY_PLACEMENT_REASON_MAX];
        struct gp_gang *gang;
        struct gp_slot *s;
        int r;

        if ((r = gp_gang_spec_validate(spec, err)) < 0 || (r = gantry_pod_demand_validate(d, err)) < 0)
                return r;
        if (!d->uid || !*d->uid)
                return gantry_error_set(err, EINVAL, "pod %s: uid: must not be empty",
                                        d->name ? d->name : "?");
        pthread_rwlock_wrlock(&g->c->lock);
        gang = gp_gang_get_or_add(g, spec, d);
        if (!gang || gp_gang_member_add(g, gang, d->uid) < 0) {
                r = gantry_error_set(err, ENOMEM, "gang %s: too many gangs or members", spec->key);
                goto out;
        }
        gang->last_seen = now;
        gang->retired = false; /* a member to place: it queues and plans again */
        if (!gang->planned) {
                r = gp_gang_reserve(g, gang, now, reason, sizeof(reason), false, true);
                if (r == -ENOMEM) {
                        r = gantry_error_set(err, ENOMEM, "%s", reason);
                        goto out;
                }
                if (r < 0) {
                        refuse_all(ret_verdicts, n, reason);
                        if (r == -ENOSPC && gang->shortfall.where)
                                shortfall_copy(ret_verdicts, n, &gang->shortfall);
                        r = 0;
                        goto out;
                }
        }
        gang->expires_at = now + g->ttl;
        s = slot_for(g, gang, d->uid, nodes, n);
        if (!s) {
                snprintf(reason, sizeof(reason), "gang %s: all %zu places are taken by other members",
                         gang->key, gang->n_slots);
                refuse_all(ret_verdicts, n, reason);
                r = 0;
                goto out;
        }
        if (!s->used && !offered(g->c, s->node, nodes, n) &&
            slot_move(g, gang, s, nodes, n) < 0) {
                /* kube-scheduler sent a sample without the gang's nodes: retry */
                snprintf(reason, sizeof(reason),
                         "gang %s: no node offered is in the gang's reservation or near it "
                         "with room" GANTRY_GANG_RETRY_SUFFIX, gang->key);
                refuse_all(ret_verdicts, n, reason);
                r = 0;
                goto out;
        }
        if (!s->member && !(s->member = strdup(d->uid))) {
                r = gantry_error_set(err, ENOMEM, "out of memory");
                goto out;
        }
        snprintf(reason, sizeof(reason), "gang %s: this pod's place is reserved on another node",
                 gang->key);
        for (size_t i = 0; i < n; i++) {
                bool mine = s->node >= 0 && !strcmp(nodes[i], g->c->nodes[s->node].name);

                ret_verdicts[i].fits = mine;
                ret_verdicts[i].unresolvable = false;
                ret_verdicts[i].cause = mine ? GANTRY_REFUSAL_NONE : GANTRY_REFUSAL_GANG;
                ret_verdicts[i].where = NULL;
                ret_verdicts[i].free = ret_verdicts[i].need = 0;
                ret_verdicts[i].capacity = ret_verdicts[i].nominal = 0;
                ret_verdicts[i].condition = NULL;
                snprintf(ret_verdicts[i].reason, sizeof(ret_verdicts[i].reason), "%s",
                         mine ? "" : reason);
        }
        r = 0;
out:
        pthread_rwlock_unlock(&g->c->lock);
        return r;
}

int gantry_gangs_prioritize(struct gantry_gangs *g, const struct gantry_gang_spec *spec,
                            const struct gantry_pod_demand *d, const char *const *nodes, size_t n,
                            int *ret_scores, struct gantry_error *err)
{
        struct gp_gang *gang;
        struct gp_slot *mine;
        int r;

        if ((r = gp_gang_spec_validate(spec, err)) < 0 || (r = gantry_pod_demand_validate(d, err)) < 0)
                return r;
        pthread_rwlock_rdlock(&g->c->lock);
        gang = strmap_get(g->by_key, spec->key);
        mine = gang && d->uid ? gp_gang_slot_of(gang, d->uid) : NULL;
        for (size_t i = 0; i < n; i++) {
                int node = gp_find_node(g->c, nodes[i]);

                ret_scores[i] = 0;
                if (node < 0 || !gang)
                        continue;
                if (mine && mine->node == node) {
                        ret_scores[i] = GANTRY_PLACEMENT_SCORE_MAX;
                        continue;
                }
                for (size_t j = 0; j < gang->n_slots; j++)
                        if (gang->slots[j].node == node)
                                ret_scores[i] = GANTRY_PLACEMENT_SCORE_MAX / 2;
        }
        pthread_rwlock_unlock(&g->c->lock);
        return 0;
}

int gantry_gangs_bind(struct gantry_gangs *g, const struct gantry_gang_spec *spec,
                      const struct gantry_pod_demand *d, const char *node, double now,
                      double expires_at, uint64_t *ret_token, struct gantry_error *err)
{
        struct gp_gang *gang;
        struct gp_slot *s = NULL, *mine;
        int r, i;

        if ((r = gp_gang_spec_validate(spec, err)) < 0 || (r = gantry_pod_demand_validate(d, err)) < 0)
                return r;
        if (!d->uid || !*d->uid || !node || !*node)
                return gantry_error_set(err, EINVAL, "pod %s: uid and node: must not be empty",
                                        d->name ? d->name : "?");
        pthread_rwlock_wrlock(&g->c->lock);
        i = gp_find_node(g->c, node);
        if (i < 0) {
                r = gantry_error_set(err, ENOENT, "%s: unknown to gantry-scheduler (no Node seen yet)",
                                     node);
                goto out;
        }
        gang = strmap_get(g->by_key, spec->key);
        if (!gang || !gang->planned) {
                r = gp_ledger_add_locked(g->c, d, i, expires_at, true, ret_token, err);
                goto out;
        }
        gang->expires_at = now + g->ttl;
        gang->last_seen = now;
        mine = gp_gang_slot_of(gang, d->uid);
        if (mine && mine->used && mine->node == i) {
                /* a retried bind */
                r = gp_ledger_add_locked(g->c, d, i, expires_at, true, ret_token, err);
                goto out;
        }
        /* bound elsewhere already, its own place moves here: the bind that
         * runs last wins, as in the ledger */
        s = gp_gang_slot_bound_to(gang, mine, i);
        if (!s) {
                r = gp_ledger_add_locked(g->c, d, i, expires_at, true, ret_token, err);
                goto out;
        }
        if (s->held)
                gp_charge_apply(g->c, &s->charge, -1);
        /* replaces the member's entry (another bind's, on another node) */
        r = gp_ledger_add_locked(g->c, d, i, expires_at, true, ret_token, err);
        if (r < 0) {
                if (s->held)
                        gp_charge_apply(g->c, &s->charge, 1);
                goto out;
        }
        if (mine && mine != s) {
                free(mine->member);
                mine->member = NULL;
                if (mine->used)
                        gp_gang_slot_give_back(g, mine); /* its entry was the one replaced */
        }
        if (!s->member && !(s->member = strdup(d->uid))) {
                /* charged, but untracked: the slot stays free, expiry tidies */
                if (s->held)
                        gp_charge_apply(g->c, &s->charge, 1);
                gp_ledger_release_locked(g->c, d->uid);
                r = gantry_error_set(err, ENOMEM, "out of memory");
                goto out;
        }
        gp_gang_member_add(g, gang, d->uid);
        s->node = i;
        gp_charge_compute(g->c, d, i, &s->charge);
        s->held = false;
        s->used = true;
out:
        pthread_rwlock_unlock(&g->c->lock);
        return r;
}

int gantry_gangs_unbind(struct gantry_gangs *g, const char *uid, uint64_t token)
{
        struct gp_gang *gang;
        struct gp_slot *s;
        struct gp_entry *e;
        bool confirmed;
        int r = -ENOENT, node;

        pthread_rwlock_wrlock(&g->c->lock);
        e = gp_ledger_reservation_locked(g->c, uid, token, &confirmed);
        gang = e ? strmap_get(g->by_member, uid) : NULL;
        s = gang ? gp_gang_slot_of(gang, uid) : NULL;
        if (confirmed) {
                r = -EALREADY;
        } else if (e) {
                node = e->charge.node;
                r = gp_ledger_release_locked(g->c, uid);
                if (s && s->used && s->node == node) {
                        /* the place goes back to the reservation, in the same step */
                        gp_charge_apply(g->c, &s->charge, 1);
                        s->used = false;
                        s->held = true;
                }
        }
        pthread_rwlock_unlock(&g->c->lock);
        return r;
}
