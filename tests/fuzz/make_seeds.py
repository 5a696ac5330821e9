"""Writes the seed corpus for fuzz_csi_request: one file per request, its
first byte the method's index in csi/methods.c, then the protobuf bytes.
Run once after changing the method table; the seeds are committed."""
import os
import sys

sys.path.insert(0, os.path.join(sys.argv[1], "python"))
import csi_pb2 as pb  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "csi_request")
# indices into the method table in csi/methods.c
INDEX = {"GetPluginInfo": 0, "Probe": 2, "CreateVolume": 3, "DeleteVolume": 4,
         "ControllerPublishVolume": 5, "ValidateVolumeCapabilities": 7, "ListVolumes": 8,
         "CreateSnapshot": 11, "ControllerExpandVolume": 14, "NodeStageVolume": 23,
         "NodePublishVolume": 25, "NodeGetVolumeStats": 27, "NodeExpandVolume": 28}

mount = pb.VolumeCapability(
    mount=pb.VolumeCapability.MountVolume(fs_type="ext4", mount_flags=["noatime"]),
    access_mode=pb.VolumeCapability.AccessMode(mode=pb.VolumeCapability.AccessMode.MULTI_NODE_READER_ONLY))
block = pb.VolumeCapability(
    block=pb.VolumeCapability.BlockVolume(),
    access_mode=pb.VolumeCapability.AccessMode(mode=pb.VolumeCapability.AccessMode.SINGLE_NODE_WRITER))
vid = "0001-0004-nvme-0000000000000002-5f1c1a52-8a2e-4a7b-9d3c-0c1e2f3a4b5c"
seeds = {
    "GetPluginInfo": pb.GetPluginInfoRequest(),
    "Probe": pb.ProbeRequest(),
    "CreateVolume": pb.CreateVolumeRequest(
        name="pvc-1", capacity_range=pb.CapacityRange(required_bytes=1 << 30),
        volume_capabilities=[mount, block],
        parameters={"clusterID": "nvme", "pool": "rbd", "dataPool": "ecdata", "tier": "dataset"},
        secrets={"userID": "gantry", "userKey": "AQ=="},
        volume_content_source=pb.VolumeContentSource(
            snapshot=pb.VolumeContentSource.SnapshotSource(snapshot_id=vid)),
        accessibility_requirements=pb.TopologyRequirement(
            requisite=[pb.Topology(segments={"network.topology.nvidia.com/leaf": "leaf-1"})])),
    "DeleteVolume": pb.DeleteVolumeRequest(volume_id=vid),
    "ControllerPublishVolume": pb.ControllerPublishVolumeRequest(
        volume_id=vid, node_id="gpu-1", volume_capability=block, readonly=True),
    "ValidateVolumeCapabilities": pb.ValidateVolumeCapabilitiesRequest(
        volume_id=vid, volume_capabilities=[mount]),
    "ListVolumes": pb.ListVolumesRequest(max_entries=10, starting_token="5"),
    "CreateSnapshot": pb.CreateSnapshotRequest(source_volume_id=vid, name="snap-1"),
    "ControllerExpandVolume": pb.ControllerExpandVolumeRequest(
        volume_id=vid, capacity_range=pb.CapacityRange(required_bytes=2 << 30)),
    "NodeStageVolume": pb.NodeStageVolumeRequest(
        volume_id=vid, staging_target_path="/var/lib/kubelet/plugins/x/globalmount",
        volume_capability=mount, secrets={"userKey": "AQ=="},
        volume_context={"monitors": "127.0.0.1:3300", "pool": "rbd", "imageName": "csi-vol-1"}),
    "NodePublishVolume": pb.NodePublishVolumeRequest(
        volume_id=vid, staging_target_path="/s", target_path="/t", volume_capability=mount,
        readonly=True),
    "NodeGetVolumeStats": pb.NodeGetVolumeStatsRequest(volume_id=vid, volume_path="/t"),
    "NodeExpandVolume": pb.NodeExpandVolumeRequest(volume_id=vid, volume_path="/t"),
}
os.makedirs(OUT, exist_ok=True)
for name, msg in seeds.items():
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(bytes([INDEX[name]]) + msg.SerializeToString())
print("wrote %d seeds to %s" % (len(seeds), OUT))
