/*
 * Dataset promotion: a dataset volume made from a volume or snapshot
 * of another cluster is filled by an asynchronous, resumable copy (the tier
 * copier, copier/copier.h) running in a thread of the controller, so a
 * terabyte-sized CreateVolume does not have to finish within one call.
 *
 * CreateVolume's retries poll: the first call writes the copy's record,
 * makes the destination image and starts the copy; every call answers
 * ABORTED "copying pvc-x from capa: 41 %, 2.3 GB/s, about 6 min left" while
 * it runs (the provisioner retries ABORTED and shows the message in the
 * PVC's events), and OK once it is done. The record is a JSON object
 * (copier/record.h) in the omap of "gantry.copies" in the destination pool,
 * key = volume uuid, rewritten with the copier's position every few objects:
 * a controller killed with kill -9 resumes there on the next retry.
 *
 * A volume source is copied from a snapshot "gantry-copy-<uuid>" taken for
 * the copy (one point in time), kept as long as the copy's volume exists
 * (the base of a later refresh) and removed when it is deleted. If that
 * snapshot has to be taken anew, the source may have changed, so the copy
 * starts over. A complete copy is snapshotted ("gantry-promoted"); a copy of
 * a newer snapshot of the same source builds on it (promotion_refresh.c).
 * DeleteVolume cancels a running copy, then removes its snapshot and
 * record. Reads of each source cluster share one bandwidth cap
 * (clusters[].copy.readMBps). Unfinished copies resume when the controller
 * starts (promotion_resume.c) or at the next CreateVolume retry.
 *
 * Locking: CreateVolume and DeleteVolume hold the volume's uuid lock around
 * every call here; the copy thread only touches its own promotion and the
 * record, which nobody else writes while it runs.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "dataset_internal.h"
#include "copier.h"
#include "log.h"
#include "metrics.h"
#include "record.h"
#include "tiering_internal.h"

/* A crash costs at most this many objects plus those in flight. */
#define PERSIST_OBJECTS 4
#define PERSIST_MS 1000

struct promotion {
        struct promotion *next;
        char uuid[GANTRY_PROMOTION_KEY_MAX + 1];
        char name[256];
        char labels[200]; /* source="capa",destination="perf" */
        rados_ioctx_t src_io, dst_io; /* own io contexts on the cached connections */
        rbd_image_t img;
        struct gantry_copier_source *src;
        struct gantry_copier_dest *dst;
        struct gantry_copier_copy *copy;
        struct gantry_copier_record rec; /* the copy thread's while it runs */
        uint64_t written_before;       /* bytes written by earlier runs */
        uint64_t read_seen, written_seen; /* counted into the metrics so far */
        double rate;                   /* last persisted rate (under lock) */
        pthread_t thread;
        bool thread_started;
        bool finished; /* under lock */
        int result;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ended; /* a copy finished (CLOCK_MONOTONIC waits) */
static pthread_once_t ended_once = PTHREAD_ONCE_INIT;
static struct promotion *running;
static struct gantry_metrics *metrics;
static struct {
        char cluster[GANTRY_CONFIG_ID_MAX + 1];
        struct gantry_copier_bucket *bucket;
} buckets[GANTRY_CONFIG_MAX_CLUSTERS];

static void ended_init(void)
{
        pthread_condattr_t attr;

        pthread_condattr_init(&attr);
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        pthread_cond_init(&ended, &attr);
        pthread_condattr_destroy(&attr);
}

void gantry_promotion_set_metrics(struct gantry_metrics *m)
{
        metrics = m;
}

/* The shared read cap of @c (NULL: none configured). Under lock. */
static struct gantry_copier_bucket *bucket_for(const struct gantry_cluster_config *c)
{
        size_t i;

