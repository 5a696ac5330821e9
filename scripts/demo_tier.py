"""Demo chapter: tiering. Two throwaway Ceph clusters, "capa" (where
datasets are born) and "perf" (next to the GPUs); a 256 MiB dataset volume
of capa is promoted into perf through CreateVolume's retry loop, as the
external-provisioner drives it: every call answers ABORTED with the progress
line (what `kubectl describe pvc` shows as events) until the copy is done.
The copy is throttled with capa's copy.readMBps so a few lines show.
`gantryctl tier status` shows the copy while it runs and once done, the
content is compared, and everything is deleted and stopped again.
"""
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
CLUSTER_SH = os.path.join(ROOT, "tests", "ceph", "cluster.sh")
MiB = 1 << 20
SIZE = 256 * MiB
READ_MBPS = 48  # capa's copy.readMBps: 256 MiB take ~6 s


def boot(cdir, port, errors):
    try:
        subprocess.run(["bash", CLUSTER_SH, "start", cdir, port], check=True, timeout=600,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as e:
        errors.append("%s: %s" % (cdir, getattr(e, "stderr", b"") or e))


def digest(conf, image):
    """sha256 of the image's bytes (rbd export to stdout)."""
    h = hashlib.sha256()
    with subprocess.Popen(["rbd", "-c", conf, "export", "--no-progress", "rbd/" + image, "-"],
                          stdout=subprocess.PIPE) as p:
        for chunk in iter(lambda: p.stdout.read(1 << 20), b""):
            h.update(chunk)
    if p.returncode != 0:
        raise RuntimeError("rbd export %s failed" % image)
    return h.hexdigest()


def tier_status(build, config):
    return subprocess.run([os.path.join(build, "bin", "gantryctl"), "tier", "status", "--config",
                           config], capture_output=True, text=True, timeout=120).stdout.rstrip()


def chapter_tiering(say, client, build, n):
    import grpc
    pb = client.csi_pb2
    say("\n== %d. Tiering: promote a dataset from the capacity cluster to the fast one ==" % n)
    port = int(os.environ.get("GANTRY_DEMO_CEPH_PORT", "13600"))
    ports = {"perf": str(port), "capa": os.environ.get("GANTRY_DEMO_CEPH_PORT2", str(port + 1))}
    work = tempfile.mkdtemp(prefix="gantry-demo-tier-")
    dirs = {c: os.path.join(work, c) for c in ports}
    conf = {c: os.path.join(dirs[c], "ceph.conf") for c in ports}
    try:
        t = time.monotonic()
        errors = []
        boots = [threading.Thread(target=boot, args=(dirs[c], ports[c], errors)) for c in ports]
        for b in boots:
            b.start()
        for b in boots:
            b.join()
        if errors:
            raise RuntimeError("a cluster did not start: " + "; ".join(errors))
        say("booted two throwaway Ceph clusters side by side: perf on 127.0.0.1:%s, capa on "
            "127.0.0.1:%s (each 1 mon, 3 OSDs, EC 2+1 data pool)" % (ports["perf"], ports["capa"]), t)
        keys, clusters = {}, []
        for c in ("perf", "capa"):
            keys[c] = subprocess.run(["bash", CLUSTER_SH, "user", dirs[c], "gantry"], check=True,
                                     timeout=120, capture_output=True, text=True).stdout.strip()
            keyfile = os.path.join(work, c + ".key")
            with open(os.open(keyfile, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
                f.write(keys[c] + "\n")
            clusters.append({"clusterID": c, "monitors": ["127.0.0.1:" + ports[c]],
                             "tier": "performance" if c == "perf" else "capacity",
                             "rbdTimeoutSeconds": 10, "userID": "gantry", "keyFile": keyfile})
        clusters[1]["copy"] = {"readMBps": READ_MBPS, "objectsInFlight": 8}
        config = os.path.join(work, "gantry.json")
        with open(config, "w") as f:
            json.dump({"clusters": clusters}, f)
        say("driver config: both clusters; capa has copy.readMBps %d, so a promotion cannot "
            "starve the jobs that read capa" % READ_MBPS)

        cap = pb.VolumeCapability(mount=pb.VolumeCapability.MountVolume(fs_type="ext4"),
                                  access_mode=pb.VolumeCapability.AccessMode(
                                      mode=pb.VolumeCapability.AccessMode.MULTI_NODE_READER_ONLY))

        def params(c):
            return {"tier": "dataset", "clusterID": c, "pool": "rbd", "dataPool": "ecdata"}

        def secrets(c):
            return {"userID": "gantry", "userKey": keys[c]}

        os.makedirs(os.path.join(work, "csi"))
        with client.Plugin(mode="controller", node_id=None, config=config,
                           workdir=os.path.join(work, "csi")) as p:
            t = time.monotonic()
            src = p.call("CreateVolume", pb.CreateVolumeRequest(
                name="pvc-imagenet-capa", volume_capabilities=[cap], parameters=params("capa"),
                secrets=secrets("capa"), capacity_range=pb.CapacityRange(required_bytes=SIZE)),
                timeout=120).volume
            src_img = dict(src.volume_context)["imageName"]
            subprocess.run(["rbd", "-c", conf["capa"], "bench", "--io-type", "write", "--io-size",
                            "4M", "--io-threads", "8", "--io-pattern", "seq", "--io-total",
                            str(SIZE), "rbd/" + src_img], check=True, capture_output=True,
                           timeout=300)
            say("CreateVolume pvc-imagenet-capa in capa, filled with 256 MiB of \"dataset\"", t)

            req = pb.CreateVolumeRequest(
                name="pvc-imagenet-fast", volume_capabilities=[cap], parameters=params("perf"),
                secrets=secrets("perf"), volume_content_source=pb.VolumeContentSource(
                    volume=pb.VolumeContentSource.VolumeSource(volume_id=src.volume_id)))
            say("CreateVolume pvc-imagenet-fast in perf from that volume, retried as the "
                "external-provisioner does (ABORTED = in progress, call again):")
            t = time.monotonic()
            backoff, calls, shown, status_shown = 0.1, 0, 0, False
            deadline = time.monotonic() + 300
            while True:
                calls += 1
                try:
                    vol = p.call("CreateVolume", req, timeout=60).volume
                    break
                except grpc.RpcError as e:
                    if e.code() != grpc.StatusCode.ABORTED or time.monotonic() > deadline:
                        raise
                    say("  ABORTED: %s" % e.details())
                    shown += 1
                    if not status_shown and "B/s" in e.details():
                        status_shown = True
                        say("  gantryctl tier status, meanwhile (from the records in Ceph):")
                        for line in tier_status(build, config).splitlines():
                            say("    " + line)
                time.sleep(backoff)
                backoff = min(backoff * 1.5, 1.0)
            img = dict(vol.volume_context)["imageName"]
            say("  OK after %d calls: volume in perf, image %s" % (calls, img), t)
            say("gantryctl tier status, after:")
            for line in tier_status(build, config).splitlines():
                say("  " + line)
            t = time.monotonic()
            same = digest(conf["capa"], src_img) == digest(conf["perf"], img)
            say("content of the copy %s the source's (sha256 of rbd export)" %
                ("equals" if same else "DIFFERS FROM"), t)
            if not same:
                raise RuntimeError("the promoted copy differs from its source")
            t = time.monotonic()
            p.call("DeleteVolume", pb.DeleteVolumeRequest(volume_id=vol.volume_id,
                                                          secrets=secrets("perf")), timeout=120)
            p.call("DeleteVolume", pb.DeleteVolumeRequest(volume_id=src.volume_id,
                                                          secrets=secrets("capa")), timeout=120)
            say("deleted both volumes", t)
    finally:
        t = time.monotonic()
        for c in ports:
            subprocess.run(["bash", CLUSTER_SH, "purge", dirs[c]], timeout=300)
        shutil.rmtree(work, ignore_errors=True)
        say("stopped and removed both clusters", t)
