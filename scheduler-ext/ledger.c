/*
 * The bandwidth ledger: what each pod takes from node NICs, leaf uplinks,
 * storage backends and GPUs, keyed by pod UID. Entries are recorded from the
 * watch (bound pods) or reserved at bind time, atomically with the capacity
 * check; reservations expire unless the watch confirms them. See placement.h.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "placement_internal.h"

int gantry_pod_demand_validate(const struct gantry_pod_demand *d, struct gantry_error *err)
{
        if (d->n_flows > GANTRY_PLACEMENT_MAX_FLOWS)
                return gantry_error_set(err, EINVAL, "pod %s: more than %d storage flows",
                                        d->name ? d->name : "?", GANTRY_PLACEMENT_MAX_FLOWS);
        if (d->gpus < 0)
                return gantry_error_set(err, EINVAL, "pod %s: gpus: must be >= 0",
                                        d->name ? d->name : "?");
        for (size_t i = 0; i < d->n_flows; i++)
                if (!isfinite(d->flows[i].gbps) || d->flows[i].gbps < 0)
                        return gantry_error_set(err, EINVAL,
                                                "pod %s: flows[%zu].gbps: must be a number >= 0",
                                                d->name ? d->name : "?", i);
        if (d->uid && strlen(d->uid) > GANTRY_PLACEMENT_NAME_MAX)
                return gantry_error_set(err, EINVAL, "pod %s: uid: too long",
                                        d->name ? d->name : "?");
        return 0;
}

void gp_charge_compute(const struct gantry_cluster *c, const struct gantry_pod_demand *d,
                       int node, struct gp_charge *ret_charge)
{
        const struct gp_node *n = &c->nodes[node];
        struct gp_charge ch = { .node = node, .leaf = n->leaf, .gpus = d->gpus };

        for (size_t i = 0; i < d->n_flows; i++) {
                double g = d->flows[i].gbps;
                int b = d->flows[i].backend ? gp_find_backend(c, d->flows[i].backend) : -1;
                size_t k;

                ch.nic += g;
                if (b < 0 || !gp_backend_on_leaf(&c->backends[b], n->leaf))
                        ch.uplink += g;
                if (b < 0)
                        continue;
                for (k = 0; k < ch.n_backends && ch.backend[k] != b; k++)
                        ;
                if (k == ch.n_backends) {
                        ch.backend[k] = b;
                        ch.backend_gbps[k] = 0;
                        ch.n_backends++;
                }
                ch.backend_gbps[k] += g;
        }
        *ret_charge = ch;
}

void gp_charge_apply(struct gantry_cluster *c, const struct gp_charge *ch, int sign)
{
        c->nodes[ch->node].nic_used += sign * ch->nic;
        c->nodes[ch->node].gpus_used += sign * ch->gpus;
        if (ch->leaf >= 0)
                c->leaves[ch->leaf].uplink_used += sign * ch->uplink;
        for (size_t k = 0; k < ch->n_backends; k++)
                c->backends[ch->backend[k]].used += sign * ch->backend_gbps[k];
}

/* "12", "12.5": Gbps as a person writes them. */
static const char *gbps_str(double v, char *buf, size_t size)
{
        if (v < 0)
                v = 0;
        snprintf(buf, size, "%.4g", floor(v * 10 + 1e-6) / 10);
        return buf;
}

static bool short_of(double cap, double used, double need, const char *what, char *reason,
                     size_t size)
{
        char f[32], n[32];

        if (cap <= 0 || need <= 0 || used + need <= cap + GANTRY_GBPS_EPSILON)
                return false;
        if (reason)
                snprintf(reason, size, "%s: %s Gbps free, pod needs %s Gbps", what,
                         gbps_str(cap - used, f, sizeof(f)), gbps_str(need, n, sizeof(n)));
        return true;
}

