/*
 * controller/checkpoint/: the checkpoint tier of the Controller service:
 * NVMe-oF namespaces on storage targets (gantry-target on nvmet, or SPDK),
 * managed over JSON-RPC (target_client.c), the targets themselves being the
 * record (no journal). It needs only common/, csi/ and the node registry of
 * controller/'s top; the dataset tier calls it for volumes made from a
 * checkpoint snapshot.
 *
 * controller.c dispatches here when CreateVolume's parameter `tier` is
 * `checkpoint`, and for existing volumes when the volume ID's version is
 * 0002 (gantry_checkpoint_is_volume_id). The handlers have the shape of the
 * dataset tier's: they fill the response from the call's arena and return 0
 * or -errno with @err naming the field.
 */
#pragma once

#include <stdbool.h>

#include "csi.pb-c.h"
#include "csi_call.h"
#include "error.h"

/* The topology segment key that names a fabric leaf (as NVIDIA Topograph labels nodes). */
#define GANTRY_CHECKPOINT_LEAF_KEY "network.topology.nvidia.com/leaf"

/* Whether @volume_id is a checkpoint volume ID ("0002-..."). */
bool gantry_checkpoint_is_volume_id(const char *volume_id);
/* Whether @snapshot_id is a checkpoint snapshot ID ("0003-..."). */
bool gantry_checkpoint_is_snapshot_id(const char *snapshot_id);

struct gantry_config;
struct gantry_metrics;

/*
 * At start: says in one log line, and in the gauge
 * gantry_config_dhchap_key_dir_missing of @m (NULL: none), when @config has
 * checkpoint targets but no dhchapKeyDir, so the operator sees it before the
 * first publish of an auth: dhchap volume fails.
 */
void gantry_checkpoint_config_check(const struct gantry_config *config, struct gantry_metrics *m);

int gantry_checkpoint_create_volume(struct gantry_csi_call *call, const Csi__V1__CreateVolumeRequest *req,
                                    Csi__V1__CreateVolumeResponse *resp, struct gantry_error *err);
int gantry_checkpoint_delete_volume(struct gantry_csi_call *call, const Csi__V1__DeleteVolumeRequest *req,
                                    struct gantry_error *err);
int gantry_checkpoint_publish_volume(struct gantry_csi_call *call,
                                     const Csi__V1__ControllerPublishVolumeRequest *req,
                                     Csi__V1__ControllerPublishVolumeResponse *resp,
                                     struct gantry_error *err);
int gantry_checkpoint_unpublish_volume(struct gantry_csi_call *call,
                                       const Csi__V1__ControllerUnpublishVolumeRequest *req,
                                       struct gantry_error *err);
int gantry_checkpoint_expand_volume(struct gantry_csi_call *call,
                                    const Csi__V1__ControllerExpandVolumeRequest *req,
                                    Csi__V1__ControllerExpandVolumeResponse *resp,
                                    struct gantry_error *err);
int gantry_checkpoint_get_volume(struct gantry_csi_call *call, const Csi__V1__ControllerGetVolumeRequest *req,
                                 Csi__V1__ControllerGetVolumeResponse *resp, struct gantry_error *err);
/* 0 when checkpoint volume @volume_id exists; -ENOENT (NOT_FOUND) when not. */
/*
 * ControllerModifyVolume of a checkpoint volume: the volume exists (else
 * -ENOENT) and no other call holds it (else -EBUSY). Its bandwidth keys
 * (checked by the caller) change nothing on the target: the cap and the
 * charge follow the class external-resizer marks in force on the PVC.
 */
int gantry_checkpoint_modify_volume(struct gantry_csi_call *call,
                                    const Csi__V1__ControllerModifyVolumeRequest *req,
                                    struct gantry_error *err);

int gantry_checkpoint_check_exists(struct gantry_csi_call *call, const char *volume_id,
                                   struct gantry_error *err);
/*
 * Whether checkpoint volumes support @cap (SINGLE_NODE_* modes; mount as
 * ext4/xfs or block). Returns 0 or -EINVAL with @err prefixed by @field.
 */
int gantry_checkpoint_check_capability(const Csi__V1__VolumeCapability *cap, const char *field,
                                       struct gantry_error *err);
int gantry_checkpoint_get_capacity(struct gantry_csi_call *call, const Csi__V1__GetCapacityRequest *req,
                                   Csi__V1__GetCapacityResponse *resp, struct gantry_error *err);

/* Checkpoint snapshots (checkpoint_snapshot.c). */
int gantry_checkpoint_create_snapshot(struct gantry_csi_call *call, const Csi__V1__CreateSnapshotRequest *req,
                                      Csi__V1__CreateSnapshotResponse *resp, struct gantry_error *err);
int gantry_checkpoint_delete_snapshot(struct gantry_csi_call *call, const Csi__V1__DeleteSnapshotRequest *req,
                                      struct gantry_error *err);

/*
 * The checkpoint tier's part of ListVolumes / ListSnapshots (checkpoint_list.c):
 * appends at most @max entries after @token ("" from the start, else a token
 * gantry_checkpoint_is_list_token accepts) to those already in @resp, and
 * sets resp->next_token when more follow. ListSnapshots honours the request's
 * snapshot_id and source_volume_id filters (checkpoint IDs only).
 */
bool gantry_checkpoint_is_list_token(const char *token);
int gantry_checkpoint_list_volumes(struct gantry_csi_call *call, const char *token, size_t max,
                                   Csi__V1__ListVolumesResponse *resp, struct gantry_error *err);
int gantry_checkpoint_list_snapshots(struct gantry_csi_call *call, const Csi__V1__ListSnapshotsRequest *req,
                                     const char *token, size_t max, Csi__V1__ListSnapshotsResponse *resp,
                                     struct gantry_error *err);

/* The RBD snapshot gantry-target leaves on a verified drain's image (target's TGT_DRAINED_SNAP). */
#define GANTRY_CHECKPOINT_DRAINED_SNAP "drained"

/* Where a checkpoint snapshot's durable copy is. */
struct gantry_checkpoint_durable {
        char cluster_id[65]; /* the driver config's clusterID */
        char pool[128];
        char image[120]; /* gantry-ckpt-snap-<uuid> */
        char snap[32];
        uint64_t size;
};

/*
 * The durable copy of checkpoint snapshot @snapshot_id (named @field in
 * errors), for a dataset volume cloned from it: NOT_FOUND when the snapshot
 * does not exist, INVALID_ARGUMENT when its target has no durable tier,
 * FAILED_PRECONDITION while the drain is not complete.
 */
int gantry_checkpoint_snapshot_durable(struct gantry_csi_call *call, const char *snapshot_id, const char *field,
                                       struct gantry_checkpoint_durable *ret, struct gantry_error *err);
