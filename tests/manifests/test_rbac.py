"""The RBAC rules of gantry-scheduler's ServiceAccount grant exactly the API
calls its Kubernetes client makes: nothing it needs is missing (it would
get 403 Forbidden), nothing it does not make is granted (least privilege).

The calls come from one place: the table compiled into the client,
gantry_kube_api_calls() in kube/kube_client.c (the client's own
tests check every request the fake API server sees against that table),
printed by rbac_api_calls (GANTRY_KUBE_API_CALLS names it; CTest sets it).
The rules are every ClusterRole and Role bound to the ServiceAccount, in
manifests/ and in the chart's default render (GANTRY_HELM_STANDIN).

ServiceAccounts whose pods make no API call at all (gantry-target: no
Kubernetes client is linked into it) have no role bound and no token
mounted. The node plugin's client (the process's one, kube/kube_process.c,
opened by node/node.c), lent to
node/qos/qos_api.c (GETs of a
publishing pod and its volumes, for bandwidth caps), node/qos/pod_event.c
(Events on pods about their bandwidth and IO stalls: made, and an IO
stall's patched when it ends) and node/qos/stall_cause.c (a GET of the
StorageBackend a stalled volume lives on), is granted exactly their calls
(NODE_CALLS).

Without the client in the tree (the kube branch not merged yet) the test
prints GANTRY-RBAC-SKIP and CTest reports it Skipped, never passed."""
import glob
import os
import subprocess
import sys
import unittest

import yaml

from test_manifests import ROOT

TOOL = os.environ.get("GANTRY_KUBE_API_CALLS", "")
STANDIN = os.environ.get("GANTRY_HELM_STANDIN", "")
NS = "gantry-system"
SA = "gantry-scheduler"


def code_calls():
    """{(group, resource, verb)} from the client's table."""
    out = subprocess.run([TOOL], capture_output=True, text=True, check=True, timeout=30).stdout
    calls = set()
    for line in out.splitlines():
        verb, group, resource = line.split()
        calls.add(("" if group == "-" else group, resource, verb))
    return calls


def named_lease_rule(rule):
    """A leader-election rule: get/update of Leases by name (create cannot be
    limited by name, so it comes in a rule of its own)."""
    return (rule.get("apiGroups") == ["coordination.k8s.io"] and rule.get("resources") == ["leases"]
            and set(rule.get("verbs", [])) <= {"get", "update"})


