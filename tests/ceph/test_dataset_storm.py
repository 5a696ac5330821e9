"""Concurrency and crash safety of dataset CreateVolume against the real
cluster: many concurrent requests over few names give one image per name;
a plugin killed with SIGKILL in the middle of a create storm, restarted,
and asked every request again leaves each name with exactly one image and
nothing orphaned in the journal or the pool."""
import concurrent.futures
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


if __name__ == "__main__":
    unittest.main()
