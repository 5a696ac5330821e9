#!/usr/bin/env python3
"""gantry-scheduler at cluster scale on the real control plane (etcd +
kube-apiserver v1.31 of tests/k8s/control_plane.py, no kubelet): NODES 8-GPU
nodes with gantry's fabric labels and PODS pods bound to them (nodeName set,
GPU requests, one in twenty reading a dataset PVC with a bandwidth annotation),
objects the size real ones are (labels, annotations, images, env, the
ServiceAccount token volume, managedFields).

Prints, each with `uptime`, its target and PASS/FAIL:
  - the create rate of the objects (Python threads over kept-alive
    connections),
  - RSS (/proc VmRSS, VmHWM) of a gantry-scheduler that watched the cluster
    grow: empty, after the nodes, after the pods; bytes per node and per pod,
  - start -> /readyz of a fresh gantry-scheduler on the full cluster
    (target < 60 s), split into the list of nodes, the list of pods (the
    informers' kube.list log lines) and the rest,
  - filter + prioritize in process (the extender's own
    gantry_scheduler_request_seconds histogram; target p99 < 5 ms) with
    nodeCacheCapable requests of the size kube-scheduler sends at NODES
    nodes (numFeasibleNodesToFind: max(100, NODES * max(5, 50 - NODES/125) %)),
    and with every node,
  - the watch under churn: CHURN pods created and deleted per minute for
    CHURN_SECONDS; lag from a create's answer to the informer applying its
    resourceVersion (gantry_kube_resource_version{kind="Pod"} polled every
    20 ms), p50/p99/max; re-lists during the churn (target 0); RSS sampled
    during the churn (target: growth under 5 %).

Usage: bench_scale.py [--nodes 10000] [--pods 100000] [--churn-per-min 1000]
                      [--churn-seconds 180] [--threads 16]
On this 2-core machine the full size takes about 15-25 minutes (most of it
creating 110,000 objects). Exit 77 (skipped) without the k8s binaries.
"""
import argparse
import http.client
import json
import os
import re
import ssl
import subprocess
import sys
import threading
import time
import urllib.request
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "k8s"))
import control_plane as cp  # noqa: E402
sys.path.insert(0, os.path.join(HERE, ".."))
from figure import figure  # noqa: E402
from proc_cpu import process_cpu_seconds  # noqa: E402

BUILD = os.environ.get("GANTRY_BUILD_DIR", os.path.join(cp.SOURCE, "build"))
SCHEDULER_BIN = os.environ.get("GANTRY_SCHEDULER", os.path.join(BUILD, "bin", "gantry-scheduler"))
NAMESPACES = 50
NODES_PER_LEAF = 32
GPUS = 8
NIC = 400
READ_GBPS = 2
# the storage side leaves room for the pods that read (one in twenty at
# READ_GBPS each) and for the ones the bench filters
STORAGE_GBPS = 16000
failures = []


def uptime():
    with open("/proc/loadavg") as f:
        return "load %s" % " ".join(f.read().split()[:3])


def result(name, value, target=None, ok=None):
    """One line of the report; the headline numbers also get a FIGURE line
    (bench/figure.py) for the summary of `make bench`."""
    verdict = "" if ok is None else (" PASS" if ok else " FAIL")
    if ok is False:
        failures.append(name)
    print("RESULT %-44s %s%s%s  [%s]" % (name, value, "  target " + target if target else "",
                                         verdict, uptime()), flush=True)


def proc_mem(pid):
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM"):
                out[k] = int(v.split()[0]) * 1024
    return out


