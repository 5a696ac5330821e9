"""gantry-scheduler knows where a dataset's promoted copy is.

Two Ceph clusters in the topology: "capa" (the capacity cluster, on leaf-2
with gpu-node-3) and "perf" (the performance cluster, on leaf-1 with
gpu-node-1 and -2). The FAKE Kubernetes API server (tests/fakeapi) serves
the PVCs, PVs and StorageClasses of a promotion as the external-provisioner
leaves them at each step; gantry-scheduler follows it through a kubeconfig
and answers the prioritize body captured from a real kube-scheduler
(fixtures/nodecache-true-002-prioritize.json) with the pod's volumes added:

  1. a pod on the source dataset (a PV in capa) prefers gpu-node-3;
  2. a pod on its promotion, PVC still Pending (CreateVolume answers ABORTED
     with the progress while the copy runs), prefers no leaf for it: scored
     as a flow with no backend, not as if the copy were already in perf;
  3. once the copy is done (the provisioner made the PV in perf and bound
     the PVC), the same pod prefers gpu-node-1 and -2;
  4. a PV annotated gantry.io/copy-state: demoted (its copy removed by
     eviction) attracts nothing again.
"""
import copy
import json
import os
import shutil
import tempfile
import unittest

from sched_harness import FakeAPI, Scheduler, canary, fixture_json, wait_for, FIXTURES

FAKE = os.environ.get("GANTRY_FAKEAPI")
TOKEN = canary.secret("api-token")
PRIO = "nodecache-true-002-prioritize.json"

TOPOLOGY = {
    "defaults": {"nicGbps": 100},
    "leaves": [{"name": "leaf-1", "spine": "spine-1", "uplinkGbps": 100},
               {"name": "leaf-2", "spine": "spine-1", "uplinkGbps": 100}],
    "backends": [{"name": "perf", "kind": "ceph", "gbps": 400, "leaves": ["leaf-1"]},
                 {"name": "capa", "kind": "ceph", "gbps": 100, "leaves": ["leaf-2"]}],
}


def storage_class(name, cluster):
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": name, "annotations": {"gantry.io/read-gbps-per-gpu": "10"}},
            "provisioner": "csi.gantry.io",
            "parameters": {"tier": "dataset", "clusterID": cluster, "pool": "rbd"}}


def pv(name, cluster, sc, annotations=None):
    md = {"name": name, "annotations": {"pv.kubernetes.io/provisioned-by": "csi.gantry.io"}}
    md["annotations"].update(annotations or {})
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": md,
            "spec": {"storageClassName": sc, "capacity": {"storage": "150Gi"},
                     "accessModes": ["ReadOnlyMany"],
                     "csi": {"driver": "csi.gantry.io",
                             "volumeHandle": "0001-0004-%s-0000000000000002-%s" % (cluster, name),
                             "volumeAttributes": {"tier": "dataset", "clusterID": cluster,
                                                  "pool": "rbd", "imageName": "csi-vol-" + name}}},
            "status": {"phase": "Bound"}}


def promotion_pvc(volume=None):
    """The PVC of the promotion as the API shows it: Pending while the copy
    runs, Bound to @volume once CreateVolume answered OK."""
    spec = {"storageClassName": "gantry-perf", "accessModes": ["ReadOnlyMany"],
            "resources": {"requests": {"storage": "150Gi"}},
            "dataSource": {"apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot",
                           "name": "imagenet-v1"},
            "dataSourceRef": {"apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot",
                              "name": "imagenet-v1"}}
    status = {"phase": "Pending"}
    if volume:
        spec["volumeName"] = volume
        status = {"phase": "Bound"}
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": "imagenet-fast", "namespace": "default"},
            "spec": spec, "status": status}


