"""A real Kubernetes control plane for tests: etcd, kube-apiserver and, on
request, kube-controller-manager and kube-scheduler, run as local processes
on free loopback ports, with no kubelet (nodes are API objects the test
creates). Everything it starts is stopped on stop(), at exit, on SIGTERM /
SIGINT, and by the kernel if the test process dies (PR_SET_PDEATHSIG).

API (all of it):

    import control_plane as cp
    if __name__ == "__main__": cp.main()      # skips (exit 77) without binaries

    plane = cp.ControlPlane("mytest", controllers=True, scheduler_config=None)
    plane.start()               # etcd + kube-apiserver (/readyz), then the others
    plane.url, plane.ca, plane.kubeconfig   # admin (system:masters) access
    plane.api("GET", "/api/v1/nodes")       # JSON in, JSON out; raises ApiError
    plane.kubectl("apply", "-f", path)      # the admin kubectl, returns stdout
    plane.create_nodes(["n1", ...], labels={}, annotations={}, capacity={})
    plane.node_status("n1", volumes_in_use=[])  # a kubelet's status update
    plane.sa_token("ns", "sa")              # TokenRequest (creates ns and SA)
    plane.sa_kubeconfig("ns", "sa")         # a kubeconfig file for that SA
    plane.spawn("name", argv, env=None)     # any other daemon, same teardown
    plane.stop_proc("kube-apiserver"); plane.start_proc("kube-apiserver")
    plane.kill_proc("name", signal.SIGKILL) # for crash tests; start_proc again
    plane.start_scheduler(config_text)      # KubeSchedulerConfiguration YAML
    plane.log("name")                       # a process's log text
    cp.wait_for(fn, timeout, what)          # bounded wait for a truthy fn()
    cp.in_threads(items, n, fn, finish)     # fn(item) from n threads, first error re-raised
    cp.dataset_claim(ns, cluster_id)        # [(path, PV), (path, PVC)] of a pre-bound dataset claim
    plane.stop()

The scheduler configuration may leave `clientConnection.kubeconfig` out: the
harness points it at a kubeconfig of user system:kube-scheduler. Start the
daemons from the main thread: PR_SET_PDEATHSIG fires when the *thread* that
started a process exits.

Binaries come from $GANTRY_K8S_BIN, else from ../shared/k8s/unpack.sh
(beside the source tree) unpacked into $GANTRY_BUILD_DIR/k8s; etcd is
Debian's etcd-server. Without them main() prints a loud SKIPPED line and
exits 77, which CTest reports as skipped (SKIP_RETURN_CODE)."""
import atexit
import ctypes
import fcntl
import functools
import http.client
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.parse
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "common"))
import own_process  # noqa: E402
SOURCE = os.path.normpath(os.path.join(HERE, "..", ".."))
SKIP_CODE = 77
sys.path.insert(0, os.path.join(HERE, "..", "canary"))
import canary  # noqa: E402  (the secret canary: every token below carries it)

ADMIN_TOKEN = canary.secret("k8s-admin")


class ApiError(Exception):
    def __init__(self, status, method, path, body):
        super().__init__("%s %s: HTTP %d: %s" % (method, path, status, body[:400]))
        self.status = status
        self.body = body


