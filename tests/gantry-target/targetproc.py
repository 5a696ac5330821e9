"""Starts gantry-target for a test and talks JSON-RPC to it (shared by the
target tests). The process is always stopped and its temp dir removed."""
import json
import os
import re
import shutil
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "canary"))
import canary  # noqa: E402

BUILD = os.environ.get("GANTRY_BUILD_DIR", os.path.join(os.path.dirname(__file__), "../../build"))
BIN = os.path.join(BUILD, "bin", "gantry-target")


class RpcError(Exception):
    def __init__(self, code, message):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class Target:
    """gantry-target on 127.0.0.1:<port> (default: a free one) with a stand-in
    configfs root, or the real one when @configfs is given (in the VM)."""

    def __init__(self, token=canary.secret("target-token"), tls=False, workdir=None, configfs=None, port=0,
                 durable=None):
        self.dir = workdir or tempfile.mkdtemp(prefix=f"gantry-checkpoint-{os.getpid()}-")
        self.cfs = configfs or os.path.join(self.dir, "cfs")
        self.lvs = os.path.join(self.dir, "lvs")
        os.makedirs(self.dir, exist_ok=True)
        if not configfs:
            os.makedirs(self.cfs, exist_ok=True)
        if port:
            self.port = port
        self.token = token
        self.tls = tls
        self.durable = durable  # a --durable config dict (drains into Ceph), or None
        self.proc = None
        self.log = os.path.join(self.dir, "target.log")

    def start(self):
        # a restart keeps its port, as a real agent's address is fixed in the config
        args = [BIN, "--listen", f"127.0.0.1:{getattr(self, 'port', 0)}", "--configfs", self.cfs, "--state",
                os.path.join(self.dir, "state.json"), "--lvstore", "gantry=" + self.lvs]
        if self.token:
            with open(os.path.join(self.dir, "token"), "w") as f:
                f.write(self.token + "\n")
            args += ["--token-file", os.path.join(self.dir, "token")]
        else:
            # gantry-target refuses to start without a token otherwise; these tests talk to it on loopback
            args += ["--insecure-no-auth"]
        if self.durable:
            with open(os.path.join(self.dir, "durable.json"), "w") as f:
                json.dump(self.durable, f)
            args += ["--durable", os.path.join(self.dir, "durable.json"), "--metrics-addr", "127.0.0.1:0"]
        elif getattr(self, "metrics_addr", False):
            args += ["--metrics-addr", "127.0.0.1:0"]
        if self.tls:
            self.cert = os.path.join(self.dir, "cert.pem")
            key = os.path.join(self.dir, "key.pem")
            if not os.path.exists(self.cert):
                subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                                "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                                "-keyout", key, "-out", self.cert], check=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            args += ["--tls-cert", self.cert, "--tls-key", key]
        self.logf = open(self.log, "a")
        offset = self.logf.tell()
        self.proc = subprocess.Popen(args, stderr=self.logf,
                                     preexec_fn=getattr(self, "preexec", None))
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with open(self.log) as f:
                f.seek(offset)
                m = re.findall(r"event=target.listening port=(\d+)", f.read())
            if m:
                self.port = int(m[-1])
                with open(self.log) as f:
                    f.seek(offset)
                    mp = re.findall(r"event=target.metrics_listening port=(\d+)", f.read())
                self.metrics_port = int(mp[-1]) if mp else None
                return self
            if self.proc.poll() is not None:
                raise RuntimeError("gantry-target exited: " + open(self.log).read())
            time.sleep(0.05)
        raise RuntimeError("gantry-target did not listen in 20 s")

    def stop(self):
        """SIGTERM; a clean exit is 0 (under ASan a leak makes it non-zero: raised)."""
        if not self.proc:
            return
        rc = self.proc.poll()
        if rc is None:
            self.proc.terminate()
            try:
                rc = self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                rc = "killed"
        self.logf.close()
        self.proc = None
        if rc != 0:
            with open(self.log) as f:
                raise RuntimeError("gantry-target exited %s:\n%s" % (rc, f.read()[-4000:]))

    def metrics(self):
        """The Prometheus text of --metrics-addr (durable targets serve it)."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=20) as r:
            return r.read().decode()

    def kill9(self):
        """SIGKILL, as a crash: no shutdown code runs."""
        self.proc.kill()
        self.proc.wait()
        self.logf.close()
        self.proc = None

    def cleanup(self):
        try:
            self.stop()
        finally:
            canary.keep_log(self.log, "gantry-target")
            shutil.rmtree(self.dir, ignore_errors=True)

    @property
    def url(self):
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}/"

    def raw(self, body, token=None):
        req = urllib.request.Request(self.url, data=body if isinstance(body, bytes) else body.encode(),
                                     headers={"Content-Type": "application/json"})
        tok = self.token if token is None else token
        if tok:
            req.add_header("Authorization", "Bearer " + tok)
        ctx = ssl.create_default_context(cafile=self.cert) if self.tls else None
        with urllib.request.urlopen(req, timeout=20, context=ctx) as r:
            return r.status, r.read()

    def call(self, method, **params):
        _, body = self.raw(json.dumps({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}))
        resp = json.loads(body)
        if "error" in resp:
            raise RpcError(resp["error"]["code"], resp["error"]["message"])
        return resp["result"]
