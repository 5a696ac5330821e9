/*
 * StorageBackend objects -> each backend's live state in the placement
 * library, with the staleness bound and the memory of held pods. See
 * sched_backends.h.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "sched_backends.h"

struct observed {
        char name[GANTRY_PLACEMENT_NAME_MAX + 1]; /* the backend's name in the topology */
        struct gantry_backend_live live;          /* stale kept up to date by tick */
        double observed_at;                       /* wall-clock seconds */
        bool held;                                /* pods were refused for it */
        bool risen;                               /* its effective rose while held */
};

struct gantry_sched_backends {
        struct gantry_cluster *c;
        double stale_seconds;
        pthread_mutex_t lock;
        struct observed v[GANTRY_SCHED_BACKENDS_MAX];
        size_t n;
        void (*on_rise)(void *ctx);
        void *on_rise_ctx;
};

void gantry_sched_backends_set_on_rise(struct gantry_sched_backends *b, void (*fn)(void *ctx),
                                       void *ctx)
{
        pthread_mutex_lock(&b->lock);
        b->on_rise = fn;
        b->on_rise_ctx = ctx;
        pthread_mutex_unlock(&b->lock);
}

int gantry_sched_backends_new(struct gantry_cluster *c, double stale_seconds,
                              struct gantry_sched_backends **ret_backends)
{
        struct gantry_sched_backends *b;

        if (!(stale_seconds > 0))
                return -EINVAL;
        if (!(b = calloc(1, sizeof(*b))))
                return -ENOMEM;
        b->c = c;
        b->stale_seconds = stale_seconds;
        pthread_mutex_init(&b->lock, NULL);
        *ret_backends = b;
        return 0;
}

void gantry_sched_backends_free(struct gantry_sched_backends *b)
{
        if (!b)
                return;
        pthread_mutex_destroy(&b->lock);
        free(b);
}

int gantry_sched_parse_rfc3339(const char *s, double *ret_seconds)
{
        struct tm tm = { 0 };
        const char *p;
        double frac = 0;
        time_t t;

        if (!s || !(p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm)))
                return -EINVAL;
        if (*p == '.') {
                char *end;

                frac = strtod(p, &end);
                p = end;
        }
        if (strcmp(p, "Z") && strcmp(p, "+00:00"))
                return -EINVAL;
        t = timegm(&tm);
        if (t == (time_t)-1)
                return -EINVAL;
        *ret_seconds = (double)t + frac;
        return 0;
}

/* A byte rate field in Gbps; absent is 0. */
static int rate_gbps(const json_t *status, const char *field, double *ret, struct gantry_error *err)
{
        const json_t *v = json_object_get(status, field);

        if (!v || json_is_null(v)) {
                *ret = 0;
                return 0;
        }
        if (!json_is_number(v) || json_number_value(v) < 0 || !isfinite(json_number_value(v)))
                return gantry_error_set(err, EINVAL, "status.%s: must be a number >= 0", field);
        *ret = json_number_value(v) * 8 / 1e9;
        return 0;
}

/* The topology's name of StorageBackend @name: itself, or the backend whose
 * lower-cased name it is; "" when none. */
static void topology_name(struct gantry_cluster *c, const char *name, char *buf, size_t size)
{
        struct gantry_cluster_stats s;
        struct gantry_backend_view v;

        buf[0] = '\0';
        gantry_cluster_stats(c, &s);
        for (size_t i = 0; i < s.backends; i++) {
                if (gantry_cluster_backend_view(c, i, &v) < 0)
                        continue;
                if (!strcmp(v.name, name)) {
                        snprintf(buf, size, "%s", v.name);
                        return;
                }
                if (!buf[0] && !strcasecmp(v.name, name))
                        snprintf(buf, size, "%s", v.name);
        }
}

static double effective(struct gantry_cluster *c, const char *name)
{
        struct gantry_cluster_stats s;
        struct gantry_backend_view v;

        gantry_cluster_stats(c, &s);
        for (size_t i = 0; i < s.backends; i++)
                if (gantry_cluster_backend_view(c, i, &v) == 0 && !strcmp(v.name, name))
                        return v.effective_gbps;
        return 0;
}

static struct observed *find(struct gantry_sched_backends *b, const char *name, bool add)
{
        for (size_t i = 0; i < b->n; i++)
                if (!strcmp(b->v[i].name, name))
                        return &b->v[i];
        if (!add || b->n == GANTRY_SCHED_BACKENDS_MAX)
                return NULL;
        b->v[b->n] = (struct observed){ 0 };
        snprintf(b->v[b->n].name, sizeof(b->v[b->n].name), "%s", name);
        return &b->v[b->n++];
}

/* Sets @o's state in the cluster (NULL live: nominal); notes a rise. Lock held. */
static int publish(struct gantry_sched_backends *b, struct observed *o,
                   const struct gantry_backend_live *live, struct gantry_error *err)
{
        double before = effective(b->c, o->name);
        int r = gantry_cluster_set_backend_live(b->c, o->name, live, err);

        if (r == 0 && o->held && effective(b->c, o->name) > before + 1e-9) {
                o->risen = true;
                o->held = false;
                if (b->on_rise)
                        b->on_rise(b->on_rise_ctx);
        }
        return r;
}

