"""User story 2 on a real control plane: a checkpoint PVC of the manifests'
class used by a pod. Two gantry-target processes (stand-in configfs, no
kernel target; tests/target/ runs them the same way, the vm label runs the
kernel's) on two leaves, each draining into the fixture's "perf" cluster.
kube-scheduler puts the pod on leaf-1, the provisioner creates the
namespace on that leaf's target, the attach-detach controller makes the
VolumeAttachment and csi-attacher publishes it: the node's host NQN is the
one allowed on the target. The job writes and ends (detached: without
reflinks the target snapshots only a namespace no host has open). A
VolumeSnapshot then drains to Ceph while
`readyToUse` stays false, then turns true; it is restored onto the other
leaf's target (the PVC's events show the restore) and as a dataset volume,
both with the checkpoint's content. All of it is deleted with nothing left
on the targets or in Ceph."""
import hashlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import control_plane as cp  # noqa: E402
import csi_stack  # noqa: E402
from test_dataset_story import add_gpu_node, storage_classes  # noqa: E402

USER_NS = "story2"
MIB = 1 << 20
SIZE = 64 * MIB
HOST_NQN = "nqn.2014-08.io.gantry:node:"
env = csi_stack.ceph_env


def pattern(n):
    out, block = bytearray(), b"gantry-k8s-checkpoint"
    while len(out) < n:
        block = hashlib.sha256(block).digest()
        out += block
    return bytes(out[:n])


