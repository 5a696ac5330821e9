"""Demo chapter: gantry-scheduler places an 8-pod training job on a simulated
64-node fabric, followed through the (FAKE) Kubernetes API server, then
gantryctl plan shows the job's storage path, its bottleneck and headroom.

The fabric: 8 leaves x 8 GPU nodes (8 GPUs, 200 Gbps NIC each, Topograph
labels), the Ceph cluster "demo" attached to leaf-8. Leaf uplinks differ
(oversubscription 1:1 to 8:1) and another job already runs on part of the
cluster, so headroom really differs between leaves. The job's pods go
through filter -> prioritize -> bind in the very body shapes a real
kube-scheduler sent (tests/scheduler/fixtures), and gantry-scheduler binds
through the fake API server, which records the Bindings.
"""
import collections
import copy
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
LEAVES, NODES_PER_LEAF, GPUS, NIC_GBPS = 8, 8, 8, 200
UPLINKS = {1: 400, 2: 800, 3: 1600, 4: 200, 5: 400, 6: 800, 7: 200, 8: 800}
BACKEND = "demo"  # the clusterID of chapter 2's Ceph cluster
BACKEND_GBPS = 1000
JOB, JOB_PODS, JOB_READ_GBPS = "llm-pretrain", 8, 50
# A gang of 28 nodes' worth: it fits one spine of an idle fabric, not now.
BIG_JOB, BIG_PODS, BIG_READ_GBPS = "llm-big", 28, 10


def node_name(leaf, i):
    return "gpu-l%d-n%d" % (leaf, i)


def fabric():
    """The topology file and the API objects of the simulated cluster."""
    topo = {"defaults": {"nicGbps": NIC_GBPS},
            "leaves": [{"name": "leaf-%d" % l, "spine": "spine-%d" % ((l - 1) // 4 + 1),
                        "uplinkGbps": UPLINKS[l]} for l in range(1, LEAVES + 1)],
            "backends": [{"name": BACKEND, "kind": "ceph", "gbps": BACKEND_GBPS,
                          "leaves": ["leaf-8"]}]}
    nodes = []
    for l in range(1, LEAVES + 1):
        for i in range(1, NODES_PER_LEAF + 1):
            nodes.append({"apiVersion": "v1", "kind": "Node", "metadata": {
                "name": node_name(l, i), "labels": {
                    "kubernetes.io/hostname": node_name(l, i),
                    "network.topology.nvidia.com/leaf": "leaf-%d" % l,
                    "network.topology.nvidia.com/spine": "spine-%d" % ((l - 1) // 4 + 1),
                    "gantry.io/nic-gbps": str(NIC_GBPS)}},
                "status": {"allocatable": {"nvidia.com/gpu": str(GPUS)},
                           "conditions": [{"type": "Ready", "status": "True"}]}})
    sc = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
          "metadata": {"name": "gantry-dataset"}, "provisioner": "csi.gantry.io",
          "parameters": {"tier": "dataset", "clusterID": BACKEND, "pool": "rbd",
                         "dataPool": "ecdata"}}
    pv = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pvc-imagenet"},
          "spec": {"storageClassName": "gantry-dataset", "accessModes": ["ReadOnlyMany"],
                   "csi": {"driver": "csi.gantry.io", "volumeHandle": "0001-0004-demo-imagenet",
                           "volumeAttributes": {"tier": "dataset", "clusterID": BACKEND,
                                                "pool": "rbd", "dataPool": "ecdata"}}},
          "status": {"phase": "Bound"}}
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
           "metadata": {"name": "imagenet", "namespace": "training"},
           "spec": {"storageClassName": "gantry-dataset", "volumeName": "pvc-imagenet",
                    "accessModes": ["ReadOnlyMany"]}, "status": {"phase": "Bound"}}
    # Another job already running: it fills leaf-8's first 4 nodes and leaf-3's
    # first 5, and its readers load leaf-4 and leaf-7's thin uplinks.
    running = [(8, i, 40) for i in range(1, 5)] + [(3, i, 40) for i in range(1, 6)] + \
              [(4, 1, 180), (7, 1, 170)]
    pods = []
    for k, (l, i, gbps) in enumerate(running):
        pods.append(pod("sweep-%d" % k, "sweep", gbps, node=node_name(l, i),
                        volume=(l == 8 or l == 3)))
    return topo, {"nodes": nodes, "storageclasses": [sc], "persistentvolumes": [pv],
                  "persistentvolumeclaims": [pvc], "pods": pods}


