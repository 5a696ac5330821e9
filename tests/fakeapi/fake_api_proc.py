"""Starts the FAKE Kubernetes API server (tests/fakeapi/fake_kube_apiserver.py,
path in $GANTRY_FAKEAPI) for a test, seeded with objects, and writes a
kubeconfig for it. Shared by the tests of gantry-csi's node registry
(ControllerPublishVolume's node IDs, read from CSINode objects)."""
import json
import os
import select
import signal
import subprocess
import sys
import time


class FakeAPI:
    """The FAKE Kubernetes API server of tests/fakeapi, seeded with @seed."""

    def __init__(self, workdir, seed, token="tok-registry"):
        path = os.path.join(workdir, "seed.json")
        with open(path, "w") as f:
            json.dump(seed, f)
        self.token = token
        self.proc = subprocess.Popen([sys.executable, os.environ["GANTRY_FAKEAPI"], "--token", token,
                                      "--seed", path, "--max-seconds", "600"],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        line, deadline = b"", time.monotonic() + 20
        while b"ready port=" not in line:
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self.stop()
                raise RuntimeError("fake API server did not start: %r" % line)
            if select.select([self.proc.stdout], [], [], 0.5)[0]:
                line = self.proc.stdout.readline()
        self.base = "http://127.0.0.1:%d" % int(line.split(b"port=")[1])

    def kubeconfig(self, path):
        with open(path, "w") as f:
            f.write("apiVersion: v1\nkind: Config\ncurrent-context: fake\n"
                    "clusters:\n- name: fake\n  cluster:\n    server: %s\n"
                    "users:\n- name: ctl\n  user:\n    token: %s\n"
                    "contexts:\n- name: fake\n  context:\n    cluster: fake\n    user: ctl\n"
                    % (self.base, self.token))
        return path

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()


def csinode(name, node_id, driver="csi.gantry.io"):
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": name},
            "spec": {"drivers": [{"name": "other.csi.io", "nodeID": "x-" + node_id},
                                 {"name": driver, "nodeID": node_id}]}}