def sha256_of(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


class CheckpointStory(csi_stack.StoryTest):
    USER_NS = USER_NS
    TAG = "k8s_checkpoint"

    @classmethod
    def set_up_story(cls, p):
        e = env()
        perf = [c for c in csi_stack.fixture_config()["clusters"] if c["clusterID"] == "perf"][0]
        # drains at 8 MB/s: slow enough to see readyToUse false meanwhile
        durable = {"clusterID": "perf", "monitors": perf["monitors"], "userID": perf["userID"],
                   "keyFile": perf["keyFile"], "pool": "rbd", "dataPool": "ecdata",
                   "bandwidthMBps": 8, "inFlight": 4}
        cls.config = cls.start_targets(
            [("tgt-a", "leaf-1", "127.0.0.1", None, {"durable": durable}),
             ("tgt-b", "leaf-2", "127.0.0.2", None, {"durable": durable})], e.CONFIG)
        add_gpu_node(p, "gpu-a", "leaf-1")
        add_gpu_node(p, "gpu-b", "leaf-2")
        cls.stack = csi_stack.CsiStack(p, cls.config)
        cls.stack.apply_objects()
        csi_stack.ceph_secret(p, "gantry-ceph-perf", e.secrets("perf"))
        csi_stack.apply(p, storage_classes("perf", "gantry-ceph-perf"))
        cls.images_before = csi_stack.rbd_ls(e.conf("perf"))
        return cls.stack

    def claim_and_pod(self, name, sc, leaf, source=None, mode="ReadWriteOnce"):
        spec = {"accessModes": [mode], "storageClassName": sc,
                "resources": {"requests": {"storage": "64Mi"}}}
        if source:
            spec["dataSource"] = {"apiGroup": "snapshot.storage.k8s.io",
                                  "kind": "VolumeSnapshot", "name": source}
        self.plane.api("POST", self.ns("persistentvolumeclaims"), {
            "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
            "spec": spec})
        self.plane.api("POST", self.ns("pods"), {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"nodeSelector": {"network.topology.nvidia.com/leaf": leaf},
                     "containers": [{"name": "c", "image": "none"}],
                     "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": name}}]}})

    def attachments(self):
        return self.get("/apis/storage.k8s.io/v1/volumeattachments")["items"]

    def test_checkpoint_lifecycle(self):
        p, e = self.plane, env()
        a, b = self.targets
        self.claim_and_pod("ckpt", "gantry-checkpoint", "leaf-1")
        pv = self.pv_of("ckpt")
        attrs = pv["spec"]["csi"]["volumeAttributes"]
        self.assertEqual((attrs["tier"], attrs["targetID"]), ("checkpoint", "tgt-a"))
        self.assertEqual(pv["spec"]["capacity"]["storage"], "64Mi")
        node = cp.wait_for(lambda: self.get(self.ns("pods/ckpt"))["spec"].get("nodeName"), 60,
                           "the pod to be bound")
        self.assertEqual(node, "gpu-a")

        # attached: the VolumeAttachment of the attach-detach controller, published
        # by csi-attacher, the node's host NQN allowed on the target
        va = cp.wait_for(lambda: [v for v in self.attachments() if v["spec"]["source"].get(
            "persistentVolumeName") == pv["metadata"]["name"] and v.get("status", {}).get(
            "attached")], 120, "the checkpoint volume attached")[0]
        self.assertEqual(va["spec"]["nodeName"], "gpu-a")
        self.assertTrue(va["status"].get("attachmentMetadata"), va["status"])
        hosts = a.call("nvmf_get_subsystems", nqn=attrs["nqn"])[0]["hosts"]
        self.assertEqual([h["nqn"] for h in hosts], [HOST_NQN + "gpu-a"])

        # the job writes its checkpoint (into the target's backing file)
        backing = os.path.join(a.lvs, "vol-" + attrs["uuid"])
        with open(backing, "r+b") as f:
            f.write(pattern(32 * MIB))
        want = sha256_of(backing)

        # the job ends: detached (on a file system without reflinks, as here,
        # the target snapshots only a namespace no host has open)
        p.api("DELETE", self.ns("pods/ckpt?gracePeriodSeconds=0"))
        p.node_status("gpu-a", volumes_in_use=[])
        cp.wait_for(lambda: not self.attachments(), 120, "the VolumeAttachment deleted")
        self.assertEqual(a.call("nvmf_get_subsystems", nqn=attrs["nqn"])[0]["hosts"], [])

        # a VolumeSnapshot: not ready while it drains to Ceph, then ready
        p.api("POST", self.snap("volumesnapshots"), {
            "apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshot",
            "metadata": {"name": "ckpt-snap"},
            "spec": {"volumeSnapshotClassName": "gantry-checkpoint-snapshot",
                     "source": {"persistentVolumeClaimName": "ckpt"}}})
        seen = []

        def ready():
            st = self.get(self.snap("volumesnapshots/ckpt-snap")).get("status", {})
            if st.get("boundVolumeSnapshotContentName"):
                seen.append(st.get("readyToUse"))
            return st.get("readyToUse")
        cp.wait_for(ready, 180, "the checkpoint snapshot readyToUse", 0.1)
        self.assertIn(False, seen, "readyToUse was never seen false while draining")
        vs = self.get(self.snap("volumesnapshots/ckpt-snap"))
        self.assertEqual(vs["status"]["restoreSize"], "64Mi")
        vsc = self.get("/apis/snapshot.storage.k8s.io/v1/volumesnapshotcontents/" +
                       vs["status"]["boundVolumeSnapshotContentName"])
        snap_uuid = vsc["status"]["snapshotHandle"][-36:]
        drained = "gantry-ckpt-snap-" + snap_uuid
        self.assertEqual(e.rbd_info("perf", drained).get("data_pool"), "ecdata")
        self.assertEqual(e.checksum("perf", drained), want)

        # restored onto the other leaf's target
        self.claim_and_pod("restored", "gantry-checkpoint", "leaf-2", source="ckpt-snap")
        pv2 = self.pv_of("restored")
        attrs2 = pv2["spec"]["csi"]["volumeAttributes"]
        self.assertEqual(attrs2["targetID"], "tgt-b")
        self.assertEqual(sha256_of(os.path.join(b.lvs, "vol-" + attrs2["uuid"])), want)
        msgs = [ev["message"] for ev in p.events(USER_NS, "PersistentVolumeClaim", "restored")]
        self.assertTrue([m for m in msgs if "restoring" in m], msgs)

        # and as a dataset volume: an RBD clone of the drained image
        self.claim_and_pod("as-dataset", "gantry-dataset", "leaf-1", source="ckpt-snap",
                           mode="ReadOnlyMany")
        pv3 = self.pv_of("as-dataset")
        image = pv3["spec"]["csi"]["volumeAttributes"]["imageName"]
        self.assertEqual(e.rbd_info("perf", image)["parent"]["image"], drained)
        self.assertEqual(e.checksum("perf", image), want)

        # everything deleted: nothing left on the targets or in Ceph
        names = [pv["metadata"]["name"], pv2["metadata"]["name"], pv3["metadata"]["name"]]
        for n in ("restored", "as-dataset"):
            p.api("DELETE", self.ns("pods/%s?gracePeriodSeconds=0" % n))
        for node in ("gpu-a", "gpu-b"):
            p.node_status(node, volumes_in_use=[])
        cp.wait_for(lambda: not self.attachments(), 120, "every VolumeAttachment deleted")
        for n in ("as-dataset", "restored"):
            p.api("DELETE", self.ns("persistentvolumeclaims/" + n))
        p.api("DELETE", self.snap("volumesnapshots/ckpt-snap"))
        cp.wait_for(lambda: not self.get(
            "/apis/snapshot.storage.k8s.io/v1/volumesnapshotcontents")["items"], 120,
            "the VolumeSnapshotContent deleted")
        p.api("DELETE", self.ns("persistentvolumeclaims/ckpt"))
        cp.wait_for(lambda: not [v for v in self.get("/api/v1/persistentvolumes")["items"]
                                 if v["metadata"]["name"] in names], 180, "every PV deleted")
        self.assertEqual(csi_stack.rbd_ls(e.conf("perf")), self.images_before)
        for t in (a, b):
            self.assertEqual([f for f in os.listdir(t.lvs) if f.startswith(("vol-", "snap-"))],
                             [], t.lvs)
        self.assertEqual(self.stack.dead(), [])
        bad = self.stack.forbidden()
        self.assertEqual(bad, [], "403s in the logs:\n" + "\n".join(bad[:20]))


if __name__ == "__main__":
    cp.main()
