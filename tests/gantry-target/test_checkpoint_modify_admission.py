"""A live bandwidth change of checkpoint volumes, end to end: gantry-csi's
controller, driven over its Unix socket (python3-grpcio) as external-resizer
drives it, asks a real gantry-scheduler before it accepts a change; the
scheduler follows the FAKE Kubernetes API server (tests/fakeapi: no real API
server can run here) for the nodes, pods, PVCs, PVs and
VolumeAttributesClasses, and is reached over TLS with a client certificate.
The volumes are real ones on a gantry-target process (stand-in configfs).

Fabric: nodes gpu-1 and gpu-2 on leaf-1 (uplink 100 Gbps); target tgt-a on
leaf-2, so every checkpoint write crosses leaf-1's uplink. Pods p1 (gpu-1,
volume 1) and p2 (gpu-2, volume 2) have 4 GPUs; their StorageClass gives
10 Gbps of writes per GPU: 80 of the uplink's 100 Gbps are charged.

  1. volume 1 to 12 Gbps per GPU (8 more): OK, charged at once (88), and
     the same call again charges nothing more;
  2. volume 2 to 30 (80 more, 12 free): RESOURCE_EXHAUSTED naming the
     uplink, its free Gbps and the extra (what external-resizer shows in the
     PVC's VolumeModifyFailed event); nothing charged;
  3. volume 2 to 5: OK; it frees its 20 Gbps only when the class is marked in
     force on the PVC, while volume 1's class coming into force charges
     nothing twice;
  4. the scheduler gone: UNAVAILABLE (external-resizer retries).
"""
import json
import os
import shutil
import sys
import tempfile
import unittest

import grpc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scheduler"))
from ckpt_helpers import LEAF, TargetsTestCase, create_req  # noqa: E402
from csi_client import csi_pb2  # noqa: E402
import sched_harness  # noqa: E402
from sched_harness import FakeAPI, Scheduler, canary, make_test_pki, wait_for  # noqa: E402

PER_GPU = "gantry.io/write-gbps-per-gpu"
TOPOLOGY = {
    "leaves": [{"name": "leaf-1", "spine": "spine-1", "uplinkGbps": 100},
               {"name": "leaf-2", "spine": "spine-1", "uplinkGbps": 1000}],
    "backends": [{"name": "tgt-a", "kind": "nvmeof", "gbps": 1000, "transport": "tcp",
                  "leaves": ["leaf-2"]}],
}


def node(name):
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {LEAF: "leaf-1",
                                                  "network.topology.nvidia.com/spine": "spine-1",
                                                  "gantry.io/nic-gbps": "400"}},
            "status": {"allocatable": {"nvidia.com/gpu": "8"}}}


def vac(name, per_gpu):
    return {"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttributesClass",
            "metadata": {"name": name}, "driverName": "csi.gantry.io",
            "parameters": {PER_GPU: per_gpu}}


def pv(i, handle):
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv-%d" % i},
            "spec": {"storageClassName": "ckpt",
                     "csi": {"driver": "csi.gantry.io", "volumeHandle": handle,
                             "volumeAttributes": {"tier": "checkpoint", "targetID": "tgt-a"}}},
            "status": {"phase": "Bound"}}


def pvc(i, in_force=None):
    status = {"phase": "Bound"}
    if in_force:
        status["currentVolumeAttributesClassName"] = in_force
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": "c%d" % i, "namespace": "default"},
            "spec": {"storageClassName": "ckpt", "volumeName": "pv-%d" % i}, "status": status}


def pod(i):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p%d" % i, "namespace": "default", "uid": "uid-p%d" % i},
            "spec": {"nodeName": "gpu-%d" % i,
                     "containers": [{"name": "train", "resources": {"requests": {"nvidia.com/gpu": "4"}}}],
                     "volumes": [{"name": "ckpt", "persistentVolumeClaim": {"claimName": "c%d" % i}}]},
            "status": {"phase": "Running"}}


@unittest.skipUnless(os.environ.get("GANTRY_FAKEAPI") and os.environ.get("GANTRY_SCHEDULER"),
                     "GANTRY_FAKEAPI and GANTRY_SCHEDULER not set")
