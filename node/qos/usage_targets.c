/*
 * The table of caps in force the sampler walks (see usage_targets.h): an
 * array of owned copies under one mutex. A node holds tens of pods, so a
 * linear search is the simplest thing that is fast enough.
 */
#include "usage_targets.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct owned {
        struct gantry_usage_target t; /* strings below, owned */
        char *s[7];
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct owned *table;
static size_t n_table;

static void owned_clear(struct owned *o)
{
        for (int i = 0; i < 7; i++)
                free(o->s[i]);
        memset(o, 0, sizeof(*o));
}

static bool empty(const char *s)
{
        return !s || !*s;
}

static struct owned *find(const char *uid, const char *vol)
{
        for (size_t i = 0; i < n_table; i++)
                if (strcmp(table[i].t.pod_uid, uid) == 0 && strcmp(table[i].t.volume_id, vol) == 0)
                        return &table[i];
        return NULL;
}

int gantry_usage_targets_put(const struct gantry_usage_target *t)
{
        struct owned o = { 0 }, *slot;
        const char *src[7];

        if (!t || empty(t->pod_uid) || empty(t->pod_namespace) || empty(t->pod_name) ||
            empty(t->volume_id) || empty(t->cgroup_dir))
                return -EINVAL;
        o.t = *t;
        src[0] = t->pod_uid;
        src[1] = t->pod_namespace;
        src[2] = t->pod_name;
        src[3] = t->job ? t->job : "";
        src[4] = t->volume_id;
        src[5] = t->cgroup_dir;
        src[6] = t->policy ? t->policy : "";
        for (int i = 0; i < 7; i++)
                if (!(o.s[i] = strdup(src[i]))) {
                        owned_clear(&o);
                        return -ENOMEM;
                }
        o.t.pod_uid = o.s[0];
        o.t.pod_namespace = o.s[1];
        o.t.pod_name = o.s[2];
        o.t.job = o.s[3];
        o.t.volume_id = o.s[4];
        o.t.cgroup_dir = o.s[5];
        o.t.policy = o.s[6];

        pthread_mutex_lock(&lock);
        slot = find(t->pod_uid, t->volume_id);
        if (slot) {
                owned_clear(slot);
        } else if (n_table >= GANTRY_USAGE_TARGETS_MAX) {
                pthread_mutex_unlock(&lock);
                owned_clear(&o);
                return -ENOSPC;
        } else {
                struct owned *n = realloc(table, (n_table + 1) * sizeof(*n));

                if (!n) {
                        pthread_mutex_unlock(&lock);
                        owned_clear(&o);
                        return -ENOMEM;
                }
                table = n;
                slot = &table[n_table++];
        }
        *slot = o;
        pthread_mutex_unlock(&lock);
        return 0;
}

void gantry_usage_targets_remove(const char *pod_uid, const char *volume_id)
{
        struct owned *o;

        if (empty(pod_uid) || empty(volume_id))
                return;
        pthread_mutex_lock(&lock);
        o = find(pod_uid, volume_id);
        if (o) {
                owned_clear(o);
                memmove(o, o + 1, (size_t)(table + n_table - o - 1) * sizeof(*o));
                n_table--;
        }
        pthread_mutex_unlock(&lock);
}

int gantry_usage_targets_iterate(void *ctx, gantry_usage_visit_fn visit, void *visit_ctx)
{
        int r = 0;

        (void)ctx;
        pthread_mutex_lock(&lock);
        for (size_t i = 0; i < n_table && r >= 0; i++)
                r = visit(visit_ctx, &table[i].t);
        pthread_mutex_unlock(&lock);
        return r < 0 ? r : 0;
}

void gantry_usage_targets_clear(void)
{
        pthread_mutex_lock(&lock);
        for (size_t i = 0; i < n_table; i++)
                owned_clear(&table[i]);
        free(table);
        table = NULL;
        n_table = 0;
        pthread_mutex_unlock(&lock);
}
