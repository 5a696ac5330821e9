"""Dataset promotion through gantry-csi between the fixture's two real
clusters: a 1 GiB volume of "capa" promoted into "perf" through the
provisioner's retry loop (CreateVolume answers ABORTED with the progress
until the copy is done), content checked by checksum; kill -9 of the
controller at ~30 % and a new controller resumes, re-copying at most a few
percent (bytes measured at the destination's OSDs); DeleteVolume while the
copy runs cancels it and leaves nothing; the progress metrics. Several
CreateVolume calls of one name in flight at once (provisioner replicas)
during a throttled copy see one copy and one volume, and a DeleteVolume
among them leaves nothing of it."""
import json
import os
import random
import re
import signal
import subprocess
import tempfile
import threading
import time
import unittest
import urllib.request

import ceph_env as env
from ceph_env import Plugin, csi_pb2

GiB = 1 << 30
LINE = re.compile(r"^copying (\S+) from capa: (planning|(\d+) %(, (starting|[0-9.]+ [kMGT]?B/s, "
                  r"about .+ left))?)$")


def config(read_mbps=None, in_flight=8, wait_seconds=None):
    """The fixture's driver config with a copy policy on "capa"."""
    with open(env.CONFIG) as f:
        cfg = json.load(f)
    for c in cfg["clusters"]:
        if c["clusterID"] == "capa":
            c["copy"] = {"objectsInFlight": in_flight}
            if read_mbps:
                c["copy"]["readMBps"] = read_mbps
            if wait_seconds is not None:
                c["copy"]["waitSeconds"] = wait_seconds
    fd, path = tempfile.mkstemp(prefix="gantry-tier-", suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump(cfg, f)
    return path


CTL = os.path.join(os.environ.get("GANTRY_BUILD_DIR", "build"), "bin", "gantryctl")


def tier_status(cfg):
    """`gantryctl tier status` as an operator runs it: (table text, JSON copies by name)."""
    ctl = CTL
    table = subprocess.run([ctl, "tier", "status", "--config", cfg], capture_output=True,
                           text=True, timeout=120, check=True).stdout
    out = subprocess.run([ctl, "tier", "status", "--config", cfg, "--json"], capture_output=True,
                         text=True, timeout=120, check=True).stdout
    return table, {c["name"]: c for c in json.loads(out)["copies"]}


def source_snaps(image, cluster="capa"):
    """The snapshot names of rbd/@image."""
    return [s["name"] for s in json.loads(env.tool("rbd", cluster, "snap", "ls", "--format",
                                                   "json", "rbd/" + image))]


def percent(message):
    m = LINE.match(message)
    if not m:
        raise AssertionError("not a progress line: %r" % message)
    return int(m.group(3) or 0)


class CopyTest(unittest.TestCase):
    """What the promotion tests share: controllers started on the class's
    configs (@configs), all killed at the end, and the source volume in
    "capa" (@source) deleted then."""
    configs, plugins, source = [], [], None

    @classmethod
    def make_source(cls, prefix, size):
        """The class's configs (uncapped, capped at 40 MB/s) and its source: a
        volume of "capa" of @size bytes, full of data. Returns (volume, image)."""
        cls.configs = [config(), config(read_mbps=40)]
        cls.plugins = []
        p = cls.plugin(cls.configs[0])
        cls.source = p.call("CreateVolume", env.create_req(prefix + env.UNIQUE, "capa",
                                                           size=size), timeout=60).volume
        image = dict(cls.source.volume_context)["imageName"]
        env.tool("rbd", "capa", "bench", "--io-type", "write", "--io-pattern", "seq",
                 "--io-size", "4M", "--io-threads", "8", "--io-total", "%dM" % (size >> 20),
                 "rbd/" + image)
        return cls.source, image

    @classmethod
    def plugin(cls, cfg):
        p = Plugin(mode="controller", node_id=None, config=cfg,
                   extra=["--metrics-addr", "127.0.0.1:0"]).start()
        cls.plugins.append(p)
        return p

    @classmethod
    def tearDownClass(cls):
        p = cls.plugin(cls.configs[0])
        env.retry(lambda: p.call("DeleteVolume", env.delete_req(cls.source.volume_id, "capa")))
        for q in cls.plugins:
            q.kill()
            q.cleanup()
        for c in cls.configs:
            os.unlink(c)

    def metrics(self, p):
        port = re.search(r"event=csi.metrics_listening .*port=(\d+)", p.read_log()).group(1)
        with urllib.request.urlopen("http://127.0.0.1:%s/metrics" % port, timeout=10) as r:
            return r.read().decode()


class PromoteTest(CopyTest):
    @classmethod
    def setUpClass(cls):
        # one 1 GiB source for every test
        cls.far, cls.far_img = cls.make_source("tier-far-", GiB)
        cls.want = env.checksum("capa", cls.far_img)

    def setUp(self):
        self.made = []
        self.p = None  # the controller whose copies the test leaves running

    def tearDown(self):
        # only the controller running a copy can cancel it (one controller leads in a cluster)
        p = self.p or self.plugin(self.configs[0])
        for vid in reversed(self.made):
            env.retry(lambda: p.call("DeleteVolume", env.delete_req(vid)))
        env.assert_consistent(self)

    def req(self, name):
        return env.create_req(name, "perf", size=0, source_volume=self.far.volume_id)

    def name(self, what):
        return "%s-%s-%s" % (self._testMethodName[5:20].replace("_", "-"), what, env.UNIQUE)

    def test_promote_1gib_through_retry_loop(self):
        p = self.plugin(self.configs[0])
        name = self.name("near")
        start = time.monotonic()
        vol, messages = env.provision(p, self.req(name), timeout=600)
        took = time.monotonic() - start
        self.made.append(vol.volume_id)
        print("promoted 1 GiB in %.1f s through %d ABORTED answers; last: %s" %
              (took, len(messages), messages[-1] if messages else "-"))
        self.assertGreater(len(messages), 0, "a 1 GiB copy answered OK at once")
        self.assertEqual(LINE.match(messages[0]).group(1), name)
        done = [percent(m) for m in messages]
        self.assertEqual(done, sorted(done), "progress went backwards")
        self.assertTrue(any("B/s, about" in m for m in messages), messages)
        ctx = dict(vol.volume_context)
        self.assertEqual(vol.capacity_bytes, GiB)
        self.assertEqual(env.rbd_info("perf", ctx["imageName"])["data_pool"], "ecdata")
        self.assertEqual(env.checksum("perf", ctx["imageName"]), self.want)
        # the same volume on every retry, answered at once now
        again = p.call("CreateVolume", self.req(name), timeout=60).volume
        self.assertEqual(again.volume_id, vol.volume_id)
        rec = env.copy_records()[env.uuid_of(vol.volume_id)]
        self.assertEqual(rec["state"], "done")
        _, rows = tier_status(self.configs[0])
        self.assertEqual(rows[name]["state"], "done")
        self.assertEqual(rows[name]["progress"], "done")
        self.assertEqual(rows[name]["keptIn"], "perf/rbd")
        self.assertEqual(rec["bytesDone"], GiB)
        self.assertEqual(rec["bytesTotal"], GiB)
        self.assertEqual(rec["source"], "capa/rbd/%s@gantry-copy-%s" % (
            self.far_img, env.uuid_of(vol.volume_id)))
        # the copy's snapshot of the source stays while the copy exists (a refresh's base),
        # and the complete copy has its own snapshot, the one a refresh clones
        self.assertIn("gantry-copy-%s" % env.uuid_of(vol.volume_id), source_snaps(self.far_img))
        self.assertEqual(rec["promotedSnap"], "gantry-promoted")
        self.assertEqual(source_snaps(ctx["imageName"], "perf"), ["gantry-promoted"])
        m = self.metrics(p)
        self.assertIn('gantry_tier_copies_total{result="done"} 1', m)
        read = re.search(r'gantry_tier_copy_read_bytes_total\{source="capa",destination="perf"\} '
                         r'(\d+)', m)
        self.assertEqual(int(read.group(1)), GiB)
        self.assertIn("gantry_tier_copies_in_progress 0", m)

    def test_kill_9_at_30_percent_resumes(self):
        name = self.name("near")
        before = env.osd_write_bytes("perf")
        # capped at 40 MB/s: the kill lands mid-copy
        p1 = self.plugin(self.configs[1])
        seen = []
        _, messages = env.provision(p1, self.req(name), timeout=300,
                                    on_progress=lambda m: percent(m) >= 30)
        p1.kill()
        at_kill = percent(messages[-1])
        uuid = env.journal()[0][name]
        rec = env.copy_records()[uuid]
        self.assertEqual(rec["state"], "copying")
        self.assertLess(rec["bytesDone"], GiB)
        # a new controller, uncapped, picks up on the next retry
        p2 = self.plugin(self.configs[0])
        vol, messages = env.provision(p2, self.req(name), timeout=600,
                                      on_progress=lambda m: seen.append(percent(m)) and False)
        self.made.append(vol.volume_id)
        self.assertEqual(env.uuid_of(vol.volume_id), uuid)
        self.assertEqual(env.checksum("perf", dict(vol.volume_context)["imageName"]), self.want)
        written = env.osd_write_bytes("perf") - before
        recopied = written - GiB
        print("killed at %d %% (persisted %.1f %%); resumed at %d %%; written %d bytes for 1 GiB: "
              "re-copied %.2f %%" % (at_kill, 100.0 * rec["bytesDone"] / GiB, seen[0] if seen
                                     else -1, written, 100.0 * recopied / GiB))
        self.assertGreaterEqual(seen[0], 25, "the new controller started over")
        self.assertLessEqual(recopied, 0.05 * GiB, "re-copied more than 5 %")
        self.assertIn("event=tier.copy_started", p2.read_log())

    def test_delete_while_copying(self):
        p = self.p = self.plugin(self.configs[1])
        name = self.name("gone")
        env.provision(p, self.req(name), timeout=300, on_progress=lambda m: percent(m) >= 5)
        uuid = env.journal()[0][name]
        self.assertIn(uuid, env.copy_records())
        table, rows = tier_status(self.configs[1])
        self.assertRegex(table, r"promote +copying +%s " % re.escape(name))
        self.assertEqual(rows[name]["kind"], "promote")
        self.assertEqual(rows[name]["state"], "copying")
        self.assertEqual(rows[name]["bytesTotal"], GiB)
        self.assertRegex(rows[name]["progress"], r"^\d+ %")
        self.assertTrue(rows[name]["source"].startswith("capa/rbd/%s@gantry-copy-" % self.far_img))
        vid = env.volume_id("perf", "rbd", uuid)
        p.call("DeleteVolume", env.delete_req(vid), timeout=60)
        self.assertIn("event=tier.copy_cancelled", p.read_log())
        self.assertNotIn(uuid, env.copy_records())
        self.assertNotIn("gantry-vol-" + uuid, env.rbd_images("perf"))
        self.assertNotIn(name, env.journal()[0])
        self.assertNotIn("gantry-copy-" + uuid, source_snaps(self.far_img))
        # deleting again is fine; the name is free for a new copy
        p.call("DeleteVolume", env.delete_req(vid), timeout=60)
        _, messages = env.provision(p, self.req(name), timeout=300, on_progress=lambda m: True)
        self.assertEqual(percent(messages[0]), 0)
        uuid2 = env.journal()[0][name]
        self.assertNotEqual(uuid2, uuid)
        self.made.append(env.volume_id("perf", "rbd", uuid2))

    def test_gantryctl_promote_image(self):
        dst = "tier-ctl-%s" % env.UNIQUE
        args = ["tier", "promote", "--from", "capa/rbd/" + self.far_img, "--to", "perf/rbd/" + dst,
                "--data-pool", "ecdata", "--config"]
        try:
            # capped at 40 MB/s, stopped with Ctrl-C past 20 %
            p = subprocess.Popen([CTL, *args, self.configs[1]], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
            for line in p.stdout:
                if percent(line.strip()) >= 20:
                    p.send_signal(signal.SIGINT)
                    break
            out, errs = p.communicate(timeout=120)
            self.assertEqual(p.returncode, 1, errs)
            self.assertIn("run the same command again to resume", errs)
            rec = env.copy_records()["image-" + dst]
            self.assertEqual(rec["state"], "copying")
            self.assertGreater(rec["bytesDone"], 0)
            # the same command resumes and finishes
            r = subprocess.run([CTL, *args, self.configs[0]], capture_output=True, text=True,
                               timeout=600)
            self.assertEqual(r.returncode, 0, r.stderr)
            lines = r.stdout.splitlines()
            self.assertEqual(lines[-1], "promoted capa/rbd/%s -> perf/rbd/%s" % (self.far_img, dst))
            self.assertGreaterEqual(percent(lines[0]), 15, "started over: %s" % lines[0])
            self.assertEqual(env.checksum("perf", dst), self.want)
            self.assertEqual(env.copy_records()["image-" + dst]["state"], "done")
            self.assertIn("gantry-copy-image-" + dst, source_snaps(self.far_img))
            _, rows = tier_status(self.configs[0])
            self.assertEqual(rows["perf/rbd/" + dst]["state"], "done")
            # an image it did not make is never overwritten
            env.tool("rbd", "perf", "create", "--size", "16M", "rbd/%s-foreign" % dst)
            r = subprocess.run([CTL, "tier", "promote", "--from", "capa/rbd/" + self.far_img,
                                "--to", "perf/rbd/%s-foreign" % dst, "--config", self.configs[0]],
                               capture_output=True, text=True, timeout=120)
            self.assertEqual(r.returncode, 2)
            self.assertIn("exists and was not made by gantryctl tier promote", r.stderr)
            r = subprocess.run([CTL, "tier", "promote", "--from", "capa/rbd", "--to", "x",
                                "--config", self.configs[0]], capture_output=True, text=True,
                               timeout=60)
            self.assertEqual(r.returncode, 2)
            self.assertIn("--from: capa/rbd is not CLUSTER/POOL/IMAGE[@SNAP]", r.stderr)
        finally:
            for image in (dst, dst + "-foreign"):
                env.tool("rbd", "perf", "snap", "purge", "--no-progress", "rbd/" + image,
                         check=False)
                env.tool("rbd", "perf", "rm", "--no-progress", "rbd/" + image, check=False)
            env.tool("rbd", "capa", "snap", "rm", "--no-progress",
                     "rbd/%s@gantry-copy-image-%s" % (self.far_img, dst), check=False)
            env.tool("rados", "perf", "-p", "rbd", "rmomapkey", "gantry.copies", "image-" + dst,
                     check=False)


# The other ABORTED answers of CreateVolume: an operation on the same name or
# volume holds its lock (dataset_volume.c); the caller retries, as with progress.
LOCKED = re.compile(r"^name: (an operation on volume \S+ is in progress|volume \S+ is busy "
                    r"\(being deleted\?\)|volume \S+ is being created and deleted elsewhere)$")


class PromoteWaitTest(CopyTest):
    """copy.waitSeconds: a CreateVolume that finds the copy running waits for
    its end (within its own deadline) instead of answering ABORTED at once."""

    @classmethod
    def setUpClass(cls):
        cls.src, cls.src_img = cls.make_source("tier-wait-", 128 << 20)
        cls.want = env.checksum("capa", cls.src_img)
        # 128 MiB read at 32 MB/s: the copy takes 4 s at least
        cls.configs.append(config(read_mbps=32, wait_seconds=60))

    def test_create_waits_for_the_copy(self):
        p = self.plugin(self.configs[-1])
        req = lambda name: env.create_req(name, "perf", size=0, source_volume=self.src.volume_id)
        made = []
        try:
            # a deadline far enough: the first call starts the copy and answers OK at its end
            name = "wait-ok-" + env.UNIQUE
            vol = p.call("CreateVolume", req(name), timeout=60).volume
            made.append(vol.volume_id)
            self.assertEqual(env.checksum("perf", dict(vol.volume_context)["imageName"]), self.want)
            self.assertEqual(env.copy_records()[env.uuid_of(vol.volume_id)]["state"], "done")
            # gone again, so the next copy is a whole one (not a refresh of this one)
            env.retry(lambda: p.call("DeleteVolume", env.delete_req(made.pop())))
            # a deadline of 7 s leaves 2 s to wait (5 s are the answer's margin): ABORTED with
            # the progress line of then, and the retry loop ends it as before
            name = "wait-short-" + env.UNIQUE
            import grpc
            with self.assertRaises(grpc.RpcError) as cm:
                p.call("CreateVolume", req(name), timeout=7)
            self.assertEqual(cm.exception.code(), grpc.StatusCode.ABORTED)
            percent(cm.exception.details())
            vol, _ = env.provision(p, req(name), timeout=300)
            made.append(vol.volume_id)
            self.assertEqual(env.checksum("perf", dict(vol.volume_context)["imageName"]), self.want)
            self.assertEqual(p.read_log().count("event=tier.copy_started"), 2)
        finally:
            for vid in reversed(made):
                env.retry(lambda: p.call("DeleteVolume", env.delete_req(vid)))
        env.assert_consistent(self)


class Replica(threading.Thread):
    """One external-provisioner replica: CreateVolume of @req over and over,
    ABORTED and DEADLINE_EXCEEDED retried after a short jittered backoff,
    until OK (and @go_on() is false) or @stop is set. Each answer is kept
    as (sent, answered, code name, details or volume)."""

    def __init__(self, plugin, req, stop, go_on=lambda: False):
        super().__init__(daemon=True)
        self.plugin, self.req, self.stop, self.go_on = plugin, req, stop, go_on
        self.answers, self.error = [], None

    def run(self):
        import grpc
        try:
            while not self.stop.is_set():
                sent = time.monotonic()
                try:
                    vol = self.plugin.call("CreateVolume", self.req, timeout=60).volume
                    self.answers.append((sent, time.monotonic(), "OK", vol))
                    if not self.go_on():
                        return
                except grpc.RpcError as e:
                    self.answers.append((sent, time.monotonic(), e.code().name, e.details()))
                    if e.code() not in (grpc.StatusCode.ABORTED,
                                        grpc.StatusCode.DEADLINE_EXCEEDED):
                        return
                time.sleep(random.uniform(0.02, 0.08))
        except Exception as e:  # noqa: BLE001 - reported by the test
            self.error = e


def run_replicas(plugin, req, n, stop, go_on=lambda: False, timeout=120):
    """@n Replicas of @req started at once; joined (bounded by @timeout, then stopped)."""
    threads = [Replica(plugin, req, stop, go_on) for _ in range(n)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + timeout
    for t in threads:
        t.join(max(0.1, deadline - time.monotonic()))
    stop_replicas(threads, stop)
    return threads


def stop_replicas(threads, stop):
    """Sets @stop, joins @threads (bounded) and raises what one of them raised."""
    stop.set()
    for t in threads:
        t.join(60)
    for t in threads:
        if t.error:
            raise t.error


class PromoteRaceTest(CopyTest):
    """Several CreateVolume calls of one name in flight at once while the
    promotion copies (provisioner replicas, or a restarted one): the
    name's and the volume's locks make them take turns; they all see one
    copy, one volume, and a DeleteVolume among them leaves nothing of it."""
    N = 5

    @classmethod
    def setUpClass(cls):
        cls.far, cls.far_img = cls.make_source("tier-race-", 128 << 20)
        cls.want = env.checksum("capa", cls.far_img)
        # 128 MiB at 16 MB/s: ~8 s of copying for the replicas to overlap in
        cls.configs.append(config(read_mbps=16))

    def setUp(self):
        self.p = self.plugin(self.configs[2])
        self.images = env.rbd_images("perf")
        self.name = "race-%s-%s" % (self._testMethodName[5:14].replace("_", "-"), env.UNIQUE)
        self.req = env.create_req(self.name, "perf", size=0, source_volume=self.far.volume_id)

    def tearDown(self):
        uuid = env.journal()[0].get(self.name)
        if uuid:
            env.retry(lambda: self.p.call("DeleteVolume",
                                          env.delete_req(env.volume_id("perf", "rbd", uuid))))
        env.assert_consistent(self)

    def check_answers(self, t, delete_at=None):
        """Every answer of Replica @t is OK or ABORTED (progress of this name,
        or a lock held by another call); the progress never goes backwards,
        except once for a new copy after a DeleteVolume whose successful
        attempt was sent at @delete_at. Returns (progress lines, lock answers,
        volumes)."""
        progress, locked, oks, last, restarted = 0, 0, [], -1, False
        for _, answered, code, what in t.answers:
            if code == "OK":
                oks.append(what)
                continue
            self.assertEqual(code, "ABORTED", what)
            if LOCKED.match(what):
                self.assertIn(self.name, what)
                locked += 1
                continue
            self.assertRegex(what, LINE)
            self.assertEqual(LINE.match(what).group(1), self.name, what)
            done = percent(what)
            if done < last and delete_at is not None and answered > delete_at and not restarted:
                restarted, last = True, -1  # the volume of the name the delete left: a new copy
            self.assertGreaterEqual(done, last, "progress went backwards: %s" % what)
            last, progress = done, progress + 1
        return progress, locked, oks

    def overlapped(self, threads):
        """Pairs of calls of different replicas in flight at the same time."""
        calls = sorted((a[0], a[1], i) for i, t in enumerate(threads) for a in t.answers)
        n = 0
        for j, (s, e, i) in enumerate(calls):
            n += sum(1 for s2, _, i2 in calls[j + 1:] if s2 < e and i2 != i)
        return n

    def test_concurrent_retries(self):
        threads = run_replicas(self.p, self.req, self.N, threading.Event())
        counts = [self.check_answers(t) for t in threads]
        vols = [v for _, _, oks in counts for v in oks]
        progress = sum(c[0] for c in counts)
        locked = sum(c[1] for c in counts)
        both = self.overlapped(threads)
        print("%d replicas: %d calls, %d progress answers, %d lock answers, %d overlapping pairs" %
              (self.N, sum(len(t.answers) for t in threads), progress, locked, both))
        # the calls really were in flight together during the copy
        self.assertGreaterEqual(sum(1 for c in counts if c[0] > 0), 2, counts)
        self.assertGreater(both, 0)
        self.assertEqual(len(vols), self.N, "a replica never got OK")
        for v in vols:
            self.assertEqual(v.volume_id, vols[0].volume_id)
            self.assertEqual(v.capacity_bytes, 128 << 20)
            self.assertEqual(dict(v.volume_context), dict(vols[0].volume_context))
        uuid = env.uuid_of(vols[0].volume_id)
        # one copy made it: one image, one record, one snapshot of the source
        self.assertEqual(env.rbd_images("perf") - self.images, {"gantry-vol-" + uuid})
        recs = {k: r for k, r in env.copy_records().items() if r["name"] == self.name}
        self.assertEqual(list(recs), [uuid])
        self.assertEqual(recs[uuid]["state"], "done")
        self.assertEqual(source_snaps(self.far_img), ["gantry-copy-" + uuid])
        self.assertEqual(self.p.read_log().count("event=tier.copy_started name=%s " % self.name), 1)
        self.assertEqual(env.checksum("perf", "gantry-vol-" + uuid), self.want)
        # DeleteVolume removes all of it
        env.retry(lambda: self.p.call("DeleteVolume", env.delete_req(vols[0].volume_id), timeout=60))
        self.assertEqual(env.rbd_images("perf"), self.images)
        self.assertNotIn(uuid, env.copy_records())
        self.assertNotIn(self.name, env.journal()[0])
        self.assertEqual(source_snaps(self.far_img), [])

    def test_delete_among_retries(self):
        stop, deleted = threading.Event(), threading.Event()

        def go_on():  # none stops on its own before the delete is through
            return not deleted.is_set()

        threads = [Replica(self.p, self.req, stop, go_on) for _ in range(self.N)]
        for t in threads:
            t.start()
        try:
            # mid-copy: past 10 %, as the replicas see it
            def mid():
                return any(c == "ABORTED" and LINE.match(m) and percent(m) >= 10
                           for t in threads for _, _, c, m in list(t.answers))
            deadline = time.monotonic() + 120
            while not mid():
                self.assertLess(time.monotonic(), deadline, "the copy never got to 10 %")
                time.sleep(0.05)
            uuid = env.journal()[0][self.name]
            vid = env.volume_id("perf", "rbd", uuid)
            sent = []

            def delete():
                sent.append(time.monotonic())
                return self.p.call("DeleteVolume", env.delete_req(vid), timeout=60)
            env.retry(delete)  # ABORTED while a create holds the volume's lock
            done_at = time.monotonic()
            # every replica calls at least once more after the delete (a stale retry)
            deadline = time.monotonic() + 60
            while any(t.is_alive() and not any(a[0] > done_at for a in t.answers)
                      for t in threads):
                self.assertLess(time.monotonic(), deadline, "a replica stopped calling")
                time.sleep(0.05)
        finally:
            deleted.set()
            stop_replicas(threads, stop)
        for t in threads:
            _, _, oks = self.check_answers(t, delete_at=sent[-1])
            # the deleted volume never answered OK: its copy was cancelled
            self.assertEqual([v.volume_id for v in oks if v.volume_id == vid], [])
        self.assertIn("event=tier.copy_cancelled name=%s uuid=%s" % (self.name, uuid),
                      self.p.read_log())
        # nothing of the deleted volume is left...
        self.assertNotIn(uuid, env.copy_records())
        self.assertNotIn("gantry-vol-" + uuid, env.rbd_images("perf"))
        self.assertNotIn("gantry-copy-" + uuid, source_snaps(self.far_img))
        # ...and the retries after it made exactly one new volume of the name (the name
        # was free again): one image, one record, one snapshot, consistent when complete
        uuid2 = env.journal()[0][self.name]
        self.assertNotEqual(uuid2, uuid)
        self.assertEqual(env.rbd_images("perf") - self.images, {"gantry-vol-" + uuid2})
        recs = [k for k, r in env.copy_records().items() if r["name"] == self.name]
        self.assertEqual(recs, [uuid2])
        self.assertEqual(source_snaps(self.far_img), ["gantry-copy-" + uuid2])
        vol, _ = env.provision(self.p, self.req, timeout=120)
        self.assertEqual(env.uuid_of(vol.volume_id), uuid2)
        self.assertEqual(env.checksum("perf", "gantry-vol-" + uuid2), self.want)
        env.retry(lambda: self.p.call("DeleteVolume", env.delete_req(vol.volume_id), timeout=60))
        self.assertEqual(env.rbd_images("perf"), self.images)
        self.assertEqual([k for k, r in env.copy_records().items() if r["name"] == self.name], [])
        self.assertEqual(source_snaps(self.far_img), [])


if __name__ == "__main__":
    unittest.main()
