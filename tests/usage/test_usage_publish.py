"""The measuring loop on the caps NodePublishVolume applies, end to end in
gantry-csi --mode node: a pod's volume published with the pod's info, its
cap computed from the pod and its class (read from the FAKE Kubernetes API
server, tests/fakeapi) and written to the pod's io.max; the sampler walks
that cap (gantry_qos_for_each) and serves the pod's gantry_node_volume_* /
gantry_node_pod_* series at /metrics, from the pod cgroup's io.stat and
io.pressure; unpublished, the series go.

The cgroup tree is a STAND-IN (plain files laid out as kubelet's systemd
driver makes them) and the "staged volume" a tmpfs mounted at the staging
path: what the kernel counts under a real cap runs in the VM (vm_usage).
Needs root (mounts) and the enforcement side (gantry-csi --cgroup-root):
skipped (77) without them."""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "conformance"))
sys.path.insert(0, os.path.join(HERE, "..", "scheduler"))
from csi_client import Plugin, binary, csi_pb2  # noqa: E402
import sched_harness  # noqa: E402

VOL = "0001-0004-test-0000000000000001-usage"
UID = "0b6f2c5a-5555-4a4a-9b9b-000000000005"
POD_CG = "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod%s.slice" % UID.replace("-", "_")


def enforcement_built():
    out = subprocess.run([binary(), "--help"], capture_output=True, text=True, timeout=30)
    return "--cgroup-root" in out.stdout + out.stderr


