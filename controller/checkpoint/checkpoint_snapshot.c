/*
 * Checkpoint snapshots: CreateSnapshot, DeleteSnapshot and the snapshot
 * half of ListSnapshots for volumes of the checkpoint tier.
 *
 * A snapshot is a point-in-time copy of the volume's backing file on the
 * volume's own target, made by gantry-target's bdev_lvol_snapshot (a reflink
 * where the filesystem has them; a byte copy only while no host may write,
 * see docs/targets.md) and named "snap-<uuid>", the uuid derived from the
 * CO's snapshot name. Like checkpoint volumes, the target is the record: the
 * snapshot bdev remembers its source ("<lvs>/vol-<uuid>") and its creation
 * time, so a CreateSnapshot retried after a crash finds it again, and the
 * same name asked for another source is found on whichever target holds it
 * (ALREADY_EXISTS).
 *
 * Where the target has a durable tier (gantry-target --durable), every
 * CreateSnapshot also starts or resumes the snapshot's drain into Ceph
 * (bdev_lvol_start_drain) and answers ready_to_use false until the drain is
 * complete and verified: the snapshotter's polling CreateSnapshot calls
 * drive it and log its progress. DeleteSnapshot's bdev_lvol_delete removes
 * the durable copy with the snapshot.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint_internal.h"
#include "log.h"
#include "target_client.h"

void ckpt_snapshot_uuid(const char *name, char out[GANTRY_NVMF_UUID_LEN + 1])
{
        char key[300];

        /* its own name space: a PVC and a VolumeSnapshot may share a name */
        snprintf(key, sizeof(key), "snapshot:%s", name);
        gantry_nvmf_volume_uuid(key, out);
}

/* The volume uuid of a source alias "<lvs>/vol-<uuid>", or NULL. */
static const char *source_volume_uuid(const char *alias)
{
        const char *slash = alias ? strrchr(alias, '/') : NULL;

        if (!slash || strncmp(slash + 1, "vol-", 4) != 0 || !gantry_nvmf_is_uuid(slash + 5))
                return NULL;
        return slash + 5;
}

int ckpt_fill_snapshot(struct gantry_csi_call *call, const struct gantry_target_config *t, const char *uuid,
                       json_t *bdev, Csi__V1__Snapshot *snap)
{
        json_t *lvol = json_object_get(json_object_get(bdev, "driver_specific"), "lvol");
        const char *src = source_volume_uuid(ckpt_bdev_source(bdev));
        char id[CKPT_ID_MAX + 1], src_id[CKPT_ID_MAX + 1] = "";
        Google__Protobuf__Timestamp *ts = gantry_csi_call_alloc(call, sizeof(*ts));
        struct ckpt_ref ref;

        if (!ts || ckpt_ref_init(t, uuid, &ref) < 0 || ckpt_snapshot_id_encode(&ref, id, sizeof(id)) < 0)
                return -ENOMEM;
        if (src && (ckpt_ref_init(t, src, &ref) < 0 || ckpt_id_encode(&ref, src_id, sizeof(src_id)) < 0))
                return -ENOMEM;
        google__protobuf__timestamp__init(ts);
        ts->seconds = json_integer_value(json_object_get(lvol, "creation_time"));
        ts->nanos = (int32_t)json_integer_value(json_object_get(lvol, "creation_time_ns"));
        snap->snapshot_id = gantry_csi_call_strdup(call, id);
        snap->source_volume_id = gantry_csi_call_strdup(call, src_id);
        if (!snap->snapshot_id || !snap->source_volume_id)
                return -ENOMEM;
        snap->size_bytes = ckpt_bdev_bytes(bdev);
        snap->creation_time = ts;
        /* ready once the durable copy is complete and verified (no durable tier: at once) */
        snap->ready_to_use = !ckpt_bdev_drain(bdev) ||
                             strcmp(json_string_value(json_object_get(ckpt_bdev_drain(bdev), "state")) ?: "",
                                    "complete") == 0;
        return 0;
}

