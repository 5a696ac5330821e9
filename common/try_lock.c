/*
 * The process's one table of try-locks (see try_lock.h): the keys held right
 * now, in a list under one mutex -- a few hundred at most, the operations in
 * flight -- with a bound so a flood of distinct keys cannot grow it forever.
 */
#include "try_lock.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define GANTRY_TRY_LOCK_MAX 4096

struct held {
        struct held *next;
        char key[];
};

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static struct held *held;
static size_t n_held;

int gantry_lock_try(const char *key)
{
        size_t len = strlen(key);
        struct held *h;
        int r = 0;

        pthread_mutex_lock(&mutex);
        for (h = held; h; h = h->next)
                if (strcmp(h->key, key) == 0) {
                        r = -EBUSY;
                        goto out;
                }
        if (n_held >= GANTRY_TRY_LOCK_MAX) {
                r = -EAGAIN;
                goto out;
        }
        h = malloc(sizeof(*h) + len + 1);
        if (!h) {
                r = -ENOMEM;
                goto out;
        }
        memcpy(h->key, key, len + 1);
        h->next = held;
        held = h;
        n_held++;
out:
        pthread_mutex_unlock(&mutex);
        return r;
}

void gantry_lock_release(const char *key)
{
        struct held **p, *h;

        pthread_mutex_lock(&mutex);
        for (p = &held; (h = *p); p = &h->next)
                if (strcmp(h->key, key) == 0) {
                        *p = h->next;
                        free(h);
                        n_held--;
                        break;
                }
        pthread_mutex_unlock(&mutex);
}