def lease_names(docs, sa, ns):
    """The Lease names the roles bound to @sa grant get/update on."""
    roles = {(d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"]): d
             for d in docs if d["kind"] in ("ClusterRole", "Role")}
    names = set()
    for b in docs:
        if b["kind"] != "RoleBinding" or not any(
                s["kind"] == "ServiceAccount" and s["name"] == sa and s["namespace"] == ns
                for s in b["subjects"]):
            continue
        role = roles.get((b["roleRef"]["kind"], b["metadata"]["namespace"], b["roleRef"]["name"]), {})
        for r in role.get("rules", []):
            if r.get("resourceNames") and named_lease_rule(r):
                names |= set(r["resourceNames"])
    return names


def granted(docs, sa, ns):
    """{(group, resource, verb)} that all roles bound to @sa grant, and the
    names of rules that are not plain (wildcards, resourceNames, URLs)."""
    roles = {(d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"]): d
             for d in docs if d["kind"] in ("ClusterRole", "Role")}
    out, odd = set(), []
    for b in docs:
        if b["kind"] not in ("ClusterRoleBinding", "RoleBinding"):
            continue
        if not any(s["kind"] == "ServiceAccount" and s["name"] == sa and s["namespace"] == ns
                   for s in b["subjects"]):
            continue
        ref = b["roleRef"]
        rns = None if ref["kind"] == "ClusterRole" else b["metadata"]["namespace"]
        role = roles.get((ref["kind"], rns, ref["name"]))
        if role is None:
            odd.append("%s binds %s %s, which is not in the manifests" %
                       (b["metadata"]["name"], ref["kind"], ref["name"]))
            continue
        for r in role.get("rules", []):
            if r.get("nonResourceURLs") or (r.get("resourceNames") and not named_lease_rule(r)):
                odd.append("%s: a rule with resourceNames or nonResourceURLs" % ref["name"])
            for g in r.get("apiGroups", []):
                for res in r.get("resources", []):
                    for v in r.get("verbs", []):
                        if "*" in (g, res, v):
                            odd.append("%s: wildcard %s/%s %s" % (ref["name"], g, res, v))
                        out.add((g, res, v))
    return out, odd


def compare(calls, rules):
    """(missing, extra): calls not granted, grants no call needs."""
    return sorted(calls - rules), sorted(rules - calls)


def manifest_docs():
    docs = []
    for path in sorted(glob.glob(os.path.join(ROOT, "manifests", "*.yaml"))):
        with open(path) as f:
            docs += [d for d in yaml.safe_load_all(f) if d]
    return docs


def chart_docs():
    out = subprocess.run([STANDIN, "--namespace", NS, os.path.join(ROOT, "charts", "gantry")],
                         capture_output=True, text=True, check=True, timeout=60).stdout
    return [d for d in yaml.safe_load_all(out) if d]


# ServiceAccounts of pods that make no Kubernetes API call.
NO_API = ("gantry-target",)
# The node plugin's calls: node/qos/qos_api.c and node/qos/pod_event.c, over the
# process's one client (kube/kube_process.c) that node/node.c opens and
# node/node_qos.c lends them (checked against their source below).
NODE_CLIENT = ("node/node.c", "node/node_qos.c", "node/qos/qos_api.c", "node/qos/qos_api.h",
               "node/qos/qos_follow.c", "node/qos/qos_follow.h",
               "node/qos/pod_event.c", "node/qos/stall_cause.c", "node/qos/stall_cause.h",
               "node/qos/pod_event.h", "node/qos/usage_service.c", "node/qos/usage_service.h", "node/qos/measure.cmake",
               "node/qos/CMakeLists.txt")
NODE_CALLS = {("", "pods", "get"), ("", "persistentvolumeclaims", "get"),
              ("", "persistentvolumes", "get"), ("storage.k8s.io", "storageclasses", "get"),
              ("storage.k8s.io", "volumeattributesclasses", "get"),
              ("", "persistentvolumeclaims", "list"), ("", "persistentvolumeclaims", "watch"),
              ("", "events", "create"), ("", "events", "patch"),
              ("gantry.io", "storagebackends", "get")}
# gantry-csi's only API clients are in the controller: the node registry
# (CSINode objects), the eviction of promoted copies (VolumeAttachments, a
# PVC's PV for `gantryctl tier demote`) and the copy-state annotation of PVs
CONTROLLER_CLIENT = tuple("controller/" + f for f in (
    "controller.c", "node_registry.c", "node_registry.h",
    "CMakeLists.txt", "tiering/CMakeLists.txt", "tiering/copy_in_use.c",
    "tiering/copy_in_use.h", "tiering/eviction.c", "tiering/eviction.h",
    "tiering/tier_demote.c", "tiering/copy_state.c", "tiering/copy_state.h",
    "backends/CMakeLists.txt", "backends/backend_observer.c", "backends/backend_observer.h",
    "backends/backend_publish.c", "backends/backend_publish.h"))
CONTROLLER_CALLS = {("storage.k8s.io", "csinodes", "get"), ("storage.k8s.io", "csinodes", "list"),
                    ("storage.k8s.io", "volumeattachments", "list"),
                    ("", "persistentvolumeclaims", "get"),
                    ("", "persistentvolumes", "patch"),
                    # the backend observer (backends/): its objects, their status, its Lease
                    ("gantry.io", "storagebackends", "create"),
                    ("gantry.io", "storagebackends/status", "patch"),
                    ("coordination.k8s.io", "leases", "get"),
                    ("coordination.k8s.io", "leases", "create"),
                    ("coordination.k8s.io", "leases", "update")}


class NoApiTest(unittest.TestCase):
    def check(self, docs, where):
        for sa in NO_API:
            with self.subTest(source=where, sa=sa):
                rules, odd = granted(docs, sa, NS)
                self.assertEqual((rules, odd), (set(), []), "%s: roles bound to %s" % (where, sa))
                acct = [d for d in docs if d["kind"] == "ServiceAccount" and
                        d["metadata"]["name"] == sa]
                self.assertEqual(len(acct), 1)
                self.assertIs(acct[0].get("automountServiceAccountToken"), False)
                pods = [d["spec"]["template"]["spec"] for d in docs
                        if d["kind"] in ("Deployment", "DaemonSet") and
                        d["spec"]["template"]["spec"].get("serviceAccountName") == sa]
                self.assertEqual(len(pods), 1)
                self.assertIs(pods[0].get("automountServiceAccountToken"), False)

    def test_manifests(self):
        self.check(manifest_docs(), "manifests/")

    @unittest.skipUnless(STANDIN, "GANTRY_HELM_STANDIN is not set")
    def test_chart(self):
        self.check(chart_docs(), "charts/gantry")

    def test_the_binaries_link_no_kubernetes_client(self):
        """gantry-target has no Kubernetes client in it; in gantry-csi only
        the controller's CONTROLLER_CLIENT files (their calls: CONTROLLER_CALLS)
        and the node's NODE_CLIENT files (NODE_CALLS) have one, granted below."""
        for folder in ("csi", "controller", "node", "gantry-target"):
            for path in glob.glob(os.path.join(ROOT, folder, "**", "*.[ch]"), recursive=True) + \
                    glob.glob(os.path.join(ROOT, folder, "**", "*.cmake"), recursive=True) + \
                    glob.glob(os.path.join(ROOT, folder, "**", "CMakeLists.txt"), recursive=True):
                rel = os.path.relpath(path, ROOT)
                if rel in CONTROLLER_CLIENT or rel in NODE_CLIENT:
                    continue
                with open(path, errors="replace") as f:
                    text = f.read()
                for needle in ("gantry_kube", "kube_client.h", "/api/v1/"):
                    self.assertNotIn(needle, text, os.path.relpath(path, ROOT))

    def test_the_controller_may_make_its_calls(self):
        """The controller's calls (CONTROLLER_CALLS: CSINodes, VolumeAttachments,
        a PVC, the PV patch) are granted to the gantry-controller ServiceAccount."""
        def source(name):
            with open(os.path.join(ROOT, "controller", name)) as f:
                return f.read()
        self.assertIn("/apis/storage.k8s.io/v1/csinodes", source("node_registry.c"))
        self.assertIn('"list", "csinodes"', source("node_registry.c"))
        self.assertIn('"get", "csinodes"', source("node_registry.c"))
        self.assertIn('"list", "volumeattachments"', source("tiering/copy_in_use.c"))
        self.assertIn('"get", "persistentvolumeclaims"', source("tiering/tier_demote.c"))
        self.assertIn('gantry_kube_merge_patch(kube, path, "persistentvolumes"', source("tiering/copy_state.c"))
        self.assertIn('"storagebackends/status", patch', source("backends/backend_publish.c"))
        self.assertIn('gantry_kube_create(api, API_PATH, "storagebackends"', source("backends/backend_publish.c"))
        self.assertIn("gantry_kube_lease_start(api", source("backends/backend_observer.c"))
        sources = [("manifests/", manifest_docs())]
        if STANDIN:
            sources.append(("charts/gantry", chart_docs()))
        for where, docs in sources:
            with self.subTest(source=where):
                rules, _ = granted(docs, "gantry-controller", NS)
                self.assertLessEqual(CONTROLLER_CALLS, rules, where)


class NodeRbacTest(unittest.TestCase):
    def test_the_node_plugin_is_granted_exactly_its_calls(self):
        """Each of NODE_CALLS is made in NODE_CLIENT (its path and its metrics
        name), and the roles bound to gantry-node grant exactly NODE_CALLS."""
        with open(os.path.join(ROOT, "node", "qos", "qos_api.c")) as f:
            text = f.read()
        for needle in ('"/api/v1/namespaces/%s/pods/%s"', '"get", "pods"',
                       '"/api/v1/namespaces/%s/persistentvolumeclaims/%s"',
                       '"get", "persistentvolumeclaims"', '"/api/v1/persistentvolumes/%s"',
                       '"get", "persistentvolumes"', '"/apis/storage.k8s.io/v1/storageclasses/%s"',
                       '"get", "storageclasses"',
                       '"/apis/storage.k8s.io/v1/volumeattributesclasses/%s"',
                       '"get", "volumeattributesclasses"'):
            self.assertIn(needle, text)
        self.assertEqual(text.count("gantry_kube_get("), 5, "a call NODE_CALLS does not list")
        for needle in ("gantry_kube_merge_patch", "gantry_kube_bind_pod", "informer_start",
                       "gantry_kube_create"):
            self.assertNotIn(needle, text)
        with open(os.path.join(ROOT, "kube", "kube_process.c")) as f:
            text = f.read()
        self.assertEqual(text.count("gantry_kube_client_new("), 1)
        for needle in ("gantry_kube_get(", "gantry_kube_create", "gantry_kube_merge_patch",
                       "gantry_kube_bind_pod", "/api"):
            self.assertNotIn(needle, text, "kube_process.c opens the client; its users make the calls")
        # the users borrow it: neither opens one of its own
        for user in ("qos/qos_api.c", "qos/pod_event.c", "qos/usage_service.c"):
            with open(os.path.join(ROOT, "node", user)) as f:
                self.assertNotIn("gantry_kube_client_new", f.read(), user)
        with open(os.path.join(ROOT, "node", "qos", "pod_event.c")) as f:
            text = f.read()
        self.assertIn('gantry_kube_create(pe->kube, path, "events"', text)
        self.assertIn('gantry_kube_write(pe->kube, "POST", path, "events"', text)
        self.assertIn('"/api/v1/namespaces/%s/events"', text)
        self.assertIn('gantry_kube_merge_patch(pe->kube, path, "events"', text)
        self.assertIn('"/api/v1/namespaces/%s/events/%s"', text)
        for needle in ("gantry_kube_get(", "gantry_kube_bind_pod", '"PUT"'):
            self.assertNotIn(needle, text)
        with open(os.path.join(ROOT, "node", "qos", "stall_cause.c")) as f:
            text = f.read()
        self.assertIn('"/apis/gantry.io/v1alpha1/storagebackends/%s"', text)
        self.assertIn('"get", "storagebackends"', text)
        self.assertEqual(text.count("gantry_kube_get("), 1, "stall_cause.c makes one GET")
        for needle in ("gantry_kube_create", "gantry_kube_write", "gantry_kube_merge_patch"):
            self.assertNotIn(needle, text)
        sources = [("manifests/", manifest_docs())]
        if STANDIN:
            sources.append(("charts/gantry", chart_docs()))
        for where, docs in sources:
            with self.subTest(source=where):
                sa = "gantry-node" if where == "manifests/" else \
                    [d["metadata"]["name"] for d in docs if d["kind"] == "DaemonSet"][0]
                rules, odd = granted(docs, sa, NS)
                self.assertEqual(odd, [], where)
                self.assertEqual(rules, NODE_CALLS, where)


class RbacCompareTest(unittest.TestCase):
    """The comparison itself catches both kinds of mistake."""

    def test_missing_and_extra_are_reported(self):
        calls = {("", "nodes", "list"), ("", "pods/binding", "create")}
        docs = [
            {"kind": "ClusterRole", "metadata": {"name": "r"},
             "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["list", "delete"]}]},
            {"kind": "ClusterRoleBinding", "metadata": {"name": "b"},
             "subjects": [{"kind": "ServiceAccount", "name": SA, "namespace": NS}],
             "roleRef": {"kind": "ClusterRole", "name": "r"}},
        ]
        rules, odd = granted(docs, SA, NS)
        self.assertEqual(odd, [])
        self.assertEqual(compare(calls, rules),
                         ([("", "pods/binding", "create")], [("", "nodes", "delete")]))

    def test_a_wildcard_is_reported(self):
        docs = [
            {"kind": "Role", "metadata": {"name": "r", "namespace": NS},
             "rules": [{"apiGroups": ["*"], "resources": ["pods"], "verbs": ["get"]}]},
            {"kind": "RoleBinding", "metadata": {"name": "b", "namespace": NS},
             "subjects": [{"kind": "ServiceAccount", "name": SA, "namespace": NS}],
             "roleRef": {"kind": "Role", "name": "r"}},
        ]
        self.assertEqual(len(granted(docs, SA, NS)[1]), 1)


@unittest.skipUnless(TOOL, "no Kubernetes client in this tree")
class SchedulerRbacTest(unittest.TestCase):
    def setUp(self):
        self.calls = code_calls()
        self.assertGreater(len(self.calls), 0)

    def check(self, docs, where):
        rules, odd = granted(docs, SA, NS)
        self.assertEqual(odd, [], where)
        missing, extra = compare(self.calls, rules)
        self.assertEqual(missing, [], "%s: calls the ServiceAccount %s may not make" % (where, SA))
        self.assertEqual(extra, [], "%s: grants %s no call needs" % (where, SA))

    def check_lease(self, docs, where):
        """The Lease the replicas elect on (--lease-name) is the one the Role
        names, and the Deployment runs more than one replica with
        --leader-elect, ready only through /readyz."""
        deps = [d for d in docs if d["kind"] == "Deployment" and
                d["spec"]["template"]["spec"].get("serviceAccountName") == SA]
        self.assertEqual(len(deps), 1, where)
        spec = deps[0]["spec"]
        self.assertGreaterEqual(spec["replicas"], 2, where)
        c = spec["template"]["spec"]["containers"][0]
        self.assertIn("--leader-elect", c["args"], where)
        name = [a.split("=", 1)[1] for a in c["args"] if a.startswith("--lease-name=")]
        self.assertEqual(lease_names(docs, SA, NS), set(name), where)
        self.assertEqual(c["readinessProbe"]["httpGet"]["path"], "/readyz", where)

    def test_manifests_grant_exactly_the_calls(self):
        self.check(manifest_docs(), "manifests/")
        self.check_lease(manifest_docs(), "manifests/")

    @unittest.skipUnless(STANDIN, "GANTRY_HELM_STANDIN is not set")
    def test_chart_grants_exactly_the_calls(self):
        self.check(chart_docs(), "charts/gantry")
        self.check_lease(chart_docs(), "charts/gantry")


if __name__ == "__main__":
    # Run as a script: the scheduler's table against its roles only (CTest
    # runs NoApiTest and RbacCompareTest as a test of their own, which can
    # never be reported skipped).
    if not TOOL:
        # CTest's SKIP_REGULAR_EXPRESSION turns this into a reported skip.
        print("GANTRY-RBAC-SKIP: scheduler-ext has no Kubernetes client "
              "(gantry_kube_api_calls) in this tree yet")
    unittest.main(verbosity=2, argv=sys.argv[:1], defaultTest="SchedulerRbacTest")
