"""Gantry's alert rules (charts/gantry/files/gantry-alerts.yaml) and Grafana
dashboard (charts/gantry/files/gantry-dashboard.json):

- PromtoolTest: Debian's promtool accepts the rules (`check rules`, on the
  file and on the spec of manifests/monitoring/prometheusrule.yaml) and
  passes their unit tests (`test rules gantry-alerts.test.yaml`), in which
  every alert fires on its own input and none on the healthy one (checked
  here from the test file: no alert without both).
- AnnotationTest: every alert has a severity, a summary, a description and a
  runbook_url naming a section of docs/operations.md that exists.
- MetricsTest: every metric an alert or a panel names is exported by
  Gantry's C code (a string literal in a file that feeds the metrics
  registry), and every label they use is one the code writes. The backend
  metrics of the StorageBackend contract (EXPECTED_BACKEND) are checked by
  ExpectedBackendMetricsTest alone, which says GANTRY-ALERTS-SKIP (CTest:
  Skipped) while the code does not export them yet.
- ManifestsTest: manifests/monitoring/ is what scripts/monitoring_manifests.py
  makes from the two files (one source of truth).

GANTRY_PROMTOOL names promtool (CTest sets it)."""
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
RULES = os.path.join(ROOT, "charts", "gantry", "files", "gantry-alerts.yaml")
DASHBOARD = os.path.join(ROOT, "charts", "gantry", "files", "gantry-dashboard.json")
RULE_TESTS = os.path.join(HERE, "gantry-alerts.test.yaml")
OPERATIONS = os.path.join(ROOT, "docs", "operations.md")
MANIFEST_RULE = os.path.join(ROOT, "manifests", "monitoring", "prometheusrule.yaml")
PROMTOOL = os.environ.get("GANTRY_PROMTOOL", "promtool")

# The services' folders whose C code exports metrics.
SOURCE_DIRS = ("common", "csi", "controller", "node", "scheduler-ext", "gantry-target", "kube",
               "copier")

# The live state of storage backends (the StorageBackend contract): exported
# by gantry-scheduler and the observer in gantry-csi's controller.
EXPECTED_BACKEND = {
    "gantry_backend_state", "gantry_backend_nominal_gbps", "gantry_backend_effective_gbps",
    "gantry_backend_reserved_gbps", "gantry_backend_unaccounted_gbps",
    "gantry_backend_recovery_gbps", "gantry_backend_stale",
    "gantry_observer_samples_total", "gantry_observer_errors_total",
}
EXPECTED_BACKEND_LABELS = {"backend", "state"}

# Labels Prometheus puts on every series of a target, not the code.
TARGET_LABELS = {"instance"}

HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")


def load_rules(path=RULES):
    with open(path) as f:
        return yaml.safe_load(f)


def alerts(rules=None):
    rules = rules or load_rules()
    return [r for g in rules["groups"] for r in g["rules"] if "alert" in r]


def dashboard_exprs():
    with open(DASHBOARD) as f:
        d = json.load(f)
    out = []

    def walk(panels):
        for p in panels:
            for t in p.get("targets", []):
                out.append((p["title"], t["expr"], t.get("legendFormat", "")))
            walk(p.get("panels", []))
    walk(d["panels"])
    return out


# ---- what the code exports

def metric_sources():
    """The text of each C file that feeds a metrics registry."""
    for d in SOURCE_DIRS:
        for path in glob.glob(os.path.join(ROOT, d, "**", "*.[ch]"), recursive=True):
            with open(path, errors="replace") as f:
                text = f.read()
            if "gantry_metrics_" in text:
                yield path, text


def exported_names():
    names = set()
    for _, text in metric_sources():
        names |= set(re.findall(r'"(gantry_[a-z0-9_]+)"', text))
    return names


def exported_labels():
    labels = set()
    for _, text in metric_sources():
        labels |= set(re.findall(r'([a-z_][a-z0-9_]*)=\\"', text))  # "kind=\"%s\""
        labels |= set(re.findall(r'"([a-z_][a-z0-9_]*)"', text))    # put_label(.., "pod", ..)
    return labels


# ---- what the rules and panels use

PROMQL_WORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or",
                "unless", "bool", "offset"}


