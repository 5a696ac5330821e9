/*
 * The decisions of the placement library: filter (does the pod fit on each
 * node, and if not, why) and prioritize (gang locality, headroom left,
 * closeness to the pod's backends). Read-only over the model and ledger:
 * both take the cluster's lock shared. See placement.h.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "placement_internal.h"

/* Folded reasons already formatted in one filter call: most refusals of a
 * pod share a handful of (cause, need) pairs, so each is printed once. */
#define REASON_CACHE 8

struct reason_cache {
        size_t n, next;
        enum gantry_refusal_cause cause[REASON_CACHE];
        double need[REASON_CACHE];
        const char *condition[REASON_CACHE];
        char text[REASON_CACHE][GANTRY_PLACEMENT_REASON_MAX];
};

static void set_reason(struct reason_cache *rc, struct gantry_node_verdict *v)
{
        size_t k;

        for (k = 0; k < rc->n; k++)
                if (rc->cause[k] == v->cause && rc->need[k] == v->need &&
                    rc->condition[k] == v->condition)
                        break;
        if (k == rc->n) {
                k = rc->n < REASON_CACHE ? rc->n++ : rc->next++ % REASON_CACHE;
                rc->cause[k] = v->cause;
                rc->need[k] = v->need;
                rc->condition[k] = v->condition;
                gp_refusal_reason(v, rc->text[k], sizeof(rc->text[k]));
        }
        memcpy(v->reason, rc->text[k], strlen(rc->text[k]) + 1);
}

int gantry_cluster_filter(struct gantry_cluster *c, const struct gantry_pod_demand *d,
                          const char *const *nodes, size_t n,
                          struct gantry_node_verdict *ret_verdicts, struct gantry_error *err)
{
        struct reason_cache *rc;
        int r;

        if ((r = gantry_pod_demand_validate(d, err)) < 0)
                return r;
        rc = malloc(sizeof(*rc));
        if (!rc)
                return gantry_error_set(err, ENOMEM, "out of memory");
        rc->n = rc->next = 0;
        pthread_rwlock_rdlock(&c->lock);
        for (size_t i = 0; i < n; i++) {
                struct gantry_node_verdict *v = &ret_verdicts[i];
                int node = gp_find_node(c, nodes[i]);
                struct gp_charge ch;

                if (node < 0) {
                        *v = (struct gantry_node_verdict){ .cause = GANTRY_REFUSAL_UNKNOWN_NODE };
                } else {
                        gp_charge_compute(c, d, node, &ch);
                        v->fits = gp_charge_fits(c, &ch, v);
                }
                if (v->fits)
                        v->reason[0] = '\0';
                else
                        set_reason(rc, v);
        }
        pthread_rwlock_unlock(&c->lock);
        free(rc);
        return 0;
}

/* Where the job's other pods are: counts per leaf and per spine. */
struct job_spread {
        int *per_leaf, *per_spine;
        int total;
};

static int job_spread_build(const struct gantry_cluster *c, const struct gantry_pod_demand *d,
                            struct job_spread *ret)
{
        struct job_spread s = { 0 };
        const struct gp_job_members *m;

        if (!d->job || !*d->job) {
                *ret = s;
                return 0;
        }
        s.per_leaf = calloc(c->n_leaves + 1, sizeof(int));
        s.per_spine = calloc(c->n_spines + 1, sizeof(int));
        if (!s.per_leaf || !s.per_spine) {
                free(s.per_leaf);
                free(s.per_spine);
                return -ENOMEM;
        }
        m = gp_job_members_get(c, d->job);
        for (size_t i = 0; m && i < m->n; i++) {
                const struct gp_entry *e = m->v[i];
                int spine;

                if (d->uid && !strcmp(e->uid, d->uid))
                        continue;
                s.total++;
                if (e->charge.leaf >= 0)
                        s.per_leaf[e->charge.leaf]++;
                spine = gp_node_spine(c, &c->nodes[e->charge.node]);
                if (spine >= 0)
                        s.per_spine[spine]++;
        }
        *ret = s;
        return 0;
}

