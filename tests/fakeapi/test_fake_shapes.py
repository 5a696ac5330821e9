"""The FAKE Kubernetes API server serves real-shaped JSON: every list, watch
event and Status it sends is checked against the Kubernetes API models of
Debian's python3-kubernetes (field names and types, recursively, with the
checker of tests/manifests/test_manifests.py), and the objects it generates
follow Gantry's contracts (Topograph labels, GPU requests, csi.gantry.io
volume handles and volume attributes)."""
import json
import os
import re
import sys
import unittest
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "manifests"))
sys.path.insert(0, os.path.join(HERE, "..", "scheduler"))
import kubernetes.client as k8s  # noqa: E402
from test_manifests import check  # noqa: E402  (the one model checker)
import sched_harness  # noqa: E402
from sched_harness import FakeAPI  # noqa: E402  (the one starter of the fake)

TOKEN = sched_harness.canary.secret("api-token")
LISTS = {
    "/api/v1/nodes": "V1NodeList",
    "/api/v1/pods": "V1PodList",
    "/api/v1/persistentvolumeclaims": "V1PersistentVolumeClaimList",
    "/api/v1/persistentvolumes": "V1PersistentVolumeList",
    "/apis/storage.k8s.io/v1/storageclasses": "V1StorageClassList",
    "/apis/batch/v1/jobs": "V1JobList",
}
KINDS = {"Node": "V1Node", "Pod": "V1Pod", "PersistentVolumeClaim": "V1PersistentVolumeClaim",
         "PersistentVolume": "V1PersistentVolume", "StorageClass": "V1StorageClass", "Job": "V1Job"}


