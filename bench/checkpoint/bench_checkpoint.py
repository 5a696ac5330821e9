"""Checkpoint benchmark, run inside the VM by tests/vm/run.sh (CTest:
bench_checkpoint, label bench).

Prints, for one checkpoint volume served by gantry-target on the guest
kernel's nvmet and staged over NVMe/TCP (loopback) by gantry-csi's
NodeStageVolume (libnvme attach, mkfs when blank, mount), driven over gRPC:
  - write throughput (MiB/s) of a checkpoint file (1 MiB writes, fsync at
    the end) through the staged namespace, and of the same file on the
    guest's tmpfs measured in the same run, and their ratio;
  - NodeStageVolume latency (attach + mount) and NodeUnstageVolume latency
    (umount + disconnect) of an already formatted volume, median and max of
    several rounds, as kubelet sees them;
  - on a volume with two paths (native NVMe multipath), a checkpoint burst
    (1 MiB writes, fsync after each) healthy and with one path cut a third
    of the way in, their time ratio, and the acknowledged bytes that did not
    read back equal once the path was back (tests/vm/checkpoint_burst.py,
    whose cases tests/vm/test_checkpoint.py asserts).
Figures only: nothing is asserted about time. The backing file lives on the
guest's tmpfs too, so the ratio is the cost of the NVMe/TCP path and the
file system, not of a disk. Under TCG everything is several times slower
than on hardware; compare ratios, not absolute numbers.
"""
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "gantry-target"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "conformance"))
from ckpt_helpers import create_req, publish_req, write_config  # noqa: E402

# The VM's default kernel (bookworm's 6.1) has no DH-HMAC-CHAP: these volumes
# keep today's behaviour; tests/vm/test_dhchap.py runs on the backports kernel.
_create_req = create_req


def create_req(*args, **kw):  # noqa: F811
    kw.setdefault("auth", "none")
    return _create_req(*args, **kw)

from csi_client import BUILD_DIR, Plugin, csi_pb2  # noqa: E402
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "vm"))
import checkpoint_burst as burst  # noqa: E402
from targetproc import Target  # noqa: E402
sys.path.insert(0, os.path.join(HERE, ".."))
from figure import figure  # noqa: E402

WORK = "/tmp/gantry-checkpoint-bench"
SIZE_MIB = int(os.environ.get("GANTRY_BENCH_MIB", "256"))
BURST_MIB = int(os.environ.get("GANTRY_BENCH_BURST_MIB", "64"))
ROUNDS = int(os.environ.get("GANTRY_BENCH_ROUNDS", "5"))


def run(*args):
    return subprocess.run(args, capture_output=True, text=True, check=True).stdout.strip()


def write_file(path, mib):
    buf = os.urandom(1 << 20)
    t0 = time.monotonic()
    with open(path, "wb") as f:
        for _ in range(mib):
            f.write(buf)
        f.flush()
        os.fsync(f.fileno())
    return mib / (time.monotonic() - t0)


def stage_request(vol, host, stage):
    req = csi_pb2.NodeStageVolumeRequest(volume_id=vol.volume_id, staging_target_path=stage)
    req.publish_context["hostNQN"] = host
    req.volume_capability.CopyFrom(publish_req(vol.volume_id, "bench-node").volume_capability)
    for k, v in vol.volume_context.items():
        req.volume_context[k] = v
    return req


