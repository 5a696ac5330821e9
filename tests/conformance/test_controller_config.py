"""What the operator's driver config lacks or holds wrong is answered
FAILED_PRECONDITION naming the config field: never INVALID_ARGUMENT or
PERMISSION_DENIED, which blame the CSI caller's request or rights. Driven
over the plugin's socket by python3-grpcio; nothing here reaches Ceph (the
key file is read before any connection)."""
import json
import os
import shutil
import tempfile
import unittest

import grpc

from csi_client import Plugin, csi_pb2


class ClusterKeyFileTest(unittest.TestCase):
    def test_unusable_key_file_is_a_failed_precondition(self):
        d = tempfile.mkdtemp(prefix="gantry-controller-config-")
        self.addCleanup(shutil.rmtree, d, True)
        key = os.path.join(d, "ceph.key")
        config = os.path.join(d, "gantry.json")
        with open(config, "w") as f:
            json.dump({"clusters": [{"clusterID": "c1", "monitors": ["127.0.0.1:1"], "userID": "gantry",
                                     "keyFile": key}]}, f)
        plugin = Plugin(mode="controller", node_id=None, config=config)
        self.addCleanup(plugin.cleanup)
        plugin.start()
        req = csi_pb2.CreateVolumeRequest(name="pvc-keyfile", parameters={"clusterID": "c1", "pool": "rbd"})
        req.capacity_range.required_bytes = 1 << 20
        cap = req.volume_capabilities.add()
        cap.mount.fs_type = "ext4"
        cap.access_mode.mode = csi_pb2.VolumeCapability.AccessMode.SINGLE_NODE_WRITER
        for case, content in (("missing", None), ("empty", ""), ("not a key", "hello\n")):
            with self.subTest(case=case):
                if content is not None:
                    with open(key, "w") as f:
                        f.write(content)
                with self.assertRaises(grpc.RpcError) as e:
                    plugin.call("CreateVolume", req)
                self.assertEqual(e.exception.code(), grpc.StatusCode.FAILED_PRECONDITION, e.exception.details())
                self.assertIn("clusters[c1].keyFile", e.exception.details())
        self.assertEqual(plugin.stop(), 0)


if __name__ == "__main__":
    unittest.main()
