"""Checkpoint snapshots drained into Ceph (label `ceph`): gantry-csi over gRPC
(python3-grpcio), a real gantry-target with --durable naming the fixture's
"perf" cluster (images in pool rbd, data in the EC pool ecdata), the image
checked from the outside with the rbd CLI. The snapshotter's loop is
played as it runs: CreateSnapshot again and again until ready_to_use."""
import hashlib
import json
import os
import re
import subprocess
import sys
import time
import unittest

import grpc

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "ceph"))
import ceph_env as env  # noqa: E402
from ckpt_helpers import TargetsTestCase, create_req  # noqa: E402
from csi_client import csi_pb2  # noqa: E402
from targetproc import BUILD  # noqa: E402

MiB = 1 << 20
SIZE = 64 * MiB
CAP_MBPS = 8  # slow enough to catch a drain half way, fast enough for a test


def pattern(seed, n):
    out, block = bytearray(), hashlib.sha256(seed.encode()).digest()
    while len(out) < n:
        block = hashlib.sha256(block).digest()
        out += block
    return bytes(out[:n])


def fixture_config():
    with open(env.CONFIG) as f:
        return json.load(f)


PERF = next(c for c in fixture_config()["clusters"] if c["clusterID"] == "perf") if env.DIR else {}
DURABLE = {"clusterID": "perf", "monitors": PERF.get("monitors"), "userID": PERF.get("userID"),
           "keyFile": PERF.get("keyFile"), "pool": "rbd", "dataPool": "ecdata", "bandwidthMBps": CAP_MBPS,
           "inFlight": 4}


