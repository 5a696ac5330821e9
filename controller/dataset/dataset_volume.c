/*
 * Dataset volumes: CreateVolume, DeleteVolume, ControllerExpandVolume and
 * ControllerGetVolume on Ceph RBD images whose data sits in an
 * erasure-coded pool (RBD_IMAGE_OPTION_DATA_POOL), metadata and journal in a
 * replicated one.
 *
 * CreateVolume follows the journal's order (journal.c): reserve the name
 * with the record (ready=0) in one operation, make the image (new, cloned
 * from a snapshot, or copied from a volume -- possibly in another cluster),
 * then mark the record ready. A retry finds the reservation by name and
 * picks up where the last attempt stopped; a half-made image (ready=0) is
 * removed and made again, so a crash anywhere leaves nothing behind once
 * the CO retries. DeleteVolume of an empty volume removes its image while
 * it reads the record (the volume ID says it is one: gantry_uuid_is_plain).
 *
 * A source in another cluster is not copied within the call: promotion.c
 * runs the copy in the background and CreateVolume answers ABORTED with its
 * progress until it is done (the half-made image is then kept, not remade).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"
#include "dataset_internal.h"
#include "eviction.h"
#include "log.h"
#include "node_registry.h"
#include "tiering.h"

#define MiB (1024ull * 1024)
#define DEFAULT_SIZE (1024 * MiB)

/* The source of a new volume, resolved before anything is created. */
struct source {
        const char *id;               /* the CSI ID (snapshot or volume), NULL: none */
        bool is_snapshot;
        struct gantry_dataset_target t;
        struct gantry_journal_entry e; /* source record (snapshot or volume) */
        char image[128];
        char snap[128];               /* snapshots: the RBD snapshot name */
        uint64_t size;
};

static int pick_size(const Csi__V1__CapacityRange *cr, uint64_t min, uint64_t dflt,
                     uint64_t *ret, struct gantry_error *err)
{
        int64_t req = cr ? cr->required_bytes : 0, lim = cr ? cr->limit_bytes : 0;
        uint64_t size;

        if (req < 0)
                return gantry_error_set(err, EINVAL, "capacity_range.required_bytes: must not be negative");
        if (lim < 0)
                return gantry_error_set(err, EINVAL, "capacity_range.limit_bytes: must not be negative");
        if (lim && req > lim)
                return gantry_error_set(err, ERANGE,
                                        "capacity_range: required_bytes %lld exceeds limit_bytes %lld",
                                        (long long)req, (long long)lim);
        if (req && (uint64_t)req < min)
                return gantry_error_set(err, ERANGE,
                                        "capacity_range.required_bytes: %lld is smaller than the "
                                        "source (%llu bytes)",
                                        (long long)req, (unsigned long long)min);
        size = req ? (uint64_t)req : (lim && (uint64_t)lim < dflt ? (uint64_t)lim : dflt);
        if (size < min)
                size = min;
        /* whole MiB suit every filesystem; keep exact bytes if rounding would pass the limit */
        if ((size + MiB - 1) / MiB * MiB <= (lim ? (uint64_t)lim : UINT64_MAX))
                size = (size + MiB - 1) / MiB * MiB;
        if (lim && size > (uint64_t)lim)
                return gantry_error_set(err, ERANGE,
                                        "capacity_range.limit_bytes: %lld is smaller than the source "
                                        "(%llu bytes)",
                                        (long long)lim, (unsigned long long)min);
        *ret = size;
        return 0;
}

/*
 * A checkpoint snapshot as the source of a dataset volume: its drained image
 * in the durable tier (gantry-target's --durable cluster, which must be in
 * this config with credentials), cloned from the image's "drained" snapshot.
 */
static int checkpoint_source(struct gantry_csi_call *call, const char *field, struct source *s,
                             struct gantry_error *err)
{
        struct gantry_checkpoint_durable d;
        int r;

        if ((r = gantry_checkpoint_snapshot_durable(call, s->id, field, &d, err)) < 0)
                return r;
        r = gantry_dataset_target_open_pool(call->config, d.cluster_id, d.pool, NULL, 0, &s->t, err);
        if (r < 0)
                return gantry_error_prefix(err, field);
        snprintf(s->image, sizeof(s->image), "%s", d.image);
        snprintf(s->snap, sizeof(s->snap), "%s", d.snap);
        r = gantry_dataset_image_size(s->t.io, s->image, s->snap, &s->size);
        if (r == -ENOENT)
                return gantry_error_set(err, ENOENT, "%s: the durable copy %s/%s@%s is gone", field, d.pool,
                                        d.image, d.snap);
        if (r < 0)
                return gantry_ceph_error(err, r, "open source image", s->image);
        return 0;
}