bool gp_charge_fits(const struct gantry_cluster *c, const struct gp_charge *ch, char *reason,
                    size_t size, bool *ret_unresolvable)
{
        const struct gp_node *n = &c->nodes[ch->node];
        char what[GANTRY_PLACEMENT_NAME_MAX + 16];

        if (ret_unresolvable)
                *ret_unresolvable = true;
        /* reachability first: no amount of headroom fixes it */
        for (size_t k = 0; k < ch->n_backends; k++) {
                const struct gp_backend *b = &c->backends[ch->backend[k]];

                if (b->kind != GANTRY_BACKEND_NVMEOF)
                        continue;
                if (!(n->transports & b->transport)) {
                        if (reason)
                                snprintf(reason, size, "target %s: serves %s only, %s has no %s",
                                         b->name,
                                         b->transport == GANTRY_TRANSPORT_RDMA ? "rdma" : "tcp",
                                         n->name,
                                         b->transport == GANTRY_TRANSPORT_RDMA ? "rdma" : "tcp");
                        return false;
                }
                if (b->same_leaf_only && !gp_backend_on_leaf(b, n->leaf)) {
                        if (reason)
                                snprintf(reason, size,
                                         "target %s: reachable only from its own leaves, %s is on %s",
                                         b->name, n->name,
                                         n->leaf >= 0 ? c->leaves[n->leaf].name : "no leaf");
                        return false;
                }
        }
        if (ret_unresolvable)
                *ret_unresolvable = false;
        if (n->gpus > 0 && ch->gpus > 0 && n->gpus_used + ch->gpus > n->gpus) {
                if (reason)
                        snprintf(reason, size, "%s: %d GPUs free, pod needs %d", n->name,
                                 n->gpus - n->gpus_used, ch->gpus);
                return false;
        }
        snprintf(what, sizeof(what), "%s NIC", n->name);
        if (short_of(n->nic_gbps, n->nic_used, ch->nic, what, reason, size))
                return false;
        if (ch->leaf >= 0) {
                const struct gp_leaf *l = &c->leaves[ch->leaf];

                snprintf(what, sizeof(what), "%s uplink", l->name);
                if (short_of(gp_leaf_uplink_capacity(l), l->uplink_used, ch->uplink, what, reason,
                             size))
                        return false;
        }
        for (size_t k = 0; k < ch->n_backends; k++) {
                const struct gp_backend *b = &c->backends[ch->backend[k]];

                snprintf(what, sizeof(what), "%s %s",
                         b->kind == GANTRY_BACKEND_NVMEOF ? "target" : "backend", b->name);
                if (short_of(b->gbps, b->used, ch->backend_gbps[k], what, reason, size))
                        return false;
        }
        return true;
}

static void entry_free(struct gp_entry *e)
{
        if (!e)
                return;
        free(e->uid);
        free(e->job);
        free(e);
}

/* Unlinks @e from the ledger and gives back its charge; does not free it. */
static void entry_unlink(struct gantry_cluster *c, struct gp_entry *e)
{
        gp_charge_apply(c, &e->charge, -1);
        strmap_remove(c->entry_by_uid, e->uid);
        c->entries[e->index] = c->entries[--c->n_entries];
        c->entries[e->index]->index = e->index;
        if (e->expires_at > 0)
                c->n_reservations--;
}

/* Links @e (charge computed) into the ledger and charges it. */
static int entry_link(struct gantry_cluster *c, struct gp_entry *e)
{
        if (gp_grow((void **)&c->entries, &c->cap_entries, c->n_entries, sizeof(*c->entries)) < 0 ||
            strmap_put(c->entry_by_uid, e->uid, e) < 0)
                return -ENOMEM;
        e->index = c->n_entries;
        c->entries[c->n_entries++] = e;
        if (e->expires_at > 0)
                c->n_reservations++;
        gp_charge_apply(c, &e->charge, 1);
        return 0;
}

static int entry_new(const struct gantry_pod_demand *d, double expires_at, struct gp_entry **ret)
{
        struct gp_entry *e = calloc(1, sizeof(*e));

        if (!e || !(e->uid = strdup(d->uid)) || (d->job && *d->job && !(e->job = strdup(d->job)))) {
                entry_free(e);
                return -ENOMEM;
        }
        e->expires_at = expires_at;
        *ret = e;
        return 0;
}

int gp_ledger_add_locked(struct gantry_cluster *c, const struct gantry_pod_demand *d, int node,
                         double expires_at, bool check, struct gantry_error *err)
{
        struct gp_entry *e = NULL, *old;
        char reason[GANTRY_PLACEMENT_REASON_MAX];
        int r;

        if (entry_new(d, expires_at, &e) < 0)
                return gantry_error_set(err, ENOMEM, "out of memory");
        /* a retried bind or a re-seen pod replaces its own entry, never adds */
        old = strmap_get(c->entry_by_uid, d->uid);
        if (old && check && old->expires_at <= 0) {
                /* a bind never touches a pod the watch saw bound */
                r = gantry_error_set(err, EALREADY, "already bound to %s",
                                     c->nodes[old->charge.node].name);
                goto out;
        }
        if (old)
                entry_unlink(c, old);
        gp_charge_compute(c, d, node, &e->charge);
        if (check && !gp_charge_fits(c, &e->charge, reason, sizeof(reason), NULL)) {
                if (old)
                        entry_link(c, old); /* cannot fail: it was linked a moment ago */
                r = gantry_error_set(err, ENOSPC, "%s", reason);
                goto out;
        }
        entry_free(old);
        r = entry_link(c, e);
        if (r < 0) {
                r = gantry_error_set(err, ENOMEM, "out of memory");
                goto out;
        }
        e = NULL;
out:
        entry_free(e);
        return r;
}

