"""Starts and stops a real gantry-scheduler, and the FAKE Kubernetes API
server it follows, for the scheduler tests and the demo (scripts/demo.sh).

The server listens on 127.0.0.1 with port 0, over plain HTTP
(--insecure-http) unless given tls=(cert, key, client CA); then requests
present client=(cert, key) when given, and none otherwise. It writes the
port it got to a ready file; start() waits (bounded) for that file, stop() sends SIGTERM and
waits for a clean exit. Temp dirs are named after the branch and the PID so
concurrent runs never collide, and are always removed. FakeAPI is the one
starter of tests/fakeapi/fake_kube_apiserver.py.
"""
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import http.client
import ssl
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "canary"))
import canary  # noqa: E402

BINARY = os.environ.get("GANTRY_SCHEDULER", "gantry-scheduler")
# The bound on waiting for a server to be ready: generous, since CI runs on a
# busy 2-core machine (starting python alone took 5-8 s at load 16); it is
# only reached when something is really wrong.
READY_SECONDS = 60
RESERVATION_TTL_SECONDS = 3600  # the longest gantry-scheduler accepts
FIXTURES = os.environ.get("GANTRY_SCHED_FIXTURES",
                          os.path.join(os.path.dirname(__file__), "fixtures"))
FAKEAPI = os.environ.get("GANTRY_FAKEAPI") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "fakeapi", "fake_kube_apiserver.py")


PKI_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fakeapi",
                          "make_test_pki.sh")


def make_test_pki(tag):
    """A temp dir holding the test PKI (tests/fakeapi/make_test_pki.sh): the
    serving certificate, the client CA, a client certificate it signed, and
    one of the same subject from another CA; its keys registered with the
    canary as "<tag>-<file>". The caller removes the dir."""
    pki = tempfile.mkdtemp(prefix="gantry-%s-%d-" % (tag, os.getpid()))
    try:
        subprocess.run(["bash", PKI_SCRIPT, pki], check=True, capture_output=True, timeout=60)
        for key in ("server.key", "client.key", "other-client.key"):
            canary.register_pem_key("%s-%s" % (tag, key), os.path.join(pki, key))
    except BaseException:
        shutil.rmtree(pki, ignore_errors=True)
        raise
    return pki


class PKITestCase(unittest.TestCase):
    """A test case with the test PKI (make_test_pki) for the class, tagged
    PKI_TAG; f(name) is a file of it."""

    PKI_TAG = "sched-tls"

    @classmethod
    def setUpClass(cls):
        cls.pki = make_test_pki(cls.PKI_TAG)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.pki, ignore_errors=True)

    def f(self, name):
        return os.path.join(self.pki, name)


def fixture(name):
    with open(os.path.join(FIXTURES, name), "rb") as f:
        return f.read()


def fixture_json(name):
    return json.loads(fixture(name))


