"""Figures of a dataset read under storage faults, per phase (used by
test_dataset_faults.py; bench/faults prints them): read rate and
p50/p99/p99.9 latency of the reads that completed in each phase, as ratios
to the healthy phase of the same run, and the stall of each fault: the
longest read in flight while it was detected.

    rows = phases(marks, reads)     marks: {name: monotonic time}, reads: [(t0, t1, bytes)]
    print(table(rows, stalls(marks, reads), claim=0.85))
"""

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
    lines.append("degraded read rate ÷ healthy: OSD down %.2f, recovering %.2f "
                 "(the seeds claim ~%.2f)" % (down, rec, claim))
    return "\n".join(lines)
