"""Checkpoint drain throughput (label bench, needs the ceph fixture): the same
backing file drained by gantry-target into the fixture's "perf" cluster
(pool rbd, data in the EC pool ecdata) against `rbd import` of that file into
the same pools, in one run; with and without the verify (by checksum: the
OSDs' CRC-32C of each object, as gantry-target runs it). The three arms take
turns in GANTRY_BENCH_DRAIN_ROUNDS rounds (default 3), in an order that
rotates from round to round, so that the load's swings from one minute to
the next fall on all of them; each figure is the ratio of the medians,
with the per-round ratios printed beside it. Every file is on disk before
a timed window opens (a checkpoint burst ends with fsync), and one untimed
import warms the OSDs first. Then the
fast tier's write burst (a new file written and fsync'ed in the lvstore)
alone and while a capped drain runs. Prints figures and ratios; asserts
nothing about time."""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "ceph"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "gantry-target"))
import ceph_env as env  # noqa: E402
sys.path.insert(0, os.path.join(HERE, ".."))
from figure import figure  # noqa: E402
from proc_cpu import TICK, daemons_cpu_seconds  # noqa: E402
from targetproc import Target  # noqa: E402

MiB = 1 << 20
SIZE = int(os.environ.get("GANTRY_BENCH_DRAIN_MIB", "512")) * MiB
BURST = 256 * MiB
ROUNDS = max(1, int(os.environ.get("GANTRY_BENCH_DRAIN_ROUNDS", "3")))


def durable(verify, cap_mbps=0):
    with open(env.CONFIG) as f:
        perf = next(c for c in json.load(f)["clusters"] if c["clusterID"] == "perf")
    return {"clusterID": "perf", "monitors": perf["monitors"], "userID": perf["userID"],
            "keyFile": perf["keyFile"], "pool": "rbd", "dataPool": "ecdata", "verify": verify,
            "bandwidthMBps": cap_mbps, "inFlight": int(os.environ.get("GANTRY_BENCH_DRAIN_IN_FLIGHT", "32"))}  # the default


