"""Replays kube-scheduler's way of calling an extender, against the real
gantry-scheduler following the FAKE API server (tests/fakeapi/).

What it imitates (kube-scheduler v1.26, as captured in
fixtures/interleaving-16-jobs.tsv; see that capture's README):
- one scheduling cycle at a time: filter (nodeCacheCapable: NodeNames only),
  then prioritize when more than one node passed, then the pod is "assumed"
  on the best node and its bind goes out asynchronously;
- binds land 1..max_lag cycles later, so the next pods of the same job are
  filtered while earlier binds are in flight; a bind can fail (the driver
  makes the fake API server refuse the Binding), and the pod goes back to
  the queue;
- pods of all jobs in one queue, interleaved (the order is shuffled);
- a sample of the nodes: kube-scheduler's own filters drop nodes without free
  GPUs (by its own cache, assumed pods included), then it stops after
  percentageOfNodesToScore of the nodes (adaptive: 50 - n/125 %, at least
  100 nodes), starting where the previous cycle stopped;
- a pod the extender refuses everywhere waits in the unschedulable set until
  an assigned pod is deleted, or until the active queue runs dry (standing in
  for the periodic flush).

The driver also acts as the Job controller (a deleted member is replaced by
a new pod of the same gang) and can restart gantry-scheduler mid-run.
Everything it decides comes from a seeded random.Random, so a failing seed
replays.
"""
import http.client
import json
import os
import random
import shutil
import tempfile
import time
import uuid

import sched_harness
from sched_harness import Scheduler

FAKE = os.environ.get("GANTRY_FAKEAPI")
NS = "default"
BACKEND = "ceph-a"


class Fabric:
    """A cluster: leaves of GPU nodes under spines, a storage leaf with one
    Ceph backend, pods of gangs reading a dataset volume on that backend."""

    def __init__(self, leaves, nodes_per_leaf, gpus=8, nic=400, uplink=800, spines=1,
                 backend_gbps=100000, total_nodes=None):
        self.gpus, self.nic, self.uplink, self.backend_gbps = gpus, nic, uplink, backend_gbps
        self.nodes = []      # (name, leaf)
        for l in range(leaves):
            for i in range(nodes_per_leaf):
                if total_nodes is not None and len(self.nodes) >= total_nodes:
                    break
                self.nodes.append(("node-%d" % len(self.nodes), "leaf-%d" % l))
        self.leaves = sorted({l for _, l in self.nodes}, key=lambda s: int(s.split("-")[1]))
        self.spine_of = {l: "spine-%d" % (int(l.split("-")[1]) % spines) for l in self.leaves}
        self.leaf_of = dict(self.nodes)
        self.extra = {}      # more seed objects: {"jobs": [...], ...}

    def topology(self):
        leaves = [{"name": l, "spine": self.spine_of[l], "uplinkGbps": self.uplink}
                  for l in self.leaves]
        leaves.append({"name": "leaf-storage", "spine": "spine-0", "uplinkGbps": 100000})
        return {"defaults": {"nicGbps": self.nic}, "leaves": leaves,
                "backends": [{"name": BACKEND, "kind": "ceph", "gbps": self.backend_gbps,
                              "leaves": ["leaf-storage"]}]}

    def seed(self):
        nodes = [{"metadata": {"name": n, "labels": {
                     "kubernetes.io/hostname": n,
                     "network.topology.nvidia.com/leaf": l,
                     "network.topology.nvidia.com/spine": self.spine_of[l],
                     "gantry.io/nic-gbps": str(self.nic)}},
                  "status": {"allocatable": {"nvidia.com/gpu": str(self.gpus)},
                             "conditions": [{"type": "Ready", "status": "True"}]}}
                 for n, l in self.nodes]
        sc = {"metadata": {"name": "gantry-dataset"}, "provisioner": "csi.gantry.io",
              "parameters": {"tier": "dataset", "clusterID": BACKEND, "pool": "rbd"}}
        pv = {"metadata": {"name": "pv-data"},
              "spec": {"storageClassName": "gantry-dataset", "accessModes": ["ReadOnlyMany"],
                       "csi": {"driver": "csi.gantry.io", "volumeHandle": "0001-0004-ceph-a-data",
                               "volumeAttributes": {"tier": "dataset", "clusterID": BACKEND}}},
              "status": {"phase": "Bound"}}
        pvc = {"metadata": {"name": "data", "namespace": NS},
               "spec": {"storageClassName": "gantry-dataset", "volumeName": "pv-data",
                        "accessModes": ["ReadOnlyMany"]}, "status": {"phase": "Bound"}}
        return dict({"nodes": nodes, "storageclasses": [sc], "persistentvolumes": [pv],
                     "persistentvolumeclaims": [pvc]}, **self.extra)


