/*
 * What ControllerPublishVolume and ControllerUnpublishVolume do for a
 * promoted copy (for demotion): both write the record's "lastUsed", the
 * clock the eviction policy (eviction.c) orders copies by. A publish of a
 * demoted copy starts the copy from its source again with the promotion
 * machinery of CreateVolume (promotion.c) and answers ABORTED with the
 * progress line until it is done; the external attacher retries ABORTED,
 * so the pod starts once its data is back. The PV's annotation
 * gantry.io/copy-state says "copying" from the start of that copy and
 * "done" once it is complete (copy_state.c). A volume without a copy record
 * is not a promoted copy and is left alone.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "copy_state.h"
#include "eviction.h"
#include "log.h"
#include "record.h"
#include "tiering_internal.h"

#define STALE_DEMOTING_S 30
#define TOUCH_TRIES 8

/* A copy made again since its demotion that no publish has seen done yet. */
static bool repromoted_unseen(const struct gantry_copier_record *rec)
{
        return rec->demoted > 0 && rec->demoted >= rec->last_used;
}

/*
 * Writes lastUsed = now into the record of @uuid if it (still) says "done",
 * only over the version of "gantry.copies" it read, so it never undoes a
 * demotion's "demoting" written meanwhile (other records' writes make it
 * read again). 0 written, -EAGAIN when the record is not a seen "done"
 * copy any more, -errno.
 */
static int touch(rados_ioctx_t io, const char *uuid)
{
        struct gantry_copier_record rec;
        int r = -ERANGE;

        for (int i = 0; i < TOUCH_TRIES && (r == -ERANGE || r == -EOVERFLOW); i++) {
                uint64_t version;

                if ((r = gantry_promotion_record_read(io, uuid, &rec)) < 0)
                        return r;
                version = rados_get_last_version(io);
                if (strcmp(rec.state, "done") != 0 || repromoted_unseen(&rec)) {
                        gantry_copier_record_clear(&rec);
                        return -EAGAIN;
                }
                rec.last_used = time(NULL);
                r = gantry_promotion_record_store_at(io, uuid, &rec, version);
                gantry_copier_record_clear(&rec);
        }
        return r;
}

/* After a re-promotion: lastUsed = now, over the version read (-ERANGE: read again). */
static int mark_seen(rados_ioctx_t io, const char *uuid)
{
        struct gantry_copier_record rec;
        uint64_t version;
        int r = gantry_promotion_record_read(io, uuid, &rec);

        if (r < 0)
                return r;
        version = rados_get_last_version(io);
        rec.last_used = time(NULL);
        if (rec.last_used <= rec.demoted)
                rec.last_used = rec.demoted + 1; /* seen, even within the second it was demoted */
        r = gantry_promotion_record_store_at(io, uuid, &rec, version);
        gantry_copier_record_clear(&rec);
        return r == -EOVERFLOW ? -ERANGE : r;
}

/* Starts or follows the copy of a demoted @rec back into @e's image. */
static int repromote(const struct gantry_config *config, struct gantry_dataset_target *t,
                     const struct gantry_journal_entry *e, const struct gantry_copier_record *rec,
                     struct gantry_error *err)
{
        const struct gantry_cluster_config *src = gantry_config_find_cluster(config, rec->src_cluster);
        struct gantry_promotion_request q = { 0 };
        struct gantry_ceph_credentials creds;
        rados_ioctx_t src_io = NULL;
        char keybuf[512];
        bool keep;
        int r;

        if (!src)
                return gantry_error_set(err, EINVAL, "volume_id: %s was demoted and its source "
                                        "cluster %s is no longer in the driver config",
                                        e->name, rec->src_cluster);
        /* the source is read with its cluster's own (config) credentials, as the first copy was */
        r = gantry_ceph_credentials(src, NULL, 0, keybuf, sizeof(keybuf), &creds, err);
        if (r == 0)
                r = gantry_ceph_ioctx_by_id(src, &creds, rec->src_pool_id, &src_io, err);
        explicit_bzero(keybuf, sizeof(keybuf));
        if (r < 0)
                return r;
        q.name = e->name;
        q.uuid = e->uuid;
        q.dst_cluster = t->cluster->cluster_id;
        q.dst_io = t->io;
        q.dst_image = e->image;
        q.size = e->size;
        q.src_cluster = src;
        q.src_io = src_io;
        q.src_image = rec->src_image;
        q.src_snap = rec->own_snap ? NULL : rec->src_snap;
        rbd_image_options_create(&q.opts);
        if (e->data_pool[0])
                rbd_image_options_set_string(q.opts, RBD_IMAGE_OPTION_DATA_POOL, e->data_pool);
        r = gantry_promotion_poll(&q, &keep, err);
        rbd_image_options_destroy(q.opts);
        gantry_ceph_ioctx_destroy(src_io);
        return r;
}