# --- objects ---------------------------------------------------------------
def node_obj(i):
    name = "gpu-%05d" % i
    leaf = "leaf-%d" % (i // NODES_PER_LEAF)
    now = "2026-11-26T12:00:00Z"
    cap = {"cpu": "192", "memory": "2113456Mi", "pods": "110", "ephemeral-storage": "3750Gi",
           "hugepages-1Gi": "0", "hugepages-2Mi": "0", "nvidia.com/gpu": str(GPUS),
           "rdma/rdma_shared_device_a": "63"}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {
        "name": name,
        "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                   "kubernetes.io/arch": "amd64", "beta.kubernetes.io/arch": "amd64",
                   "beta.kubernetes.io/os": "linux",
                   "node.kubernetes.io/instance-type": "gpu-h100-8x",
                   "topology.kubernetes.io/region": "eu-west", "topology.kubernetes.io/zone": "eu-west-1a",
                   "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.count": str(GPUS),
                   "network.topology.nvidia.com/leaf": leaf,
                   "network.topology.nvidia.com/spine": "spine-%d" % (i // 1024),
                   "network.topology.nvidia.com/accelerator": "nvl-%d" % (i // 8),
                   "gantry.io/nic-gbps": str(NIC), "gantry.io/nvmeof-transports": "rdma"},
        "annotations": {"node.alpha.kubernetes.io/ttl": "0",
                        "volumes.kubernetes.io/controller-managed-attach-detach": "true",
                        "csi.volume.kubernetes.io/nodeid": json.dumps({"csi.gantry.io": name}),
                        "nfd.node.kubernetes.io/feature-labels": "cpu-cpuid.AVX512F,pci-10de.present"}},
        "spec": {"podCIDR": "10.%d.%d.0/24" % (i // 256, i % 256),
                 "podCIDRs": ["10.%d.%d.0/24" % (i // 256, i % 256)]},
        "status": {"capacity": cap, "allocatable": cap,
                   "conditions": [{"type": t, "status": s, "reason": r, "message": m,
                                   "lastHeartbeatTime": now, "lastTransitionTime": now}
                                  for t, s, r, m in (
                                      ("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
                                      ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                                      ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
                                      ("Ready", "True", "KubeletReady", "kubelet is posting ready status"))],
                   "addresses": [{"type": "InternalIP", "address": "10.200.%d.%d" % (i // 256, i % 256)},
                                 {"type": "Hostname", "address": name}],
                   "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
                   "nodeInfo": {"machineID": uuid.UUID(int=i).hex, "systemUUID": str(uuid.UUID(int=i)),
                                "bootID": str(uuid.UUID(int=i + 1)), "kernelVersion": "6.1.0-27-amd64",
                                "osImage": "Debian GNU/Linux 12 (bookworm)", "containerRuntimeVersion": "containerd://1.7.22",
                                "kubeletVersion": "v1.31.2", "kubeProxyVersion": "", "operatingSystem": "linux",
                                "architecture": "amd64"},
                   "images": [{"names": ["registry.example/ml/train-%d@sha256:%064x" % (k, k),
                                         "registry.example/ml/train-%d:v%d" % (k, k)],
                               "sizeBytes": 8000000000 + k} for k in range(12)]}}


def pod_obj(ns, name, node, gpus, reads):
    job = name.rsplit("-", 1)[0]
    ann = {"kubectl.kubernetes.io/default-container": "worker",
           "prometheus.io/scrape": "true", "prometheus.io/port": "9400"}
    vols = []
    mounts = []
    if reads:
        ann["gantry.io/dataset-read-gbps"] = str(READ_GBPS)
        vols.append({"name": "data", "persistentVolumeClaim": {"claimName": "data", "readOnly": True}})
        mounts.append({"name": "data", "mountPath": "/data", "readOnly": True})
    res = {"cpu": "8", "memory": "64Gi"}
    if gpus:
        res["nvidia.com/gpu"] = str(gpus)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": name, "namespace": ns,
        "labels": {"app.kubernetes.io/name": "trainer", "app.kubernetes.io/part-of": "llm",
                   "batch.kubernetes.io/job-name": job, "job-name": job,
                   "batch.kubernetes.io/controller-uid": str(uuid.uuid5(uuid.NAMESPACE_DNS, job)),
                   "gantry.io/job": job},
        "annotations": ann},
        "spec": {"nodeName": node, "restartPolicy": "Never",
                 "containers": [{"name": "worker", "image": "registry.example/ml/train-3:v3",
                                 "command": ["python3", "-m", "train", "--config", "/etc/train/cfg.yaml"],
                                 "env": [{"name": "NCCL_%d" % k, "value": "value-%d" % k} for k in range(10)],
                                 "resources": {"requests": res, "limits": res},
                                 "volumeMounts": mounts},
                                {"name": "metrics", "image": "registry.example/dcgm-exporter:3.3",
                                 "ports": [{"containerPort": 9400, "name": "metrics"}],
                                 "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}],
                 "volumes": vols}}


# --- a small API client for many threads ------------------------------------
class Api:
    def __init__(self, plane):
        self.port = plane.port
        self.ctx = ssl.create_default_context(cafile=plane.ca)
        self.local = threading.local()

    def conn(self):
        c = getattr(self.local, "c", None)
        if c is None:
            c = self.local.c = http.client.HTTPSConnection("127.0.0.1", self.port, context=self.ctx,
                                                           timeout=120)
        return c

    def call(self, method, path, body=None):
        data = json.dumps(body) if body is not None else None
        hdr = {"Authorization": "Bearer " + cp.ADMIN_TOKEN, "Accept": "application/json",
               "Content-Type": "application/json"}
        for attempt in range(5):
            try:
                c = self.conn()
                c.request(method, path, body=data, headers=hdr)
                r = c.getresponse()
                text = r.read()
            except (http.client.HTTPException, OSError):
                self.local.c = None
                time.sleep(0.2 * (attempt + 1))
                continue
            # an API server short of CPU answers 429, 5xx, or an admission
            # plugin's 403 "unable to return a response in the time allotted"
            if r.status == 429 or r.status >= 500 or (r.status == 403 and b"time allotted" in text):
                time.sleep(0.2 * (attempt + 1))
                continue
            if r.status >= 400 and not (method == "POST" and r.status == 409):
                raise cp.ApiError(r.status, method, path, text.decode(errors="replace"))
            return json.loads(text) if text else None
        raise RuntimeError("%s %s: gave up after 5 attempts" % (method, path))


def create_many(api, items, threads):
    """POSTs (path, obj) @items from @threads threads; returns objects/s."""
    t0 = time.monotonic()
    cp.in_threads(items, threads, lambda item: api.call("POST", *item))
    return len(items) / (time.monotonic() - t0)


def pod_items(start, count, nodes):
    """Pods @start .. @start+@count: ten per node in turn (six of one GPU,
    four CPU-only: two GPUs stay free on every node, so that filter keeps
    nodes for prioritize to score), one in twenty reading its namespace's
    dataset PVC."""
    out = []
    for k in range(start, start + count):
        node = "gpu-%05d" % (k // 10 % nodes)
        ns = "team-%d" % (k % NAMESPACES)
        name = "job-%d-%d" % (k // 8, k % 8)
        out.append(("/api/v1/namespaces/%s/pods" % ns,
                    pod_obj(ns, name, node, 1 if k % 10 < 6 else 0, k % 20 == 0)))
    return out


# --- gantry-scheduler --------------------------------------------------------
class Scheduler:
    def __init__(self, plane, name, kubeconfig, topology):
        self.plane = plane
        self.name = name
        self.port = cp.free_port()
        self.base = "http://127.0.0.1:%d" % self.port
        argv = [SCHEDULER_BIN, "--listen", "127.0.0.1:%d" % self.port, "--kubeconfig", kubeconfig,
                "--topology", topology, "--log-level", "info", "--insecure-http",
                "--sync-timeout", "600"]
        self.t0 = time.monotonic()
        self.proc = plane.spawn(name, argv)
        self.pid = self.proc.popen.pid

    def get(self, path, timeout=5):
        with urllib.request.urlopen(self.base + path, timeout=timeout) as r:
            return r.read().decode()

    def ready(self):
        try:
            self.get("/readyz")
            return True
        except Exception:  # noqa: BLE001 - 503 while syncing
            return False

    def metrics(self):
        out = {}
        for line in self.get("/metrics").splitlines():
            if line.startswith("#") or not line.strip():
                continue
            k, _, v = line.rpartition(" ")
            try:
                out[k] = float(v)
            except ValueError:
                pass
        return out

    def post(self, verb, body):
        data = json.dumps(body).encode()
        req = urllib.request.Request(self.base + "/" + verb, data=data,
                                     headers={"Content-Type": "application/json"})
        t = time.monotonic()
        with urllib.request.urlopen(req, timeout=30) as r:
            out = json.loads(r.read())
        return out, time.monotonic() - t

    def stop(self):
        self.plane.stop_proc(self.name)


def metric(m, name, **labels):
    want = name + ("{" + ",".join('%s="%s"' % kv for kv in sorted(labels.items())) + "}"
                   if labels else "")
    for k, v in m.items():
        if k == want:
            return v
        if labels and k.startswith(name + "{"):
            got = dict(re.findall(r'(\w+)="([^"]*)"', k[len(name):]))
            if got == labels:
                return v
    return None


def histogram_p(m, name, verb, q):
    """The upper bound of the bucket holding quantile @q of histogram @name{verb}."""
    buckets = []
    for k, v in m.items():
        if k.startswith(name + "_bucket{") and 'verb="%s"' % verb in k:
            le = re.search(r'le="([^"]+)"', k).group(1)
            buckets.append((float("inf") if le == "+Inf" else float(le), v))
    buckets.sort()
    if not buckets or buckets[-1][1] == 0:
        return None, 0
    total = buckets[-1][1]
    for le, c in buckets:
        if c >= q * total:
            return le, total
    return float("inf"), total


def feasible_to_find(n):
    """kube-scheduler's numFeasibleNodesToFind with percentageOfNodesToScore unset."""
    if n < 100:
        return n
    pct = max(5, 50 - n // 125)
    return max(100, n * pct // 100)


def quantile(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


# --- the run -------------------------------------------------------------------
def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=10000)
    ap.add_argument("--pods", type=int, default=100000)
    ap.add_argument("--churn-per-min", type=int, default=1000)
    ap.add_argument("--churn-seconds", type=int, default=180)
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--requests", type=int, default=300)
    a = ap.parse_args()
    reason = cp.skip_reason()
    if reason:
        sys.stderr.write("\n*** SKIPPED: bench_scale needs the k8s tier: %s ***\n\n" % reason)
        print("SKIPPED: %s" % reason)
        return cp.SKIP_CODE
    if not os.path.exists(SCHEDULER_BIN):
        sys.stderr.write("no gantry-scheduler at %s (GANTRY_SCHEDULER)\n" % SCHEDULER_BIN)
        return 1
    print("bench_scale: %d nodes, %d pods, churn %d/min for %d s, %d create threads; %s" %
          (a.nodes, a.pods, a.churn_per_min, a.churn_seconds, a.threads, uptime()), flush=True)
    plane = cp.ControlPlane("bench-scale")
    plane.start()
    try:
        return run(plane, a)
    finally:
        plane.stop()


def run(plane, a):
    api = Api(plane)
    leaves = (a.nodes + NODES_PER_LEAF - 1) // NODES_PER_LEAF
    topo = {"defaults": {"nicGbps": NIC},
            "leaves": [{"name": "leaf-%d" % i, "spine": "spine-%d" % (i * NODES_PER_LEAF // 1024),
                        "uplinkGbps": 3200} for i in range(leaves)] +
                      [{"name": "leaf-storage", "spine": "spine-0", "uplinkGbps": STORAGE_GBPS}],
            "backends": [{"name": "ceph-a", "kind": "ceph", "gbps": STORAGE_GBPS,
                          "leaves": ["leaf-storage"]}]}
    topology = os.path.join(plane.dir, "topology.json")
    with open(topology, "w") as f:
        json.dump(topo, f)
    api.call("POST", "/apis/storage.k8s.io/v1/storageclasses", {
        "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
        "metadata": {"name": "gantry-dataset"}, "provisioner": "csi.gantry.io",
        "parameters": {"tier": "dataset", "clusterID": "ceph-a"}})
    for n in range(NAMESPACES):
        ns = "team-%d" % n
        plane.ensure_namespace(ns)
        api.call("POST", "/api/v1/namespaces/%s/serviceaccounts" % ns, {
            "apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}})
        for path, obj in cp.dataset_claim(ns, "ceph-a"):
            api.call("POST", path, obj)

    # 1. a gantry-scheduler that watches the cluster grow
    s1 = Scheduler(plane, "gantry-scheduler-grow", plane.kubeconfig, topology)
    cp.wait_for(s1.ready, 120, "gantry-scheduler on the empty cluster to be ready", 0.2)
    m0 = proc_mem(s1.pid)
    result("rss empty cluster", "%.1f MiB (hwm %.1f MiB)" % (m0["VmRSS"] / 2**20, m0["VmHWM"] / 2**20))

    rate = create_many(api, [("/api/v1/nodes", node_obj(i)) for i in range(a.nodes)], a.threads)
    result("create nodes", "%.0f nodes/s (%d threads, keep-alive)" % (rate, a.threads))
    cp.wait_for(lambda: metric(s1.metrics(), "gantry_scheduler_nodes") == a.nodes, 300,
                "gantry-scheduler to model every node", 0.5)
    m1 = proc_mem(s1.pid)
    per_node = (m1["VmRSS"] - m0["VmRSS"]) / a.nodes
    result("rss after nodes", "%.1f MiB: %.0f bytes/node" % (m1["VmRSS"] / 2**20, per_node))
    figure("scale_rss_bytes_per_node", per_node, None,
           "resident bytes gantry-scheduler grew per node watched (%d nodes)" % a.nodes)

    gpu_pods = a.pods  # every bound pod is charged (its bandwidth, its GPUs if any)
    step = 20000
    t0 = time.monotonic()
    for start in range(0, a.pods, step):
        create_many(api, pod_items(start, min(step, a.pods - start), a.nodes), a.threads)
        print("  %d pods created, %s" % (min(a.pods, start + step), uptime()), flush=True)
    result("create pods", "%.0f pods/s" % (a.pods / (time.monotonic() - t0)))
    cp.wait_for(lambda: metric(s1.metrics(), "gantry_scheduler_ledger_entries") == gpu_pods, 600,
                "gantry-scheduler to charge every pod", 0.5)
    m2 = proc_mem(s1.pid)
    per_pod = (m2["VmRSS"] - m1["VmRSS"]) / a.pods
    result("rss after pods (watched)", "%.1f MiB (hwm %.1f MiB): %.0f bytes/pod" %
           (m2["VmRSS"] / 2**20, m2["VmHWM"] / 2**20, per_pod))
    figure("scale_rss_bytes_per_pod", per_pod, None,
           "resident bytes gantry-scheduler grew per bound pod watched (%d pods)" % a.pods)
    pod_example = api.call("GET", "/api/v1/namespaces/team-0/pods/job-0-0")
    node_example = api.call("GET", "/api/v1/nodes/gpu-00000")
    result("object sizes (JSON)", "pod %d bytes, node %d bytes" %
           (len(json.dumps(pod_example)), len(json.dumps(node_example))))
    s1.stop()

    # 2. a fresh gantry-scheduler on the full cluster
    s2 = Scheduler(plane, "gantry-scheduler", plane.kubeconfig, topology)
    cp.wait_for(s2.ready, 600, "gantry-scheduler to list the full cluster", 0.1)
    start_s = time.monotonic() - s2.t0
    m3 = proc_mem(s2.pid)
    cpu_s = process_cpu_seconds(s2.pid)
    result("start -> ready (full cluster)", "%.1f s (gantry-scheduler's own CPU: %.1f s)" %
           (start_s, cpu_s), "< 60 s", start_s < 60)
    figure("scale_start_to_ready_s", start_s, "<=60",
           "seconds from start to /readyz of gantry-scheduler on %d nodes and %d pods (list "
           "and watch)" % (a.nodes, a.pods))
    for kind in ("Node", "Pod"):
        lines = [ln for ln in plane.log("gantry-scheduler").splitlines()
                 if "kube.list" in ln and "kind=%s " % kind in ln]
        print("  %s" % (lines[-1] if lines else "no kube.list line for %s" % kind))
    m = s2.metrics()
    result("rss after start from list", "%.1f MiB (hwm %.1f MiB): %.0f bytes/(node+10 pods)" %
           (m3["VmRSS"] / 2**20, m3["VmHWM"] / 2**20, m3["VmRSS"] / a.nodes))
    entries = metric(m, "gantry_scheduler_ledger_entries")
    result("ledger entries after list", "%d of %d pods" % (entries or 0, gpu_pods), "equal",
           entries == gpu_pods)

    # 3. filter + prioritize in process
    pod = pod_obj("team-1", "pending-0", None, 1, True)
    pod["metadata"]["uid"] = str(uuid.uuid4())
    del pod["spec"]["nodeName"]
    names = ["gpu-%05d" % i for i in range(a.nodes)]
    for size in (feasible_to_find(a.nodes), a.nodes):
        before = s2.metrics()
        client = []
        for r in range(a.requests):
            pod["metadata"]["uid"] = str(uuid.UUID(int=r + 1))
            pod["metadata"]["name"] = "pending-%d" % r
            off = (r * 997) % a.nodes
            sub = (names[off:] + names[:off])[:size]
            res, t1 = s2.post("filter", {"Pod": pod, "Nodes": None, "NodeNames": sub})
            kept = res.get("NodeNames") or []
            if not kept and r == 0:
                result("filter kept no node", res.get("Error") or "(see the log)", "nodes kept", False)
            _, t2 = s2.post("prioritize", {"Pod": pod, "Nodes": None, "NodeNames": kept})
            client.append(t1 + t2)
        after = s2.metrics()
        for verb in ("filter", "prioritize"):
            diff = {k: after[k] - before.get(k, 0) for k in after
                    if k.startswith("gantry_scheduler_request_seconds_bucket")}
            le, n = histogram_p(diff, "gantry_scheduler_request_seconds", verb, 0.99)
            result("%s p99 in process, %d names" % (verb, size), "<= %g ms (%d requests)" %
                   (le * 1000, n), "< 5 ms", le is not None and le <= 0.005)
            if le is not None:
                figure("scale_%s_p99_bucket_ms_%dnames" % (verb, size), le * 1000, "<=5",
                       "upper bound of the /metrics bucket holding %s's p99 at %d nodes, %d pods "
                       "(buckets 1/5/10/25 ms: coarse; bench_scheduler_extender times it)"
                       % (verb, a.nodes, a.pods))
        result("filter+prioritize client-side, %d names" % size,
               "p50 %.2f ms p99 %.2f ms (HTTP + JSON of the names included)" %
               (quantile(client, 0.5) * 1000, quantile(client, 0.99) * 1000))

    # 4. the watch under churn
    relists0 = metric(s2.metrics(), "gantry_kube_relists_total", kind="Pod")
    applied = []  # (t, rv)
    stop = threading.Event()

    def poll():
        while not stop.is_set():
            try:
                rv = metric(s2.metrics(), "gantry_kube_resource_version", kind="Pod")
                applied.append((time.monotonic(), rv or 0))
            except Exception:  # noqa: BLE001 - a slow answer: next poll
                pass
            time.sleep(0.02)

    poller = threading.Thread(target=poll)
    poller.start()
    created = []  # (t, rv)
    rss = []
    per_s = a.churn_per_min / 60.0
    base = a.pods
    k = 0
    t0 = time.monotonic()
    next_rss = t0
    try:
        while time.monotonic() - t0 < a.churn_seconds:
            due = t0 + k / per_s
            now = time.monotonic()
            if due > now:
                time.sleep(due - now)
            path, obj = pod_items(base + k, 1, a.nodes)[0]
            obj["metadata"]["name"] = "churn-%d" % k
            out = api.call("POST", path, obj)
            created.append((time.monotonic(), int(out["metadata"]["resourceVersion"])))
            if k >= 30:  # delete what was created 30 creates ago
                old = pod_items(base + k - 30, 1, a.nodes)[0][1]
                api.call("DELETE", "/api/v1/namespaces/%s/pods/churn-%d?gracePeriodSeconds=0" %
                         (old["metadata"]["namespace"], k - 30))
            k += 1
            if time.monotonic() >= next_rss:
                rss.append(proc_mem(s2.pid)["VmRSS"])
                next_rss += 10
    finally:
        time.sleep(2)
        stop.set()
        poller.join()
    elapsed = time.monotonic() - t0
    lags = []
    j = 0
    for tc, rv in created:
        while j < len(applied) and (applied[j][0] < tc or applied[j][1] < rv):
            if applied[j][1] >= rv and applied[j][0] >= tc:
                break
            j += 1
        if j < len(applied):
            lags.append(max(0.0, applied[j][0] - tc))
        else:
            lags.append(float("inf"))
    result("churn", "%d creates + %d deletes in %.0f s (%.1f/s each)" %
           (k, max(0, k - 30), elapsed, k / elapsed))
    result("watch lag create->applied p50/p99/max",
           "%.0f / %.0f / %.0f ms (poll every 20 ms)" %
           (quantile(lags, 0.5) * 1000, quantile(lags, 0.99) * 1000, max(lags) * 1000),
           "p99 < 1000 ms", quantile(lags, 0.99) < 1.0)
    figure("scale_watch_lag_p99_ms", quantile(lags, 0.99) * 1000, "<=1000",
           "ms from a pod create's answer to gantry-scheduler applying it, during %d creates "
           "and deletes a minute" % a.churn_per_min)
    relists1 = metric(s2.metrics(), "gantry_kube_relists_total", kind="Pod")
    result("pod re-lists during churn", "%d" % ((relists1 or 0) - (relists0 or 0)), "0",
           relists1 == relists0)
    growth = (max(rss) - rss[0]) / rss[0] if rss else 0
    result("rss during churn", "first %.1f MiB, max %.1f MiB, last %.1f MiB (+%.1f %%)" %
           (rss[0] / 2**20, max(rss) / 2**20, rss[-1] / 2**20, growth * 100), "< 5 % growth",
           growth < 0.05)
    expect = gpu_pods + min(k, 30)
    cp.wait_for(lambda: metric(s2.metrics(), "gantry_scheduler_ledger_entries") == expect, 60,
                "the ledger to match the API after the churn", 0.5)
    result("ledger after churn", "%d pods, as in the API" % expect, "equal", True)
    s2.stop()
    print("bench_scale: %s" % ("FAIL: " + ", ".join(failures) if failures else "all targets met"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