/* Resolves the content source (NOT_FOUND when it does not exist), before any side effect. */
static int resolve_source(struct gantry_csi_call *call, const Csi__V1__CreateVolumeRequest *req,
                          const char *dest_cluster, struct source *s, struct gantry_error *err)
{
        const Csi__V1__VolumeContentSource *cs = req->volume_content_source;
        void *const *secrets = (void *const *)req->secrets;
        size_t n_secrets = req->n_secrets;
        const char *field;
        struct gantry_volume_ref ref;
        int r;

        if (!cs || cs->type_case == CSI__V1__VOLUME_CONTENT_SOURCE__TYPE__NOT_SET)
                return 0;
        s->is_snapshot = cs->type_case == CSI__V1__VOLUME_CONTENT_SOURCE__TYPE_SNAPSHOT;
        s->id = s->is_snapshot ? (cs->snapshot ? cs->snapshot->snapshot_id : NULL)
                               : (cs->volume ? cs->volume->volume_id : NULL);
        field = s->is_snapshot ? "volume_content_source.snapshot.snapshot_id"
                               : "volume_content_source.volume.volume_id";
        if (!s->id || !*s->id)
                return gantry_error_set(err, EINVAL, "%s: required", field);
        if (s->is_snapshot && gantry_checkpoint_is_snapshot_id(s->id))
                return checkpoint_source(call, field, s, err);
        if (gantry_id_decode(s->id, &ref) < 0)
                return gantry_error_set(err, ENOENT, "%s: %s does not exist (not an ID of this driver)",
                                        field, s->id);
        /* a source in another cluster is read with that cluster's own credentials */
        if (strcmp(ref.cluster_id, dest_cluster) != 0) {
                secrets = NULL;
                n_secrets = 0;
        }
        r = gantry_dataset_target_open(call->config, s->id, field, secrets, n_secrets, &s->t, err);
        if (r == -ENOENT)
                return gantry_error_set(err, ENOENT, "%s: %s does not exist", field, s->id);
        if (r < 0)
                return r;
        r = gantry_journal_read(s->t.io,
                                s->is_snapshot ? GANTRY_JOURNAL_SNAPSHOT : GANTRY_JOURNAL_VOLUME,
                                s->t.ref.uuid, &s->e);
        if (r == -ENOENT || (r == 0 && !s->e.ready))
                return gantry_error_set(err, ENOENT, "%s: %s does not exist", field, s->id);
        if (r < 0)
                return gantry_ceph_error(err, r, "read journal of", s->id);
        /* a demoted copy has no data to copy or clone */
        if (!s->is_snapshot && (r = gantry_copy_use_check_data(s->t.io, &s->e, field, err)) < 0)
                return r;
        if (s->is_snapshot) {
                snprintf(s->image, sizeof(s->image), "%s", s->e.source);
                snprintf(s->snap, sizeof(s->snap), "%s", s->e.image);
        } else {
                snprintf(s->image, sizeof(s->image), "%s", s->e.image);
        }
        r = gantry_dataset_image_size(s->t.io, s->image, s->snap[0] ? s->snap : NULL, &s->size);
        if (r == -ENOENT)
                return gantry_error_set(err, ENOENT, "%s: %s does not exist", field, s->id);
        if (r < 0)
                return gantry_ceph_error(err, r, "open source image", s->image);
        return 0;
}

static int image_options(const struct gantry_dataset_params *p, rbd_image_options_t *ret)
{
        rbd_image_options_t o;
        int r = 0;

        rbd_image_options_create(&o);
        if (p->data_pool)
                r = rbd_image_options_set_string(o, RBD_IMAGE_OPTION_DATA_POOL, p->data_pool);
        if (r >= 0)
                r = rbd_image_options_set_uint64(o, RBD_IMAGE_OPTION_FEATURES, p->features);
        if (r >= 0 && p->object_size)
                r = rbd_image_options_set_uint64(o, RBD_IMAGE_OPTION_ORDER,
                                                 (uint64_t)__builtin_ctzll(p->object_size));
        if (r >= 0 && p->stripe_unit)
                r = rbd_image_options_set_uint64(o, RBD_IMAGE_OPTION_STRIPE_UNIT, p->stripe_unit);
        if (r >= 0 && p->stripe_count)
                r = rbd_image_options_set_uint64(o, RBD_IMAGE_OPTION_STRIPE_COUNT, p->stripe_count);
        if (r < 0) {
                rbd_image_options_destroy(o);
                return r;
        }
        *ret = o;
        return 0;
}

/*
 * Copies volume @s into @name from a snapshot taken for this copy, so the
 * copy is one point in time even while the source is written. The snapshot
 * is named after the new volume's @uuid: a retry after a crash finds and
 * reuses it, and removes it once the copy is done.
 */
static int copy_volume(struct source *s, rados_ioctx_t io, const char *name, const char *uuid,
                       rbd_image_options_t o)
{
        char snap[128];
        rbd_image_t src, at;
        int r, r2;

        snprintf(snap, sizeof(snap), "gantry-copy-%s", uuid);
        r = rbd_open(s->t.io, s->image, &src, NULL);
        if (r < 0)
                return r;
        r = rbd_snap_create(src, snap);
        if (r == -EEXIST)
                r = 0;
        if (r == 0) {
                r = rbd_open_read_only(s->t.io, s->image, &at, snap);
                if (r == 0) {
                        r = rbd_copy3(at, io, name, o);
                        rbd_close(at);
                }
                r2 = rbd_snap_remove(src, snap);
                if (r == 0 && r2 < 0 && r2 != -ENOENT)
                        r = r2;
        }
        rbd_close(src);
        return r;
}

/* The volume CreateVolume is making, for the promotion path. */
struct volume_in_making {
        struct gantry_journal_entry *e;
        const struct gantry_dataset_params *p;
        struct source *s;
        rados_ioctx_t io;
        uint64_t size;
};

