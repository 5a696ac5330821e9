/*
 * Dataset promotion through Ceph's own engine (copy.mode "rbd-mirror"):
 * where the destination cluster runs an rbd-mirror daemon with the source
 * cluster as its peer, the controller copies nothing itself. CreateVolume
 * enables snapshot-based mirroring of the source image (pool mirror mode
 * "image" on both sides is the operator's setup), takes a mirror snapshot,
 * and answers ABORTED "mirroring pvc-x from capa: 41 %, ..." on every retry
 * while the daemon replicates it into the destination pool of the same name
 * (a non-primary image, which nobody can write). Once the destination holds
 * a complete copy of that mirror snapshot, the volume is a clone (v2) of the
 * replicated user snapshot, i.e. the VolumeSnapshot the PVC names, or the
 * "gantry-copy-<uuid>" snapshot taken of a volume source: cheap, in the
 * StorageClass's pools, and mappable by krbd (read-only on GPU nodes, as a
 * dataset's ROX access modes ask).
 *
 * The copy's record (copier/record.h, mode "rbd-mirror", state "mirroring",
 * then "done") sits beside the copier's in "gantry.copies". Progress comes
 * from the destination's non-primary mirror snapshot (objects copied so far).
 * DeleteVolume removes the clone, the source snapshot it took, and disables
 * the source's mirroring when Gantry enabled it (image metadata
 * "gantry.mirror") and no other record of the destination pool needs it; the
 * daemon then deletes the non-primary image.
 *
 * Locking: as promotion.c, every call runs under the volume's uuid lock.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tiering_internal.h"
#include "dataset_internal.h"
#include "log.h"
#include "record.h"

#define MODE "rbd-mirror"
#define ENABLED_KEY "gantry.mirror" /* image metadata: Gantry enabled the mirroring */

/* ---- the source side ---- */

/* Enables snapshot mirroring of @img unless it is on; 1 when enabled just now. */
static int enable(rbd_image_t img)
{
        rbd_mirror_image_info_t info;
        rbd_mirror_image_mode_t mode;
        int r = rbd_mirror_image_get_info(img, &info, sizeof(info));

        if (r < 0)
                return r;
        rbd_mirror_image_get_info_cleanup(&info);
        if (info.state == RBD_MIRROR_IMAGE_ENABLED) {
                if (!info.primary)
                        return -EROFS;
                r = rbd_mirror_image_get_mode(img, &mode);
                return r < 0 ? r : mode == RBD_MIRROR_IMAGE_MODE_SNAPSHOT ? 0 : -EMEDIUMTYPE;
        }
        if (info.state == RBD_MIRROR_IMAGE_DISABLING)
                return -EAGAIN;
        /* marked first: a crash in between leaves a mark, never unowned mirroring */
        if ((r = rbd_metadata_set(img, ENABLED_KEY, "1")) < 0)
                return r;
        if ((r = rbd_mirror_image_enable2(img, RBD_MIRROR_IMAGE_MODE_SNAPSHOT)) < 0) {
                rbd_metadata_remove(img, ENABLED_KEY); /* -EINVAL: pool mirroring is off */
                return r;
        }
        return 1;
}

/* Enables mirroring of the source and takes the mirror snapshot this copy waits for. */
static int start_source(const struct gantry_promotion_request *q, struct gantry_copier_record *rec,
                        struct gantry_error *err)
{
        rbd_image_info_t st;
        rbd_image_t img;
        int r;

        if (rec->own_snap &&
            (r = gantry_promotion_snapshot(q->src_io, rec->src_image, rec->src_snap, true)) < 0)
                return gantry_ceph_error(err, r, "snapshot source image", rec->src_image);
        if ((r = rbd_open(q->src_io, rec->src_image, &img, NULL)) < 0)
                return gantry_ceph_error(err, r, "open source image", rec->src_image);
        r = rbd_stat(img, &st, sizeof(st));
        if (r == 0)
                rec->bytes_total = st.size;
        if (r == 0 && (r = enable(img)) == 1)
                log_info("tier.mirror_enabled", "image=%s cluster=%s", rec->src_image,
                         rec->src_cluster);
        if (r >= 0)
                r = rbd_mirror_image_create_snapshot(img, &rec->mirror_snap_id);
        rbd_close(img);
        if (r == -EROFS)
                return gantry_error_set(err, EROFS, "volume_content_source: %s is a non-primary "
                                        "mirror image in %s", rec->src_image, rec->src_cluster);
        if (r == -EMEDIUMTYPE)
                return gantry_error_set(err, EINVAL, "volume_content_source: %s is mirrored in "
                                        "journal mode; copy.mode rbd-mirror needs snapshot mode",
                                        rec->src_image);
        if (r == -EINVAL)
                return gantry_error_set(err, EINVAL, "volume_content_source: cannot mirror %s: is "
                                        "mirroring enabled (mode image) on its pool in %s?",
                                        rec->src_image, rec->src_cluster);
        if (r < 0)
                return gantry_ceph_error(err, r, "mirror source image", rec->src_image);
        return 0;
}