def gang_pod(job, name, size, gbps, gpus=1, size_from="annotation"):
    """A member of gang @job as a JobSet / operator creates it."""
    md = {"name": name, "namespace": NS, "uid": str(uuid.uuid4()),
          "labels": {"gantry.io/job": job},
          "annotations": {"gantry.io/dataset-read-gbps": str(gbps)}}
    if size_from == "annotation":
        md["annotations"]["gantry.io/job-size"] = str(size)
    elif size_from == "job":
        del md["labels"]["gantry.io/job"]
        md["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": job,
                                  "uid": str(uuid.uuid5(uuid.NAMESPACE_URL, job)),
                                  "controller": True, "blockOwnerDeletion": True}]
    spec = {}
    if size_from == "podgroup":  # Kubernetes' own PodGroup named @job
        del md["labels"]["gantry.io/job"]
        spec["schedulingGroup"] = {"podGroupName": job}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": md,
            "spec": {**spec, "schedulerName": "gantry",
                     "containers": [{"name": "worker", "image": "registry.invalid/train",
                                     "resources": {"requests": {"nvidia.com/gpu": str(gpus)},
                                                   "limits": {"nvidia.com/gpu": str(gpus)}}}],
                     "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data",
                                                                            "readOnly": True}}]},
            "status": {"phase": "Pending"}}


class FakeAPI(sched_harness.FakeAPI):
    """The fake API server, with one kept-alive connection for the driver."""

    def __init__(self, seed_path, token, *args):
        super().__init__(token, *args, seed=seed_path, max_seconds=1200)
        self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)

    def call(self, method, path, obj=None):
        body = json.dumps(obj).encode() if obj is not None else None
        for attempt in (0, 1):
            try:
                self.conn.request(method, path, body=body,
                                  headers={"Content-Type": "application/json"})
                r = self.conn.getresponse()
                return r.status, json.loads(r.read() or b"null")
            except (http.client.HTTPException, ConnectionError):
                self.conn.close()
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
                if attempt:
                    raise

    def stop(self):
        self.conn.close()
        super().stop()


