/*
 * Drains: gantry-target's data mover from the fast tier (a checkpoint
 * snapshot's backing file) into the durable tier (an RBD image of the Ceph
 * cluster named by --durable, data in its EC pool), with the shared
 * resumable copier (copier/copier.h), and back (restores: see restore.c).
 *
 * A drain is a field of its snapshot bdev in the state document:
 *
 *   "drain": { "image": "gantry-ckpt-snap-<uuid>", "state": "running",
 *              "position": "12:14,15", "bytes_done": ..., "bytes_total": ...,
 *              "started": <unix s>, "finished": <unix s>, "seconds": <run time>,
 *              "error": "..." }
 *
 * bdev_lvol_start_drain (rpc_drain.c) writes it with state "running" and wakes the
 * worker; the worker (one thread, drains run one after the other, oldest
 * first) copies, and the copier's persist callback writes the position into
 * the state file (atomically, like every change), so gantry-target killed
 * with kill -9 resumes from it at start. With the check (the durable tier's
 * "verify") the copier checks each object as soon as it is written against
 * the file's bytes, so the check overlaps the copy and the position counts
 * only checked objects; a resumed drain checks the whole image once more
 * after the copy (what the run before wrote may predate any check). Both
 * ask the OSDs for each object's CRC-32C where the image allows it
 * (copier/checksum.h), else read the object back. Only then is the state
 * "complete" (a mismatch: "failed", copied again from the start on the next
 * start). A failure leaves "failed" with
 * the error; the next bdev_lvol_start_drain (the snapshotter's next
 * CreateSnapshot) resumes it.
 *
 * The worker takes the RPC lock (rpc_state.c) only to read and write the document, never
 * while it copies, so RPCs are served meanwhile. One token bucket caps the
 * bytes per second of every drain and restore of this target together.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ceph_connect.h"
#include "checksum.h"
#include "clock.h"
#include "copier.h"
#include "log.h"
#include "target_internal.h"

struct tgt_drainer {
        struct tgt_context *ctx;
        pthread_t thread;
        pthread_mutex_t lock; /* guards the fields below */
        pthread_cond_t wake;
        bool stop, started;
        struct gantry_copier_copy *copy; /* the one running, or NULL */
        char key[64];                  /* its bdev */
        struct gantry_copier_bucket *bucket;
        /* the Ceph connection, under conn_lock: a connect (up to 15 s to
         * monitors that do not answer) holds neither the worker's lock nor a
         * stop, which gives it up (copier/ceph_connect.h) */
        pthread_mutex_t conn_lock;
        atomic_bool stopping;
        rados_t rados;
        bool connected;
};

/* ---- Ceph ---- */

int tgt_durable_connect(struct tgt_context *ctx, rados_ioctx_t *ret_io, struct gantry_error *err)
{
        const struct tgt_durable *d = ctx->durable;
        struct tgt_drainer *w = ctx->drainer;
        char name[128];
        int r = 0;

        pthread_mutex_lock(&w->conn_lock);
        if (!w->connected) {
                snprintf(name, sizeof(name), "client.%s", d->user);
                r = rados_create2(&w->rados, "ceph", name, 0);
                if (r == 0 && ((r = rados_conf_set(w->rados, "mon_host", d->mon_host)) < 0 ||
                               (r = rados_conf_set(w->rados, "key", d->key)) < 0 ||
                               (r = rados_conf_set(w->rados, "client_mount_timeout", "15")) < 0 ||
                               (r = rados_conf_set(w->rados, "rados_osd_op_timeout", "60")) < 0 ||
                               (r = rados_conf_set(w->rados, "rados_mon_op_timeout", "15")) < 0 ||
                               /* no client cache: a read-back comes from the OSDs, and whole-object
                                * writes gain nothing from it */
                               (r = rados_conf_set(w->rados, "rbd_cache", "false")) < 0 ||
                               (r = gantry_ceph_connect_stoppable(w->rados, &w->stopping)) < 0) &&
                    r != -ECANCELED) /* a connect given up: the handle is its thread's */
                        rados_shutdown(w->rados);
                w->connected = r == 0;
        }
        if (r == 0 && (r = rados_ioctx_create(w->rados, d->pool, ret_io)) < 0 && r != -ENOENT) {
                rados_shutdown(w->rados); /* maybe a broken connection: the next try makes a new one */
                w->connected = false;
        }
        pthread_mutex_unlock(&w->conn_lock);
        if (r < 0)
                return gantry_error_set(err, r, "ceph cluster %s (pool %s, user %s): %s", d->cluster_id, d->pool,
                                        d->user, strerror(-r));
        return 0;
}

