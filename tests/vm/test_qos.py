"""Bandwidth caps on a real kernel (run inside the VM by tests/vm/run.sh;
CTest: vm_qos).

gantry-csi --mode node runs in the guest, driven over its Unix socket by
python3-grpcio as kubelet would, with podInfoOnMount's keys in the
volume_context. The pods' cgroups are laid out in the guest's cgroup v2
exactly as the kubelet makes them, for both cgroup drivers (systemd slices
and cgroupfs paths) and several QoS classes, with a container cgroup below
each pod where its reader runs. The volume is a real RBD image (krbd) on a
Ceph cluster in the test's network namespace (tests/vm/qos_cluster.sh),
staged once read-only and published to every pod. The Kubernetes API the
plugin reads the pods and their volumes from is the FAKE API server of
tests/fakeapi (a real kube-apiserver does not fit in this VM); everything
else -- io.max, blk-throttle, krbd -- is the kernel's. After the pods read,
`gantryctl usage` reads the plugin's /metrics as a user would and must show
the pods' jobs (the key the scheduler gangs them by) with their figures.
Then the claim two of the pods share is given another VolumeAttributesClass
while they read, as external-resizer marks it after ControllerModifyVolume:
both pods' io.max and read rates follow, down and back up, with no restart.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import grpc

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "conformance"))
sys.path.insert(0, os.path.join(HERE, "..", "scheduler"))
sys.path.insert(0, os.path.join(HERE, "..", "gantry-target"))
sys.path.insert(0, os.path.join(HERE, "..", "fakeapi"))
from ckpt_helpers import create_req, publish_req, write_config  # noqa: E402
from csi_client import BUILD_DIR, Plugin  # noqa: E402
import csi_pb2  # noqa: E402
from dataset_calls import DatasetCalls  # noqa: E402
from fake_api_proc import csinode  # noqa: E402
import sched_harness  # noqa: E402
from targetproc import Target  # noqa: E402

SHARE = "/vm"
CG = "/sys/fs/cgroup"
VOL = "0001-0004-test-0000000000000001-bw"
READ_SECONDS = 12.0  # > the usage window (10 s, its minimum): gantryctl sees a full one
# name -> the pod's labels: its job as gantry-scheduler gangs it
JOBS = {"a": {"gantry.io/job": "llama"}, "b": {"gantry.io/job": "llama"},
        "c": {"jobset.sigs.k8s.io/jobset-name": "eval"}, "d": {}}
# name -> its GPUs: a and b declare no rate, they get the class's per-GPU
# figure for each (b twice a's); c and d declare theirs in an annotation
GPUS = {"a": 1, "b": 2}
# name -> the claim its volume is: a and b, one job, share one ROX claim
CLAIMS = {"a": "data-llama", "b": "data-llama", "c": "data-c", "d": "data-d"}


def read_share(name):
    with open(os.path.join(SHARE, name)) as f:
        return f.read().strip()


def uid(n):
    return "6a3e0c1d-5b2f-4c7a-9d1e-00000000000%d" % n


# name -> (uid, pod cgroup relative to CG, container cgroup name, storage class)
PODS = {
    # systemd driver, Burstable
    "a": (uid(1), "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod%s.slice"
          % uid(1).replace("-", "_"), "cri-containerd-a.scope", "bw-cap"),
    # cgroupfs driver, BestEffort
    "b": (uid(2), "kubepods/besteffort/pod%s" % uid(2), "c0ffee0b", "bw-cap"),
    # systemd driver, Guaranteed, under a class with bandwidthPolicy none
    "c": (uid(3), "kubepods.slice/kubepods-pod%s.slice" % uid(3).replace("-", "_"),
          "cri-containerd-c.scope", "bw-none"),
    # cgroupfs driver, Burstable: deleted while the plugin is down
    "d": (uid(4), "kubepods/burstable/pod%s" % uid(4), "c0ffee0d", "bw-cap"),
}


def target(name):
    return "/var/lib/kubelet/pods/%s/volumes/kubernetes.io~csi/pvc-%s/mount" % (PODS[name][0], name)


def iomax(name):
    with open(os.path.join(CG, PODS[name][1], "io.max")) as f:
        return f.read()


T0 = time.monotonic()


def step(what):
    """Progress on the console (stderr: unbuffered), for a run that hangs."""
    line = "test_qos %6.1fs: %s" % (time.monotonic() - T0, what)
    print(line, file=sys.stderr, flush=True)
    with open(os.path.join(SHARE, "progress"), "a") as f:  # seen from the host as it runs
        f.write(line + "\n")


def rate_in(cgroup_dir, path, seconds, write=False):
    """Bytes/s a reader (or writer) in @cgroup_dir moves flat out for @seconds."""
    out = subprocess.run([sys.executable, os.path.join(HERE, "qos_reader.py"), cgroup_dir, path,
                          str(seconds)] + (["write"] if write else []),
                         capture_output=True, text=True, check=True, timeout=seconds + 60).stdout
    m = re.search(r"bytes=(\d+) seconds=([\d.]+)", out)
    return int(m.group(1)) / float(m.group(2))


def gbps(bytes_per_s):
    return "%g" % (bytes_per_s * 8 / 1e9)


class FollowedReader:
    """qos_reader.py in progress mode in a container cgroup: one process, one
    open of the device, reading flat out until stop(); its progress lines give
    its rate over any recent window, on the guest's CLOCK_MONOTONIC (the
    test's time.monotonic())."""

    def __init__(self, cgroup_dir, path, threads=4, max_seconds=300):
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "qos_reader.py"), cgroup_dir, path,
             str(max_seconds), "read", str(threads), "progress"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.samples = []  # (monotonic, bytes so far)
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._follow, daemon=True)
        self.thread.start()

    def _follow(self):
        for ln in self.proc.stdout:
            m = re.match(r"at=([\d.]+) total=(\d+)", ln)  # the last line: its totals
            if m:
                with self.lock:
                    self.samples.append((float(m.group(1)), int(m.group(2))))

    def windows(self, window, since=0.0, until=float("inf")):
        """(bytes/s, end) of each window of @window seconds of progress seen
        between @since and @until, in order of their ends."""
        with self.lock:
            s = [x for x in self.samples if since <= x[0] <= until]
        j = 0
        for end in s:
            while j + 1 < len(s) and s[j + 1][0] <= end[0] - window:
                j += 1
            if end[0] - s[j][0] >= window:
                yield (end[1] - s[j][1]) / (end[0] - s[j][0]), end[0]

    def first_near(self, cap, since, window):
        """The first window of @window seconds of progress, all of it after
        @since, whose rate is within 10 % of @cap: (its bytes/s, its end), or
        None as yet; and the rate of the last window seen (None: none yet)."""
        last = None
        for rate, end in self.windows(window, since):
            last = rate
            if abs(rate / cap - 1) < 0.10:
                return (rate, end), rate
        return None, last

    def rate_until(self, until, window):
        """Bytes/s over the last window of @window seconds before @until."""
        return list(self.windows(window, until=until))[-1][0]

    def stop(self):
        """Closes its stdin (it stops), reaps it; its exit status."""
        if self.proc.stdin and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            rc = self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()  # our own child
            rc = self.proc.wait(timeout=30)
        self.thread.join(timeout=30)
        return rc