        if (!c->copy_read_bytes_per_s)
                return NULL;
        for (i = 0; i < GANTRY_CONFIG_MAX_CLUSTERS && buckets[i].bucket; i++)
                if (strcmp(buckets[i].cluster, c->cluster_id) == 0)
                        return buckets[i].bucket;
        if (i == GANTRY_CONFIG_MAX_CLUSTERS || gantry_copier_bucket_new(c->copy_read_bytes_per_s,
                                                                     &buckets[i].bucket) < 0)
                return NULL;
        snprintf(buckets[i].cluster, sizeof(buckets[i].cluster), "%s", c->cluster_id);
        return buckets[i].bucket;
}

/* ---- metrics ---- */

/* Counts what the copy did since the last call; refreshes the pair's rate. Under lock. */
static void count_locked(struct promotion *m, const struct gantry_copier_progress *p)
{
        double rate = 0;
        int n = 0;

        if (!metrics)
                return;
        gantry_metrics_counter_add(metrics, "gantry_tier_copy_read_bytes_total",
                                   "Bytes dataset promotions read from their source cluster.",
                                   m->labels, (double)(p->bytes_read - m->read_seen));
        gantry_metrics_counter_add(metrics, "gantry_tier_copy_written_bytes_total",
                                   "Bytes dataset promotions wrote into their destination (zero "
                                   "runs and holes are skipped).",
                                   m->labels, (double)(p->bytes_written - m->written_seen));
        m->read_seen = p->bytes_read;
        m->written_seen = p->bytes_written;
        for (struct promotion *o = running; o; o = o->next) {
                if (o->finished)
                        continue;
                n++;
                if (strcmp(o->labels, m->labels) == 0)
                        rate += o->rate;
        }
        gantry_metrics_gauge_set(metrics, "gantry_tier_copy_rate_bytes_per_second",
                                 "Current copy rate of the running promotions, per cluster pair.",
                                 m->labels, rate);
        gantry_metrics_gauge_set(metrics, "gantry_tier_copies_in_progress",
                                 "Dataset promotions copying now.", NULL, n);
}

/* ---- the copy thread ---- */

static int persist(const struct gantry_copier_progress *p, const char *position, void *arg)
{
        struct promotion *m = arg;
        char *pos = strdup(position);

        if (!pos)
                return -ENOMEM;
        free(m->rec.position);
        m->rec.position = pos;
        gantry_copier_record_set_progress(&m->rec, p);
        m->rec.bytes_written = m->written_before + p->bytes_written;
        m->rec.updated = time(NULL);
        pthread_mutex_lock(&lock);
        m->rate = p->rate;
        count_locked(m, p);
        pthread_mutex_unlock(&lock);
        return gantry_promotion_record_write(m->dst_io, m->uuid, &m->rec);
}

static void *copy_thread(void *arg)
{
        struct promotion *m = arg;
        struct gantry_copier_progress p;
        const char *result;
        int r = gantry_copier_copy_run(m->copy), r2 = 0, rb;

        gantry_copier_copy_progress(m->copy, &p);
        if (r == 0 && (rb = gantry_refresh_mark_base(m->img, &m->rec)) < 0)
                log_warn("tier.refresh_base_unmarked", "name=%s uuid=%s error=%s", m->name, m->uuid,
                         strerror(-rb)); /* complete all the same, only no base for a refresh */
        if (r == 0) {
                snprintf(m->rec.state, sizeof(m->rec.state), "done");
                m->rec.rate = p.rate > 0 ? p.rate : (double)p.bytes_read / (p.elapsed_seconds + 1e-9);
        } else if (r != -ECANCELED) {
                snprintf(m->rec.state, sizeof(m->rec.state), "failed");
                snprintf(m->rec.error, sizeof(m->rec.error), "%s", strerror(-r));
        }
        m->rec.updated = time(NULL);
        /* a cancelled copy's record is its canceller's to remove */
        if (r != -ECANCELED)
                r2 = gantry_promotion_record_write(m->dst_io, m->uuid, &m->rec);
        result = r == 0 ? "done" : r == -ECANCELED ? "cancelled" : "failed";
        log_info("tier.copy_ended",
                 "name=%s uuid=%s result=%s error=%s bytes_read=%llu bytes_written=%llu seconds=%.1f "
                 "record_error=%d refresh_of=%s",
                 m->name, m->uuid, result, r < 0 ? strerror(-r) : "-",
                 (unsigned long long)p.bytes_read, (unsigned long long)p.bytes_written,
                 p.elapsed_seconds, r2, m->rec.refresh_of[0] ? m->rec.refresh_of : "-");
        pthread_once(&ended_once, ended_init);
        pthread_mutex_lock(&lock);
        m->finished = true;
        pthread_cond_broadcast(&ended);
        m->result = r < 0 ? r : r2;
        m->rate = 0;
        count_locked(m, &p);
        if (metrics) {
                char labels[32];
                snprintf(labels, sizeof(labels), "result=\"%s\"", result);
                gantry_metrics_counter_add(metrics, "gantry_tier_copies_total",
                                           "Dataset promotions that ended, by result.", labels, 1);
                if (m->rec.refresh_of[0])
                        gantry_metrics_counter_add(metrics, "gantry_tier_refreshes_total",
                                                   "Promotions made as a refresh of an older copy "
                                                   "(only the changes copied), by result.",
                                                   labels, 1);
        }
        pthread_mutex_unlock(&lock);
        return NULL;
}

static void promotion_free(struct promotion *m)
{
        if (!m)
                return;
        gantry_copier_copy_free(m->copy);
        gantry_copier_dest_free(m->dst);
        if (m->img)
                rbd_close(m->img);
        gantry_copier_source_free(m->src);
        if (m->src_io)
                rados_ioctx_destroy(m->src_io);
        if (m->dst_io)
                rados_ioctx_destroy(m->dst_io);
        gantry_copier_record_clear(&m->rec);
        free(m);
}

/* Takes @m out of the list (if there) and waits for its thread. */
static void promotion_stop(struct promotion *m, bool cancel)
{
        pthread_mutex_lock(&lock);
        for (struct promotion **pp = &running; *pp; pp = &(*pp)->next) {
                if (*pp == m) {
                        *pp = m->next;
                        break;
                }
        }
        pthread_mutex_unlock(&lock);
        if (cancel && m->copy)
                gantry_copier_copy_cancel(m->copy);
        if (m->thread_started)
                pthread_join(m->thread, NULL);
}

static struct promotion *find_locked(const char *uuid)
{
        for (struct promotion *m = running; m; m = m->next)
                if (strcmp(m->uuid, uuid) == 0)
                        return m;
        return NULL;
}

/* Starts the copy thread for @q from @rec (taken over). */
static int start(const struct gantry_promotion_request *q, struct gantry_copier_record *rec,
                 struct gantry_error *err)
{
        struct promotion *m = calloc(1, sizeof(*m));
        struct gantry_copier_copy_opts o = { 0 };
        int r;

