"""Fixtures signal only what they started (own_pid.sh, own_process.py).

A pid file outlives its daemon, and its number may be a stranger's by the
time a fixture stops. Each case points a fixture's pid file at a stranger
process this test starts (a `sleep` in a session of its own, so that a
kill of its group would reach it too) and runs the fixture's real stop:
the stranger must live on. Beside it, a process the fixture's helper did
record must still be stopped, so that a check refusing everything fails
too. No Ceph is started: the stops read only the pid files."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(TESTS, "k8s"))
import own_process  # noqa: E402


def alive(p):
    return p.poll() is None


def wait_gone(p, timeout=15.0):
    try:
        p.wait(timeout)
        return True
    except subprocess.TimeoutExpired:
        return False


class OwnPidTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="gantry-ownpid-")
        self.procs = []

    def tearDown(self):
        for p in self.procs:
            if alive(p):
                p.kill()
                p.wait()
        shutil.rmtree(self.dir, ignore_errors=True)

    def stranger(self, *argv):
        """A process of the test's own, which no fixture started."""
        p = subprocess.Popen(list(argv) or ["sleep", "300"], start_new_session=True)
        self.procs.append(p)
        return p

    def daemon_like(self, mark):
        """A process whose command line names @mark, as a daemon's names its config."""
        return self.stranger(sys.executable, "-c", "import time; time.sleep(300)", "-f", "-c", mark)

    def own_pid_write(self, pidfile, pid):
        subprocess.run(["bash", "-c", '. "$0"; own_pid_write "$1" "$2"',
                        os.path.join(HERE, "own_pid.sh"), pidfile, str(pid)], check=True,
                       timeout=30)

    def test_cluster_stop_spares_strangers(self):
        run = os.path.join(self.dir, "c", "run")
        os.makedirs(run)
        conf = os.path.join(self.dir, "c", "ceph.conf")
        # a stale bare pid file (a daemon killed long ago), its number now a stranger's
        bare = self.stranger()
        with open(os.path.join(run, "osd.0.pid"), "w") as f:
            f.write("%d\n" % bare.pid)
        # a stranger whose command line even names this cluster's config, but
        # that started after the daemon the pid file recorded
        late = self.daemon_like(conf)
        with open(os.path.join(run, "osd.1.pid"), "w") as f:
            f.write("%d\n" % late.pid)
        with open(os.path.join(run, "osd.1.pid.start"), "w") as f:
            f.write("%d\n" % (own_process.start_time(late.pid) - 1))
        # the fixture's own daemon, recorded by the fixture's helper
        own = self.daemon_like(conf)
        self.own_pid_write(os.path.join(run, "osd.2.pid"), own.pid)
        subprocess.run(["bash", os.path.join(TESTS, "ceph", "cluster.sh"), "stop",
                        os.path.join(self.dir, "c")], check=True, timeout=120)
        self.assertTrue(wait_gone(own), "the fixture's own daemon was not stopped")
        self.assertTrue(alive(bare), "cluster.sh stop signalled a stranger (bare pid file)")
        self.assertTrue(alive(late), "cluster.sh stop signalled a stranger (start time differs)")
        self.assertEqual(sorted(os.listdir(run)), [], "stale pid files left behind")

    def test_mirror_stop_spares_a_stranger(self):
        run = os.path.join(self.dir, "m", "perf", "run")
        os.makedirs(run)
        s = self.stranger()
        with open(os.path.join(run, "rbd-mirror.pid"), "w") as f:
            f.write("%d\n" % s.pid)
        subprocess.run(["bash", os.path.join(TESTS, "ceph", "mirror.sh"), "stop",
                        os.path.join(self.dir, "m")], check=True, timeout=120)
        self.assertTrue(alive(s), "mirror.sh stop signalled a stranger")
        self.assertFalse(os.path.exists(os.path.join(run, "rbd-mirror.pid")))

    def test_control_plane_stale_kill_spares_a_stranger(self):
        import control_plane
        plane = control_plane.ControlPlane("ownpid", workdir=os.path.join(self.dir, "k"))
        os.makedirs(plane.dir)
        s = self.stranger()  # a group leader: a killpg of its number reaches it
        own = self.stranger()
        with open(os.path.join(plane.dir, "pids"), "w") as f:
            f.write("%d %d\n" % (s.pid, own_process.start_time(s.pid) - 1))
            f.write("%d\n" % s.pid)  # a bare number: no proof it is ours
            f.write(own_process.record(own.pid) + "\n")
        plane._kill_stale()
        self.assertTrue(wait_gone(own), "the earlier run's daemon was not killed")
        self.assertTrue(alive(s), "the control plane's stale kill reached a stranger")


if __name__ == "__main__":
    unittest.main()
