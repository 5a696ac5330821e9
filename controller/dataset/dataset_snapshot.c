/*
 * Dataset snapshots: CreateSnapshot and DeleteSnapshot. A CSI snapshot is an
 * RBD snapshot (`gantry-snap-<uuid>`) of the source image, journaled like
 * volumes (journal.c, kind snapshot) in the source's pool: the name is
 * reserved before the snapshot exists, so a retry finds it, and a name
 * reused with another source gets ALREADY_EXISTS.
 *
 * Volumes cloned from a snapshot are clone-v2 children: deleting the
 * snapshot while children exist moves it to RBD's trash namespace, where it
 * stays until the last child is gone.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "dataset_internal.h"
#include "eviction.h"
#include "log.h"

/* Fills @snap for the snapshot of @t recorded in @e, reading size and time from RBD. */
int gantry_dataset_fill_snapshot(struct gantry_csi_call *call, const struct gantry_dataset_target *t,
                                 const struct gantry_journal_entry *e, Csi__V1__Snapshot *snap)
{
        struct gantry_volume_ref ref = t->ref;
        Google__Protobuf__Timestamp *ts;
        char id[GANTRY_ID_MAX + 1];
        struct timespec when = { 0 };
        rbd_image_t img;
        uint64_t size = e->size, snap_id;
        int r;

        memcpy(ref.uuid, e->uuid, sizeof(ref.uuid));
        if (gantry_id_encode(&ref, id, sizeof(id)) < 0)
                return -EINVAL;
        r = rbd_open_read_only(t->io, e->source, &img, e->image);
        if (r == 0) {
                rbd_get_size(img, &size);
                if (rbd_snap_get_id(img, e->image, &snap_id) == 0)
                        rbd_snap_get_timestamp(img, snap_id, &when);
                rbd_close(img);
        }
        ts = gantry_csi_call_alloc(call, sizeof(*ts));
        if (!ts)
                return -ENOMEM;
        google__protobuf__timestamp__init(ts);
        ts->seconds = when.tv_sec;
        ts->nanos = (int32_t)when.tv_nsec;
        snap->snapshot_id = gantry_csi_call_strdup(call, id);
        snap->source_volume_id = gantry_csi_call_strdup(call, e->fingerprint);
        if (!snap->snapshot_id || !snap->source_volume_id)
                return -ENOMEM;
        snap->size_bytes = (int64_t)size;
        snap->creation_time = ts;
        snap->ready_to_use = 1;
        return 0;
}

static int check_parameters(const Csi__V1__CreateSnapshotRequest *req, struct gantry_error *err)
{
        for (size_t i = 0; i < req->n_parameters; i++)
                if (strncmp(req->parameters[i]->key, "csi.storage.k8s.io/", 19) != 0)
                        return gantry_error_set(err, EINVAL, "parameters.%s: unknown parameter",
                                                req->parameters[i]->key);
        return 0;
}

/* @e, the record (ready=0) of snapshot @name under @uuid, of volume @vol's image. */
static void new_record(struct gantry_journal_entry *e, const char *uuid, const char *name,
                       const struct gantry_journal_entry *vol, const char *source_id)
{
        memset(e, 0, sizeof(*e));
        memcpy(e->uuid, uuid, GANTRY_UUID_LEN + 1);
        snprintf(e->name, sizeof(e->name), "%s", name);
        gantry_dataset_snap_name(uuid, e->image, sizeof(e->image));
        snprintf(e->source, sizeof(e->source), "%s", vol->image);
        snprintf(e->fingerprint, sizeof(e->fingerprint), "%s", source_id);
        snprintf(e->data_pool, sizeof(e->data_pool), "%s", vol->data_pool);
}

/*
 * Reserves snapshot @name with its record (ready=0) in one operation, or
 * finds its reservation, and takes its lock, "snapshot:<uuid>" in
 * @uuid_lock, the one DeleteSnapshot takes, so a create and a delete of one
 * snapshot never run together (EBUSY, ABORTED, while the other does). A
 * name already reserved is looked up, and under the lock must still map to
 * its uuid: a delete that finished in between sends us round again for a
 * fresh one. On success the caller releases @uuid_lock.
 */
