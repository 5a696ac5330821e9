"""check_canary.py can fail: a log with the canary, or with a registered
secret value (a PEM key's body), fails it and names the file and line;
clean logs pass. The secrets of fixed formats that canary.py makes carry
the canary and keep their format."""
import base64
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import canary  # noqa: E402


class CanaryCheckTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gantry-canary-%d-" % os.getpid())
        self.logs = os.path.join(self.tmp, "logs")
        self.values = os.path.join(self.tmp, "values")
        os.makedirs(os.path.join(self.logs, "sub"))
        os.makedirs(self.values)
        self.runs = os.path.join(self.tmp, "runs")
        os.makedirs(os.path.join(self.runs, "plane"))
        with open(os.path.join(self.logs, "clean.log"), "w") as f:
            f.write("ts=1 level=info event=sched.serving tls=on\n")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def check(self):
        return subprocess.run([sys.executable, os.path.join(HERE, "check_canary.py"),
                               "--logs", self.logs, "--log-dir", self.runs, "--values", self.values],
                              capture_output=True, text=True, timeout=60)

    def test_clean_logs_pass(self):
        p = self.check()
        self.assertEqual(p.returncode, 0, p.stdout)
        self.assertIn("no secret in 1 files", p.stdout)

    def test_a_planted_canary_fails_the_check(self):
        token = canary.secret("api-token")
        self.assertIn(canary.CANARY, token)
        path = os.path.join(self.logs, "sub", "leaky.log")
        with open(path, "w") as f:
            f.write("line one\nlevel=error msg=\"bad token %s\"\n" % token)
        p = self.check()
        self.assertEqual(p.returncode, 1, p.stdout)
        self.assertIn(path + ":2: the canary", p.stdout)
        self.assertNotIn(token, p.stdout)  # the report masks it

    def test_log_dir_searches_only_logs(self):
        token = canary.secret("sa-token")
        with open(os.path.join(self.runs, "plane", "kubeconfig-admin"), "w") as f:
            f.write("token: %s\n" % token)  # meant to hold it
        p = self.check()
        self.assertEqual(p.returncode, 0, p.stdout)
        with open(os.path.join(self.runs, "plane", "kube-apiserver.log"), "w") as f:
            f.write("authenticating %s\n" % token)
        p = self.check()
        self.assertEqual(p.returncode, 1, p.stdout)
        self.assertIn("kube-apiserver.log:1: the canary", p.stdout)

    def test_a_registered_key_body_fails_the_check(self):
        key = os.path.join(self.tmp, "k.pem")
        subprocess.run(["openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout",
                        "-out", key], check=True, capture_output=True, timeout=60)
        with open(key) as f:
            body = [l for l in f.read().splitlines() if l and not l.startswith("-----")]
        with open(os.path.join(self.values, "k"), "w") as f:
            f.write("\n".join(body))
        p = self.check()
        self.assertEqual(p.returncode, 0, p.stdout)
        with open(os.path.join(self.logs, "dump.log"), "w") as f:
            f.write("tls key was %s\n" % body[0])
        p = self.check()
        self.assertEqual(p.returncode, 1, p.stdout)
        self.assertIn("dump.log:1: a registered secret value", p.stdout)


class CanaryFormatsTest(unittest.TestCase):
    def test_ceph_key_is_a_cephx_key_with_the_canary(self):
        k = canary.ceph_key()
        self.assertIn(canary.CANARY, k)
        raw = base64.b64decode(k)
        self.assertEqual(len(raw), 28)
        kind, _, _, n = struct.unpack("<HIIH", raw[:12])
        self.assertEqual((kind, n), (1, 16))  # AES, 16 secret bytes
        if shutil.which("ceph-authtool"):  # Ceph's own parser takes it as a key
            with tempfile.TemporaryDirectory(prefix="gantry-canary-") as d:
                kr = os.path.join(d, "kr")
                p = subprocess.run(["ceph-authtool", kr, "--create-keyring", "-n", "client.x",
                                    "--add-key", k], capture_output=True, text=True, timeout=30)
                self.assertEqual(p.returncode, 0, p.stderr)

    def test_dhchap_key_keeps_its_format(self):
        for hmac, length in ((0, 32), (1, 32), (2, 48), (3, 64)):
            k = canary.dhchap_key(hmac, length)
            self.assertIn(canary.CANARY, k)
            head, h, b64, tail = k.split(":")
            self.assertEqual((head, h, tail), ("DHHC-1", "%02d" % hmac, ""))
            raw = base64.b64decode(b64)
            key, crc = raw[:-4], struct.unpack("<I", raw[-4:])[0]
            self.assertEqual((len(key), crc), (length, zlib.crc32(key)))
        if shutil.which("nvme"):  # nvme-cli's own check of the representation
            p = subprocess.run(["nvme", "check-dhchap-key", "--key=" + canary.dhchap_key()],
                               capture_output=True, text=True, timeout=30)
            self.assertIn("Key is valid", p.stdout + p.stderr)
        with self.assertRaises(ValueError):
            canary.dhchap_key(length=16)


if __name__ == "__main__":
    unittest.main(verbosity=2)
