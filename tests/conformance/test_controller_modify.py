"""ControllerModifyVolume's checks over gantry-csi's Unix socket, before any
backend is touched (so they run without Ceph or a target): MODIFY_VOLUME is
advertised; a key that may not change on a live volume, or a bad value, is
INVALID_ARGUMENT naming it, also in CreateVolume's mutable_parameters; a
volume ID of no tier is NOT_FOUND. What a modify records on a real dataset
volume is tests/ceph/test_dataset_modify.py's."""
import os
import unittest

import grpc
import yaml

from csi_client import Plugin, csi_pb2

Code = grpc.StatusCode
DATASET_ID = "0001-0004-perf-0000000000000001-0b6f1a52-8a4b-4f7c-9d3e-2a1b3c4d5e6f"


class ModifyTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.plugin = Plugin(mode="controller", node_id=None).start()

    @classmethod
    def tearDownClass(cls):
        rc = cls.plugin.stop()
        cls.plugin.cleanup()
        if rc != 0:
            raise AssertionError("plugin exited %s" % rc)

    def modify(self, params, volume_id=DATASET_ID):
        return self.plugin.call("ControllerModifyVolume", csi_pb2.ControllerModifyVolumeRequest(
            volume_id=volume_id, mutable_parameters=params))

    def assertCode(self, code, fn, *words):
        with self.assertRaises(grpc.RpcError) as cm:
            fn()
        self.assertEqual(cm.exception.code(), code, cm.exception.details())
        for w in words:
            self.assertIn(w, cm.exception.details())

    def test_capability_advertised(self):
        caps = {c.rpc.type for c in self.plugin.call("ControllerGetCapabilities").capabilities}
        self.assertIn(csi_pb2.ControllerServiceCapability.RPC.MODIFY_VOLUME, caps)

    def test_a_key_not_mutable_is_refused_by_name(self):
        for key in ("pool", "dataPool", "imageFeatures", "tier", "gantry.io/read-gbps"):
            self.assertCode(Code.INVALID_ARGUMENT,
                            lambda: self.modify({"gantry.io/read-gbps-per-gpu": "4", key: "x"}),
                            "mutable_parameters." + key, "cannot be changed on a live volume")

    def test_a_bad_value_is_refused_by_name(self):
        for key, value in (("gantry.io/read-gbps-per-gpu", "-1"), ("gantry.io/default-gbps", "fast"),
                           ("bandwidthPolicy", "throttle"), ("bandwidthReadIOPS", "0")):
            self.assertCode(Code.INVALID_ARGUMENT, lambda: self.modify({key: value}),
                            "mutable_parameters." + key)
        # a factor only with the burst policy, in the same class
        self.assertCode(Code.INVALID_ARGUMENT, lambda: self.modify({"bandwidthBurstFactor": "2"}),
                        "mutable_parameters.bandwidthBurstFactor", "only with bandwidthPolicy burst")

    def test_mutable_parameters_required(self):
        self.assertCode(Code.INVALID_ARGUMENT, lambda: self.modify({}), "mutable_parameters")

    def test_unknown_volume_is_not_found(self):
        # valid parameters: the volume ID is what is wrong
        self.assertCode(Code.NOT_FOUND, lambda: self.modify({"gantry.io/read-gbps-per-gpu": "4"},
                                                              volume_id="nope"))

    def test_the_sample_classes_pass_the_check(self):
        """manifests/examples' VolumeAttributesClasses: every key mutable, every
        value good (what is left wrong is the volume ID: NOT_FOUND)."""
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "manifests",
                            "examples", "volume-attributes-classes.yaml")
        with open(path) as f:
            classes = [d for d in yaml.safe_load_all(f) if d]
        self.assertEqual(len(classes), 2)
        for vac in classes:
            with self.subTest(vac=vac["metadata"]["name"]):
                self.assertEqual(vac["driverName"], "csi.gantry.io")
                self.assertCode(Code.NOT_FOUND, lambda: self.modify(vac["parameters"],
                                                                      volume_id="nope"))

    def test_create_checks_mutable_parameters(self):
        req = csi_pb2.CreateVolumeRequest(
            name="modify-create-bad", parameters={"clusterID": "perf", "pool": "rbd"},
            mutable_parameters={"objectSize": "4194304"},
            volume_capabilities=[csi_pb2.VolumeCapability(
                mount=csi_pb2.VolumeCapability.MountVolume(fs_type="ext4"),
                access_mode=csi_pb2.VolumeCapability.AccessMode(
                    mode=csi_pb2.VolumeCapability.AccessMode.SINGLE_NODE_WRITER))])
        self.assertCode(Code.INVALID_ARGUMENT, lambda: self.plugin.call("CreateVolume", req),
                        "mutable_parameters.objectSize")


if __name__ == "__main__":
    unittest.main()