/* Opens image @name, creating it (@size bytes, data in the EC pool) when it is missing. */
static int open_image(struct tgt_context *ctx, rados_ioctx_t io, const char *name, uint64_t size, rbd_image_t *ret,
                      struct gantry_error *err)
{
        rbd_image_options_t o;
        int r = rbd_open(io, name, ret, NULL);

        if (r != -ENOENT)
                goto out;
        rbd_image_options_create(&o);
        rbd_image_options_set_uint64(o, RBD_IMAGE_OPTION_ORDER, 22);
        if (ctx->durable->data_pool)
                rbd_image_options_set_string(o, RBD_IMAGE_OPTION_DATA_POOL, ctx->durable->data_pool);
        r = rbd_create4(io, name, size, o);
        rbd_image_options_destroy(o);
        if (r == 0 || r == -EEXIST)
                r = rbd_open(io, name, ret, NULL);
out:
        if (r < 0)
                return gantry_error_set(err, r, "rbd image %s/%s: %s", ctx->durable->pool, name, strerror(-r));
        return 0;
}

int tgt_durable_remove(struct tgt_context *ctx, const char *image, struct gantry_error *err)
{
        char id[128] = "";
        rbd_image_t img;
        rados_ioctx_t io;
        int r;

        if ((r = tgt_durable_connect(ctx, &io, err)) < 0)
                return r;
        if (rbd_open(io, image, &img, NULL) == 0) {
                /* clone v2: with dataset volumes cloned from it the snapshot moves to the trash */
                rbd_snap_remove(img, TGT_DRAINED_SNAP);
                if (rbd_get_id(img, id, sizeof(id)) < 0)
                        id[0] = '\0';
                rbd_close(img);
        }
        r = rbd_remove(io, image);
        if (r == -ENOTEMPTY || r == -EBUSY || r == -EMLINK) {
                /*
                 * Dataset volumes still hang on it: the trash keeps it, the
                 * DeleteVolume of the last clone purges it (controller/
                 * drained_trash.c). One more try once it is there: a clone
                 * deleted since rbd_remove() looked found it not yet trashed.
                 */
                r = rbd_trash_move(io, image, 0);
                if (r == 0 && !(id[0] && rbd_trash_remove(io, id, false) == 0)) {
                        log_info("target.drain_image_trashed", "image=%s id=%s pool=%s reason=clones", image, id,
                                 ctx->durable->pool);
                        r = 1;
                }
        }
        rados_ioctx_destroy(io);
        if (r < 0 && r != -ENOENT)
                return gantry_error_set(err, r, "removing rbd image %s/%s: %s", ctx->durable->pool, image,
                                        strerror(-r));
        if (r == 0)
                log_info("target.drain_image_removed", "image=%s pool=%s", image, ctx->durable->pool);
        return 0;
}

/*
 * One verify of a whole image: threads take 4 MiB chunks in turn and compare
 * file and image, by checksum where the image has one 4 MiB object per chunk
 * and the simple layout (@sum), else by reading the image back.
 */
struct verify {
        int fd;
        rbd_image_t img;
        struct gantry_copier_checksum *sum;
        uint64_t size;
        pthread_mutex_t lock;
        uint64_t next;   /* the next chunk's offset */
        int r;           /* the first error */
        uint64_t bad_at; /* where a difference was found */
};

enum { VERIFY_CHUNK = 4 << 20 };

