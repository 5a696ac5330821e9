"""The copier (copier/copier.c) between the fixture's two real clusters,
driven by the tier-copy tool: an image of the capacity cluster copied at a
snapshot into the performance cluster's EC data pool, content checked by
checksum, holes and zero runs never written (counted by the copier and by
the destination's RADOS objects); a copy killed with SIGKILL resumes from
its last persisted position; an incremental copy between two snapshots
moves only the changed objects; a sparse file is drained into an image; the
verify by checksum finds an object changed behind the copier's back (a
plain librados write into the data pool), where reading back is kept."""
import hashlib
import json
import os
import signal
import subprocess
import tempfile
import unittest

import ceph_env as env

MiB = 1 << 20
TOOL = os.path.join(os.environ.get("GANTRY_BUILD_DIR", "build"), "tests", "tier-copy")


def pattern(seed, length):
    """@length bytes of deterministic, incompressible-enough data."""
    out = bytearray()
    block = hashlib.sha256(b"%d" % seed).digest()
    while len(out) < length:
        block = hashlib.sha256(block).digest()
        out += block * 128
    return bytes(out[:length])


def run_copy(*args, check=True):
    """Runs tier-copy to its end; returns (persist records, done record)."""
    r = subprocess.run([TOOL, *args], capture_output=True, text=True, timeout=300)
    lines = [json.loads(x) for x in r.stdout.splitlines() if x.startswith("{")]
    if check and r.returncode != 0:
        raise AssertionError("tier-copy %s: rc %d: %s" % (" ".join(args), r.returncode, r.stderr))
    done = [x for x in lines if x["event"] == "done"]
    return [x for x in lines if x["event"] == "persist"], done[0] if done else None


def verify_lines(args):
    """Runs tier-copy with --verify; returns (its verify line, its done line)."""
    r = subprocess.run([TOOL, "--verify", *args], capture_output=True, text=True, timeout=300)
    lines = [json.loads(x) for x in r.stdout.splitlines() if x.startswith("{")]
    verify = [x for x in lines if x["event"] == "verify"]
    done = [x for x in lines if x["event"] == "done"]
    if len(verify) != 1 or len(done) != 1:
        raise AssertionError("tier-copy %s: rc %d: %s" % (" ".join(args), r.returncode, r.stderr))
    return verify[0], done[0]


def data_objects(cluster, image, pool="rbd", data_pool="ecdata"):
    """The RADOS objects holding @image's data (in its data pool)."""
    prefix = env.rbd_info(cluster, image, pool)["block_name_prefix"]
    io = env.admin_ioctx(cluster, data_pool)
    try:
        return sorted(o.key for o in io.list_objects() if o.key.startswith(prefix))
    finally:
        io.close()