def wait_live(nqn, timeout):
    """Waits until every NVMe controller of @nqn is live again (the cut path reconnected)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        states = []
        for c in os.listdir("/sys/class/nvme"):
            try:
                with open("/sys/class/nvme/%s/subsysnqn" % c) as f:
                    if f.read().strip() != nqn:
                        continue
                with open("/sys/class/nvme/%s/state" % c) as f:
                    states.append(f.read().strip())
            except OSError:
                continue
        if states == ["live", "live"]:
            return
        time.sleep(0.2)
    raise RuntimeError("the cut path of %s did not come back within %ss" % (nqn, timeout))


def path_cut_burst(plugin, stage):
    """A burst healthy, then one with a path cut, on a two-path volume; prints the figures."""
    vol = plugin.call("CreateVolume", create_req("pvc-bench-mp", size=(2 * BURST_MIB + 64) << 20,
                                                 leaf="leaf-mp"), timeout=60).volume
    nqn = vol.volume_context["nqn"]
    host = plugin.call("ControllerPublishVolume", publish_req(vol.volume_id, "bench-node"),
                       timeout=60).publish_context["hostNQN"]
    plugin.call("NodeStageVolume", stage_request(vol, host, stage), timeout=120)
    links = []
    try:
        healthy = burst.Burst(os.path.join(stage, "healthy.bin"), BURST_MIB, "healthy").start().join(600)
        cut = burst.Burst(os.path.join(stage, "cut.bin"), BURST_MIB, "cut").start()
        cut.wait_acked(BURST_MIB // 3, 600)
        links = burst.cut(nqn, ["4421"])
        cut.join(600)
        burst.restore(nqn, links)
        wait_live(nqn, 60)
        if healthy.error or cut.error:
            raise RuntimeError("burst failed: healthy %r, one path cut %r" % (healthy.error, cut.error))
        compared = lost = 0
        for name, b in (("healthy.bin", healthy), ("cut.bin", cut)):
            c, l = burst.verify(os.path.join(stage, name), b.seed, b.acked)
            compared, lost = compared + c, lost + l
        print("checkpoint burst %d MiB (fsync per MiB): healthy %.2f s, one of two paths cut %.2f s; "
              "%d bytes compared, %d lost" % (BURST_MIB, healthy.seconds, cut.seconds, compared, lost))
        figure("checkpoint_burst_one_path_cut_vs_healthy", cut.seconds / healthy.seconds, None,
               "checkpoint burst time with one of two NVMe/TCP paths cut a third of the way in ÷ the "
               "same burst healthy, same volume, in the VM")
        figure("checkpoint_burst_bytes_lost_one_path_cut", lost, "<=0",
               "fsync-acknowledged bytes of the bursts that did not read back equal once the path "
               "was back (%d compared)" % compared)
    finally:
        burst.restore(nqn, links)
        plugin.call("NodeUnstageVolume", csi_pb2.NodeUnstageVolumeRequest(
            volume_id=vol.volume_id, staging_target_path=stage), timeout=120)
        plugin.call("ControllerUnpublishVolume", csi_pb2.ControllerUnpublishVolumeRequest(
            volume_id=vol.volume_id, node_id="bench-node"), timeout=60)
        plugin.call("DeleteVolume", csi_pb2.DeleteVolumeRequest(volume_id=vol.volume_id), timeout=60)


def main():
    run("modprobe", "-a", "nvmet", "nvmet-tcp", "nvme-tcp", "nvme-fabrics")
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(os.path.join(WORK, "csi"))
    stage = os.path.join(WORK, "stage")
    os.makedirs(stage)
    target = Target(workdir=os.path.join(WORK, "tgt"), configfs="/sys/kernel/config/nvmet", port=8009).start()
    tok = os.path.join(WORK, "token")
    with open(tok, "w") as f:
        f.write(target.token)
    cfg = write_config(os.path.join(WORK, "gantry.json"),
                       [("tgt-bench", target.url, tok, [("127.0.0.1", "4420")], "leaf-1"),
                        # the same agent with two listeners: native NVMe multipath
                        ("tgt-bench-mp", target.url, tok, [("127.0.0.1", "4420"), ("127.0.0.1", "4421")],
                         "leaf-mp")])
    plugin = Plugin(mode="all", node_id="bench-node", config=cfg, workdir=os.path.join(WORK, "csi"),
                    ready_timeout=60).start()
    try:
        vol = plugin.call("CreateVolume", create_req("pvc-bench", size=(SIZE_MIB + 128) << 20,
                                                     leaf="leaf-1"), timeout=60).volume
        host = plugin.call("ControllerPublishVolume", publish_req(vol.volume_id, "bench-node"),
                           timeout=60).publish_context["hostNQN"]
        stage_req = stage_request(vol, host, stage)
        unstage_req = csi_pb2.NodeUnstageVolumeRequest(volume_id=vol.volume_id, staging_target_path=stage)
        plugin.call("NodeStageVolume", stage_req, timeout=120)  # the first stage formats

        tmpfs_dir = os.path.join(WORK, "tmpfs")
        os.makedirs(tmpfs_dir)  # /tmp is the guest's tmpfs
        base = write_file(os.path.join(tmpfs_dir, "ckpt.bin"), SIZE_MIB)
        os.unlink(os.path.join(tmpfs_dir, "ckpt.bin"))
        nvme = write_file(os.path.join(stage, "ckpt.bin"), SIZE_MIB)
        print("checkpoint write %d MiB: nvme-tcp %.1f MiB/s, tmpfs %.1f MiB/s, ratio %.2f"
              % (SIZE_MIB, nvme, base, nvme / base))
        figure("checkpoint_write_nvme_tcp_vs_tmpfs", nvme / base, None,
               "checkpoint write speed to an NVMe/TCP volume ÷ to tmpfs, in the VM")

        stages, unstages = [], []
        for _ in range(ROUNDS):
            t0 = time.monotonic()
            plugin.call("NodeUnstageVolume", unstage_req, timeout=120)
            t1 = time.monotonic()
            plugin.call("NodeStageVolume", stage_req, timeout=120)
            t2 = time.monotonic()
            unstages.append(t1 - t0)
            stages.append(t2 - t1)
        print("NodeStageVolume (attach+mount) over %d rounds: median %.3f s, max %.3f s"
              % (ROUNDS, statistics.median(stages), max(stages)))
        print("NodeUnstageVolume (umount+disconnect) over %d rounds: median %.3f s, max %.3f s"
              % (ROUNDS, statistics.median(unstages), max(unstages)))
        plugin.call("NodeUnstageVolume", unstage_req, timeout=120)
        plugin.call("ControllerUnpublishVolume", csi_pb2.ControllerUnpublishVolumeRequest(
            volume_id=vol.volume_id, node_id="bench-node"), timeout=60)
        plugin.call("DeleteVolume", csi_pb2.DeleteVolumeRequest(volume_id=vol.volume_id),
                    timeout=60)
        path_cut_burst(plugin, stage)
    finally:
        plugin.stop()
        target.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