static int reserve(rados_ioctx_t io, const char *name, const struct gantry_journal_entry *vol,
                   const char *source_id, struct gantry_journal_entry *e, char *uuid_lock,
                   size_t uuid_lock_size, struct gantry_error *err)
{
        char uuid[GANTRY_UUID_LEN + 1], again[GANTRY_UUID_LEN + 1];
        bool fresh;
        int r;

        for (int attempt = 0; attempt < 3; attempt++) {
                gantry_uuid_generate(uuid);
                new_record(e, uuid, name, vol, source_id);
                r = gantry_journal_reserve(io, GANTRY_JOURNAL_SNAPSHOT, name, e);
                fresh = r == 0;
                if (r == -EEXIST && (r = gantry_journal_lookup_name(io, GANTRY_JOURNAL_SNAPSHOT, name,
                                                                    uuid)) == -ENOENT)
                        continue; /* deleted since: reserve again */
                if (r < 0)
                        return gantry_ceph_error(err, r, "reserve snapshot name", name);
                snprintf(uuid_lock, uuid_lock_size, "snapshot:%s", uuid);
                if (gantry_lock_try(uuid_lock) < 0)
                        return gantry_error_set(err, EBUSY, "name: snapshot %s is busy (being "
                                                "deleted?)", name);
                if (fresh)
                        return 0; /* reserved here, with its record */
                r = gantry_journal_lookup_name(io, GANTRY_JOURNAL_SNAPSHOT, name, again);
                if (r == -ENOENT || (r == 0 && strcmp(again, uuid) != 0)) {
                        gantry_lock_release(uuid_lock);
                        continue; /* deleted since we looked: reserve afresh */
                }
                if (r == 0)
                        r = gantry_journal_read(io, GANTRY_JOURNAL_SNAPSHOT, uuid, e);
                if (r < 0 && r != -ENOENT) {
                        gantry_lock_release(uuid_lock);
                        return gantry_ceph_error(err, r, "read journal of", name);
                }
                if (r == 0) {
                        if (strcmp(e->fingerprint, source_id) == 0)
                                return 0;
                        gantry_lock_release(uuid_lock);
                        return gantry_error_set(err, EEXIST, "name: snapshot %s already exists for "
                                                "another source volume", name);
                }
                /*
                 * Reserved by an earlier version, which wrote the record
                 * apart: write it now, only while the name still maps to the
                 * uuid (a delete in another process may have removed both
                 * since the lookup).
                 */
                new_record(e, uuid, name, vol, source_id);
                r = gantry_journal_write_named(io, GANTRY_JOURNAL_SNAPSHOT, name, e);
                if (r < 0) {
                        gantry_lock_release(uuid_lock);
                        if (r == -ENOENT)
                                continue; /* deleted since we looked: reserve afresh */
                        return gantry_ceph_error(err, r, "write journal of", name);
                }
                return 0;
        }
        return gantry_error_set(err, EBUSY, "name: snapshot %s is being created elsewhere", name);
}

