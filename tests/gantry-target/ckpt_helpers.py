"""Requests, config and the suite base class for checkpoint-tier tests
(shared by the host tests and the VM test)."""
import json
import os
import shutil
import sys
import tempfile
import unittest

import grpc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "conformance"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from csi_client import Plugin, csi_pb2  # noqa: E402
from targetproc import Target  # noqa: E402

LEAF = "network.topology.nvidia.com/leaf"


def write_config(path, targets):
    """targets: list of (id, url, token_file, [(traddr, trsvcid), ...], leaf[, ca_file]).
    The DH-HMAC-CHAP key directory is "dhchap" beside the config file."""
    keydir = os.path.join(os.path.dirname(os.path.abspath(path)), "dhchap")
    os.makedirs(keydir, mode=0o700, exist_ok=True)
    cfg = {"targets": [], "dhchapKeyDir": keydir}
    for tid, url, tok, addrs, leaf, *ca in targets:
        t = {"id": tid, "url": url,
             "addresses": [{"transport": "tcp", "traddr": a, "trsvcid": s} for a, s in addrs]}
        if ca and ca[0]:
            t["caFile"] = ca[0]
        if tok:
            t["tokenFile"] = tok
        if leaf:
            t["leaf"] = leaf
        cfg["targets"].append(t)
    with open(path, "w") as f:
        json.dump(cfg, f)
    return path


def mount_cap(fs="ext4", mode=csi_pb2.VolumeCapability.AccessMode.SINGLE_NODE_WRITER):
    cap = csi_pb2.VolumeCapability()
    cap.mount.fs_type = fs
    cap.access_mode.mode = mode
    return cap


def create_req(name, size=16 << 20, leaf=None, **params):
    req = csi_pb2.CreateVolumeRequest(name=name)
    req.capacity_range.required_bytes = size
    req.volume_capabilities.append(mount_cap())
    req.parameters["tier"] = "checkpoint"
    for k, v in params.items():
        req.parameters[k] = v
    if leaf:
        top = req.accessibility_requirements.preferred.add()
        top.segments[LEAF] = leaf
    return req


def publish_req(volume_id, node_id, ctx=None):
    """@ctx: the volume_context (the external-attacher passes the PV's)."""
    req = csi_pb2.ControllerPublishVolumeRequest(volume_id=volume_id, node_id=node_id)
    req.volume_capability.CopyFrom(mount_cap())
    for k, v in (ctx or {}).items():
        req.volume_context[k] = v
    return req


class TargetsTestCase(unittest.TestCase):
    """A suite against real gantry-target processes and one gantry-csi
    controller: TARGETS lists (attribute, target id, leaf, traddr, Target
    keyword arguments); each target is started as cls.<attribute>, the driver
    config names them (plus CLUSTERS, driver-config clusters, when set), and
    cls.plugin is gantry-csi --mode controller on it. Everything is stopped
    and removed at the end, also after a failed setUpClass; a non-zero exit of
    gantry-csi (a leak under ASan) fails the suite."""
    TARGETS = ()
    CLUSTERS = None
    DHCHAP_KEY_DIR = True  # False: the driver config has no dhchapKeyDir
    PLUGIN_EXTRA = ()      # more gantry-csi flags

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix=f"gantry-{cls.__name__}-{os.getpid()}-")
        cls.started, cls.plugin = [], None
        try:
            entries = []
            for attr, tid, leaf, traddr, kw in cls.TARGETS:
                t = Target(workdir=os.path.join(cls.dir, attr), **kw).start()
                cls.started.append(t)
                setattr(cls, attr, t)
                tok = os.path.join(t.dir, "token.client")
                with open(tok, "w") as f:
                    f.write(t.token + "\n")
                entries.append((tid, t.url, tok, [(traddr, "4420")], leaf, getattr(t, "cert", None)))
            cfg = write_config(os.path.join(cls.dir, "gantry.json"), entries)
            if cls.CLUSTERS or not cls.DHCHAP_KEY_DIR:
                with open(cfg) as f:
                    doc = json.load(f)
                if cls.CLUSTERS:
                    doc["clusters"] = cls.CLUSTERS
                if not cls.DHCHAP_KEY_DIR:
                    del doc["dhchapKeyDir"]
                with open(cfg, "w") as f:
                    json.dump(doc, f)
            os.makedirs(os.path.join(cls.dir, "csi"))
            cls.plugin = Plugin(mode="controller", node_id=None, config=cfg, extra=cls.PLUGIN_EXTRA,
                                workdir=os.path.join(cls.dir, "csi")).start()
        except BaseException:
            cls.stop_all()  # a failed setUpClass gets no tearDownClass
            raise

    @classmethod
    def tearDownClass(cls):
        rc, log = cls.stop_all()
        if rc != 0:  # under ASan a leak makes the exit non-zero
            raise RuntimeError("gantry-csi exited %s:\n%s" % (rc, log[-4000:]))

    @classmethod
    def stop_all(cls):
        rc, log = 0, ""
        try:
            if cls.plugin:
                rc = cls.plugin.stop()
                log = cls.plugin.read_log()
            failed = []
            for t in cls.started:  # every one, even after one failed (a leak under ASan)
                try:
                    t.cleanup()
                except RuntimeError as e:
                    failed.append(e)
            if failed:
                raise failed[0]
        finally:
            shutil.rmtree(cls.dir, ignore_errors=True)
        return rc, log

    def call(self, method, req, timeout=60):
        return self.plugin.call(method, req, timeout=timeout)

    def code_of(self, method, req):
        with self.assertRaises(grpc.RpcError) as e:
            self.call(method, req)
        return e.exception.code(), e.exception.details()
