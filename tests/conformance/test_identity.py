"""Conformance of gantry-csi's gRPC surface, driven over its Unix socket by
python3-grpcio: the Identity calls, UNIMPLEMENTED for what a mode does not
serve, bad input, many concurrent calls, the command line, and a stale
socket left by a crash."""
import concurrent.futures
import os
import socket
import subprocess
import unittest

import grpc

import csi_client
from csi_client import Plugin, csi_pb2


def version():
    out = subprocess.run([csi_client.binary(), "--version"], capture_output=True, text=True,
                         timeout=10, check=True).stdout
    return out.split()[1]


class IdentityTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.plugin = Plugin(mode="controller", node_id=None).start()

    @classmethod
    def tearDownClass(cls):
        rc = cls.plugin.stop()
        cls.plugin.cleanup()
        if rc != 0:
            raise AssertionError("plugin exited %s on SIGTERM" % rc)

    def test_plugin_info(self):
        info = self.plugin.call("GetPluginInfo")
        self.assertEqual(info.name, "csi.gantry.io")
        self.assertEqual(info.vendor_version, version())

    def test_capabilities(self):
        caps = self.plugin.call("GetPluginCapabilities").capabilities
        services = {c.service.type for c in caps if c.WhichOneof("type") == "service"}
        expansion = {c.volume_expansion.type for c in caps
                     if c.WhichOneof("type") == "volume_expansion"}
        svc = csi_pb2.PluginCapability.Service
        self.assertIn(svc.CONTROLLER_SERVICE, services)
        self.assertIn(svc.VOLUME_ACCESSIBILITY_CONSTRAINTS, services)
        self.assertEqual(expansion, {csi_pb2.PluginCapability.VolumeExpansion.ONLINE})

    def test_probe_ready_without_backends(self):
        self.assertTrue(self.plugin.call("Probe").ready.value)

    def test_node_methods_unimplemented_in_controller_mode(self):
        for method in ("NodeStageVolume", "NodeGetInfo", "NodeGetCapabilities"):
            with self.assertRaises(grpc.RpcError) as cm:
                self.plugin.call(method)
            self.assertEqual(cm.exception.code(), grpc.StatusCode.UNIMPLEMENTED, method)
            self.assertIn(method, cm.exception.details())

    def test_group_controller_unimplemented(self):
        with self.assertRaises(grpc.RpcError) as cm:
            self.plugin.call("GroupControllerGetCapabilities")
        self.assertEqual(cm.exception.code(), grpc.StatusCode.UNIMPLEMENTED)

    def test_garbage_payload_is_invalid_argument(self):
        stub = self.plugin.channel.unary_unary(
            "/csi.v1.Identity/GetPluginInfo",
            request_serializer=lambda b: b,
            response_deserializer=csi_pb2.GetPluginInfoResponse.FromString)
        with self.assertRaises(grpc.RpcError) as cm:
            stub(b"\xff\xff\xff\xff\x0f", timeout=10)
        self.assertEqual(cm.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("GetPluginInfoRequest", cm.exception.details())

    def test_unknown_method_is_unimplemented(self):
        stub = self.plugin.channel.unary_unary("/csi.v1.Identity/NoSuchMethod",
                                               request_serializer=lambda b: b,
                                               response_deserializer=lambda b: b)
        with self.assertRaises(grpc.RpcError) as cm:
            stub(b"", timeout=10)
        self.assertEqual(cm.exception.code(), grpc.StatusCode.UNIMPLEMENTED)

    def test_oversized_message_rejected(self):
        req = csi_pb2.CreateVolumeRequest(name="x" * (5 << 20))
        with self.assertRaises(grpc.RpcError) as cm:
            self.plugin.call("CreateVolume", req)
        self.assertEqual(cm.exception.code(), grpc.StatusCode.RESOURCE_EXHAUSTED)
        # and the server is still fine
        self.assertTrue(self.plugin.call("Probe").ready.value)

    def test_many_concurrent_calls(self):
        methods = ["GetPluginInfo", "Probe", "GetPluginCapabilities", "NodeGetInfo"] * 100
        with concurrent.futures.ThreadPoolExecutor(max_workers=32) as pool:
            def one(m):
                try:
                    self.plugin.call(m, timeout=30)
                    return m, "OK"
                except grpc.RpcError as e:
                    return m, e.code().name
            results = list(pool.map(one, methods))
        for m, code in results:
            self.assertEqual(code, "UNIMPLEMENTED" if m == "NodeGetInfo" else "OK", m)
        self.assertEqual(len(results), 400)


class MetricsTest(unittest.TestCase):
    def test_metrics_count_calls_and_errors(self):
        import re
        import urllib.request
        with Plugin(mode="controller", node_id=None,
                    extra=["--metrics-addr", "127.0.0.1:0"]) as p:
            for _ in range(3):
                p.call("Probe")
            with self.assertRaises(grpc.RpcError):
                p.call("NodeGetInfo")
            port = re.search(r"event=csi.metrics_listening .*port=(\d+)", p.read_log()).group(1)
            text = urllib.request.urlopen("http://127.0.0.1:%s/metrics" % port,
                                          timeout=10).read().decode()
        self.assertIn('gantry_csi_requests_total{method="Probe"} 3\n', text)
        self.assertIn('gantry_csi_errors_total{method="NodeGetInfo",code="UNIMPLEMENTED"} 1\n',
                      text)
        self.assertIn('gantry_csi_request_duration_seconds_count{method="Probe"} 3\n', text)


class NodeModeTest(unittest.TestCase):
    def test_no_controller_service_in_node_mode(self):
        with Plugin(mode="node", node_id="gpu-1") as p:
            caps = p.call("GetPluginCapabilities").capabilities
            services = {c.service.type for c in caps if c.WhichOneof("type") == "service"}
            self.assertNotIn(csi_pb2.PluginCapability.Service.CONTROLLER_SERVICE, services)
            with self.assertRaises(grpc.RpcError) as cm:
                p.call("CreateVolume", csi_pb2.CreateVolumeRequest(name="x"))
            self.assertEqual(cm.exception.code(), grpc.StatusCode.UNIMPLEMENTED)


class CommandLineTest(unittest.TestCase):
    def run_csi(self, *args):
        return subprocess.run([csi_client.binary(), *args], capture_output=True, text=True,
                              timeout=20)

    def test_help_and_version(self):
        r = self.run_csi("--help")
        self.assertEqual(r.returncode, 0)
        self.assertIn("--endpoint", r.stdout)
        self.assertRegex(self.run_csi("--version").stdout, r"^gantry-csi \d+\.\d+\.\d+")

    def test_request_log_only_at_debug_and_without_secrets(self):
        # the JSON rendering of a request is made only when its line is written
        req = csi_pb2.DeleteVolumeRequest(volume_id="not-ours",
                                          secrets={"userKey": "s3cr3t-never-logged"})
        for level, logged in (("debug", True), ("info", False)):
            with Plugin(mode="controller", node_id=None,
                        extra=["--log-level", level]) as p:
                p.call("DeleteVolume", req)
                log = p.read_log()
            self.assertEqual("event=csi.request method=DeleteVolume" in log, logged, level)
            self.assertIn("method=DeleteVolume code=OK", log, level)
            self.assertNotIn("s3cr3t", log, level)

    def test_bad_usage_names_the_flag(self):
        cases = [
            (["--endpoint", "unix:///tmp/x.sock"], "--mode"),
            (["--mode", "weird", "--endpoint", "unix:///tmp/x.sock"], "--mode"),
            (["--mode", "controller"], "--endpoint"),
            (["--mode", "node", "--endpoint", "unix:///tmp/x.sock"], "--node-id"),
            (["--mode", "controller", "--endpoint", "tcp://1.2.3.4:5"], "endpoint"),
            (["--mode", "controller", "--endpoint", "unix:///tmp/x.sock", "--workers", "0"],
             "--workers"),
        ]
        for args, flag in cases:
            r = self.run_csi(*args)
            self.assertEqual(r.returncode, 2, args)
            self.assertIn(flag, r.stderr, args)

    def test_bad_config_names_file_and_field(self):
        d = self.tmpdir()
        path = os.path.join(d, "gantry.json")
        with open(path, "w") as f:
            f.write('{"clusters": [{"clusterID": "a", "monitors": "127.0.0.1"}]}')
        r = self.run_csi("--mode", "controller", "--endpoint", "unix://%s/s.sock" % d,
                         "--config", path)
        self.assertEqual(r.returncode, 2)
        self.assertIn(path, r.stderr)
        self.assertIn("clusters[0].monitors", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(d, "s.sock")))

    def test_stale_socket_removed_live_socket_refused(self):
        d = self.tmpdir()
        path = os.path.join(d, "csi.sock")
        stale = socket.socket(socket.AF_UNIX)
        stale.bind(path)
        stale.close()  # a socket file nobody listens on: what a crash leaves
        with Plugin(mode="controller", node_id=None, workdir=d) as p:
            self.assertEqual(p.call("GetPluginInfo").name, "csi.gantry.io")
            r = self.run_csi("--mode", "controller", "--endpoint", "unix://" + path)
            self.assertEqual(r.returncode, 1)
            self.assertIn("in use", r.stderr)
        self.assertFalse(os.path.exists(path))

    def tmpdir(self):
        import shutil
        import tempfile
        d = tempfile.mkdtemp(prefix="gantry-csi-cli-")
        self.addCleanup(shutil.rmtree, d, True)
        return d


if __name__ == "__main__":
    unittest.main(verbosity=2)
