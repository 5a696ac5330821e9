"""Dataset promotion through Ceph's own engine (copy.mode "rbd-mirror"):
a real rbd-mirror daemon (mirror.sh) replicates capa's pool "rbd" into
perf's; gantry-csi, driven through the provisioner's retry loop, enables
snapshot mirroring of the source, answers ABORTED with the mirror progress
until perf holds the mirror snapshot, then makes the volume as a clone of the
replicated snapshot. Content is checked by checksum; DeleteVolume of the last
copy disables the source's mirroring, and the daemon removes its replica."""
import json
import os
import re
import subprocess
import tempfile
import time
import unittest

import ceph_env as env
from ceph_env import Plugin, csi_pb2

MiB = 1 << 20
SIZE = 128 * MiB
LINE = re.compile(r"^mirroring (\S+) from capa: (waiting for rbd-mirror in perf to create the "
                  r"image|(planning|\d+ %).* \(rbd-mirror: [a-z, ]+\))$")
MIRROR_SH = os.path.join(env.HERE, "mirror.sh")
CTL = os.path.join(os.environ.get("GANTRY_BUILD_DIR", "build"), "bin", "gantryctl")


def config():
    """The fixture's config, promotions from capa into perf through rbd-mirror."""
    with open(env.CONFIG) as f:
        cfg = json.load(f)
    for c in cfg["clusters"]:
        if c["clusterID"] == "capa":
            c["copy"] = {"mode": "rbd-mirror", "mirrorTo": ["perf"]}
    fd, path = tempfile.mkstemp(prefix="gantry-mirror-", suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump(cfg, f)
    return path


def mirror_info(cluster, image):
    return json.loads(env.tool("rbd", cluster, "info", "--format", "json", "rbd/" + image))


def scribble(cluster, image, offset, length):
    """Writes @length random bytes at @offset of @image (admin, python3-rbd)."""
    import rbd
    io = env.admin_ioctx(cluster)
    try:
        with rbd.Image(io, image) as img:
            img.write(os.urandom(length), offset)
    finally:
        io.close()


def wait_gone(cluster, image, timeout=120.0):
    """Until @image is no longer in @cluster's pool "rbd" (bounded); True when gone."""
    deadline = time.monotonic() + timeout
    while image in env.rbd_images(cluster):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.5)
    return True


class MirrorTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cfg = config()
        cls.made = []
        cls.p = None
        cls.far = None
        subprocess.run(["bash", MIRROR_SH, "start", env.DIR], check=True, timeout=300)
        try:
            cls.p = Plugin(mode="controller", node_id=None, config=cls.cfg).start()
            cls.far = cls.p.call("CreateVolume", env.create_req("mirror-far-" + env.UNIQUE, "capa",
                                                                size=SIZE), timeout=60).volume
            cls.far_img = dict(cls.far.volume_context)["imageName"]
            for off in range(0, 96 * MiB, 8 * MiB):  # random data, holes between
                scribble("capa", cls.far_img, off, 4 * MiB)
            cls.want = env.checksum("capa", cls.far_img)
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        import grpc
        try:
            # what a failed test left: its promoted volumes first (they keep the source mirrored,
            # and the daemon then keeps the source open), then the source
            for vid in cls.made:
                env.retry(lambda: cls.p.call("DeleteVolume", env.delete_req(vid), timeout=60))
            deadline = time.monotonic() + 60
            while cls.far:
                try:
                    cls.p.call("DeleteVolume", env.delete_req(cls.far.volume_id, "capa"), timeout=60)
                    break
                except grpc.RpcError as e:  # the daemon lets go of the source a moment later
                    if e.code() != grpc.StatusCode.FAILED_PRECONDITION or \
                            time.monotonic() > deadline:
                        raise
                time.sleep(0.5)
        finally:
            subprocess.run(["bash", MIRROR_SH, "stop", env.DIR], timeout=120)
            os.unlink(cls.cfg)
            if cls.p:
                # a clean exit: in the ASan build, leaks and errors make it non-zero
                rc, log = cls.p.stop(), cls.p.read_log()
                cls.p.cleanup()
                if rc != 0 or "Sanitizer" in log:
                    raise AssertionError("gantry-csi exited %s:\n%s" % (rc, log[-3000:]))

    def name(self, what):
        return "%s-%s-%s" % (self._testMethodName[5:20].replace("_", "-"), what, env.UNIQUE)

    def promote(self, name, waits=True, **source):
        """CreateVolume in perf from @source, polled as the provisioner does.
        @waits: the first answer must be ABORTED (a whole image to replicate);
        a small delta on an image the daemon already replays may be synced
        within the first call, and then OK on it is right."""
        states = set()

        def seen(msg):
            self.assertRegex(msg, LINE)
            self.assertEqual(LINE.match(msg).group(1), name)
            rec = [r for r in env.copy_records().values() if r["name"] == name]
            if rec:
                states.add(rec[0]["state"])
            return False

        req = env.create_req(name, "perf", size=0, **source)
        start = time.monotonic()
        vol, messages = env.provision(self.p, req, timeout=300, on_progress=seen)
        self.made.append(vol.volume_id)  # before any assertion: tearDownClass undoes it
        print("%s through rbd-mirror in %.1f s, %d ABORTED answers; last: %s" % (
            name, time.monotonic() - start, len(messages), messages[-1] if messages else "-"))
        if waits:
            self.assertGreater(len(messages), 0, "answered OK before rbd-mirror replicated anything")
        self.assertEqual(states, {"mirroring"} if messages else set())
        rec = env.copy_records()[env.uuid_of(vol.volume_id)]
        self.assertEqual((rec["mode"], rec["state"]), ("rbd-mirror", "done"))
        self.assertGreater(rec["mirrorSnapId"], 0)
        return vol

    def test_delete_while_waiting_for_the_daemon(self):
        # no daemon: the replica never comes, every retry says what it waits for
        subprocess.run(["bash", MIRROR_SH, "stop", env.DIR], check=True, timeout=120)
        try:
            name = self.name("wait")
            src = "rbd/" + self.far_img
            req = env.create_req(name, "perf", size=0, source_volume=self.far.volume_id)
            seen = []
            env.provision(self.p, req, timeout=60,
                          on_progress=lambda m: seen.append(m) or len(seen) >= 3)
            self.assertEqual(set(seen), {"mirroring %s from capa: waiting for rbd-mirror in "
                                             "perf to create the image" % name})
            uuid = env.journal()[0][name]
            rec = env.copy_records()[uuid]
            self.assertEqual((rec["mode"], rec["state"]), ("rbd-mirror", "mirroring"))
            self.assertGreater(rec["mirrorSnapId"], 0)
            self.assertEqual(mirror_info("capa", self.far_img)["mirroring"]["state"], "enabled")
            self.assertIn("gantry-copy-" + uuid, env.tool("rbd", "capa", "snap", "ls", src))
            # DeleteVolume undoes all of it: record, source snapshot, the source's mirroring
            vid = env.volume_id("perf", "rbd", uuid)
            self.p.call("DeleteVolume", env.delete_req(vid), timeout=60)
            self.assertNotIn(uuid, env.copy_records())
            self.assertNotIn(name, env.journal()[0])
            self.assertNotIn("mirroring", mirror_info("capa", self.far_img))
            self.assertEqual(json.loads(env.tool("rbd", "capa", "snap", "ls", "--all", "--format",
                                                 "json", src)), [])
            self.assertNotIn(self.far_img, env.rbd_images("perf"))
        finally:
            subprocess.run(["bash", MIRROR_SH, "start", env.DIR], check=True, timeout=300)

    def test_promote_volume_and_snapshot(self):
        p = self.p
        src = "rbd/" + self.far_img
        # 1. from a volume: a snapshot taken for the copy, mirrored, cloned
        vol = self.promote(self.name("vol"), source_volume=self.far.volume_id)
        uuid = env.uuid_of(vol.volume_id)
        img = dict(vol.volume_context)["imageName"]
        self.assertEqual(env.checksum("perf", img), self.want)
        info = mirror_info("perf", img)
        self.assertEqual(info["data_pool"], "ecdata")
        self.assertEqual(info["parent"]["image"], self.far_img)
        self.assertEqual(info["parent"]["snapshot"], "gantry-copy-" + uuid)
        self.assertEqual(mirror_info("perf", self.far_img)["mirroring"]["primary"], False)
        self.assertEqual(mirror_info("capa", self.far_img)["mirroring"]["mode"], "snapshot")
        rec = env.copy_records()[uuid]
        self.assertEqual((rec["mode"], rec["state"], rec["mirrorPool"]), ("rbd-mirror", "done", "rbd"))
        self.assertEqual(rec["bytesDone"], SIZE)
        again = p.call("CreateVolume", env.create_req(self.name("vol"), "perf", size=0,
                                                      source_volume=self.far.volume_id),
                       timeout=60).volume
        self.assertEqual(again.volume_id, vol.volume_id)
        out = subprocess.run([CTL, "tier", "status", "--config", self.cfg, "--json"],
                             capture_output=True, text=True, timeout=120, check=True).stdout
        rows = {c["name"]: c for c in json.loads(out)["copies"]}
        self.assertEqual(rows[self.name("vol")]["state"], "done")

        # 2. from a VolumeSnapshot, taken before the source changes again
        snap = p.call("CreateSnapshot", csi_pb2.CreateSnapshotRequest(
            name=self.name("snap"), source_volume_id=self.far.volume_id,
            secrets=env.secrets("capa")), timeout=60).snapshot
        scribble("capa", self.far_img, 0, MiB)
        self.assertNotEqual(env.checksum("capa", self.far_img), self.want)
        vol2 = self.promote(self.name("snp"), waits=False, source_snapshot=snap.snapshot_id)
        img2 = dict(vol2.volume_context)["imageName"]
        self.assertEqual(env.checksum("perf", img2), self.want)

        # 3. DeleteVolume: the first copy goes, the mirroring stays for the second
        p.call("DeleteVolume", env.delete_req(vol.volume_id), timeout=60)
        self.made.remove(vol.volume_id)
        self.assertNotIn(img, env.rbd_images("perf"))
        self.assertNotIn(uuid, env.copy_records())
        self.assertNotIn("gantry-copy-" + uuid, env.tool("rbd", "capa", "snap", "ls", src))
        self.assertEqual(mirror_info("capa", self.far_img)["mirroring"]["state"], "enabled")
        # the last one: mirroring disabled, the daemon removes its replica
        p.call("DeleteVolume", env.delete_req(vol2.volume_id), timeout=60)
        p.call("DeleteVolume", env.delete_req(vol2.volume_id), timeout=60)  # idempotent
        self.made.remove(vol2.volume_id)
        self.assertNotIn("mirroring", mirror_info("capa", self.far_img))
        self.assertTrue(wait_gone("perf", self.far_img), "rbd-mirror left its replica")
        self.assertNotIn(env.uuid_of(vol2.volume_id), env.copy_records())
        self.assertIn("event=tier.mirror_disabled", p.read_log())
        p.call("DeleteSnapshot", csi_pb2.DeleteSnapshotRequest(
            snapshot_id=snap.snapshot_id, secrets=env.secrets("capa")), timeout=60)
        self.assertEqual(json.loads(env.tool("rbd", "capa", "snap", "ls", "--all", "--format",
                                             "json", src)), [])
        env.assert_consistent(self)


if __name__ == "__main__":
    unittest.main()
