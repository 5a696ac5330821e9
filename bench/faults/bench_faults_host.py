"""Dataset reads under storage faults with a librbd reader on the host: the
phases of vm_dataset_faults / bench_faults (tests/vm/fault_phases.py: a
kill -9 of an OSD and its restart, a SIGSTOP until Ceph marks it down and
a SIGCONT, an osd out with recovery) against a cluster that stays readable
with one OSD down (tests/ceph/cluster.sh, 5 OSDs, EC_KM=2+2, on 127.0.0.1
and a free port), read by two readers (rbd_pattern_reader: one in order,
one at random offsets, every byte checked against the pattern of
tests/vm/dataset_pattern.py). No VM: its figures are the storage's, where
the VM's are bounded by an emulated guest's CPUs. The faults are injected
by the same agent code the VM tests ask over their share
(tests/vm/fault_agent.py), called directly.

    bench_faults_host.py      (GANTRY_FAULTS_PHASE_S, default 20; DS_MB, default 512)

Prints the per-phase table and FIGURE lines; exits 1 on any read error or
wrong byte. Asserts nothing about time."""
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(SRC, "tests", "vm"))
sys.path.insert(0, os.path.join(SRC, "bench"))
import fault_agent  # noqa: E402
import fault_phases  # noqa: E402
from figure import figure  # noqa: E402

BUILD = os.environ.get("GANTRY_BUILD_DIR", os.path.join(SRC, "build"))
READER = os.path.join(BUILD, "bin", "rbd_pattern_reader")
CLUSTER = os.path.join(SRC, "tests", "ceph", "cluster.sh")
PHASE_S = float(os.environ.get("GANTRY_FAULTS_PHASE_S", "20"))
DS_MB = int(os.environ.get("DS_MB", "512"))
READERS = [("seq", 2), ("rand", 2)]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    if not os.access(READER, os.X_OK):
        print("bench_faults_host: no %s (build first); skipped" % READER)
        return 77
    work = tempfile.mkdtemp(prefix="gantry-bench-faults-")
    cdir = os.path.join(work, "ceph")
    conf = os.path.join(cdir, "ceph.conf")
    agent = fault_agent.Agent(cdir, work)
    procs = []
    stopfile = os.path.join(work, "stop")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        subprocess.run(["bash", CLUSTER, "start", cdir, str(free_port()), "5", "2"], check=True,
                       timeout=900, env=dict(os.environ, EC_KM="2+2"))
        seed = int.from_bytes(os.urandom(4), "little")
        gen = subprocess.Popen([sys.executable, os.path.join(SRC, "tests", "vm",
                                                             "dataset_pattern.py"),
                                "write", str(DS_MB << 20), str(seed)], stdout=subprocess.PIPE)
        subprocess.run(["rbd", "-c", conf, "import", "--no-progress", "--data-pool", "ecdata",
                        "-", "rbd/ds"], stdin=gen.stdout, check=True, timeout=600)
        gen.stdout.close()
        assert gen.wait(60) == 0
        subprocess.run(["bash", CLUSTER, "wait", cdir], check=True, timeout=600)
        print("bench_faults_host: %d MiB pattern on 5 OSDs (EC 2+2), phases %g s; load %s"
              % (DS_MB, PHASE_S, os.getloadavg()), flush=True)
        outs = []
        for i, (mode, threads) in enumerate(READERS):
            out = os.path.join(work, "reads-%d.json" % i)
            procs.append(subprocess.Popen([READER, conf, "rbd", "ds", str(seed), mode,
                                           str(threads), stopfile, out]))
            outs.append(out)
        deadline = time.monotonic() + 120
        while not all(os.path.exists(o + ".reading") for o in outs):
            if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
                raise RuntimeError("the readers did not start")
            time.sleep(0.1)

        def ask(request):
            words = request.split()
            answer = agent.handle(words[0], words[1] if len(words) > 1 else None)
            print("  %-8s %s" % (request, answer), flush=True)
            return dict(w.split("=", 1) for w in answer.split())

        def dwell(seconds):
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                if any(p.poll() is not None for p in procs):
                    raise RuntimeError("a reader exited during the faults")
                time.sleep(0.2)

        marks = fault_phases.run_faults(ask, dwell, PHASE_S)
        open(stopfile, "w").close()
        results = []
        for p, out in zip(procs, outs):
            if p.wait(300) != 0:
                raise RuntimeError("a reader failed (exit %d)" % p.returncode)
            with open(out) as f:
                results.append(json.load(f))
        return report(marks, results, "host")
    finally:
        open(stopfile, "w").close()
        for p in procs:
            try:
                p.wait(120)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        agent.continue_stopped()
        subprocess.run(["bash", CLUSTER, "purge", cdir], timeout=300)
        subprocess.run(["rm", "-rf", work], timeout=60)


def report(marks, results, tag):
    reads = []
    for r in results:
        print("%s reader (%s): %d reads, %.1f MiB, errors %d, wrong bytes %d, passes %s"
              % (tag, r["mode"], r["reads"], r["bytes"] / 2**20, r["errors"], r["wrong_bytes"],
                 r["passes"]))
        reads += [(a, b, r["req"]) for a, b in zip(r["t0"], r["t1"])]
    rows = fault_phases.phases(marks, reads)
    stall = fault_phases.stalls(marks, reads)
    print(fault_phases.table(rows, stall))
    for name, value, goal, what in fault_phases.figures(rows, stall, tag):
        figure(name, value, goal, what)
    bad = sum(r["errors"] + r["wrong_bytes"] for r in results)
    figure("faults_%s_read_errors_and_wrong_bytes" % tag, bad, "<=0",
           "failed reads + bytes unequal to the pattern, all phases")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
