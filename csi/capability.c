/*
 * The VolumeCapability check every tier and service shares: an access mode
 * and an access type are given, a file system is ext4 or xfs, and the mode
 * is one the tier serves -- single-node modes everywhere; with
 * @multi_node, MULTI_NODE_READER_ONLY too, and multi-node writers for raw
 * block only (a local file system written from many nodes corrupts).
 * Errors name @field ("volume_capabilities[0]", "volume_capability").
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "csi_call.h"

int gantry_csi_check_capability(const Csi__V1__VolumeCapability *cap, const char *field,
                                const char *tier, bool multi_node, struct gantry_error *err)
{
        bool block;

        if (!cap)
                return gantry_error_set(err, EINVAL, "%s: required", field);
        if (!cap->access_mode)
                return gantry_error_set(err, EINVAL, "%s.access_mode: required", field);
        if (cap->access_type_case != CSI__V1__VOLUME_CAPABILITY__ACCESS_TYPE_BLOCK &&
            cap->access_type_case != CSI__V1__VOLUME_CAPABILITY__ACCESS_TYPE_MOUNT)
                return gantry_error_set(err, EINVAL, "%s.access_type: required (block or mount)", field);
        block = cap->access_type_case == CSI__V1__VOLUME_CAPABILITY__ACCESS_TYPE_BLOCK;
        if (!block && cap->mount && cap->mount->fs_type && *cap->mount->fs_type &&
            strcmp(cap->mount->fs_type, "ext4") && strcmp(cap->mount->fs_type, "xfs"))
                return gantry_error_set(err, EINVAL, "%s.mount.fs_type: %.32s is not supported (ext4 or xfs)",
                                        field, cap->mount->fs_type);
        switch (cap->access_mode->mode) {
        case CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__SINGLE_NODE_WRITER:
        case CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__SINGLE_NODE_READER_ONLY:
        case CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__SINGLE_NODE_SINGLE_WRITER:
        case CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__SINGLE_NODE_MULTI_WRITER:
                return 0;
        case CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__MULTI_NODE_READER_ONLY:
        case CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__MULTI_NODE_SINGLE_WRITER:
        case CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__MULTI_NODE_MULTI_WRITER:
                if (!multi_node)
                        return gantry_error_set(err, EINVAL,
                                                "%s.access_mode: %s volumes attach to one node at a "
                                                "time (SINGLE_NODE_* modes only)",
                                                field, tier);
                if (block || cap->access_mode->mode ==
                                     CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__MULTI_NODE_READER_ONLY)
                        return 0;
                return gantry_error_set(err, EINVAL,
                                        "%s.access_mode: multi-node writers are refused for "
                                        "filesystem volumes (a local filesystem on many writers "
                                        "corrupts); use MULTI_NODE_READER_ONLY or raw block",
                                        field);
        default:
                return gantry_error_set(err, EINVAL, "%s.access_mode.mode: unknown mode %d", field,
                                        (int)cap->access_mode->mode);
        }
}
