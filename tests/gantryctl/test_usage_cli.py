"""`gantryctl usage` as a user runs it: two node plugins' /metrics
endpoints (the real caps, sampler, registry and HTTP server of node/qos/
and common/metrics.c, over stand-in pod cgroup directories:
usage_node_standin; each job as the node records it, "<ns>/<job>"),
one job spread over both nodes, a pod with no job; --json and the table; an
endpoint that does not answer (listed, the others still shown, exit 1); bad
usage (exit 2)."""
import json
import os
import socket
import subprocess
import tempfile
import unittest

BUILD = os.environ["GANTRY_BUILD_DIR"]
GANTRYCTL = os.path.join(BUILD, "bin", "gantryctl")
STANDIN = os.path.join(BUILD, "tests", "usage_node_standin")
MB = 1000000

NODE_A = [
    # llama-0: its dataset at its 1 Gbps cap, its checkpoint volume writing 5 of 50 MB/s
    dict(uid="0b6f2c5a-aaaa-4a4a-9b9b-0000000000a0", namespace="ml", pod="llama-0", job="ml/llama", volume="0001-ds", major=251, minor=0,
         rcap=125 * MB, wcap=0, rdecl=125 * MB, wdecl=0, rbps=124 * MB, wbps=0, stallMsPer10s=2000),
    dict(uid="0b6f2c5a-aaaa-4a4a-9b9b-0000000000a0", namespace="ml", pod="llama-0", job="ml/llama", volume="0002-ck", major=259, minor=1,
         rcap=0, wcap=50 * MB, rdecl=0, wdecl=50 * MB, rbps=0, wbps=5 * MB, stallMsPer10s=2000),
    # a notebook with no job: the pod is its own row
    dict(uid="0b6f2c5a-bbbb-4a4a-9b9b-0000000000b0", namespace="dev", pod="notebook", job="", volume="0001-ds", major=251, minor=0,
         rcap=100 * MB, wcap=0, rdecl=100 * MB, wdecl=0, rbps=10 * MB, wbps=0, stallMsPer10s=0),
]
NODE_B = [
    dict(uid="0b6f2c5a-aaaa-4a4a-9b9b-0000000000a1", namespace="ml", pod="llama-1", job="ml/llama", volume="0001-ds", major=251, minor=0,
         rcap=125 * MB, wcap=0, rdecl=125 * MB, wdecl=0, rbps=125 * MB, wbps=0, stallMsPer10s=1000),
]


def run(*args):
    return subprocess.run([GANTRYCTL, "usage", *args], capture_output=True, text=True, timeout=60)


class UsageCli(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="gantry-usage-%d-" % os.getpid())
        cls.nodes, cls.urls = [], []
        try:
            for name, targets in (("a", NODE_A), ("b", NODE_B)):
                work = os.path.join(cls.tmp.name, name)
                os.mkdir(work)
                spec = os.path.join(work, "spec.json")
                with open(spec, "w") as f:
                    json.dump({"passes": 60, "targets": targets}, f)
                p = subprocess.Popen([STANDIN, spec, work], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
                cls.nodes.append(p)
                line = p.stdout.readline()  # bounded: the stand-in prints it or exits
                if not line.startswith("port "):
                    raise RuntimeError("usage_node_standin %s: %r (exit %s)" % (name, line, p.poll()))
                cls.urls.append("http://127.0.0.1:%d/metrics" % int(line.split()[1]))
        except Exception:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        for p in cls.nodes:
            p.stdin.close()
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            p.stdout.close()
        cls.tmp.cleanup()

    def metrics_args(self):
        return [a for u in self.urls for a in ("--metrics", u)]

    def test_json_per_job(self):
        r = run(*self.metrics_args(), "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads(r.stdout)
        self.assertEqual(doc["errors"], [])
        jobs = {(j["namespace"], j["job"]): j for j in doc["jobs"]}
        self.assertEqual(sorted(jobs), [("dev", "notebook"), ("ml", "llama")])
        llama = jobs[("ml", "llama")]
        self.assertEqual((llama["pods"], llama["volumes"], llama["jobIsPod"]), (2, 3, False))
        self.assertAlmostEqual(llama["declaredReadBps"], 250 * MB)
        self.assertAlmostEqual(llama["declaredWriteBps"], 50 * MB)
        self.assertAlmostEqual(llama["readBps"], 249 * MB)
        self.assertAlmostEqual(llama["writeBps"], 5 * MB)
        self.assertAlmostEqual(llama["capReadBps"], 250 * MB)
        self.assertAlmostEqual(llama["readBytes"], 60 * 10 * 249 * MB)
        self.assertAlmostEqual(llama["atCapShare"], 1.0)   # llama-1 read at 100 % of its cap
        self.assertAlmostEqual(llama["stallShare"], 0.2)   # llama-0 waited 2 s of every 10
        self.assertAlmostEqual(llama["usedShare"], (249 + 5) / 300)
        nb = jobs[("dev", "notebook")]
        self.assertEqual((nb["pods"], nb["volumes"], nb["jobIsPod"]), (1, 1, True))
        self.assertAlmostEqual(nb["usedShare"], 0.1)
        self.assertAlmostEqual(nb["atCapShare"], 0.0)

    def test_table(self):
        r = run(*self.metrics_args())
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        self.assertRegex(lines[0], r"^NAMESPACE +JOB +PODS +VOLS +DECLARED R/W +USED R/W +CAP R/W +USED% +AT-CAP +STALL")
        # 250 MB/s = 2.0 Gbps declared, 249 MB/s = 2.0 Gbps used; writes 0.40 declared, 0.04 used
        self.assertRegex(r.stdout, r"\nml +llama +2 +3 +2\.0/0\.40 +2\.0/0\.04 +2\.0/0\.40 +85% +100% +20%\n")
        self.assertRegex(r.stdout, r"\ndev +notebook +1 +1 +0\.80/- +0\.08/- +0\.80/- +10% +0% +0%\n")

    def test_one_node_down(self):
        with socket.socket() as s:  # a port nothing listens on
            s.bind(("127.0.0.1", 0))
            dead = "http://127.0.0.1:%d/metrics" % s.getsockname()[1]
        r = run("--metrics", self.urls[1], "--metrics", dead, "--json", "--timeout", "5")
        self.assertEqual(r.returncode, 1)
        self.assertIn(dead, r.stderr)
        doc = json.loads(r.stdout)
        self.assertEqual([e["source"] for e in doc["errors"]], [dead])
        self.assertEqual([(j["job"], j["pods"]) for j in doc["jobs"]], [("llama", 1)])

    def test_bad_usage(self):
        for args, needle in (([], "--metrics URL: at least one is required"),
                             (["--metrics", "file:///etc/passwd"], "want an http:// or https:// URL"),
                             (["--metrics", "http://x/metrics", "--timeout", "0"], "--timeout"),
                             (["--metrics", "http://x/metrics", "extra"], "usage: gantryctl usage")):
            with self.subTest(args=args):
                r = run(*args)
                self.assertEqual(r.returncode, 2, r.stdout)
                self.assertIn(needle, r.stderr)


if __name__ == "__main__":
    unittest.main()
