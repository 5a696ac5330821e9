"""Copy throughput of the tier copier between the fixture's two clusters
("capa" -> "perf", EC data pools), as a ratio to `rbd export | rbd import`
of the same image between the same clusters, measured in the same run;
alongside: librbd's rbd_copy3 (what CreateVolume did before promotion) and
rbd_deep_copy across the two clusters (python3-rbd), and the destination's
own write limit (`rbd bench --io-type write`, 4 MiB writes, 16 in flight).

Sizes: 64 MiB and 1 GiB; GANTRY_BENCH_TIER_SIZES="64M,1G,4G" to choose (the
fixture's OSDs are 3 GiB each: 4 GiB fits, one image per cluster at a time).
Prints figures; asserts nothing about time."""
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "tests", "ceph"))
import ceph_env as env  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from figure import figure  # noqa: E402

TOOL = os.path.join(os.environ.get("GANTRY_BUILD_DIR", "build"), "tests", "tier-copy")
UNITS = {"M": 1 << 20, "G": 1 << 30}


def size_of(text):
    return int(text[:-1]) * UNITS[text[-1]]


def rbd(cluster, *args, timeout=1800):
    return subprocess.run(["rbd", "-c", env.conf(cluster), *args], capture_output=True,
                          text=True, timeout=timeout, check=True).stdout


def remove(cluster, image):
    subprocess.run(["rbd", "-c", env.conf(cluster), "snap", "purge", "rbd/" + image],
                   capture_output=True, timeout=600)
    subprocess.run(["rbd", "-c", env.conf(cluster), "rm", "--no-progress", "rbd/" + image],
                   capture_output=True, timeout=600)


def timed(fn):
    t0 = time.monotonic()
    fn()
    return time.monotonic() - t0


def tier_copy(src, dst, in_flight):
    out = subprocess.run([TOOL, "--src-conf", env.conf("capa"), "--src-image", src,
                          "--src-snap", "s1", "--dst-conf", env.conf("perf"), "--dst-image", dst,
                          "--create", "--data-pool", "ecdata", "--in-flight", str(in_flight)],
                         capture_output=True, text=True, timeout=1800, check=True).stdout
    done = [json.loads(x) for x in out.splitlines() if '"done"' in x][0]
    if done["result"] != 0:
        raise RuntimeError("tier-copy: %s" % done)


def librbd_copy(src, dst, deep):
    import rados
    import rbd as rbdlib
    clusters = []
    try:
        ios = []
        for c in ("capa", "perf"):
            r = rados.Rados(conffile=env.conf(c))
            r.connect(timeout=30)
            clusters.append(r)
            ios.append(r.open_ioctx("rbd"))
        with rbdlib.Image(ios[0], src, snapshot="s1", read_only=True) as img:
            if deep:
                img.deep_copy(ios[1], dst, data_pool="ecdata")
            else:
                img.copy(ios[1], dst, data_pool="ecdata")
        for io in ios:
            io.close()
    finally:
        for r in clusters:
            r.shutdown()


def bench_write(size):
    name = "bench-tier-w-%d" % os.getpid()
    rbd("perf", "create", "--size", str(size // (1 << 20)), "--data-pool", "ecdata",
        "rbd/" + name)
    try:
        return timed(lambda: rbd("perf", "bench", "--io-type", "write", "--io-size", "4M",
                                 "--io-threads", "16", "--io-pattern", "seq", "--io-total",
                                 str(size), "rbd/" + name))
    finally:
        remove("perf", name)


def one_size(text):
    size = size_of(text)
    src = "bench-tier-src-%s-%d" % (text, os.getpid())
    rbd("capa", "create", "--size", str(size // (1 << 20)), "--data-pool", "ecdata", "rbd/" + src)
    try:
        rbd("capa", "bench", "--io-type", "write", "--io-size", "4M", "--io-threads", "8",
            "--io-pattern", "seq", "--io-total", str(size), "rbd/" + src)
        rbd("capa", "snap", "create", "rbd/%s@s1" % src)
        want = env.checksum("capa", src + "@s1") if size <= (1 << 30) else None
        methods = [
            ("rbd export | rbd import", lambda d: env.export_import(src + "@s1", d)),
            ("tier copier, 16 in flight", lambda d: tier_copy(src, d, 16)),
            ("tier copier, 32 in flight", lambda d: tier_copy(src, d, 32)),
            ("rbd_copy3 (librbd)", lambda d: librbd_copy(src, d, False)),
            ("rbd_deep_copy (librbd)", lambda d: librbd_copy(src, d, True)),
        ]
        rows = []
        for label, fn in methods:
            dst = "bench-tier-dst-%d" % os.getpid()
            try:
                secs = timed(lambda: fn(dst))
                if want and env.checksum("perf", dst) != want:
                    raise RuntimeError("%s: the copy differs from the source" % label)
            finally:
                remove("perf", dst)
            rows.append((label, secs))
        rows.append(("rbd bench --io-type write (dest)", bench_write(size)))
        return rows
    finally:
        remove("capa", src)


def main():
    sizes = os.environ.get("GANTRY_BENCH_TIER_SIZES", "64M,1G").split(",")
    for text in sizes:
        rows = one_size(text)
        size = size_of(text)
        base = rows[0][1]
        write = rows[-1][1]
        print("\nbench_tier %s (capa -> perf, EC 2+1 data pools, random data, no holes)" % text)
        print("%-34s %9s %10s %16s %14s" % ("method", "seconds", "MB/s", "vs export|import",
                                            "of dest write"))
        for label, secs in rows:
            print("%-34s %9.2f %10.1f %15.2fx %13.0f %%" % (label, secs, size / secs / 1e6,
                                                            base / secs, 100 * write / secs))
        for label, secs in rows[1:-1]:
            slug = re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_")
            figure("tier_%s_%s_vs_export_import" % (slug, text), base / secs, None,
                   "speed of %s ÷ rbd export|import, %s" % (label, text))


if __name__ == "__main__":
    main()
