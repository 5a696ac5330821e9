/*
 * The informer event recorder of the kube client tests (see recorder.h).
 */
#include <stdio.h>
#include <string.h>

#include "fake_harness.h"
#include "recorder.h"

void recorder_init(struct recorder *r)
{
        memset(r, 0, sizeof(*r));
        pthread_mutex_init(&r->lock, NULL);
}

void recorder_destroy(struct recorder *r)
{
        pthread_mutex_destroy(&r->lock);
}

void recorder_cb(void *ctx, enum gantry_kube_kind kind, enum gantry_kube_event event, const json_t *obj)
{
        struct recorder *r = ctx;
        struct recorded_event e = { .kind = kind, .event = event };
        const json_t *md = json_object_get(obj, "metadata");
        const char *ns = json_string_value(json_object_get(md, "namespace"));
        const char *name = json_string_value(json_object_get(md, "name"));
        const char *rv = json_string_value(json_object_get(md, "resourceVersion"));
        const char *node = json_string_value(json_object_get(json_object_get(obj, "spec"), "nodeName"));

        if (name) {
                if (ns)
                        snprintf(e.key, sizeof(e.key), "%s/%s", ns, name);
                else
                        snprintf(e.key, sizeof(e.key), "%s", name);
        }
        snprintf(e.rv, sizeof(e.rv), "%s", rv ? rv : "");
        snprintf(e.node_name, sizeof(e.node_name), "%s", node ? node : "");
        e.has_kind = json_string_value(json_object_get(obj, "kind")) &&
                     json_string_value(json_object_get(obj, "apiVersion"));
        pthread_mutex_lock(&r->lock);
        if (r->n < RECORDER_MAX)
                r->ev[r->n++] = e;
        pthread_mutex_unlock(&r->lock);
}

int recorder_count(struct recorder *r)
{
        int n;

        pthread_mutex_lock(&r->lock);
        n = r->n;
        pthread_mutex_unlock(&r->lock);
        return n;
}

int recorder_find(struct recorder *r, int from, enum gantry_kube_event event, const char *key)
{
        int n = 0;

        pthread_mutex_lock(&r->lock);
        for (int i = from; i < r->n; i++)
                if (r->ev[i].event == event && (!key || strcmp(r->ev[i].key, key) == 0))
                        n++;
        pthread_mutex_unlock(&r->lock);
        return n;
}

struct recorder_query {
        struct recorder *r;
        int from, n;
        enum gantry_kube_event event;
        const char *key;
};

static bool recorder_has(void *ctx)
{
        struct recorder_query *q = ctx;

        return recorder_find(q->r, q->from, q->event, q->key) >= q->n;
}

bool recorder_wait(struct recorder *r, int from, enum gantry_kube_event event, const char *key, int n,
                   int timeout_ms)
{
        struct recorder_query q = { .r = r, .from = from, .n = n, .event = event, .key = key };

        return test_wait_for(recorder_has, &q, timeout_ms);
}

struct recorded_event recorder_get(struct recorder *r, int i)
{
        struct recorded_event e;

        pthread_mutex_lock(&r->lock);
        e = r->ev[i];
        pthread_mutex_unlock(&r->lock);
        return e;
}
