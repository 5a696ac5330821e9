"""gantry-scheduler over HTTP/2, with the curl CLI (libcurl on OpenSSL and
nghttp2: a client independent of the server's GnuTLS and nghttp2 use) as
the client: ALPN picks h2 on the one TLS port; the captured kube-scheduler
bodies get the same answers as over HTTP/1.1; binds in parallel are
streams of one connection and all answered, also when the server stops
while they wait on the API server; binds whose stream the client resets
again and again stay within the stream limit; the client certificate
refusal, the open probes and the 413 hold as over HTTP/1.1.
"""
import copy
import json
import os
import shutil
import signal
import socket
import ssl
import struct
import subprocess
import tempfile
import threading
import unittest

from sched_harness import (FakeAPI, PKITestCase, Scheduler, canary, fixture, fixture_json,
                           wait_for, FIXTURES)

NC_TRUE_FILTER = "nodecache-true-001-filter.json"
TOKEN = canary.secret("api-token")
CURL_SECONDS = 60


def connections(s, protocol):
    """gantry_scheduler_connections_total{protocol=...} (read over HTTP/1.1)."""
    status, text = s.request("GET", "/metrics")
    assert status == 200, status
    for line in text.decode().splitlines():
        if line.startswith('gantry_scheduler_connections_total{protocol="%s"}' % protocol):
            return int(float(line.split()[-1]))
    return 0


def _h2_frame(kind, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + \
        struct.pack(">I", stream) + payload


def _hpack_literal(name, value):
    """A header as an HPACK literal without indexing, new name, no Huffman."""
    out = b"\x00"
    for text in (name.encode(), value.encode()):
        assert len(text) < 127
        out += bytes([len(text)]) + text
    return out


class RawH2:
    """A bare HTTP/2 client (frames written by hand over TLS with ALPN h2),
    for what curl does not do on purpose: reset a stream right after its
    request, again and again."""

    DATA, HEADERS, RST_STREAM, SETTINGS = 0, 1, 3, 4
    END_STREAM, END_HEADERS, ACK = 1, 4, 1

    def __init__(self, port, ca, cert, key):
        ctx = ssl.create_default_context(cafile=ca)
        ctx.check_hostname = False
        ctx.load_cert_chain(cert, key)
        ctx.set_alpn_protocols(["h2"])
        self.sock = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=30))
        assert self.sock.selected_alpn_protocol() == "h2"
        self.buf = b""
        self.sock.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + _h2_frame(self.SETTINGS, 0, 0))
        while True:
            kind, flags, _, _ = self.frame()
            if kind == self.SETTINGS and not flags & self.ACK:
                self.sock.sendall(_h2_frame(self.SETTINGS, self.ACK, 0))
                return

    def post(self, stream, path, body, reset=False):
        block = b"".join(_hpack_literal(n, v) for n, v in (
            (":method", "POST"), (":scheme", "https"), (":path", path),
            (":authority", "localhost"), ("content-type", "application/json"),
            ("content-length", str(len(body)))))
        out = _h2_frame(self.HEADERS, self.END_HEADERS, stream, block) + \
            _h2_frame(self.DATA, self.END_STREAM, stream, body)
        if reset:
            out += _h2_frame(self.RST_STREAM, 0, stream, struct.pack(">I", 8))  # CANCEL
        self.sock.sendall(out)

    def frame(self):
        """The next frame: (type, flags, stream, payload)."""
        while True:
            if len(self.buf) >= 9:
                n = int.from_bytes(self.buf[:3], "big")
                if len(self.buf) >= 9 + n:
                    head, self.buf = self.buf[:9 + n], self.buf[9 + n:]
                    return head[3], head[4], int.from_bytes(head[5:9], "big") & 0x7fffffff, head[9:]
            data = self.sock.recv(65536)
            if not data:
                raise EOFError("connection closed")
            self.buf += data

    def body_of(self, stream):
        """The DATA of @stream's answer (other streams' frames are skipped)."""
        body = b""
        while True:
            kind, flags, sid, payload = self.frame()
            if sid == stream and kind == self.DATA:
                body += payload
                if flags & self.END_STREAM:
                    return body
            if sid == stream and kind == self.RST_STREAM:
                raise AssertionError("stream %d reset by the server" % stream)

    def close(self):
        self.sock.close()


