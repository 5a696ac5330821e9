"""gantry-scheduler over HTTP, with request bodies captured from a real
kube-scheduler v1.26 (fixtures/), in both node-cache modes: their reply
shapes, Gantry's refusals and scores, bind reservations, concurrent binds,
malformed / truncated / oversized bodies, /healthz, /metrics and TLS.
The cluster comes from fixtures/topology.json and fixtures/state.json:
gpu-node-1 and -2 on leaf-1 (100 Gbps uplink, Ceph cluster ceph-a attached,
150 Gbps), gpu-node-3 on leaf-2 (20 Gbps uplink, an rdma target tgt-a).
"""
import copy
import json
import os
import subprocess
import tempfile
import shutil
import threading
import time
import unittest
import uuid

from sched_harness import PKITestCase, Scheduler, fixture, fixture_json, wait_for

NC_TRUE_FILTER = "nodecache-true-001-filter.json"
NC_TRUE_PRIO = "nodecache-true-002-prioritize.json"
NC_FALSE_FILTER = "upstream-nodecache-false-001-filter.json"
NC_FALSE_PRIO = "upstream-nodecache-false-002-prioritize.json"


def with_pod(args, annotations=None, claims=(), labels=None, uid=None, name=None):
    """A copy of captured ExtenderArgs whose Pod has Gantry annotations / PVCs."""
    a = copy.deepcopy(args)
    md = a["Pod"]["metadata"]
    if annotations:
        md.setdefault("annotations", {}).update(annotations)
    if labels:
        md.setdefault("labels", {}).update(labels)
    md["uid"] = uid or str(uuid.uuid4())
    if name:
        md["name"] = name
    for c in claims:
        a["Pod"]["spec"]["volumes"].append(
            {"name": c, "persistentVolumeClaim": {"claimName": c}})
    return a


