/*
 * A live change of bound pods' demands (a volume's bandwidth changed by a
 * VolumeAttributesClass): the pods stay where they are, each one's charge is
 * recomputed on its node, and the change is admitted only when every link
 * that would carry more (node NIC, leaf uplink, storage leaf uplink, backend
 * at its effective capacity) has the extra free now. Only the increase is
 * checked: a link whose share falls or stays is never a reason to refuse,
 * so a decrease always succeeds, and a link already over its capacity
 * (a backend that degraded) refuses only more on top. The check and the new
 * charges happen in one step under the write lock, so two changes cannot
 * both take the last headroom. See placement.h.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "placement_internal.h"

/* The extra Gbps the change puts on each link, summed over its pods. */
struct link_deltas {
        double *nic;     /* per node */
        double *uplink;  /* per leaf: node side and storage side together */
        double *backend; /* per backend */
};

static void deltas_free(struct link_deltas *d)
{
        free(d->nic);
        free(d->uplink);
        free(d->backend);
}

static void deltas_add(struct link_deltas *d, const struct gp_charge *ch, int sign)
{
        d->nic[ch->node] += sign * ch->nic;
        if (ch->leaf >= 0)
                d->uplink[ch->leaf] += sign * ch->uplink;
        for (size_t k = 0; k < ch->n_sources; k++)
                d->uplink[ch->source_leaf[k]] += sign * ch->source_gbps[k];
        for (size_t k = 0; k < ch->n_backends; k++)
                d->backend[ch->backend[k]] += sign * ch->backend_gbps[k];
}

/* "4", "4.5": Gbps with one decimal at most, rounded down (free) or up (need). */
static const char *gbps(double v, bool up, char *buf, size_t size)
{
        v = v < 0 ? 0 : (up ? ceil(v * 10 - 1e-6) : floor(v * 10 + 1e-6)) / 10;
        snprintf(buf, size, "%.1f", v);
        return buf;
}

/* The refusal "leaf uplink leaf-3: 4.0 of 100.0 Gbps free, the change needs 8.0 more". */
static int refuse(enum gantry_refusal_cause cause, const char *where, double free_gbps,
                  double total, double need, const char *extra, struct gantry_error *err)
{
        char f[32], c[32], n[32];

        return gantry_error_set(err, ENOSPC, "%s %s: %s of %s Gbps free%s, the change needs %s more",
                                gantry_refusal_cause_words(cause), where,
                                gbps(free_gbps, false, f, sizeof(f)), gbps(total, false, c, sizeof(c)),
                                extra, gbps(need, true, n, sizeof(n)));
}

/* Whether a link of capacity @cap (0: unknown, never checked) takes @need more. */
static bool takes(double cap, double used, double need)
{
        return cap <= 0 || need <= GANTRY_GBPS_EPSILON || used + need <= cap + GANTRY_GBPS_EPSILON;
}

/* The first link that cannot take its increase: -ENOSPC naming it, else 0. */
static int check_deltas(const struct gantry_cluster *c, const struct link_deltas *d,
                        struct gantry_error *err)
{
        for (size_t i = 0; i < c->n_nodes; i++) {
                const struct gp_node *n = &c->nodes[i];

                if (!takes(n->nic_gbps, n->nic_used, d->nic[i]))
                        return refuse(GANTRY_REFUSAL_NIC, n->name, n->nic_gbps - n->nic_used,
                                      n->nic_gbps, d->nic[i], "", err);
        }
        for (size_t i = 0; i < c->n_leaves; i++) {
                const struct gp_leaf *l = &c->leaves[i];
                double cap = gp_leaf_uplink_capacity(l);

                if (!takes(cap, l->uplink_used, d->uplink[i]))
                        return refuse(GANTRY_REFUSAL_UPLINK, l->name, cap - l->uplink_used, cap,
                                      d->uplink[i], "", err);
        }
        for (size_t i = 0; i < c->n_backends; i++) {
                const struct gp_backend *b = &c->backends[i];
                struct gantry_node_verdict v = { 0 };
                char extra[96], e[32];

                if (d->backend[i] <= GANTRY_GBPS_EPSILON || !gp_backend_short(c, b, d->backend[i], &v))
                        continue;
                /* an observed backend: what admission charges against, and why */
                if (v.condition || v.capacity < v.nominal - GANTRY_GBPS_EPSILON)
                        snprintf(extra, sizeof(extra), " (effective %s%s%s)",
                                 gbps(v.capacity, false, e, sizeof(e)), v.condition ? ", " : "",
                                 v.condition ? v.condition : "");
                else
                        extra[0] = '\0';
                /* free of the effective capacity, out of the nominal */
                return refuse(v.cause, b->name, v.free, v.nominal, d->backend[i], extra, err);
        }
        return 0;
}

int gantry_cluster_recharge(struct gantry_cluster *c, const struct gantry_pod_demand *const *demands,
                            size_t n, size_t *ret_changed, struct gantry_error *err)
{
        struct link_deltas d = { 0 };
        struct gp_charge *charges = NULL;
        struct gp_entry **entries = NULL;
        size_t changed = 0;
        int r = 0;

        for (size_t i = 0; i < n; i++) {
                if ((r = gantry_pod_demand_validate(demands[i], err)) < 0)
                        return r;
                if (!demands[i]->uid || !*demands[i]->uid)
                        return gantry_error_set(err, EINVAL, "pod %s: uid: must not be empty",
                                                demands[i]->name ? demands[i]->name : "?");
        }
        pthread_rwlock_wrlock(&c->lock);
        d.nic = calloc(c->n_nodes + 1, sizeof(*d.nic));
        d.uplink = calloc(c->n_leaves + 1, sizeof(*d.uplink));
        d.backend = calloc(c->n_backends + 1, sizeof(*d.backend));
        charges = calloc(n + 1, sizeof(*charges));
        entries = calloc(n + 1, sizeof(*entries));
        if (!d.nic || !d.uplink || !d.backend || !charges || !entries) {
                r = gantry_error_set(err, ENOMEM, "out of memory");
                goto out;
        }
        for (size_t i = 0; i < n; i++) {
                /* a pod with no entry (its node not in the model yet) is
                 * charged with its new demand when the watch records it */
                entries[i] = strmap_get(c->entry_by_uid, demands[i]->uid);
                if (!entries[i])
                        continue;
                gp_charge_compute(c, demands[i], entries[i]->charge.node, &charges[i]);
                deltas_add(&d, &entries[i]->charge, -1);
                deltas_add(&d, &charges[i], 1);
        }
        if ((r = check_deltas(c, &d, err)) < 0)
                goto out;
        for (size_t i = 0; i < n; i++)
                if (entries[i]) {
                        gp_ledger_recharge_locked(c, entries[i], &charges[i]);
                        changed++;
                }
        if (ret_changed)
                *ret_changed = changed;
out:
        pthread_rwlock_unlock(&c->lock);
        deltas_free(&d);
        free(charges);
        free(entries);
        return r;
}
