/*
 * A gang's reservation: plans it whole (around the members the ledger
 * already charges) in the queue's order, so that a gang that is not first
 * never delays the head, and takes the slots' charges from the cluster; and
 * the recovery that plans the gangs left partly bound at a start. The
 * nodes come from the planner (gang_plan.c). See gang.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gang_internal.h"

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
int gp_gang_reserve(struct gantry_gangs *g, struct gp_gang *gang, double now, char *reason,
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
                    gp_gang_reserve(g, x, now, why, sizeof(why), true, false) == 0)
                        x->partial = false;
        }
        gang->shortfall = (struct gantry_node_verdict){ 0 };
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

                if (!(slots[adopted].member = strdup(e->uid)) || gp_gang_member_add(g, gang, e->uid) < 0) {
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
                else if (gp_backend_shortfall(c, &gang->demand.d, k, &gang->shortfall))
                        /* the whole gang is more than the backend has free,
                         * whatever the leaf: say which state, not the numbers */
                        snprintf(reason, size,
                                 "gang %s: %d pods need %d GPUs and %.4g Gbps; the best leaf has room "
                                 "for %d (%s %s)",
                                 gang->key, k, k * gang->demand.d.gpus, k * demand_gbps(&gang->demand.d),
                                 miss.best_fit, gantry_refusal_cause_words(gang->shortfall.cause),
                                 gang->shortfall.condition ? gang->shortfall.condition : "full");
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
                if (gp_gang_reserve(g, x, now, reason, sizeof(reason), true, false) == 0) {
                        x->partial = false;
                        planned++;
                }
        }
        pthread_rwlock_unlock(&g->c->lock);
        return planned;
}
