"""What the tests of the `ceph` label share: the fixture's clusters
(fixture.sh), the driver config naming them, the CSI client, and the `rbd`
and `rados` command lines to check from the outside what the plugin did.

GANTRY_CEPH_DIR names the fixture directory (set by CTest)."""
import atexit
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "conformance"))
import csi_client  # noqa: E402,F401
from csi_client import Plugin, csi_pb2  # noqa: E402,F401

DIR = os.environ.get("GANTRY_CEPH_DIR", "")
CONFIG = os.path.join(DIR, "gantry.json")
MODE = csi_pb2.VolumeCapability.AccessMode
UNIQUE = "%s-%d" % (os.environ.get("GANTRY_TEST_TAG", "t"), os.getpid())


def conf(cluster="perf"):
    return os.path.join(DIR, cluster, "ceph.conf")


def key(cluster="perf"):
    with open(os.path.join(DIR, cluster, "gantry.key")) as f:
        return f.read().strip()


def secrets(cluster="perf"):
    return {"userID": "gantry", "userKey": key(cluster)}


def tool(name, cluster, *args, check=True):
    """Runs the `rbd` or `rados` CLI as the cluster's admin (bounded)."""
    r = subprocess.run([name, "-c", conf(cluster), *args], capture_output=True, text=True,
                       timeout=120)
    if check and r.returncode != 0:
        raise AssertionError("%s %s: %s" % (name, " ".join(args), r.stderr))
    return r.stdout


def rbd_info(cluster, image, pool="rbd"):
    return json.loads(tool("rbd", cluster, "info", "--format", "json", "%s/%s" % (pool, image)))


def rbd_images(cluster="perf", pool="rbd"):
    import rbd
    io = admin_ioctx(cluster, pool)
    try:
        return set(rbd.RBD().list(io))
    finally:
        io.close()


def checksum(cluster, image, pool="rbd", length=None):
    """sha256 of the image's content (of its first @length bytes when given)."""
    import hashlib
    out = subprocess.run(["rbd", "-c", conf(cluster), "export", "%s/%s" % (pool, image), "-"],
                         capture_output=True, timeout=120, check=True).stdout
    return hashlib.sha256(out[:length] if length else out).hexdigest()


def export_import(src, dst, src_cluster="capa", dst_cluster="perf", data_pool="ecdata"):
    """`rbd export | rbd import` of @src ("image" or "image@snap", pool rbd)
    from @src_cluster into a new image @dst of @dst_cluster, its data in
    @data_pool: the baseline the copy benchmarks measure against."""
    exp = subprocess.Popen(["rbd", "-c", conf(src_cluster), "export", "--no-progress",
                            "rbd/" + src, "-"], stdout=subprocess.PIPE)
    imp = subprocess.run(["rbd", "-c", conf(dst_cluster), "import", "--no-progress",
                          "--data-pool", data_pool, "-", "rbd/" + dst], stdin=exp.stdout,
                         capture_output=True, timeout=1800)
    exp.stdout.close()
    if exp.wait(timeout=60) != 0 or imp.returncode != 0:
        raise RuntimeError("export | import failed: %s" % imp.stderr)


def fill(cluster, image, mib=8, pool="rbd"):
    """Writes @mib MiB of pseudo-random data at the start of @image."""
    tool("rbd", cluster, "bench", "--io-type", "write", "--io-pattern", "rand", "--io-size",
         "1M", "--io-total", "%dM" % mib, "%s/%s" % (pool, image))


_admins = {}


def _shutdown_admins():
    # python3-rados has no finalizer that shuts a handle down: a handle still
    # connected when the interpreter exits keeps librados' threads running
    # while the process's static destructors run, and the process may die of
    # SIGSEGV after every test passed
    while _admins:
        _admins.popitem()[1].shutdown()


atexit.register(_shutdown_admins)


