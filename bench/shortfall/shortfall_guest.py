"""Where a backend's shortfall goes, measured in the test VM on Debian's
kernel (run by bench_shortfall.sh through tests/vm/run.sh; the cluster is
tests/vm/faults_cluster.sh's: 5 OSDs, EC 2+2, one dataset image).

A gang of four pods reads one dataset volume, staged read-only by
gantry-csi --mode node (krbd, raw block) and published to each pod, whose
cgroups are laid out as the kubelet makes them (systemd driver, Burstable).
Each pod's loader reads its own shard of the image in order with O_DIRECT
(dd, 1 MiB requests) from its container cgroup; its rate is the growth of
the pod cgroup's io.stat rbytes, the kernel's own count.

First, on the healthy cluster and with no cap, the gang's aggregate rate
is measured; each pod's reservation is a quarter of it (the scheduler
admitted the gang against the healthy backend, which it fills). Then the
backend falls short: one OSD is killed (degraded EC reads, no recovery
yet: the monitors mark it out only after 10 minutes) and a reader that no
reservation accounts for (another tenant, outside kubepods, no io.max)
reads the same volume flat out. Two gangs are measured in turn: "even",
every pod's loader one reader (identical pods, as a gang's are), and
"mixed", two of the pods loading with three readers each (a loader that
outpaces the others: the case a common cap could even out). For each the
phases alternate, AB BA AB..., so that a drift of the whole machine falls
on both sides:

  A  every pod's io.max rbps = its reservation (what the node writes today)
  B  every pod's io.max rbps = reservation x factor, the same factor for
     all, factor = effective / reserved, effective = the gang's aggregate
     in the latest A phase (what the backend gave Gantry's pods)

Per phase: each pod's MB/s, slowest / median, min / max, the aggregate,
the other tenant's rate and how busy the guest's CPUs were. A/A and B/B
differences are the noise the A/B difference is judged against. Asserts
nothing about time; exits non-zero only when a reader dies or the volume
cannot be staged.

    python3 shortfall_guest.py   (GANTRY_SHORTFALL_PHASE_S, default 20;
                                  GANTRY_SHORTFALL_PAIRS, default 3)
"""
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
VM = os.path.normpath(os.path.join(HERE, "..", "..", "tests", "vm"))
sys.path.insert(0, VM)
sys.path.insert(0, os.path.join(VM, "..", "conformance"))
sys.path.insert(0, os.path.join(HERE, ".."))
from csi_client import Plugin  # noqa: E402
import csi_pb2  # noqa: E402
from figure import figure  # noqa: E402
from test_dataset_faults import Faults, read_share  # noqa: E402

SHARE = "/vm"
CG = "/sys/fs/cgroup"
KUBELET = "/var/lib/kubelet/plugins/kubernetes.io/csi/csi.gantry.io"
STAGING = os.path.join(KUBELET, "staging", "ds")
VOL = "0001-0004-test-0000000000000001-ds"
PHASE_S = float(os.environ.get("GANTRY_SHORTFALL_PHASE_S", "20"))
PAIRS = int(os.environ.get("GANTRY_SHORTFALL_PAIRS", "3"))
SETTLE_S = 4.0  # after a cap change: requests queued under the old cap drain
GANG = 4
OSD_KILLED = 1
# the gang's shapes: requests in flight per pod (dd's reading its shard);
# "even" as a gang's identical pods are, "mixed" with two pods loading with
# three workers each (a pod whose loader outpaces the others')
SHAPES = (("even", (1, 1, 1, 1)), ("mixed", (1, 1, 3, 3)))
MB = 1e6


def uid(n):
    return "5c2d8e1f-3a4b-4c6d-8e7f-00000000000%d" % n


def pod_cgroup(n):
    return os.path.join(CG, "kubepods.slice", "kubepods-burstable.slice",
                        "kubepods-burstable-pod%s.slice" % uid(n).replace("-", "_"))


def target(n):
    return "/var/lib/kubelet/pods/%s/volumes/kubernetes.io~csi/pvc-%d/dev" % (uid(n), n)


# the other tenant: a node-local reader that no Gantry reservation covers
OTHER = os.path.join(CG, "system.slice", "other-tenant.scope")


