"""Dataset CreateVolume + DeleteVolume through gantry-csi (gRPC over the
Unix socket, journal, locks, librbd) against the same pair done with bare
librbd (bare_rbd.c: same pool, EC data pool, size and features, one cached
rados handle like the plugin's), on the fixture's cluster, at concurrency
1, 8 and 32.

The machine's load swings latencies by +-50 % from one minute to the next,
so the arms are not run one after the other: every round runs each arm
once at the same concurrency, in an order that rotates from round to round
(all see the same load, none always goes first), and every round counts.
The arms: bare librbd; bare librbd plus the journal's RADOS operations done
with bare librados (what the journal costs); the plugin; and the gRPC hop
alone (two ControllerGetCapabilities, which touch no Ceph, per pair,
through the same client at the same concurrency). Printed per concurrency:
each arm's p50/p99 and pairs/s; the ratios of the pooled medians with a
95 % bootstrap interval over rounds, the per-round ratio's median and IQR;
uptime before and after. Then, one pair at a time, the client ops the OSDs
served per pair (their perf counters, through the admin sockets) and the
CPU time per pair of the cluster's daemons, of gantry-csi and of bare_rbd
(with and without the journal's ops),
which the load blurs far less than latency. Asserts nothing about time."""
import concurrent.futures
import json
import os
import random
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "tests", "ceph"))
import ceph_env as env  # noqa: E402
from ceph_env import Plugin  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from figure import figure  # noqa: E402
from proc_cpu import daemons_cpu_seconds, process_cpu_seconds  # noqa: E402

SIZE = 64 << 20
LEVELS = [(1, 6), (8, 16), (32, 32)]  # (concurrency, pairs per round and arm)
ROUNDS = max(2, int(os.environ.get("GANTRY_BENCH_DATASET_ROUNDS", "12")))


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p / 100))]


def timed(conc, n, one):
    """Latencies (ms) of @n calls of @one(i) at @conc, and the wall time (s)."""
    def run(i):
        t0 = time.monotonic()
        one(i)
        return (time.monotonic() - t0) * 1e3
    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=conc) as pool:
        lat = list(pool.map(run, range(n)))
    return lat, time.monotonic() - t0


def plugin_run(p, conc, n, tag):
    # requests built before the clock starts, like a client's ready messages
    reqs = [env.create_req("bench-%d-%s-%d" % (os.getpid(), tag, i), size=SIZE) for i in range(n)]
    secrets = env.secrets()

    def one(i):
        vid = env.retry(lambda: p.call("CreateVolume", reqs[i], timeout=120)).volume.volume_id
        env.retry(lambda: p.call("DeleteVolume", env.csi_pb2.DeleteVolumeRequest(
            volume_id=vid, secrets=secrets), timeout=120))
    return timed(conc, n, one)


def hop_run(p, conc, n):
    def one(i):
        p.call("ControllerGetCapabilities", timeout=30)
        p.call("ControllerGetCapabilities", timeout=30)
    return timed(conc, n, one)


def bare_run(conc, n, journal=False):
    with open(env.CONFIG) as f:
        mon = json.load(f)["clusters"][0]["monitors"][0]
    out = subprocess.run([os.path.join(env.csi_client.BUILD_DIR, "bin", "bench_bare_rbd"), mon,
                          "gantry", os.path.join(env.DIR, "perf", "gantry.key"), "rbd", "ecdata",
                          str(SIZE), str(n), str(conc)] + (["journal"] if journal else []),
                         capture_output=True, text=True, timeout=600, check=True).stdout
    kv = dict(x.split("=") for x in out.split())
    BARE_CPU_MS[0] += float(kv["cpu_ms"])
    # the wall time from its own rate: the process's connect is not the pairs' work
    return [float(x) for x in kv["lat_ms"].split(",")], n / float(kv["ops_per_s"])


BARE_CPU_MS = [0.0]  # CPU the bare processes spent on their pairs, summed


def proc_cpu_ms(pid):
    """user + system CPU time of process @pid so far (ms)."""
    return process_cpu_seconds(pid) * 1e3


