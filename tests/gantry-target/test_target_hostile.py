"""gantry-target's JSON-RPC port and its /metrics port against hostile
clients over loopback (tests/scheduler/hostile_clients.py): crowds of idle
connections from one address and from twenty other 127.0.0.x addresses
while the csi controller's stand-in (127.0.0.1, with the bearer token)
calls an RPC on a new connection each time: every call is answered, a call
without the token is still 401, and the refusals and evictions are counted
on gantry_http_connections_refused_total. A slow sender (a byte a second)
is cut at the request budget (10 s), on the JSON-RPC port and on /metrics
(the server gantry-csi's --metrics-addr runs too: common/metrics_server.c),
while the controller's calls and the scrapes go on being answered.

StopDuringCephConnectTest: a drain whose Ceph monitor never answers (a
socket that listens and never accepts): SIGTERM while the drain worker
connects, then at points of a restart's start (the drain resumed from the
state file connects again), each time exit 0 within 2 s (librados waits
15 s for the monitors; the connect is given up)."""
import base64
import http.client
import json
import os
import socket
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scheduler"))
from hostile_clients import Crowd, fd_budget, slow_sender  # noqa: E402
from targetproc import Target  # noqa: E402

CALLS = 30


def refused(text, port, reason):
    for line in text.splitlines():
        if line.startswith('gantry_http_connections_refused_total{port="%s",reason="%s"}' % (port, reason)):
            return float(line.split()[-1])
    return 0.0


