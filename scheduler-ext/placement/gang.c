/*
 * The gang table: gangs, their reservations (slots charged in the cluster),
 * the queue of gangs that do not fit, and what a member's filter, prioritize
 * and bind get from them. The planner that picks the nodes is gang_plan.c.
 * See gang.h for the model.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gang_internal.h"

#define GANGS_MAX 65536            /* gangs tracked at once */
#define QUEUE_FORGET_TTLS 4        /* a waiting gang unseen this many TTLs is forgotten */

int gantry_gangs_new(struct gantry_cluster *c, double ttl, struct gantry_gangs **ret_gangs)
{
        struct gantry_gangs *g;

        if (!c || !(ttl > 0))
                return -EINVAL;
        g = calloc(1, sizeof(*g));
        if (!g)
                return -ENOMEM;
        g->c = c;
        g->ttl = ttl;
        if (strmap_new(&g->by_key) < 0 || strmap_new(&g->by_member) < 0) {
                strmap_free(g->by_key);
                free(g);
                return -ENOMEM;
        }
        *ret_gangs = g;
        return 0;
}

static void gang_free(struct gp_gang *gang)
{
        if (!gang)
                return;
        for (size_t i = 0; i < gang->n_slots; i++)
                free(gang->slots[i].member);
        for (size_t i = 0; i < gang->n_members; i++)
                free(gang->members[i]);
        for (size_t i = 0; i < GANTRY_PLACEMENT_MAX_FLOWS; i++)
                free(gang->demand.backend[i]);
        free(gang->slots);
        free(gang->members);
        free(gang->key);
        free(gang);
}

/* Gives back the slots still held (the reservation) and forgets the plan. */
static void unplan(struct gantry_gangs *g, struct gp_gang *gang)
{
        for (size_t i = 0; i < gang->n_slots; i++) {
                if (gang->slots[i].held)
                        gp_charge_apply(g->c, &gang->slots[i].charge, -1);
                free(gang->slots[i].member);
        }
        free(gang->slots);
        gang->slots = NULL;
        gang->n_slots = 0;
        gang->planned = false;
}

/* Forgets a gang: its reservation, its members, its place in the queue. */
static void gang_drop(struct gantry_gangs *g, struct gp_gang *gang)
{
        unplan(g, gang);
        for (size_t i = 0; i < gang->n_members; i++)
                strmap_remove(g->by_member, gang->members[i]);
        strmap_remove(g->by_key, gang->key);
        for (size_t i = 0; i < g->n_gangs; i++)
                if (g->gangs[i] == gang) {
                        g->gangs[i] = g->gangs[--g->n_gangs];
                        break;
                }
        gang_free(gang);
}

void gantry_gangs_free(struct gantry_gangs *g)
{
        if (!g)
                return;
        pthread_rwlock_wrlock(&g->c->lock);
        while (g->n_gangs > 0)
                gang_drop(g, g->gangs[0]);
        pthread_rwlock_unlock(&g->c->lock);
        free(g->gangs);
        strmap_free(g->by_key);
        strmap_free(g->by_member);
        free(g);
}

static int spec_validate(const struct gantry_gang_spec *spec, struct gantry_error *err)
{
        if (!spec->key || !*spec->key || strlen(spec->key) > 2 * GANTRY_PLACEMENT_NAME_MAX + 34)
                return gantry_error_set(err, EINVAL, "gang key: must be a non-empty name");
        if (spec->size < 1 || spec->size > GANTRY_GANG_SIZE_MAX)
                return gantry_error_set(err, EINVAL, "gang %s: size %d: must be 1..%d", spec->key,
                                        spec->size, GANTRY_GANG_SIZE_MAX);
        return 0;
}

static int demand_copy(struct gp_gang_demand *dst, const struct gantry_pod_demand *d,
                       const char *key)
{
        dst->d = *d;
        dst->d.uid = NULL;
        dst->d.name = key;
        dst->d.job = key;
        for (size_t i = 0; i < d->n_flows; i++) {
                dst->d.flows[i].backend = NULL;
                if (d->flows[i].backend) {
                        if (!(dst->backend[i] = strdup(d->flows[i].backend)))
                                return -ENOMEM;
                        dst->d.flows[i].backend = dst->backend[i];
                }
        }
        return 0;
}

