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

/*
 * Charges the uplinks of backend @b's leaves with @g Gbps read from it by a
 * node on another leaf, 1/k from each of its k leaves. A backend striped over
 * more leaves than a charge holds is not charged there: its share on each is
 * small (1/k of the flow).
 */
static void charge_sources(struct gp_charge *ch, const struct gp_backend *b, double g)
{
        size_t fresh = 0;

        for (size_t a = 0; a < b->n_leaves; a++) {
                size_t k;

                for (k = 0; k < ch->n_sources && ch->source_leaf[k] != b->leaves[a]; k++)
                        ;
                fresh += k == ch->n_sources;
        }
        if (b->n_leaves == 0 || ch->n_sources + fresh > GP_MAX_SOURCE_LEAVES)
                return;
        for (size_t a = 0; a < b->n_leaves; a++) {
                size_t k;

                for (k = 0; k < ch->n_sources && ch->source_leaf[k] != b->leaves[a]; k++)
                        ;
                if (k == ch->n_sources) {
                        ch->source_leaf[k] = b->leaves[a];
                        ch->source_gbps[k] = 0;
                        ch->n_sources++;
                }
                ch->source_gbps[k] += g / b->n_leaves;
        }
}

void gp_charge_compute(const struct gantry_cluster *c, const struct gantry_pod_demand *d,
                       int node, struct gp_charge *ret_charge)
{
        const struct gp_node *n = &c->nodes[node];
        struct gp_charge ch = { .node = node, .leaf = n->leaf, .gpus = d->gpus };

        for (size_t i = 0; i < d->n_flows; i++) {
                double g = d->flows[i].gbps;
                int b = d->flows[i].backend ? gp_find_backend(c, d->flows[i].backend) : -1;
                bool remote = b < 0 || !gp_backend_on_leaf(&c->backends[b], n->leaf);
                size_t k;

                ch.nic += g;
                if (remote)
                        ch.uplink += g;
                if (b < 0)
                        continue;
                if (remote)
                        charge_sources(&ch, &c->backends[b], g);
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
        for (size_t k = 0; k < ch->n_sources; k++)
                c->leaves[ch->source_leaf[k]].uplink_used += sign * ch->source_gbps[k];
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

/* Whether @need does not fit in @cap - @used; when so, fills in @v. */
static bool short_of(double cap, double used, double need, enum gantry_refusal_cause cause,
                     const char *where, struct gantry_node_verdict *v)
{
        if (cap <= 0 || need <= 0 || used + need <= cap + GANTRY_GBPS_EPSILON)
                return false;
        v->cause = cause;
        v->where = where;
        v->free = cap - used;
        v->need = need;
        return true;
}

static const char *transport_name(enum gantry_transport t)
{
        return t == GANTRY_TRANSPORT_RDMA ? "rdma" : "tcp";
}

bool gp_charge_fits(const struct gantry_cluster *c, const struct gp_charge *ch,
                    struct gantry_node_verdict *v)
{
        const struct gp_node *n = &c->nodes[ch->node];

        v->cause = GANTRY_REFUSAL_NONE;
        v->where = NULL;
        v->free = v->need = v->capacity = v->nominal = 0;
        v->condition = NULL;
        /* reachability first: no amount of headroom fixes it */
        v->unresolvable = true;
        for (size_t k = 0; k < ch->n_backends; k++) {
                const struct gp_backend *b = &c->backends[ch->backend[k]];

                if (b->kind != GANTRY_BACKEND_NVMEOF)
                        continue;
                v->where = b->name;
                if (!(n->transports & b->transport)) {
                        v->cause = GANTRY_REFUSAL_TRANSPORT;
                        v->need = b->transport;
                        return false;
                }
                if (b->same_leaf_only && !gp_backend_on_leaf(b, n->leaf)) {
                        v->cause = GANTRY_REFUSAL_TARGET_LEAF;
                        return false;
                }
        }
        v->unresolvable = false;
        v->where = NULL;
        if (n->gpus > 0 && ch->gpus > 0 && n->gpus_used + ch->gpus > n->gpus) {
                v->cause = GANTRY_REFUSAL_GPUS;
                v->free = n->gpus - n->gpus_used;
                v->need = ch->gpus;
                return false;
        }
        if (short_of(n->nic_gbps, n->nic_used, ch->nic, GANTRY_REFUSAL_NIC, NULL, v))
                return false;
        if (ch->leaf >= 0) {
                const struct gp_leaf *l = &c->leaves[ch->leaf];

                if (short_of(gp_leaf_uplink_capacity(l), l->uplink_used, ch->uplink,
                             GANTRY_REFUSAL_UPLINK, l->name, v))
                        return false;
        }
        for (size_t k = 0; k < ch->n_sources; k++) {
                const struct gp_leaf *l = &c->leaves[ch->source_leaf[k]];

                if (short_of(gp_leaf_uplink_capacity(l), l->uplink_used, ch->source_gbps[k],
                             GANTRY_REFUSAL_STORAGE_UPLINK, l->name, v))
                        return false;
        }
        for (size_t k = 0; k < ch->n_backends; k++) {
                const struct gp_backend *b = &c->backends[ch->backend[k]];

                if (gp_backend_short(c, b, ch->backend_gbps[k], v))
                        return false;
        }
        return true;
}

void gp_refusal_reason(const struct gantry_node_verdict *v, char *buf, size_t size)
{
        char need[32];

        switch (v->cause) {
        case GANTRY_REFUSAL_NONE:
                snprintf(buf, size, "%s", "");
                break;
        case GANTRY_REFUSAL_UNKNOWN_NODE:
                snprintf(buf, size, "node unknown to gantry-scheduler (no Node seen yet)");
                break;
        case GANTRY_REFUSAL_TRANSPORT:
                snprintf(buf, size, "checkpoint target serves %s only, node has no %s",
                         transport_name(v->need), transport_name(v->need));
                break;
        case GANTRY_REFUSAL_TARGET_LEAF:
                snprintf(buf, size, "checkpoint target reachable only from its own leaves");
                break;
        case GANTRY_REFUSAL_GPUS:
                snprintf(buf, size, "not enough free GPUs (pod needs %.0f)", v->need);
                break;
        case GANTRY_REFUSAL_GANG:
                /* the gang table writes the gang's own reason, already free of names */
                if (buf != v->reason)
                        snprintf(buf, size, "%s", v->reason);
                break;
        case GANTRY_REFUSAL_BACKEND:
        case GANTRY_REFUSAL_TARGET:
                /* the state, not the backend's name or free Gbps: the same
                 * words on every node, so kube-scheduler folds them */
                snprintf(buf, size, "%s %s (pod needs %s Gbps)", gantry_refusal_cause_words(v->cause),
                         v->condition ? v->condition : "full", gbps_str(v->need, need, sizeof(need)));
                break;
        case GANTRY_REFUSAL_NIC:
        case GANTRY_REFUSAL_UPLINK:
        case GANTRY_REFUSAL_STORAGE_UPLINK:
        default:
                snprintf(buf, size, "%s full (pod needs %s Gbps)", gantry_refusal_cause_words(v->cause),
                         gbps_str(v->need, need, sizeof(need)));
                break;
        }
}

/*
 * A backend refusal with its state: "backend ceph-a recovering: 14 of 40 Gbps
 * free (effective 26), gang needs 32 Gbps"; @who is "pod" or "gang".
 */
static void backend_detail(const struct gantry_node_verdict *v, const char *who, char *buf,
                           size_t size)
{
        const char *what = v->cause == GANTRY_REFUSAL_TARGET ? "target" : "backend";
        char f[32], n[32], cap[32], nom[32];

        gbps_str(v->free, f, sizeof(f));
        gbps_str(v->need, n, sizeof(n));
        gbps_str(v->capacity, cap, sizeof(cap));
        gbps_str(v->nominal, nom, sizeof(nom));
        if (v->condition)
                snprintf(buf, size, "%s %s %s: %s of %s Gbps free (effective %s), %s needs %s Gbps",
                         what, v->where ? v->where : "?", v->condition, f, nom, cap, who, n);
        else
                snprintf(buf, size, "%s %s: %s of %s Gbps free (effective %s), %s needs %s Gbps",
                         what, v->where ? v->where : "?", f, nom, cap, who, n);
}

void gantry_node_verdict_detail(const struct gantry_node_verdict *v, const char *node, char *buf,
                                size_t size)
{
        const char *where = v->where ? v->where : "?";
        char f[32], n[32];

        if (!node)
                node = "?";
        switch (v->cause) {
        case GANTRY_REFUSAL_NONE:
                snprintf(buf, size, "%s", "");
                return;
        case GANTRY_REFUSAL_UNKNOWN_NODE:
                snprintf(buf, size, "%.120s: unknown to gantry-scheduler (no Node seen yet)", node);
                return;
        case GANTRY_REFUSAL_TRANSPORT:
                snprintf(buf, size, "target %s: serves %s only, %s has no %s", where,
                         transport_name(v->need), node, transport_name(v->need));
                return;
        case GANTRY_REFUSAL_TARGET_LEAF:
                snprintf(buf, size, "target %s: reachable only from its own leaves, %s is elsewhere",
                         where, node);
                return;
        case GANTRY_REFUSAL_GPUS:
                snprintf(buf, size, "%s: %.0f GPUs free, pod needs %.0f", node, v->free, v->need);
                return;
        case GANTRY_REFUSAL_GANG:
                if (v->where)
                        backend_detail(v, "gang", buf, size);
                else
                        snprintf(buf, size, "%s", v->reason);
                return;
        case GANTRY_REFUSAL_BACKEND:
        case GANTRY_REFUSAL_TARGET:
                /* observed: its state, or healthy with other clients' IO */
                if (v->condition || v->capacity < v->nominal - GANTRY_GBPS_EPSILON) {
                        backend_detail(v, "pod", buf, size);
                        return;
                }
                break;
        default:
                break;
        }
        gbps_str(v->free, f, sizeof(f));
        gbps_str(v->need, n, sizeof(n));
        switch (v->cause) {
        case GANTRY_REFUSAL_NIC:
                snprintf(buf, size, "%s NIC: %s Gbps free, pod needs %s Gbps", node, f, n);
                break;
        case GANTRY_REFUSAL_UPLINK:
                snprintf(buf, size, "%s uplink: %s Gbps free, pod needs %s Gbps", where, f, n);
                break;
        case GANTRY_REFUSAL_STORAGE_UPLINK:
                snprintf(buf, size, "storage leaf %s uplink: %s Gbps free, pod needs %s Gbps",
                         where, f, n);
                break;
        case GANTRY_REFUSAL_TARGET:
                snprintf(buf, size, "target %s: %s Gbps free, pod needs %s Gbps", where, f, n);
                break;
        default:
                snprintf(buf, size, "backend %s: %s Gbps free, pod needs %s Gbps", where, f, n);
                break;
        }
}

const char *gantry_refusal_cause_name(enum gantry_refusal_cause cause)
{
        static const char *const names[GANTRY_REFUSAL_CAUSE_COUNT] = {
                [GANTRY_REFUSAL_NONE] = "none",
                [GANTRY_REFUSAL_UNKNOWN_NODE] = "unknown_node",
                [GANTRY_REFUSAL_TRANSPORT] = "transport",
                [GANTRY_REFUSAL_TARGET_LEAF] = "target_leaf",
                [GANTRY_REFUSAL_GPUS] = "gpus",
                [GANTRY_REFUSAL_NIC] = "nic",
                [GANTRY_REFUSAL_UPLINK] = "uplink",
                [GANTRY_REFUSAL_STORAGE_UPLINK] = "storage_uplink",
                [GANTRY_REFUSAL_BACKEND] = "backend",
                [GANTRY_REFUSAL_TARGET] = "target",
                [GANTRY_REFUSAL_GANG] = "gang",
        };

        return cause < GANTRY_REFUSAL_CAUSE_COUNT ? names[cause] : "?";
}

const char *gantry_refusal_cause_words(enum gantry_refusal_cause cause)
{
        static const char *const words[GANTRY_REFUSAL_CAUSE_COUNT] = {
                [GANTRY_REFUSAL_NONE] = "nothing",
                [GANTRY_REFUSAL_UNKNOWN_NODE] = "unknown node",
                [GANTRY_REFUSAL_TRANSPORT] = "reachability",
                [GANTRY_REFUSAL_TARGET_LEAF] = "reachability",
                [GANTRY_REFUSAL_GPUS] = "GPUs",
                [GANTRY_REFUSAL_NIC] = "node NIC",
                [GANTRY_REFUSAL_UPLINK] = "leaf uplink",
                [GANTRY_REFUSAL_STORAGE_UPLINK] = "storage leaf uplink",
                [GANTRY_REFUSAL_BACKEND] = "storage backend",
                [GANTRY_REFUSAL_TARGET] = "checkpoint target",
                [GANTRY_REFUSAL_GANG] = "gang",
        };

        return cause < GANTRY_REFUSAL_CAUSE_COUNT ? words[cause] : "storage backend";
}

static void entry_free(struct gp_entry *e)
{
        if (!e)
                return;
        free(e->uid);
        free(e->job);
        free(e);
}

const struct gp_job_members *gp_job_members_get(const struct gantry_cluster *c, const char *job)
{
        return job && *job && c->job_members ? strmap_get(c->job_members, job) : NULL;
}

/* Adds @e to its job's members (none: nothing to do). */
static int job_member_add(struct gantry_cluster *c, struct gp_entry *e)
{
        struct gp_job_members *m;

        if (!e->job)
                return 0;
        m = strmap_get(c->job_members, e->job);
        if (!m) {
                if (!(m = calloc(1, sizeof(*m))))
                        return -ENOMEM;
                if (strmap_put(c->job_members, e->job, m) < 0) {
                        free(m);
                        return -ENOMEM;
                }
        }
        if (gp_grow((void **)&m->v, &m->cap, m->n, sizeof(*m->v)) < 0) {
                if (m->n == 0) {
                        strmap_remove(c->job_members, e->job);
                        free(m);
                }
                return -ENOMEM;
        }
        e->job_index = m->n;
        m->v[m->n++] = e;
        return 0;
}

/* Takes @e out of its job's members; a job left with none goes. */
static void job_member_remove(struct gantry_cluster *c, struct gp_entry *e)
{
        struct gp_job_members *m = e->job ? strmap_get(c->job_members, e->job) : NULL;

        if (!m)
                return;
        m->v[e->job_index] = m->v[--m->n];
        m->v[e->job_index]->job_index = e->job_index;
        if (m->n == 0) {
                strmap_remove(c->job_members, e->job);
                free(m->v);
                free(m);
        }
}

/* A confirmed entry's backend charges are IO its pod does: they count as
 * Gantry's own when a backend's observed client IO is read (backend_live.c). */
static void bound_apply(struct gantry_cluster *c, const struct gp_entry *e, int sign)
{
        if (e->expires_at > 0)
                return;
        for (size_t k = 0; k < e->charge.n_backends; k++)
                c->backends[e->charge.backend[k]].bound += sign * e->charge.backend_gbps[k];
}

void gp_ledger_recharge_locked(struct gantry_cluster *c, struct gp_entry *e,
                               const struct gp_charge *charge)
{
        gp_charge_apply(c, &e->charge, -1);
        bound_apply(c, e, -1);
        e->charge = *charge;
        gp_charge_apply(c, &e->charge, 1);
        bound_apply(c, e, 1);
}

/* Unlinks @e from the ledger and gives back its charge; does not free it. */
static void entry_unlink(struct gantry_cluster *c, struct gp_entry *e)
{
        gp_charge_apply(c, &e->charge, -1);
        bound_apply(c, e, -1);
        job_member_remove(c, e);
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
            job_member_add(c, e) < 0)
                return -ENOMEM;
        if (strmap_put(c->entry_by_uid, e->uid, e) < 0) {
                job_member_remove(c, e);
                return -ENOMEM;
        }
        e->index = c->n_entries;
        c->entries[c->n_entries++] = e;
        if (e->expires_at > 0)
                c->n_reservations++;
        gp_charge_apply(c, &e->charge, 1);
        bound_apply(c, e, 1);
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
                         double expires_at, bool check, uint64_t *ret_token,
                         struct gantry_error *err)
{
        struct gp_entry *e = NULL, *old;
        struct gantry_node_verdict v;
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
        if (check && !gp_charge_fits(c, &e->charge, &v)) {
                if (old)
                        entry_link(c, old); /* cannot fail: it was linked a moment ago */
                gantry_node_verdict_detail(&v, c->nodes[node].name, reason, sizeof(reason));
                r = gantry_error_set(err, ENOSPC, "%s", reason);
                goto out;
        }
        entry_free(old);
        e->token = ++c->last_token;
        r = entry_link(c, e);
        if (r < 0) {
                r = gantry_error_set(err, ENOMEM, "out of memory");
                goto out;
        }
        if (ret_token)
                *ret_token = e->token;
        e = NULL;
out:
        entry_free(e);
        return r;
}

/* Shared by reserve and record: @check selects the capacity check. */
static int ledger_add(struct gantry_cluster *c, const struct gantry_pod_demand *d,
                      const char *node, double expires_at, bool check, uint64_t *ret_token,
                      struct gantry_error *err)
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
                r = gp_ledger_add_locked(c, d, i, expires_at, check, ret_token, err);
        pthread_rwlock_unlock(&c->lock);
        return r;
}

