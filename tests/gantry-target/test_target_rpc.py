"""gantry-target's JSON-RPC methods over HTTP against a stand-in configfs
directory: parameters, idempotency, errors, persistence and re-apply,
bearer token and TLS. The real kernel target is tested by the vm label."""
import http.client
import json
import os
import resource
import shutil
import signal
import stat
import subprocess
import unittest
import urllib.error
import urllib.parse

from targetproc import BIN, RpcError, Target

NQN = "nqn.2026-11.io.gantry:test-vol"
HOST = "nqn.2014-08.io.gantry:node:gpu-1"
LISTEN = {"trtype": "TCP", "adrfam": "IPv4", "traddr": "127.0.0.1", "trsvcid": "4420"}


class TargetRpcTest(unittest.TestCase):
    def setUp(self):
        self.t = Target()
        self.addCleanup(self.t.cleanup)  # before start: a failed start cleans up too
        self.t.start()

    def subsys_dir(self):
        return os.path.join(self.t.cfs, "subsystems", NQN)

    def make_volume(self, thin=False):
        bdev = self.t.call("bdev_lvol_create", lvol_name="vol1", size_in_mib=8, lvs_name="gantry",
                           thin_provision=thin)
        self.t.call("nvmf_create_subsystem", nqn=NQN, allow_any_host=False)
        nsid = self.t.call("nvmf_subsystem_add_ns", nqn=NQN,
                           namespace={"bdev_name": bdev, "nguid": "00112233-4455-6677-8899-aabbccddeeff",
                                      "uuid": "11111111-2222-4333-8444-555555555555"})
        self.t.call("nvmf_subsystem_add_listener", nqn=NQN, listen_address=LISTEN)
        self.t.call("nvmf_subsystem_add_host", nqn=NQN, host=HOST)
        return bdev, nsid

    def test_lifecycle_writes_configfs_and_is_idempotent(self):
        bdev, nsid = self.make_volume()
        self.assertEqual(nsid, 1)
        ns = os.path.join(self.subsys_dir(), "namespaces", "1")
        with open(os.path.join(ns, "device_path")) as f:
            path = f.read()
        self.assertEqual(os.path.getsize(path), 8 << 20)
        self.assertGreaterEqual(os.stat(path).st_blocks * 512, 8 << 20, "preallocated")
        with open(os.path.join(ns, "device_nguid")) as f:
            self.assertEqual(f.read(), "00112233445566778899aabbccddeeff")
        with open(os.path.join(self.subsys_dir(), "attr_allow_any_host")) as f:
            self.assertEqual(f.read(), "0")
        self.assertTrue(os.path.islink(os.path.join(self.subsys_dir(), "allowed_hosts", HOST)))
        self.assertTrue(os.path.islink(os.path.join(self.t.cfs, "ports", "1", "subsystems", NQN)))
        # the same calls again answer the same
        self.assertEqual(self.make_volume(), (bdev, nsid))
        # a filtered listing skips the others (under ASan: without leaking them)
        self.t.call("nvmf_create_subsystem", nqn=NQN + "-other")
        self.assertEqual([x["nqn"] for x in self.t.call("nvmf_get_subsystems", nqn=NQN)], [NQN])
        self.t.call("nvmf_delete_subsystem", nqn=NQN + "-other")
        subs = self.t.call("nvmf_get_subsystems")
        self.assertEqual(len(subs), 1)
        self.assertEqual(subs[0]["hosts"], [{"nqn": HOST, "dhchap": "none"}])
        self.assertEqual(len(subs[0]["namespaces"]), 1)
        self.assertEqual(subs[0]["listen_addresses"][0]["traddr"], "127.0.0.1")
        # the alias names the same bdev
        self.assertEqual(self.t.call("bdev_get_bdevs", name="gantry/vol1")[0]["name"], bdev)
        self.assertEqual(self.t.call("bdev_get_bdevs", name=bdev)[0]["num_blocks"], (8 << 20) // 512)

        self.t.call("nvmf_subsystem_remove_host", nqn=NQN, host=HOST)
        self.assertFalse(os.path.lexists(os.path.join(self.subsys_dir(), "allowed_hosts", HOST)))
        self.t.call("nvmf_subsystem_remove_host", nqn=NQN, host=HOST)
        with self.assertRaises(RpcError) as e:
            self.t.call("bdev_lvol_delete", name=bdev)
        self.assertEqual(e.exception.code, -16)  # EBUSY: a namespace uses it
        self.t.call("nvmf_delete_subsystem", nqn=NQN)
        self.t.call("nvmf_delete_subsystem", nqn=NQN)
        self.assertFalse(os.path.exists(self.subsys_dir()))
        self.assertFalse(os.path.lexists(os.path.join(self.t.cfs, "ports", "1", "subsystems", NQN)))
        self.t.call("bdev_lvol_delete", name=bdev)
        self.t.call("bdev_lvol_delete", name=bdev)
        self.assertFalse(os.path.exists(path))
        self.assertEqual(self.t.call("nvmf_get_subsystems"), [])

    def test_thin_volume_is_sparse_and_grows(self):
        bdev = self.t.call("bdev_lvol_create", lvol_name="thin", size_in_mib=64, lvs_name="gantry",
                           thin_provision=True)
        path = os.path.join(self.t.lvs, "thin")
        self.assertLess(os.stat(path).st_blocks * 512, 1 << 20)
        self.t.call("bdev_lvol_resize", name=bdev, size_in_mib=128)
        self.assertEqual(os.path.getsize(path), 128 << 20)
        with self.assertRaises(RpcError) as e:
            self.t.call("bdev_lvol_resize", name=bdev, size_in_mib=32)
        self.assertEqual(e.exception.code, -32602)
        self.assertIn("size_in_mib", e.exception.message)

    def test_errors_name_the_parameter(self):
        cases = [
            ("nvmf_create_subsystem", {}, -32602, "nqn: required"),
            ("nvmf_create_subsystem", {"nqn": "nqn.x/../../etc"}, -32602, "nqn:"),
            ("bdev_lvol_create", {"lvol_name": "a", "lvs_name": "gantry"}, -32602, "size_in_mib"),
            ("bdev_lvol_create", {"lvol_name": "../a", "size_in_mib": 1, "lvs_name": "gantry"}, -32602,
             "lvol_name"),
            ("bdev_lvol_create", {"lvol_name": "a", "size_in_mib": 1, "lvs_name": "nope"}, -19, "lvs_name"),
            ("nvmf_subsystem_add_ns", {"nqn": NQN, "namespace": {"bdev_name": "x"}}, -19, "nqn"),
            ("nvmf_subsystem_add_listener", {"nqn": NQN, "listen_address": {"trtype": "tcp",
             "traddr": "not-an-ip", "trsvcid": "4420"}}, -32602, "listen_address.traddr"),
            # The longest trtype/adrfam accepted (8 bytes) once overran the decoder's copy.
            ("nvmf_subsystem_add_listener", {"nqn": NQN, "listen_address": {"trtype": "TCPXTCPX",
             "traddr": "127.0.0.1", "trsvcid": "4420"}}, -32602, "listen_address.trtype"),
            ("nvmf_subsystem_add_listener", {"nqn": NQN, "listen_address": {"trtype": "tcp",
             "adrfam": "IPV4IPV4", "traddr": "127.0.0.1", "trsvcid": "4420"}}, -32602,
             "listen_address.adrfam"),
            ("nvmf_subsystem_add_host", {"nqn": NQN}, -32602, "host: required"),
        ]
        for method, params, code, text in cases:
            with self.subTest(method=method, params=params):
                with self.assertRaises(RpcError) as e:
                    self.t.call(method, **params)
                self.assertEqual(e.exception.code, code)
                self.assertIn(text, e.exception.message)
        self.t.call("nvmf_create_subsystem", nqn=NQN)
        with self.assertRaises(RpcError) as e:
            self.t.call("nvmf_subsystem_add_ns", nqn=NQN, namespace={"bdev_name": "missing"})
        self.assertEqual(e.exception.code, -19)
        self.assertIn("namespace.bdev_name", e.exception.message)
        _, body = self.t.raw('{"jsonrpc":"2.0","id":1,"method":"no_such_method"}')
        self.assertEqual(json.loads(body)["error"]["code"], -32601)
        _, body = self.t.raw("{not json")
        self.assertEqual(json.loads(body)["error"]["code"], -32700)
        self.assertEqual(os.listdir(self.t.lvs), [])

    def test_state_is_reapplied_after_restart(self):
        bdev, _ = self.make_volume()
        self.t.stop()
        # what a reboot does to configfs
        shutil.rmtree(self.t.cfs)
        os.makedirs(self.t.cfs)
        self.t.start()
        self.assertTrue(os.path.islink(os.path.join(self.subsys_dir(), "allowed_hosts", HOST)))
        with open(os.path.join(self.subsys_dir(), "namespaces", "1", "enable")) as f:
            self.assertEqual(f.read(), "1")
        self.assertTrue(os.path.islink(os.path.join(self.t.cfs, "ports", "1", "subsystems", NQN)))
        self.assertEqual(self.t.call("nvmf_get_subsystems")[0]["namespaces"][0]["bdev_name"], bdev)
        with open(os.path.join(self.t.log)) as f:
            self.assertNotIn(self.t.token, f.read(), "the token is never logged")

    def test_crash_while_making_an_lvol_leaves_no_file_after_restart(self):
        """gantry-target dies after creating an lvol's file and before its
        state says so: here for real, by SIGXFSZ, as the file is sized past
        RLIMIT_FSIZE. The restart removes the half-made file (the state knew
        of it first) instead of leaking it."""
        self.t.stop()
        self.t.preexec = lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))
        self.t.start()
        with self.assertRaises(Exception):
            self.t.call("bdev_lvol_create", lvol_name="vol1", size_in_mib=8, lvs_name="gantry")
        self.assertEqual(self.t.proc.wait(20), -signal.SIGXFSZ)
        self.t.logf.close()
        self.t.proc = None
        self.assertEqual(os.listdir(self.t.lvs), ["vol1"], "the crash came after the file was made")
        self.t.preexec = None
        self.t.start()
        self.assertEqual(os.listdir(self.t.lvs), [], "the half-made lvol file leaked")
        self.assertEqual(self.t.call("bdev_get_bdevs"), [])
        # and the name is free for the CO's retry
        bdev = self.t.call("bdev_lvol_create", lvol_name="vol1", size_in_mib=8, lvs_name="gantry")
        self.assertEqual([b["name"] for b in self.t.call("bdev_get_bdevs")], [bdev])

    def test_bearer_token_required(self):
        body = '{"jsonrpc":"2.0","id":1,"method":"nvmf_get_subsystems"}'
        for tok in ("", "wrong", self.t.token + "x"):
            with self.subTest(token=tok):
                with self.assertRaises(urllib.error.HTTPError) as e:
                    self.t.raw(body, token=tok or "")
                self.assertEqual(e.exception.code, 401)
        self.assertEqual(self.t.raw(body)[0], 200)

    def test_body_limit(self):
        # 1 MiB is the largest request. One byte more is refused: on the
        # Content-Length header before any byte is read, and while reading
        # when the upload is chunked; the server answers on as usual after.
        body = '{"jsonrpc":"2.0","id":1,"method":"nvmf_get_subsystems"}'
        self.assertEqual(self.t.raw(body.ljust(1 << 20))[0], 200)
        url = urllib.parse.urlsplit(self.t.url)
        auth = {"Authorization": "Bearer " + self.t.token}
        conn = http.client.HTTPConnection(url.hostname, url.port, timeout=20)
        conn.putrequest("POST", "/")
        conn.putheader("Authorization", auth["Authorization"])
        conn.putheader("Content-Length", str((1 << 20) + 1))
        conn.endheaders()  # and no body: the answer must not wait for it
        self.assertEqual(conn.getresponse().status, 413)
        conn.close()
        conn = http.client.HTTPConnection(url.hostname, url.port, timeout=20)
        chunks = (body.encode().ljust(1 << 16) for _ in range(17))
        conn.request("POST", "/", body=chunks, headers=auth, encode_chunked=True)
        self.assertEqual(conn.getresponse().status, 413)
        conn.close()
        self.assertEqual(self.t.raw(body)[0], 200)


