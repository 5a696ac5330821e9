"""The dataset tier under storage faults, on a real kernel (run inside the
VM by tests/vm/run.sh; CTest: vm_dataset_faults; bench/faults runs it with
longer phases).

A dataset image filled with a known pattern (every 4 KiB block carries its
offset and a seed: dataset_pattern.py) lives on a Ceph cluster that stays
readable with one OSD down (5 OSDs, EC 2+2; tests/vm/faults_cluster.sh, in
the test's network namespace). gantry-csi --mode node, driven over its Unix
socket as kubelet would, stages it read-only (ROX, raw block) with krbd and
publishes it to two pods whose cgroups are laid out as the kubelet makes
them (systemd and cgroupfs drivers). A reader in each pod's container
cgroup reads it flat out (fault_reader.py: one sequentially, one at random
offsets) and checks every byte, while the host's fault agent
(fault_agent.py, on the guest's request) kills one OSD with kill -9 and
starts it again, stops another with SIGSTOP until Ceph marks it down, then
continues it, and marks a third out so that recovery runs; each time it
waits on the cluster's own view (the osdmap, HEALTH_OK and every PG
active+clean). The reads must go on and complete with 0 errors and 0 wrong
bytes; the figures per phase are printed (fault_phases.py).

The plugin samples the pods' real cgroups meanwhile (its bandwidth sampler,
once a second): the pods, their PVCs, PVs and StorageClass (bandwidthPolicy
none: nothing is capped) come from the FAKE API server of tests/fakeapi (a
real kube-apiserver does not fit in this VM), and so do the Events it posts.
A gantry-csi controller beside it runs the backend observer on the same
cluster (Ceph's `status`, every 2 s) and publishes its live state as the
StorageBackend "test" to that fake API server, where the node reads it. The
hang must give each pod it hung exactly one IOStalled event naming the
volume, finished when the reads resume, whose stall length matches the
longest gap between the pod's completed reads, and whose cause is the state
the observer saw: not Healthy (Ceph marked the stopped OSD down).

GANTRY_FAULTS_PHASE_S sets how long each steady phase is read (default 6 s;
bench/faults uses more).
"""
import calendar
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "conformance"))
sys.path.insert(0, os.path.join(HERE, "..", "scheduler"))
from csi_client import Plugin  # noqa: E402
import sched_harness  # noqa: E402
import fault_phases  # noqa: E402
from dataset_calls import DatasetCalls  # noqa: E402
from pod_objects import dataset_pod  # noqa: E402
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
from figure import figure  # noqa: E402

SHARE = "/vm"
CG = "/sys/fs/cgroup"
VOL = "0001-0004-test-0000000000000001-ds"
PHASE_S = float(os.environ.get("GANTRY_FAULTS_PHASE_S", "6"))
AGENT_WAIT_S = 240  # the agent's own waits are bounded at 180 s
STALL_S = 5  # --io-stall-seconds (the default)
TOKEN = "tok-node"


def uid(n):
    return "7b4f1d2e-6c3a-4d8b-8e2f-00000000000%d" % n


# name -> (uid, pod cgroup relative to CG, container cgroup, reader mode, threads)
PODS = {
    # systemd driver, Burstable: an epoch in order over its shards
    "a": (uid(1), "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod%s.slice"
          % uid(1).replace("-", "_"), "cri-containerd-a.scope", "seq", 2),
    # cgroupfs driver, BestEffort: a shuffled sampler's small reads
    "b": (uid(2), "kubepods/besteffort/pod%s" % uid(2), "c0ffee0b", "rand", 2),
}

T0 = time.monotonic()


def step(what):
    """Progress on the console (stderr: unbuffered) and in the share."""
    line = "test_dataset_faults %6.1fs: %s" % (time.monotonic() - T0, what)
    print(line, file=sys.stderr, flush=True)
    with open(os.path.join(SHARE, "progress"), "a") as f:
        f.write(line + "\n")


def read_share(name):
    with open(os.path.join(SHARE, name)) as f:
        return f.read().strip()


def target(name):
    return "/var/lib/kubelet/pods/%s/volumes/kubernetes.io~csi/pvc-%s/dev" % (PODS[name][0], name)