class Scheduler:
    def __init__(self, *extra_args, topology="topology.json", state="state.json", tls=None,
                 client=None, server_ca=None):
        self.tmp = tempfile.mkdtemp(prefix="gantry-sched-test-%d-" % os.getpid())
        self.ready = os.path.join(self.tmp, "port")
        self.log_path = os.path.join(self.tmp, "log")
        args = [BINARY, "--listen", "127.0.0.1:0", "--ready-file", self.ready,
                "--log-level", "debug"]
        if topology:
            args += ["--topology", os.path.join(FIXTURES, topology)]
        if state:
            args += ["--state", state if os.path.isabs(state) else os.path.join(FIXTURES, state)]
        self.tls, self.client = tls, client
        # the CA that signed the serving certificate; a self-signed one is its own
        self.server_ca = server_ca or (tls[0] if tls else None)
        if tls:
            args += ["--tls-cert", tls[0], "--tls-key", tls[1], "--client-ca", tls[2]]
        else:
            args += ["--insecure-http"]
        if "--reservation-ttl" not in extra_args:
            # a bind's reservation must not expire in the middle of a test
            # that counts on it, however slow the machine: the default 60 s
            # is a wall-clock bet the tests do not make
            args += ["--reservation-ttl", str(RESERVATION_TTL_SECONDS)]
        args += list(extra_args)
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT)
        self.port = None

    def start(self, timeout=READY_SECONDS):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("gantry-scheduler exited %d: %s" % (self.proc.returncode, self.logs()))
            if os.path.exists(self.ready):
                with open(self.ready) as f:
                    text = f.read().strip()
                if text:
                    self.port = int(text)
                    return self
            time.sleep(0.02)
        raise RuntimeError("gantry-scheduler not ready in %ds: %s" % (timeout, self.logs()))

    def logs(self):
        self.log.flush()
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")

    def stop(self):
        _stop(self.proc)
        rc = self.proc.returncode
        self.log.close()
        canary.keep_log(self.log_path, "gantry-scheduler")
        shutil.rmtree(self.tmp, ignore_errors=True)
        return rc

    def conn(self):
        if self.tls:
            ctx = ssl.create_default_context(cafile=self.server_ca)
            ctx.check_hostname = False
            if self.client:
                ctx.load_cert_chain(self.client[0], self.client[1])
            return http.client.HTTPSConnection("127.0.0.1", self.port, timeout=30, context=ctx)
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)

    def request(self, method, path, body=None, headers=None):
        c = self.conn()
        try:
            c.request(method, path, body=body, headers=headers or {})
            r = c.getresponse()
            return r.status, r.read()
        finally:
            c.close()

    def post(self, verb, body):
        if not isinstance(body, (bytes, bytearray)):
            body = json.dumps(body).encode()
        status, data = self.request("POST", "/" + verb, body,
                                    {"Content-Type": "application/json"})
        return status, json.loads(data)

    def metric(self, name):
        """The value of the unlabelled series @name on /metrics; None when absent."""
        _, text = self.request("GET", "/metrics")
        for line in text.decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
        return None


def wait_for(pred, what="condition", timeout=READY_SECONDS):
    """Polls @pred until it returns a true value, which it returns; fails
    naming @what after @timeout seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.05)
    raise AssertionError("timed out waiting for " + what)


def _stop(proc, timeout=20):
    """SIGTERM, then SIGKILL when @proc has not exited in @timeout seconds."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def write_kubeconfig(path, server, token, insecure_tls=False):
    """A kubeconfig (mode 0600) at @path that reaches @server with the bearer
    @token; @insecure_tls: an https server whose certificate is not checked.
    Returns @path."""
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
        f.write("apiVersion: v1\nkind: Config\ncurrent-context: fake\n"
                "clusters:\n- name: fake\n  cluster:\n    server: %s\n%s"
                "users:\n- name: sched\n  user:\n    token: %s\n"
                "contexts:\n- name: fake\n  context:\n    cluster: fake\n    user: sched\n"
                % (server, "    insecure-skip-tls-verify: true\n" if insecure_tls else "", token))
    return path


class FakeAPI:
    """tests/fakeapi/fake_kube_apiserver.py on a free loopback port, serving
    the objects of the JSON file @seed (or what @args ask it to generate)
    to clients with bearer @token. Construction waits (bounded) for its ready
    line; it exits by itself after @max_seconds should nobody stop() it."""

    def __init__(self, token, *args, seed=None, max_seconds=600):
        cmd = [sys.executable, FAKEAPI, "--port", "0", "--token", token,
               "--max-seconds", str(max_seconds)]
        if seed:
            cmd += ["--seed", seed]
        self.token = token
        self.proc = subprocess.Popen(cmd + list(args), stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT)
        line = b""
        deadline = time.monotonic() + READY_SECONDS
        try:
            while b"ready port=" not in line:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise RuntimeError("fake API server did not start: %r" % line)
                r, _, _ = select.select([self.proc.stdout], [], [], 0.5)
                if r:
                    line = self.proc.stdout.readline()
        except BaseException:  # also Ctrl-C: the caller never got hold of us
            self.stop()
            raise
        self.port = int(line.split(b"port=")[1])
        self.base = "http://127.0.0.1:%d" % self.port

    def write_kubeconfig(self, path):
        """A kubeconfig (mode 0600) that reaches this server with its token."""
        return write_kubeconfig(path, self.base, self.token)

    def get(self, path):
        with urllib.request.urlopen(self.base + path, timeout=10) as r:
            return json.loads(r.read())

    def post(self, path, obj):
        req = urllib.request.Request(self.base + path, data=json.dumps(obj).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status

    def stop(self):
        _stop(self.proc)
        self.proc.stdout.close()
