"""Concurrency and crash safety of dataset CreateVolume against the real
cluster: many concurrent requests over few names give one image per name;
a plugin killed with SIGKILL in the middle of a create storm, restarted,
and asked every request again leaves each name with exactly one image and
nothing orphaned in the journal or the pool; creates and deletes of one name
racing each other leave nothing orphaned either."""
import concurrent.futures
import threading
import time
import unittest

import grpc

import ceph_env as env
from ceph_env import Plugin


def ours(directory, prefix):
    return {n: u for n, u in directory.items() if n.startswith(prefix)}


class StormTest(unittest.TestCase):
    def plugin(self):
        p = Plugin(mode="controller", node_id=None, config=env.CONFIG, extra=["--workers", "8"])
        self.addCleanup(p.cleanup)
        self.addCleanup(p.stop)
        return p.start()

    def create_all(self, p, names, threads, req=lambda n: env.create_req(n, size=16 << 20)):
        def one(name):
            return env.retry(lambda: p.call("CreateVolume", req(name),
                                            timeout=120)).volume.volume_id
        with concurrent.futures.ThreadPoolExecutor(max_workers=threads) as pool:
            return list(pool.map(one, names))

    def delete_all(self, p, ids):
        """Deletes every volume; a killed plugin's watches keep an image busy
        (FAILED_PRECONDITION) until the OSDs expire them, as a CO would see."""
        for vid in set(ids):
            deadline = time.monotonic() + 120
            while True:
                try:
                    env.retry(lambda: p.call("DeleteVolume", env.delete_req(vid), timeout=120))
                    break
                except grpc.RpcError as e:
                    if e.code() != grpc.StatusCode.FAILED_PRECONDITION or \
                            time.monotonic() > deadline:
                        raise
                    print("waiting for a dead watch: %s" % e.details())
                    time.sleep(1)

    def check_one_image_per_name(self, prefix, names, ids):
        by_name = {}
        for n, vid in zip(names, ids):
            by_name.setdefault(n, set()).add(vid)
        for n, vids in by_name.items():
            self.assertEqual(len(vids), 1, "%s answered with %s" % (n, vids))
        directory, records, images = env.assert_consistent(self)
        mine = ours(directory, prefix)
        mine.pop(prefix + "src", None)
        self.assertEqual(set(mine), set(names))
        self.assertEqual({env.uuid_of(v) for v in ids}, set(mine.values()))
        self.assertLessEqual(set(mine.values()), images, "a name without its image")
        for uuid in mine.values():
            self.assertEqual(env.record(uuid).get("ready"), "1", uuid)
            self.assertEqual(env.image_data_pool("perf", "gantry-vol-" + uuid), "ecdata")

    def check_nothing_left(self, prefix, ids):
        directory, records, images = env.assert_consistent(self)
        self.assertEqual(ours(directory, prefix), {})
        uuids = {env.uuid_of(v) for v in ids}
        self.assertEqual(uuids & records, set())
        self.assertEqual(uuids & images, set())

    def test_32_concurrent_creates_over_8_names(self):
        prefix = "storm-%s-" % env.UNIQUE
        names = [prefix + str(i % 8) for i in range(32)]
        p = self.plugin()
        ids = self.create_all(p, names, 32)
        # concurrent cache misses share one connection (the others are shut down); the
        # controller's scan for unfinished copies at start shares it too
        self.assertEqual(p.read_log().count("event=ceph.connected cluster=perf"), 1, p.read_log())
        self.assertEqual(len(set(ids)), 8)
        self.check_one_image_per_name(prefix, names, ids)
        self.delete_all(p, ids)
        self.check_nothing_left(prefix, ids)

    def test_kill_9_during_create_storm_then_retry(self):
        prefix = "crash-%s-" % env.UNIQUE
        names = [prefix + str(i) for i in range(16)]
        p = self.plugin()
        # copies of a filled volume: each create moves data, so the kill lands mid-copy
        src = p.call("CreateVolume", env.create_req(prefix + "src", size=16 << 20),
                     timeout=120).volume.volume_id
        env.fill("perf", "gantry-vol-" + env.uuid_of(src), mib=16)

        def req(name):
            return env.create_req(name, size=16 << 20, source_volume=src)
        storm = concurrent.futures.ThreadPoolExecutor(max_workers=16)

        def attempt(name):
            try:
                p.call("CreateVolume", req(name), timeout=120)
            except grpc.RpcError:
                pass  # the plugin dies under it
        futures = [storm.submit(attempt, n) for n in names]
        # kill once the first copies are done, while the others are in flight
        deadline = time.monotonic() + 120
        while p.read_log().count("event=dataset.volume_created") < 3:
            self.assertLess(time.monotonic(), deadline, "no volume was created")
            time.sleep(0.01)
        p.kill()
        for f in futures:
            f.result(timeout=180)
        storm.shutdown()
        reserved = ours(env.journal()[0], prefix)
        done = [u for u in reserved.values() if env.record(u).get("ready") == "1"]
        print("at the kill: %d reserved, %d complete of %d" % (len(reserved), len(done),
                                                                 len(names)))
        self.assertLess(len(done), len(names), "the storm finished before the kill")

        p2 = self.plugin()
        ids = self.create_all(p2, names, 8, req)
        self.assertEqual(len(set(ids)), len(names))
        self.check_one_image_per_name(prefix, names, ids)
        self.delete_all(p2, ids + [src])
        self.check_nothing_left(prefix, ids + [src])

    def trash_ids(self, image):
        """The ids of @image's entries in the pool's RBD trash (librbd's own
        omap: `rbd trash ls` leaves out an image that rbd_remove() moved there)."""
        import rados
        io = env.admin_ioctx()
        try:
            with rados.ReadOpCtx() as op:
                it, _ = io.get_omap_vals(op, "", "id_", 1000)
                try:
                    io.operate_read_op(op, "rbd_trash")
                except rados.ObjectNotFound:
                    return []
                return [k[3:] for k, v in it if image.encode() in v]
        finally:
            io.close()

    def test_delete_killed_while_librbd_deletes_the_objects(self):
        """DeleteVolume's short way removes the record while librbd deletes
        the image's objects, the image already in the RBD trash: a plugin
        killed then leaves the image there and no record. The retried
        DeleteVolume finishes it from the trash (the uuid in the volume ID
        names the image) and leaves nothing."""
        p = self.plugin()
        name = env.UNIQUE + "-trim"
        # 16 GiB: 4,096 objects to delete, a second or more of librbd's trim to kill it in
        vid = p.call("CreateVolume", env.create_req(name, size=16 << 30),
                     timeout=120).volume.volume_id
        u = env.uuid_of(vid)
        image = "gantry-vol-" + u
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
        self.addCleanup(pool.shutdown)
        deleting = pool.submit(p.call, "DeleteVolume", env.delete_req(vid), 120)
        deadline = time.monotonic() + 60
        while u in env.journal()[1]:
            self.assertLess(time.monotonic(), deadline, "the record was never removed")
            time.sleep(0.002)
        self.assertFalse(deleting.done(), "DeleteVolume answered before the kill")
        p.kill()
        with self.assertRaises(grpc.RpcError):
            deleting.result(timeout=30)
        ids = self.trash_ids(image)
        self.assertEqual(len(ids), 1, "the image is not in the trash")
        self.assertNotIn(name, env.journal()[0])
        # the dead plugin's watch on the image would hold it for the OSDs' watch timeout
        # (30 s); an operator blocklists the dead client instead
        for line in env.tool("rados", "perf", "-p", "rbd", "listwatchers",
                             "rbd_header." + ids[0]).splitlines():
            env.tool("ceph", "perf", "osd", "blocklist", "add", line.split()[0].split("=")[1])
        p2 = self.plugin()
        env.retry(lambda: p2.call("DeleteVolume", env.delete_req(vid), timeout=120), timeout=90)
        self.assertEqual(self.trash_ids(image), [])
        self.assertNotIn(image, env.rbd_images())
        directory, records = env.journal()
        self.assertNotIn(name, directory)
        self.assertNotIn(u, records)

    def test_creates_racing_deletes_of_one_name(self):
        """CreateVolume of one name from four threads while a fifth deletes
        each new volume ID they answer (a CO retrying a create while the delete
        of the name's previous volume runs), for a few seconds: every answer
        is OK or ABORTED (a try-lock held), and after the last delete nothing
        of the name is left, no image without its record or record without
        its name.

        It covers CreateVolume's re-read of the name under the volume lock
        (reserve_locked() in controller/dataset/dataset_volume.c): a delete that
        completes between the create's lookup of the name and its taking of
        "volume:<uuid>" must send the create round for a fresh reservation.
        That window is microseconds and a delete against Ceph takes
        milliseconds, so this test did NOT fail before the re-read existed
        (no honest way to widen the window without a hook in the code); it
        guards the create/delete interleaving as a whole."""
        name = "race-%s-x" % env.UNIQUE
        p = self.plugin()
        ids, gone, answered = set(), set(), threading.Condition()
        stop = time.monotonic() + 6
        counts = {"created": 0, "deleted": 0, "aborted": 0}

        def count(key):
            with answered:
                counts[key] += 1

        def creator():
            while time.monotonic() < stop:
                try:
                    vid = p.call("CreateVolume", env.create_req(name, size=16 << 20),
                                 timeout=60).volume.volume_id
                except grpc.RpcError as e:
                    self.assertEqual(e.code(), grpc.StatusCode.ABORTED, e.details())
                    count("aborted")
                    time.sleep(0.01)  # a CO's retry backoff, as env.retry
                    continue
                with answered:
                    ids.add(vid)
                    counts["created"] += 1
                    answered.notify()

        def deleter():
            while time.monotonic() < stop:
                with answered:
                    answered.wait_for(lambda: ids - gone, timeout=max(0.0, stop - time.monotonic()))
                    pending = list(ids - gone)
                for vid in pending:
                    try:
                        p.call("DeleteVolume", env.delete_req(vid), timeout=60)
                        with answered:
                            gone.add(vid)
                            counts["deleted"] += 1
                    except grpc.RpcError as e:
                        self.assertEqual(e.code(), grpc.StatusCode.ABORTED, e.details())
                        count("aborted")

        with concurrent.futures.ThreadPoolExecutor(max_workers=5) as pool:
            futures = [pool.submit(creator) for _ in range(4)] + [pool.submit(deleter)]
            for f in futures:
                f.result()
        print("creates racing deletes: %s, %d volume IDs" % (counts, len(ids)))
        # the name was made again after a delete: creates and deletes interleaved
        self.assertGreater(len(ids), 1, counts)
        self.assertGreater(counts["deleted"], 0)
        self.delete_all(p, ids)
        self.check_nothing_left("race-%s-" % env.UNIQUE, ids)


if __name__ == "__main__":
    unittest.main()