def admin_ioctx(cluster="perf", pool="rbd"):
    """An ioctx as the cluster's admin (python3-rados), cached per process:
    one connection instead of a CLI process per check, shut down at exit."""
    import rados
    if cluster not in _admins:
        c = rados.Rados(conffile=conf(cluster), conf={"rados_osd_op_timeout": "30",
                                                       "rados_mon_op_timeout": "30"})
        c.connect(timeout=30)
        _admins[cluster] = c
    return _admins[cluster].open_ioctx(pool)


def omap_all(io, obj, prefix=""):
    import rados
    out = {}
    after = ""
    while True:
        with rados.ReadOpCtx() as op:
            it, _ = io.get_omap_vals(op, after, prefix, 1000)
            try:
                io.operate_read_op(op, obj)
            except rados.ObjectNotFound:
                return out
            page = [(k, v) for k, v in it]
        for k, v in page:
            out[k] = v.decode() if v is not None else ""
        if len(page) < 1000:
            return out
        after = page[-1][0]


# The first character of the journal's record keys in its directory object
# (controller/dataset/journal.c): "<RECORD><uuid>.<field>", after every name.
RECORD = "\U0010ffff"


def journal(cluster="perf", pool="rbd", kind="volume"):
    """{name: uuid} of the journal directory, and the set of record uuids
    (in the directory, and in the objects of earlier versions)."""
    io = admin_ioctx(cluster, pool)
    try:
        keys = omap_all(io, "gantry.%ss" % kind)
        directory = {k: v for k, v in keys.items() if not k.startswith(RECORD)}
        records = {k[1:].split(".", 1)[0] for k in keys if k.startswith(RECORD)}
        prefix = "gantry.%s." % kind
        records |= {o.key[len(prefix):] for o in io.list_objects() if o.key.startswith(prefix)}
        return directory, records
    finally:
        io.close()


def record(uuid, cluster="perf", pool="rbd", kind="volume"):
    """The journal record of @uuid as a dict ({} when absent): in the
    directory, else in an earlier version's object."""
    io = admin_ioctx(cluster, pool)
    try:
        prefix = RECORD + uuid + "."
        rec = {k[len(prefix):]: v for k, v in
               omap_all(io, "gantry.%ss" % kind, prefix).items()}
        return rec or omap_all(io, "gantry.%s.%s" % (kind, uuid))
    finally:
        io.close()


def legacy_record(uuid, fields, cluster="perf", pool="rbd", kind="volume"):
    """Writes @uuid's record as an earlier version did: its own object, with
    bare librados (what upgraded clusters hold)."""
    import rados
    io = admin_ioctx(cluster, pool)
    try:
        with rados.WriteOpCtx() as op:
            io.set_omap(op, tuple(fields), tuple(str(v).encode() for v in fields.values()))
            io.operate_write_op(op, "gantry.%s.%s" % (kind, uuid))
    finally:
        io.close()


def image_data_pool(cluster, image, pool="rbd"):
    import rbd
    io = admin_ioctx(cluster, pool)
    try:
        with rbd.Image(io, image, read_only=True) as img:
            pid = img.data_pool_id()
        return _admins[cluster].pool_reverse_lookup(pid)
    finally:
        io.close()


def uuid_of(volume_id):
    return volume_id[-36:]


def cap(mode=MODE.MULTI_NODE_READER_ONLY, block=False, fs_type=""):
    if block:
        return csi_pb2.VolumeCapability(block=csi_pb2.VolumeCapability.BlockVolume(),
                                        access_mode=MODE(mode=mode))
    return csi_pb2.VolumeCapability(mount=csi_pb2.VolumeCapability.MountVolume(fs_type=fs_type),
                                    access_mode=MODE(mode=mode))


def params(cluster="perf", **extra):
    p = {"clusterID": cluster, "pool": "rbd", "dataPool": "ecdata"}
    p.update(extra)
    return p