int gantry_dataset_create_snapshot(struct gantry_csi_call *call,
                                   const Csi__V1__CreateSnapshotRequest *req,
                                   Csi__V1__CreateSnapshotResponse *resp, struct gantry_error *err)
{
        struct gantry_dataset_target t = { 0 };
        struct gantry_journal_entry vol, e;
        struct gantry_volume_ref ref;
        char lock[300], uuid_lock[64] = "", made[GANTRY_UUID_LEN + 1];
        Csi__V1__Snapshot *snap;
        rbd_image_t img;
        int r;

        if ((r = gantry_dataset_check_name(req->name, sizeof(e.name), err)) < 0)
                return r;
        if ((r = check_parameters(req, err)) < 0)
                return r;
        if (gantry_id_decode(req->source_volume_id, &ref) < 0)
                return gantry_error_set(err, ENOENT, "source_volume_id: %s does not exist",
                                        req->source_volume_id);
        snprintf(lock, sizeof(lock), "snapshot-name:%s", req->name);
        if (gantry_lock_try(lock) < 0)
                return gantry_error_set(err, EBUSY, "name: an operation on snapshot %s is in progress",
                                        req->name);
        r = gantry_dataset_target_open(call->config, req->source_volume_id, "source_volume_id",
                                       (void *const *)req->secrets, req->n_secrets, &t, err);
        if (r == -ENOENT)
                r = gantry_error_set(err, ENOENT, "source_volume_id: %s does not exist",
                                     req->source_volume_id);
        if (r < 0)
                goto out;
        r = gantry_journal_read(t.io, GANTRY_JOURNAL_VOLUME, t.ref.uuid, &vol);
        if (r == -ENOENT || (r == 0 && !vol.ready)) {
                r = gantry_error_set(err, ENOENT, "source_volume_id: %s does not exist",
                                     req->source_volume_id);
                goto out;
        }
        if (r < 0) {
                r = gantry_ceph_error(err, r, "read journal of", req->source_volume_id);
                goto out;
        }
        /* a demoted copy has no data to snapshot (a retry of a snapshot already made is fine) */
        if (gantry_journal_lookup_name(t.io, GANTRY_JOURNAL_SNAPSHOT, req->name, made) == -ENOENT &&
            (r = gantry_copy_use_check_data(t.io, &vol, "source_volume_id", err)) < 0)
                goto out;
        if ((r = reserve(t.io, req->name, &vol, req->source_volume_id, &e, uuid_lock,
                         sizeof(uuid_lock), err)) < 0) {
                uuid_lock[0] = '\0';
                goto out;
        }
        if (!e.ready) {
                r = rbd_open(t.io, vol.image, &img, NULL);
                if (r == 0) {
                        r = rbd_snap_create(img, e.image);
                        if (r == -EEXIST)
                                r = 0;
                        if (r == 0)
                                r = rbd_get_size(img, &e.size);
                        rbd_close(img);
                }
                if (r < 0) {
                        r = gantry_ceph_error(err, r, "snapshot image", vol.image);
                        goto out;
                }
                e.ready = true;
                if ((r = gantry_journal_write(t.io, GANTRY_JOURNAL_SNAPSHOT, &e)) < 0) {
                        r = gantry_ceph_error(err, r, "write journal of", req->name);
                        goto out;
                }
                char name[512];

                log_info("dataset.snapshot_created", "name=%s image=%s snap=%s",
                         gantry_log_quote(req->name, name, sizeof(name)), vol.image, e.image);
        }
        snap = gantry_csi_call_alloc(call, sizeof(*snap));
        if (!snap) {
                r = -ENOMEM;
                goto out;
        }
        csi__v1__snapshot__init(snap);
        if ((r = gantry_dataset_fill_snapshot(call, &t, &e, snap)) < 0)
                goto out;
        resp->snapshot = snap;
out:
        gantry_dataset_target_close(&t);
        if (uuid_lock[0])
                gantry_lock_release(uuid_lock);
        gantry_lock_release(lock);
        return r;
}

int gantry_dataset_delete_snapshot(struct gantry_csi_call *call,
                                   const Csi__V1__DeleteSnapshotRequest *req,
                                   struct gantry_error *err)
{
        struct gantry_dataset_target t = { 0 };
        struct gantry_journal_entry e;
        struct gantry_volume_ref ref;
        char lock[64];
        rbd_image_t img;
        int r;

        if (gantry_id_decode(req->snapshot_id, &ref) < 0)
                return 0; /* not ours: nothing to delete */
        snprintf(lock, sizeof(lock), "snapshot:%s", ref.uuid);
        if (gantry_lock_try(lock) < 0)
                return gantry_error_set(err, EBUSY, "snapshot_id: an operation on %s is in progress",
                                        req->snapshot_id);
        r = gantry_dataset_open_record(call->config, req->snapshot_id, "snapshot_id", GANTRY_JOURNAL_SNAPSHOT,
                                       (void *const *)req->secrets, req->n_secrets, &t, &e, err);
        if (r <= 0)
                goto out;
        r = rbd_open(t.io, e.source, &img, NULL);
        if (r == 0) {
                r = rbd_snap_remove(img, e.image);
                rbd_close(img);
        }
        if (r < 0 && r != -ENOENT) {
                r = gantry_ceph_error(err, r, "remove snapshot", e.image);
                goto out;
        }
        r = gantry_journal_remove(t.io, GANTRY_JOURNAL_SNAPSHOT, &e);
        if (r < 0) {
                r = gantry_ceph_error(err, r, "remove journal of", req->snapshot_id);
                goto out;
        }
        log_info("dataset.snapshot_deleted", "name=%s snap=%s", e.name, e.image);
out:
        gantry_dataset_target_close(&t);
        gantry_lock_release(lock);
        return r;
}
