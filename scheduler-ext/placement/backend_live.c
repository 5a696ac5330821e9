/*
 * A storage backend's live state and the effective capacity that follows
 * from it: what the placement library's admission charges against instead
 * of the topology file's nominal Gbps once an observer has published the
 * backend's state (gantry-scheduler's StorageBackend informer).
 *
 *   effective   = max(0, nominal x factor(state) - recovery - unaccounted)
 *   unaccounted = max(0, client IO - Gantry's bound pods' reservations)
 *
 * Only pods the watch saw bound count as Gantry's own IO: a bind not yet
 * confirmed and a gang's held places do no IO yet, so subtracting them from
 * the observed IO would hide other clients' traffic. A stale observation,
 * or none, is the nominal capacity; an unknown nominal (0) stays unknown.
 * See placement.h.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "placement_internal.h"

static const char *const state_names[GANTRY_BACKEND_STATE_COUNT] = {
        [GANTRY_BACKEND_STATE_NONE] = "",
        [GANTRY_BACKEND_STATE_HEALTHY] = "Healthy",
        [GANTRY_BACKEND_STATE_DEGRADED] = "Degraded",
        [GANTRY_BACKEND_STATE_RECOVERING] = "Recovering",
        [GANTRY_BACKEND_STATE_UNAVAILABLE] = "Unavailable",
};

/* The same in a sentence: "backend ceph-a recovering: ..." */
static const char *const state_words[GANTRY_BACKEND_STATE_COUNT] = {
        [GANTRY_BACKEND_STATE_DEGRADED] = "degraded",
        [GANTRY_BACKEND_STATE_RECOVERING] = "recovering",
        [GANTRY_BACKEND_STATE_UNAVAILABLE] = "unavailable",
};

const char *gantry_backend_state_name(enum gantry_backend_state s)
{
        return (unsigned)s < GANTRY_BACKEND_STATE_COUNT ? state_names[s] : "";
}

int gantry_backend_state_parse(const char *s, enum gantry_backend_state *ret_state)
{
        for (int i = GANTRY_BACKEND_STATE_HEALTHY; s && i < GANTRY_BACKEND_STATE_COUNT; i++)
                if (!strcmp(s, state_names[i])) {
                        *ret_state = i;
                        return 0;
                }
        return -EINVAL;
}

double gantry_backend_effective_gbps(double nominal, double factor, double recovery_gbps,
                                     double client_gbps, double bound_gbps)
{
        double unaccounted = fmax(0, client_gbps - bound_gbps);

        return fmax(0, nominal * factor - recovery_gbps - unaccounted);
}

/* Whether @b's live state decides its capacity now. */
static bool observed(const struct gantry_cluster *c, const struct gp_backend *b)
{
        return !c->nominal_only && b->live.state != GANTRY_BACKEND_STATE_NONE && !b->live.stale &&
               b->gbps > 0;
}

static double state_factor(const struct gantry_cluster *c, enum gantry_backend_state s)
{
        switch (s) {
        case GANTRY_BACKEND_STATE_DEGRADED: return c->factors.degraded;
        case GANTRY_BACKEND_STATE_RECOVERING: return c->factors.recovering;
        case GANTRY_BACKEND_STATE_UNAVAILABLE: return 0;
        default: return 1;
        }
}

double gp_backend_capacity(const struct gantry_cluster *c, const struct gp_backend *b)
{
        if (!observed(c, b))
                return b->gbps;
        return gantry_backend_effective_gbps(b->gbps, state_factor(c, b->live.state),
                                             b->live.recovery_gbps, b->live.client_gbps, b->bound);
}

const char *gp_backend_condition(const struct gantry_cluster *c, const struct gp_backend *b)
{
        return observed(c, b) ? state_words[b->live.state] : NULL;
}

bool gp_backend_short(const struct gantry_cluster *c, const struct gp_backend *b, double need,
                      struct gantry_node_verdict *v)
{
        double cap;

