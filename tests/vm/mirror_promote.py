"""Host side of vm_node's rbd-mirror step (run by node_cluster.sh inside the
test's namespace): the real gantry-csi controller promotes a volume of the
"capa" cluster into "perf" (the cluster the guest maps from) through the
rbd-mirror daemon mirror.sh started, driven by python3-grpcio through the
provisioner's retry loop. Writes $VM_SHARE/mirrored: "IMAGE SIZE SHA256",
the promoted image and the sha256 of the source's content, for the guest's
test_node to map read-only and check.

    mirror_promote.py PERF_DIR CAPA_DIR HOST_IP SHARE"""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import grpc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "conformance"))
from csi_client import Plugin, csi_pb2  # noqa: E402

SIZE = 64 << 20


def main(perf, capa, ip, share):
    keys = {}
    for name, d in (("perf", perf), ("capa", capa)):
        with open(os.path.join(d, "gantry.key")) as f:
            keys[name] = f.read().strip()
    work = tempfile.mkdtemp(prefix="gantry-mirror-vm-")
    cfg = os.path.join(work, "gantry.json")
    with open(cfg, "w") as f:
        json.dump({"clusters": [
            {"clusterID": "perf", "monitors": ["%s:3300" % ip], "rbdTimeoutSeconds": 10,
             "userID": "gantry", "keyFile": os.path.join(perf, "gantry.key")},
            {"clusterID": "capa", "monitors": ["%s:3400" % ip], "rbdTimeoutSeconds": 10,
             "userID": "gantry", "keyFile": os.path.join(capa, "gantry.key"),
             "copy": {"mode": "rbd-mirror", "mirrorTo": ["perf"]}}]}, f)

    def req(name, cluster, source=None):
        src = None
        if source:
            src = csi_pb2.VolumeContentSource(
                volume=csi_pb2.VolumeContentSource.VolumeSource(volume_id=source))
        mode = csi_pb2.VolumeCapability.AccessMode(
            mode=csi_pb2.VolumeCapability.AccessMode.MULTI_NODE_READER_ONLY)
        return csi_pb2.CreateVolumeRequest(
            name=name, parameters={"clusterID": cluster, "pool": "rbd"},
            volume_capabilities=[csi_pb2.VolumeCapability(
                block=csi_pb2.VolumeCapability.BlockVolume(), access_mode=mode)],
            capacity_range=csi_pb2.CapacityRange(required_bytes=SIZE),
            secrets={"userID": "gantry", "userKey": keys[cluster]}, volume_content_source=src)

    p = Plugin(mode="controller", node_id=None, config=cfg, workdir=work).start()
    try:
        far = p.call("CreateVolume", req("vm-mirror-src", "capa"), timeout=60).volume
        img = dict(far.volume_context)["imageName"]
        conf = ["-c", os.path.join(capa, "ceph.conf")]
        subprocess.run(["rbd", *conf, "bench", "--io-type", "write", "--io-pattern", "rand",
                        "--io-size", "1M", "--io-total", "24M", "rbd/" + img], check=True,
                       timeout=120, stdout=subprocess.DEVNULL)
        data = subprocess.run(["rbd", *conf, "export", "rbd/" + img, "-"], check=True,
                              timeout=120, capture_output=True).stdout
        want = hashlib.sha256(data).hexdigest()
        # the provisioner's loop: ABORTED (with the mirror progress) means call again
        deadline, aborted = time.monotonic() + 240, []
        while True:
            try:
                vol = p.call("CreateVolume", req("vm-mirror-dst", "perf", far.volume_id),
                             timeout=60).volume
                break
            except grpc.RpcError as e:
                if e.code() != grpc.StatusCode.ABORTED or time.monotonic() > deadline:
                    raise
                aborted.append(e.details())
            time.sleep(0.5)
        if not aborted or not aborted[0].startswith("mirroring vm-mirror-dst from capa: "):
            raise AssertionError("no mirror progress before OK: %r" % aborted[:3])
        dst = dict(vol.volume_context)["imageName"]
        print("mirror_promote.py: %s promoted through rbd-mirror after %d ABORTED answers "
              "(last: %s)" % (dst, len(aborted), aborted[-1]))
        with open(os.path.join(share, "mirrored"), "w") as f:
            f.write("%s %d %s\n" % (dst, SIZE, want))
    except BaseException:
        sys.stderr.write(p.read_log()[-3000:])
        raise
    finally:
        p.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main(*sys.argv[1:5])