/* Makes image @name (of journal @uuid) of @size in @io: empty, cloned or copied from @s. */
static int make_image(rados_ioctx_t io, const char *name, const char *uuid, uint64_t size,
                      const struct gantry_dataset_params *p, struct source *s,
                      struct gantry_error *err)
{
        rbd_image_options_t o;
        rbd_image_t img;
        bool same_cluster = s->id && strcmp(s->t.cluster->cluster_id, p->cluster_id) == 0;
        int r = image_options(p, &o);

        if (r < 0)
                return gantry_error_set(err, EINVAL, "parameters: rejected by librbd: %s", strerror(-r));
        if (!s->id) {
                r = rbd_create4(io, name, size, o);
        } else if (s->is_snapshot && same_cluster) {
                /* clone v2: copy-on-write, keeps the destination's data pool */
                r = rbd_clone3(s->t.io, s->image, s->snap, io, name, o);
        } else {
                /* a volume of this cluster: a full copy into our data pool */
                r = copy_volume(s, io, name, uuid, o);
        }
        rbd_image_options_destroy(o);
        if (r == -ENOENT && p->data_pool)
                return gantry_error_set(err, EINVAL, "parameters.dataPool: pool %s does not exist",
                                        p->data_pool);
        if (r < 0)
                return gantry_ceph_error(err, r, "create image", name);
        if (s->id && size > s->size) {
                r = rbd_open(io, name, &img, NULL);
                if (r == 0) {
                        r = rbd_resize(img, size);
                        rbd_close(img);
                }
                if (r < 0)
                        return gantry_ceph_error(err, r, "resize image", name);
        }
        return 0;
}

/*
 * A source in another cluster: the copy runs in the background
 * (promotion.c); this call starts or follows it. Returns 0 once the image
 * is complete, -EBUSY (ABORTED, with the progress) while it is copied.
 */
static int promote(const struct volume_in_making *v, bool *ret_keep, struct gantry_error *err)
{
        struct gantry_promotion_request q = {
                .name = v->e->name,
                .uuid = v->e->uuid,
                .dst_cluster = v->p->cluster_id,
                .dst_io = v->io,
                .dst_image = v->e->image,
                .size = v->size,
                .src_cluster = v->s->t.cluster,
                .src_io = v->s->t.io,
                .src_image = v->s->image,
                .src_snap = v->s->is_snapshot ? v->s->snap : NULL,
        };
        int r = image_options(v->p, &q.opts);

        *ret_keep = false;
        if (r < 0)
                return gantry_error_set(err, EINVAL, "parameters: rejected by librbd: %s", strerror(-r));
        /* the tier copier (promotion.c), or Ceph's own engine (mirror.c) */
        r = gantry_mirror_poll(&q, gantry_config_rbd_mirror(q.src_cluster, q.dst_cluster), ret_keep,
                               err);
        rbd_image_options_destroy(q.opts);
        return r;
}

static int fingerprint(const struct gantry_dataset_params *p, uint64_t size, const char *source,
                       char *buf, size_t bufsize)
{
        char fp[400];
        int n, r = gantry_params_fingerprint(p, fp, sizeof(fp));

        if (r < 0)
                return r;
        n = snprintf(buf, bufsize, "%s;size=%llu;source=%s;fs=%s;mkfs=%s;map=%s", fp,
                     (unsigned long long)size, source ? source : "", p->fs_type ? p->fs_type : "",
                     p->mkfs_options ? p->mkfs_options : "", p->map_options ? p->map_options : "");
        return n < 0 || (size_t)n >= bufsize ? -ENAMETOOLONG : 0;
}

/*
 * Whether librbd makes an empty image with @p whole in the write of its
 * header, its last step: no object map and no striping of its own, each a
 * write after the header (librbd's image::CreateRequest), and no journaling
 * (never a parameter here). Such an image is whole once it opens, so its
 * record can say ready from the reservation on: the create then costs one
 * journal round trip instead of two, and a retry that finds the record ready
 * but no image that opens makes it again (create_volume).
 */
static bool whole_once_it_opens(const struct gantry_dataset_params *p)
{
        return !(p->features & (RBD_FEATURE_OBJECT_MAP | RBD_FEATURE_JOURNALING)) &&
               !p->stripe_unit && !p->stripe_count;
}

/* @e, the record (ready=0) of volume @name under @uuid. */
static void new_record(struct gantry_journal_entry *e, const char *uuid, const char *name,
                       const char *fp, const struct gantry_dataset_params *p, uint64_t size,
                       bool plain)
{
        memset(e, 0, sizeof(*e));
        memcpy(e->uuid, uuid, GANTRY_UUID_LEN + 1);
        snprintf(e->name, sizeof(e->name), "%s", name);
        gantry_dataset_image_name(uuid, e->image, sizeof(e->image));
        snprintf(e->fingerprint, sizeof(e->fingerprint), "%s", fp);
        snprintf(e->data_pool, sizeof(e->data_pool), "%s", p->data_pool ? p->data_pool : "");
        e->size = size;
        e->plain = plain;
}

/*
 * Reserves @name or finds its reservation; fills @e (record written, maybe
 * not ready). A reservation this call makes says @ready (whole_once_it_opens).
 * Returns 1 when this call made the reservation (nothing can exist under it
 * yet), 0 when it found one, or -errno.
 */
static int reserve(rados_ioctx_t io, const char *name, const char *fp,
                   const struct gantry_dataset_params *p, uint64_t size, bool plain, bool ready,
                   struct gantry_journal_entry *e, struct gantry_error *err)
{
        char uuid[GANTRY_UUID_LEN + 1];
        int r;