/* ---- the destination side ---- */

struct replica {
        bool exists;        /* the non-primary image is there */
        bool synced;        /* it holds a complete copy of the awaited mirror snapshot */
        uint64_t bytes_done;
        char daemon[32];    /* the daemon's view: "replaying", "down", ... */
};

static const char *status_name(rbd_mirror_image_status_state_t s)
{
        switch (s) {
        case MIRROR_IMAGE_STATUS_STATE_ERROR: return "error";
        case MIRROR_IMAGE_STATUS_STATE_SYNCING: return "syncing";
        case MIRROR_IMAGE_STATUS_STATE_STARTING_REPLAY: return "starting";
        case MIRROR_IMAGE_STATUS_STATE_REPLAYING: return "replaying";
        case MIRROR_IMAGE_STATUS_STATE_STOPPING_REPLAY: return "stopping";
        case MIRROR_IMAGE_STATUS_STATE_STOPPED: return "stopped";
        default: return "unknown";
        }
}

/* What the local rbd-mirror daemon says of @img (its site status). */
static void daemon_state(rbd_image_t img, char *buf, size_t size)
{
        rbd_mirror_image_global_status_t gs;

        snprintf(buf, size, "no status");
        if (rbd_mirror_image_get_global_status(img, &gs, sizeof(gs)) < 0)
                return;
        for (uint32_t i = 0; i < gs.site_statuses_count; i++) {
                const rbd_mirror_image_site_status_t *s = &gs.site_statuses[i];
                if (strcmp(s->mirror_uuid, RBD_MIRROR_IMAGE_STATUS_LOCAL_MIRROR_UUID) != 0)
                        continue;
                /* the daemon reports every ~30 s: a young replica has no status yet */
                if (!s->up && s->state == MIRROR_IMAGE_STATUS_STATE_UNKNOWN)
                        snprintf(buf, size, "no status yet");
                else
                        snprintf(buf, size, "%s%s", s->up ? "" : "down, ", status_name(s->state));
        }
        rbd_mirror_image_global_status_cleanup(&gs);
}

/*
 * Looks at the replica of @rec in @io: synced once a complete non-primary
 * mirror snapshot of the awaited one (or a later one) and the user snapshot
 * to clone are there.
 */
static int look(rados_ioctx_t io, const struct gantry_copier_record *rec, struct replica *ret)
{
        rbd_snap_info_t *snaps = NULL;
        rbd_image_info_t st;
        rbd_image_t img;
        bool have_snap = false, complete = false;
        uint64_t copied = 0;
        int max = 64, n, r;

        memset(ret, 0, sizeof(*ret));
        r = rbd_open_read_only(io, rec->src_image, &img, NULL);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        ret->exists = true;
        daemon_state(img, ret->daemon, sizeof(ret->daemon));
        if ((r = rbd_stat(img, &st, sizeof(st))) < 0)
                goto out;
        for (;;) {
                free(snaps);
                if (!(snaps = calloc((size_t)max, sizeof(*snaps)))) {
                        r = -ENOMEM;
                        goto out;
                }
                n = rbd_snap_list(img, snaps, &max);
                if (n != -ERANGE)
                        break;
        }
        if ((r = n) < 0)
                goto out;
        for (int i = 0; i < n; i++) {
                rbd_snap_namespace_type_t type;
                rbd_snap_mirror_namespace_t ns;

                if (strcmp(snaps[i].name, rec->src_snap) == 0)
                        have_snap = true;
                if (rbd_snap_get_namespace_type(img, snaps[i].id, &type) < 0 ||
                    type != RBD_SNAP_NAMESPACE_TYPE_MIRROR ||
                    rbd_snap_get_mirror_namespace(img, snaps[i].id, &ns, sizeof(ns)) < 0)
                        continue;
                if (ns.state == RBD_SNAP_MIRROR_STATE_NON_PRIMARY &&
                    ns.primary_snap_id >= rec->mirror_snap_id) {
                        if (ns.complete)
                                complete = true;
                        else if (ns.last_copied_object_number > copied)
                                copied = ns.last_copied_object_number;
                }
                rbd_snap_mirror_namespace_cleanup(&ns, sizeof(ns));
        }
        rbd_snap_list_end(snaps);
        ret->synced = complete && have_snap;
        ret->bytes_done = ret->synced ? st.size : copied * st.obj_size;
        if (ret->bytes_done > st.size)
                ret->bytes_done = st.size;
        r = 0;
out:
        free(snaps);
        rbd_close(img);
        return r;
}

