"""gantry-scheduler under hostile clients, at the issue's scale, and how fast
SIGTERM ends its start-up.

Serves the test fixtures with TLS and client certificates (the recommended
setup, default limits) and measures filter latency from a client with the
right certificate (127.0.0.1), in blocks that alternate three times:
quiet, then while a crowd of idle connections that send nothing is held
from other loopback addresses, each reopened when the server closes it, at
most 500 a second (tests/scheduler/hostile_clients.py; in a process of
their own, as an attacker's are, so that the client's latency is not the
wait for this interpreter's lock): 10,000 from 127.0.0.2, then 1,000
each from 20 addresses (scaled down to the descriptors this process may
open: the counts are printed). Two clients: one keeping its connection
(kube-scheduler's h2 does), one opening a connection per call (a
handshake each: what a crowd jams). kubelet's probe (/healthz, no
certificate, from 127.0.0.3) is called between them; every failure is
counted.

The same against --insecure-http (every connection unauthenticated, the
HTTP guard's limits): 10,000 idle from one address, and a client opening
a connection per call from its own. And against gantry-target's JSON-RPC
port (a stand-in configfs; needs GANTRY_BUILD_DIR): both crowds while the
controller's calls (with the token, a connection each) go on and its
/metrics is scraped.

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
import json
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

# calls of each kind, in ROUNDS alternations of quiet and attacked blocks:
# a sub-millisecond p99 drifts by as much as a crowd adds over a minute of
# a shared 2-core machine, and alternating puts the same drift on both sides
CALLS = int(os.environ.get("GANTRY_HOSTILE_CALLS", "2100"))
ROUNDS = 3
SETTLE_S = 3.0  # a crowd held this long before the calls: held, not arriving


def p99(xs):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * 0.99))]


class Client:
    CALL, PATH = "filter", "/filter"
    PROBE_PATH = "/healthz"  # kubelet's

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

    def headers(self):
        return {"Content-Type": "application/json"}

    def answered(self, status, body):
        return status == 200

    def filter(self):
        """One call (POST @PATH); its seconds."""
        t0 = time.monotonic()
        try:
            c = self._conn()
            c.request("POST", self.PATH, body=self.body, headers=self.headers())
            r = c.getresponse()
            if not self.answered(r.status, r.read()):
                self.fail("%s: HTTP %d" % (self.CALL, r.status))
        except OSError as e:
            self.fail("%s: %r" % (self.CALL, e))
            self.conn = None
        return time.monotonic() - t0

    def fail(self, why):
        """A call not answered 200: counted, and why printed at once."""
        self.failed += 1
        print("failed call %.3f: %s" % (time.monotonic(), why), flush=True)

    def probe_connection(self):
        """kubelet's: no client certificate, from an address of its own."""
        return http.client.HTTPSConnection("127.0.0.1", self.port, timeout=30, context=self.probe_ctx,
                                           source_address=("127.0.0.3", 0))

    def probe(self):
        c = self.probe_connection()
        try:
            c.request("GET", self.PROBE_PATH)
            r = c.getresponse()
            r.read()
            if r.status != 200:
                self.fail("%s: HTTP %d" % (self.PROBE_PATH, r.status))
        except OSError as e:
            self.fail("%s: %r" % (self.PROBE_PATH, e))
        finally:
            c.close()

    def run(self, n):
        lat = []
        for i in range(n):
            lat.append(self.filter())
            if i % 10 == 0:
                self.probe()
        return lat


class Measured:
    """Latencies of the quiet and the attacked blocks, pooled, and what the
    crowds did."""

    def __init__(self):
        self.quiet, self.attacked = [], []
        self.failed = self.opened = self.closed = 0


def report(m, key, what, crowd, client):
    """Prints @m and gives its two FIGUREs, @key_p99_ratio and @key_failed:
    @what's p99 under @crowd / quiet p99, for @client."""
    print("%s, %s: %s (%d connects, %d closed by the server); p99 quiet %.2f ms, under attack "
          "%.2f ms (%d calls each); failed calls %d"
          % (what, client, crowd, m.opened, m.closed, p99(m.quiet) * 1e3, p99(m.attacked) * 1e3,
             len(m.quiet), m.failed))
    figure(key + "_p99_ratio", p99(m.attacked) / p99(m.quiet), "<=2",
           "%s p99 under %s / quiet p99, %s" % (what, crowd, client))
    figure(key + "_failed", m.failed, "<=0", "%s: calls and probes not answered 200" % what)