static void *verify_worker(void *arg)
{
        struct verify *v = arg;
        char *a = malloc(VERIFY_CHUNK), *b = malloc(VERIFY_CHUNK);
        int r = a && b ? 0 : -ENOMEM;

        while (r == 0) {
                uint64_t off;
                size_t n;
                off_t data;
                ssize_t got;

                pthread_mutex_lock(&v->lock);
                off = v->next;
                v->next += VERIFY_CHUNK;
                if (v->r < 0)
                        off = v->size; /* another thread failed: stop */
                pthread_mutex_unlock(&v->lock);
                if (off >= v->size)
                        break;
                n = v->size - off < VERIFY_CHUNK ? (size_t)(v->size - off) : VERIFY_CHUNK;
                data = lseek(v->fd, (off_t)off, SEEK_DATA); /* its return only: no one uses the offset */
                if ((data < 0 && errno == ENXIO) || (data >= 0 && (uint64_t)data >= off + n))
                        continue; /* a hole: never written, zero in the image */
                if (data < 0) {
                        r = -errno;
                        break;
                }
                got = pread(v->fd, a, n, (off_t)off); /* holes inside read as zeros, as in the image */
                if (got != (ssize_t)n) {
                        r = got < 0 ? -errno : -EIO;
                        break;
                }
                if (v->sum) {
                        r = gantry_copier_checksum_run(v->sum, off, n, a);
                        if (r < 0 && r != -EUCLEAN)
                                break;
                } else {
                        got = rbd_read(v->img, off, n, b);
                        if (got != (ssize_t)n) {
                                r = got < 0 ? (int)got : -EIO;
                                break;
                        }
                        r = memcmp(a, b, n) != 0 ? -EUCLEAN : 0;
                }
                if (r == -EUCLEAN) {
                        pthread_mutex_lock(&v->lock);
                        v->bad_at = off;
                        pthread_mutex_unlock(&v->lock);
                }
        }
        pthread_mutex_lock(&v->lock);
        if (r < 0 && v->r == 0)
                v->r = r;
        pthread_mutex_unlock(&v->lock);
        free(a);
        free(b);
        return NULL;
}

/*
 * Compares every data chunk of @path with the same range of @dst's image, @threads at a time.
 * -EUCLEAN on a difference.
 */
static int verify(const char *path, rbd_image_t img, const struct gantry_copier_dest *dst, uint64_t size,
                  unsigned threads, struct gantry_error *err)
{
        struct verify v = { .img = img, .size = size,
                            .sum = dst->object_size == VERIFY_CHUNK ? dst->checksum : NULL };
        pthread_t tids[GANTRY_COPIER_IN_FLIGHT_MAX];
        unsigned n = 0;

        v.fd = open(path, O_RDONLY | O_CLOEXEC);
        if (v.fd < 0)
                return gantry_error_set(err, errno, "verify: opening %s: %s", path, strerror(errno));
        pthread_mutex_init(&v.lock, NULL);
        if (threads < 1)
                threads = 1;
        if (threads > GANTRY_COPIER_IN_FLIGHT_MAX)
                threads = GANTRY_COPIER_IN_FLIGHT_MAX;
        for (; n < threads; n++)
                if (pthread_create(&tids[n], NULL, verify_worker, &v) != 0)
                        break;
        if (n == 0)
                verify_worker(&v);
        for (unsigned i = 0; i < n; i++)
                pthread_join(tids[i], NULL);
        pthread_mutex_destroy(&v.lock);
        close(v.fd);
        if (v.r == -EUCLEAN)
                return gantry_error_set(err, EUCLEAN, "verify: the image differs from %s at byte %llu", path,
                                        (unsigned long long)v.bad_at);
        if (v.r < 0)
                return gantry_error_set(err, v.r, "verify against %s: %s", path, strerror(-v.r));
        return 0;
}

/* ---- the worker ---- */

struct job {
        struct tgt_context *ctx;
        const char *field; /* "drain" (file -> image) or "restore" (image -> file) */
        char key[64];
        char path[4096];
        char image[160];
        char position[GANTRY_COPIER_POSITION_MAX];
        uint64_t size;
        uint64_t last_save_ns;
};

/* The @field object of bdev @key, or NULL when the bdev (or its job) is gone. Under the lock. */
static json_t *job_of(struct tgt_context *ctx, const char *key, const char *field)
{
        return json_object_get(json_object_get(tgt_state_bdevs(ctx), key), field);
}

/* Sets gauge @name{kind="@kind"}: what runs now, for a stall to be seen before it ends. */
static void set_gauge(struct tgt_context *ctx, const char *name, const char *help, const char *kind,
                      double value)
{
        char labels[64];

        if (!ctx->metrics)
                return;
        snprintf(labels, sizeof(labels), "kind=\"%s\"", kind);
        gantry_metrics_gauge_set(ctx->metrics, name, help, labels, value);
}

static const char RUNNING[] = "gantry_target_copies_running";
static const char RUNNING_HELP[] = "Drains or restores running now (one at a time)";
static const char DONE[] = "gantry_target_copy_done_bytes";
static const char DONE_HELP[] = "Bytes the running (or last) drain or restore has copied and checked, "
                                "as last saved; 0 when one starts";

