/*
 * The gang table: gangs by key and by member, their slots, and what the
 * table answers about them (whole, partial, bound members, counts), up to
 * their end: expiry, retirement, drop. Planning and the reservation are
 * gang_reserve.c (the nodes: gang_plan.c), what a member's filter,
 * prioritize and bind get is gang_member.c, the watch's events are
 * gang_watch.c. See gang.h for the model.
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
void gp_gang_drop(struct gantry_gangs *g, struct gp_gang *gang)
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
                gp_gang_drop(g, g->gangs[0]);
        pthread_rwlock_unlock(&g->c->lock);
        free(g->gangs);
        strmap_free(g->by_key);
        strmap_free(g->by_member);
        free(g);
}

int gp_gang_spec_validate(const struct gantry_gang_spec *spec, struct gantry_error *err)
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

struct gp_gang *gp_gang_get_or_add(struct gantry_gangs *g, const struct gantry_gang_spec *spec,
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
int gp_gang_member_add(struct gantry_gangs *g, struct gp_gang *gang, const char *uid)
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

void gp_gang_member_remove(struct gantry_gangs *g, struct gp_gang *gang, const char *uid)
{
        for (size_t i = 0; i < gang->n_members; i++)
                if (!strcmp(gang->members[i], uid)) {
                        strmap_remove(g->by_member, uid);
                        free(gang->members[i]);
                        gang->members[i] = gang->members[--gang->n_members];
                        return;
                }
}

struct gp_slot *gp_gang_slot_of(struct gp_gang *gang, const char *uid)
{
        for (size_t i = 0; i < gang->n_slots; i++)
                if (gang->slots[i].member && !strcmp(gang->slots[i].member, uid))
                        return &gang->slots[i];
        return NULL;
}

struct gp_slot *gp_gang_slot_bound_to(struct gp_gang *gang, struct gp_slot *mine, int node)
{
        struct gp_slot *s = mine && !mine->used && mine->node == node ? mine : NULL;

        for (size_t j = 0; !s && j < gang->n_slots; j++)
                if (!gang->slots[j].member && !gang->slots[j].used && gang->slots[j].node == node)
                        s = &gang->slots[j];
        if (!s)
                s = mine;
        for (size_t j = 0; !s && j < gang->n_slots; j++)
                if (!gang->slots[j].member && !gang->slots[j].used)
                        s = &gang->slots[j];
        return s;
}

/* Planned, and every member bound: nothing is held for it. */
bool gp_gang_whole(const struct gp_gang *gang)
{
        if (!gang->planned)
                return false;
        for (size_t i = 0; i < gang->n_slots; i++)
                if (!gang->slots[i].used)
                        return false;
        return true;
}

/*
 * A used slot whose member left it (gone, or bound to another node: its
 * ledger entry no longer carries the slot's charge): the place goes back to
 * the reservation while it still fits on its node, else it is lost (placed
 * again by the next member's filter).
 */
void gp_gang_slot_give_back(struct gantry_gangs *g, struct gp_slot *s)
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

/* Members of @gang the ledger charges (bound, or bind in flight). */
int gp_gang_bound_members(const struct gantry_gangs *g, const struct gp_gang *gang)
{
        int n = 0;

        for (size_t i = 0; i < gang->n_members; i++)
                n += strmap_get(g->c->entry_by_uid, gang->members[i]) != NULL;
        return n;
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
                r = gp_gang_bound_members(g, gang) > 0;
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

                if ((gang->planned && !gp_gang_whole(gang) && gang->expires_at <= now) ||
                    (!gang->planned && !gang->retired &&
                     gang->last_seen + QUEUE_FORGET_TTLS * g->ttl <= now)) {
                        n++;
                        if (gp_gang_bound_members(g, gang) > 0) {
                                retire(g, gang);
                                i++;
                        } else {
                                gp_gang_drop(g, gang); /* moves the last gang into slot i */
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

                if (gang->planned && !gp_gang_whole(gang))
                        s.planned++;
                else if (!gang->oversize && !gang->retired && gang->n_members > 0)
                        s.waiting++;
                for (size_t j = 0; j < gang->n_slots; j++)
                        s.held_slots += gang->slots[j].held;
        }
        pthread_rwlock_unlock(&g->c->lock);
        *ret_stats = s;
}