class CheckpointDrainTest(TargetsTestCase):
    TARGETS = (("t", "tgt-a", "leaf-1", "127.0.0.1", {"durable": DURABLE}),
               ("b", "tgt-b", "leaf-2", "127.0.0.2", {"durable": DURABLE}))
    CLUSTERS = [PERF] if env.DIR else None  # for dataset volumes (not "capa": ceph_dataset_dead stops it)

    def volume(self, name, size=SIZE):
        v = self.call("CreateVolume", create_req(name, size=size, leaf="leaf-1")).volume
        self.addCleanup(self.call, "DeleteVolume", csi_pb2.DeleteVolumeRequest(volume_id=v.volume_id))
        return v

    def write_checkpoint(self, v, seed, extents):
        """Writes pattern bytes at (offset, length) extents of the volume's backing file; the rest stays holes."""
        path = os.path.join(self.t.lvs, "vol-" + v.volume_context["uuid"])
        with open(path, "r+b") as f:
            for off, n in extents:
                f.seek(off)
                f.write(pattern(seed + str(off), n))
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()

    def snapshot_req(self, name, v, **params):
        req = csi_pb2.CreateSnapshotRequest(name=name, source_volume_id=v.volume_id)
        for k, val in params.items():
            req.parameters[k] = val
        return req

    def until_ready(self, req, timeout=180):
        """The external-snapshotter's loop: CreateSnapshot until ready_to_use (bounded)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            s = self.call("CreateSnapshot", req).snapshot
            if s.ready_to_use:
                return s
            time.sleep(0.5)
        self.fail("snapshot %s not ready after %d s: %s" % (req.name, timeout, self.drain_of(s)))

    def drain_of(self, s):
        return self.t.call("bdev_lvol_check_drain", snapshot_name="gantry/snap-" + s.snapshot_id[-36:])

    def image_of(self, s):
        return "gantry-ckpt-snap-" + s.snapshot_id[-36:]

    def tier_status(self, *args):
        """`gantryctl tier status` on the suite's driver config (both targets, "perf"): its stdout."""
        p = subprocess.run([os.path.join(BUILD, "bin", "gantryctl"), "tier", "status", "--config",
                            os.path.join(self.dir, "gantry.json"), *args],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout

    def drain_row(self, s):
        doc = json.loads(self.tier_status("--json"))
        self.assertEqual(doc["errors"], [])
        rows = [r for r in doc["copies"] if r["kind"] == "drain" and s.snapshot_id[-36:] in r["source"]]
        self.assertEqual(len(rows), 1, doc)
        return rows[0]

    def test_snapshot_drains_into_the_ec_pool_and_is_ready_once_verified(self):
        v = self.volume("pvc-drain-1")
        want = self.write_checkpoint(v, "one", [(0, 3 * MiB), (20 * MiB, 5 * MiB), (SIZE - MiB, MiB)])
        req = self.snapshot_req("snap-drain-1", v)
        first = self.call("CreateSnapshot", req).snapshot
        self.addCleanup(self.call, "DeleteSnapshot", csi_pb2.DeleteSnapshotRequest(snapshot_id=first.snapshot_id))
        self.assertFalse(first.ready_to_use)  # at 8 MB/s: not yet
        # gantryctl tier status asks both targets: the drain is listed from tgt-a while it runs
        row = self.drain_row(first)
        self.assertIn(row["state"], ("copying", "done"), row)
        self.assertEqual(row["source"], "tgt-a/gantry/snap-" + first.snapshot_id[-36:])
        self.assertEqual(row["destination"], "perf/rbd/" + self.image_of(first))
        self.assertEqual(row["keptIn"], "tgt-a/-")
        self.assertIn(row["bytesTotal"], (0, SIZE), row)  # 0 while queued, before the worker sized it
        self.assertLessEqual(row["bytesDone"], SIZE)
        s = self.until_ready(req)
        self.assertEqual(s.snapshot_id, first.snapshot_id)
        row = self.drain_row(s)
        self.assertEqual((row["state"], row["bytesDone"], row["bytesTotal"]), ("done", SIZE, SIZE), row)
        self.assertEqual(row["progress"], "done")
        table = [l.split() for l in self.tier_status().splitlines() if s.snapshot_id[-36:] in l]
        self.assertEqual(len(table), 1, table)
        self.assertEqual(table[0][:2], ["drain", "done"])
        self.assertEqual(table[0][-3:], ["tgt-a/gantry/snap-" + s.snapshot_id[-36:], "->",
                                         "perf/rbd/" + self.image_of(s)])
        d = self.drain_of(s)
        self.assertEqual(d["state"], "complete", d)
        self.assertEqual((d["cluster_id"], d["pool"]), ("perf", "rbd"))
        info = env.rbd_info("perf", self.image_of(s))
        self.assertEqual(info["size"], SIZE)
        self.assertEqual(info.get("data_pool"), "ecdata")
        self.assertEqual(env.checksum("perf", self.image_of(s)), want)
        listed = self.call("ListSnapshots", csi_pb2.ListSnapshotsRequest(snapshot_id=s.snapshot_id)).entries
        self.assertTrue(listed[0].snapshot.ready_to_use)
        with open(self.t.log) as f:
            done = [l for l in f if "event=target.drain_complete" in l and self.image_of(s) in l]
        self.assertEqual(len(done), 1)
        self.assertRegex(done[0], r"written=9437184 seconds=[0-9.]+ rate=")  # the data bytes: zeros are not written
        with open(self.t.log) as f:  # the EC pool answers the checksum op: nothing was read back
            checks = [l for l in f if "event=target.drain_verify" in l and self.image_of(s) in l]
        self.assertEqual(len(checks), 1, checks)
        self.assertIn("check=checksum", checks[0])
        metrics = self.t.metrics()
        self.assertRegex(metrics, r'gantry_target_copies_total\{kind="drain",result="complete"\} [1-9]')
        self.assertRegex(metrics, r'gantry_target_copy_bytes_total\{kind="drain"\} [1-9]')
        self.assertRegex(metrics, r'gantry_target_copy_seconds_total\{kind="drain"\} [0-9.]*[1-9]')
        # what runs now (a stalled drain is seen by these before it ends): nothing, and
        # the last drain's bytes as last saved
        self.assertRegex(metrics, r'gantry_target_copies_running\{kind="drain"\} 0\n')
        self.assertRegex(metrics, r'gantry_target_copy_done_bytes\{kind="drain"\} [1-9]')
        # DeleteSnapshot removes the durable copy too
        self.call("DeleteSnapshot", csi_pb2.DeleteSnapshotRequest(snapshot_id=s.snapshot_id))
        self.assertNotIn(self.image_of(s), env.rbd_images("perf"))

    def test_kill_9_mid_drain_resumes(self):
        v = self.volume("pvc-drain-kill")
        want = self.write_checkpoint(v, "kill", [(0, 48 * MiB)])
        req = self.snapshot_req("snap-drain-kill", v)
        s = self.call("CreateSnapshot", req).snapshot
        self.addCleanup(self.call, "DeleteSnapshot", csi_pb2.DeleteSnapshotRequest(snapshot_id=s.snapshot_id))
        state_file = os.path.join(self.t.dir, "state.json")
        deadline = time.monotonic() + 60
        done = 0
        while time.monotonic() < deadline and done == 0:  # until a position is on disk
            with open(state_file) as f:
                st = json.load(f)
            drains = [b["drain"] for b in st["bdevs"].values() if "drain" in b]
            done = drains[0].get("bytes_done", 0) if drains else 0
            if done == 0:
                time.sleep(0.2)
        self.assertGreater(done, 0)
        self.assertLess(done, 48 * MiB)
        self.t.kill9()
        self.t.start()
        s2 = self.until_ready(req)
        self.assertEqual(s2.snapshot_id, s.snapshot_id)
        self.assertEqual(env.checksum("perf", self.image_of(s)), want)
        with open(self.t.log) as f:
            log = f.read()
        started = re.findall(r"event=target\.drain_started .*image=%s .*resume=(\S+)" % self.image_of(s), log)
        self.assertEqual(started[0], "no")
        self.assertNotEqual(started[-1], "no")  # the restart resumed from the stored position
        written = re.findall(r"event=target\.drain_complete .*image=%s .*written=(\d+)" % self.image_of(s), log)
        self.assertLessEqual(int(written[-1]), 48 * MiB - done)  # what was persisted is not copied again

    def test_resumed_drain_checks_the_whole_image_by_checksum(self):
        v = self.volume("pvc-drain-resume-bad")
        want = self.write_checkpoint(v, "resume-bad", [(0, 24 * MiB)])
        req = self.snapshot_req("snap-drain-resume-bad", v)
        s = self.call("CreateSnapshot", req).snapshot
        self.addCleanup(self.call, "DeleteSnapshot", csi_pb2.DeleteSnapshotRequest(snapshot_id=s.snapshot_id))
        state_file = os.path.join(self.t.dir, "state.json")
        deadline = time.monotonic() + 60
        position = ""
        while time.monotonic() < deadline and int(position.split(":")[0] or 0) < 1:  # until object 0 counts done
            with open(state_file) as f:
                st = json.load(f)
            position = [b["drain"] for b in st["bdevs"].values() if "drain" in b][0].get("position", "")
            time.sleep(0.1)
        self.assertGreaterEqual(int(position.split(":")[0] or 0), 1)
        self.t.kill9()
        # object 0, done before the kill, changed while gantry-target is down (a plain librados
        # write into the EC data pool): the resumed copy skips it, the whole-image check after it
        # asks the OSDs for its checksum and finds it, and the drain starts over
        prefix = env.rbd_info("perf", self.image_of(s))["block_name_prefix"]
        io = env.admin_ioctx("perf", "ecdata")
        try:
            first = io.read(prefix + ".0000000000000000", 1)
            io.write(prefix + ".0000000000000000", bytes([first[0] ^ 0x5a]), 0)
        finally:
            io.close()
        self.t.start()
        self.until_ready(req)
        self.assertEqual(env.checksum("perf", self.image_of(s)), want)
        with open(self.t.log) as f:
            log = f.read()
        image = self.image_of(s)
        started = re.findall(r"event=target\.drain_started .*image=%s .*resume=(\S+)" % image, log)
        self.assertEqual(len(started), 3, started)
        self.assertEqual((started[0], started[2]), ("no", "no"))  # the start, and the start over
        self.assertNotEqual(started[1], "no")  # the resumed run
        failed = re.findall(r"event=target\.drain_failed .*image=%s .*error=\"([^\"]*)\"" % image, log)
        self.assertEqual(len(failed), 1, failed)
        self.assertRegex(failed[0], r"^verify: the image differs from \S+ at byte 0$")
        checks = re.findall(r"event=target\.drain_verify .*image=%s check=(\S+)" % image, log)
        self.assertEqual(checks, ["checksum"] * 3)

    def test_until_drained_frees_the_fast_copy(self):
        v = self.volume("pvc-drain-evict")
        want = self.write_checkpoint(v, "evict", [(MiB, 2 * MiB)])
        req = self.snapshot_req("snap-drain-evict", v, fastCopyRetention="untilDrained")
        s = self.until_ready(req)
        self.addCleanup(self.call, "DeleteSnapshot", csi_pb2.DeleteSnapshotRequest(snapshot_id=s.snapshot_id))
        self.assertFalse(os.path.exists(os.path.join(self.t.lvs, "snap-" + s.snapshot_id[-36:])))
        self.assertEqual(s.size_bytes, SIZE)
        self.assertEqual(env.checksum("perf", self.image_of(s)), want)
        bad = self.snapshot_req("snap-drain-bad", v, fastCopyRetention="sometimes")
        with self.assertRaises(grpc.RpcError) as e:
            self.call("CreateSnapshot", bad)
        self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("fastCopyRetention", e.exception.details())

    def test_restore_on_another_target_and_as_a_dataset_volume(self):
        v = self.volume("pvc-drain-restore")
        self.write_checkpoint(v, "restore", [(2 * MiB, 6 * MiB), (40 * MiB, MiB)])
        with open(os.path.join(self.t.lvs, "vol-" + v.volume_context["uuid"]), "rb") as f:
            want = hashlib.sha256(f.read()).hexdigest()
        s = self.until_ready(self.snapshot_req("snap-drain-restore", v))
        self.addCleanup(self.call, "DeleteSnapshot", csi_pb2.DeleteSnapshotRequest(snapshot_id=s.snapshot_id))
        # tier checkpoint near leaf-2: a new namespace on tgt-b filled from Ceph; the provisioner's
        # retries see ABORTED with the progress until it is done
        req = create_req("pvc-restored-b", size=0, leaf="leaf-2")
        req.volume_content_source.snapshot.snapshot_id = s.snapshot_id
        aborted = []
        deadline = time.monotonic() + 120
        while True:
            try:
                r = self.call("CreateVolume", req).volume
                break
            except grpc.RpcError as e:
                self.assertEqual(e.code(), grpc.StatusCode.ABORTED, e.details())
                self.assertLess(time.monotonic(), deadline, e.details())
                aborted.append(e.details())
                time.sleep(0.5)
        self.addCleanup(self.call, "DeleteVolume", csi_pb2.DeleteVolumeRequest(volume_id=r.volume_id))
        self.assertTrue(aborted, "a 64 MiB restore at 8 MB/s cannot be done at the first call")
        self.assertIn("restoring", aborted[0])
        self.assertEqual(r.volume_context["targetID"], "tgt-b")
        self.assertEqual(r.capacity_bytes, SIZE)
        with open(os.path.join(self.b.lvs, "vol-" + r.volume_context["uuid"]), "rb") as f:
            self.assertEqual(hashlib.sha256(f.read()).hexdigest(), want)
        # tier dataset: an RBD clone of the drained image, readable by many nodes
        dreq = env.create_req("pvc-restored-ds", size=0, source_snapshot=s.snapshot_id)
        ds = self.call("CreateVolume", dreq).volume
        self.addCleanup(self.call, "DeleteVolume", env.delete_req(ds.volume_id))
        self.assertEqual(ds.capacity_bytes, SIZE)
        image = "gantry-vol-" + env.uuid_of(ds.volume_id)
        self.assertEqual(env.rbd_info("perf", image)["parent"]["image"], self.image_of(s))
        self.assertEqual(env.checksum("perf", image), want)
        # the clone goes first, the checkpoint snapshot after: its image is removed at once, no trash
        self.call("DeleteVolume", env.delete_req(ds.volume_id))
        self.call("DeleteSnapshot", csi_pb2.DeleteSnapshotRequest(snapshot_id=s.snapshot_id))
        self.assertNotIn(self.image_of(s), env.rbd_images("perf"))
        self.assertEqual(self.trashed(self.image_of(s)), [])

    def trashed(self, prefix="gantry-"):
        """The images named @prefix... in the RBD trash of perf/rbd (`rbd trash ls --all`): (name, source)."""
        out = json.loads(env.tool("rbd", "perf", "trash", "ls", "--all", "--long", "--format", "json", "rbd") or "[]")
        return sorted((e["name"], e["source"]) for e in out if e["name"].startswith(prefix))

    def drained_clones(self, tag, n):
        """A drained checkpoint snapshot and @n dataset volumes cloned from it: (snapshot, checksum, volumes)."""
        v = self.volume("pvc-drain-" + tag, size=8 * MiB)  # small: a drain reads all of it at 8 MB/s
        want = self.write_checkpoint(v, tag, [(MiB, 2 * MiB)])
        s = self.until_ready(self.snapshot_req("snap-drain-" + tag, v))
        self.addCleanup(self.call, "DeleteSnapshot", csi_pb2.DeleteSnapshotRequest(snapshot_id=s.snapshot_id))
        clones = []
        for i in range(n):
            ds = self.call("CreateVolume", env.create_req("pvc-%s-ds%d" % (tag, i), size=0,
                                                          source_snapshot=s.snapshot_id)).volume
            self.addCleanup(self.call, "DeleteVolume", env.delete_req(ds.volume_id))
            clones.append(ds)
        # the checkpoint snapshot goes while its clones live: its image waits in the RBD trash
        self.call("DeleteSnapshot", csi_pb2.DeleteSnapshotRequest(snapshot_id=s.snapshot_id))
        self.assertNotIn(self.image_of(s), env.rbd_images("perf"))
        self.assertEqual(self.trashed(self.image_of(s)), [(self.image_of(s), "USER")])
        return s, want, clones

    def test_snapshot_deleted_before_its_dataset_clones_is_purged_with_the_last(self):
        s, want, (a, b) = self.drained_clones("trash", 2)
        self.assertEqual(env.checksum("perf", "gantry-vol-" + env.uuid_of(a.volume_id)), want)
        self.call("DeleteVolume", env.delete_req(a.volume_id))
        self.assertEqual(self.trashed(self.image_of(s)), [(self.image_of(s), "USER")])  # b still hangs on it
        self.assertEqual(env.checksum("perf", "gantry-vol-" + env.uuid_of(b.volume_id)), want)
        self.call("DeleteVolume", env.delete_req(b.volume_id))
        self.assertEqual(self.trashed(), [])  # no Gantry image at all
        self.call("DeleteVolume", env.delete_req(b.volume_id))  # idempotent
        images = env.rbd_images("perf")
        for ds in (a, b):
            self.assertNotIn("gantry-vol-" + env.uuid_of(ds.volume_id), images)
        _, records, _ = env.assert_consistent(self)
        self.assertFalse({env.uuid_of(a.volume_id), env.uuid_of(b.volume_id)} & records)

    def test_delete_volume_retried_after_the_clone_went_still_purges(self):
        s, want, (ds,) = self.drained_clones("trash-retry", 1)
        image = "gantry-vol-" + env.uuid_of(ds.volume_id)
        # a first DeleteVolume fails after it read the parent (the clone is open: a watcher) ...
        import rbd
        io = env.admin_ioctx("perf")
        with rbd.Image(io, image):
            with self.assertRaises(grpc.RpcError) as e:
                self.call("DeleteVolume", env.delete_req(ds.volume_id))
            self.assertEqual(e.exception.code(), grpc.StatusCode.FAILED_PRECONDITION, e.exception.details())
        # ... and the clone goes as a controller dying right after rbd_remove() would leave it
        env.tool("rbd", "perf", "rm", "--no-progress", "rbd/" + image)
        self.assertEqual(self.trashed(self.image_of(s)), [(self.image_of(s), "USER")])
        self.call("DeleteVolume", env.delete_req(ds.volume_id))  # the retry: the clone is gone already
        self.assertEqual(self.trashed(self.image_of(s)), [])
        self.assertNotIn(env.uuid_of(ds.volume_id), env.assert_consistent(self)[1])


if __name__ == "__main__":
    unittest.main()