static int persist(const struct gantry_copier_progress *p, const char *position, void *arg)
{
        struct job *j = arg;
        struct gantry_error err = { 0 };
        json_t *d;
        int r = 0;

        tgt_rpc_lock();
        d = job_of(j->ctx, j->key, j->field);
        if (!d) {
                r = -ECANCELED; /* the snapshot was deleted: stop */
        } else {
                json_object_set_new(d, "position", json_string(position));
                json_object_set_new(d, "bytes_done", json_integer((json_int_t)p->bytes_done));
                json_object_set_new(d, "bytes_total", json_integer((json_int_t)p->bytes_total));
                r = tgt_state_save(j->ctx, &err);
        }
        tgt_rpc_unlock();
        if (d)
                set_gauge(j->ctx, DONE, DONE_HELP, j->field, (double)p->bytes_done);
        if (r < 0 && r != -ECANCELED)
                log_warn("target.copy_persist_failed", "bdev=%s job=%s error=%s", j->key, j->field, err.msg);
        return r;
}

/*
 * The inline verify of a drain asks the OSDs for each object's checksum
 * rather than reading it back (copier/checksum.h) where the image has the
 * simple layout; else, or when librados fails to set it up, it reads back.
 */
static void verify_by_checksum(struct gantry_copier_dest *dst, rados_ioctx_t io, const struct job *j)
{
        const char *why = NULL;
        int r = gantry_copier_dest_rbd_checksum(dst, io, &why);

        if (r == 0)
                log_info("target.drain_verify", "bdev=%s image=%s check=checksum", j->key, j->image);
        else
                log_info("target.drain_verify", "bdev=%s image=%s check=read-back reason=\"%s\"", j->key, j->image,
                         why ? why : strerror(-r));
}

/* Picks the oldest running drain or restore into @j. Returns 1 when there is one. Under the lock. */
static int next_job(struct tgt_context *ctx, struct job *j)
{
        static const char *const fields[] = { "restore", "drain" }; /* a restore has a CreateVolume waiting */
        json_t *b, *d, *best = NULL;
        const char *key, *best_key = NULL, *best_field = NULL;

        for (size_t f = 0; f < 2 && !best; f++) {
                json_object_foreach(tgt_state_bdevs(ctx), key, b) {
                        d = json_object_get(b, fields[f]);
                        if (!d || strcmp(json_string_value(json_object_get(d, "state")) ?: "", "running") != 0)
                                continue;
                        if (!best || json_integer_value(json_object_get(d, "started")) <
                                             json_integer_value(json_object_get(json_object_get(best, fields[f]),
                                                                                "started"))) {
                                best = b;
                                best_key = key;
                                best_field = fields[f];
                        }
                }
        }
        if (!best)
                return 0;
        d = json_object_get(best, best_field);
        memset(j, 0, sizeof(*j));
        j->ctx = ctx;
        j->field = best_field;
        snprintf(j->key, sizeof(j->key), "%s", best_key);
        snprintf(j->path, sizeof(j->path), "%s", json_string_value(json_object_get(best, "filename")) ?: "");
        snprintf(j->image, sizeof(j->image), "%s", json_string_value(json_object_get(d, "image")) ?: "");
        snprintf(j->position, sizeof(j->position), "%s", json_string_value(json_object_get(d, "position")) ?: "");
        j->size = (uint64_t)json_integer_value(json_object_get(best, "size"));
        return 1;
}