        if (!m) {
                gantry_copier_record_clear(rec);
                return gantry_error_set(err, ENOMEM, "out of memory");
        }
        m->rec = *rec;
        memset(rec, 0, sizeof(*rec));
        m->written_before = m->rec.bytes_written;
        snprintf(m->uuid, sizeof(m->uuid), "%s", q->uuid);
        snprintf(m->name, sizeof(m->name), "%s", q->name);
        snprintf(m->labels, sizeof(m->labels), "source=\"%s\",destination=\"%s\"",
                 q->src_cluster->cluster_id, q->dst_cluster);
        r = rados_ioctx_create2(rados_ioctx_get_cluster(q->dst_io), rados_ioctx_get_id(q->dst_io),
                                &m->dst_io);
        if (r == 0)
                r = rados_ioctx_create2(rados_ioctx_get_cluster(q->src_io),
                                        rados_ioctx_get_id(q->src_io), &m->src_io);
        if (r < 0) {
                r = gantry_ceph_error(err, r, "open pools for the copy into", q->dst_image);
                goto fail;
        }
        if ((r = rbd_open(m->dst_io, q->dst_image, &m->img, NULL)) < 0 ||
            (r = gantry_copier_dest_rbd_new(m->img, &m->dst)) < 0) {
                r = gantry_ceph_error(err, r, "open image", q->dst_image);
                goto fail;
        }
        if ((r = gantry_copier_source_rbd_new(m->src_io, m->rec.src_image, m->rec.src_snap,
                                            m->rec.refresh_of[0] ? m->rec.refresh_from : NULL,
                                            &m->src)) < 0) {
                r = gantry_ceph_error(err, r, "open source image", m->rec.src_image);
                goto fail;
        }
        o.in_flight = (unsigned)q->src_cluster->copy_objects_in_flight;
        o.position = m->rec.position;
        o.persist_every_objects = PERSIST_OBJECTS;
        o.persist_every_ms = PERSIST_MS;
        o.persist = persist;
        o.arg = m;
        pthread_mutex_lock(&lock);
        o.bucket = bucket_for(q->src_cluster);
        pthread_mutex_unlock(&lock);
        if ((r = gantry_copier_copy_new(m->src, m->dst, &o, &m->copy)) < 0) {
                r = gantry_error_set(err, -r, "copy into %s: %s", q->dst_image, strerror(-r));
                goto fail;
        }
        pthread_mutex_lock(&lock);
        if (pthread_create(&m->thread, NULL, copy_thread, m) != 0) {
                pthread_mutex_unlock(&lock);
                r = gantry_error_set(err, EAGAIN, "cannot start a copy thread");
                goto fail;
        }
        m->thread_started = true;
        m->next = running;
        running = m;
        pthread_mutex_unlock(&lock);
        log_info("tier.copy_started",
                 "name=%s uuid=%s source=%s destination=%s position=%s refresh_of=%s from_snap=%s",
                 m->name, m->uuid, m->rec.source, m->rec.destination,
                 m->rec.position ? m->rec.position : "0",
                 m->rec.refresh_of[0] ? m->rec.refresh_of : "-",
                 m->rec.refresh_of[0] ? m->rec.refresh_from : "-");
        return 0;
fail:
        promotion_free(m);
        return r;
}

/* The ABORTED answer while a copy runs. */
static int busy(const struct gantry_promotion_request *q, const struct gantry_copier_progress *p,
                struct gantry_error *err)
{
        char line[128];