/* Folds the replica's progress into @rec: rate from the last update, ETA. */
static void account(struct gantry_copier_record *rec, uint64_t done, time_t now)
{
        if (rec->updated && now > rec->updated && done > rec->bytes_done) {
                double rate = (double)(done - rec->bytes_done) / (double)(now - rec->updated);
                rec->rate = rec->rate > 0 ? (rec->rate + rate) / 2 : rate;
        }
        rec->bytes_done = done;
        rec->eta = rec->rate > 0 && rec->bytes_total > done
                           ? gantry_copier_eta(rec->bytes_total - done, rec->rate)
                           : -1;
        rec->updated = now;
}

static int busy(const struct gantry_promotion_request *q, const struct gantry_copier_record *rec,
                const char *daemon, struct gantry_error *err)
{
        char line[160];

        if (!daemon)
                return gantry_error_set(err, EBUSY,
                                        "mirroring %s from %s: waiting for rbd-mirror in %s to "
                                        "create the image",
                                        q->name, q->src_cluster->cluster_id, q->dst_cluster);
        gantry_copier_record_format(rec, line, sizeof(line));
        return gantry_error_set(err, EBUSY, "mirroring %s from %s: %s (rbd-mirror: %s)", q->name,
                                q->src_cluster->cluster_id, line, daemon);
}

static void new_record(const struct gantry_promotion_request *q, struct gantry_copier_record *rec)
{
        gantry_promotion_record_new(q, rec);
        snprintf(rec->mode, sizeof(rec->mode), MODE);
        snprintf(rec->state, sizeof(rec->state), "mirroring");
        /* rbd-mirror replicates into the destination pool of the source pool's name */
        rados_ioctx_get_pool_name(q->src_io, rec->mirror_pool, sizeof(rec->mirror_pool));
}

/* The volume: a clone of the replicated snapshot, grown to the requested size. */
static int make_clone(const struct gantry_promotion_request *q, rados_ioctx_t mirror_io,
                      const struct gantry_copier_record *rec, struct gantry_error *err)
{
        rbd_image_t img;
        uint64_t size;
        int r = rbd_clone3(mirror_io, rec->src_image, rec->src_snap, q->dst_io, q->dst_image,
                           q->opts);

        if (r == -EEXIST)
                r = 0; /* made by a call that crashed before its record said so */
        if (r < 0)
                return gantry_ceph_error(err, r, "clone the mirrored snapshot into", q->dst_image);
        if ((r = rbd_open(q->dst_io, q->dst_image, &img, NULL)) < 0)
                return gantry_ceph_error(err, r, "open image", q->dst_image);
        r = rbd_get_size(img, &size);
        if (r == 0 && q->size > size)
                r = rbd_resize(img, q->size);
        rbd_close(img);
        return r < 0 ? gantry_ceph_error(err, r, "resize image", q->dst_image) : 0;
}

int gantry_mirror_poll(const struct gantry_promotion_request *q, bool configured, bool *ret_keep,
                       struct gantry_error *err)
{
        struct gantry_copier_record rec = { 0 };
        struct replica rep;
        rados_ioctx_t mirror_io = NULL;
        int r;

