"""Requests and config for checkpoint-tier tests (shared by the host tests
and the VM test)."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "conformance"))
from csi_client import csi_pb2  # noqa: E402

LEAF = "network.topology.nvidia.com/leaf"


def write_config(path, targets):
    """targets: list of (id, url, token_file, [(traddr, trsvcid), ...], leaf[, ca_file])."""
    cfg = {"targets": []}
    for tid, url, tok, addrs, leaf, *ca in targets:
        t = {"id": tid, "url": url,
             "addresses": [{"transport": "tcp", "traddr": a, "trsvcid": s} for a, s in addrs]}
        if ca and ca[0]:
            t["caFile"] = ca[0]
        if tok:
            t["tokenFile"] = tok
        if leaf:
            t["leaf"] = leaf
        cfg["targets"].append(t)
    with open(path, "w") as f:
        json.dump(cfg, f)
    return path


def mount_cap(fs="ext4", mode=csi_pb2.VolumeCapability.AccessMode.SINGLE_NODE_WRITER):
    cap = csi_pb2.VolumeCapability()
    cap.mount.fs_type = fs
    cap.access_mode.mode = mode
    return cap


def create_req(name, size=16 << 20, leaf=None, **params):
    req = csi_pb2.CreateVolumeRequest(name=name)
    req.capacity_range.required_bytes = size
    req.volume_capabilities.append(mount_cap())
    req.parameters["tier"] = "checkpoint"
    for k, v in params.items():
        req.parameters[k] = v
    if leaf:
        top = req.accessibility_requirements.preferred.add()
        top.segments[LEAF] = leaf
    return req


def publish_req(volume_id, node_id):
    req = csi_pb2.ControllerPublishVolumeRequest(volume_id=volume_id, node_id=node_id)
    req.volume_capability.CopyFrom(mount_cap())
    return req
