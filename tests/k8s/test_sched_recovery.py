"""gantry-scheduler killed and restarted under the real kube-scheduler, with training jobs placed through it, on the real control plane of control_plane.py.

kube-scheduler v1.31 runs docs/kube-scheduler-config.yaml (the extender
entry: filter, prioritize, bind, not ignorable); gantry-scheduler runs under
the ServiceAccount and RBAC of manifests/scheduler.yaml (a 403 fails the
test) and reaches the API server with that token. Fake 8-GPU nodes, 8 per
leaf, leaves of 800 Gbps uplink, the dataset backend on a leaf of its own:
a job of 8 one-GPU pods reading 100 Gbps each fits one leaf only, so half
the jobs are placed whole and half wait whole.

Each fault runs in a namespace of its own: the pods created at once (bare
pods of a gang: label gantry.io/job + annotation gantry.io/job-size), or
Indexed Jobs that the Job controller of kube-controller-manager turns into
pods; then a SIGKILL of the active gantry-scheduler before, during or after
the first binds (started again 3 s later, as a Deployment would), a restart
of kube-apiserver, or a takeover by a standby replica (--leader-elect). At
the end every gang is whole or wholly pending, no NIC, leaf uplink, GPU or
backend is over capacity, and the time from the fault to the last gang
placed is printed. The bounded waits (well under kube-scheduler's 5-minute
flush of unschedulable pods) are what show that recovery does not wait for
that flush.

There is no kube-proxy here: ServiceProxy stands in for the Service
gantry-scheduler and its readiness-gated endpoints (a mock of exactly that,
named so). GANTRY_SCHED_RECOVERY_SCALE=NODES:JOBS (e.g. 500:125, the
issue's scale) runs the same faults bigger, by hand, and prints the table
(GANTRY_SCHED_RECOVERY_SETTLE: the bound of each wait, default 90 s;
GANTRY_SCHEDULER_BIN: another gantry-scheduler binary).
"""
import calendar
import json
import os
import re
import signal
import socket
import sys
import threading
import time
import unittest

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import control_plane as cp  # noqa: E402

BUILD = os.environ.get("GANTRY_BUILD_DIR", os.path.join(cp.SOURCE, "build"))
# another build of gantry-scheduler (an older one, to see what it did)
SCHEDULER_BIN = os.environ.get("GANTRY_SCHEDULER_BIN", os.path.join(BUILD, "bin", "gantry-scheduler"))
SCALE = os.environ.get("GANTRY_SCHED_RECOVERY_SCALE", "64:16")
NODES, JOBS = (int(x) for x in SCALE.split(":"))
NODES_PER_LEAF = 8
GPUS, NIC, UPLINK, GBPS, SIZE = 8, 800, 800, 100, 8
BACKEND, BACKEND_GBPS = "ceph-a", 100000
SA_NS, SA = "gantry-system", "gantry-scheduler"
# bounded waits, all far below kube-scheduler's 5-minute flush
SETTLE = float(os.environ.get("GANTRY_SCHED_RECOVERY_SETTLE", 180))
RESULTS = []  # (fault, workload, bound at the fault, end state, seconds)