def log(what):
    """Progress on the console and in the share (seen from the host as it runs)."""
    line = "shortfall %6.1fs: %s" % (time.monotonic() - T0, what)
    print(line, file=sys.stderr, flush=True)
    with open(os.path.join(SHARE, "progress"), "a") as f:
        f.write(line + "\n")


T0 = time.monotonic()


def enable_io(path):
    """+io in every cgroup.subtree_control from the root down to @path's parent."""
    rel = os.path.relpath(os.path.dirname(path), CG)
    d = CG
    for part in [""] + rel.split(os.sep):
        d = os.path.join(d, part) if part else d
        with open(os.path.join(d, "cgroup.subtree_control"), "w") as f:
            f.write("+io")


def rbytes(cgroup, majmin):
    with open(os.path.join(cgroup, "io.stat")) as f:
        for line in f:
            words = line.split()
            if words and words[0] == majmin:
                return int(dict(w.split("=", 1) for w in words[1:])["rbytes"])
    return 0


def cpu_ticks():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return sum(v), v[3] + v[4]  # total, idle + iowait


def set_cap(n, majmin, rbps):
    with open(os.path.join(pod_cgroup(n), "io.max"), "w") as f:
        f.write("%s rbps=%d\n" % (majmin, rbps) if rbps else "%s rbps=max\n" % majmin)


