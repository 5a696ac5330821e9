"""gantry-scheduler fed by a (FAKE) Kubernetes API server.

tests/fakeapi/fake_kube_apiserver.py serves real-shaped lists and watches of
the objects in fixtures/state.json plus the captured pod; gantry-scheduler
follows it through a kubeconfig (bearer token), answers the captured
kube-scheduler bodies from what its informers saw, and binds through the
fake's pods/binding endpoint, which records the Binding.
"""
import copy
import json
import os
import tempfile
import threading
import shutil
import subprocess
import unittest

from sched_harness import FakeAPI, Scheduler, canary, fixture_json, wait_for, FIXTURES

FAKE = os.environ.get("GANTRY_FAKEAPI")
TOKEN = canary.secret("api-token")
NC_TRUE_FILTER = "nodecache-true-001-filter.json"


@unittest.skipUnless(FAKE, "GANTRY_FAKEAPI not set")
class ExtenderKubeTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gantry-sched-kube-%d-" % os.getpid())
        self.addCleanup(shutil.rmtree, self.tmp, True)
        state = json.load(open(os.path.join(FIXTURES, "state.json")))
        self.pod_args = fixture_json(NC_TRUE_FILTER)
        pod = copy.deepcopy(self.pod_args["Pod"])
        pod["metadata"]["annotations"] = {"gantry.io/dataset-read-gbps": "25"}
        pod["spec"]["volumes"].append({"name": "data",
                                       "persistentVolumeClaim": {"claimName": "train-data"}})
        self.pod = pod
        seed = {"nodes": state["nodes"], "storageclasses": state["storageClasses"],
                "persistentvolumes": state["persistentVolumes"],
                "persistentvolumeclaims": state["persistentVolumeClaims"], "pods": [pod]}
        seed_path = os.path.join(self.tmp, "seed.json")
        json.dump(seed, open(seed_path, "w"))
        self.fake = FakeAPI(TOKEN, seed=seed_path)
        self.addCleanup(self.fake.stop)
        kubeconfig = self.fake.write_kubeconfig(os.path.join(self.tmp, "kubeconfig"))
        self.s = Scheduler("--kubeconfig", kubeconfig, "--bind-timeout", "1", state=None).start()
        self.addCleanup(self.stop_scheduler)

    def stop_scheduler(self):
        self.assertEqual(self.s.stop(), 0)

    def restart_scheduler(self, *args):
        self.stop_scheduler()
        self.s = Scheduler("--kubeconfig", os.path.join(self.tmp, "kubeconfig"), *args,
                           state=None).start()

    def api_connections(self):
        """The local ports of gantry-scheduler's open connections to the fake."""
        out = subprocess.run(["ss", "-tnpH", "state", "established",
                              "( dport = :%d )" % self.fake.port],
                             capture_output=True, text=True, check=True).stdout
        return sorted(line.split()[2] for line in out.splitlines()
                      if "pid=%d," % self.s.proc.pid in line)

    def metric(self, name):
        return self.s.metric(name)

    def test_filter_from_informers_and_bind_through_api(self):
        args = copy.deepcopy(self.pod_args)
        args["Pod"] = self.pod
        status, r = self.s.post("filter", args)
        self.assertEqual(status, 200, r)
        self.assertEqual(r["FailedNodes"],
                         {"gpu-node-3": "leaf uplink full (pod needs 25 Gbps)"})
        md = self.pod["metadata"]
        status, r = self.s.post("bind", {"PodName": md["name"], "PodNamespace": md["namespace"],
                                         "PodUID": md["uid"], "Node": "gpu-node-1"})
        self.assertEqual((status, r), (200, {"Error": ""}))
        self.assertEqual(self.fake.get("/fake/bindings"),
                         [{"namespace": md["namespace"], "name": md["name"], "uid": md["uid"],
                           "node": "gpu-node-1"}])
        # the watch shows the pod bound: the reservation becomes a confirmed entry
        wait_for(lambda: self.metric("gantry_scheduler_reservations") == 0
                 and self.metric("gantry_scheduler_ledger_entries") == 1, what="watch to confirm")
        # a second bind of the same pod: refused, the running pod's entry stays charged
        status, r = self.s.post("bind", {"PodName": md["name"], "PodNamespace": md["namespace"],
                                         "PodUID": md["uid"], "Node": "gpu-node-2"})
        self.assertEqual(r["Error"], "already bound to gpu-node-1")
        self.assertEqual(self.metric("gantry_scheduler_reservations"), 0)
        self.assertEqual(self.metric("gantry_scheduler_ledger_entries"), 1)
        self.assertEqual(len(self.fake.get("/fake/bindings")), 1)

    def test_bind_of_unknown_pod_releases_its_reservation(self):
        status, r = self.s.post("bind", {"PodName": "ghost", "PodNamespace": "default",
                                         "PodUID": "00000000-0000-0000-0000-000000000000",
                                         "Node": "gpu-node-1"})
        self.assertEqual(status, 200)
        self.assertNotEqual(r["Error"], "")
        self.assertEqual(self.metric("gantry_scheduler_ledger_entries"), 0)
        self.assertEqual(self.fake.get("/fake/bindings"), [])

    def test_pending_pod_seen_only_by_the_watch_is_not_bound(self):
        # the watch sees every pending pod cluster-wide; only filter requests
        # tell which pods bind will see, so an unfiltered pod is sent back
        md = self.pod["metadata"]
        status, r = self.s.post("bind", {"PodName": md["name"], "PodNamespace": md["namespace"],
                                         "PodUID": md["uid"], "Node": "gpu-node-1"})
        self.assertEqual(r["Error"], "pod %s/%s: not seen in filter; retry" % (md["namespace"], md["name"]))
        self.assertEqual(self.metric("gantry_scheduler_ledger_entries"), 0)
        self.assertEqual(self.fake.get("/fake/bindings"), [])

    def test_bind_gives_up_on_a_slow_api_server(self):
        # the API server holds the Binding POST: the bind answers an error of
        # its own within --bind-timeout (below kube-scheduler's httpTimeout)
        # and gives the reservation back
        args = copy.deepcopy(self.pod_args)
        args["Pod"] = self.pod
        self.assertEqual(self.s.post("filter", args)[0], 200)
        self.fake.post("/fake/hold-bindings", {})
        md = self.pod["metadata"]
        status, r = self.s.post("bind", {"PodName": md["name"], "PodNamespace": md["namespace"],
                                         "PodUID": md["uid"], "Node": "gpu-node-1"})
        self.assertEqual(status, 200)
        self.assertIn("bind %s/%s to gpu-node-1: " % (md["namespace"], md["name"]), r["Error"])
        self.assertIn("timed out", r["Error"])
        self.assertEqual(self.metric("gantry_scheduler_reservations"), 0)
        self.assertEqual(self.metric("gantry_scheduler_ledger_entries"), 0)
        # the fake saw the client give up: nothing was bound
        wait_for(lambda: self.fake.get("/fake/state")["heldBindings"] == 0, what="held bind to end")
        self.fake.post("/fake/release-bindings", {})
        self.assertEqual(self.fake.get("/fake/bindings"), [])

    def test_a_bind_in_flight_does_not_block_a_filter(self):
        # one HTTP thread: a bind waiting on the API server must not hold it,
        # or kube-scheduler's next filter waits for that Binding round trip
        self.restart_scheduler("--bind-timeout", "30", "--threads", "1")
        args = copy.deepcopy(self.pod_args)
        args["Pod"] = self.pod
        self.assertEqual(self.s.post("filter", args)[0], 200)
        self.fake.post("/fake/hold-bindings", {})
        md = self.pod["metadata"]
        bound = []
        t = threading.Thread(target=lambda: bound.append(self.s.post("bind", {
            "PodName": md["name"], "PodNamespace": md["namespace"], "PodUID": md["uid"],
            "Node": "gpu-node-1"})))
        t.start()
        try:
            wait_for(lambda: self.fake.get("/fake/state")["heldBindings"] == 1,
                     what="the Binding POST to be held")
            status, r = self.s.post("filter", args)
            self.assertEqual(status, 200, r)
            # answered while the bind still waits on the API server
            self.assertEqual(self.fake.get("/fake/state")["heldBindings"], 1)
            self.assertEqual(bound, [])
        finally:
            self.fake.post("/fake/release-bindings", {})
            t.join(60)
        self.assertEqual(bound, [(200, {"Error": ""})])
        self.assertEqual(len(self.fake.get("/fake/bindings")), 1)

    def test_binds_at_once_reuse_their_connections(self):
        # 6 binds in flight at once, twice: the second wave finds the first
        # wave's 6 connections kept alive (curl's default cache of 5 closed
        # some, and each new one is a TLS handshake on both sides); 4 GPUs on
        # gpu-node-1 and -2, 6 on gpu-node-3
        self.restart_scheduler("--bind-timeout", "30")
        pods = []
        for i in range(12):
            # no dataset: no bandwidth to run out of on one node
            pod = copy.deepcopy(self.pod_args["Pod"])
            pod["metadata"].update(name="wave-%d" % i, uid="00000000-0000-0000-0001-%012d" % i)
            self.fake.post("/fake/objects/pods", pod)
            pods.append(pod)
        args = copy.deepcopy(self.pod_args)
        for pod in pods:
            args["Pod"] = pod
            wait_for(lambda: self.s.post("filter", args)[1].get("Error") == "",
                     what="the watch to show %s" % pod["metadata"]["name"])

        def wave(batch, nodes):
            self.fake.post("/fake/hold-bindings", {})
            out = []
            ts = [threading.Thread(target=lambda md=p["metadata"], n=n: out.append(
                self.s.post("bind", {"PodName": md["name"], "PodNamespace": md["namespace"],
                                     "PodUID": md["uid"], "Node": n})))
                  for p, n in zip(batch, nodes)]
            for t in ts:
                t.start()
            try:
                wait_for(lambda: self.fake.get("/fake/state")["heldBindings"] == len(batch),
                         what="%d Binding POSTs held at once" % len(batch))
            finally:
                self.fake.post("/fake/release-bindings", {})
                for t in ts:
                    t.join(60)
            self.assertEqual(out, [(200, {"Error": ""})] * len(batch))
            return self.api_connections()

        first = wave(pods[:6], ["gpu-node-1"] * 4 + ["gpu-node-3"] * 2)
        # the same sockets: none closed and opened again
        self.assertEqual(wave(pods[6:], ["gpu-node-2"] * 4 + ["gpu-node-3"] * 2), first)
        self.assertGreaterEqual(len(first), 6)
        self.assertEqual(len(self.fake.get("/fake/bindings")), 12)

    def test_nodes_added_later_are_seen(self):
        self.fake.post("/fake/objects/nodes", {
            "metadata": {"name": "gpu-node-4", "labels": {
                "network.topology.nvidia.com/leaf": "leaf-1", "gantry.io/nic-gbps": "10"}},
            "status": {"allocatable": {"nvidia.com/gpu": "8"}}})
        wait_for(lambda: self.metric("gantry_scheduler_nodes") == 4, what="node 4")
        args = copy.deepcopy(self.pod_args)
        args["Pod"] = self.pod
        args["NodeNames"] = ["gpu-node-4"]
        status, r = self.s.post("filter", args)
        self.assertEqual(r["FailedNodes"],
                         {"gpu-node-4": "node NIC full (pod needs 25 Gbps)"})


if __name__ == "__main__":
    unittest.main(verbosity=2)
