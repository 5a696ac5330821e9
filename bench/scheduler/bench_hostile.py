"""gantry-scheduler under hostile clients, at the issue's scale, and how fast
SIGTERM ends its start-up.

Serves the test fixtures with TLS and client certificates (the recommended
setup, default limits) and measures filter latency from a client with the
right certificate (127.0.0.1), quiet and then while crowds of idle
connections that send nothing are held from other loopback addresses
(tests/scheduler/hostile_clients.py; in a process of their own, as an
attacker's are, so that the client's latency is not the wait for this
interpreter's lock): 10,000 from 127.0.0.2, then 1,000
each from 20 addresses (scaled down to the descriptors this process may
open: the counts are printed). Two clients: one keeping its connection
(kube-scheduler's h2 does), one opening a connection per call (a
handshake each: what a crowd jams). kubelet's probe (/healthz, no
certificate, from 127.0.0.3) is called between them; every failure is
counted.

The same against --insecure-http (every connection unauthenticated, the
HTTP guard's limits): 10,000 idle from one address, and a client opening
a connection per call from its own.

Then SIGTERM at 20 points of the start (API server unreachable, reachable,
and slow: the FAKE API server holding the informers' list or the
recovery's; a Lease held by another replica), each the seconds from the
signal to the exit; and gantry-csi's own 21 points
(tests/conformance/test_stop_at_startup.py).

FIGUREs: p99 under attack / quiet p99 per crowd and client, each pair
measured in the same run on the same server (goal <= 2), failed calls
(goal <= 0), the longest stop of each binary (seconds, goal <= 2).
GANTRY_SCHEDULER may name another binary (an older build: the figures
before a change).
"""
import http.client
import os
import ssl
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.join(HERE, "..", "..", "tests", "scheduler")
sys.path.insert(0, TESTS)
sys.path.insert(0, os.path.join(HERE, ".."))

from figure import figure  # noqa: E402
from hostile_clients import CrowdProcess, fd_budget  # noqa: E402
import sched_harness as sh  # noqa: E402
import test_sched_hostile as th  # noqa: E402

QUIET_CALLS = 200
ATTACK_CALLS = 200


def p99(xs):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * 0.99))]


class Client:
    def __init__(self, pki, port, persistent):
        self.port, self.persistent = port, persistent
        self.ctx = ssl.create_default_context(cafile=os.path.join(pki, "ca.crt"))
        self.ctx.check_hostname = False
        self.ctx.load_cert_chain(os.path.join(pki, "client.crt"), os.path.join(pki, "client.key"))
        self.probe_ctx = ssl.create_default_context(cafile=os.path.join(pki, "ca.crt"))
        self.probe_ctx.check_hostname = False
        self.conn = None
        self.body = sh.fixture(th.FILTER)
        self.failed = 0

    def _conn(self):
        if self.conn is None or not self.persistent:
            if self.conn:
                self.conn.close()
            self.conn = http.client.HTTPSConnection("127.0.0.1", self.port, timeout=30,
                                                    context=self.ctx, source_address=("127.0.0.1", 0))
        return self.conn

    def filter(self):
        t0 = time.monotonic()
        try:
            c = self._conn()
            c.request("POST", "/filter", body=self.body, headers={"Content-Type": "application/json"})
            r = c.getresponse()
            r.read()
            if r.status != 200:
                self.failed += 1
        except OSError:
            self.failed += 1
            self.conn = None
        return time.monotonic() - t0

    def probe_connection(self):
        """kubelet's: no client certificate, from an address of its own."""
        return http.client.HTTPSConnection("127.0.0.1", self.port, timeout=30, context=self.probe_ctx,
                                           source_address=("127.0.0.3", 0))

    def probe(self):
        c = self.probe_connection()
        try:
            c.request("GET", "/healthz")
            if c.getresponse().status != 200:
                self.failed += 1
        except OSError:
            self.failed += 1
        finally:
            c.close()

    def run(self, n):
        lat = []
        for i in range(n):
            lat.append(self.filter())
            if i % 10 == 0:
                self.probe()
        return lat


