"""Every Controller call a new user makes with the StorageClass parameter
`tier: checkpoint` (snapshots, clones, restores, lists), driven over gRPC
(python3-grpcio) against gantry-csi and two real gantry-target processes,
each answer checked against the CSI spec (v1.9: error codes per RPC, paging,
idempotency). The targets use a stand-in configfs directory; their backing
files are real files, so the contents of copies are checked byte for byte."""
import fcntl
import os
import sys
import unittest

import grpc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ckpt_helpers import TargetsTestCase, create_req, publish_req  # noqa: E402
from csi_client import csi_pb2  # noqa: E402

FICLONE = 0x40049409
MiB = 1 << 20


def reflinks_in(directory):
    """Whether the filesystem holding @directory shares extents (FICLONE)."""
    a, b = os.path.join(directory, ".probe-a"), os.path.join(directory, ".probe-b")
    try:
        with open(a, "wb") as f:
            f.write(b"x" * 4096)
        with open(a, "rb") as src, open(b, "wb") as dst:
            try:
                fcntl.ioctl(dst.fileno(), FICLONE, src.fileno())
                return True
            except OSError:
                return False
    finally:
        for p in (a, b):
            if os.path.exists(p):
                os.unlink(p)


class CheckpointSnapshotTest(TargetsTestCase):
    TARGETS = (("a", "tgt-a", "leaf-1", "127.0.0.1", {}), ("b", "tgt-b", "leaf-2", "127.0.0.2", {}))

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.reflink = reflinks_in(cls.a.lvs)

    # ---- helpers ----

    def volume(self, name, leaf="leaf-1", size=16 * MiB, **kw):
        v = self.call("CreateVolume", create_req(name, size=size, leaf=leaf, **kw)).volume
        self.addCleanup(self.call, "DeleteVolume", csi_pb2.DeleteVolumeRequest(volume_id=v.volume_id))
        return v

    def snapshot(self, name, source):
        s = self.call("CreateSnapshot", csi_pb2.CreateSnapshotRequest(name=name, source_volume_id=source)).snapshot
        self.addCleanup(self.call, "DeleteSnapshot", csi_pb2.DeleteSnapshotRequest(snapshot_id=s.snapshot_id))
        return s

    def clone_req(self, name, volume_id=None, snapshot_id=None, size=0):
        req = create_req(name, size=size)
        if volume_id is not None:
            req.volume_content_source.volume.volume_id = volume_id
        if snapshot_id is not None:
            req.volume_content_source.snapshot.snapshot_id = snapshot_id
        return req

    def target_of(self, v):
        return self.a if v.volume_context["targetID"] == "tgt-a" else self.b

    def file_of(self, v):
        return os.path.join(self.target_of(v).lvs, "vol-" + v.volume_context["uuid"])

    def write(self, v, offset, data):
        with open(self.file_of(v), "r+b") as f:
            f.seek(offset)
            f.write(data)

    def read(self, path, offset, n):
        with open(path, "rb") as f:
            f.seek(offset)
            return f.read(n)

    # ---- CreateSnapshot ----

    def test_create_snapshot_answers_the_snapshot_and_is_idempotent(self):
        v = self.volume("pvc-snap-1")
        self.write(v, 5 * MiB, b"before")
        s1 = self.snapshot("snap-1", v.volume_id)
        self.assertTrue(s1.snapshot_id.startswith("0003-0005-tgt-a-0000000000000000-"), s1.snapshot_id)
        self.assertEqual(s1.source_volume_id, v.volume_id)
        self.assertEqual(s1.size_bytes, 16 * MiB)
        self.assertGreater(s1.creation_time.seconds, 0)
        self.assertTrue(s1.ready_to_use)  # no durable tier configured: the target's copy is the snapshot
        s2 = self.call("CreateSnapshot", csi_pb2.CreateSnapshotRequest(
            name="snap-1", source_volume_id=v.volume_id)).snapshot
        self.assertEqual(s2.snapshot_id, s1.snapshot_id)
        self.assertEqual(s2.creation_time, s1.creation_time)
        # point in time: a write after the snapshot does not reach it
        self.write(v, 5 * MiB, b"after!")
        snap_file = os.path.join(self.a.lvs, "snap-" + s1.snapshot_id[-36:])
        self.assertEqual(self.read(snap_file, 5 * MiB, 6), b"before")

    def test_create_snapshot_same_name_other_source_is_already_exists(self):
        v1 = self.volume("pvc-snap-2a")
        v2 = self.volume("pvc-snap-2b", leaf="leaf-2")
        self.snapshot("snap-2", v1.volume_id)
        code, msg = self.code_of("CreateSnapshot", csi_pb2.CreateSnapshotRequest(
            name="snap-2", source_volume_id=v2.volume_id))
        self.assertEqual(code, grpc.StatusCode.ALREADY_EXISTS, msg)

    def test_create_snapshot_of_missing_volume_is_not_found(self):
        v = self.volume("pvc-snap-3")
        missing = v.volume_id[:-36] + "00000000-0000-4000-8000-000000000000"
        code, msg = self.code_of("CreateSnapshot", csi_pb2.CreateSnapshotRequest(
            name="snap-3", source_volume_id=missing))
        self.assertEqual(code, grpc.StatusCode.NOT_FOUND, msg)
        code, msg = self.code_of("CreateSnapshot", csi_pb2.CreateSnapshotRequest(
            name="snap-3", source_volume_id="0002-garbage"))
        self.assertEqual(code, grpc.StatusCode.NOT_FOUND, msg)
        code, msg = self.code_of("CreateSnapshot", csi_pb2.CreateSnapshotRequest(source_volume_id=v.volume_id))
        self.assertEqual(code, grpc.StatusCode.INVALID_ARGUMENT, msg)
        self.assertIn("name", msg)

    def test_snapshot_of_a_published_volume_follows_the_rule(self):
        v = self.volume("pvc-snap-busy")
        self.call("ControllerPublishVolume", publish_req(v.volume_id, "gpu-1"))
        self.addCleanup(self.call, "ControllerUnpublishVolume",
                        csi_pb2.ControllerUnpublishVolumeRequest(volume_id=v.volume_id, node_id="gpu-1"))
        req = csi_pb2.CreateSnapshotRequest(name="snap-busy", source_volume_id=v.volume_id)
        if self.reflink:  # an instant, consistent copy: taken while in use
            s = self.snapshot("snap-busy", v.volume_id)
            self.assertTrue(s.ready_to_use)
        else:  # a byte copy of a namespace a host may write is no point-in-time copy: refused
            code, msg = self.code_of("CreateSnapshot", req)
            self.assertEqual(code, grpc.StatusCode.FAILED_PRECONDITION, msg)
            self.assertIn("reflink", msg)
            self.assertEqual([f for f in os.listdir(self.a.lvs) if f.startswith("snap-")], [])

    # ---- DeleteSnapshot ----

    def test_delete_snapshot_removes_it_and_is_idempotent(self):
        v = self.volume("pvc-snap-del")
        s = self.call("CreateSnapshot", csi_pb2.CreateSnapshotRequest(
            name="snap-del", source_volume_id=v.volume_id)).snapshot
        path = os.path.join(self.a.lvs, "snap-" + s.snapshot_id[-36:])
        self.assertTrue(os.path.exists(path))
        for _ in range(2):
            self.call("DeleteSnapshot", csi_pb2.DeleteSnapshotRequest(snapshot_id=s.snapshot_id))
        self.assertFalse(os.path.exists(path))
        self.call("DeleteSnapshot", csi_pb2.DeleteSnapshotRequest(snapshot_id="0003-nonsense"))
        code, msg = self.code_of("DeleteSnapshot", csi_pb2.DeleteSnapshotRequest())
        self.assertEqual(code, grpc.StatusCode.INVALID_ARGUMENT, msg)

    def test_snapshot_outlives_its_source_volume(self):
        v = self.call("CreateVolume", create_req("pvc-snap-gone", size=16 * MiB, leaf="leaf-1")).volume
        self.write(v, 0, b"kept")
        s = self.snapshot("snap-gone", v.volume_id)
        self.call("DeleteVolume", csi_pb2.DeleteVolumeRequest(volume_id=v.volume_id))
        got = self.call("ListSnapshots", csi_pb2.ListSnapshotsRequest(snapshot_id=s.snapshot_id)).entries
        self.assertEqual([e.snapshot.snapshot_id for e in got], [s.snapshot_id])
        r = self.call("CreateVolume", self.clone_req("pvc-from-gone", snapshot_id=s.snapshot_id)).volume
        self.addCleanup(self.call, "DeleteVolume", csi_pb2.DeleteVolumeRequest(volume_id=r.volume_id))
        self.assertEqual(self.read(self.file_of(r), 0, 4), b"kept")

    # ---- CreateVolume from a volume or a snapshot ----

    def test_clone_of_a_volume_copies_it_on_its_target(self):
        v = self.volume("pvc-src", leaf="leaf-2")
        self.write(v, 3 * MiB, b"pattern-123")
        req = self.clone_req("pvc-clone", volume_id=v.volume_id)
        c = self.call("CreateVolume", req).volume
        self.addCleanup(self.call, "DeleteVolume", csi_pb2.DeleteVolumeRequest(volume_id=c.volume_id))
        self.assertEqual(c.volume_context["targetID"], "tgt-b")
        self.assertEqual(c.capacity_bytes, 16 * MiB)
        self.assertEqual(c.content_source.volume.volume_id, v.volume_id)
        self.assertEqual(self.read(self.file_of(c), 3 * MiB, 11), b"pattern-123")
        self.assertEqual(self.call("CreateVolume", req).volume.volume_id, c.volume_id)
        # the same name from another source, or from none, is another volume
        other = self.volume("pvc-src-2", leaf="leaf-2")
        code, msg = self.code_of("CreateVolume", self.clone_req("pvc-clone", volume_id=other.volume_id))
        self.assertEqual(code, grpc.StatusCode.ALREADY_EXISTS, msg)
        code, msg = self.code_of("CreateVolume", create_req("pvc-clone", size=16 * MiB, leaf="leaf-2"))
        self.assertEqual(code, grpc.StatusCode.ALREADY_EXISTS, msg)
        # ... also when that other source is on another target: no twin there
        elsewhere = self.volume("pvc-src-3", leaf="leaf-1")
        code, msg = self.code_of("CreateVolume", self.clone_req("pvc-clone", volume_id=elsewhere.volume_id))
        self.assertEqual(code, grpc.StatusCode.ALREADY_EXISTS, msg)
        self.assertEqual(len([f for f in os.listdir(self.a.lvs) if f.startswith("vol-")]), 1)

    def test_clone_larger_than_its_source_and_not_smaller(self):
        v = self.volume("pvc-src-grow")
        c = self.call("CreateVolume", self.clone_req("pvc-clone-grow", volume_id=v.volume_id, size=32 * MiB)).volume
        self.addCleanup(self.call, "DeleteVolume", csi_pb2.DeleteVolumeRequest(volume_id=c.volume_id))
        self.assertEqual(c.capacity_bytes, 32 * MiB)
        self.assertEqual(os.path.getsize(self.file_of(c)), 32 * MiB)
        code, msg = self.code_of("CreateVolume", self.clone_req("pvc-clone-small", volume_id=v.volume_id,
                                                                size=8 * MiB))
        self.assertEqual(code, grpc.StatusCode.OUT_OF_RANGE, msg)

    def test_restore_from_a_snapshot(self):
        v = self.volume("pvc-restore-src")
        self.write(v, 7 * MiB, b"checkpoint-42")
        s = self.snapshot("snap-restore", v.volume_id)
        self.write(v, 7 * MiB, b"overwritten!!")
        r = self.call("CreateVolume", self.clone_req("pvc-restored", snapshot_id=s.snapshot_id)).volume
        self.addCleanup(self.call, "DeleteVolume", csi_pb2.DeleteVolumeRequest(volume_id=r.volume_id))
        self.assertEqual(r.content_source.snapshot.snapshot_id, s.snapshot_id)
        self.assertEqual(r.capacity_bytes, 16 * MiB)
        self.assertEqual(self.read(self.file_of(r), 7 * MiB, 13), b"checkpoint-42")

    def test_missing_sources_are_not_found(self):
        v = self.volume("pvc-nf")
        for req in (self.clone_req("pvc-nf-1", volume_id=v.volume_id[:-36] + "00000000-0000-4000-8000-000000000000"),
                    self.clone_req("pvc-nf-2", volume_id="0002-nope"),
                    self.clone_req("pvc-nf-3", snapshot_id="0003-0005-tgt-a-0000000000000000-"
                                                           "00000000-0000-4000-8000-000000000000"),
                    self.clone_req("pvc-nf-4", snapshot_id="no-such-snapshot")):
            code, msg = self.code_of("CreateVolume", req)
            self.assertEqual(code, grpc.StatusCode.NOT_FOUND, msg)
            self.assertIn("volume_content_source", msg)
        self.assertEqual(len([f for f in os.listdir(self.a.lvs) if f.startswith("vol-")]), 1)

    # ---- ListSnapshots ----

    def test_list_snapshots_by_id_by_source_and_paged(self):
        v1 = self.volume("pvc-ls-1")
        v2 = self.volume("pvc-ls-2", leaf="leaf-2")
        mine = {self.snapshot("ls-a", v1.volume_id).snapshot_id, self.snapshot("ls-b", v1.volume_id).snapshot_id,
                self.snapshot("ls-c", v2.volume_id).snapshot_id}
        one = sorted(mine)[0]
        got = self.call("ListSnapshots", csi_pb2.ListSnapshotsRequest(snapshot_id=one)).entries
        self.assertEqual([e.snapshot.snapshot_id for e in got], [one])
        self.assertTrue(got[0].snapshot.ready_to_use)
        got = self.call("ListSnapshots", csi_pb2.ListSnapshotsRequest(
            snapshot_id=one[:-36] + "00000000-0000-4000-8000-000000000000")).entries
        self.assertEqual(list(got), [])
        got = self.call("ListSnapshots", csi_pb2.ListSnapshotsRequest(source_volume_id=v1.volume_id)).entries
        self.assertEqual(sorted(e.snapshot.source_volume_id for e in got), [v1.volume_id] * 2)
        seen, token, pages = [], "", 0
        while True:
            resp = self.call("ListSnapshots", csi_pb2.ListSnapshotsRequest(max_entries=1, starting_token=token))
            self.assertLessEqual(len(resp.entries), 1)
            seen += [e.snapshot.snapshot_id for e in resp.entries]
            pages += 1
            self.assertLess(pages, 20)
            token = resp.next_token
            if not token:
                break
        self.assertEqual(len(seen), len(set(seen)))
        self.assertTrue(mine <= set(seen), (mine, seen))
        code, msg = self.code_of("ListSnapshots", csi_pb2.ListSnapshotsRequest(starting_token="ckpt/bogus"))
        self.assertEqual(code, grpc.StatusCode.ABORTED, msg)

    # ---- ListVolumes ----

    def test_list_volumes_lists_checkpoint_volumes_paged(self):
        mine = {self.volume("pvc-lv-1").volume_id, self.volume("pvc-lv-2", leaf="leaf-2").volume_id,
                self.volume("pvc-lv-3").volume_id}
        got = self.call("ListVolumes", csi_pb2.ListVolumesRequest()).entries
        self.assertTrue(mine <= {e.volume.volume_id for e in got})
        self.assertEqual({e.volume.capacity_bytes for e in got if e.volume.volume_id in mine}, {16 * MiB})
        seen, token = [], ""
        for _ in range(20):
            resp = self.call("ListVolumes", csi_pb2.ListVolumesRequest(max_entries=2, starting_token=token))
            self.assertLessEqual(len(resp.entries), 2)
            seen += [e.volume.volume_id for e in resp.entries]
            token = resp.next_token
            if not token:
                break
        self.assertEqual(len(seen), len(set(seen)))
        self.assertTrue(mine <= set(seen))
        code, msg = self.code_of("ListVolumes", csi_pb2.ListVolumesRequest(max_entries=-1))
        self.assertEqual(code, grpc.StatusCode.INVALID_ARGUMENT, msg)


if __name__ == "__main__":
    unittest.main()
