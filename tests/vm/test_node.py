"""The Node service on a real kernel (run inside the VM by tests/vm/run.sh;
CTest: vm_node).

gantry-csi --mode node runs in the guest and is driven over its Unix socket
by python3-grpcio, as kubelet would. The volumes are real RBD images on a
Ceph cluster in the test's network namespace (tests/vm/node_cluster.sh made
them); the volume_context is the one the dataset controller answers
(docs/architecture.md, "Dataset volume_context"). One volume was promoted
from a second cluster through a real rbd-mirror daemon by the controller
(node_cluster.sh, mirror_promote.py) and is mapped read-only. Everything is checked
against the kernel: /sys/bus/rbd, /proc/self/mountinfo, reads and writes.
"""
import concurrent.futures
import errno
import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import unittest

import grpc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "conformance"))
from csi_client import Plugin  # noqa: E402
import csi_pb2  # noqa: E402

SHARE = "/vm"
KUBELET = "/var/lib/kubelet/plugins/kubernetes.io/csi/csi.gantry.io"
MODE = csi_pb2.VolumeCapability.AccessMode.Mode
CODE = grpc.StatusCode


def read_share(name):
    with open(os.path.join(SHARE, name)) as f:
        return f.read().strip()


ENV = dict(line.split("=", 1) for line in read_share("env").splitlines())
USER_KEY = read_share("gantry.key")


def volume_id(image):
    return "0001-0004-test-0000000000000001-%s" % image


def context(image, fs="ext4", map_options="ms_mode=crc"):
    ctx = {"tier": "dataset", "clusterID": "test", "monitors": ENV["MONITORS"], "pool": "rbd",
           "dataPool": "ecdata", "imageName": image, "fsType": fs}
    if map_options:
        ctx["mapOptions"] = map_options
    return ctx


def capability(mode=MODE.SINGLE_NODE_WRITER, block=False, fs=""):
    cap = csi_pb2.VolumeCapability(access_mode=csi_pb2.VolumeCapability.AccessMode(mode=mode))
    if block:
        cap.block.SetInParent()
    else:
        cap.mount.fs_type = fs
    return cap


def staging(image, suffix=""):
    return os.path.join(KUBELET, "staging", image + suffix)


def target(image, n=0):
    return "/var/lib/kubelet/pods/pod-%d/volumes/kubernetes.io~csi/%s/mount" % (n, image)


def mappings(image):
    """rbd ids mapping @image, from sysfs."""
    ids = []
    base = "/sys/bus/rbd/devices"
    for d in os.listdir(base) if os.path.isdir(base) else []:
        with open(os.path.join(base, d, "name")) as f:
            if f.read().strip() == image:
                ids.append(int(d))
    return sorted(ids)


def mounted(path):
    with open("/proc/self/mountinfo") as f:
        return any(line.split()[4] == path for line in f)


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