class World:
    """The fake API server, gantry-scheduler and the kube-scheduler imitation."""

    def __init__(self, fabric, gang_ttl=30, extra_args=(), fake_args=()):
        self.fabric = fabric
        self.tmp = tempfile.mkdtemp(prefix="gantry-gang-%d-" % os.getpid())
        self.token = sched_harness.canary.secret("api-token")
        seed = os.path.join(self.tmp, "seed.json")
        with open(seed, "w") as f:
            json.dump(fabric.seed(), f)
        self.topology = os.path.join(self.tmp, "topology.json")
        with open(self.topology, "w") as f:
            json.dump(fabric.topology(), f)
        self.fake = FakeAPI(seed, self.token, *fake_args)
        self.kubeconfig = os.path.join(self.tmp, "kubeconfig")
        with open(self.kubeconfig, "w") as f:
            f.write("apiVersion: v1\nkind: Config\ncurrent-context: fake\n"
                    "clusters:\n- name: fake\n  cluster:\n    server: http://127.0.0.1:%d\n"
                    "users:\n- name: s\n  user:\n    token: %s\n"
                    "contexts:\n- name: fake\n  context:\n    cluster: fake\n    user: s\n"
                    % (self.fake.port, self.token))
        self.gang_ttl = gang_ttl
        self.timing = {}     # verb -> (calls, seconds waited)
        self.extra_args = list(extra_args)
        self.ext = None
        self.conn = None
        self.start_extender()

    def start_extender(self):
        self.ext = Scheduler("--kubeconfig", self.kubeconfig, "--gang-ttl", str(self.gang_ttl),
                             "--log-level", "info", *self.extra_args,
                             topology=self.topology, state=None).start()
        self.conn = http.client.HTTPConnection("127.0.0.1", self.ext.port, timeout=60)

    def restart_extender(self):
        self.conn.close()
        rc = self.ext.stop()
        if rc != 0:
            raise AssertionError("gantry-scheduler exited %r at restart" % rc)
        self.start_extender()

    def post(self, verb, obj, errors_ok=False):
        """The extender's answer to @verb; any status but 200 raises, unless
        @errors_ok: then (status, answer)."""
        t0 = time.monotonic()
        self.conn.request("POST", "/" + verb, body=json.dumps(obj).encode(),
                          headers={"Content-Type": "application/json"})
        r = self.conn.getresponse()
        data = r.read()
        n, total = self.timing.get(verb, (0, 0.0))
        self.timing[verb] = (n + 1, total + time.monotonic() - t0)
        if errors_ok:
            return r.status, json.loads(data)
        if r.status != 200:
            raise AssertionError("%s: HTTP %d %s" % (verb, r.status, data[:300]))
        return json.loads(data)

    def metric(self, name):
        _, text = self.ext.request("GET", "/metrics")
        for line in text.decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
        return None

    def close(self):
        """Stops everything; raises when gantry-scheduler did not exit 0 (under
        ASan a leak or an error makes it exit non-zero)."""
        rc = 0
        try:
            if self.conn:
                self.conn.close()
            if self.ext:
                rc = self.ext.stop()
        finally:
            self.fake.stop()
            shutil.rmtree(self.tmp, ignore_errors=True)
        if rc != 0:
            raise AssertionError("gantry-scheduler exited %r" % rc)


