"""gantry-scheduler admits by each storage backend's effective capacity, with
StorageBackend states injected through the FAKE API server (a fake: the
states are faults put in on purpose; the real observer and the real Ceph
cluster are another test's).

- A gang that fits the healthy backend (4 x 8 Gbps of a 40 Gbps Ceph
  cluster) is refused whole while the backend is Recovering (40 x 0.65 =
  26 Gbps): the FailedNodes reason names the state only (kube-scheduler
  folds it), the log line and an Event on the pod name the backend and the
  numbers. Once the status is Healthy again the held pods are annotated
  (kube-scheduler requeues them) within seconds, and the gang is admitted.
- Placements made after the change never charge the backend past its
  effective capacity (gantry_backend_reserved_gbps <= effective).
- A status whose observedAt is older than --backend-stale-seconds is nominal
  capacity, with one warning and gantry_backend_stale 1; never zero.
- `gantryctl backends` shows the live state beside the reservations.
- Without the CRD (API discovery does not list storagebackends: the fake's
  /fake/serve) gantry-scheduler runs on nominal capacities, with one info
  line and no warning; once the CRD is applied, the next discovery re-check
  (--optional-recheck-seconds) starts the informer and a Recovering status
  lowers the effective capacity, without a restart; once the CRD is deleted,
  the capacity is nominal again.
"""
import datetime
import os
import re
import subprocess
import time
import unittest

import gang_driver as gd
from sched_harness import wait_for

DETAIL = "backend ceph-a recovering: 26 of 40 Gbps free (effective 26), gang needs 32 Gbps"


def rfc3339(seconds_ago=0.0):
    t = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(seconds=seconds_ago)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def storage_backend(state, seconds_ago=0.0, recovery=0, read=0):
    return {"apiVersion": "gantry.io/v1alpha1", "kind": "StorageBackend",
            "metadata": {"name": gd.BACKEND}, "spec": {"type": "ceph"},
            "status": {"state": state, "reason": "injected by the test",
                       "recoveryBytesPerSec": recovery, "clientReadBytesPerSec": read,
                       "degradedRatio": 0.1 if state != "Healthy" else 0,
                       "observedAt": rfc3339(seconds_ago), "observer": "test"}}


