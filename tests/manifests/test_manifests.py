"""Every manifest parses, every object has apiVersion, kind and metadata,
and every field is one the Kubernetes API knows: objects are checked
against the API models of Debian's python3-kubernetes (field names and
types, recursively); kinds those models lack (snapshot classes, scheduler
configuration) against small schemas written here."""
import glob
import os
import re
import unittest

import kubernetes.client as k8s
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MANIFEST_DIRS = [os.path.join(ROOT, "manifests")]

# Kinds outside python3-kubernetes' models: allowed top-level fields.
OWN_SCHEMAS = {
    ("snapshot.storage.k8s.io/v1", "VolumeSnapshotClass"):
        {"apiVersion", "kind", "metadata", "driver", "deletionPolicy", "parameters"},
    ("snapshot.storage.k8s.io/v1", "VolumeSnapshot"):
        {"apiVersion", "kind", "metadata", "spec"},
    ("monitoring.coreos.com/v1", "PrometheusRule"):
        {"apiVersion", "kind", "metadata", "spec"},
    # GA in Kubernetes v1.34, newer than Debian's python3-kubernetes models
    ("storage.k8s.io/v1", "VolumeAttributesClass"):
        {"apiVersion", "kind", "metadata", "driverName", "parameters"},
    ("kubescheduler.config.k8s.io/v1", "KubeSchedulerConfiguration"):
        {"apiVersion", "kind", "profiles", "extenders", "leaderElection", "clientConnection",
         "parallelism", "percentageOfNodesToScore", "podInitialBackoffSeconds",
         "podMaxBackoffSeconds"},
}


def manifest_files():
    files = []
    for d in MANIFEST_DIRS:
        files += glob.glob(os.path.join(d, "**", "*.yaml"), recursive=True)
    return sorted(files)


def model_for(api_version, kind):
    version = api_version.split("/")[-1]
    return getattr(k8s, version[0].upper() + version[1:] + kind, None)


def check(value, type_name, path, errors):
    """Checks @value against the python3-kubernetes type @type_name."""
    if value is None:
        return
    m = re.match(r"list\[(.*)\]$", type_name)
    if m:
        if not isinstance(value, list):
            errors.append("%s: must be a list" % path)
            return
        for i, v in enumerate(value):
            check(v, m.group(1), "%s[%d]" % (path, i), errors)
        return
    m = re.match(r"dict\(str, (.*)\)$", type_name)
    if m:
        if not isinstance(value, dict):
            errors.append("%s: must be a map" % path)
            return
        for k, v in value.items():
            check(v, m.group(1), "%s.%s" % (path, k), errors)
        return
    if type_name == "str":
        if not isinstance(value, str):
            errors.append("%s: must be a string, is %r" % (path, value))
        return
    if type_name == "int":
        if not isinstance(value, int) or isinstance(value, bool):
            errors.append("%s: must be an integer" % path)
        return
    if type_name == "bool":
        if not isinstance(value, bool):
            errors.append("%s: must be true or false" % path)
        return
    if type_name in ("object", "float", "datetime", "date"):
        return
    cls = getattr(k8s, type_name, None)
    if cls is None:
        errors.append("%s: unknown model %s" % (path, type_name))
        return
    if not isinstance(value, dict):
        errors.append("%s: must be an object" % path)
        return
    by_json = {j: a for a, j in cls.attribute_map.items()}
    for key, v in value.items():
        if key not in by_json:
            errors.append("%s.%s: unknown field of %s" % (path, key, type_name))
            continue
        check(v, cls.openapi_types[by_json[key]], "%s.%s" % (path, key), errors)


def objects():
    for path in manifest_files():
        with open(path) as f:
            for i, doc in enumerate(yaml.safe_load_all(f)):
                if doc is not None:
                    yield "%s#%d" % (os.path.relpath(path, ROOT), i), doc


class ManifestTest(unittest.TestCase):
    def test_there_are_manifests(self):
        kinds = {doc["kind"] for _, doc in objects()}
        for k in ("CSIDriver", "StorageClass", "Deployment", "DaemonSet", "ClusterRole"):
            self.assertIn(k, kinds)

    def test_every_object_is_well_formed(self):
        for where, doc in objects():
            with self.subTest(where=where):
                self.assertIsInstance(doc, dict)
                for key in ("apiVersion", "kind"):
                    self.assertIn(key, doc)
                if doc["kind"] != "KubeSchedulerConfiguration":
                    self.assertIn("name", doc.get("metadata", {}))

    def test_every_field_is_known_to_the_api(self):
        for where, doc in objects():
            with self.subTest(where=where, kind=doc.get("kind")):
                own = OWN_SCHEMAS.get((doc["apiVersion"], doc["kind"]))
                if own is not None:
                    self.assertEqual(set(doc) - own, set())
                    continue
                cls = model_for(doc["apiVersion"], doc["kind"])
                self.assertIsNotNone(cls, "no schema for %s %s" % (doc["apiVersion"], doc["kind"]))
                errors = []
                check(doc, cls.__name__, doc["kind"], errors)
                self.assertEqual(errors, [])

    def test_storage_classes_name_the_file_system_once(self):
        """csi-provisioner refuses to provision from a class that has both
        fsType and csi.storage.k8s.io/fstype (seen on the real one, k8s label)."""
        for where, doc in objects():
            if doc["kind"] != "StorageClass":
                continue
            with self.subTest(where=where):
                keys = [k for k in doc.get("parameters", {})
                        if k.lower() == "fstype" or k == "csi.storage.k8s.io/fstype"]
                self.assertEqual(keys, ["csi.storage.k8s.io/fstype"])

    def test_the_checker_catches_mistakes(self):
        errors = []
        check({"apiVersion": "apps/v1", "kind": "Deployment",
               "spec": {"replica": 2, "template": {"spec": {"containers": [{"name": 3}]}}}},
              "V1Deployment", "Deployment", errors)
        self.assertIn("Deployment.spec.replica: unknown field of V1DeploymentSpec", errors)
        self.assertTrue(any("containers[0].name: must be a string" in e for e in errors))


if __name__ == "__main__":
    unittest.main(verbosity=2)