class UsagePublish(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if os.geteuid() != 0 or not enforcement_built():
            print("GANTRY-SKIP: needs root and the enforcement side (gantry-csi --cgroup-root)")
            sys.exit(77)
        cls.dir = tempfile.mkdtemp(prefix="gantry-usage-publish-")
        cls.api = cls.plugin = None
        try:
            cls.start()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def start(cls):
        cls.cg = os.path.join(cls.dir, "cgroup")
        os.makedirs(os.path.join(cls.cg, POD_CG))
        with open(os.path.join(cls.cg, "cgroup.controllers"), "w") as f:
            f.write("cpu io memory pids\n")
        open(os.path.join(cls.cg, POD_CG, "io.max"), "w").close()
        cls.staging = os.path.join(cls.dir, "staging")
        os.makedirs(cls.staging)
        subprocess.run(["mount", "-t", "tmpfs", "gantry-usage-test", cls.staging], check=True)
        st = os.stat(cls.staging)
        cls.majmin = "%d:%d" % (os.major(st.st_dev), os.minor(st.st_dev))
        config = os.path.join(cls.dir, "gantry.json")
        with open(config, "w") as f:  # a pass a second: the test waits seconds, not minutes
            json.dump({"node": {"kernelModules": [], "bandwidthSampleSeconds": 1,
                                "bandwidthWindowSeconds": 10}}, f)
        cls.api = sched_harness.FakeAPI("tok-usage")
        kc = cls.api.write_kubeconfig(os.path.join(cls.dir, "kubeconfig"))
        for res, obj in [
                ("storageclasses", {"metadata": {"name": "fast"}, "provisioner": "csi.gantry.io",
                                    "parameters": {"tier": "dataset", "clusterID": "c"}}),
                ("persistentvolumes", {"metadata": {"name": "pv-u"}, "spec": {
                    "storageClassName": "fast", "csi": {
                        "driver": "csi.gantry.io", "volumeHandle": VOL,
                        "volumeAttributes": {"tier": "dataset", "clusterID": "c"}}}}),
                ("persistentvolumeclaims", {"metadata": {"name": "data", "namespace": "ml"},
                                            "spec": {"storageClassName": "fast", "volumeName": "pv-u"}}),
                ("pods", {"metadata": {"name": "train-0", "namespace": "ml", "uid": UID,
                                       "labels": {"gantry.io/job": "train"},
                                       "annotations": {"gantry.io/dataset-read-gbps": "8"}},
                          "spec": {"containers": [{"name": "c"}],
                                   "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]}})]:
            assert cls.api.post("/fake/objects/" + res, obj) == 200
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            cls.mport = s.getsockname()[1]
        cls.plugin = Plugin(mode="node", node_id="usage-node", config=config,
                            extra=["--kubeconfig", kc, "--cgroup-root", cls.cg,
                                   "--metrics-addr", "127.0.0.1:%d" % cls.mport]).start()

    @classmethod
    def tearDownClass(cls):
        rc = 0
        if cls.plugin:
            rc = cls.plugin.stop()
            cls.plugin.cleanup()
        if cls.api:
            cls.api.stop()
        subprocess.run(["umount", "-R", os.path.join(cls.dir, "staging")], capture_output=True)
        for root, dirs, _ in os.walk(cls.dir, topdown=False):
            for d in dirs:
                subprocess.run(["umount", os.path.join(root, d)], capture_output=True)
        shutil.rmtree(cls.dir, ignore_errors=True)
        if rc != 0:
            raise AssertionError("plugin exited %s on SIGTERM" % rc)

    def metrics(self):
        return urllib.request.urlopen("http://127.0.0.1:%d/metrics" % self.mport, timeout=5).read().decode()

    def wait_metrics(self, pred, what, timeout=20):
        end = time.monotonic() + timeout
        text = ""
        while time.monotonic() < end:
            text = self.metrics()
            if pred(text):
                return text
            time.sleep(0.3)
        self.fail("timed out waiting for %s; metrics:\n%s" % (what, text))

    def write_cgroup(self, rbytes, stall_us):
        with open(os.path.join(self.cg, POD_CG, "io.stat"), "w") as f:
            f.write("%s rbytes=%d wbytes=0 rios=%d wios=0 dbytes=0 dios=0\n" % (self.majmin, rbytes, rbytes >> 20))
        with open(os.path.join(self.cg, POD_CG, "io.pressure"), "w") as f:
            f.write("some avg10=0.00 avg60=0.00 avg300=0.00 total=%d\n"
                    "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n" % stall_us)

    def test_published_cap_is_measured(self):
        self.write_cgroup(123456789, 2500000)
        target = os.path.join(self.dir, "target")
        req = csi_pb2.NodePublishVolumeRequest(volume_id=VOL, staging_target_path=self.staging,
                                               target_path=target, readonly=True)
        req.volume_capability.mount.fs_type = "ext4"
        req.volume_capability.access_mode.mode = \
            csi_pb2.VolumeCapability.AccessMode.Mode.MULTI_NODE_READER_ONLY
        req.volume_context.update({"csi.storage.k8s.io/pod.name": "train-0",
                                   "csi.storage.k8s.io/pod.namespace": "ml",
                                   "csi.storage.k8s.io/pod.uid": UID})
        self.plugin.call("NodePublishVolume", req)
        labels = 'namespace="ml",pod="train-0",volume="%s",job="train"' % VOL
        text = self.wait_metrics(lambda t: "gantry_node_volume_read_bytes_total{%s} 123456789\n" % labels in t,
                                 "the published volume's bytes")
        # 8 Gbps declared = 1 GB/s, and the class's default policy caps at it
        self.assertIn('gantry_node_volume_cap_bytes_per_second{%s,direction="read"} 1000000000\n' % labels, text)
        self.assertIn('gantry_node_volume_declared_bytes_per_second{%s,direction="read"} 1000000000\n' % labels,
                      text)
        self.assertIn('gantry_node_pod_io_stall_seconds_total{namespace="ml",pod="train-0",job="train"} 2.5\n', text)
        self.assertIn("gantry_node_bandwidth_targets 1\n", text)
        # the cgroup counts on: so does the counter
        self.write_cgroup(223456789, 3000000)
        self.wait_metrics(lambda t: "gantry_node_volume_read_bytes_total{%s} 223456789\n" % labels in t,
                          "the counter to follow io.stat")
        # unpublished: the cap goes, and with it the pod's series
        self.plugin.call("NodeUnpublishVolume", csi_pb2.NodeUnpublishVolumeRequest(volume_id=VOL,
                                                                                   target_path=target))
        text = self.wait_metrics(lambda t: 'pod="train-0"' not in t, "the series to go")
        self.assertIn("gantry_node_bandwidth_targets 0\n", text)


if __name__ == "__main__":
    unittest.main()