/* Copies and verifies one drain or restore. Returns 0 or -errno with @err. */
static int run(struct tgt_drainer *w, struct job *j, struct gantry_copier_progress *ret_p, struct gantry_error *err)
{
        struct tgt_context *ctx = w->ctx;
        bool restore = strcmp(j->field, "restore") == 0;
        struct gantry_copier_source *src = NULL;
        struct gantry_copier_dest *dst = NULL;
        struct gantry_copier_copy *copy = NULL;
        /*
         * A copy from the start verifies each object as it is written (the
         * copier reads it back before counting it done); a resumed one still
         * reads everything back once the copy is complete, as what a run
         * before the resume wrote may predate any check.
         */
        bool resumed = j->position[0] != '\0';
        struct gantry_copier_copy_opts o = { .in_flight = ctx->durable->in_flight, .bucket = w->bucket,
                                           .position = j->position, .persist = persist, .arg = j,
                                           .verify = ctx->durable->verify && !resumed };
        rados_ioctx_t io = NULL;
        rbd_image_t img = NULL;
        int r;

        if ((r = tgt_durable_connect(ctx, &io, err)) < 0)
                return r;
        if (restore) {
                r = rbd_open_read_only(io, j->image, &img, TGT_DRAINED_SNAP);
                if (r < 0) {
                        gantry_error_set(err, r, "rbd image %s@%s: %s", j->image, TGT_DRAINED_SNAP, strerror(-r));
                        goto out;
                }
                if ((r = gantry_copier_source_rbd_new(io, j->image, TGT_DRAINED_SNAP, NULL, &src)) < 0 ||
                    (r = gantry_copier_dest_file_new(j->path, j->size, &dst)) < 0) {
                        gantry_error_set(err, r, "opening %s and %s: %s", j->image, j->path, strerror(-r));
                        goto out;
                }
        } else {
                if ((r = open_image(ctx, io, j->image, j->size, &img, err)) < 0)
                        goto out;
                if ((r = gantry_copier_source_file_new(j->path, &src)) < 0 ||
                    (r = gantry_copier_dest_rbd_new(img, &dst)) < 0) {
                        gantry_error_set(err, r, "opening %s and %s: %s", j->path, j->image, strerror(-r));
                        goto out;
                }
                if (ctx->durable->verify) /* inline, or the whole image once a resumed copy ends */
                        verify_by_checksum(dst, io, j);
        }
        if ((r = gantry_copier_copy_new(src, dst, &o, &copy)) < 0) {
                gantry_error_set(err, r, "preparing the copy of %s: %s", j->image, strerror(-r));
                goto out;
        }
        pthread_mutex_lock(&w->lock);
        w->copy = copy;
        snprintf(w->key, sizeof(w->key), "%s", j->key);
        pthread_mutex_unlock(&w->lock);
        r = gantry_copier_copy_run(copy);
        pthread_mutex_lock(&w->lock);
        gantry_copier_copy_progress(copy, ret_p);
        w->copy = NULL;
        w->key[0] = '\0';
        pthread_mutex_unlock(&w->lock);
        if (r == -EINVAL && j->position[0]) { /* a position of another copy: start over */
                log_warn("target.copy_position_reset", "bdev=%s position=%.64s", j->key, j->position);
                j->position[0] = '\0';
        }
        if (r == -EUCLEAN) { /* the inline verify found a difference: copied again from the start */
                gantry_error_set(err, r, "verify: the image differs from %s at byte %llu", j->path,
                                 (unsigned long long)gantry_copier_copy_mismatch(copy));
                j->position[0] = '\0';
                goto out;
        }
        if (r < 0) {
                gantry_error_set(err, r, "copying between %s and %s: %s", j->path, j->image, strerror(-r));
                goto out;
        }
        if (ctx->durable->verify && resumed &&
            (r = verify(j->path, img, dst, j->size, ctx->durable->in_flight, err)) < 0)
                j->position[0] = '\0';
        /* the point-in-time image a dataset volume is cloned from, and a restore reads */
        if (r == 0 && !restore && (r = rbd_snap_create(img, TGT_DRAINED_SNAP)) == -EEXIST)
                r = 0;
        if (r < 0 && !err->err)
                gantry_error_set(err, r, "snapshot %s@%s: %s", j->image, TGT_DRAINED_SNAP, strerror(-r));
out:
        gantry_copier_copy_free(copy);
        gantry_copier_dest_free(dst);
        gantry_copier_source_free(src);
        if (img)
                rbd_close(img);
        if (io)
                rados_ioctx_destroy(io);
        return r;
}