def pod(name, job, gbps, node=None, volume=True):
    p = {"apiVersion": "v1", "kind": "Pod",
         "metadata": {"name": name, "namespace": "training", "uid": str(uuid.uuid4()),
                      "labels": {"gantry.io/job": job},
                      "annotations": {"gantry.io/dataset-read-gbps": str(gbps)}},
         "spec": {"schedulerName": "gantry",
                  "containers": [{"name": "trainer", "image": "registry.invalid/trainer",
                                  "resources": {"requests": {"nvidia.com/gpu": str(GPUS)},
                                                "limits": {"nvidia.com/gpu": str(GPUS)}}}],
                  "volumes": [{"name": "data", "persistentVolumeClaim":
                               {"claimName": "imagenet", "readOnly": True}}] if volume else []},
         "status": {"phase": "Pending"}}
    if node:
        p["spec"]["nodeName"] = node
        p["status"]["phase"] = "Running"
    return p


def chapter_placement(say, build, number):
    sys.path.insert(0, os.path.join(ROOT, "tests", "scheduler"))
    os.environ["GANTRY_SCHEDULER"] = os.path.join(build, "bin", "gantry-scheduler")
    import sched_harness
    from sched_harness import wait_for

    say("\n== %d. Placing an 8-pod training job on a 64-node fabric ==" % number)
    tmp = tempfile.mkdtemp(prefix="gantry-demo-sched-%d-" % os.getpid())
    fake = s = None
    try:
        t = time.monotonic()
        topo, seed = fabric()
        topo_path, seed_path = os.path.join(tmp, "topology.json"), os.path.join(tmp, "seed.json")
        json.dump(topo, open(topo_path, "w"))
        job = [pod("%s-%d" % (JOB, i), JOB, JOB_READ_GBPS) for i in range(JOB_PODS)]
        seed["pods"] += job
        json.dump(seed, open(seed_path, "w"))
        token = "demo-%d-%s" % (os.getpid(), uuid.uuid4().hex)
        fake = sched_harness.FakeAPI(token, seed=seed_path)
        say("started the FAKE Kubernetes API server on %s: 64 GPU nodes on 8 leaves "
            "(8 GPUs, %d Gbps NIC each), Ceph cluster %s (%d Gbps) on leaf-8" %
            (fake.base, NIC_GBPS, BACKEND, BACKEND_GBPS), t)
        say("  leaf uplinks (Gbps; 8 x %d = %d Gbps down): %s" % (
            NIC_GBPS, NODES_PER_LEAF * NIC_GBPS,
            ", ".join("leaf-%d %d (%g:1)" % (l, u, NODES_PER_LEAF * NIC_GBPS / u)
                      for l, u in sorted(UPLINKS.items()))))
        say("  already running (job sweep): 4 nodes of leaf-8, 5 of leaf-3, readers loading "
            "leaf-4 (180 Gbps) and leaf-7 (170 Gbps)")
        kubeconfig = fake.write_kubeconfig(os.path.join(tmp, "kubeconfig"))
        t = time.monotonic()
        s = sched_harness.Scheduler("--kubeconfig", kubeconfig, topology=topo_path, state=None)
        s.start()
        wait_for(lambda: s.metric("gantry_scheduler_nodes") == LEAVES * NODES_PER_LEAF,
                 "gantry-scheduler's informers to list the nodes")
        say("started gantry-scheduler on 127.0.0.1:%d, following the API server "
            "(kubeconfig, bearer token): %d nodes in its model" %
            (s.port, s.metric("gantry_scheduler_nodes")), t)

        say("job %s: %d pods x %d GPUs, each reading %d Gbps from the dataset "
            "(annotation gantry.io/dataset-read-gbps), label gantry.io/job=%s" %
            (JOB, JOB_PODS, GPUS, JOB_READ_GBPS, JOB))
        captured = sched_harness.fixture_json("nodecache-true-001-filter.json")
        names = [n["metadata"]["name"] for n in seed["nodes"]]
        leaf_of = {n["metadata"]["name"]: n["metadata"]["labels"]
                   ["network.topology.nvidia.com/leaf"] for n in seed["nodes"]}
        placed = {}
        t_job = time.monotonic()
        for p in job:
            args = copy.deepcopy(captured)  # kube-scheduler's body, nodeCacheCapable: true
            args["Pod"], args["NodeNames"] = p, names
            t = time.monotonic()
            _, f = s.post("filter", args)
            _, pr = s.post("prioritize", args)
            fits = set(f["NodeNames"] or [])
            ranked = sorted((h for h in pr if h["Host"] in fits), key=lambda h: -h["Score"])
            if not ranked:
                say("%s: fits nowhere, stays pending" % p["metadata"]["name"], t)
                continue
            best = ranked[0]  # kube-scheduler: highest score (ties broken at random there)
            per_leaf = {}
            for h in ranked:
                per_leaf.setdefault(leaf_of[h["Host"]], h["Score"])
            runner_up = ", ".join("%s %d" % kv for kv in list(per_leaf.items())[1:3])
            md = p["metadata"]
            _, b = s.post("bind", {"PodName": md["name"], "PodNamespace": md["namespace"],
                                   "PodUID": md["uid"], "Node": best["Host"]})
            placed[md["name"]] = best["Host"]
            by_reason = collections.Counter(why_kind(r) for r in f["FailedNodes"].values())
            say("%s -> %s (%s, score %d/10; next best %s): %d fit, %d refused [%s]%s" % (
                md["name"], best["Host"], leaf_of[best["Host"]], best["Score"], runner_up,
                len(fits),
                len(f["FailedNodes"]), ", ".join("%d %s" % (n, k) for k, n in
                                                 by_reason.most_common()),
                "" if not b["Error"] else " BIND ERROR: " + b["Error"]), t)
        say("placed %d/%d pods" % (len(placed), JOB_PODS), t_job)

        say("  why, in Gantry's words (one refusal of each kind, from the last filter):")
        seen = set()
        for node, why in sorted(f["FailedNodes"].items()):
            k = why_kind(why)
            if k not in seen:
                seen.add(k)
                say("    " + (why if why.startswith(node + ":") else "%s: %s" % (node, why)))
        leaves = collections.Counter(leaf_of[n] for n in placed.values())
        say("  leaves used: " + ", ".join("%s (%d pods)" % kv for kv in sorted(leaves.items())))

        t = time.monotonic()
        bindings = fake.get("/fake/bindings")
        ours = [b for b in bindings if b["name"].startswith(JOB)]
        ok = all(placed.get(b["name"]) == b["node"] for b in ours)
        say("the FAKE API server recorded %d Bindings (pods/binding), matching the "
            "placements: %s" % (len(ours), ok), t)
        t = time.monotonic()
        wait_for(lambda: s.metric("gantry_scheduler_reservations") == 0,
                 "the watch to confirm the bound pods")
        say("reservations: each bind reserved its pod's %d Gbps at once; the watch then saw "
            "the pods bound and confirmed them: %d ledger entries (%d of job sweep + %d), "
            "reservations left: %d" % (JOB_READ_GBPS, s.metric("gantry_scheduler_ledger_entries"),
             len(seed["pods"]) - JOB_PODS, len(ours),
             s.metric("gantry_scheduler_reservations")), t)

        # A gang that does not fit whole: refused for every member, one reason.
        t = time.monotonic()
        big = [pod("%s-%d" % (BIG_JOB, i), BIG_JOB, BIG_READ_GBPS) for i in range(BIG_PODS)]
        for p in big:
            p["metadata"]["annotations"]["gantry.io/job-size"] = str(BIG_PODS)
        reasons = collections.Counter()
        for p in big:
            args = copy.deepcopy(captured)
            args["Pod"], args["NodeNames"] = p, names
            _, f = s.post("filter", args)
            if f["NodeNames"]:
                raise RuntimeError("%s passed a node: the gang should be refused whole" %
                                   p["metadata"]["name"])
            reasons.update(f["FailedNodes"].values())
        say("job %s: %d pods x %d GPUs with gantry.io/job-size: \"%d\" (a gang): every member "
            "refused, with one reason for every node:" % (BIG_JOB, BIG_PODS, GPUS, BIG_PODS), t)
        for why, n in reasons.items():
            say("    kube-scheduler's event: 0/%d nodes are available: %d %s" %
                (len(names), n // BIG_PODS, why))
        say("  no GPU held for it (gang slots held: %d); it waits in Gantry's queue "
            "(gantry_scheduler_gangs_waiting %d) until a whole spine's worth of nodes is free" %
            (s.metric("gantry_scheduler_gang_slots_held"),
             s.metric("gantry_scheduler_gangs_waiting")))
    finally:
        if s:
            s.stop()
        if fake:
            fake.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    say("stopped gantry-scheduler and the fake API server")
    return sorted(leaves)


def why_kind(reason):
    """A refusal's kind, for counting: the text after the resource's name."""
    for k in ("GPUs free", "uplink", "NIC", "backend"):
        if k in reason:
            return {"GPUs free": "no free GPUs", "uplink": "leaf uplink full",
                    "NIC": "NIC full", "backend": "storage backend full"}[k]
    return reason


def plan(build, ingest_mbps, oversub):
    args = [os.path.join(build, "bin", "gantryctl"), "plan",
            "--gpus", str(JOB_PODS * GPUS), "--gpus-per-node", str(GPUS),
            "--node-nic-gbps", str(NIC_GBPS), "--oversubscription", "%g" % oversub,
            "--ingest-mbps", "%g" % ingest_mbps, "--dataset-gb", "2000",
            "--storage-nodes", "10", "--storage-read-gbytes", "8", "--storage-nic-gbps", "100",
            "--raw-tb", "360", "--ec-k", "2", "--ec-m", "1",
            "--ckpt-size-gb", "1000", "--interval-min", "30", "--tier", "nvme=40"]
    out = subprocess.run(args, capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        raise RuntimeError("gantryctl plan failed: " + out.stderr)
    return out.stdout


def chapter_plan(say, build, number, leaves=("leaf-5", "leaf-8")):
    say("\n== %d. The plan: can storage feed this job? (gantryctl plan) ==" % number)
    t = time.monotonic()
    ingest_mbps = JOB_READ_GBPS * 1000 / 8 / GPUS  # per GPU, MB/s
    # the worst oversubscription among the leaves the job landed on
    oversub = max(NODES_PER_LEAF * NIC_GBPS / UPLINKS[int(l.split("-")[1])] for l in leaves)
    text = plan(build, ingest_mbps, oversub)
    say("job %s: %d GPUs on %d nodes, %.0f MB/s per GPU (%d Gbps per pod); fabric: %d Gbps "
        "NICs, %g:1 oversubscribed (the worst of %s); Ceph %s: 10 storage nodes x 8 GB/s, "
        "100 Gbps NICs (the %d Gbps of the topology file), EC 2+1" % (
            JOB, JOB_PODS * GPUS, JOB_PODS, ingest_mbps, JOB_READ_GBPS, NIC_GBPS, oversub,
            ", ".join(leaves), BACKEND, BACKEND_GBPS), t)
    keep = ("GPUs / nodes", "per-GPU ingest", "required at the barrier", "storage aggregate",
            "network cap", "deliverable", "headroom")
    for line in text.split("\n\n")[0].splitlines():
        if line.strip().startswith(keep):
            say("  " + line.strip())
    t = time.monotonic()
    say("  the same job behind other leaf uplinks:")
    say("    %-16s %-12s %-16s %s" % ("oversubscription", "deliverable", "bottleneck", "headroom"))
    for o in (1, 2, 4, 8):
        rows = {l.strip().split("  ")[0]: l.split() for l in
                plan(build, ingest_mbps, o).split("\n\n")[0].splitlines()}
        d, h = rows["deliverable"], rows["headroom"]
        say("    %-16s %-12s %-16s %s %s %s" % (
            "%d:1%s" % (o, "  <- this job" if o == oversub else ""), " ".join(d[1:3]),
            " ".join(d[4:]).rstrip(")"), h[1], h[2], h[3]))
    say("  (gantryctl plan once per row)", t)
    say("  (the plan sees this job alone, as if every read crossed a leaf uplink; the "
        "scheduler's ledger also counts job sweep's reads and knows leaf-8 holds the storage)")