        /* an unknown nominal stays unknown; a known one may be down to 0
         * effective, which admits nothing */
        if (b->gbps <= 0 || need <= 0)
                return false;
        cap = gp_backend_capacity(c, b);
        if (b->used + need <= cap + GANTRY_GBPS_EPSILON)
                return false;
        v->cause = b->kind == GANTRY_BACKEND_NVMEOF ? GANTRY_REFUSAL_TARGET : GANTRY_REFUSAL_BACKEND;
        v->where = b->name;
        v->free = fmax(0, cap - b->used);
        v->need = need;
        v->capacity = cap;
        v->nominal = b->gbps;
        v->condition = gp_backend_condition(c, b);
        return true;
}

bool gp_backend_shortfall(const struct gantry_cluster *c, const struct gantry_pod_demand *d, int k,
                          struct gantry_node_verdict *v)
{
        for (size_t i = 0; i < d->n_flows; i++) {
                int bi = d->flows[i].backend ? gp_find_backend(c, d->flows[i].backend) : -1;
                const struct gp_backend *b;
                double need = 0;

                if (bi < 0)
                        continue;
                b = &c->backends[bi];
                for (size_t j = 0; j < d->n_flows; j++)
                        if (d->flows[j].backend && !strcmp(d->flows[j].backend, b->name))
                                need += d->flows[j].gbps;
                if (gp_backend_short(c, b, need * k, v))
                        return true;
        }
        return false;
}

static int live_validate(const struct gantry_backend_live *l, struct gantry_error *err)
{
        if ((unsigned)l->state >= GANTRY_BACKEND_STATE_COUNT)
                return gantry_error_set(err, EINVAL, "backend.state: unknown state");
        if (!isfinite(l->client_gbps) || l->client_gbps < 0)
                return gantry_error_set(err, EINVAL, "backend.clientGbps: must be a number >= 0");
        if (!isfinite(l->recovery_gbps) || l->recovery_gbps < 0)
                return gantry_error_set(err, EINVAL, "backend.recoveryGbps: must be a number >= 0");
        return 0;
}

int gantry_cluster_set_backend_live(struct gantry_cluster *c, const char *name,
                                    const struct gantry_backend_live *live,
                                    struct gantry_error *err)
{
        int r, i;

        if (live && (r = live_validate(live, err)) < 0)
                return r;
        pthread_rwlock_wrlock(&c->lock);
        i = name ? gp_find_backend(c, name) : -1;
        if (i < 0) {
                r = gantry_error_set(err, ENOENT, "backend %s: not in the topology", name ? name : "?");
        } else {
                c->backends[i].live = live ? *live : (struct gantry_backend_live){ 0 };
                r = 0;
        }
        pthread_rwlock_unlock(&c->lock);
        return r;
}

int gantry_cluster_set_backend_factors(struct gantry_cluster *c,
                                       const struct gantry_backend_factors *f,
                                       struct gantry_error *err)
{
        if (!(f->degraded >= 0 && f->degraded <= 1))
                return gantry_error_set(err, EINVAL, "backend factor degraded: must be in [0, 1]");
        if (!(f->recovering >= 0 && f->recovering <= 1))
                return gantry_error_set(err, EINVAL, "backend factor recovering: must be in [0, 1]");
        pthread_rwlock_wrlock(&c->lock);
        c->factors = *f;
        pthread_rwlock_unlock(&c->lock);
        return 0;
}

int gantry_cluster_backend_view(struct gantry_cluster *c, size_t index,
                                struct gantry_backend_view *ret_view)
{
        int r = -ENOENT;

        pthread_rwlock_rdlock(&c->lock);
        if (index < c->n_backends) {
                const struct gp_backend *b = &c->backends[index];
                bool obs = observed(c, b);

                *ret_view = (struct gantry_backend_view){
                        .kind = b->kind,
                        .state = b->live.state,
                        .stale = b->live.stale,
                        .nominal_gbps = b->gbps,
                        .effective_gbps = gp_backend_capacity(c, b),
                        .reserved_gbps = b->used,
                        .bound_gbps = b->bound,
                        .unaccounted_gbps = obs ? fmax(0, b->live.client_gbps - b->bound) : 0,
                        .recovery_gbps = b->live.recovery_gbps,
                        .client_gbps = b->live.client_gbps,
                };
                snprintf(ret_view->name, sizeof(ret_view->name), "%s", b->name);
                r = 0;
        }
        pthread_rwlock_unlock(&c->lock);
        return r;
}