        *ret_keep = true; /* once mirroring runs, what this mode made is DeleteVolume's to undo */
        r = gantry_promotion_record_read(q->dst_io, q->uuid, &rec);
        /* a promotion ends in the mode it began in, whatever the config says now */
        if (r == 0 ? strcmp(rec.mode, MODE) != 0 : !configured) {
                gantry_copier_record_clear(&rec);
                return gantry_promotion_poll(q, ret_keep, err);
        }
        if (r == 0 && strcmp(rec.state, "done") == 0) {
                gantry_copier_record_clear(&rec);
                return 0;
        }
        if (r == -ENOENT || r == -EINVAL) {
                struct gantry_error ignore = { 0 };

                new_record(q, &rec);
                if ((r = gantry_dataset_image_remove(q->dst_io, q->dst_image, true, &ignore)) < 0)
                        return gantry_ceph_error(err, r, "remove half-made image", q->dst_image);
        } else if (r < 0) {
                return gantry_ceph_error(err, r, "read the copy record of", q->name);
        }
        if (!rec.mirror_snap_id) {
                /* a request that cannot start is rolled back by the caller (gantry_mirror_cancel) */
                *ret_keep = false;
                /* the record first: a retry after a crash finds what is to undo */
                if ((r = gantry_promotion_record_write(q->dst_io, q->uuid, &rec)) < 0 ||
                    (r = start_source(q, &rec, err)) < 0 ||
                    (r = gantry_promotion_record_write(q->dst_io, q->uuid, &rec)) < 0) {
                        if (!err->err)
                                gantry_ceph_error(err, r, "write the copy record of", q->name);
                        gantry_copier_record_clear(&rec);
                        return r;
                }
                *ret_keep = true;
                log_info("tier.mirror_started", "name=%s uuid=%s source=%s destination=%s "
                         "mirror_snap_id=%llu", q->name, q->uuid, rec.source, rec.destination,
                         (unsigned long long)rec.mirror_snap_id);
        }
        r = rados_ioctx_create(rados_ioctx_get_cluster(q->dst_io), rec.mirror_pool, &mirror_io);
        if (r == -ENOENT) {
                r = gantry_error_set(err, EINVAL, "volume_content_source: rbd-mirror needs a pool "
                                     "%s in %s", rec.mirror_pool, q->dst_cluster);
                goto out;
        }
        if (r < 0 || (r = look(mirror_io, &rec, &rep)) < 0) {
                r = gantry_ceph_error(err, r, "look at the mirrored image", rec.src_image);
                goto out;
        }
        if (!rep.synced) {
                account(&rec, rep.bytes_done, time(NULL));
                gantry_promotion_record_write(q->dst_io, q->uuid, &rec); /* progress only */
                r = busy(q, &rec, rep.exists ? rep.daemon : NULL, err);
                goto out;
        }
        if ((r = make_clone(q, mirror_io, &rec, err)) < 0)
                goto out;
        account(&rec, rec.bytes_total, time(NULL));
        snprintf(rec.state, sizeof(rec.state), "done");
        if ((r = gantry_promotion_record_write(q->dst_io, q->uuid, &rec)) < 0) {
                r = gantry_ceph_error(err, r, "write the copy record of", q->name);
                goto out;
        }
        log_info("tier.mirror_done", "name=%s uuid=%s source=%s destination=%s seconds=%lld",
                 q->name, q->uuid, rec.source, rec.destination,
                 (long long)(rec.updated - rec.started));
        r = 0;
out:
        if (mirror_io)
                rados_ioctx_destroy(mirror_io);
        gantry_copier_record_clear(&rec);
        return r;
}

/* ---- DeleteVolume ---- */

struct users {
        const struct gantry_copier_record *rec;
        int n; /* other records mirroring the same source image */
};

static int count_user(const char *cluster_id, const char *pool, const struct gantry_copier_record *r,
                      void *arg)
{
        struct users *u = arg;

        (void)cluster_id;
        (void)pool;
        if (strcmp(r->mode, MODE) == 0 && strcmp(r->id, u->rec->id) != 0 &&
            strcmp(r->src_cluster, u->rec->src_cluster) == 0 &&
            r->src_pool_id == u->rec->src_pool_id && strcmp(r->src_image, u->rec->src_image) == 0)
                u->n++;
        return 0;
}

