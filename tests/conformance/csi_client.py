"""A CSI client for tests: drives gantry-csi over its Unix socket with
Debian's python3-grpcio, as kubelet and the CSI sidecars would.

Messages come from csi_pb2, generated at build time from proto/csi.proto
(`<build>/python`). No stubs are needed: each call names its gRPC path and
its request/response classes, exactly as they are on the wire.

Plugin starts gantry-csi, waits until the socket answers (bounded), and
always stops it (SIGTERM, then SIGKILL after a bounded wait).
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import grpc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "canary"))
import canary  # noqa: E402

BUILD_DIR = os.environ.get("GANTRY_BUILD_DIR") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", "..", "build"))
sys.path.insert(0, os.path.join(BUILD_DIR, "python"))
import csi_pb2  # noqa: E402

SERVICES = {
    "GetPluginInfo": "Identity", "GetPluginCapabilities": "Identity", "Probe": "Identity",
    "CreateVolume": "Controller", "DeleteVolume": "Controller",
    "ControllerPublishVolume": "Controller", "ControllerUnpublishVolume": "Controller",
    "ValidateVolumeCapabilities": "Controller", "ListVolumes": "Controller",
    "GetCapacity": "Controller", "ControllerGetCapabilities": "Controller",
    "CreateSnapshot": "Controller", "DeleteSnapshot": "Controller",
    "ListSnapshots": "Controller", "ControllerExpandVolume": "Controller",
    "ControllerGetVolume": "Controller", "ControllerModifyVolume": "Controller",
    "GroupControllerGetCapabilities": "GroupController",
    "CreateVolumeGroupSnapshot": "GroupController",
    "DeleteVolumeGroupSnapshot": "GroupController",
    "GetVolumeGroupSnapshot": "GroupController",
    "NodeStageVolume": "Node", "NodeUnstageVolume": "Node", "NodePublishVolume": "Node",
    "NodeUnpublishVolume": "Node", "NodeGetVolumeStats": "Node", "NodeExpandVolume": "Node",
    "NodeGetCapabilities": "Node", "NodeGetInfo": "Node",
}


def binary(name="gantry-csi"):
    return os.path.join(BUILD_DIR, "bin", name)


def call(channel, method, request=None, timeout=10.0, metadata=None):
    """Calls CSI @method with @request (default: an empty request)."""
    req_cls = getattr(csi_pb2, method + "Request")
    resp_cls = getattr(csi_pb2, method + "Response")
    if request is None:
        request = req_cls()
    stub = channel.unary_unary(
        "/csi.v1.%s/%s" % (SERVICES[method], method),
        request_serializer=req_cls.SerializeToString,
        response_deserializer=resp_cls.FromString)
    return stub(request, timeout=timeout, metadata=metadata)


class Plugin:
    """A gantry-csi process on a private socket. Use as a context manager."""

    def __init__(self, mode="all", node_id="node-1", config=None, extra=(), workdir=None,
                 ready_timeout=20.0):
        self.own_workdir = workdir is None
        self.workdir = workdir or tempfile.mkdtemp(prefix="gantry-csi-test-")
        self.socket = os.path.join(self.workdir, "csi.sock")
        self.endpoint = "unix://" + self.socket
        self.log_path = os.path.join(self.workdir, "plugin.log")
        self.args = [binary(), "--mode", mode, "--endpoint", self.endpoint]
        if node_id:
            self.args += ["--node-id", node_id]
        if config:
            self.args += ["--config", config]
        if mode != "controller" and "--qos-state-dir" not in extra:
            # the bandwidth cap records: private to the test, never the host's
            self.args += ["--qos-state-dir", os.path.join(self.workdir, "qos")]
        self.args += list(extra)
        self.ready_timeout = ready_timeout
        self.proc = None
        self.channel = None

    def start(self):
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self.args, stdout=self.log, stderr=self.log,
                                     stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + self.ready_timeout
        while not os.path.exists(self.socket):
            if self.proc.poll() is not None:
                raise RuntimeError("gantry-csi exited with %d:\n%s" % (self.proc.returncode,
                                                                       self.read_log()))
            if time.monotonic() > deadline:
                self.stop()
                raise TimeoutError("socket %s did not appear" % self.socket)
            time.sleep(0.02)
        self.channel = grpc.insecure_channel(self.endpoint)
        grpc.channel_ready_future(self.channel).result(
            timeout=max(0.1, deadline - time.monotonic()))
        return self

    def call(self, method, request=None, timeout=10.0):
        return call(self.channel, method, request, timeout)

    def stop(self, sig=signal.SIGTERM, timeout=40.0):
        """Stops the plugin; returns its exit code (SIGKILL after @timeout)."""
        if self.channel:
            self.channel.close()
            self.channel = None
        if getattr(self, "log", None):
            self.log.close()
            self.log = None
        if not self.proc or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
            raise

    def kill(self):
        """SIGKILL, as a crash would."""
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)

    def read_log(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode(errors="replace")
        except OSError:
            return ""

    def __enter__(self):
        return self.start()

    def cleanup(self):
        """Keeps the log for the secret canary check (tests/canary/), and
        removes the work directory if this Plugin made it."""
        canary.keep_log(self.log_path, "gantry-csi")
        if self.own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __exit__(self, *exc):
        try:
            self.stop()
        finally:
            self.cleanup()