def names_in(expr):
    return set(re.findall(r"\b(gantry_[a-z0-9_]+)\b", expr))


def labels_in(expr):
    labels = set(re.findall(r"([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)\s*\"", expr))
    for group in re.findall(r"\b(?:by|without|on|ignoring)\s*\(([^)]*)\)", expr):
        labels |= {x.strip() for x in group.split(",") if x.strip()}
    return labels - PROMQL_WORDS


def template_labels(text):
    """Labels an annotation ($labels.x) or a legend ({{x}}) prints."""
    return set(re.findall(r"\$labels\.([a-zA-Z_][a-zA-Z0-9_]*)", text)) | \
        set(re.findall(r"\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}", text))


def base_name(name, exported):
    for s in HISTOGRAM_SUFFIXES:
        if name.endswith(s) and name not in exported and name[:-len(s)] in exported:
            return name[:-len(s)]
    return name


def used():
    """(where, metric names, label names) of every alert and panel."""
    out = []
    for a in alerts():
        text = " ".join(str(v) for v in a.get("annotations", {}).values())
        out.append(("alert %s" % a["alert"], names_in(a["expr"]),
                    labels_in(a["expr"]) | template_labels(text)))
    for title, expr, legend in dashboard_exprs():
        out.append(("panel %r" % title, names_in(expr), labels_in(expr) | template_labels(legend)))
    return out


def missing(uses, exported, exported_lbls, skip_names=frozenset(), skip_labels=frozenset()):
    """What @uses names that the code does not export, as readable lines."""
    problems = []
    for where, names, labels in uses:
        for n in sorted(names):
            n = base_name(n, exported)
            if n not in exported and n not in skip_names:
                problems.append("%s: metric %s is exported by no C file" % (where, n))
        for l in sorted(labels - TARGET_LABELS - skip_labels):
            if l not in exported_lbls:
                problems.append("%s: label %s is written by no C file" % (where, l))
    return problems


def run(*args):
    return subprocess.run(args, capture_output=True, text=True, timeout=120)


class PromtoolTest(unittest.TestCase):
    def test_check_rules(self):
        p = run(PROMTOOL, "check", "rules", RULES)
        print(p.stdout + p.stderr)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("SUCCESS: %d rules found" % len(alerts()), p.stdout)

    def test_check_rules_of_the_manifest(self):
        with open(MANIFEST_RULE) as f:
            spec = yaml.safe_load(f)["spec"]
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", prefix="gantry-rules-") as f:
            yaml.safe_dump(spec, f)
            f.flush()
            p = run(PROMTOOL, "check", "rules", f.name)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    def test_rule_unit_tests(self):
        p = run(PROMTOOL, "test", "rules", RULE_TESTS)
        print(p.stdout + p.stderr)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("SUCCESS", p.stdout)

    def test_every_alert_fires_on_its_input_and_stays_quiet_when_healthy(self):
        with open(RULE_TESTS) as f:
            cases = yaml.safe_load(f)["tests"]
        fires, quiet = {}, {}
        healthy = [c for c in cases if c["name"].startswith("a healthy cluster")]
        self.assertEqual(len(healthy), 1)
        for c in cases:
            for t in c.get("alert_rule_test", []):
                if t.get("exp_alerts"):
                    fires.setdefault(t["alertname"], []).append(c["name"])
                elif c in healthy:
                    quiet.setdefault(t["alertname"], []).append(t["eval_time"])
        for a in alerts():
            with self.subTest(alert=a["alert"]):
                self.assertIn(a["alert"], fires, "no input makes it fire")
                self.assertIn(a["alert"], quiet, "not checked quiet on the healthy cluster")

    def test_promtool_catches_a_wrong_expectation(self):
        """The unit tests can fail: the healthy cluster with one backend
        Unavailable for 5 minutes makes GantryBackendUnavailable fire."""
        with open(RULE_TESTS) as f:
            text = f.read()
        bad = text.replace("values: '0x40 1 0x50'", "values: '0x40 1x5 0x45'")
        self.assertNotEqual(bad, text)
        bad = bad.replace("../../charts/", os.path.join(ROOT, "charts") + "/")
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", prefix="gantry-rules-test-") as f:
            f.write(bad)
            f.flush()
            p = run(PROMTOOL, "test", "rules", f.name)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("alertname: GantryBackendUnavailable", p.stdout + p.stderr)