static void finish(struct tgt_drainer *w, struct job *j, int r, const struct gantry_copier_progress *p,
                   double seconds, const struct gantry_error *why)
{
        struct gantry_error err = { 0 };
        char rate[32];
        json_t *d;

        gantry_copier_format_rate(seconds > 0 ? (double)p->bytes_read / seconds : 0, rate, sizeof(rate));
        tgt_rpc_lock();
        d = job_of(w->ctx, j->key, j->field);
        if (d) {
                json_object_set_new(d, "state", json_string(r == 0 ? "complete" : "failed"));
                json_object_set_new(d, "finished", json_integer((json_int_t)time(NULL)));
                json_object_set_new(d, "seconds", json_real(json_number_value(json_object_get(d, "seconds")) + seconds));
                json_object_set_new(d, "bytes_done", json_integer((json_int_t)(r == 0 ? p->bytes_total : p->bytes_done)));
                json_object_set_new(d, "bytes_total", json_integer((json_int_t)p->bytes_total));
                if (r < 0)
                        json_object_set_new(d, "error", json_string(why->msg));
                else
                        json_object_del(d, "error");
                if (!j->position[0])
                        json_object_set_new(d, "position", json_string(""));
                if (r == 0 && strcmp(j->field, "drain") == 0 && json_is_false(json_object_get(d, "retain_local"))) {
                        /* retention: the verified durable copy is the snapshot now; free the fast tier */
                        json_t *b = json_object_get(tgt_state_bdevs(w->ctx), j->key);
                        if (unlink(j->path) == 0 || errno == ENOENT) {
                                json_object_set_new(b, "evicted", json_true());
                                log_info("target.snapshot_evicted", "bdev=%s file=%s", j->key, j->path);
                        }
                }
                /* the state in memory is right; the next save writes it */
                if (tgt_state_save(w->ctx, &err) < 0)
                        log_warn("target.state_save_failed", "bdev=%s error=\"%s\"", j->key, err.msg);
        }
        tgt_rpc_unlock();
        if (w->ctx->metrics) {
                char labels[64];
                snprintf(labels, sizeof(labels), "kind=\"%s\",result=\"%s\"", j->field, r == 0 ? "complete" : "failed");
                gantry_metrics_counter_add(w->ctx->metrics, "gantry_target_copies_total",
                                           "Drains into and restores from the durable tier that ended, by result",
                                           labels, 1);
                snprintf(labels, sizeof(labels), "kind=\"%s\"", j->field);
                gantry_metrics_counter_add(w->ctx->metrics, "gantry_target_copy_bytes_total",
                                           "Bytes drains and restores wrote (zero runs and holes skipped)", labels,
                                           (double)p->bytes_written);
                gantry_metrics_counter_add(w->ctx->metrics, "gantry_target_copy_seconds_total",
                                           "Seconds drains and restores ran (copy and verify)", labels, seconds);
                gantry_metrics_gauge_set(w->ctx->metrics, "gantry_target_copy_last_rate_bytes",
                                         "Bytes/s read by the last drain or restore that ended", labels,
                                         seconds > 0 ? (double)p->bytes_read / seconds : 0);
        }
        if (r == 0)
                log_info(strcmp(j->field, "drain") == 0 ? "target.drain_complete" : "target.restore_complete",
                         "bdev=%s image=%s bytes=%llu written=%llu seconds=%.3f rate=\"%s\"", j->key, j->image,
                         (unsigned long long)p->bytes_total, (unsigned long long)p->bytes_written, seconds, rate);
        else
                log_warn(strcmp(j->field, "drain") == 0 ? "target.drain_failed" : "target.restore_failed",
                         "bdev=%s image=%s bytes_done=%llu seconds=%.3f error=\"%s\"", j->key, j->image,
                         (unsigned long long)p->bytes_done, seconds, why->msg);
}

static void *worker(void *arg)
{
        struct tgt_drainer *w = arg;
        struct job *j = malloc(sizeof(*j));

        while (j) {
                struct gantry_copier_progress p = { 0 };
                struct gantry_error why = { 0 };
                uint64_t t0;
                int have, r;

                pthread_mutex_lock(&w->lock);
                while (!w->stop) {
                        pthread_mutex_unlock(&w->lock);
                        tgt_rpc_lock();
                        have = next_job(w->ctx, j);
                        tgt_rpc_unlock();
                        pthread_mutex_lock(&w->lock);
                        if (have || w->stop)
                                break;
                        pthread_cond_wait(&w->wake, &w->lock);
                }
                if (w->stop) {
                        pthread_mutex_unlock(&w->lock);
                        break;
                }
                pthread_mutex_unlock(&w->lock);
                log_info(strcmp(j->field, "drain") == 0 ? "target.drain_started" : "target.restore_started",
                         "bdev=%s image=%s size=%llu resume=%s", j->key, j->image, (unsigned long long)j->size,
                         j->position[0] ? j->position : "no");
                t0 = gantry_now_ns();
                set_gauge(w->ctx, RUNNING, RUNNING_HELP, j->field, 1);
                set_gauge(w->ctx, DONE, DONE_HELP, j->field, 0); /* a start is progress too */
                r = run(w, j, &p, &why);
                set_gauge(w->ctx, RUNNING, RUNNING_HELP, j->field, 0);
                if (r == -ECANCELED) {
                        bool stopping, gone;
                        pthread_mutex_lock(&w->lock);
                        stopping = w->stop;
                        pthread_mutex_unlock(&w->lock);
                        if (stopping) /* shutdown: stays "running", resumed at the next start */
                                break;
                        tgt_rpc_lock();
                        gone = !job_of(w->ctx, j->key, "drain") && strcmp(j->field, "drain") == 0;
                        tgt_rpc_unlock();
                        if (gone) { /* the snapshot was deleted while it drained: so is its copy */
                                struct gantry_error e2 = { 0 };
                                if (tgt_durable_remove(w->ctx, j->image, &e2) < 0)
                                        log_warn("target.drain_image_left", "image=%s error=\"%s\"", j->image,
                                                 e2.msg);
                        }
                }
                finish(w, j, r, &p, (double)(gantry_now_ns() - t0) / 1e9, &why);
        }
        free(j);
        return NULL;
}

