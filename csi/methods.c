/*
 * The table of every CSI v1 method: its gRPC path, its request and response
 * message types, and the handler that serves it (NULL until a service
 * registers one, which makes the server answer UNIMPLEMENTED).
 *
 * Every method is registered with the gRPC server before it starts, so a CO
 * that calls a method this build does not serve gets UNIMPLEMENTED, never a
 * transport error.
 */
#include <errno.h>
#include <string.h>

#include "csi.pb-c.h"
#include "csi_internal.h"

#define M(svc, svcname, Name, lower)                                                   \
        { "/csi.v1." svcname "/" #Name, #Name, svc, &csi__v1__##lower##_request__descriptor, \
          &csi__v1__##lower##_response__descriptor, false, NULL }
#define STREAM(svc, svcname, Name, lower)                                              \
        { "/csi.v1." svcname "/" #Name, #Name, svc, &csi__v1__##lower##_request__descriptor, \
          &csi__v1__##lower##_response__descriptor, true, NULL }
#define ID(Name, lower) M(GANTRY_CSI_IDENTITY, "Identity", Name, lower)
#define CTRL(Name, lower) M(GANTRY_CSI_CONTROLLER, "Controller", Name, lower)
#define GRP(Name, lower) M(GANTRY_CSI_GROUP_CONTROLLER, "GroupController", Name, lower)
#define NODE(Name, lower) M(GANTRY_CSI_NODE, "Node", Name, lower)

static struct gantry_csi_method methods[] = {
        ID(GetPluginInfo, get_plugin_info),
        ID(GetPluginCapabilities, get_plugin_capabilities),
        ID(Probe, probe),

        CTRL(CreateVolume, create_volume),
        CTRL(DeleteVolume, delete_volume),
        CTRL(ControllerPublishVolume, controller_publish_volume),
        CTRL(ControllerUnpublishVolume, controller_unpublish_volume),
        CTRL(ValidateVolumeCapabilities, validate_volume_capabilities),
        CTRL(ListVolumes, list_volumes),
        CTRL(GetCapacity, get_capacity),
        CTRL(ControllerGetCapabilities, controller_get_capabilities),
        CTRL(CreateSnapshot, create_snapshot),
        CTRL(DeleteSnapshot, delete_snapshot),
        CTRL(ListSnapshots, list_snapshots),
        CTRL(ControllerExpandVolume, controller_expand_volume),
        CTRL(ControllerGetVolume, controller_get_volume),
        CTRL(ControllerModifyVolume, controller_modify_volume),

        GRP(GroupControllerGetCapabilities, group_controller_get_capabilities),
        GRP(CreateVolumeGroupSnapshot, create_volume_group_snapshot),
        GRP(DeleteVolumeGroupSnapshot, delete_volume_group_snapshot),
        GRP(GetVolumeGroupSnapshot, get_volume_group_snapshot),

        STREAM(GANTRY_CSI_SNAPSHOT_METADATA, "SnapshotMetadata", GetMetadataAllocated,
               get_metadata_allocated),
        STREAM(GANTRY_CSI_SNAPSHOT_METADATA, "SnapshotMetadata", GetMetadataDelta,
               get_metadata_delta),

        NODE(NodeStageVolume, node_stage_volume),
        NODE(NodeUnstageVolume, node_unstage_volume),
        NODE(NodePublishVolume, node_publish_volume),
        NODE(NodeUnpublishVolume, node_unpublish_volume),
        NODE(NodeGetVolumeStats, node_get_volume_stats),
        NODE(NodeExpandVolume, node_expand_volume),
        NODE(NodeGetCapabilities, node_get_capabilities),
        NODE(NodeGetInfo, node_get_info),
};

struct gantry_csi_method *gantry_csi_methods(size_t *ret_n)
{
        *ret_n = sizeof(methods) / sizeof(methods[0]);
        return methods;
}

struct gantry_csi_method *gantry_csi_method_find(const char *full_name)
{
        for (size_t i = 0; full_name && i < sizeof(methods) / sizeof(methods[0]); i++)
                if (strcmp(methods[i].full_name, full_name) == 0)
                        return &methods[i];
        return NULL;
}

int gantry_csi_register(const char *full_name, gantry_csi_handler handler)
{
        struct gantry_csi_method *m = gantry_csi_method_find(full_name);

        if (!m || m->server_streaming)
                return -ENOENT;
        m->handler = handler;
        return 0;
}
