"""User story 1 on a real control plane with the stock sidecars run as
manifests/controller.yaml runs them (csi_stack.py) and gantry-csi against
the Ceph fixture: a dataset StorageClass and PVC provisioned on the node
kube-scheduler picked and bound by the PV controller, attached by the
attach-detach controller and csi-attacher, expanded through csi-resizer,
snapshotted through a VolumeSnapshot, restored into a new PVC, and all of it
deleted with nothing left in Ceph. The objects, events and conditions are
checked, and no process may log a 403 (the manifests' RBAC on the real
authorizer)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import control_plane as cp  # noqa: E402
import csi_stack  # noqa: E402

LEAF_KEY = "network.topology.nvidia.com/leaf"
NODE = "gpu-1"
USER_NS = "story1"
env = csi_stack.ceph_env


def add_gpu_node(plane, name, leaf="leaf-1"):
    """A Node as a kubelet would register it (attach-detach by the controller)
    and its CSINode as kubelet writes it after NodeGetInfo."""
    plane.create_nodes([name], labels={LEAF_KEY: leaf},
                       annotations={"volumes.kubernetes.io/controller-managed-attach-detach":
                                    "true"},
                       capacity={"nvidia.com/gpu": "8"})
    plane.api("POST", "/apis/storage.k8s.io/v1/csinodes", {
        "apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": name},
        "spec": {"drivers": [{"name": "csi.gantry.io", "nodeID": name,
                              "topologyKeys": [LEAF_KEY]}]}})


def storage_classes(cluster_id, secret):
    """manifests/storageclasses.yaml with the fixture's cluster and secret."""
    docs = csi_stack.manifest("storageclasses.yaml")
    for d in docs:
        params = d.get("parameters", {})
        if "clusterID" in params:
            params["clusterID"] = cluster_id
        for k, v in list(params.items()):
            if k.endswith("-secret-name"):
                params[k] = secret
    return docs


