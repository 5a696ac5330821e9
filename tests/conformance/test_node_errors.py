"""The codes the CSI spec asks of the Node calls that work from a path
(NodeGetVolumeStats, NodeExpandVolume), driven over the plugin's socket by
python3-grpcio: NOT_FOUND where no volume is at the path (including a path
that could never hold one, as csi-sanity's "some/path"), INVALID_ARGUMENT
only for an empty field. Runs on the host: nothing is mapped or mounted, and
the node plugin is told to load no kernel module."""
import json
import os
import shutil
import tempfile
import unittest

import grpc

from csi_client import Plugin, csi_pb2

CODE = grpc.StatusCode
VOL = "0001-0004-capa-0000000000000002-0b4e3c8e-2a43-4b8f-9b6e-8a1d6f0e7c11"


class NodePathErrorsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="gantry-node-errors-")
        cls.config = os.path.join(cls.dir, "gantry.json")
        with open(cls.config, "w") as f:
            json.dump({"node": {"kernelModules": []}}, f)
        cls.plugin = Plugin(mode="node", node_id="conf-node", config=cls.config).start()

    @classmethod
    def tearDownClass(cls):
        rc = cls.plugin.stop()
        cls.plugin.cleanup()
        os.remove(cls.config)
        os.rmdir(cls.dir)
        if rc != 0:
            raise AssertionError("plugin exited %s on SIGTERM" % rc)

    def code_of(self, method, **fields):
        req = getattr(csi_pb2, method + "Request")(**fields)
        with self.assertRaises(grpc.RpcError) as cm:
            self.plugin.call(method, req)
        return cm.exception.code(), cm.exception.details()

    def paths_without_volume(self):
        return ("some/path", "/nonexistent/gantry/volume", self.dir,
                os.path.join(self.config, "below-a-file"), "/a/../b")

    def test_stats_not_found_where_no_volume_is(self):
        for path in self.paths_without_volume():
            code, details = self.code_of("NodeGetVolumeStats", volume_id=VOL, volume_path=path)
            self.assertEqual(code, CODE.NOT_FOUND, "%s: %s" % (path, details))
            self.assertIn("volume_path", details)

    def test_expand_not_found_where_no_volume_is(self):
        mount = csi_pb2.VolumeCapability(
            mount=csi_pb2.VolumeCapability.MountVolume(fs_type="ext4"),
            access_mode=csi_pb2.VolumeCapability.AccessMode(mode=1))
        block = csi_pb2.VolumeCapability(
            block=csi_pb2.VolumeCapability.BlockVolume(),
            access_mode=csi_pb2.VolumeCapability.AccessMode(mode=1))
        for cap in (None, mount, block):
            for path in self.paths_without_volume():
                code, details = self.code_of("NodeExpandVolume", volume_id=VOL, volume_path=path,
                                             volume_capability=cap)
                self.assertEqual(code, CODE.NOT_FOUND, "%s: %s" % (path, details))
                self.assertIn("volume_path", details)
        code, details = self.code_of("NodeExpandVolume", volume_id=VOL, volume_path=self.dir,
                                     staging_target_path="relative/staging")
        self.assertEqual(code, CODE.NOT_FOUND, details)
        self.assertIn("staging_target_path", details)

    def test_empty_fields_are_invalid_argument(self):
        for method in ("NodeGetVolumeStats", "NodeExpandVolume"):
            code, details = self.code_of(method, volume_id=VOL, volume_path="")
            self.assertEqual(code, CODE.INVALID_ARGUMENT, details)
            self.assertIn("volume_path", details)
            code, details = self.code_of(method, volume_id="", volume_path=self.dir)
            self.assertEqual(code, CODE.INVALID_ARGUMENT, details)
            self.assertIn("volume_id", details)


if __name__ == "__main__":
    unittest.main()


class NodeStartTest(unittest.TestCase):
    """The node plugin makes its own state folder, parents too (0700), as a
    daemon run outside a DaemonSet finds no kubelet plugin folder."""

    def test_serves_with_a_state_dir_whose_parents_do_not_exist(self):
        d = tempfile.mkdtemp(prefix="gantry-node-start-")
        self.addCleanup(shutil.rmtree, d, True)
        config = os.path.join(d, "gantry.json")
        with open(config, "w") as f:
            json.dump({"node": {"kernelModules": []}}, f)
        state = os.path.join(d, "kubelet", "plugins", "csi.gantry.io", "qos")
        plugin = Plugin(mode="node", node_id="conf-node", config=config, extra=["--qos-state-dir", state])
        self.addCleanup(plugin.cleanup)
        plugin.start()
        self.assertEqual(plugin.call("NodeGetInfo", csi_pb2.NodeGetInfoRequest()).node_id, "conf-node")
        for folder in (os.path.join(d, "kubelet"), os.path.join(d, "kubelet", "plugins"), state):
            self.assertEqual(os.stat(folder).st_mode & 0o777, 0o700, folder)
        self.assertEqual(plugin.stop(), 0)