def wait_for(what, pred, timeout=30.0):
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(0.1)


class QosTest(DatasetCalls, unittest.TestCase):
    IMAGE = "bw"
    PODS = PODS

    @classmethod
    def setUpClass(cls):
        cls.env = dict(line.split("=", 1) for line in read_share("env").splitlines())
        cls.key = read_share("gantry.key")
        subprocess.run(["modprobe", "rbd"], check=True, timeout=60)
        if not os.path.exists(os.path.join(CG, "cgroup.controllers")):
            subprocess.run(["mount", "-t", "cgroup2", "none", CG], check=True, timeout=30)
        with open(os.path.join(CG, "cgroup.controllers")) as f:
            if "io" not in f.read().split():
                raise unittest.SkipTest("no io controller in this kernel")
        step("cgroup v2 mounted")
        cls.workdir = tempfile.mkdtemp(prefix="gantry-qos-vm-")
        cls.state = os.path.join(cls.workdir, "qos")
        for name, (_, rel, ctr, _) in PODS.items():
            os.makedirs(os.path.join(CG, rel, ctr))
        cls.api = sched_harness.FakeAPI("tok-node")
        step("fake API up")
        cls.kubeconfig = cls.api.write_kubeconfig(os.path.join(cls.workdir, "kubeconfig"))
        cls.plugin = None
        cls.start_plugin()
        step("plugin up")
        # stage once, read-only, as raw block (the image holds no file system)
        cls.call("NodeStageVolume", volume_id=VOL, staging_target_path=cls.staging(),
                 volume_capability=cls.cap(), volume_context=cls.context(),
                 secrets={"userID": "gantry", "userKey": cls.key})
        step("staged")
        cls.dev = os.path.join(cls.staging(), "device")
        st = os.stat(cls.dev)
        cls.majmin = "%d:%d" % (os.major(st.st_rdev), os.minor(st.st_rdev))
        # what this VM reads with no cap at all: the caps are picked well below it
        os.makedirs(os.path.join(CG, "uncapped"), exist_ok=True)
        rate = cls.read_in(os.path.join(CG, "uncapped"), cls.dev, 3.0)
        # well below: under TCG the guest's CPUs, shared by all three readers,
        # are what runs out first
        cls.cap1 = max(1, min(4, int(rate / 16e6))) * 1000000
        cls.cap2 = 2 * cls.cap1
        print("uncapped %.1f MB/s; caps %d and %d B/s" % (rate / 1e6, cls.cap1, cls.cap2))
        cls.seed()

    @classmethod
    def tearDownClass(cls):
        try:
            for name in PODS:
                try:
                    cls.call("NodeUnpublishVolume", volume_id=VOL, target_path=target(name))
                except grpc.RpcError:
                    pass
            cls.call("NodeUnstageVolume", volume_id=VOL, staging_target_path=cls.staging())
            rc = cls.plugin.stop() if cls.plugin else 0
            log = cls.plugin.read_log() if cls.plugin else ""
            print("---- plugin log (qos lines)")
            print("\n".join(line for line in log.splitlines() if "qos" in line)[-4000:])
            if rc != 0:
                raise AssertionError("plugin exit %s" % rc)
        finally:
            if cls.plugin:
                cls.plugin.kill()
            cls.api.stop()
            shutil.rmtree(cls.workdir, ignore_errors=True)

    # ---- helpers ----

    @classmethod
    def start_plugin(cls):
        config = os.path.join(cls.workdir, "gantry.json")
        with open(config, "w") as f:  # a sample a second, the shortest window
            json.dump({"node": {"kernelModules": [], "bandwidthSampleSeconds": 1,
                                "bandwidthWindowSeconds": 10}}, f)
        cls.metrics_url = "http://127.0.0.1:19818/metrics"  # the guest's own loopback
        p = Plugin(mode="node", node_id="vm-node", workdir=cls.workdir, ready_timeout=60.0,
                   config=config,
                   extra=["--kubeconfig", cls.kubeconfig, "--cgroup-root", CG,
                          "--qos-state-dir", cls.state, "--qos-interval", "2",
                          "--metrics-addr", "127.0.0.1:19818"])
        starts = p.read_log().count("event=csi.started")
        cls.plugin = p.start()
        wait_for("the plugin's start line",
                 lambda: p.read_log().count("event=csi.started") > starts, 60)
        p.channel.close()
        p.channel = grpc.insecure_channel(p.endpoint,
                                          options=[("grpc.use_local_subchannel_pool", 1)])
        grpc.channel_ready_future(p.channel).result(timeout=30)


    @classmethod
    def seed(cls):
        """The classes, PVs, PVCs and pods the node reads through the API."""
        objs = [("storageclasses", {"metadata": {"name": "bw-cap"}, "provisioner": "csi.gantry.io",
                                    "parameters": {"tier": "dataset", "clusterID": "test",
                                                   "gantry.io/read-gbps-per-gpu": gbps(cls.cap1)}}),
                ("storageclasses", {"metadata": {"name": "bw-none"},
                                    "provisioner": "csi.gantry.io",
                                    "parameters": {"tier": "dataset", "clusterID": "test",
                                                   "bandwidthPolicy": "none"}})]
        for claim, sc in {CLAIMS[n]: PODS[n][3] for n in PODS}.items():
            objs += [
                ("persistentvolumes", {"metadata": {"name": "pv-" + claim}, "spec": {
                    "storageClassName": sc, "csi": {
                        "driver": "csi.gantry.io", "volumeHandle": VOL,
                        "volumeAttributes": {"tier": "dataset", "clusterID": "test"}}}}),
                ("persistentvolumeclaims", {"metadata": {"name": claim, "namespace": "ml"},
                                            "spec": {"storageClassName": sc,
                                                     "volumeName": "pv-" + claim}})]
        for name, (pod_uid, _, _, _) in PODS.items():
            train = {"name": "train"}
            meta = {"name": name, "namespace": "ml", "uid": pod_uid, "labels": JOBS[name]}
            if name in GPUS:
                train["resources"] = {"requests": {"nvidia.com/gpu": str(GPUS[name])}}
            else:
                meta["annotations"] = {"gantry.io/dataset-read-gbps": gbps(cls.cap1)}
            objs.append(("pods", {"metadata": meta, "spec": {
                "nodeName": "vm-node", "containers": [train],
                "volumes": [{"name": "data", "persistentVolumeClaim":
                             {"claimName": CLAIMS[name]}}]}}))
        for res, obj in objs:
            assert cls.api.post("/fake/objects/" + res, obj) == 200

    @staticmethod
    def read_in(cgroup_dir, path, seconds):
        return rate_in(cgroup_dir, path, seconds)

    def publish(self, name):
        self.call("NodePublishVolume", volume_id=VOL, staging_target_path=self.staging(),
                  target_path=target(name), volume_capability=self.cap(), readonly=True,
                  volume_context=self.context(name))

    def line(self, name):
        """The pod's io.max line for the device, or None."""
        for ln in iomax(name).splitlines():
            if ln.split()[0] == self.majmin:
                return ln
        return None

    def want(self, rbps):
        return "%s rbps=%d wbps=max riops=max wiops=max" % (self.majmin, rbps)

    def records(self):
        return sorted(f for f in os.listdir(self.state) if f.endswith(".rec"))

    # ---- the test: one scenario, in order ----

    def test_caps_enforced_reconciled_removed(self):
        for name in PODS:
            self.publish(name)
        self.publish("a")  # idempotent
        step("published")
        # one ROX device, each pod's cgroup its own line; none: no line
        self.assertEqual(self.line("a"), self.want(self.cap1))
        self.assertEqual(self.line("b"), self.want(self.cap2))
        self.assertEqual(self.line("d"), self.want(self.cap1))
        self.assertIsNone(self.line("c"))
        self.assertEqual(len(self.records()), 4)

        # three pods read the one device flat out at once, through their targets
        procs = {}
        for name in ("a", "b", "c"):
            rel, ctr = PODS[name][1], PODS[name][2]
            # the uncapped reader keeps one request in flight, the capped ones
            # four: it must not starve them of the VM's CPUs
            procs[name] = subprocess.Popen(
                [sys.executable, os.path.join(HERE, "qos_reader.py"),
                 os.path.join(CG, rel, ctr), target(name), str(READ_SECONDS), "read",
                 "1" if name == "c" else "4"],
                stdout=subprocess.PIPE, text=True)
        rates = {}
        for name, p in procs.items():
            out, _ = p.communicate(timeout=READ_SECONDS + 60)
            self.assertEqual(p.returncode, 0)
            m = re.search(r"bytes=(\d+) seconds=([\d.]+)", out)
            rates[name] = int(m.group(1)) / float(m.group(2))
        # as a user would, once they are done (not to take the guest's CPUs
        # from them): declared vs used per job over the last window
        usage = subprocess.run([os.path.join(BUILD_DIR, "bin", "gantryctl"), "usage",
                                "--metrics", self.metrics_url], capture_output=True, text=True,
                               timeout=60)
        print("---- gantryctl usage\n" + usage.stdout + usage.stderr)
        print("measured B/s: a=%.0f (cap %d) b=%.0f (cap %d) c=%.0f (none)"
              % (rates["a"], self.cap1, rates["b"], self.cap2, rates["c"]))
        self.assertLess(abs(rates["a"] / self.cap1 - 1), 0.10, rates)
        self.assertLess(abs(rates["b"] / self.cap2 - 1), 0.10, rates)
        self.assertGreater(rates["c"], 2 * self.cap2, rates)
        print("measured / cap: a %.3f, b %.3f; c (none) / b's cap %.2f"
              % (rates["a"] / self.cap1, rates["b"] / self.cap2, rates["c"] / self.cap2))
        self.assertEqual(usage.returncode, 0, usage.stderr)
        # a and b are one job (2 pods, 2 volumes); c is its JobSet
        self.assertRegex(usage.stdout, r"\nml +llama +2 +2 ")
        self.assertRegex(usage.stdout, r"\nml +JobSet/eval +1 +1 ")

        step("read")
        # the plugin dies; meanwhile a line is lost and pod d is deleted
        self.plugin.kill()
        with open(os.path.join(CG, PODS["a"][1], "io.max"), "w") as f:
            f.write("%s rbps=max wbps=max riops=max wiops=max" % self.majmin)
        self.assertIsNone(self.line("a"))
        os.rmdir(os.path.join(CG, PODS["d"][1], PODS["d"][2]))
        os.rmdir(os.path.join(CG, PODS["d"][1]))
        type(self).start_plugin()
        # reconcile at start: a's cap is back, d leaves nothing behind
        wait_for("a's cap re-applied", lambda: self.line("a") == self.want(self.cap1))
        self.assertEqual(self.line("b"), self.want(self.cap2))
        wait_for("d's record dropped", lambda: len(self.records()) == 3)
        # and periodically: a line lost while the plugin runs comes back
        with open(os.path.join(CG, PODS["b"][1], "io.max"), "w") as f:
            f.write("%s rbps=max" % self.majmin)
        wait_for("b's cap re-applied", lambda: self.line("b") == self.want(self.cap2), 30)

        step("reconciled")
        # unpublish takes the pod's line back, the others stay
        self.call("NodeUnpublishVolume", volume_id=VOL, target_path=target("a"))
        self.assertIsNone(self.line("a"))
        self.assertEqual(self.line("b"), self.want(self.cap2))
        self.assertEqual(len(self.records()), 2)
        self.call("NodeUnpublishVolume", volume_id=VOL, target_path=target("b"))
        self.assertIsNone(self.line("b"))
        self.assertEqual(len(self.records()), 1)

    # ---- a class changed live (runs after the scenario above: a, b unpublished) ----

    def reader_identity(self, name, reader):
        """What a restart would change: the reader's PID, start time and open
        descriptors of the device, its container's cgroup and the pod's."""
        pid = reader.proc.pid
        pod_cg = os.path.join(CG, PODS[name][1])
        ctr = os.path.join(pod_cg, PODS[name][2])
        with open(os.path.join(ctr, "cgroup.procs")) as f:
            self.assertIn(str(pid), f.read().split())
        with open("/proc/%d/stat" % pid) as f:
            started = f.read().rsplit(")", 1)[1].split()[19]
        fds = sorted(fd for fd in os.listdir("/proc/%d/fd" % pid)
                     if os.readlink("/proc/%d/fd/%s" % (pid, fd)) == target(name))
        self.assertEqual(len(fds), 1)
        return pid, started, fds, os.stat(pod_cg).st_ino, os.stat(ctr).st_ino

    @staticmethod
    def wait_rate(reader, cap, since, window):
        """Waits (bounded) until @reader read at @cap within 10 % over
        @window seconds, all after @since; returns (rate, the window's end)."""
        got = [None, None]

        def near():
            got[:] = reader.first_near(cap, since, window)
            return got[0]
        try:
            return wait_for("a rate within 10 %% of %d B/s" % cap, near, window + 30)
        except AssertionError as e:
            raise AssertionError("%s (last window: %s B/s)" % (e, got[1]))

    def test_class_changed_live_while_reading(self):
        """The claim a and b share gets another VolumeAttributesClass while
        they read it flat out, marked in force on the PVC as external-resizer
        does once ControllerModifyVolume succeeded: the node's PVC watch
        rewrites both pods' io.max and their reads follow, down and then back
        up, in the same reader processes and cgroups, the device never reopened."""
        for name in ("a", "b"):
            self.publish(name)
        base = {"a": self.cap1, "b": self.cap2}
        for name in base:
            self.assertEqual(self.line(name), self.want(base[name]))
        # a VolumeAttributesClass is immutable: a new figure is a new class
        for vac, per_gpu in (("llama-half", self.cap1 // 2), ("llama-full", self.cap1)):
            self.assertEqual(self.api.post("/fake/objects/volumeattributesclasses", {
                "metadata": {"name": vac}, "driverName": "csi.gantry.io",
                "parameters": {"gantry.io/read-gbps-per-gpu": gbps(per_gpu)}}), 200)
        # 32 of the followed reader's 64 KiB requests at the lowest rate a
        # window sees: one request more or less is 3 %
        window = max(3.0, 32 * (64 << 10) / (self.cap1 / 2))
        readers = {}
        try:
            for name in base:
                readers[name] = FollowedReader(os.path.join(CG, PODS[name][1], PODS[name][2]),
                                               target(name))
            since = time.monotonic()
            for n in base:
                self.wait_rate(readers[n], base[n], since, window)
            ident = {n: self.reader_identity(n, readers[n]) for n in base}
            step("live class: readers at their caps")
            spec = {"storageClassName": "bw-cap", "volumeName": "pv-data-llama"}
            figures = []
            for vac, factor in (("llama-half", 0.5), ("llama-full", 1.0)):
                want = {n: int(base[n] * factor) for n in base}
                pvc = {"metadata": {"name": "data-llama", "namespace": "ml"},
                       "spec": dict(spec, volumeAttributesClassName=vac)}
                # the user's change, and the resizer's mark while it calls the driver
                self.assertEqual(self.api.post("/fake/objects/persistentvolumeclaims", dict(
                    pvc, status={"modifyVolumeStatus": {"targetVolumeAttributesClassName": vac,
                                                        "status": "InProgress"}})), 200)
                changed = time.monotonic()  # ControllerModifyVolume succeeded: in force
                before = {n: readers[n].rate_until(changed, window) for n in base}
                self.assertEqual(self.api.post("/fake/objects/persistentvolumeclaims", dict(
                    pvc, status={"currentVolumeAttributesClassName": vac})), 200)
                at_iomax = {}  # pod -> when its io.max was first seen rewritten

                def rewritten():
                    for n in base:
                        if n not in at_iomax and self.line(n) == self.want(want[n]):
                            at_iomax[n] = time.monotonic()
                    return len(at_iomax) == len(base)
                try:
                    wait_for("a's and b's io.max under " + vac, rewritten, 30)
                except AssertionError as e:
                    raise AssertionError("%s: a %s, b %s" % (e, self.line("a"), self.line("b")))
                for n in base:
                    rate, at = self.wait_rate(readers[n], want[n], at_iomax[n], window)
                    self.assertIsNone(readers[n].proc.poll())
                    figures.append((vac, n, before[n], want[n], rate, at_iomax[n] - changed,
                                    at - changed))
                step("live class: %s followed" % vac)
            for n in base:
                self.assertEqual(self.reader_identity(n, readers[n]), ident[n])
        finally:
            rcs = {n: r.stop() for n, r in readers.items()}
        self.assertEqual(rcs, {"a": 0, "b": 0})
        for vac, n, was, cap, rate, t_iomax, t_rate in figures:
            print("live class: %s %s: %.0f B/s before; io.max %.2f s after the PVC, rate within"
                  " 10 %% %.2f s after (window %.1f s): %.0f B/s, cap %d (x%.3f)"
                  % (vac, n, was, t_iomax, t_rate, window, rate, cap, rate / cap))


class CheckpointQosTest(unittest.TestCase):
    """A checkpoint volume (NVMe/TCP on the guest's loopback, gantry-target on
    nvmet, gantry-csi --mode all) published to a pod: its write burst is
    held to the wbps of its gantry.io/checkpoint-write-gbps."""

    POD_UID = "6a3e0c1d-5b2f-4c7a-9d1e-0000000000e1"
    POD_CG = "kubepods/pod" + POD_UID  # cgroupfs driver, Guaranteed
    WORK = "/tmp/gantry-qos-ckpt-vm"

    @classmethod
    def setUpClass(cls):
        subprocess.run(["modprobe", "-a", "nvmet", "nvmet-tcp", "nvme-tcp", "nvme-fabrics"],
                       check=True, timeout=60)
        if not os.path.exists(os.path.join(CG, "cgroup.controllers")):
            subprocess.run(["mount", "-t", "cgroup2", "none", CG], check=True, timeout=30)
        shutil.rmtree(cls.WORK, ignore_errors=True)
        os.makedirs(os.path.join(cls.WORK, "csi"))
        cls.stage = os.path.join(cls.WORK, "stage")
        cls.tgt_path = os.path.join(cls.WORK, "pods", cls.POD_UID, "mount")
        os.makedirs(cls.stage)
        os.makedirs(os.path.join(CG, cls.POD_CG, "c0ffeee1"))
        os.makedirs(os.path.join(CG, "uncapped"), exist_ok=True)
        cls.target = cls.api = cls.plugin = None
        cls.target = Target(workdir=os.path.join(cls.WORK, "tgt"),
                            configfs="/sys/kernel/config/nvmet", port=8011).start()
        tok = os.path.join(cls.WORK, "token")
        with open(tok, "w") as f:
            f.write(cls.target.token)
        cfg = write_config(os.path.join(cls.WORK, "gantry.json"),
                           [("tgt-vm", cls.target.url, tok, [("127.0.0.1", "4430")], "leaf-vm")])
        cls.api = sched_harness.FakeAPI("tok-ckpt")
        assert cls.api.post("/fake/objects/csinodes", csinode("vm-node", "vm-node")) == 200
        kc = cls.api.write_kubeconfig(os.path.join(cls.WORK, "kubeconfig"))
        cls.plugin = Plugin(mode="all", node_id="vm-node", config=cfg, ready_timeout=60,
                            workdir=os.path.join(cls.WORK, "csi"),
                            extra=["--kubeconfig", kc, "--cgroup-root", CG]).start()
        # auth: none: Debian's 6.1 NVMe host and nvmet are built without
        # DH-HMAC-CHAP (vm_dhchap covers it on 6.12); the cap is the subject
        cls.vol = cls.plugin.call("CreateVolume", create_req("pvc-qos-ckpt", size=64 << 20,
                                                             auth="none"),
                                  timeout=60).volume
        host = cls.plugin.call("ControllerPublishVolume",
                               publish_req(cls.vol.volume_id, "vm-node", cls.vol.volume_context),
                               timeout=60).publish_context["hostNQN"]
        req = csi_pb2.NodeStageVolumeRequest(volume_id=cls.vol.volume_id,
                                             staging_target_path=cls.stage)
        req.publish_context["hostNQN"] = host
        req.volume_capability.CopyFrom(publish_req(cls.vol.volume_id, "vm-node").volume_capability)
        for k, v in cls.vol.volume_context.items():
            req.volume_context[k] = v
        cls.plugin.call("NodeStageVolume", req, timeout=120)
        step("checkpoint staged")

    @classmethod
    def tearDownClass(cls):
        try:
            if cls.plugin:
                for method, req in (
                        ("NodeUnpublishVolume", csi_pb2.NodeUnpublishVolumeRequest(
                            volume_id=cls.vol.volume_id, target_path=cls.tgt_path)),
                        ("NodeUnstageVolume", csi_pb2.NodeUnstageVolumeRequest(
                            volume_id=cls.vol.volume_id, staging_target_path=cls.stage)),
                        ("ControllerUnpublishVolume", csi_pb2.ControllerUnpublishVolumeRequest(
                            volume_id=cls.vol.volume_id, node_id="vm-node")),
                        ("DeleteVolume", csi_pb2.DeleteVolumeRequest(volume_id=cls.vol.volume_id))):
                    try:
                        cls.plugin.call(method, req, timeout=120)
                    except grpc.RpcError as e:
                        print("cleanup %s: %s" % (method, e.details()))
                rc = cls.plugin.stop()
                if rc != 0:
                    raise AssertionError("gantry-csi exited %s:\n%s" % (rc, cls.plugin.read_log()[-4000:]))
        finally:
            if cls.plugin:
                cls.plugin.kill()
            if cls.target:
                cls.target.stop()
            if cls.api:
                cls.api.stop()

    def test_write_burst_held_to_wbps(self):
        # what this VM writes to the volume uncapped; the cap is picked well below
        rate = rate_in(os.path.join(CG, "uncapped"), os.path.join(self.stage, "probe"), 3.0, True)
        cap = max(1, min(4, int(rate / 10e6))) * 1000000
        os.unlink(os.path.join(self.stage, "probe"))
        print("checkpoint: uncapped write %.1f MB/s; cap %d B/s" % (rate / 1e6, cap))
        objs = [
            ("storageclasses", {"metadata": {"name": "ckpt"}, "provisioner": "csi.gantry.io",
                                "parameters": {"tier": "checkpoint", "targetID": "tgt-vm"}}),
            ("persistentvolumes", {"metadata": {"name": "pv-ckpt"}, "spec": {
                "storageClassName": "ckpt", "csi": {
                    "driver": "csi.gantry.io", "volumeHandle": self.vol.volume_id,
                    "volumeAttributes": dict(self.vol.volume_context)}}}),
            ("persistentvolumeclaims", {"metadata": {"name": "ckpt", "namespace": "ml"},
                                        "spec": {"storageClassName": "ckpt",
                                                 "volumeName": "pv-ckpt"}}),
            ("pods", {"metadata": {"name": "e", "namespace": "ml", "uid": self.POD_UID,
                                   "annotations": {
                                       "gantry.io/checkpoint-write-gbps": "%g" % (cap * 8 / 1e9)}},
                      "spec": {"containers": [{"name": "train"}],
                               "volumes": [{"name": "ckpt", "persistentVolumeClaim":
                                            {"claimName": "ckpt"}}]}}),
        ]
        for res, obj in objs:
            self.assertEqual(self.api.post("/fake/objects/" + res, obj), 200)
        req = csi_pb2.NodePublishVolumeRequest(
            volume_id=self.vol.volume_id, staging_target_path=self.stage,
            target_path=self.tgt_path,
            volume_capability=publish_req(self.vol.volume_id, "vm-node").volume_capability)
        for k, v in self.vol.volume_context.items():
            req.volume_context[k] = v
        req.volume_context.update({"csi.storage.k8s.io/pod.name": "e",
                                   "csi.storage.k8s.io/pod.namespace": "ml",
                                   "csi.storage.k8s.io/pod.uid": self.POD_UID})
        self.plugin.call("NodePublishVolume", req, timeout=60)
        # the device is the NVMe namespace head mounted at the staging path
        dev = os.stat(self.stage).st_dev
        want = "%d:%d rbps=max wbps=%d riops=max wiops=max" % (os.major(dev), os.minor(dev), cap)
        with open(os.path.join(CG, self.POD_CG, "io.max")) as f:
            self.assertIn(want, f.read().splitlines())
        with open("/sys/dev/block/%d:%d/uevent" % (os.major(dev), os.minor(dev))) as f:
            self.assertRegex(f.read(), r"DEVNAME=nvme\d+n\d+")
        got = rate_in(os.path.join(CG, self.POD_CG, "c0ffeee1"),
                      os.path.join(self.tgt_path, "burst"), READ_SECONDS, True)
        print("checkpoint: measured write %.0f B/s (cap %d)" % (got, cap))
        self.assertLess(abs(got / cap - 1), 0.10)
        self.plugin.call("NodeUnpublishVolume", csi_pb2.NodeUnpublishVolumeRequest(
            volume_id=self.vol.volume_id, target_path=self.tgt_path), timeout=60)
        with open(os.path.join(CG, self.POD_CG, "io.max")) as f:
            self.assertNotIn("%d:%d " % (os.major(dev), os.minor(dev)), f.read())


if __name__ == "__main__":
    unittest.main()
