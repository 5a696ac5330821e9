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

/* The layout every protobuf-c string map entry shares. */
struct ckpt_map_entry {
        ProtobufCMessage base;
        char *key;
        char *value;
};

/* Milliseconds a target call may take within the CSI call's deadline. */
int64_t ckpt_timeout_ms(const struct gantry_csi_call *call);

/* The subsystem @ref->nqn on its target (new ref), or -ENODEV when it does not exist. */
int ckpt_get_subsystem(const struct gantry_csi_call *call, const struct ckpt_ref *ref,
                       json_t **ret_subsys, struct gantry_error *err);

/* Per-volume try-lock: -EBUSY (ABORTED) when another call holds @key. */
int ckpt_lock_try(const char *uuid, struct gantry_error *err);
void ckpt_lock_release(const char *uuid);
