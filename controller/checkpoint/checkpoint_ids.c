/*
 * Checkpoint volume IDs, capability checks and the small helpers the
 * checkpoint handlers share.
 *
 *   0002-0005-tgt-a-0000000000000000-5f1c1a52-8a2e-4a7b-9d3c-0c1e2f3a4b5c
 *   ver  len  target  (no pool)       volume uuid
 *
 * The ID has the dataset ID's shape (controller/dataset/ids.c) with version 0002, the
 * target id where a dataset has its cluster and 16 zeros for the pool. The
 * NQN, NGUID and lvol name all follow from the uuid (common/nvmf_names.h),
 * so the controller keeps no state of its own: the target is the record.
 *
 * A checkpoint snapshot ID has the same shape with version 0003 and the
 * snapshot's uuid (derived from the CO's snapshot name); the snapshot is
 * the lvol "snap-<uuid>" on that target.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "checkpoint_internal.h"
#include "try_lock.h"

#define ZERO_POOL "0000000000000000"

bool gantry_checkpoint_is_volume_id(const char *id)
{
        return id && strncmp(id, CKPT_ID_VERSION "-", 5) == 0;
}

int ckpt_ref_init(const struct gantry_target_config *target, const char *uuid, struct ckpt_ref *ref)
{
        int r;

        memset(ref, 0, sizeof(*ref));
        ref->target = target;
        snprintf(ref->uuid, sizeof(ref->uuid), "%s", uuid);
        if ((r = gantry_nvmf_volume_nqn(uuid, ref->nqn, sizeof(ref->nqn))) < 0 ||
            (r = gantry_nvmf_volume_nguid(uuid, ref->nguid)) < 0)
                return r;
        return 0;
}

bool gantry_checkpoint_is_snapshot_id(const char *id)
{
        return id && strncmp(id, CKPT_SNAP_ID_VERSION "-", 5) == 0;
}

static int id_encode(const char *version, const struct ckpt_ref *ref, char *buf, size_t size)
{
        int n = snprintf(buf, size, "%s-%04zx-%s-" ZERO_POOL "-%s", version, strlen(ref->target->id),
                         ref->target->id, ref->uuid);

        if (n < 0 || (size_t)n >= size || n > CKPT_ID_MAX)
                return -ENAMETOOLONG;
        return 0;
}

int ckpt_id_encode(const struct ckpt_ref *ref, char *buf, size_t size)
{
        return id_encode(CKPT_ID_VERSION, ref, buf, size);
}

int ckpt_snapshot_id_encode(const struct ckpt_ref *ref, char *buf, size_t size)
{
        return id_encode(CKPT_SNAP_ID_VERSION, ref, buf, size);
}

static int id_decode(const char *version, const char *what, const struct gantry_config *config, const char *id,
                     const char *field, struct ckpt_ref *ret, struct gantry_error *err)
{
        char target[GANTRY_CONFIG_ID_MAX + 1];
        const struct gantry_target_config *t;
        unsigned long len;
        const char *p;
        char *end;

        if (!id || strlen(id) > CKPT_ID_MAX || strncmp(id, version, 4) != 0 || id[4] != '-')
                return gantry_error_set(err, EINVAL, "%s: not a checkpoint %s ID", field, what);
        p = id + 5;
        len = strtoul(p, &end, 16);
        if (end != p + 4 || *end != '-' || len == 0 || len > GANTRY_CONFIG_ID_MAX ||
            strlen(end + 1) != len + 1 + 16 + 1 + GANTRY_NVMF_UUID_LEN)
                return gantry_error_set(err, EINVAL, "%s: malformed checkpoint %s ID", field, what);
        p = end + 1;
        memcpy(target, p, len);
        target[len] = '\0';
        p += len;
        if (strncmp(p, "-" ZERO_POOL "-", 18) != 0 || !gantry_nvmf_is_uuid(p + 18))
                return gantry_error_set(err, EINVAL, "%s: malformed checkpoint %s ID", field, what);
        t = gantry_config_find_target(config, target);
        if (!t)
                return gantry_error_set(err, ENOENT, "%s: target %s is not in the config", field,
                                        target);
        if (ckpt_ref_init(t, p + 18, ret) < 0)
                return gantry_error_set(err, EINVAL, "%s: malformed checkpoint %s ID", field, what);
        return 0;
}

int ckpt_id_decode(const struct gantry_config *config, const char *id, const char *field,
                   struct ckpt_ref *ret, struct gantry_error *err)
{
        return id_decode(CKPT_ID_VERSION, "volume", config, id, field, ret, err);
}

int ckpt_snapshot_id_decode(const struct gantry_config *config, const char *id, const char *field,
                            struct ckpt_ref *ret, struct gantry_error *err)
{
        return id_decode(CKPT_SNAP_ID_VERSION, "snapshot", config, id, field, ret, err);
}

int gantry_checkpoint_check_capability(const Csi__V1__VolumeCapability *cap, const char *field,
                                       struct gantry_error *err)
{
        return gantry_csi_check_capability(cap, field, "checkpoint", false, err);
}

int64_t ckpt_timeout_ms(const struct gantry_csi_call *call)
{
        int64_t left = gantry_csi_call_remaining_ms(call);

        return left < CKPT_CALL_TIMEOUT_MS ? left : CKPT_CALL_TIMEOUT_MS;
}

/* ---- per-volume try-locks (the process's one table, common/try_lock.c) ---- */

int ckpt_lock_try(const char *uuid, struct gantry_error *err)
{
        char key[64];

        snprintf(key, sizeof(key), "ckpt:%s", uuid);
        if (gantry_lock_try(key) < 0)
                return gantry_error_set(err, EBUSY, "an operation on volume %s is in progress", uuid);
        return 0;
}

void ckpt_lock_release(const char *uuid)
{
        char key[64];

        snprintf(key, sizeof(key), "ckpt:%s", uuid);
        gantry_lock_release(key);
}