static double clamp01(double v)
{
        return v < 0 ? 0 : v > 1 ? 1 : v;
}

/* Free fraction of a link after taking @need more; 1 when capacity is unknown. */
static double free_after(double cap, double used, double need)
{
        return cap > 0 ? clamp01((cap - used - need) / cap) : 1;
}

static double locality(const struct gantry_cluster *c, const struct job_spread *s, int node)
{
        const struct gp_node *n = &c->nodes[node];
        int spine = gp_node_spine(c, n);

        if (s->total == 0) {
                /* a job's first pod: the leaf with most uplink room, so the gang fits */
                if (n->leaf < 0)
                        return 0.5;
                const struct gp_leaf *l = &c->leaves[n->leaf];

                return free_after(gp_leaf_uplink_capacity(l), l->uplink_used, 0);
        }
        if (n->leaf >= 0 && s->per_leaf[n->leaf] > 0)
                return 0.6 + 0.4 * (double)s->per_leaf[n->leaf] / s->total;
        if (spine >= 0 && s->per_spine[spine] > 0)
                return 0.3 + 0.2 * (double)s->per_spine[spine] / s->total;
        return 0;
}

static double headroom(const struct gantry_cluster *c, const struct gp_charge *ch)
{
        const struct gp_node *n = &c->nodes[ch->node];
        double h = free_after(n->nic_gbps, n->nic_used, ch->nic);

        if (ch->leaf >= 0) {
                const struct gp_leaf *l = &c->leaves[ch->leaf];

                h = fmin(h, free_after(gp_leaf_uplink_capacity(l), l->uplink_used, ch->uplink));
        }
        return h;
}

static double closeness(const struct gantry_cluster *c, const struct gp_charge *ch)
{
        const struct gp_node *n = &c->nodes[ch->node];
        int spine = gp_node_spine(c, n);
        double sum = 0, weight = 0;

        for (size_t k = 0; k < ch->n_backends; k++) {
                const struct gp_backend *b = &c->backends[ch->backend[k]];
                double w = ch->backend_gbps[k] > 0 ? ch->backend_gbps[k] : 1e-3;
                double v = 0;

                if (gp_backend_on_leaf(b, n->leaf)) {
                        v = 1;
                } else {
                        for (size_t j = 0; spine >= 0 && j < b->n_leaves; j++)
                                if (c->leaves[b->leaves[j]].spine == spine)
                                        v = 0.5;
                }
                sum += w * v;
                weight += w;
        }
        return weight > 0 ? sum / weight : 1;
}

int gantry_cluster_prioritize(struct gantry_cluster *c, const struct gantry_pod_demand *d,
                              const char *const *nodes, size_t n, int *ret_scores,
                              struct gantry_error *err)
{
        struct job_spread s;
        struct gantry_score_weights w;
        double wsum;
        int r;

        if ((r = gantry_pod_demand_validate(d, err)) < 0)
                return r;
        pthread_rwlock_rdlock(&c->lock);
        if (job_spread_build(c, d, &s) < 0) {
                pthread_rwlock_unlock(&c->lock);
                return gantry_error_set(err, ENOMEM, "out of memory");
        }
        w = c->weights;
        if (!d->job || !*d->job)
                w.locality = 0; /* no gang to keep together */
        wsum = w.locality + w.headroom + w.closeness;
        for (size_t i = 0; i < n; i++) {
                int node = gp_find_node(c, nodes[i]);
                struct gp_charge ch;
                double v;

                if (node < 0 || wsum <= 0) {
                        ret_scores[i] = 0;
                        continue;
                }
                gp_charge_compute(c, d, node, &ch);
                v = w.headroom * headroom(c, &ch) + w.closeness * closeness(c, &ch);
                if (w.locality > 0)
                        v += w.locality * locality(c, &s, node);
                ret_scores[i] = (int)lround(GANTRY_PLACEMENT_SCORE_MAX * clamp01(v / wsum));
        }
        pthread_rwlock_unlock(&c->lock);
        free(s.per_leaf);
        free(s.per_spine);
        return 0;
}