def copy_durably(src, dst):
    """@src's bytes into @dst, on disk when it returns: a checkpoint burst ends
    with fsync, so no arm's timed window pays for another's writeback."""
    shutil.copyfile(src, dst)
    fd = os.open(dst, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def make_snapshot(t, src, name):
    """An lvol filled with @src's bytes, and its snapshot; returns the snapshot's bdev name."""
    t.call("bdev_lvol_create", lvol_name=name, lvs_name="gantry", size=SIZE, thin_provision=True)
    copy_durably(src, os.path.join(t.lvs, name))
    return t.call("bdev_lvol_snapshot", lvol_name="gantry/" + name, snapshot_name="snap-" + name)


def drain(t, snap, timeout=1800):
    t0 = time.monotonic()
    t.call("bdev_lvol_start_drain", snapshot_name=snap)
    while time.monotonic() - t0 < timeout:
        st = t.call("bdev_lvol_check_drain", snapshot_name=snap)
        if st["state"] == "complete":
            return time.monotonic() - t0, st
        if st["state"] == "failed":
            raise RuntimeError("drain failed: %s" % st)
        time.sleep(0.05)
    raise RuntimeError("drain not complete in %d s" % timeout)


def burst(directory, name):
    """Writes BURST bytes into a new file and fsyncs it; returns MB/s."""
    block = os.urandom(4 * MiB)
    path = os.path.join(directory, name)
    t0 = time.monotonic()
    with open(path, "wb") as f:
        for _ in range(BURST // len(block)):
            f.write(block)
        f.flush()
        os.fsync(f.fileno())
    dt = time.monotonic() - t0
    os.unlink(path)
    return BURST / dt / 1e6


NCPU = os.cpu_count() or 1


def machine_cpu():
    """CPU-seconds the machine has spent busy, and in all, since boot (/proc/stat)."""
    with open("/proc/stat") as f:
        ticks = [int(x) for x in f.readline().split()[1:9]]
    idle = ticks[3] + ticks[4]  # idle, iowait
    return (sum(ticks) - idle) / TICK, sum(ticks) / TICK


def osd_cpu():
    """CPU-seconds of the "perf" cluster's OSDs so far."""
    return daemons_cpu_seconds(os.path.join(env.DIR, "perf", "run"), "osd.*.pid")


def measured(fn):
    """@fn's result (its seconds), with the machine's busy CPU-seconds, its use of
    all cores, and the OSDs' CPU-seconds over the call: the timed window only."""
    b0, o0 = machine_cpu(), osd_cpu()
    secs = fn()
    b1, o1 = machine_cpu(), osd_cpu()
    busy = b1[0] - b0[0]
    return secs, busy, busy / max(b1[1] - b0[1], 1e-9), o1 - o0


def fmt(xs):
    return "/".join("%.2f" % x for x in xs)


def cpu_text(used):
    busy, use, osds = used
    return "  (CPU %.2f s busy, %.0f %% of %d cores; OSDs %.2f s)" % (busy, use * 100, NCPU, osds)


def main():
    work = tempfile.mkdtemp(prefix="gantry-bench-drain-")
    targets = []
    try:
        src = os.path.join(work, "checkpoint.bin")
        with open(src, "wb") as f:  # incompressible, no holes, no zeros: every byte moves
            for _ in range(SIZE // (4 * MiB)):
                f.write(os.urandom(4 * MiB))
            f.flush()
            os.fsync(f.fileno())
        tgt = {}
        for verify in (False, True):
            tgt[verify] = Target(workdir=os.path.join(work, "t-%d" % verify),
                                 durable=durable(verify)).start()
            targets.append(tgt[verify])

        def rbd_import(rnd):
            image = "bench-import-%d-%d" % (os.getpid(), rnd)
            def one():
                t0 = time.monotonic()
                env.tool("rbd", "perf", "import", "--data-pool", "ecdata", "--object-size", "4M", src,
                         "rbd/" + image)
                return time.monotonic() - t0
            got = measured(one)
            env.tool("rbd", "perf", "rm", "rbd/" + image)
            return got

        def gantry_drain(verify, rnd):
            t = tgt[verify]
            snap = make_snapshot(t, src, "vol-bench-%d-%d" % (verify, rnd))  # not timed
            got = measured(lambda: drain(t, snap)[0])
            with open(t.log) as f:
                print("  " + [l.strip() for l in f if "event=target.drain_complete" in l][-1])
            t.call("bdev_lvol_delete", name=snap)  # removes the image too
            return got

        arms = [("import", rbd_import), ("drain", lambda r: gantry_drain(False, r)),
                ("verify", lambda r: gantry_drain(True, r))]
        runs = {name: [] for name, _ in arms}
        cpu = {name: [] for name, _ in arms}  # (busy, use of all cores, OSDs) per round
        rbd_import(-1)  # not counted: the run's first big write warms the OSDs for every arm
        for rnd in range(ROUNDS):
            for name, fn in arms[rnd % 3:] + arms[:rnd % 3]:
                secs, *used = fn(rnd)
                runs[name].append(secs)
                cpu[name].append(used)
        med = {name: statistics.median(x) for name, x in runs.items()}
        busy = {name: [statistics.median(u[i] for u in cpu[name]) for i in range(3)] for name in cpu}
        t_import = med["import"]
        results = {False: med["drain"], True: med["verify"]}

        # the fast tier's burst, alone and during a capped drain
        cap = 50  # MB/s: the drain outlasts the three bursts
        t = Target(workdir=os.path.join(work, "t-burst"), durable=durable(False, cap)).start()
        targets.append(t)
        snap = make_snapshot(t, src, "vol-burst")
        alone = sorted(burst(t.lvs, "burst-alone") for _ in range(3))[1]  # the median of 3
        t.call("bdev_lvol_start_drain", snapshot_name=snap)
        while t.call("bdev_lvol_check_drain", snapshot_name=snap)["bytes_done"] == 0:
            time.sleep(0.05)
        during = sorted(burst(t.lvs, "burst-during") for _ in range(3))[1]
        drain(t, snap)
        t.call("bdev_lvol_delete", name=snap)

        mb = SIZE / 1e6
        print("bench_drain: %d MiB of random data, pool rbd, data pool ecdata (k=2 m=1), 3 OSDs; "
              "medians of %d rounds (seconds per round: import %s, drain %s, drain + verify %s; "
              "per-round ratios with verify %s)" % (
                  SIZE // MiB, ROUNDS, fmt(runs["import"]), fmt(runs["drain"]), fmt(runs["verify"]),
                  fmt([i / v for i, v in zip(runs["import"], runs["verify"])])))
        print("  rbd import                   %6.2f s  %7.1f MB/s" % (t_import, mb / t_import)
              + cpu_text(busy["import"]))
        print("  drain (gantry-target)        %6.2f s  %7.1f MB/s  ratio %.2f vs rbd import" %
              (results[False], mb / results[False], t_import / results[False]) + cpu_text(busy["drain"]))
        print("  drain + verify (checksum)    %6.2f s  %7.1f MB/s  ratio %.2f vs rbd import" %
              (results[True], mb / results[True], t_import / results[True]) + cpu_text(busy["verify"]))
        floor = busy["verify"][0] / NCPU  # drain + verify with every core busy all along
        print("  drain + verify keeps %.2f CPU-s busy (OSDs %.2f, import's %.2f): at the least %.2f s on "
              "%d cores, a ceiling of ratio %.2f here" % (
                  busy["verify"][0], busy["verify"][2], busy["import"][0], floor, NCPU,
                  t_import / floor))
        print("  fast-tier burst (%d MiB, fsync) alone %7.1f MB/s; during a drain capped at %d MB/s %7.1f MB/s"
              "  ratio %.2f" % (BURST // MiB, alone, cap, during, during / alone))
        figure("drain_verify_vs_rbd_import", t_import / results[True], ">=0.9",
               "speed of a drain with its verify ÷ rbd import of the same %d MiB" % (SIZE // MiB))
        figure("drain_verify_ceiling", t_import / floor, None,
               "the best drain + verify ÷ rbd import this machine allows: rbd import's time ÷ "
               "(the CPU-seconds drain + verify keeps busy ÷ %d cores)" % NCPU)
        figure("drain_vs_rbd_import", t_import / results[False], None,
               "speed of a drain without verify ÷ rbd import")
        figure("burst_during_capped_drain", during / alone, None,
               "fast-tier write speed during a capped drain ÷ alone")
    finally:
        for t in targets:
            t.cleanup()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
