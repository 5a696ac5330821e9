"""Time to Bound of a promoted dataset through the real csi-provisioner, as a
ratio to `rbd export | rbd import` of the same image between the same
clusters, measured in the same run.

On the Ceph fixture's two clusters and a real control plane (tests/k8s:
the stock sidecars run with the exact args of manifests/controller.yaml,
so the provisioner's --timeout and --retry-interval-max are the shipped
ones): a dataset PVC of GANTRY_BENCH_BOUND_SIZE (default 2G) is born in
"capa", filled and snapshotted (VolumeSnapshot); then, for each value of
the source cluster's `copy.waitSeconds` in GANTRY_BENCH_BOUND_WAITS
(default "0,30": 0 is the field's default, when it is absent; 30 is what
manifests/config.yaml and the chart ship), the baseline is copied once more and
a PVC of the "perf" class with the VolumeSnapshot as its dataSource is
created and timed until it is Bound. gantry-csi and its sidecars are
restarted between values (the driver reads its config at start).

Prints each figure, the ratio Bound / baseline (the goal, <= 1.25, is for
the shipped value; its FIGURE line is what `make bench` sums up), and
whether the PVC's events showed the copy's progress ("copying ... N %"),
with the load average. Asserts nothing about time; fails only when a step
fails (a PVC never Bound, a checksum that differs). Skips (exit 77) like
the k8s tier without the Kubernetes binaries."""
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "k8s"))
import control_plane as cp  # noqa: E402
sys.path.insert(0, os.path.join(HERE, ".."))
from figure import figure  # noqa: E402

NS = "bench-bound"
SHIPPED_WAIT = 30  # copy.waitSeconds in manifests/config.yaml and the chart
PROGRESS = re.compile(r"copying \S+ from capa: \d+ %")
UNITS = {"M": 1 << 20, "G": 1 << 30}


def load():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def rbd(e, cluster, *args, timeout=1800):
    return subprocess.run(["rbd", "-c", e.conf(cluster), *args], capture_output=True,
                          text=True, timeout=timeout, check=True).stdout


def remove(e, cluster, image):
    subprocess.run(["rbd", "-c", e.conf(cluster), "rm", "--no-progress", "rbd/" + image],
                   capture_output=True, timeout=600)


def export_import(e, src, dst):
    """Seconds of the baseline: `rbd export | rbd import` capa -> perf (EC data pool)."""
    t0 = time.monotonic()
    e.export_import(src, dst)
    return time.monotonic() - t0


