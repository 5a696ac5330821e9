"""DH-HMAC-CHAP on a real kernel (run inside the VM by tests/vm/run.sh on
the bookworm-backports kernel, the first Debian kernel for bookworm built
with CONFIG_NVME_HOST_AUTH and CONFIG_NVME_TARGET_AUTH; CTest: vm_dhchap).

In the guest: gantry-target on the kernel's nvmet allows one host NQN with
its key (nvmf_subsystem_add_host with dhchap_key); the node library
(tests/vm/nvmf_attach_tool, what NodeStageVolume runs) connects over NVMe/TCP
on loopback. Checked against the kernel: a host that sends the allowed NQN
without the key, or with a wrong one, is refused by nvmet; the right key
connects; the controller key (bidirectional) is checked by the host; a key
rotation (target first, then the host's dhchap_secret) re-authenticates the
live connection without a detach, and the next connection needs the new key.
Keys go to the tool in files, never on a command line, and appear in no log.
"""
import base64
import os
import re
import shutil
import struct
import subprocess
import sys
import time
import unittest
import urllib.request
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "gantry-target"))
sys.path.insert(0, os.path.join(HERE, "..", "conformance"))
from ckpt_helpers import create_req, publish_req, write_config  # noqa: E402
from csi_client import BUILD_DIR, Plugin, csi_pb2  # noqa: E402
from targetproc import Target  # noqa: E402

NVMET = "/sys/kernel/config/nvmet"
WORK = "/tmp/gantry-dhchap-vm"
TOOL = os.path.join(BUILD_DIR, "tests", "nvmf_attach_tool")
HOST = "nqn.2014-08.io.gantry:node:vm-node"
UUIDS = ("5f1d0c3e-7a2b-4c8d-9e0f-112233445566", "6a2e1d4f-8b3c-4d9e-8f10-223344556677")
LISTEN = {"trtype": "TCP", "adrfam": "IPv4", "traddr": "127.0.0.1", "trsvcid": "4420"}


def key(seed, n=32):
    """A DHHC-1 key, its CRC-32 by zlib (independent of Gantry's)."""
    secret = os.urandom(n) if seed is None else bytes((seed * 13 + i * 29) & 255 for i in range(n))
    return "DHHC-1:00:%s:" % base64.b64encode(secret + struct.pack("<I", zlib.crc32(secret))).decode()


def ctx_of(uuid):
    return {"uuid": uuid, "nqn": "nqn.2026-11.io.gantry:vol:" + uuid, "nguid": uuid.replace("-", ""),
            "addresses": "tcp:127.0.0.1:4420"}


def dmesg():
    return subprocess.run(["dmesg"], capture_output=True, text=True).stdout


def wait_for(cond, what, timeout=20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.1)
    raise AssertionError("timed out waiting for " + what)


