"""kube-scheduler's own client certificate through the real kube-scheduler
v1.31: gantry-scheduler serves HTTPS with --client-ca; kube-scheduler's
extender entry (tlsConfig certFile/keyFile/caFile, as in
docs/kube-scheduler-config.yaml) filters, prioritizes and binds a GPU pod
through it, and the pod is bound by the extender's Binding. The same
kube-scheduler without a client certificate, or with one from another CA,
gets every call refused: the pod stays pending with kube-scheduler's
FailedScheduling event, and gantry-scheduler logs why."""
import os
import ssl
import subprocess
import sys
import tempfile
import http.client
import shutil
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "canary"))
import canary  # noqa: E402
import control_plane as cp  # noqa: E402

PKI_SCRIPT = os.path.join(HERE, "..", "fakeapi", "make_test_pki.sh")
BUILD = os.environ.get("GANTRY_BUILD_DIR", os.path.join(cp.SOURCE, "build"))
SCHEDULER_BIN = os.environ.get("GANTRY_SCHEDULER", os.path.join(BUILD, "bin", "gantry-scheduler"))
NS = "tls"


class ExtenderTLSTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.pki = tempfile.mkdtemp(prefix="gantry-k8s-tls-%d-" % os.getpid())
        cls.plane = cp.ControlPlane("extender-tls")
        try:
            subprocess.run(["bash", PKI_SCRIPT, cls.pki], check=True, capture_output=True,
                           timeout=60)
            for key in ("server.key", "client.key", "other-client.key"):
                canary.register_pem_key("k8s-tls-" + key, cls.f(key))
            p = cls.plane.start()
            p.create_nodes(["gpu-node-1", "gpu-node-2"], capacity={"nvidia.com/gpu": "8"})
            p.sa_token(NS, "default")  # the namespace and its default ServiceAccount
            ready = os.path.join(p.dir, "extender-port")
            p.spawn("gantry-scheduler", [
                SCHEDULER_BIN, "--listen", "127.0.0.1:0", "--ready-file", ready,
                "--kubeconfig", p.kubeconfig,
                "--tls-cert", cls.f("server.crt"), "--tls-key", cls.f("server.key"),
                "--client-ca", cls.f("ca.crt")])

            def port():
                if not p.procs["gantry-scheduler"].alive():
                    raise AssertionError("gantry-scheduler exited: " + p.log("gantry-scheduler"))
                with open(ready) as f:
                    return int(f.read().strip() or 0)
            cls.port = cp.wait_for(port, 60, "gantry-scheduler to serve")
        except BaseException:
            cls.plane.print_logs()
            cls.plane.stop()
            shutil.rmtree(cls.pki, ignore_errors=True)
            raise

    @classmethod
    def tearDownClass(cls):
        cls.plane.stop()
        canary.keep_log(cls.plane.procs["gantry-scheduler"].logpath, "k8s-gantry-scheduler")
        shutil.rmtree(cls.pki, ignore_errors=True)

    @classmethod
    def f(cls, name):
        return os.path.join(cls.pki, name)

    def kube_scheduler(self, client):
        """(Re)starts kube-scheduler with the extender entry; @client: the
        (cert, key) of its tlsConfig, or None for none."""
        p = self.plane
        if "kube-scheduler" in p.procs:
            p.stop_proc("kube-scheduler")
        tls = "      caFile: %s\n" % self.f("ca.crt")
        if client:
            tls += "      certFile: %s\n      keyFile: %s\n" % client
        p.start_scheduler(
            "apiVersion: kubescheduler.config.k8s.io/v1\n"
            "kind: KubeSchedulerConfiguration\n"
            "extenders:\n"
            "  - urlPrefix: https://127.0.0.1:%d/\n"
            "    filterVerb: filter\n"
            "    prioritizeVerb: prioritize\n"
            "    bindVerb: bind\n"
            "    weight: 5\n"
            "    enableHTTPS: true\n"
            "    tlsConfig:\n%s"
            "    httpTimeout: 5s\n"
            "    nodeCacheCapable: true\n"
            "    ignorable: false\n"
            "    managedResources:\n"
            "      - name: nvidia.com/gpu\n"
            "        ignoredByScheduler: false\n" % (self.port, tls))

    def gpu_pod(self, name):
        self.plane.api("POST", "/api/v1/namespaces/%s/pods" % NS, {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "none",
                                     "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}})

    def metrics(self):
        ctx = ssl.create_default_context(cafile=self.f("ca.crt"))
        ctx.load_cert_chain(self.f("client.crt"), self.f("client.key"))
        c = http.client.HTTPSConnection("127.0.0.1", self.port, timeout=30, context=ctx)
        try:
            c.request("GET", "/metrics")
            r = c.getresponse()
            self.assertEqual(r.status, 200)
            return r.read().decode()
        finally:
            c.close()

    def refused(self, client, pod, reason):
        p = self.plane
        self.kube_scheduler(client)
        self.gpu_pod(pod)
        cp.wait_for(lambda: 'reason="%s"' % reason in p.log("gantry-scheduler"), 90,
                    "gantry-scheduler to refuse kube-scheduler (%s)" % reason)
        ev = cp.wait_for(lambda: [e for e in p.events(NS, "Pod", pod)
                                  if e["reason"] == "FailedScheduling"], 90,
                         "kube-scheduler's FailedScheduling event for %s" % pod)
        self.assertIn("403", ev[0]["message"])
        self.assertIsNone(p.api("GET", "/api/v1/namespaces/%s/pods/%s" % (NS, pod))
                          ["spec"].get("nodeName"))
        p.api("DELETE", "/api/v1/namespaces/%s/pods/%s?gracePeriodSeconds=0" % (NS, pod))

    def test_1_kube_schedulers_certificate_binds_through_the_extender(self):
        p = self.plane
        self.kube_scheduler((self.f("client.crt"), self.f("client.key")))
        self.gpu_pod("good")
        node = cp.wait_for(lambda: p.api("GET", "/api/v1/namespaces/%s/pods/good" % NS)
                           ["spec"].get("nodeName"), 90, "the pod to be bound")
        self.assertIn(node, ("gpu-node-1", "gpu-node-2"))
        # two more: kube-scheduler's Go client keeps to its one h2 connection
        for name in ("good-2", "good-3"):
            self.gpu_pod(name)
        for name in ("good-2", "good-3"):
            cp.wait_for(lambda: p.api("GET", "/api/v1/namespaces/%s/pods/%s" % (NS, name))
                        ["spec"].get("nodeName"), 90, "%s to be bound" % name)
        m = self.metrics()
        for verb in ("filter", "prioritize", "bind"):
            self.assertIn('gantry_scheduler_requests_total{verb="%s",code="200"}' % verb, m)
        self.assertNotIn("sched.client_refused", p.log("gantry-scheduler"))
        # ALPN chose h2 for kube-scheduler (this test's /metrics reads come
        # over HTTP/1.1): few connections, not one per bind in flight
        h2 = [int(float(line.split()[-1])) for line in m.splitlines()
              if line.startswith('gantry_scheduler_connections_total{protocol="h2"}')]
        self.assertEqual(len(h2), 1, m)
        self.assertGreaterEqual(h2[0], 1)
        self.assertLessEqual(h2[0], 2)
        for name in ("good", "good-2", "good-3"):
            p.api("DELETE", "/api/v1/namespaces/%s/pods/%s?gracePeriodSeconds=0" % (NS, name))

    def test_2_without_a_client_certificate_nothing_is_bound(self):
        self.refused(None, "nocert", "no client certificate")

    def test_3_a_certificate_of_another_ca_is_refused(self):
        self.refused((self.f("other-client.crt"), self.f("other-client.key")), "otherca",
                     "client certificate signed by an unknown authority")


if __name__ == "__main__":
    cp.main()
