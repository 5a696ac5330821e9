"""A volume's bandwidth changed live on a real control plane: csi-resizer
as manifests/controller.yaml runs it (VolumeAttributesClass on) calls
gantry-csi's ControllerModifyVolume against the Ceph fixture when a PVC's
spec.volumeAttributesClassName changes. A class of bandwidth keys is
recorded in the volume's journal and marked in force in the PVC's status;
a class with a key that cannot change live is refused, named, in the PVC's
modify status and events, and the class in force stays. Needs a control
plane that serves storage.k8s.io/v1 VolumeAttributesClass (Kubernetes
v1.34+); skipped otherwise, and without GANTRY_K8S_BIN."""
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import control_plane as cp  # noqa: E402
import csi_stack  # noqa: E402
from test_dataset_story import NODE, add_gpu_node, storage_classes  # noqa: E402

USER_NS = "story-modify"
env = csi_stack.ceph_env
VAC_PATH = "/apis/storage.k8s.io/v1/volumeattributesclasses"


def examples():
    return csi_stack.manifest(os.path.join("examples", "volume-attributes-classes.yaml"))


class ModifyStory(csi_stack.StoryTest):
    USER_NS = USER_NS
    TAG = "k8s_modify"

    @classmethod
    def set_up_story(cls, p):
        e = env()
        add_gpu_node(p, NODE)
        cls.stack = csi_stack.CsiStack(p, e.CONFIG)
        cls.stack.apply_objects()
        csi_stack.ceph_secret(p, "gantry-ceph-perf", e.secrets("perf"))
        csi_stack.apply(p, storage_classes("perf", "gantry-ceph-perf"))
        return cls.stack

    def setUp(self):
        try:
            self.plane.api("GET", VAC_PATH)
        except Exception as ex:  # noqa: BLE001 - any answer but 200: the kind is not served
            self.skipTest("the control plane does not serve %s: %s" % (VAC_PATH, ex))
        self.assertEqual(self.stack.dead(), [], "a sidecar or gantry-csi exited")

    def claim(self):
        return self.get(self.ns("persistentvolumeclaims/data"))

    def test_1_class_changed_live(self):
        p, e = self.plane, env()
        for vac in examples():
            p.api("POST", VAC_PATH, vac)
        p.api("POST", VAC_PATH, {"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttributesClass",
                                 "metadata": {"name": "bad-pool"}, "driverName": "csi.gantry.io",
                                 "parameters": {"pool": "other"}})
        p.api("POST", self.ns("persistentvolumeclaims"), {
            "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
            "spec": {"accessModes": ["ReadOnlyMany"], "storageClassName": "gantry-dataset",
                     "resources": {"requests": {"storage": "64Mi"}}}})
        p.api("POST", self.ns("pods"), {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "reader"},
            "spec": {"containers": [{"name": "c", "image": "none"}],
                     "volumes": [{"name": "d", "persistentVolumeClaim": {
                         "claimName": "data", "readOnly": True}}]}})
        pv = self.pv_of("data")
        uuid = e.uuid_of(pv["spec"]["csi"]["volumeHandle"])

        p.patch(self.ns("persistentvolumeclaims/data"),
                {"spec": {"volumeAttributesClassName": "gantry-dataset-fast"}})
        cp.wait_for(lambda: self.claim()["status"].get("currentVolumeAttributesClassName") ==
                    "gantry-dataset-fast", 120, "the class to be in force on the PVC")
        fast = [v for v in examples() if v["metadata"]["name"] == "gantry-dataset-fast"][0]
        self.assertEqual(json.loads(e.record(uuid)["bw"]), fast["parameters"])

        p.patch(self.ns("persistentvolumeclaims/data"),
                {"spec": {"volumeAttributesClassName": "bad-pool"}})
        status = cp.wait_for(lambda: (lambda s: s if s.get("status") == "Infeasible" else None)(
            self.claim()["status"].get("modifyVolumeStatus", {})), 120,
            "the modify of bad-pool to be Infeasible")
        self.assertEqual(status.get("targetVolumeAttributesClassName"), "bad-pool")
        messages = " ".join(ev.get("message", "") for ev in
                            self.plane.events(USER_NS, "PersistentVolumeClaim", "data"))
        self.assertIn("mutable_parameters.pool", messages)
        self.assertEqual(self.claim()["status"].get("currentVolumeAttributesClassName"),
                         "gantry-dataset-fast")
        self.assertEqual(json.loads(e.record(uuid)["bw"]), fast["parameters"])
        self.assertEqual(self.stack.forbidden(), [])


if __name__ == "__main__":
    cp.main()