class DhchapVmTest(unittest.TestCase):
    """One host's keys through their life, in order (the tests share the target)."""

    @classmethod
    def setUpClass(cls):
        subprocess.run(["modprobe", "-a", "nvmet", "nvmet-tcp", "nvme-tcp", "nvme-fabrics"], check=True)
        shutil.rmtree(WORK, ignore_errors=True)
        os.makedirs(WORK)
        cls.keys = {"k1": key(1), "k2": key(2), "wrong": key(3), "c1": key(4), "cwrong": key(5)}
        for name, k in cls.keys.items():
            with open(os.path.join(WORK, name), "w") as f:
                f.write(k + "\n")
        cls.target = Target(workdir=os.path.join(WORK, "tgt"), configfs=NVMET, port=8009).start()
        cls.outputs = []
        for i, uuid in enumerate(UUIDS):
            c = ctx_of(uuid)
            bdev = cls.target.call("bdev_lvol_create", lvol_name="vol%d" % i, size_in_mib=16, lvs_name="gantry")
            cls.target.call("nvmf_create_subsystem", nqn=c["nqn"])
            cls.target.call("nvmf_subsystem_add_ns", nqn=c["nqn"],
                            namespace={"bdev_name": bdev, "nguid": c["nguid"], "uuid": uuid})
            cls.target.call("nvmf_subsystem_add_listener", nqn=c["nqn"], listen_address=LISTEN)

    @classmethod
    def tearDownClass(cls):
        for uuid in UUIDS:
            subprocess.run(["nvme", "disconnect", "-n", ctx_of(uuid)["nqn"]], capture_output=True)
        try:
            for uuid in UUIDS:
                cls.target.call("nvmf_delete_subsystem", nqn=ctx_of(uuid)["nqn"])
        finally:
            cls.target.cleanup()
            shutil.rmtree(WORK, ignore_errors=True)

    def attach(self, uuid, k=None, ck=None):
        env = dict(os.environ)
        env.pop("GANTRY_DHCHAP_KEY_FILE", None)
        env.pop("GANTRY_DHCHAP_CTRL_KEY_FILE", None)
        if k:
            env["GANTRY_DHCHAP_KEY_FILE"] = os.path.join(WORK, k)
        if ck:
            env["GANTRY_DHCHAP_CTRL_KEY_FILE"] = os.path.join(WORK, ck)
        kv = ["%s=%s" % x for x in ctx_of(uuid).items()]
        p = subprocess.run([TOOL, "attach", HOST, *kv], capture_output=True, text=True, timeout=120, env=env)
        self.__class__.outputs.append(p.stdout + p.stderr)
        return p

    def detach(self, dev):
        p = subprocess.run([TOOL, "detach", dev], capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)

    def ctrls(self, nqn):
        out = []
        for c in os.listdir("/sys/class/nvme"):
            with open("/sys/class/nvme/%s/subsysnqn" % c) as f:
                if f.read().strip() == nqn:
                    out.append(c)
        return out

    def assert_no_key_leaked(self):
        with open(self.target.log) as f:
            logs = [f.read()] + self.outputs
        for k in self.keys.values():
            secret = k[10:-1]
            for text in logs:
                self.assertNotIn(secret, text, "a key was logged")

    def test_1_target_kernel_can_authenticate(self):
        with open(self.target.log) as f:
            self.assertIn("dhchap=1", f.read())
        self.target.call("nvmf_subsystem_add_host", nqn=ctx_of(UUIDS[0])["nqn"], host=HOST,
                         dhchap_key=self.keys["k1"])
        with open(os.path.join(NVMET, "hosts", HOST, "dhchap_key")) as f:
            self.assertEqual(f.read().strip(), self.keys["k1"])

    def test_2_spoofed_host_refused(self):
        """A host sending the allowed NQN without the key, or with another key, is refused by nvmet."""
        nqn = ctx_of(UUIDS[0])["nqn"]
        before = len(dmesg())
        p = self.attach(UUIDS[0])
        self.assertNotEqual(p.returncode, 0, p.stdout)
        self.assertIn("DH-HMAC-CHAP key this host was not given", p.stderr)
        # the kernel says why: ENOKEY (-126) from the target's challenge
        self.assertIn("ret=-126", dmesg()[before:])
        self.assertIn(HOST, p.stderr)
        self.assertIn(nqn, p.stderr)
        self.assertEqual(self.ctrls(nqn), [])
        before = len(dmesg())
        p = self.attach(UUIDS[0], "wrong")
        self.assertNotEqual(p.returncode, 0, p.stdout)
        self.assertIn("DH-HMAC-CHAP key (or the controller's) rejected", p.stderr)
        self.assertIn("host response mismatch", dmesg()[before:], "nvmet rejected the key")
        self.assertIn(HOST, p.stderr)
        self.assertEqual(self.ctrls(nqn), [])

    def test_3_key_connects_and_rotation_keeps_it(self):
        nqn = ctx_of(UUIDS[0])["nqn"]
        p = self.attach(UUIDS[0], "k1")
        self.assertEqual(p.returncode, 0, p.stderr)
        dev = p.stdout.strip()
        (ctrl,) = self.ctrls(nqn)
        with open("/sys/class/nvme/%s/dhchap_secret" % ctrl) as f:
            self.assertEqual(f.read().strip(), self.keys["k1"])
        data = os.urandom(4096)
        with open(dev, "r+b", buffering=0) as f:
            f.write(data)
            os.fsync(f.fileno())
        before = len(dmesg())
        # rotation: the target first, then the host's live controller re-authenticates with the new key
        self.target.call("nvmf_subsystem_add_host", nqn=nqn, host=HOST, dhchap_key=self.keys["k2"])
        r = subprocess.run([TOOL, "rotate", nqn, os.path.join(WORK, "k2")], capture_output=True, text=True,
                           timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), "1")
        wait_for(lambda: "re-authenticating" in dmesg()[before:] and
                 "authenticated with hash" in dmesg()[before:].split("re-authenticating", 1)[1],
                 "the re-authentication with the new key")
        self.assertNotIn("authentication failed", dmesg()[before:])
        with open("/sys/class/nvme/%s/state" % ctrl) as f:
            self.assertEqual(f.read().strip(), "live")
        self.assertEqual(self.ctrls(nqn), [ctrl], "the controller stayed: no detach")
        with open(dev, "rb", buffering=0) as f:
            self.assertEqual(f.read(4096), data)
        # the next connection needs the new key
        self.detach(dev)
        p = self.attach(UUIDS[0], "k1")
        self.assertNotEqual(p.returncode, 0, "the old key still works")
        self.assertIn("rejected", p.stderr)
        p = self.attach(UUIDS[0], "k2")
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(p.stdout.strip(), "rb", buffering=0) as f:
            self.assertEqual(f.read(4096), data)
        self.detach(p.stdout.strip())

    def test_4_bidirectional(self):
        """The controller's key too: the host refuses a controller that cannot prove it."""
        nqn = ctx_of(UUIDS[1])["nqn"]
        self.target.call("nvmf_subsystem_add_host", nqn=nqn, host=HOST, dhchap_key=self.keys["k2"],
                         dhchap_ctrlr_key=self.keys["c1"])
        self.assertEqual(self.target.call("nvmf_get_subsystems", nqn=nqn)[0]["hosts"][0]["dhchap"],
                         "bidirectional")
        before = len(dmesg())
        p = self.attach(UUIDS[1], "k2", "cwrong")
        self.assertNotEqual(p.returncode, 0, p.stdout)
        self.assertIn("ret=-129", dmesg()[before:], "EKEYREJECTED: the host refused the controller")
        self.assertEqual(self.ctrls(nqn), [])
        p = self.attach(UUIDS[1], "k2", "c1")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.detach(p.stdout.strip())

    def test_5_csi_stage_with_bidirectional_keys(self):
        """The product path: gantry-csi (controller and node) makes the host's keys at publish, the
        target gets them, NodeStage reads them and attaches, formats and mounts over an authenticated
        connection; nothing of the keys in the publish context or the plugin's log."""
        work = os.path.join(WORK, "csi")
        os.makedirs(os.path.join(work, "plugin"))
        stage = os.path.join(work, "stage")
        os.makedirs(stage)
        tok = os.path.join(work, "token")
        with open(tok, "w") as f:
            f.write(self.target.token)
        cfg = write_config(os.path.join(work, "gantry.json"),
                           [("tgt-vm", self.target.url, tok, [("127.0.0.1", "4420")], "leaf-vm")])
        plugin = Plugin(mode="all", node_id="vm-csi", config=cfg, workdir=os.path.join(work, "plugin"),
                        extra=["--metrics-addr", "127.0.0.1:0"], ready_timeout=60).start()
        self.addCleanup(plugin.stop)
        port = re.findall(r"event=csi.metrics_listening .*port=(\d+)", plugin.read_log())[-1]
        with urllib.request.urlopen("http://127.0.0.1:%s/metrics" % port, timeout=30) as r:
            self.assertRegex(r.read().decode(), r"(?m)^gantry_node_dhchap_supported 1(\.0*)?$")
        host = "nqn.2014-08.io.gantry:node:vm-csi"
        v = plugin.call("CreateVolume", create_req("pvc-vm-auth", size=32 << 20, auth="dhchap-bidirectional"),
                        timeout=60).volume
        self.assertEqual(v.volume_context["auth"], "dhchap-bidirectional")
        pub = plugin.call("ControllerPublishVolume", publish_req(v.volume_id, "vm-csi", ctx=v.volume_context),
                          timeout=60)
        self.assertEqual(dict(pub.publish_context), {"hostNQN": host})
        keys = {}
        for suffix in (".key", ".ctrl.key"):
            with open(os.path.join(work, "dhchap", host + suffix)) as f:
                keys[suffix] = f.read().strip()
        self.keys["csi-host"], self.keys["csi-ctrl"] = keys[".key"], keys[".ctrl.key"]
        with open(os.path.join(NVMET, "hosts", host, "dhchap_key")) as f:
            self.assertEqual(f.read().strip(), keys[".key"])
        with open(os.path.join(NVMET, "hosts", host, "dhchap_ctrl_key")) as f:
            self.assertEqual(f.read().strip(), keys[".ctrl.key"])
        req = csi_pb2.NodeStageVolumeRequest(volume_id=v.volume_id, staging_target_path=stage)
        req.publish_context["hostNQN"] = host
        req.volume_capability.CopyFrom(publish_req(v.volume_id, "vm-csi").volume_capability)
        for k, val in v.volume_context.items():
            req.volume_context[k] = val
        before = len(dmesg())
        plugin.call("NodeStageVolume", req, timeout=120)
        self.assertIn("authenticated with hash", dmesg()[before:])
        with open(os.path.join(stage, "probe"), "w") as f:
            f.write("authenticated")
        ctrls = self.ctrls(v.volume_context["nqn"])
        self.assertEqual(len(ctrls), 1)

        # Rotation as an operator does it: the target first, then the key file (the Secret);
        # the node takes the new key up at its next NodeGetVolumeStats, without a detach.
        new = key(None)
        self.keys["csi-new"] = new
        self.target.call("nvmf_subsystem_add_host", nqn=v.volume_context["nqn"], host=host, dhchap_key=new)
        with open(os.path.join(work, "dhchap", host + ".key"), "w") as f:
            f.write(new + "\n")
        before = len(dmesg())
        plugin.call("NodeGetVolumeStats", csi_pb2.NodeGetVolumeStatsRequest(volume_id=v.volume_id,
                                                                           volume_path=stage), timeout=60)
        wait_for(lambda: "re-authenticating" in dmesg()[before:] and
                 "authenticated with hash" in dmesg()[before:].split("re-authenticating", 1)[1],
                 "the node's re-authentication with the rotated key")
        self.assertNotIn("authentication failed", dmesg()[before:])
        self.assertEqual(self.ctrls(v.volume_context["nqn"]), ctrls, "no detach")
        with open("/sys/class/nvme/%s/dhchap_secret" % ctrls[0]) as f:
            self.assertEqual(f.read().strip(), new)
        with open(os.path.join(stage, "probe")) as f:
            self.assertEqual(f.read(), "authenticated")
        self.assertIn("event=node.nvmf_key_rotated", plugin.read_log())
        # a second stats call has nothing to rotate
        plugin.call("NodeGetVolumeStats", csi_pb2.NodeGetVolumeStatsRequest(volume_id=v.volume_id,
                                                                           volume_path=stage), timeout=60)
        self.assertEqual(plugin.read_log().count("event=node.nvmf_key_rotated"), 1)
        plugin.call("NodeUnstageVolume", csi_pb2.NodeUnstageVolumeRequest(volume_id=v.volume_id,
                                                                        staging_target_path=stage), timeout=120)
        # the next connection authenticates with the new key
        before = len(dmesg())
        plugin.call("NodeStageVolume", req, timeout=120)
        self.assertIn("authenticated with hash", dmesg()[before:])
        with open(os.path.join(stage, "probe")) as f:
            self.assertEqual(f.read(), "authenticated")
        plugin.call("NodeUnstageVolume", csi_pb2.NodeUnstageVolumeRequest(volume_id=v.volume_id,
                                                                        staging_target_path=stage), timeout=120)
        plugin.call("ControllerUnpublishVolume",
                    csi_pb2.ControllerUnpublishVolumeRequest(volume_id=v.volume_id, node_id="vm-csi"), timeout=60)
        self.assertFalse(os.path.exists(os.path.join(NVMET, "hosts", host)), "keys dropped with the host")
        plugin.call("DeleteVolume", csi_pb2.DeleteVolumeRequest(volume_id=v.volume_id), timeout=60)
        self.outputs.append(plugin.read_log())

    def test_6_no_key_in_any_log(self):
        self.assert_no_key_leaked()


if __name__ == "__main__":
    unittest.main()
