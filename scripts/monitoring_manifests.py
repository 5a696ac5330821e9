#!/usr/bin/env python3
"""Writes manifests/monitoring/ from the chart's alert rules and dashboard,
so both ways of installing ship the same ones: prometheusrule.yaml (a
PrometheusRule whose spec is charts/gantry/files/gantry-alerts.yaml, line for
line, comments included) and grafana-dashboard.yaml (a ConfigMap labelled
grafana_dashboard: "1" holding charts/gantry/files/gantry-dashboard.json).
They are what the chart renders with monitoring.prometheusRule.enabled and
monitoring.dashboard.enabled for the release "gantry" in gantry-system
(tests/manifests/test_chart.py checks it).

Usage: scripts/monitoring_manifests.py [--check]
  --check  write nothing; exit 1 naming each file that differs from what
           would be written (tests/alerts runs this)."""
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
FILES = os.path.join(ROOT, "charts", "gantry", "files")
OUT = os.path.join(ROOT, "manifests", "monitoring")

HEADER = """\
# Written by scripts/monitoring_manifests.py from {source}:
# edit that file and run the script again, never this one.
# {what}
"""


def indent(text, n):
    pad = " " * n
    return "".join(pad + line if line.strip() else line
                   for line in text.rstrip("\n").splitlines(True)) + "\n"


def read(name):
    with open(os.path.join(FILES, name)) as f:
        return f.read()


def prometheus_rule():
    return (HEADER.format(source="charts/gantry/files/gantry-alerts.yaml",
                          what="Needs the Prometheus Operator's CRDs: kubectl apply -f manifests/monitoring/") +
            "apiVersion: monitoring.coreos.com/v1\n"
            "kind: PrometheusRule\n"
            "metadata:\n"
            "  name: gantry-alerts\n"
            "  namespace: gantry-system\n"
            "  labels:\n"
            "    app.kubernetes.io/name: gantry\n"
            "spec:\n" + indent(read("gantry-alerts.yaml"), 2))


def dashboard():
    return (HEADER.format(source="charts/gantry/files/gantry-dashboard.json",
                          what="The Grafana sidecar loads ConfigMaps labelled grafana_dashboard: \"1\".") +
            "apiVersion: v1\n"
            "kind: ConfigMap\n"
            "metadata:\n"
            "  name: gantry-dashboard\n"
            "  namespace: gantry-system\n"
            "  labels:\n"
            "    app.kubernetes.io/name: gantry\n"
            "    grafana_dashboard: \"1\"\n"
            "data:\n"
            "  gantry.json: |\n" + indent(read("gantry-dashboard.json"), 4))


def main(argv):
    check = argv[1:] == ["--check"]
    if argv[1:] and not check:
        print(__doc__, file=sys.stderr)
        return 2
    stale = []
    for name, text in (("prometheusrule.yaml", prometheus_rule()),
                       ("grafana-dashboard.yaml", dashboard())):
        path = os.path.join(OUT, name)
        try:
            with open(path) as f:
                same = f.read() == text
        except FileNotFoundError:
            same = False
        if same:
            continue
        if check:
            stale.append(os.path.relpath(path, ROOT))
            continue
        os.makedirs(OUT, exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
    for path in stale:
        print("%s differs from its source: run scripts/monitoring_manifests.py" % path,
              file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