class Bench:
    def __init__(self, plane, size_text):
        import csi_stack
        from test_dataset_story import storage_classes
        self.cs, self.p, self.e = csi_stack, plane, csi_stack.ceph_env()
        self.size = int(size_text[:-1]) * UNITS[size_text[-1]]
        self.size_text = size_text
        self.config = os.path.join(plane.dir, "gantry.json")
        self.write_config(0)
        self.stack = csi_stack.CsiStack(plane, self.config)
        self.stack.apply_objects()
        for c in ("perf", "capa"):
            csi_stack.ceph_secret(plane, "gantry-ceph-" + c, self.e.secrets(c))
        classes = []
        for cluster in ("perf", "capa"):
            for c in storage_classes(cluster, "gantry-ceph-" + cluster):
                if c["metadata"]["name"] not in ("gantry-dataset", "gantry-dataset-snapshot"):
                    continue
                c["metadata"]["name"] += "-" + cluster
                if c["kind"] == "StorageClass":  # no pod: bind at once
                    c["volumeBindingMode"] = "Immediate"
                classes.append(c)
        csi_stack.apply(plane, classes)
        self.stack.start()
        csi_stack.user_namespace(plane, NS)

    def write_config(self, wait):
        cfg = self.cs.fixture_config()
        for c in cfg["clusters"]:
            if c["clusterID"] == "capa":
                c.setdefault("copy", {})["waitSeconds"] = wait
                if wait == 0:
                    del c["copy"]["waitSeconds"]  # as shipped: the field absent
                if not c["copy"]:
                    del c["copy"]
        with open(self.config, "w") as f:
            json.dump(cfg, f)

    def leases(self):
        return self.p.log("csi-provisioner").count("successfully acquired lease")

    def restart(self, wait):
        """gantry-csi and its sidecars (they exit when its socket goes) again,
        on a config with @wait; returns once the provisioner leads again."""
        names = [n for n in self.stack.names if n != "snapshot-controller"]
        held = self.leases()
        for name in reversed(names):
            self.p.stop_proc(name)
        self.write_config(wait)
        if os.path.exists(self.stack.socket):
            os.unlink(self.stack.socket)
        self.p.start_proc("gantry-csi")
        cp.wait_for(lambda: os.path.exists(self.stack.socket), 30, "the gantry-csi socket")
        for name in names[1:]:
            self.p.start_proc(name)
        cp.wait_for(lambda: self.leases() > held, 120, "the provisioner's lease", 0.5)

    def checksum(self, cluster, image):
        """sha256 of the image, streamed (no 2 GiB in memory)."""
        r = subprocess.run("rbd -c %s export --no-progress rbd/%s - | sha256sum"
                           % (self.e.conf(cluster), image), shell=True, capture_output=True,
                           text=True, timeout=1800, check=True)
        return r.stdout.split()[0]

    def clean(self):
        """Every claim and the snapshot deleted; waits for their PVs and
        snapshot contents to go (the images with them)."""
        base = "/api/v1/namespaces/%s/persistentvolumeclaims" % NS
        snaps = "/apis/snapshot.storage.k8s.io/v1/namespaces/%s/volumesnapshots" % NS
        for s in self.api("GET", snaps)["items"]:
            self.api("DELETE", "%s/%s" % (snaps, s["metadata"]["name"]))
        cp.wait_for(lambda: not self.api(
            "GET", "/apis/snapshot.storage.k8s.io/v1/volumesnapshotcontents")["items"], 300,
            "the VolumeSnapshotContents deleted", 0.5)
        for c in self.api("GET", base)["items"]:
            self.api("DELETE", "%s/%s" % (base, c["metadata"]["name"]))
        cp.wait_for(lambda: not self.api("GET", "/api/v1/persistentvolumes")["items"], 300,
                    "every PV deleted", 0.5)

    def api(self, method, path, body=None):
        return self.p.api(method, path, body)

    def claim(self, name, sc, source=None):
        spec = {"accessModes": ["ReadOnlyMany"], "storageClassName": sc,
                "resources": {"requests": {"storage": self.size_text + "i"}}}
        if source:
            spec["dataSource"] = {"apiGroup": "snapshot.storage.k8s.io",
                                  "kind": "VolumeSnapshot", "name": source}
        self.api("POST", "/api/v1/namespaces/%s/persistentvolumeclaims" % NS, {
            "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
            "spec": spec})

    def bound(self, claim, timeout):
        def pv():
            o = self.api("GET", "/api/v1/namespaces/%s/persistentvolumeclaims/%s" % (NS, claim))
            return o["spec"]["volumeName"] if o["status"].get("phase") == "Bound" else None
        name = cp.wait_for(pv, timeout, "PVC %s Bound" % claim, 0.1)
        return self.api("GET", "/api/v1/persistentvolumes/" + name)

    def delete_claim(self, claim, pv_name):
        self.api("DELETE", "/api/v1/namespaces/%s/persistentvolumeclaims/%s" % (NS, claim))
        cp.wait_for(lambda: pv_name not in {v["metadata"]["name"] for v in self.api(
            "GET", "/api/v1/persistentvolumes")["items"]}, 300, "PV %s deleted" % pv_name, 0.5)

    def source(self):
        """The dataset in capa: filled, snapshotted; returns its image."""
        self.claim("source", "gantry-dataset-capa")
        pv = self.bound("source", 180)
        image = pv["spec"]["csi"]["volumeAttributes"]["imageName"]
        rbd(self.e, "capa", "bench", "--io-type", "write", "--io-pattern", "seq", "--io-size",
            "4M", "--io-threads", "8", "--io-total", str(self.size), "rbd/" + image)
        self.api("POST", "/apis/snapshot.storage.k8s.io/v1/namespaces/%s/volumesnapshots" % NS, {
            "apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshot",
            "metadata": {"name": "source-snap"},
            "spec": {"volumeSnapshotClassName": "gantry-dataset-snapshot-capa",
                     "source": {"persistentVolumeClaimName": "source"}}})
        cp.wait_for(lambda: self.api(
            "GET", "/apis/snapshot.storage.k8s.io/v1/namespaces/%s/volumesnapshots/source-snap"
            % NS).get("status", {}).get("readyToUse"), 180, "the source snapshot readyToUse")
        return image

    def promote(self, name):
        """Seconds from the PVC's creation to Bound, its events' messages, its PV."""
        t0 = time.monotonic()
        self.claim(name, "gantry-dataset-perf", source="source-snap")
        pv = self.bound(name, 1800)
        secs = time.monotonic() - t0
        events = self.p.events(NS, "PersistentVolumeClaim", name)
        return secs, [ev["message"] for ev in events], pv


