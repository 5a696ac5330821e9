"""A checkpoint burst under NVMe path faults, shared by the VM test
(tests/vm/test_checkpoint.py, which asserts what it finds) and the VM bench
(bench/checkpoint/bench_checkpoint.py, which prints its figures).

A burst writes a file in 1 MiB chunks, each followed by fsync, as a trainer
saving a checkpoint does; a chunk counts as acknowledged once its fsync
returned. Every chunk's bytes follow from a seed and its index (SHAKE-128),
so a read-back compares every byte without keeping a copy. A fault is cut
into a running burst from another thread once the writer is some chunks in,
so I/O is in flight on the path that drops.

Paths are cut on the target side, in the kernel's nvmet configfs: removing
the subsystem's link from a port closes that path's connections (and stops
the listener when nothing else is offered there); restoring the link lets
the host's reconnects through.
"""
import errno
import hashlib
import os
import threading
import time

CHUNK = 1 << 20
NVMET = "/sys/kernel/config/nvmet"


def chunk(seed, i):
    """The bytes of chunk @i of burst @seed."""
    return hashlib.shake_128(b"%s:%d" % (seed.encode(), i)).digest(CHUNK)


def port_link(trsvcid, nqn):
    """The configfs link that offers subsystem @nqn on the nvmet port listening on @trsvcid."""
    for port in os.listdir(os.path.join(NVMET, "ports")):
        with open(os.path.join(NVMET, "ports", port, "addr_trsvcid")) as f:
            if f.read().strip() == trsvcid:
                return os.path.join(NVMET, "ports", port, "subsystems", nqn)
    raise AssertionError("no nvmet port on %s" % trsvcid)


def cut(nqn, trsvcids):
    """Takes subsystem @nqn off the ports on @trsvcids; returns the links, for restore()."""
    links = [port_link(s, nqn) for s in trsvcids]
    for link in links:
        os.unlink(link)
    return links


def restore(nqn, links):
    """Offers subsystem @nqn again on the ports cut() took it off (those still missing)."""
    for link in links:
        if not os.path.lexists(link):
            os.symlink(os.path.join(NVMET, "subsystems", nqn), link)


class Burst:
    """Writes @n chunks of burst @seed to @path, fsync after each, in a thread.

    After join(): seconds (start to the last fsync, or to the error), acked
    (chunks whose fsync returned), error (the OSError that stopped it, or
    None), error_at (time.monotonic() of that error)."""

    def __init__(self, path, n, seed):
        self.path, self.n, self.seed = path, n, seed
        self.acked, self.error, self.error_at, self.seconds = 0, None, None, None
        self._progress = threading.Condition()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        data = [chunk(self.seed, i) for i in range(self.n)]  # outside the timed part
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        t0 = time.monotonic()
        try:
            for i in range(self.n):
                os.write(fd, data[i])
                os.fsync(fd)
                with self._progress:
                    self.acked = i + 1
                    self._progress.notify_all()
        except OSError as e:
            self.error, self.error_at = e, time.monotonic()
        finally:
            self.seconds = time.monotonic() - t0
            try:
                os.close(fd)
            except OSError as e:  # close reports a write-back error too
                self.error = self.error or e
            with self._progress:
                self._progress.notify_all()

    def start(self):
        self._thread.start()
        return self

    def wait_acked(self, k, timeout):
        """Waits until @k chunks are acknowledged (or the burst ended); returns whether they are."""
        with self._progress:
            self._progress.wait_for(lambda: self.acked >= k or not self._thread.is_alive(), timeout)
            return self.acked >= k

    def join(self, timeout):
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise AssertionError("burst to %s still blocked after %ss (%d chunks acknowledged)"
                                 % (self.path, timeout, self.acked))
        return self


def verify(path, seed, acked):
    """Reads @path back from the device (page cache dropped first) and compares
    every byte of its first @acked chunks; returns (bytes compared, bytes lost:
    acknowledged bytes that differ or are missing)."""
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3")
    compared = lost = 0
    with open(path, "rb") as f:
        for i in range(acked):
            want, got = chunk(seed, i), f.read(CHUNK)
            compared += len(want)
            if got != want:
                lost += len(want) - len(got) + sum(a != b for a, b in zip(want, got))
    return compared, lost


def is_eio(e):
    return isinstance(e, OSError) and e.errno == errno.EIO
