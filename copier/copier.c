/*
 * The resumable copier (copier.h): plan the objects from the source's
 * extents, then a pool of worker threads copies them in index order within
 * the position's window while the caller's thread persists the position.
 *
 * Why threads and synchronous librbd calls rather than rbd_aio_*: the file
 * source has no asynchronous read, and one shape serves every source and
 * destination; each worker keeps one object in flight, which is what the
 * aio pipeline would do too (bench/tier measures the throughput).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "checksum.h"
#include "clock.h"
#include "copier.h"

#define PERSIST_OBJECTS_DEFAULT 16u
#define PERSIST_MS_DEFAULT 2000u
/* zero runs shorter than this are written rather than split into more writes */
#define ZERO_BLOCK (64u * 1024)

struct gantry_copier_copy {
        struct gantry_copier_source *src;
        struct gantry_copier_dest *dst;
        struct gantry_copier_copy_opts o;
        char *start_position;

        pthread_mutex_t lock;
        pthread_cond_t cond; /* an object finished, a worker ended, or cancel */
        atomic_bool cancel;

        /* under lock */
        uint64_t *plan;
        struct gantry_copier_position pos;
        uint64_t cursor;         /* objects below it were started (or were done already) */
        unsigned workers_left;
        unsigned checking;       /* checksum checks in flight (at most in_flight) */
        unsigned since_persist;  /* objects done since the last persist */
        int err;                 /* first error of a worker or of persist */
        uint64_t mismatch_at;    /* verify: the offset of the first object that differed */
        uint64_t start_ns;
        struct gantry_copier_rate rate;
        struct gantry_copier_progress p;
};

int gantry_copier_copy_new(struct gantry_copier_source *src, struct gantry_copier_dest *dst,
                         const struct gantry_copier_copy_opts *opts, struct gantry_copier_copy **ret)
{
        struct gantry_copier_copy *c;
        pthread_condattr_t attr;
        uint64_t os = dst->object_size;

        if (dst->size < src->size || os == 0 || (os & (os - 1)) != 0)
                return -EINVAL;
        if (!(c = calloc(1, sizeof(*c))))
                return -ENOMEM;
        c->src = src;
        c->dst = dst;
        if (opts)
                c->o = *opts;
        if (c->o.in_flight == 0)
                c->o.in_flight = GANTRY_COPIER_IN_FLIGHT_DEFAULT;
        if (c->o.in_flight > GANTRY_COPIER_IN_FLIGHT_MAX)
                c->o.in_flight = GANTRY_COPIER_IN_FLIGHT_MAX;
        if (c->o.persist_every_objects == 0)
                c->o.persist_every_objects = PERSIST_OBJECTS_DEFAULT;
        if (c->o.persist_every_ms == 0)
                c->o.persist_every_ms = PERSIST_MS_DEFAULT;
        if (c->o.verify && !dst->ops->read && !dst->checksum) {
                free(c);
                return -EOPNOTSUPP;
        }
        if (c->o.position && !(c->start_position = strdup(c->o.position))) {
                free(c);
                return -ENOMEM;
        }
        c->o.position = NULL; /* the copy keeps its own */
        pthread_mutex_init(&c->lock, NULL);
        /* timed waits on the monotonic clock, like every tier timestamp */
        pthread_condattr_init(&attr);
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        pthread_cond_init(&c->cond, &attr);
        pthread_condattr_destroy(&attr);
        atomic_init(&c->cancel, false);
        c->p.object_size = os;
        c->p.object_count = (src->size + os - 1) / os;
        c->p.eta_seconds = -1;
        *ret = c;
        return 0;
}

void gantry_copier_copy_free(struct gantry_copier_copy *c)
{
        if (!c)
                return;
        pthread_cond_destroy(&c->cond);
        pthread_mutex_destroy(&c->lock);
        free(c->plan);
        free(c->start_position);
        free(c);
}

void gantry_copier_copy_cancel(struct gantry_copier_copy *c)
{
        atomic_store(&c->cancel, true);
        pthread_mutex_lock(&c->lock);
        pthread_cond_broadcast(&c->cond);
        pthread_mutex_unlock(&c->lock);
}

/* Fills @ret from the counters; under lock. */
static void progress_locked(struct gantry_copier_copy *c, uint64_t now, struct gantry_copier_progress *ret)
{
        c->p.watermark = c->pos.watermark;
        if (c->start_ns) {
                c->p.rate = gantry_copier_rate_update(&c->rate, now, c->p.bytes_done);
                c->p.elapsed_seconds = (double)(now - c->start_ns) / 1e9;
        }
        c->p.eta_seconds = gantry_copier_eta(c->p.bytes_total - c->p.bytes_done, c->p.rate);
        *ret = c->p;
}

