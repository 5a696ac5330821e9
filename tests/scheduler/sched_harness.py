"""Starts and stops a real gantry-scheduler for the HTTP tests.

The server listens on 127.0.0.1 with port 0 and writes the port it got to a
ready file; start() waits (bounded) for that file, stop() sends SIGTERM and
waits for a clean exit. Temp dirs are named after the branch and the PID so
concurrent runs never collide, and are always removed.
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
import urllib.request
import http.client
import ssl

BINARY = os.environ.get("GANTRY_SCHEDULER", "gantry-scheduler")
# The bound on waiting for a server to be ready: generous, since CI runs on a
# busy 2-core machine (starting python alone took 5-8 s at load 16); it is
# only reached when something is really wrong.
READY_SECONDS = 60
RESERVATION_TTL_SECONDS = 3600  # the longest gantry-scheduler accepts
FIXTURES = os.environ.get("GANTRY_SCHED_FIXTURES",
                          os.path.join(os.path.dirname(__file__), "fixtures"))


def fixture(name):
    with open(os.path.join(FIXTURES, name), "rb") as f:
        return f.read()


def fixture_json(name):
    return json.loads(fixture(name))


class Scheduler:
    def __init__(self, *extra_args, topology="topology.json", state="state.json", tls=None):
        self.tmp = tempfile.mkdtemp(prefix="gantry-sched-test-%d-" % os.getpid())
        self.ready = os.path.join(self.tmp, "port")
        self.log_path = os.path.join(self.tmp, "log")
        args = [BINARY, "--listen", "127.0.0.1:0", "--ready-file", self.ready,
                "--log-level", "debug"]
        if topology:
            args += ["--topology", os.path.join(FIXTURES, topology)]
        if state:
            args += ["--state", state if os.path.isabs(state) else os.path.join(FIXTURES, state)]
        self.tls = tls
        if tls:
            args += ["--tls-cert", tls[0], "--tls-key", tls[1]]
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
        rc = None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                rc = self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        else:
            rc = self.proc.returncode
        self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)
        return rc

    def conn(self):
        if self.tls:
            ctx = ssl.create_default_context(cafile=self.tls[0])
            ctx.check_hostname = False
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


class FakeAPIProcess:
    """tests/fakeapi/fake_kube_apiserver.py at @fake_path, started with a seed
    file and a bearer token; waits (bounded) for its "ready port=" line."""

    def __init__(self, fake_path, seed_path, token, max_seconds=600):
        self.proc = subprocess.Popen([sys.executable, fake_path, "--token", token,
                                      "--seed", seed_path, "--max-seconds", str(max_seconds)],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
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

    def get(self, path):
        """GET @path (a /fake/... control path); the decoded JSON answer."""
        with urllib.request.urlopen(self.base + path, timeout=10) as r:
            return json.loads(r.read())

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()
