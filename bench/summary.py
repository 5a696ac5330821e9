"""The table `make bench` ends with: every FIGURE line (bench/figure.py) of
the benchmark log, each with its goal and whether this run met it, and the
benchmarks that printed no figure (skipped or failed), so a reader sees the
whole run's outcome in one place. Reads the log ctest wrote (`ctest -O`)."""
import re
import sys

FIGURE = re.compile(r"FIGURE (\S+) (-?[0-9.]+(?:e[-+]?[0-9]+)?)(?: goal (<=|>=)([0-9.]+))? -- (.*)")
TEST_END = re.compile(r"\d+/\d+ Test +#\d+: (\S+) \.+\s*(\*{0,3}\S+(?: \S+)*?)\s+[0-9.]+ sec")
TEST_OUT = re.compile(r"^(\d+): (.*)$")


def main(path):
    names = {}   # ctest's test number -> name, from "Test command" / "Start" lines
    start = re.compile(r"Start +(\d+): (\S+)")
    figures, outcomes = [], {}
    with open(path, errors="replace") as f:
        for raw in f:
            line = raw.rstrip("\n")
            m = start.search(line)
            if m:
                names[m.group(1)] = m.group(2)
            m = TEST_END.search(line)
            if m:
                outcomes[m.group(1)] = m.group(2).strip("* ")
                continue
            test = ""
            m = TEST_OUT.match(line)
            if m:
                test, line = names.get(m.group(1), m.group(1)), m.group(2)
            m = FIGURE.search(line)
            if m:
                figures.append((test,) + m.groups())
    print("\n==== bench figures (this run; ratios against baselines measured in it) ====")
    if not figures:
        print("no FIGURE lines in %s" % path)
    missed = 0
    for test, name, value, op, goal, what in figures:
        verdict = ""
        if op:
            ok = float(value) <= float(goal) if op == "<=" else float(value) >= float(goal)
            verdict = "met" if ok else "NOT met"
            missed += not ok
        print("%-34s %9s  %-8s %-8s %s" % (name, value, (op or "") + (goal or ""), verdict, what))
    shown = {t for t, *_ in figures}
    for test, outcome in sorted(outcomes.items()):
        if test not in shown:
            print("%-34s %9s  (%s: printed no figure)" % (test, "-", outcome))
    print("%d figures, %d goals not met" % (len(figures), missed))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "bench.log"))