class H2Base(PKITestCase):
    """The test PKI (sched_harness.PKITestCase) and a curl driver."""

    PKI_TAG = "sched-h2"

    def serve(self, *args, state="state.json"):
        s = Scheduler(*args, tls=(self.f("server.crt"), self.f("server.key"), self.f("ca.crt")),
                      client=(self.f("client.crt"), self.f("client.key")), server_ca=self.f("ca.crt"),
                      state=state).start()
        self.addCleanup(lambda: self.assertEqual(s.stop(), 0))
        return s

    def curl(self, s, requests, cert=True, parallel=False):
        """One curl run over HTTP/2 for @requests, a list of (method, path, body
        bytes or None); returns [(status, http_version, body bytes)]."""
        tmp = tempfile.mkdtemp(prefix="gantry-sched-h2-curl-%d-" % os.getpid())
        self.addCleanup(shutil.rmtree, tmp, True)
        common = ["--http2", "-sS", "--cacert", self.f("ca.crt"),
                  "-w", "%{http_code} %{http_version}\\n"]
        if cert:
            common += ["--cert", self.f("client.crt"), "--key", self.f("client.key")]
        argv = ["curl"] + (["--parallel", "--parallel-max", str(len(requests))] if parallel else [])
        for i, (method, path, body) in enumerate(requests):
            if i:
                argv.append("--next")
            argv += common + ["-X", method, "-o", os.path.join(tmp, "out%d" % i)]
            if body is not None:
                name = os.path.join(tmp, "in%d" % i)
                with open(name, "wb") as fh:
                    fh.write(body)
                argv += ["-H", "Content-Type: application/json", "--data-binary", "@" + name]
            argv.append("https://localhost:%d%s" % (s.port, path))
        p = subprocess.run(argv, capture_output=True, timeout=CURL_SECONDS)
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.decode().split()
        self.assertEqual(len(lines), 2 * len(requests), p.stdout)
        out = []
        for i in range(len(requests)):
            with open(os.path.join(tmp, "out%d" % i), "rb") as fh:
                out.append((int(lines[2 * i]), lines[2 * i + 1], fh.read()))
        # --parallel prints in completion order: the statuses are checked as a set there
        return out


class H2Test(H2Base):
    def test_captured_bodies_answer_as_over_http1(self):
        s = self.serve()
        bind = json.dumps({"PodName": "p", "PodNamespace": "default", "PodUID": "u",
                           "Node": "gpu-node-1"}).encode()
        reqs = [("POST", "/filter", fixture(NC_TRUE_FILTER)),
                ("POST", "/prioritize", fixture("nodecache-true-002-prioritize.json")),
                ("POST", "/filter", fixture("upstream-nodecache-false-001-filter.json")),
                ("POST", "/prioritize", fixture("upstream-nodecache-false-002-prioritize.json")),
                ("POST", "/bind", bind)]
        h2 = self.curl(s, reqs)
        for (method, path, body), (status, version, got) in zip(reqs, h2):
            self.assertEqual(version, "2", path)
            want_status, want = s.post(path[1:], body)
            self.assertEqual((status, json.loads(got)), (want_status, want), path)
        self.assertEqual(h2[-1][2], b'{"Error":"pod default/p: not seen in filter; retry"}')
        self.assertEqual(connections(s, "h2"), 1)
        # verbs and GETs on h2 are counted as over HTTP/1.1
        _, text = s.request("GET", "/metrics")
        self.assertIn('gantry_scheduler_requests_total{verb="filter",code="200"} 4', text.decode())

    def test_without_a_client_certificate_only_the_probes_answer(self):
        s = self.serve()
        got = self.curl(s, [("POST", "/filter", fixture(NC_TRUE_FILTER)),
                            ("GET", "/metrics", None), ("GET", "/healthz", None),
                            ("GET", "/readyz", None)], cert=False)
        self.assertEqual([g[0] for g in got], [403, 403, 200, 200])
        self.assertIn(b"--client-ca is required", got[0][2])
        self.assertEqual(got[2][2], b"ok\n")
        self.assertIn('reason="no client certificate"', s.logs())

    def test_oversized_body_is_413(self):
        s = self.serve("--max-body-bytes", "8192")
        big = fixture_json(NC_TRUE_FILTER)
        big["NodeNames"] = ["gpu-node-%d" % i for i in range(2000)]
        body = json.dumps(big).encode()
        # announced by content-length: refused before the body is read
        got = self.curl(s, [("POST", "/filter", body), ("POST", "/filter", fixture(NC_TRUE_FILTER))])
        self.assertEqual(got[0][0], 413)
        self.assertIn(b"request body: %d bytes, the limit is 8192" % len(body), got[0][2])
        self.assertEqual(got[1][0], 200)
        # not announced (curl -T - streams stdin without a length): refused as it passes
        p = subprocess.run(["curl", "--http2", "-sS", "--cacert", self.f("ca.crt"),
                            "--cert", self.f("client.crt"), "--key", self.f("client.key"),
                            "-X", "POST", "-T", "-", "-w", "\\n%{http_code} %{http_version}",
                            "https://localhost:%d/filter" % s.port],
                           input=body, capture_output=True, timeout=CURL_SECONDS)
        self.assertEqual(p.returncode, 0, p.stderr)
        text, status = p.stdout.rsplit(b"\n", 1)
        self.assertEqual(status, b"413 2")
        self.assertIn(b"request body: more than 8192 bytes", text)


