"""The checkpoint tier end to end on a real kernel (run inside the VM by
tests/vm/run.sh; CTest: vm_checkpoint).

In the guest: gantry-target on the kernel's nvmet (configfs) and gantry-csi
--mode all (controller and node) driven by python3-grpcio as the CSI
sidecars and kubelet would: CreateVolume, ControllerPublishVolume,
NodeStageVolume (libnvme attach over NVMe/TCP on the guest's loopback,
format when blank, mount), NodeUnstageVolume, ... The node library's
corners (controller reuse, the unstage retry path) are also driven directly
through tests/vm/nvmf_attach_tool. Checked against the kernel: configfs,
/sys/block, /sys/class/nvme, mounts, reads and writes.
"""
import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
import unittest
import urllib.request

import grpc

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "gantry-target"))
sys.path.insert(0, os.path.join(HERE, "..", "conformance"))
from ckpt_helpers import create_req, publish_req, write_config  # noqa: E402

# The VM's default kernel (bookworm's 6.1) has no DH-HMAC-CHAP: these volumes
# keep today's behaviour; tests/vm/test_dhchap.py runs on the backports kernel.
_create_req = create_req


def create_req(*args, **kw):  # noqa: F811
    kw.setdefault("auth", "none")
    return _create_req(*args, **kw)

import checkpoint_burst as burst  # noqa: E402
from csi_client import BUILD_DIR, Plugin, csi_pb2  # noqa: E402
from targetproc import Target  # noqa: E402

NVMET = "/sys/kernel/config/nvmet"
WORK = "/tmp/gantry-checkpoint-vm"
TOOL = os.path.join(BUILD_DIR, "tests", "nvmf_attach_tool")
NODE = "vm-node"
PORT = 8009


def sh(*args, check=True):
    return subprocess.run(args, capture_output=True, text=True, check=check)


def attach(ctx, host_nqn):
    kv = ["%s=%s" % (k, v) for k, v in ctx.items()]
    return subprocess.run([TOOL, "attach", host_nqn, *kv], capture_output=True, text=True, timeout=120)


def detach(dev):
    return subprocess.run([TOOL, "detach", dev], capture_output=True, text=True, timeout=120)


def mounted(path):
    with open("/proc/self/mountinfo") as f:
        return any(line.split()[4] == path for line in f)


def nvmet_port(trsvcid):
    """The configfs directory of the nvmet port listening on @trsvcid."""
    for port in os.listdir(os.path.join(NVMET, "ports")):
        with open(os.path.join(NVMET, "ports", port, "addr_trsvcid")) as f:
            if f.read().strip() == trsvcid:
                return os.path.join(NVMET, "ports", port)
    raise AssertionError("no nvmet port on %s" % trsvcid)


def controllers(nqn):
    """The NVMe controllers of subsystem @nqn, with their trsvcid."""
    out = {}
    for c in os.listdir("/sys/class/nvme"):
        with open("/sys/class/nvme/%s/subsysnqn" % c) as f:
            if f.read().strip() != nqn:
                continue
        with open("/sys/class/nvme/%s/address" % c) as f:
            out[c] = dict(kv.split("=", 1) for kv in f.read().strip().split(","))["trsvcid"]
    return out


def ctrl_states(nqn):
    """trsvcid -> state of the NVMe controllers of subsystem @nqn."""
    out = {}
    for c, trsvcid in controllers(nqn).items():
        try:
            with open("/sys/class/nvme/%s/state" % c) as f:
                out[trsvcid] = f.read().strip()
        except OSError:
            pass  # deleted meanwhile
    return out


def wait_for(what, cond, timeout):
    """Polls @cond until it returns something true (returned) or @timeout s pass (AssertionError)."""
    end = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > end:
            raise AssertionError("%s: not within %ss" % (what, timeout))
        time.sleep(0.2)


