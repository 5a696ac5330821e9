"""User story 5 on a real control plane: storage capacity tracking as the
manifests configure it (CSIDriver storageCapacity: true, csi-provisioner
--enable-capacity). CSIStorageCapacity objects appear per StorageClass and
leaf, owned by the Deployment: per pool for dataset classes (the pool's
max_avail as Ceph reports it) and per target leaf for checkpoint classes
(two gantry-target processes, no kernel target, one leaf each, on file
systems of different free space). kube-scheduler then does not place a
WaitForFirstConsumer claim where it does not fit: a checkpoint PVC too big
for one leaf's target goes to the other leaf, a dataset PVC too big for the
pool is placed nowhere, and the reasons are in the pod's condition."""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "gantry-target"))
import control_plane as cp  # noqa: E402
import csi_stack  # noqa: E402
from csi_stack import NS  # noqa: E402
from test_dataset_story import LEAF_KEY, add_gpu_node, storage_classes  # noqa: E402

USER_NS = "story5"
NODES = {"gpu-a": "leaf-1", "gpu-b": "leaf-2"}
CAPACITIES = "/apis/storage.k8s.io/v1/namespaces/%s/csistoragecapacities" % NS


env = csi_stack.ceph_env


def quantity(q):
    """Bytes of a Kubernetes quantity as the provisioner writes them."""
    units = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40, "Pi": 1 << 50,
             "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}
    for u, m in units.items():
        if q.endswith(u):
            return int(q[:-len(u)]) * m
    return int(q)


def pool_max_avail(pool):
    df = json.loads(env().tool("ceph", "perf", "df", "--format", "json"))
    return [p for p in df["pools"] if p["name"] == pool][0]["stats"]["max_avail"]


def free_bytes(path):
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