def run(plane):
    size = os.environ.get("GANTRY_BENCH_BOUND_SIZE", "2G")
    waits = [int(w) for w in os.environ.get("GANTRY_BENCH_BOUND_WAITS", "0,30").split(",")]
    b = Bench(plane, size)
    try:
        measure(b, size, waits)
    finally:
        b.clean()
    bad = b.stack.dead()
    if bad:
        raise AssertionError("died during the run: %s" % bad)


def measure(b, size, waits):
    e = b.e
    src = b.source()
    want = b.checksum("capa", src)
    print("time to Bound of a %s promotion capa -> perf, real csi-provisioner "
          "(manifests' args), load %s" % (size, load()))
    print("%-22s %12s %10s %9s %16s" % ("copy.waitSeconds", "baseline s", "Bound s", "ratio",
                                         "progress events"))
    rows = []
    for i, wait in enumerate(waits):
        dst = "bench-bound-baseline-%d" % os.getpid()
        base = export_import(e, src, dst)
        remove(e, "perf", dst)
        if i or wait:
            b.restart(wait)
        secs, msgs, pv = b.promote("promoted-%d" % i)
        progress = [m for m in msgs if PROGRESS.search(m)]
        image = pv["spec"]["csi"]["volumeAttributes"]["imageName"]
        if b.checksum("perf", image) != want:
            raise AssertionError("the promoted image differs from its source")
        rows.append((wait, base, secs, len(progress)))
        print("%-22d %12.1f %10.1f %9.2f %16d" % (wait, base, secs, secs / base, len(progress)))
        for m in progress[-3:]:
            print("    event: ... %s" % m[PROGRESS.search(m).start():][:120])
        sys.stdout.flush()
        b.delete_claim("promoted-%d" % i, pv["metadata"]["name"])
    print("load %s" % load())
    for wait, base, secs, n in rows:
        figure("bound_vs_export_import_wait%d" % wait, secs / base,
               "<=1.25" if wait == SHIPPED_WAIT else None,
               "time to Bound of a %s promotion ÷ rbd export|import, copy.waitSeconds %d%s "
               "(%d progress events)" % (size, wait, " as shipped" if wait == SHIPPED_WAIT else "", n))


def main():
    reason = cp.skip_reason()
    if reason:
        sys.stderr.write("\n*** SKIPPED: bench_bound did not run: %s ***\n\n" % reason)
        print("SKIPPED: %s" % reason)
        sys.exit(cp.SKIP_CODE)
    import csi_stack
    plane = cp.ControlPlane(os.environ.get("GANTRY_TEST_TAG", "bench_bound"), controllers=True,
                            scheduler_config=csi_stack.SCHEDULER)
    plane.start()
    try:
        run(plane)
    except BaseException:
        plane.print_logs(60)
        raise
    finally:
        plane.stop()


if __name__ == "__main__":
    main()