def create_req(name, cluster="perf", size=64 << 20, source_volume=None, source_snapshot=None,
               caps=None, **extra):
    src = None
    if source_volume:
        src = csi_pb2.VolumeContentSource(
            volume=csi_pb2.VolumeContentSource.VolumeSource(volume_id=source_volume))
    if source_snapshot:
        src = csi_pb2.VolumeContentSource(
            snapshot=csi_pb2.VolumeContentSource.SnapshotSource(snapshot_id=source_snapshot))
    return csi_pb2.CreateVolumeRequest(
        name=name, volume_capabilities=caps or [cap()], parameters=params(cluster, **extra),
        secrets=secrets(cluster), volume_content_source=src,
        capacity_range=csi_pb2.CapacityRange(required_bytes=size) if size else None)


def delete_req(volume_id, cluster="perf"):
    return csi_pb2.DeleteVolumeRequest(volume_id=volume_id, secrets=secrets(cluster))


def retry(fn, timeout=120.0):
    """Calls @fn until it does not answer ABORTED (an operation in flight), bounded."""
    import grpc
    deadline = time.monotonic() + timeout
    while True:
        try:
            return fn()
        except grpc.RpcError as e:
            if e.code() not in (grpc.StatusCode.ABORTED, grpc.StatusCode.UNAVAILABLE) or \
                    time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def assert_consistent(test, cluster="perf", pool="rbd"):
    """Every journal name has its record, every record its name, every
    gantry image its record: nothing orphaned anywhere in the pool."""
    directory, records = journal(cluster, pool)
    test.assertEqual(set(directory.values()), records, "journal directory vs records")
    images = {i[len("gantry-vol-"):] for i in rbd_images(cluster, pool)
              if i.startswith("gantry-vol-")}
    test.assertLessEqual(images, records, "images without a journal record")
    return directory, records, images


def provision(plugin, req, timeout=300.0, on_progress=None):
    """CreateVolume as external-provisioner drives it: ABORTED means "in
    progress, call again" (a copy from another cluster answers ABORTED with
    its progress until done), retried with a growing backoff, bounded by
    @timeout. @on_progress(message) sees each ABORTED message; returning True
    from it stops the loop (returns None). Returns (volume, messages)."""
    import grpc
    deadline = time.monotonic() + timeout
    backoff, messages = 0.05, []
    while True:
        try:
            return plugin.call("CreateVolume", req, timeout=60).volume, messages
        except grpc.RpcError as e:
            if e.code() != grpc.StatusCode.ABORTED or time.monotonic() > deadline:
                raise
            messages.append(e.details())
            if on_progress and on_progress(e.details()):
                return None, messages
        time.sleep(backoff)
        backoff = min(backoff * 1.5, 1.0)


def volume_id(cluster, pool, uuid):
    """The CSI volume ID the driver gives volume @uuid in @pool of @cluster."""
    io = admin_ioctx(cluster, pool)
    try:
        pool_id = io.get_pool_id()
    finally:
        io.close()
    return "0001-%04x-%s-%016x-%s" % (len(cluster), cluster, pool_id, uuid)


def copy_records(cluster="perf", pool="rbd"):
    """{uuid: record} of the promotions' "gantry.copies" object."""
    io = admin_ioctx(cluster, pool)
    try:
        return {k: json.loads(v) for k, v in omap_all(io, "gantry.copies").items()}
    finally:
        io.close()


def osd_write_bytes(cluster="perf"):
    """Client bytes written into @cluster's OSDs so far (op_w_in_bytes summed
    over its OSDs, read from each OSD at once, not from the mgr's periodic
    report): the test's measure of what a copy really wrote."""
    total = 0
    for osd in json.loads(tool("ceph", cluster, "osd", "ls", "--format", "json")):
        dump = json.loads(tool("ceph", cluster, "tell", "osd.%d" % osd, "perf", "dump", "osd"))
        total += dump["osd"]["op_w_in_bytes"]
    return total