class CapacityStory(csi_stack.StoryTest):
    USER_NS = USER_NS
    TAG = "k8s_capacity"

    @classmethod
    def set_up_story(cls, p):
        e = env()
        # one target per leaf: leaf-1's on the build disk, leaf-2's on /dev/shm
        cls.config = cls.start_targets(
            [("t1", "leaf-1", "127.0.0.1", None, {}),
             ("t2", "leaf-2", "127.0.0.2", "/dev/shm/gantry-k8s-target-%d" % os.getpid(), {})],
            e.CONFIG)
        for node, leaf in NODES.items():
            add_gpu_node(p, node, leaf)
        cls.stack = csi_stack.CsiStack(p, cls.config)
        cls.stack.apply_objects()
        csi_stack.ceph_secret(p, "gantry-ceph-perf", e.secrets("perf"))
        classes = storage_classes("perf", "gantry-ceph-perf")
        # per pool: a second dataset class with its data in the replicated pool
        rbd_only = json.loads(json.dumps([c for c in classes if c["metadata"]["name"] ==
                                          "gantry-dataset"][0]))
        rbd_only["metadata"]["name"] = "gantry-dataset-rbd"
        del rbd_only["parameters"]["dataPool"]
        # sparse: the claim placed on the big leaf must not fill the disk
        thin = json.loads(json.dumps([c for c in classes if c["metadata"]["name"] ==
                                      "gantry-checkpoint"][0]))
        thin["metadata"]["name"] = "gantry-checkpoint-thin"
        thin["parameters"]["thinProvision"] = "true"
        csi_stack.apply(p, classes + [rbd_only, thin])
        return cls.stack

    # --- helpers --------------------------------------------------------
    def capacities(self):
        """{(storageClassName, leaf): CSIStorageCapacity} once every WFFC class
        of the driver has one per leaf."""
        want = {(sc, leaf) for sc in ("gantry-dataset", "gantry-dataset-rbd", "gantry-checkpoint",
                                      "gantry-checkpoint-thin") for leaf in NODES.values()}

        def ready():
            got = {}
            for c in self.plane.api("GET", CAPACITIES)["items"]:
                if "capacity" not in c:
                    continue
                leaf = c["nodeTopology"]["matchLabels"].get(LEAF_KEY)
                got[(c["storageClassName"], leaf)] = c
            return got if want <= set(got) else None
        return cp.wait_for(ready, 120, "CSIStorageCapacity per class and leaf", 1)

    def claim_and_pod(self, name, sc, size, node_selector=None):
        p = self.plane
        p.api("POST", self.ns("persistentvolumeclaims"), {
            "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
            "spec": {"accessModes": ["ReadWriteOnce" if "checkpoint" in sc else "ReadOnlyMany"],
                     "storageClassName": sc, "resources": {"requests": {"storage": size}}}})
        spec = {"containers": [{"name": "c", "image": "none"}],
                "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": name}}]}
        if node_selector:
            spec["nodeSelector"] = node_selector
        p.api("POST", self.ns("pods"), {"apiVersion": "v1", "kind": "Pod",
                                        "metadata": {"name": name}, "spec": spec})

    def unschedulable(self, pod, why):
        """The pod's Unschedulable condition once its message says @why: an
        earlier attempt may have been refused for another reason (the
        scheduler's cache had not yet seen the claim: "persistentvolumeclaim
        ... not found"), and kube-scheduler rewrites the message on retry."""
        def cond():
            o = self.plane.api("GET", self.ns("pods/" + pod))
            for c in o["status"].get("conditions", []):
                if c["type"] == "PodScheduled" and c["status"] == "False" and \
                        c.get("reason") == "Unschedulable" and why in c.get("message", ""):
                    return c
            return None
        return cp.wait_for(cond, 60, "pod %s to be Unschedulable: %s" % (pod, why))

    def delete(self, *names):
        for n in names:
            self.plane.api("DELETE", self.ns("pods/%s?gracePeriodSeconds=0" % n))
            self.plane.api("DELETE", self.ns("persistentvolumeclaims/" + n))

    # --- the story ------------------------------------------------------
    def test_1_objects_per_pool_and_leaf(self):
        caps = self.capacities()
        for (sc, leaf), c in caps.items():
            owner = c["metadata"]["ownerReferences"][0]
            self.assertEqual((owner["kind"], owner["name"]), ("Deployment", "gantry-controller"))
        # dataset classes: the pool's room as Ceph says, whatever the leaf
        for sc, pool in (("gantry-dataset", "ecdata"), ("gantry-dataset-rbd", "rbd")):
            want = pool_max_avail(pool)
            for leaf in NODES.values():
                got = quantity(caps[(sc, leaf)]["capacity"])
                self.assertAlmostEqual(got / want, 1.0, delta=0.05, msg=(sc, leaf, got, want))
        self.assertNotEqual(caps[("gantry-dataset", "leaf-1")]["capacity"],
                            caps[("gantry-dataset-rbd", "leaf-1")]["capacity"])
        # checkpoint classes: the free space of the leaf's target, its largest volume
        for leaf, t in (("leaf-1", self.targets[0]), ("leaf-2", self.targets[1])):
            c = caps[("gantry-checkpoint", leaf)]
            want = free_bytes(t.dir)
            self.assertAlmostEqual(quantity(c["capacity"]) / want, 1.0, delta=0.05,
                                   msg=(leaf, c, want))
            self.assertAlmostEqual(quantity(c["maximumVolumeSize"]) / want, 1.0, delta=0.05)
        self.stack_ok()

    def test_2_checkpoint_too_big_for_a_leaf(self):
        caps = self.capacities()
        room = {leaf: quantity(caps[("gantry-checkpoint-thin", leaf)]["maximumVolumeSize"])
                for leaf in NODES.values()}
        small, big = sorted(room, key=room.get)
        if room[big] < room[small] * 1.5:
            self.skipTest("the two targets' file systems have about the same room: %s" % room)
        size = "%dGi" % ((room[small] + room[big]) // 2 >> 30)
        self.claim_and_pod("ckpt-small", "gantry-checkpoint-thin", size, {LEAF_KEY: small})
        self.unschedulable("ckpt-small", "did not have enough free storage")
        pvc = self.plane.api("GET", self.ns("persistentvolumeclaims/ckpt-small"))
        self.assertNotIn("volume.kubernetes.io/selected-node",
                         pvc["metadata"].get("annotations", {}))
        self.assertEqual(pvc["status"]["phase"], "Pending")
        self.delete("ckpt-small")
        # the same claim without a node selector: placed on the leaf with room
        self.claim_and_pod("ckpt-any", "gantry-checkpoint-thin", size)
        node = cp.wait_for(lambda: self.plane.api("GET", self.ns("pods/ckpt-any"))["spec"]
                           .get("nodeName"), 60, "pod ckpt-any to be bound")
        self.assertEqual(NODES[node], big)
        pv_name = cp.wait_for(lambda: self.plane.api(
            "GET", self.ns("persistentvolumeclaims/ckpt-any"))["spec"].get("volumeName"), 120,
            "PVC ckpt-any to be bound")
        pv = self.plane.api("GET", "/api/v1/persistentvolumes/" + pv_name)
        self.assertEqual(pv["spec"]["csi"]["volumeAttributes"]["targetID"],
                         "t1" if big == "leaf-1" else "t2")
        self.delete("ckpt-any")
        cp.wait_for(lambda: not [v for v in self.plane.api("GET", "/api/v1/persistentvolumes")
                                 ["items"] if v["metadata"]["name"] == pv_name], 120,
                    "the PV to be deleted")
        self.stack_ok()

    def test_3_dataset_too_big_for_the_pool(self):
        caps = self.capacities()
        room = quantity(caps[("gantry-dataset", "leaf-1")]["capacity"])
        self.claim_and_pod("data-huge", "gantry-dataset", "%dGi" % ((2 * room >> 30) + 1))
        c = self.unschedulable("data-huge", "did not have enough free storage")
        self.assertIn("2 node(s)", c["message"])
        self.assertEqual(self.plane.api("GET", "/api/v1/persistentvolumes")["items"], [])
        self.delete("data-huge")
        self.stack_ok()

    def stack_ok(self):
        self.assertEqual(self.stack.dead(), [])
        bad = self.stack.forbidden()
        self.assertEqual(bad, [], "403s in the logs:\n" + "\n".join(bad[:20]))


if __name__ == "__main__":
    cp.main()