        gantry_copier_progress_format(p, line, sizeof(line));
        return gantry_error_set(err, EBUSY, "copying %s from %s: %s", q->name,
                                q->src_cluster->cluster_id, line);
}

/* Takes the copy's snapshot of a volume source; 1 when it was made just now. */
static int take_snapshot(rados_ioctx_t io, const char *image, const char *snap)
{
        rbd_image_t img;
        int r = rbd_open(io, image, &img, NULL);

        if (r < 0)
                return r;
        r = rbd_snap_create(img, snap);
        rbd_close(img);
        return r == 0 ? 1 : r == -EEXIST ? 0 : r;
}

static int remove_snapshot(rados_ioctx_t io, const char *image, const char *snap)
{
        rbd_image_t img;
        int r = rbd_open(io, image, &img, NULL);

        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        r = rbd_snap_remove(img, snap);
        rbd_close(img);
        return r == -ENOENT ? 0 : r;
}

int gantry_promotion_snapshot(rados_ioctx_t io, const char *image, const char *snap, bool take)
{
        return take ? take_snapshot(io, image, snap) : remove_snapshot(io, image, snap);
}

static void new_record(const struct gantry_promotion_request *q, struct gantry_copier_record *rec)
{
        char pool[128] = "";

        memset(rec, 0, sizeof(*rec));
        rados_ioctx_get_pool_name(q->src_io, pool, sizeof(pool));
        snprintf(rec->kind, sizeof(rec->kind), "promote");
        snprintf(rec->id, sizeof(rec->id), "%s", q->uuid);
        snprintf(rec->name, sizeof(rec->name), "%s", q->name);
        snprintf(rec->state, sizeof(rec->state), "copying");
        snprintf(rec->src_cluster, sizeof(rec->src_cluster), "%s", q->src_cluster->cluster_id);
        rec->src_pool_id = rados_ioctx_get_id(q->src_io);
        snprintf(rec->src_image, sizeof(rec->src_image), "%s", q->src_image);
        rec->own_snap = q->src_snap == NULL;
        if (q->src_snap)
                snprintf(rec->src_snap, sizeof(rec->src_snap), "%s", q->src_snap);
        else
                snprintf(rec->src_snap, sizeof(rec->src_snap), "gantry-copy-%s", q->uuid);
        snprintf(rec->source, sizeof(rec->source), "%s/%s/%s@%s", rec->src_cluster, pool,
                 rec->src_image, rec->src_snap);
        rados_ioctx_get_pool_name(q->dst_io, pool, sizeof(pool));
        snprintf(rec->destination, sizeof(rec->destination), "%s/%s/%s", q->dst_cluster, pool,
                 q->dst_image);
        rec->eta = -1;
        rec->started = rec->updated = time(NULL);
}

void gantry_promotion_record_new(const struct gantry_promotion_request *q,
                                 struct gantry_copier_record *ret)
{
        new_record(q, ret);
}

int gantry_promotion_poll(const struct gantry_promotion_request *q, bool *ret_keep,
                          struct gantry_error *err)
{
        struct gantry_copier_record rec = { 0 };
        struct gantry_copier_progress p;
        struct promotion *m;
        rbd_image_t img;
        bool fresh_image = false, first;
        int r;

        *ret_keep = false;
        pthread_mutex_lock(&lock);
        m = find_locked(q->uuid);
        if (m && !m->finished) {
                pthread_mutex_unlock(&lock);
                *ret_keep = true;
                gantry_copier_copy_progress(m->copy, &p);
                return busy(q, &p, err);
        }
        pthread_mutex_unlock(&lock);
        if (m) {
                /* ended since the last call: collect it; its record says how */
                r = m->result;
                promotion_stop(m, false);
                promotion_free(m);
                if (r < 0 && r != -ECANCELED) {
                        *ret_keep = true;
                        return gantry_ceph_error(err, r, "copy from the source into", q->dst_image);
                }
        }

