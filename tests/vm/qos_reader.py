"""Reads a block device flat out from inside a cgroup, as a training pod's
data loader would, or writes a file flat out, as a checkpoint burst would
(run by test_qos.py in the VM).

    python3 qos_reader.py CGROUP_DIR PATH SECONDS [read|write] [THREADS]

Moves itself into CGROUP_DIR (cgroup.procs) before opening PATH, then reads
it with O_DIRECT from THREADS threads at once (default 4; each its own part
of PATH, 256 KiB requests, wrapping) for SECONDS -- several requests in
flight, as a data loader keeps, so the cap and not one request's latency
sets the rate -- or, with "write", writes PATH (created) with O_DIRECT from
one thread, wrapping at 16 MiB. Prints "bytes=N seconds=S" (S measured,
monotonic)."""
import mmap
import os
import sys
import threading
import time

REQUEST = 256 << 10
THREADS = 4


def worker(fd, io, start, size, end, out, i):
    buf = mmap.mmap(-1, REQUEST)  # page-aligned, as O_DIRECT wants
    if io is os.pwritev:
        buf.write(os.urandom(REQUEST))
    total, off = 0, 0
    while time.monotonic() < end:
        if off + REQUEST > size:
            off = 0
        n = io(fd, [buf], start + off)
        if n <= 0:
            off = 0
            continue
        total += n
        off += n
    out[i] = total


def main(cgroup, path, seconds, write=False, threads=THREADS):
    with open(os.path.join(cgroup, "cgroup.procs"), "w") as f:
        f.write(str(os.getpid()))
    if write:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_DIRECT, 0o644)
        n, part, io = 1, 16 << 20, os.pwritev
    else:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
        n, io = threads, os.preadv
        part = os.lseek(fd, 0, os.SEEK_END) // n // REQUEST * REQUEST
    out = [0] * n
    t0 = time.monotonic()
    threads = [threading.Thread(target=worker, args=(fd, io, i * part, part, t0 + seconds, out, i))
               for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - t0
    os.close(fd)
    print("bytes=%d seconds=%.3f" % (sum(out), elapsed))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4:5] == ["write"],
         int(sys.argv[5]) if len(sys.argv) > 5 else THREADS)
