"""The backend observer's publishing, end to end through gantry-csi's
controller: the StorageBackend object and its status as the contract
(docs/architecture.md, "Backend observer") says, a checkpoint target's
reachability, the heartbeat, and the Lease that lets only one of two
replicas write.

The Kubernetes API is the FAKE API server (tests/fakeapi/: no real control
plane runs here); the target is a FAKE JSON-RPC stand-in that answers the
one read-only call the observer makes. The Ceph side runs against a real
cluster in tests/ceph/test_backend_observer.py."""
import datetime
import json
import os
import shutil
import tempfile
import threading
import time
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import observer_env as env


class FakeTarget:
    """FAKE gantry-target: answers bdev_lvol_get_lvstores on a fixed port."""

    def __init__(self, port):
        self.port = port
        self.server = None

    def start(self):
        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                body = json.dumps({"jsonrpc": "2.0", "id": req.get("id"),
                                   "result": [] if req.get("method") == "bdev_lvol_get_lvstores"
                                   else None}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        ThreadingHTTPServer.allow_reuse_address = True
        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self):
        if self.server:
            self.server.shutdown()
            self.server.server_close()
            self.server = None


class ObserverPublishTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gantry-observer-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        self.api = env.start_fake(self.tmp, {})
        self.addCleanup(self.api.stop)
        self.target = FakeTarget(env.free_port()).start()
        self.addCleanup(self.target.stop)
        self.config = os.path.join(self.tmp, "gantry.json")
        with open(self.config, "w") as f:
            json.dump({"targets": [{"id": "Tgt_A", "url": "http://127.0.0.1:%d/" % self.target.port,
                                    "addresses": [{"transport": "tcp", "traddr": "127.0.0.1",
                                                   "trsvcid": "4420"}]}]}, f)
        self.kubeconfig = self.api.write_kubeconfig(os.path.join(self.tmp, "kc"))

    def plugin(self, name):
        os.environ["POD_NAME"] = name
        p = env.Plugin(mode="controller", node_id=None, config=self.config,
                       workdir=os.path.join(self.tmp, name),
                       extra=["--kubeconfig", self.kubeconfig, "--backend-poll-seconds", "1"])
        os.makedirs(p.workdir, exist_ok=True)
        p.start()
        self.addCleanup(p.stop)
        return p

    def status(self):
        obj = env.backend(self.api, "tgt-a")
        return obj.get("status") if obj else None

    def test_object_and_status_as_the_contract_says(self):
        self.plugin("ctrl-a")
        st = env.wait_for("a status", lambda: (self.status() or {}).get("state") and self.status(), 20)
        obj = env.backend(self.api, "tgt-a")
        self.assertEqual(obj["apiVersion"], "gantry.io/v1alpha1")
        self.assertEqual(obj["kind"], "StorageBackend")
        self.assertNotIn("namespace", obj["metadata"])  # cluster-scoped
        self.assertEqual(obj["spec"], {"type": "nvmeof"})
        self.assertEqual(set(st), {"state", "reason", "clientReadBytesPerSec", "clientWriteBytesPerSec",
                                   "recoveryBytesPerSec", "degradedRatio", "observedAt", "observer"})
        self.assertEqual(st["state"], "Healthy")
        self.assertEqual(st["observer"], "ctrl-a")
        self.assertEqual(st["degradedRatio"], 0)
        for k in ("clientReadBytesPerSec", "clientWriteBytesPerSec", "recoveryBytesPerSec"):
            self.assertIsInstance(st[k], int, k)
        at = datetime.datetime.strptime(st["observedAt"], "%Y-%m-%dT%H:%M:%SZ")
        now = datetime.datetime.utcnow()
        self.assertLess(abs((now - at).total_seconds()), 30)

    def test_an_unreachable_target_is_unavailable_then_back(self):
        self.plugin("ctrl-a")
        env.wait_for("Healthy", lambda: (self.status() or {}).get("state") == "Healthy", 20)
        self.target.stop()
        t0 = time.monotonic()
        st = env.wait_for("Unavailable", lambda: (self.status() or {}).get("state") == "Unavailable"
                          and self.status(), 20)
        print("target down -> Unavailable in %.1f s" % (time.monotonic() - t0))
        self.assertTrue(st["reason"].startswith("unreachable: "), st["reason"])
        self.assertIn("Tgt_A", st["reason"])
        self.target.start()
        env.wait_for("Healthy again", lambda: (self.status() or {}).get("state") == "Healthy", 20)

    def test_the_heartbeat_rewrites_an_unchanged_status(self):
        self.plugin("ctrl-a")
        first = env.wait_for("a status", lambda: (self.status() or {}).get("observedAt"), 20)
        second = env.wait_for("a newer observedAt",
                              lambda: (self.status() or {}).get("observedAt", first) != first
                              and self.status()["observedAt"], 25)
        self.assertGreater(second, first)

    def test_only_the_lease_holder_writes(self):
        a = self.plugin("ctrl-a")
        env.wait_for("ctrl-a's status", lambda: (self.status() or {}).get("observer") == "ctrl-a", 20)
        self.plugin("ctrl-b")
        lease = env.wait_for("the Lease", lambda: env.api_get(
            self.api, "/apis/coordination.k8s.io/v1/namespaces/default/leases/gantry-backend-observer"), 10)
        self.assertEqual(lease["spec"]["holderIdentity"], "ctrl-a")
        # a few heartbeats' worth: ctrl-b never writes while ctrl-a holds the Lease
        deadline = time.monotonic() + 6
        while time.monotonic() < deadline:
            self.assertEqual(self.status()["observer"], "ctrl-a")
            time.sleep(0.5)
        self.assertEqual(a.stop(), 0)  # gives the Lease up on SIGTERM: ctrl-b takes over at once
        t0 = time.monotonic()
        env.wait_for("ctrl-b's status", lambda: (self.status() or {}).get("observer") == "ctrl-b", 20)
        print("takeover in %.1f s" % (time.monotonic() - t0))


if __name__ == "__main__":
    unittest.main()