        r = gantry_promotion_record_read(q->dst_io, q->uuid, &rec);
        if (r == 0 && strcmp(rec.state, "done") == 0) {
                /* a volume source's snapshot stays: the base of a later refresh */
                *ret_keep = true;
                gantry_copier_record_clear(&rec);
                return 0;
        }
        if (r == 0 && q->resume_only && strcmp(rec.state, "copying") != 0) {
                gantry_copier_record_clear(&rec);
                return -ENOENT; /* failed copies wait for their CreateVolume */
        }
        first = r == -ENOENT || r == -EINVAL;
        if (first && q->resume_only)
                return -ENOENT;
        if (first) {
                /* a first call (or a record nobody can read): start from nothing */
                struct gantry_error ignore = { 0 };
                gantry_copier_record_clear(&rec);
                new_record(q, &rec);
                if ((r = gantry_dataset_image_remove(q->dst_io, q->dst_image, true, &ignore)) < 0)
                        return gantry_ceph_error(err, r, "remove half-made image", q->dst_image);
        } else if (r < 0) {
                return gantry_ceph_error(err, r, "read the copy record of", q->name);
        } else {
                *ret_keep = true; /* progress to keep from here on */
                snprintf(rec.state, sizeof(rec.state), "copying");
                rec.error[0] = '\0';
        }

