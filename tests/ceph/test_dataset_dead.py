"""A stopped Ceph cluster gives the CO an error within the deadline, never a
hang: through a cached connection, through a fresh one, for Probe, and
while the other cluster keeps serving; once the cluster is back the same
plugin serves it again. Runs last in the label: it stops and restarts the
fixture's "capa" cluster."""
import os
import subprocess
import time
import unittest

import grpc

import ceph_env as env
from ceph_env import Plugin, csi_pb2

CLIENT_TIMEOUT = 90  # far above the plugin's own bound (rbdTimeoutSeconds 5 per librados call)


class DeadClusterTest(unittest.TestCase):
    def plugin(self):
        p = Plugin(mode="controller", node_id=None, config=env.CONFIG)
        self.addCleanup(p.cleanup)
        self.addCleanup(p.stop)
        return p.start()

    def assertServerError(self, fn):
        """The call fails with UNAVAILABLE or DEADLINE_EXCEEDED answered by the
        plugin (its message names Ceph), not the client giving up."""
        with self.assertRaises(grpc.RpcError) as cm:
            fn()
        e = cm.exception
        self.assertIn(e.code(), (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED),
                      e.details())
        self.assertNotEqual(e.details(), "Deadline Exceeded", "the client gave up: a hang")
        self.assertRegex(e.details(), "Ceph|cluster", e.details())

    def test_stopped_cluster(self):
        warm = self.plugin()
        vol = warm.call("CreateVolume", env.create_req("dead-%s" % env.UNIQUE, "capa"),
                        timeout=CLIENT_TIMEOUT).volume
        self.assertTrue(warm.call("Probe").ready.value)
        subprocess.run(["bash", os.path.join(env.HERE, "cluster.sh"), "stop",
                        os.path.join(env.DIR, "capa")], check=True, timeout=120)

        self.assertServerError(lambda: warm.call(
            "CreateVolume", env.create_req("dead2-%s" % env.UNIQUE, "capa"),
            timeout=CLIENT_TIMEOUT))
        self.assertServerError(lambda: warm.call(
            "DeleteVolume", env.delete_req(vol.volume_id, "capa"), timeout=CLIENT_TIMEOUT))
        self.assertServerError(lambda: warm.call(
            "GetCapacity", csi_pb2.GetCapacityRequest(parameters=env.params("capa")),
            timeout=CLIENT_TIMEOUT))
        self.assertFalse(warm.call("Probe", timeout=CLIENT_TIMEOUT).ready.value)
        # the other cluster is not held up by the dead one
        other = warm.call("CreateVolume", env.create_req("alive-%s" % env.UNIQUE, "perf"),
                          timeout=CLIENT_TIMEOUT).volume
        warm.call("DeleteVolume", env.delete_req(other.volume_id), timeout=CLIENT_TIMEOUT)

        cold = self.plugin()  # no cached connection: the connect itself must be bounded
        self.assertServerError(lambda: cold.call(
            "CreateVolume", env.create_req("dead3-%s" % env.UNIQUE, "capa"),
            timeout=CLIENT_TIMEOUT))
        self.assertFalse(cold.call("Probe", timeout=CLIENT_TIMEOUT).ready.value)

        # the cluster comes back: the plugin that saw it die serves it again
        subprocess.run(["bash", os.path.join(env.HERE, "cluster.sh"), "restart",
                        os.path.join(env.DIR, "capa")], check=True, timeout=400,
                       stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while not warm.call("Probe", timeout=CLIENT_TIMEOUT).ready.value:
            self.assertLess(time.monotonic(), deadline, "Probe never turned ready again")
            time.sleep(1)
        # the connection Probe found broken is shut down once its last user let it
        # go, not leaked (a rados handle and its threads per failed probe)
        log = warm.read_log()
        self.assertRegex(log, r"event=ceph\.disconnected cluster=capa user=\S+ reason=invalidated",
                         "the invalidated rados connection was never shut down")
        self.assertEqual(log.count("event=ceph.disconnected cluster=capa"),
                         log.count("event=ceph.connected cluster=capa") - 1,
                         "every connection but the live one is shut down")
        back = env.retry(lambda: warm.call("CreateVolume", env.create_req(
            "back-%s" % env.UNIQUE, "capa"), timeout=CLIENT_TIMEOUT)).volume
        for vid in (back.volume_id, vol.volume_id):
            env.retry(lambda: warm.call("DeleteVolume", env.delete_req(vid, "capa"),
                                        timeout=CLIENT_TIMEOUT))
        env.assert_consistent(self, "capa")


if __name__ == "__main__":
    unittest.main()