/* Shared by reserve and record: @check selects the capacity check. */
static int ledger_add(struct gantry_cluster *c, const struct gantry_pod_demand *d,
                      const char *node, double expires_at, bool check, struct gantry_error *err)
{
        int r, i;

        if ((r = gantry_pod_demand_validate(d, err)) < 0)
                return r;
        if (!d->uid || !*d->uid)
                return gantry_error_set(err, EINVAL, "pod %s: uid: must not be empty",
                                        d->name ? d->name : "?");
        if (!node || !*node)
                return gantry_error_set(err, EINVAL, "node: must not be empty");

        pthread_rwlock_wrlock(&c->lock);
        i = gp_find_node(c, node);
        if (i < 0)
                r = gantry_error_set(err, ENOENT, "%s: unknown to gantry-scheduler (no Node seen yet)",
                                     node);
        else
                r = gp_ledger_add_locked(c, d, i, expires_at, check, err);
        pthread_rwlock_unlock(&c->lock);
        return r;
}

int gantry_cluster_reserve(struct gantry_cluster *c, const struct gantry_pod_demand *d,
                           const char *node, double expires_at, struct gantry_error *err)
{
        return ledger_add(c, d, node, expires_at > 0 ? expires_at : 0, true, err);
}

int gantry_cluster_record(struct gantry_cluster *c, const struct gantry_pod_demand *d,
                          const char *node, struct gantry_error *err)
{
        return ledger_add(c, d, node, 0, false, err);
}

int gp_ledger_release_locked(struct gantry_cluster *c, const char *uid)
{
        struct gp_entry *e = uid ? strmap_get(c->entry_by_uid, uid) : NULL;

        if (!e)
                return -ENOENT;
        entry_unlink(c, e);
        entry_free(e);
        return 0;
}

int gantry_cluster_release(struct gantry_cluster *c, const char *uid)
{
        int r;

        pthread_rwlock_wrlock(&c->lock);
        r = gp_ledger_release_locked(c, uid);
        pthread_rwlock_unlock(&c->lock);
        return r;
}

int gantry_cluster_release_reservation(struct gantry_cluster *c, const char *uid)
{
        struct gp_entry *e;
        int r = -ENOENT;

        pthread_rwlock_wrlock(&c->lock);
        e = uid ? strmap_get(c->entry_by_uid, uid) : NULL;
        if (e && e->expires_at <= 0) {
                r = -EALREADY;
                e = NULL;
        } else if (e) {
                entry_unlink(c, e);
                r = 0;
        }
        pthread_rwlock_unlock(&c->lock);
        entry_free(e);
        return r;
}

size_t gantry_cluster_expire(struct gantry_cluster *c, double now)
{
        size_t n = 0;

        pthread_rwlock_wrlock(&c->lock);
        for (size_t i = 0; i < c->n_entries;) {
                struct gp_entry *e = c->entries[i];

                if (e->expires_at > 0 && e->expires_at <= now) {
                        entry_unlink(c, e); /* moves the last entry into slot i */
                        entry_free(e);
                        n++;
                } else {
                        i++;
                }
        }
        pthread_rwlock_unlock(&c->lock);
        return n;
}

int gantry_cluster_lookup(struct gantry_cluster *c, const char *uid, char *buf, size_t size)
{
        struct gp_entry *e;
        int r = -ENOENT;

        pthread_rwlock_rdlock(&c->lock);
        e = strmap_get(c->entry_by_uid, uid);
        if (e) {
                const char *name = c->nodes[e->charge.node].name;

                r = strlen(name) < size ? 0 : -ENAMETOOLONG;
                if (r == 0)
                        memcpy(buf, name, strlen(name) + 1);
        }
        pthread_rwlock_unlock(&c->lock);
        return r;
}

void gp_ledger_clear(struct gantry_cluster *c)
{
        for (size_t i = 0; i < c->n_entries; i++)
                entry_free(c->entries[i]);
        c->n_entries = 0;
        c->n_reservations = 0;
}
