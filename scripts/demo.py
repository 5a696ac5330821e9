"""The Gantry demo, told as a story with timings.

Chapter 1 starts the CSI plugin and talks to it over its socket exactly as
kubelet and the CSI sidecars do. Later chapters (dataset volumes on a
throwaway Ceph cluster, placement of a training job) join as they land.
"""
import argparse
import os
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
    with client.Plugin(mode="all", node_id="gpu-node-1",
                       workdir=tempfile.mkdtemp(prefix="gantry-demo-")) as p:
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
        say("Probe: ready=%s" % p.call("Probe").ready.value, t)
    say("stopped the plugin (SIGTERM, drained)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    args = ap.parse_args()
    os.environ["GANTRY_BUILD_DIR"] = os.path.join(ROOT, args.build)
    sys.path.insert(0, os.path.join(ROOT, "tests", "conformance"))
    import csi_client
    t0 = time.monotonic()
    say("Gantry demo: tiered volumes and bandwidth-aware placement for GPU training")
    chapter_identity(csi_client)
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    import demo_scheduler
    demo_scheduler.chapter_placement(say, os.environ["GANTRY_BUILD_DIR"])
    say("\nDemo finished in %.1f s; nothing left running." % (time.monotonic() - t0))


if __name__ == "__main__":
    main()
