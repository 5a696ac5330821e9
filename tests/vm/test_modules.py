"""The node plugin loads the kernel modules it needs (run inside the VM by
tests/vm/run.sh; CTest: vm_modules).

The guest starts with none of rbd, nvme-tcp, nvme-rdma loaded (guest-init.sh
loads only virtio, 9p, overlay and configfs), as on a fresh GPU node. First
the plugin runs in a mount namespace whose /lib/modules is empty -- a node
DaemonSet without the /lib/modules mount: Probe is not ready and names the
module, a stage answers FAILED_PRECONDITION naming rbd, not NOT_FOUND for the
volume. Then a plugin with the host's /lib/modules loads all three at start.
Test names sort in the order they must run (the first needs rbd unloaded).
"""
import base64
import os
import shutil
import sys
import tempfile
import time
import unittest

import grpc

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "conformance"))
from csi_client import Plugin, csi_pb2  # noqa: E402

MODULES = ("rbd", "nvme_tcp", "nvme_rdma")
# a well-formed cephx secret (type AES, 16 bytes); no cluster is ever asked
CEPHX_KEY = base64.b64encode(b"\x01\x00" + bytes(8) + b"\x10\x00" + os.urandom(16)).decode()
VOL = "0001-0004-capa-0000000000000002-0b4e3c8e-2a43-4b8f-9b6e-8a1d6f0e7c11"


def loaded(name):
    return os.path.exists(os.path.join("/sys/module", name))


def probe_log_reason(plugin):
    lines = [ln for ln in plugin.read_log().splitlines() if "csi.probe_not_ready" in ln]
    return lines[-1] if lines else ""


class ModulesTest(unittest.TestCase):
    def plugin(self, hide_modules=False):
        workdir = tempfile.mkdtemp(prefix="gantry-modules-vm-")
        self.addCleanup(shutil.rmtree, workdir, ignore_errors=True)
        p = Plugin(mode="node", node_id="vm-node", workdir=workdir, ready_timeout=60.0)
        if hide_modules:
            # an empty /lib/modules in a private mount namespace: what the node
            # plugin sees when its DaemonSet does not mount the host's
            p.args = ["unshare", "-m", "sh", "-c",
                      'mount -t tmpfs tmpfs /lib/modules && exec "$@"', "sh"] + p.args
        self.addCleanup(p.stop)
        return p.start()

    def test_1_missing_module_is_failed_precondition(self):
        for m in MODULES:
            self.assertFalse(loaded(m), "%s is loaded before the test: nothing to prove" % m)
        p = self.plugin(hide_modules=True)
        self.assertFalse(p.call("Probe").ready.value)
        self.assertIn("kernel module rbd", probe_log_reason(p))
        cap = csi_pb2.VolumeCapability(
            mount=csi_pb2.VolumeCapability.MountVolume(fs_type="ext4"),
            access_mode=csi_pb2.VolumeCapability.AccessMode(mode=1))
        req = csi_pb2.NodeStageVolumeRequest(
            volume_id=VOL, staging_target_path=os.path.join(p.workdir, "staging"),
            volume_capability=cap,
            volume_context={"tier": "dataset", "clusterID": "capa", "pool": "rbd",
                            "imageName": "gantry-vol-x", "monitors": "10.0.0.1:3300"},
            secrets={"userID": "gantry", "userKey": CEPHX_KEY})
        with self.assertRaises(grpc.RpcError) as cm:
            p.call("NodeStageVolume", req, timeout=60)
        self.assertEqual(cm.exception.code(), grpc.StatusCode.FAILED_PRECONDITION,
                         cm.exception.details())
        self.assertIn("kernel module rbd", cm.exception.details())
        self.assertFalse(loaded("rbd"))

    def test_2_node_plugin_loads_its_modules_at_start(self):
        for m in MODULES:
            self.assertFalse(loaded(m), "%s is loaded before the plugin starts" % m)
        p = self.plugin()
        deadline = time.monotonic() + 60
        while not p.call("Probe").ready.value:
            self.assertLess(time.monotonic(), deadline, probe_log_reason(p))
            time.sleep(0.2)
        for m in MODULES:
            self.assertTrue(loaded(m), m)
        self.assertTrue(os.path.exists("/sys/bus/rbd/add_single_major"))
        log = p.read_log()
        for m in ("rbd", "nvme-tcp", "nvme-rdma"):
            self.assertIn("module=%s" % m, log)


if __name__ == "__main__":
    unittest.main()