def loader(cgroup, dev, first_mb, mb, req_mb=1):
    """A shell in @cgroup reading @dev's [@first_mb, +@mb) MiB in order, forever."""
    script = ('echo $$ >%s/cgroup.procs && while :; do dd if=%s of=/dev/null bs=%dM '
              'iflag=direct skip=%d count=%d status=none || exit 1; done'
              % (cgroup, dev, req_mb, first_mb // req_mb, mb // req_mb))
    return subprocess.Popen(["sh", "-c", script], start_new_session=True)


class Bench:
    def __init__(self):
        self.env = dict(line.split("=", 1) for line in read_share("env").splitlines())
        self.workdir = tempfile.mkdtemp(prefix="gantry-shortfall-")
        self.plugin = None
        self.procs = []
        self.rows = []

    def call(self, method, **fields):
        return self.plugin.call(method, getattr(csi_pb2, method + "Request")(**fields),
                                timeout=120.0)

    def cap(self):
        c = csi_pb2.VolumeCapability(access_mode=csi_pb2.VolumeCapability.AccessMode(
            mode=csi_pb2.VolumeCapability.AccessMode.Mode.MULTI_NODE_READER_ONLY))
        c.block.SetInParent()
        return c

    def context(self):
        return {"tier": "dataset", "clusterID": "test", "monitors": self.env["MONITORS"],
                "pool": "rbd", "imageName": "ds", "mapOptions": "ms_mode=crc"}

    def setup(self):
        subprocess.run(["modprobe", "rbd"], check=True, timeout=60)
        if not os.path.exists(os.path.join(CG, "cgroup.controllers")):
            subprocess.run(["mount", "-t", "cgroup2", "none", CG], check=True, timeout=30)
        for n in range(GANG):
            os.makedirs(os.path.join(pod_cgroup(n), "cri-containerd-%d.scope" % n))
            enable_io(pod_cgroup(n))
        os.makedirs(OTHER)
        enable_io(OTHER)
        self.plugin = Plugin(mode="node", node_id="vm-node", workdir=self.workdir,
                             ready_timeout=60.0).start()
        self.call("NodeStageVolume", volume_id=VOL, staging_target_path=STAGING,
                  volume_capability=self.cap(), volume_context=self.context(),
                  secrets={"userID": "gantry", "userKey": read_share("gantry.key")})
        for n in range(GANG):
            self.call("NodePublishVolume", volume_id=VOL, staging_target_path=STAGING,
                      target_path=target(n), volume_capability=self.cap(), readonly=True,
                      volume_context=self.context())
        st = os.stat(target(0))
        self.majmin = "%d:%d" % (os.major(st.st_rdev), os.minor(st.st_rdev))
        self.shard_mb = int(self.env["DS_BYTES"]) // GANG >> 20
        log("staged %s, published to %d pods, shards of %d MiB"
            % (self.majmin, GANG, self.shard_mb))

    def teardown(self):
        self.stop_readers()
        try:
            if self.plugin:
                for n in range(GANG):
                    self.call("NodeUnpublishVolume", volume_id=VOL, target_path=target(n))
                self.call("NodeUnstageVolume", volume_id=VOL, staging_target_path=STAGING)
                self.plugin.stop()
        finally:
            if self.plugin:
                self.plugin.kill()
            shutil.rmtree(self.workdir, ignore_errors=True)

    def stop_readers(self, procs=None):
        """Kills the loaders (all, or @procs) and waits (bounded) until their
        cgroups are empty: a dd killed in D state still holds the device."""
        procs = self.procs if procs is None else procs
        if hasattr(self, "majmin"):
            for n in range(GANG):  # bios held back by a cap dispatch at once
                set_cap(n, self.majmin, 0)
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        self.procs = [p for p in self.procs if p not in procs]
        deadline = time.monotonic() + 60
        for cg in [os.path.join(pod_cgroup(n), "cri-containerd-%d.scope" % n)
                   for n in range(GANG)] + ([OTHER] if not self.procs else []):
            while os.path.exists(cg) and open(os.path.join(cg, "cgroup.procs")).read().strip():
                if time.monotonic() > deadline:
                    raise RuntimeError("the loaders in %s did not exit" % cg)
                time.sleep(0.1)

    def start_gang(self, depths):
        """Pod n's loader: @depths[n] dd's, each over its part of the pod's shard."""
        gang = []
        for n, depth in enumerate(depths):
            ctr = os.path.join(pod_cgroup(n), "cri-containerd-%d.scope" % n)
            part = self.shard_mb // depth
            gang += [loader(ctr, target(n), n * self.shard_mb + k * part, part)
                     for k in range(depth)]
        self.procs += gang
        return gang

    def start_other_tenant(self):
        whole = GANG * self.shard_mb
        for half in range(2):
            self.procs.append(loader(OTHER, os.path.join(STAGING, "device"), half * whole // 2,
                                     whole // 2, req_mb=4))

    def measure(self, name, caps):
        """Reads for PHASE_S after SETTLE_S; returns and records the phase's row."""
        end = time.monotonic() + SETTLE_S
        while time.monotonic() < end:
            self.check_readers()
            time.sleep(0.2)
        cgs = [pod_cgroup(n) for n in range(GANG)] + [OTHER]
        b0 = [rbytes(c, self.majmin) for c in cgs]
        c0, t0 = cpu_ticks(), time.monotonic()
        while time.monotonic() < t0 + PHASE_S:
            self.check_readers()
            time.sleep(0.2)
        b1 = [rbytes(c, self.majmin) for c in cgs]
        c1, t1 = cpu_ticks(), time.monotonic()
        rates = [(b - a) / (t1 - t0) for a, b in zip(b0, b1)]
        busy = 1 - (c1[1] - c0[1]) / max(1, c1[0] - c0[0])
        row = {"name": name, "pods": rates[:GANG], "other": rates[GANG], "caps": caps,
               "busy": busy}
        row.update(spread(row["pods"]))
        self.rows.append(row)
        log("%s: pods %s MB/s, slowest/median %.3f, aggregate %.1f MB/s, other %.1f MB/s, "
            "cpu %.0f%%" % (name, " ".join("%.1f" % (r / MB) for r in row["pods"]),
                            row["slowest_over_median"], row["aggregate"] / MB,
                            row["other"] / MB, 100 * busy))
        return row

    def check_readers(self):
        for p in self.procs:
            if p.poll() is not None:
                raise RuntimeError("a reader exited (%d)" % p.returncode)

    def run(self):
        """The healthy baseline, the fault, then for each gang shape PAIRS
        pairs of phases, ordered AB, BA, AB... so that a drift of the whole
        machine does not fall on one side. Returns the reservation per pod."""
        self.setup()
        gang = self.start_gang([1] * GANG)
        healthy = self.measure("healthy-uncapped", [0] * GANG)
        self.stop_readers(gang)
        reserved = int(healthy["aggregate"] / GANG)
        log("reservation per pod %.2f MB/s (a quarter of the healthy gang's aggregate)"
            % (reserved / MB))
        Faults().ask("kill9 %d" % OSD_KILLED)
        self.start_other_tenant()
        for shape, depths in SHAPES:
            gang = self.start_gang(depths)
            last_a = None
            for i in range(1, PAIRS + 1):
                for kind in ("AB" if i % 2 else "BA"):
                    cap = reserved
                    if kind == "B":
                        # effective/reserved: what the backend gave the gang in the last A
                        cap = max(1, int(reserved * min(1.0, last_a["aggregate"]
                                                        / (GANG * reserved))))
                    for n in range(GANG):
                        set_cap(n, self.majmin, cap)
                    row = self.measure("%s-%s%d" % (shape, kind, i), [cap] * GANG)
                    if kind == "A":
                        last_a = row
            self.stop_readers(gang)
        return reserved


def spread(rates):
    med = statistics.median(rates)
    return {"aggregate": sum(rates), "slowest_over_median": min(rates) / med if med else 0,
            "min_over_max": min(rates) / max(rates) if max(rates) else 0}


def report(rows, reserved):
    print("\nreservation per pod: %.2f MB/s (sum %.2f MB/s); phase %g s after %g s settle"
          % (reserved / MB, GANG * reserved / MB, PHASE_S, SETTLE_S))
    print("%-17s %8s  %-31s %8s %7s %7s %7s %4s" % (
        "phase", "cap MB/s", "pods MB/s", "slow/med", "min/max", "aggr", "other", "cpu"))
    for r in rows:
        print("%-17s %8s  %-31s %8.3f %7.3f %7.2f %7.2f %3.0f%%" % (
            r["name"], "%.2f" % (r["caps"][0] / MB) if r["caps"][0] else "none",
            " ".join("%7.2f" % (x / MB) for x in r["pods"]), r["slowest_over_median"],
            r["min_over_max"], r["aggregate"] / MB, r["other"] / MB, 100 * r["busy"]))
    mean = statistics.mean
    for shape, _ in SHAPES:
        a = [r for r in rows if r["name"].startswith(shape + "-A")]
        b = [r for r in rows if r["name"].startswith(shape + "-B")]
        sa = [r["slowest_over_median"] for r in a]
        sb = [r["slowest_over_median"] for r in b]
        what = "%s gang (%s)" % (shape, "identical loaders" if shape == "even"
                                 else "two pods with 3 workers, two with 1")
        figure("shortfall_%s_reserved_slowest_over_median" % shape, mean(sa), None,
               "%s, mean over %d A phases: every pod capped at its reservation" % (what, len(a)))
        figure("shortfall_%s_scaled_slowest_over_median" % shape, mean(sb), None,
               "%s, mean over %d B phases: every pod capped at reservation x effective/reserved"
               % (what, len(b)))
        figure("shortfall_%s_reserved_spread_noise" % shape, max(sa) - min(sa), None,
               "%s: max - min of slowest/median over the A phases (A/A noise)" % what)
        figure("shortfall_%s_scaled_spread_noise" % shape, max(sb) - min(sb), None,
               "%s: max - min of slowest/median over the B phases (B/B noise)" % what)
        figure("shortfall_%s_scaled_over_reserved_aggregate" % shape,
               mean(r["aggregate"] for r in b) / mean(r["aggregate"] for r in a), None,
               "%s: the gang's aggregate rate, B phases / A phases" % what)
        figure("shortfall_%s_scaled_over_reserved_other_tenant" % shape,
               mean(r["other"] for r in b) / mean(r["other"] for r in a), None,
               "%s: the unreserved reader's rate, B phases / A phases" % what)
        figure("shortfall_%s_reserved_aggregate_over_reservations" % shape,
               mean(r["aggregate"] for r in a) / (GANG * reserved), None,
               "%s: what the degraded, shared backend gave the gang (A) / what it reserved"
               % what)


def main():
    bench = Bench()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        # the figures first: they stand even if the teardown goes wrong
        report(bench.rows, bench.run())
    finally:
        bench.teardown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