void gantry_copier_copy_progress(struct gantry_copier_copy *c, struct gantry_copier_progress *ret)
{
        uint64_t now = gantry_now_ns();

        pthread_mutex_lock(&c->lock);
        progress_locked(c, now, ret);
        pthread_mutex_unlock(&c->lock);
}

static uint64_t object_length(const struct gantry_copier_copy *c, uint64_t i)
{
        uint64_t off = i * c->p.object_size;

        return c->src->size - off < c->p.object_size ? c->src->size - off : c->p.object_size;
}

/* The source's extents callback: marks the objects the extent touches. */
static int plan_extent(uint64_t offset, uint64_t length, void *arg)
{
        struct gantry_copier_copy *c = arg;
        uint64_t first, last;

        if (length == 0 || offset >= c->src->size)
                return 0;
        if (length > c->src->size - offset)
                length = c->src->size - offset;
        first = offset / c->p.object_size;
        last = (offset + length - 1) / c->p.object_size;
        for (uint64_t i = first; i <= last; i++)
                c->plan[i / 64] |= 1ull << (i % 64);
        return 0;
}

/* Lists the source's extents into the plan and restores the start position. */
static int plan(struct gantry_copier_copy *c)
{
        uint64_t count = c->p.object_count, done = 0, total = 0, done_objects = 0, n = 0;
        unsigned window = 4 * c->o.in_flight < 64 ? 64 : 4 * c->o.in_flight;
        int r;

        if (!(c->plan = calloc(count / 64 + 1, sizeof(uint64_t))))
                return -ENOMEM;
        if ((r = c->src->ops->extents(c->src, plan_extent, c)) < 0)
                return r;
        pthread_mutex_lock(&c->lock);
        gantry_copier_position_init(&c->pos, count, c->plan, window);
        r = gantry_copier_position_decode(&c->pos, c->start_position);
        for (uint64_t i = gantry_copier_plan_next(c->plan, count, 0); r == 0 && i < count;
             i = gantry_copier_plan_next(c->plan, count, i + 1)) {
                n++;
                total += object_length(c, i);
                if (gantry_copier_position_is_done(&c->pos, i)) {
                        done += object_length(c, i);
                        done_objects++;
                }
        }
        c->p.objects_total = n;
        c->p.objects_done = done_objects;
        c->p.bytes_total = total;
        c->p.bytes_done = done;
        c->p.watermark = c->pos.watermark;
        c->p.planned = r == 0;
        pthread_mutex_unlock(&c->lock);
        return r;
}

/* The zero-check block at @at of an object of @len bytes. */
static size_t block(size_t len, size_t at)
{
        return len - at < ZERO_BLOCK ? len - at : ZERO_BLOCK;
}

static bool is_zero(const char *buf, size_t len)
{
        return len == 0 || (buf[0] == 0 && memcmp(buf, buf + 1, len - 1) == 0);
}

/*
 * Writes one object's @len bytes at @off: whole for an incremental source,
 * else only its runs of data (ZERO_BLOCK granularity). Adds the bytes
 * written to *@written.
 */
static int write_object(struct gantry_copier_copy *c, uint64_t off, size_t len, const char *buf,
                        uint64_t *written)
{
        size_t at = 0, start;
        int r;

        if (c->src->incremental) {
                *written += len;
                return c->dst->ops->write(c->dst, off, len, buf);
        }
        while (at < len) {
                while (at < len && is_zero(buf + at, block(len, at)))
                        at += block(len, at);
                if (at >= len)
                        break;
                start = at;
                while (at < len && !is_zero(buf + at, block(len, at)))
                        at += block(len, at);
                if ((r = c->dst->ops->write(c->dst, off + start, at - start, buf + start)) < 0)
                        return r;
                *written += at - start;
        }
        return 0;
}

/* The first object not started and not done, or count. Under lock. */
static uint64_t next_object(struct gantry_copier_copy *c)
{
        uint64_t i = gantry_copier_plan_next(c->plan, c->p.object_count, c->cursor);

        while (i < c->p.object_count && gantry_copier_position_is_done(&c->pos, i))
                i = gantry_copier_plan_next(c->plan, c->p.object_count, i + 1);
        return i;
}

