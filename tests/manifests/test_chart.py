"""The Helm chart charts/gantry, rendered by helm-template-standin (a
stand-in for `helm template`, tests/chart/: Helm is not packaged in Debian):
every rendered object parses, has apiVersion, kind and metadata, and passes
the same python3-kubernetes model check as manifests/; the default render is
manifests/, object for object; values change what they should; and the
stand-in itself behaves as Helm's engine on a small fixture chart.

GANTRY_HELM_STANDIN names the stand-in binary (CTest sets it)."""
import base64
import glob
import json
import os
import subprocess
import tempfile
import unittest

import yaml

from test_manifests import OWN_SCHEMAS, ROOT, check, model_for

CHART = os.path.join(ROOT, "charts", "gantry")
FIXTURE = os.path.join(ROOT, "tests", "chart", "fixture")
STANDIN = os.environ.get("GANTRY_HELM_STANDIN", "")
NS = "gantry-system"

# Fields of one extender in a KubeSchedulerConfiguration (kube-scheduler's
# config API v1, Extender).
EXTENDER_FIELDS = {"urlPrefix", "filterVerb", "preemptVerb", "prioritizeVerb", "bindVerb",
                   "weight", "enableHTTPS", "tlsConfig", "httpTimeout", "nodeCacheCapable",
                   "managedResources", "ignorable"}


def render(*args, chart=CHART, ok=True):
    """Runs the stand-in; returns its documents (ok) or the failed process."""
    p = subprocess.run([STANDIN, "--namespace", NS, *args, chart],
                       capture_output=True, text=True, timeout=60)
    if not ok:
        return p
    if p.returncode != 0:
        raise AssertionError("render %s failed: %s" % (args, p.stderr))
    return p.stdout


def docs_of(text):
    return [d for d in yaml.safe_load_all(text) if d is not None]


def key(doc):
    return (doc["kind"], doc["metadata"].get("namespace"), doc["metadata"]["name"])


def by_key(docs):
    out = {}
    for d in docs:
        assert key(d) not in out, "duplicate object %s" % (key(d),)
        out[key(d)] = d
    return out


GENERATED_ANNOTATIONS = {"gantry.io/extender-ca-sha256"}

# The alerts and the dashboard, off by default.
MONITORING = ["--set", "monitoring.prometheusRule.enabled=true",
              "--set", "monitoring.dashboard.enabled=true"]


def normalized(doc):
    """@doc with ConfigMap data parsed, so formatting differences don't
    count; a Secret's values and a pod template's annotations of generated
    values (the chart makes the extender's certificates, manifests/secrets/
    has placeholders) reduced to their keys."""
    doc = json.loads(json.dumps(doc))
    if doc["kind"] == "Secret":
        keys = set(doc.pop("data", {}) or {}) | set(doc.pop("stringData", {}) or {})
        doc["keys"] = sorted(keys)
        return doc
    tmpl = doc.get("spec", {}).get("template", {}).get("metadata", {})
    ann = tmpl.get("annotations", {})
    for a in GENERATED_ANNOTATIONS & set(ann):
        del ann[a]
    if "annotations" in tmpl and not ann:
        del tmpl["annotations"]
    if doc["kind"] != "ConfigMap":
        return doc
    for k, v in doc.get("data", {}).items():
        if k.endswith(".json"):
            doc["data"][k] = json.loads(v)
        elif k.endswith(".yaml"):
            doc["data"][k] = yaml.safe_load(v)
    return doc


# Configuration files of components, not API objects: kubectl cannot apply them.
COMPONENT_CONFIGS = {"KubeSchedulerConfiguration"}


def applied_files():
    """What `kubectl apply -f manifests/` (and the Secrets step) applies."""
    return sorted(glob.glob(os.path.join(ROOT, "manifests", "*.yaml")) +
                  glob.glob(os.path.join(ROOT, "manifests", "secrets", "*.yaml")))


def manifest_docs(examples):
    files = applied_files()
    if examples:
        files = [os.path.join(ROOT, "manifests", "examples", "training-job.yaml")]
    docs = []
    for path in files:
        with open(path) as f:
            docs += [d for d in yaml.safe_load_all(f)
                     if d is not None and d.get("kind") not in COMPONENT_CONFIGS]
    return docs