class KubeScheduler:
    """The queue, cache and cycle of kube-scheduler, for the driver."""

    def __init__(self, world, rng, max_lag=4, bind_fail=0.0, pct=None):
        self.w, self.rng = world, rng
        self.node_names = [n for n, _ in world.fabric.nodes]
        self.free = {n: world.fabric.gpus for n in self.node_names}
        self.pods = {}          # name -> pod object (live)
        self.bound = {}         # name -> node
        self.active = []        # names, queue order
        self.unschedulable = set()
        self.inflight = []      # [cycles_left, name, node]
        self.max_lag, self.bind_fail = max_lag, bind_fail
        n = len(self.node_names)
        self.pct = pct if pct is not None else max(5, 50 - n // 125)
        self.next_start = 0
        self.reasons = {}       # name -> last refusal reasons (distinct strings)
        self.activity = {}      # gang -> monotonic time of its last member call
        self.cycles = 0
        self.filter_calls = 0
        self.retries = 0        # filters answered with an error: backoff, again

    # -- pods
    def add(self, pod):
        name = pod["metadata"]["name"]
        status, _ = self.w.fake.call("POST", "/fake/objects/pods", pod)
        assert status == 200, status
        self.pods[name] = pod
        self.active.append(name)

    def delete(self, name):
        """Deletes a pod (not in flight) from the API server and the queues."""
        pod = self.pods.pop(name)
        status, _ = self.w.fake.call("DELETE", "/fake/objects/pods/%s/%s" % (NS, name))
        assert status == 200, status
        if name in self.bound:
            self.free[self.bound.pop(name)] += gpus_of(pod)
            # AssignedPodDelete: the unschedulable pods may fit now
            self.active.extend(sorted(self.unschedulable))
            self.unschedulable.clear()
        if name in self.active:
            self.active.remove(name)
        self.unschedulable.discard(name)
        return pod

    # -- one scheduling cycle
    def sample(self, pod):
        need, n = gpus_of(pod), len(self.node_names)
        want = max(min(100, n), n * self.pct // 100)
        out, i = [], 0
        while i < n and len(out) < want:
            name = self.node_names[(self.next_start + i) % n]
            if self.free[name] >= need:
                out.append(name)
            i += 1
        self.next_start = (self.next_start + i) % n
        return out

    def cycle(self):
        """Schedules the next pod of the active queue; False when it is empty."""
        if not self.active:
            return False
        name = self.active.pop(0)
        pod = self.pods[name]
        gang = pod["metadata"]["labels"].get("gantry.io/job") or \
            pod["metadata"].get("ownerReferences", [{}])[0].get("name")
        self.activity[gang] = time.monotonic()
        self.cycles += 1
        nodes = self.sample(pod)
        if not nodes:
            self.unschedulable.add(name)
            self.reasons[name] = {"no free GPUs"}
            self.land_binds()
            return True
        args = {"Pod": pod, "Nodes": None, "NodeNames": nodes}
        self.filter_calls += 1
        status, r = self.w.post("filter", args, errors_ok=True)
        if status == 503:
            # an extender error (a gang member's place not in the sample):
            # the pod backs off and comes again, with another sample
            self.retries += 1
            self.active.append(name)
            self.land_binds()
            return True
        assert status == 200 and r.get("Error", "") == "", (status, r)
        passed = r["NodeNames"] or []
        if not passed:
            self.unschedulable.add(name)
            self.reasons[name] = set(r["FailedNodes"].values())
            self.land_binds()
            return True
        if len(passed) > 1:
            scores = self.w.post("prioritize", dict(args, NodeNames=passed))
            top = max(s["Score"] for s in scores)
            passed = [s["Host"] for s in scores if s["Score"] == top]
        node = self.rng.choice(passed)
        self.free[node] -= gpus_of(pod)          # assumed
        self.inflight.append([self.rng.randint(1, self.max_lag), name, node])
        self.land_binds()
        return True

    def land_binds(self, all_now=False):
        keep = []
        for item in self.inflight:
            item[0] -= 1
            if item[0] > 0 and not all_now:
                keep.append(item)
                continue
            self.bind(item[1], item[2])
        self.inflight = keep

    def bind(self, name, node):
        pod = self.pods[name]
        md = pod["metadata"]
        if self.bind_fail and self.rng.random() < self.bind_fail:
            self.w.fake.call("POST", "/fake/fail", {"verb": "create", "resource": "pods/binding",
                                                    "status": 500, "count": 1})
        r = self.w.post("bind", {"PodName": md["name"], "PodNamespace": NS, "PodUID": md["uid"],
                                 "Node": node})
        if r.get("Error"):
            self.free[node] += gpus_of(pod)      # forget the assumed pod
            self.active.append(name)             # backoff, then again
            return
        self.bound[name] = node

    def flush(self):
        """The periodic move of unschedulable pods back to the queue."""
        self.active.extend(sorted(self.unschedulable))
        self.unschedulable.clear()

    def drain(self, check=None, on_cycle=None):
        """Cycles until the active queue is empty, then lands every bind."""
        while self.cycle():
            if on_cycle:
                on_cycle()
            if check:
                check()
        self.land_binds(all_now=True)
        if check:
            check()

    def run(self, check=None, max_flushes=3, on_cycle=None):
        """Cycles until the queue is empty, flushing unschedulable pods until a
        flush binds nothing new (at most @max_flushes flushes without progress)."""
        idle = 0
        self.drain(check, on_cycle)
        while self.unschedulable and idle < max_flushes:
            before = len(self.bound)
            self.flush()
            self.drain(check, on_cycle)
            idle = idle + 1 if len(self.bound) == before else 0


def gpus_of(pod):
    return int(pod["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"])


def gbps_of(pod):
    return float(pod["metadata"]["annotations"]["gantry.io/dataset-read-gbps"])


def gang_of(pod):
    md = pod["metadata"]
    return (md["labels"].get("gantry.io/job") or
            pod["spec"].get("schedulingGroup", {}).get("podGroupName") or
            md.get("ownerReferences", [{}])[0].get("name"))


def usage(ks):
    """What the bound pods take, from the driver's own record of binds."""
    fab = ks.w.fabric
    nic, up, gpu, backend = {}, {}, {}, 0.0
    for name, node in ks.bound.items():
        pod = ks.pods[name]
        g = gbps_of(pod)
        nic[node] = nic.get(node, 0) + g
        leaf = fab.leaf_of[node]
        up[leaf] = up.get(leaf, 0) + g
        gpu[node] = gpu.get(node, 0) + gpus_of(pod)
        backend += g
    return nic, up, gpu, backend


def over_capacity(ks):
    """Every link over its capacity, as text; [] when none."""
    fab = ks.w.fabric
    nic, up, gpu, backend = usage(ks)
    bad = ["NIC %s %.0f > %d" % (n, v, fab.nic) for n, v in nic.items() if v > fab.nic + 1e-6]
    bad += ["uplink %s %.0f > %d" % (l, v, fab.uplink) for l, v in up.items() if v > fab.uplink + 1e-6]
    bad += ["GPUs %s %d > %d" % (n, v, fab.gpus) for n, v in gpu.items() if v > fab.gpus]
    if backend > fab.backend_gbps + 1e-6:
        bad.append("backend %.0f > %d" % (backend, fab.backend_gbps))
    return bad


def gangs_summary(ks, sizes):
    """{gang: bound members} over the gangs of @sizes, and leaves per gang."""
    bound = {g: 0 for g in sizes}
    leaves = {g: set() for g in sizes}
    for name, node in ks.bound.items():
        g = gang_of(ks.pods[name])
        bound[g] = bound.get(g, 0) + 1
        leaves.setdefault(g, set()).add(ks.w.fabric.leaf_of[node])
    return bound, leaves


def issue_scenario(seed=12, gang_ttl=120, max_lag=4):
    """The gang scenario's cluster: 500 nodes x 8 GPUs on 63 leaves (8 nodes a leaf),
    400 Gbps NICs, 800 Gbps uplinks, storage on its own leaf; 125 jobs of 8
    one-GPU pods reading 100 Gbps, created at once with gantry.io/job and
    gantry.io/job-size "8", interleaved. Phase 1 places what fits; phase 2
    deletes the placed jobs and lets the rest in. Returns the figures."""
    rng = random.Random(seed)
    fab = Fabric(leaves=63, nodes_per_leaf=8, spines=4, total_nodes=500)
    w = World(fab, gang_ttl=gang_ttl)
    try:
        ks = KubeScheduler(w, rng, max_lag=max_lag)
        sizes = {"train-%d" % j: 8 for j in range(125)}
        pods = [gang_pod(g, "%s-%d" % (g, i), 8, 100) for g in sizes for i in range(8)]
        rng.shuffle(pods)
        over = []

        def check():
            # every 25th cycle and at the end of each pass: the run stays short
            if ks.cycles % 25 == 0 or not ks.active:
                bad = over_capacity(ks)
                if bad:
                    over.append((ks.cycles, bad))

        t0 = time.monotonic()
        for p in pods:
            ks.add(p)
        ks.run(check=check)
        t1 = time.monotonic()
        first = phase_figures(ks, sizes)
        first["seconds"] = t1 - t0
        first["filter_calls"] = ks.filter_calls
        placed = [g for g, b in first["bound"].items() if b == sizes[g]]
        for name in sorted(n for n in ks.bound if gang_of(ks.pods[n]) in placed):
            ks.delete(name)
        rest = {g: 8 for g in sizes if g not in placed}
        calls0 = ks.filter_calls
        ks.run(check=check)
        second = phase_figures(ks, rest)
        second["seconds"] = time.monotonic() - t1
        second["filter_calls"] = ks.filter_calls - calls0
        reasons = set()
        for name, r in ks.reasons.items():
            if name in ks.pods and name not in ks.bound:
                reasons |= r
        return {"first": first, "second": second, "over": over, "pending_reasons": reasons,
                "leaves": len(fab.leaves), "timing": w.timing}
    finally:
        w.close()


def phase_figures(ks, sizes):
    bound, leaves = gangs_summary(ks, sizes)
    whole = [g for g in sizes if bound.get(g, 0) == sizes[g]]
    return {"bound": bound,
            "whole": len(whole),
            "partial": sum(1 for g in sizes if 0 < bound.get(g, 0) < sizes[g]),
            "pending": sum(1 for g in sizes if bound.get(g, 0) == 0),
            "leaves_per_job": (sum(len(leaves[g]) for g in whole) / len(whole)) if whole else 0.0,
            "max_leaves": max((len(leaves[g]) for g in whole), default=0)}