/* Disables the source's mirroring if Gantry enabled it; 1 when disabled. */
static int disable(rados_ioctx_t src_io, const char *image)
{
        char val[8];
        size_t len = sizeof(val);
        rbd_image_t img;
        int r = rbd_open(src_io, image, &img, NULL);

        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        r = rbd_metadata_get(img, ENABLED_KEY, val, &len);
        if (r == 0) {
                r = rbd_mirror_image_disable(img, false);
                if (r == 0 || r == -EINVAL) /* -EINVAL: not enabled (any more) */
                        r = rbd_metadata_remove(img, ENABLED_KEY);
                r = r < 0 && r != -ENOENT ? r : 1;
        } else if (r == -ENOENT) {
                r = 0; /* somebody else's mirroring: left alone */
        }
        rbd_close(img);
        return r;
}

/* The source's part: its snapshot, and its mirroring when nobody needs it. */
static int release_source(const struct gantry_config *config, rados_ioctx_t dst_io,
                          const struct gantry_copier_record *rec, struct gantry_error *err)
{
        const struct gantry_cluster_config *c = gantry_config_find_cluster(config, rec->src_cluster);
        struct gantry_ceph_credentials creds;
        struct users u = { .rec = rec };
        rados_ioctx_t src_io;
        char keybuf[512];
        int r;

        if (!c)
                return 0; /* the cluster left the config: nothing we can reach */
        if ((r = gantry_controller_list_pool_copies(dst_io, count_user, &u)) < 0)
                return gantry_ceph_error(err, r, "list the copy records beside", rec->id);
        r = gantry_ceph_credentials(c, NULL, 0, keybuf, sizeof(keybuf), &creds, err);
        if (r == 0)
                r = gantry_ceph_ioctx_by_id(c, &creds, rec->src_pool_id, &src_io, err);
        if (r == -ENOENT)
                return 0; /* the source pool is gone, and everything of it */
        if (r < 0)
                return r;
        if (rec->own_snap &&
            (r = gantry_promotion_snapshot(src_io, rec->src_image, rec->src_snap, false)) < 0)
                r = gantry_ceph_error(err, r, "remove the copy's snapshot of", rec->src_image);
        else if (u.n == 0 && (r = disable(src_io, rec->src_image)) < 0)
                r = gantry_ceph_error(err, r, "disable mirroring of", rec->src_image);
        else if (r == 1)
                log_info("tier.mirror_disabled", "image=%s cluster=%s", rec->src_image,
                         rec->src_cluster);
        gantry_ceph_ioctx_destroy(src_io);
        return r < 0 ? r : 0;
}

int gantry_mirror_cancel(const struct gantry_config *config, rados_ioctx_t dst_io, const char *uuid,
                         const char *dst_image, bool force, struct gantry_error *err)
{
        struct gantry_copier_record rec;
        int r = gantry_promotion_record_read(dst_io, uuid, &rec);

        if (r == -ENOENT || r == -EINVAL)
                return 0; /* not ours: promotion.c's, or nothing */
        if (r < 0)
                return gantry_ceph_error(err, r, "read the copy record of", uuid);
        if (strcmp(rec.mode, MODE) != 0) {
                gantry_copier_record_clear(&rec);
                return 0;
        }
        /* the clone first: it is a child of the image the daemon removes once unmirrored */
        if ((r = gantry_dataset_image_remove(dst_io, dst_image, force, err)) == 0 &&
            (r = release_source(config, dst_io, &rec, err)) == 0 &&
            (r = gantry_promotion_record_remove(dst_io, uuid)) < 0)
                r = gantry_ceph_error(err, r, "remove the copy record of", uuid);
        if (r == 0)
                log_info("tier.mirror_released", "name=%s uuid=%s source=%s", rec.name, uuid,
                         rec.source);
        gantry_copier_record_clear(&rec);
        return r;
}

int gantry_tier_cancel(const struct gantry_config *config, rados_ioctx_t dst_io, const char *uuid,
                       const char *dst_image, bool force, struct gantry_error *err)
{
        struct gantry_copier_record rec;
        int r;

        /*
         * Every copy (ours or rbd-mirror's) keeps a record from its start to its
         * removal: a volume without one and without a copy running here has
         * nothing to cancel, and one read spares the two the cancels make.
         */
        if (!gantry_promotion_running(uuid)) {
                r = gantry_promotion_record_read(dst_io, uuid, &rec);
                if (r == -ENOENT)
                        return 0;
                if (r == 0)
                        gantry_copier_record_clear(&rec);
        }
        if ((r = gantry_mirror_cancel(config, dst_io, uuid, dst_image, force, err)) < 0)
                return r;
        return gantry_promotion_cancel(config, dst_io, uuid, err);
}