/* Object @i (@len bytes) is copied and, with verify, checked: it counts as done. Under lock. */
static void done_locked(struct gantry_copier_copy *c, uint64_t i, uint64_t len)
{
        gantry_copier_position_mark_done(&c->pos, i);
        c->p.bytes_done += len;
        c->p.objects_done++;
        c->since_persist++;
        pthread_cond_broadcast(&c->cond);
}

/* Stops the copy with @r from object @i, unless it stopped already. Under lock. */
static void fail_locked(struct gantry_copier_copy *c, uint64_t i, int r)
{
        if (!c->err && r != -ECANCELED) {
                c->err = r;
                c->mismatch_at = i * c->p.object_size;
        }
        pthread_cond_broadcast(&c->cond);
}

/* One object's checksum check in flight. */
struct check {
        struct gantry_copier_copy *c;
        uint64_t i, len;
};

/* The checksum's verdict on an object, from a librados thread. */
static void check_done(int r, void *arg)
{
        struct check *k = arg;
        struct gantry_copier_copy *c = k->c;

        pthread_mutex_lock(&c->lock);
        if (r < 0)
                fail_locked(c, k->i, r);
        else
                done_locked(c, k->i, k->len);
        c->checking--;
        pthread_cond_broadcast(&c->cond);
        pthread_mutex_unlock(&c->lock);
        free(k);
}

/*
 * Starts the checksum check of object @i (@len bytes of @buf), waiting first
 * while in_flight checks are out: the object counts as done when the
 * verdict comes (check_done). Returns 0 or -errno (nothing started).
 */
static int check_object(struct gantry_copier_copy *c, uint64_t i, uint64_t len, const char *buf)
{
        struct check *k = malloc(sizeof(*k));
        int r;

        if (!k)
                return -ENOMEM;
        *k = (struct check){ .c = c, .i = i, .len = len };
        pthread_mutex_lock(&c->lock);
        while (c->checking >= c->o.in_flight && !c->err && !atomic_load(&c->cancel))
                pthread_cond_wait(&c->cond, &c->lock);
        r = c->err ? c->err : atomic_load(&c->cancel) ? -ECANCELED : 0;
        if (r == 0)
                c->checking++;
        pthread_mutex_unlock(&c->lock);
        if (r == 0 && (r = gantry_copier_checksum_start(c->dst->checksum, i * c->p.object_size, len, buf,
                                                        check_done, k)) < 0) {
                pthread_mutex_lock(&c->lock);
                c->checking--;
                pthread_cond_broadcast(&c->cond);
                pthread_mutex_unlock(&c->lock);
        }
        if (r < 0)
                free(k);
        return r;
}

/* Reads object @off (@len bytes) back from the destination into @back and compares it with @buf. */
static int verify_object(struct gantry_copier_copy *c, uint64_t off, size_t len, const char *buf, char *back)
{
        int r = c->dst->ops->read(c->dst, off, len, back);

        if (r < 0)
                return r;
        return memcmp(buf, back, len) == 0 ? 0 : -EUCLEAN;
}

static void *worker(void *arg)
{
        struct gantry_copier_copy *c = arg;
        char *buf = NULL, *back = NULL;
        uint64_t i, len, written;
        bool checksum = c->o.verify && c->dst->checksum, checking;
        int r = posix_memalign((void **)&buf, 4096, c->p.object_size) ? -ENOMEM : 0;

        if (r == 0 && c->o.verify && !checksum && posix_memalign((void **)&back, 4096, c->p.object_size))
                r = -ENOMEM;

        pthread_mutex_lock(&c->lock);
        if (r < 0 && !c->err)
                c->err = r;
        while (!c->err && !atomic_load(&c->cancel)) {
                i = next_object(c);
                if (i >= c->p.object_count)
                        break;
                if (!gantry_copier_position_may_start(&c->pos, i)) {
                        pthread_cond_wait(&c->cond, &c->lock);
                        continue;
                }
                c->cursor = i + 1;
                pthread_mutex_unlock(&c->lock);

                len = object_length(c, i);
                written = 0;
                checking = false;
                r = gantry_copier_bucket_take(c->o.bucket, len, &c->cancel);
                if (r == 0)
                        r = c->src->ops->read(c->src, i * c->p.object_size, len, buf);
                if (r == 0)
                        r = write_object(c, i * c->p.object_size, len, buf, &written);
                if (r == 0 && back)
                        r = verify_object(c, i * c->p.object_size, len, buf, back);
                if (r == 0 && checksum)
                        checking = (r = check_object(c, i, len, buf)) == 0;

                pthread_mutex_lock(&c->lock);
                c->p.bytes_read += len;
                c->p.bytes_written += written;
                if (r < 0) {
                        fail_locked(c, i, r);
                        break;
                }
                if (!checking)
                        done_locked(c, i, len);
        }
        c->workers_left--;
        pthread_cond_broadcast(&c->cond);
        pthread_mutex_unlock(&c->lock);
        free(back);
        free(buf);
        return NULL;
}