class AnnotationTest(unittest.TestCase):
    def test_every_alert_is_documented(self):
        with open(OPERATIONS) as f:
            headings = {l[4:].strip() for l in f if l.startswith("### ")}
        names = [a["alert"] for a in alerts()]
        self.assertEqual(len(names), len(set(names)), "an alert name used twice")
        for a in alerts():
            with self.subTest(alert=a["alert"]):
                self.assertIn(a.get("labels", {}).get("severity"), ("critical", "warning"))
                ann = a.get("annotations", {})
                for k in ("summary", "description", "runbook_url"):
                    self.assertTrue(ann.get(k), "no %s" % k)
                self.assertEqual(ann["runbook_url"], "docs/operations.md#" + a["alert"].lower())
                self.assertIn(a["alert"], headings, "no runbook section ### %s" % a["alert"])


class MetricsTest(unittest.TestCase):
    def test_every_metric_and_label_is_exported_by_the_code(self):
        exported = exported_names()
        self.assertIn("gantry_scheduler_ready", exported)  # the scan finds them
        problems = missing(used(), exported, exported_labels(),
                           skip_names=EXPECTED_BACKEND, skip_labels=EXPECTED_BACKEND_LABELS)
        self.assertEqual(problems, [])

    def test_every_alerted_metric_has_a_panel(self):
        panels = set()
        for _, expr, _ in dashboard_exprs():
            panels |= names_in(expr)
        for a in alerts():
            with self.subTest(alert=a["alert"]):
                self.assertTrue(names_in(a["expr"]) & panels or "absent(" in a["expr"],
                                "no panel shows %s" % sorted(names_in(a["expr"])))

    def test_the_check_catches_a_made_up_name(self):
        exported = exported_names()
        uses = [("alert X", {"gantry_scheduler_readyy", "gantry_scheduler_request_seconds_bucket"},
                 {"verb", "colour"})]
        self.assertEqual(missing(uses, exported, exported_labels()),
                         ["alert X: metric gantry_scheduler_readyy is exported by no C file",
                          "alert X: label colour is written by no C file"])

    def test_the_rules_use_the_backend_contract(self):
        named = set()
        for _, names, _ in used():
            named |= names
        self.assertTrue({"gantry_backend_state", "gantry_backend_stale"} <= named)


class ExpectedBackendMetricsTest(unittest.TestCase):
    def test_backend_metrics_are_exported(self):
        """The StorageBackend contract's metrics (docs: BACKEND contract):
        Skipped (GANTRY-ALERTS-SKIP) while the code exports none of them,
        failed when it exports only some, with the same labels."""
        exported = exported_names()
        have = EXPECTED_BACKEND & exported
        if not have:
            print("GANTRY-ALERTS-SKIP: the code exports none of %s yet" %
                  ", ".join(sorted(EXPECTED_BACKEND)))
            return
        self.assertEqual(sorted(EXPECTED_BACKEND - have), [])
        self.assertEqual(sorted(EXPECTED_BACKEND_LABELS - exported_labels()), [])


class ManifestsTest(unittest.TestCase):
    def test_manifests_are_made_from_the_chart_files(self):
        p = run(sys.executable, os.path.join(ROOT, "scripts", "monitoring_manifests.py"), "--check")
        self.assertEqual(p.returncode, 0, p.stderr)

    def test_dashboard_is_labelled_for_the_sidecar(self):
        with open(os.path.join(ROOT, "manifests", "monitoring", "grafana-dashboard.yaml")) as f:
            cm = yaml.safe_load(f)
        self.assertEqual(cm["metadata"]["labels"]["grafana_dashboard"], "1")
        d = json.loads(cm["data"]["gantry.json"])
        self.assertEqual(d["uid"], "gantry-overview")
        self.assertTrue(all(t["datasource"]["uid"] == "${datasource}"
                            for p in d["panels"] for t in p.get("targets", [])))


if __name__ == "__main__":
    unittest.main(verbosity=2)