def attack(pki, name, sources, per_source):
    s = sh.Scheduler(tls=(os.path.join(pki, "server.crt"), os.path.join(pki, "server.key"),
                          os.path.join(pki, "ca.crt")),
                     client=(os.path.join(pki, "client.crt"), os.path.join(pki, "client.key")),
                     server_ca=os.path.join(pki, "ca.crt")).start()
    try:
        for persistent in (True, False):
            kind = "kept" if persistent else "new"
            quiet = Client(pki, s.port, persistent)
            q = quiet.run(QUIET_CALLS)
            crowd = CrowdProcess(s.port, sources, per_source, max_seconds=300).start()
            try:
                crowd.filled.wait(120)
                loud = Client(pki, s.port, persistent)
                a = loud.run(ATTACK_CALLS)
            finally:
                crowd.stop()
            print("%s, %s connection: %d sources x %d idle (%d connects, %d closed by the server); "
                  "filter p99 quiet %.2f ms, under attack %.2f ms; failed calls %d"
                  % (name, kind, len(sources), per_source, crowd.opened, crowd.closed_by_server,
                     p99(q) * 1e3, p99(a) * 1e3, loud.failed + quiet.failed))
            figure("sched_hostile_%s_%s_p99_ratio" % (name, kind), p99(a) / p99(q), "<=2",
                   "filter p99 under %d x %d idle connections / quiet p99, %s connection"
                   % (len(sources), per_source, kind))
            figure("sched_hostile_%s_%s_failed" % (name, kind), loud.failed + quiet.failed, "<=0",
                   "filter and /healthz calls not answered 200")
    finally:
        s.stop()


class PlainClient(Client):
    """A client of --insecure-http: no TLS, a new connection per call."""

    def __init__(self, port):
        self.port, self.persistent = port, False
        self.conn = None
        self.body = sh.fixture(th.FILTER)
        self.failed = 0

    def _conn(self):
        if self.conn:
            self.conn.close()
        self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30,
                                               source_address=("127.0.0.1", 0))
        return self.conn

    def probe_connection(self):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=30,
                                          source_address=("127.0.0.3", 0))


def attack_plain(per_source):
    """--insecure-http: quiet, then 1 x @per_source idle from 127.0.0.2."""
    s = sh.Scheduler().start()
    try:
        quiet = PlainClient(s.port)
        q = quiet.run(QUIET_CALLS)
        crowd = CrowdProcess(s.port, ["127.0.0.2"], per_source, max_seconds=300).start()
        try:
            crowd.filled.wait(120)
            loud = PlainClient(s.port)
            a = loud.run(ATTACK_CALLS)
        finally:
            crowd.stop()
        print("plain HTTP, new connection: 1 source x %d idle (%d connects, %d closed by the "
              "server); filter p99 quiet %.2f ms, under attack %.2f ms; failed calls %d"
              % (per_source, crowd.opened, crowd.closed_by_server, p99(q) * 1e3, p99(a) * 1e3,
                 loud.failed + quiet.failed))
        figure("sched_hostile_plain_one_address_new_p99_ratio", p99(a) / p99(q), "<=2",
               "--insecure-http: filter p99 under 1 x %d idle connections / quiet p99 of the same "
               "server, new connection" % per_source)
        figure("sched_hostile_plain_one_address_new_failed", loud.failed + quiet.failed, "<=0",
               "--insecure-http: filter and /healthz calls not answered 200")
    finally:
        s.stop()


def csi_stops():
    """gantry-csi's stop at 21 points of its start (the conformance test's)."""
    sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "conformance"))
    import test_stop_at_startup as cs  # noqa: E402

    class CsiStops(cs.StopAtStartupTest):
        def runTest(self):
            pass

    t = CsiStops()
    CsiStops.setUpClass()
    try:
        for name in ("test_unreachable_api_server", "test_reachable_api_server",
                     "test_slow_api_server"):
            getattr(t, name)()
            t.doCleanups()
    finally:
        CsiStops.tearDownClass()
    for what, took in sorted(cs.StopAtStartupTest.times.items()):
        figure("csi_stop_at_startup_%s_max_s" % what, max(took), "<=2",
               "gantry-csi: seconds from SIGTERM to exit, the longest of %d points of the start, "
               "API server %s" % (len(took), what))


class Stops(th.StopAtStartupTest):
    def runTest(self):
        pass


def stops():
    t = Stops()
    Stops.setUpClass()
    try:
        t.setUp()
        for name in ("test_unreachable_api_server", "test_reachable_api_server",
                     "test_informer_lists_held", "test_recovery_list_held",
                     "test_lease_held_by_another"):
            getattr(t, name)()
        t.doCleanups()
    finally:
        Stops.tearDownClass()
    longest = max(took for _, _, took in t.times)
    figure("sched_stop_at_startup_max_s", longest, "<=2",
           "seconds from SIGTERM to exit, the longest of %d points of the start" % len(t.times))


def main():
    budget = fd_budget()
    pki = sh.make_test_pki("bench-hostile")
    try:
        one = min(10000, budget - 100)
        attack(pki, "one_address", ["127.0.0.2"], one)
        each = min(1000, (budget - 100) // 20)
        attack(pki, "twenty_addresses", ["127.0.0.%d" % (10 + i) for i in range(20)], each)
        attack_plain(one)
    finally:
        import shutil
        shutil.rmtree(pki, ignore_errors=True)
    if os.environ.get("GANTRY_FAKEAPI"):
        stops()
    if os.environ.get("GANTRY_BUILD_DIR"):
        csi_stops()


if __name__ == "__main__":
    main()
