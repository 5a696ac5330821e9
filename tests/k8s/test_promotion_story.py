"""User story 4 on a real control plane: a cross-cluster promotion through
the real csi-provisioner. A dataset born in the capacity cluster ("capa")
is snapshotted (VolumeSnapshot) and restored into a PVC of the performance
cluster's class: the copy runs in the background (capped at a few MB/s so
it is seen), the PVC's events show its progress ("copying ... %"), it ends
Bound with the source's content. Demoted by `gantryctl tier demote`, its PV
is annotated `demoted`; a new pod's VolumeAttachment makes csi-attacher
publish it, which copies it again (the attach error says so meanwhile) and
the PV ends annotated `done`. Everything is deleted with nothing left in
either cluster."""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import control_plane as cp  # noqa: E402
import csi_stack  # noqa: E402
from test_dataset_story import add_gpu_node, storage_classes  # noqa: E402

USER_NS = "story4"
NODE = "gpu-1"
MIB = 24
PROGRESS = re.compile(r"copying \S+ from capa: \d+ %")
STATE = "gantry.io/copy-state"
env = csi_stack.ceph_env


class PromotionStory(csi_stack.StoryTest):
    USER_NS = USER_NS
    TAG = "k8s_promotion"

    @classmethod
    def set_up_story(cls, p):
        e = env()
        cfg = csi_stack.fixture_config()
        for c in cfg["clusters"]:
            if c["clusterID"] == "capa":  # slow enough to watch: MIB MiB at 4 MB/s
                c["copy"] = {"readMBps": 4, "objectsInFlight": 2}
        cls.config = os.path.join(p.dir, "gantry.json")
        with open(cls.config, "w") as f:
            json.dump(cfg, f)
        add_gpu_node(p, NODE)
        cls.stack = csi_stack.CsiStack(p, cls.config)
        cls.stack.apply_objects()
        for c in ("perf", "capa"):
            csi_stack.ceph_secret(p, "gantry-ceph-" + c, e.secrets(c))
        classes = storage_classes("perf", "gantry-ceph-perf")
        # the capacity cluster's class and snapshot class (where datasets are born)
        capa = [json.loads(json.dumps(c)) for c in storage_classes("capa", "gantry-ceph-capa")
                if c["metadata"]["name"] in ("gantry-dataset", "gantry-dataset-snapshot")]
        for c in capa:
            c["metadata"]["name"] += "-capa"
            if c["kind"] == "StorageClass":
                c["volumeBindingMode"] = "Immediate"
        csi_stack.apply(p, classes + capa)
        cls.before = {c: csi_stack.rbd_ls(e.conf(c)) for c in ("perf", "capa")}
        return cls.stack

    def claim(self, name, sc, source=None):
        spec = {"accessModes": ["ReadOnlyMany"], "storageClassName": sc,
                "resources": {"requests": {"storage": "%dMi" % MIB}}}
        if source:
            spec["dataSource"] = {"apiGroup": "snapshot.storage.k8s.io",
                                  "kind": "VolumeSnapshot", "name": source}
        self.plane.api("POST", self.ns("persistentvolumeclaims"), {
            "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
            "spec": spec})

    def pod(self, name, claim):
        self.plane.api("POST", self.ns("pods"), {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "none"}],
                     "volumes": [{"name": "d", "persistentVolumeClaim": {
                         "claimName": claim, "readOnly": True}}]}})

    def attachment(self, pv):
        vas = [v for v in self.get("/apis/storage.k8s.io/v1/volumeattachments")["items"]
               if v["spec"]["source"].get("persistentVolumeName") == pv]
        return vas[0] if vas else None

    def annotation(self, pv):
        return self.get("/api/v1/persistentvolumes/" + pv)["metadata"].get(
            "annotations", {}).get(STATE)

    def test_promotion_demotion_repromotion(self):
        p, e = self.plane, env()
        # a dataset in the capacity cluster, with data, and a VolumeSnapshot of it
        self.claim("source", "gantry-dataset-capa")
        src_pv = self.pv_of("source")
        src_image = src_pv["spec"]["csi"]["volumeAttributes"]["imageName"]
        e.fill("capa", src_image, mib=MIB)
        p.api("POST", self.snap("volumesnapshots"), {
            "apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshot",
            "metadata": {"name": "source-snap"},
            "spec": {"volumeSnapshotClassName": "gantry-dataset-snapshot-capa",
                     "source": {"persistentVolumeClaimName": "source"}}})
        cp.wait_for(lambda: self.get(self.snap("volumesnapshots/source-snap")).get(
            "status", {}).get("readyToUse"), 120, "the source snapshot readyToUse")

        # restored into the performance cluster: promoted by a background copy
        self.claim("promoted", "gantry-dataset", source="source-snap")
        self.pod("trainer", "promoted")
        pv = self.pv_of("promoted", timeout=300)
        events = p.events(USER_NS, "PersistentVolumeClaim", "promoted")
        progress = [ev["message"] for ev in events if PROGRESS.search(ev["message"])]
        self.assertTrue(progress, [ev["message"] for ev in events])
        self.assertIn("ProvisioningSucceeded", {ev["reason"] for ev in events})
        attrs = pv["spec"]["csi"]["volumeAttributes"]
        self.assertEqual(attrs["clusterID"], "perf")
        self.assertEqual(e.checksum("perf", attrs["imageName"], length=MIB << 20),
                         e.checksum("capa", src_image, length=MIB << 20))
        pv_name = pv["metadata"]["name"]
        cp.wait_for(lambda: (self.attachment(pv_name) or {}).get("status", {}).get("attached"),
                    120, "the promoted volume attached")
        self.assertIn(self.annotation(pv_name), (None, "done"))

        # demoted while no pod uses it
        p.api("DELETE", self.ns("pods/trainer?gracePeriodSeconds=0"))
        cp.wait_for(lambda: self.attachment(pv_name) is None, 120, "the VolumeAttachment gone")
        r = subprocess.run([os.path.join(os.environ["GANTRY_BUILD_DIR"], "bin", "gantryctl"),
                            "tier", "demote", "%s/promoted" % USER_NS, "--config", self.config,
                            "--kubeconfig", p.kubeconfig], capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.annotation(pv_name), "demoted")

        # a new pod: the attacher's publish copies it again
        self.pod("trainer2", "promoted")
        errors = set()

        def attached():
            va = self.attachment(pv_name)
            st = (va or {}).get("status", {})
            msg = st.get("attachError", {}).get("message")
            if msg:
                errors.add(msg)
            return st.get("attached")
        cp.wait_for(attached, 300, "the re-promoted volume attached", 0.05)
        self.assertTrue([m for m in errors if PROGRESS.search(m)], errors)
        cp.wait_for(lambda: self.annotation(pv_name) == "done", 60, "PV annotated done")
        self.assertEqual(e.checksum("perf", attrs["imageName"], length=MIB << 20),
                         e.checksum("capa", src_image, length=MIB << 20))

        # all of it deleted, nothing left in either cluster
        p.api("DELETE", self.ns("pods/trainer2?gracePeriodSeconds=0"))
        # the attach-detach controller took the first, ABORTED attach as
        # uncertain: it detaches once the node says the volume is unmounted
        p.node_status(NODE, volumes_in_use=[])
        cp.wait_for(lambda: self.attachment(pv_name) is None, 120, "the VolumeAttachment gone")
        p.api("DELETE", self.ns("persistentvolumeclaims/promoted"))
        cp.wait_for(lambda: not [v for v in self.get("/api/v1/persistentvolumes")["items"]
                                 if v["metadata"]["name"] == pv_name], 180,
                    "the promoted PV deleted")
        p.api("DELETE", self.snap("volumesnapshots/source-snap"))
        cp.wait_for(lambda: not self.get(
            "/apis/snapshot.storage.k8s.io/v1/volumesnapshotcontents")["items"], 120,
            "the VolumeSnapshotContent deleted")
        p.api("DELETE", self.ns("persistentvolumeclaims/source"))
        cp.wait_for(lambda: not self.get("/api/v1/persistentvolumes")["items"], 180,
                    "every PV deleted")
        for c in ("perf", "capa"):
            self.assertEqual(csi_stack.rbd_ls(e.conf(c)), self.before[c], c)
        self.assertEqual(self.stack.dead(), [])
        bad = self.stack.forbidden()
        self.assertEqual(bad, [], "403s in the logs:\n" + "\n".join(bad[:20]))


if __name__ == "__main__":
    cp.main()