/*
 * Starts or resumes the drain of snapshot @lvol into the target's durable
 * tier unless it is complete, and logs where it stands. A target without
 * one (or SPDK, which has no such method) answers EOPNOTSUPP: the snapshot
 * is then the target's copy alone. Refreshes *@bdev.
 */
static int drain(const struct gantry_csi_call *call, const struct gantry_target_config *t, const char *lvol,
                 bool retain_local, json_t **bdev, struct gantry_error *err)
{
        json_t *d = ckpt_bdev_drain(*bdev), *res = NULL;
        const char *state = json_string_value(json_object_get(d, "state"));
        int r;

        if (state && strcmp(state, "complete") == 0)
                return 0;
        r = gantry_target_call(t, "bdev_lvol_start_drain",
                               json_pack("{s:s, s:b}", "snapshot_name", json_string_value(json_object_get(*bdev, "name")),
                                         "retain_local", retain_local),
                               ckpt_timeout_ms(call), &res, err);
        if (r == -EOPNOTSUPP) {
                gantry_error_clear(err);
                return 0;
        }
        if (r < 0)
                return r;
        log_info("controller.checkpoint_drain", "target=%s snapshot=%s state=%s image=%s progress=\"%s\"", t->id, lvol,
                 json_string_value(json_object_get(res, "state")) ?: "?",
                 json_string_value(json_object_get(res, "image")) ?: "?",
                 json_string_value(json_object_get(res, "progress")) ?: "");
        json_decref(res);
        json_decref(*bdev);
        *bdev = NULL;
        r = ckpt_find_lvol(call, t, lvol, bdev, err);
        return r == -ENODEV ? gantry_error_set(err, EIO, "target %s: snapshot %s vanished", t->id, lvol) : r;
}

/*
 * VolumeSnapshotClass parameters: fastCopyRetention "keep" (default: the
 * target keeps its copy as long as the snapshot exists) or "untilDrained"
 * (the target's copy is freed once the durable copy is verified).
 */
static int check_parameters(const Csi__V1__CreateSnapshotRequest *req, bool *ret_retain, struct gantry_error *err)
{
        *ret_retain = true;
        for (size_t i = 0; i < req->n_parameters; i++) {
                const char *k = req->parameters[i]->key ? req->parameters[i]->key : "";
                const char *v = req->parameters[i]->value ? req->parameters[i]->value : "";
                if (strcmp(k, "fastCopyRetention") == 0) {
                        if (strcmp(v, "keep") != 0 && strcmp(v, "untilDrained") != 0)
                                return gantry_error_set(err, EINVAL, "parameters.fastCopyRetention: keep or untilDrained");
                        *ret_retain = strcmp(v, "keep") == 0;
                } else if (strncmp(k, "csi.storage.k8s.io/", 19) != 0) {
                        return gantry_error_set(err, EINVAL, "parameters.%s: unknown parameter", k);
                }
        }
        return 0;
}

/*
 * Looks for snapshot lvol @lvol on every target, @first first. Returns 0 with
 * *ret_target and *ret_bdev when found, -ENODEV when no target has it, or
 * the error of a target that did not answer (then nobody can tell).
 */
static int find_anywhere(const struct gantry_csi_call *call, const struct gantry_target_config *first,
                         const char *lvol, const struct gantry_target_config **ret_target, json_t **ret_bdev,
                         struct gantry_error *err)
{
        const struct gantry_config *c = call->config;
        int r = ckpt_find_lvol(call, first, lvol, ret_bdev, err);

        if (r != -ENODEV) {
                if (r == 0)
                        *ret_target = first;
                return r;
        }
        for (size_t i = 0; i < c->n_targets; i++) {
                if (&c->targets[i] == first)
                        continue;
                r = ckpt_find_lvol(call, &c->targets[i], lvol, ret_bdev, err);
                if (r == 0)
                        *ret_target = &c->targets[i];
                if (r != -ENODEV)
                        return r;
        }
        return -ENODEV;
}

