/*
 * Per-volume try-locks for the Node service. Two calls on the same volume
 * (kubelet retries while the first still maps) must not interleave; the
 * second is answered ABORTED at once and kubelet retries later, as the CSI
 * spec asks. The set is small (volumes being worked on right now), so a
 * list under one mutex is enough.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "node_internal.h"

struct held {
        struct held *next;
        char id[];
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct held *locks;

int gantry_node_lock_try(const char *volume_id, struct gantry_error *err)
{
        size_t len = strlen(volume_id);
        struct held *h;
        int r = 0;

        pthread_mutex_lock(&lock);
        for (h = locks; h; h = h->next)
                if (strcmp(h->id, volume_id) == 0) {
                        r = -EBUSY;
                        goto out;
                }
        h = malloc(sizeof(*h) + len + 1);
        if (!h) {
                r = -ENOMEM;
                goto out;
        }
        memcpy(h->id, volume_id, len + 1);
        h->next = locks;
        locks = h;
out:
        pthread_mutex_unlock(&lock);
        if (r == -EBUSY)
                return gantry_error_set(err, r,
                                        "volume_id: %s: another operation on it is in progress",
                                        volume_id);
        return r;
}

void gantry_node_lock_release(const char *volume_id)
{
        struct held **p, *h;

        pthread_mutex_lock(&lock);
        for (p = &locks; (h = *p); p = &h->next)
                if (strcmp(h->id, volume_id) == 0) {
                        *p = h->next;
                        free(h);
                        break;
                }
        pthread_mutex_unlock(&lock);
}
