"""gantry-csi stopped by SIGTERM at any point of its own start-up.

The real binary, in each mode (controller, node, all in turn), gets SIGTERM
at moments spread over its start, counted from the moment main has blocked
the signal (the shared libraries' loading before it takes a few hundred ms
on a loaded machine; a SIGTERM then ends the process as it would any
other), to after it serves, under three conditions of the Kubernetes API
server:

  unreachable  an https:// address whose socket listens but never accepts:
               the connect or the TLS handshake hangs for good
  reachable    the FAKE API server (tests/fakeapi: no real one runs here),
               with the backend observer's Lease held by another replica
               (the observer waits for it)
  slow         the FAKE API server answering every request after 30 s

and always with a Ceph cluster and a checkpoint target at that never
accepting address (the backend observer's first Ceph connect and target
call hang). Each time the process must exit with status 0 (the clean
shutdown: "csi.signal" in its log) within 2 s of the signal; the times are
printed, and the worst per condition is the figure the operations guide
quotes.
"""
import base64
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "fakeapi"))
from csi_client import binary  # noqa: E402
from fake_api_proc import start_fake  # noqa: E402
from sched_harness import write_kubeconfig  # noqa: E402

DELAYS = (0.0, 0.005, 0.02, 0.05, 0.1, 0.25, 0.6)
MODES = ("controller", "node", "all")
# the promise: exit within 2 s of SIGTERM at any point (more under ASan: CMake says)
STOP_BOUND_S = float(os.environ.get("GANTRY_STOP_BOUND_S", "2"))
KILL_AFTER_S = 15.0  # a process past the bound is still reaped


def cephx_key():
    """A well-formed cephx secret (type 1, 16 random bytes): never accepted
    by any cluster, only by the plugin's format check."""
    raw = bytes([1, 0]) + bytes(8) + bytes([16, 0]) + os.urandom(16)
    return base64.b64encode(raw).decode()


class NeverAccepts:
    """A TCP socket on 127.0.0.1 that listens and never accepts: the first
    connects complete in the kernel and then wait for an answer that never
    comes; later ones wait in SYN."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1)
        self.port = self.sock.getsockname()[1]

    def close(self):
        self.sock.close()


def in_main(pid, timeout=20.0):
    """Waits until process @pid blocks SIGTERM (main's first step): its
    SigBlk mask in /proc. False when it exited or the wait timed out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open("/proc/%d/status" % pid) as f:
                for line in f:
                    if line.startswith("SigBlk:") and int(line.split()[1], 16) & (1 << (signal.SIGTERM - 1)):
                        return True
        except OSError:
            return False
        time.sleep(0.001)
    return False


class StopAtStartupTest(unittest.TestCase):
    times = {}

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="gantry-csi-stop-")
        cls.hole = NeverAccepts()
        key = os.path.join(cls.tmp, "ceph.key")
        with open(os.open(key, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write(cephx_key())
        cls.config = os.path.join(cls.tmp, "gantry.json")
        with open(cls.config, "w") as f:
            json.dump({"clusters": [{"clusterID": "c1", "monitors": ["127.0.0.1:%d" % cls.hole.port],
                                     "userID": "gantry", "keyFile": key, "rbdTimeoutSeconds": 60}],
                       "targets": [{"id": "t1", "url": "http://127.0.0.1:%d/" % cls.hole.port,
                                    "addresses": [{"transport": "tcp", "traddr": "127.0.0.1",
                                                   "trsvcid": "4420"}]}],
                       "node": {"kernelModules": []}}, f)
        cls.cgroup = os.path.join(cls.tmp, "cgroup")
        os.makedirs(cls.cgroup)

    @classmethod
    def tearDownClass(cls):
        cls.hole.close()
        shutil.rmtree(cls.tmp, True)
        print("\nworst SIGTERM-to-exit per API condition (over %d points each):" % len(DELAYS))
        for what, took in sorted(cls.times.items()):
            print("  %-12s %.3f s" % (what, max(took)))

    def stop_at(self, what, n, mode, delay, kc):
        """Starts gantry-csi in @mode with @kc, sends SIGTERM after @delay
        seconds: (exit code, seconds from SIGTERM to exit, log)."""
        work = os.path.join(self.tmp, "%s-%d" % (what, n))
        os.makedirs(work)
        args = [binary(), "--mode", mode, "--endpoint", "unix://" + os.path.join(work, "csi.sock"),
                "--config", self.config, "--kubeconfig", kc, "--backend-poll-seconds", "1"]
        if mode != "controller":
            args += ["--node-id", "stop-node", "--qos-state-dir", os.path.join(work, "qos"),
                     "--cgroup-root", self.cgroup]
        log_path = os.path.join(work, "plugin.log")
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(args, stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                                    env=dict(os.environ, POD_NAME="stop-%s-%d" % (what, n)))
        try:
            self.assertTrue(in_main(proc.pid), "gantry-csi never reached main")
            time.sleep(delay)  # the moment of the signal is the variable under test
            t0 = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=KILL_AFTER_S)
            except subprocess.TimeoutExpired:
                pass
            took = time.monotonic() - t0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
        with open(log_path, errors="replace") as f:
            return proc.returncode, took, f.read()

    def check(self, what, kc):
        for n, delay in enumerate(DELAYS):
            mode = MODES[n % len(MODES)]
            rc, took, logs = self.stop_at(what, n, mode, delay, kc)
            self.times.setdefault(what, []).append(took)
            print("stop %-11s %-10s SIGTERM %.3f s into main: exited in %.3f s (rc %s)"
                  % (what, mode, delay, took, rc))
            where = "%s, %s, SIGTERM at %.3f s" % (what, mode, delay)
            self.assertEqual(rc, 0, "%s: %s" % (where, logs[-3000:]))
            self.assertIn("csi.signal", logs, where)
            self.assertLess(took, STOP_BOUND_S, "%s: %.3f s to exit\n%s" % (where, took, logs[-3000:]))

    def test_unreachable_api_server(self):
        kc = write_kubeconfig(os.path.join(self.tmp, "kc-hole"),
                              "https://127.0.0.1:%d" % self.hole.port, "unreachable-token",
                              insecure_tls=True)
        self.check("unreachable", kc)

    def fake(self, tag):
        api = start_fake(os.path.join(self.tmp), {})
        self.addCleanup(api.stop)
        return api, api.write_kubeconfig(os.path.join(self.tmp, "kc-" + tag))

    def test_reachable_api_server(self):
        api, kc = self.fake("reachable")
        now = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())
        api.post("/fake/objects/leases", {
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "gantry-backend-observer", "namespace": "default"},
            "spec": {"holderIdentity": "another-replica", "leaseDurationSeconds": 3600,
                     "acquireTime": now, "renewTime": now}})
        self.check("reachable", kc)

    def test_slow_api_server(self):
        api, kc = self.fake("slow")
        api.post("/fake/slow", {"seconds": 30})
        self.check("slow", kc)


if __name__ == "__main__":
    unittest.main(verbosity=2)
