"""Throughput of kube-scheduler v1.31 with gantry-scheduler as its extender,
on the real control plane of tests/k8s/control_plane.py (etcd +
kube-apiserver + kube-scheduler, no kubelet: nodes are API objects).

For each scale (NODES:PODS; fake nodes of 8 GPUs with the fabric labels
gantry-scheduler reads, 32 per leaf) and each round, kube-scheduler runs
three ways against the same nodes, one after the other, in an order that
rotates from round to round (round 1 none, noop, gantry; round 2 noop,
gantry, none; ...: no mode always runs first on a fresh API server or last
on one grown by the previous modes' pods):
  none   no extender;
  noop   bench/scheduler/noop_extender (filter answers its input,
         prioritize zero scores, kube-scheduler binds), served like gantry's
         entry: HTTPS, client certificate, nodeCacheCapable;
  gantry gantry-scheduler with the extender entry of
         docs/kube-scheduler-config.yaml (filter + prioritize + bind, its
         TLS, httpTimeout, managedResources...), only its URL and files set.
Each mode gets PODS one-GPU pods created while no kube-scheduler runs, then
kube-scheduler starts and a watch stamps each pod's nodeName: pods/s is
(PODS - 1) / (last bound - first bound), the queue drained at full speed
(kube-scheduler's start and informer sync are left out, printed apart).
Only the mode's own extender runs during its mode (no watch of an idle
gantry-scheduler loads the API server in the other modes).

Prints pods/s of each mode, the ratios gantry / noop and noop / none, p50
and p99 of each verb from gantry-scheduler's /metrics (and of a bind's two
parts: its wait for a bind worker, its Binding POST), and `uptime` with
each round (the machine may be shared: run it on a quiet one for figures).
Per scale, the FIGURE is the median of the per-round ratios; the mean is
printed beside it.

Environment: GANTRY_BENCH_SCHED_SCALES (default "500:4000,5000:2000": 4,000
one-GPU pods fill the 500 nodes' 8 GPUs; 2,000 at 5,000 nodes make rounds of
~15 s, where 1,000 made rounds of 7-8 s whose ratios swung by +-0.15), GANTRY_BENCH_SCHED_ROUNDS
(default 3), GANTRY_SCHEDULER / GANTRY_NOOP_EXTENDER
(the binaries), GANTRY_BENCH_SCHED_THREADS (gantry-scheduler --threads, unset:
its default), GANTRY_K8S_BIN. Without the Kubernetes binaries or etcd it
skips loudly (exit 77)."""
import http.client
import json
import os
import shutil
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(SOURCE, "tests", "k8s"))
import control_plane as cp  # noqa: E402
import yaml  # noqa: E402
sys.path.insert(0, os.path.join(HERE, ".."))
from figure import figure  # noqa: E402
from proc_cpu import process_cpu_seconds, stat_cpu  # noqa: E402

BUILD = os.environ.get("GANTRY_BUILD_DIR", os.path.join(SOURCE, "build"))
GANTRY = os.environ.get("GANTRY_SCHEDULER", os.path.join(BUILD, "bin", "gantry-scheduler"))
NOOP = os.environ.get("GANTRY_NOOP_EXTENDER", os.path.join(BUILD, "bench", "noop_extender"))
PKI_SCRIPT = os.path.join(SOURCE, "tests", "fakeapi", "make_test_pki.sh")
SCALES = [tuple(int(x) for x in s.split(":")) for s in
          os.environ.get("GANTRY_BENCH_SCHED_SCALES", "500:4000,5000:2000").split(",")]
ROUNDS = int(os.environ.get("GANTRY_BENCH_SCHED_ROUNDS", "3"))
THREADS = os.environ.get("GANTRY_BENCH_SCHED_THREADS")
# kube-scheduler's own API client: its default (50 QPS, burst 100) caps the
# Binding POSTs it sends itself (modes none and noop) at ~50 pods/s while
# gantry-scheduler binds with its own client: both would measure that limiter,
# not the extender. "default" keeps it.
QPS = os.environ.get("GANTRY_BENCH_SCHED_QPS", "1000")
NODES_PER_LEAF = 32
MODES = ("none", "noop", "gantry")
# another gantry-scheduler binary (an older build) run as a fourth mode,
# "before", for before/after figures in the same run
BEFORE = os.environ.get("GANTRY_BENCH_SCHED_BEFORE")
if BEFORE:
    MODES += ("before",)


