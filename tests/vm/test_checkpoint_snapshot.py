"""Checkpoint snapshots end to end on a real kernel (run inside the VM by
tests/vm/run.sh with checkpoint_cluster.sh as --setup; CTest:
vm_checkpoint_snapshot).

In the guest: two gantry-targets on the kernel's nvmet (one configfs, their
own lvstores and listeners), both draining into the Ceph cluster the host
runs in the test's namespace, and gantry-csi --mode all driven by
python3-grpcio as the sidecars and kubelet would. A known pattern is written
through a staged checkpoint volume (NVMe/TCP, ext4), the volume unstaged and
snapshotted; the snapshotter's loop polls CreateSnapshot until ready_to_use
while gantry-target is killed with kill -9 mid-drain and restarted; the
snapshot is restored to a new checkpoint volume on the other target and to a
dataset volume (an RBD clone, mapped with krbd), and the pattern is read back
from both. A snapshot of a published volume follows the documented rule
(tmpfs has no reflinks: FAILED_PRECONDITION).
"""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import unittest

import grpc

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "gantry-target"))
sys.path.insert(0, os.path.join(HERE, "..", "conformance"))
from ckpt_helpers import create_req, publish_req, write_config  # noqa: E402

# The VM's default kernel (bookworm's 6.1) has no DH-HMAC-CHAP: these volumes
# keep today's behaviour; tests/vm/test_dhchap.py runs on the backports kernel.
_create_req = create_req


def create_req(*args, **kw):  # noqa: F811
    kw.setdefault("auth", "none")
    return _create_req(*args, **kw)

from csi_client import Plugin, csi_pb2  # noqa: E402
from targetproc import Target  # noqa: E402

NVMET = "/sys/kernel/config/nvmet"
WORK = "/tmp/gantry-checkpoint-snapshot-vm"
NODE = "vm-node"
MiB = 1 << 20
SIZE = 64 * MiB
MODE = csi_pb2.VolumeCapability.AccessMode


def sh(*args, check=True):
    return subprocess.run(args, capture_output=True, text=True, check=check, timeout=120)


def mounted(path):
    with open("/proc/self/mountinfo") as f:
        return any(line.split()[4] == path for line in f)


