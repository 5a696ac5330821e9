"""Host side of the storage-fault tests: injects faults into the Ceph
cluster of tests/ceph/cluster.sh on the guest's request, and waits on the
cluster's own view of them (run by faults_cluster.sh, in the test's
network namespace; the guest cannot signal the host's daemons).

    python3 fault_agent.py CLUSTER_DIR SHARE

The guest drops a request into SHARE/faults/N.req (one line, written to a
temporary name and renamed) and waits for SHARE/faults/N.resp: "ok
FIELDS..." or "err WHY". Requests:

    kill9 ID     SIGKILL osd.ID; answer once the osdmap says it is down
    stop ID      SIGSTOP osd.ID (a hung OSD: its sockets stay open);
                 answer once the osdmap says it is down
    cont ID      SIGCONT osd.ID; answer once it is up again
    start ID     start osd.ID again (cluster.sh osd-start); answer once up
    out ID       mark osd.ID out (recovery starts); answer at once
    in ID        mark osd.ID in
    clean        answer once HEALTH_OK and every PG active+clean

Each answer carries "took=S" (seconds from the request's action to the
condition, measured here). Every wait is bounded (FAULT_WAIT_S, default
180). An OSD is signalled only while its pid file still names it
(own_process: start time, command line naming the cluster's ceph.conf).
On SIGTERM, or when its parent dies, the agent continues any OSD it left
stopped, so that the cluster's stop can end it."""
import json
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "common"))
import own_process  # noqa: E402

CLUSTER = os.path.join(HERE, "..", "ceph", "cluster.sh")
WAIT_S = float(os.environ.get("FAULT_WAIT_S", "180"))


class Agent:
    def __init__(self, cluster_dir, share):
        self.dir = os.path.realpath(cluster_dir)
        self.conf = os.path.join(self.dir, "ceph.conf")
        self.queue = os.path.join(share, "faults")
        self.stopped = set()

    def ceph_json(self, *args):
        out = subprocess.run(["ceph", "-c", self.conf, "--connect-timeout", "20"] + list(args)
                             + ["-f", "json"], capture_output=True, text=True, timeout=60,
                             check=True).stdout
        return json.loads(out)

    def osd_state(self, i):
        """(up, in) of osd.@i in the current osdmap."""
        for o in self.ceph_json("osd", "dump")["osds"]:
            if o["osd"] == i:
                return bool(o["up"]), bool(o["in"])
        raise RuntimeError("no osd.%d in the osdmap" % i)

    def wait(self, what, pred):
        t0 = time.monotonic()
        while True:
            try:
                if pred():
                    return time.monotonic() - t0
            except (subprocess.SubprocessError, ValueError, KeyError):
                pass  # a monitor that does not answer yet: try again
            if time.monotonic() - t0 > WAIT_S:
                raise RuntimeError("%s: not after %.0f s" % (what, WAIT_S))
            time.sleep(0.2)

    def signal_osd(self, i, sig):
        pidfile = os.path.join(self.dir, "run", "osd.%d.pid" % i)
        with open(pidfile) as f:
            pid = int(f.read())
        try:
            with open(pidfile + ".start") as f:
                start = int(f.read())
        except OSError:
            start = None
        if not own_process.signal_own(pid, start, sig, mark=self.conf):
            raise RuntimeError("osd.%d (pid %d) is not this cluster's daemon any more" % (i, pid))
        return pid

    def handle(self, verb, arg):
        i = int(arg) if arg is not None else None
        if verb == "kill9":
            pid = self.signal_osd(i, signal.SIGKILL)
            took = self.wait("osd.%d down" % i, lambda: not self.osd_state(i)[0])
            return "pid=%d took=%.2f" % (pid, took)
        if verb == "stop":
            pid = self.signal_osd(i, signal.SIGSTOP)
            self.stopped.add(i)
            took = self.wait("osd.%d down" % i, lambda: not self.osd_state(i)[0])
            return "pid=%d took=%.2f" % (pid, took)
        if verb == "cont":
            self.signal_osd(i, signal.SIGCONT)
            self.stopped.discard(i)
            return "took=%.2f" % self.wait("osd.%d up" % i, lambda: self.osd_state(i)[0])
        if verb == "start":
            subprocess.run(["bash", CLUSTER, "osd-start", self.dir, str(i)], check=True,
                           timeout=60)
            return "took=%.2f" % self.wait("osd.%d up" % i, lambda: self.osd_state(i)[0])
        if verb in ("out", "in"):
            subprocess.run(["ceph", "-c", self.conf, "--connect-timeout", "20", "osd", verb,
                            str(i)], check=True, timeout=60, capture_output=True)
            return "took=%.2f" % self.wait("osd.%d %s" % (i, verb),
                                           lambda: self.osd_state(i)[1] == (verb == "in"))
        if verb == "clean":
            t0 = time.monotonic()
            subprocess.run(["bash", CLUSTER, "wait", self.dir], check=True,
                           timeout=WAIT_S + 60, env=dict(os.environ, CEPH_WAIT_S=str(int(WAIT_S))))
            return "took=%.2f" % (time.monotonic() - t0)
        raise RuntimeError("unknown request %r" % verb)

    def continue_stopped(self):
        """SIGCONT to every OSD this agent stopped and did not continue."""
        for i in list(self.stopped):
            try:
                self.signal_osd(i, signal.SIGCONT)
            except (OSError, RuntimeError, ValueError):
                pass
        self.stopped.clear()

    def release(self, *_):
        self.continue_stopped()
        sys.exit(0)

    def run(self):
        os.makedirs(self.queue, exist_ok=True)
        signal.signal(signal.SIGTERM, self.release)
        parent = os.getppid()
        while True:
            if os.getppid() != parent:
                self.release()
            for name in sorted(os.listdir(self.queue)):
                if not name.endswith(".req"):
                    continue
                path = os.path.join(self.queue, name)
                with open(path) as f:
                    words = f.read().split()
                os.unlink(path)
                try:
                    answer = "ok " + self.handle(words[0], words[1] if len(words) > 1 else None)
                except Exception as e:  # the guest reports it; the agent goes on
                    answer = "err %s" % e
                print("fault_agent: %s -> %s" % (" ".join(words), answer), flush=True)
                tmp = path[:-4] + ".tmp"
                with open(tmp, "w") as f:
                    f.write(answer + "\n")
                os.rename(tmp, path[:-4] + ".resp")
            time.sleep(0.05)


if __name__ == "__main__":
    Agent(sys.argv[1], sys.argv[2]).run()