        for (int attempt = 0; attempt < 3; attempt++) {
                /*
                 * The reservation first, with the record (ready=0) in the
                 * same operation: its compare makes it fail (-EEXIST) when
                 * the name is taken, so a new name costs one round trip
                 * instead of a lookup, the reservation and the record. Only a
                 * name already reserved is looked up. An empty volume's uuid
                 * says so (DeleteVolume's short way starts on the ID alone).
                 */
                gantry_uuid_generate(uuid);
                if (plain)
                        gantry_uuid_mark_plain(uuid);
                new_record(e, uuid, name, fp, p, size, plain);
                e->ready = ready;
                r = gantry_journal_reserve(io, GANTRY_JOURNAL_VOLUME, name, e);
                if (r == 0)
                        return 1;
                if (r == -EEXIST) {
                        r = gantry_journal_lookup_name(io, GANTRY_JOURNAL_VOLUME, name, uuid);
                        if (r == -ENOENT)
                                continue; /* deleted since: reserve again */
                }
                if (r < 0)
                        return gantry_ceph_error(err, r, "reserve volume name", name);
                r = gantry_journal_read(io, GANTRY_JOURNAL_VOLUME, uuid, e);
                if (r == 0) {
                        if (strcmp(e->fingerprint, fp) != 0)
                                return gantry_error_set(err, EEXIST,
                                                        "name: volume %s already exists with other "
                                                        "parameters, size or source",
                                                        name);
                        return 0;
                }
                if (r != -ENOENT)
                        return gantry_ceph_error(err, r, "read journal of", name);
                /*
                 * Reserved by an earlier version, whose record was written
                 * apart (an empty volume's only once ready): the image, named
                 * after the uuid, may be half made. Write the record now, but
                 * only under the name: a delete may have removed name and
                 * record between the lookup and the read, and a record
                 * written after it would name nothing.
                 */
                new_record(e, uuid, name, fp, p, size, plain);
                r = gantry_journal_write_named(io, GANTRY_JOURNAL_VOLUME, name, e);
                if (r == -ENOENT)
                        continue; /* deleted since we looked: reserve again */
                if (r < 0)
                        return gantry_ceph_error(err, r, "write journal of", name);
                return 0;
        }
        return gantry_error_set(err, EBUSY, "name: volume %s is being created elsewhere", name);
}

/*
 * reserve(), then the lock DeleteVolume takes, "volume:<uuid>" in @uuid_lock.
 * Under the lock the name must still map to the uuid: a delete that finished
 * between the two sends us round again for a fresh reservation, instead of
 * making an image under a record that is gone. On success (1: fresh, 0:
 * found) the caller holds and releases @uuid_lock.
 */
static int reserve_locked(rados_ioctx_t io, const char *name, const char *fp,
                          const struct gantry_dataset_params *p, uint64_t size, bool plain,
                          bool ready, struct gantry_journal_entry *e, char *uuid_lock,
                          size_t uuid_lock_size, struct gantry_error *err)
{
        char again[GANTRY_UUID_LEN + 1];
        int r, fresh;

        for (int attempt = 0; attempt < 3; attempt++) {
                if ((fresh = reserve(io, name, fp, p, size, plain, ready, e, err)) < 0)
                        return fresh;
                snprintf(uuid_lock, uuid_lock_size, "volume:%s", e->uuid);
                if (gantry_lock_try(uuid_lock) < 0)
                        return gantry_error_set(err, EBUSY, "name: volume %s is busy (being "
                                                "deleted?)", name);
                /*
                 * A uuid this call reserved has not been answered to anyone:
                 * no DeleteVolume can know it, so nothing can have removed it
                 * before the lock, and the re-reads below would only find
                 * what reserve() just wrote.
                 */
                if (fresh)
                        return fresh;
                r = gantry_journal_lookup_name(io, GANTRY_JOURNAL_VOLUME, name, again);
                if (r == 0 && strcmp(again, e->uuid) == 0)
                        r = gantry_journal_read(io, GANTRY_JOURNAL_VOLUME, e->uuid, e);
                else if (r == 0 || r == -ENOENT) {
                        gantry_lock_release(uuid_lock);
                        continue; /* deleted since we looked: reserve afresh */
                }
                if (r == -ENOENT) {
                        gantry_lock_release(uuid_lock);
                        continue; /* the record went with a delete: reserve afresh */
                }
                if (r < 0) {
                        gantry_lock_release(uuid_lock);
                        return gantry_ceph_error(err, r, "read journal of", name);
                }
                return fresh;
        }
        return gantry_error_set(err, EBUSY, "name: volume %s is being created and deleted "
                                "elsewhere", name);
}

static int check_capabilities(Csi__V1__VolumeCapability *const *caps, size_t n,
                              struct gantry_error *err)
{
        char field[64];

