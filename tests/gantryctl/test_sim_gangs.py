"""`gantryctl sim` on the gang scenario's fabric: 63 leaves of 8 nodes (8 GPUs,
400 Gbps NICs, 800 Gbps uplinks), storage on its own leaf, 125 jobs of 8
one-GPU pods reading 100 Gbps each, all arriving at once. One leaf feeds
exactly one job. The gang-aware policy (gantry-gang, the extender's gang
code) must run 63 jobs at once, each whole on one leaf, the other 62 wholly
waiting, then those 62 on one leaf each when the first ones end; spread
(kube-scheduler's default) scatters them."""
import json
import os
import subprocess
import tempfile
import unittest

BUILD = os.environ["GANTRY_BUILD_DIR"]
GANTRYCTL = os.path.join(BUILD, "bin", "gantryctl")

CLUSTER = {"gpuLeaves": 63, "nodesPerLeaf": 8, "gpusPerNode": 8, "nodeNicGbps": 400,
           "spineOversubscription": 4,
           "storageLeaves": [{"name": "storage", "uplinkGbps": 200000}],
           "backends": [{"name": "ceph-0", "kind": "ceph", "gbps": 200000, "leaves": ["storage"]}]}
TRACE = {"jobs": [{"name": "train-%03d" % i, "arrivalSeconds": i * 0.001, "gpus": 8, "gpusPerPod": 1,
                   "ingestMBpsPerGpu": 12500, "dataset": "ceph-0", "stepSeconds": 1, "steps": 600}
                  for i in range(125)]}


class SimGangs(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with tempfile.TemporaryDirectory() as d:
            paths = []
            for name, obj in (("cluster.json", CLUSTER), ("trace.json", TRACE)):
                paths.append(os.path.join(d, name))
                with open(paths[-1], "w") as f:
                    json.dump(obj, f)
            r = subprocess.run([GANTRYCTL, "sim", "--cluster", paths[0], "--trace", paths[1],
                                "--policies", "gantry-gang,spread", "--json"],
                               capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            raise AssertionError(r.stderr)
        cls.runs = {run["policy"]: run for run in json.loads(r.stdout)["runs"]}

    def test_gangs_whole_on_one_leaf(self):
        jobs = self.runs["gantry-gang"]["jobs"]
        self.assertEqual(len(jobs), 125)
        first = [j for j in jobs if j["startSeconds"] < 1]
        later = [j for j in jobs if j["startSeconds"] >= 1]
        self.assertEqual((len(first), len(later)), (63, 62))
        self.assertEqual({j["leaves"] for j in jobs}, {1})
        # the 62 waited for the first ones to end, then all ran at once
        end_first = min(j["startSeconds"] + 600 for j in first)
        self.assertTrue(all(j["startSeconds"] >= end_first - 1 for j in later))
        self.assertEqual(self.runs["gantry-gang"]["violations"], 0)

    def test_spread_scatters_them(self):
        self.assertGreater(max(j["leaves"] for j in self.runs["spread"]["jobs"]), 1)


if __name__ == "__main__":
    unittest.main(verbosity=2)
