"""CPU time from /proc, for the benchmarks that split their figures by
process: user + system seconds a process or a thread has run so far (from
its stat file), and the sum over the daemons a test cluster started, from
the pid files it keeps (the ceph fixture's run/*.pid)."""
import glob
import os

TICK = os.sysconf("SC_CLK_TCK")


def stat_cpu(path):
    """(comm, user + system seconds) of the /proc stat file @path, a process's
    or a thread's. Raises OSError when it is gone."""
    with open(path) as f:
        comm, rest = f.read().split("(", 1)[1].rsplit(")", 1)
    fields = rest.split()
    return comm, (int(fields[11]) + int(fields[12])) / TICK


def process_cpu_seconds(pid):
    """User + system seconds process @pid has run so far."""
    return stat_cpu("/proc/%d/stat" % pid)[1]


def daemons_cpu_seconds(run_dir, pattern="*.pid"):
    """User + system seconds so far of the daemons whose pid files in @run_dir
    match @pattern."""
    total = 0.0
    for path in glob.glob(os.path.join(run_dir, pattern)):
        with open(path) as f:
            total += process_cpu_seconds(int(f.read().strip()))
    return total