class CheckpointSnapshotVmTest(unittest.TestCase):
    """One checkpoint's life, in order (the tests share it)."""

    @classmethod
    def setUpClass(cls):
        sh("modprobe", "-a", "nvmet", "nvmet-tcp", "nvme-tcp", "nvme-fabrics", "rbd")
        shutil.rmtree(WORK, ignore_errors=True)
        os.makedirs(os.path.join(WORK, "csi"))
        with open("/vm/env") as f:
            monitors = dict(line.strip().split("=", 1) for line in f if "=" in line)["MONITORS"]
        with open("/vm/gantry.key") as f:
            cls.key = f.read().strip()
        durable = {"clusterID": "perf", "monitors": [monitors], "userID": "gantry", "keyFile": "/vm/gantry.key",
                   "pool": "rbd", "dataPool": "ecdata", "bandwidthMBps": 8, "inFlight": 4}
        cls.a = Target(workdir=os.path.join(WORK, "a"), configfs=NVMET, port=8009, durable=durable).start()
        cls.b = Target(workdir=os.path.join(WORK, "b"), configfs=NVMET, port=8010, durable=durable).start()
        tok = os.path.join(WORK, "token")
        with open(tok, "w") as f:
            f.write(cls.a.token)
        cfg = write_config(os.path.join(WORK, "gantry.json"),
                           [("tgt-a", cls.a.url, tok, [("127.0.0.1", "4420")], "leaf-a"),
                            ("tgt-b", cls.b.url, tok, [("127.0.0.1", "4421")], "leaf-b")])
        with open(cfg) as f:
            doc = json.load(f)
        doc["clusters"] = [{"clusterID": "perf", "monitors": [monitors], "userID": "gantry",
                            "keyFile": "/vm/gantry.key", "rbdTimeoutSeconds": 10}]
        with open(cfg, "w") as f:
            json.dump(doc, f)
        cls.plugin = Plugin(mode="all", node_id=NODE, config=cfg, workdir=os.path.join(WORK, "csi"),
                            ready_timeout=60).start()
        cls.stage = os.path.join(WORK, "stage")
        os.makedirs(cls.stage)

    @classmethod
    def tearDownClass(cls):
        for path in (cls.stage, os.path.join(WORK, "stage-ds")):
            if mounted(path):
                sh("umount", path, check=False)
        rc = cls.plugin.stop()
        cls.a.stop()
        cls.b.stop()
        if rc != 0:
            raise RuntimeError("gantry-csi exited %s:\n%s" % (rc, cls.plugin.read_log()[-4000:]))

    def call(self, method, req, timeout=120):
        return self.plugin.call(method, req, timeout=timeout)

    def until_ok(self, method, req, timeout=300):
        """The provisioner's / snapshotter's retry loop: again while ABORTED (bounded)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                return self.call(method, req)
            except grpc.RpcError as e:
                if e.code() != grpc.StatusCode.ABORTED or time.monotonic() > deadline:
                    raise
                time.sleep(0.5)

    def stage_ckpt(self, vol):
        host = self.call("ControllerPublishVolume", publish_req(vol.volume_id, NODE)).publish_context["hostNQN"]
        req = csi_pb2.NodeStageVolumeRequest(volume_id=vol.volume_id, staging_target_path=self.stage)
        req.publish_context["hostNQN"] = host
        req.volume_capability.CopyFrom(publish_req(vol.volume_id, NODE).volume_capability)
        for k, v in vol.volume_context.items():
            req.volume_context[k] = v
        self.call("NodeStageVolume", req)
        self.assertTrue(mounted(self.stage))

    def unstage_ckpt(self, vol):
        self.call("NodeUnstageVolume", csi_pb2.NodeUnstageVolumeRequest(volume_id=vol.volume_id,
                                                                        staging_target_path=self.stage))
        self.call("ControllerUnpublishVolume", csi_pb2.ControllerUnpublishVolumeRequest(volume_id=vol.volume_id,
                                                                                        node_id=NODE))
        self.assertFalse(mounted(self.stage))

    def persisted(self):
        """Bytes of the drain target A has saved in its state file."""
        with open(os.path.join(self.a.dir, "state.json")) as f:
            drains = [b["drain"] for b in json.load(f)["bdevs"].values() if "drain" in b]
        return drains[0].get("bytes_done", 0) if drains else 0

    def read_pattern(self, root):
        with open(os.path.join(root, "ckpt-0001.bin"), "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()

    def test_1_write_snapshot_refused_while_published(self):
        cls = self.__class__
        cls.vol = self.call("CreateVolume", create_req("pvc-vm-snap", size=SIZE, leaf="leaf-a")).volume
        self.assertEqual(cls.vol.volume_context["targetID"], "tgt-a")
        self.stage_ckpt(cls.vol)
        data = os.urandom(24 * MiB)
        with open(os.path.join(self.stage, "ckpt-0001.bin"), "wb") as f:
            f.write(data)
            os.fsync(f.fileno())
        cls.digest = hashlib.sha256(data).hexdigest()
        # staged and published: a byte copy of a namespace a host writes is no point in time
        with self.assertRaises(grpc.RpcError) as e:
            self.call("CreateSnapshot", csi_pb2.CreateSnapshotRequest(name="snap-busy",
                                                                      source_volume_id=cls.vol.volume_id))
        self.assertEqual(e.exception.code(), grpc.StatusCode.FAILED_PRECONDITION, e.exception.details())
        self.assertIn("reflink", e.exception.details())
        self.unstage_ckpt(cls.vol)

    def test_2_snapshot_drains_through_a_kill_9(self):
        cls = self.__class__
        req = csi_pb2.CreateSnapshotRequest(name="snap-vm", source_volume_id=cls.vol.volume_id)
        snap = self.call("CreateSnapshot", req).snapshot
        self.assertFalse(snap.ready_to_use)
        name = "gantry/snap-" + snap.snapshot_id[-36:]
        deadline = time.monotonic() + 120
        while self.persisted() == 0:  # until a position is in the state file
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.2)
        self.assertLess(self.persisted(), SIZE)
        self.a.kill9()
        self.a.start()
        deadline = time.monotonic() + 300
        while not snap.ready_to_use:
            self.assertLess(time.monotonic(), deadline, self.a.call("bdev_lvol_check_drain", snapshot_name=name))
            time.sleep(0.5)
            snap = self.call("CreateSnapshot", req).snapshot
        cls.snap = snap
        with open(self.a.log) as f:
            starts = [l for l in f if "event=target.drain_started" in l]
        self.assertIn("resume=no", starts[0])
        self.assertNotIn("resume=no", starts[-1])

    def test_3_restore_on_the_other_target(self):
        req = create_req("pvc-vm-restored", size=0, leaf="leaf-b")
        req.volume_content_source.snapshot.snapshot_id = self.snap.snapshot_id
        vol = self.until_ok("CreateVolume", req).volume
        self.assertEqual(vol.volume_context["targetID"], "tgt-b")
        self.stage_ckpt(vol)
        self.assertEqual(self.read_pattern(self.stage), self.digest)
        self.unstage_ckpt(vol)

    def test_4_restore_as_a_dataset_volume(self):
        req = csi_pb2.CreateVolumeRequest(name="pvc-vm-dataset")
        cap = csi_pb2.VolumeCapability(mount=csi_pb2.VolumeCapability.MountVolume(fs_type="ext4"),
                                       access_mode=MODE(mode=MODE.MULTI_NODE_READER_ONLY))
        req.volume_capabilities.append(cap)
        for k, v in {"clusterID": "perf", "pool": "rbd", "dataPool": "ecdata"}.items():
            req.parameters[k] = v
        req.volume_content_source.snapshot.snapshot_id = self.snap.snapshot_id
        vol = self.call("CreateVolume", req).volume
        path = os.path.join(WORK, "stage-ds")
        os.makedirs(path, exist_ok=True)
        stage = csi_pb2.NodeStageVolumeRequest(volume_id=vol.volume_id, staging_target_path=path,
                                               volume_capability=cap)
        for k, v in vol.volume_context.items():
            stage.volume_context[k] = v
        stage.secrets["userID"] = "gantry"
        stage.secrets["userKey"] = self.key
        self.call("NodeStageVolume", stage)
        try:
            self.assertEqual(self.read_pattern(path), self.digest)
        finally:
            self.call("NodeUnstageVolume", csi_pb2.NodeUnstageVolumeRequest(volume_id=vol.volume_id,
                                                                            staging_target_path=path))


if __name__ == "__main__":
    unittest.main()