def wait_for(fn, timeout, what, interval=0.1):
    """Calls fn() until it returns something truthy, for at most @timeout
    seconds; returns that value or raises AssertionError naming @what."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            v = fn()
            if v:
                return v
        except Exception as e:  # noqa: BLE001 - kept for the message
            last = e
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %ss waiting for %s%s" %
                                 (timeout, what, " (last error: %s)" % last if last else ""))
        time.sleep(interval)


@functools.lru_cache(maxsize=None)
def binaries():
    """The folder of kube-apiserver & co, or None (with the reason on stderr)."""
    d = os.environ.get("GANTRY_K8S_BIN")
    if d:
        return d if os.path.exists(os.path.join(d, "kube-apiserver")) else None
    unpack = os.path.join(SOURCE, "..", "shared", "k8s", "unpack.sh")
    if not os.path.exists(unpack):
        return None
    build = os.environ.get("GANTRY_BUILD_DIR", os.path.join(SOURCE, "build"))
    os.makedirs(build, exist_ok=True)
    with open(os.path.join(build, "k8s.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # tests run with ctest -j unpack one at a time
        r = subprocess.run(["sh", unpack, os.path.join(build, "k8s")], capture_output=True,
                           text=True, timeout=300)
    if r.returncode != 0:
        sys.stderr.write("unpack.sh failed: %s\n" % r.stderr)
        return None
    return r.stdout.strip()


def skip_reason():
    """Why the tier cannot run here, or None."""
    if not shutil.which("etcd"):
        return "etcd (Debian etcd-server) is not installed"
    if not binaries():
        return ("no Kubernetes binaries: set GANTRY_K8S_BIN, or put ../shared/k8s "
                "(with unpack.sh) beside the source tree")
    return None


def main():
    """The test file's entry point: skip loudly when the tier cannot run,
    else unittest.main()."""
    reason = skip_reason()
    if reason:
        sys.stderr.write("\n*** SKIPPED: the k8s tier did not run: %s ***\n\n" % reason)
        sys.stdout.write("SKIPPED: %s\n" % reason)
        sys.exit(SKIP_CODE)
    import unittest
    unittest.main(module="__main__", verbosity=2)


def in_threads(items, threads, fn, finish=None):
    """Calls fn(item) for every one of @items from @threads threads at once
    (item i on thread i % threads), then @finish() on each thread when given;
    re-raises the first exception any of them raised."""
    errors = []

    def worker(chunk):
        try:
            for item in chunk:
                fn(item)
        except Exception as e:  # noqa: BLE001 - re-raised below
            errors.append(e)
        finally:
            if finish:
                finish()

    items = list(items)
    ts = [threading.Thread(target=worker, args=(items[i::threads],)) for i in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        raise errors[0]


def dataset_claim(ns, cluster_id, name="data", storage_class="gantry-dataset"):
    """A Gantry dataset PVC @name in @ns and a PV made for it (ReadOnlyMany,
    1Ti, a volume handle of no real volume): what the scheduler reads a pod's
    dataset bandwidth from, without a provisioner. Returns the paths to POST
    them to and the objects: [(path, pv), (path, pvc)]."""
    pv = "pv-" + ns
    return [
        ("/api/v1/persistentvolumes", {
            "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": pv},
            "spec": {"capacity": {"storage": "1Ti"}, "accessModes": ["ReadOnlyMany"],
                     "storageClassName": storage_class,
                     "claimRef": {"namespace": ns, "name": name},
                     "csi": {"driver": "csi.gantry.io", "volumeHandle": "0001-" + ns,
                             "volumeAttributes": {"tier": "dataset", "clusterID": cluster_id}}}}),
        ("/api/v1/namespaces/%s/persistentvolumeclaims" % ns, {
            "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
            "spec": {"accessModes": ["ReadOnlyMany"], "storageClassName": storage_class,
                     "volumeName": pv, "resources": {"requests": {"storage": "1Ti"}}}}),
    ]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


_libc = ctypes.CDLL(None, use_errno=True)


def _die_with_parent():
    os.setsid()
    _libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


class Proc:
    """One daemon: its argv, its log file, its process group."""

    def __init__(self, name, argv, log, env=None):
        self.name, self.argv, self.logpath, self.env = name, argv, log, env
        self.popen = None

    def start(self):
        env = dict(os.environ)
        env.update(self.env or {})
        logf = open(self.logpath, "ab")
        logf.write(b"\n=== start %s\n" % " ".join(self.argv).encode())
        logf.flush()
        self.popen = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=logf,
                                      stderr=subprocess.STDOUT, env=env,
                                      preexec_fn=_die_with_parent)
        self.start_time = own_process.start_time(self.popen.pid)
        logf.close()

    def alive(self):
        return self.popen is not None and self.popen.poll() is None

    def signal(self, sig):
        if self.alive():
            own_process.signal_group(self.popen.pid, self.start_time, sig)

    def stop(self, grace=10):
        if self.popen is None:
            return
        self.signal(signal.SIGTERM)
        try:
            self.popen.wait(grace)
        except subprocess.TimeoutExpired:
            self.signal(signal.SIGKILL)
            self.popen.wait(10)
        # whatever the group still holds (children of the daemon); the leader
        # is reaped by now, so only if its number is not a stranger's
        own_process.signal_group(self.popen.pid, self.start_time, signal.SIGKILL)
        self.popen = None


_live = []


def _stop_all():
    for plane in list(_live):
        plane.stop()


def _on_signal(signum, frame):
    _stop_all()
    sys.exit(128 + signum)


atexit.register(_stop_all)


class ControlPlane:
    def __init__(self, name, controllers=False, scheduler_config=None, workdir=None):
        self.name = name
        self.controllers = controllers
        self.scheduler_config = scheduler_config
        build = os.environ.get("GANTRY_BUILD_DIR", os.path.join(SOURCE, "build"))
        self.dir = workdir or os.path.join(build, "k8s-runs", name)
        self.bin = None
        self.procs = {}
        self.url = None
        self._local = threading.local()
        self._sa_tokens = {}

    # --- start and stop -------------------------------------------------
    def start(self):
        reason = skip_reason()
        if reason:
            raise RuntimeError(reason)
        self.bin = binaries()
        self._kill_stale()
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)
        _live.append(self)
        if threading.current_thread() is threading.main_thread():
            for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
                signal.signal(s, _on_signal)
        try:
            self._pki()
            self._etcd()
            self._apiserver()
            if self.controllers:
                self._controller_manager()
            if self.scheduler_config:
                self.start_scheduler(self.scheduler_config)
        except BaseException:
            self.print_logs()
            self.stop()
            raise
        return self

    def stop(self):
        self._dump_events()
        self._drop_conn()
        for name in reversed(list(self.procs)):
            self.procs[name].stop()
        try:
            os.unlink(os.path.join(self.dir, "pids"))
        except OSError:
            pass
        shutil.rmtree(getattr(self, "etcd_data", "") or "/nonexistent", ignore_errors=True)
        if self in _live:
            _live.remove(self)

    def _dump_events(self):
        """Writes every event of the run to <dir>/events.log, where the
        secret canary check (tests/canary/) reads it with the daemons' logs."""
        p = self.procs.get("kube-apiserver")
        if not p or not p.alive():
            return
        try:
            items = self.request("GET", "/api/v1/events")["items"]
        except (ApiError, OSError, ValueError, http.client.HTTPException):
            return
        with open(os.path.join(self.dir, "events.log"), "w") as f:
            for e in items:
                o = e.get("involvedObject", {})
                f.write("%s %s/%s %s %s: %s\n" % (e.get("type"), o.get("kind"), o.get("name"),
                                                  e.get("reason"), e.get("source", {}).get("component"),
                                                  e.get("message", "")))

    def _kill_stale(self):
        """Kills daemons that a killed earlier run of this test left: only
        those still running as started (own_process: the pid file keeps
        each one's start time), never a stranger that has the number now."""
        try:
            with open(os.path.join(self.dir, "pids")) as f:
                recs = [own_process.parse(line) for line in f if line.strip()]
        except (OSError, ValueError, IndexError):
            return
        for pid, start in recs:
            if start is not None:
                own_process.signal_group(pid, start, signal.SIGKILL)

    def spawn(self, name, argv, env=None):
        """Starts @argv as daemon @name (log: <dir>/<name>.log), stopped with
        the control plane."""
        if name in self.procs and self.procs[name].alive():
            raise RuntimeError("%s is already running" % name)
        p = Proc(name, argv, os.path.join(self.dir, name + ".log"), env)
        self.procs[name] = p
        p.start()
        with open(os.path.join(self.dir, "pids"), "a") as f:
            f.write(own_process.record(p.popen.pid) + "\n")
        return p

    def start_proc(self, name):
        p = self.procs[name]
        if not p.alive():
            p.start()
            with open(os.path.join(self.dir, "pids"), "a") as f:
                f.write(own_process.record(p.popen.pid) + "\n")
        if name == "kube-apiserver":
            self._wait_ready()

    def stop_proc(self, name, grace=10):
        self.procs[name].stop(grace)

    def kill_proc(self, name, sig=signal.SIGKILL):
        p = self.procs[name]
        p.signal(sig)
        if sig == signal.SIGKILL:
            p.popen.wait(10)

    def log(self, name):
        with open(self.procs[name].logpath, errors="replace") as f:
            return f.read()

    def print_logs(self, lines=40):
        for name, p in self.procs.items():
            try:
                with open(p.logpath, errors="replace") as f:
                    tail = f.read().splitlines()[-lines:]
            except OSError:
                continue
            sys.stderr.write("--- %s (last %d lines of %s)\n%s\n" %
                             (name, lines, p.logpath, "\n".join(tail)))

    # --- the components -------------------------------------------------
    def _openssl(self, *args):
        subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)

    def _pki(self):
        d = self.dir
        self.ca = os.path.join(d, "ca.crt")
        self._openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                      "-nodes", "-keyout", os.path.join(d, "ca.key"), "-out", self.ca,
                      "-days", "2", "-subj", "/CN=gantry-test-ca")
        self._openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                      "-keyout", os.path.join(d, "apiserver.key"),
                      "-out", os.path.join(d, "apiserver.csr"), "-subj", "/CN=kube-apiserver")
        with open(os.path.join(d, "san.ext"), "w") as f:
            f.write("subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes.default.svc\n")
        self._openssl("x509", "-req", "-in", os.path.join(d, "apiserver.csr"), "-CA", self.ca,
                      "-CAkey", os.path.join(d, "ca.key"), "-CAcreateserial", "-days", "2",
                      "-extfile", os.path.join(d, "san.ext"),
                      "-out", os.path.join(d, "apiserver.crt"))
        self.sa_key = os.path.join(d, "sa.key")
        self._openssl("genrsa", "-out", self.sa_key, "2048")
        self._openssl("rsa", "-in", self.sa_key, "-pubout", "-out", os.path.join(d, "sa.pub"))
        # static users: the admin, and the components' own identities
        self.tokens = {"admin": ADMIN_TOKEN,
                       "system:kube-controller-manager": canary.secret("k8s-kcm"),
                       "system:kube-scheduler": canary.secret("k8s-scheduler")}
        with open(os.path.join(d, "tokens.csv"), "w") as f:
            f.write('%s,admin,admin,"system:masters"\n' % ADMIN_TOKEN)
            f.write("%s,system:kube-controller-manager,kcm\n"
                    % self.tokens["system:kube-controller-manager"])
            f.write("%s,system:kube-scheduler,scheduler\n" % self.tokens["system:kube-scheduler"])

    def _etcd(self):
        base = "/dev/shm" if os.path.isdir("/dev/shm") else self.dir
        # named after the work folder: a killed run's data is removed by the next
        tag = "%08x" % (zlib.crc32(os.path.abspath(self.dir).encode()))
        self.etcd_data = os.path.join(base, "gantry-etcd-%s-%s" % (self.name, tag))
        shutil.rmtree(self.etcd_data, ignore_errors=True)
        client, peer = free_port(), free_port()
        self.etcd_url = "http://127.0.0.1:%d" % client
        self.spawn("etcd", [
            "etcd", "--name", "default", "--data-dir", self.etcd_data,
            "--listen-client-urls", self.etcd_url, "--advertise-client-urls", self.etcd_url,
            "--listen-peer-urls", "http://127.0.0.1:%d" % peer,
            "--initial-advertise-peer-urls", "http://127.0.0.1:%d" % peer,
            "--initial-cluster", "default=http://127.0.0.1:%d" % peer,
            "--log-level", "warn"])

    def _apiserver(self):
        d = self.dir
        self.port = free_port()
        self.url = "https://127.0.0.1:%d" % self.port
        self.spawn("kube-apiserver", [
            os.path.join(self.bin, "kube-apiserver"),
            "--etcd-servers", self.etcd_url,
            "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
            "--secure-port", str(self.port), "--cert-dir", os.path.join(d, "certs"),
            "--tls-cert-file", os.path.join(d, "apiserver.crt"),
            "--tls-private-key-file", os.path.join(d, "apiserver.key"),
            "--token-auth-file", os.path.join(d, "tokens.csv"),
            "--authorization-mode", "Node,RBAC",
            "--service-account-key-file", os.path.join(d, "sa.pub"),
            "--service-account-signing-key-file", self.sa_key,
            "--service-account-issuer", "https://kubernetes.default.svc",
            "--service-cluster-ip-range", "10.96.0.0/24",
            "--endpoint-reconciler-type", "none",
            # nodes without kubelets: nobody would lift the not-ready taint
            "--disable-admission-plugins", "TaintNodesByCondition",
            "--profiling=false", "--v=1"])
        self.kubeconfig = self.write_kubeconfig("admin", ADMIN_TOKEN)
        self._wait_ready()

    def _wait_ready(self):
        def ready():
            if not self.procs["kube-apiserver"].alive():
                raise AssertionError("kube-apiserver exited")
            self._drop_conn()
            return self.request("GET", "/readyz", raw=True) == "ok"
        wait_for(ready, 90, "kube-apiserver /readyz", 0.3)
        self._drop_conn()

    def _controller_manager(self):
        kc = self.write_kubeconfig("kcm", self.tokens["system:kube-controller-manager"])
        self.spawn("kube-controller-manager", [
            os.path.join(self.bin, "kube-controller-manager"),
            "--kubeconfig", kc, "--authentication-kubeconfig", kc,
            "--authorization-kubeconfig", kc,
            "--use-service-account-credentials=true",
            "--service-account-private-key-file", self.sa_key,
            "--root-ca-file", self.ca,
            # no kubelets renew node leases: keep the nodes, never evict
            "--controllers", "*,-nodelifecycle",
            "--leader-elect=false", "--secure-port=0", "--v=1"])

    def start_scheduler(self, config_text):
        """Starts kube-scheduler with the KubeSchedulerConfiguration YAML
        @config_text (clientConnection.kubeconfig filled in when absent)."""
        import yaml
        cfg = yaml.safe_load(config_text)
        cfg.setdefault("clientConnection", {}).setdefault(
            "kubeconfig", self.write_kubeconfig("scheduler",
                                                self.tokens["system:kube-scheduler"]))
        cfg.setdefault("leaderElection", {"leaderElect": False})
        path = os.path.join(self.dir, "scheduler-config.yaml")
        with open(path, "w") as f:
            yaml.safe_dump(cfg, f)
        return self.spawn("kube-scheduler", [
            os.path.join(self.bin, "kube-scheduler"), "--config", path,
            "--secure-port=0", "--v=1"])

    # --- access ---------------------------------------------------------
    def write_kubeconfig(self, name, token):
        path = os.path.join(self.dir, "kubeconfig-%s" % name)
        cfg = {"apiVersion": "v1", "kind": "Config",
               "clusters": [{"name": "test", "cluster": {
                   "server": self.url, "certificate-authority": self.ca}}],
               "users": [{"name": name, "user": {"token": token}}],
               "contexts": [{"name": "test", "context": {"cluster": "test", "user": name}}],
               "current-context": "test"}
        with open(path, "w") as f:
            json.dump(cfg, f)
        return path

    def _drop_conn(self):
        c = getattr(self._local, "conn", None)
        self._local.conn = None
        if c is not None:
            c.close()

    def _conn(self):
        c = getattr(self._local, "conn", None)
        if c is None:
            ctx = ssl.create_default_context(cafile=self.ca)
            c = http.client.HTTPSConnection("127.0.0.1", self.port, context=ctx, timeout=30)
            self._local.conn = c
        return c

    def request(self, method, path, body=None, token=ADMIN_TOKEN, raw=False,
                content_type="application/json"):
        """One API call over a kept-alive connection (one per thread); JSON
        body in and out (@raw: the text). Raises ApiError on status >= 400."""
        data = None
        if body is not None:
            data = body if isinstance(body, (bytes, str)) else json.dumps(body)
        headers = {"Authorization": "Bearer " + token, "Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = content_type
        for attempt in (0, 1):
            c = self._conn()
            try:
                c.request(method, path, body=data, headers=headers)
                r = c.getresponse()
                text = r.read().decode(errors="replace")
                break
            except (http.client.HTTPException, OSError):
                self._drop_conn()
                if attempt:
                    raise
        if r.status >= 400:
            raise ApiError(r.status, method, path, text)
        if raw:
            return text
        return json.loads(text) if text else None

    def api(self, method, path, body=None, **kw):
        return self.request(method, path, body, **kw)

    def patch(self, path, body, kind="merge"):
        ct = {"merge": "application/merge-patch+json",
              "strategic": "application/strategic-merge-patch+json",
              "json": "application/json-patch+json"}[kind]
        return self.request("PATCH", path, body, content_type=ct)

    def kubectl(self, *args, input=None, check=True, timeout=120):
        r = subprocess.run([os.path.join(self.bin, "kubectl"), "--kubeconfig", self.kubeconfig,
                            *args], input=input, capture_output=True, text=True,
                           timeout=timeout)
        if check and r.returncode != 0:
            raise AssertionError("kubectl %s: %s" % (" ".join(args), r.stderr))
        return r.stdout

    def ensure_namespace(self, ns):
        try:
            self.request("POST", "/api/v1/namespaces",
                         {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        except ApiError as e:
            if e.status != 409:
                raise

    def create_nodes(self, names, labels=None, annotations=None, capacity=None,
                     threads=4):
        """Creates Node objects @names (Ready, with @capacity as capacity and
        allocatable; default 64 CPUs, 512Gi, 110 pods) from @threads
        connections at once; hundreds take a few seconds."""
        cap = {"cpu": "64", "memory": "512Gi", "pods": "110"}
        cap.update(capacity or {})
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())

        def one(name):
            lbl = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}
            lbl.update(labels(name) if callable(labels) else (labels or {}))
            ann = annotations(name) if callable(annotations) else (annotations or {})
            self.request("POST", "/api/v1/nodes", {
                "apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name, "labels": lbl, "annotations": ann},
                "status": {"capacity": cap, "allocatable": cap, "conditions": [{
                    "type": "Ready", "status": "True", "reason": "KubeletReady",
                    "lastHeartbeatTime": now, "lastTransitionTime": now}]}})

        in_threads(names, threads, one, finish=self._drop_conn)

    def node_status(self, name, volumes_in_use=()):
        """What a kubelet's status update does: a Ready heartbeat and the
        node's volumesInUse. The attach-detach controller re-reads which
        volumes a node still mounts on such an update; without one it waits
        6 minutes before detaching a volume whose attach was uncertain."""
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        self.request("PATCH", "/api/v1/nodes/%s/status" % name, {"status": {
            "volumesInUse": list(volumes_in_use),
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                            "lastHeartbeatTime": now}]}},
            content_type="application/strategic-merge-patch+json")

    def sa_token(self, ns, sa, seconds=7200):
        """A bound token of ServiceAccount @ns/@sa (TokenRequest); creates the
        namespace and the account if missing."""
        key = (ns, sa)
        if key not in self._sa_tokens:
            self.ensure_namespace(ns)
            try:
                self.request("POST", "/api/v1/namespaces/%s/serviceaccounts" % ns, {
                    "apiVersion": "v1", "kind": "ServiceAccount",
                    "metadata": {"name": sa, "namespace": ns}})
            except ApiError as e:
                if e.status != 409:
                    raise
            tr = self.request("POST", "/api/v1/namespaces/%s/serviceaccounts/%s/token" % (ns, sa),
                              {"apiVersion": "authentication.k8s.io/v1",
                               "kind": "TokenRequest",
                               "spec": {"expirationSeconds": seconds}})
            self._sa_tokens[key] = tr["status"]["token"]
            canary.register_value("k8s-sa-token", tr["status"]["token"])  # a JWT: no canary
        return self._sa_tokens[key]

    def sa_kubeconfig(self, ns, sa):
        return self.write_kubeconfig("sa-%s-%s" % (ns, sa), self.sa_token(ns, sa))

    def events(self, ns, kind=None, name=None):
        """The events of namespace @ns (about object @kind/@name if given)."""
        sel = []
        if kind:
            sel.append("involvedObject.kind=%s" % kind)
        if name:
            sel.append("involvedObject.name=%s" % name)
        q = "?fieldSelector=" + urllib.parse.quote(",".join(sel)) if sel else ""
        return self.request("GET", "/api/v1/namespaces/%s/events%s" % (ns, q))["items"]