class FakeShapes(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.fake = FakeAPI(TOKEN, "--nodes", "16", "--leaves", "4", "--pods", "4", max_seconds=300)
        cls.base = cls.fake.base

    @classmethod
    def tearDownClass(cls):
        cls.fake.stop()

    def get(self, path, token=TOKEN):
        req = urllib.request.Request(self.base + path)
        if token:
            req.add_header("Authorization", "Bearer " + token)
        try:
            with urllib.request.urlopen(req, timeout=20) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def post(self, path, body):
        req = urllib.request.Request(self.base + path, data=json.dumps(body).encode(), method="POST")
        with urllib.request.urlopen(req, timeout=20) as r:
            return json.loads(r.read())

    def assert_model(self, doc, model, where):
        errors = []
        check(doc, model, where, errors)
        self.assertEqual(errors, [])

    def test_lists_match_the_api_models(self):
        for path, model in LISTS.items():
            with self.subTest(path=path):
                status, body = self.get(path + "?limit=5")
                self.assertEqual(status, 200)
                doc = json.loads(body)
                self.assert_model(doc, model, path)
                self.assertEqual(doc["kind"], model[2:])
                self.assertTrue(doc["metadata"]["resourceVersion"].isdigit())
                self.assertTrue(doc["items"])
                for item in doc["items"]:  # as the real server: no kind in items
                    self.assertNotIn("kind", item)

    def test_watch_events_and_status_match_the_api_models(self):
        status, body = self.get("/api/v1/nodes?limit=1")
        rv = json.loads(body)["metadata"]["resourceVersion"]
        self.post("/fake/objects/nodes", {"metadata": {"name": "gpu-shape", "labels": {"a": "b"}}})
        status, body = self.get("/api/v1/nodes?watch=1&timeoutSeconds=1&resourceVersion=" + rv)
        self.assertEqual(status, 200)
        events = [json.loads(line) for line in body.splitlines() if line]
        self.assertEqual([e["type"] for e in events], ["ADDED"])
        for e in events:
            self.assert_model(e, "V1WatchEvent", "event")
            self.assert_model(e["object"], KINDS[e["object"]["kind"]], "event.object")
        self.post("/fake/compact", {})
        status, body = self.get("/api/v1/nodes?watch=1&timeoutSeconds=1&resourceVersion=" + rv)
        (event,) = [json.loads(line) for line in body.splitlines() if line]
        self.assertEqual(event["type"], "ERROR")
        self.assert_model(event["object"], "V1Status", "status")
        self.assertEqual(event["object"]["code"], 410)
        status, body = self.get("/api/v1/nodes", token="wrong")
        self.assertEqual(status, 401)
        self.assert_model(json.loads(body), "V1Status", "status")

    def test_generated_objects_follow_the_contracts(self):
        nodes = json.loads(self.get("/api/v1/nodes")[1])["items"]
        self.assertEqual(len(nodes), 16)
        for n in nodes:
            labels = n["metadata"]["labels"]
            for key in ("accelerator", "leaf", "spine", "core"):
                self.assertIn("network.topology.nvidia.com/" + key, labels)
            self.assertEqual(n["status"]["allocatable"]["nvidia.com/gpu"], "8")
        pods = json.loads(self.get("/api/v1/pods")[1])["items"]
        for p in pods:
            req = p["spec"]["containers"][0]["resources"]["requests"]
            self.assertIn("nvidia.com/gpu", req)
            self.assertIn("gantry.io/dataset-read-gbps", p["metadata"]["annotations"])
        for sc in json.loads(self.get("/apis/storage.k8s.io/v1/storageclasses")[1])["items"]:
            self.assertEqual(sc["provisioner"], "csi.gantry.io")
        handle = re.compile(r"^(0001|0002)-([0-9a-f]{4})-(.+)-([0-9a-f]{16})-([0-9a-f-]{36})$")
        for pv in json.loads(self.get("/api/v1/persistentvolumes")[1])["items"]:
            csi = pv["spec"]["csi"]
            self.assertEqual(csi["driver"], "csi.gantry.io")
            m = handle.match(csi["volumeHandle"])
            self.assertIsNotNone(m, csi["volumeHandle"])
            self.assertEqual(int(m.group(2), 16), len(m.group(3)))  # the length field is right
            attrs = csi["volumeAttributes"]
            if m.group(1) == "0001":
                self.assertEqual(attrs["tier"], "dataset")
                self.assertEqual(attrs["clusterID"], m.group(3))
                for key in ("monitors", "pool", "imageName", "fsType"):
                    self.assertIn(key, attrs)
            else:
                self.assertEqual(attrs["tier"], "checkpoint")
                self.assertEqual(attrs["targetID"], m.group(3))
                self.assertEqual(m.group(4), "0" * 16)
                for key in ("nqn", "addresses", "nguid", "uuid", "fsType"):
                    self.assertIn(key, attrs)
                for a in attrs["addresses"].split(","):
                    self.assertRegex(a, r"^(tcp|rdma):[^:]+:\d+$")

    def delete(self, path):
        with urllib.request.urlopen(urllib.request.Request(self.base + path, method="DELETE"),
                                    timeout=20) as r:
            return r.status

    def patch(self, path, body, ctype="application/merge-patch+json"):
        req = urllib.request.Request(self.base + path, data=json.dumps(body).encode(),
                                     method="PATCH", headers={"Content-Type": ctype,
                                                              "Authorization": "Bearer " + TOKEN})
        try:
            with urllib.request.urlopen(req, timeout=20) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    def test_a_merge_patch_of_a_pv(self):
        """PATCH of a PV as the controller sends it (gantry.io/copy-state):
        RFC 7386 (null removes, other keys stay), a new resourceVersion, a
        MODIFIED PersistentVolume; 404 for no PV, 415 for another body type."""
        self.post("/fake/objects/persistentvolumes", {
            "metadata": {"name": "pv-patch", "annotations": {"a": "1", "b": "2"}},
            "spec": {"capacity": {"storage": "1Gi"}}})
        self.addCleanup(self.delete, "/fake/objects/persistentvolumes/_/pv-patch")
        status, pv = self.patch("/api/v1/persistentvolumes/pv-patch",
                                {"metadata": {"annotations": {"gantry.io/copy-state": "demoted",
                                                              "b": None}}})
        self.assertEqual(status, 200, pv)
        self.assert_model(pv, "V1PersistentVolume", "patched PV")
        self.assertEqual(pv["metadata"]["annotations"], {"a": "1", "gantry.io/copy-state": "demoted"})
        self.assertEqual(pv["spec"]["capacity"], {"storage": "1Gi"})
        _, got = self.get("/api/v1/persistentvolumes/pv-patch")
        self.assertEqual(json.loads(got), pv)
        status, st = self.patch("/api/v1/persistentvolumes/no-such-pv", {"metadata": {}})
        self.assertEqual((status, st["reason"]), (404, "NotFound"))
        status, st = self.patch("/api/v1/persistentvolumes/pv-patch", {"metadata": {}},
                                ctype="application/json")
        self.assertEqual((status, st["reason"]), (415, "UnsupportedMediaType"))

    def test_a_resource_served_and_not(self):
        """/fake/serve: a resource not served leaves its group version's
        discovery document (404 once the group is empty, as a CRD's group
        is) and answers 404, as the real server does for a CRD not
        installed; its objects are there again once it is served."""
        self.post("/fake/objects/storagebackends", {"metadata": {"name": "sb-serve"}, "spec": {}})
        self.addCleanup(self.delete, "/fake/objects/storagebackends/_/sb-serve")
        self.addCleanup(self.post, "/fake/serve", {"resource": "storagebackends", "served": True})
        self.post("/fake/serve", {"resource": "storagebackends", "served": False})
        self.assertEqual(self.get("/apis/gantry.io/v1alpha1")[0], 404)
        self.assertEqual(self.get("/apis/gantry.io/v1alpha1/storagebackends")[0], 404)
        self.post("/fake/serve", {"resource": "volumeattributesclasses", "served": False})
        self.addCleanup(self.post, "/fake/serve", {"resource": "volumeattributesclasses", "served": True})
        status, doc = self.get("/apis/storage.k8s.io/v1")
        names = [r["name"] for r in json.loads(doc)["resources"]]
        self.assertEqual(status, 200)
        self.assertIn("storageclasses", names)
        self.assertNotIn("volumeattributesclasses", names)
        self.post("/fake/serve", {"resource": "storagebackends", "served": True})
        status, doc = self.get("/apis/gantry.io/v1alpha1")
        self.assertEqual((status, [r["name"] for r in json.loads(doc)["resources"]]),
                         (200, ["storagebackends"]))
        status, body = self.get("/apis/gantry.io/v1alpha1/storagebackends")
        self.assertEqual((status, [o["metadata"]["name"] for o in json.loads(body)["items"]]),
                         (200, ["sb-serve"]))

    def test_the_checker_sees_a_wrong_shape(self):
        errors = []
        check({"metadata": {"name": 3}, "spec": {"unschedulable": "yes"}, "bogus": 1}, "V1Node", "node", errors)
        self.assertEqual(len(errors), 3)
        self.assertTrue(hasattr(k8s, "V1WatchEvent"))


if __name__ == "__main__":
    unittest.main()
