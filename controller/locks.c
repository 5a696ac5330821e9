/*
 * Per-name and per-volume try-locks. A second operation on the same name or
 * volume while one is in flight gets -EBUSY at once (ABORTED to the CO, which
 * retries with backoff), never a wait: the CSI spec's answer to a CO that
 * lost track of its own calls.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "controller_internal.h"

#define MAX_HELD 4096

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char *held[MAX_HELD];

int gantry_lock_try(const char *key)
{
        int free_slot = -1, r = 0;

        pthread_mutex_lock(&lock);
        for (int i = 0; i < MAX_HELD; i++) {
                if (held[i] && strcmp(held[i], key) == 0) {
                        r = -EBUSY;
                        goto out;
                }
                if (!held[i] && free_slot < 0)
                        free_slot = i;
        }
        if (free_slot < 0) {
                r = -EAGAIN; /* more operations in flight than any CO sends */
                goto out;
        }
        held[free_slot] = strdup(key);
        if (!held[free_slot])
                r = -ENOMEM;
out:
        pthread_mutex_unlock(&lock);
        return r;
}

void gantry_lock_release(const char *key)
{
        pthread_mutex_lock(&lock);
        for (int i = 0; i < MAX_HELD; i++) {
                if (held[i] && strcmp(held[i], key) == 0) {
                        free(held[i]);
                        held[i] = NULL;
                        break;
                }
        }
        pthread_mutex_unlock(&lock);
}