@unittest.skipUnless(FAKE, "GANTRY_FAKEAPI not set")
class ExtenderTierTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gantry-sched-tier-%d-" % os.getpid())
        self.addCleanup(shutil.rmtree, self.tmp, True)
        with open(os.path.join(FIXTURES, "state.json")) as f:
            state = json.load(f)
        topology = os.path.join(self.tmp, "topology.json")
        with open(topology, "w") as f:
            json.dump(TOPOLOGY, f)
        source_pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                      "metadata": {"name": "imagenet", "namespace": "default"},
                      "spec": {"storageClassName": "gantry-capa", "volumeName": "pvc-imagenet"},
                      "status": {"phase": "Bound"}}
        seed = {"nodes": state["nodes"],
                "storageclasses": [storage_class("gantry-capa", "capa"),
                                   storage_class("gantry-perf", "perf")],
                "persistentvolumes": [pv("pvc-imagenet", "capa", "gantry-capa")],
                "persistentvolumeclaims": [source_pvc, promotion_pvc()]}
        seed_path = os.path.join(self.tmp, "seed.json")
        with open(seed_path, "w") as f:
            json.dump(seed, f)
        self.fake = FakeAPI(TOKEN, seed=seed_path)
        self.addCleanup(self.fake.stop)
        kubeconfig = self.fake.write_kubeconfig(os.path.join(self.tmp, "kubeconfig"))
        self.s = Scheduler("--kubeconfig", kubeconfig, topology=topology, state=None).start()
        self.addCleanup(lambda: self.assertEqual(self.s.stop(), 0))

    def scores(self, claim=None):
        """gpu-node-1..3's scores for the captured pod reading @claim."""
        args = fixture_json(PRIO)
        if claim:
            args["Pod"]["spec"]["volumes"].append(
                {"name": "data", "persistentVolumeClaim": {"claimName": claim}})
        status, r = self.s.post("prioritize", args)
        self.assertEqual(status, 200, r)
        return {h["Host"]: h["Score"] for h in r}

    def test_promoted_copy_attracts_pods_only_once_done(self):
        # 1. the source, in capa: its leaf wins (waits for the informers' first lists)
        src = wait_for(lambda: (lambda s: s if s["gpu-node-3"] > s["gpu-node-1"] else None)(
            self.scores("imagenet")), what="the source PV in capa to be seen")
        self.assertEqual(src["gpu-node-1"], src["gpu-node-2"])

        # 2. the promotion's PVC, Pending while the copy runs: a 10 Gbps flow
        # near no backend (the same lists carried it): no leaf preferred
        nothing = self.scores()
        copying = self.scores("imagenet-fast")
        self.assertEqual(len(set(copying.values())), 1, copying)
        self.assertLess(copying["gpu-node-1"], nothing["gpu-node-1"], (copying, nothing))

        # 3. the copy is done: the provisioner makes the PV in perf, binds the PVC
        self.fake.post("/fake/objects/persistentvolumes",
                       pv("pvc-imagenet-fast", "perf", "gantry-perf"))
        self.fake.post("/fake/objects/persistentvolumeclaims", promotion_pvc("pvc-imagenet-fast"))
        done = wait_for(lambda: (lambda s: s if s["gpu-node-1"] > s["gpu-node-3"] else None)(
            self.scores("imagenet-fast")), what="the bound promoted copy to be seen")
        self.assertEqual(done["gpu-node-1"], done["gpu-node-2"])
        # as close to perf as the source is to capa
        self.assertEqual(done["gpu-node-1"], src["gpu-node-3"])
        self.assertEqual(done["gpu-node-3"], src["gpu-node-1"])

        # 4. evicted: the PV stays, marked demoted: no pull towards perf
        self.fake.post("/fake/objects/persistentvolumes",
                       pv("pvc-imagenet-fast", "perf", "gantry-perf",
                          {"gantry.io/copy-state": "demoted"}))
        demoted = wait_for(lambda: (lambda s: s if len(set(s.values())) == 1 else None)(
            self.scores("imagenet-fast")), what="the demoted PV to be seen")
        self.assertEqual(demoted, copying)


if __name__ == "__main__":
    unittest.main(verbosity=2)
