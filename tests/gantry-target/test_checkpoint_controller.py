"""The checkpoint tier of gantry-csi's Controller, driven over gRPC
(python3-grpcio) against real gantry-target processes on HTTP. The targets
write to a stand-in configfs directory (the host has no configfs); the VM
test (tests/vm/) does the same against the kernel's nvmet."""
import os
import re
import shutil
import subprocess
import tempfile
import sys
import unittest
import urllib.request

import grpc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ckpt_helpers import TargetsTestCase, create_req, publish_req, write_config  # noqa: E402
from csi_client import BUILD_DIR, Plugin  # noqa: E402
from targetproc import Target  # noqa: E402
from csi_client import csi_pb2  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fakeapi"))
from fake_api_proc import start_fake, csinode  # noqa: E402


class CheckpointControllerTest(TargetsTestCase):
    TARGETS = (("a", "tgt-a", "leaf-1", "127.0.0.1", {}), ("b", "tgt-b", "leaf-2", "127.0.0.2", {}),
               ("c", "tgt-tls", "leaf-3", "127.0.0.3", {"tls": True}))

    def delete(self, vid):
        self.call("DeleteVolume", csi_pb2.DeleteVolumeRequest(volume_id=vid))

    def test_create_is_idempotent_and_lands_on_the_leaf(self):
        v1 = self.call("CreateVolume", create_req("pvc-leaf2", leaf="leaf-2")).volume
        v2 = self.call("CreateVolume", create_req("pvc-leaf2", leaf="leaf-2")).volume
        self.addCleanup(self.delete, v1.volume_id)
        self.assertEqual(v1.volume_id, v2.volume_id)
        self.assertTrue(v1.volume_id.startswith("0002-0005-tgt-b-0000000000000000-"), v1.volume_id)
        ctx = dict(v1.volume_context)
        self.assertEqual(ctx["tier"], "checkpoint")
        self.assertEqual(ctx["targetID"], "tgt-b")
        self.assertEqual(ctx["addresses"], "tcp:127.0.0.2:4420")
        self.assertEqual(ctx["nqn"], "nqn.2026-11.io.gantry:vol:" + ctx["uuid"])
        self.assertEqual(ctx["nguid"], ctx["uuid"].replace("-", ""))
        self.assertEqual(v1.capacity_bytes, 16 << 20)
        self.assertNotIn("ctrlLossTmoSeconds", ctx, "unset: the node's default")
        subs = self.b.call("nvmf_get_subsystems", nqn=ctx["nqn"])
        self.assertFalse(subs[0]["allow_any_host"])
        self.assertEqual(subs[0]["hosts"], [])
        self.assertEqual(subs[0]["namespaces"][0]["nguid"], ctx["nguid"])
        self.assertEqual(len(os.listdir(self.b.lvs)), 1)
        self.assertEqual(self.a.call("nvmf_get_subsystems"), [])
        # the same name with a larger size is another volume: refused
        code, msg = self.code_of("CreateVolume", create_req("pvc-leaf2", size=64 << 20, leaf="leaf-2"))
        self.assertEqual(code, grpc.StatusCode.ALREADY_EXISTS, msg)
        # a StorageClass's NVMe-oF timeouts go to the node in the volume_context
        v3 = self.call("CreateVolume", create_req("pvc-short-tmo", leaf="leaf-2", ctrlLossTmoSeconds="30",
                                                  reconnectDelaySeconds="3")).volume
        self.addCleanup(self.delete, v3.volume_id)
        self.assertEqual((v3.volume_context["ctrlLossTmoSeconds"], v3.volume_context["reconnectDelaySeconds"]),
                         ("30", "3"))

    def test_caller_strings_are_quoted_in_the_log(self):
        """A name or ID from the CO reaches the log as one quoted value: a
        newline in it cannot start a forged line."""
        forged = "pvc-forged\nts=2026-01-01T00:00:00Z level=error event=forged"
        v = self.call("CreateVolume", create_req(forged, leaf="leaf-1", auth="none")).volume
        self.addCleanup(self.delete, v.volume_id)
        snap = self.call("CreateSnapshot", csi_pb2.CreateSnapshotRequest(
            name="snap-forged\nevent=forged", source_volume_id=v.volume_id)).snapshot
        self.call("DeleteSnapshot", csi_pb2.DeleteSnapshotRequest(snapshot_id=snap.snapshot_id))
        self.call("ControllerPublishVolume", publish_req(v.volume_id, "gpu-1", ctx=v.volume_context))
        self.call("ControllerUnpublishVolume",
                  csi_pb2.ControllerUnpublishVolumeRequest(volume_id=v.volume_id, node_id="gpu-1"))
        log = self.plugin.read_log()
        self.assertIn('name="pvc-forged\\nts=', log)
        self.assertIn('name="snap-forged\\nevent=forged"', log)
        for line in log.splitlines():
            self.assertFalse(line.startswith("ts=2026-01-01") or line.startswith("event=forged"), line)

    def test_publish_with_dhchap_keys(self):
        """auth: dhchap (the default) makes the host's key in dhchapKeyDir at the first publish and
        hands it to the target only; dhchap-bidirectional the controller's too; none none. A bad
        auth parameter is refused by name. No key in an answer, the publish context or a log."""
        keydir = os.path.join(self.dir, "dhchap")
        host = "nqn.2014-08.io.gantry:node:gpu-1"
        code, msg = self.code_of("CreateVolume", create_req("pvc-badauth", leaf="leaf-1", auth="chap"))
        self.assertEqual(code, grpc.StatusCode.INVALID_ARGUMENT, msg)
        self.assertIn("parameters.auth", msg)
        vols = {}
        for name, auth in (("pvc-auth-default", None), ("pvc-auth-bidi", "dhchap-bidirectional"),
                           ("pvc-auth-none", "none")):
            req = create_req(name, leaf="leaf-1", **({"auth": auth} if auth else {}))
            v = self.call("CreateVolume", req).volume
            self.addCleanup(self.delete, v.volume_id)
            vols[name] = v
        self.assertEqual(vols["pvc-auth-default"].volume_context["auth"], "dhchap")
        self.assertEqual(vols["pvc-auth-none"].volume_context["auth"], "none")

        v = vols["pvc-auth-default"]
        resp = self.call("ControllerPublishVolume", publish_req(v.volume_id, "gpu-1", ctx=v.volume_context))
        self.addCleanup(self.call, "ControllerUnpublishVolume",
                        csi_pb2.ControllerUnpublishVolumeRequest(volume_id=v.volume_id, node_id="gpu-1"))
        self.assertEqual(dict(resp.publish_context), {"hostNQN": host})
        with open(os.path.join(keydir, host + ".key")) as f:
            key = f.read().strip()
        self.assertEqual(os.stat(os.path.join(keydir, host + ".key")).st_mode & 0o777, 0o600)
        self.assertTrue(key.startswith("DHHC-1:00:"), "a DHHC-1 key")
        with open(os.path.join(self.a.cfs, "hosts", host, "dhchap_key")) as f:
            self.assertEqual(f.read(), key)
        self.assertEqual(self.a.call("nvmf_get_subsystems", nqn=v.volume_context["nqn"])[0]["hosts"],
                         [{"nqn": host, "dhchap": "unidirectional"}])

        v = vols["pvc-auth-bidi"]
        self.call("ControllerPublishVolume", publish_req(v.volume_id, "gpu-1", ctx=v.volume_context))
        self.addCleanup(self.call, "ControllerUnpublishVolume",
                        csi_pb2.ControllerUnpublishVolumeRequest(volume_id=v.volume_id, node_id="gpu-1"))
        with open(os.path.join(keydir, host + ".ctrl.key")) as f:
            ctrl = f.read().strip()
        with open(os.path.join(self.a.cfs, "hosts", host, "dhchap_key")) as f:
            self.assertEqual(f.read(), key, "the same host key for every volume of the host")
        with open(os.path.join(self.a.cfs, "hosts", host, "dhchap_ctrl_key")) as f:
            self.assertEqual(f.read(), ctrl)

        # a host with a key on this target cannot take an auth: none volume there (nvmet: one key per host)
        v = vols["pvc-auth-none"]
        code, msg = self.code_of("ControllerPublishVolume", publish_req(v.volume_id, "gpu-1", ctx=v.volume_context))
        self.assertEqual(code, grpc.StatusCode.FAILED_PRECONDITION, msg)
        self.assertIn(host, msg)
        # another node with auth: none is allowed without a key
        self.call("ControllerPublishVolume", publish_req(v.volume_id, "gpu-2", ctx=v.volume_context))
        self.call("ControllerUnpublishVolume",
                  csi_pb2.ControllerUnpublishVolumeRequest(volume_id=v.volume_id, node_id="gpu-2"))
        # gantryctl dhchap rotate: a new key, kept in a new file first, set on the target that
        # allows the host with a key (tgt-a), not on the others; never printed
        out = os.path.join(self.dir, "gpu-1.newkey")
        p = subprocess.run([os.path.join(BUILD_DIR, "bin", "gantryctl"), "dhchap", "rotate", "--node", "gpu-1",
                            "--key-out", out, "--config", os.path.join(self.dir, "gantry.json")],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(os.stat(out).st_mode & 0o777, 0o600)
        with open(out) as f:
            new = f.read().strip()
        self.assertNotEqual(new, key)
        with open(os.path.join(self.a.cfs, "hosts", host, "dhchap_key")) as f:
            self.assertEqual(f.read(), new)
        with open(os.path.join(self.a.cfs, "hosts", host, "dhchap_ctrl_key")) as f:
            self.assertEqual(f.read(), ctrl, "the controller key stays")
        self.assertIn("target tgt-a: rotated", p.stdout)
        self.assertIn("target tgt-b: host %s has no key there" % host, p.stdout)
        self.assertNotIn(new[10:-1], p.stdout + p.stderr)
        # an existing --key-out is never overwritten, and then nothing changes
        p = subprocess.run([os.path.join(BUILD_DIR, "bin", "gantryctl"), "dhchap", "rotate", "--node", "gpu-1",
                            "--key-out", out, "--config", os.path.join(self.dir, "gantry.json")],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 1)
        self.assertIn("nothing was changed", p.stderr)
        with open(os.path.join(self.a.cfs, "hosts", host, "dhchap_key")) as f:
            self.assertEqual(f.read(), new)
        for log in (self.plugin.log_path, self.a.log):
            with open(log) as f:
                text = f.read()
            for k in (key, ctrl, new):
                self.assertNotIn(k[10:-1], text)

    def test_https_target_with_ca_file(self):
        self.assertTrue(self.c.url.startswith("https://"))
        v = self.call("CreateVolume", create_req("pvc-tls", leaf="leaf-3")).volume
        self.assertEqual(v.volume_context["targetID"], "tgt-tls")
        self.delete(v.volume_id)
        self.assertEqual(self.c.call("nvmf_get_subsystems"), [])

    def test_publish_unpublish_and_a_second_node(self):
        v = self.call("CreateVolume", create_req("pvc-pub", leaf="leaf-1")).volume
        self.addCleanup(self.delete, v.volume_id)
        nqn = v.volume_context["nqn"]
        resp = self.call("ControllerPublishVolume", publish_req(v.volume_id, "gpu-1"))
        self.assertEqual(resp.publish_context["hostNQN"], "nqn.2014-08.io.gantry:node:gpu-1")
        self.call("ControllerPublishVolume", publish_req(v.volume_id, "gpu-1"))
        self.assertEqual(self.a.call("nvmf_get_subsystems", nqn=nqn)[0]["hosts"],
                         [{"nqn": "nqn.2014-08.io.gantry:node:gpu-1", "dhchap": "none"}])
        self.assertTrue(os.path.islink(os.path.join(self.a.cfs, "subsystems", nqn, "allowed_hosts",
                                                    "nqn.2014-08.io.gantry:node:gpu-1")))
        code, msg = self.code_of("ControllerPublishVolume", publish_req(v.volume_id, "gpu-2"))
        self.assertEqual(code, grpc.StatusCode.FAILED_PRECONDITION, msg)
        got = self.call("ControllerGetVolume", csi_pb2.ControllerGetVolumeRequest(volume_id=v.volume_id))
        self.assertEqual(list(got.status.published_node_ids), ["gpu-1"])
        self.assertFalse(got.status.volume_condition.abnormal)
        self.assertEqual(got.volume.capacity_bytes, 16 << 20)
        val = csi_pb2.ValidateVolumeCapabilitiesRequest(volume_id=v.volume_id)
        val.volume_capabilities.append(publish_req(v.volume_id, "x").volume_capability)
        self.assertEqual(len(self.call("ValidateVolumeCapabilities", val).confirmed.volume_capabilities), 1)
        val.volume_capabilities[0].access_mode.mode = \
            csi_pb2.VolumeCapability.AccessMode.MULTI_NODE_READER_ONLY
        resp = self.call("ValidateVolumeCapabilities", val)
        self.assertFalse(resp.HasField("confirmed"))
        self.assertIn("SINGLE_NODE", resp.message)
        code, msg = self.code_of("DeleteVolume", csi_pb2.DeleteVolumeRequest(volume_id=v.volume_id))
        self.assertEqual(code, grpc.StatusCode.FAILED_PRECONDITION, msg)
        for _ in range(2):
            self.call("ControllerUnpublishVolume",
                      csi_pb2.ControllerUnpublishVolumeRequest(volume_id=v.volume_id, node_id="gpu-1"))
        self.assertEqual(self.a.call("nvmf_get_subsystems", nqn=nqn)[0]["hosts"], [])

    def test_delete_leaves_nothing_and_is_idempotent(self):
        v = self.call("CreateVolume", create_req("pvc-del", leaf="leaf-1")).volume
        nqn = v.volume_context["nqn"]
        self.assertTrue(os.path.isdir(os.path.join(self.a.cfs, "subsystems", nqn)))
        for _ in range(2):
            self.delete(v.volume_id)
        self.assertFalse(os.path.exists(os.path.join(self.a.cfs, "subsystems", nqn)))
        self.assertEqual(os.listdir(self.a.lvs), [])
        self.assertEqual([b for b in self.a.call("bdev_get_bdevs")], [])

    def test_half_made_volume_is_completed_and_deleted(self):
        # a crash after the subsystem, before the namespace
        req = create_req("pvc-crash", leaf="leaf-1")
        v = self.call("CreateVolume", req).volume
        nqn, uuid = v.volume_context["nqn"], v.volume_context["uuid"]
        self.a.call("nvmf_delete_subsystem", nqn=nqn)
        self.a.call("nvmf_create_subsystem", nqn=nqn)  # only the subsystem is left...
        # ...and the lvol, orphaned: Delete finds it by alias
        self.delete(v.volume_id)
        self.assertEqual(os.listdir(self.a.lvs), [])
        # Create completes a subsystem that has no namespace yet
        self.a.call("nvmf_create_subsystem", nqn=nqn)
        v2 = self.call("CreateVolume", req).volume
        self.assertEqual(v2.volume_context["uuid"], uuid)
        self.assertEqual(len(self.a.call("nvmf_get_subsystems", nqn=nqn)[0]["namespaces"]), 1)
        self.delete(v2.volume_id)

    def test_expand_and_capacity(self):
        v = self.call("CreateVolume", create_req("pvc-grow", leaf="leaf-1", thinProvision="true",
                                                 bandwidthPolicy="burst",
                                                 bandwidthBurstFactor="1.5")).volume
        self.addCleanup(self.delete, v.volume_id)
        req = csi_pb2.ControllerExpandVolumeRequest(volume_id=v.volume_id)
        req.capacity_range.required_bytes = 40 << 20
        resp = self.call("ControllerExpandVolume", req)
        self.assertEqual(resp.capacity_bytes, 40 << 20)
        self.assertTrue(resp.node_expansion_required)
        path = os.path.join(self.a.lvs, os.listdir(self.a.lvs)[0])
        self.assertEqual(os.path.getsize(path), 40 << 20)
        cap = csi_pb2.GetCapacityRequest()
        cap.parameters["tier"] = "checkpoint"
        cap.accessible_topology.segments["network.topology.nvidia.com/leaf"] = "leaf-1"
        resp = self.call("GetCapacity", cap)
        st = os.statvfs(self.a.lvs)
        self.assertGreater(resp.available_capacity, 0)
        self.assertLessEqual(resp.available_capacity, st.f_blocks * st.f_frsize)
        self.assertEqual(resp.maximum_volume_size.value, resp.available_capacity)

    def test_delete_on_a_target_gone_from_the_config_succeeds(self):
        """A volume whose target left the config cannot exist any more from
        the driver's view: DeleteVolume succeeds (a warning says why), twice."""
        vid = "0002-0008-tgt-gone-0000000000000000-11111111-2222-4333-8444-555555555555"
        for _ in range(2):
            self.delete(vid)
        self.assertIn("event=controller.checkpoint_delete_unknown_target", self.plugin.read_log())
        self.assertIn(vid, self.plugin.read_log())
        code, msg = self.code_of("DeleteVolume", csi_pb2.DeleteVolumeRequest(
            volume_id="0002-0008-tgt-gone-0000000000000000-zz"))
        self.assertEqual(code, grpc.StatusCode.INVALID_ARGUMENT, msg)

    def test_errors_name_the_field(self):
        req = create_req("pvc-bad")
        req.parameters["colour"] = "blue"
        code, msg = self.code_of("CreateVolume", req)
        self.assertEqual(code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("parameters.colour", msg)
        # the node's bandwidth parameters are checked here, before anything is made
        req = create_req("pvc-bad", bandwidthPolicy="throttle")
        code, msg = self.code_of("CreateVolume", req)
        self.assertEqual(code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("parameters.bandwidthPolicy: must be cap, burst or none", msg)
        req = create_req("pvc-bad", bandwidthPolicy="burst", bandwidthWriteIOPS="lots")
        code, msg = self.code_of("CreateVolume", req)
        self.assertEqual(code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("parameters.bandwidthWriteIOPS", msg)
        # the node's NVMe-oF timeouts too: no "retry forever", no delay past the loss; nothing made
        lvols = [len(os.listdir(t.lvs)) for t in (self.a, self.b, self.c)]
        for params, field in (({"ctrlLossTmoSeconds": "-1"}, "parameters.ctrlLossTmoSeconds"),
                              ({"ctrlLossTmoSeconds": "2", "reconnectDelaySeconds": "5"},
                               "parameters.reconnectDelaySeconds: 5 is longer than ctrlLossTmoSeconds 2")):
            code, msg = self.code_of("CreateVolume", create_req("pvc-bad", **params))
            self.assertEqual(code, grpc.StatusCode.INVALID_ARGUMENT)
            self.assertIn(field, msg)
        self.assertEqual([len(os.listdir(t.lvs)) for t in (self.a, self.b, self.c)], lvols)
        req = create_req("pvc-bad")
        req.volume_capabilities[0].access_mode.mode = \
            csi_pb2.VolumeCapability.AccessMode.MULTI_NODE_MULTI_WRITER
        code, msg = self.code_of("CreateVolume", req)
        self.assertEqual(code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("volume_capabilities[0].access_mode", msg)
        code, msg = self.code_of("ControllerPublishVolume",
                                 publish_req("0002-0005-tgt-a-0000000000000000-zz", "gpu-1"))
        self.assertEqual(code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("volume_id", msg)
        code, msg = self.code_of("ControllerPublishVolume", publish_req(
            "0002-0005-tgt-a-0000000000000000-11111111-2222-4333-8444-555555555555", "gpu/1"))
        self.assertEqual(code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("node_id", msg)
        code, msg = self.code_of("ControllerPublishVolume", publish_req(
            "0002-0005-tgt-a-0000000000000000-11111111-2222-4333-8444-555555555555", "gpu-1"))
        self.assertEqual(code, grpc.StatusCode.NOT_FOUND, msg)

    def test_target_down_is_unavailable_and_retry_works(self):
        v = self.call("CreateVolume", create_req("pvc-down", leaf="leaf-1")).volume
        self.addCleanup(self.delete, v.volume_id)
        self.call("ControllerPublishVolume", publish_req(v.volume_id, "gpu-1"))
        self.a.stop()
        try:
            code, msg = self.code_of("ControllerUnpublishVolume", csi_pb2.ControllerUnpublishVolumeRequest(
                volume_id=v.volume_id, node_id="gpu-1"))
            self.assertEqual(code, grpc.StatusCode.UNAVAILABLE)
            self.assertIn("target tgt-a unreachable", msg)
            # creating on leaf-1 cannot tell whether a twin exists there: refused, not duplicated
            code, msg = self.code_of("CreateVolume", create_req("pvc-down2", leaf="leaf-1"))
            self.assertEqual(code, grpc.StatusCode.UNAVAILABLE, msg)
        finally:
            self.a.start()
        self.call("ControllerUnpublishVolume", csi_pb2.ControllerUnpublishVolumeRequest(
            volume_id=v.volume_id, node_id="gpu-1"))
        self.assertEqual(self.a.call("nvmf_get_subsystems", nqn=v.volume_context["nqn"])[0]["hosts"], [])
        self.assertEqual(self.b.call("nvmf_get_subsystems"), [])


@unittest.skipUnless(os.environ.get("GANTRY_FAKEAPI"), "GANTRY_FAKEAPI not set")

class CheckpointOperatorConfigTest(TargetsTestCase):
    """What the operator's driver config lacks is FAILED_PRECONDITION naming
    the field, never a code that blames the caller. Here checkpoint targets
    and no dhchapKeyDir: the
    publish of an auth: dhchap volume (a checkpoint class's default) is the
    operator's configuration to mend, FAILED_PRECONDITION naming the field,
    not UNAUTHENTICATED; and the controller says so at start (log, gauge)."""
    TARGETS = (("a", "tgt-a", "leaf-1", "127.0.0.1", {}),)
    DHCHAP_KEY_DIR = False
    PLUGIN_EXTRA = ("--metrics-addr", "127.0.0.1:0")

    def test_publish_without_key_dir_is_a_failed_precondition_seen_at_start(self):
        v = self.call("CreateVolume", create_req("pvc-nokeydir", leaf="leaf-1")).volume
        self.addCleanup(self.call, "DeleteVolume", csi_pb2.DeleteVolumeRequest(volume_id=v.volume_id))
        self.assertEqual(v.volume_context["auth"], "dhchap")
        code, msg = self.code_of("ControllerPublishVolume", publish_req(v.volume_id, "gpu-1", ctx=v.volume_context))
        self.assertEqual(code, grpc.StatusCode.FAILED_PRECONDITION, msg)
        self.assertIn("dhchapKeyDir", msg)
        self.assertEqual(self.a.call("nvmf_get_subsystems", nqn=v.volume_context["nqn"])[0]["hosts"], [])
        # said at start, before any publish: one log line and a gauge
        log = self.plugin.read_log()
        self.assertEqual(log.count("event=controller.dhchap_key_dir_missing"), 1)
        port = re.findall(r"event=csi.metrics_listening .*port=(\d+)", log)[-1]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=20) as r:
            self.assertIn("gantry_config_dhchap_key_dir_missing 1", r.read().decode())
        # auth: none needs no key folder
        v = self.call("CreateVolume", create_req("pvc-nokeydir-none", leaf="leaf-1", auth="none")).volume
        self.addCleanup(self.call, "DeleteVolume", csi_pb2.DeleteVolumeRequest(volume_id=v.volume_id))
        self.call("ControllerPublishVolume", publish_req(v.volume_id, "gpu-1", ctx=v.volume_context))
        self.call("ControllerUnpublishVolume",
                  csi_pb2.ControllerUnpublishVolumeRequest(volume_id=v.volume_id, node_id="gpu-1"))

    def test_a_bad_or_missing_token_file_is_a_failed_precondition(self):
        """The controller's token for a target comes from the driver config's
        tokenFile: one the target refuses, or one that cannot be read, is the
        operator's to mend: not PERMISSION_DENIED (the caller's rights), not
        NOT_FOUND (which would tell the CO the volume is gone)."""
        tok = os.path.join(self.a.dir, "token.client")
        self.addCleanup(lambda: open(tok, "w").write(self.a.token + "\n"))
        req = csi_pb2.DeleteVolumeRequest(volume_id="0002-0005-tgt-a-0000000000000000-"
                                                    "0b4e3c8e-2a43-4b8f-9b6e-8a1d6f0e7c11")
        for case in ("refused", "unreadable"):
            with self.subTest(case=case):
                if case == "refused":
                    with open(tok, "w") as f:
                        f.write("not-the-token\n")
                else:
                    os.remove(tok)
                code, msg = self.code_of("DeleteVolume", req)
                self.assertEqual(code, grpc.StatusCode.FAILED_PRECONDITION, msg)
                self.assertIn("tokenFile", msg)


class NodeRegistryTest(unittest.TestCase):
    """ControllerPublishVolume answers NOT_FOUND for a node ID no node plugin
    of ours reported: the controller reads the CSINode objects kubelet writes
    from NodeGetInfo, here from the FAKE API server through a kubeconfig."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="gantry-node-registry-%d-" % os.getpid())
        self.addCleanup(shutil.rmtree, self.dir, True)
        # host-7's node plugin was started with --node-id gpu-7: not its name
        self.api = start_fake(self.dir, {"csinodes": [csinode("gpu-1", "gpu-1"),
                                                   csinode("gpu-2", "gpu-2", driver="other.csi.io"),
                                                   csinode("host-7", "gpu-7")]})
        self.addCleanup(self.api.stop)
        self.t = Target(workdir=os.path.join(self.dir, "t")).start()
        self.addCleanup(self.t.cleanup)
        tok = os.path.join(self.t.dir, "token.client")
        with open(tok, "w") as f:
            f.write(self.t.token + "\n")
        cfg = write_config(os.path.join(self.dir, "gantry.json"),
                           [("tgt-a", self.t.url, tok, [("127.0.0.1", "4420")], "leaf-1")])
        self.plugin = Plugin(mode="controller", node_id=None, config=cfg,
                             extra=["--kubeconfig", self.api.write_kubeconfig(os.path.join(self.dir, "kc"))])
        self.addCleanup(self.plugin.cleanup)
        self.addCleanup(self.stop_plugin)
        self.plugin.start()

    def stop_plugin(self):
        rc = self.plugin.stop()
        self.assertEqual(rc, 0, self.plugin.read_log()[-4000:])

    def code_of(self, req):
        with self.assertRaises(grpc.RpcError) as e:
            self.plugin.call("ControllerPublishVolume", req, timeout=30)
        return e.exception.code(), e.exception.details()

    def csinode_calls(self):
        """The verbs of the CSINode requests the FAKE API server saw, then forgets them."""
        verbs = [r["verb"] for r in self.api.get("/fake/requests") if r["resource"] == "csinodes"]
        req = urllib.request.Request(self.api.base + "/fake/requests", method="DELETE")
        urllib.request.urlopen(req, timeout=10).close()
        return verbs

    def test_node_named_after_its_id_is_one_get(self):
        """The usual case (node ID = node name = CSINode name) costs one GET,
        never a list of every CSINode; an ID under another name is still found
        by the list."""
        v = self.plugin.call("CreateVolume", create_req("pvc-fast", leaf="leaf-1"), timeout=30).volume
        self.addCleanup(self.plugin.call, "DeleteVolume",
                        csi_pb2.DeleteVolumeRequest(volume_id=v.volume_id), 30)
        self.csinode_calls()
        for node in ("gpu-1", "gpu-7"):
            self.plugin.call("ControllerPublishVolume", publish_req(v.volume_id, node), timeout=30)
            self.plugin.call("ControllerUnpublishVolume", csi_pb2.ControllerUnpublishVolumeRequest(
                volume_id=v.volume_id, node_id=node), timeout=30)
            calls = self.csinode_calls()
            if node == "gpu-1":
                self.assertEqual(calls, ["get"])
            else:  # csinodes/gpu-7 is 404: the list finds it on host-7
                self.assertEqual(calls[0], "get")
                self.assertIn("list", calls)

    def test_unknown_node_is_not_found(self):
        v = self.plugin.call("CreateVolume", create_req("pvc-reg", leaf="leaf-1"), timeout=30).volume
        self.addCleanup(self.plugin.call, "DeleteVolume",
                        csi_pb2.DeleteVolumeRequest(volume_id=v.volume_id), 30)
        self.plugin.call("ControllerPublishVolume", publish_req(v.volume_id, "gpu-1"), timeout=30)
        self.plugin.call("ControllerUnpublishVolume", csi_pb2.ControllerUnpublishVolumeRequest(
            volume_id=v.volume_id, node_id="gpu-1"), timeout=30)
        for node in ("gpu-404", "gpu-2"):  # gpu-2 runs another driver only
            code, msg = self.code_of(publish_req(v.volume_id, node))
            self.assertEqual(code, grpc.StatusCode.NOT_FOUND, msg)
            self.assertIn("node_id", msg)
            self.assertIn(node, msg)
        # a volume that does not exist is NOT_FOUND naming the volume
        code, msg = self.code_of(publish_req(
            "0002-0005-tgt-a-0000000000000000-11111111-2222-4333-8444-555555555555", "gpu-1"))
        self.assertEqual(code, grpc.StatusCode.NOT_FOUND, msg)
        self.assertIn("volume_id", msg)
        # the API gone: not "no such node" but UNAVAILABLE
        self.api.stop()
        code, msg = self.code_of(publish_req(v.volume_id, "gpu-1"))
        self.assertEqual(code, grpc.StatusCode.UNAVAILABLE, msg)
        self.assertIn("CSINode", msg)


if __name__ == "__main__":
    unittest.main()
