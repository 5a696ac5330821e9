"""ControllerModifyVolume of dataset volumes against the fixture's real
Ceph: the bandwidth parameters land in the volume's journal record (one
field, read back with python3-rados), the same call again answers OK and
writes nothing, a new class replaces the old one, a refused key or value
leaves the record as it was, and a deleted volume is NOT_FOUND.

With --scheduler-url (DatasetModifyAdmissionTest), a change that may raise a
rate is first asked of a real gantry-scheduler (loaded from a --state file:
a pod with 4 GPUs reading the volume at 10 Gbps per GPU across leaf-1's
100 Gbps uplink): one it admits is recorded and charged, one it refuses is
RESOURCE_EXHAUSTED naming the uplink and leaves the record as it was; a
decrease is recorded without asking; the scheduler gone, an increase is
UNAVAILABLE and nothing is recorded."""
import json
import os
import shutil
import sys
import tempfile
import unittest

import grpc

import ceph_env as env
from ceph_env import Plugin, csi_pb2

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scheduler"))
from sched_harness import Scheduler  # noqa: E402

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


def admission_state(volume_id):
    """gantry-scheduler's --state: gpu-1 on leaf-1 (uplink 100 Gbps), cluster
    perf on leaf-2, pod p1 (4 GPUs) bound on gpu-1 reading @volume_id at 10
    Gbps per GPU: 40 Gbps on the uplink."""
    leaf = "network.topology.nvidia.com/leaf"
    topology = {"leaves": [{"name": "leaf-1", "spine": "spine-1", "uplinkGbps": 100},
                           {"name": "leaf-2", "spine": "spine-1", "uplinkGbps": 1000}],
                "backends": [{"name": "perf", "kind": "ceph", "gbps": 1000, "leaves": ["leaf-2"]}]}
    state = {
        "storageClasses": [{"metadata": {"name": "data"}, "provisioner": "csi.gantry.io",
                            "parameters": {"tier": "dataset", "clusterID": "perf",
                                           "gantry.io/read-gbps-per-gpu": "10"}}],
        "persistentVolumes": [{"metadata": {"name": "pv-1"},
                               "spec": {"storageClassName": "data",
                                        "csi": {"driver": "csi.gantry.io", "volumeHandle": volume_id,
                                                "volumeAttributes": {"tier": "dataset",
                                                                     "clusterID": "perf"}}}}],
        "persistentVolumeClaims": [{"metadata": {"name": "c1", "namespace": "default"},
                                    "spec": {"storageClassName": "data", "volumeName": "pv-1"},
                                    "status": {"phase": "Bound"}}],
        "nodes": [{"metadata": {"name": "gpu-1", "labels": {leaf: "leaf-1", "gantry.io/nic-gbps": "400"}},
                   "status": {"allocatable": {"nvidia.com/gpu": "8"}}}],
        "pods": [{"metadata": {"name": "p1", "namespace": "default", "uid": "uid-p1"},
                  "spec": {"nodeName": "gpu-1",
                           "containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": "4"}}}],
                           "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "c1"}}]}}],
    }
    return topology, state


@unittest.skipUnless(os.environ.get("GANTRY_SCHEDULER"), "GANTRY_SCHEDULER not set")
class DatasetModifyAdmissionTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gantry-modify-admission-%d-" % os.getpid())
        self.addCleanup(shutil.rmtree, self.tmp, True)
        plain = Plugin(mode="controller", node_id=None, config=env.CONFIG).start()
        self.addCleanup(plain.cleanup)
        self.addCleanup(plain.stop)
        name = "modify-admission-%s" % env.UNIQUE
        self.vol = plain.call("CreateVolume", env.create_req(name, size=16 << 20)).volume
        self.addCleanup(env.retry, lambda: plain.call("DeleteVolume", env.delete_req(self.vol.volume_id)))
        self.uuid = env.uuid_of(self.vol.volume_id)
        topology, state = admission_state(self.vol.volume_id)
        paths = []
        for what, doc in (("topology", topology), ("state", state)):
            paths.append(os.path.join(self.tmp, what + ".json"))
            with open(paths[-1], "w") as f:
                json.dump(doc, f)
        self.sched = Scheduler(topology=paths[0], state=paths[1]).start()
        self.addCleanup(lambda: self.sched and self.sched.stop())
        self.plugin = Plugin(mode="controller", node_id=None, config=env.CONFIG,
                             extra=("--scheduler-url", "http://127.0.0.1:%d" % self.sched.port)).start()
        self.addCleanup(self.plugin.cleanup)
        self.addCleanup(self.plugin.stop)

    def modify(self, per_gpu):
        return self.plugin.call("ControllerModifyVolume", csi_pb2.ControllerModifyVolumeRequest(
            volume_id=self.vol.volume_id, mutable_parameters={"gantry.io/read-gbps-per-gpu": per_gpu},
            secrets=env.secrets()))

    def recorded(self):
        bw = env.record(self.uuid).get("bw")
        return json.loads(bw) if bw is not None else None

    def charged(self):
        _, text = self.sched.request("GET", "/metrics")
        for line in text.decode().splitlines():
            if line.startswith('gantry_backend_reserved_gbps{backend="perf"}'):
                return float(line.split()[-1])
        return None

    def assertCode(self, code, per_gpu, *words):
        with self.assertRaises(grpc.RpcError) as cm:
            self.modify(per_gpu)
        self.assertEqual(cm.exception.code(), code, cm.exception.details())
        for w in words:
            self.assertIn(w, cm.exception.details())

    def test_admitted_refused_decreased_unreachable(self):
        self.assertEqual(self.charged(), 40)
        self.modify("12")  # 8 more of 60 free
        self.assertEqual(self.recorded(), {"gantry.io/read-gbps-per-gpu": "12"})
        self.assertEqual(self.charged(), 48)
        # 112 more, 52 free: refused, nothing recorded nor charged
        self.assertCode(Code.RESOURCE_EXHAUSTED, "40",
                        "leaf uplink leaf-1: 52.0 of 100.0 Gbps free, the change needs 112.0 more")
        self.assertEqual(self.recorded(), {"gantry.io/read-gbps-per-gpu": "12"})
        self.assertEqual(self.charged(), 48)
        # the scheduler gone: a decrease needs no one's leave, an increase waits
        sched, self.sched = self.sched, None
        self.assertEqual(sched.stop(), 0)
        self.modify("5")
        self.assertEqual(self.recorded(), {"gantry.io/read-gbps-per-gpu": "5"})
        self.assertCode(Code.UNAVAILABLE, "6", "gantry-scheduler unreachable")
        self.assertEqual(self.recorded(), {"gantry.io/read-gbps-per-gpu": "5"})


if __name__ == "__main__":
    unittest.main()
