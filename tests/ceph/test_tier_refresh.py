"""Incremental refresh and resume-at-start of dataset promotions,
between the fixture's two real clusters, driven as external-provisioner
would: a 256 MiB dataset in "capa" is promoted into "perf" from a CSI
snapshot; 5 % of the source is changed and snapshotted again; a new volume
from the new snapshot is made as a clone of the promoted copy plus only the
changed objects (bytes counted by the copier's record and at the OSDs), its
content equals the new snapshot and the old copy still equals the old one.
DeleteVolume of the old copy while the new one is its clone is refused and
loses nothing (its copy record stays); after the new one, it goes.
Resume at start: the controller is killed with kill -9 mid-copy and a new
one carries the copy on without any CreateVolume call."""
import os
import re
import subprocess
import time
import unittest

import grpc

import ceph_env as env
from ceph_env import csi_pb2
from test_tier_promote import CTL, LINE, CopyTest, percent, source_snaps, tier_status

MiB = 1 << 20
SIZE = 256 * MiB


def wait_for(what, fn, timeout):
    """Polls @fn until it returns a true value (returned), bounded by @timeout seconds."""
    deadline = time.monotonic() + timeout
    while True:
        v = fn()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(0.2)


class RefreshTest(CopyTest):
    @classmethod
    def setUpClass(cls):
        cls.src, cls.src_img = cls.make_source("refresh-src-", SIZE)

    def setUp(self):
        self.made = []  # ("volume"|"snapshot", id, cluster), deleted in reverse order
        self.uuids = []  # of the volumes made in "perf"
        self.p = None

    def tearDown(self):
        p = self.p or self.plugin(self.configs[0])
        for kind, i, cluster in reversed(self.made):
            if kind == "volume":
                env.retry(lambda: p.call("DeleteVolume", env.delete_req(i, cluster)))
            else:
                env.retry(lambda: p.call("DeleteSnapshot", csi_pb2.DeleteSnapshotRequest(
                    snapshot_id=i, secrets=env.secrets(cluster))))
        env.assert_consistent(self)
        left = {"gantry-vol-" + u for u in self.uuids} & env.rbd_images("perf")
        self.assertEqual(left, set(), "images left behind")
        self.assertEqual(set(self.uuids) & set(env.copy_records()), set(), "records left behind")

    def name(self, what):
        return "%s-%s-%s" % (self._testMethodName[5:20].replace("_", "-"), what, env.UNIQUE)

    def snapshot(self, p, what):
        snap = p.call("CreateSnapshot", csi_pb2.CreateSnapshotRequest(
            name=self.name(what), source_volume_id=self.src.volume_id,
            secrets=env.secrets("capa")), timeout=60).snapshot
        self.made.append(("snapshot", snap.snapshot_id, "capa"))
        return snap, "gantry-snap-" + env.uuid_of(snap.snapshot_id)

    def promote(self, p, what, snap):
        vol, messages = env.provision(p, env.create_req(self.name(what), "perf", size=0,
                                                        source_snapshot=snap.snapshot_id),
                                      timeout=300)
        self.made.append(("volume", vol.volume_id, "perf"))
        self.uuids.append(env.uuid_of(vol.volume_id))
        return vol, messages

    def change_source(self):
        """Rewrites 5 % of the source (12.8 MiB in four places, one a discard):
        5 of its 64 objects."""
        import rbd
        io = env.admin_ioctx("capa")
        try:
            with rbd.Image(io, self.src_img) as img:
                for off, length in ((20 * MiB, 4 * MiB), (101 * MiB, 4 * MiB + 819 * 1024),
                                    (200 * MiB, 3 * MiB)):
                    img.write(os.urandom(length), off)
                img.discard(240 * MiB, MiB)
                img.flush()
        finally:
            io.close()

    def test_refresh_copies_only_changes(self):
        p = self.p = self.plugin(self.configs[0])
        snap1, rbd_snap1 = self.snapshot(p, "v1")
        want1 = env.checksum("capa", "%s@%s" % (self.src_img, rbd_snap1))
        v1, _ = self.promote(p, "v1", snap1)
        img1 = dict(v1.volume_context)["imageName"]
        rec1 = env.copy_records()[env.uuid_of(v1.volume_id)]
        self.assertEqual(rec1["promotedSnap"], "gantry-promoted")
        self.assertNotIn("refreshOf", rec1)

        self.change_source()
        snap2, rbd_snap2 = self.snapshot(p, "v2")
        want2 = env.checksum("capa", "%s@%s" % (self.src_img, rbd_snap2))
        self.assertNotEqual(want1, want2)
        before = env.osd_write_bytes("perf")
        v2, messages = self.promote(p, "v2", snap2)
        osd_written = env.osd_write_bytes("perf") - before
        img2 = dict(v2.volume_context)["imageName"]
        rec2 = env.copy_records()[env.uuid_of(v2.volume_id)]
        print("full copy wrote %d bytes; refresh wrote %d bytes (%.1f %% of %d), planned %d, "
              "OSDs of perf took %d bytes (%.1f %%), %d ABORTED answers" % (
                  rec1["bytesWritten"], rec2["bytesWritten"],
                  100.0 * rec2["bytesWritten"] / SIZE, SIZE, rec2["bytesTotal"], osd_written,
                  100.0 * osd_written / SIZE, len(messages)))
        # ABORTED with the usual progress lines, then OK
        self.assertGreater(len(messages), 0)
        self.assertEqual(LINE.match(messages[0]).group(1), self.name("v2"))
        for m in messages:
            percent(m)
        # built on the old copy, from the old snapshot
        self.assertEqual(rec2["state"], "done")
        self.assertEqual(rec2["refreshOf"], env.uuid_of(v1.volume_id))
        self.assertEqual(rec2["refreshFrom"], rbd_snap1)
        self.assertEqual(rec2["refreshParent"], img1 + "@gantry-promoted")
        parent = env.rbd_info("perf", img2)["parent"]
        self.assertEqual((parent["image"], parent["snapshot"]), (img1, "gantry-promoted"))
        # only the changes were copied: at most 10 % of the image's bytes
        self.assertGreater(rec1["bytesWritten"], 0.9 * SIZE)
        self.assertGreater(rec2["bytesWritten"], 0)
        self.assertLessEqual(rec2["bytesWritten"], 0.10 * SIZE)
        self.assertLessEqual(rec2["bytesTotal"], 0.10 * SIZE)
        self.assertLessEqual(osd_written, 0.10 * SIZE)
        # the new volume is the new snapshot, the old one is untouched
        self.assertEqual(env.checksum("perf", img2), want2)
        self.assertEqual(env.checksum("perf", img1), want1)
        m = self.metrics(p)
        self.assertIn('gantry_tier_refreshes_total{result="done"} 1', m)
        _, rows = tier_status(self.configs[0])
        self.assertEqual(rows[self.name("v2")]["refreshOf"], env.uuid_of(v1.volume_id))
        self.assertIn("event=tier.refresh_base", p.read_log())
        self.check_gantryctl_refresh(v1, rbd_snap1, rbd_snap2, want2)
        # the old copy is the new one's clone parent: it cannot go first, and trying
        # leaves the new volume whole
        with self.assertRaises(grpc.RpcError) as cm:
            p.call("DeleteVolume", env.delete_req(v1.volume_id), timeout=60)
        self.assertEqual(cm.exception.code(), grpc.StatusCode.FAILED_PRECONDITION,
                         cm.exception.details())
        self.assertIn("clones", cm.exception.details())
        self.assertEqual(env.checksum("perf", img2), want2)
        # ... and loses nothing: the base keeps its copy record (tier status, eviction and
        # later refreshes see it), its refresh base snapshot and its content
        kept = env.copy_records()[env.uuid_of(v1.volume_id)]
        self.assertEqual((kept["state"], kept["promotedSnap"]), ("done", "gantry-promoted"))
        self.assertIn(self.name("v1"), tier_status(self.configs[0])[1])
        self.assertIn("gantry-promoted", source_snaps(img1, "perf"))
        self.assertEqual(env.checksum("perf", img1), want1)
        # the child gone, the base goes, with its record and image
        for v in (v2, v1):
            p.call("DeleteVolume", env.delete_req(v.volume_id), timeout=60)
            self.made.remove(("volume", v.volume_id, "perf"))
        self.assertFalse({env.uuid_of(v1.volume_id), env.uuid_of(v2.volume_id)}
                         & set(env.copy_records()))
        self.assertFalse({img1, img2} & env.rbd_images("perf"))
        self.assertFalse([s for s in source_snaps(self.src_img) if s.startswith("gantry-copy-")])

    def check_gantryctl_refresh(self, v1, rbd_snap1, rbd_snap2, want2):
        """`gantryctl tier promote --refresh` by hand: the same refresh of an image."""
        dst = "refresh-ctl-%s" % env.UNIQUE
        args = [CTL, "tier", "promote", "--refresh", "--data-pool", "ecdata", "--config",
                self.configs[0], "--to"]
        try:
            r = subprocess.run(args + ["perf/rbd/" + dst, "--from", "capa/rbd/%s@%s" % (
                self.src_img, rbd_snap2)], capture_output=True, text=True, timeout=300)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stdout.splitlines()[-1], "refreshed capa/rbd/%s@%s -> perf/rbd/%s"
                             % (self.src_img, rbd_snap2, dst))
            rec = env.copy_records()["image-" + dst]
            self.assertEqual(rec["refreshOf"], env.uuid_of(v1.volume_id))
            self.assertLessEqual(rec["bytesWritten"], 0.10 * SIZE)
            self.assertEqual(env.checksum("perf", dst), want2)
            # nothing older than the first snapshot to build on: refused, nothing made
            r = subprocess.run(args + ["perf/rbd/%s-none" % dst, "--from", "capa/rbd/%s@%s" % (
                self.src_img, rbd_snap1)], capture_output=True, text=True, timeout=300)
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertIn("no complete copy of an older snapshot of %s" % self.src_img, r.stderr)
            self.assertNotIn(dst + "-none", env.rbd_images("perf"))
            self.assertNotIn("image-%s-none" % dst, env.copy_records())
        finally:
            env.tool("rbd", "perf", "snap", "purge", "--no-progress", "rbd/" + dst, check=False)
            env.tool("rbd", "perf", "rm", "--no-progress", "rbd/" + dst, check=False)
            env.tool("rados", "perf", "-p", "rbd", "rmomapkey", "gantry.copies", "image-" + dst,
                     check=False)

    def test_resume_at_controller_start(self):
        name = self.name("r")
        # capped at 40 MB/s: the kill lands mid-copy
        p1 = self.plugin(self.configs[1])
        req = env.create_req(name, "perf", size=0, source_volume=self.src.volume_id)
        _, messages = env.provision(p1, req, timeout=300, on_progress=lambda m: percent(m) >= 20)
        p1.kill()
        uuid = env.journal()[0][name]
        self.uuids.append(uuid)
        self.made.append(("volume", env.volume_id("perf", "rbd", uuid), "perf"))
        at_kill = env.copy_records()[uuid]
        self.assertEqual(at_kill["state"], "copying")
        self.assertLess(at_kill["bytesDone"], SIZE)
        self.assertGreater(at_kill["bytesDone"], 0)
        # a new controller and no CreateVolume: the copy goes on by itself, from where it was
        p2 = self.p = self.plugin(self.configs[1])
        moved = wait_for("the copy to move on after the restart", lambda: (
            lambda r: r if r["bytesDone"] > at_kill["bytesDone"] else None)(
                env.copy_records()[uuid]), timeout=90)
        self.assertIn(moved["state"], ("copying", "done"))
        wait_for("the copy to finish", lambda: env.copy_records()[uuid]["state"] == "done",
                 timeout=120)
        log = p2.read_log()
        self.assertRegex(log, r"event=tier\.resume name=%s uuid=%s result=resumed" % (
            re.escape(name), uuid))
        started = re.search(r"event=tier\.copy_started name=%s .*? position=(\S+)" % re.escape(name),
                            log)
        self.assertNotEqual(started.group(1), "0", "the resumed copy started over")
        # the provisioner's next retry finds it complete, with the source's content
        vol = p2.call("CreateVolume", req, timeout=60).volume
        self.assertEqual(env.uuid_of(vol.volume_id), uuid)
        self.assertEqual(env.checksum("perf", dict(vol.volume_context)["imageName"]),
                         env.checksum("capa", "%s@gantry-copy-%s" % (self.src_img, uuid)))
        self.assertIn("gantry-copy-" + uuid, source_snaps(self.src_img))


if __name__ == "__main__":
    unittest.main()
