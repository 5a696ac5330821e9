"""Demotion of promoted copies between the fixture's two real clusters:
four 64 MiB datasets of "capa" promoted into "perf" (their data in a pool of
their own, "evictdata", so its usage is only theirs), one of them mapped (a
real watcher: `rbd watch`) and one attached (a VolumeAttachment in the FAKE
API server). The eviction policy (clusters[].evict) must demote only unused
copies, idle longest first, stop at the low watermark, never touch the ones
in use or the sources, log and count every decision; a ControllerPublishVolume
of a demoted copy copies it again (ABORTED with the progress, then OK, the
content checked by checksum); `gantryctl tier demote` by hand. The PVs in the
FAKE API server carry the annotation gantry.io/copy-state the controller
writes (demoted / copying / done); a PV it cannot patch does not stop a
demotion (404: dropped, not retried), and a "done" patch that fails (503)
is retried until the PV says "done", with no further CSI call. ControllerPublishVolume racing a policy that demotes every second:
an OK publish is never followed by the data going while attached (also when
the pass read the VolumeAttachments before the attacher wrote its own), nor
answered while `gantryctl tier demote` has the copy "demoting"."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

import grpc

import ceph_env as env
from ceph_env import Plugin, csi_pb2
from test_tier_promote import CTL, LINE, tier_status

sys.path.insert(0, os.path.join(env.HERE, "..", "fakeapi"))
from fake_api_proc import start_fake, csinode  # noqa: E402

MiB = 1 << 20
POOL = "evictdata"
CAPACITY = 512 * MiB
CAPS = ["mon", "profile rbd", "mgr", "profile rbd pool=rbd", "osd"]
# ControllerPublishVolume's other ABORTED answers: the volume's lock is held, or a demotion runs
BUSY = re.compile(r"^volume_id: (an operation on \S+ is in progress|\S+ is being demoted; retry)$")
DECISION = re.compile(r"event=tier\.evict_decision cluster=perf name=(\S+) uuid=\S+ "
                      r"decision=(\w+) reason=(\w+)")


def wait_for(what, cond, timeout=180):
    """Polls @cond until it returns something true, bounded by @timeout."""
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(0.2)


def stored(pool=POOL):
    """The pool's stored bytes as Ceph reports them (what the policy reads)."""
    for p in json.loads(env.tool("ceph", "perf", "df", "--format", "json"))["pools"]:
        if p["name"] == pool:
            return p["stats"]["stored"]
    raise AssertionError("no pool " + pool)


def data_objects(image):
    """How many data objects of @image (in perf) are in POOL."""
    prefix = env.rbd_info("perf", image)["block_name_prefix"]
    io = env.admin_ioctx("perf", POOL)
    try:
        return sum(1 for o in io.list_objects() if o.key.startswith(prefix))
    finally:
        io.close()


class EvictTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="gantry-evict-")
        cls.caps = json.loads(env.tool("ceph", "perf", "auth", "get", "client.gantry",
                                       "--format", "json"))[0]["caps"]
        env.tool("ceph", "perf", "osd", "pool", "create", POOL, "8", "8", "replicated")
        env.tool("ceph", "perf", "osd", "pool", "application", "enable", POOL, "rbd")
        env.tool("ceph", "perf", "auth", "caps", "client.gantry", "mon", cls.caps["mon"], "mgr",
                 cls.caps["mgr"], "osd", cls.caps["osd"] + ", profile rbd pool=" + POOL)
        cls.api = start_fake(cls.tmp, {"csinodes": [csinode("gpu-1", "gpu-1")]})
        cls.kubeconfig = cls.api.write_kubeconfig(os.path.join(cls.tmp, "kc"))
        cls.plain = cls.config("plain", None)
        cls.sources, cls.copies, cls.plugins = {}, {}, []

    @classmethod
    def config(cls, name, evict):
        with open(env.CONFIG) as f:
            cfg = json.load(f)
        cfg["logLevel"] = "debug"
        for c in cfg["clusters"]:
            if c["clusterID"] == "perf" and evict:
                c["evict"] = evict
        path = os.path.join(cls.tmp, name + ".json")
        with open(path, "w") as f:
            json.dump(cfg, f)
        return path

    @classmethod
    def plugin(cls, cfg):
        p = Plugin(mode="controller", node_id=None, config=cfg,
                   extra=["--metrics-addr", "127.0.0.1:0", "--kubeconfig", cls.kubeconfig]).start()
        cls.plugins.append(p)
        return p

    @classmethod
    def tearDownClass(cls):
        if getattr(cls, "watch", None):
            try:
                cls.watch.communicate(b"\n", timeout=30)  # rbd watch unwatches and exits
            except subprocess.TimeoutExpired:
                cls.watch.kill()
                cls.watch.wait(timeout=10)
        for p in cls.plugins:
            p.stop()
        p = cls.plugin(cls.plain)
        for vid in cls.copies.values():
            env.retry(lambda: p.call("DeleteVolume", env.delete_req(vid), timeout=60), timeout=90)
        for vid in cls.sources.values():
            env.retry(lambda: p.call("DeleteVolume", env.delete_req(vid, "capa"), timeout=60))
        p.stop()
        for q in cls.plugins:
            q.cleanup()
        env.tool("ceph", "perf", "auth", "caps", "client.gantry", "mon", cls.caps["mon"], "mgr",
                 cls.caps["mgr"], "osd", cls.caps["osd"])
        env.tool("ceph", "perf", "osd", "pool", "rm", POOL, POOL, "--yes-i-really-really-mean-it")
        cls.api.stop()
        shutil.rmtree(cls.tmp, True)

    def metrics(self, p):
        port = re.search(r"event=csi.metrics_listening .*port=(\d+)", p.read_log()).group(1)
        with urllib.request.urlopen("http://127.0.0.1:%s/metrics" % port, timeout=10) as r:
            return r.read().decode()

    def promote(self, p, key, mib=64):
        """A 64 MiB dataset of capa, its first @mib MiB full of data, promoted into
        perf (data in POOL)."""
        name = "evict-%s-%s" % (key, env.UNIQUE)
        src = p.call("CreateVolume", env.create_req(name + "-far", "capa"), timeout=60).volume
        self.sources[key] = src.volume_id
        img = dict(src.volume_context)["imageName"]
        env.tool("rbd", "capa", "bench", "--io-type", "write", "--io-pattern", "seq", "--io-size",
                 "4M", "--io-threads", "4", "--io-total", "%dM" % mib, "rbd/" + img)
        # a second boundary between copies: the policy's idle clock counts seconds
        now = int(time.time())
        wait_for("the next second", lambda: int(time.time()) > now, 5)
        req = env.create_req(name, "perf", size=0, source_volume=src.volume_id, dataPool=POOL)
        vol, _ = env.provision(p, req, timeout=300)
        self.copies[key] = vol.volume_id
        return name, img, dict(vol.volume_context)["imageName"]

    def publish_req(self, key):
        return csi_pb2.ControllerPublishVolumeRequest(
            volume_id=self.copies[key], node_id="gpu-1", volume_capability=env.cap(),
            secrets=env.secrets())

    def copy_state(self, name):
        """The annotation gantry.io/copy-state of PV @name in the FAKE API
        server (None: not set; KeyError: no such PV)."""
        pvs = {o["metadata"]["name"]: o for o in self.api.get("/fake/objects/persistentvolumes")}
        return pvs[name]["metadata"].get("annotations", {}).get("gantry.io/copy-state")

    def decisions(self, p):
        return [m.groups() for m in DECISION.finditer(p.read_log())]

    def test_evict(self):
        p0 = self.plugin(self.plain)
        names, far, near, sums = {}, {}, {}, {}
        # C: published first (idle longest) and then mapped: a real watcher on its image
        names["c"], far["c"], near["c"] = self.promote(p0, "c")
        p0.call("ControllerPublishVolume", self.publish_req("c"), timeout=60)
        type(self).watch = subprocess.Popen(["rbd", "-c", env.conf(), "watch", "rbd/" + near["c"]],
                                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                            stderr=subprocess.DEVNULL)
        wait_for("rbd watch", lambda: "watcher=" in env.tool("rbd", "perf", "status",
                                                             "rbd/" + near["c"]), 60)
        for k in "abd":
            names[k], far[k], near[k] = self.promote(p0, k)
        # B: attached to gpu-1 (the external attacher's VolumeAttachment)
        self.api.post("/fake/objects/volumeattachments", {
            "apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment",
            "metadata": {"name": "csi-b"},
            "spec": {"attacher": "csi.gantry.io", "nodeName": "gpu-1",
                     "source": {"persistentVolumeName": names["b"]}},
            "status": {"attached": True}})
        # the PVs the provisioner made; D's is gone (deleted by hand): its annotation
        # cannot be written, which must not stop its demotion
        for k in "abc":
            self.api.post("/fake/objects/persistentvolumes", {
                "apiVersion": "v1", "kind": "PersistentVolume",
                "metadata": {"name": names[k], "annotations": {"keep": "me"}},
                "spec": {"csi": {"driver": "csi.gantry.io", "volumeHandle": self.copies[k]}}})
        self.api.post("/fake/objects/persistentvolumeclaims", {
            "apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data-b", "namespace": "team"},
            "spec": {"volumeName": names["b"]}})
        p0.stop()
        for k in "abcd":
            sums[k] = env.checksum("capa", far[k])
        self.assertEqual(env.checksum("perf", near["a"]), sums["a"])
        rec = env.copy_records()
        idle = sorted("abcd", key=lambda k: max(rec[env.uuid_of(self.copies[k])]["lastUsed"],
                                                rec[env.uuid_of(self.copies[k])]["updated"]))
        self.assertEqual(idle, ["c", "a", "b", "d"], "idle order")
        wait_for("Ceph's stats to show the four copies", lambda: stored() >= 256 * MiB)

        # 1: 256 of 512 MiB = 0.5 > 0.4: C (in use) stays, A goes, and that is enough
        p1 = self.plugin(self.config("evict1", {"highWatermark": 0.4, "lowWatermark": 0.4,
                                               "idleSeconds": 0, "intervalSeconds": 1,
                                               "capacityBytes": CAPACITY}))
        wait_for("a demotion", lambda: "decision=demoted" in p1.read_log())
        wait_for("Ceph's stats to catch up", lambda: stored() < 193 * MiB)
        settled = p1.read_log().count("action=none")
        wait_for("a pass after that", lambda: p1.read_log().count("action=none") > settled)
        p1.stop()
        self.assertEqual(self.decisions(p1), [(names["c"], "kept", "watcher"),
                                              (names["a"], "demoted", "watermark")])
        self.assertIn("reached_low=yes", p1.read_log())
        rec = env.copy_records()
        self.assertEqual(rec[env.uuid_of(self.copies["a"])]["state"], "demoted")
        for k in "bcd":
            self.assertEqual(rec[env.uuid_of(self.copies[k])]["state"], "done", k)
        self.assertEqual(data_objects(near["a"]), 0, "A's data is still there")
        self.assertEqual(data_objects(near["c"]), 16)
        self.assertEqual(env.checksum("perf", near["c"]), sums["c"])
        _, rows = tier_status(self.plain)
        self.assertEqual(rows[names["a"]]["state"], "demoted")
        self.assertIn("next ControllerPublishVolume", rows[names["a"]]["progress"])
        # the scheduler's hint: A's PV says demoted (a merge patch: other annotations stay)
        self.assertEqual(self.copy_state(names["a"]), "demoted", "\n".join(
            l for l in p1.read_log().splitlines() if "copy_state" in l or "kube" in l))
        pv_a = [o for o in self.api.get("/fake/objects/persistentvolumes")
                if o["metadata"]["name"] == names["a"]][0]
        self.assertEqual(pv_a["metadata"]["annotations"]["keep"], "me")
        for k in "bc":
            self.assertIsNone(self.copy_state(names[k]), k)

        # 2: 192 of 512 = 0.375 > 0.3: C (watcher) and B (attached) stay, D goes; 0.25 > 0.2
        p2 = self.plugin(self.config("evict2", {"highWatermark": 0.3, "lowWatermark": 0.2,
                                               "idleSeconds": 0, "intervalSeconds": 1,
                                               "capacityBytes": CAPACITY}))
        wait_for("a pass that cannot reach the low mark",
                 lambda: "reached_low=no" in p2.read_log())
        mtext = self.metrics(p2)
        p2.stop()
        got = self.decisions(p2)
        self.assertEqual(got[:3], [(names["c"], "kept", "watcher"), (names["b"], "kept", "attached"),
                                   (names["d"], "demoted", "watermark")])
        self.assertNotIn((names["c"], "demoted", "watermark"), got)
        self.assertNotIn((names["b"], "demoted", "watermark"), got)
        self.assertIn('gantry_tier_evict_decisions_total{cluster="perf",decision="demoted",'
                      'reason="watermark"} 1', mtext)
        self.assertRegex(mtext, r'gantry_tier_evict_decisions_total\{cluster="perf",'
                         r'decision="kept",reason="watcher"\} [1-9]')
        self.assertRegex(mtext, r'gantry_tier_evict_decisions_total\{cluster="perf",'
                         r'decision="kept",reason="attached"\} [1-9]')
        self.assertIn('gantry_tier_demoted_bytes_total %d' % (64 * MiB), mtext)
        # D has no PV object: the patch failed (404), was counted, and D is demoted all the same
        self.assertIn('gantry_copy_state_patch_failures_total{state="demoted"} 1', mtext)
        self.assertRegex(p2.read_log(), r"event=tier\.copy_state_failed pv=%s state=demoted "
                         % names["d"])
        self.assertRegex(p2.read_log(), r"event=tier\.copy_state_dropped pv=%s state=demoted "
                         r"reason=pv_gone" % names["d"])
        self.assertRegex(mtext, r'gantry_tier_pool_usage_ratio\{cluster="perf",pool="%s"\} '
                         % POOL)
        rec = env.copy_records()
        self.assertEqual([rec[env.uuid_of(self.copies[k])]["state"] for k in "abcd"],
                         ["demoted", "done", "done", "demoted"])
        # the sources are untouched: same data, only the copy's own snapshot (the
        # base of a later refresh, kept as long as the copy's volume exists)
        def source_snaps(k):
            return [s["name"] for s in json.loads(env.tool(
                "rbd", "capa", "snap", "ls", "--format", "json", "rbd/" + far[k]))]

        for k in "abcd":
            self.assertEqual(env.checksum("capa", far[k]), sums[k], k)
            self.assertEqual(source_snaps(k), ["gantry-copy-" + env.uuid_of(self.copies[k])], k)
        # a demoted copy keeps no snapshot that would hold its discarded data
        for k in "ad":
            self.assertEqual(json.loads(env.tool("rbd", "perf", "snap", "ls", "--format", "json",
                                                 "rbd/" + near[k])), [], k)

        # 3: publishing a demoted copy copies it again: ABORTED with the progress, then OK
        p3 = self.plugin(self.plain)
        # until then it has no data: no clone, copy or snapshot of it (nothing is made)
        for call, req in (
                ("CreateVolume", env.create_req(names["a"] + "-clone", "perf", size=0,
                                                source_volume=self.copies["a"])),
                ("CreateSnapshot", csi_pb2.CreateSnapshotRequest(
                    name=names["a"] + "-snap", source_volume_id=self.copies["a"],
                    secrets=env.secrets()))):
            with self.assertRaises(grpc.RpcError) as cm:
                p3.call(call, req, timeout=60)
            self.assertEqual(cm.exception.code(), grpc.StatusCode.FAILED_PRECONDITION, call)
            self.assertIn("is a demoted copy", cm.exception.details())
        self.assertNotIn(names["a"] + "-clone", env.journal()[0])
        messages = []
        deadline = time.monotonic() + 300
        while True:
            try:
                p3.call("ControllerPublishVolume", self.publish_req("a"), timeout=60)
                break
            except grpc.RpcError as e:
                self.assertEqual(e.code(), grpc.StatusCode.ABORTED, e.details())
                self.assertLess(time.monotonic(), deadline)
                if not messages:
                    # the API answers the next two patches (the "done" one and its
                    # first retry) 503: the controller retries it without a CSI call
                    self.api.post("/fake/fail", {"verb": "patch", "resource": "persistentvolumes",
                                                 "status": 503, "count": 2})
                messages.append(e.details())
                # while the copy runs the PV says so (set before the first ABORTED)
                self.assertEqual(self.copy_state(names["a"]), "copying")
            time.sleep(0.2)
        print("re-promoted 64 MiB through %d ABORTED answers; first: %s" % (len(messages),
                                                                       messages[0] if messages else "-"))
        self.assertGreater(len(messages), 0, "a demoted copy was published at once")
        self.assertEqual(LINE.match(messages[0]).group(1), names["a"], messages[0])
        self.assertEqual(env.checksum("perf", near["a"]), sums["a"])
        rec = env.copy_records()[env.uuid_of(self.copies["a"])]
        self.assertEqual(rec["state"], "done")
        self.assertGreater(rec["lastUsed"], 0)
        self.assertEqual(source_snaps("a"), ["gantry-copy-" + env.uuid_of(self.copies["a"])])
        log = p3.read_log()
        self.assertIn("event=tier.copy_repromoting name=%s" % names["a"], log)
        self.assertIn("event=tier.copy_repromoted name=%s" % names["a"], log)
        wait_for("the retried patch of A's copy-state", lambda: self.copy_state(names["a"]) == "done",
                 30)
        self.assertEqual(self.api.get("/fake/state")["failuresLeft"], 0)
        # the API server has the patch before the plugin logs that it took:
        # the line is waited for, not read at once
        done = "event=tier.copy_state pv=%s state=done retried=2" % names["a"]
        wait_for("the retried patch's log line", lambda: done in p3.read_log(), 30)
        log = p3.read_log()
        self.assertRegex(log, r"event=tier\.copy_state_failed pv=%s state=done attempt=2 "
                         r"error=.*HTTP 503" % names["a"])
        self.assertIn(done, log)
        self.assertIn('gantry_copy_state_patch_failures_total{state="done"} 2', self.metrics(p3))
        p3.stop()

        # 4: gantryctl tier demote by hand
        def demote(what):
            return subprocess.run([CTL, "tier", "demote", what, "--config", self.plain,
                                   "--kubeconfig", self.kubeconfig], capture_output=True,
                                  text=True, timeout=120)
        r = demote(names["a"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"^demoted %s \(perf/rbd, %d bytes" % (names["a"], 64 * MiB))
        self.assertEqual(env.copy_records()[env.uuid_of(self.copies["a"])]["state"], "demoted")
        self.assertEqual(self.copy_state(names["a"]), "demoted")  # by hand too
        self.assertEqual(data_objects(near["a"]), 0)
        r = demote(near["a"])  # by image name: already done
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("already demoted", r.stdout)
        r = demote(near["c"])
        self.assertEqual(r.returncode, 1)
        self.assertIn("is watched by", r.stderr)
        r = demote("team/data-b")  # by PVC, through the API
        self.assertEqual(r.returncode, 1)
        self.assertIn("a VolumeAttachment attaches it to node gpu-1", r.stderr)
        r = demote("no-such-copy")
        self.assertEqual(r.returncode, 2)
        self.assertIn("no promoted copy", r.stderr)
        rec = env.copy_records()
        self.assertEqual([rec[env.uuid_of(self.copies[k])]["state"] for k in "abcd"],
                         ["demoted", "done", "done", "demoted"])
        self.assertEqual(env.checksum("perf", near["c"]), sums["c"])

    def test_publish_race(self):
        """ControllerPublishVolume of a copy (as the attacher calls it: after
        writing the VolumeAttachment, until OK) while the policy thread
        demotes every copy it may, once a second: an OK publish is never
        followed by the data going while the copy is attached, and no
        demotion lands while a publish copies it back."""
        # 4 MiB of data: a demotion frees little, so the pool stays above the high mark
        # with the ballast below (what a pass freed counts for 30 s against Ceph's stats)
        p0 = self.plugin(self.plain)
        name, far, near = self.promote(p0, "race", mib=4)
        p0.stop()
        ballast = "race-ballast-%s" % env.UNIQUE
        subprocess.run(["rbd", "-c", env.conf(), "import", "--no-progress", "--data-pool", POOL,
                        "-", "rbd/" + ballast], input=os.urandom(32 * MiB), check=True, timeout=120)
        self.addCleanup(env.tool, "rbd", "perf", "rm", "--no-progress", "rbd/" + ballast)
        wait_for("Ceph's stats to show the copy and the ballast", lambda: stored() >= 36 * MiB)
        want = env.checksum("capa", far)
        va = "csi-race-%s" % env.UNIQUE
        unpublish = csi_pb2.ControllerUnpublishVolumeRequest(
            volume_id=self.copies["race"], node_id="gpu-1", secrets=env.secrets())

        def attach():
            self.api.post("/fake/objects/volumeattachments", {
                "apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment",
                "metadata": {"name": va},
                "spec": {"attacher": "csi.gantry.io", "nodeName": "gpu-1",
                         "source": {"persistentVolumeName": name}}})

        def detach():
            req = urllib.request.Request(self.api.base + "/fake/objects/volumeattachments/_/" + va,
                                         method="DELETE")
            urllib.request.urlopen(req, timeout=10).close()

        def state():
            return env.copy_records()[env.uuid_of(self.copies["race"])]["state"]

        def mine(p, decision=None, reason=None):
            return [d for d in self.decisions(p) if d[0] == name and
                    (decision is None or d[1] == decision) and (reason is None or d[2] == reason)]

        def publish(p):
            """The attacher's loop: ABORTED (a copy back, or the volume busy) retried."""
            messages = []
            deadline = time.monotonic() + 120
            while True:
                try:
                    p.call("ControllerPublishVolume", self.publish_req("race"), timeout=60)
                    return messages
                except grpc.RpcError as e:
                    self.assertEqual(e.code(), grpc.StatusCode.ABORTED, e.details())
                    self.assertLess(time.monotonic(), deadline)
                    messages.append(e.details())
                    if not BUSY.match(e.details()):
                        self.assertEqual(LINE.match(e.details()).group(1), name, e.details())
                time.sleep(0.05)

        def published(p):
            """While attached, after an OK publish: the data stays through two passes."""
            self.assertEqual(state(), "done")
            self.assertEqual(env.checksum("perf", near), want)
            passes = p.read_log().count("event=tier.evict_pass_done ")
            wait_for("two passes over the attached copy",
                     lambda: p.read_log().count("event=tier.evict_pass_done ") >= passes + 2, 60)
            self.assertEqual(state(), "done")
            self.assertEqual(env.checksum("perf", near), want)

        # 1: the pass read the VolumeAttachments before the attacher wrote its own and
        # called ControllerPublishVolume (OK: a complete copy): it has to see it all
        # the same before it discards anything
        self.api.post("/fake/hold-lists", {"resource": "volumeattachments", "count": 1})
        p1 = self.plugin(self.config("race", {"highWatermark": 0.01, "lowWatermark": 0.01,
                                             "idleSeconds": 0, "intervalSeconds": 1,
                                             "capacityBytes": CAPACITY}))
        try:
            wait_for("the pass's list held", lambda: self.api.get("/fake/state")["heldLists"], 60)
            attach()
            self.assertEqual(publish(p1), [])
        finally:
            self.api.post("/fake/release-lists", {})
        wait_for("the pass over the copy", lambda: mine(p1), 60)
        self.assertEqual(mine(p1)[0], (name, "kept", "attached"))
        log = p1.read_log()  # decided by the pass that read the stale list, the first one
        self.assertLess(re.search(r"name=%s uuid=\S+ decision=kept reason=attached" %
                                  re.escape(name), log).start(),
                        log.index("event=tier.evict_pass_done cluster=perf pool=%s " % POOL))
        published(p1)
        # 2: the attacher's cycles racing the passes: detached, the copy is demoted;
        # attached again, the publish copies it back, and it stays while attached
        cycles = 2
        for _ in range(cycles):
            p1.call("ControllerUnpublishVolume", unpublish, timeout=60)
            detach()
            n = len(mine(p1, "demoted"))
            wait_for("the demotion of the detached copy", lambda: len(mine(p1, "demoted")) > n, 60)
            self.assertEqual(state(), "demoted")
            attach()
            messages = publish(p1)
            done = [int(LINE.match(m).group(3) or 0) for m in messages if LINE.match(m)]
            self.assertGreater(len(done), 0, "a demoted copy was published at once")
            self.assertEqual(done, sorted(done), "the copy back started over: %s" % messages)
            published(p1)
        p1.stop()
        # the log's order: no demotion between a copy back's start and its publish's OK
        events = re.findall(r"event=tier\.(copy_repromoting|copy_repromoted|evict_decision) "
                            r"(?:cluster=perf )?name=%s uuid=\S+(?: decision=(\w+))?" %
                            re.escape(name), p1.read_log())
        copying = False
        for ev, decision in events:
            if ev == "copy_repromoting":
                copying = True
            elif ev == "copy_repromoted":
                copying = False
            self.assertFalse(copying and decision == "demoted", "demoted while copied back")
        self.assertEqual(sum(1 for ev, _ in events if ev == "copy_repromoted"), cycles)
        print("publish race: %d demotions, %d kept (attached), %d kept (busy)" % (
            len(mine(p1, "demoted")), len(mine(p1, "kept", "attached")),
            len(mine(p1, "kept", "busy"))))

        # 3: another process demotes (`gantryctl tier demote`: no lock shared with the
        # controller, only the record). Held in its re-check of the VolumeAttachments with
        # the record "demoting", the attacher's publish answers ABORTED; then the re-check
        # answers without the attachment (it asked before it was written: the data goes,
        # and the publish copies it back) or with it (the demotion backs off)
        p2 = self.plugin(self.plain)
        for fresh in (False, True):
            p2.call("ControllerUnpublishVolume", unpublish, timeout=60)
            detach()
            self.api.post("/fake/hold-lists", {"resource": "volumeattachments", "skip": 1,
                                               "fresh": fresh})
            try:
                demote = subprocess.Popen([CTL, "tier", "demote", name, "--config", self.plain,
                                           "--kubeconfig", self.kubeconfig],
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                wait_for("gantryctl's re-check held",
                         lambda: self.api.get("/fake/state")["heldLists"], 60)
                self.assertEqual(state(), "demoting")
                attach()
                with self.assertRaises(grpc.RpcError) as cm:
                    p2.call("ControllerPublishVolume", self.publish_req("race"), timeout=60)
                self.assertEqual(cm.exception.code(), grpc.StatusCode.ABORTED)
                self.assertEqual(cm.exception.details(),
                                 "volume_id: %s is being demoted; retry" % name)
            finally:
                self.api.post("/fake/release-lists", {})
            out, errs = demote.communicate(timeout=120)
            if fresh:
                self.assertEqual(demote.returncode, 1, out + errs)
                self.assertIn("a VolumeAttachment attaches it to node gpu-1", errs)
                self.assertEqual(state(), "done")
            else:
                self.assertEqual(demote.returncode, 0, errs)
                self.assertEqual(state(), "demoted")
            messages = publish(p2)
            self.assertEqual(len(messages) > 0, not fresh, messages)
            self.assertEqual(state(), "done")
            self.assertEqual(env.checksum("perf", near), want)
        p2.call("ControllerUnpublishVolume", unpublish, timeout=60)
        detach()
        p2.stop()

if __name__ == "__main__":
    unittest.main()
