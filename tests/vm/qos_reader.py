"""Reads a block device flat out from inside a cgroup, as a training pod's
data loader would, or writes a file flat out, as a checkpoint burst would
(run by test_qos.py in the VM).

    python3 qos_reader.py CGROUP_DIR PATH SECONDS [read|write] [THREADS] [progress]

Moves itself into CGROUP_DIR (cgroup.procs) before opening PATH, then reads
it with O_DIRECT from THREADS threads at once (default 4; each its own part
of PATH, 256 KiB requests, wrapping) for SECONDS -- several requests in
flight, as a data loader keeps, so the cap and not one request's latency
sets the rate -- or, with "write", writes PATH (created) with O_DIRECT from
THREADS threads too (each its own part of the first 16 MiB, wrapping: one
request at a time would leave a request's latency on a loaded host, not the
cap, setting the rate). Prints "bytes=N seconds=S" (S measured,
monotonic). With "progress" it also prints "at=T total=N" (CLOCK_MONOTONIC,
the same in every process of the guest; N the bytes moved so far) five
times a second, and stops early when its standard input closes: one
reader, one open of PATH, followed for as long as the test needs. Its
requests are then 64 KiB, so that a rate read over a few seconds is not
off by a whole large request."""
import mmap
import os
import sys
import threading
import time

REQUEST = 256 << 10
PROGRESS_REQUEST = 64 << 10
THREADS = 4


def worker(fd, io, start, size, end, out, i, req):
    """Moves @req-byte requests until the monotonic time end[0]; out[i]: its bytes so far."""
    buf = mmap.mmap(-1, req)  # page-aligned, as O_DIRECT wants
    if io is os.pwritev:
        buf.write(os.urandom(req))
    total, off = 0, 0
    while time.monotonic() < end[0]:
        if off + req > size:
            off = 0
        n = io(fd, [buf], start + off)
        if n <= 0:
            off = 0
            continue
        total += n
        off += n
        out[i] = total


def stop_at_eof(end):
    sys.stdin.read()
    end[0] = min(end[0], time.monotonic())


def main(cgroup, path, seconds, write=False, threads=THREADS, progress=False):
    with open(os.path.join(cgroup, "cgroup.procs"), "w") as f:
        f.write(str(os.getpid()))
    req = PROGRESS_REQUEST if progress else REQUEST
    if write:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_DIRECT, 0o644)
        n, io = threads, os.pwritev
        part = (16 << 20) // n // req * req
    else:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
        n, io = threads, os.preadv
        part = os.lseek(fd, 0, os.SEEK_END) // n // req * req
    out = [0] * n
    t0 = time.monotonic()
    end = [t0 + seconds]
    threads = [threading.Thread(target=worker, args=(fd, io, i * part, part, end, out, i, req))
               for i in range(n)]
    for t in threads:
        t.start()
    if progress:
        threading.Thread(target=stop_at_eof, args=(end,), daemon=True).start()
        while any(t.is_alive() for t in threads):
            print("at=%.3f total=%d" % (time.monotonic(), sum(out)), flush=True)
            time.sleep(0.2)
    for t in threads:
        t.join()
    elapsed = time.monotonic() - t0
    os.close(fd)
    print("bytes=%d seconds=%.3f" % (sum(out), elapsed))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4:5] == ["write"],
         int(sys.argv[5]) if len(sys.argv) > 5 else THREADS, sys.argv[6:7] == ["progress"])
