"""Hostile clients of a TCP port, for the tests and the bench that attack
gantry-scheduler (and gantry-target): idle connections held open from
chosen loopback addresses (127.0.0.0/8 is all loopback on Linux, so each
127.0.0.x is another source address), each reopened when the server closes
it, and a slow sender that sends a byte a second. Everything is bounded:
a Crowd holds at most its count and stops when told or at its deadline; it
closes every socket it opened. CrowdProcess is the same crowd in a process
of its own: a latency measured beside it is not the wait for the Python
interpreter lock that a crowd thread in the measuring process holds (a
switch interval, 5 ms, at a time).
"""
import errno
import multiprocessing
import resource
import select
import socket
import threading
import time


def fd_budget(reserve=256):
    """How many more descriptors this process may open (the soft limit
    raised to the hard one first), less @reserve for everything else."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            pass
    return max(0, soft - reserve)


def _connect(source, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setblocking(False)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((source, 0))
    err = s.connect_ex(("127.0.0.1", port))
    if err not in (0, errno.EINPROGRESS):
        s.close()
        return None
    return s


class Crowd:
    """@per_source idle connections from each of @sources to 127.0.0.1:@port,
    sending nothing, reopened when the server closes them (at most
    @reopens_per_second), on a thread of their own, until stop() or
    @max_seconds. opened counts the connects."""

    def __init__(self, port, sources, per_source, max_seconds=120, reopens_per_second=500):
        self.port, self.sources, self.per_source = port, list(sources), per_source
        self.deadline = time.monotonic() + max_seconds
        self.reopens_per_second = reopens_per_second
        self.filled = threading.Event()  # every connection opened once
        self.opened = 0
        self.closed_by_server = 0
        self._stop = threading.Event()
        self._socks = {}
        self._thread = threading.Thread(target=self._run, name="crowd", daemon=True)

    def start(self):
        self._thread.start()
        return self

    def _fill(self, poller, missing, budget):
        """Opens what is @missing (per source), all of it the first time,
        then at most @budget connections. Returns how many it opened."""
        opened = 0
        for src in self.sources:
            while missing[src] > 0:
                if self._stop.is_set() or (self.filled.is_set() and opened >= budget):
                    return opened
                s = _connect(src, self.port)
                if s is None:
                    break
                missing[src] -= 1
                opened += 1
                self.opened += 1
                self._socks[s.fileno()] = (s, src)
                poller.register(s.fileno(), select.POLLIN)
        return opened

    def _run(self):
        # reopening is paced by a token bucket (at most a second's worth
        # saved up): the server's refusals come back at once, and a loop
        # reopening on each would be a connect flood, not idle connections;
        # what is missing is counted as it goes, so that holding 10,000
        # costs the crowd little CPU of the machine it shares
        poller = select.poll()
        missing = {src: self.per_source for src in self.sources}
        tokens, last = 0.0, time.monotonic()
        try:
            while not self._stop.is_set() and time.monotonic() < self.deadline:
                now = time.monotonic()
                tokens = min(float(self.reopens_per_second),
                             tokens + (now - last) * self.reopens_per_second)
                last = now
                tokens = max(0.0, tokens - self._fill(poller, missing, int(tokens)))  # 1st is free
                self.filled.set()
                for fd, ev in poller.poll(50):
                    s, src = self._socks.pop(fd)
                    poller.unregister(fd)
                    s.close()
                    missing[src] += 1
                    self.closed_by_server += 1
        finally:
            for s, _ in self._socks.values():
                s.close()
            self._socks.clear()

    def stop(self):
        self._stop.set()
        self._thread.join(30)


def _crowd_main(port, sources, per_source, max_seconds, filled, stop, opened, closed):
    crowd = Crowd(port, sources, per_source, max_seconds).start()
    try:
        crowd.filled.wait(max_seconds)
        filled.set()
        stop.wait(max(0.0, crowd.deadline - time.monotonic()))
    finally:
        crowd.stop()
        opened.value, closed.value = crowd.opened, crowd.closed_by_server


class CrowdProcess:
    """A Crowd in a child process (spawned, so no thread of this one is
    copied): filled, stop(), opened and closed_by_server as a Crowd's."""

    def __init__(self, port, sources, per_source, max_seconds=120):
        ctx = multiprocessing.get_context("spawn")
        self.filled, self._stop = ctx.Event(), ctx.Event()
        self._opened, self._closed = ctx.Value("q", 0), ctx.Value("q", 0)
        self._proc = ctx.Process(target=_crowd_main, daemon=True,
                                 args=(port, list(sources), per_source, max_seconds, self.filled,
                                       self._stop, self._opened, self._closed))

    def start(self):
        self._proc.start()
        return self

    def stop(self):
        self._stop.set()
        self._proc.join(60)
        if self._proc.is_alive():  # our own child: it did not end in time
            self._proc.kill()
            self._proc.join(10)

    @property
    def opened(self):
        return self._opened.value

    @property
    def closed_by_server(self):
        return self._closed.value


def slow_sender(port, source, data, max_seconds):
    """Connects from @source and sends @data a byte a second until the
    server closes the connection or @max_seconds pass. Returns the seconds
    it stayed open, or None when the server never closed it."""
    s = socket.create_connection(("127.0.0.1", port), timeout=5, source_address=(source, 0))
    t0 = time.monotonic()
    try:
        for i in range(int(max_seconds)):
            r, _, _ = select.select([s], [], [], 1.0)
            if r:
                try:
                    if not s.recv(4096):
                        return time.monotonic() - t0
                except OSError:
                    return time.monotonic() - t0
            try:
                s.send(data[i % len(data):i % len(data) + 1])
            except OSError:
                return time.monotonic() - t0
        return None
    finally:
        s.close()
