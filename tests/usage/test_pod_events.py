"""The node plugin's bandwidth events (node/qos/pod_event.c) against a real
kube-apiserver (v1.31 from ../shared/k8s, etcd from Debian) with RBAC on:
the Event the poster builds passes the API server's validation and reads
back as `kubectl describe pod` shows it; the ServiceAccount of the node
plugin, bound to the ClusterRole of manifests/node.yaml, may create it; a
user without that role gets 403 (EACCES); a pod whose namespace is gone
gets 404 (ENOENT).

Skipped (exit 77) when the control plane's binaries or etcd are missing."""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest

import yaml

BUILD = os.environ.get("GANTRY_BUILD_DIR", "build")
SRC = os.environ.get("GANTRY_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
POST = os.path.join(BUILD, "tests", "pod_event_post")
NODE_SA = "system:serviceaccount:gantry-system:gantry-node"


def k8s_bin():
    b = os.environ.get("GANTRY_K8S_BIN", "/work/k8s-cache/bin")
    if os.path.exists(os.path.join(b, "kube-apiserver")):
        return b
    unpack = os.path.join(SRC, "..", "shared", "k8s", "unpack.sh")
    if os.path.exists(unpack):
        out = subprocess.run([unpack, os.path.join(BUILD, "k8s")], capture_output=True, text=True)
        if out.returncode == 0:
            return out.stdout.strip().splitlines()[-1]
    return None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(what, fn, timeout=90):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if fn():
            return
        time.sleep(0.3)
    raise AssertionError("timed out waiting for " + what)


class PodEvents(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.procs = []
        cls.bin = k8s_bin()
        if not cls.bin or not shutil.which("etcd"):
            print("GANTRY-SKIP: kube-apiserver or etcd missing")
            sys.exit(77)
        cls.tmp = tempfile.mkdtemp(prefix="gantry-events-%d-" % os.getpid())
        try:
            cls.start()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def start(cls):
        t = cls.tmp
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                        "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                        "-addext", "subjectAltName=IP:127.0.0.1",
                        "-keyout", t + "/tls.key", "-out", t + "/tls.crt"], check=True, capture_output=True)
        subprocess.run(["openssl", "genrsa", "-out", t + "/sa.key", "2048"], check=True, capture_output=True)
        subprocess.run(["openssl", "rsa", "-in", t + "/sa.key", "-pubout", "-out", t + "/sa.pub"],
                       check=True, capture_output=True)
        with open(t + "/tokens.csv", "w") as f:
            f.write('admin-token,admin,1,"system:masters"\n')
            f.write('node-token,%s,2,"system:serviceaccounts,system:serviceaccounts:gantry-system"\n' % NODE_SA)
            f.write("nobody-token,nobody,3\n")
        ec, ep, api = free_port(), free_port(), free_port()
        cls.server = "https://127.0.0.1:%d" % api
        cls.logs = [open(t + "/etcd.log", "w"), open(t + "/apiserver.log", "w")]
        log = cls.logs[0]
        cls.procs.append(subprocess.Popen(
            ["etcd", "--data-dir", t + "/etcd", "--listen-client-urls", "http://127.0.0.1:%d" % ec,
             "--advertise-client-urls", "http://127.0.0.1:%d" % ec,
             "--listen-peer-urls", "http://127.0.0.1:%d" % ep,
             "--initial-advertise-peer-urls", "http://127.0.0.1:%d" % ep,
             "--initial-cluster", "default=http://127.0.0.1:%d" % ep], stdout=log, stderr=log))
        log = cls.logs[1]
        cls.procs.append(subprocess.Popen(
            [cls.bin + "/kube-apiserver", "--etcd-servers", "http://127.0.0.1:%d" % ec,
             "--bind-address", "127.0.0.1", "--secure-port", str(api),
             "--tls-cert-file", t + "/tls.crt", "--tls-private-key-file", t + "/tls.key",
             "--token-auth-file", t + "/tokens.csv", "--authorization-mode", "RBAC",
             "--service-account-key-file", t + "/sa.pub",
             "--service-account-signing-key-file", t + "/sa.key",
             "--service-account-issuer", "https://kubernetes.default.svc",
             "--service-cluster-ip-range", "10.96.0.0/24",
             "--disable-admission-plugins", "ServiceAccount"], stdout=log, stderr=log))
        for user in ("admin", "node", "nobody"):
            with open("%s/%s.kubeconfig" % (t, user), "w") as f:
                yaml.safe_dump({
                    "apiVersion": "v1", "kind": "Config", "current-context": "c",
                    "clusters": [{"name": "c", "cluster": {"server": cls.server,
                                                           "certificate-authority": t + "/tls.crt"}}],
                    "users": [{"name": "u", "user": {"token": user + "-token"}}],
                    "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}, f)

        def ready():
            r = cls.kubectl("get", "--raw", "/readyz", check=False)
            return r.returncode == 0 and r.stdout.strip() == "ok"
        wait_for("kube-apiserver /readyz", ready)
        # the node plugin's RBAC exactly as shipped
        with open(os.path.join(SRC, "manifests", "node.yaml")) as f:
            docs = [d for d in yaml.safe_load_all(f) if d and d["kind"] in ("ClusterRole", "ClusterRoleBinding")]
        cls.kubectl("create", "namespace", "gantry-system")
        cls.kubectl("create", "namespace", "ml")
        cls.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(docs))
        wait_for("RBAC to allow the node plugin", lambda: cls.kubectl(
            "auth", "can-i", "create", "events", "-n", "ml", "--as", NODE_SA,
            check=False).stdout.strip() == "yes")

    @classmethod
    def kubectl(cls, *args, check=True, input=None, user="admin"):
        r = subprocess.run([cls.bin + "/kubectl", "--kubeconfig", "%s/%s.kubeconfig" % (cls.tmp, user), *args],
                           capture_output=True, text=True, timeout=60, input=input)
        if check and r.returncode != 0:
            raise AssertionError("kubectl %s: %s" % (" ".join(args), r.stderr))
        return r

    @classmethod
    def tearDownClass(cls):
        for p in reversed(cls.procs):
            p.terminate()
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        for f in getattr(cls, "logs", []):
            f.close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def post(self, user, pod, uid="3f1e6c1a-7b9e-4c2e-9a51-0d9c1f7f5a10", type_="Warning",
             reason="BandwidthAtCap", message="reads at its 25 Gbps cap 92 % of the last 10 min: "
                                               "declare more, or expect slower epochs"):
        return subprocess.run([POST, "%s/%s.kubeconfig" % (self.tmp, user), "ml", pod, uid, type_, reason,
                               message], capture_output=True, text=True, timeout=60)

    def test_event_as_the_node_plugin(self):
        r = self.post("node", "llama-0")
        self.assertEqual((r.returncode, r.stdout.strip()), (0, "posted"), r.stdout + r.stderr)
        events = json.loads(self.kubectl("get", "events", "-n", "ml", "-o", "json").stdout)["items"]
        ev = [e for e in events if e["involvedObject"].get("name") == "llama-0"]
        self.assertEqual(len(ev), 1, events)
        ev = ev[0]
        self.assertTrue(ev["metadata"]["name"].startswith("llama-0."))
        self.assertEqual(ev["involvedObject"], {"apiVersion": "v1", "kind": "Pod", "namespace": "ml",
                                                "name": "llama-0",
                                                "uid": "3f1e6c1a-7b9e-4c2e-9a51-0d9c1f7f5a10"})
        self.assertEqual((ev["type"], ev["reason"], ev["count"]), ("Warning", "BandwidthAtCap", 1))
        self.assertEqual(ev["message"], "reads at its 25 Gbps cap 92 % of the last 10 min: declare more, "
                                        "or expect slower epochs")
        self.assertEqual(ev["source"], {"component": "gantry-csi", "host": "gpu-7"})
        # what an operator types
        out = self.kubectl("get", "events", "-n", "ml", "--field-selector",
                           "involvedObject.name=llama-0,reason=BandwidthAtCap").stdout
        self.assertIn("BandwidthAtCap", out)
        self.assertIn("declare more, or expect slower epochs", out)

    def test_not_enforced_names_why_once(self):
        """A cap the node cannot enforce (cgroup v1 here) is told to the pod:
        a Warning naming why, and the same again at once is held back."""
        r = self.post("node", "llama-3", type_="not-enforced", reason="cgroup_v1", message="-")
        self.assertEqual((r.returncode, r.stdout.strip()), (0, "posted held"), r.stdout + r.stderr)
        out = self.kubectl("get", "events", "-n", "ml", "-o", "json", "--field-selector",
                           "involvedObject.name=llama-3").stdout
        ev = json.loads(out)["items"]
        self.assertEqual([(e["type"], e["reason"]) for e in ev], [("Warning", "BandwidthNotEnforced")])
        self.assertIn("0001-ds", ev[0]["message"])
        self.assertIn("cgroup v2", ev[0]["message"])

    def test_underused_is_normal(self):
        r = self.post("node", "llama-1", type_="Normal", reason="BandwidthUnderused",
                      message="reads 3.1 Gbps of the 25 Gbps it declared (12 %) over the last 10 min")
        self.assertEqual(r.returncode, 0, r.stdout)
        out = self.kubectl("get", "events", "-n", "ml", "--field-selector",
                           "involvedObject.name=llama-1", "-o", "json").stdout
        self.assertEqual([(e["type"], e["reason"]) for e in json.loads(out)["items"]],
                         [("Normal", "BandwidthUnderused")])

    def test_without_the_role(self):
        r = self.post("nobody", "llama-2")
        self.assertEqual(r.returncode, 1)
        self.assertTrue(r.stdout.startswith("error EACCES"), r.stdout)
        self.assertIn("forbidden", r.stdout)

    def test_namespace_gone(self):
        r = subprocess.run([POST, "%s/node.kubeconfig" % self.tmp, "gone", "llama-3", "u-3", "Warning",
                            "BandwidthAtCap", "m"], capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 1)
        self.assertTrue(r.stdout.startswith("error ENOENT"), r.stdout)


if __name__ == "__main__":
    unittest.main()