def dhchap_key(seed, n=32):
    """A valid DHHC-1 key (transform 00) with a made-up secret; the CRC-32 by zlib, independently of Gantry."""
    import base64
    import struct
    import zlib
    secret = bytes((seed * 31 + i * 7) & 255 for i in range(n))
    return "DHHC-1:00:%s:" % base64.b64encode(secret + struct.pack("<I", zlib.crc32(secret))).decode()


class TargetDhchapTest(unittest.TestCase):
    """Hosts allowed with a DH-HMAC-CHAP key: what lands in (stand-in)
    configfs, what answers and logs show (never the key), rotation, and the
    refusals. The kernel's own refusal of a host without the key is tested
    in the VM (tests/vm/test_dhchap.py)."""

    def setUp(self):
        self.t = Target()
        self.addCleanup(self.t.cleanup)
        self.t.start()
        self.t.call("nvmf_create_subsystem", nqn=NQN)
        self.t.call("nvmf_create_subsystem", nqn=NQN + "-2")
        self.host_dir = os.path.join(self.t.cfs, "hosts", HOST)

    def read(self, name):
        with open(os.path.join(self.host_dir, name)) as f:
            return f.read()

    def test_keys_rotation_and_secrecy(self):
        k1, c1, k2 = dhchap_key(1), dhchap_key(2), dhchap_key(3)
        self.t.call("nvmf_subsystem_add_host", nqn=NQN, host=HOST, dhchap_key=k1)
        self.assertEqual(self.read("dhchap_key"), k1)
        self.assertFalse(os.path.exists(os.path.join(self.host_dir, "dhchap_ctrl_key")))
        self.assertTrue(os.path.islink(os.path.join(self.t.cfs, "subsystems", NQN, "allowed_hosts", HOST)))
        self.assertEqual(self.t.call("nvmf_get_subsystems", nqn=NQN)[0]["hosts"],
                         [{"nqn": HOST, "dhchap": "unidirectional"}])
        # idempotent
        self.t.call("nvmf_subsystem_add_host", nqn=NQN, host=HOST, dhchap_key=k1)
        # bidirectional on the second subsystem: nvmet's host group (and key) is shared
        self.t.call("nvmf_subsystem_add_host", nqn=NQN + "-2", host=HOST, dhchap_key=k1, dhchap_ctrlr_key=c1)
        self.assertEqual(self.read("dhchap_ctrl_key"), c1)
        self.assertEqual(self.t.call("nvmf_get_subsystems", nqn=NQN)[0]["hosts"][0]["dhchap"], "bidirectional")
        # rotation: the new key replaces the old one for every subsystem; the controller key stays
        self.t.call("nvmf_subsystem_add_host", nqn=NQN, host=HOST, dhchap_key=k2)
        self.assertEqual(self.read("dhchap_key"), k2)
        self.assertEqual(self.read("dhchap_ctrl_key"), c1)
        # a host with a key cannot also be allowed without one
        with self.assertRaises(RpcError) as e:
            self.t.call("nvmf_subsystem_add_host", nqn=NQN + "-2", host=HOST)
        self.assertEqual(e.exception.code, -39)  # ENOTEMPTY: a precondition, not "exists"
        self.assertIn(HOST, e.exception.message)
        # a restart (configfs emptied, as by a reboot) puts the current key back
        self.t.stop()
        shutil.rmtree(self.t.cfs)
        os.makedirs(self.t.cfs)
        self.t.start()
        self.assertEqual(self.read("dhchap_key"), k2)
        self.assertEqual(stat.S_IMODE(os.stat(os.path.join(self.t.dir, "state.json")).st_mode), 0o600)
        # removed from every subsystem: the host group and its keys go
        self.t.call("nvmf_subsystem_remove_host", nqn=NQN, host=HOST)
        self.assertTrue(os.path.exists(self.host_dir), "still allowed by the second subsystem")
        self.t.call("nvmf_subsystem_remove_host", nqn=NQN + "-2", host=HOST)
        self.assertFalse(os.path.exists(self.host_dir))
        with open(os.path.join(self.t.dir, "state.json")) as f:
            state = f.read()
        for k in (k1, k2, c1):
            self.assertNotIn(k, state)
        # now it may be allowed without a key
        self.t.call("nvmf_subsystem_add_host", nqn=NQN, host=HOST)
        with open(self.t.log) as f:
            log = f.read()
        for k in (k1, k2, c1):
            self.assertNotIn(k[10:-1], log, "a key was logged")
        self.assertIn("key=rotated", log)

    def test_bad_keys_refused_by_field_without_quoting_them(self):
        good = dhchap_key(4)
        damaged = good[:12] + ("A" if good[12] != "A" else "B") + good[13:]
        cases = [
            ({"dhchap_key": "DHHC-1:00:short:"}, "dhchap_key:"),
            ({"dhchap_key": damaged}, "dhchap_key: dhchap key: CRC-32"),
            ({"dhchap_key": good, "dhchap_ctrlr_key": "nope"}, "dhchap_ctrlr_key:"),
            ({"dhchap_ctrlr_key": good}, "dhchap_ctrlr_key: needs dhchap_key"),
            ({"dhchap_key": good, "dhchap_ctrlr_key": good}, "must differ"),
            ({"dhchap_key": 7}, "dhchap_key"),
        ]
        for params, text in cases:
            with self.subTest(params=params):
                with self.assertRaises(RpcError) as e:
                    self.t.call("nvmf_subsystem_add_host", nqn=NQN, host=HOST, **params)
                self.assertEqual(e.exception.code, -32602)
                self.assertIn(text, e.exception.message)
                self.assertNotIn(good[10:-1], e.exception.message)
                self.assertNotIn(damaged[10:-1], e.exception.message)
        self.assertFalse(os.path.exists(self.host_dir), "nothing is done on a refused call")