def cluster_cpu_ms():
    """CPU time of the "perf" cluster's daemons (mon, mgr, OSDs) so far (ms)."""
    return daemons_cpu_seconds(os.path.join(env.DIR, "perf", "run")) * 1e3


def osd_ops():
    """Client ops (reads, writes, read-modify-writes) the "perf" OSDs have served so far."""
    import glob
    tot = {"op": 0, "op_r": 0, "op_w": 0, "op_rw": 0}
    for sock in glob.glob(os.path.join(env.DIR, "perf", "run", "ceph-osd.*.asok")):
        d = json.loads(subprocess.run(["ceph", "--admin-daemon", sock, "perf", "dump"],
                                      capture_output=True, text=True, timeout=60,
                                      check=True).stdout)["osd"]
        for k in tot:
            tot[k] += d[k]
    return tot


def ops_per_pair(fn, n, plugin_pid=None):
    """Per pair of @fn's @n: OSD client ops, and CPU ms of the cluster's
    daemons, of the plugin process and of this (client) process, or of the
    bare process."""
    before, c0, b0 = osd_ops(), cluster_cpu_ms(), BARE_CPU_MS[0]
    p0, s0 = (proc_cpu_ms(plugin_pid) if plugin_pid else 0), sum(os.times()[:2]) * 1e3
    fn()
    after = osd_ops()
    out = {k: (after[k] - before[k]) / n for k in before}
    out["cluster_cpu"] = (cluster_cpu_ms() - c0) / n
    out["client_cpu"] = ((proc_cpu_ms(plugin_pid) - p0) if plugin_pid else BARE_CPU_MS[0] - b0) / n
    out["python_cpu"] = (sum(os.times()[:2]) * 1e3 - s0) / n
    return out


def uptime():
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def bootstrap(rounds_a, rounds_b, reps=2000):
    """95 % interval of median(pooled a)/median(pooled b), resampling whole rounds."""
    rng = random.Random(26)
    k = len(rounds_a)
    out = []
    for _ in range(reps):
        pick = [rng.randrange(k) for _ in range(k)]
        a = [x for i in pick for x in rounds_a[i]]
        b = [x for i in pick for x in rounds_b[i]]
        out.append(statistics.median(a) / statistics.median(b))
    out.sort()
    return out[int(reps * 0.025)], out[int(reps * 0.975) - 1]


def quartiles(xs):
    q = statistics.quantiles(xs, n=4, method="inclusive")
    return q[0], statistics.median(xs), q[2]


def level(p, conc, n):
    """ROUNDS rounds at @conc, the arms' order rotating: {arm: [(latencies, wall), ...]}."""
    run = {"bare": lambda r: bare_run(conc, n),
           "journal": lambda r: bare_run(conc, n, journal=True),
           "plugin": lambda r: plugin_run(p, conc, n, "%d-%d" % (conc, r)),
           "hop": lambda r: hop_run(p, conc, n)}
    names = list(run)
    arms = {a: [] for a in names}
    for r in range(ROUNDS):
        for arm in names[r % 4:] + names[:r % 4]:
            arms[arm].append(run[arm](r))
    return arms


def report(conc, n, arms):
    lats = {a: [lat for lat, _ in arms[a]] for a in arms}
    pooled = {a: [x for lat in lats[a] for x in lat] for a in arms}
    tput = {a: sum(len(lat) for lat in lats[a]) / sum(w for _, w in arms[a]) for a in arms}
    print("concurrency %d, %d rounds x %d pairs per arm" % (conc, ROUNDS, n))
    for a, what in (("bare", "bare librbd"), ("journal", "bare librbd + journal ops"),
                    ("plugin", "gantry-csi over gRPC"), ("hop", "hop: 2 empty RPCs")):
        print("  %-26s p50 %7.1f  p99 %7.1f ms  %6.2f /s" % (
            what, statistics.median(pooled[a]), pct(pooled[a], 99), tput[a]))
    for a, b in (("plugin", "bare"), ("plugin", "journal"), ("journal", "bare")):
        lo, hi = bootstrap(lats[a], lats[b])
        q1, qm, q3 = quartiles([statistics.median(x) / statistics.median(y)
                                for x, y in zip(lats[a], lats[b])])
        print("  %-7s / %-7s p50 x%.2f [95 %% %.2f-%.2f]  per-round x%.2f (IQR %.2f-%.2f)  "
              "p99 x%.2f  throughput x%.2f" % (
                  a, b, statistics.median(pooled[a]) / statistics.median(pooled[b]), lo, hi, qm,
                  q1, q3, pct(pooled[a], 99) / pct(pooled[b], 99), tput[a] / tput[b]))
    figure("createvolume_vs_bare_librbd_c%d" % conc,
           statistics.median(pooled["plugin"]) / statistics.median(pooled["bare"]), "<=1.1",
           "p50 latency of CreateVolume+DeleteVolume through gantry-csi ÷ bare librbd, %d "
           "concurrent" % conc)
    print("  plugin less the hop / bare p50 x%.2f" % (
        (statistics.median(pooled["plugin"]) - statistics.median(pooled["hop"]))
        / statistics.median(pooled["bare"])))