        if (rec.own_snap) {
                r = take_snapshot(q->src_io, rec.src_image, rec.src_snap);
                if (r < 0) {
                        gantry_copier_record_clear(&rec);
                        return gantry_ceph_error(err, r, "snapshot source image", q->src_image);
                }
                if (r == 1 && rec.position) {
                        /* a new point in time: what was copied is of another one */
                        free(rec.position);
                        rec.position = NULL;
                        rec.bytes_done = 0;
                }
        }
        if (first && (r = gantry_refresh_pick_base(q, &rec)) < 0)
                log_warn("tier.refresh_base_unknown", "name=%s uuid=%s error=%s (a full copy)",
                         q->name, q->uuid, strerror(-r));
        if (first && q->refresh_only && !rec.refresh_of[0]) {
                if (rec.own_snap)
                        remove_snapshot(q->src_io, rec.src_image, rec.src_snap);
                gantry_copier_record_clear(&rec);
                return gantry_error_set(err, ENOENT, "no complete copy of an older snapshot of %s "
                                        "in this pool to refresh from", q->src_image);
        }
        if (!first && rec.refresh_of[0] && gantry_refresh_base_gone(q, &rec)) {
                /* what the refresh builds on went: a full copy into a new image */
                struct gantry_error ignore = { 0 };
                log_info("tier.refresh_base_gone", "name=%s uuid=%s base=%s (a full copy)", q->name,
                         q->uuid, rec.refresh_of);
                gantry_refresh_forget(&rec);
                if ((r = gantry_dataset_image_remove(q->dst_io, q->dst_image, true, &ignore)) < 0) {
                        gantry_copier_record_clear(&rec);
                        return gantry_ceph_error(err, r, "remove half-made image", q->dst_image);
                }
        }
        r = rbd_open_read_only(q->dst_io, q->dst_image, &img, NULL);
        if (r == 0) {
                rbd_close(img);
        } else if (r == -ENOENT) {
                free(rec.position);
                rec.position = NULL;
                rec.bytes_done = 0;
                fresh_image = true;
        } else {
                gantry_copier_record_clear(&rec);
                return gantry_ceph_error(err, r, "open image", q->dst_image);
        }
        if (fresh_image && q->resume_only) {
                gantry_copier_record_clear(&rec);
                return -ENOENT;
        }
        /* the record before the image: a retry always finds what this call made */
        if ((r = gantry_promotion_record_write(q->dst_io, q->uuid, &rec)) < 0) {
                gantry_copier_record_clear(&rec);
                return gantry_ceph_error(err, r, "write the copy record of", q->name);
        }
        if (fresh_image && (r = rec.refresh_of[0] ? gantry_refresh_make_image(q, &rec)
                                                  : rbd_create4(q->dst_io, q->dst_image, q->size,
                                                                q->opts)) < 0) {
                bool refresh = rec.refresh_of[0];
                gantry_copier_record_clear(&rec);
                if (refresh) /* the base may have gone meanwhile: the retry sees and copies whole */
                        return gantry_ceph_error(err, r, "clone the refreshed copy into", q->dst_image);
                if (r == -ENOENT)
                        return gantry_error_set(err, EINVAL, "parameters.dataPool: pool does not exist");
                return gantry_ceph_error(err, r, "create image", q->dst_image);
        }
        p = (struct gantry_copier_progress){ .bytes_done = rec.bytes_done,
                                           .bytes_total = rec.bytes_total,
                                           .planned = rec.bytes_total > 0 };
        if ((r = start(q, &rec, err)) < 0)
                return r;
        return busy(q, &p, err);
}

int gantry_promotion_cancel(const struct gantry_config *config, rados_ioctx_t dst_io,
                            const char *uuid, struct gantry_error *err)
{
        struct gantry_copier_record rec;
        const struct gantry_cluster_config *c;
        struct gantry_ceph_credentials creds;
        struct promotion *m;
        rados_ioctx_t src_io;
        char keybuf[512];
        int r;

        pthread_mutex_lock(&lock);
        m = find_locked(uuid);
        pthread_mutex_unlock(&lock);
        if (m) {
                promotion_stop(m, true);
                log_info("tier.copy_cancelled", "name=%s uuid=%s", m->name, uuid);
                promotion_free(m);
        }
        r = gantry_promotion_record_read(dst_io, uuid, &rec);
        if (r == -ENOENT)
                return 0;
        if (r == -EINVAL)
                rec = (struct gantry_copier_record){ 0 }; /* unreadable: only the key to remove */
        else if (r < 0)
                return gantry_ceph_error(err, r, "read the copy record of", uuid);
        if (rec.own_snap && (c = gantry_config_find_cluster(config, rec.src_cluster))) {
                /* the source is read with its cluster's own (config) credentials */
                r = gantry_ceph_credentials(c, NULL, 0, keybuf, sizeof(keybuf), &creds, err);
                if (r == 0)
                        r = gantry_ceph_ioctx_by_id(c, &creds, rec.src_pool_id, &src_io, err);
                if (r == 0) {
                        r = remove_snapshot(src_io, rec.src_image, rec.src_snap);
                        gantry_ceph_ioctx_destroy(src_io); /* and its connection reference */
                        if (r < 0)
                                r = gantry_ceph_error(err, r, "remove the copy's snapshot of",
                                                      rec.src_image);
                }
                if (r == -ENOENT)
                        r = 0; /* the source pool is gone, and its snapshot with it */
                if (r < 0) {
                        gantry_copier_record_clear(&rec);
                        return r;
                }
        }
        gantry_copier_record_clear(&rec);
        r = gantry_promotion_record_remove(dst_io, uuid);
        return r < 0 ? gantry_ceph_error(err, r, "remove the copy record of", uuid) : 0;
}

bool gantry_promotion_wait(const char *uuid, int64_t wait_ms)
{
        struct timespec until;
        struct promotion *m;
        bool done;
        int r = 0;

        gantry_clock_deadline(&until, wait_ms);

        pthread_once(&ended_once, ended_init);
        pthread_mutex_lock(&lock);
        while ((m = find_locked(uuid)) && !m->finished && r != ETIMEDOUT)
                r = pthread_cond_timedwait(&ended, &lock, &until);
        done = !m || m->finished;
        pthread_mutex_unlock(&lock);
        return done;
}

bool gantry_promotion_running(const char *uuid)
{
        struct promotion *m;
        bool running_now;

        pthread_mutex_lock(&lock);
        m = find_locked(uuid);
        running_now = m && !m->finished;
        pthread_mutex_unlock(&lock);
        return running_now;
}

void gantry_promotion_shutdown(void)
{
        struct promotion *m;

        for (;;) {
                pthread_mutex_lock(&lock);
                m = running;
                pthread_mutex_unlock(&lock);
                if (!m)
                        break;
                /* cancelled copies persist where they stopped: the next retry resumes */
                promotion_stop(m, true);
                promotion_free(m);
        }
        pthread_mutex_lock(&lock);
        for (size_t i = 0; i < GANTRY_CONFIG_MAX_CLUSTERS; i++) {
                gantry_copier_bucket_free(buckets[i].bucket);
                buckets[i].bucket = NULL;
        }
        pthread_mutex_unlock(&lock);
}