@unittest.skipUnless(gd.FAKE, "GANTRY_FAKEAPI not set")
class BackendStateTest(unittest.TestCase):
    def world(self, pods, extra_args=("--backend-stale-seconds", "30")):
        fab = gd.Fabric(leaves=1, nodes_per_leaf=4, backend_gbps=40)
        fab.extra = {"pods": pods}
        w = gd.World(fab, gang_ttl=120, extra_args=extra_args)
        self.addCleanup(w.close)
        return w

    def gauge(self, w, name):
        _, text = w.ext.request("GET", "/metrics")
        m = re.search(r'^%s\{backend="ceph-a"\} (\S+)$' % name, text.decode(), re.M)
        return float(m.group(1)) if m else None

    def set_state(self, w, obj):
        status, body = w.fake.call("POST", "/fake/objects/storagebackends", obj)
        self.assertIn(status, (200, 201), body)

    def filter(self, w, pod):
        return w.post("filter", {"Pod": pod, "NodeNames": [n for n, _ in w.fabric.nodes]})

    def bind(self, w, pod, node):
        md = pod["metadata"]
        return w.post("bind", {"PodName": md["name"], "PodNamespace": md["namespace"],
                               "PodUID": md["uid"], "Node": node})

    def check_within_effective(self, w):
        reserved = self.gauge(w, "gantry_backend_reserved_gbps")
        effective = self.gauge(w, "gantry_backend_effective_gbps")
        self.assertLessEqual(reserved, effective + 1e-6, "reserved %s > effective %s"
                             % (reserved, effective))

    def patched(self, w):
        """Names of the pods annotated (PATCHed) since the last DELETE /fake/requests."""
        return sorted(r["path"].rsplit("/", 1)[1] for r in w.fake.get("/fake/requests")
                      if r["method"] == "PATCH" and r["resource"] == "pods")

    def test_gang_held_while_recovering_and_placed_on_return(self):
        gang = [gd.gang_pod("train", "train-%d" % i, 4, 8) for i in range(4)]
        w = self.world(gang)
        self.assertEqual(self.gauge(w, "gantry_backend_effective_gbps"), 40)
        self.set_state(w, storage_backend("Recovering"))
        wait_for(lambda: self.gauge(w, "gantry_backend_effective_gbps") == 26,
                 what="effective capacity 26 Gbps")
        self.assertEqual(self.gauge(w, "gantry_backend_nominal_gbps"), 40)
        self.assertIn('gantry_backend_state{backend="ceph-a",state="Recovering"} 1',
                      w.ext.request("GET", "/metrics")[1].decode())
        # refused whole: the folded reason carries the state, not the numbers
        r = self.filter(w, gang[0])
        self.assertEqual(r["NodeNames"], [])
        reasons = set(r["FailedNodes"].values())
        self.assertEqual(len(reasons), 1, reasons)
        reason = reasons.pop()
        self.assertIn("gang default/train", reason)
        self.assertIn("(storage backend recovering)", reason)
        self.assertNotIn("ceph-a", reason)
        # the specifics: the log line and an Event on the held pod
        wait_for(lambda: DETAIL in w.ext.logs(), what="the log line with the backend's numbers")
        def event():
            evs = w.fake.get("/fake/objects/events")
            evs = evs.get("items", evs) if isinstance(evs, dict) else evs
            return [e for e in evs if e["involvedObject"]["name"] == "train-0"
                    and e["reason"] == "StorageBackendShort"]
        ev, = wait_for(event, what="the Event on the held pod")
        self.assertEqual(ev["message"], DETAIL)
        self.assertEqual(self.gauge(w, "gantry_backend_reserved_gbps"), 0)  # nothing held
        if os.environ.get("GANTRY_GANTRYCTL"):
            out = subprocess.run([os.environ["GANTRY_GANTRYCTL"], "backends", "--metrics",
                                  "http://127.0.0.1:%d/metrics" % w.ext.port],
                                 capture_output=True, text=True, timeout=30, check=True).stdout
            row, = [l.split() for l in out.splitlines() if l.startswith("ceph-a ")]
            # BACKEND STATE NOMINAL EFFECTIVE RESERVED FREE UNACCOUNTED RECOVERY
            self.assertEqual(row, ["ceph-a", "Recovering", "40.0", "26.0", "0.0", "26.0", "0.0",
                                   "0.0"], out)
        # the backend returns: the held pods (the pending pods that read
        # it) are requeued within seconds, not at kube-scheduler's flush
        w.fake.call("DELETE", "/fake/requests")
        self.assertEqual(self.patched(w), [])
        t0 = time.monotonic()
        self.set_state(w, storage_backend("Healthy"))
        wait_for(lambda: self.patched(w) == ["train-%d" % i for i in range(4)], timeout=10,
                 what="the held pods to be requeued")
        requeue_s = time.monotonic() - t0
        self.assertEqual(self.gauge(w, "gantry_backend_effective_gbps"), 40)
        for i, p in enumerate(gang):
            r = self.filter(w, p)
            self.assertEqual(len(r["NodeNames"]), 1, r)
            self.assertEqual(self.bind(w, p, r["NodeNames"][0])["Error"], "")
            self.check_within_effective(w)
        self.assertEqual(self.gauge(w, "gantry_backend_reserved_gbps"), 32)
        print("requeue after the backend's return: %.2f s" % requeue_s)

    def test_placements_after_the_change_stay_within_effective(self):
        solos = [gd.gang_pod("solo-%d" % i, "solo-%d" % i, 1, 8) for i in range(5)]
        w = self.world(solos)
        # 24 Gbps: 40 x 0.85 (Degraded) - 8 of recovery - 2 of someone else's reads
        self.set_state(w, storage_backend("Degraded", recovery=1e9, read=0.25e9))
        wait_for(lambda: self.gauge(w, "gantry_backend_effective_gbps") == 24,
                 what="effective capacity 24 Gbps")
        self.assertEqual(self.gauge(w, "gantry_backend_unaccounted_gbps"), 2)
        self.assertEqual(self.gauge(w, "gantry_backend_recovery_gbps"), 8)
        admitted = 0
        for p in solos:
            r = self.filter(w, p)
            if r["NodeNames"]:
                self.assertEqual(self.bind(w, p, r["NodeNames"][0])["Error"], "")
                admitted += 1
            else:
                self.assertEqual(set(r["FailedNodes"].values()),
                                 {"storage backend degraded (pod needs 8 Gbps)"})
            self.check_within_effective(w)
        self.assertEqual(admitted, 3)

    def test_stale_status_is_nominal(self):
        solos = [gd.gang_pod("solo-%d" % i, "solo-%d" % i, 1, 8) for i in range(5)]
        w = self.world(solos)
        # the observer is gone: its last word was Unavailable, 90 s ago
        self.set_state(w, storage_backend("Unavailable", seconds_ago=90))
        wait_for(lambda: self.gauge(w, "gantry_backend_stale") == 1, what="the status to be stale")
        self.assertEqual(self.gauge(w, "gantry_backend_effective_gbps"), 40)  # never zero
        self.assertEqual(w.ext.logs().count("event=sched.backend_stale"), 1)
        for p in solos:
            r = self.filter(w, p)
            if r["NodeNames"]:
                self.assertEqual(self.bind(w, p, r["NodeNames"][0])["Error"], "")
        self.assertEqual(self.gauge(w, "gantry_backend_reserved_gbps"), 40)
        # a fresh Unavailable admits nothing new; running pods stay
        self.set_state(w, storage_backend("Unavailable"))
        wait_for(lambda: self.gauge(w, "gantry_backend_stale") == 0, what="a fresh status")
        self.assertEqual(self.gauge(w, "gantry_backend_effective_gbps"), 0)
        self.assertEqual(self.gauge(w, "gantry_backend_reserved_gbps"), 40)
        # the fresh status ages past the bound: nominal again, on its own
        self.set_state(w, storage_backend("Unavailable", seconds_ago=28))
        wait_for(lambda: self.gauge(w, "gantry_backend_stale") == 1, timeout=10,
                 what="the status to go stale with time")
        self.assertEqual(self.gauge(w, "gantry_backend_effective_gbps"), 40)

    def wait_effective(self, w, gbps, what):
        """Waits (bounded) for the effective capacity; the log in the failure."""
        try:
            wait_for(lambda: self.gauge(w, "gantry_backend_effective_gbps") == gbps, timeout=30, what=what)
        except AssertionError as e:
            raise AssertionError("%s\n%s" % (e, w.ext.logs()[-3000:])) from None

    def test_crd_absent_at_start_then_applied_then_deleted(self):
        w = self.world([gd.gang_pod("solo", "solo", 1, 8)],
                       extra_args=("--backend-stale-seconds", "30", "--optional-recheck-seconds", "1"))
        self.set_state(w, storage_backend("Recovering"))
        w.fake.call("POST", "/fake/serve", {"resource": "storagebackends", "served": False})
        w.restart_extender()
        logs = w.ext.logs()
        self.assertEqual(len(re.findall(r"level=info event=kube\.optional\.absent kinds=\S*StorageBackend",
                                        logs)), 1, logs[-2000:])
        self.assertNotRegex(logs, r"level=(warn|error) event=(kube|sched)\.(optional|informer)", logs[-2000:])
        self.assertEqual(self.gauge(w, "gantry_backend_effective_gbps"), 40)
        r = self.filter(w, gd.gang_pod("solo", "solo", 1, 8))
        self.assertEqual(len(r["NodeNames"]), 4)

        # the CRD applied after gantry-scheduler started: no restart
        w.fake.call("POST", "/fake/serve", {"resource": "storagebackends", "served": True})
        self.wait_effective(w, 26, "the StorageBackend status to reach the model after a re-check")
        self.assertIn("event=kube.optional.served kind=StorageBackend", w.ext.logs())

        # and deleted: nominal capacity again, the informer stopped quietly
        w.fake.call("POST", "/fake/serve", {"resource": "storagebackends", "served": False})
        self.wait_effective(w, 40, "the backend to be nominal once its CRD went")
        logs = w.ext.logs()
        self.assertIn("event=kube.optional.gone kind=StorageBackend", logs)
        self.assertNotRegex(logs, r"level=(warn|error) event=(kube|sched)\.(optional|informer)", logs[-2000:])

if __name__ == "__main__":
    unittest.main(verbosity=2)
