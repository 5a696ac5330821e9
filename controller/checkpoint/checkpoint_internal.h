/*
 * Private declarations shared by the checkpoint_*.c files.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "checkpoint.h"
#include "config.h"
#include "nvmf_names.h"

#define CKPT_ID_VERSION "0002"
#define CKPT_SNAP_ID_VERSION "0003"
#define CKPT_ID_MAX 128
#define CKPT_DEFAULT_LVS "gantry"
#define CKPT_DEFAULT_SIZE (1LL << 30)
#define CKPT_CALL_TIMEOUT_MS 30000

/* What a checkpoint volume ID carries, and what follows from it. */
struct ckpt_ref {
        const struct gantry_target_config *target;
        char uuid[GANTRY_NVMF_UUID_LEN + 1];
        char nqn[GANTRY_NQN_MAX + 1];
        char nguid[33];
};

/* Fills @ref from @target and @uuid (NQN, NGUID). */
int ckpt_ref_init(const struct gantry_target_config *target, const char *uuid, struct ckpt_ref *ref);
/* Writes "0002-<len:4 hex>-<target id>-0000000000000000-<uuid>". */
int ckpt_id_encode(const struct ckpt_ref *ref, char *buf, size_t size);
/* Parses a checkpoint volume ID against the config; @field names it in errors. */
int ckpt_id_decode(const struct gantry_config *config, const char *id, const char *field,
                   struct ckpt_ref *ret, struct gantry_error *err);

/* The same for checkpoint snapshot IDs ("0003-...", the uuid is the snapshot's). */
int ckpt_snapshot_id_encode(const struct ckpt_ref *ref, char *buf, size_t size);
int ckpt_snapshot_id_decode(const struct gantry_config *config, const char *id, const char *field,
                            struct ckpt_ref *ret, struct gantry_error *err);

/* The layout every protobuf-c string map entry shares. */
struct ckpt_map_entry {
        ProtobufCMessage base;
        char *key;
        char *value;
};

/* Milliseconds a target call may take within the CSI call's deadline. */
int64_t ckpt_timeout_ms(const struct gantry_csi_call *call);

/* Per-volume try-lock: -EBUSY (ABORTED) when another call holds @key. */
int ckpt_lock_try(const char *key, struct gantry_error *err);
void ckpt_lock_release(const char *key);

/* ---- what a volume or snapshot looks like on its target (checkpoint_lookup.c) ---- */

/* The subsystem @ref->nqn on its target (new ref), or -ENODEV when it does not exist. */
int ckpt_get_subsystem(const struct gantry_csi_call *call, const struct ckpt_ref *ref,
                       json_t **ret_subsys, struct gantry_error *err);
/* The bdev name of namespace 1 of @subsys (borrowed), or NULL. */
const char *ckpt_namespace_bdev(json_t *subsys);
/*
 * The bdev (new ref, as bdev_get_bdevs describes it) on @t whose alias ends in
 * "/@lvol", or -ENODEV when there is none.
 */
int ckpt_find_lvol(const struct gantry_csi_call *call, const struct gantry_target_config *t, const char *lvol,
                   json_t **ret_bdev, struct gantry_error *err);
/* Where bdev @bdev was copied from ("<lvs>/<lvol>"; borrowed), or NULL. */
const char *ckpt_bdev_source(json_t *bdev);
/* The drain status of snapshot @bdev (driver_specific.lvol.drain; borrowed), or NULL. */
json_t *ckpt_bdev_drain(json_t *bdev);
/* The size of @bdev in bytes. */
int64_t ckpt_bdev_bytes(json_t *bdev);

/* ---- snapshots (checkpoint_snapshot.c) ---- */

/* The uuid of the checkpoint snapshot the CO names @name. */
void ckpt_snapshot_uuid(const char *name, char out[GANTRY_NVMF_UUID_LEN + 1]);
/* Fills @snap (from @call's arena) for snapshot @uuid on @t, described by @bdev. */
int ckpt_fill_snapshot(struct gantry_csi_call *call, const struct gantry_target_config *t, const char *uuid,
                       json_t *bdev, Csi__V1__Snapshot *snap);

/* ---- lists (checkpoint_list.c) ---- */

/* One page of a list: volumes when @volumes is set, else snapshots. */
struct ckpt_list {
        const struct gantry_target_config *only_target; /* NULL: all */
        const char *source_volume_id;                   /* snapshots: filter, or NULL */
        Csi__V1__ListVolumesResponse__Entry **volumes;
        Csi__V1__ListSnapshotsResponse__Entry **snapshots;
        size_t n, max;
        char *next_token; /* set when more entries follow (arena) */
};

/* Appends the entries after @token ("" from the start) to @l, up to @l->max. */
int ckpt_list(struct gantry_csi_call *call, const char *token, struct ckpt_list *l, struct gantry_error *err);
/* Appends snapshot @snapshot_id to @l when it exists (an unknown ID adds nothing). */
int ckpt_get_snapshot(struct gantry_csi_call *call, const char *snapshot_id, struct ckpt_list *l,
                      struct gantry_error *err);