int gantry_cluster_reserve(struct gantry_cluster *c, const struct gantry_pod_demand *d,
                           const char *node, double expires_at, uint64_t *ret_token,
                           struct gantry_error *err)
{
        return ledger_add(c, d, node, expires_at > 0 ? expires_at : 0, true, ret_token, err);
}

int gantry_cluster_record(struct gantry_cluster *c, const struct gantry_pod_demand *d,
                          const char *node, struct gantry_error *err)
{
        return ledger_add(c, d, node, 0, false, NULL, err);
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

struct gp_entry *gp_ledger_reservation_locked(struct gantry_cluster *c, const char *uid,
                                              uint64_t token, bool *ret_confirmed)
{
        struct gp_entry *e = uid ? strmap_get(c->entry_by_uid, uid) : NULL;

        if (ret_confirmed)
                *ret_confirmed = e && e->expires_at <= 0;
        /* a confirmed entry is the watch's, whoever reserved it */
        return e && e->expires_at > 0 && e->token == token ? e : NULL;
}

int gantry_cluster_release_reservation(struct gantry_cluster *c, const char *uid, uint64_t token)
{
        struct gp_entry *e;
        bool confirmed;
        int r = -ENOENT;

        pthread_rwlock_wrlock(&c->lock);
        e = gp_ledger_reservation_locked(c, uid, token, &confirmed);
        if (confirmed) {
                r = -EALREADY;
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
        /* only reservations expire: with none, no scan of every entry */
        for (size_t i = 0; c->n_reservations > 0 && i < c->n_entries;) {
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

size_t gp_ledger_release_node(struct gantry_cluster *c, int node)
{
        size_t n = 0;

        for (size_t i = 0; i < c->n_entries;) {
                struct gp_entry *e = c->entries[i];

                if (e->charge.node == node) {
                        entry_unlink(c, e); /* moves the last entry into slot i */
                        entry_free(e);
                        n++;
                } else {
                        i++;
                }
        }
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
        for (size_t i = 0; i < c->n_entries; i++) {
                job_member_remove(c, c->entries[i]);
                entry_free(c->entries[i]);
        }
        c->n_entries = 0;
        c->n_reservations = 0;
}