def leaf_of(node):
    return "leaf-%d" % (int(node.split("-")[1]) // NODES_PER_LEAF)


class ServiceProxy:
    """MOCK of the Service gantry-scheduler with kube-proxy (neither runs
    here): each new TCP connection goes to a replica whose /readyz answers
    200, as the readiness probe and the endpoints would have it; with none
    ready, the connection is closed at once (kube-scheduler: an error)."""

    def __init__(self):
        self.backends = []  # ports
        self.ready = []
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.stopping = False
        for fn in (self._accept, self._probe):
            threading.Thread(target=fn, daemon=True).start()

    def _probe(self):
        while not self.stopping:
            ready = []
            for port in list(self.backends):
                # /readyz; a build older than it has only /healthz (404)
                for path in (b"/readyz", b"/healthz"):
                    status = self._get(port, path)
                    if status != b"404":
                        break
                if status == b"200":
                    ready.append(port)
            self.ready = ready
            time.sleep(0.5)

    @staticmethod
    def _get(port, path):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                s.sendall(b"GET " + path + b" HTTP/1.0\r\n\r\n")
                status = s.recv(64).split(b"\r\n", 1)[0].split()
                return status[1] if len(status) > 1 else None
        except OSError:
            return None

    def _accept(self):
        while not self.stopping:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            ready = list(self.ready)
            if not ready:
                c.close()
                continue
            try:
                b = socket.create_connection(("127.0.0.1", ready[0]), timeout=5)
                b.settimeout(None)
            except OSError:
                c.close()
                continue
            for src, dst in ((c, b), (b, c)):
                threading.Thread(target=self._pipe, args=(src, dst), daemon=True).start()

    @staticmethod
    def _pipe(src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        src.close()  # each socket is the source of one pipe: closed once

    def stop(self):
        self.stopping = True
        self.sock.close()


class SchedRecoveryTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.plane = p = cp.ControlPlane("sched-recovery", controllers=True)
        p.start()
        cls.addClassCleanup(p.stop)
        leaves = (NODES + NODES_PER_LEAF - 1) // NODES_PER_LEAF
        p.create_nodes(["node-%d" % i for i in range(NODES)],
                       labels=lambda n: {"network.topology.nvidia.com/leaf": leaf_of(n),
                                         "network.topology.nvidia.com/spine": "spine-0",
                                         "gantry.io/nic-gbps": str(NIC)},
                       capacity={"nvidia.com/gpu": str(GPUS)})
        topo = {"defaults": {"nicGbps": NIC},
                "leaves": [{"name": "leaf-%d" % i, "spine": "spine-0", "uplinkGbps": UPLINK}
                           for i in range(leaves)] +
                          [{"name": "leaf-storage", "spine": "spine-0", "uplinkGbps": BACKEND_GBPS}],
                "backends": [{"name": BACKEND, "kind": "ceph", "gbps": BACKEND_GBPS,
                              "leaves": ["leaf-storage"]}]}
        cls.topology = os.path.join(p.dir, "topology.json")
        with open(cls.topology, "w") as f:
            json.dump(topo, f)
        p.api("POST", "/apis/storage.k8s.io/v1/storageclasses", {
            "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": "gantry-dataset"}, "provisioner": "csi.gantry.io",
            "parameters": {"tier": "dataset", "clusterID": BACKEND}})
        # gantry-scheduler's ServiceAccount with the RBAC of manifests/
        cls.kubeconfig = p.sa_kubeconfig(SA_NS, SA)
        with open(os.path.join(cp.SOURCE, "manifests", "scheduler.yaml")) as f:
            rbac = [d for d in yaml.safe_load_all(f) if d and d["kind"] in (
                "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding") and
                d["metadata"]["name"].startswith("gantry-scheduler")]
        p.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(rbac))
        cls.proxy = ServiceProxy()
        cls.addClassCleanup(cls.proxy.stop)
        with open(os.path.join(cp.SOURCE, "docs", "kube-scheduler-config.yaml")) as f:
            cfg = yaml.safe_load(f)
        cfg.pop("clientConnection", None)
        # plain HTTP through the Service stand-in: kube-scheduler's client
        # certificate is k8s_extender_tls's subject; here the replicas run
        # with --insecure-http
        cfg["extenders"][0].pop("enableHTTPS", None)
        cfg["extenders"][0].pop("tlsConfig", None)
        cfg["extenders"][0]["urlPrefix"] = "http://127.0.0.1:%d/" % cls.proxy.port
        p.start_scheduler(yaml.safe_dump(cfg))
        cls.replicas = {}
        cls.apiserver_restarts = []
        cls.names = set()
        cls.ns_count = 0

    @classmethod
    def tearDownClass(cls):
        if RESULTS:
            print("\n| fault | workload | bound at the fault | end state | fault -> last gang placed |")
            print("|---|---|---|---|---|")
            for r in RESULTS:
                print("| %s | %s | %s | %s | %s |" % r)
        for name in cls.names:
            for line in cls.plane.log(name).splitlines():
                if ("HTTP 403" in line or "status=403" in line) and \
                        not cls.in_apiserver_restart(line):
                    raise AssertionError("%s got a 403: %s" % (name, line))

    @classmethod
    def in_apiserver_restart(cls, line):
        """Whether @line (ts=...Z) falls in a kube-apiserver restart, from its
        stop until its authorizer grants gantry-scheduler's watch again: a
        restarted API server serves requests before its RBAC cache has
        synced and refuses them meanwhile (the extender retries), which says
        nothing of the RBAC the manifests grant."""
        m = re.search(r"\bts=(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?)Z", line)
        if not m:
            return False
        t = calendar.timegm(time.strptime(m.group(1).split(".")[0], "%Y-%m-%dT%H:%M:%S"))
        return any(start - 1 <= t <= end + 1 for start, end in cls.apiserver_restarts)

    def restart_apiserver(self):
        """Starts kube-apiserver again (waiting on /readyz) and waits until its
        authorizer lets gantry-scheduler watch pods; records the window."""
        self.plane.start_proc("kube-apiserver")
        review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                  "spec": {"user": "system:serviceaccount:%s:%s" % (SA_NS, SA),
                           "groups": ["system:serviceaccounts",
                                      "system:serviceaccounts:%s" % SA_NS],
                           "resourceAttributes": {"verb": "watch", "resource": "pods"}}}
        cp.wait_for(lambda: self.plane.api(
            "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews",
            review)["status"].get("allowed"), 60, "RBAC granting the extender's watch again")
        self.apiserver_restarts[-1][1] = time.time()

    def stop_apiserver(self):
        self.apiserver_restarts.append([time.time(), float("inf")])
        self.plane.stop_proc("kube-apiserver")

    # --- gantry-scheduler replicas ---------------------------------------
    def start_replica(self, name, leader_elect=False):
        port = cp.free_port()
        argv = [SCHEDULER_BIN, "--listen", "127.0.0.1:%d" % port, "--kubeconfig", self.kubeconfig,
                "--topology", self.topology, "--log-level", "info", "--insecure-http"]
        if leader_elect:
            argv += ["--leader-elect", "--lease-namespace", SA_NS, "--identity", name,
                     "--lease-duration", "6", "--lease-renew-deadline", "4",
                     "--lease-retry-period", "1"]
        if name in self.plane.procs:
            self.plane.procs[name].argv = argv
            self.plane.start_proc(name)
        else:
            self.plane.spawn(name, argv)
        self.replicas[name] = port
        self.names.add(name)
        self.proxy.backends = list(self.replicas.values())
        return port

    def stop_replica(self, name, sig=None):
        if sig:
            self.plane.kill_proc(name, sig)
        else:
            self.plane.stop_proc(name)
        port = self.replicas.pop(name, None)
        self.proxy.backends = list(self.replicas.values())
        self.proxy.ready = [p for p in self.proxy.ready if p != port]

    def wait_ready(self, name, timeout=60):
        port = self.replicas[name]
        cp.wait_for(lambda: port in self.proxy.ready, timeout, "%s to be ready" % name)

    # --- workloads --------------------------------------------------------
    def namespace(self):
        type(self).ns_count += 1
        ns = "run-%d" % self.ns_count
        p = self.plane
        p.ensure_namespace(ns)
        for path, obj in cp.dataset_claim(ns, BACKEND):
            p.api("POST", path, obj)
        cp.wait_for(lambda: p.api("GET", "/api/v1/namespaces/%s/persistentvolumeclaims/data" % ns)
                    ["status"].get("phase") == "Bound", 60, "the PVC to be bound")
        cp.wait_for(lambda: p.api("GET", "/api/v1/namespaces/%s/serviceaccounts/default" % ns),
                    60, "the default ServiceAccount")
        return ns

    def create(self, path, obj):
        """POSTs @obj, again while the API server restarts (409: it is there)."""
        def once():
            try:
                self.plane.api("POST", path, obj)
            except cp.ApiError as e:
                if e.status == 409:
                    return True
                if e.status < 500:
                    raise
                self.plane._drop_conn()
                return False
            except OSError:
                self.plane._drop_conn()
                return False
            return True
        cp.wait_for(once, 120, "POST %s" % path, interval=0.5)

    @staticmethod
    def pod_spec():
        return {"restartPolicy": "Never",
                "containers": [{"name": "worker", "image": "registry.invalid/train",
                                "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
                "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data",
                                                                       "readOnly": True}}]}

    def create_bare(self, ns):
        """JOBS gangs of SIZE bare pods, created at once from 4 connections."""
        p = self.plane
        pods = [("job-%d" % j, "job-%d-%d" % (j, i)) for j in range(JOBS) for i in range(SIZE)]

        def worker(chunk):
            try:
                for job, name in chunk:
                    self.create("/api/v1/namespaces/%s/pods" % ns, {
                        "apiVersion": "v1", "kind": "Pod",
                        "metadata": {"name": name, "labels": {"gantry.io/job": job},
                                     "annotations": {"gantry.io/job-size": str(SIZE),
                                                     "gantry.io/dataset-read-gbps": str(GBPS)}},
                        "spec": self.pod_spec()})
            finally:
                p._drop_conn()
        ts = [threading.Thread(target=worker, args=(pods[i::4],)) for i in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()

    def create_jobs(self, ns):
        """JOBS Indexed Jobs of SIZE pods: the Job controller makes the pods."""
        for j in range(JOBS):
            self.create("/apis/batch/v1/namespaces/%s/jobs" % ns, {
                "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "job-%d" % j},
                "spec": {"completionMode": "Indexed", "completions": SIZE, "parallelism": SIZE,
                         "backoffLimit": 0, "template": {
                             "metadata": {"annotations": {"gantry.io/dataset-read-gbps": str(GBPS)}},
                             "spec": self.pod_spec()}}})
        cp.wait_for(lambda: len(self.pods(ns)) == JOBS * SIZE, 120, "the Job controller's pods")

    def cleanup(self, ns):
        if self.pods(ns):
            self.plane.api("DELETE", "/api/v1/namespaces/%s/pods?gracePeriodSeconds=0" % ns)
            cp.wait_for(lambda: not self.pods(ns), 60, "the pods of %s to go" % ns)
            # every pod gone: no gang holds a place any more, long before
            # --gang-ttl (kube-scheduler may still filter or bind a deleted
            # pod from its cache; that must not plan or keep a reservation)
            cp.wait_for(self.nothing_held, 60, "the ready extender to hold no gang reservation")

    @staticmethod
    def metrics(port):
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
            data = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        values = {}
        for line in data.decode(errors="replace").splitlines():
            parts = line.split()
            if len(parts) == 2 and not line.startswith("#"):
                values[parts[0]] = parts[1]
        return values

    def nothing_held(self):
        for port in list(self.proxy.ready):
            try:
                m = self.metrics(port)
            except OSError:
                return False  # stopping or restarting: ask again
            if any(float(m.get(k, "nan")) != 0 for k in ("gantry_scheduler_gangs_planned",
                                                          "gantry_scheduler_gang_slots_held")):
                return False
        return True

    def pods(self, ns):
        return self.plane.api("GET", "/api/v1/namespaces/%s/pods" % ns)["items"]

    # --- state ------------------------------------------------------------
    @staticmethod
    def gang(pod):
        md = pod["metadata"]
        own = [o["name"] for o in md.get("ownerReferences", []) if o.get("kind") == "Job"]
        return own[0] if own else md["labels"]["gantry.io/job"]

    def state(self, ns):
        """(bound pods, whole gangs, partly bound gangs, gangs); what is over
        capacity goes to self.over (checked after every wait)."""
        pods = self.pods(ns)
        per_gang, gpus, nic, uplink, backend = {}, {}, {}, {}, 0
        for pod in pods:
            node = pod["spec"].get("nodeName")
            g = per_gang.setdefault(self.gang(pod), [0, 0])
            g[1] += 1
            if not node:
                continue
            g[0] += 1
            gpus[node] = gpus.get(node, 0) + 1
            nic[node] = nic.get(node, 0) + GBPS
            uplink[leaf_of(node)] = uplink.get(leaf_of(node), 0) + GBPS
            backend += GBPS
        over = ["%s: %d GPUs" % (n, v) for n, v in gpus.items() if v > GPUS]
        over += ["%s NIC: %d Gbps" % (n, v) for n, v in nic.items() if v > NIC]
        over += ["%s uplink: %d Gbps" % (n, v) for n, v in uplink.items() if v > UPLINK]
        if backend > BACKEND_GBPS:
            over.append("backend: %d Gbps" % backend)
        self.over.extend(over)
        bound = sum(b for b, _ in per_gang.values())
        whole = sum(1 for b, n in per_gang.values() if b == SIZE)
        partial = sum(1 for b, n in per_gang.values() if 0 < b < SIZE)
        return bound, whole, partial, len(per_gang)

    def setUp(self):
        self.over = []
        for i in range(1, self.ns_count + 1):  # what a failed test left
            self.cleanup("run-%d" % i)

    def wait(self, fn, what):
        """cp.wait_for, stopping at once when something is over capacity."""
        def check():
            v = fn()
            return v or self.over
        v = cp.wait_for(check, SETTLE, what, interval=0.1)
        self.assertEqual(self.over, [], "over capacity")
        return v

    def settle(self, ns, t_fault, expect_whole):
        """Waits until @expect_whole gangs are whole and none partly bound;
        returns (seconds from @t_fault to the last gang placed, end state)."""
        last = [None, None]

        def done():
            bound, whole, partial, _ = self.state(ns)
            if last[0] != whole:
                last[0], last[1] = whole, time.monotonic()
            return whole == expect_whole and partial == 0
        self.wait(done, "%d whole gangs, none partly bound" % expect_whole)
        bound, whole, partial, _ = self.state(ns)
        self.assertEqual(self.over, [], "over capacity")
        pending = JOBS - whole - partial
        return max(0.0, last[1] - t_fault), "%d whole, %d partial, %d pending" % (whole, partial,
                                                                               pending)

    def expected_whole(self):
        return min(JOBS, (NODES + NODES_PER_LEAF - 1) // NODES_PER_LEAF)

    def run_fault(self, fault, workload, trigger, kill, restart=None, delay=3.0):
        """Makes the workload in a new namespace and, once @trigger(bound
        pods) holds, the fault: @kill(), then @restart() @delay seconds later
        (a Deployment's restart, an operator's). @trigger None: the fault
        comes first and the pods are made while it lasts. Waits for the end
        state and records it; returns the namespace."""
        ns = self.namespace()
        create = threading.Thread(target=self.create_jobs if workload == "Indexed Jobs"
                                  else self.create_bare, args=(ns,))
        try:
            settled = False
            if trigger is None:
                at, t_fault = 0, time.monotonic()
                kill()
                create.start()
            else:
                create.start()  # the fault may come while the pods are still being made

                def fired():
                    b = self.state(ns)[0]
                    return (b,) if trigger(b) else None
                at, = self.wait(fired, "the moment of %s" % fault)
                t_fault = time.monotonic()
                settled = self.state(ns)[1:3] == (self.expected_whole(), 0)
                kill()
            if restart:
                time.sleep(delay)  # the restart's own delay, not a wait for a condition
                restart()
        finally:
            if create.is_alive() or create.ident:
                create.join()
        secs, end = self.settle(ns, t_fault, self.expected_whole())
        took = "none left to place" if settled else "%.1f s" % secs
        RESULTS.append((fault, workload, str(at), end, took))
        print("%s (%s): bound at the fault %d; %s; %s" % (fault, workload, at, end, took),
              flush=True)
        return ns

    def kill_extender(self):
        self.stop_replica("gantry-scheduler", signal.SIGKILL)

    def restart_extender(self):
        self.start_replica("gantry-scheduler")

    # --- the faults, in order (one replica first, then two) ---------------
    def test_1_single_replica_kills(self):
        self.start_replica("gantry-scheduler")
        self.wait_ready("gantry-scheduler")
        some = JOBS * SIZE // 6
        ns = self.run_fault("SIGKILL before the first binds", "bare pods", None,
                            self.kill_extender, self.restart_extender)
        self.cleanup(ns)
        ns = self.run_fault("SIGKILL during the binds", "bare pods", lambda b: b >= some,
                            self.kill_extender, self.restart_extender)
        self.cleanup(ns)
        ns = self.run_fault("SIGKILL after the first binds", "bare pods",
                            lambda b: b >= self.expected_whole() * SIZE,
                            self.kill_extender, self.restart_extender)
        # the restarted extender still places: free one whole gang, a
        # waiting one takes its leaf
        self.wait_ready("gantry-scheduler")
        for j in range(JOBS):
            pods = [p for p in self.pods(ns) if self.gang(p) == "job-%d" % j]
            if all(p["spec"].get("nodeName") for p in pods):
                for p in pods:
                    self.plane.api("DELETE", "/api/v1/namespaces/%s/pods/%s?gracePeriodSeconds=0"
                                   % (ns, p["metadata"]["name"]))
                break
        self.wait(lambda: self.state(ns)[1:] == (self.expected_whole(), 0, JOBS - 1),
                  "a waiting gang to take the freed leaf")
        self.cleanup(ns)
        ns = self.run_fault("kube-apiserver restart during the binds", "bare pods",
                            lambda b: b >= some,
                            self.stop_apiserver, self.restart_apiserver)
        self.cleanup(ns)
        self.stop_replica("gantry-scheduler")

    def holder(self):
        return self.plane.api("GET", "/apis/coordination.k8s.io/v1/namespaces/%s/leases/%s"
                              % (SA_NS, SA))["spec"]["holderIdentity"]

    def test_2_standby_takes_over(self):
        self.start_replica("replica-a", leader_elect=True)
        self.wait_ready("replica-a")
        self.start_replica("replica-b", leader_elect=True)
        self.assertEqual(self.holder(), "replica-a")
        ns = self.run_fault("SIGKILL of the active replica (standby takes over)", "bare pods",
                            lambda b: b >= JOBS * SIZE // 6,
                            lambda: self.stop_replica("replica-a", signal.SIGKILL))
        self.assertEqual(self.holder(), "replica-b")
        self.cleanup(ns)
        self.stop_replica("replica-b")

    def test_3_indexed_jobs(self):
        # last: Job pods carry the Job controller's finalizer; nothing after
        # this needs their capacity back
        self.start_replica("gantry-scheduler")
        self.wait_ready("gantry-scheduler")
        self.run_fault("SIGKILL during the binds", "Indexed Jobs",
                       lambda b: b >= JOBS * SIZE // 6, self.kill_extender, self.restart_extender)
        self.stop_replica("gantry-scheduler")


if __name__ == "__main__":
    cp.main()