int tgt_drainer_start(struct tgt_context *ctx, struct gantry_error *err)
{
        struct tgt_drainer *w;
        int r;

        if (!ctx->durable)
                return 0;
        w = calloc(1, sizeof(*w));
        if (!w)
                return gantry_error_set(err, ENOMEM, "out of memory");
        pthread_mutex_init(&w->lock, NULL);
        pthread_mutex_init(&w->conn_lock, NULL);
        pthread_cond_init(&w->wake, NULL);
        w->ctx = ctx;
        if ((r = gantry_copier_bucket_new(ctx->durable->bandwidth, &w->bucket)) < 0) {
                free(w);
                return gantry_error_set(err, r, "bandwidth cap: %s", strerror(-r));
        }
        ctx->drainer = w;
        if ((r = pthread_create(&w->thread, NULL, worker, w)) != 0) {
                ctx->drainer = NULL;
                gantry_copier_bucket_free(w->bucket);
                free(w);
                return gantry_error_set(err, r, "starting the drain worker: %s", strerror(r));
        }
        w->started = true;
        return 0;
}

void tgt_drainer_kick(struct tgt_context *ctx)
{
        struct tgt_drainer *w = ctx->drainer;

        if (!w)
                return;
        pthread_mutex_lock(&w->lock);
        pthread_cond_signal(&w->wake);
        pthread_mutex_unlock(&w->lock);
}

bool tgt_drainer_live(struct tgt_context *ctx, const char *key, struct gantry_copier_progress *ret)
{
        struct tgt_drainer *w = ctx->drainer;
        bool live = false;

        if (!w)
                return false;
        pthread_mutex_lock(&w->lock);
        if (w->copy && strcmp(w->key, key) == 0) {
                gantry_copier_copy_progress(w->copy, ret);
                live = true;
        }
        pthread_mutex_unlock(&w->lock);
        return live;
}

bool tgt_drainer_cancel(struct tgt_context *ctx, const char *key)
{
        struct tgt_drainer *w = ctx->drainer;
        bool running = false;

        if (!w)
                return false;
        pthread_mutex_lock(&w->lock);
        if (w->copy && strcmp(w->key, key) == 0) {
                gantry_copier_copy_cancel(w->copy);
                running = true;
        }
        pthread_mutex_unlock(&w->lock);
        return running;
}

void tgt_drainer_stop(struct tgt_context *ctx)
{
        struct tgt_drainer *w = ctx->drainer;

        if (!w)
                return;
        atomic_store(&w->stopping, true); /* a connect in progress gives up */
        pthread_mutex_lock(&w->lock);
        w->stop = true;
        if (w->copy)
                gantry_copier_copy_cancel(w->copy);
        pthread_cond_signal(&w->wake);
        pthread_mutex_unlock(&w->lock);
        if (w->started)
                pthread_join(w->thread, NULL);
        if (w->connected)
                rados_shutdown(w->rados);
        gantry_copier_bucket_free(w->bucket);
        pthread_cond_destroy(&w->wake);
        pthread_mutex_destroy(&w->lock);
        pthread_mutex_destroy(&w->conn_lock);
        free(w);
        ctx->drainer = NULL;
}