class CheckpointModifyAdmissionTest(TargetsTestCase):
    TARGETS = (("a", "tgt-a", "leaf-2", "127.0.0.1", {}),)

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="gantry-modify-admission-%d-" % os.getpid())
        cls.fake = cls.sched = cls.pki = None
        try:
            cls.pki = make_test_pki("modify-admission")
            topology = os.path.join(cls.tmp, "topology.json")
            with open(topology, "w") as f:
                json.dump(TOPOLOGY, f)
            seed = os.path.join(cls.tmp, "seed.json")
            with open(seed, "w") as f:
                json.dump({"nodes": [node("gpu-1"), node("gpu-2")],
                           "storageclasses": [{"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                                               "metadata": {"name": "ckpt"}, "provisioner": "csi.gantry.io",
                                               "parameters": {"tier": "checkpoint", PER_GPU: "10"}}],
                           "volumeattributesclasses": [vac("ckpt-12", "12"), vac("ckpt-30", "30"),
                                                       vac("ckpt-5", "5")]}, f)
            cls.fake = FakeAPI(canary.secret("api-token"), seed=seed)
            kubeconfig = cls.fake.write_kubeconfig(os.path.join(cls.tmp, "kubeconfig"))
            p = lambda n: os.path.join(cls.pki, n)  # noqa: E731
            cls.sched = Scheduler("--kubeconfig", kubeconfig, topology=topology, state=None,
                                  tls=(p("server.crt"), p("server.key"), p("ca.crt")),
                                  client=(p("client.crt"), p("client.key")), server_ca=p("ca.crt")).start()
            cls.PLUGIN_EXTRA = ("--scheduler-url", "https://127.0.0.1:%d" % cls.sched.port,
                                "--scheduler-client-cert", p("client.crt"),
                                "--scheduler-client-key", p("client.key"),
                                "--scheduler-ca", p("ca.crt"))
            super().setUpClass()
        except BaseException:
            cls.stop_scheduler()
            raise

    @classmethod
    def stop_scheduler(cls):
        rc = 0
        if cls.sched:
            rc, cls.sched = cls.sched.stop(), None
        if cls.fake:
            cls.fake.stop()
            cls.fake = None
        shutil.rmtree(cls.tmp, ignore_errors=True)
        if cls.pki:
            shutil.rmtree(cls.pki, ignore_errors=True)
        return rc

    @classmethod
    def tearDownClass(cls):
        try:
            super().tearDownClass()
        finally:
            rc = cls.stop_scheduler()
        if rc != 0:
            raise RuntimeError("gantry-scheduler exited %s" % rc)

    def charged(self):
        """gantry-scheduler's charge on tgt-a (Gbps), from its /metrics."""
        _, text = self.sched.request("GET", "/metrics")
        for line in text.decode().splitlines():
            if line.startswith('gantry_backend_reserved_gbps{backend="tgt-a"}'):
                return float(line.split()[-1])
        return None

    def modify(self, volume_id, per_gpu):
        return self.call("ControllerModifyVolume", csi_pb2.ControllerModifyVolumeRequest(
            volume_id=volume_id, mutable_parameters={PER_GPU: per_gpu}))

    def test_changes_admitted_charged_refused(self):
        handles = []
        for i in (1, 2):
            v = self.call("CreateVolume", create_req("pvc-modify-%d" % i, leaf="leaf-2")).volume
            self.addCleanup(self.call, "DeleteVolume", csi_pb2.DeleteVolumeRequest(volume_id=v.volume_id))
            handles.append(v.volume_id)
        for i, h in ((1, handles[0]), (2, handles[1])):
            self.fake.post("/fake/objects/persistentvolumes", pv(i, h))
            self.fake.post("/fake/objects/persistentvolumeclaims", pvc(i))
        for i in (1, 2):
            self.fake.post("/fake/objects/pods", pod(i))
        wait_for(lambda: self.charged() == 80, what="both pods charged 40 Gbps on tgt-a")

        # 1. 8 Gbps more, 20 free: admitted and charged before the call returns
        self.modify(handles[0], "12")
        self.assertEqual(self.charged(), 88)
        self.modify(handles[0], "12")  # external-resizer's retry: nothing twice
        self.assertEqual(self.charged(), 88)

        # 2. 80 more, 12 free: refused, retried later, nothing charged
        with self.assertRaises(grpc.RpcError) as cm:
            self.modify(handles[1], "30")
        self.assertEqual(cm.exception.code(), grpc.StatusCode.RESOURCE_EXHAUSTED, cm.exception.details())
        self.assertIn("leaf uplink leaf-1: 12.0 of 100.0 Gbps free, the change needs 80.0 more",
                      cm.exception.details())
        print("refusal observed: %s" % cm.exception.details(), file=sys.stderr)
        self.assertEqual(self.charged(), 88)

        # 3. a decrease is admitted; it frees once the class is in force, and
        # volume 1's class coming into force charges nothing twice
        self.modify(handles[1], "5")
        self.assertEqual(self.charged(), 88)
        self.fake.post("/fake/objects/persistentvolumeclaims", pvc(1, "ckpt-12"))
        self.fake.post("/fake/objects/persistentvolumeclaims", pvc(2, "ckpt-5"))
        wait_for(lambda: self.charged() == 68, what="volume 2's 20 Gbps freed (48 + 20)")
        self.assertIn("sched.volume_modify_refused", self.sched.logs())

        # 4. the scheduler gone: unavailable, retried by external-resizer
        sched, type(self).sched = self.sched, None
        self.assertEqual(sched.stop(), 0)
        with self.assertRaises(grpc.RpcError) as cm:
            self.modify(handles[0], "13")
        self.assertEqual(cm.exception.code(), grpc.StatusCode.UNAVAILABLE, cm.exception.details())
        self.assertIn("gantry-scheduler unreachable", cm.exception.details())


if __name__ == "__main__":
    unittest.main(verbosity=2)