uint64_t gantry_copier_copy_mismatch(struct gantry_copier_copy *c)
{
        uint64_t at;

        pthread_mutex_lock(&c->lock);
        at = c->mismatch_at;
        pthread_mutex_unlock(&c->lock);
        return at;
}

/* Flushes the destination, then stores @text. Called without the lock. */
static int persist(struct gantry_copier_copy *c, const struct gantry_copier_progress *p, const char *text)
{
        int r = c->dst->ops->flush(c->dst);

        if (r < 0 || !c->o.persist)
                return r;
        r = c->o.persist(p, text, c->o.arg);
        return r < 0 ? r : 0;
}

/* The caller's thread while workers copy: persists every K objects or T ms. */
static void coordinate(struct gantry_copier_copy *c, char *text)
{
        struct gantry_copier_progress p;
        struct timespec until;
        int r;

        gantry_clock_deadline(&until, c->o.persist_every_ms);
        pthread_mutex_lock(&c->lock);
        while (c->workers_left > 0 || c->checking > 0) {
                if (c->err || atomic_load(&c->cancel)) {
                        /* stopping: nothing to persist until the workers are out */
                        pthread_cond_wait(&c->cond, &c->lock);
                        continue;
                }
                r = pthread_cond_timedwait(&c->cond, &c->lock, &until);
                if ((c->workers_left == 0 && c->checking == 0) || c->err || atomic_load(&c->cancel))
                        continue;
                if (r != ETIMEDOUT && c->since_persist < c->o.persist_every_objects)
                        continue;
                if (c->since_persist == 0) {
                        gantry_clock_deadline(&until, c->o.persist_every_ms);
                        continue;
                }
                c->since_persist = 0;
                progress_locked(c, gantry_now_ns(), &p);
                gantry_copier_position_encode(&c->pos, text, GANTRY_COPIER_POSITION_MAX);
                pthread_mutex_unlock(&c->lock);
                r = persist(c, &p, text);
                pthread_mutex_lock(&c->lock);
                if (r < 0 && !c->err)
                        c->err = r;
                gantry_clock_deadline(&until, c->o.persist_every_ms);
        }
        pthread_mutex_unlock(&c->lock);
}

int gantry_copier_copy_run(struct gantry_copier_copy *c)
{
        pthread_t threads[GANTRY_COPIER_IN_FLIGHT_MAX];
        struct gantry_copier_progress p;
        unsigned started = 0;
        char *text;
        int r;

        if (!(text = malloc(GANTRY_COPIER_POSITION_MAX)))
                return -ENOMEM;
        if ((r = plan(c)) < 0)
                goto out;
        pthread_mutex_lock(&c->lock);
        c->start_ns = gantry_now_ns();
        gantry_copier_rate_start(&c->rate, c->start_ns, c->p.bytes_done);
        c->workers_left = c->o.in_flight;
        pthread_mutex_unlock(&c->lock);
        for (; started < c->o.in_flight; started++) {
                if (pthread_create(&threads[started], NULL, worker, c) != 0)
                        break;
        }
        pthread_mutex_lock(&c->lock);
        c->workers_left -= c->o.in_flight - started; /* those never started */
        if (started == 0)
                c->err = -EAGAIN;
        pthread_mutex_unlock(&c->lock);
        coordinate(c, text);
        for (unsigned i = 0; i < started; i++)
                pthread_join(threads[i], NULL);

        pthread_mutex_lock(&c->lock);
        r = c->err;
        if (r == 0 && atomic_load(&c->cancel) && !gantry_copier_position_complete(&c->pos))
                r = -ECANCELED;
        progress_locked(c, gantry_now_ns(), &p);
        gantry_copier_position_encode(&c->pos, text, GANTRY_COPIER_POSITION_MAX);
        pthread_mutex_unlock(&c->lock);
        /* the last position: complete, or where a cancel stopped (a later run resumes there) */
        if (r == 0 || r == -ECANCELED) {
                int r2 = persist(c, &p, text);
                if (r2 < 0 && r == 0)
                        r = r2;
        }
out:
        free(text);
        return r;
}
