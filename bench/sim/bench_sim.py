"""Placement quality on the reference cluster: Gantry / bound and spread /
bound, from `gantryctl sim` runs over several seeds.

For each policy it prints the read bandwidth delivered to the running jobs
as a share of the max-flow bound for those same jobs (the baseline, measured
in the same run), the makespan and GPU utilization, and the mean completion
time; then the headline ratios. It asserts nothing about time or quality:
it records them.
"""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from figure import figure  # noqa: E402

BUILD = os.environ["GANTRY_BUILD_DIR"]
SRC = os.environ["GANTRY_SOURCE_DIR"]
GANTRYCTL = os.path.join(BUILD, "bin", "gantryctl")
EX = os.path.join(SRC, "gantryctl", "examples")
SEEDS = [1, 2, 3, 4, 5]


def run(seed):
    t0 = time.monotonic()
    out = subprocess.run([GANTRYCTL, "sim", "--cluster", os.path.join(EX, "reference-cluster.json"),
                          "--trace", os.path.join(EX, "reference-trace.json"), "--json",
                          "--seed", str(seed)], check=True, capture_output=True, text=True,
                         timeout=600).stdout
    return json.loads(out), time.monotonic() - t0


def mean(xs):
    return sum(xs) / len(xs)


def main():
    per = {}
    wall = []
    for seed in SEEDS:
        report, secs = run(seed)
        wall.append(secs)
        for r in report["runs"]:
            per.setdefault(r["policy"], []).append(r)
    print("reference cluster: %d nodes, %d GPUs, %d leaves; %d jobs; seeds %s"
          % (report["cluster"]["nodes"], report["cluster"]["gpus"], report["cluster"]["leaves"],
             report["jobs"], SEEDS))
    print("%-8s %16s %12s %10s %17s" % ("policy", "delivered/bound", "makespan s", "GPU util",
                                        "mean completion s"))
    for policy, runs in per.items():
        print("%-8s %15.1f%% %12.0f %9.1f%% %17.0f" % (
            policy, 100 * mean([r["boundFraction"] for r in runs]),
            mean([r["makespanSeconds"] for r in runs]),
            100 * mean([r["gpuUtilization"] for r in runs]),
            mean([r["meanCompletionSeconds"] for r in runs])))
    g = mean([r["boundFraction"] for r in per["gantry"]])
    s = mean([r["boundFraction"] for r in per["spread"]])
    ideal = mean([r["makespanSeconds"] for r in per["bound"]])
    print("Gantry/bound (delivered bandwidth): %.3f" % g)
    print("spread/bound (delivered bandwidth): %.3f" % s)
    print("Gantry/spread: %.3f" % (g / s))
    figure("sim_delivered_gantry_vs_spread", g / s, None,
           "read bandwidth delivered to running jobs, Gantry's placement ÷ spread")
    print("makespan / bound's makespan: gantry %.3f, spread %.3f"
          % (mean([r["makespanSeconds"] for r in per["gantry"]]) / ideal,
             mean([r["makespanSeconds"] for r in per["spread"]]) / ideal))
    print("mean completion, gantry / spread: %.3f"
          % (mean([r["meanCompletionSeconds"] for r in per["gantry"]])
             / mean([r["meanCompletionSeconds"] for r in per["spread"]])))
    print("simulator wall time per run (4 policies): %.2f s" % mean(wall))
    return 0


if __name__ == "__main__":
    sys.exit(main())