int gantry_checkpoint_create_snapshot(struct gantry_csi_call *call, const Csi__V1__CreateSnapshotRequest *req,
                                      Csi__V1__CreateSnapshotResponse *resp, struct gantry_error *err)
{
        const struct gantry_target_config *where = NULL;
        char uuid[GANTRY_NVMF_UUID_LEN + 1], lvol[64], lock[80], quoted[512];
        json_t *subsys = NULL, *bdev = NULL, *res = NULL;
        Csi__V1__Snapshot *snap;
        struct ckpt_ref src;
        const char *ns_bdev;
        bool retain;
        int r;

        if (!req->name || !*req->name)
                return gantry_error_set(err, EINVAL, "name: required");
        if (strlen(req->name) > 253)
                return gantry_error_set(err, EINVAL, "name: at most 253 bytes");
        if ((r = check_parameters(req, &retain, err)) < 0)
                return r;
        r = ckpt_id_decode(call->config, req->source_volume_id, "source_volume_id", &src, err);
        if (r == -EINVAL) /* ours by its version, but no volume can have this ID */
                return gantry_error_set(err, ENOENT, "source_volume_id: volume %s does not exist",
                                        req->source_volume_id);
        if (r < 0)
                return r;
        ckpt_snapshot_uuid(req->name, uuid);
        snprintf(lvol, sizeof(lvol), "snap-%s", uuid);
        snprintf(lock, sizeof(lock), "snapshot:%s", uuid);
        if ((r = ckpt_lock_try(lock, err)) < 0)
                return r;

        r = find_anywhere(call, src.target, lvol, &where, &bdev, err);
        if (r == 0) {
                const char *from = source_volume_uuid(ckpt_bdev_source(bdev));
                if (where != src.target || !from || strcmp(from, src.uuid) != 0) {
                        r = gantry_error_set(err, EEXIST, "name: snapshot %s already exists for another "
                                                          "source volume", req->name);
                        goto out;
                }
                goto answer;
        }
        if (r != -ENODEV)
                goto out;
        r = ckpt_get_subsystem(call, &src, &subsys, err);
        if (r == -ENODEV)
                r = gantry_error_set(err, ENOENT, "source_volume_id: volume %s does not exist",
                                     req->source_volume_id);
        if (r < 0)
                goto out;
        if (!(ns_bdev = ckpt_namespace_bdev(subsys))) {
                r = gantry_error_set(err, ENOENT, "source_volume_id: volume %s has no namespace (half made)",
                                     req->source_volume_id);
                goto out;
        }
        r = gantry_target_call(src.target, "bdev_lvol_snapshot",
                               json_pack("{s:s, s:s}", "lvol_name", ns_bdev, "snapshot_name", lvol),
                               ckpt_timeout_ms(call), &res, err);
        json_decref(res);
        if (r == -ENOTEMPTY) /* no reflink and a host may write: see docs/targets.md */
                gantry_error_prefix(err, "source_volume_id");
        if (r < 0)
                goto out;
        where = src.target;
        if ((r = ckpt_find_lvol(call, where, lvol, &bdev, err)) < 0) {
                if (r == -ENODEV)
                        r = gantry_error_set(err, EIO, "target %s: snapshot %s vanished", where->id, lvol);
                goto out;
        }
        log_info("controller.checkpoint_snapshot_created", "name=%s target=%s source=%s snapshot=%s",
                 gantry_log_quote(req->name, quoted, sizeof(quoted)), where->id, src.uuid, lvol);
answer:
        if ((r = drain(call, where, lvol, retain, &bdev, err)) < 0)
                goto out;
        snap = gantry_csi_call_alloc(call, sizeof(*snap));
        if (!snap) {
                r = gantry_error_set(err, ENOMEM, "out of memory");
                goto out;
        }
        csi__v1__snapshot__init(snap);
        if ((r = ckpt_fill_snapshot(call, where, uuid, bdev, snap)) < 0) {
                r = gantry_error_set(err, -r, "out of memory");
                goto out;
        }
        resp->snapshot = snap;
        r = 0;
out:
        json_decref(bdev);
        json_decref(subsys);
        ckpt_lock_release(lock);
        return r;
}