def pod_spec(doc):
    if doc["kind"] in ("Deployment", "DaemonSet", "Job"):
        return doc["spec"]["template"]["spec"]
    return None


def scheduler_configs(docs):
    """The KubeSchedulerConfigurations held in ConfigMaps."""
    for d in docs:
        if d["kind"] != "ConfigMap":
            continue
        for k, v in d.get("data", {}).items():
            if k.endswith(".yaml"):
                c = yaml.safe_load(v)
                if isinstance(c, dict) and c.get("kind") == "KubeSchedulerConfiguration":
                    yield d["metadata"]["name"], c


def schema_errors(doc):
    own = OWN_SCHEMAS.get((doc["apiVersion"], doc["kind"]))
    if own is not None:
        return ["unknown top-level field %s" % f for f in sorted(set(doc) - own)]
    cls = model_for(doc["apiVersion"], doc["kind"])
    if cls is None:
        return ["no schema for %s %s" % (doc["apiVersion"], doc["kind"])]
    errors = []
    check(doc, cls.__name__, doc["kind"], errors)
    return errors


class ApplyTest(unittest.TestCase):
    def test_kubectl_can_apply_every_manifest(self):
        """`kubectl apply -f manifests/` sends every document of the top-level
        files to the API server: each must be an API object."""
        for path in applied_files():
            with open(path) as f:
                for i, d in enumerate(yaml.safe_load_all(f)):
                    if d is None:
                        continue
                    with self.subTest(where="%s#%d" % (os.path.relpath(path, ROOT), i)):
                        self.assertNotIn(d.get("kind"), COMPONENT_CONFIGS,
                                         "a component's config file, not an API object: "
                                         "kubectl apply -f manifests/ fails on it (the "
                                         "scheduler's lives in the ConfigMap gantry-scheduler "
                                         "of manifests/scheduler.yaml; move samples to "
                                         "manifests/examples/ or docs/)")
                        self.assertTrue(d.get("metadata", {}).get("name"))


