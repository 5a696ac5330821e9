"""`gantryctl plan` as a user runs it: the example input file, --json,
--svg (the chart must parse as XML, even with markup in a tier name), and
bad input that exits 2 and names the field."""
import json
import os
import subprocess
import tempfile
import unittest
import xml.etree.ElementTree as ET

BUILD = os.environ["GANTRY_BUILD_DIR"]
SRC = os.environ["GANTRY_SOURCE_DIR"]
GANTRYCTL = os.path.join(BUILD, "bin", "gantryctl")
EXAMPLE = os.path.join(SRC, "gantryctl", "examples", "plan.json")
SVG_NS = "{http://www.w3.org/2000/svg}"


def run(*args):
    return subprocess.run([GANTRYCTL, *args], capture_output=True, text=True, timeout=60)


class PlanCli(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="gantry-planner-%d-" % os.getpid())
        self.addCleanup(self.tmp.cleanup)

    def test_table(self):
        r = run("plan", "--input", EXAMPLE)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("deliverable", r.stdout)
        self.assertRegex(r.stdout, r"network cap +400\.0 GB/s")
        self.assertIn("(bottleneck: storage)", r.stdout)
        self.assertIn("erasure code k=4 m=2", r.stdout)
        self.assertIn("GPUDirect Storage", r.stdout)

    def test_json(self):
        r = run("plan", "--input", EXAMPLE, "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads(r.stdout)
        # 1024 GPUs x 0.4 GB/s; storage 8 x 40 GB/s is the smallest limit
        self.assertAlmostEqual(doc["reads"]["requiredGBps"], 409.6)
        self.assertEqual(doc["reads"]["bottleneck"], "storage")
        self.assertAlmostEqual(doc["reads"]["networkCapGBps"], 400)
        self.assertAlmostEqual(doc["capacity"]["erasureCode"]["fraction"], 4 / 6)
        self.assertEqual([t["name"] for t in doc["checkpoint"]["tiers"]], ["nvmeof", "ceph"])
        gds = doc["checkpoint"]["tiers"][0]["gds"]
        self.assertAlmostEqual(gds["windowSeconds"], 980 / 180)
        self.assertIn("optimalIntervalSeconds", gds)
        self.assertEqual(doc["reads"]["limitsGBps"]["leafUplinks"], 1600)
        # the inputs as used, defaults filled in, feed back as --input
        self.assertEqual(doc["inputs"]["capacity"]["fill"], 0.85)
        self.assertNotIn("sizeGB", doc["inputs"]["checkpoint"])
        again = os.path.join(self.tmp.name, "again.json")
        with open(again, "w") as f:
            json.dump(doc["inputs"], f)
        r = run("plan", "--input", again, "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout), doc)

    def test_svg_parses_as_xml(self):
        path = os.path.join(self.tmp.name, "plan.svg")
        r = run("plan", "--input", EXAMPLE, "--tier", "a<&>\"b=100", "--svg", path)
        self.assertEqual(r.returncode, 0, r.stderr)
        root = ET.parse(path).getroot()
        self.assertEqual(root.tag, SVG_NS + "svg")
        charts = root.findall(SVG_NS + "g")
        self.assertEqual(len(charts), 3)  # epochs, checkpoint windows, capacity
        lines = root.iter(SVG_NS + "polyline")
        self.assertEqual(sum(1 for _ in lines), 3 + 2 + 3)
        titles = [g.find(SVG_NS + "text").text for g in charts]
        self.assertEqual(titles[0], "Epoch time against GPU count")
        for pl in root.iter(SVG_NS + "polyline"):
            pts = pl.get("points").split()
            self.assertGreater(len(pts), 10)
            for p in pts:
                x, y = map(float, p.split(","))
                self.assertTrue(0 <= x <= 640 and 0 <= y <= 360 * 3, p)

    def test_bad_input_names_the_field(self):
        r = run("plan", "--gpus", "8", "--ingest-mbps", "5")
        self.assertEqual(r.returncode, 2)
        self.assertIn("cluster.nodeNicGbps (--node-nic-gbps): required", r.stderr)
        bad = os.path.join(self.tmp.name, "bad.json")
        with open(bad, "w") as f:
            f.write('{"capacity": {"rawTB": 10, "ecK": 0}}')
        r = run("plan", "--input", bad)
        self.assertEqual(r.returncode, 2)
        self.assertIn(bad + ": capacity.ecK: must be a number >= 1", r.stderr)
        self.assertEqual(r.stdout, "")

    def test_promotion_estimate(self):
        # docs/operations.md's ImageNet: 150 GB, capacity cluster 12 GB/s,
        # NVMe cluster 40 GB/s, copy.readMBps 2000: the cap binds, 75 s
        args = ("plan", "--promote-gb", "150", "--source-read-gbytes", "12",
                "--dest-write-gbytes", "40", "--copy-read-mbps", "2000", "--link-gbps", "100")
        r = run(*args)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"copy rate +2\.00 GB/s  \(bottleneck: copy.readMBps cap\)")
        self.assertRegex(r.stdout, r"estimated time +1m 15s")
        self.assertRegex(r.stdout, r"without the cap +12\.5s")
        r = run(*args, "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads(r.stdout)
        self.assertEqual(doc["promotion"]["bottleneck"], "copyReadCap")
        self.assertAlmostEqual(doc["promotion"]["seconds"], 75)
        self.assertAlmostEqual(doc["promotion"]["limitsGBps"]["link"], 12.5)
        self.assertNotIn("copier", doc["promotion"]["limitsGBps"])  # not given: no limit
        self.assertNotIn("cluster", doc["inputs"])  # a promotion needs no GPU cluster
        # the destination binds without the cap; the file's fields, flags override
        f = os.path.join(self.tmp.name, "promote.json")
        with open(f, "w") as out:
            json.dump(doc["inputs"], out)
        r = run("plan", "--input", f, "--copy-read-mbps", "0", "--dest-write-gbytes", "5", "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads(r.stdout)["promotion"]
        self.assertEqual((doc["bottleneck"], doc["seconds"]), ("destinationWrites", 30))
        # a missing bandwidth is named
        r = run("plan", "--promote-gb", "150", "--source-read-gbytes", "12")
        self.assertEqual(r.returncode, 2)
        self.assertIn("promotion.destinationWriteGBps (--dest-write-gbytes): required", r.stderr)

    def test_unwritable_svg(self):
        r = run("plan", "--raw-tb", "10", "--svg", os.path.join(self.tmp.name, "no", "x.svg"))
        self.assertEqual(r.returncode, 1)
        self.assertIn("--svg", r.stderr)


if __name__ == "__main__":
    unittest.main()
