"""The storage faults under a dataset read, in order, and their figures per
phase (used by test_dataset_faults.py in the VM and by
bench/faults/bench_faults_host.py on the host): read rate and p50/p99/p99.9
latency of the reads that completed in each phase, as ratios to the healthy
phase of the same run, and the stall of each fault: the longest read in
flight while it was detected.

    marks = run_faults(ask, dwell, phase_s)   ask("kill9 1") -> {...}: fault_agent.py
    rows = phases(marks, reads)     marks: {name: monotonic time}, reads: [(t0, t1, bytes)]
    print(table(rows, stalls(marks, reads), claim=0.85))
"""
import time

OSD_KILLED, OSD_HUNG, OSD_OUT = 1, 2, 3



def run_faults(ask, dwell, phase_s):
    """The faults, one after the other, while the readers read: @ask sends a
    fault_agent.py request and returns once it is done, @dwell(s) lets the
    reads go on for s seconds; each steady phase lasts @phase_s. Returns
    the marks (time.monotonic()) the phases are cut at."""
    marks = {}

    def mark(name):
        marks[name] = time.monotonic()

    mark("begin")
    dwell(phase_s)
    # (a) an OSD crashes, is seen down, stays down a while, and comes back
    mark("kill_req")
    ask("kill9 %d" % OSD_KILLED)
    mark("kill_resp")
    dwell(phase_s)
    mark("start_req")
    ask("start %d" % OSD_KILLED)
    ask("clean")
    mark("clean1_resp")
    # (b) an OSD hangs (sockets open, no answers) until Ceph marks it down
    mark("stop_req")
    ask("stop %d" % OSD_HUNG)
    mark("stop_resp")
    dwell(phase_s)
    mark("cont_req")
    ask("cont %d" % OSD_HUNG)
    ask("clean")
    mark("clean2_resp")
    # (c) an OSD is marked out: its data is rebuilt on the others
    mark("out_req")
    ask("out %d" % OSD_OUT)
    ask("clean")
    mark("clean3_resp")
    dwell(phase_s)
    mark("end")
    return marks


# (row, from mark, to mark): the reads that *completed* between the two
PHASES = [
    ("healthy", "begin", "kill_req"),
    ("crash: kill -9 .. marked down", "kill_req", "kill_resp"),
    ("OSD down (killed, not out)", "kill_resp", "start_req"),
    ("OSD restarted .. clean", "start_req", "clean1_resp"),
    ("hang: SIGSTOP .. marked down", "stop_req", "stop_resp"),
    ("OSD down (hung, marked down)", "stop_resp", "cont_req"),
    ("SIGCONT .. clean", "cont_req", "clean2_resp"),
    ("recovering (osd out)", "out_req", "clean3_resp"),
    ("after (clean again)", "clean3_resp", "end"),
    # what a synchronized job sees of each incident as a whole
    ("whole crash: kill -9 .. clean", "kill_req", "clean1_resp"),
    ("whole hang: SIGSTOP .. clean", "stop_req", "clean2_resp"),
]
# (what, window from, window to): a fault's stall is the longest read that
# overlapped the window in which the fault was there but not yet known
STALLS = [("crash", "kill_req", "kill_resp"), ("hang", "stop_req", "stop_resp"),
          ("recovery", "out_req", "clean3_resp")]


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p / 100))] if xs else float("nan")


def phases(marks, reads):
    """[(name, seconds, bytes/s, n, p50, p99, p99.9)], latencies in ms."""
    rows = []
    for name, a, b in PHASES:
        t_a, t_b = marks[a], marks[b]
        lat = [(t1 - t0) * 1e3 for t0, t1, _ in reads if t_a <= t1 < t_b]
        nbytes = sum(n for _, t1, n in reads if t_a <= t1 < t_b)
        secs = max(t_b - t_a, 1e-9)
        rows.append((name, secs, nbytes / secs, len(lat), pct(lat, 50), pct(lat, 99),
                     pct(lat, 99.9)))
    return rows


def stalls(marks, reads):
    """{what: (longest read in ms, window seconds)}."""
    out = {}
    for what, a, b in STALLS:
        t_a, t_b = marks[a], marks[b]
        lat = [(t1 - t0) * 1e3 for t0, t1, _ in reads if t0 < t_b and t1 > t_a]
        out[what] = (max(lat) if lat else float("nan"), t_b - t_a)
    return out


def ratio(x, base):
    return x / base if base else float("nan")


def table(rows, stall, claim=0.85):
    """The printed figures: each phase against the healthy one."""
    h = rows[0]
    lines = ["%-32s %7s %9s %6s %7s %7s %7s  %8s %8s %8s ms" %
             ("phase", "s", "MB/s", "rate÷h", "p50÷h", "p99÷h", "p999÷h", "p50", "p99", "p99.9")]
    for name, secs, rate, n, p50, p99, p999 in rows:
        lines.append("%-32s %7.1f %9.1f %6.2f %7.2f %7.2f %7.2f  %8.1f %8.1f %8.1f   n=%d" %
                     (name, secs, rate / 1e6, ratio(rate, h[2]), ratio(p50, h[4]),
                      ratio(p99, h[5]), ratio(p999, h[6]), p50, p99, p999, n))
    for what, (ms, win) in stall.items():
        lines.append("stall of the %-9s longest read %8.1f ms (fault known after %.1f s)" %
                     (what + ":", ms, win))
    by = {r[0]: r for r in rows}
    down = ratio(by["OSD down (killed, not out)"][2], h[2])
    rec = ratio(by["recovering (osd out)"][2], h[2])
    crash = ratio(by["whole crash: kill -9 .. clean"][2], h[2])
    hang = ratio(by["whole hang: SIGSTOP .. clean"][2], h[2])
    lines.append("degraded read rate ÷ healthy: OSD down %.2f, recovering %.2f, whole crash "
                 "%.2f, whole hang %.2f (the seeds claim ~%.2f)" % (down, rec, crash, hang, claim))
    return "\n".join(lines)


def figures(rows, stall, tag):
    """The headline figures as (name, value, goal, what), for bench/figure.py."""
    h = rows[0]
    by = {r[0]: r for r in rows}
    out = []
    for key, row in (("down", "OSD down (killed, not out)"), ("recovering", "recovering (osd out)"),
                     ("after", "after (clean again)"),
                     ("crash_incident", "whole crash: kill -9 .. clean"),
                     ("hang_incident", "whole hang: SIGSTOP .. clean")):
        r = by[row]
        out.append(("faults_%s_%s_rate" % (tag, key), ratio(r[2], h[2]),
                    ">=0.85" if key == "down" else None,
                    "read rate %s ÷ healthy (the seeds claim ~0.85 degraded)" % row))
        out.append(("faults_%s_%s_p99" % (tag, key), ratio(r[5], h[5]), None,
                    "p99 read latency %s ÷ healthy" % row))
    for what in ("crash", "hang"):
        out.append(("faults_%s_%s_stall_s" % (tag, what), stall[what][0] / 1e3, None,
                    "longest read (s) across the %s until Ceph marked the OSD down" % what))
    return out
