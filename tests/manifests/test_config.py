"""What the manifests hand the binaries is what the binaries take:
- the driver config (gantry.json) of manifests/config.yaml and of the chart
  loads with the driver's own loader (config_check, built from
  common/config.c; GANTRY_CONFIG_CHECK names it), which refuses a broken one;
- every --flag a Gantry container passes is one its binary's --help lists
  (GANTRY_BIN_DIR; a binary not built in this tree is a visible skip);
- the extender's topology.json of manifests/ and of the chart is one
  gantry-scheduler starts with (it is run on 127.0.0.1 until it serves)."""
import json
import os
import re
import signal
import subprocess
import tempfile
import time
import unittest

import yaml

from test_manifests import ROOT

CHECK = os.environ.get("GANTRY_CONFIG_CHECK", "")
STANDIN = os.environ.get("GANTRY_HELM_STANDIN", "")
BIN_DIR = os.environ.get("GANTRY_BIN_DIR", "")


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


def gantry_containers(docs):
    for d in docs:
        if d and d["kind"] in ("Deployment", "DaemonSet"):
            for c in d["spec"]["template"]["spec"]["containers"]:
                if c.get("command", [""])[0].startswith("gantry"):
                    yield "%s/%s" % (d["metadata"]["name"], c["name"]), c


@unittest.skipUnless(BIN_DIR and STANDIN, "GANTRY_BIN_DIR/GANTRY_HELM_STANDIN unset: run through ctest")
class FlagsTest(unittest.TestCase):
    def help_flags(self, binary):
        path = os.path.join(BIN_DIR, binary)
        if not os.path.exists(path):
            self.skipTest("%s is not built in this tree yet" % binary)
        p = subprocess.run([path, "--help"], capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        return set(re.findall(r"(--[a-z][a-z0-9-]*)", p.stdout + p.stderr))

    def check(self, docs):
        seen = 0
        for where, c in gantry_containers(docs):
            with self.subTest(container=where):
                known = self.help_flags(c["command"][0])
                used = {a.split("=")[0] for a in c.get("args", []) if a.startswith("--")}
                self.assertEqual(sorted(used - known), [], "%s: flags %s does not take" %
                                 (where, c["command"][0]))
                seen += 1
        return seen

    def test_manifests_flags(self):
        docs = []
        for name in ("controller", "node", "target", "scheduler"):
            with open(os.path.join(ROOT, "manifests", name + ".yaml")) as f:
                docs += list(yaml.safe_load_all(f))
        self.check(docs)

    def test_chart_flags(self):
        for args in ([], ["--set", "target.tls.secretName=gantry-target-tls"]):
            out = subprocess.run([STANDIN, "--namespace", "gantry-system", *args,
                                  os.path.join(ROOT, "charts", "gantry")],
                                 capture_output=True, text=True, check=True, timeout=60).stdout
            self.check(yaml.safe_load_all(out))

    def test_an_unknown_flag_is_caught(self):
        known = self.help_flags("gantry-csi")
        self.assertIn("--mode", known)
        self.assertNotIn("--no-such-flag", known)


def topology_of(docs):
    for d in docs:
        if d and d["kind"] == "ConfigMap" and "topology.json" in d.get("data", {}):
            return d["data"]["topology.json"]
    raise AssertionError("no topology.json in a ConfigMap")


@unittest.skipUnless(BIN_DIR and STANDIN, "GANTRY_BIN_DIR/GANTRY_HELM_STANDIN unset: run through ctest")
class TopologyTest(unittest.TestCase):
    def serve(self, topology):
        """Runs gantry-scheduler with @topology until it serves (True) or
        exits (False, its stderr); never leaves it running."""
        binary = os.path.join(BIN_DIR, "gantry-scheduler")
        if not os.path.exists(binary):
            self.skipTest("gantry-scheduler is not built in this tree yet")
        with tempfile.TemporaryDirectory(prefix="gantry-deploy-topo-%d-" % os.getpid()) as d:
            path, ready = os.path.join(d, "topology.json"), os.path.join(d, "ready")
            with open(path, "w") as f:
                f.write(topology)
            p = subprocess.Popen([binary, "--listen", "127.0.0.1:0", "--topology", path,
                                  "--ready-file", ready, "--insecure-http"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            try:
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline:
                    if os.path.exists(ready) and os.path.getsize(ready) > 0:
                        return True, ""
                    if p.poll() is not None:
                        return False, p.stderr.read()
                    time.sleep(0.05)
                self.fail("gantry-scheduler neither served nor exited within 30 s")
            finally:
                if p.poll() is None:
                    p.send_signal(signal.SIGTERM)
                    try:
                        p.wait(timeout=15)
                    except subprocess.TimeoutExpired:
                        p.kill()
                        p.wait()
                p.stderr.close()

    def test_manifests_topology_serves(self):
        with open(os.path.join(ROOT, "manifests", "scheduler.yaml")) as f:
            ok, why = self.serve(topology_of(yaml.safe_load_all(f)))
        self.assertTrue(ok, why)

    def test_chart_topology_serves(self):
        chart = os.path.join(ROOT, "charts", "gantry")
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", prefix="gantry-deploy-") as f:
            yaml.safe_dump({"scheduler": {"topology": {
                "leaves": [{"name": "leaf-%d" % i, "spine": "spine-%d" % (i // 8),
                            "uplinkGbps": 1600, "oversubscription": 2} for i in range(16)]}}}, f)
            f.flush()
            for args in ([], ["-f", f.name]):
                out = subprocess.run([STANDIN, "--namespace", "gantry-system", *args, chart],
                                     capture_output=True, text=True, check=True, timeout=60).stdout
                with self.subTest(values=args):
                    ok, why = self.serve(topology_of(yaml.safe_load_all(out)))
                    self.assertTrue(ok, why)

    def test_a_broken_topology_is_refused(self):
        ok, why = self.serve(json.dumps({"leaves": [{"name": "x", "uplink": 3}]}))
        self.assertFalse(ok)
        self.assertIn("leaves[0].uplink", why)


if __name__ == "__main__":
    unittest.main(verbosity=2)