def cpu_seconds(plane, names):
    """{name: user + system CPU seconds so far} of the daemons @names."""
    out = {}
    for name in names:
        proc = plane.procs.get(name)
        if not proc or not proc.alive():
            continue
        try:
            out[name] = process_cpu_seconds(proc.popen.pid)
        except (OSError, IndexError, ValueError):
            pass
    return out


def thread_cpu(plane, name):
    """{thread group: user + system CPU seconds so far} of the daemon @name's
    threads, grouped by thread name: "http" (libmicrohttpd's and the TLS
    front's "tls-conn": TLS handshakes, h2, the HTTP/1.1 relay, requests,
    filter and prioritize), "bind-worker" (the Binding
    POSTs), "inf:pods" (the pod watch), "other" (the rest)."""
    proc = plane.procs.get(name)
    out = {}
    if not proc or not proc.alive():
        return out
    base = "/proc/%d/task" % proc.popen.pid
    try:
        tids = os.listdir(base)
    except OSError:
        return out
    for tid in tids:
        try:
            comm, secs = stat_cpu("%s/%s/stat" % (base, tid))
        except (OSError, IndexError, ValueError):
            continue
        group = ("http" if comm.startswith("MHD") or comm == "tls-conn" else
                 comm if comm in ("bind-worker", "inf:pods") else "other")
        out[group] = out.get(group, 0) + secs
    return out


def uptime():
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


class Watch:
    """Stamps the first time each pod of @ns is seen with a nodeName: a watch
    of the bound pods (fieldSelector spec.nodeName!=). The API server cuts a
    watcher that falls behind ("Forcing ... watcher close due to
    unresponsiveness", likely on a loaded 2-core machine): then a list stamps
    the pods bound meanwhile (a little late) and the watch starts again from
    that list."""

    SELECT = "fieldSelector=spec.nodeName%21%3D"

    def __init__(self, plane, ns):
        self.plane, self.ns = plane, ns
        self.bound = {}
        self.cuts = 0
        self.closed = False
        self.conn = None
        self.cond = threading.Condition()
        self.rv = self._list()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _stamp(self, name):
        with self.cond:
            if name not in self.bound:
                self.bound[name] = time.monotonic()
                self.cond.notify_all()

    def _list(self):
        got = self.plane.api("GET", "/api/v1/namespaces/%s/pods?%s" % (self.ns, self.SELECT))
        for pod in got["items"]:
            self._stamp(pod["metadata"]["name"])
        return got["metadata"]["resourceVersion"]

    def _watch(self):
        ctx = ssl.create_default_context(cafile=self.plane.ca)
        self.conn = http.client.HTTPSConnection("127.0.0.1", self.plane.port, context=ctx,
                                                timeout=600)
        self.conn.request("GET", "/api/v1/namespaces/%s/pods?watch=1&resourceVersion=%s&%s"
                          % (self.ns, self.rv, self.SELECT),
                          headers={"Authorization": "Bearer " + cp.ADMIN_TOKEN})
        resp = self.conn.getresponse()
        while True:
            line = resp.readline()
            if not line:
                return
            ev = json.loads(line)
            if ev.get("type") == "ERROR":
                return
            md = ev.get("object", {}).get("metadata", {})
            self.rv = md.get("resourceVersion", self.rv)
            if ev.get("type") in ("ADDED", "MODIFIED"):
                self._stamp(md.get("name"))

    def _run(self):
        while not self.closed:
            try:
                self._watch()
            except (OSError, ValueError, AttributeError, http.client.HTTPException):
                pass  # closed by close() (AttributeError: http.client's fp already gone)
            if self.closed:
                return
            self.cuts += 1
            try:
                self.rv = self._list()
            except (OSError, ValueError, cp.ApiError, http.client.HTTPException):
                self.plane._drop_conn()
                time.sleep(0.2)

    def wait(self, count, timeout):
        deadline = time.monotonic() + timeout
        with self.cond:
            while len(self.bound) < count and time.monotonic() < deadline:
                self.cond.wait(1)
        return len(self.bound)

    def close(self):
        self.closed = True
        try:
            self.conn.sock.shutdown(2)
        except (OSError, AttributeError):
            pass
        if self.conn:
            self.conn.close()
        self.thread.join(10)


