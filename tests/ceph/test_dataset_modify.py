"""ControllerModifyVolume of dataset volumes against the fixture's real
Ceph: the bandwidth parameters land in the volume's journal record (one
field, read back with python3-rados), the same call again answers OK and
writes nothing, a new class replaces the old one, a refused key or value
leaves the record as it was, and a deleted volume is NOT_FOUND."""
import json
import unittest

import grpc

import ceph_env as env
from ceph_env import Plugin, csi_pb2

Code = grpc.StatusCode


class DatasetModifyTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.plugin = Plugin(mode="controller", node_id=None, config=env.CONFIG).start()

    @classmethod
    def tearDownClass(cls):
        log = cls.plugin.read_log()
        rc = cls.plugin.stop()
        cls.plugin.cleanup()
        if rc != 0:
            raise AssertionError("plugin exited %s:\n%s" % (rc, log[-4000:]))
        if env.key() in log:
            raise AssertionError("a secret reached the log")

    def setUp(self):
        name = "modify-%s-%s" % (self._testMethodName[5:20].replace("_", "-"), env.UNIQUE)
        self.vol = self.plugin.call("CreateVolume", env.create_req(name, size=16 << 20)).volume
        self.uuid = env.uuid_of(self.vol.volume_id)

    def tearDown(self):
        env.retry(lambda: self.plugin.call("DeleteVolume", env.delete_req(self.vol.volume_id)))

    def modify(self, params):
        return self.plugin.call("ControllerModifyVolume", csi_pb2.ControllerModifyVolumeRequest(
            volume_id=self.vol.volume_id, mutable_parameters=params, secrets=env.secrets()))

    def recorded(self):
        bw = env.record(self.uuid).get("bw")
        return json.loads(bw) if bw is not None else None

    def modified_lines(self):
        return sum(1 for line in self.plugin.read_log().splitlines()
                   if "dataset.volume_modified" in line and self.uuid in line)

    def test_modify_records_and_repeats_without_a_write(self):
        self.assertIsNone(self.recorded())
        fast = {"gantry.io/read-gbps-per-gpu": "6", "bandwidthPolicy": "burst",
                "bandwidthBurstFactor": "1.5", "bandwidthReadIOPS": "20000"}
        self.modify(fast)
        self.assertEqual(self.recorded(), fast)
        self.assertEqual(self.modified_lines(), 1)
        self.modify(fast)  # the same call again: OK, nothing written
        self.assertEqual(self.recorded(), fast)
        self.assertEqual(self.modified_lines(), 1)
        # the rest of the record is untouched
        rec = env.record(self.uuid)
        self.assertEqual(rec["ready"], "1")
        self.assertEqual(rec["image"], "gantry-vol-" + self.uuid)
        # another class replaces it whole
        slow = {"gantry.io/read-gbps-per-gpu": "2"}
        self.modify(slow)
        self.assertEqual(self.recorded(), slow)
        self.assertEqual(self.modified_lines(), 2)

    def test_refused_keys_and_values_leave_the_record(self):
        self.modify({"gantry.io/default-gbps": "1"})
        for params, word in (({"gantry.io/default-gbps": "3", "pool": "other"}, "mutable_parameters.pool"),
                             ({"bandwidthPolicy": "fast"}, "mutable_parameters.bandwidthPolicy")):
            with self.assertRaises(grpc.RpcError) as cm:
                self.modify(params)
            self.assertEqual(cm.exception.code(), Code.INVALID_ARGUMENT)
            self.assertIn(word, cm.exception.details())
        self.assertEqual(self.recorded(), {"gantry.io/default-gbps": "1"})

    def test_deleted_volume_is_not_found(self):
        self.plugin.call("DeleteVolume", env.delete_req(self.vol.volume_id))
        with self.assertRaises(grpc.RpcError) as cm:
            self.modify({"gantry.io/default-gbps": "1"})
        self.assertEqual(cm.exception.code(), Code.NOT_FOUND, cm.exception.details())
        self.assertEqual(env.record(self.uuid), {})


if __name__ == "__main__":
    unittest.main()