class Faults:
    """The guest's end of fault_agent.py's queue."""

    def __init__(self):
        self.dir = os.path.join(SHARE, "faults")
        self.n = 0

    def ask(self, request):
        """Sends @request, waits (bounded) for the answer; returns its fields."""
        self.n += 1
        base = os.path.join(self.dir, "%04d" % self.n)
        with open(base + ".tmp", "w") as f:
            f.write(request + "\n")
        os.rename(base + ".tmp", base + ".req")
        deadline = time.monotonic() + AGENT_WAIT_S
        while not os.path.exists(base + ".resp"):
            if time.monotonic() > deadline:
                raise AssertionError("the fault agent did not answer %r" % request)
            time.sleep(0.1)
        with open(base + ".resp") as f:
            answer = f.read().split()
        if answer[0] != "ok":
            raise AssertionError("fault %r failed: %s" % (request, " ".join(answer[1:])))
        step("%s: %s" % (request, " ".join(answer[1:])))
        return dict(w.split("=", 1) for w in answer[1:])


class DatasetFaultsTest(DatasetCalls, unittest.TestCase):
    IMAGE = "ds"
    PODS = PODS

    @classmethod
    def setUpClass(cls):
        cls.env = dict(line.split("=", 1) for line in read_share("env").splitlines())
        cls.key = read_share("gantry.key")
        subprocess.run(["modprobe", "rbd"], check=True, timeout=60)
        if not os.path.exists(os.path.join(CG, "cgroup.controllers")):
            subprocess.run(["mount", "-t", "cgroup2", "none", CG], check=True, timeout=30)
        for _, rel, ctr, _, _ in PODS.values():
            os.makedirs(os.path.join(CG, rel, ctr), exist_ok=True)
        cls.workdir = tempfile.mkdtemp(prefix="gantry-faults-vm-")
        cls.api = sched_harness.FakeAPI(TOKEN, max_seconds=1200)
        cls.seed()
        config = os.path.join(cls.workdir, "gantry.json")
        with open(config, "w") as f:  # a sample a second, the shortest window
            json.dump({"node": {"bandwidthSampleSeconds": 1, "bandwidthWindowSeconds": 10}}, f)
        cls.plugin = Plugin(mode="node", node_id="vm-node", workdir=cls.workdir,
                            ready_timeout=60.0, config=config,
                            extra=["--kubeconfig",
                                   cls.api.write_kubeconfig(os.path.join(cls.workdir, "kc")),
                                   "--cgroup-root", CG, "--io-stall-seconds", str(STALL_S),
                                   "--qos-state-dir", os.path.join(cls.workdir, "qos")])
        cls.observer = cls.start_observer()
        try:
            cls.plugin.start()
        except BaseException:
            cls.observer.stop()
            cls.api.stop()
            raise
        step("plugin and observer up")
        cls.call("NodeStageVolume", volume_id=VOL, staging_target_path=cls.staging(),
                 volume_capability=cls.cap(), volume_context=cls.context(),
                 secrets={"userID": "gantry", "userKey": cls.key})
        for name in PODS:
            cls.call("NodePublishVolume", volume_id=VOL, staging_target_path=cls.staging(),
                     target_path=target(name), volume_capability=cls.cap(), readonly=True,
                     volume_context=cls.context(name))
        step("staged read-only and published to %d pods" % len(PODS))

    @classmethod
    def tearDownClass(cls):
        try:
            for name in PODS:
                cls.call("NodeUnpublishVolume", volume_id=VOL, target_path=target(name))
            cls.call("NodeUnstageVolume", volume_id=VOL, staging_target_path=cls.staging())
            rc = cls.plugin.stop()
            if rc != 0:
                raise AssertionError("plugin exit %s:\n%s" % (rc, cls.plugin.read_log()[-4000:]))
        finally:
            cls.plugin.kill()
            cls.observer.stop()
            cls.observer.kill()
            cls.api.stop()
            shutil.rmtree(cls.workdir, ignore_errors=True)


    @classmethod
    def seed(cls):
        """The objects the plugin reads for each pod's volume: nothing capped."""
        objs = [("storageclasses", {"metadata": {"name": "ds"}, "provisioner": "csi.gantry.io",
                                    "parameters": {"tier": "dataset", "clusterID": "test",
                                                   "bandwidthPolicy": "none"}})]
        for name, (pod_uid, *_) in PODS.items():
            objs += dataset_pod(name, pod_uid, "ds", VOL)
        for res, obj in objs:
            assert cls.api.post("/fake/objects/" + res, obj) == 200

    @classmethod
    def start_observer(cls):
        """gantry-csi's controller observing the cluster, publishing to the fake API."""
        keyfile = os.path.join(cls.workdir, "gantry.key")
        with open(os.open(keyfile, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write(cls.key)
        config = os.path.join(cls.workdir, "controller.json")
        with open(config, "w") as f:
            json.dump({"clusters": [{"clusterID": "test", "monitors": [cls.env["MONITORS"]],
                                     "userID": "gantry", "keyFile": keyfile,
                                     "rbdTimeoutSeconds": 5}]}, f)
        os.environ["POD_NAME"] = "controller-vm"  # the Lease holder
        ctrl = Plugin(mode="controller", node_id=None, config=config, ready_timeout=60.0,
                      workdir=os.path.join(cls.workdir, "controller"),
                      extra=["--kubeconfig", os.path.join(cls.workdir, "kc"),
                             "--backend-poll-seconds", "2"])
        os.makedirs(ctrl.workdir, exist_ok=True)
        try:
            ctrl.start()
            # bounded: its first status once it holds the Lease
            deadline = time.monotonic() + 60
            while cls.backend_state() is None:
                if time.monotonic() > deadline:
                    raise AssertionError("the observer published no StorageBackend:\n"
                                         + ctrl.read_log()[-3000:])
                time.sleep(0.5)
        except BaseException:
            ctrl.stop()
            ctrl.kill()
            cls.api.stop()
            raise
        return ctrl

    @classmethod
    def api_get(cls, path):
        req = urllib.request.Request(cls.api.base + path,
                                     headers={"Authorization": "Bearer " + TOKEN})
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.loads(r.read())

    @classmethod
    def backend_state(cls):
        """The state the observer published for the cluster, or None."""
        try:
            obj = cls.api_get("/apis/gantry.io/v1alpha1/storagebackends/test")
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return None
            raise
        return (obj.get("status") or {}).get("state")

    @classmethod
    def stall_events(cls):
        """The IOStalled Events on the pods, as the API has them."""
        items = cls.api_get("/api/v1/namespaces/ml/events")["items"]
        return [e for e in items if e.get("reason") == "IOStalled"]

    def start_readers(self):
        self.stopfile = os.path.join(self.workdir, "stop")
        self.readers = {}
        for name, (_, rel, ctr, mode, threads) in PODS.items():
            out = os.path.join(self.workdir, "reads-%s.json" % name)
            p = subprocess.Popen([sys.executable, os.path.join(HERE, "fault_reader.py"),
                                  os.path.join(CG, rel, ctr), target(name), self.env["DS_SEED"],
                                  mode, str(threads), self.stopfile, out])
            self.readers[name] = (p, out)
        self.addCleanup(self.stop_readers)
        # python starts slowly under software emulation: the healthy phase
        # begins once every reader has read
        deadline = time.monotonic() + 120
        while not all(os.path.exists(out + ".reading") for _, out in self.readers.values()):
            self.assertLess(time.monotonic(), deadline, "the readers did not start reading")
            self.dwell(0.2)

    def stop_readers(self):
        """Every reader stops after its reads in flight complete (bounded)."""
        with open(self.stopfile, "w"):
            pass
        results = {}
        for name, (p, out) in self.readers.items():
            try:
                p.wait(timeout=AGENT_WAIT_S)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            if p.returncode == 0 and os.path.exists(out):
                with open(out) as f:
                    results[name] = json.load(f)
        return results

    def dwell(self, seconds):
        """Reads go on for @seconds; a reader that died ends the test early."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            for name, (p, _) in self.readers.items():
                self.assertIsNone(p.poll(), "reader %s exited during the faults" % name)
            time.sleep(0.2)

    def test_reads_go_on_through_osd_faults(self):
        self.start_readers()
        marks = fault_phases.run_faults(Faults().ask, self.dwell, PHASE_S)
        results = self.stop_readers()
        step("readers stopped")

        self.assertEqual(sorted(results), sorted(PODS), "a reader did not complete its reads")
        reads = []
        for name, r in sorted(results.items()):
            print("pod %s (%s): %d reads, %.1f MiB, errors %d, wrong bytes %d, passes %s%s"
                  % (name, r["mode"], r["reads"], r["bytes"] / 2**20, r["errors"],
                     r["wrong_bytes"], r["passes"],
                     ", first: " + r["first_error"] if r["first_error"] else ""))
            reads += [(a, b, r["req"]) for a, b in zip(r["t0"], r["t1"])]
        rows = fault_phases.phases(marks, reads)
        stall = fault_phases.stalls(marks, reads)
        print(fault_phases.table(rows, stall))
        for fig in fault_phases.figures(rows, stall, "vm"):
            figure(*fig)
        for name, r in results.items():
            self.assertEqual(r["errors"], 0, "pod %s: %s" % (name, r["first_error"]))
            self.assertEqual(r["wrong_bytes"], 0, "pod %s: %s" % (name, r["first_error"]))
        # the sequential reader read every byte of its shards at least once
        self.assertGreaterEqual(results["a"]["passes"], 1)
        # reads went on in every steady phase, degraded ones included
        for name, secs, rate, n, *_ in rows:
            if not name.startswith(("crash", "hang")):
                self.assertGreater(n, 0, "no read completed in phase %r" % name)
        self.check_stall_events(marks, results)

    def check_stall_events(self, marks, results):
        """One IOStalled event per pod the hang stalled, as long as its reads stopped."""
        wall = time.time() - time.monotonic()  # monotonic -> wall clock
        # every stall told is finished once reads went on (bounded: the next samples)
        deadline = time.monotonic() + 30
        while True:
            events = self.stall_events()
            if not any("so far" in e["message"] for e in events):
                break
            self.assertLess(time.monotonic(), deadline, "a stall event was never finished: %s"
                            % [e["message"] for e in events])
            time.sleep(0.5)
        for e in events:
            print("event %s on pod %s: %s" % (e["reason"], e["involvedObject"]["name"],
                                               e["message"]))
        hang_from, hang_to = marks["stop_req"], marks["clean2_resp"]
        told = 0
        for name, r in sorted(results.items()):
            # the longest time no read of the pod completed, across the hang
            done = sorted(t1 for t1 in r["t1"])
            gap, gap_at = max(((b - a, a) for a, b in zip(done, done[1:])
                               if b > hang_from and a < hang_to), default=(0.0, 0.0))
            mine = []
            for e in events:
                m = re.match(r"dataset reads stalled (\d+) s at (\d\d):(\d\d):(\d\d) UTC "
                             r"on volume (\S+?)(?:: backend test was (\w+) \((.*)\))?$",
                             e["message"])
                self.assertIsNotNone(m, "unexpected text: %r" % e["message"])
                self.assertEqual(m.group(5), VOL, e["message"])
                self.assertEqual(e["type"], "Warning")
                if e["involvedObject"]["uid"] != PODS[name][0]:
                    continue
                # the start's wall clock: the event's day, the message's time
                day = calendar.timegm(time.strptime(e["firstTimestamp"][:10], "%Y-%m-%d"))
                start = day + 3600 * int(m.group(2)) + 60 * int(m.group(3)) + int(m.group(4))
                if hang_from + wall - 2 <= start <= marks["stop_resp"] + wall:
                    mine.append((int(m.group(1)), m.group(6)))
            print("pod %s: the reads' longest gap across the hang %.1f s (from %+.1f s); "
                  "IOStalled events for it: %s" % (name, gap, gap_at - hang_from, mine))
            if gap < STALL_S + 3:
                continue  # this pod's reads did not hang long enough to be told for sure
            told += 1
            self.assertEqual(len(mine), 1, "pod %s: one IOStalled event for the hang" % name)
            secs, state = mine[0]
            # sampled once a second: at most a sample short at each end
            self.assertGreaterEqual(secs, gap - 3.5, "pod %s: stall %d s, gap %.1f s"
                                    % (name, secs, gap))
            self.assertLessEqual(secs, gap + 1.5, "pod %s: stall %d s, gap %.1f s"
                                 % (name, secs, gap))
            # the cause: what the observer published once Ceph marked the OSD down
            self.assertIsNotNone(state, "pod %s: the event names no cause" % name)
            self.assertNotEqual(state, "Healthy", "pod %s: the cause" % name)
        self.assertGreater(told, 0, "the hang stopped no pod's reads")


if __name__ == "__main__":
    unittest.main()