@unittest.skipUnless(os.environ.get("GANTRY_FAKEAPI"), "GANTRY_FAKEAPI not set")
class H2BindTest(H2Base):
    """Binds through the FAKE API server, which holds the Binding POSTs."""

    def follow_fake(self, pods, *args):
        """The FAKE API server seeded with state.json's objects and @pods
        (stopped at cleanup), and gantry-scheduler following it over TLS with
        @args (the caller stops it)."""
        tmp = tempfile.mkdtemp(prefix="gantry-sched-h2-kube-%d-" % os.getpid())
        self.addCleanup(shutil.rmtree, tmp, True)
        with open(os.path.join(FIXTURES, "state.json")) as fh:
            state = json.load(fh)
        seed = {"nodes": state["nodes"], "storageclasses": state["storageClasses"],
                "persistentvolumes": state["persistentVolumes"],
                "persistentvolumeclaims": state["persistentVolumeClaims"], "pods": pods}
        with open(os.path.join(tmp, "seed.json"), "w") as fh:
            json.dump(seed, fh)
        fake = FakeAPI(TOKEN, seed=os.path.join(tmp, "seed.json"))
        self.addCleanup(fake.stop)
        kubeconfig = fake.write_kubeconfig(os.path.join(tmp, "kubeconfig"))
        s = Scheduler("--kubeconfig", kubeconfig, *args,
                      tls=(self.f("server.crt"), self.f("server.key"), self.f("ca.crt")),
                      client=(self.f("client.crt"), self.f("client.key")), server_ca=self.f("ca.crt"),
                      state=None).start()
        return fake, s

    def test_parallel_binds_share_one_connection_and_stop_answers_them(self):
        args = fixture_json(NC_TRUE_FILTER)
        pods = []
        for i in range(6):
            pod = copy.deepcopy(args["Pod"])
            pod["metadata"].update(name="h2-%d" % i, uid="00000000-0000-0000-0002-%012d" % i)
            pods.append(pod)
        fake, s = self.follow_fake(pods, "--bind-timeout", "30")
        try:
            for pod in pods:
                a = copy.deepcopy(args)
                a["Pod"] = pod
                wait_for(lambda: s.post("filter", a)[1].get("Error") == "",
                         what="the watch to show %s" % pod["metadata"]["name"])
            fake.post("/fake/hold-bindings", {})
            binds = [("POST", "/bind", json.dumps({
                "PodName": p["metadata"]["name"], "PodNamespace": "default",
                "PodUID": p["metadata"]["uid"],
                "Node": "gpu-node-%d" % (1 + i % 3)}).encode()) for i, p in enumerate(pods)]
            result = {}
            t = threading.Thread(target=lambda: result.update(
                out=self.curl(s, binds, parallel=True)))
            t.start()
            try:
                wait_for(lambda: fake.get("/fake/state")["heldBindings"] == 6,
                         what="6 Binding POSTs held at once")
                # all six on one connection
                self.assertEqual(connections(s, "h2"), 1)
                # a stop now: the binds in flight are answered first
                s.proc.send_signal(signal.SIGTERM)
                wait_for(lambda: "sched.stopping" in s.logs(), what="the stop to begin")
            finally:
                fake.post("/fake/release-bindings", {})
                t.join(CURL_SECONDS + 10)
            self.assertEqual(sorted((g[0], g[1], g[2]) for g in result["out"]),
                             [(200, "2", b'{"Error":""}')] * 6)
            self.assertEqual(len(fake.get("/fake/bindings")), 6)
        finally:
            self.assertEqual(s.stop(), 0)

    def test_binds_reset_again_and_again_stay_within_the_stream_limit(self):
        # a client that sends a bind and resets its stream, again and again,
        # while the binds wait: each reset stream still holds its body and a
        # queued job, so they count against the stream limit (256), past
        # which a bind is answered 503 at once instead of queued
        args = fixture_json(NC_TRUE_FILTER)
        pod = args["Pod"]
        pod["metadata"].update(name="h2-held", uid="00000000-0000-0000-0003-000000000001")
        fake, s = self.follow_fake([pod], "--bind-timeout", "60", "--bind-workers", "1")
        raw, held = None, threading.Thread()
        try:
            wait_for(lambda: s.post("filter", args)[1].get("Error") == "",
                     what="the watch to show the pod")
            fake.post("/fake/hold-bindings", {})
            bind = json.dumps({"PodName": "h2-held", "PodNamespace": "default",
                               "PodUID": pod["metadata"]["uid"], "Node": "gpu-node-1"}).encode()
            # the one bind worker waits on the API server: every later bind queues
            held = threading.Thread(target=lambda: s.post("bind", bind))
            held.start()
            wait_for(lambda: fake.get("/fake/state")["heldBindings"] == 1,
                     what="the Binding POST held")
            raw = RawH2(s.port, self.f("ca.crt"), self.f("client.crt"), self.f("client.key"))
            stream = 1
            for _ in range(300):
                raw.post(stream, "/bind", bind, reset=True)
                stream += 2
            raw.post(stream, "/bind", bind)
            self.assertIn(b"too many binds in flight on this connection", raw.body_of(stream))
        finally:
            if raw:
                raw.close()
            fake.post("/fake/release-bindings", {})
            if held.is_alive():
                held.join(CURL_SECONDS)
            self.assertEqual(s.stop(), 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
