"""NodePublishVolume's bandwidth cap, end to end on the host: gantry-csi
--mode node reads the publishing pod and its PVC, PV and StorageClass from
the FAKE Kubernetes API server (tests/fakeapi), computes the pod's demand
with the scheduler's computation and writes the cap to the pod's io.max.

The cgroup tree is a STAND-IN (plain files laid out as the kubelet's
systemd driver makes them; io.max holds the last line written) and the
"staged volume" is a tmpfs mounted at the staging path: the kernel's io.max
and krbd run in the VM (tests/vm/test_qos.py). Needs root (mounts)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

import grpc

from csi_client import Plugin, csi_pb2

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scheduler"))
import sched_harness  # noqa: E402

CODE = grpc.StatusCode
VOL = "0001-0004-test-0000000000000001-qos"
UID = "0b6f2c5a-3333-4a4a-9b9b-000000000003"
NOCG_UID = "0b6f2c5a-5555-4a4a-9b9b-000000000005"  # a pod whose cgroup is nowhere in the tree
POD_CG = "kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod%s.slice" % \
    UID.replace("-", "_")


@unittest.skipUnless(os.geteuid() == 0, "needs root to mount the stand-in staged volume")
class NodeQosApiTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="gantry-node-qos-")
        cls.cg = os.path.join(cls.dir, "cgroup")
        os.makedirs(os.path.join(cls.cg, POD_CG))
        with open(os.path.join(cls.cg, "cgroup.controllers"), "w") as f:
            f.write("cpu io memory pids\n")
        open(os.path.join(cls.cg, POD_CG, "io.max"), "w").close()
        cls.staging = os.path.join(cls.dir, "staging")
        os.makedirs(cls.staging)
        subprocess.run(["mount", "-t", "tmpfs", "gantry-qos-test", cls.staging], check=True)
        st = os.stat(cls.staging)
        cls.majmin = "%d:%d" % (os.major(st.st_dev), os.minor(st.st_dev))
        config = os.path.join(cls.dir, "gantry.json")
        with open(config, "w") as f:
            json.dump({"node": {"kernelModules": []}}, f)
        cls.api = sched_harness.FakeAPI("tok-qos")
        kc = cls.api.write_kubeconfig(os.path.join(cls.dir, "kubeconfig"))
        for res, obj in [
                ("storageclasses", {"metadata": {"name": "fast"}, "provisioner": "csi.gantry.io",
                                    "parameters": {"tier": "dataset", "clusterID": "c",
                                                   "bandwidthPolicy": "burst",
                                                   "bandwidthBurstFactor": "1.5",
                                                   "bandwidthReadIOPS": "5000"}}),
                ("persistentvolumes", {"metadata": {"name": "pv-q"}, "spec": {
                    "storageClassName": "fast", "csi": {
                        "driver": "csi.gantry.io", "volumeHandle": VOL,
                        "volumeAttributes": {"tier": "dataset", "clusterID": "c"}}}}),
                ("persistentvolumeclaims", {"metadata": {"name": "data", "namespace": "ml"},
                                            "spec": {"storageClassName": "fast",
                                                     "volumeName": "pv-q"}}),
                ("pods", cls.pod("p", UID, "8")),
                ("pods", cls.pod("bad", "0b6f2c5a-4444-4a4a-9b9b-000000000004", "lots")),
                ("pods", cls.pod("nocg", NOCG_UID, "8"))]:
            assert cls.api.post("/fake/objects/" + res, obj) == 200
        cls.plugin = Plugin(mode="node", node_id="conf-node", config=config,
                            extra=["--kubeconfig", kc, "--cgroup-root", cls.cg]).start()

    @staticmethod
    def pod(name, uid, gbps):
        return {"metadata": {"name": name, "namespace": "ml", "uid": uid,
                             "labels": {"jobset.sigs.k8s.io/jobset-name": "llama"},
                             "annotations": {"gantry.io/dataset-read-gbps": gbps}},
                "spec": {"containers": [{"name": "c"}],
                         "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]}}

    @classmethod
    def tearDownClass(cls):
        rc = cls.plugin.stop()
        cls.plugin.cleanup()
        cls.api.stop()
        subprocess.run(["umount", "-R", cls.staging], check=False)
        for root, dirs, _ in os.walk(cls.dir, topdown=False):
            for d in dirs:
                subprocess.run(["umount", os.path.join(root, d)], capture_output=True)
        shutil.rmtree(cls.dir, ignore_errors=True)
        if rc != 0:
            raise AssertionError("plugin exited %s on SIGTERM" % rc)

    def publish(self, target, pod=None, uid=None):
        req = csi_pb2.NodePublishVolumeRequest(volume_id=VOL, staging_target_path=self.staging,
                                               target_path=target, readonly=True)
        req.volume_capability.mount.fs_type = "ext4"
        req.volume_capability.access_mode.mode = \
            csi_pb2.VolumeCapability.AccessMode.Mode.MULTI_NODE_READER_ONLY
        if pod:
            req.volume_context.update({"csi.storage.k8s.io/pod.name": pod,
                                       "csi.storage.k8s.io/pod.namespace": "ml",
                                       "csi.storage.k8s.io/pod.uid": uid})
        return self.plugin.call("NodePublishVolume", req)

    def unpublish(self, target):
        return self.plugin.call("NodeUnpublishVolume", csi_pb2.NodeUnpublishVolumeRequest(
            volume_id=VOL, target_path=target))

    def iomax(self):
        with open(os.path.join(self.cg, POD_CG, "io.max")) as f:
            return f.read().strip()

    def records(self):
        qos = os.path.join(self.plugin.workdir, "qos")
        return [f for f in os.listdir(qos) if f.endswith(".rec")]

    def test_1_cap_from_the_pod_and_its_class(self):
        target = os.path.join(self.dir, "pods", "p", "mount")
        self.publish(target, "p", UID)
        # 8 Gbps = 1e9 B/s, x 1.5 (burst); 5000 read IOs/s x 1.5
        self.assertEqual(self.iomax(), "%s rbps=1500000000 wbps=max riops=7500 wiops=max"
                         % self.majmin)
        self.assertEqual(len(self.records()), 1)
        # the job the scheduler gangs the pod by is recorded with the cap
        with open(os.path.join(self.plugin.workdir, "qos", self.records()[0])) as f:
            self.assertIn("\njob=ml/JobSet/llama\n", f.read())
        paths = {r["path"] for r in self.api.get("/fake/requests") if r["method"] == "GET"}
        for p in ("/api/v1/namespaces/ml/pods/p", "/api/v1/namespaces/ml/persistentvolumeclaims/data",
                  "/api/v1/persistentvolumes/pv-q", "/apis/storage.k8s.io/v1/storageclasses/fast"):
            self.assertIn(p, paths)
        self.unpublish(target)
        self.assertEqual(self.iomax(), "%s rbps=max wbps=max riops=max wiops=max" % self.majmin)
        self.assertEqual(self.records(), [])

    def wait_iomax(self, want, timeout=20.0):
        """Waits (bounded) until the pod's io.max holds @want; returns what it holds last."""
        deadline = time.monotonic() + timeout
        while self.iomax() != want and time.monotonic() < deadline:
            time.sleep(0.05)
        return self.iomax()

    CLAIM = {"metadata": {"name": "data", "namespace": "ml"},
             "spec": {"storageClassName": "fast", "volumeName": "pv-q"}}

    def publish_with_a_class_at_hand(self, target, vac, read_iops):
        """Makes VolumeAttributesClass @vac (policy cap, @read_iops read IOs/s)
        and publishes @target to pod p under its StorageClass alone; returns
        the claim as it is once @vac is marked in force."""
        self.assertEqual(self.api.post("/fake/objects/volumeattributesclasses", {
            "metadata": {"name": vac}, "driverName": "csi.gantry.io",
            "parameters": {"bandwidthPolicy": "cap", "bandwidthReadIOPS": str(read_iops)}}), 200)
        self.publish(target, "p", UID)
        self.assertEqual(self.iomax(), "%s rbps=1500000000 wbps=max riops=7500 wiops=max"
                         % self.majmin)
        return dict(self.CLAIM, spec=dict(self.CLAIM["spec"], volumeAttributesClassName=vac),
                    status={"currentVolumeAttributesClassName": vac})

    def test_1b_class_changed_live_rewrites_iomax(self):
        """A VolumeAttributesClass marked in force on the PVC (as external-resizer
        does once ControllerModifyVolume succeeded) reaches the running pod's
        io.max through the node's PVC watch: no re-publish, well before the
        reconcile (its period here is the default 60 s)."""
        target = os.path.join(self.dir, "pods", "p1b", "mount")
        try:
            live = self.publish_with_a_class_at_hand(target, "slow", 800)
            self.assertEqual(self.api.post("/fake/objects/persistentvolumeclaims", live), 200)
            # the class's policy (cap: no burst factor) and IOPS, the pod's declared 8 Gbps
            self.assertEqual(self.wait_iomax("%s rbps=1000000000 wbps=max riops=800 wiops=max"
                                             % self.majmin),
                             "%s rbps=1000000000 wbps=max riops=800 wiops=max" % self.majmin)
            self.assertIn("/apis/storage.k8s.io/v1/volumeattributesclasses/slow",
                          {r["path"] for r in self.api.get("/fake/requests") if r["method"] == "GET"})
        finally:
            self.assertEqual(self.api.post("/fake/objects/persistentvolumeclaims", self.CLAIM),
                             200)
            self.unpublish(target)

    def test_1c_class_marked_while_the_node_was_down(self):
        """A class marked in force while the plugin was down (or crashed
        between two pods' rewrites) reaches the running pod when the plugin
        starts again: its records hold the figures of before, which the
        reconcile re-applies; the PVC watch's first list catches them up."""
        target = os.path.join(self.dir, "pods", "p1c", "mount")
        try:
            live = self.publish_with_a_class_at_hand(target, "slower", 600)
            self.assertEqual(self.plugin.stop(), 0)
            self.assertEqual(self.api.post("/fake/objects/persistentvolumeclaims", live), 200)
            self.plugin.start()
            want = "%s rbps=1000000000 wbps=max riops=600 wiops=max" % self.majmin
            self.assertEqual(self.wait_iomax(want), want)
        finally:
            self.assertEqual(self.api.post("/fake/objects/persistentvolumeclaims", self.CLAIM),
                             200)
            self.unpublish(target)

    def test_2_no_pod_info_no_cap(self):
        target = os.path.join(self.dir, "pods", "none", "mount")
        self.publish(target)
        self.assertEqual(self.records(), [])
        self.unpublish(target)

    def test_3_bad_annotation_names_it(self):
        target = os.path.join(self.dir, "pods", "bad", "mount")
        with self.assertRaises(grpc.RpcError) as cm:
            self.publish(target, "bad", "0b6f2c5a-4444-4a4a-9b9b-000000000004")
        self.assertEqual(cm.exception.code(), CODE.INVALID_ARGUMENT)
        self.assertIn("annotation gantry.io/dataset-read-gbps", cm.exception.details())
        self.unpublish(target)

    def test_4_api_down_is_unavailable_then_retried(self):
        target = os.path.join(self.dir, "pods", "p2", "mount")
        self.api.post("/fake/fail", {"verb": "get", "resource": "pods", "status": 503,
                                     "count": 1})
        with self.assertRaises(grpc.RpcError) as cm:
            self.publish(target, "p", UID)
        self.assertEqual(cm.exception.code(), CODE.UNAVAILABLE)
        self.assertIn("bandwidth cap", cm.exception.details())
        self.publish(target, "p", UID)  # kubelet's retry: the cap lands
        self.assertIn("rbps=1500000000", self.iomax())
        self.unpublish(target)

    def test_5_uid_mismatch_is_refused(self):
        target = os.path.join(self.dir, "pods", "p3", "mount")
        with self.assertRaises(grpc.RpcError) as cm:
            self.publish(target, "p", "0b6f2c5a-9999-4a4a-9b9b-000000000009")
        self.assertEqual(cm.exception.code(), CODE.UNAVAILABLE)
        self.assertIn("has UID", cm.exception.details())
        self.unpublish(target)

    def test_6_not_enforced_is_told_to_the_pod_once(self):
        """No pod cgroup: the publish succeeds, the record stays for reconcile,
        and the pod gets one event (a second publish inside the window none)."""
        def posts():
            return [r for r in self.api.get("/fake/requests")
                    if r["method"] == "POST" and r["path"] == "/api/v1/namespaces/ml/events"]
        before = len(posts())
        targets = [os.path.join(self.dir, "pods", "nocg%d" % i, "mount") for i in (1, 2)]
        try:
            self.publish(targets[0], "nocg", NOCG_UID)
            self.assertEqual(len(self.records()), 1)
            self.assertEqual(len(posts()), before + 1)
            self.unpublish(targets[0])
            self.publish(targets[0], "nocg", NOCG_UID)  # kubelet again, same volume: held back
            self.assertEqual(len(posts()), before + 1)
            req = urllib.request.Request(self.api.base + "/api/v1/namespaces/ml/events",
                                         headers={"Authorization": "Bearer " + self.api.token})
            with urllib.request.urlopen(req, timeout=10) as r:
                evs = [e for e in json.loads(r.read())["items"]
                       if e["involvedObject"]["name"] == "nocg"]
            self.assertEqual([(e["type"], e["reason"]) for e in evs],
                             [("Warning", "BandwidthNotEnforced")])
            self.assertIn("cgroup was not found", evs[0]["message"])
        finally:
            for t in targets:
                self.unpublish(t)
        self.assertEqual(self.records(), [])


if __name__ == "__main__":
    unittest.main()