int gantry_checkpoint_delete_snapshot(struct gantry_csi_call *call, const Csi__V1__DeleteSnapshotRequest *req,
                                      struct gantry_error *err)
{
        struct gantry_error ignore = { 0 };
        char lvol[64], lock[80], quoted[512];
        json_t *bdev = NULL, *res = NULL;
        struct ckpt_ref ref;
        int r;

        if (!req->snapshot_id || !*req->snapshot_id)
                return gantry_error_set(err, EINVAL, "snapshot_id: required");
        if (ckpt_snapshot_id_decode(call->config, req->snapshot_id, "snapshot_id", &ref, &ignore) < 0)
                return 0; /* no snapshot can have this ID (or its target left the config): nothing to delete */
        snprintf(lvol, sizeof(lvol), "snap-%s", ref.uuid);
        snprintf(lock, sizeof(lock), "snapshot:%s", ref.uuid);
        if ((r = ckpt_lock_try(lock, err)) < 0)
                return r;
        r = ckpt_find_lvol(call, ref.target, lvol, &bdev, err);
        if (r == -ENODEV) {
                r = 0;
                goto out;
        }
        if (r < 0)
                goto out;
        r = gantry_target_call(ref.target, "bdev_lvol_delete",
                               json_pack("{s:s}", "name", json_string_value(json_object_get(bdev, "name"))),
                               ckpt_timeout_ms(call), &res, err);
        json_decref(res);
        if (r == -ENODEV)
                r = 0;
        if (r == 0)
                log_info("controller.checkpoint_snapshot_deleted", "snapshot_id=%s target=%s",
                         gantry_log_quote(req->snapshot_id, quoted, sizeof(quoted)), ref.target->id);
out:
        json_decref(bdev);
        ckpt_lock_release(lock);
        return r;
}

int gantry_checkpoint_snapshot_durable(struct gantry_csi_call *call, const char *snapshot_id, const char *field,
                                       struct gantry_checkpoint_durable *ret, struct gantry_error *err)
{
        struct gantry_error why = { 0 };
        struct ckpt_ref ref;
        json_t *bdev = NULL, *d;
        char lvol[64];
        int r;

        if (ckpt_snapshot_id_decode(call->config, snapshot_id, field, &ref, &why) < 0)
                return gantry_error_set(err, ENOENT, "%s: %s does not exist (%s)", field, snapshot_id, why.msg);
        snprintf(lvol, sizeof(lvol), "snap-%s", ref.uuid);
        r = ckpt_find_lvol(call, ref.target, lvol, &bdev, err);
        if (r == -ENODEV)
                return gantry_error_set(err, ENOENT, "%s: %s does not exist", field, snapshot_id);
        if (r < 0)
                return r;
        d = ckpt_bdev_drain(bdev);
        if (!d)
                r = gantry_error_set(err, EINVAL, "%s: checkpoint snapshot %s has no durable copy (target %s has no "
                                                  "durable tier): restore it with tier: checkpoint",
                                     field, snapshot_id, ref.target->id);
        else if (strcmp(json_string_value(json_object_get(d, "state")) ?: "", "complete") != 0)
                r = gantry_error_set(err, ENOTEMPTY, "%s: checkpoint snapshot %s is not drained into Ceph yet (%s)",
                                     field, snapshot_id, json_string_value(json_object_get(d, "progress")) ?: "");
        if (r == 0) {
                snprintf(ret->cluster_id, sizeof(ret->cluster_id), "%s",
                         json_string_value(json_object_get(d, "cluster_id")) ?: "");
                snprintf(ret->pool, sizeof(ret->pool), "%s", json_string_value(json_object_get(d, "pool")) ?: "");
                snprintf(ret->image, sizeof(ret->image), "%s", json_string_value(json_object_get(d, "image")) ?: "");
                snprintf(ret->snap, sizeof(ret->snap), "%s", GANTRY_CHECKPOINT_DRAINED_SNAP);
                ret->size = (uint64_t)ckpt_bdev_bytes(bdev);
        }
        json_decref(bdev);
        return r;
}
