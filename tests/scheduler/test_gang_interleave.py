"""Gangs under kube-scheduler's real timing, against the real gantry-scheduler.

gang_driver.py replays how kube-scheduler calls an extender (interleaved
jobs, binds lagging behind filters, a sample of the nodes, failing binds);
gantry-scheduler follows the FAKE API server and binds through it. Checked
after every scheduling cycle: no NIC, leaf uplink, GPU count or backend over
capacity. Checked at the end of each run: every gang is bound whole or not
at all, and no reservation outlives its expiry.
"""
import os
import random
import time
import unittest

import gang_driver as gd

GANG_TTL = 20  # seconds: short, so expiry is seen within the test
# The expiry test waits the whole TTL: shorter there, still far above the
# gap between two calls of one gang (milliseconds; a second at worst under
# ASan on a loaded machine), which is what must not outlast it.
EXPIRY_TTL = 8


def wait_for(pred, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.05)
    raise AssertionError("timed out waiting for " + what)


def names_free(reason):
    """A reason that aggregates: no node or leaf name in it."""
    return "node-" not in reason and "leaf-" not in reason


@unittest.skipUnless(gd.FAKE, "GANTRY_FAKEAPI not set")
class GangInterleaveTest(unittest.TestCase):
    def world(self, fabric, gang_ttl=GANG_TTL, **kw):
        w = gd.World(fabric, gang_ttl=gang_ttl, **kw)
        self.addCleanup(w.close)
        return w

    def check(self, ks, sizes):
        bad = gd.over_capacity(ks)
        self.assertEqual(bad, [], "over capacity after cycle %d" % ks.cycles)
        bound, _ = gd.gangs_summary(ks, sizes)
        now = time.monotonic()
        for g, b in bound.items():
            if 0 < b < sizes[g]:
                # partly bound: only while its members are still being placed
                self.assertLessEqual(now - ks.activity.get(g, now), GANG_TTL,
                                     "gang %s partly bound (%d/%d) past its expiry" % (g, b, sizes[g]))

    def run_seed(self, seed):
        rng = random.Random(seed)
        # 12 leaves x 4 nodes x 8 GPUs, 400 Gbps NICs, 800 Gbps uplinks; the
        # backend feeds at most 40 pods of 100 Gbps: every kind of link binds
        fab = gd.Fabric(leaves=12, nodes_per_leaf=4, spines=3, backend_gbps=4000)
        w = self.world(fab)
        ks = gd.KubeScheduler(w, rng, max_lag=rng.randint(1, 4), bind_fail=0.1, pct=50)
        sizes, pods = {}, []
        for j in range(16):
            size = rng.choice([2, 4, 8, 8])
            sizes["job-%d" % j] = size
            gpus = rng.choice([1, 1, 2])
            pods += [gd.gang_pod("job-%d" % j, "job-%d-%d" % (j, i), size, 100, gpus=gpus)
                     for i in range(size)]
        rng.shuffle(pods)
        for p in pods:
            ks.add(p)
        restart_at = rng.randint(len(pods) // 3, len(pods))
        replaced = [0]

        def chaos():
            if ks.cycles == restart_at:
                ks.land_binds(all_now=True)  # kube-scheduler's binds fail while it is down
                w.restart_extender()
            if rng.random() < 0.03:
                inflight = {item[1] for item in ks.inflight}
                live = [n for n in ks.pods if n not in inflight]
                if live:
                    victim = ks.delete(rng.choice(sorted(live)))
                    g = gd.gang_of(victim)
                    replaced[0] += 1
                    ks.add(gd.gang_pod(g, "%s-r%d" % (g, replaced[0]), sizes[g],
                                       gd.gbps_of(victim), gpus=gd.gpus_of(victim)))

        ks.run(check=lambda: self.check(ks, sizes), on_cycle=chaos)
        bound, _ = gd.gangs_summary(ks, sizes)
        partial = {g: b for g, b in bound.items() if 0 < b < sizes[g]}
        self.assertEqual(partial, {}, "seed %d: gangs partly bound at the end" % seed)
        self.assertGreater(sum(1 for g, b in bound.items() if b == sizes[g]), 0)
        # what the fake API server bound is what the driver counted
        status, objs = w.fake.call("GET", "/fake/objects/pods")
        on_api = {o["metadata"]["name"]: o["spec"].get("nodeName") for o in objs
                  if o["spec"].get("nodeName")}
        self.assertEqual(on_api, ks.bound)
        # every refusal of a gang's member reads as one reason, without names
        for name, reasons in ks.reasons.items():
            if name in ks.pods and name not in ks.bound:
                self.assertEqual(len(reasons), 1, (name, reasons))
                self.assertTrue(all(names_free(r) for r in reasons), reasons)
        # nothing stays reserved: whole gangs hold nothing, the rest expires
        wait_for(lambda: w.metric("gantry_scheduler_gang_slots_held") == 0, GANG_TTL + 30,
                 "gang reservations to be used or expire")

    def test_interleavings_over_seeds(self):
        for seed in (1, 2, 3):
            with self.subTest(seed=seed):
                self.run_seed(seed)

    def test_reservation_of_a_gang_whose_members_never_come_expires(self):
        fab = gd.Fabric(leaves=2, nodes_per_leaf=4, spines=1)
        w = self.world(fab, gang_ttl=EXPIRY_TTL)
        ks = gd.KubeScheduler(w, random.Random(7), max_lag=2, pct=100)
        for i in range(5):  # 5 of 8 members exist
            ks.add(gd.gang_pod("short", "short-%d" % i, 8, 100))
        ks.run()
        self.assertEqual(len(ks.bound), 5)
        self.assertEqual(w.metric("gantry_scheduler_gang_slots_held"), 3)
        # the three missing places are held, so a whole gang of 8 cannot use
        # that leaf: it goes to the other one
        for i in range(8):
            ks.add(gd.gang_pod("whole", "whole-%d" % i, 8, 100))
        ks.run()
        _, leaves = gd.gangs_summary(ks, {"short": 8, "whole": 8})
        self.assertEqual(len(leaves["whole"]), 1)
        self.assertTrue(leaves["whole"].isdisjoint(leaves["short"]))
        wait_for(lambda: w.metric("gantry_scheduler_gang_slots_held") == 0, EXPIRY_TTL + 30,
                 "the reservation to expire")
        self.assertEqual(w.metric("gantry_scheduler_gangs_planned"), 0)

    def test_gang_that_does_not_fit_is_refused_whole_with_one_reason(self):
        fab = gd.Fabric(leaves=2, nodes_per_leaf=2, spines=1)
        w = self.world(fab)
        ks = gd.KubeScheduler(w, random.Random(3), max_lag=3, pct=100)
        pods = [gd.gang_pod("big", "big-%d" % i, 8, 250) for i in range(8)]
        for p in pods:
            ks.add(p)
        ks.run()
        self.assertEqual(ks.bound, {})
        reasons = set().union(*(ks.reasons[p["metadata"]["name"]] for p in pods))
        self.assertEqual(len(reasons), 1, reasons)
        reason = reasons.pop()
        self.assertTrue(reason.startswith("gang default/big: 8 pods need"), reason)
        self.assertIn("spread", reason)  # 2000 Gbps: more than the whole spine
        self.assertTrue(names_free(reason), reason)
        # each refusal is one log line carrying the gang, not two
        logs = w.ext.logs().splitlines()
        self.assertEqual([l for l in logs if "sched.filter_refused pod=default/big-" in l], [])
        refused = [l for l in logs if "sched.gang_refused pod=default/big-0 gang=default/big " in l]
        self.assertTrue(refused, "\n".join(logs[-20:]))
        self.assertIn("causes=gang:", refused[0])

    def test_size_from_the_owning_job(self):
        fab = gd.Fabric(leaves=3, nodes_per_leaf=2, spines=1)
        fab.extra = {"jobs": [{
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "idx", "namespace": gd.NS},
            "spec": {"completionMode": "Indexed", "completions": 4, "parallelism": 4,
                     "template": {"spec": {"containers": [{"name": "w", "image": "x"}]}}}}]}
        w = self.world(fab)
        ks = gd.KubeScheduler(w, random.Random(5), max_lag=3, pct=100)
        for i in range(4):
            ks.add(gd.gang_pod("idx", "idx-%d" % i, 4, 200, size_from="job"))
        ks.run()
        self.assertEqual(len(ks.bound), 4)
        _, leaves = gd.gangs_summary(ks, {"idx": 4})
        self.assertEqual(len(leaves["idx"]), 1)  # 800 Gbps: one leaf feeds it
        # placed as one gang of the Job's parallelism
        self.assertIn("gang=default/Job/idx", w.ext.logs())

    def workload_pod_group_world(self, min_count, fake_args=()):
        fab = gd.Fabric(leaves=3, nodes_per_leaf=2, spines=1)
        fab.extra = {"podgroups.scheduling.k8s.io": [{
            "apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
            "metadata": {"name": "pg", "namespace": gd.NS},
            "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}}}]}
        return self.world(fab, fake_args=fake_args)

    def test_size_from_kubernetes_own_pod_group(self):
        """Pods naming a scheduling.k8s.io PodGroup (spec.schedulingGroup) are
        one gang of its minCount: placed whole, on one leaf, keyed by it."""
        w = self.workload_pod_group_world(4)
        ks = gd.KubeScheduler(w, random.Random(7), max_lag=3, pct=100)
        for i in range(4):
            ks.add(gd.gang_pod("pg", "pg-%d" % i, 4, 200, size_from="podgroup"))
        ks.run()
        self.assertEqual(len(ks.bound), 4)
        _, leaves = gd.gangs_summary(ks, {"pg": 4})
        self.assertEqual(len(leaves["pg"]), 1)
        logs = w.ext.logs()
        self.assertIn("gang=default/PodGroup.scheduling.k8s.io/pg", logs)
        self.assertIn("sched.synced kind=PodGroup.scheduling.k8s.io", logs)

    def test_kubernetes_own_pod_groups_absent(self):
        """A cluster that does not serve scheduling.k8s.io/v1alpha2: one
        info line, no informer failure, and the pods are placed one by one."""
        w = self.workload_pod_group_world(4, fake_args=("--no-workload-api",))
        ks = gd.KubeScheduler(w, random.Random(7), max_lag=3, pct=100)
        for i in range(4):
            ks.add(gd.gang_pod("pg", "pg-%d" % i, 4, 200, size_from="podgroup"))
        ks.run()
        self.assertEqual(len(ks.bound), 4)
        logs = w.ext.logs()
        self.assertRegex(logs, r'level=info event=kube\.optional\.absent kinds=\S*'
                               r'PodGroup\.scheduling\.k8s\.io')
        self.assertNotIn("kube.informer.failed", logs)
        self.assertNotIn("level=warn event=kube.optional", logs)
        self.assertNotIn("gang=default/PodGroup.scheduling.k8s.io/pg", logs)


if __name__ == "__main__":
    unittest.main(verbosity=2)