class DatasetStory(csi_stack.StoryTest):
    USER_NS = USER_NS
    TAG = "k8s_dataset"

    @classmethod
    def set_up_story(cls, p):
        e = env()
        add_gpu_node(p, NODE)
        cls.stack = csi_stack.CsiStack(p, e.CONFIG)
        cls.stack.apply_objects()
        csi_stack.ceph_secret(p, "gantry-ceph-perf", e.secrets("perf"))
        csi_stack.apply(p, storage_classes("perf", "gantry-ceph-perf"))
        cls.images_before = csi_stack.rbd_ls(e.conf("perf"))
        cls.journal_before = [e.journal("perf", kind=k) for k in ("volume", "snapshot")]
        return cls.stack

    def setUp(self):
        self.assertEqual(self.stack.dead(), [], "a sidecar or gantry-csi exited")

    # --- helpers --------------------------------------------------------
    def pvc(self, name, size, source=None):
        spec = {"accessModes": ["ReadOnlyMany"], "storageClassName": "gantry-dataset",
                "resources": {"requests": {"storage": size}}}
        if source:
            spec["dataSource"] = {"apiGroup": "snapshot.storage.k8s.io",
                                  "kind": "VolumeSnapshot", "name": source}
        self.plane.api("POST", self.ns("persistentvolumeclaims"), {
            "apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": name}, "spec": spec})

    def pod(self, name, claim):
        self.plane.api("POST", self.ns("pods"), {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "none",
                                     "volumeMounts": [{"name": "d", "mountPath": "/data",
                                                       "readOnly": True}]}],
                     "volumes": [{"name": "d", "persistentVolumeClaim": {
                         "claimName": claim, "readOnly": True}}]}})

    def bound(self, claim):
        """Waits for @claim to be Bound; returns (pvc, pv)."""
        p = self.plane
        pvc = cp.wait_for(lambda: (lambda o: o if o["status"].get("phase") == "Bound" else None)(
            p.api("GET", self.ns("persistentvolumeclaims/" + claim))), 120,
            "PVC %s to be Bound" % claim)
        pv = p.api("GET", "/api/v1/persistentvolumes/" + pvc["spec"]["volumeName"])
        return pvc, pv

    def event_reasons(self, kind, name):
        return {e["reason"] for e in self.plane.events(USER_NS, kind, name)}

    def assert_no_forbidden(self):
        bad = self.stack.forbidden()
        self.assertEqual(bad, [], "403s in the logs:\n" + "\n".join(bad[:20]))

    # --- the story ------------------------------------------------------
    def test_1_dataset_lifecycle(self):
        p, e = self.plane, env()
        self.pvc("data", "64Mi")
        self.pod("reader", "data")
        pvc, pv = self.bound("data")
        # kube-scheduler picked the node, the provisioner created for it
        self.assertEqual(pvc["metadata"]["annotations"]["volume.kubernetes.io/selected-node"],
                         NODE)
        self.assertEqual(pv["spec"]["csi"]["driver"], "csi.gantry.io")
        self.assertEqual(pv["spec"]["persistentVolumeReclaimPolicy"], "Delete")
        self.assertEqual(pv["spec"]["capacity"]["storage"], "64Mi")
        self.assertEqual(pv["spec"]["claimRef"]["name"], "data")
        self.assertTrue(pv["spec"]["csi"]["volumeHandle"])
        image = pv["spec"]["csi"]["volumeAttributes"].get("imageName")
        cp.wait_for(lambda: "ProvisioningSucceeded" in self.event_reasons(
            "PersistentVolumeClaim", "data"), 30, "the ProvisioningSucceeded event")
        self.assertIsNotNone(image, pv["spec"]["csi"])
        self.assertIn(image, csi_stack.rbd_ls(e.conf("perf")))
        self.assertEqual(e.image_data_pool("perf", image), "ecdata")
        # the pod's node gets the volume attached: attach-detach controller, csi-attacher
        va = cp.wait_for(lambda: [v for v in p.api(
            "GET", "/apis/storage.k8s.io/v1/volumeattachments")["items"]
            if v["spec"]["source"].get("persistentVolumeName") == pv["metadata"]["name"] and
            v.get("status", {}).get("attached")], 120, "the VolumeAttachment to be attached")[0]
        self.assertEqual(va["spec"]["nodeName"], NODE)
        self.assertEqual(va["spec"]["attacher"], "csi.gantry.io")

        # expansion through csi-resizer
        p.patch(self.ns("persistentvolumeclaims/data"),
                {"spec": {"resources": {"requests": {"storage": "128Mi"}}}})
        cp.wait_for(lambda: p.api("GET", "/api/v1/persistentvolumes/" + pv["metadata"]["name"])
                    ["spec"]["capacity"]["storage"] == "128Mi", 120, "the PV to grow to 128Mi")
        self.assertEqual(e.rbd_info("perf", image)["size"], 128 << 20)
        cp.wait_for(lambda: {"Resizing", "FileSystemResizeRequired"} &
                    self.event_reasons("PersistentVolumeClaim", "data"), 30,
                    "the resizer's events")
        pvc = p.api("GET", self.ns("persistentvolumeclaims/data"))
        conds = {c["type"] for c in pvc["status"].get("conditions", [])}
        # no kubelet: the node side of the resize stays pending, visibly
        self.assertIn("FileSystemResizePending", conds, pvc["status"])

        # a VolumeSnapshot, ready
        p.api("POST", self.snap("volumesnapshots"), {
            "apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshot",
            "metadata": {"name": "snap"},
            "spec": {"volumeSnapshotClassName": "gantry-dataset-snapshot",
                     "source": {"persistentVolumeClaimName": "data"}}})
        vs = cp.wait_for(lambda: (lambda o: o if o.get("status", {}).get("readyToUse") else None)(
            p.api("GET", self.snap("volumesnapshots/snap"))), 120, "the snapshot readyToUse")
        self.assertEqual(vs["status"]["restoreSize"], "128Mi")
        vsc = p.api("GET", "/apis/snapshot.storage.k8s.io/v1/volumesnapshotcontents/" +
                    vs["status"]["boundVolumeSnapshotContentName"])
        self.assertEqual(vsc["spec"]["driver"], "csi.gantry.io")
        self.assertTrue(vsc["status"]["snapshotHandle"])

        # restored into a new PVC
        self.pvc("restored", "128Mi", source="snap")
        self.pod("reader2", "restored")
        _, pv2 = self.bound("restored")
        image2 = pv2["spec"]["csi"]["volumeAttributes"].get("imageName")
        self.assertNotEqual(image2, image)
        self.assertIn(image2, csi_stack.rbd_ls(e.conf("perf")))
        self.assertEqual(pv2["spec"]["capacity"]["storage"], "128Mi")

        # everything deleted: pods, the restored claim, the snapshot, the claim
        for pod in ("reader", "reader2"):
            p.api("DELETE", self.ns("pods/%s?gracePeriodSeconds=0" % pod))
        p.api("DELETE", self.ns("persistentvolumeclaims/restored"))
        p.api("DELETE", self.snap("volumesnapshots/snap"))
        p.api("DELETE", self.ns("persistentvolumeclaims/data"))
        cp.wait_for(lambda: not p.api("GET", "/api/v1/persistentvolumes")["items"], 180,
                    "every PV to be deleted")
        cp.wait_for(lambda: not p.api(
            "GET", "/apis/snapshot.storage.k8s.io/v1/volumesnapshotcontents")["items"], 120,
            "every VolumeSnapshotContent to be deleted")
        cp.wait_for(lambda: not p.api(
            "GET", "/apis/storage.k8s.io/v1/volumeattachments")["items"], 120,
            "every VolumeAttachment to be deleted")
        self.assertEqual(csi_stack.rbd_ls(e.conf("perf")), self.images_before)
        # the journal (directory and records, of volumes and snapshots) as before
        self.assertEqual([e.journal("perf", kind=k) for k in ("volume", "snapshot")],
                         self.journal_before)
        trash = e.tool("rbd", "perf", "trash", "ls", "rbd").split()
        self.assertEqual(trash, [])
        self.assert_no_forbidden()

    def test_9_no_forbidden(self):
        """Whatever ran before: no process of the stack met a 403."""
        self.assert_no_forbidden()


if __name__ == "__main__":
    cp.main()