        for (size_t i = 0; i < n; i++) {
                snprintf(field, sizeof(field), "volume_capabilities[%zu]", i);
                int r = gantry_dataset_check_capability(caps[i], field, err);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* A copy from another cluster that CreateVolume found running here, and how long it may wait. */
struct copy_wait {
        char uuid[GANTRY_UUID_LEN + 1];
        int seconds; /* the source cluster's copy.waitSeconds */
};

static int create_volume(struct gantry_csi_call *call, const Csi__V1__CreateVolumeRequest *req,
                         Csi__V1__CreateVolumeResponse *resp, struct copy_wait *w,
                         struct gantry_error *err)
{
        struct gantry_dataset_params p;
        struct gantry_dataset_target t = { 0 };
        struct source s = { 0 };
        struct gantry_journal_entry e;
        char fp[512], name_lock[300], uuid_lock[64];
        bool name_locked = false, uuid_locked = false, fresh, ready_already;
        uint64_t size, have;
        Csi__V1__Volume *vol;
        int r;

        /* everything is checked before any side effect */
        if ((r = gantry_dataset_check_name(req->name, sizeof(e.name), err)) < 0)
                return r;
        if ((r = check_capabilities(req->volume_capabilities, req->n_volume_capabilities, err)) < 0)
                return r;
        if ((r = gantry_params_parse_dataset((void *const *)req->parameters, req->n_parameters, &p, err)) < 0)
                return r;
        if (!gantry_config_find_cluster(call->config, p.cluster_id))
                return gantry_error_set(err, EINVAL,
                                        "parameters.clusterID: cluster \"%s\" is not in the driver config",
                                        p.cluster_id);
        if ((r = pick_size(req->capacity_range, 0, DEFAULT_SIZE, &size, err)) < 0)
                return r;

        snprintf(name_lock, sizeof(name_lock), "volume-name:%s", req->name);
        if ((r = gantry_lock_try(name_lock)) < 0)
                return gantry_error_set(err, EBUSY, "name: an operation on volume %s is in progress",
                                        req->name);
        name_locked = true;
        if ((r = resolve_source(call, req, p.cluster_id, &s, err)) < 0)
                goto out;
        if (s.id && (r = pick_size(req->capacity_range, s.size, s.size, &size, err)) < 0)
                goto out;
        if ((r = fingerprint(&p, size, s.id, fp, sizeof(fp))) < 0) {
                r = gantry_error_set(err, EINVAL, "parameters: too long");
                goto out;
        }
        r = gantry_dataset_target_open_pool(call->config, p.cluster_id, p.pool,
                                            (void *const *)req->secrets, req->n_secrets, &t, err);
        if (r < 0)
                goto out;
        if (p.data_pool && rados_pool_lookup(rados_ioctx_get_cluster(t.io), p.data_pool) < 0) {
                r = gantry_error_set(err, EINVAL, "parameters.dataPool: pool %s does not exist in "
                                     "cluster %s", p.data_pool, p.cluster_id);
                goto out;
        }
        if ((r = reserve_locked(t.io, req->name, fp, &p, size, !s.id,
                                !s.id && whole_once_it_opens(&p), &e, uuid_lock,
                                sizeof(uuid_lock), err)) < 0)
                goto out;
        fresh = r == 1;
        uuid_locked = true;
        /* a record this call wrote ready needs no second write once the image is made */
        ready_already = fresh && e.ready;

        /*
         * A ready record names a whole image, or one whole once it opens
         * (whole_once_it_opens) and not made yet when a crash or a failure
         * interrupted its create: the image's open tells them apart.
         */
        r = e.ready && !fresh ? gantry_dataset_image_size(t.io, e.image, NULL, &have) : -ENOENT;
        if (r == -ENOENT) {
                /* not made yet, half made by a crashed attempt, or being copied from afar */
                bool across = s.id && strcmp(s.t.cluster->cluster_id, p.cluster_id) != 0;
                bool keep = true; /* an error here leaves what another attempt made */

                e.ready = false;
                if (across) {
                        struct volume_in_making v = { .e = &e, .p = &p, .s = &s, .io = t.io,
                                                      .size = size };
                        /* a copy starts only under a written record (reserve() wrote it) */
                        r = promote(&v, &keep, err); /* -EBUSY while the copy runs */
                        if (r == -EBUSY && gantry_promotion_running(e.uuid)) {
                                memcpy(w->uuid, e.uuid, sizeof(w->uuid));
                                w->seconds = s.t.cluster->copy_wait_seconds;
                        }
                } else if (fresh || (r = gantry_dataset_image_remove(t.io, e.image, true, err)) >= 0) {
                        keep = false;
                        r = make_image(t.io, e.image, e.uuid, size, &p, &s, err);
                }
                if (r < 0) {
                        if (!keep && r != -EBUSY) {
                                /* roll back, so a request that cannot succeed leaves nothing */
                                struct gantry_error ignore = { 0 };
                                if ((!across ||
                                     (gantry_mirror_cancel(call->config, t.io, e.uuid, e.image, true,
                                                           &ignore) == 0 &&
                                      gantry_promotion_cancel(call->config, t.io, e.uuid, &ignore) == 0)) &&
                                    gantry_dataset_image_remove(t.io, e.image, true, &ignore) == 0)
                                        gantry_journal_remove(t.io, GANTRY_JOURNAL_VOLUME, &e);
                        }
                        goto out;
                }
                e.ready = true;
                if (!ready_already &&
                    (r = gantry_journal_write(t.io, GANTRY_JOURNAL_VOLUME, &e)) < 0) {
                        r = gantry_ceph_error(err, r, "write journal of", req->name);
                        goto out;
                }
                log_info("dataset.volume_created", "name=%s image=%s size=%llu data_pool=%s source=%s%s",
                         req->name, e.image, (unsigned long long)size, p.data_pool ? p.data_pool : "-",
                         s.id ? s.id : "-", across ? " promoted=1" : "");
        } else if (r < 0) {
                r = gantry_ceph_error(err, r, "open image", e.image);
                goto out;
        }

        if ((r = gantry_dataset_new_volume(call, &t, &e, size, &p, &vol)) < 0)
                goto out;
        vol->content_source = req->volume_content_source; /* echoed; lives as long as the call */
        resp->volume = vol;
        r = 0;
out:
        if (uuid_locked)
                gantry_lock_release(uuid_lock);
        if (name_locked)
                gantry_lock_release(name_lock);
        gantry_dataset_target_close(&t);
        if (s.id)
                gantry_dataset_target_close(&s.t);
        return r;
}

/* Leave the provisioner this much of its deadline to hear the answer. */
#define WAIT_MARGIN_MS 5000

int gantry_dataset_create_volume(struct gantry_csi_call *call, const Csi__V1__CreateVolumeRequest *req,
                                 Csi__V1__CreateVolumeResponse *resp, struct gantry_error *err)
{
        struct copy_wait w = { .seconds = 0 };
        int64_t left, wait_ms;
        int r = create_volume(call, req, resp, &w, err);

        /*
         * A copy running here: rather than ABORTED at once, and the CO's next
         * try after its growing backoff (the copy may end just after a try
         * and idle until the next one), wait for its end up to the source
         * cluster's copy.waitSeconds and within the call's deadline, with no
         * lock held (a DeleteVolume may cancel it meanwhile). Then answer
         * afresh: OK once it ended, else ABORTED with the progress of now, an
         * event for the PVC.
         */
        if (r != -EBUSY || !w.uuid[0] || w.seconds <= 0)
                return r;
        left = gantry_csi_call_remaining_ms(call);
        wait_ms = (int64_t)w.seconds * 1000;
        if (left != INT64_MAX && wait_ms > left - WAIT_MARGIN_MS)
                wait_ms = left - WAIT_MARGIN_MS;
        if (wait_ms <= 0)
                return r;
        gantry_promotion_wait(w.uuid, wait_ms);
        memset(err, 0, sizeof(*err));
        return create_volume(call, req, resp, &w, err);
}

/* The record's read and removal that DeleteVolume's short way runs beside librbd's. */
struct plain_removal {
        rados_ioctx_t io;
        const char *image;
        struct gantry_journal_reading *rd;
        struct gantry_journal_removal *rm; /* started from on_trim(), or NULL */
        bool tried;
};

/* Whether the short way applies to record @e of the image named @image. */
static bool removes_plain(const struct gantry_journal_entry *e, const char *image)
{
        return e->plain && strcmp(e->image, image) == 0;
}

/*
 * librbd's progress while it deletes the image's objects: by then it has
 * passed every check that refuses (watchers, snapshots, group) and moved
 * the image to the RBD trash, so the removal goes on to the end, or, after
 * a crash, the retry's rbd_remove() finishes it from the trash (the image's
 * name comes from the uuid in the volume ID, the record is not needed). So
 * the record's removal starts here, beside the deletion, instead of after
 * it: once the read has answered (never waited for: this runs on librbd's
 * thread), and only for a record of this image in the directory.
 */
static int on_trim(uint64_t done, uint64_t total, void *arg)
{
        struct plain_removal *p = arg;
        struct gantry_journal_entry e;
        int r;

        (void)done;
        (void)total;
        if (p->tried || (r = gantry_journal_read_peek(p->rd, &e)) == -EINPROGRESS)
                return 0;
        p->tried = true;
        if (r == 0 && removes_plain(&e, p->image) &&
            gantry_journal_remove_start(p->io, GANTRY_JOURNAL_VOLUME, &e, &p->rm) < 0)
                p->rm = NULL; /* removed after the image, as when the read was late */
        return 0;
}

/*
 * DeleteVolume's short way for a volume whose uuid says it was made empty
 * (gantry_uuid_is_plain): its image is named after the uuid, and it is no
 * clone and no copy's destination, so librbd removes it while the record is
 * read, and the record goes while librbd deletes the image's objects
 * (on_trim). Returns 3 when image and record are gone, 2 when the image is
 * gone (the record in @e is left to remove), 1 with @e read when the long
 * way must follow (librbd refused: watched, snapshots, a half-made image),
 * 0 when there is nothing to delete, or -errno; @t is open unless 0 or
 * -errno came before it.
 */
static int remove_plain(struct gantry_csi_call *call, const Csi__V1__DeleteVolumeRequest *req,
                        struct gantry_dataset_target *t, struct gantry_journal_entry *e,
                        struct gantry_error *err)
{
        struct plain_removal p = { 0 };
        char image[128];
        int r, removed;

        r = gantry_dataset_target_open(call->config, req->volume_id, "volume_id",
                                       (void *const *)req->secrets, req->n_secrets, t, err);
        if (r == -ENOENT) /* the pool is gone, and what it held with it */
                return 0;
        if (r < 0)
                return r;
        if ((r = gantry_journal_read_start(t->io, GANTRY_JOURNAL_VOLUME, t->ref.uuid, &p.rd)) < 0)
                return gantry_ceph_error(err, r, "read journal of", req->volume_id);
        gantry_dataset_image_name(t->ref.uuid, image, sizeof(image));
        p.io = t->io;
        p.image = image;
        removed = rbd_remove_with_progress(t->io, image, on_trim, &p);
        r = gantry_journal_read_end(p.rd, e);
        if (p.rm) {
                int gone = gantry_journal_remove_end(p.rm);

                if (removed < 0 && removed != -ENOENT) /* the retry finishes it from the trash */
                        return gantry_ceph_error(err, removed, "remove image", image);
                if (gone < 0)
                        return gantry_ceph_error(err, gone, "remove journal of", req->volume_id);
                return 3;
        }
        if (r == -ENOENT) {
                /* no record: deleted already, unless an image that lost it first is still here */
                if (removed == 0 || removed == -ENOENT)
                        return 0;
                return gantry_ceph_error(err, removed, "remove image", image);
        }
        if (r < 0)
                return gantry_ceph_error(err, r, "read journal of", req->volume_id);
        if (removes_plain(e, image) && (removed == 0 || removed == -ENOENT))
                return 2;
        return 1;
}

int gantry_dataset_delete_volume(struct gantry_csi_call *call, const Csi__V1__DeleteVolumeRequest *req,
                                 struct gantry_error *err)
{
        struct gantry_dataset_target t = { 0 };
        struct gantry_journal_entry e;
        struct gantry_volume_ref ref;
        rbd_image_t img = NULL;
        bool checked;
        char lock[64];
        int r, leftovers = 0;

        /* an ID that is not ours names nothing this driver made: nothing to delete */
        if (gantry_id_decode(req->volume_id, &ref) < 0)
                return 0;
        snprintf(lock, sizeof(lock), "volume:%s", ref.uuid);
        if (gantry_lock_try(lock) < 0)
                return gantry_error_set(err, EBUSY, "volume_id: an operation on %s is in progress",
                                        req->volume_id);
        if (gantry_uuid_is_plain(ref.uuid))
                r = remove_plain(call, req, &t, &e, err);
        else
                r = gantry_dataset_open_record(call->config, req->volume_id, "volume_id",
                                               GANTRY_JOURNAL_VOLUME, (void *const *)req->secrets,
                                               req->n_secrets, &t, &e, err);
        if (r == 3)
                goto deleted;
        if (r == 2)
                goto removed;
        if (r <= 0)
                goto out;
        /*
         * A ready volume made empty is no clone (no parent to note) and no copy's
         * destination (nothing to cancel): librbd's removal alone, which refuses
         * a watched image or one with snapshots before it removes anything. On
         * a refusal the long way below names the reason (and purges our own
         * leftover snapshots). An empty volume of this version tried it already.
         */
        if (!gantry_uuid_is_plain(e.uuid) && e.plain && e.ready && rbd_remove(t.io, e.image) == 0)
                goto removed;
        /* one read-only open of the image serves the note, the checks and the leftovers' count */
        if ((r = gantry_dataset_image_open(t.io, e.image, e.ready, &img, err)) < 0)
                goto out;
        /* a clone of a drained checkpoint image in the RBD trash: note the parent while the
         * clone tells it, purge it once the clone is gone (drained_trash.c). First of all:
         * the note only remembers, and a delete refused below keeps it for the retry */
        if ((r = gantry_drained_parent_note(t.io, img, &e, err)) < 0)
                goto out;
        /* a ready image that must stay (mapped, CSI snapshots, clones of a refresh base)
         * refuses before anything goes: its copy and mirror records stay with it. A copy
         * running into it (a demoted copy copied again) watches it: stopped below first */
        checked = e.ready && !gantry_promotion_running(e.uuid);
        if (checked && (r = leftovers = gantry_dataset_image_check(t.io, img, e.image, err)) < 0)
                goto out;
        if (img)
                rbd_close(img);
        img = NULL;
        /* a copy into it (promotion.c) stops first, and its snapshot of the source goes;
         * one through rbd-mirror (mirror.c) removes the image before the source's mirroring */
        if ((r = gantry_tier_cancel(call->config, t.io, e.uuid, e.image, !e.ready, err)) < 0)
                goto out;
        /* a half-made image (ready=0) is ours to purge; a ready one must be unused (checked
         * just above unless a copy was running into it: then checked now) */
        r = checked ? gantry_dataset_image_remove_checked(t.io, e.image, leftovers, err)
                    : gantry_dataset_image_remove(t.io, e.image, !e.ready, err);
        if (r < 0 || (r = gantry_drained_parent_purge(call->config, t.cluster->cluster_id, &e, err)) < 0)
                goto out;
removed:
        r = gantry_journal_remove(t.io, GANTRY_JOURNAL_VOLUME, &e);
        if (r < 0) {
                r = gantry_ceph_error(err, r, "remove journal of", req->volume_id);
                goto out;
        }
deleted:
        r = 0;
        log_info("dataset.volume_deleted", "name=%s image=%s", e.name, e.image);
out:
        if (img)
                rbd_close(img);
        gantry_dataset_target_close(&t);
        gantry_lock_release(lock);
        return r;
}

/* Opens the volume @id for the calls that need it to exist (NOT_FOUND otherwise). */
static int open_existing(struct gantry_csi_call *call, const char *id, void *const *secrets,
                         size_t n_secrets, struct gantry_dataset_target *t,
                         struct gantry_journal_entry *e, struct gantry_error *err)
{
        int r = gantry_dataset_target_open(call->config, id, "volume_id", secrets, n_secrets, t, err);

        if (r == -EINVAL && gantry_id_decode(id, &t->ref) < 0)
                return gantry_error_set(err, ENOENT, "volume_id: %s does not exist", id);
        if (r == -ENOENT)
                return gantry_error_set(err, ENOENT, "volume_id: %s does not exist", id);
        if (r < 0)
                return r;
        r = gantry_journal_read(t->io, GANTRY_JOURNAL_VOLUME, t->ref.uuid, e);
        if (r == -ENOENT || (r == 0 && !e->ready))
                return gantry_error_set(err, ENOENT, "volume_id: %s does not exist", id);
        if (r < 0)
                return gantry_ceph_error(err, r, "read journal of", id);
        return 0;
}

int gantry_dataset_expand_volume(struct gantry_csi_call *call,
                                 const Csi__V1__ControllerExpandVolumeRequest *req,
                                 Csi__V1__ControllerExpandVolumeResponse *resp,
                                 struct gantry_error *err)
{
        struct gantry_dataset_target t = { 0 };
        struct gantry_journal_entry e;
        struct gantry_volume_ref ref;
        char lock[64];
        uint64_t size, have;
        rbd_image_t img;
        int r;

        if (req->volume_capability &&
            (r = gantry_dataset_check_capability(req->volume_capability, "volume_capability", err)) < 0)
                return r;
        if ((r = pick_size(req->capacity_range, 0, 0, &size, err)) < 0)
                return r;
        if (size == 0)
                return gantry_error_set(err, EINVAL, "capacity_range: required_bytes or limit_bytes required");
        if (gantry_id_decode(req->volume_id, &ref) < 0)
                return gantry_error_set(err, ENOENT, "volume_id: %s does not exist", req->volume_id);
        snprintf(lock, sizeof(lock), "volume:%s", ref.uuid);
        if (gantry_lock_try(lock) < 0)
                return gantry_error_set(err, EBUSY, "volume_id: an operation on %s is in progress",
                                        req->volume_id);
        r = open_existing(call, req->volume_id, (void *const *)req->secrets, req->n_secrets, &t, &e, err);
        if (r < 0)
                goto out;
        r = rbd_open(t.io, e.image, &img, NULL);
        if (r < 0) {
                r = r == -ENOENT ? gantry_error_set(err, ENOENT, "volume_id: %s does not exist",
                                                    req->volume_id)
                                 : gantry_ceph_error(err, r, "open image", e.image);
                goto out;
        }
        r = rbd_get_size(img, &have);
        if (r == 0 && size > have) {
                r = rbd_resize(img, size);
                if (r == 0)
                        log_info("dataset.volume_expanded", "image=%s from=%llu to=%llu", e.image,
                                 (unsigned long long)have, (unsigned long long)size);
                have = size;
        }
        rbd_close(img);
        if (r < 0) {
                r = gantry_ceph_error(err, r, "resize image", e.image);
                goto out;
        }
        resp->capacity_bytes = (int64_t)have;
        resp->node_expansion_required =
                !(req->volume_capability && req->volume_capability->access_type_case ==
                                                     CSI__V1__VOLUME_CAPABILITY__ACCESS_TYPE_BLOCK);
out:
        gantry_dataset_target_close(&t);
        gantry_lock_release(lock);
        return r;
}

int gantry_dataset_publish_volume(struct gantry_csi_call *call,
                                  const Csi__V1__ControllerPublishVolumeRequest *req,
                                  struct gantry_error *err)
{
        struct gantry_dataset_target t = { 0 };
        struct gantry_journal_entry e;
        int r;

        if (!req->volume_id || !*req->volume_id)
                return gantry_error_set(err, EINVAL, "volume_id: required");
        if (!req->node_id || !*req->node_id)
                return gantry_error_set(err, EINVAL, "node_id: required");
        if (!req->volume_capability)
                return gantry_error_set(err, EINVAL, "volume_capability: required");
        if ((r = gantry_dataset_check_capability(req->volume_capability, "volume_capability",
                                                 err)) < 0)
                return r;
        r = open_existing(call, req->volume_id, (void *const *)req->secrets, req->n_secrets, &t, &e,
                          err);
        if (r == 0)
                r = gantry_node_registry_check(req->node_id, err);
        /* a promoted copy: its use is recorded; a demoted one is copied again (ABORTED meanwhile) */
        if (r == 0)
                r = gantry_copy_use_publish(call->config, &t, &e, err);
        gantry_dataset_target_close(&t);
        return r;
}

int gantry_dataset_get_volume(struct gantry_csi_call *call, const char *volume_id,
                              void *const *secrets, size_t n_secrets, Csi__V1__Volume **ret_volume,
                              struct gantry_error *err)
{
        struct gantry_dataset_target t = { 0 };
        struct gantry_journal_entry e;
        Csi__V1__Volume *vol;
        uint64_t size;
        int r = open_existing(call, volume_id, secrets, n_secrets, &t, &e, err);

        if (r < 0)
                goto out;
        r = gantry_dataset_image_size(t.io, e.image, NULL, &size);
        if (r < 0) {
                r = r == -ENOENT ? gantry_error_set(err, ENOENT, "volume_id: %s does not exist", volume_id)
                                 : gantry_ceph_error(err, r, "open image", e.image);
                goto out;
        }
        if ((r = gantry_dataset_new_volume(call, &t, &e, size, NULL, &vol)) < 0)
                goto out;
        *ret_volume = vol;
out:
        gantry_dataset_target_close(&t);
        return r;
}
