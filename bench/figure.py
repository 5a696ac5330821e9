"""One line per headline figure of a benchmark, in the form bench/summary.py
collects at the end of `make bench`:

    FIGURE <name> <value> [goal <=X | >=X] -- <what it is, with its baseline>

A figure is a ratio against a baseline measured in the same run (or, where
the issue sets an absolute target such as a p99, that value with its unit in
the text). Benchmarks in C print the same line with printf."""
import sys


def figure(name, value, goal=None, what=""):
    """Prints the FIGURE line of @name. @goal is "<=1.25" / ">=0.9" or None."""
    if " " in name:
        raise ValueError("a figure's name has no spaces: %r" % name)
    line = "FIGURE %s %.3f" % (name, value)
    if goal:
        line += " goal %s" % goal
    print("%s -- %s" % (line, what))
    sys.stdout.flush()