@unittest.skipUnless(STANDIN, "GANTRY_HELM_STANDIN is not set: run through ctest")
class ChartTest(unittest.TestCase):
    def assert_well_formed(self, docs):
        for d in docs:
            with self.subTest(obj=key(d) if "metadata" in d else d):
                for field in ("apiVersion", "kind", "metadata"):
                    self.assertIn(field, d)
                self.assertTrue(d["metadata"].get("name"))
                self.assertEqual(schema_errors(d), [])

    def assert_references_resolve(self, docs, ns=NS):
        """Every ServiceAccount, ConfigMap and Secret a pod names is rendered
        (or marked optional), and every binding's role exists or is built in."""
        objs = by_key(docs)
        have = lambda kind, name, n=ns: (kind, n, name) in objs
        for d in docs:
            spec = pod_spec(d)
            if spec is None or d["metadata"].get("namespace") is None:
                continue
            where = key(d)
            sa = spec.get("serviceAccountName")
            if sa:
                self.assertTrue(have("ServiceAccount", sa), "%s: no ServiceAccount %s" % (where, sa))
            for v in spec.get("volumes", []):
                if "configMap" in v:
                    self.assertTrue(have("ConfigMap", v["configMap"]["name"]),
                                    "%s: no ConfigMap %s" % (where, v["configMap"]["name"]))
                if "secret" in v and not v["secret"].get("optional"):
                    self.assertTrue(have("Secret", v["secret"]["secretName"]),
                                    "%s: no Secret %s" % (where, v["secret"]["secretName"]))
        for d in docs:
            if d["kind"] not in ("ClusterRoleBinding", "RoleBinding"):
                continue
            ref = d["roleRef"]
            if ref["name"].startswith("system:") or ref["name"] == "extension-apiserver-authentication-reader":
                continue
            rns = None if ref["kind"] == "ClusterRole" else d["metadata"]["namespace"]
            self.assertIn((ref["kind"], rns, ref["name"]), objs, "%s: no role" % (key(d),))
            for s in d["subjects"]:
                self.assertTrue(have("ServiceAccount", s["name"], s["namespace"]),
                                "%s: no ServiceAccount %s" % (key(d), s["name"]))

    # ---- every rendered file

    def test_default_render_is_well_formed(self):
        docs = docs_of(render())
        self.assertGreater(len(docs), 20)
        self.assert_well_formed(docs)
        self.assert_references_resolve(docs)

    def test_every_template_file_renders(self):
        sources = set()
        for args in ([], ["--set", "trainingJob.enabled=true"], MONITORING):
            sources |= {line.split(": ", 1)[1] for line in render(*args).splitlines()
                        if line.startswith("# Source: ")}
        files = {"gantry/templates/" + os.path.relpath(p, os.path.join(CHART, "templates"))
                 for p in glob.glob(os.path.join(CHART, "templates", "**", "*"), recursive=True)
                 if os.path.isfile(p) and not os.path.basename(p).startswith("_")}
        self.assertEqual(files - sources, set())

    def test_everything_on_is_well_formed(self):
        docs = docs_of(render("--set", "trainingJob.enabled=true", *MONITORING))
        self.assert_well_formed(docs)
        self.assertIn("Job", {d["kind"] for d in docs})

    def test_scheduler_configuration_is_well_formed(self):
        for source, docs in (("chart", docs_of(render())), ("manifests", manifest_docs(False))):
            configs = list(scheduler_configs(docs))
            self.assertEqual(len(configs), 1, source)
            for cm, c in configs:
                with self.subTest(source=source, configmap=cm):
                    self.assertEqual(schema_errors(c), [])
                    self.assertEqual([p["schedulerName"] for p in c["profiles"]], ["gantry"])
                    self.assertTrue(c["leaderElection"]["leaderElect"])
                    for e in c["extenders"]:
                        self.assertEqual(set(e) - EXTENDER_FIELDS, set())
                        self.assertEqual([r["name"] for r in e["managedResources"]],
                                         ["nvidia.com/gpu"])

    def test_the_extender_url_reaches_its_service(self):
        for source, docs in (("chart", docs_of(render())), ("manifests", manifest_docs(False))):
            objs = by_key(docs)
            (_, c), = scheduler_configs(docs)
            url = c["extenders"][0]["urlPrefix"]
            host, port = url.split("//")[1].rstrip("/").split(":")
            svc_name, svc_ns = host.split(".")[:2]
            svc = objs[("Service", svc_ns, svc_name)]
            self.assertIn(int(port), [p["port"] for p in svc["spec"]["ports"]], source)
            selected = [d for d in docs if d["kind"] == "Deployment" and
                        d["spec"]["template"]["metadata"]["labels"].items()
                        >= svc["spec"]["selector"].items()]
            self.assertEqual([d["metadata"]["name"] for d in selected], [svc_name], source)
            args = selected[0]["spec"]["template"]["spec"]["containers"][0]["args"]
            self.assertIn("--listen=0.0.0.0:%s" % port, args, source)

    def test_liveness_probes_reach_the_sidecar(self):
        """A livenessprobe sidecar only serves /healthz: the plugin container
        needs a livenessProbe aimed at the sidecar's --http-endpoint, and a
        loopback endpoint works only with host networking and host 127.0.0.1."""
        for source, docs in (("chart", docs_of(render())), ("manifests", manifest_docs(False))):
            pods = [d for d in docs if pod_spec(d) is not None]
            seen = 0
            for d in pods:
                spec = pod_spec(d)
                side = [c for c in spec["containers"] if c["name"] == "liveness-probe"]
                if not side:
                    continue
                with self.subTest(source=source, obj=key(d)):
                    ep = [a.split("=", 1)[1] for a in side[0]["args"]
                          if a.startswith("--http-endpoint=")][0]
                    host, port = ep.rsplit(":", 1)
                    plugin = [c for c in spec["containers"] if c["name"] == "gantry-csi"][0]
                    probe = plugin["livenessProbe"]["httpGet"]
                    named = {p["name"]: p["containerPort"] for p in plugin.get("ports", [])}
                    self.assertEqual(str(named.get(probe["port"], probe["port"])), port)
                    self.assertEqual(probe["path"], "/healthz")
                    if host.startswith("127."):
                        self.assertTrue(spec.get("hostNetwork"))
                        self.assertEqual(probe.get("host"), host)
                    seen += 1
            self.assertEqual(seen, 2, source)  # controller and node

    def test_node_plugin_sees_the_host_modules_read_only(self):
        """The node plugin loads rbd, nvme-tcp and nvme-rdma at start with the
        host's modprobe: it needs the host's /lib/modules, read-only."""
        for source, docs in (("chart", docs_of(render())), ("manifests", manifest_docs(False))):
            with self.subTest(source=source):
                ds = by_key(docs)[("DaemonSet", NS, "gantry-node")]["spec"]["template"]["spec"]
                host = {v["name"]: v["hostPath"]["path"] for v in ds["volumes"] if "hostPath" in v}
                plugin = [c for c in ds["containers"] if c["name"] == "gantry-csi"][0]
                mounts = [m for m in plugin["volumeMounts"] if m["mountPath"] == "/lib/modules"]
                self.assertEqual(len(mounts), 1, plugin["volumeMounts"])
                self.assertEqual(host.get(mounts[0]["name"]), "/lib/modules")
                self.assertTrue(mounts[0].get("readOnly"))

    # ---- the default render is manifests/

    def test_default_render_is_the_manifests(self):
        chart = by_key(docs_of(render()))
        plain = by_key(manifest_docs(False))
        self.assertEqual(set(chart), set(plain))
        for k in plain:
            with self.subTest(obj=k):
                self.assertEqual(normalized(chart[k]), normalized(plain[k]))

    def test_monitoring_is_manifests_monitoring(self):
        """Off by default; on, the PrometheusRule and the dashboard's
        ConfigMap are manifests/monitoring/'s, object for object."""
        kinds = {d["kind"] for d in docs_of(render())}
        self.assertNotIn("PrometheusRule", kinds)
        self.assertNotIn(("ConfigMap", NS, "gantry-dashboard"), by_key(docs_of(render())))
        chart = by_key(docs_of(render(*MONITORING)))
        plain = []
        for path in sorted(glob.glob(os.path.join(ROOT, "manifests", "monitoring", "*.yaml"))):
            with open(path) as f:
                plain += [d for d in yaml.safe_load_all(f) if d is not None]
        plain = by_key(plain)
        self.assertEqual(set(plain), {("PrometheusRule", NS, "gantry-alerts"),
                                      ("ConfigMap", NS, "gantry-dashboard")})
        for k in plain:
            with self.subTest(obj=k):
                self.assertEqual(normalized(chart[k]), normalized(plain[k]))

    def test_monitoring_values(self):
        docs = by_key(docs_of(render(*MONITORING,
                                     "--set", "monitoring.prometheusRule.labels.release=kps",
                                     "--set", "monitoring.dashboard.namespace=grafana",
                                     "--set", "monitoring.runbookBaseURL=https://git.example/gantry/")))
        rule = docs[("PrometheusRule", NS, "gantry-alerts")]
        self.assertEqual(rule["metadata"]["labels"],
                         {"app.kubernetes.io/name": "gantry", "release": "kps"})
        urls = [r["annotations"]["runbook_url"] for g in rule["spec"]["groups"] for r in g["rules"]]
        self.assertTrue(urls)
        for u in urls:
            self.assertRegex(u, r"^https://git\.example/gantry/docs/operations\.md#gantry[a-z]+$")
        cm = docs[("ConfigMap", "grafana", "gantry-dashboard")]
        self.assertEqual(cm["metadata"]["labels"]["grafana_dashboard"], "1")

    def test_training_job_is_the_example(self):
        docs = docs_of(render("--set", "trainingJob.enabled=true"))
        job = {key(d): d for d in docs if d["metadata"].get("namespace") is None and
               d["kind"] in ("Job", "PersistentVolumeClaim", "VolumeSnapshot", "Service")}
        example = by_key(manifest_docs(True))
        self.assertEqual(set(job), set(example))
        for k in example:
            with self.subTest(obj=k):
                self.assertEqual(job[k], example[k])

    # ---- values change what they should

    def test_image_values(self):
        docs = docs_of(render("--set", "image.repository=registry.example/gantry",
                              "--set", "image.tag=1.2.3", "--set", "image.pullPolicy=Always"))
        seen = 0
        for d in docs:
            spec = pod_spec(d)
            for c in (spec or {}).get("containers", []):
                if c.get("command", [""])[0].startswith("gantry-"):
                    self.assertEqual(c["image"], "registry.example/gantry:1.2.3")
                    self.assertEqual(c["imagePullPolicy"], "Always")
                    seen += 1
                else:
                    self.assertFalse(c["image"].startswith("registry.example/"), c["name"])
        self.assertEqual(seen, 4)  # controller, node, target, extender

    def test_image_pull_secrets(self):
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", prefix="gantry-deploy-") as f:
            yaml.safe_dump({"imagePullSecrets": [{"name": "regcred"}]}, f)
            f.flush()
            docs = docs_of(render("-f", f.name))
        with_secret = sorted(d["metadata"]["name"] for d in docs if pod_spec(d) is not None and
                             pod_spec(d).get("imagePullSecrets") == [{"name": "regcred"}])
        self.assertEqual(with_secret, ["gantry-controller", "gantry-node", "gantry-scheduler",
                                       "gantry-target"])
        self.assertNotIn("imagePullSecrets", render())

    def test_clusters_and_targets_from_a_values_file(self):
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", prefix="gantry-deploy-") as f:
            yaml.safe_dump({"config": {
                "clusters": [
                    {"clusterID": "fast", "monitors": ["[v2:10.1.0.1:3300]"], "tier": "performance"},
                    {"clusterID": "bulk", "monitors": ["10.2.0.1:3300"], "tier": "capacity",
                     "location": {"leaves": ["leaf-7"], "readGBps": 120}}],
                "targets": [{"id": "t1", "url": "https://10.3.0.1:8009/",
                             "addresses": [{"transport": "rdma", "traddr": "10.3.0.1",
                                            "trsvcid": "4420"}],
                             "capacityBytes": 35184372088832}],
                "node": None}}, f)
            f.flush()
            docs = by_key(docs_of(render("-f", f.name)))
        cfg = json.loads(docs[("ConfigMap", NS, "gantry-config")]["data"]["gantry.json"])
        self.assertEqual([c["clusterID"] for c in cfg["clusters"]], ["fast", "bulk"])
        self.assertEqual(cfg["clusters"][1]["location"], {"leaves": ["leaf-7"], "readGBps": 120})
        self.assertEqual(cfg["targets"][0]["capacityBytes"], 35184372088832)
        self.assertEqual(cfg["logLevel"], "info")  # kept from values.yaml
        self.assertNotIn("node", cfg)  # null deletes, as in Helm

    def test_namespace_and_release_name(self):
        p = subprocess.run([STANDIN, "--namespace", "storage", "--name", "fabric", CHART],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        docs = docs_of(p.stdout)
        for d in docs:
            ns = d["metadata"].get("namespace")
            if ns is not None and not (d["kind"] == "RoleBinding" and ns == "kube-system"):
                self.assertEqual(ns, "storage", key(d))
            for s in d.get("subjects", []):
                self.assertEqual(s["namespace"], "storage")
        names = {d["metadata"]["name"] for d in docs}
        self.assertTrue({"fabric-controller", "fabric-node", "fabric-target",
                         "fabric-scheduler", "fabric-kube-scheduler"} <= names)
        self.assert_references_resolve(docs, ns="storage")
        sc = by_key(docs)[("StorageClass", None, "gantry-dataset")]
        self.assertEqual(sc["parameters"]["csi.storage.k8s.io/node-stage-secret-namespace"], "storage")
        (_, c), = scheduler_configs(docs)
        self.assertEqual(c["leaderElection"]["resourceNamespace"], "storage")
        self.assertEqual(c["extenders"][0]["urlPrefix"], "https://fabric-scheduler.storage.svc:8888/")

    def test_extender_tls_both_sides(self):
        """By default the extender serves HTTPS to client certificates of a CA
        made for the release, kube-scheduler presents one, and the serving
        certificate names the Service; insecureHTTP=true turns all of it off
        by name."""
        docs = docs_of(render())
        objs = by_key(docs)
        (_, c), = scheduler_configs(docs)
        e = c["extenders"][0]
        self.assertTrue(e["enableHTTPS"])
        self.assertTrue(e["urlPrefix"].startswith("https://gantry-scheduler.gantry-system.svc:"))
        ext = objs[("Deployment", NS, "gantry-scheduler")]["spec"]["template"]
        kube = objs[("Deployment", NS, "gantry-kube-scheduler")]["spec"]["template"]
        self.assertEqual(ext["metadata"]["annotations"], kube["metadata"]["annotations"])

        def files(tmpl):
            """mount path -> Secret name of the pod's first container."""
            vols = {v["name"]: v["secret"]["secretName"] for v in tmpl["spec"]["volumes"]
                    if "secret" in v}
            return {m["mountPath"]: vols[m["name"]] for m in tmpl["spec"]["containers"][0]["volumeMounts"]
                    if m["name"] in vols}

        def secret_file(tmpl, path):
            d, name = os.path.split(path)
            sec = objs[("Secret", NS, files(tmpl)[d])]
            return base64.b64decode(sec["data"][name])

        args = ext["spec"]["containers"][0]["args"]
        flag = {a.split("=", 1)[0]: a.split("=", 1)[1] for a in args if "=" in a}
        for probe in ("readinessProbe", "livenessProbe"):
            self.assertEqual(ext["spec"]["containers"][0][probe]["httpGet"]["scheme"], "HTTPS")
        tc = e["tlsConfig"]
        # each side trusts the CA that signed the other's certificate
        with tempfile.TemporaryDirectory(prefix="gantry-chart-tls-") as d:
            def put(name, data):
                with open(os.path.join(d, name), "wb") as f:
                    f.write(data)
                return os.path.join(d, name)
            serving = put("serving.crt", secret_file(ext, flag["--tls-cert"]))
            client = put("client.crt", secret_file(kube, tc["certFile"]))
            for cert, ca in ((client, put("client-ca.crt", secret_file(ext, flag["--client-ca"]))),
                             (serving, put("server-ca.crt", secret_file(kube, tc["caFile"])))):
                p = subprocess.run(["openssl", "verify", "-CAfile", ca, cert],
                                   capture_output=True, text=True, timeout=30)
                self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            p = subprocess.run(["openssl", "x509", "-noout", "-ext", "subjectAltName", "-in", serving],
                               capture_output=True, text=True, timeout=30)
            self.assertIn("DNS:gantry-scheduler.gantry-system.svc", p.stdout)
        self.assertIn(b"PRIVATE KEY", secret_file(kube, tc["keyFile"]))
        self.assertIn(b"PRIVATE KEY", secret_file(ext, flag["--tls-key"]))

        docs = docs_of(render("--set", "scheduler.insecureHTTP=true"))
        objs = by_key(docs)
        (_, c), = scheduler_configs(docs)
        self.assertFalse(c["extenders"][0]["enableHTTPS"])
        self.assertNotIn("tlsConfig", c["extenders"][0])
        self.assertIn("--insecure-http",
                      objs[("Deployment", NS, "gantry-scheduler")]["spec"]["template"]["spec"]
                      ["containers"][0]["args"])
        self.assertNotIn(("Secret", NS, "gantry-scheduler-tls"), objs)

    def test_scheduler_values(self):
        docs = docs_of(render("--set", "scheduler.schedulerName=fabric-aware",
                              "--set", "scheduler.port=9443", "--set", "scheduler.weight=10",
                              "--set", "scheduler.nodeCacheCapable=false"))
        (_, c), = scheduler_configs(docs)
        self.assertEqual(c["profiles"][0]["schedulerName"], "fabric-aware")
        e = c["extenders"][0]
        self.assertEqual((e["weight"], e["nodeCacheCapable"]), (10, False))
        self.assertTrue(e["urlPrefix"].endswith(":9443/"))
        objs = by_key(docs)
        self.assertEqual(objs[("Service", NS, "gantry-scheduler")]["spec"]["ports"][0]["port"], 9443)

    def test_topology_values(self):
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", prefix="gantry-deploy-") as f:
            yaml.safe_dump({"scheduler": {"topology": {
                "leaves": [{"name": "leaf-%d" % i, "spine": "spine-1", "uplinkGbps": 400}
                           for i in range(4)]}}}, f)
            f.flush()
            docs = by_key(docs_of(render("-f", f.name)))
        topo = json.loads(docs[("ConfigMap", NS, "gantry-scheduler")]["data"]["topology.json"])
        self.assertEqual([l["name"] for l in topo["leaves"]], ["leaf-0", "leaf-1", "leaf-2", "leaf-3"])
        # maps merge with values.yaml (backends kept), lists are replaced
        self.assertEqual([b["name"] for b in topo["backends"]], ["nvme", "tgt-a"])

    def test_parts_can_be_turned_off(self):
        docs = docs_of(render("--set", "target.enabled=false", "--set", "scheduler.enabled=false",
                              "--set", "namespace.create=false", "--set", "targetToken.create=false"))
        names = {(d["kind"], d["metadata"]["name"]) for d in docs}
        for gone in [("DaemonSet", "gantry-target"), ("Deployment", "gantry-scheduler"),
                     ("Deployment", "gantry-kube-scheduler"), ("ClusterRole", "gantry-scheduler"),
                     ("Namespace", NS), ("Secret", "gantry-target-token")]:
            self.assertNotIn(gone, names)
        self.assertIn(("DaemonSet", "gantry-node"), names)
        self.assert_references_resolve(docs)

    def test_target_tls(self):
        docs = by_key(docs_of(render("--set", "target.tls.secretName=gantry-target-tls")))
        tgt = docs[("DaemonSet", NS, "gantry-target")]["spec"]["template"]["spec"]
        args = tgt["containers"][0]["args"]
        self.assertIn("--tls-cert=/etc/gantry-target-tls/tls.crt", args)
        self.assertIn("--tls-key=/etc/gantry-target-tls/tls.key", args)
        tls = [v for v in tgt["volumes"] if v["name"] == "tls"]
        self.assertEqual(tls[0]["secret"]["secretName"], "gantry-target-tls")
        ctl = docs[("Deployment", NS, "gantry-controller")]["spec"]["template"]["spec"]
        ca = [v for v in ctl["volumes"] if v["name"] == "target-ca"]
        # the controller gets the CA only, never the targets' key
        self.assertEqual(ca[0]["secret"]["items"], [{"key": "ca.crt", "path": "ca.crt"}])
        mounts = {m["name"]: m["mountPath"] for m in ctl["containers"][0]["volumeMounts"]}
        self.assertEqual(mounts["target-ca"], "/etc/gantry-target-ca")
        default = by_key(docs_of(render()))
        self.assertNotIn("--tls-cert=/etc/gantry-target-tls/tls.crt",
                         default[("DaemonSet", NS, "gantry-target")]["spec"]["template"]["spec"]
                         ["containers"][0]["args"])

    def test_target_metrics_scraped(self):
        """The drain alerts need gantry-target's /metrics: the chart and
        manifests/ run it with --metrics-addr on the port named metrics (a
        PodMonitor's target, as the controller's)."""
        rendered = by_key(docs_of(render("--set", "target.metricsPort=9900")))
        with open(os.path.join(ROOT, "manifests", "target.yaml")) as f:
            static = by_key(list(yaml.safe_load_all(f)))
        for docs, port in ((rendered, 9900), (static, 9820)):
            c = docs[("DaemonSet", NS, "gantry-target")]["spec"]["template"]["spec"]["containers"][0]
            self.assertIn("--metrics-addr=0.0.0.0:%d" % port, c["args"])
            self.assertIn({"name": "metrics", "containerPort": port}, c["ports"])

    def test_target_durable_tier(self):
        docs = by_key(docs_of(render("--set", "target.durable.secretName=gantry-target-durable")))
        tgt = docs[("DaemonSet", NS, "gantry-target")]["spec"]["template"]["spec"]
        self.assertIn("--durable=/etc/gantry-target-durable/durable.json", tgt["containers"][0]["args"])
        vol = [v for v in tgt["volumes"] if v["name"] == "durable"]
        self.assertEqual(vol[0]["secret"]["secretName"], "gantry-target-durable")
        mounts = {m["name"]: m["mountPath"] for m in tgt["containers"][0]["volumeMounts"]}
        self.assertEqual(mounts["durable"], "/etc/gantry-target-durable")
        default = by_key(docs_of(render()))
        self.assertNotIn("--durable=/etc/gantry-target-durable/durable.json",
                         default[("DaemonSet", NS, "gantry-target")]["spec"]["template"]["spec"]
                         ["containers"][0]["args"])
        vsc = default[("VolumeSnapshotClass", None, "gantry-checkpoint-snapshot")]
        self.assertEqual(vsc["parameters"], {"fastCopyRetention": "untilDrained"})

    def test_kubelet_dir(self):
        docs = by_key(docs_of(render("--set", "node.kubeletDir=/var/lib/k0s/kubelet")))
        ds = docs[("DaemonSet", NS, "gantry-node")]["spec"]["template"]["spec"]
        reg = [a for c in ds["containers"] for a in c.get("args", [])
               if a.startswith("--kubelet-registration-path=")]
        self.assertEqual(reg, ["--kubelet-registration-path=/var/lib/k0s/kubelet/plugins/csi.gantry.io/csi.sock"])
        paths = {v["name"]: v["hostPath"]["path"] for v in ds["volumes"] if "hostPath" in v}
        self.assertEqual(paths["kubelet-dir"], "/var/lib/k0s/kubelet")
        self.assertEqual(paths["registration-dir"], "/var/lib/k0s/kubelet/plugins_registry")

    def test_a_missing_secret_value_is_refused(self):
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", prefix="gantry-deploy-") as f:
            yaml.safe_dump({"cephSecrets": [{"name": "x", "create": True, "userID": "u"}]}, f)
            f.flush()
            p = render("-f", f.name, ok=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("cephSecrets[].userKey is required", p.stderr)
        self.assertEqual(p.stdout, "")


@unittest.skipUnless(STANDIN, "GANTRY_HELM_STANDIN is not set: run through ctest")
class StandinTest(unittest.TestCase):
    """The stand-in against Helm's documented engine behaviour, on a fixture."""

    def test_fixture(self):
        out = render("--name", "rel", "--set", "count=3", "--set", "drop=null", chart=FIXTURE)
        sources = [l for l in out.splitlines() if l.startswith("# Source: ")]
        # _helpers.tpl defines only; NOTES.txt and a blank render are dropped;
        # the ConfigMap comes before the Service (Helm's install order).
        self.assertEqual(sources, ["# Source: fixture/templates/objects.yaml"] * 2)
        cm, svc = docs_of(out)
        self.assertEqual((cm["kind"], svc["kind"]), ("ConfigMap", "Service"))
        d = cm["data"]
        self.assertEqual(d["name"], "rel-fixture")            # include + .Release + .Chart
        self.assertEqual(d["tpl"], "rel says hello")          # tpl sees the values
        self.assertEqual(d["count"], "3 int64")                # --set integers are int64
        self.assertEqual(d["size"], "1.099511627776e+12 float64")  # YAML numbers are float64
        self.assertEqual(d["sizeJson"], "1099511627776")
        self.assertEqual(d["missing"], "")                    # <no value> erased
        self.assertEqual(d["dropped"], "absent")              # --set x=null deletes
        self.assertEqual(d["file"], "hello from a file")
        self.assertEqual(d["caps"], "1.31 true false")
        self.assertEqual(yaml.safe_load(d["yaml"]), {"a": [1, 2], "b": {"c": "d"}})
        self.assertEqual(d["fromYaml"], "d")

    def test_required_fails_with_its_message(self):
        p = render("--set", "need=", chart=FIXTURE, ok=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("need is required", p.stderr)

    def test_env_is_not_a_function(self):
        p = render("--set", "useEnv=true", chart=FIXTURE, ok=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn('function "env" not defined', p.stderr)

    def test_invalid_yaml_output_is_an_error(self):
        p = render("--set", "broken=true", chart=FIXTURE, ok=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("YAML parse error on fixture/templates/objects.yaml", p.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
