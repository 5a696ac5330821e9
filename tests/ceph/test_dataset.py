"""Dataset volumes through gantry-csi's Controller against the fixture's
real Ceph cluster: create/delete on the EC data pool, idempotent and
conflicting retries, bad parameters, snapshots, clones, expansion, lists
with pagination, capacity, malformed IDs, a watcher blocking a delete, and
a copy from the capacity cluster to the performance cluster."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

import grpc

import ceph_env as env
from ceph_env import Plugin, csi_pb2

sys.path.insert(0, os.path.join(env.HERE, "..", "fakeapi"))
sys.path.insert(0, os.path.join(env.HERE, "..", "canary"))
import canary  # noqa: E402
from fake_api_proc import start_fake, csinode  # noqa: E402

Code = grpc.StatusCode
# Both carry the secret canary (tests/canary/canary.py): no error may echo them.
BAD_KEY = "AQBBBBBBBBBBBBBB" + canary.CANARY + "BBBBBBBBBB=="  # not a cephx key
OTHER_KEY = canary.ceph_key()  # a cephx key, not the user's


class DatasetTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.plugin = Plugin(mode="controller", node_id=None, config=env.CONFIG).start()

    @classmethod
    def tearDownClass(cls):
        log = cls.plugin.read_log()
        rc = cls.plugin.stop()
        cls.plugin.cleanup()
        if rc != 0:
            raise AssertionError("plugin exited %s:\n%s" % (rc, log[-4000:]))
        for secret in (env.key(), env.key("capa"), BAD_KEY, OTHER_KEY):
            if secret in log:
                i = log.index(secret)
                raise AssertionError("a secret reached the log: ...%s" % log[i - 300:i])

    def setUp(self):
        self.made = []  # (kind, id, cluster), deleted in reverse order

    def tearDown(self):
        for kind, id_, cluster in reversed(self.made):
            if kind == "snapshot":
                env.retry(lambda: self.call("DeleteSnapshot", csi_pb2.DeleteSnapshotRequest(
                    snapshot_id=id_, secrets=env.secrets(cluster))))
            else:
                env.retry(lambda: self.call("DeleteVolume", env.delete_req(id_, cluster)))

    def call(self, method, req=None, timeout=60):
        return self.plugin.call(method, req, timeout=timeout)

    def name(self, what):
        return "%s-%s-%s" % (self._testMethodName[5:20].replace("_", "-"), what, env.UNIQUE)

    def create(self, name, cluster="perf", **kw):
        vol = self.call("CreateVolume", env.create_req(name, cluster, **kw)).volume
        self.made.append(("volume", vol.volume_id, cluster))
        return vol

    def snapshot(self, name, volume_id, cluster="perf"):
        snap = self.call("CreateSnapshot", csi_pb2.CreateSnapshotRequest(
            name=name, source_volume_id=volume_id, secrets=env.secrets(cluster))).snapshot
        self.made.append(("snapshot", snap.snapshot_id, cluster))
        return snap

    def assertCode(self, code, fn, *words):
        with self.assertRaises(grpc.RpcError) as cm:
            fn()
        self.assertEqual(cm.exception.code(), code, cm.exception.details())
        for w in words:
            self.assertIn(w, cm.exception.details())
        return cm.exception

    def test_probe_and_capabilities(self):
        self.assertTrue(self.call("Probe").ready.value)
        caps = {c.rpc.type for c in self.call("ControllerGetCapabilities").capabilities}
        T = csi_pb2.ControllerServiceCapability.RPC
        for t in (T.CREATE_DELETE_VOLUME, T.CREATE_DELETE_SNAPSHOT, T.LIST_SNAPSHOTS,
                  T.CLONE_VOLUME, T.EXPAND_VOLUME, T.LIST_VOLUMES, T.GET_CAPACITY, T.GET_VOLUME):
            self.assertIn(t, caps)

    def test_create_delete_on_ec_pool(self):
        vol = self.create(self.name("v"), size=100 << 20)
        ctx = dict(vol.volume_context)
        self.assertEqual(vol.capacity_bytes, 100 << 20)
        self.assertLessEqual(len(vol.volume_id), 128)
        self.assertEqual(ctx["tier"], "dataset")
        self.assertEqual(ctx["clusterID"], "perf")
        self.assertEqual(ctx["pool"], "rbd")
        self.assertEqual(ctx["dataPool"], "ecdata")
        self.assertEqual(ctx["fsType"], "ext4")
        self.assertTrue(ctx["monitors"].startswith("127.0.0.1:"))
        info = env.rbd_info("perf", ctx["imageName"])
        self.assertEqual(info["data_pool"], "ecdata")
        self.assertEqual(info["size"], 100 << 20)
        self.assertIn(self.name("v"), env.journal()[0])
        self.call("DeleteVolume", env.delete_req(vol.volume_id))
        self.made.clear()
        self.assertNotIn(ctx["imageName"], env.rbd_images())
        directory, records = env.journal()
        self.assertNotIn(self.name("v"), directory)
        self.assertNotIn(env.uuid_of(vol.volume_id), records)
        # deleting again is fine
        self.call("DeleteVolume", env.delete_req(vol.volume_id))

    def test_idempotent_and_conflicting_retry(self):
        name = self.name("v")
        a = self.create(name, size=64 << 20)
        b = self.call("CreateVolume", env.create_req(name, size=64 << 20)).volume
        self.assertEqual(a.volume_id, b.volume_id)
        self.assertEqual(a.capacity_bytes, b.capacity_bytes)
        self.assertCode(Code.ALREADY_EXISTS,
                        lambda: self.call("CreateVolume", env.create_req(name, size=128 << 20)),
                        "name")
        self.assertCode(Code.ALREADY_EXISTS, lambda: self.call(
            "CreateVolume", env.create_req(name, size=64 << 20, dataPool="")), "name")
        self.assertEqual(list(env.journal()[0]).count(name), 1)

    def test_retry_finishes_a_name_reserved_without_record(self):
        # what a plugin of an earlier version killed while making an empty
        # volume left: the name reserved, no record (it was written only once
        # the image was complete), and a half-made image (here of the wrong size)
        import uuid as uuidlib
        name, uuid = self.name("v"), str(uuidlib.uuid4())
        image = "gantry-vol-" + uuid
        self.addCleanup(env.tool, "rbd", "perf", "rm", "rbd/" + image, check=False)
        self.addCleanup(env.tool, "rados", "perf", "-p", "rbd", "rmomapkey", "gantry.volumes",
                        name, check=False)
        env.tool("rados", "perf", "-p", "rbd", "setomapval", "gantry.volumes", name, uuid)
        env.tool("rbd", "perf", "create", "--size", "8M", "--data-pool", "ecdata", "rbd/" + image)
        self.assertEqual(env.record(uuid), {})
        vol = self.create(name, size=64 << 20)
        self.assertEqual(env.uuid_of(vol.volume_id), uuid)
        self.assertEqual(env.rbd_info("perf", image)["size"], 64 << 20)
        self.assertEqual(env.record(uuid).get("ready"), "1")
        self.assertEqual([i for i in env.rbd_images() if uuid in i], [image])
        # and a fresh empty volume ends with its record ready
        fresh = self.create(self.name("w"), size=64 << 20)
        self.assertEqual(env.record(env.uuid_of(fresh.volume_id)).get("ready"), "1")
        for v in (vol, fresh):
            self.call("DeleteVolume", env.delete_req(v.volume_id))
        self.made.clear()
        directory, records = env.journal()
        self.assertNotIn(name, directory)
        self.assertNotIn(uuid, records)
        self.assertNotIn(image, env.rbd_images())

    def dir_keys(self, keys, rm=(), kind="volume"):
        """Sets (and removes) omap keys of a journal directory with bare
        librados: the state a plugin killed between two steps leaves."""
        import rados
        io = env.admin_ioctx()
        with rados.WriteOpCtx() as op:
            if keys:
                io.set_omap(op, tuple(keys), tuple(v.encode() for v in keys.values()))
            if rm:
                io.remove_omap_keys(op, tuple(rm))
            io.operate_write_op(op, "gantry.%ss" % kind)

    def record_keys(self, uuid, rec):
        return {env.RECORD + uuid + "." + k: v for k, v in rec.items()}

    def test_every_journal_step_boundary_retries_to_the_end(self):
        # a template record, as this version writes it for these parameters
        tmpl = self.create(self.name("t"), size=64 << 20)
        rec = env.record(env.uuid_of(tmpl.volume_id))
        self.assertEqual((rec["ready"], rec["plain"]), ("1", "1"))
        # an empty volume's uuid says so (version 8): DeleteVolume starts on the ID alone
        self.assertEqual(env.uuid_of(tmpl.volume_id)[14], "8")

        def state(tag, image_size=None, ready="0"):
            import uuid as uuidlib
            name = self.name(tag)
            u = str(uuidlib.uuid4())
            u = u[:14] + "8" + u[15:]
            image = "gantry-vol-" + u
            self.addCleanup(env.tool, "rbd", "perf", "rm", "rbd/" + image, check=False)
            self.addCleanup(self.dir_keys, {}, [name] + list(self.record_keys(u, rec)))
            r = dict(rec, name=name, image=image, ready=ready)
            self.dir_keys(dict({name: u}, **self.record_keys(u, r)))
            if image_size:
                env.tool("rbd", "perf", "create", "--size", str(image_size >> 20) + "M",
                         "--data-pool", "ecdata", "rbd/" + image)
            return name, u, image

        # create killed after the reservation (with its record, ready=0), before the image
        # or while it was made (half made: wrong size), or before the record was marked ready
        for tag, size in (("r", None), ("h", 8 << 20), ("i", 64 << 20)):
            name, u, image = state(tag, size)
            vol = self.create(name, size=64 << 20)
            self.assertEqual(env.uuid_of(vol.volume_id), u)
            self.assertEqual(env.rbd_info("perf", image)["size"], 64 << 20)
            self.assertEqual(env.record(u).get("ready"), "1")
        # an empty volume of these features is whole once its image opens: its record says
        # ready from the reservation on (one journal write per create), so a create killed
        # before the image, or while librbd made it (its name in rbd_directory and its id
        # object, no header yet: the state librbd's last step completes), leaves ready=1
        # and no image that opens. ListVolumes does not list it; the retry makes it again
        for tag in ("n", "x"):
            name, u, image = state(tag, ready="1")
            if tag == "x":
                env.tool("rbd", "perf", "create", "--size", "8M", "--data-pool", "ecdata",
                         "rbd/" + image)
                header = "rbd_header." + env.rbd_info("perf", image)["id"]
                env.tool("rados", "perf", "-p", "rbd", "rm", header)
            listed = self.call("ListVolumes", csi_pb2.ListVolumesRequest()).entries
            self.assertNotIn(tmpl.volume_id[:-36] + u, [e.volume.volume_id for e in listed])
            vol = self.create(name, size=64 << 20)
            self.assertEqual(env.uuid_of(vol.volume_id), u)
            self.assertEqual(env.rbd_info("perf", image)["size"], 64 << 20)
            self.assertEqual(env.record(u).get("ready"), "1")
            listed = self.call("ListVolumes", csi_pb2.ListVolumesRequest()).entries
            self.assertIn(vol.volume_id, [e.volume.volume_id for e in listed])
        # delete killed after the image went, before the name and the record
        name, u, image = state("d", ready="1")
        vid = tmpl.volume_id[:-36] + u
        self.call("DeleteVolume", env.delete_req(vid))
        directory, records = env.journal()
        self.assertNotIn(name, directory)
        self.assertNotIn(u, records)
        # a name that maps to another uuid now: only the record goes
        name, u, image = state("o", 64 << 20, ready="1")
        other = "00000000-0000-4000-8000-000000000000"
        self.dir_keys({name: other})
        self.call("DeleteVolume", env.delete_req(tmpl.volume_id[:-36] + u))
        directory, records = env.journal()
        self.assertEqual(directory.get(name), other)
        self.assertNotIn(u, records)
        self.assertNotIn(image, env.rbd_images())
        # (a watched one: test_delete_refused_while_watched, librbd refuses, the long way
        # names the watcher)

    def test_snapshot_retries_from_each_journal_step(self):
        import uuid as uuidlib
        vol = self.create(self.name("v"), size=64 << 20)
        vol_image = env.record(env.uuid_of(vol.volume_id))["image"]
        first = self.snapshot(self.name("s"), vol.volume_id)
        rec = env.record(env.uuid_of(first.snapshot_id), kind="snapshot")
        self.assertEqual((rec["ready"], rec["name"]), ("1", self.name("s")))

        def snaps():
            out = env.tool("rbd", "perf", "snap", "ls", "--format", "json", "rbd/" + vol_image)
            return {s["name"] for s in json.loads(out)}

        # a create killed after the reservation, which carries the record (ready=0), before
        # the RBD snapshot; and what an earlier version killed there left: the name alone
        for tag, with_record in (("r", True), ("e", False)):
            name, u = self.name(tag), str(uuidlib.uuid4())
            r = dict(rec, name=name, image=rec["image"].replace(env.uuid_of(first.snapshot_id), u),
                     ready="0")
            keys = {name: u}
            if with_record:
                keys.update(self.record_keys(u, r))
            self.addCleanup(self.dir_keys, {}, list(keys), kind="snapshot")
            self.dir_keys(keys, kind="snapshot")
            self.assertNotIn(r["image"], snaps())
            snap = self.snapshot(name, vol.volume_id)
            self.assertEqual(env.uuid_of(snap.snapshot_id), u)
            self.assertTrue(snap.ready_to_use)
            self.assertEqual(env.record(u, kind="snapshot"), dict(r, ready="1"))
            self.assertIn(r["image"], snaps())
            self.call("DeleteSnapshot", csi_pb2.DeleteSnapshotRequest(
                snapshot_id=snap.snapshot_id, secrets=env.secrets()))
            directory, records = env.journal(kind="snapshot")
            self.assertNotIn(name, directory)
            self.assertNotIn(u, records)
            self.assertNotIn(r["image"], snaps())

    def test_volumes_of_an_earlier_version(self):
        # the record in its own object, as earlier versions wrote it (bare librados)
        import uuid as uuidlib
        tmpl = self.create(self.name("t"), size=64 << 20)
        rec = env.record(env.uuid_of(tmpl.volume_id))
        vols = {}
        for tag, plain in (("p", True), ("c", False)):
            name, u = self.name(tag), str(uuidlib.uuid4())
            image = "gantry-vol-" + u
            self.addCleanup(env.tool, "rbd", "perf", "rm", "rbd/" + image, check=False)
            self.addCleanup(env.tool, "rados", "perf", "-p", "rbd", "rm", "gantry.volume." + u,
                            check=False)
            self.addCleanup(self.dir_keys, {}, [name])
            r = dict(rec, name=name, image=image)
            if not plain:
                del r["plain"]
            env.legacy_record(u, r)
            self.dir_keys({name: u})
            env.tool("rbd", "perf", "create", "--size", "64M", "--data-pool", "ecdata",
                     "rbd/" + image)
            vols[tag] = (name, u, image)
        for tag, (name, u, image) in vols.items():
            # a retried create finds it; ListVolumes lists it; GetVolume reads it
            vol = self.call("CreateVolume", env.create_req(name, size=64 << 20)).volume
            self.assertEqual(env.uuid_of(vol.volume_id), u)
            self.assertEqual(vol.volume_context["imageName"], image)
            got = self.call("ControllerGetVolume", csi_pb2.ControllerGetVolumeRequest(
                volume_id=vol.volume_id))
            self.assertEqual(got.volume.capacity_bytes, 64 << 20)
            listed, token = set(), ""
            while True:
                page = self.call("ListVolumes", csi_pb2.ListVolumesRequest(
                    max_entries=50, starting_token=token))
                listed |= {e.volume.volume_id for e in page.entries}
                token = page.next_token
                if not token:
                    break
            self.assertIn(vol.volume_id, listed)
            self.assertIn(tmpl.volume_id, listed)
            # and DeleteVolume removes the image, the name and the record object
            self.call("DeleteVolume", env.delete_req(vol.volume_id))
            directory, records = env.journal()
            self.assertNotIn(name, directory)
            self.assertNotIn(u, records)
            self.assertNotIn(image, env.rbd_images())
            self.assertEqual(env.tool("rados", "perf", "-p", "rbd", "stat", "gantry.volume." + u,
                                      check=False), "")
        # a name the journal's record keys would collide with is refused
        self.assertCode(Code.INVALID_ARGUMENT, lambda: self.call(
            "CreateVolume", env.create_req(env.RECORD + "x")), "name")

    def test_bad_parameters_name_the_parameter(self):
        before = env.journal()
        cases = [
            ({"datapool": "ecdata"}, "parameters.datapool"),
            ({"objectSize": "3000"}, "parameters.objectSize"),
            ({"imageFeatures": "layering,journaling"}, "parameters.imageFeatures"),
            ({"stripeUnit": "65536"}, "parameters.stripeCount"),
            ({"fsType": "btrfs"}, "parameters.fsType"),
            ({"clusterID": "nowhere"}, "parameters.clusterID"),
            ({"tier": "tape"}, "parameters.tier"),
            ({"pool": "no such pool"}, "parameters.pool"),
            ({"bandwidthPolicy": "throttle"}, "parameters.bandwidthPolicy"),
            ({"bandwidthPolicy": "cap", "bandwidthBurstFactor": "3"},
             "parameters.bandwidthBurstFactor"),
            ({"gantry.io/default-gbps": "-1"}, "parameters.gantry.io/default-gbps"),
        ]
        for extra, field in cases:
            self.assertCode(Code.INVALID_ARGUMENT, lambda: self.call(
                "CreateVolume", env.create_req(self.name("bad"), **extra)), field)
        self.assertCode(Code.INVALID_ARGUMENT, lambda: self.call(
            "CreateVolume", env.create_req(self.name("bad"), pool="nopool")), "parameters.pool")
        self.assertCode(Code.INVALID_ARGUMENT, lambda: self.call(
            "CreateVolume", env.create_req(self.name("bad"), dataPool="nopool")),
            "parameters.dataPool")
        self.assertCode(Code.INVALID_ARGUMENT, lambda: self.call("CreateVolume", env.create_req(
            self.name("bad"), caps=[env.cap(env.MODE.MULTI_NODE_MULTI_WRITER)])),
            "volume_capabilities[0].access_mode")
        req = env.create_req(self.name("bad"))
        req.capacity_range.limit_bytes = 1 << 20
        self.assertCode(Code.OUT_OF_RANGE, lambda: self.call("CreateVolume", req),
                        "capacity_range")
        req = env.create_req(self.name("bad"))
        req.secrets["userKey"] = BAD_KEY
        self.assertCode(Code.INVALID_ARGUMENT, lambda: self.call("CreateVolume", req),
                        "secrets.userKey")
        req.secrets["userKey"] = OTHER_KEY
        self.assertCode(Code.PERMISSION_DENIED, lambda: self.call("CreateVolume", req), "secrets")
        # nothing was reserved or created for any of them
        self.assertEqual(env.journal(), before)
        env.assert_consistent(self)

    def test_multi_node_writer_block_is_allowed(self):
        vol = self.create(self.name("v"), caps=[env.cap(env.MODE.MULTI_NODE_MULTI_WRITER,
                                                        block=True)])
        r = self.call("ValidateVolumeCapabilities", csi_pb2.ValidateVolumeCapabilitiesRequest(
            volume_id=vol.volume_id, volume_capabilities=[env.cap(env.MODE.MULTI_NODE_READER_ONLY)]))
        self.assertEqual(len(r.confirmed.volume_capabilities), 1)
        r = self.call("ValidateVolumeCapabilities", csi_pb2.ValidateVolumeCapabilitiesRequest(
            volume_id=vol.volume_id,
            volume_capabilities=[env.cap(env.MODE.MULTI_NODE_MULTI_WRITER)]))
        self.assertFalse(r.HasField("confirmed"))
        self.assertIn("multi-node writers", r.message)

    def test_snapshot_clone_expand_get(self):
        src = self.create(self.name("src"), size=32 << 20)
        src_img = dict(src.volume_context)["imageName"]
        env.fill("perf", src_img)
        want = env.checksum("perf", src_img)
        snap = self.snapshot(self.name("s"), src.volume_id)
        self.assertTrue(snap.ready_to_use)
        self.assertEqual(snap.source_volume_id, src.volume_id)
        self.assertEqual(snap.size_bytes, 32 << 20)
        self.assertGreater(snap.creation_time.seconds, 0)
        again = self.call("CreateSnapshot", csi_pb2.CreateSnapshotRequest(
            name=self.name("s"), source_volume_id=src.volume_id, secrets=env.secrets())).snapshot
        self.assertEqual(again.snapshot_id, snap.snapshot_id)
        other = self.create(self.name("other"), size=32 << 20)
        self.assertCode(Code.ALREADY_EXISTS, lambda: self.call("CreateSnapshot",
                        csi_pb2.CreateSnapshotRequest(name=self.name("s"),
                                                      source_volume_id=other.volume_id,
                                                      secrets=env.secrets())), "name")
        env.fill("perf", src_img)  # the snapshot must not see this

        clone = self.create(self.name("c1"), size=0, source_snapshot=snap.snapshot_id)
        cimg = dict(clone.volume_context)["imageName"]
        info = env.rbd_info("perf", cimg)
        self.assertEqual(info["data_pool"], "ecdata")
        self.assertEqual(info["parent"]["image"], src_img)
        self.assertEqual(clone.capacity_bytes, 32 << 20)
        self.assertEqual(env.checksum("perf", cimg), want)

        now = env.checksum("perf", src_img)
        copy = self.create(self.name("c2"), size=64 << 20, source_volume=src.volume_id)
        pimg = dict(copy.volume_context)["imageName"]
        info = env.rbd_info("perf", pimg)
        self.assertEqual(info["data_pool"], "ecdata")
        self.assertEqual(info["size"], 64 << 20)
        self.assertEqual(env.checksum("perf", pimg, length=32 << 20), now)
        # the copy's point-in-time snapshot is gone from the source; the CSI one stays
        snaps = [x["name"] for x in json.loads(env.tool("rbd", "perf", "snap", "ls", "--format",
                                                        "json", "rbd/" + src_img))]
        self.assertEqual(snaps, ["gantry-snap-" + env.uuid_of(snap.snapshot_id)])
        self.assertEqual(copy.content_source.volume.volume_id, src.volume_id)
        self.assertCode(Code.OUT_OF_RANGE, lambda: self.call("CreateVolume", env.create_req(
            self.name("c3"), size=16 << 20, source_volume=src.volume_id)), "capacity_range")

        exp = self.call("ControllerExpandVolume", csi_pb2.ControllerExpandVolumeRequest(
            volume_id=copy.volume_id, capacity_range=csi_pb2.CapacityRange(required_bytes=96 << 20),
            secrets=env.secrets(), volume_capability=env.cap()))
        self.assertEqual(exp.capacity_bytes, 96 << 20)
        self.assertTrue(exp.node_expansion_required)
        self.assertEqual(env.rbd_info("perf", pimg)["size"], 96 << 20)
        got = self.call("ControllerGetVolume", csi_pb2.ControllerGetVolumeRequest(
            volume_id=copy.volume_id))
        self.assertEqual(got.volume.capacity_bytes, 96 << 20)
        self.assertFalse(got.status.volume_condition.abnormal)

        listed = self.call("ListSnapshots", csi_pb2.ListSnapshotsRequest(
            source_volume_id=src.volume_id)).entries
        self.assertEqual([e.snapshot.snapshot_id for e in listed], [snap.snapshot_id])
        one = self.call("ListSnapshots", csi_pb2.ListSnapshotsRequest(
            snapshot_id=snap.snapshot_id)).entries
        self.assertEqual(len(one), 1)
        # the source has a snapshot: it cannot go first
        self.assertCode(Code.FAILED_PRECONDITION,
                        lambda: self.call("DeleteVolume", env.delete_req(src.volume_id)),
                        "snapshot")

    def test_list_volumes_and_snapshots_paginate(self):
        mine = {self.create(self.name("v%d" % i), size=8 << 20).volume_id for i in range(5)}
        seen, token, pages = [], "", 0
        while True:
            r = self.call("ListVolumes", csi_pb2.ListVolumesRequest(max_entries=2,
                                                                     starting_token=token))
            self.assertLessEqual(len(r.entries), 2)
            seen += [e.volume.volume_id for e in r.entries]
            pages += 1
            token = r.next_token
            if not token:
                break
            self.assertLess(pages, 100)
        self.assertEqual(len(seen), len(set(seen)), "a volume listed twice")
        self.assertLessEqual(mine, set(seen))
        self.assertGreaterEqual(pages, 3)
        self.assertCode(Code.ABORTED, lambda: self.call("ListVolumes", csi_pb2.ListVolumesRequest(
            starting_token="garbage")), "starting_token")
        src = sorted(mine)[0]
        snaps = {self.snapshot(self.name("s%d" % i), src).snapshot_id for i in range(3)}
        seen, token = [], ""
        for _ in range(10):
            r = self.call("ListSnapshots", csi_pb2.ListSnapshotsRequest(
                max_entries=1, starting_token=token, source_volume_id=src))
            seen += [e.snapshot.snapshot_id for e in r.entries]
            token = r.next_token
            if not token:
                break
        self.assertEqual(sorted(seen), sorted(snaps))

    def test_capacity_is_ec_aware(self):
        ec = self.call("GetCapacity", csi_pb2.GetCapacityRequest(
            parameters=env.params())).available_capacity
        rep = self.call("GetCapacity", csi_pb2.GetCapacityRequest(
            parameters=env.params(dataPool=""))).available_capacity
        rep = self.call("GetCapacity", csi_pb2.GetCapacityRequest(
            parameters={"clusterID": "perf", "pool": "rbd"})).available_capacity
        self.assertGreater(ec, 0)
        self.assertGreater(rep, 0)
        # EC 2+1 keeps 2/3 of raw space, 2 replicas 1/2: the EC pool holds more
        self.assertGreater(ec, rep * 1.2)
        self.assertCode(Code.INVALID_ARGUMENT, lambda: self.call("GetCapacity",
                        csi_pb2.GetCapacityRequest(parameters=env.params(dataPool="nopool"))),
                        "parameters.dataPool")

    def test_malformed_and_unknown_ids(self):
        # the rbd pool's real ID (the mgr's own pool may take a low ID first,
        # and the driver's user may not read it), then a pool that does not exist
        absent = "00000000-0000-4000-8000-000000000000"
        bad = ["garbage", env.volume_id("perf", "rbd", "not-a-uuid"),
               env.volume_id("perf", "rbd", absent),
               "0001-0004-perf-0000000000007777-" + absent]
        for vid in bad:
            self.call("DeleteVolume", env.delete_req(vid))
            self.call("DeleteSnapshot", csi_pb2.DeleteSnapshotRequest(snapshot_id=vid,
                                                                      secrets=env.secrets()))
            self.assertCode(Code.NOT_FOUND, lambda: self.call(
                "ControllerExpandVolume", csi_pb2.ControllerExpandVolumeRequest(
                    volume_id=vid, capacity_range=csi_pb2.CapacityRange(required_bytes=1 << 30),
                    secrets=env.secrets())), "volume_id")
            self.assertCode(Code.NOT_FOUND, lambda: self.call(
                "ControllerGetVolume", csi_pb2.ControllerGetVolumeRequest(volume_id=vid)))
            self.assertCode(Code.NOT_FOUND, lambda: self.call(
                "ValidateVolumeCapabilities", csi_pb2.ValidateVolumeCapabilitiesRequest(
                    volume_id=vid, volume_capabilities=[env.cap()])))
            self.assertCode(Code.NOT_FOUND, lambda: self.call(
                "CreateSnapshot", csi_pb2.CreateSnapshotRequest(
                    name=self.name("s"), source_volume_id=vid, secrets=env.secrets())),
                "source_volume_id")
            self.assertCode(Code.NOT_FOUND, lambda: self.call("CreateVolume", env.create_req(
                self.name("v"), source_volume=vid)), "volume_content_source")
            r = self.call("ListSnapshots", csi_pb2.ListSnapshotsRequest(snapshot_id=vid))
            self.assertEqual(len(r.entries), 0)
            self.assertCode(Code.NOT_FOUND, lambda: self.call(
                "ControllerPublishVolume", csi_pb2.ControllerPublishVolumeRequest(
                    volume_id=vid, node_id="gpu-1", volume_capability=env.cap(),
                    secrets=env.secrets())), "volume_id")

    def test_publish_checks_the_volume_exists(self):
        vol = self.create(self.name("pub"))
        req = csi_pb2.ControllerPublishVolumeRequest(
            volume_id=vol.volume_id, node_id="gpu-1", volume_capability=env.cap(),
            secrets=env.secrets())
        self.call("ControllerPublishVolume", req)  # nothing to attach: OK
        self.call("ControllerUnpublishVolume", csi_pb2.ControllerUnpublishVolumeRequest(
            volume_id=vol.volume_id, node_id="gpu-1"))
        self.call("DeleteVolume", env.delete_req(vol.volume_id))
        self.assertCode(Code.NOT_FOUND, lambda: self.call("ControllerPublishVolume", req),
                        "volume_id")
        req.ClearField("volume_capability")
        self.assertCode(Code.INVALID_ARGUMENT, lambda: self.call("ControllerPublishVolume", req),
                        "volume_capability")

    @unittest.skipUnless(os.environ.get("GANTRY_FAKEAPI"), "GANTRY_FAKEAPI not set")
    def test_publish_to_a_node_no_plugin_reported_is_not_found(self):
        """With API access the controller knows the node IDs (CSINode objects,
        here from the FAKE API server): an unknown one is NOT_FOUND for a
        dataset volume too."""
        vol = self.create(self.name("pubnode"))
        tmp = tempfile.mkdtemp(prefix="gantry-ceph-registry-")
        self.addCleanup(shutil.rmtree, tmp, True)
        api = start_fake(tmp, {"csinodes": [csinode("gpu-1", "gpu-1")]})
        self.addCleanup(api.stop)
        p = Plugin(mode="controller", node_id=None, config=env.CONFIG,
                   extra=["--kubeconfig", api.write_kubeconfig(os.path.join(tmp, "kc"))])
        self.addCleanup(p.cleanup)
        self.addCleanup(p.stop)
        p.start()
        req = csi_pb2.ControllerPublishVolumeRequest(
            volume_id=vol.volume_id, node_id="gpu-1", volume_capability=env.cap(),
            secrets=env.secrets())
        p.call("ControllerPublishVolume", req, timeout=60)
        req.node_id = "gpu-404"
        self.assertCode(Code.NOT_FOUND, lambda: p.call("ControllerPublishVolume", req, timeout=60),
                        "node_id", "gpu-404")

    def test_mode_all_without_api_knows_only_its_own_node(self):
        """--mode all without API access: the controller knows one node, the
        node plugin of its own process; any other node ID is NOT_FOUND (the
        csi-sanity spec "should fail when the node does not exist"). A bare
        controller without API access cannot tell, and takes every ID."""
        vol = self.create(self.name("ownnode"))
        p = Plugin(mode="all", node_id="gpu-own", config=env.CONFIG,
                   extra=["--metrics-addr", "127.0.0.1:0"])
        self.addCleanup(p.cleanup)
        self.addCleanup(p.stop)
        p.start()
        self.assertEqual(p.call("NodeGetInfo").node_id, "gpu-own")
        req = csi_pb2.ControllerPublishVolumeRequest(
            volume_id=vol.volume_id, node_id="gpu-own", volume_capability=env.cap(),
            secrets=env.secrets())
        p.call("ControllerPublishVolume", req, timeout=60)
        p.call("ControllerUnpublishVolume", csi_pb2.ControllerUnpublishVolumeRequest(
            volume_id=vol.volume_id, node_id="gpu-own"), timeout=60)
        for other in ("some-fake-node-id", "gpu-own2", "gpu-ow"):
            req.node_id = other
            self.assertCode(Code.NOT_FOUND, lambda: p.call("ControllerPublishVolume", req,
                                                           timeout=60), "node_id", other)
        self.assertIn("source=own_node node_id=gpu-own", p.read_log())
        req.node_id = "some-fake-node-id"
        self.call("ControllerPublishVolume", req)  # the bare controller: unchecked

    def test_delete_refused_while_watched(self):
        vol = self.create(self.name("v"))
        img = dict(vol.volume_context)["imageName"]
        watch = subprocess.Popen(["rbd", "-c", env.conf(), "watch", "rbd/" + img],
                                 stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 60
            while "watcher=" not in env.tool("rbd", "perf", "status", "rbd/" + img):
                self.assertIsNone(watch.poll(), "rbd watch exited")
                self.assertLess(time.monotonic(), deadline, "rbd watch never registered")
                time.sleep(0.1)
            e = self.assertCode(Code.FAILED_PRECONDITION, lambda: self.call(
                "DeleteVolume", env.delete_req(vol.volume_id)), "watcher", "127.0.0.1")
            self.assertIn(img, e.details())
        finally:
            try:
                watch.communicate(b"\n", timeout=30)  # rbd watch unwatches and exits
            except subprocess.TimeoutExpired:
                watch.kill()
                watch.wait(timeout=10)
        self.call("DeleteVolume", env.delete_req(vol.volume_id))
        self.made.clear()
        self.assertNotIn(img, env.rbd_images())

    def test_copy_from_capacity_cluster_to_performance_cluster(self):
        far = self.create(self.name("far"), cluster="capa", size=32 << 20)
        far_img = dict(far.volume_context)["imageName"]
        self.assertEqual(env.rbd_info("capa", far_img)["data_pool"], "ecdata")
        env.fill("capa", far_img)
        want = env.checksum("capa", far_img)
        # a copy from another cluster runs in the background: ABORTED with its progress until done
        near, messages = env.provision(self.plugin, env.create_req(
            self.name("near"), "perf", size=0, source_volume=far.volume_id), timeout=300)
        self.made.append(("volume", near.volume_id, "perf"))
        self.assertTrue(all(m.startswith("copying %s from capa: " % self.name("near"))
                            for m in messages), messages)
        ctx = dict(near.volume_context)
        self.assertEqual(ctx["clusterID"], "perf")
        self.assertEqual(near.capacity_bytes, 32 << 20)
        self.assertEqual(env.rbd_info("perf", ctx["imageName"])["data_pool"], "ecdata")
        self.assertEqual(env.checksum("perf", ctx["imageName"]), want)
        again = self.call("CreateVolume", env.create_req(self.name("near"), "perf", size=0,
                                                         source_volume=far.volume_id)).volume
        self.assertEqual(again.volume_id, near.volume_id)


if __name__ == "__main__":
    unittest.main()