class TargetHostileTest(unittest.TestCase):
    def setUp(self):
        self.t = Target()
        self.t.metrics_addr = True
        self.addCleanup(self.t.cleanup)
        self.t.start()

    def rpc(self, token=True, source="127.0.0.1"):
        c = http.client.HTTPConnection("127.0.0.1", self.t.port, timeout=30, source_address=(source, 0))
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = "Bearer " + self.t.token
        try:
            c.request("POST", "/", body=json.dumps({"jsonrpc": "2.0", "id": 1,
                                                    "method": "nvmf_get_subsystems"}), headers=headers)
            r = c.getresponse()
            return r.status, r.read()
        finally:
            c.close()

    def scrape(self, source="127.0.0.1"):
        c = http.client.HTTPConnection("127.0.0.1", self.t.metrics_port, timeout=30,
                                       source_address=(source, 0))
        try:
            c.request("GET", "/metrics")
            r = c.getresponse()
            return r.status, r.read().decode()
        finally:
            c.close()

    def under(self, crowd, call):
        crowd.start()
        self.addCleanup(crowd.stop)
        self.assertTrue(crowd.filled.wait(60))
        for _ in range(CALLS):
            call()
        crowd.stop()

    def answered(self):
        status, body = self.rpc()
        self.assertEqual(status, 200, body)
        self.assertIn(b'"result"', body)
        self.assertEqual(self.rpc(token=False)[0], 401)

    def test_rpc_port_under_idle_crowds(self):
        self.under(Crowd(self.t.port, ["127.0.0.2"], min(1000, fd_budget() // 2), max_seconds=90),
                   self.answered)
        sources = ["127.0.0.%d" % (10 + i) for i in range(20)]
        self.under(Crowd(self.t.port, sources, min(50, fd_budget() // 40), max_seconds=90),
                   self.answered)
        _, text = self.scrape()
        self.assertGreater(refused(text, "rpc", "per_source"), 0, text)
        # 20 x 16 > 64: the controller's address got in by evicting
        self.assertGreater(refused(text, "rpc", "evicted"), 0, text)

    def test_metrics_port_under_idle_crowds(self):
        def scraped():
            status, text = self.scrape()
            self.assertEqual(status, 200)
        sources = ["127.0.0.%d" % (10 + i) for i in range(20)]
        self.under(Crowd(self.t.metrics_port, sources, min(50, fd_budget() // 40), max_seconds=90),
                   scraped)
        _, text = self.scrape()
        self.assertGreater(refused(text, "metrics", "per_source"), 0, text)

    def cut_while_served(self, port, head, served):
        """A byte a second of @head to @port from 127.0.0.4 while served()
        is called every second: the seconds the sender stayed open."""
        done = []
        t = threading.Thread(target=lambda: done.append(slow_sender(port, "127.0.0.4", head,
                                                                    max_seconds=40)))
        t.start()
        self.addCleanup(t.join, 45)
        while t.is_alive():
            served()
            time.sleep(1)
        self.assertIsNotNone(done[0], "a byte a second kept the connection open for 40 s")
        return done[0]

    def test_slow_sender_is_cut(self):
        head = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n" + b"{" * 100
        took = self.cut_while_served(self.t.port, head, lambda: self.assertEqual(self.rpc()[0], 200))
        print("rpc: a byte a second cut after %.1f s" % took)
        self.assertGreater(refused(self.scrape()[1], "rpc", "budget"), 0)

    def test_metrics_slow_sender_is_cut(self):
        head = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100
        took = self.cut_while_served(self.t.metrics_port, head,
                                     lambda: self.assertEqual(self.scrape()[0], 200))
        print("metrics: a byte a second cut after %.1f s" % took)
        self.assertGreater(refused(self.scrape()[1], "metrics", "budget"), 0)


STOP_BOUND_S = float(os.environ.get("GANTRY_STOP_BOUND_S", "2"))  # more under ASan: CMake says


class StopDuringCephConnectTest(unittest.TestCase):
    def setUp(self):
        self.hole = socket.socket()
        self.hole.bind(("127.0.0.1", 0))
        self.hole.listen(1)
        self.addCleanup(self.hole.close)
        self.t = Target(durable={"clusterID": "perf", "monitors": ["127.0.0.1:%d" % self.hole.getsockname()[1]],
                                 "userID": "gantry-drain", "keyFile": "", "pool": "rbd"})
        key = os.path.join(self.t.dir, "ceph.key")
        with open(key, "w") as f:  # well-formed, accepted by no cluster
            f.write(base64.b64encode(bytes([1, 0]) + bytes(8) + bytes([16, 0]) + os.urandom(16)).decode())
        self.t.durable["keyFile"] = key
        self.addCleanup(self.t.cleanup)

    def stop_timed(self):
        t0 = time.monotonic()
        self.t.proc.terminate()
        try:
            rc = self.t.proc.wait(15)
        except Exception:
            rc = None
        took = time.monotonic() - t0
        self.t.logf.close()
        if rc is None:
            self.t.proc.kill()
            self.t.proc.wait()
        self.t.proc = None
        return rc, took

    def test_stop_gives_up_the_connect(self):
        self.t.start()
        self.t.call("bdev_lvol_create", lvol_name="vol", size_in_mib=4, lvs_name="gantry")
        self.t.call("bdev_lvol_snapshot", lvol_name="gantry/vol", snapshot_name="snap")
        self.t.call("bdev_lvol_start_drain", snapshot_name="gantry/snap")
        time.sleep(0.5)  # the worker is in its connect (15 s of librados' own)
        times = []
        for delay in (None, 0.0, 0.05, 0.2, 0.6):
            if delay is not None:
                self.t.start()  # the drain, "running" in the state, resumes and connects again
                time.sleep(delay)
            rc, took = self.stop_timed()
            times.append(took)
            print("gantry-target: SIGTERM %s: exited in %.3f s (rc %s)"
                  % ("while connecting" if delay is None else "%.2f s after listening" % delay, took, rc))
            with open(self.t.log) as f:
                self.assertEqual(rc, 0, f.read()[-3000:])
            self.assertLess(took, STOP_BOUND_S)
        with open(self.t.log) as f:
            self.assertIn("target.drain_queued", f.read())


if __name__ == "__main__":
    unittest.main(verbosity=2)
