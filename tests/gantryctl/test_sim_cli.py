"""`gantryctl sim` on the reference cluster and trace, as a user runs it,
checking the invariants any correct run must keep: no policy delivers more
than the max-flow bound, every job completes after it arrived, utilizations
lie in [0, 1], the same seed gives the same report, and the SVG parses."""
import json
import os
import subprocess
import tempfile
import unittest
import xml.etree.ElementTree as ET

BUILD = os.environ["GANTRY_BUILD_DIR"]
SRC = os.environ["GANTRY_SOURCE_DIR"]
GANTRYCTL = os.path.join(BUILD, "bin", "gantryctl")
EXAMPLES = os.path.join(SRC, "gantryctl", "examples")
CLUSTER = os.path.join(EXAMPLES, "reference-cluster.json")
TRACE = os.path.join(EXAMPLES, "reference-trace.json")
SVG_NS = "{http://www.w3.org/2000/svg}"
EPS = 1e-6


def run(*args):
    return subprocess.run([GANTRYCTL, "sim", *args], capture_output=True, text=True, timeout=600)


def sim_json(*extra):
    r = run("--cluster", CLUSTER, "--trace", TRACE, "--json", *extra)
    if r.returncode != 0:
        raise AssertionError(r.stderr)
    return json.loads(r.stdout)


class SimReference(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.report = sim_json("--seed", "7")
        with open(TRACE) as f:
            cls.trace = {j["name"]: j for j in json.load(f)["jobs"]}

    def test_policies_side_by_side(self):
        names = [r["policy"] for r in self.report["runs"]]
        self.assertEqual(names[0], "gantry")
        self.assertIn("spread", names)
        self.assertIn("random", names)
        self.assertIn("bound", names)
        self.assertEqual(self.report["cluster"]["gpus"], 1024)
        self.assertEqual(self.report["cluster"]["leaves"], 16)

    def test_no_policy_beats_the_bound(self):
        for r in self.report["runs"]:
            self.assertEqual(r["violations"], 0, r["policy"])
            self.assertLessEqual(r["deliveredGbit"], r["boundGbit"] * (1 + EPS), r["policy"])
            self.assertLessEqual(r["boundFraction"], 1 + EPS)
            self.assertGreater(r["boundFraction"], 0)
        bound = [r for r in self.report["runs"] if r["policy"] == "bound"][0]
        self.assertAlmostEqual(bound["boundFraction"], 1, places=3)

    def test_every_job_completes(self):
        for r in self.report["runs"]:
            self.assertEqual(len(r["jobs"]), len(self.trace))
            last = 0
            for j in r["jobs"]:
                t = self.trace[j["name"]]
                self.assertGreaterEqual(j["startSeconds"], t["arrivalSeconds"] - EPS)
                # at least steps x stepSeconds of training, plus checkpoints
                self.assertGreaterEqual(j["endSeconds"] - j["startSeconds"],
                                        t["steps"] * t["stepSeconds"] - EPS)
                self.assertAlmostEqual(j["completionSeconds"], j["endSeconds"] - t["arrivalSeconds"],
                                       places=3)
                self.assertGreaterEqual(j["leaves"], 1)
                # a job that waited says why; one that did not has no reason
                waited = j["startSeconds"] > t["arrivalSeconds"] + EPS
                self.assertEqual(waited, bool(j.get("waitReason")), j)
                # synchronized throughput never beats full speed
                self.assertLessEqual(j["stepsPerSecond"], 1 / t["stepSeconds"] + EPS)
                self.assertAlmostEqual(j["stepsPerSecond"] * t["stepSeconds"], j["utilization"],
                                       places=6)
                last = max(last, j["endSeconds"])
            self.assertAlmostEqual(r["makespanSeconds"], last, places=3)

    def test_utilization_in_unit_interval(self):
        for r in self.report["runs"]:
            self.assertTrue(0 < r["gpuUtilization"] <= 1 + EPS, r)
            self.assertTrue(0 < r["meanJobUtilization"] <= 1 + EPS, r)
            for j in r["jobs"]:
                self.assertTrue(0 < j["utilization"] <= 1 + EPS, j)

    def test_same_seed_same_report(self):
        self.assertEqual(sim_json("--seed", "7"), self.report)
        other = sim_json("--seed", "8", "--policies", "random")
        self.assertEqual(other["seed"], 8)

    def test_table_and_svg(self):
        with tempfile.TemporaryDirectory(prefix="gantry-planner-%d-" % os.getpid()) as tmp:
            path = os.path.join(tmp, "sim.svg")
            r = run("--cluster", CLUSTER, "--trace", TRACE, "--svg", path, "--jobs")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("delivered/bound", r.stdout)
            self.assertIn("job-00-video", r.stdout)
            self.assertIn("why it waited", r.stdout)
            # the library's filter reason, as kubectl describe pod would show it
            self.assertRegex(r.stdout, r"backend ceph-\d: [\d.]+ Gbps free, pod needs [\d.]+ Gbps")
            root = ET.parse(path).getroot()
            self.assertEqual(root.tag, SVG_NS + "svg")
            self.assertEqual(len(root.findall(SVG_NS + "g")), 2)
            n = len(self.report["runs"])
            self.assertEqual(sum(1 for _ in root.iter(SVG_NS + "polyline")), 2 * n)


class SimErrors(unittest.TestCase):
    def test_bad_inputs_name_the_field(self):
        r = run("--cluster", CLUSTER)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--trace: required", r.stderr)
        r = run("--cluster", CLUSTER, "--trace", TRACE, "--policies", "spread,best")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--policies: 'best'", r.stderr)
        with tempfile.TemporaryDirectory(prefix="gantry-planner-%d-" % os.getpid()) as tmp:
            bad = os.path.join(tmp, "trace.json")
            with open(bad, "w") as f:
                json.dump({"jobs": [{"name": "x", "arrivalSeconds": 0, "gpus": 8,
                                     "ingestMBpsPerGpu": 1, "dataset": "nope",
                                     "stepSeconds": 1, "steps": 1}]}, f)
            r = run("--cluster", CLUSTER, "--trace", bad)
            self.assertEqual(r.returncode, 2)
            self.assertIn(bad + ": trace.jobs[0].dataset: 'nope' is not a backend", r.stderr)
        r = run("--cluster", "/nonexistent/c.json", "--trace", TRACE)
        self.assertEqual(r.returncode, 2)
        self.assertIn("/nonexistent/c.json", r.stderr)


if __name__ == "__main__":
    unittest.main()