int gantry_sched_backends_apply(struct gantry_sched_backends *b, const json_t *obj, bool deleted,
                                double now, struct gantry_error *err)
{
        const json_t *md = json_object_get(obj, "metadata"), *status = json_object_get(obj, "status");
        const char *name = json_string_value(json_object_get(md, "name"));
        const char *state = json_string_value(json_object_get(status, "state"));
        char topo[GANTRY_PLACEMENT_NAME_MAX + 1];
        struct gantry_backend_live live = { 0 };
        double rd, wr, at = now;
        struct observed *o;
        int r;

        if (!name || !*name || strlen(name) > GANTRY_PLACEMENT_NAME_MAX)
                return gantry_error_set(err, EINVAL, "StorageBackend metadata.name: must be a name");
        topology_name(b->c, name, topo, sizeof(topo));
        if (!topo[0])
                return gantry_error_set(err, ENOENT, "StorageBackend %s: no such backend in the topology",
                                        name);
        if (!deleted && state) {
                const char *when = json_string_value(json_object_get(status, "observedAt"));

                if (gantry_backend_state_parse(state, &live.state) < 0)
                        return gantry_error_set(err, EINVAL, "StorageBackend %s status.state: must be "
                                                "Healthy, Degraded, Recovering or Unavailable", name);
                if ((r = rate_gbps(status, "clientReadBytesPerSec", &rd, err)) < 0 ||
                    (r = rate_gbps(status, "clientWriteBytesPerSec", &wr, err)) < 0 ||
                    (r = rate_gbps(status, "recoveryBytesPerSec", &live.recovery_gbps, err)) < 0)
                        return gantry_error_prefix(err, name);
                if (when && gantry_sched_parse_rfc3339(when, &at) < 0)
                        return gantry_error_set(err, EINVAL, "StorageBackend %s status.observedAt: "
                                                "must be an RFC 3339 UTC time", name);
                if (!when)
                        return gantry_error_set(err, EINVAL, "StorageBackend %s status.observedAt: "
                                                "missing", name);
                live.client_gbps = rd + wr;
        }
        pthread_mutex_lock(&b->lock);
        o = find(b, topo, true);
        if (!o) {
                r = gantry_error_set(err, ENOMEM, "more than %d StorageBackends",
                                     GANTRY_SCHED_BACKENDS_MAX);
        } else if (deleted || !state) {
                o->live = (struct gantry_backend_live){ 0 };
                r = publish(b, o, NULL, err);
        } else {
                bool was_stale = o->live.stale;

                live.stale = now - at > b->stale_seconds;
                if (live.stale && !was_stale)
                        log_warn("sched.backend_stale", "backend=%s observed_at=%s age_seconds=%.0f "
                                 "capacity=nominal", topo, json_string_value(json_object_get(status,
                                 "observedAt")), now - at);
                if (o->live.state != live.state)
                        log_info("sched.backend_state", "backend=%s state=%s", topo,
                                 gantry_backend_state_name(live.state));
                o->live = live;
                o->observed_at = at;
                r = publish(b, o, &live, err);
        }
        pthread_mutex_unlock(&b->lock);
        return r;
}

void gantry_sched_backends_tick(struct gantry_sched_backends *b, double now)
{
        pthread_mutex_lock(&b->lock);
        for (size_t i = 0; i < b->n; i++) {
                struct observed *o = &b->v[i];
                struct gantry_error err;
                bool stale;

                if (o->live.state == GANTRY_BACKEND_STATE_NONE)
                        continue;
                stale = now - o->observed_at > b->stale_seconds;
                if (stale == o->live.stale)
                        continue;
                if (stale)
                        log_warn("sched.backend_stale", "backend=%s age_seconds=%.0f capacity=nominal "
                                 "why=\"no status from the observer within --backend-stale-seconds\"",
                                 o->name, now - o->observed_at);
                o->live.stale = stale;
                publish(b, o, &o->live, &err);
        }
        pthread_mutex_unlock(&b->lock);
}

void gantry_sched_backends_note_held(struct gantry_sched_backends *b, const char *name)
{
        struct observed *o;

        if (!b || !name)
                return;
        pthread_mutex_lock(&b->lock);
        o = find(b, name, true);
        if (o)
                o->held = true;
        pthread_mutex_unlock(&b->lock);
}

size_t gantry_sched_backends_take_risen(struct gantry_sched_backends *b,
                                        char (*ret_names)[GANTRY_PLACEMENT_NAME_MAX + 1],
                                        size_t max)
{
        size_t n = 0;

        pthread_mutex_lock(&b->lock);
        for (size_t i = 0; i < b->n && n < max; i++)
                if (b->v[i].risen) {
                        b->v[i].risen = false;
                        snprintf(ret_names[n++], GANTRY_PLACEMENT_NAME_MAX + 1, "%s", b->v[i].name);
                }
        pthread_mutex_unlock(&b->lock);
        return n;
}
