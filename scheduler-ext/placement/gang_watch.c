/*
 * The watch's events for the gang table: a pod seen bound uses its gang's
 * slot (and makes a gang met only through bound members known: partial, or
 * whole), a pod gone gives its place back to the reservation for a
 * replacement, and a gang with no member left is dropped. See gang.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gang_internal.h"

/* A gang met through its bound members only (a restart): whole, or partial. */
static void note_bound_member(struct gantry_gangs *g, struct gp_gang *gang, double now)
{
        char reason[GANTRY_PLACEMENT_REASON_MAX];

        gang->last_seen = now;
        if (gp_gang_bound_members(g, gang) < gang->size) {
                /* a retired gang's missing members finished: none will come */
                gang->partial = !gang->retired;
                return;
        }
        /* whole: its plan is where its members are (nothing to hold) */
        gang->partial = false;
        gp_gang_reserve(g, gang, now, reason, sizeof(reason), true, false);
}

void gantry_gangs_pod_bound(struct gantry_gangs *g, const struct gantry_gang_spec *spec,
                            const struct gantry_pod_demand *d, const char *node, double now)
{
        struct gp_gang *gang;
        struct gp_slot *s = NULL, *mine;
        const char *uid = d ? d->uid : NULL;
        int i;

        if (!uid || !*uid || (spec && gp_gang_spec_validate(spec, NULL) < 0))
                return;
        pthread_rwlock_wrlock(&g->c->lock);
        gang = strmap_get(g->by_member, uid);
        i = node ? gp_find_node(g->c, node) : -1;
        if (!gang && spec) {
                gang = strmap_get(g->by_key, spec->key);
                if (!gang && (gang = gp_gang_get_or_add(g, spec, d)))
                        gang->arrival = 0; /* bound members: ahead of every new gang */
                if (!gang || gp_gang_member_add(g, gang, uid) < 0)
                        goto out;
                if (!gang->planned) {
                        note_bound_member(g, gang, now);
                        goto out;
                }
        }
        if (!gang || !gang->planned || i < 0)
                goto out;
        mine = gp_gang_slot_of(gang, uid);
        if (mine && mine->used)
                goto out; /* bound through gantry_gangs_bind(): nothing to move */
        if (!(s = gp_gang_slot_bound_to(gang, mine, i)))
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
        s = gp_gang_slot_of(gang, uid);
        if (s) {
                free(s->member);
                s->member = NULL;
                if (s->used) {
                        /* its place goes back to the reservation, if still free,
                         * for the replacement pod; it expires like any other */
                        gang->expires_at = now + g->ttl;
                        gp_gang_slot_give_back(g, s);
                }
        }
        gp_gang_member_remove(g, gang, uid);
        if (gang->n_members == 0)
                gp_gang_drop(g, gang); /* every pod of the gang is gone */
out:
        pthread_rwlock_unlock(&g->c->lock);
}