class TargetStartTest(unittest.TestCase):
    def test_refuses_to_start_without_authentication(self):
        d = Target(token=None)
        self.addCleanup(d.cleanup)
        p = subprocess.run([BIN, "--listen", "127.0.0.1:0", "--configfs", d.cfs, "--state",
                            os.path.join(d.dir, "state.json"), "--lvstore", "gantry=" + d.lvs],
                           capture_output=True, text=True, timeout=20)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--token-file", p.stderr)
        self.assertIn("--insecure-no-auth", p.stderr)
        self.assertFalse(os.path.exists(os.path.join(d.dir, "state.json")))
        # the explicit flag starts it, with a warning, and nothing asks for a token
        d.start()
        self.assertEqual(d.call("nvmf_get_subsystems"), [])
        with open(d.log) as f:
            self.assertIn("event=target.insecure_no_auth", f.read())


class TargetFileNamesTest(unittest.TestCase):
    """Whatever a caller names its lvols, snapshots and clones (any valid
    name), gantry-target's own temporary files never land on an lvol's file.
    The lvstore folder here also holds the state file, as an operator may
    configure it."""

    def setUp(self):
        self.t = Target()
        self.addCleanup(self.t.cleanup)
        self.t.lvs = self.t.dir  # state.json lives in the lvstore's folder
        self.t.start()

    def write_lvol(self, name, data):
        self.t.call("bdev_lvol_create", lvol_name=name, size_in_mib=1, lvs_name="gantry", thin_provision=True)
        with open(os.path.join(self.t.lvs, name), "r+b") as f:
            f.write(data)

    def read_lvol(self, name, n):
        with open(os.path.join(self.t.lvs, name), "rb") as f:
            return f.read(n)

    def test_snapshot_and_clone_keep_an_lvol_named_like_their_temporary(self):
        self.write_lvol("vol-a", b"volume a")
        self.write_lvol("vol-a.snap.tmp", b"bystander one")
        self.write_lvol("vol-a.clone.tmp", b"bystander two")
        self.t.call("bdev_lvol_snapshot", lvol_name="gantry/vol-a", snapshot_name="vol-a.snap")
        self.t.call("bdev_lvol_clone", snapshot_name="gantry/vol-a.snap", clone_name="vol-a.clone")
        self.assertEqual(self.read_lvol("vol-a.snap.tmp", 13), b"bystander one")
        self.assertEqual(self.read_lvol("vol-a.clone.tmp", 13), b"bystander two")
        self.assertEqual(self.read_lvol("vol-a.clone", 8), b"volume a")
        for name in ("vol-a.snap.tmp", "vol-a.clone.tmp"):
            self.assertEqual(len(self.t.call("bdev_get_bdevs", name="gantry/" + name)), 1)

    def test_state_saves_keep_an_lvol_named_like_the_state_temporary(self):
        self.write_lvol("state.json.tmp", b"bystander")
        self.t.call("bdev_lvol_create", lvol_name="later", size_in_mib=1, lvs_name="gantry", thin_provision=True)
        self.assertEqual(self.read_lvol("state.json.tmp", 9), b"bystander")
        with open(os.path.join(self.t.dir, "state.json")) as f:
            self.assertIn("gantry/later", f.read())