int gantry_copy_use_publish(const struct gantry_config *config, struct gantry_dataset_target *t,
                            const struct gantry_journal_entry *e, struct gantry_error *err)
{
        struct gantry_copier_record rec;
        bool demoted;
        char lock[200];
        int r = gantry_promotion_record_read(t->io, e->uuid, &rec);

        if (r == -ENOENT || r == -EINVAL)
                return 0; /* not a promoted copy (or a record that is not ours to judge) */
        if (r < 0)
                return gantry_ceph_error(err, r, "read the copy record of", e->name);
        gantry_copier_record_clear(&rec);
        snprintf(lock, sizeof(lock), "volume:%s", e->uuid);
        if (gantry_lock_try(lock) < 0)
                return gantry_error_set(err, EBUSY, "volume_id: an operation on %s is in progress",
                                        e->name);
        /* read again under the lock: a demotion may have ended meanwhile */
        if ((r = gantry_promotion_record_read(t->io, e->uuid, &rec)) < 0) {
                r = r == -ENOENT ? 0 : gantry_ceph_error(err, r, "read the copy record of", e->name);
                goto out_unlocked;
        }
        if (strcmp(rec.state, "done") == 0 && !repromoted_unseen(&rec)) {
                if ((r = touch(t->io, e->uuid)) == -EAGAIN)
                        r = gantry_error_set(err, EBUSY, "volume_id: %s is being demoted; retry",
                                             e->name);
                else if (r < 0)
                        r = gantry_ceph_error(err, r, "write the copy record of", e->name);
                goto out;
        }
        if (strcmp(rec.state, "demoting") == 0 && time(NULL) - rec.updated < STALE_DEMOTING_S) {
                r = gantry_error_set(err, EBUSY, "volume_id: %s is being demoted; retry", e->name);
                goto out;
        }
        /*
         * demoted (or a demotion that died half way, or a re-promotion under
         * way or just done: the promotion machinery removes the source
         * snapshot it took when it is asked once it is done)
         */
        demoted = strcmp(rec.state, "demoted") == 0 || strcmp(rec.state, "demoting") == 0;
        if (demoted) {
                log_info("tier.copy_repromoting", "name=%s uuid=%s source=%s demoted_at=%lld",
                         e->name, e->uuid, rec.source, (long long)rec.demoted);
                gantry_copy_state_set(NULL, e->name, "copying");
        }
        r = repromote(config, t, e, &rec, err);
        gantry_copier_record_clear(&rec);
        if (r != 0)
                goto out_unlocked;
        log_info("tier.copy_repromoted", "name=%s uuid=%s", e->name, e->uuid);
        /* seen done: from now on it is an ordinary copy again */
        for (int i = 0; i < TOUCH_TRIES && (r = mark_seen(t->io, e->uuid)) == -ERANGE; i++)
                ;
        if (r < 0)
                r = gantry_ceph_error(err, r, "write the copy record of", e->name);
        else
                gantry_copy_state_set(NULL, e->name, "done");
        goto out_unlocked;
out:
        gantry_copier_record_clear(&rec);
out_unlocked:
        gantry_lock_release(lock);
        return r;
}

void gantry_copy_use_unpublish(const struct gantry_config *config, const char *volume_id,
                               void *const *secrets, size_t n_secrets)
{
        struct gantry_dataset_target t = { 0 };
        struct gantry_error err = { 0 };
        char lock[200];
        int r;

        if (gantry_dataset_target_open(config, volume_id, "volume_id", secrets, n_secrets, &t,
                                       &err) < 0)
                goto out;
        snprintf(lock, sizeof(lock), "volume:%s", t.ref.uuid);
        if (gantry_lock_try(lock) < 0)
                goto out; /* whoever holds it is using the volume too */
        r = touch(t.io, t.ref.uuid);
        if (r < 0 && r != -EAGAIN && r != -ENOENT && r != -EINVAL)
                log_warn("tier.copy_use_unrecorded", "uuid=%s error=\"%s\"", t.ref.uuid, strerror(-r));
        gantry_lock_release(lock);
out:
        gantry_dataset_target_close(&t);
}

int gantry_copy_use_check_data(rados_ioctx_t io, const struct gantry_journal_entry *e,
                               const char *field, struct gantry_error *err)
{
        struct gantry_copier_record rec;
        int r = gantry_promotion_record_read(io, e->uuid, &rec);

        if (r == -ENOENT || r == -EINVAL)
                return 0;
        if (r < 0)
                return gantry_ceph_error(err, r, "read the copy record of", e->name);
        r = strcmp(rec.state, "done") == 0
                    ? 0
                    : gantry_error_set(err, ESTALE, "%s: %s is a demoted copy (%s): its data is "
                                       "only in its source %s; publish it first (it is copied "
                                       "again) or use the source", field, e->name, rec.state,
                                       rec.source);
        gantry_copier_record_clear(&rec);
        return r;
}
