"""A training pod's data loader for the fault tests (run in the VM by
test_dataset_faults.py): reads a dataset block device flat out from inside
the pod's cgroup and checks every byte against the known pattern
(dataset_pattern.py), until told to stop.

    python3 fault_reader.py CGROUP_DIR DEVICE SEED seq|rand THREADS STOPFILE OUT

Moves itself into CGROUP_DIR (cgroup.procs), opens DEVICE with O_DIRECT and
reads it from THREADS threads, each over its own part: "seq" 256 KiB
requests in order, wrapping (an epoch over its shard), "rand" 64 KiB
requests at random 4 KiB-aligned offsets (a shuffled sampler). It stops
when STOPFILE exists; every request in flight then completes first. Once
its first read completes it creates OUT.reading (the test's healthy phase
starts when every reader is reading). OUT gets JSON: per read its start and end (CLOCK_MONOTONIC, the guest's, the
same in every process) and size, and the totals: bytes, reads, errors (a
failed or short read), wrong_bytes (bytes unequal to the pattern), passes
(the fewest whole passes a "seq" thread made over its part)."""
import json
import mmap
import os
import random
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dataset_pattern import BLOCK, expected  # noqa: E402

SIZES = {"seq": 256 << 10, "rand": 64 << 10}


class Thread(threading.Thread):
    def __init__(self, fd, seed, mode, start, size, stopfile, reading):
        super().__init__()
        self.reading = reading
        self.fd, self.seed, self.mode = fd, seed, mode
        self.base, self.size, self.stopfile = start, size, stopfile
        self.req = SIZES[mode]
        self.t0, self.t1 = [], []
        self.errors = self.wrong = self.bytes = self.passes = 0
        self.first_error = None

    def run(self):
        buf = mmap.mmap(-1, self.req)  # page-aligned, as O_DIRECT wants
        rng = random.Random(self.base)
        off = 0
        while not os.path.exists(self.stopfile):
            if self.mode == "rand":
                off = rng.randrange(0, (self.size - self.req) // BLOCK + 1) * BLOCK
            elif off + self.req > self.size:
                off = 0
                self.passes += 1
            pos = self.base + off
            t0 = time.monotonic()
            try:
                n = os.preadv(self.fd, [buf], pos)
            except OSError as e:
                n = -1
                self.first_error = self.first_error or "%s at %d" % (e, pos)
            t1 = time.monotonic()
            self.t0.append(t0)
            self.t1.append(t1)
            if len(self.t1) == 1:
                open(self.reading, "w").close()
            if n != self.req:
                self.errors += 1
                if n >= 0:
                    self.first_error = self.first_error or "short read %d at %d" % (n, pos)
                continue
            self.bytes += n
            want = expected(pos, n, self.seed)
            if buf[:n] != want:
                got = buf[:n]
                self.wrong += sum(1 for a, b in zip(got, want) if a != b)
                self.first_error = self.first_error or "wrong bytes at %d" % pos
            off += self.req


def main(cgroup, device, seed, mode, threads, stopfile, out):
    with open(os.path.join(cgroup, "cgroup.procs"), "w") as f:
        f.write(str(os.getpid()))
    fd = os.open(device, os.O_RDONLY | os.O_DIRECT)
    part = os.lseek(fd, 0, os.SEEK_END) // threads // SIZES["seq"] * SIZES["seq"]
    ts = [Thread(fd, seed, mode, i * part, part, stopfile, out + ".reading")
          for i in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    os.close(fd)
    res = {"mode": mode, "part": part,
           "t0": [x for t in ts for x in t.t0], "t1": [x for t in ts for x in t.t1],
           "req": SIZES[mode], "bytes": sum(t.bytes for t in ts),
           "reads": sum(len(t.t0) for t in ts), "errors": sum(t.errors for t in ts),
           "wrong_bytes": sum(t.wrong for t in ts),
           "passes": min(t.passes for t in ts) if mode == "seq" else None,
           "first_error": next((t.first_error for t in ts if t.first_error), None)}
    with open(out + ".tmp", "w") as f:
        json.dump(res, f)
    os.rename(out + ".tmp", out)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5]),
         sys.argv[6], sys.argv[7])