def main():
    results = []
    with Plugin(mode="controller", node_id=None, config=env.CONFIG,
                extra=["--workers", "32", "--log-level", "warn"]) as p:
        plugin_run(p, 1, 2, "warm")  # the cached connection, the client's channel
        bare_run(1, 2)
        print("before: %s" % uptime(), flush=True)
        for conc, n in LEVELS:
            results.append((conc, n, level(p, conc, n)))
        after = uptime()
        k = 16  # one at a time: nothing else runs on the fixture meanwhile
        bare_ops = ops_per_pair(lambda: bare_run(1, k), k)
        jour_ops = ops_per_pair(lambda: bare_run(1, k, journal=True), k)
        plug_ops = ops_per_pair(lambda: plugin_run(p, 1, k, "ops"), k, p.proc.pid)
    print("dataset CreateVolume+DeleteVolume (64 MiB image, data in EC 2+1): latency of one "
          "pair; the arms take turns in every round, in rotating order, every round counted. "
          "p50 ratio = median of all the pairs of one arm / of the other, with a 95 % bootstrap "
          "interval over rounds; per-round = the rounds' p50 ratios, median and IQR")
    for conc, n, arms in results:
        report(conc, n, arms)
    print("after:  %s" % after)
    print("OSD client ops per pair (one at a time): plugin %.0f (reads %.0f, writes %.0f, "
          "read-modify-writes %.0f), bare %.0f (%.0f, %.0f, %.0f): ratio x%.2f, %+.0f ops" % (
              plug_ops["op"], plug_ops["op_r"], plug_ops["op_w"], plug_ops["op_rw"], bare_ops["op"],
              bare_ops["op_r"], bare_ops["op_w"], bare_ops["op_rw"], plug_ops["op"] / bare_ops["op"],
              plug_ops["op"] - bare_ops["op"]))
    figure("createvolume_osd_ops_vs_bare_librbd", plug_ops["op"] / bare_ops["op"], None,
           "OSD client ops per CreateVolume+DeleteVolume ÷ bare librbd's (load-free)")
    print("  bare librbd + journal ops %.0f (%.0f, %.0f, %.0f)" % (
        jour_ops["op"], jour_ops["op_r"], jour_ops["op_w"], jour_ops["op_rw"]))
    print("CPU ms per pair (one at a time): cluster daemons plugin %.1f, bare + journal %.1f, "
          "bare %.1f (plugin / bare x%.2f); gantry-csi %.1f, bare_rbd + journal %.1f, bare_rbd %.1f; "
          "the python gRPC client %.1f" % (
              plug_ops["cluster_cpu"], jour_ops["cluster_cpu"], bare_ops["cluster_cpu"],
              plug_ops["cluster_cpu"] / bare_ops["cluster_cpu"], plug_ops["client_cpu"],
              jour_ops["client_cpu"], bare_ops["client_cpu"], plug_ops["python_cpu"]))
    directory, records = env.journal()
    leftovers = [n for n in directory if n.startswith("bench-%d-" % os.getpid())]
    if leftovers:
        print("bench left journal entries behind: %s" % leftovers)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
