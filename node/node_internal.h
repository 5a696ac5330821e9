/*
 * Private declarations shared by the files of the CSI Node service (node/'s
 * top): the per-volume locks, the request checks, the NVMe path records and
 * the bandwidth caps. What the host offers is in host/host.h, krbd in
 * rbd/rbd.h. Every function returns 0 (or a count) on success and -errno
 * on failure; those that fail for a reason the user must see fill a struct
 * gantry_error naming the field.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"
#include "csi.pb-c.h"
#include "error.h"
#include "host.h"
#include "rbd.h"

#define NODE_VOLUME_ID_MAX 128
/* Where a block volume's device node is bind-mounted inside the staging dir. */
#define NODE_BLOCK_STAGE_NAME "device"

/* ---- node_request.c: per-volume try-locks (common/try_lock.c) ---- */

/*
 * Takes the lock of @volume_id; -EBUSY (ABORTED) with @err filled when
 * another call holds it.
 */
int gantry_node_lock_try(const char *volume_id, struct gantry_error *err);
void gantry_node_lock_release(const char *volume_id);

/* ---- node_paths.c: the NVMe paths of staged checkpoint volumes ---- */

struct gantry_metrics;
struct gantry_nvmf_attach_report;

/* Where the path metrics go (NULL: nowhere); borrowed, must outlive the service. */
void gantry_node_paths_set_metrics(struct gantry_metrics *m);

/*
 * Records what the attach of checkpoint volume @volume_id (namespace
 * @nguid) made of its paths; a degraded one counts in the metrics.
 * Replaces an earlier record. Returns 0 or -ENOMEM (nothing recorded).
 */
int gantry_node_paths_record(const char *volume_id, const char *nguid,
                             const struct gantry_nvmf_attach_report *report);

/* Drops @volume_id's record (none: nothing to do). */
void gantry_node_paths_forget(const char *volume_id);

/*
 * Re-checks @volume_id's connected paths in sysfs (controller state, path
 * device) and writes "1 of 2 NVMe paths missing: ADDR (why), ..." to @buf
 * ("" when none is, or the volume has no record); the number of paths the
 * volume has goes to @ret_paths (may be NULL; untouched without a record).
 * Returns the number missing.
 */
size_t gantry_node_paths_condition(const char *volume_id, char *buf, size_t size, size_t *ret_paths);

/* Frees every record. */
void gantry_node_paths_shutdown(void);

/* ---- node_qos.c: bandwidth caps of published volumes ---- */

/*
 * Caps the pod of @req (podInfoOnMount keys in its volume_context; none:
 * nothing to do) on block device @dev. 0 when capped or when it cannot be
 * enforced (logged, counted); -EAGAIN (UNAVAILABLE, kubelet retries) when
 * the API did not answer; -EINVAL naming a bad annotation or parameter.
 */
int gantry_node_qos_publish(const Csi__V1__NodePublishVolumeRequest *req, dev_t dev,
                            struct gantry_error *err);

/* Takes back the cap of @target_path (none: 0). */
int gantry_node_qos_unpublish(const char *target_path, struct gantry_error *err);

/* ---- node_request.c: request checks shared by the handlers ---- */

struct node_capability {
        bool block;          /* raw block; else a mounted file system */
        bool readonly_mode;  /* SINGLE_NODE_READER_ONLY, MULTI_NODE_READER_ONLY */
        char fstype[16];     /* ext4 or xfs (mount only) */
        char *const *flags;  /* mount_flags, borrowed from the request */
        size_t n_flags;
};

/* volume_id: 1-128 bytes of [A-Za-z0-9._-]. */
int gantry_node_check_volume_id(const char *id, struct gantry_error *err);

/* An absolute path with no "." or ".." component; @field names it in errors. */
int gantry_node_check_path(const char *field, const char *path, struct gantry_error *err);

/*
 * Checks a VolumeCapability and fills @ret; @ctx_fstype is the volume
 * context's fsType (may be NULL), used when the capability names none.
 */
int gantry_node_parse_capability(const Csi__V1__VolumeCapability *cap, const char *ctx_fstype,
                                 struct node_capability *ret, struct gantry_error *err);

/* Keeps @config and @node_id (borrowed) for the two calls below. */
void gantry_node_request_setup(const struct gantry_config *config, const char *node_id);

/* The CSI node id the service was started with (--node-id). */
const char *gantry_node_id(void);

/* The node config the service was started with. */
const struct gantry_node_config *gantry_node_config(void);
