"""The harness itself, on the real control plane: nodes in bulk, a pod
placed by the real kube-scheduler, a ServiceAccount token that the real
authorizer holds to its RBAC, and an API server restart survived."""
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import control_plane as cp  # noqa: E402

SCHEDULER = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
"""
NODES = 300


class ControlPlaneTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.plane = cp.ControlPlane("harness", controllers=True, scheduler_config=SCHEDULER)
        cls.plane.start()
        cls.plane.create_nodes(["node-%03d" % i for i in range(NODES)],
                               labels=lambda n: {"rack": "r%d" % (int(n[5:]) % 4)},
                               capacity={"nvidia.com/gpu": "8"})

    @classmethod
    def tearDownClass(cls):
        cls.plane.stop()

    def test_nodes_created(self):
        nodes = self.plane.api("GET", "/api/v1/nodes?labelSelector=rack%3Dr1")["items"]
        self.assertEqual(len(nodes), NODES // 4)
        self.assertEqual(nodes[0]["status"]["allocatable"]["nvidia.com/gpu"], "8")
        self.assertNotIn("taints", nodes[0]["spec"])

    def test_pod_scheduled(self):
        p = self.plane
        # kube-controller-manager makes the namespace's default ServiceAccount
        p.ensure_namespace("sched")
        cp.wait_for(lambda: p.api("GET", "/api/v1/namespaces/sched/serviceaccounts/default"),
                    60, "the default ServiceAccount")
        p.api("POST", "/api/v1/namespaces/sched/pods", {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"nodeSelector": {"rack": "r2"}, "containers": [{
                "name": "c", "image": "none",
                "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}})
        node = cp.wait_for(lambda: p.api("GET", "/api/v1/namespaces/sched/pods/p")
                           ["spec"].get("nodeName"), 60, "the pod to be bound")
        self.assertEqual(int(node[5:]) % 4, 2)
        p.api("DELETE", "/api/v1/namespaces/sched/pods/p?gracePeriodSeconds=0")

    def test_sa_token_rbac(self):
        p = self.plane
        kc = p.sa_kubeconfig("rbac", "reader")
        kubectl = os.path.join(p.bin, "kubectl")
        r = subprocess.run([kubectl, "--kubeconfig", kc, "get", "nodes"], capture_output=True,
                           text=True, timeout=60)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("forbidden", r.stderr)
        p.kubectl("create", "clusterrole", "node-reader", "--verb=list", "--resource=nodes")
        p.kubectl("create", "clusterrolebinding", "node-reader", "--clusterrole=node-reader",
                  "--serviceaccount=rbac:reader")
        out = cp.wait_for(lambda: subprocess.run(
            [kubectl, "--kubeconfig", kc, "get", "nodes", "-o", "name"], capture_output=True,
            text=True, timeout=60).stdout, 30, "the SA to list nodes")
        self.assertEqual(len(out.split()), NODES)

    def test_zz_apiserver_restart(self):
        p = self.plane
        p.stop_proc("kube-apiserver")
        with self.assertRaises(OSError):
            p.api("GET", "/api/v1/nodes?limit=1")
        p.start_proc("kube-apiserver")
        self.assertEqual(len(p.api("GET", "/api/v1/nodes")["items"]), NODES)


class ForbiddenPatternTest(unittest.TestCase):
    """csi_stack.forbidden()'s pattern: the authorizer's refusals as Go
    clients and gantry-csi log them, not a 422's "Forbidden:" nor a
    resourceVersion 403."""

    def test_pattern(self):
        import csi_stack
        refused = [
            'leases.coordination.k8s.io "snapshot-controller-leader" is forbidden: User '
            '"system:serviceaccount:kube-system:snapshot-controller" cannot get resource "leases"',
            "event=tier.copy_state_dropped pv=pvc-1 reason=forbidden",
            "GET /apis/storage.k8s.io/v1/csinodes/x: HTTP 403"]
        fine = [
            'PersistentVolume "pvc-1" is invalid: metadata.finalizers: Forbidden: no new '
            'finalizers can be added if the object is being deleted',
            'storeObjectUpdate updating snapshot "story1/snap" with version 403']
        for line in refused:
            self.assertTrue(csi_stack.FORBIDDEN.search(line), line)
        for line in fine:
            self.assertFalse(csi_stack.FORBIDDEN.search(line), line)


if __name__ == "__main__":
    cp.main()