static struct gp_gang *gang_get_or_add(struct gantry_gangs *g, const struct gantry_gang_spec *spec,
                                       const struct gantry_pod_demand *d)
{
        struct gp_gang *gang = strmap_get(g->by_key, spec->key);

        if (gang)
                return gang;
        if (g->n_gangs >= GANGS_MAX ||
            gp_grow((void **)&g->gangs, &g->cap_gangs, g->n_gangs, sizeof(*g->gangs)) < 0)
                return NULL;
        gang = calloc(1, sizeof(*gang));
        if (!gang || !(gang->key = strdup(spec->key)) ||
            demand_copy(&gang->demand, d, gang->key) < 0 || strmap_put(g->by_key, spec->key, gang) < 0) {
                gang_free(gang);
                return NULL;
        }
        gang->size = spec->size;
        gang->spread = spec->spread;
        gang->arrival = ++g->next_arrival;
        g->gangs[g->n_gangs++] = gang;
        return gang;
}

/* Maps @uid to @gang (a member seen). 0 or -ENOMEM / -E2BIG. */
static int member_add(struct gantry_gangs *g, struct gp_gang *gang, const char *uid)
{
        char *copy;

        if (strmap_get(g->by_member, uid) == gang)
                return 0;
        if (gang->n_members >= 2 * GANTRY_GANG_SIZE_MAX)
                return -E2BIG;
        if (gp_grow((void **)&gang->members, &gang->cap_members, gang->n_members,
                    sizeof(*gang->members)) < 0 || !(copy = strdup(uid)))
                return -ENOMEM;
        if (strmap_put(g->by_member, uid, gang) < 0) {
                free(copy);
                return -ENOMEM;
        }
        gang->members[gang->n_members++] = copy;
        return 0;
}

static void member_remove(struct gantry_gangs *g, struct gp_gang *gang, const char *uid)
{
        for (size_t i = 0; i < gang->n_members; i++)
                if (!strcmp(gang->members[i], uid)) {
                        strmap_remove(g->by_member, uid);
                        free(gang->members[i]);
                        gang->members[i] = gang->members[--gang->n_members];
                        return;
                }
}

static struct gp_slot *slot_of(struct gp_gang *gang, const char *uid)
{
        for (size_t i = 0; i < gang->n_slots; i++)
                if (gang->slots[i].member && !strcmp(gang->slots[i].member, uid))
                        return &gang->slots[i];
        return NULL;
}

/* Planned, and every member bound: nothing is held for it. */
static bool whole(const struct gp_gang *gang)
{
        if (!gang->planned)
                return false;
        for (size_t i = 0; i < gang->n_slots; i++)
                if (!gang->slots[i].used)
                        return false;
        return true;
}

/* The gang first in the queue (waiting, oldest arrival), other than @except. */
static struct gp_gang *queue_head(struct gantry_gangs *g, const struct gp_gang *except)
{
        struct gp_gang *head = NULL;

        for (size_t i = 0; i < g->n_gangs; i++) {
                struct gp_gang *x = g->gangs[i];

                if (x == except || x->planned || x->oversize || x->retired || x->n_members == 0)
                        continue;
                if (!head || x->arrival < head->arrival)
                        head = x;
        }
        return head;
}

/* Whether @gang would fit whole now; on a miss, which leaf group it is closest on. */
static int dry_plan(struct gantry_gangs *g, struct gp_gang *gang, struct gp_plan_miss *ret_miss)
{
        struct gp_charge *ch = calloc(gang->size, sizeof(*ch));
        int r;

        if (!ch)
                return -ENOMEM;
        r = gp_gang_plan(g->c, &gang->demand.d, gang->size, NULL, -1, gang->spread, ch, ret_miss);
        if (r == 0)
                for (int i = gang->size; i-- > 0;)
                        gp_charge_apply(g->c, &ch[i], -1);
        free(ch);
        return r;
}

static double demand_gbps(const struct gantry_pod_demand *d)
{
        double s = 0;

        for (size_t i = 0; i < d->n_flows; i++)
                s += d->flows[i].gbps;
        return s;
}

