/*
 * The shared bandwidth cap of copies (bucket.h): a virtual-time token bucket.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "bucket.h"
#include "clock.h"

struct gantry_copier_bucket {
        pthread_mutex_t lock;
        uint64_t rate; /* bytes/s, 0: unlimited */
        uint64_t tat;  /* theoretical arrival time of the next byte, ns */
};

int gantry_copier_bucket_new(uint64_t bytes_per_s, struct gantry_copier_bucket **ret)
{
        struct gantry_copier_bucket *b = calloc(1, sizeof(*b));

        if (!b)
                return -ENOMEM;
        pthread_mutex_init(&b->lock, NULL);
        b->rate = bytes_per_s;
        *ret = b;
        return 0;
}

void gantry_copier_bucket_free(struct gantry_copier_bucket *b)
{
        if (!b)
                return;
        pthread_mutex_destroy(&b->lock);
        free(b);
}

void gantry_copier_bucket_set_rate(struct gantry_copier_bucket *b, uint64_t bytes_per_s)
{
        pthread_mutex_lock(&b->lock);
        b->rate = bytes_per_s;
        pthread_mutex_unlock(&b->lock);
}

uint64_t gantry_copier_bucket_rate(struct gantry_copier_bucket *b)
{
        uint64_t r;

        pthread_mutex_lock(&b->lock);
        r = b->rate;
        pthread_mutex_unlock(&b->lock);
        return r;
}

uint64_t gantry_copier_bucket_reserve(struct gantry_copier_bucket *b, uint64_t now_ns, uint64_t bytes)
{
        uint64_t wait = 0, cost;

        if (!b)
                return 0;
        pthread_mutex_lock(&b->lock);
        if (b->rate) {
                cost = (uint64_t)((long double)bytes * 1e9L / (long double)b->rate);
                if (b->tat < now_ns)
                        b->tat = now_ns; /* an idle bucket does not bank more than the burst */
                b->tat += cost;
                if (b->tat > now_ns + GANTRY_COPIER_BUCKET_BURST_NS)
                        wait = b->tat - now_ns - GANTRY_COPIER_BUCKET_BURST_NS;
        }
        pthread_mutex_unlock(&b->lock);
        return wait;
}

int gantry_copier_bucket_take(struct gantry_copier_bucket *b, uint64_t bytes, const atomic_bool *cancel)
{
        uint64_t now = gantry_now_ns();
        uint64_t until = now + gantry_copier_bucket_reserve(b, now, bytes);
        struct timespec ts;
        uint64_t step;

        while (now < until) {
                if (cancel && atomic_load(cancel))
                        return -ECANCELED;
                step = until - now < 50000000ull ? until - now : 50000000ull;
                ts.tv_sec = (time_t)(step / 1000000000ull);
                ts.tv_nsec = (long)(step % 1000000000ull);
                nanosleep(&ts, NULL);
                now = gantry_now_ns();
        }
        return cancel && atomic_load(cancel) ? -ECANCELED : 0;
}