class TierCopyTest(unittest.TestCase):
    def setUp(self):
        self.images = []  # (cluster, image)

    def tearDown(self):
        import rbd
        for cluster, image in reversed(self.images):
            io = env.admin_ioctx(cluster)
            try:
                with rbd.Image(io, image) as img:
                    for s in list(img.list_snaps()):
                        img.remove_snap(s["name"])
                rbd.RBD().remove(io, image)
            except rbd.ImageNotFound:
                pass
            finally:
                io.close()

    def name(self, what):
        return "tier-%s-%s-%s" % (self._testMethodName[5:20].replace("_", "-"), what, env.UNIQUE)

    def make_source(self, size_mib, writes, snap="s1"):
        """An image in "capa" of @size_mib with @writes [(offset, bytes)], snapshotted."""
        import rbd
        image = self.name("src")
        io = env.admin_ioctx("capa")
        try:
            rbd.RBD().create(io, image, size_mib * MiB, order=22)
            self.images.append(("capa", image))
            with rbd.Image(io, image) as img:
                for off, data in writes:
                    img.write(data, off)
                img.create_snap(snap)
        finally:
            io.close()
        return image

    def copy_args(self, src, dst, snap="s1", *extra):
        return ["--src-conf", env.conf("capa"), "--src-image", src, "--src-snap", snap,
                "--dst-conf", env.conf("perf"), "--dst-image", dst, "--create",
                "--data-pool", "ecdata", *extra]

    def test_copy_skips_holes(self):
        # 256 MiB: data in objects 0-3 and 25, written zeros in object 50, the rest holes
        src = self.make_source(256, [(0, pattern(1, 16 * MiB)), (100 * MiB + 5, pattern(2, 3000)),
                                     (200 * MiB, bytes(MiB))])
        dst = self.name("dst")
        self.images.append(("perf", dst))
        persists, done = run_copy(*self.copy_args(src, dst, "s1", "--in-flight", "8"))
        self.assertEqual(done["result"], 0)
        self.assertEqual(env.checksum("perf", dst), env.checksum("capa", src + "@s1"))
        self.assertEqual(done["object_count"], 64)
        self.assertEqual(done["bytes_total"], 6 * 4 * MiB)  # holes are not even read
        self.assertEqual(done["bytes_read"], 6 * 4 * MiB)
        # 16 MiB + one 64 KiB block around the 3000 bytes; the zeros are not written
        self.assertEqual(done["bytes_written"], 16 * MiB + 64 * 1024)
        self.assertEqual(len(data_objects("perf", dst)), 5)
        self.assertEqual(persists[-1]["position"], "64")

    def test_kill_and_resume(self):
        src = self.make_source(64, [(0, pattern(3, 64 * MiB))])
        dst = self.name("dst")
        self.images.append(("perf", dst))
        # capped at 16 MB/s so the copy is still running when killed at ~30 %
        args = self.copy_args(src, dst, "s1", "--in-flight", "4", "--bw", str(16 * 1000 * 1000),
                              "--persist-objects", "1")
        p = subprocess.Popen([TOOL, *args], stdout=subprocess.PIPE, text=True)
        last = None
        try:
            for line in p.stdout:
                rec = json.loads(line)
                if rec["event"] != "persist":
                    continue
                last = rec
                if rec["bytes_done"] >= 0.3 * rec["bytes_total"]:
                    p.send_signal(signal.SIGKILL)
                    break
        finally:
            p.stdout.close()
            rc = p.wait(timeout=60)
        self.assertEqual(rc, -signal.SIGKILL)
        self.assertIsNotNone(last)
        self.assertLess(last["bytes_done"], last["bytes_total"])
        persists, done = run_copy(*self.copy_args(src, dst, "s1", "--position", last["position"]))
        self.assertEqual(done["result"], 0)
        self.assertEqual(env.checksum("perf", dst), env.checksum("capa", src + "@s1"))
        # the resumed run reads only what the persisted position did not cover
        self.assertEqual(done["bytes_read"], done["bytes_total"] - last["bytes_done"])
        self.assertGreater(last["bytes_done"], 0)

    def test_incremental(self):
        import rbd
        src = self.make_source(64, [(0, pattern(4, 32 * MiB))])
        dst = self.name("dst")
        self.images.append(("perf", dst))
        _, done = run_copy(*self.copy_args(src, dst, "s1"))
        self.assertEqual(done["bytes_read"], 32 * MiB)
        # a new version: one object rewritten in part, one discarded, one new
        io = env.admin_ioctx("capa")
        try:
            with rbd.Image(io, src) as img:
                img.write(pattern(5, 4096), 4 * MiB + 8192)
                img.discard(8 * MiB, 4 * MiB)
                img.write(pattern(6, MiB), 40 * MiB)
                img.create_snap("s2")
        finally:
            io.close()
        _, done = run_copy(*self.copy_args(src, dst, "s2", "--from-snap", "s1"))
        self.assertEqual(done["result"], 0)
        self.assertEqual(done["bytes_read"], 3 * 4 * MiB)
        self.assertEqual(done["bytes_written"], 3 * 4 * MiB)  # changed objects go whole
        self.assertEqual(env.checksum("perf", dst), env.checksum("capa", src + "@s2"))

    def test_file_source(self):
        dst = self.name("dst")
        self.images.append(("perf", dst))
        with tempfile.NamedTemporaryFile(prefix="tier-src-") as f:
            f.truncate(48 * MiB)
            f.seek(4 * MiB)
            f.write(pattern(7, 6 * MiB))
            f.seek(40 * MiB + 17)
            f.write(pattern(8, 100))
            f.flush()
            _, done = run_copy("--src-file", f.name, "--dst-conf", env.conf("perf"),
                               "--dst-image", dst, "--create", "--data-pool", "ecdata")
            self.assertEqual(done["result"], 0)
            self.assertEqual(done["bytes_total"], 3 * 4 * MiB)
            self.assertEqual(done["bytes_written"], 6 * MiB + 64 * 1024)
            with open(f.name, "rb") as g:
                want = hashlib.sha256(g.read()).hexdigest()
        self.assertEqual(env.checksum("perf", dst), want)

    def test_verify_by_checksum_finds_a_changed_object(self):
        # 6 objects: data, a zero run (object 2 starts with 2 MiB of zeros), object 3 all
        # zeros (never written: its RADOS object does not exist), a short last object
        size = 20 * MiB + 12345
        with tempfile.NamedTemporaryFile(prefix="tier-src-") as f:
            f.write(pattern(10, size))
            f.seek(8 * MiB)
            f.write(bytes(2 * MiB))
            f.seek(12 * MiB)
            f.write(bytes(4 * MiB))
            f.flush()
            with open(f.name, "rb") as g:
                want = hashlib.sha256(g.read()).hexdigest()

            def copy(what, *extra):
                dst = self.name(what)
                self.images.append(("perf", dst))
                return dst, verify_lines(["--src-file", f.name, "--dst-conf", env.conf("perf"), "--dst-image", dst,
                                          "--create", "--in-flight", "4", "--persist-objects", "1", *extra])

            # the EC data pool answers the checksum op: nothing is read back, the copy is whole
            dst, (verify, done) = copy("ok", "--data-pool", "ecdata")
            self.assertEqual(verify, {"event": "verify", "check": "checksum"})
            self.assertEqual((done["result"], done["bytes_done"]), (0, size))
            self.assertEqual(env.checksum("perf", dst), want)
            # one byte changed in object 2 after the copier wrote it: the drain fails there,
            # never counting it done (in the EC pool and in a replicated one)
            for what, pool in (("ec", ["--data-pool", "ecdata"]), ("rep", [])):
                _, (verify, done) = copy(what, *pool, "--corrupt-object", "2")
                self.assertEqual(verify["check"], "checksum")
                self.assertEqual((done["result"], done["mismatch_at"]), (-117, 8 * MiB), what)  # -EUCLEAN
                self.assertLessEqual(done["bytes_done"], size - 4 * MiB)
            # the short last object is checked too (synchronously)
            _, (_, done) = copy("last", "--data-pool", "ecdata", "--corrupt-object", "5")
            self.assertEqual((done["result"], done["mismatch_at"]), (-117, 20 * MiB))
            # without the check the same fault goes unseen: the check is what finds it
            dst = self.name("unchecked")
            self.images.append(("perf", dst))
            _, done = run_copy("--src-file", f.name, "--dst-conf", env.conf("perf"), "--dst-image", dst, "--create",
                               "--data-pool", "ecdata", "--corrupt-object", "2")
            self.assertEqual(done["result"], 0)
            self.assertNotEqual(env.checksum("perf", dst), want)
            # fancy striping: object N of the copy is not one RADOS object; the copier reads back
            dst, (verify, done) = copy("striped", "--data-pool", "ecdata", "--stripe-unit", str(MiB),
                                       "--stripe-count", "4")
            self.assertEqual(verify, {"event": "verify", "check": "read-back",
                                      "why": "fancy striping (stripe unit or count)"})
            self.assertEqual(done["result"], 0)
            self.assertEqual(env.checksum("perf", dst), want)

    def test_bad_position(self):
        src = self.make_source(16, [(0, pattern(9, MiB))])
        dst = self.name("dst")
        self.images.append(("perf", dst))
        _, done = run_copy(*self.copy_args(src, dst, "s1", "--position", "99"), check=False)
        self.assertEqual(done["result"], -22)  # -EINVAL: not a position of this copy


if __name__ == "__main__":
    unittest.main()