class NodeTest(unittest.TestCase):
    plugin = None

    @classmethod
    def setUpClass(cls):
        subprocess.run(["modprobe", "-a", "rbd", "ext4", "xfs"], check=True, timeout=60)
        cls.workdir = tempfile.mkdtemp(prefix="gantry-node-vm-")
        cls.config = os.path.join(cls.workdir, "gantry.json")
        with open(cls.config, "w") as f:
            json.dump({"node": {"topology": {"network.topology.nvidia.com/leaf": "leaf-7",
                                             "topology.kubernetes.io/zone": "z1"},
                                "maxVolumesPerNode": 40, "maxParallelMaps": 4}}, f)
        cls.start_plugin()

    @classmethod
    def start_plugin(cls):
        """Starts the plugin and waits until this instance serves.

        After a crash the old socket file is still there, and grpc's shared
        subchannels may call a channel ready on the strength of the dead
        server's connection: wait for this process's own start line in the
        log, then talk over a channel with subchannels of its own.
        """
        p = Plugin(mode="node", node_id="vm-node", config=cls.config, workdir=cls.workdir,
                   extra=["--workers", "20"], ready_timeout=60.0)
        starts = p.read_log().count("event=csi.started")
        cls.plugin = p.start()
        deadline = time.monotonic() + 60
        while p.read_log().count("event=csi.started") <= starts:
            if p.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("gantry-csi did not start:\n" + p.read_log()[-2000:])
            time.sleep(0.05)
        p.channel.close()
        p.channel = grpc.insecure_channel(p.endpoint,
                                          options=[("grpc.use_local_subchannel_pool", 1)])
        grpc.channel_ready_future(p.channel).result(timeout=30)

    @classmethod
    def tearDownClass(cls):
        try:
            rc = cls.plugin.stop() if cls.plugin else 0
            log = cls.plugin.read_log() if cls.plugin else ""
            print("---- plugin log (last 40 lines)")
            print("\n".join(log.splitlines()[-40:]))
            # every instance of the run logged here: none may have tripped a sanitizer
            bad = [line for line in log.splitlines() if "Sanitizer" in line or "runtime error" in line]
            if rc != 0 or bad:
                raise AssertionError("plugin exit %s; %s" % (rc, "\n".join(bad[:20])))
        finally:
            shutil.rmtree(cls.workdir, ignore_errors=True)

    def call(self, method, timeout=120.0, **fields):
        return self.plugin.call(method, getattr(csi_pb2, method + "Request")(**fields),
                                timeout=timeout)

    def assert_code(self, code, method, **fields):
        with self.assertRaises(grpc.RpcError) as cm:
            self.call(method, **fields)
        self.assertEqual(cm.exception.code(), code, cm.exception.details())
        return cm.exception.details()

    def stage(self, image, cap=None, ctx=None, path=None, secrets=None):
        return self.call("NodeStageVolume", volume_id=volume_id(image),
                         staging_target_path=path or staging(image),
                         volume_capability=cap or capability(), volume_context=ctx or context(image),
                         secrets=secrets or {"userID": "gantry", "userKey": USER_KEY})

    def unstage(self, image, path=None):
        return self.call("NodeUnstageVolume", volume_id=volume_id(image),
                         staging_target_path=path or staging(image))

    def publish(self, image, tgt, cap=None, readonly=False, path=None):
        return self.call("NodePublishVolume", volume_id=volume_id(image),
                         staging_target_path=path or staging(image), target_path=tgt,
                         volume_capability=cap or capability(), readonly=readonly,
                         volume_context=context(image))

    def unpublish(self, image, tgt):
        return self.call("NodeUnpublishVolume", volume_id=volume_id(image), target_path=tgt)

    def stats(self, image, path):
        return self.call("NodeGetVolumeStats", volume_id=volume_id(image), volume_path=path)

    # ---- identity and node info ----

    def test_info_capabilities_probe(self):
        info = self.call("NodeGetInfo")
        self.assertEqual(info.node_id, "vm-node")
        self.assertEqual(info.max_volumes_per_node, 40)
        self.assertEqual(dict(info.accessible_topology.segments),
                         {"network.topology.nvidia.com/leaf": "leaf-7",
                          "topology.kubernetes.io/zone": "z1"})
        caps = {c.rpc.type for c in self.call("NodeGetCapabilities").capabilities}
        T = csi_pb2.NodeServiceCapability.RPC.Type
        self.assertEqual(caps, {T.STAGE_UNSTAGE_VOLUME, T.GET_VOLUME_STATS, T.EXPAND_VOLUME,
                                T.VOLUME_CONDITION})
        self.assertTrue(self.call("Probe").ready.value)

    # ---- the dataset lifecycle ----

    def test_lifecycle_rw_then_ro_on_two_targets(self):
        # stage read-write: blank image is formatted, written, unstaged
        self.stage("data")
        self.stage("data")  # idempotent
        self.assertEqual(len(mappings("data")), 1)
        self.assertTrue(mounted(staging("data")))
        t0 = target("data", 0)
        self.publish("data", t0)
        payload = os.urandom(3 << 20)
        with open(os.path.join(t0, "shard-0"), "wb") as f:
            f.write(payload)
            os.fsync(f.fileno())
        want = hashlib.sha256(payload).hexdigest()
        self.unpublish("data", t0)
        self.assertFalse(os.path.exists(t0))
        self.unstage("data")
        self.assertEqual(mappings("data"), [])
        self.assertFalse(mounted(staging("data")))

        # stage read-only (many readers), publish on two targets
        rox = capability(MODE.MULTI_NODE_READER_ONLY)
        self.stage("data", cap=rox)
        ids = mappings("data")
        self.assertEqual(len(ids), 1)
        with open("/sys/block/rbd%d/ro" % ids[0]) as f:
            self.assertEqual(f.read().strip(), "1")
        t1, t2 = target("data", 1), target("data", 2)
        self.publish("data", t1, cap=rox)
        self.publish("data", t2, cap=rox)
        self.publish("data", t2, cap=rox)  # idempotent
        subprocess.run(["sh", "-c", "echo 3 > /proc/sys/vm/drop_caches"], check=True)
        self.assertEqual(sha(os.path.join(t1, "shard-0")), want)
        self.assertEqual(sha(os.path.join(t2, "shard-0")), want)
        for t in (t1, t2):
            with self.assertRaises(OSError) as cm:
                with open(os.path.join(t, "new-file"), "wb") as f:
                    f.write(b"x")
            self.assertEqual(cm.exception.errno, errno.EROFS)
        # a read-only stage cannot be republished read-write elsewhere in place
        details = self.assert_code(CODE.ALREADY_EXISTS, "NodeStageVolume",
                                   volume_id=volume_id("data"),
                                   staging_target_path=staging("data"),
                                   volume_capability=capability(),
                                   volume_context=context("data"),
                                   secrets={"userID": "gantry", "userKey": USER_KEY})
        self.assertIn("staging_target_path", details)
        for t in (t1, t2):
            self.unpublish("data", t)
            self.unpublish("data", t)  # idempotent
        self.unstage("data")
        self.unstage("data")  # unstage twice: OK
        self.assertEqual(mappings("data"), [])

    def test_raw_block(self):
        blk = capability(block=True)
        self.stage("blk", cap=blk)
        self.stage("blk", cap=blk)
        tgt = target("blk", 3) + "-dev"
        self.publish("blk", tgt, cap=blk)
        self.assertTrue(stat.S_ISBLK(os.stat(tgt).st_mode))
        pattern = os.urandom(1 << 20)
        with open(tgt, "r+b", buffering=0) as f:
            f.write(pattern)
            os.fsync(f.fileno())
        subprocess.run(["sh", "-c", "echo 3 > /proc/sys/vm/drop_caches"], check=True)
        with open(tgt, "rb") as f:
            self.assertEqual(f.read(len(pattern)), pattern)
        s = self.stats("blk", tgt)
        self.assertEqual(s.usage[0].total, 64 << 20)
        self.assertFalse(s.volume_condition.abnormal)
        # nothing to grow on the node for raw block: OK, with and without the access type
        for cap in (blk, None):
            grown = self.call("NodeExpandVolume", volume_id=volume_id("blk"), volume_path=tgt,
                              staging_target_path=staging("blk"), volume_capability=cap)
            self.assertEqual(grown.capacity_bytes, 64 << 20)
        # a file-system stage of a volume staged as block is refused
        self.assert_code(CODE.ALREADY_EXISTS, "NodeStageVolume", volume_id=volume_id("blk"),
                         staging_target_path=staging("blk"), volume_capability=capability(),
                         volume_context=context("blk"),
                         secrets={"userID": "gantry", "userKey": USER_KEY})
        self.unpublish("blk", tgt)
        self.assertFalse(os.path.exists(tgt))
        self.unstage("blk")
        self.assertEqual(mappings("blk"), [])

    def test_mirrored_promotion_maps_read_only(self):
        # node_cluster.sh had the controller promote a volume of another cluster through a real
        # rbd-mirror daemon: a clone of the replicated snapshot, whose parent is a non-primary image
        image, size, want = read_share("mirrored").split()
        rox = capability(MODE.MULTI_NODE_READER_ONLY, block=True)
        self.stage(image, cap=rox)
        ids = mappings(image)
        self.assertEqual(len(ids), 1)
        with open("/sys/block/rbd%d/ro" % ids[0]) as f:
            self.assertEqual(f.read().strip(), "1")
        tgt = target(image, 5) + "-dev"
        self.publish(image, tgt, cap=rox, readonly=True)
        subprocess.run(["sh", "-c", "echo 3 > /proc/sys/vm/drop_caches"], check=True)
        with open(tgt, "rb") as f:
            data = f.read(int(size))
        self.assertEqual(len(data), int(size))
        self.assertEqual(hashlib.sha256(data).hexdigest(), want)
        with self.assertRaises(OSError) as cm:
            with open(tgt, "r+b", buffering=0) as f:
                f.write(b"x")
        self.assertIn(cm.exception.errno, (errno.EROFS, errno.EACCES, errno.EPERM))
        self.unpublish(image, tgt)
        self.unstage(image)
        self.assertEqual(mappings(image), [])

    def test_plugin_restart_between_stage_and_publish(self):
        self.stage("rst", cap=capability(fs="xfs"), ctx=context("rst", fs="xfs"))
        type(self).plugin.kill()  # a crash, not a clean stop
        type(self).start_plugin()
        tgt = target("rst", 4)
        self.publish("rst", tgt, cap=capability(fs="xfs"))
        with open(os.path.join(tgt, "after-restart"), "w") as f:
            f.write("ok")
        type(self).plugin.stop()
        type(self).start_plugin()
        self.stage("rst", cap=capability(fs="xfs"), ctx=context("rst", fs="xfs"))  # still OK
        self.unpublish("rst", tgt)
        self.unstage("rst")
        self.assertEqual(mappings("rst"), [])
        self.assertFalse(mounted(staging("rst")))
        # a volume that holds data is never formatted: asked for ext4, it holds xfs
        details = self.assert_code(CODE.INVALID_ARGUMENT, "NodeStageVolume",
                                   volume_id=volume_id("rst"), staging_target_path=staging("rst"),
                                   volume_capability=capability(fs="ext4"),
                                   volume_context=context("rst", fs="ext4"),
                                   secrets={"userID": "gantry", "userKey": USER_KEY})
        self.assertIn("xfs", details)
        self.assertEqual(mappings("rst"), [])  # the failed stage unmapped what it mapped
        self.stage("rst", cap=capability(fs="xfs"), ctx=context("rst", fs="xfs"))
        with open(os.path.join(staging("rst"), "after-restart")) as f:
            self.assertEqual(f.read(), "ok")
        self.unstage("rst")

    def test_crash_between_map_and_mount_leaks_nothing(self):
        self.stage("crash")
        # what a plugin killed between the map and the mount leaves behind:
        # the mapping (and the stage marker), no mount
        subprocess.run(["umount", staging("crash")], check=True)
        self.assertEqual(len(mappings("crash")), 1)
        self.stage("crash")  # kubelet's retry adopts the mapping
        self.assertEqual(len(mappings("crash")), 1)
        self.assertTrue(mounted(staging("crash")))
        subprocess.run(["umount", staging("crash")], check=True)
        self.unstage("crash")  # or kubelet gives up: unstage still finds and unmaps it
        self.assertEqual(mappings("crash"), [])
        self.assertEqual(os.listdir(staging("crash")), [])

    def test_half_made_map_is_unmapped(self):
        """The kernel maps the image but /dev/rbdN never shows (here: the
        plugin runs in a mount namespace whose /dev is an empty tmpfs): the
        failed stage unmaps what it mapped instead of orphaning it."""
        workdir = tempfile.mkdtemp(prefix="gantry-node-nodev-")
        self.addCleanup(shutil.rmtree, workdir, ignore_errors=True)
        p = Plugin(mode="node", node_id="vm-node", config=self.config, workdir=workdir)
        p.args = ["unshare", "-m", "sh", "-c", 'mount -t tmpfs tmpfs /dev && exec "$@"',
                  "sh"] + p.args
        p.start()
        self.addCleanup(p.stop)
        req = csi_pb2.NodeStageVolumeRequest(
            volume_id=volume_id("orphan"), staging_target_path=staging("orphan"),
            volume_capability=capability(), volume_context=context("orphan"),
            secrets={"userID": "gantry", "userKey": USER_KEY})
        with self.assertRaises(grpc.RpcError) as cm:
            p.call("NodeStageVolume", req, timeout=120)
        self.assertIn("did not appear", cm.exception.details())
        self.assertEqual(mappings("orphan"), [], "the failed stage left its mapping behind")

    def test_map_against_a_dead_address_ends_by_the_deadline(self):
        """No monitor answers at the address: krbd would retry for its 60 s
        mount_timeout after the CO gave up; bounded by the call's deadline the
        plugin itself answers DEADLINE_EXCEEDED (its own message, not the
        client's "Deadline Exceeded") and its map slot is free again."""
        dead = ENV["MONITORS"].rsplit(".", 1)[0] + ".250:3300"
        ctx = context("lock")
        ctx["monitors"] = dead
        with self.assertRaises(grpc.RpcError) as cm:
            self.call("NodeStageVolume", timeout=20, volume_id=volume_id("dead"),
                      staging_target_path=staging("dead"), volume_capability=capability(),
                      volume_context=ctx, secrets={"userID": "gantry", "userKey": USER_KEY})
        self.assertEqual(cm.exception.code(), CODE.DEADLINE_EXCEEDED, cm.exception.details())
        self.assertIn("rbd map", cm.exception.details())
        self.assertIn("mount_timeout", cm.exception.details())
        self.assertEqual(mappings("lock"), [])

    def test_sixteen_concurrent_stages(self):
        images = ["c%02d" % i for i in range(16)]
        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            list(pool.map(self.stage, images))
            for image in images:
                self.assertEqual(len(mappings(image)), 1, image)
                self.assertTrue(mounted(staging(image)), image)
            list(pool.map(self.unstage, images))
        for image in images:
            self.assertEqual(mappings(image), [], image)

    def test_same_volume_concurrently_is_aborted_not_doubled(self):
        def attempt(_):
            try:
                self.stage("lock")
                return "OK"
            except grpc.RpcError as e:
                return e.code().name
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            results = list(pool.map(attempt, range(4)))
        self.assertIn("OK", results)
        self.assertTrue(set(results) <= {"OK", "ABORTED"}, results)
        self.assertEqual(len(mappings("lock")), 1)
        self.stage("lock")  # the retry after ABORTED succeeds
        self.unstage("lock")
        self.assertEqual(mappings("lock"), [])

    def rbd_resize(self, image, mb):
        subprocess.run(["rbd", "-c", "/vm/ceph.conf", "resize", "--size", str(mb), "rbd/" + image],
                       check=True, timeout=120, capture_output=True)

    def expand(self, image, fs, mb_from, mb_to):
        cap = capability(fs=fs)
        self.stage(image, cap=cap, ctx=context(image, fs=fs))
        tgt = target(image, 5)
        self.publish(image, tgt, cap=cap)
        before = os.statvfs(tgt)
        self.rbd_resize(image, mb_to)
        r = self.call("NodeExpandVolume", volume_id=volume_id(image), volume_path=tgt,
                      capacity_range=csi_pb2.CapacityRange(required_bytes=mb_to << 20),
                      volume_capability=cap)
        self.assertEqual(r.capacity_bytes, mb_to << 20)
        after = os.statvfs(tgt)
        grown = (after.f_blocks - before.f_blocks) * after.f_frsize
        self.assertGreater(grown, (mb_to - mb_from - 16) << 20, (fs, before, after))
        with open(os.path.join(tgt, "still-writable"), "w") as f:
            f.write("ok")
        self.unpublish(image, tgt)
        self.unstage(image)

    def test_online_expansion_ext4(self):
        self.expand("grow-ext4", "ext4", 128, 256)

    def test_online_expansion_xfs(self):
        self.expand("grow-xfs", "xfs", 320, 448)

    def test_stats_and_condition(self):
        self.stage("cond")
        tgt = target("cond", 6)
        self.publish("cond", tgt)
        with open(os.path.join(tgt, "f"), "wb") as f:
            f.write(os.urandom(4 << 20))
            os.fsync(f.fileno())
        s = self.stats("cond", tgt)
        usage = {u.unit: u for u in s.usage}
        b, i = usage[csi_pb2.VolumeUsage.BYTES], usage[csi_pb2.VolumeUsage.INODES]
        self.assertGreater(b.total, 50 << 20)
        self.assertGreaterEqual(b.used, 4 << 20)
        self.assertGreater(b.available, 0)
        self.assertGreater(i.total, 0)
        self.assertGreater(i.used, 0)
        self.assertFalse(s.volume_condition.abnormal, s.volume_condition.message)
        # the device disappears under the mount: condition turns abnormal
        (rbd_id,) = mappings("cond")
        with open("/sys/bus/rbd/remove_single_major", "w") as f:
            f.write("%d force" % rbd_id)
        # the removal is the kernel's to finish: ask again until it shows, within a bound
        deadline = time.monotonic() + 60
        while True:
            s = self.stats("cond", tgt)
            if s.volume_condition.abnormal or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        self.assertTrue(s.volume_condition.abnormal, s.volume_condition.message)
        self.assertIn("gone", s.volume_condition.message)
        self.unpublish("cond", tgt)
        self.unstage("cond")
        self.assertFalse(mounted(staging("cond")))
        self.assert_code(CODE.NOT_FOUND, "NodeGetVolumeStats", volume_id=volume_id("cond"),
                         volume_path=tgt)

    def test_default_ms_mode_and_no_map_options(self):
        # monitors on 3300 and no mapOptions: the plugin asks for msgr2 itself
        self.stage("noopt", ctx=context("noopt", map_options=None))
        self.assertEqual(len(mappings("noopt")), 1)
        self.unstage("noopt")
        self.assertEqual(mappings("noopt"), [])

    # ---- refusals: checked before any side effect ----

    def test_bad_requests_name_the_field(self):
        good = dict(volume_id=volume_id("blank"), staging_target_path=staging("blank"),
                    volume_capability=capability(), volume_context=context("blank"),
                    secrets={"userID": "gantry", "userKey": USER_KEY})
        cases = [
            ({"secrets": {"userID": "gantry"}}, "secrets.userKey"),
            ({"volume_context": dict(context("blank"), monitors="a b:1")},
             "volume_context.monitors"),
            ({"volume_context": dict(context("blank"), mapOptions="ms_mode=crc,secret=x")},
             "volume_context.mapOptions"),
            ({"volume_context": dict(context("blank"), imageName="a b")},
             "volume_context.imageName"),
            ({"staging_target_path": "relative/path"}, "staging_target_path"),
            ({"staging_target_path": "/var/lib/../../etc"}, "staging_target_path"),
            ({"volume_capability": capability(fs="btrfs")}, "fs_type"),
            ({"volume_capability": capability(MODE.MULTI_NODE_MULTI_WRITER)}, "access_mode"),
            ({"volume_id": "bad id"}, "volume_id"),
        ]
        for change, field in cases:
            req = dict(good, **change)
            details = self.assert_code(CODE.INVALID_ARGUMENT, "NodeStageVolume", **req)
            self.assertIn(field, details)
            self.assertNotIn(USER_KEY, details)
        self.assertEqual(mappings("blank"), [])
        # a blank volume staged read-only has nothing to mount: refused, nothing left mapped
        self.assert_code(CODE.FAILED_PRECONDITION, "NodeStageVolume",
                         **dict(good, volume_capability=capability(MODE.MULTI_NODE_READER_ONLY)))
        self.assertEqual(mappings("blank"), [])
        # publish before stage
        self.assert_code(CODE.FAILED_PRECONDITION, "NodePublishVolume",
                         volume_id=volume_id("blank"), staging_target_path=staging("blank"),
                         target_path=target("blank", 7), volume_capability=capability())
        # a missing image
        details = self.assert_code(CODE.NOT_FOUND, "NodeStageVolume",
                                   **dict(good, volume_context=context("no-such-image")))
        self.assertIn("imageName", details)
        self.assert_code(CODE.NOT_FOUND, "NodeGetVolumeStats", volume_id=volume_id("blank"),
                         volume_path="/var/lib/kubelet/nothing-here")
        self.unstage("blank")  # never staged: OK


if __name__ == "__main__":
    unittest.main()
