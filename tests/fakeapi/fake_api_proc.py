"""The FAKE Kubernetes API server (tests/fakeapi/fake_kube_apiserver.py) for
the tests of gantry-csi's node registry (ControllerPublishVolume's node IDs,
read from CSINode objects): seeds it from a dict and starts it through the
one starter the scheduler tests use (tests/scheduler/sched_harness.py)."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scheduler"))
import sched_harness  # noqa: E402


def start_fake(workdir, seed, token=sched_harness.canary.secret("api-token")):
    """A running sched_harness.FakeAPI serving the objects of @seed; the
    caller stops it."""
    path = os.path.join(workdir, "seed.json")
    with open(path, "w") as f:
        json.dump(seed, f)
    return sched_harness.FakeAPI(token, seed=path)


def csinode(name, node_id, driver="csi.gantry.io"):
    """A CSINode as kubelet writes it when @driver's node plugin registers."""
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": name},
            "spec": {"drivers": [{"name": "other.csi.io", "nodeID": "x-" + node_id},
                                 {"name": driver, "nodeID": node_id}]}}