class ExtenderHTTPTest(unittest.TestCase):
    def setUp(self):
        self.s = Scheduler().start()

    def tearDown(self):
        rc = self.s.stop()
        self.assertEqual(rc, 0, "gantry-scheduler did not exit cleanly")

    # -- captured bodies as sent ------------------------------------------------

    def test_captured_bodies_node_cache_true(self):
        for name in ("nodecache-true-001-filter.json", "nodecache-true-003-filter.json"):
            sent = fixture_json(name)
            status, r = self.s.post("filter", fixture(name))
            self.assertEqual(status, 200, r)
            self.assertIsNone(r["Nodes"])
            self.assertEqual(r["NodeNames"], sent["NodeNames"])  # no demand: all pass
            self.assertEqual(r["FailedNodes"], {})
            self.assertEqual(r["Error"], "")
        for name in ("nodecache-true-002-prioritize.json", "nodecache-true-004-prioritize.json"):
            sent = fixture_json(name)
            status, r = self.s.post("prioritize", fixture(name))
            self.assertEqual(status, 200, r)
            self.assertEqual([h["Host"] for h in r], sent["NodeNames"])
            for h in r:
                self.assertTrue(0 <= h["Score"] <= 10)

    def test_captured_bodies_node_cache_false(self):
        for name in ("upstream-nodecache-false-001-filter.json",
                     "upstream-nodecache-false-003-filter.json"):
            sent = fixture_json(name)
            status, r = self.s.post("filter", fixture(name))
            self.assertEqual(status, 200, r)
            self.assertIsNone(r["NodeNames"])
            # whole Node objects come back, as sent
            self.assertEqual(r["Nodes"]["items"], sent["Nodes"]["items"])
            self.assertEqual(r["FailedNodes"], {})
        for name in ("upstream-nodecache-false-002-prioritize.json",
                     "upstream-nodecache-false-004-prioritize.json"):
            sent = fixture_json(name)
            status, r = self.s.post("prioritize", fixture(name))
            self.assertEqual(status, 200, r)
            self.assertEqual([h["Host"] for h in r],
                             [n["metadata"]["name"] for n in sent["Nodes"]["items"]])

    # -- Gantry's decisions -------------------------------------------------------

    def test_filter_refuses_saturated_uplink(self):
        args = with_pod(fixture_json(NC_TRUE_FILTER),
                        annotations={"gantry.io/dataset-read-gbps": "25"},
                        claims=["train-data"])
        status, r = self.s.post("filter", args)
        self.assertEqual(status, 200, r)
        self.assertEqual(r["NodeNames"], ["gpu-node-1", "gpu-node-2"])
        self.assertEqual(r["FailedNodes"],
                         {"gpu-node-3": "leaf uplink full (pod needs 25 Gbps)"})

    def test_per_gpu_rate_from_storage_class(self):
        # no annotation: 1 GPU x 10 Gbps/GPU (gantry-dataset) fits leaf-2's 20
        args = with_pod(fixture_json(NC_TRUE_FILTER), claims=["train-data"])
        args["Pod"]["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "3"
        status, r = self.s.post("filter", args)
        self.assertEqual(status, 200, r)
        # 3 GPUs x 10 = 30 Gbps
        self.assertEqual(r["FailedNodes"],
                         {"gpu-node-3": "leaf uplink full (pod needs 30 Gbps)"})

    def test_unreachable_target_is_unresolvable(self):
        # the checkpoint PVC is unbound: its StorageClass names tgt-a (rdma)
        args = with_pod(fixture_json(NC_TRUE_FILTER),
                        annotations={"gantry.io/checkpoint-write-gbps": "5"}, claims=["ckpt"])
        status, r = self.s.post("filter", args)
        self.assertEqual(status, 200, r)
        self.assertEqual(r["NodeNames"], ["gpu-node-3"])
        self.assertEqual(r["FailedAndUnresolvableNodes"]["gpu-node-1"],
                         "checkpoint target serves rdma only, node has no rdma")
        self.assertEqual(r["FailedNodes"], {})

    def test_node_cache_false_reads_labels_from_request(self):
        args = with_pod(fixture_json(NC_FALSE_FILTER),
                        annotations={"gantry.io/dataset-read-gbps": "60"})
        for n in args["Nodes"]["items"]:
            n["metadata"]["labels"]["network.topology.nvidia.com/leaf"] = "leaf-1"
            n["metadata"]["labels"]["gantry.io/nic-gbps"] = "50"
        status, r = self.s.post("filter", args)
        self.assertEqual(status, 200, r)
        self.assertEqual(r["Nodes"]["items"], [])
        self.assertEqual(r["FailedNodes"]["gpu-node-2"],
                         "node NIC full (pod needs 60 Gbps)")

    def test_prioritize_prefers_backend_leaf(self):
        args = with_pod(fixture_json(NC_TRUE_PRIO),
                        annotations={"gantry.io/dataset-read-gbps": "10"}, claims=["train-data"])
        status, r = self.s.post("prioritize", args)
        self.assertEqual(status, 200, r)
        score = {h["Host"]: h["Score"] for h in r}
        self.assertGreater(score["gpu-node-1"], score["gpu-node-3"])
        self.assertEqual(score["gpu-node-1"], score["gpu-node-2"])

    def test_prioritize_keeps_a_job_together(self):
        job = {"gantry.io/job": "llm"}
        first = with_pod(fixture_json(NC_TRUE_FILTER), labels=job, name="w0")
        self.s.post("filter", first)
        status, r = self.s.post("bind", {"PodName": "w0", "PodNamespace": "default",
                                         "PodUID": first["Pod"]["metadata"]["uid"],
                                         "Node": "gpu-node-3"})
        self.assertEqual(r, {"Error": ""})
        second = with_pod(fixture_json(NC_TRUE_PRIO), labels=job, name="w1")
        status, r = self.s.post("prioritize", second)
        score = {h["Host"]: h["Score"] for h in r}
        self.assertGreater(score["gpu-node-3"], score["gpu-node-1"])

    def test_bind_reserves_headroom(self):
        # gpu-node-1's NIC is 100 Gbps; each pod reads 40 from ceph-a (same leaf)
        base = fixture_json(NC_TRUE_FILTER)
        results = []
        for i in range(3):
            p = with_pod(base, annotations={"gantry.io/dataset-read-gbps": "40"},
                         claims=["train-data"], name="r%d" % i)
            self.assertEqual(self.s.post("filter", p)[0], 200)
            status, r = self.s.post("bind", {"PodName": "r%d" % i, "PodNamespace": "default",
                                             "PodUID": p["Pod"]["metadata"]["uid"],
                                             "Node": "gpu-node-1"})
            self.assertEqual(status, 200)
            results.append(r["Error"])
        self.assertEqual(results[:2], ["", ""])
        self.assertEqual(results[2], "gpu-node-1 NIC: 20 Gbps free, pod needs 40 Gbps")
        # and filter now sees the reservations
        p = with_pod(base, annotations={"gantry.io/dataset-read-gbps": "40"}, claims=["train-data"])
        status, r = self.s.post("filter", p)
        self.assertEqual(r["FailedNodes"]["gpu-node-1"], "node NIC full (pod needs 40 Gbps)")
        self.assertIn("gpu-node-2", r["NodeNames"])

    def test_bind_of_pod_not_filtered_asks_for_retry(self):
        # its demand is unknown: binding would charge nothing, so refuse and
        # let kube-scheduler filter it again
        p = with_pod(fixture_json(NC_TRUE_FILTER), annotations={"gantry.io/dataset-read-gbps": "40"},
                     claims=["train-data"], name="nf")
        bind = {"PodName": "nf", "PodNamespace": "default",
                "PodUID": p["Pod"]["metadata"]["uid"], "Node": "gpu-node-1"}
        status, r = self.s.post("bind", bind)
        self.assertEqual((status, r), (200, {"Error": "pod default/nf: not seen in filter; retry"}))
        # after the filter, the bind charges the demand
        self.assertEqual(self.s.post("filter", p)[0], 200)
        self.assertEqual(self.s.post("bind", bind), (200, {"Error": ""}))
        status, r = self.s.post("filter", with_pod(fixture_json(NC_TRUE_FILTER),
                                                   annotations={"gantry.io/dataset-read-gbps": "80"},
                                                   claims=["train-data"]))
        self.assertEqual(r["FailedNodes"]["gpu-node-1"], "node NIC full (pod needs 80 Gbps)")

    def test_concurrent_binds_never_overcommit(self):
        # 16 pods x 30 Gbps race for ceph-a (150 Gbps) through 8 threads: exactly 5 fit
        base = fixture_json(NC_TRUE_FILTER)
        pods = []
        for i in range(16):
            p = with_pod(base, annotations={"gantry.io/dataset-read-gbps": "30"},
                         claims=["train-data"], name="c%d" % i)
            self.assertEqual(self.s.post("filter", p)[0], 200)
            pods.append(p)
        errors = []
        lock = threading.Lock()

        def worker(chunk):
            for i, p in chunk:
                _, r = self.s.post("bind", {"PodName": "c%d" % i, "PodNamespace": "default",
                                            "PodUID": p["Pod"]["metadata"]["uid"],
                                            "Node": "gpu-node-%d" % (1 + i % 2)})
                with lock:
                    errors.append(r["Error"])

        items = list(enumerate(pods))
        threads = [threading.Thread(target=worker, args=(items[k::8],)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        self.assertEqual(len(errors), 16)
        self.assertEqual(errors.count(""), 5)
        for e in errors:
            self.assertTrue(e == "" or e.startswith("backend ceph-a: ") or " NIC: " in e, e)

    # -- bad requests ---------------------------------------------------------------

    def test_malformed_json_is_400(self):
        status, r = self.s.post("filter", b'{"Pod": {"metadata": }')
        self.assertEqual(status, 400)
        self.assertIn("request body: invalid JSON at line 1", r["Error"])

    def test_truncated_bodies_are_400(self):
        body = fixture(NC_FALSE_FILTER)
        for cut in (1, len(body) // 3, len(body) // 2, len(body) - 1):
            for verb in ("filter", "prioritize", "bind"):
                status, r = self.s.post(verb, body[:cut])
                self.assertEqual(status, 400, (verb, cut, r))
                self.assertIn("invalid JSON", r["Error"])

    def test_wrong_shapes_are_400(self):
        cases = [
            ({"Pod": 3, "Nodes": None, "NodeNames": ["a"]}, "ExtenderArgs.Pod: must be a Pod object"),
            ({"Pod": {"metadata": {"name": "p"}}, "Nodes": None, "NodeNames": None},
             "ExtenderArgs: Nodes and NodeNames are both missing or null"),
            ({"Pod": {"metadata": {"name": "p"}}, "NodeNames": [1]},
             "ExtenderArgs.NodeNames[0]: must be a non-empty string"),
            ({"Pod": {"metadata": {"name": "p"}}, "Nodes": {"items": [{}]}},
             "ExtenderArgs.Nodes.items[0].metadata.name: must be a non-empty string"),
            ([1, 2], "request body: must be a JSON object"),
        ]
        for body, msg in cases:
            status, r = self.s.post("filter", body)
            self.assertEqual(status, 400, body)
            self.assertEqual(r["Error"], msg)
        status, r = self.s.post("bind", {"PodName": "p", "PodNamespace": "default", "Node": "n"})
        self.assertEqual(status, 400)
        self.assertEqual(r["Error"], "ExtenderBindingArgs.PodUID: must be a non-empty string")

    def test_bad_annotation_is_a_protocol_error(self):
        args = with_pod(fixture_json(NC_TRUE_FILTER),
                        annotations={"gantry.io/dataset-read-gbps": "lots"})
        status, r = self.s.post("filter", args)
        self.assertEqual(status, 200)
        self.assertEqual(r["Error"], 'pod default/gpu-pod-d: annotation gantry.io/dataset-read-gbps: '
                                     '"lots" is not a number of Gbps >= 0')

    def test_unknown_verb_and_method(self):
        self.assertEqual(self.s.request("POST", "/preempt", b"{}")[0], 404)
        self.assertEqual(self.s.request("DELETE", "/filter")[0], 405)
        self.assertEqual(self.s.request("GET", "/nothing")[0], 404)

    def test_healthz_and_metrics(self):
        self.assertEqual(self.s.request("GET", "/healthz"), (200, b"ok\n"))
        self.s.post("filter", fixture(NC_TRUE_FILTER))
        self.s.post("filter", b"{")
        # a bind goes through the bind queue: its wait there is counted apart
        self.s.post("bind", {"PodName": "m", "PodNamespace": "default", "PodUID": "u-m",
                             "Node": "gpu-node-1"})
        status, text = self.s.request("GET", "/metrics")
        self.assertEqual(status, 200)
        text = text.decode()
        self.assertIn('gantry_scheduler_requests_total{verb="filter",code="200"} 1', text)
        self.assertIn('gantry_scheduler_requests_total{verb="filter",code="400"} 1', text)
        self.assertIn("gantry_scheduler_nodes 3", text)
        self.assertIn('gantry_scheduler_request_seconds_count{verb="filter"} 2', text)
        self.assertIn('gantry_scheduler_request_seconds_count{verb="bind"} 1', text)
        self.assertIn("gantry_scheduler_bind_queue_wait_seconds_count 1", text)


def connections_total(s, protocol=None):
    """gantry_scheduler_connections_total from @s's /metrics: the series of
    @protocol ("h2", "http/1.1"), or all summed (0 if absent)."""
    status, text = s.request("GET", "/metrics")
    assert status == 200, status
    total = 0
    for line in text.decode().splitlines():
        if line.startswith("gantry_scheduler_connections_total{"):
            if protocol is None or 'protocol="%s"' % protocol in line:
                total += int(float(line.split()[-1]))
    return total


def fold_failed_nodes(total, failed):
    """The FailedScheduling event text kube-scheduler (v1.26 FitError.Error)
    makes of an extender's FailedNodes: equal reasons counted, "N reason"
    sorted as strings, joined with ", "."""
    counts = {}
    for reason in failed.values():
        counts[reason] = counts.get(reason, 0) + 1
    return "0/%d nodes are available: %s." % (
        total, ", ".join(sorted("%d %s" % (n, r) for r, n in counts.items())))


def write_fabric(tmp, nodes=500, per_leaf=8, storage_uplink_gbps=0, bound=()):
    """The gang scenario's fabric as a topology file and a --state file in @tmp:
    @nodes nodes of 8 GPUs and 400 Gbps NICs, @per_leaf to a leaf with an
    800 Gbps uplink, Ceph cluster ceph-s (4000 Gbps) on its own leaf
    storage-leaf (uplink @storage_uplink_gbps, 0 = unknown), a dataset PVC
    "data" on it, and @bound pods: (name, node, read Gbps, GPUs, with PVC)."""
    leaves = (nodes + per_leaf - 1) // per_leaf
    topo = {"defaults": {"nicGbps": 400},
            "leaves": [{"name": "leaf-%d" % l, "spine": "spine-1", "uplinkGbps": 800}
                       for l in range(leaves)],
            "backends": [{"name": "ceph-s", "kind": "ceph", "gbps": 4000,
                          "leaves": ["storage-leaf"]}]}
    sleaf = {"name": "storage-leaf", "spine": "spine-1"}
    if storage_uplink_gbps:
        sleaf["uplinkGbps"] = storage_uplink_gbps
    topo["leaves"].append(sleaf)
    state = {
        "storageClasses": [{"metadata": {"name": "gantry-dataset"}, "provisioner": "csi.gantry.io",
                            "parameters": {"tier": "dataset", "clusterID": "ceph-s"}}],
        "persistentVolumes": [],
        "persistentVolumeClaims": [{"metadata": {"name": "data", "namespace": "default"},
                                    "spec": {"storageClassName": "gantry-dataset"}}],
        "nodes": [{"metadata": {"name": "gpu-%03d" % i, "labels": {
                       "network.topology.nvidia.com/leaf": "leaf-%d" % (i // per_leaf),
                       "network.topology.nvidia.com/spine": "spine-1"}},
                   "status": {"allocatable": {"nvidia.com/gpu": "8"}}} for i in range(nodes)],
        "pods": []}
    for name, node, gbps, gpus, pvc in bound:
        pod = {"metadata": {"name": name, "namespace": "default", "uid": "uid-" + name,
                            "annotations": {"gantry.io/dataset-read-gbps": str(gbps)}},
               "spec": {"nodeName": node, "volumes": [], "containers": [
                   {"name": "c", "resources": {"requests": {"nvidia.com/gpu": str(gpus)}}}]}}
        if pvc:
            pod["spec"]["volumes"].append({"name": "d", "persistentVolumeClaim": {"claimName": "data"}})
        state["pods"].append(pod)
    paths = os.path.join(tmp, "topology.json"), os.path.join(tmp, "state.json")
    for path, doc in zip(paths, (topo, state)):
        with open(path, "w") as f:
            json.dump(doc, f)
    return paths


def filter_all_refused(test, s, name):
    """Filters a pod reading 100 Gbps from PVC "data" against the 500 nodes
    of write_fabric(); checks every node is refused; returns (args, reply)."""
    args = with_pod(fixture_json(NC_TRUE_FILTER), name=name,
                    annotations={"gantry.io/dataset-read-gbps": "100"}, claims=["data"])
    args["NodeNames"] = ["gpu-%03d" % i for i in range(500)]
    status, r = s.post("filter", args)
    test.assertEqual(status, 200, r)
    test.assertEqual(r["NodeNames"], [])
    test.assertEqual(len(r["FailedNodes"]), 500)
    return args, r


class FailedSchedulingEventTest(unittest.TestCase):
    """The reasons of a 500-node refusal fold into a short event."""

    def test_500_node_refusal_folds_by_cause(self):
        # leaves 0-54 (440 nodes): two pods read 400 Gbps each across the
        # fabric, so their NICs (110) and the 800 Gbps uplinks (330 other
        # nodes) are full; leaves 55-62 (60 nodes): every GPU is taken
        bound = []
        for l in range(55):
            bound += [("u%d-a" % l, "gpu-%03d" % (8 * l), 400, 0, False),
                      ("u%d-b" % l, "gpu-%03d" % (8 * l + 1), 400, 0, False)]
        bound += [("g%d" % i, "gpu-%03d" % i, 0, 8, False) for i in range(440, 500)]
        tmp = tempfile.mkdtemp(prefix="gantry-sched-fold-%d-" % os.getpid())
        try:
            topo, state = write_fabric(tmp, bound=bound)
            s = Scheduler(topology=topo, state=state).start()
            try:
                _, r = filter_all_refused(self, s, "train-7-0")
                event = fold_failed_nodes(500, r["FailedNodes"])
                self.assertEqual(event, "0/500 nodes are available: "
                                        "110 node NIC full (pod needs 100 Gbps), "
                                        "330 leaf uplink full (pod needs 100 Gbps), "
                                        "60 not enough free GPUs (pod needs 1).")
                self.assertLess(len(event), 200)
                # the names and exact numbers are in one log line and the metrics
                logs = s.logs()
                lines = [l for l in logs.splitlines() if "sched.filter_refused" in l]
                self.assertEqual(len(lines), 1, logs[-2000:])
                self.assertIn("pod=default/train-7-0 nodes=500 refused=500 "
                              "causes=gpus:60,nic:110,uplink:330", lines[0])
                self.assertIn("gpu-000 NIC: 0 Gbps free, pod needs 100 Gbps", lines[0])
                self.assertIn("gpu-002: leaf-0 uplink: 0 Gbps free, pod needs 100 Gbps", lines[0])
                _, text = s.request("GET", "/metrics")
                text = text.decode()
                self.assertIn('gantry_scheduler_node_refusals_total{resource="uplink"} 330', text)
                self.assertIn('gantry_scheduler_node_refusals_total{resource="nic"} 110', text)
                self.assertIn('gantry_scheduler_node_refusals_total{resource="gpus"} 60', text)
            finally:
                self.assertEqual(s.stop(), 0)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


class StorageLeafUplinkTest(unittest.TestCase):
    """Reads from a backend on its own leaf cross that leaf's uplink."""

    def test_full_storage_leaf_uplink_refuses(self):
        # eight pods on eight leaves read 100 Gbps each from ceph-s: its
        # leaf's 800 Gbps uplink is full, every GPU leaf has room
        bound = [("r%d" % l, "gpu-%03d" % (8 * l), 100, 1, True) for l in range(8)]
        tmp = tempfile.mkdtemp(prefix="gantry-sched-sleaf-%d-" % os.getpid())
        try:
            topo, state = write_fabric(tmp, storage_uplink_gbps=800, bound=bound)
            s = Scheduler(topology=topo, state=state).start()
            try:
                args, r = filter_all_refused(self, s, "reader")
                self.assertEqual(fold_failed_nodes(500, r["FailedNodes"]),
                                 "0/500 nodes are available: "
                                 "500 storage leaf uplink full (pod needs 100 Gbps).")
                self.assertEqual(s.post("bind", {"PodName": "reader", "PodNamespace": "default",
                                                 "PodUID": args["Pod"]["metadata"]["uid"],
                                                 "Node": "gpu-100"}),
                                 (200, {"Error": "storage leaf storage-leaf uplink: 0 Gbps free, "
                                                 "pod needs 100 Gbps"}))
                # the same read from no backend (an annotation alone) takes
                # only the GPU leaf's uplink: it fits
                other = with_pod(fixture_json(NC_TRUE_FILTER),
                                 annotations={"gantry.io/dataset-read-gbps": "100"})
                other["NodeNames"] = ["gpu-100"]
                status, r = s.post("filter", other)
                self.assertEqual(r["NodeNames"], ["gpu-100"], r)
                _, text = s.request("GET", "/metrics")
                self.assertIn('gantry_scheduler_node_refusals_total{resource="storage_uplink"} 500',
                              text.decode())
            finally:
                self.assertEqual(s.stop(), 0)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


class StateModeBindTest(unittest.TestCase):
    """Under --state alone no API server will ever confirm a bind, so
    it is final: its charge does not expire after --reservation-ttl."""

    def test_bind_does_not_expire(self):
        s = Scheduler("--reservation-ttl", "1").start()
        try:
            p = with_pod(fixture_json(NC_TRUE_FILTER), annotations={"gantry.io/dataset-read-gbps": "40"},
                         claims=["train-data"], name="st")
            self.assertEqual(s.post("filter", p)[0], 200)
            bound_at = time.monotonic()
            self.assertEqual(s.post("bind", {"PodName": "st", "PodNamespace": "default",
                                             "PodUID": p["Pod"]["metadata"]["uid"],
                                             "Node": "gpu-node-1"}), (200, {"Error": ""}))
            _, text = s.request("GET", "/metrics")
            self.assertIn("gantry_scheduler_reservations 0\n", text.decode())
            # past the TTL (and the once-a-second expiry pass), the NIC
            # (100 Gbps) still holds the 40 bound
            probe = with_pod(fixture_json(NC_TRUE_FILTER),
                             annotations={"gantry.io/dataset-read-gbps": "80"}, claims=["train-data"])
            while time.monotonic() < bound_at + 2.5:
                self.assertEqual(s.post("filter", probe)[0], 200)
                time.sleep(0.1)
            status, r = s.post("filter", probe)
            self.assertEqual(r["FailedNodes"].get("gpu-node-1"), "node NIC full (pod needs 80 Gbps)")
            self.assertNotIn("sched.reservations_expired", s.logs())
        finally:
            self.assertEqual(s.stop(), 0)


class LimitsTest(unittest.TestCase):
    def test_oversized_body_is_413(self):
        s = Scheduler("--max-body-bytes", "8192").start()
        try:
            big = with_pod(fixture_json(NC_TRUE_FILTER))
            big["NodeNames"] = ["gpu-node-%d" % i for i in range(2000)]
            body = json.dumps(big).encode()
            self.assertGreater(len(body), 8192)
            status, r = s.post("filter", body)
            self.assertEqual(status, 413)
            self.assertIn("the limit is 8192", r["Error"])
            # a body within the limit still works after
            self.assertEqual(s.post("filter", fixture(NC_TRUE_FILTER))[0], 200)
        finally:
            self.assertEqual(s.stop(), 0)

    def test_bad_flags_and_files_name_the_problem(self):
        tmp = tempfile.mkdtemp(prefix="gantry-sched-test-%d-" % os.getpid())
        try:
            topo = os.path.join(tmp, "t.json")
            with open(topo, "w") as f:
                f.write('{"leaves": [{"name": "l1", "uplinkGpbs": 10}]}')
            p = subprocess.run([os.environ["GANTRY_SCHEDULER"], "--insecure-http", "--topology", topo],
                               capture_output=True, timeout=30)
            self.assertEqual(p.returncode, 1)
            self.assertIn(b"leaves[0].uplinkGpbs: unknown key", p.stderr)
            p = subprocess.run([os.environ["GANTRY_SCHEDULER"], "--threads", "0"],
                               capture_output=True, timeout=30)
            self.assertEqual(p.returncode, 2)
            self.assertIn(b"--threads", p.stderr)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


class TLSTest(PKITestCase):
    """HTTPS with client certificates: the test PKI (tests/fakeapi/make_test_pki.sh)
    gives the serving certificate, the client CA, a client certificate it
    signed, and one of the same subject from another CA."""

    def serve(self, client=None):
        return Scheduler(tls=(self.f("server.crt"), self.f("server.key"), self.f("ca.crt")),
                         server_ca=self.f("ca.crt"), client=client).start()

    def as_client(self, s, client):
        s.client = client
        return s

    def test_verbs_need_a_client_certificate_from_the_ca(self):
        s = self.serve()
        try:
            bind = {"PodName": "p", "PodNamespace": "default", "PodUID": "u", "Node": "gpu-node-1"}
            wrong = {
                "no client certificate": None,
                "client certificate signed by an unknown authority":
                    (self.f("other-client.crt"), self.f("other-client.key")),
                # the server's own certificate: the right CA, not for client authentication
                "client certificate not for TLS client authentication":
                    (self.f("server.crt"), self.f("server.key")),
            }
            for reason, client in wrong.items():
                self.as_client(s, client)
                for verb, body in (("filter", fixture(NC_TRUE_FILTER)),
                                   ("prioritize", fixture(NC_TRUE_PRIO)), ("bind", bind)):
                    status, r = s.post(verb, body)
                    self.assertEqual(status, 403, (reason, verb, r))
                    self.assertIn("client certificate signed by gantry-scheduler's --client-ca", r["Error"])
                self.assertEqual(s.request("GET", "/metrics")[0], 403, reason)
                self.assertIn('reason="%s"' % reason, s.logs())
                # kubelet's probe needs no certificate
                self.assertEqual(s.request("GET", "/healthz"), (200, b"ok\n"))
            # nothing was bound by the refused binds: the pod is still unknown
            self.as_client(s, (self.f("client.crt"), self.f("client.key")))
            status, r = s.post("filter", fixture(NC_TRUE_FILTER))
            self.assertEqual((status, r["Error"]), (200, ""))
            status, r = s.post("bind", bind)
            self.assertEqual((status, r), (200, {"Error": "pod default/p: not seen in filter; retry"}))
            status, text = s.request("GET", "/metrics")
            self.assertEqual(status, 200)
            # 3 wrong clients x (3 verbs + /metrics)
            self.assertIn('gantry_scheduler_requests_total{verb="refused",code="403"} 12',
                          text.decode())
        finally:
            self.assertEqual(s.stop(), 0)

    def test_a_refused_path_cannot_forge_a_log_line(self):
        # libmicrohttpd decodes the path: %0a is a newline by the time it is
        # logged, before any client check; quoted, it stays inside path="..."
        s = self.serve()
        try:
            forged = "event=sched.forged_by_path user=admin"
            path = "/filter%0ats=2026-01-01T00:00:00.000Z%20level=error%20" + \
                forged.replace(" ", "%20")
            status, _ = s.request("POST", path, b"{}", {"Content-Type": "application/json"})
            self.assertEqual(status, 403)
            wait_for(lambda: "sched.forged_by_path" in s.logs(), "the refusal logged")
            for line in s.logs().splitlines():
                if "sched.forged_by_path" in line:
                    self.assertIn("event=sched.client_refused", line)
                    self.assertIn('path="/filter\\nts=', line)
        finally:
            self.assertEqual(s.stop(), 0)

    def test_each_kept_alive_connection_is_checked(self):
        # the check is made once per connection (its TLS session's
        # certificate cannot change): every request of a refused connection
        # stays refused, also after an open probe, and a verified one serves
        # request after request, as kube-scheduler's kept-alive client does
        s = self.serve()
        try:
            for client, want in ((None, 403), ((self.f("other-client.crt"),
                                                self.f("other-client.key")), 403),
                                 ((self.f("client.crt"), self.f("client.key")), 200)):
                self.as_client(s, client)
                c = s.conn()
                try:
                    for path in ("/filter", "/healthz", "/filter", "/metrics", "/prioritize"):
                        body = {"/filter": fixture(NC_TRUE_FILTER),
                                "/prioritize": fixture(NC_TRUE_PRIO)}.get(path)
                        c.request("POST" if body else "GET", path, body=body,
                                  headers={"Content-Type": "application/json"})
                        r = c.getresponse()
                        r.read()
                        self.assertEqual(r.status, 200 if path == "/healthz" else want,
                                         (client, path))
                finally:
                    c.close()
            status, text = s.request("GET", "/metrics")
            # 2 refused clients x (2 filters + /metrics + prioritize)
            self.assertIn('gantry_scheduler_requests_total{verb="refused",code="403"} 8',
                          text.decode())
        finally:
            self.assertEqual(s.stop(), 0)

    def test_connections_are_counted_once_each(self):
        # the verbs keep their connection alive: one connection (one TLS
        # handshake) for many verbs, each counted once in
        # gantry_scheduler_connections_total (the /metrics reads are one
        # connection each: they answer "Connection: close")
        s = self.as_client(self.serve(), (self.f("client.crt"), self.f("client.key")))
        try:
            before = connections_total(s)
            c = s.conn()
            try:
                for verb, body in (("filter", fixture(NC_TRUE_FILTER)),
                                   ("prioritize", fixture(NC_TRUE_PRIO)),
                                   ("filter", fixture(NC_TRUE_FILTER)),
                                   ("bind", json.dumps({"PodName": "k", "PodNamespace": "default",
                                                        "PodUID": "u-k",
                                                        "Node": "gpu-node-1"}).encode())):
                    c.request("POST", "/" + verb, body=body,
                              headers={"Content-Type": "application/json"})
                    r = c.getresponse()
                    r.read()
                    self.assertEqual(r.status, 200, verb)
            finally:
                c.close()
            # the verbs' connection and the /metrics read's own
            self.assertEqual(connections_total(s) - before, 2)
        finally:
            self.assertEqual(s.stop(), 0)

    def test_a_verified_chain_is_not_verified_again(self):
        # each connection is a new handshake (GnuTLS checks there that the
        # client holds the key), but a chain that verified is not verified
        # again by the next connections; refusals are never remembered, and
        # a chain the server has not verified is checked in full
        s = self.serve()
        good = (self.f("client.crt"), self.f("client.key"))
        wrong_ca = (self.f("other-client.crt"), self.f("other-client.key"))
        not_client = (self.f("server.crt"), self.f("server.key"))
        try:
            self.as_client(s, good)
            for _ in range(3):
                self.assertEqual(s.post("filter", fixture(NC_TRUE_FILTER))[0], 200)
            # the three filters and this read: one verification
            self.assertEqual(s.metric("gantry_scheduler_client_verifications_total"), 1)
            for client in (wrong_ca, not_client, wrong_ca):
                self.as_client(s, client)
                self.assertEqual(s.post("filter", fixture(NC_TRUE_FILTER))[0], 403)
            self.as_client(s, good)
            self.assertEqual(s.post("filter", fixture(NC_TRUE_FILTER))[0], 200)
            self.assertEqual(s.metric("gantry_scheduler_client_verifications_total"), 4)
            # Python's client offers no ALPN: each relayed to HTTP/1.1
            self.assertEqual(connections_total(s, "http/1.1"), 10)
        finally:
            self.assertEqual(s.stop(), 0)

    def test_start_needs_tls_or_insecure_http_by_name(self):
        binary = os.environ["GANTRY_SCHEDULER"]
        cases = [
            ([], b"--tls-cert, --tls-key and --client-ca are all required (or --insecure-http"),
            (["--tls-cert", self.f("server.crt"), "--tls-key", self.f("server.key")],
             b"--tls-cert, --tls-key and --client-ca are all required"),
            (["--insecure-http", "--client-ca", self.f("ca.crt")],
             b"--insecure-http: not with --tls-cert, --tls-key or --client-ca"),
        ]
        for args, msg in cases:
            p = subprocess.run([binary, "--listen", "127.0.0.1:0"] + args, capture_output=True,
                               timeout=30)
            self.assertEqual(p.returncode, 2, args)
            self.assertIn(msg, p.stderr)
        p = subprocess.run([binary, "--listen", "127.0.0.1:0", "--tls-cert", self.f("server.crt"),
                            "--tls-key", self.f("server.key"), "--client-ca",
                            self.f("no-such-ca.crt")], capture_output=True, timeout=30)
        self.assertEqual(p.returncode, 1)
        self.assertIn(b"--client-ca " + self.f("no-such-ca.crt").encode(), p.stderr)

    def test_insecure_http_warns_at_start(self):
        s = Scheduler().start()  # the harness's plain HTTP is --insecure-http
        try:
            self.assertIn("sched.insecure_http", s.logs())
            self.assertIn("anyone who reaches", s.logs())
        finally:
            self.assertEqual(s.stop(), 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