class TargetForeignFileTest(unittest.TestCase):
    """A file already at a new lvol's path that the state does not know (a
    copy that died between its rename and its state save, an older agent, a
    hand) is never taken as the new lvol's: it could hold another volume's
    bytes. gantry-target refuses the name and leaves the file as it was."""

    def setUp(self):
        self.t = Target()
        self.addCleanup(self.t.cleanup)
        self.t.start()

    def test_a_snapshot_forgotten_by_the_state_is_not_adopted_by_a_new_lvol(self):
        self.t.call("bdev_lvol_create", lvol_name="vol-a", size_in_mib=1, lvs_name="gantry", thin_provision=True)
        with open(os.path.join(self.t.lvs, "vol-a"), "r+b") as f:
            f.write(b"volume a's bytes")
        snap = self.t.call("bdev_lvol_snapshot", lvol_name="gantry/vol-a", snapshot_name="vol-b")
        # the crash between the copy's rename and its state save, replayed: the state
        # as it was before the snapshot, the snapshot's file in place
        self.t.stop()
        state = os.path.join(self.t.dir, "state.json")
        with open(state) as f:
            doc = json.load(f)
        del doc["bdevs"][snap]
        with open(state, "w") as f:
            json.dump(doc, f)
        self.t.start()
        for method, params in (("bdev_lvol_create", {"lvol_name": "vol-b", "size_in_mib": 1, "lvs_name": "gantry"}),
                               ("bdev_lvol_clone", {"snapshot_name": "gantry/vol-a", "clone_name": "vol-b"})):
            with self.subTest(method=method):
                with self.assertRaises(RpcError) as e:
                    self.t.call(method, **params)
                self.assertEqual(e.exception.code, -17)  # EEXIST
                self.assertIn("vol-b exists and this target did not make it", e.exception.message)
                with open(os.path.join(self.t.lvs, "vol-b"), "rb") as f:
                    self.assertEqual(f.read(16), b"volume a's bytes", "the file is left as it was")
                self.assertEqual([b["aliases"] for b in self.t.call("bdev_get_bdevs")], [["gantry/vol-a"]])

    def test_an_lvol_named_like_the_state_file_is_refused(self):
        self.t.stop()
        self.t.lvs = self.t.dir  # the state file in the lvstore's folder
        self.t.start()
        with self.assertRaises(RpcError) as e:
            self.t.call("bdev_lvol_create", lvol_name="state.json", size_in_mib=1, lvs_name="gantry")
        self.assertEqual(e.exception.code, -17)
        with open(os.path.join(self.t.dir, "state.json")) as f:
            self.assertIn("bdevs", json.load(f))

    def test_a_copy_killed_mid_way_leaves_nothing_after_restart(self):
        """gantry-target dies while copying (SIGXFSZ: the copy grows past
        RLIMIT_FSIZE, the state file stays below it): the restart removes
        the half copy, and the name is free again."""
        self.t.call("bdev_lvol_create", lvol_name="big", size_in_mib=4, lvs_name="gantry")
        self.t.stop()
        self.t.preexec = lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))
        self.t.start()
        with self.assertRaises(Exception):
            self.t.call("bdev_lvol_snapshot", lvol_name="gantry/big", snapshot_name="snap")
        self.assertEqual(self.t.proc.wait(20), -signal.SIGXFSZ)
        self.t.logf.close()
        self.t.proc = None
        self.t.preexec = None
        self.t.start()
        self.assertEqual(sorted(os.listdir(self.t.lvs)), ["big"], "the half copy leaked")
        self.t.call("bdev_lvol_snapshot", lvol_name="gantry/big", snapshot_name="snap")
        self.assertEqual(sorted(os.listdir(self.t.lvs)), ["big", "snap"])


class TargetTlsTest(unittest.TestCase):
    def test_tls(self):
        t = Target(tls=True)
        self.addCleanup(t.cleanup)
        t.start()
        self.assertEqual(t.call("nvmf_get_subsystems"), [])
        self.assertIn("gantry", [l["name"] for l in t.call("bdev_lvol_get_lvstores")])


if __name__ == "__main__":
    unittest.main()
