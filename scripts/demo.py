"""The Gantry demo, told as a story with timings.

Chapter 1 starts the CSI plugin and talks to it over its socket exactly as
kubelet and the CSI sidecars do. Chapter 2 boots a throwaway Ceph cluster
and provisions a dataset volume on its erasure-coded pool, snapshots it and
clones it. Chapter 3 runs gantry-scheduler against the fake Kubernetes API
server on a simulated 64-node fabric and places an 8-pod training job;
chapter 4 shows gantryctl's plan for that job (scripts/demo_scheduler.py).
Chapter 5 promotes a dataset between two throwaway clusters and shows the
progress lines and `gantryctl tier status` (scripts/demo_tier.py).
--only N runs one chapter (for working on it).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def say(msg, t0=None):
    took = "" if t0 is None else "  (%.2f s)" % (time.monotonic() - t0)
    print(msg + took, flush=True)


def chapter_identity(client):
    say("\n== 1. The CSI plugin, as kubelet sees it ==")
    t = time.monotonic()
    with client.Plugin(mode="all", node_id="gpu-node-1") as p:  # its own work dir, removed after
        say("started gantry-csi --mode all on %s" % p.endpoint, t)
        t = time.monotonic()
        info = p.call("GetPluginInfo")
        say("GetPluginInfo: driver %s, version %s" % (info.name, info.vendor_version), t)
        t = time.monotonic()
        caps = p.call("GetPluginCapabilities").capabilities
        names = []
        for c in caps:
            if c.WhichOneof("type") == "service":
                names.append(client.csi_pb2.PluginCapability.Service.Type.Name(c.service.type))
            else:
                names.append("VOLUME_EXPANSION_" + client.csi_pb2.PluginCapability.
                             VolumeExpansion.Type.Name(c.volume_expansion.type))
        say("GetPluginCapabilities: " + ", ".join(names), t)
        t = time.monotonic()
        ready = p.call("Probe").ready.value
        say("Probe: ready=%s" % ready, t)
        if not ready:
            # the plugin logs which backend's probe failed and why
            why = [l.split("csi.probe_not_ready", 1)[1].strip()
                   for l in p.read_log().splitlines() if "csi.probe_not_ready" in l]
            say("  not ready because the node service's krbd probe fails on this host (%s): "
                "the node service maps images with the kernel's rbd driver, which this "
                "container lacks; tests run it in a qemu VM" % (why[-1] if why else "see log"))
    say("stopped the plugin (SIGTERM, drained)")


def chapter_dataset(client):
    say("\n== 2. A dataset volume on an erasure-coded Ceph pool ==")
    cluster = os.path.join(ROOT, "tests", "ceph", "cluster.sh")
    port = os.environ.get("GANTRY_DEMO_CEPH_PORT", "13600")
    work = tempfile.mkdtemp(prefix="gantry-demo-ceph-")
    cdir = os.path.join(work, "ceph")
    pb = client.csi_pb2
    try:
        t = time.monotonic()
        subprocess.run(["bash", cluster, "start", cdir, port], check=True, timeout=600,
                       stdout=subprocess.DEVNULL)
        say("booted a throwaway Ceph cluster on 127.0.0.1:%s: 1 mon, 1 mgr, 3 OSDs, "
            "pools rbd (replicated) and ecdata (EC 2+1)" % port, t)
        key = subprocess.run(["bash", cluster, "user", cdir, "gantry"], check=True, timeout=120,
                             capture_output=True, text=True).stdout.strip()
        keyfile = os.path.join(work, "gantry.key")
        with open(os.open(keyfile, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write(key + "\n")
        config = os.path.join(work, "gantry.json")
        with open(config, "w") as f:
            json.dump({"clusters": [{"clusterID": "demo", "monitors": ["127.0.0.1:" + port],
                                     "tier": "performance", "rbdTimeoutSeconds": 10,
                                     "userID": "gantry", "keyFile": keyfile}]}, f)
        say("made a least-privilege Ceph user (profile rbd) and a driver config naming the cluster")
        conf = os.path.join(cdir, "ceph.conf")
        params = {"tier": "dataset", "clusterID": "demo", "pool": "rbd", "dataPool": "ecdata"}
        secrets = {"userID": "gantry", "userKey": key}
        cap = pb.VolumeCapability(mount=pb.VolumeCapability.MountVolume(fs_type="ext4"),
                                  access_mode=pb.VolumeCapability.AccessMode(
                                      mode=pb.VolumeCapability.AccessMode.MULTI_NODE_READER_ONLY))
        os.makedirs(os.path.join(work, "csi"))
        with client.Plugin(mode="controller", node_id=None, config=config,
                           workdir=os.path.join(work, "csi")) as p:
            t = time.monotonic()
            say("Probe: ready=%s (the cluster answers)" % p.call("Probe").ready.value, t)
            t = time.monotonic()
            vol = p.call("CreateVolume", pb.CreateVolumeRequest(
                name="pvc-imagenet", volume_capabilities=[cap], parameters=params,
                secrets=secrets, capacity_range=pb.CapacityRange(required_bytes=256 << 20)),
                timeout=120).volume
            ctx = dict(vol.volume_context)
            say("CreateVolume pvc-imagenet: %d MiB, image %s" % (vol.capacity_bytes >> 20,
                                                               ctx["imageName"]), t)
            info = json.loads(subprocess.run(
                ["rbd", "-c", conf, "info", "--format", "json", "rbd/" + ctx["imageName"]],
                check=True, capture_output=True, text=True, timeout=60).stdout)
            say("  rbd info: metadata in pool rbd, data in pool %s (EC 2+1: 2/3 of raw space "
                "usable, a mirror gives 1/2)" % info["data_pool"])
            t = time.monotonic()
            subprocess.run(["rbd", "-c", conf, "bench", "--io-type", "write", "--io-size", "4M",
                            "--io-total", "64M", "rbd/" + ctx["imageName"]], check=True,
                           capture_output=True, timeout=300)
            say("wrote 64 MiB of \"dataset\" into it", t)
            t = time.monotonic()
            snap = p.call("CreateSnapshot", pb.CreateSnapshotRequest(
                name="snap-imagenet-v1", source_volume_id=vol.volume_id, secrets=secrets),
                timeout=120).snapshot
            say("CreateSnapshot snap-imagenet-v1: ready=%s" % snap.ready_to_use, t)
            t = time.monotonic()
            clone = p.call("CreateVolume", pb.CreateVolumeRequest(
                name="pvc-imagenet-job-42", volume_capabilities=[cap], parameters=params,
                secrets=secrets, volume_content_source=pb.VolumeContentSource(
                    snapshot=pb.VolumeContentSource.SnapshotSource(
                        snapshot_id=snap.snapshot_id))), timeout=120).volume
            cinfo = json.loads(subprocess.run(
                ["rbd", "-c", conf, "info", "--format", "json",
                 "rbd/" + dict(clone.volume_context)["imageName"]],
                check=True, capture_output=True, text=True, timeout=60).stdout)
            say("CreateVolume pvc-imagenet-job-42 from the snapshot: a copy-on-write clone, "
                "data pool %s (kept)" % cinfo["data_pool"], t)
            t = time.monotonic()
            again = p.call("CreateVolume", pb.CreateVolumeRequest(
                name="pvc-imagenet", volume_capabilities=[cap], parameters=params,
                secrets=secrets, capacity_range=pb.CapacityRange(required_bytes=256 << 20)),
                timeout=120).volume
            say("CreateVolume pvc-imagenet again (a retry): same volume=%s" %
                (again.volume_id == vol.volume_id), t)
            t = time.monotonic()
            cap_bytes = p.call("GetCapacity", pb.GetCapacityRequest(parameters=params),
                               timeout=60).available_capacity
            say("GetCapacity: %.1f GiB usable for new images in ecdata" % (cap_bytes / 2**30), t)
            t = time.monotonic()
            p.call("DeleteVolume", pb.DeleteVolumeRequest(volume_id=clone.volume_id,
                                                          secrets=secrets), timeout=120)
            p.call("DeleteSnapshot", pb.DeleteSnapshotRequest(snapshot_id=snap.snapshot_id,
                                                              secrets=secrets), timeout=120)
            p.call("DeleteVolume", pb.DeleteVolumeRequest(volume_id=vol.volume_id,
                                                          secrets=secrets), timeout=120)
            say("deleted the clone, the snapshot and the volume", t)
    finally:
        t = time.monotonic()
        subprocess.run(["bash", cluster, "purge", cdir], timeout=300)
        shutil.rmtree(work, ignore_errors=True)
        say("stopped and removed the cluster", t)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--only", type=int, help="run only this chapter")
    args = ap.parse_args()
    os.environ["GANTRY_BUILD_DIR"] = os.path.join(ROOT, args.build)
    sys.path.insert(0, os.path.join(ROOT, "tests", "conformance"))
    import csi_client
    t0 = time.monotonic()
    say("Gantry demo: tiered volumes and bandwidth-aware placement for GPU training")
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    import demo_scheduler
    import demo_tier
    build = os.environ["GANTRY_BUILD_DIR"]
    placed = {}
    chapters = [lambda: chapter_identity(csi_client), lambda: chapter_dataset(csi_client),
                lambda: placed.setdefault("leaves",
                                          demo_scheduler.chapter_placement(say, build, 3)),
                lambda: demo_scheduler.chapter_plan(say, build, 4, *placed.values()),
                lambda: demo_tier.chapter_tiering(say, csi_client, build, 5)]
    for n, chapter in enumerate(chapters, 1):
        if args.only in (None, n):
            chapter()
    say("\nDemo finished in %.1f s; nothing left running." % (time.monotonic() - t0))


if __name__ == "__main__":
    main()