/*
 * Plans @gang: adopts the members already in the ledger (bound before: a
 * restart, an expired plan), then reserves slots for the rest, in queue
 * order. @nested: called for another gang's plan (no recursion). @spare: the
 * pod at hand needs a place even when the gang is whole (a replacement).
 * Returns 0, -ENOSPC / -E2BIG (oversize) / -EBUSY (behind the head) with
 * @reason written, or -ENOMEM.
 */
static int plan(struct gantry_gangs *g, struct gp_gang *gang, double now, char *reason,
                size_t size, bool nested, bool spare)
{
        struct gantry_cluster *c = g->c;
        struct gp_plan_miss miss = { .best_group = -1 };
        const struct gp_job_members *members;
        struct gp_gang *head;
        struct gp_slot *slots;
        struct gp_charge *ch = NULL;
        int *prefer, avoid = -1, r, k, adopted = 0, head_fits = -1;

        /* gangs left partly bound (seen so after a restart) go first */
        for (size_t i = 0; !nested && i < g->n_gangs; i++) {
                struct gp_gang *x = g->gangs[i];
                char why[GANTRY_PLACEMENT_REASON_MAX];

                if (x != gang && x->partial && !x->planned &&
                    plan(g, x, now, why, sizeof(why), true, false) == 0)
                        x->partial = false;
        }
        head = queue_head(g, gang);
        slots = calloc(gang->size + 1, sizeof(*slots));
        prefer = calloc(c->n_leaves + 1, sizeof(int));
        if (!slots || !prefer) {
                r = -ENOMEM;
                goto fail;
        }
        /* members the ledger already charges: their places are taken */
        members = gp_job_members_get(c, gang->key);
        for (size_t i = 0; members && i < members->n && adopted < gang->size; i++) {
                const struct gp_entry *e = members->v[i];

                if (!(slots[adopted].member = strdup(e->uid)) || member_add(g, gang, e->uid) < 0) {
                        r = -ENOMEM;
                        adopted++;
                        goto fail;
                }
                slots[adopted].node = e->charge.node;
                slots[adopted].charge = e->charge;
                slots[adopted].used = true;
                prefer[gp_gang_node_group(c, e->charge.node)]++;
                adopted++;
        }
        /* a gang whole already still places the pod at hand (a replacement) */
        k = gang->size - adopted > 0 ? gang->size - adopted : spare ? 1 : 0;
        if (!(ch = calloc(k > 0 ? k : 1, sizeof(*ch)))) {
                r = -ENOMEM;
                goto fail;
        }
        /* a gang with members bound (a replacement pod, a restart) completes
         * first: it holds GPUs already; otherwise the queue's order holds */
        if (!adopted && head && head->arrival < gang->arrival) {
                head_fits = dry_plan(g, head, &miss);
                if (head_fits == -ENOMEM) {
                        r = -ENOMEM;
                        goto fail;
                }
                if (head_fits < 0)
                        avoid = miss.best_group; /* the leaf the head waits for */
        }
        r = k == 0 ? 0
                   : gp_gang_plan(c, &gang->demand.d, k, adopted ? prefer : NULL, avoid,
                                  gang->spread, ch, &miss);
        if (r == 0 && head_fits == 0 && dry_plan(g, head, NULL) != 0) {
                /* it would take what the head of the queue needs now */
                for (int i = k; i-- > 0;)
                        gp_charge_apply(c, &ch[i], -1);
                snprintf(reason, size, "gang %s: waits behind gang %s, first in the queue",
                         gang->key, head->key);
                r = -EBUSY;
                goto fail;
        }
        if (r == -ENOSPC) {
                gang->oversize = !gp_gang_fits_empty(c, &gang->demand.d, k, gang->spread);
                if (gang->oversize)
                        snprintf(reason, size,
                                 "gang %s: %d pods need more than one spine can feed (at most %d on "
                                 "one leaf); annotate them gantry.io/gang-spread: \"true\" to spread",
                                 gang->key, k, miss.best_fit);
                else
                        snprintf(reason, size,
                                 "gang %s: %d pods need %d GPUs and %.4g Gbps; the best leaf has room "
                                 "for %d (%s full)",
                                 gang->key, k, k * gang->demand.d.gpus, k * demand_gbps(&gang->demand.d),
                                 miss.best_fit, miss.short_of);
                r = gang->oversize ? -E2BIG : -ENOSPC;
                goto fail;
        }
        if (r < 0)
                goto fail;
        for (int i = 0; i < k; i++) {
                slots[adopted + i].node = ch[i].node;
                slots[adopted + i].charge = ch[i];
                slots[adopted + i].held = true;
        }
        gang->slots = slots;
        gang->n_slots = adopted + k;
        gang->planned = true;
        gang->oversize = false;
        gang->partial = false;
        gang->expires_at = now + g->ttl;
        free(ch);
        free(prefer);
        return 0;
fail:
        if (r == -ENOMEM)
                snprintf(reason, size, "gang %s: out of memory", gang->key);
        for (int i = 0; slots && i < adopted; i++)
                free(slots[i].member);
        free(slots);
        free(ch);
        free(prefer);
        return r;
}

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
        struct gp_slot *s = slot_of(gang, uid), *any = NULL;

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
                v[i].free = v[i].need = 0;
                snprintf(v[i].reason, sizeof(v[i].reason), "%s", reason);
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

        if ((r = spec_validate(spec, err)) < 0 || (r = gantry_pod_demand_validate(d, err)) < 0)
                return r;
        if (!d->uid || !*d->uid)
                return gantry_error_set(err, EINVAL, "pod %s: uid: must not be empty",
                                        d->name ? d->name : "?");
        pthread_rwlock_wrlock(&g->c->lock);
        gang = gang_get_or_add(g, spec, d);
        if (!gang || member_add(g, gang, d->uid) < 0) {
                r = gantry_error_set(err, ENOMEM, "gang %s: too many gangs or members", spec->key);
                goto out;
        }
        gang->last_seen = now;
        gang->retired = false; /* a member to place: it queues and plans again */
        if (!gang->planned) {
                r = plan(g, gang, now, reason, sizeof(reason), false, true);
                if (r == -ENOMEM) {
                        r = gantry_error_set(err, ENOMEM, "%s", reason);
                        goto out;
                }
                if (r < 0) {
                        refuse_all(ret_verdicts, n, reason);
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

        if ((r = spec_validate(spec, err)) < 0 || (r = gantry_pod_demand_validate(d, err)) < 0)
                return r;
        pthread_rwlock_rdlock(&g->c->lock);
        gang = strmap_get(g->by_key, spec->key);
        mine = gang && d->uid ? slot_of(gang, d->uid) : NULL;
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


/*
 * A used slot whose member left it (gone, or bound to another node: its
 * ledger entry no longer carries the slot's charge): the place goes back to
 * the reservation while it still fits on its node, else it is lost (placed
 * again by the next member's filter).
 */
static void slot_give_back(struct gantry_gangs *g, struct gp_slot *s)
{
        struct gantry_node_verdict v;

        s->used = false;
        if (s->node >= 0 && gp_find_node(g->c, g->c->nodes[s->node].name) >= 0 &&
            gp_charge_fits(g->c, &s->charge, &v)) {
                gp_charge_apply(g->c, &s->charge, 1);
                s->held = true;
        } else {
                s->node = -1;
        }
}

int gantry_gangs_bind(struct gantry_gangs *g, const struct gantry_gang_spec *spec,
                      const struct gantry_pod_demand *d, const char *node, double now,
                      double expires_at, uint64_t *ret_token, struct gantry_error *err)
{
        struct gp_gang *gang;
        struct gp_slot *s = NULL, *mine;
        int r, i;

        if ((r = spec_validate(spec, err)) < 0 || (r = gantry_pod_demand_validate(d, err)) < 0)
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
        mine = slot_of(gang, d->uid);
        if (mine && mine->used && mine->node == i) {
                /* a retried bind */
                r = gp_ledger_add_locked(g->c, d, i, expires_at, true, ret_token, err);
                goto out;
        }
        if (mine && !mine->used && mine->node == i)
                s = mine;
        for (size_t j = 0; !s && j < gang->n_slots; j++)
                if (!gang->slots[j].member && !gang->slots[j].used && gang->slots[j].node == i)
                        s = &gang->slots[j];
        /* not a planned node (another plugin chose it): the member's own
         * place moves here (bound elsewhere already: the bind that runs last
         * wins, as in the ledger), else a free one */
        if (!s)
                s = mine;
        for (size_t j = 0; !s && j < gang->n_slots; j++)
                if (!gang->slots[j].member && !gang->slots[j].used)
                        s = &gang->slots[j];
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
                        slot_give_back(g, mine); /* its entry was the one replaced */
        }
        if (!s->member && !(s->member = strdup(d->uid))) {
                /* charged, but untracked: the slot stays free, expiry tidies */
                if (s->held)
                        gp_charge_apply(g->c, &s->charge, 1);
                gp_ledger_release_locked(g->c, d->uid);
                r = gantry_error_set(err, ENOMEM, "out of memory");
                goto out;
        }
        member_add(g, gang, d->uid);
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
        s = gang ? slot_of(gang, uid) : NULL;
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

/* Members of @gang the ledger charges (bound, or bind in flight). */
static int bound_members(const struct gantry_gangs *g, const struct gp_gang *gang)
{
        int n = 0;

        for (size_t i = 0; i < gang->n_members; i++)
                n += strmap_get(g->c->entry_by_uid, gang->members[i]) != NULL;
        return n;
}

/* A gang met through its bound members only (a restart): whole, or partial. */
static void note_bound_member(struct gantry_gangs *g, struct gp_gang *gang, double now)
{
        char reason[GANTRY_PLACEMENT_REASON_MAX];

        gang->last_seen = now;
        if (bound_members(g, gang) < gang->size) {
                /* a retired gang's missing members finished: none will come */
                gang->partial = !gang->retired;
                return;
        }
        /* whole: its plan is where its members are (nothing to hold) */
        gang->partial = false;
        plan(g, gang, now, reason, sizeof(reason), true, false);
}

void gantry_gangs_pod_bound(struct gantry_gangs *g, const struct gantry_gang_spec *spec,
                            const struct gantry_pod_demand *d, const char *node, double now)
{
        struct gp_gang *gang;
        struct gp_slot *s = NULL, *mine;
        const char *uid = d ? d->uid : NULL;
        int i;

        if (!uid || !*uid || (spec && spec_validate(spec, NULL) < 0))
                return;
        pthread_rwlock_wrlock(&g->c->lock);
        gang = strmap_get(g->by_member, uid);
        i = node ? gp_find_node(g->c, node) : -1;
        if (!gang && spec) {
                gang = strmap_get(g->by_key, spec->key);
                if (!gang && (gang = gang_get_or_add(g, spec, d)))
                        gang->arrival = 0; /* bound members: ahead of every new gang */
                if (!gang || member_add(g, gang, uid) < 0)
                        goto out;
                if (!gang->planned) {
                        note_bound_member(g, gang, now);
                        goto out;
                }
        }
        if (!gang || !gang->planned || i < 0)
                goto out;
        mine = slot_of(gang, uid);
        if (mine && mine->used)
                goto out; /* bound through gantry_gangs_bind(): nothing to move */
        if (mine && mine->node == i)
                s = mine;
        for (size_t j = 0; !s && j < gang->n_slots; j++)
                if (!gang->slots[j].member && !gang->slots[j].used && gang->slots[j].node == i)
                        s = &gang->slots[j];
        if (!s)
                s = mine;
        for (size_t j = 0; !s && j < gang->n_slots; j++)
                if (!gang->slots[j].member && !gang->slots[j].used)
                        s = &gang->slots[j];
        if (!s)
                goto out;
        /* the ledger charges the pod now: the slot's hold is given back */
        if (s->held)
                gp_charge_apply(g->c, &s->charge, -1);
        if (mine && mine != s) {
                free(mine->member);
                mine->member = NULL;
        }
        if (!s->member && !(s->member = strdup(uid))) {
                s->held = false;
                s->node = -1; /* lost: placed again by the next member's filter */
                goto out;
        }
        s->node = i;
        s->held = false;
        s->used = true;
out:
        pthread_rwlock_unlock(&g->c->lock);
}

void gantry_gangs_pod_gone(struct gantry_gangs *g, const char *uid, double now)
{
        struct gp_gang *gang;
        struct gp_slot *s;

        pthread_rwlock_wrlock(&g->c->lock);
        gang = uid ? strmap_get(g->by_member, uid) : NULL;
        if (!gang)
                goto out;
        s = slot_of(gang, uid);
        if (s) {
                free(s->member);
                s->member = NULL;
                if (s->used) {
                        /* its place goes back to the reservation, if still free,
                         * for the replacement pod; it expires like any other */
                        gang->expires_at = now + g->ttl;
                        slot_give_back(g, s);
                }
        }
        member_remove(g, gang, uid);
        if (gang->n_members == 0)
                gang_drop(g, gang); /* every pod of the gang is gone */
out:
        pthread_rwlock_unlock(&g->c->lock);
}

size_t gantry_gangs_recover(struct gantry_gangs *g, double now)
{
        char reason[GANTRY_PLACEMENT_REASON_MAX];
        size_t planned = 0;

        pthread_rwlock_wrlock(&g->c->lock);
        for (size_t i = 0; i < g->n_gangs; i++) {
                struct gp_gang *x = g->gangs[i];

                if (!x->partial || x->planned)
                        continue;
                x->last_seen = now;
                if (plan(g, x, now, reason, sizeof(reason), true, false) == 0) {
                        x->partial = false;
                        planned++;
                }
        }
        pthread_rwlock_unlock(&g->c->lock);
        return planned;
}

size_t gantry_gangs_partial(struct gantry_gangs *g)
{
        size_t n = 0;

        pthread_rwlock_rdlock(&g->c->lock);
        for (size_t i = 0; i < g->n_gangs; i++)
                n += g->gangs[i]->partial && !g->gangs[i]->planned;
        pthread_rwlock_unlock(&g->c->lock);
        return n;
}

bool gantry_gangs_has_bound_member(struct gantry_gangs *g, const char *key)
{
        struct gp_gang *gang;
        bool r = false;

        pthread_rwlock_rdlock(&g->c->lock);
        gang = key ? strmap_get(g->by_key, key) : NULL;
        if (gang)
                r = bound_members(g, gang) > 0;
        pthread_rwlock_unlock(&g->c->lock);
        return r;
}

/*
 * A gang whose reservation expired, or that waited too long, while members
 * of it are still bound: its holds go back, but the gang stays known until
 * its last member is gone. Forgotten, the next event of a running member
 * would bring it back as partial, planned first with places reserved for
 * members that finished long ago, again after every expiry.
 */
static void retire(struct gantry_gangs *g, struct gp_gang *gang)
{
        unplan(g, gang);
        gang->partial = false;
        gang->retired = true;
}

size_t gantry_gangs_expire(struct gantry_gangs *g, double now)
{
        size_t n = 0;

        pthread_rwlock_wrlock(&g->c->lock);
        for (size_t i = 0; i < g->n_gangs;) {
                struct gp_gang *gang = g->gangs[i];

                if ((gang->planned && !whole(gang) && gang->expires_at <= now) ||
                    (!gang->planned && !gang->retired &&
                     gang->last_seen + QUEUE_FORGET_TTLS * g->ttl <= now)) {
                        n++;
                        if (bound_members(g, gang) > 0) {
                                retire(g, gang);
                                i++;
                        } else {
                                gang_drop(g, gang); /* moves the last gang into slot i */
                        }
                } else {
                        i++;
                }
        }
        pthread_rwlock_unlock(&g->c->lock);
        return n;
}

void gantry_gangs_stats(struct gantry_gangs *g, struct gantry_gangs_stats *ret_stats)
{
        struct gantry_gangs_stats s = { 0 };

        pthread_rwlock_rdlock(&g->c->lock);
        for (size_t i = 0; i < g->n_gangs; i++) {
                const struct gp_gang *gang = g->gangs[i];

                if (gang->planned && !whole(gang))
                        s.planned++;
                else if (!gang->oversize && !gang->retired && gang->n_members > 0)
                        s.waiting++;
                for (size_t j = 0; j < gang->n_slots; j++)
                        s.held_slots += gang->slots[j].held;
        }
        pthread_rwlock_unlock(&g->c->lock);
        *ret_stats = s;
}