def alternate(make_client, port, sources, per_source):
    """ROUNDS times: CALLS / ROUNDS calls quiet, then as many with a crowd
    of @per_source idle connections from each of @sources held (since
    SETTLE_S), each block from a new client of make_client()."""
    m = Measured()
    for _ in range(ROUNDS):
        quiet = make_client()
        m.quiet += quiet.run(CALLS // ROUNDS)
        crowd = CrowdProcess(port, sources, per_source, max_seconds=300).start()
        try:
            crowd.filled.wait(120)
            time.sleep(SETTLE_S)
            loud = make_client()
            m.attacked += loud.run(CALLS // ROUNDS)
        finally:
            crowd.stop()
        m.failed += quiet.failed + loud.failed
        m.opened += crowd.opened
        m.closed += crowd.closed_by_server
        time.sleep(SETTLE_S)  # the server lets go of the crowd's last connections
    return m


def attack(pki, name, sources, per_source):
    s = sh.Scheduler(tls=(os.path.join(pki, "server.crt"), os.path.join(pki, "server.key"),
                          os.path.join(pki, "ca.crt")),
                     client=(os.path.join(pki, "client.crt"), os.path.join(pki, "client.key")),
                     server_ca=os.path.join(pki, "ca.crt")).start()
    try:
        for persistent in (True, False):
            kind = "kept" if persistent else "new"
            m = alternate(lambda: Client(pki, s.port, persistent), s.port, sources, per_source)
            report(m, "sched_hostile_%s_%s" % (name, kind), "gantry-scheduler filter",
                   "%d x %d idle connections" % (len(sources), per_source), kind + " connection")
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
        m = alternate(lambda: PlainClient(s.port), s.port, ["127.0.0.2"], per_source)
        report(m, "sched_hostile_plain_one_address_new", "gantry-scheduler --insecure-http filter",
               "1 x %d idle connections" % per_source, "new connection")
    finally:
        s.stop()


class TargetClient(PlainClient):
    """The csi controller's calls of gantry-target: JSON-RPC with the bearer
    token, a new connection each (its libcurl handle per call); the probe
    is a scrape of --metrics-addr from 127.0.0.3."""
    CALL, PATH = "JSON-RPC", "/"
    PROBE_PATH = "/metrics"

    def __init__(self, target):
        super().__init__(target.port)
        self.t = target
        self.body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "nvmf_get_subsystems"})

    def headers(self):
        return dict(super().headers(), Authorization="Bearer " + self.t.token)

    def answered(self, status, body):
        return status == 200 and b'"result"' in body

    def probe_connection(self):
        return http.client.HTTPConnection("127.0.0.1", self.t.metrics_port, timeout=30,
                                          source_address=("127.0.0.3", 0))


def attack_target(name, sources, per_source):
    """gantry-target's JSON-RPC port (a stand-in configfs): the same crowds
    while the controller's calls go on."""
    sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "gantry-target"))
    from targetproc import Target  # noqa: E402

    t = Target()
    t.metrics_addr = True
    try:
        t.start()
        m = alternate(lambda: TargetClient(t), t.port, sources, per_source)
        report(m, "target_hostile_" + name, "gantry-target JSON-RPC",
               "%d x %d idle connections" % (len(sources), per_source), "new connection")
    finally:
        t.cleanup()


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
        if os.environ.get("GANTRY_BUILD_DIR"):
            attack_target("one_address", ["127.0.0.2"], one)
            attack_target("twenty_addresses", ["127.0.0.%d" % (10 + i) for i in range(20)], each)
    finally:
        import shutil
        shutil.rmtree(pki, ignore_errors=True)
    if os.environ.get("GANTRY_FAKEAPI"):
        stops()
    if os.environ.get("GANTRY_BUILD_DIR"):
        csi_stops()


if __name__ == "__main__":
    main()
