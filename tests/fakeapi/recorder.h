/*
 * Records what an informer delivers (kind, event, object key, the object's
 * resourceVersion) so that a test can wait for an event and check the
 * sequence. The callback runs on the informer's thread; the test reads
 * under the same lock.
 */
#pragma once

#include <pthread.h>
#include <stdbool.h>

#include "kube_client.h"

#define RECORDER_MAX 4096

struct recorded_event {
        enum gantry_kube_kind kind;
        enum gantry_kube_event event;
        char key[128];  /* "ns/name" or "name"; "" for SYNCED */
        char rv[32];
        char node_name[64]; /* Pods: spec.nodeName, else "" */
        bool has_kind;  /* the object carried "kind" and "apiVersion" */
};

struct recorder {
        pthread_mutex_t lock;
        struct recorded_event ev[RECORDER_MAX];
        int n;
};

void recorder_init(struct recorder *r);
void recorder_destroy(struct recorder *r);
/* A gantry_kube_event_fn; @ctx is the struct recorder. */
void recorder_cb(void *ctx, enum gantry_kube_kind kind, enum gantry_kube_event event, const json_t *obj);
/* Events so far. */
int recorder_count(struct recorder *r);
/* How many events of type @event for @key (NULL: any key) were recorded
 * from index @from on. */
int recorder_find(struct recorder *r, int from, enum gantry_kube_event event, const char *key);
/* Waits (at most @timeout_ms) until recorder_find(...) >= @n. */
bool recorder_wait(struct recorder *r, int from, enum gantry_kube_event event, const char *key, int n,
                   int timeout_ms);
/* A copy of event @i. */
struct recorded_event recorder_get(struct recorder *r, int i);
