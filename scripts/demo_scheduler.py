"""Demo chapter: gantry-scheduler places a training job by fabric and storage
headroom, answering the very request bodies a real kube-scheduler sent.

The cluster is tests/scheduler/fixtures (gpu-node-1 and -2 on leaf-1 with the
Ceph cluster ceph-a, gpu-node-3 on leaf-2 behind a 20 Gbps uplink), given to
the extender as a --state file instead of an API server.
"""
import copy
import os
import sys
import time
import uuid

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def chapter_placement(say, build):
    sys.path.insert(0, os.path.join(ROOT, "tests", "scheduler"))
    os.environ["GANTRY_SCHEDULER"] = os.path.join(build, "bin", "gantry-scheduler")
    os.environ["GANTRY_SCHED_FIXTURES"] = os.path.join(ROOT, "tests", "scheduler", "fixtures")
    import sched_harness

    say("\n== 2. Placing a training job by fabric and storage headroom ==")
    t = time.monotonic()
    s = sched_harness.Scheduler().start()
    try:
        say("started gantry-scheduler on 127.0.0.1:%d (3 GPU nodes, 2 leaves, ceph-a on leaf-1)"
            % s.port, t)
        captured = sched_harness.fixture_json("nodecache-true-001-filter.json")

        def worker(i, gbps):
            a = copy.deepcopy(captured)
            md = a["Pod"]["metadata"]
            md["name"], md["uid"] = "trainer-%d" % i, str(uuid.uuid4())
            md["labels"] = {"gantry.io/job": "llm-pretrain"}
            md["annotations"] = {"gantry.io/dataset-read-gbps": str(gbps)}
            a["Pod"]["spec"]["volumes"].append(
                {"name": "data", "persistentVolumeClaim": {"claimName": "train-data"}})
            return a

        for i in range(4):
            a = worker(i, 40)
            t = time.monotonic()
            _, f = s.post("filter", a)
            _, p = s.post("prioritize", a)
            best = max((h for h in p if h["Host"] in f["NodeNames"]), key=lambda h: h["Score"],
                       default=None)
            say("trainer-%d reads 40 Gbps: fits %s; refused %s" % (
                i, ", ".join(f["NodeNames"]) or "nowhere",
                "; ".join("%s (%s)" % kv for kv in f["FailedNodes"].items()) or "none"), t)
            if not best:
                say("  -> stays pending until bandwidth frees up")
                continue
            t = time.monotonic()
            _, b = s.post("bind", {"PodName": a["Pod"]["metadata"]["name"], "PodNamespace": "default",
                                   "PodUID": a["Pod"]["metadata"]["uid"], "Node": best["Host"]})
            say("  -> bound to %s (score %d/10), its 40 Gbps reserved%s" % (
                best["Host"], best["Score"], "" if not b["Error"] else ": " + b["Error"]), t)
        _, m = s.request("GET", "/metrics")
        refusals = [l for l in m.decode().splitlines() if l.startswith("gantry_scheduler_node_refusals")]
        say("metrics: " + "; ".join(refusals))
    finally:
        s.stop()
    say("stopped gantry-scheduler")
