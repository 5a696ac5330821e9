"""The gang scenario (500 nodes, 63 leaves, 125 jobs of 8) as a benchmark figure (label bench, `make bench`).

Runs tests/scheduler/gang_driver.py's issue_scenario(): the real
gantry-scheduler, the FAKE API server, and kube-scheduler's interleaving
(binds lagging up to 4 pods, a 46 % node sample) for 125 jobs of 8 pods on
500 nodes / 63 leaves, then deletes the placed jobs and lets the rest in.
Prints jobs whole / partial / pending, leaves per whole job and the time
each phase took, with the time per filter and per bind call; asserts
nothing (the test scheduler_gang_scenario does).
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "tests", "scheduler"))
import gang_driver as gd  # noqa: E402


def main():
    r = gd.issue_scenario()
    print("gang scenario: 125 jobs x 8 pods (100 Gbps each), 500 nodes on %d leaves" % r["leaves"])
    for phase, title in (("first", "all created at once"), ("second", "after deleting the placed jobs")):
        f = r[phase]
        print("  %-32s jobs whole %3d  partial %3d  pending %3d  leaves/whole job %.2f (max %d)"
              "  %.1f s, %d filter calls"
              % (title, f["whole"], f["partial"], f["pending"], f["leaves_per_job"], f["max_leaves"],
                 f["seconds"], f["filter_calls"]))
    print("  links over capacity: %d" % len(r["over"]))
    for verb, (n, t) in sorted(r["timing"].items()):
        print("  %-10s %5d calls, %.2f ms each (round trip, bind includes the API server's)"
              % (verb, n, 1e3 * t / n))
    return 0


if __name__ == "__main__":
    sys.exit(main())
