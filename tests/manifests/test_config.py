"""The driver config (gantry.json) shipped in manifests/config.yaml and
rendered by the chart is accepted by the driver's own config loader
(config_check, built from common/config.c; GANTRY_CONFIG_CHECK names it),
and the loader does refuse a broken one."""
import json
import os
import subprocess
import tempfile
import unittest

import yaml

from test_manifests import ROOT

CHECK = os.environ.get("GANTRY_CONFIG_CHECK", "")
STANDIN = os.environ.get("GANTRY_HELM_STANDIN", "")


def config_maps(docs):
    return [d["data"]["gantry.json"] for d in docs
            if d and d["kind"] == "ConfigMap" and "gantry.json" in d.get("data", {})]


@unittest.skipUnless(CHECK and STANDIN, "GANTRY_CONFIG_CHECK/GANTRY_HELM_STANDIN unset: run through ctest")
class ConfigTest(unittest.TestCase):
    def load(self, text):
        with tempfile.TemporaryDirectory(prefix="gantry-deploy-config-") as d:
            path = os.path.join(d, "gantry.json")
            with open(path, "w") as f:
                f.write(text)
            p = subprocess.run([CHECK, path], capture_output=True, text=True, timeout=30)
        return p.returncode, p.stdout.strip()

    def test_manifests_config_loads(self):
        with open(os.path.join(ROOT, "manifests", "config.yaml")) as f:
            texts = config_maps(yaml.safe_load_all(f))
        self.assertEqual(len(texts), 1)
        self.assertEqual(self.load(texts[0])[0], 0, self.load(texts[0])[1])

    def test_chart_configs_load(self):
        chart = os.path.join(ROOT, "charts", "gantry")
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", prefix="gantry-deploy-") as f:
            yaml.safe_dump({"config": {
                "logLevel": "debug",
                "clusters": [{"clusterID": "a", "monitors": ["10.0.0.1:3300"], "tier": "capacity",
                              "rbdTimeoutSeconds": 30}],
                "targets": [{"id": "t", "url": "https://10.0.1.1:8009/",
                             "tokenFile": "/etc/gantry-target/token",
                             "addresses": [{"transport": "rdma", "traddr": "10.0.1.1",
                                            "trsvcid": "4420"}],
                             "leaf": "leaf-2", "capacityBytes": 17592186044416}],
                "node": {"maxParallelMaps": 16, "readFromReplica": "localize",
                         "crushLocation": "host=gpu-1|rack=r1"}}}, f)
            f.flush()
            for args in ([], ["-f", f.name]):
                out = subprocess.run([STANDIN, "--namespace", "gantry-system", *args, chart],
                                     capture_output=True, text=True, check=True, timeout=60).stdout
                texts = config_maps(yaml.safe_load_all(out))
                self.assertEqual(len(texts), 1)
                with self.subTest(values=args):
                    rc, msg = self.load(texts[0])
                    self.assertEqual(rc, 0, msg)

    def test_a_broken_config_is_refused(self):
        rc, msg = self.load(json.dumps({"clusters": [{"clusterID": "a", "monitor": ["x:1"]}]}))
        self.assertNotEqual(rc, 0)
        self.assertIn("clusters[0]", msg)


if __name__ == "__main__":
    unittest.main(verbosity=2)
