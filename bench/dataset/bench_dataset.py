"""Dataset CreateVolume + DeleteVolume through gantry-csi (gRPC over the
Unix socket, journal, locks, librbd) against the same pair done with bare
librbd (bare_rbd.c), in the same run on the fixture's cluster, at
concurrency 1, 8 and 32. Prints p50/p99 latency of a create+delete pair,
throughput, and the ratio plugin/bare; then the client ops the OSDs served
per pair (their perf counters, read through the admin sockets), which the
machine's load does not blur. Asserts nothing about time."""
import concurrent.futures
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "tests", "ceph"))
import ceph_env as env  # noqa: E402
from ceph_env import Plugin  # noqa: E402

SIZE = 64 << 20
LEVELS = [(1, 16), (8, 32), (32, 64)]  # (concurrency, ops)


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p / 100))]


def plugin_run(p, conc, ops):
    def one(i):
        name = "bench-%d-%d-%d" % (os.getpid(), conc, i)
        t0 = time.monotonic()
        vid = env.retry(lambda: p.call("CreateVolume", env.create_req(name, size=SIZE),
                                       timeout=120)).volume.volume_id
        env.retry(lambda: p.call("DeleteVolume", env.delete_req(vid), timeout=120))
        return (time.monotonic() - t0) * 1e3
    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=conc) as pool:
        lat = list(pool.map(one, range(ops)))
    wall = time.monotonic() - t0
    return pct(lat, 50), pct(lat, 99), ops / wall


def bare_run(conc, ops):
    with open(env.CONFIG) as f:
        import json
        mon = json.load(f)["clusters"][0]["monitors"][0]
    out = subprocess.run([os.path.join(env.csi_client.BUILD_DIR, "bin", "bench_bare_rbd"), mon,
                          "gantry", os.path.join(env.DIR, "perf", "gantry.key"), "rbd", "ecdata",
                          str(SIZE), str(ops), str(conc)],
                         capture_output=True, text=True, timeout=600, check=True).stdout
    kv = dict(x.split("=") for x in out.split())
    return float(kv["p50_ms"]), float(kv["p99_ms"]), float(kv["ops_per_s"])


def osd_ops():
    """Client ops (reads, writes, read-modify-writes) the "perf" OSDs have served so far."""
    import glob
    import json
    tot = {"op": 0, "op_r": 0, "op_w": 0, "op_rw": 0}
    for sock in glob.glob(os.path.join(env.DIR, "perf", "run", "ceph-osd.*.asok")):
        d = json.loads(subprocess.run(["ceph", "--admin-daemon", sock, "perf", "dump"],
                                      capture_output=True, text=True, timeout=60,
                                      check=True).stdout)["osd"]
        for k in tot:
            tot[k] += d[k]
    return tot


def ops_per_pair(fn, n):
    before = osd_ops()
    fn()
    after = osd_ops()
    return {k: (after[k] - before[k]) / n for k in before}


def main():
    rows = []
    with Plugin(mode="controller", node_id=None, config=env.CONFIG,
                extra=["--workers", "32", "--log-level", "warn"]) as p:
        plugin_run(p, 1, 2)  # warm the cached connection
        for conc, ops in LEVELS:
            bare = bare_run(conc, ops)
            plug = plugin_run(p, conc, ops)
            rows.append((conc, ops, plug, bare))
        n = 8  # one at a time: nothing else runs on the fixture meanwhile
        bare_ops = ops_per_pair(lambda: bare_run(1, n), n)
        plug_ops = ops_per_pair(lambda: plugin_run(p, 1, n), n)
    print("dataset CreateVolume+DeleteVolume (64 MiB image, data in EC 2+1), one pair per op")
    print("%-5s %-4s | %-28s | %-28s | ratio plugin/bare" % ("conc", "ops", "plugin p50/p99 ms, ops/s",
                                                             "bare librbd p50/p99 ms, ops/s"))
    for conc, ops, (p50, p99, tput), (b50, b99, btput) in rows:
        print("%-5d %-4d | %8.1f %8.1f %8.2f   | %8.1f %8.1f %8.2f   | p50 x%.2f p99 x%.2f "
              "throughput x%.2f" % (conc, ops, p50, p99, tput, b50, b99, btput, p50 / b50,
                                    p99 / b99, tput / btput))
    print("OSD client ops per pair (one at a time): plugin %.0f (reads %.0f, writes %.0f, "
          "read-modify-writes %.0f), bare %.0f (%.0f, %.0f, %.0f): ratio x%.2f, %+.0f ops" % (
              plug_ops["op"], plug_ops["op_r"], plug_ops["op_w"], plug_ops["op_rw"], bare_ops["op"],
              bare_ops["op_r"], bare_ops["op_w"], bare_ops["op_rw"], plug_ops["op"] / bare_ops["op"],
              plug_ops["op"] - bare_ops["op"]))
    directory, records = env.journal()
    leftovers = [n for n in directory if n.startswith("bench-%d-" % os.getpid())]
    if leftovers:
        print("bench left journal entries behind: %s" % leftovers)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