def wipe_nvmet():
    """What a reboot does to configfs: nothing of the target is left."""
    for port in os.listdir(os.path.join(NVMET, "ports")):
        d = os.path.join(NVMET, "ports", port, "subsystems")
        for s in os.listdir(d):
            os.unlink(os.path.join(d, s))
    for nqn in os.listdir(os.path.join(NVMET, "subsystems")):
        sub = os.path.join(NVMET, "subsystems", nqn)
        for h in os.listdir(os.path.join(sub, "allowed_hosts")):
            os.unlink(os.path.join(sub, "allowed_hosts", h))
        for ns in os.listdir(os.path.join(sub, "namespaces")):
            with open(os.path.join(sub, "namespaces", ns, "enable"), "w") as f:
                f.write("0")
            os.rmdir(os.path.join(sub, "namespaces", ns))
        os.rmdir(sub)
    for h in os.listdir(os.path.join(NVMET, "hosts")):
        os.rmdir(os.path.join(NVMET, "hosts", h))
    for port in os.listdir(os.path.join(NVMET, "ports")):
        os.rmdir(os.path.join(NVMET, "ports", port))


class CheckpointVmTest(unittest.TestCase):
    """One volume's life, in order (the tests share the volume)."""

    @classmethod
    def setUpClass(cls):
        sh("modprobe", "-a", "nvmet", "nvmet-tcp", "nvme-tcp", "nvme-fabrics")
        shutil.rmtree(WORK, ignore_errors=True)
        os.makedirs(os.path.join(WORK, "csi"))
        cls.stage = os.path.join(WORK, "stage")
        os.makedirs(cls.stage)
        cls.target = Target(workdir=os.path.join(WORK, "tgt"), configfs=NVMET, port=PORT).start()
        tok = os.path.join(WORK, "token")
        with open(tok, "w") as f:
            f.write(cls.target.token)
        cfg = write_config(os.path.join(WORK, "gantry.json"),
                           [("tgt-vm", cls.target.url, tok, [("127.0.0.1", "4420")], "leaf-vm"),
                            # the same agent again, with two listeners: native NVMe multipath
                            ("tgt-mp", cls.target.url, tok, [("127.0.0.1", "4420"), ("127.0.0.1", "4421")],
                             "leaf-mp")])
        cls.plugin = Plugin(mode="all", node_id=NODE, config=cfg, extra=["--metrics-addr", "127.0.0.1:0"],
                            workdir=os.path.join(WORK, "csi"), ready_timeout=60).start()
        cls.vol = cls.plugin.call("CreateVolume", create_req("pvc-vm-ckpt", size=64 << 20),
                                  timeout=60).volume
        cls.ctx = dict(cls.vol.volume_context)
        cls.host = cls.plugin.call("ControllerPublishVolume", publish_req(cls.vol.volume_id, NODE),
                                   timeout=60).publish_context["hostNQN"]

    @classmethod
    def tearDownClass(cls):
        if mounted(cls.stage):
            sh("umount", cls.stage, check=False)
        for name in os.listdir("/sys/block"):
            if name.startswith("nvme"):
                detach("/dev/" + name)
        rc = cls.plugin.stop()
        cls.target.stop()
        if rc != 0:  # under ASan a leak makes the exit non-zero
            raise RuntimeError("gantry-csi exited %s:\n%s" % (rc, cls.plugin.read_log()[-4000:]))

    def stage_req(self, host=None, vol=None):
        vol = vol or self.vol
        req = csi_pb2.NodeStageVolumeRequest(volume_id=vol.volume_id, staging_target_path=self.stage)
        req.publish_context["hostNQN"] = host or self.host
        req.volume_capability.CopyFrom(publish_req(vol.volume_id, NODE).volume_capability)
        for k, v in vol.volume_context.items():
            req.volume_context[k] = v
        return req

    def metric(self, name):
        """The value of metric @name (no labels) on the plugin's /metrics."""
        port = re.findall(r"event=csi.metrics_listening .*port=(\d+)", self.plugin.read_log())[-1]
        with urllib.request.urlopen("http://127.0.0.1:%s/metrics" % port, timeout=30) as r:
            text = r.read().decode()
        m = re.search(r"^%s ([0-9.e+-]+)$" % re.escape(name), text, re.M)
        self.assertIsNotNone(m, "%s not in /metrics:\n%s" % (name, text))
        return float(m.group(1))

    def new_mp_volume(self, name, size=32 << 20, **params):
        """A multipath volume (two listeners), published to this node; cleaned up after the test."""
        vol = self.plugin.call("CreateVolume", create_req(name, size=size, leaf="leaf-mp", **params),
                               timeout=60).volume
        self.addCleanup(self.plugin.call, "DeleteVolume",
                        csi_pb2.DeleteVolumeRequest(volume_id=vol.volume_id), timeout=60)
        self.addCleanup(self.plugin.call, "ControllerUnpublishVolume",
                        csi_pb2.ControllerUnpublishVolumeRequest(volume_id=vol.volume_id, node_id=NODE),
                        timeout=60)
        self.addCleanup(subprocess.run, [TOOL, "detach-volume", vol.volume_id])
        self.addCleanup(sh, "umount", self.stage, check=False)
        self.assertEqual(dict(vol.volume_context)["addresses"], "tcp:127.0.0.1:4420,tcp:127.0.0.1:4421")
        host = self.plugin.call("ControllerPublishVolume", publish_req(vol.volume_id, NODE),
                                timeout=60).publish_context["hostNQN"]
        return vol, host

    def formatted(self):
        return self.plugin.read_log().count("event=node.formatted")

    def stage_volume(self):
        """NodeStageVolume over gRPC; returns the device mounted at the staging path."""
        self.plugin.call("NodeStageVolume", self.stage_req(), timeout=120)
        with open("/proc/self/mountinfo") as f:
            line = [l for l in f if l.split()[4] == self.stage][-1].split()
        dev = line[line.index("-") + 2]
        self.assertRegex(dev, r"^/dev/nvme[0-9]+n[0-9]+$")
        return dev

    def unstage_volume(self, dev):
        req = csi_pb2.NodeUnstageVolumeRequest(volume_id=self.vol.volume_id, staging_target_path=self.stage)
        self.plugin.call("NodeUnstageVolume", req, timeout=120)
        self.assertFalse(mounted(self.stage))
        self.assertFalse(os.path.exists(os.path.join("/sys/block", os.path.basename(dev))))
        self.plugin.call("NodeUnstageVolume", req, timeout=120)  # again: nothing to do, OK

    def test_1_configfs_holds_the_volume(self):
        sub = os.path.join(NVMET, "subsystems", self.ctx["nqn"])
        with open(os.path.join(sub, "attr_allow_any_host")) as f:
            self.assertEqual(f.read().strip(), "0")
        self.assertEqual(os.listdir(os.path.join(sub, "allowed_hosts")), [self.host])
        with open(os.path.join(sub, "namespaces", "1", "device_path")) as f:
            backing = f.read().strip()
        self.assertEqual(os.path.getsize(backing), 64 << 20)

    def test_2_write_unstage_stage_read_back(self):
        dev = self.stage_volume()
        self.assertEqual(self.formatted(), 1, "a new volume is blank: formatted")
        self.plugin.call("NodeStageVolume", self.stage_req(), timeout=120)  # again: OK, same mount
        data = os.urandom(8 << 20)
        with open(os.path.join(self.stage, "ckpt-0001.bin"), "wb") as f:
            f.write(data)
            os.fsync(f.fileno())
        self.unstage_volume(dev)
        dev = self.stage_volume()
        self.assertEqual(self.formatted(), 1, "staged again: formatted once, not twice")
        with open(os.path.join(self.stage, "ckpt-0001.bin"), "rb") as f:
            self.assertEqual(hashlib.sha256(f.read()).hexdigest(), hashlib.sha256(data).hexdigest())
        self.__class__.digest = hashlib.sha256(data).hexdigest()
        # a second attach while staged reuses the controller; detach keeps it while mounted
        r = attach(self.ctx, self.host)
        self.assertEqual(r.stdout.strip(), dev, r.stderr)
        self.assertEqual(detach(dev).returncode, 0)
        self.assertTrue(os.path.exists(dev), "still mounted: still attached")
        self.unstage_volume(dev)

    def test_3_second_host_is_refused(self):
        with self.assertRaises(grpc.RpcError) as e:
            self.plugin.call("NodeStageVolume", self.stage_req("nqn.2014-08.io.gantry:node:intruder"),
                             timeout=120)
        self.assertEqual(e.exception.code(), grpc.StatusCode.UNAVAILABLE)
        self.assertIn("cannot connect", e.exception.details())
        # the refusal is the target kernel's: it names the host it turned away
        self.assertIn("is not allowed, hostnqn: nqn.2014-08.io.gantry:node:intruder", sh("dmesg").stdout)
        self.assertFalse([n for n in os.listdir("/sys/block") if n.startswith("nvme")])
        self.assertFalse(mounted(self.stage))

    def test_3b_auth_refused_on_a_kernel_without_it(self):
        """6.1's nvmet has no DH-HMAC-CHAP: a volume asking for it (the default) is refused at
        publish with an error naming the host and the missing kernel feature; auth: none works."""
        with open(self.target.log) as f:
            self.assertIn("event=target.dhchap_unsupported", f.read())
        self.assertEqual(self.metric("gantry_node_dhchap_supported"), 0)
        v = self.plugin.call("CreateVolume", create_req("pvc-vm-auth", size=16 << 20, auth="dhchap"),
                             timeout=60).volume
        try:
            with self.assertRaises(grpc.RpcError) as e:
                self.plugin.call("ControllerPublishVolume", publish_req(v.volume_id, NODE, ctx=v.volume_context),
                                 timeout=60)
            self.assertEqual(e.exception.code(), grpc.StatusCode.FAILED_PRECONDITION)
            self.assertIn("nqn.2014-08.io.gantry:node:" + NODE, e.exception.details())
            self.assertIn("CONFIG_NVME_TARGET_AUTH", e.exception.details())
            self.assertEqual(self.target.call("nvmf_get_subsystems", nqn=v.volume_context["nqn"])[0]["hosts"], [])
            # the node refuses too, by itself: 6.1's NVMe host has no nvme_auth
            keyfile = os.path.join(WORK, "dhchap", self.host + ".key")
            with open(keyfile, "w") as f:
                f.write("DHHC-1:00:ia6zGodOr4SEG0Zzaw398rpY0wqipUWj4jWjUh4HWUz6aQ2n:\n")
            try:
                with self.assertRaises(grpc.RpcError) as e:
                    self.plugin.call("NodeStageVolume", self.stage_req(vol=v), timeout=120)
                self.assertEqual(e.exception.code(), grpc.StatusCode.FAILED_PRECONDITION)
                self.assertIn("CONFIG_NVME_HOST_AUTH", e.exception.details())
                self.assertIn(self.host, e.exception.details())
                self.assertFalse(mounted(self.stage))
            finally:
                os.unlink(keyfile)
        finally:
            self.plugin.call("DeleteVolume", csi_pb2.DeleteVolumeRequest(volume_id=v.volume_id), timeout=60)

    def test_4_restart_reapplies_state(self):
        self.target.stop()
        wipe_nvmet()
        self.assertEqual(os.listdir(os.path.join(NVMET, "subsystems")), [])
        self.target.start()
        dev = self.stage_volume()
        with open(os.path.join(self.stage, "ckpt-0001.bin"), "rb") as f:
            self.assertEqual(hashlib.sha256(f.read()).hexdigest(), self.digest)
        self.unstage_volume(dev)

    def test_5_target_api_down_during_unstage(self):
        dev = self.stage_volume()
        self.target.stop()
        try:
            # the node's unstage needs only the NVMe/TCP path, which nvmet keeps serving
            self.unstage_volume(dev)
            req = csi_pb2.ControllerUnpublishVolumeRequest(volume_id=self.vol.volume_id, node_id=NODE)
            with self.assertRaises(grpc.RpcError) as e:
                self.plugin.call("ControllerUnpublishVolume", req, timeout=60)
            self.assertEqual(e.exception.code(), grpc.StatusCode.UNAVAILABLE)
            self.assertIn("target tgt-vm unreachable", e.exception.details())
            sub = os.path.join(NVMET, "subsystems", self.ctx["nqn"])
            self.assertEqual(os.listdir(os.path.join(sub, "allowed_hosts")), [self.host],
                             "nothing was changed behind the error")
        finally:
            self.target.start()
        self.plugin.call("ControllerUnpublishVolume", req, timeout=60)
        self.assertEqual(os.listdir(os.path.join(sub, "allowed_hosts")), [])
        r = attach(self.ctx, self.host)
        self.assertNotEqual(r.returncode, 0, "unpublished: the host is refused")

    def test_6_multipath_and_unstage_retry(self):
        vol, host = self.new_mp_volume("pvc-vm-mp")
        ctx = dict(vol.volume_context)
        self.assertEqual(ctx["targetID"], "tgt-mp")
        r = attach(ctx, host)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("NVMe paths missing", r.stderr)
        dev = r.stdout.strip()
        self.assertEqual(sorted(controllers(ctx["nqn"]).values()), ["4420", "4421"],
                         "one controller per listener")
        # one namespace head (nvmeXnY) over both paths (the hidden nvmeXcZnY): the attach
        # returns only once every connected controller's path device is there, so read once
        blocks = [n for n in os.listdir("/sys/block") if n.startswith("nvme")]
        self.assertEqual([n for n in blocks if "c" not in n[4:]], [os.path.basename(dev)])
        self.assertEqual(len([n for n in blocks if "c" in n[4:]]), 2)
        sh("mkfs.ext4", "-q", dev)
        sh("mount", dev, self.stage)
        # an unstage that unmounted but failed to disconnect leaves the controllers: the
        # retry finds them from the volume ID alone; while mounted they are kept
        self.assertEqual(subprocess.run([TOOL, "detach-volume", vol.volume_id]).returncode, 0)
        self.assertTrue(os.path.exists(dev))
        sh("umount", self.stage)
        r = subprocess.run([TOOL, "detach-volume", vol.volume_id], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertFalse([n for n in os.listdir("/sys/block") if n.startswith("nvme")])
        self.assertFalse([c for c in os.listdir("/sys/class/nvme")])

    def test_7_degraded_multipath_is_reported(self):
        vol, host = self.new_mp_volume("pvc-vm-mp-degraded")
        nqn = vol.volume_context["nqn"]
        req = self.stage_req(host, vol)
        stats = csi_pb2.NodeGetVolumeStatsRequest(volume_id=vol.volume_id, volume_path=self.stage)
        unstage = csi_pb2.NodeUnstageVolumeRequest(volume_id=vol.volume_id, staging_target_path=self.stage)
        degraded = self.metric("gantry_node_nvmf_degraded_stages_total")
        # the second listener is configured but its port no longer offers the subsystem
        # (nothing else is on it: nvmet stops listening there)
        link = os.path.join(nvmet_port("4421"), "subsystems", nqn)
        os.unlink(link)
        self.plugin.call("NodeStageVolume", req, timeout=120)
        self.assertTrue(mounted(self.stage), "one live path: the volume is usable")
        self.assertEqual(list(controllers(nqn).values()), ["4420"])
        cond = self.plugin.call("NodeGetVolumeStats", stats, timeout=60).volume_condition
        self.assertTrue(cond.abnormal, cond.message)
        self.assertTrue(cond.message.startswith("1 of 2 NVMe paths missing: 127.0.0.1:4421 (connect failed"),
                        cond.message)
        log = self.plugin.read_log()
        self.assertRegex(log, r"event=node.nvmf_connect_failed nqn=%s path=127.0.0.1:4421" % re.escape(nqn))
        self.assertIn("event=node.staged_degraded volume_id=%s" % vol.volume_id, log)
        self.assertEqual(self.metric("gantry_node_nvmf_degraded_stages_total"), degraded + 1)
        self.assertEqual(self.metric("gantry_node_nvmf_missing_paths"), 1)
        self.plugin.call("NodeUnstageVolume", unstage, timeout=120)
        self.assertEqual(self.metric("gantry_node_nvmf_missing_paths"), 0)
        # the port offers the subsystem again: a stage gets both paths, the condition is normal
        os.symlink(os.path.join(NVMET, "subsystems", nqn), link)
        self.plugin.call("NodeStageVolume", req, timeout=120)
        self.assertEqual(sorted(controllers(nqn).values()), ["4420", "4421"])
        cond = self.plugin.call("NodeGetVolumeStats", stats, timeout=60).volume_condition
        self.assertFalse(cond.abnormal, cond.message)
        self.assertEqual(self.metric("gantry_node_nvmf_degraded_stages_total"), degraded + 1)
        self.assertEqual(self.metric("gantry_node_nvmf_missing_paths"), 0)
        self.plugin.call("NodeUnstageVolume", unstage, timeout=120)
        self.assertFalse(controllers(nqn))

    def stage_mp(self, vol, host):
        """Stages @vol over both paths; returns the stats and unstage requests."""
        self.plugin.call("NodeStageVolume", self.stage_req(host, vol), timeout=120)
        self.assertEqual(sorted(ctrl_states(vol.volume_context["nqn"]).items()),
                         [("4420", "live"), ("4421", "live")])
        return (csi_pb2.NodeGetVolumeStatsRequest(volume_id=vol.volume_id, volume_path=self.stage),
                csi_pb2.NodeUnstageVolumeRequest(volume_id=vol.volume_id, staging_target_path=self.stage))

    def wait_condition(self, stats, pattern, timeout, seen):
        """Polls NodeGetVolumeStats until its condition is abnormal with a message matching
        @pattern (returned); every message seen goes to @seen."""
        def matches():
            cond = self.plugin.call("NodeGetVolumeStats", stats, timeout=60).volume_condition
            seen.append(cond.message)
            return cond.abnormal and re.search(pattern, cond.message) and cond.message
        return wait_for("condition %r (seen: %s)" % (pattern, seen[-3:]), matches, timeout)

    def test_7b_one_path_cut_mid_burst(self):
        """A checkpoint burst loses one of its two paths halfway: it completes on the
        other, the condition names the lost controller's state, and once the path is
        back every acknowledged byte reads back equal."""
        t0 = time.monotonic()
        vol, host = self.new_mp_volume("pvc-vm-mp-cut", size=96 << 20)
        nqn = vol.volume_context["nqn"]
        stats, unstage = self.stage_mp(vol, host)
        self.addCleanup(self.plugin.call, "NodeUnstageVolume", unstage, timeout=120)
        n = 24
        healthy = burst.Burst(os.path.join(self.stage, "healthy.bin"), n, "healthy").start().join(300)
        self.assertIsNone(healthy.error)
        b = burst.Burst(os.path.join(self.stage, "cut.bin"), n, "cut").start()
        self.assertTrue(b.wait_acked(n // 3, 120))
        links = burst.cut(nqn, ["4421"])
        self.addCleanup(burst.restore, nqn, links)
        b.join(300)
        self.assertIsNone(b.error, "one live path: the burst completes")
        self.assertEqual(b.acked, n)
        message = self.wait_condition(
            stats, r"^1 of 2 NVMe paths missing: 127\.0\.0\.1:4421 \(controller nvme[0-9]+ state "
                   r"(connecting|resetting)\) \(/dev/nvme[0-9]+n[0-9]+ is attached on the others\)$", 60, [])
        print("one path cut: %s" % message, file=sys.stderr)
        burst.restore(nqn, links)
        wait_for("both paths live again", lambda: ctrl_states(nqn) == {"4420": "live", "4421": "live"}, 60)
        wait_for("the condition normal again", lambda: not self.plugin.call(
            "NodeGetVolumeStats", stats, timeout=60).volume_condition.abnormal, 30)
        compared = lost = 0
        for name, seed in (("healthy.bin", "healthy"), ("cut.bin", "cut")):
            c, l = burst.verify(os.path.join(self.stage, name), seed, n)
            compared, lost = compared + c, lost + l
        self.assertEqual((compared, lost), (2 * n * burst.CHUNK, 0))
        print("burst %d MiB: healthy %.2f s, one path cut %.2f s (x%.2f); %d bytes compared, %d lost; "
              "case %.1f s" % (n, healthy.seconds, b.seconds, b.seconds / healthy.seconds, compared, lost,
                               time.monotonic() - t0), file=sys.stderr)

    def test_7c_both_paths_cut_past_ctrl_loss_tmo(self):
        """Both paths gone for longer than ctrl_loss_tmo (the StorageClass's, short
        here): the writer gets EIO, never a silent loss; the condition names each
        controller's state, then that the kernel gave them up; once the target is
        back a new stage reads every acknowledged byte back equal."""
        t0 = time.monotonic()
        vol, host = self.new_mp_volume("pvc-vm-mp-lost", size=64 << 20, ctrlLossTmoSeconds="5",
                                       reconnectDelaySeconds="1")
        nqn = vol.volume_context["nqn"]
        self.assertEqual(vol.volume_context["ctrlLossTmoSeconds"], "5")
        stats, unstage = self.stage_mp(vol, host)
        self.assertRegex(self.plugin.read_log(), r"event=node.nvmf_connected nqn=%s .*ctrl_loss_tmo=5 "
                                                 r"reconnect_delay=1" % re.escape(nqn))
        b = burst.Burst(os.path.join(self.stage, "lost.bin"), 48, "lost").start()
        self.assertTrue(b.wait_acked(4, 120))
        links = burst.cut(nqn, ["4420", "4421"])
        cut_at = time.monotonic()
        self.addCleanup(burst.restore, nqn, links)
        seen = []
        self.wait_condition(stats, (
            r"^2 of 2 NVMe paths missing: 127\.0\.0\.1:4420 \(controller nvme[0-9]+ state (connecting|resetting)\), "
            r"127\.0\.0\.1:4421 \(controller nvme[0-9]+ state (connecting|resetting)\) \(no live path: I/O fails\)$"),
            60, seen)
        b.join(120)
        self.assertTrue(burst.is_eio(b.error), "the writer is told: %r after %d chunks" % (b.error, b.acked))
        self.assertLess(b.acked, 48)
        self.wait_condition(stats, (
            r"^2 of 2 NVMe paths missing: 127\.0\.0\.1:4420 \(controller nvme[0-9]+ gone: deleted after "
            r"ctrl_loss_tmo, or disconnected\), 127\.0\.0\.1:4421 \(controller nvme[0-9]+ gone"), 120, seen)
        self.assertFalse(controllers(nqn))
        print("both paths cut: EIO after %.2f s (%d chunks acknowledged); conditions: %s"
              % (b.error_at - cut_at, b.acked, " | ".join(dict.fromkeys(seen))), file=sys.stderr)
        # the target is back: unstage what is left, stage again, read back what fsync acknowledged
        burst.restore(nqn, links)
        self.plugin.call("NodeUnstageVolume", unstage, timeout=120)
        self.assertFalse(mounted(self.stage))
        self.stage_mp(vol, host)
        self.addCleanup(self.plugin.call, "NodeUnstageVolume", unstage, timeout=120)
        compared, lost = burst.verify(os.path.join(self.stage, "lost.bin"), "lost", b.acked)
        self.assertEqual((compared, lost), (b.acked * burst.CHUNK, 0))
        print("both paths cut, then back: %d bytes compared, %d lost; case %.1f s"
              % (compared, lost, time.monotonic() - t0), file=sys.stderr)

    def test_8_delete_leaves_nothing(self):
        self.plugin.call("DeleteVolume", csi_pb2.DeleteVolumeRequest(volume_id=self.vol.volume_id), timeout=60)
        self.assertFalse(os.path.exists(os.path.join(NVMET, "subsystems", self.ctx["nqn"])))
        self.assertEqual(os.listdir(self.target.lvs), [])
        self.assertEqual(os.listdir(os.path.join(NVMET, "hosts")), [])
        self.assertEqual(self.target.call("nvmf_get_subsystems"), [])


if __name__ == "__main__":
    unittest.main()
