"""gantry-scheduler's start against the FAKE API server: readiness and recovery.

- Until its informers have synced, gantry-scheduler serves /readyz 503 and
  answers every verb with an error (HTTP 503 + Error): kube-scheduler puts a
  pod whose extender call failed in its backoff queue (seconds), never in the
  unschedulable pool a refusal leads to (minutes). The fake holds the pod
  list to keep it syncing.
- A gang found partly bound at start is planned at once, before any call,
  ahead of a gang not yet started that would take its room; its pending
  members are then annotated (a pod update moves them out of kube-scheduler's
  unschedulable pool), before the other gangs' pending pods.
The fake is used here because it can hold a list on purpose; the same start
on the real control plane is tests/k8s's.
"""
import json
import os
import socket
import time
import unittest

import gang_driver as gd
from sched_harness import Scheduler, wait_for

REQUEUE_ANNOTATION = "gantry.io/requeued-at"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def bound(pod, node):
    pod["spec"]["nodeName"] = node
    pod["status"] = {"phase": "Running"}
    return pod


@unittest.skipUnless(gd.FAKE, "GANTRY_FAKEAPI not set")
class RecoveryTest(unittest.TestCase):
    def world(self, fabric, pods):
        fabric.extra = {"pods": pods}
        w = gd.World(fabric, gang_ttl=120)
        self.addCleanup(w.close)
        return w

    def filter_args(self, w, pod):
        return {"Pod": pod, "NodeNames": [n for n, _ in w.fabric.nodes]}

    def test_not_ready_answers_errors_until_synced(self):
        fab = gd.Fabric(leaves=1, nodes_per_leaf=2)
        pod = gd.gang_pod("solo", "solo-0", 1, 10)
        fab.extra = {"pods": [pod]}
        tmp_world = gd.World(fab)  # a full world for its fake and files ...
        self.addCleanup(tmp_world.close)
        tmp_world.conn.close()
        self.assertEqual(tmp_world.ext.stop(), 0)  # ... without its extender
        tmp_world.ext = tmp_world.conn = None
        fake = tmp_world.fake
        fake.call("POST", "/fake/hold-lists", {"resource": "pods", "count": 1})
        port = free_port()
        ext = Scheduler("--kubeconfig", tmp_world.kubeconfig, "--listen", "127.0.0.1:%d" % port,
                        topology=tmp_world.topology, state=None)
        self.addCleanup(lambda: self.assertEqual(ext.stop(), 0))
        ext.port = port

        def readyz():
            try:
                status, body = ext.request("GET", "/readyz")
                return status, body.decode()
            except OSError:
                return None, ""
        wait_for(lambda: readyz()[0] == 503, what="/readyz to answer 503")
        self.assertIn("not ready: syncing", readyz()[1])
        self.assertEqual(ext.metric("gantry_scheduler_ready"), 0)
        self.assertEqual(ext.request("GET", "/healthz")[0], 200)  # alive all along
        for verb in ("filter", "prioritize"):
            status, r = ext.post(verb, self.filter_args(tmp_world, pod))
            self.assertEqual(status, 503, r)
            self.assertIn("not ready", r["Error"])
        md = pod["metadata"]
        status, r = ext.post("bind", {"PodName": md["name"], "PodNamespace": md["namespace"],
                                      "PodUID": md["uid"], "Node": "node-0"})
        self.assertEqual(status, 503, r)
        self.assertEqual(fake.get("/fake/bindings"), [])
        fake.call("POST", "/fake/release-lists", {})
        wait_for(lambda: readyz()[0] == 200, what="/readyz to answer 200")
        self.assertEqual(ext.metric("gantry_scheduler_ready"), 1)
        status, r = ext.post("filter", self.filter_args(tmp_world, pod))
        self.assertEqual(status, 200, r)
        self.assertEqual(r["FailedNodes"], {})

    def test_partly_bound_gang_is_planned_at_once_and_requeued_first(self):
        # one leaf of 2 nodes x 8 GPUs: gang "a" (4 x 4 GPUs) has 2 members
        # bound on it, 8 GPUs left; gang "b" (2 x 4 GPUs) would fit there too
        fab = gd.Fabric(leaves=1, nodes_per_leaf=2)
        a = [gd.gang_pod("a", "a-%d" % i, 4, 10, gpus=4) for i in range(4)]
        b = [gd.gang_pod("b", "b-%d" % i, 2, 10, gpus=4) for i in range(2)]
        bound(a[0], "node-0")
        bound(a[1], "node-0")
        w = self.world(fab, a + b)
        # planned at once: before any filter, gang a holds its missing places
        self.assertEqual(w.metric("gantry_scheduler_gangs_planned"), 1)
        self.assertEqual(w.ext.request("GET", "/readyz")[0], 200)
        # gang b is refused: the room is a's
        r = w.post("filter", self.filter_args(w, b[0]))
        self.assertEqual(sorted(r["FailedNodes"]), ["node-0", "node-1"])
        self.assertIn("gang default/b", r["FailedNodes"]["node-0"])
        # a's pending members are admitted on their next filter, on node-1
        for p in a[2:]:
            r = w.post("filter", self.filter_args(w, p))
            self.assertEqual(r["NodeNames"], ["node-1"], r)
        # the pending members were annotated, a's before b's
        wait_for(lambda: len(self.patched(w)) == 4, what="the pending pods to be annotated")
        order = self.patched(w)
        self.assertEqual(sorted(order[:2]), ["a-2", "a-3"])
        self.assertEqual(sorted(order[2:]), ["b-0", "b-1"])
        pods = w.fake.get("/fake/objects/pods")
        pods = pods.get("items", pods) if isinstance(pods, dict) else pods
        a2, = [p for p in pods if p["metadata"]["name"] == "a-2"]
        self.assertIn(REQUEUE_ANNOTATION, a2["metadata"]["annotations"])

    def test_two_replicas_one_active_and_the_standby_takes_over(self):
        # gang "a" partly bound; two replicas elect on a Lease in the fake
        fab = gd.Fabric(leaves=1, nodes_per_leaf=2)
        a = [gd.gang_pod("a", "a-%d" % i, 4, 10, gpus=4) for i in range(4)]
        bound(a[0], "node-0")
        w = self.world(fab, a)
        w.conn.close()
        self.assertEqual(w.ext.stop(), 0)  # the world's own single extender
        w.ext = w.conn = None
        lease_args = ("--leader-elect", "--lease-namespace", "default", "--lease-duration", "3",
                      "--lease-renew-deadline", "2", "--lease-retry-period", "0.3")

        def replica(name):
            r = Scheduler("--kubeconfig", w.kubeconfig, "--identity", name, *lease_args,
                          topology=w.topology, state=None).start()
            self.addCleanup(r.stop)
            return r

        def ready(r):
            return r.request("GET", "/readyz")[0] == 200

        def holder():
            leases = w.fake.get("/fake/objects/leases")
            return leases[0]["spec"].get("holderIdentity") if leases else None

        first = replica("first")
        wait_for(lambda: ready(first), what="the first replica to lead")
        second = replica("second")
        self.assertEqual(holder(), "first")
        # the standby is synced, not ready, and answers errors
        status, body = second.request("GET", "/readyz")
        self.assertEqual((status, body.decode()),
                         (503, "not ready: standby: another replica holds the lease\n"))
        self.assertEqual(second.metric("gantry_scheduler_ready"), 0)
        self.assertEqual(first.metric("gantry_scheduler_ready"), 1)
        status, r = second.post("filter", self.filter_args(w, a[1]))
        self.assertEqual(status, 503, r)
        status, r = first.post("filter", self.filter_args(w, a[1]))
        self.assertEqual(status, 200, r)
        # the active one dies without a word: the standby waits for the
        # Lease to expire, then leads with the partly bound gang planned
        first.proc.kill()
        first.proc.wait()
        wait_for(lambda: ready(second), what="the standby to take over")
        self.assertEqual(holder(), "second")
        self.assertEqual(second.metric("gantry_scheduler_gangs_planned"), 1)
        status, r = second.post("filter", self.filter_args(w, a[1]))
        self.assertEqual(status, 200, r)
        self.assertEqual(len(r["NodeNames"]), 1)
        # a clean stop gives the Lease up: a new replica takes it at once
        third = replica("third")
        self.assertFalse(ready(third))
        self.assertEqual(second.stop(), 0)
        wait_for(lambda: ready(third), what="the third replica to take over")
        self.assertEqual(holder(), "third")

    def test_a_member_filtered_after_its_deletion_reserves_nothing(self):
        # kube-scheduler may pop a pod before its informer sees it deleted:
        # the filter comes after the watch's DELETED
        fab = gd.Fabric(leaves=1, nodes_per_leaf=2)
        a = [gd.gang_pod("a", "a-%d" % i, 2, 10, gpus=4) for i in range(2)]
        w = self.world(fab, a)
        for p in a:
            w.fake.call("DELETE", "/fake/objects/pods/default/" + p["metadata"]["name"])
        status, r = None, None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # the watch's DELETED reaches the extender
            w.conn.request("POST", "/filter", body=json.dumps(self.filter_args(w, a[0])).encode(),
                           headers={"Content-Type": "application/json"})
            resp = w.conn.getresponse()
            status, r = resp.status, json.loads(resp.read())
            if status != 200:
                break
            time.sleep(0.05)
        self.assertEqual(status, 404, r)
        self.assertIn("deleted", r["Error"])
        self.assertEqual(w.metric("gantry_scheduler_gangs_planned"), 0)
        self.assertEqual(w.metric("gantry_scheduler_gang_slots_held"), 0)

    def wait_gang_released(self, w, what):
        # well within --gang-ttl (120 s): the release must not wait for expiry
        wait_for(lambda: w.metric("gantry_scheduler_gangs_planned") == 0
                 and w.metric("gantry_scheduler_gang_slots_held") == 0, what, timeout=15)

    def test_a_bind_answered_404_gives_the_gang_reservation_back(self):
        # the API server answers the Binding 404 (the pod is gone; its
        # DELETED event may have passed): the member leaves its gang, and a
        # gang with no member left releases its reservation at once
        fab = gd.Fabric(leaves=1, nodes_per_leaf=2)
        a = [gd.gang_pod("a", "a-%d" % i, 2, 10, gpus=4) for i in range(2)]
        w = self.world(fab, a)
        r = w.post("filter", self.filter_args(w, a[0]))
        node = r["NodeNames"][0]
        self.assertEqual(w.metric("gantry_scheduler_gangs_planned"), 1)
        w.fake.call("POST", "/fake/fail", {"verb": "create", "resource": "pods/binding",
                                           "status": 404, "count": 1})
        md = a[0]["metadata"]
        r = w.post("bind", {"PodName": md["name"], "PodNamespace": md["namespace"],
                            "PodUID": md["uid"], "Node": node})
        self.assertNotEqual(r["Error"], "")
        self.wait_gang_released(w, "gang a released after its only member's 404")
        self.assertEqual(w.metric("gantry_scheduler_ledger_entries"), 0)

    def test_a_bind_after_the_deletion_keeps_no_member_that_holds_the_gang(self):
        # kube-scheduler binds a pod its cache still holds after the watch
        # showed it deleted, while a live member keeps the gang planned;
        # once that member is deleted too, nothing may hold the leaf
        fab = gd.Fabric(leaves=1, nodes_per_leaf=2)
        a = [gd.gang_pod("a", "a-%d" % i, 2, 10, gpus=4) for i in range(2)]
        w = self.world(fab, a)
        nodes = [w.post("filter", self.filter_args(w, p))["NodeNames"][0] for p in a]
        w.fake.call("DELETE", "/fake/objects/pods/default/a-1")
        wait_for(lambda: w.post("filter", self.filter_args(w, a[1]), errors_ok=True)[0] == 404,
                 "the watch's DELETED of a-1 reaches the extender", timeout=30)
        self.assertEqual(w.metric("gantry_scheduler_gangs_planned"), 1)  # a-0 lives: kept whole
        md = a[1]["metadata"]
        r = w.post("bind", {"PodName": md["name"], "PodNamespace": md["namespace"],
                            "PodUID": md["uid"], "Node": nodes[1]})
        self.assertIn("deleted", r["Error"])
        self.assertEqual(w.fake.get("/fake/bindings"), [])
        self.assertEqual(w.metric("gantry_scheduler_gangs_planned"), 1)
        w.fake.call("DELETE", "/fake/objects/pods/default/a-0")
        self.wait_gang_released(w, "gang a released once all its pods are deleted")

    def test_watches_that_break_mid_run(self):
        # kube-scheduler's interleaving (gang_driver) while the fake cuts
        # every watch twice, once after forgetting its history (410: a re-list)
        import random
        rng = random.Random(27)
        fab = gd.Fabric(leaves=8, nodes_per_leaf=4, spines=2)
        w = self.world(fab, [])
        ks = gd.KubeScheduler(w, rng, max_lag=3, pct=50)
        sizes, pods = {}, []
        for j in range(12):
            sizes["job-%d" % j] = 8
            pods += [gd.gang_pod("job-%d" % j, "job-%d-%d" % (j, i), 8, 100) for i in range(8)]
        rng.shuffle(pods)
        for p in pods:
            ks.add(p)
        watches = w.fake.get("/fake/state")["watches"]

        def chaos():
            if ks.cycles in (20, 45):
                w.fake.call("POST", "/fake/drop", {})
            if ks.cycles == 70:
                w.fake.call("POST", "/fake/compact", {})
                w.fake.call("POST", "/fake/drop", {})

        def check():
            self.assertEqual(gd.over_capacity(ks), [], "over capacity after cycle %d" % ks.cycles)
        ks.run(check=check, on_cycle=chaos)
        self.assertGreaterEqual(ks.cycles, 70)
        bound, _ = gd.gangs_summary(ks, sizes)
        self.assertEqual({g: b for g, b in bound.items() if 0 < b < 8}, {})
        self.assertGreater(sum(1 for b in bound.values() if b == 8), 0)
        status, objs = w.fake.call("GET", "/fake/objects/pods")
        self.assertEqual({o["metadata"]["name"]: o["spec"].get("nodeName") for o in objs
                          if o["spec"].get("nodeName")}, ks.bound)
        # the watches were cut and opened again, and the extender answers
        wait_for(lambda: w.fake.get("/fake/state")["watches"] > watches + 7,
                 what="the watches to be opened again")
        self.assertEqual(w.ext.request("GET", "/readyz")[0], 200)

    def patched(self, w):
        return [r["path"].rsplit("/", 1)[1] for r in w.fake.get("/fake/requests")
                if r["verb"] == "patch" and r["resource"] == "pods"]


if __name__ == "__main__":
    unittest.main(verbosity=2)