def histogram_quantiles(text, name, key="verb"):
    """{verb: (count, p50, p99)} from a Prometheus text histogram @name, by
    its label @key ("" when it has none; the upper bound of the bucket where
    each quantile falls)."""
    buckets = {}
    for line in text.splitlines():
        if not line.startswith(name + "_bucket{"):
            continue
        labels, value = line[len(name) + 8:].rsplit("} ", 1)
        kv = dict(p.split("=", 1) for p in labels.split(","))
        verb = kv.get(key, "").strip('"')
        le = kv["le"].strip('"')
        buckets.setdefault(verb, []).append((float("inf") if le == "+Inf" else float(le),
                                             float(value)))
    out = {}
    for verb, bs in buckets.items():
        bs.sort()
        total = bs[-1][1]
        if not total:
            continue

        def q(p):
            for le, c in bs:
                if c >= p * total:
                    return le
            return float("inf")
        out[verb] = (int(total), q(0.5), q(0.99))
    return out


class Bench:
    def __init__(self):
        self.pki = tempfile.mkdtemp(prefix="gantry-bench-sched-%d-" % os.getpid())
        subprocess.run(["bash", PKI_SCRIPT, self.pki], check=True, capture_output=True,
                       timeout=60)
        self.plane = cp.ControlPlane("bench-kube-sched")
        self.plane.start()
        self.nodes = 0
        self.results = []  # (nodes, pods, round, {mode: (pods/s, start->last s)}, verbs, uptime)
        with open(os.path.join(SOURCE, "docs", "kube-scheduler-config.yaml")) as f:
            self.recommended = yaml.safe_load(f)

    def f(self, name):
        return os.path.join(self.pki, name)

    def close(self):
        self.plane.stop()
        shutil.rmtree(self.pki, ignore_errors=True)

    def grow(self, n):
        """Nodes node-0..node-(n-1) (adds those missing) and the topology."""
        p = self.plane
        p.create_nodes(["node-%d" % i for i in range(self.nodes, n)],
                       labels=lambda nm: {
                           "network.topology.nvidia.com/leaf":
                               "leaf-%d" % (int(nm.split("-")[1]) // NODES_PER_LEAF),
                           "network.topology.nvidia.com/spine": "spine-0",
                           "gantry.io/nic-gbps": "400"},
                       capacity={"nvidia.com/gpu": "8"}, threads=8)
        self.nodes = n
        leaves = (n + NODES_PER_LEAF - 1) // NODES_PER_LEAF
        self.topology = os.path.join(p.dir, "topology.json")
        with open(self.topology, "w") as f:
            json.dump({"defaults": {"nicGbps": 400},
                       "leaves": [{"name": "leaf-%d" % i, "spine": "spine-0",
                                   "uplinkGbps": 12800} for i in range(leaves)],
                       "backends": []}, f)

    def extender_config(self, port, bind):
        ext = dict(self.recommended["extenders"][0])
        ext["urlPrefix"] = "https://127.0.0.1:%d/" % port
        ext["tlsConfig"] = {"certFile": self.f("client.crt"), "keyFile": self.f("client.key"),
                            "caFile": self.f("ca.crt")}
        if not bind:
            ext.pop("bindVerb", None)
        return ext

    def https_get(self, port, path):
        ctx = ssl.create_default_context(cafile=self.f("ca.crt"))
        ctx.load_cert_chain(self.f("client.crt"), self.f("client.key"))
        c = http.client.HTTPSConnection("127.0.0.1", port, timeout=10, context=ctx)
        try:
            c.request("GET", path)
            r = c.getresponse()
            return r.status, r.read().decode()
        finally:
            c.close()

    def start_extender(self, mode):
        p = self.plane
        if mode == "none":
            return None
        port = cp.free_port()
        if mode == "noop":
            p.spawn("noop", [NOOP, str(port), self.f("server.crt"), self.f("server.key"),
                             self.f("ca.crt")])
            cp.wait_for(lambda: "serving" in p.log("noop"), 30, "noop_extender to serve")
            return port
        argv = [BEFORE if mode == "before" else GANTRY, "--listen", "127.0.0.1:%d" % port,
                "--kubeconfig", p.kubeconfig,
                "--topology", self.topology, "--tls-cert", self.f("server.crt"),
                "--tls-key", self.f("server.key"), "--client-ca", self.f("ca.crt")]
        if THREADS:
            argv += ["--threads", THREADS]
        p.spawn(mode, argv)

        def ready():
            if not p.procs[mode].alive():
                raise AssertionError("gantry-scheduler exited: " + p.log(mode)[-2000:])
            return self.https_get(port, "/readyz")[0] == 200
        cp.wait_for(ready, 120, "gantry-scheduler /readyz", 0.3)
        return port

    def create_pods(self, ns, count):
        p = self.plane
        p.ensure_namespace(ns)
        p.api("POST", "/api/v1/namespaces/%s/serviceaccounts" % ns, {
            "apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}})

        def create(name):
            p.api("POST", "/api/v1/namespaces/%s/pods" % ns, {
                "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                "spec": {"automountServiceAccountToken": False,
                         "containers": [{"name": "c", "image": "registry.invalid/x",
                                         "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}})
        cp.in_threads(["pod-%d" % i for i in range(count)], 8, create, finish=p._drop_conn)

    def delete_pods(self, ns):
        p = self.plane
        p.api("DELETE", "/api/v1/namespaces/%s/pods?gracePeriodSeconds=0" % ns)
        cp.wait_for(lambda: not p.api("GET", "/api/v1/namespaces/%s/pods?limit=1" % ns)["items"],
                    300, "the pods of %s to be deleted" % ns, 0.5)

    def run_mode(self, mode, nodes, pods, rnd):
        p = self.plane
        ns = "n%d-r%d-%s" % (nodes, rnd, mode)
        self.create_pods(ns, pods)
        port = self.start_extender(mode)
        cfg = {"apiVersion": "kubescheduler.config.k8s.io/v1",
               "kind": "KubeSchedulerConfiguration",
               "profiles": self.recommended["profiles"]}
        if QPS != "default":
            cfg["clientConnection"] = {"qps": float(QPS), "burst": int(float(QPS) * 2)}
        if port:
            cfg["extenders"] = [self.extender_config(port, mode != "noop")]
        watch = Watch(p, ns)
        verbs = {}
        daemons = ("etcd", "kube-apiserver", "kube-scheduler", mode)
        try:
            cpu0, thr0 = cpu_seconds(p, daemons), thread_cpu(p, mode)
            t0 = time.monotonic()
            p.start_scheduler(yaml.safe_dump(cfg))
            got = watch.wait(pods, 120 + pods / 2.0)
            cpu1, thr1 = cpu_seconds(p, daemons), thread_cpu(p, mode)
            cpu = {n: (cpu1[n] - cpu0.get(n, 0)) * 1000.0 / pods for n in cpu1}
            thr = {n: (thr1[n] - thr0.get(n, 0)) * 1000.0 / pods for n in thr1}
            if got < pods:
                raise AssertionError("%s: %d of %d pods bound in time" % (mode, got, pods))
            stamps = sorted(watch.bound.values())
            if watch.cuts:
                print("    (the API server cut the bench's watch %d times: relisted)" % watch.cuts)
            rate = (pods - 1) / max(stamps[-1] - stamps[0], 1e-6)
            conns = None
            if port:
                conns = len(subprocess.run(["ss", "-tnH", "state", "established",
                                            "( sport = :%d )" % port], capture_output=True,
                                           text=True).stdout.splitlines())
            api_conns = None
            if mode in p.procs and p.procs[mode].alive():
                api_conns = subprocess.run(
                    ["ss", "-tnpH", "state", "established", "( dport = :%d )" % p.port],
                    capture_output=True, text=True).stdout.count(
                        "pid=%d," % p.procs[mode].popen.pid)
            print("    %s: CPU seconds per 1,000 pods (start to last bound): %s; %s connections "
                  "to the extender, %s from it to the API server" % (
                      mode, ", ".join("%s %.2f" % (n, cpu[n]) for n in daemons if n in cpu),
                      conns, api_conns))
            if mode in ("gantry", "before") and thr:
                print("    %s: its threads' CPU seconds per 1,000 pods: %s" % (
                    mode, ", ".join("%s %.2f" % (n, thr[n]) for n in
                                    ("http", "bind-worker", "inf:pods", "other") if n in thr)))
            if mode in ("gantry", "before"):
                status, text = self.https_get(port, "/metrics")
                if status == 200:
                    q = histogram_quantiles(text, "gantry_scheduler_request_seconds")
                    # a bind's two parts: its wait for a bind worker, its
                    # Binding POST to the API server
                    q.update({"bind queue wait": x for x in histogram_quantiles(
                        text, "gantry_scheduler_bind_queue_wait_seconds").values()})
                    q.update({"bind POST": x for r, x in histogram_quantiles(
                        text, "gantry_kube_request_seconds", "resource").items()
                        if r == "pods/binding"})
                    verbs = {(v if mode == "gantry" else "before " + v): x for v, x in q.items()}
                    # by the protocol ALPN chose (main's binary before h2: unlabelled)
                    accepted = {}
                    for line in text.splitlines():
                        if line.startswith("gantry_scheduler_connections_total"):
                            name = line.split()[0]
                            proto = name.split('protocol="')[1].split('"')[0] \
                                if 'protocol="' in name else "any"
                            accepted[proto] = accepted.get(proto, 0) + int(float(line.split()[-1]))
                    if accepted:
                        print("    %s: %d TLS connections accepted from kube-scheduler (each a "
                              "handshake): %s" % (mode, sum(accepted.values()), ", ".join(
                                  "%s %d" % kv for kv in sorted(accepted.items()))))
        finally:
            watch.close()
            if "kube-scheduler" in p.procs:
                p.stop_proc("kube-scheduler")
            for name in ("noop", "gantry", "before"):
                if name in p.procs:
                    p.stop_proc(name)
        self.delete_pods(ns)
        return rate, stamps[-1] - t0, stamps[0] - t0, verbs

    def run(self):
        for nodes, pods in SCALES:
            self.grow(nodes)
            for rnd in range(1, ROUNDS + 1):
                figs, verbs = {}, {}
                k = (rnd - 1) % len(MODES)
                for mode in MODES[k:] + MODES[:k]:
                    rate, total, first, v = self.run_mode(mode, nodes, pods, rnd)
                    figs[mode] = (rate, total, first)
                    verbs.update(v)
                    print("  %5d nodes round %d %-6s %7.1f pods/s (first bound %.1f s, last "
                          "%.1f s after kube-scheduler's start)" % (
                              nodes, rnd, mode, rate, first, total), flush=True)
                up = uptime()
                self.results.append((nodes, pods, rnd, figs, verbs, up))
                self.report_round(self.results[-1])

    @staticmethod
    def report_round(res):
        nodes, pods, rnd, figs, verbs, up = res
        g, n, z = figs["gantry"][0], figs["noop"][0], figs["none"][0]
        print("%d nodes, %d pods, round %d: none %.1f, noop %.1f, gantry %.1f pods/s; "
              "gantry/noop %.2f, noop/none %.2f   [%s]" % (nodes, pods, rnd, z, n, g, g / n, n / z,
                                                          up), flush=True)
        if "before" in figs:
            print("    before (%s): %.1f pods/s, before/noop %.2f" % (BEFORE, figs["before"][0],
                                                                  figs["before"][0] / n))
        for verb in ("filter", "prioritize", "bind", "bind queue wait", "bind POST",
                     "before filter", "before prioritize", "before bind"):
            if verb in verbs:
                c, p50, p99 = verbs[verb]
                print("    gantry %-17s n=%-6d p50 <= %gs  p99 <= %gs" % (verb, c, p50, p99))

    def summary(self):
        print("\n| nodes | pods | round | none pods/s | noop pods/s | gantry pods/s | "
              "gantry/noop | noop/none | gantry filter p50/p99 | prioritize p50/p99 | "
              "bind p50/p99 | uptime |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for nodes, pods, rnd, figs, verbs, up in self.results:
            g, n, z = figs["gantry"][0], figs["noop"][0], figs["none"][0]
            vv = ["%g/%g s" % verbs[v][1:] if v in verbs else "-"
                  for v in ("filter", "prioritize", "bind")]
            print("| %d | %d | %d | %.1f | %.1f | %.1f | %.2f | %.2f | %s | %s | %s | %s |" % (
                nodes, pods, rnd, z, n, g, g / n, n / z, vv[0], vv[1], vv[2],
                up.split("load average:")[-1].strip()))
        # per scale, the median over rounds of each ratio (the mean beside
        # it): one round on a busy machine can swing either way
        for nodes in sorted({r[0] for r in self.results}):
            rs = [r[3] for r in self.results if r[0] == nodes]
            gn = [f["gantry"][0] / f["noop"][0] for f in rs]
            nz = [f["noop"][0] / f["none"][0] for f in rs]
            line = ("%d nodes, %d rounds: gantry/noop median %.2f mean %.2f, noop/none median "
                    "%.2f mean %.2f" % (nodes, len(rs), statistics.median(gn),
                                        statistics.mean(gn), statistics.median(nz),
                                        statistics.mean(nz)))
            if all("before" in f for f in rs):
                bn = [f["before"][0] / f["noop"][0] for f in rs]
                line += ", before/noop median %.2f mean %.2f" % (statistics.median(bn),
                                                                 statistics.mean(bn))
            print(line + "   [%s]" % uptime())
            figure("extender_vs_noop_%dnodes" % nodes, statistics.median(gn), ">=0.9",
                   "pods/s to Bound under kube-scheduler with gantry-scheduler (filter, prioritize, "
                   "bind) ÷ with the no-op extender, median of %d rounds' ratios (mean %.3f)" % (
                       len(rs), statistics.mean(gn)))
            figure("noop_vs_no_extender_%dnodes" % nodes, statistics.median(nz), None,
                   "pods/s with the no-op extender ÷ with no extender, median of %d rounds' "
                   "ratios (mean %.3f)" % (len(rs), statistics.mean(nz)))


def main():
    reason = cp.skip_reason()
    for path, what in ((GANTRY, "gantry-scheduler"), (NOOP, "noop_extender")):
        if not reason and not os.access(path, os.X_OK):
            reason = "%s not built (%s)" % (what, path)
    if reason:
        sys.stderr.write("\n*** SKIPPED: bench_scheduler_kube did not run: %s ***\n\n" % reason)
        print("SKIPPED: %s" % reason)
        sys.exit(cp.SKIP_CODE)
    print("kube-scheduler throughput, scales %s, %d rounds, kube-scheduler client QPS %s, "
          "gantry-scheduler --threads %s; %s" % (SCALES, ROUNDS, QPS, THREADS or "default",
                                                 uptime()), flush=True)
    b = Bench()
    try:
        b.run()
        b.summary()
    except BaseException:
        b.plane.print_logs()
        raise
    finally:
        b.close()


if __name__ == "__main__":
    main()
