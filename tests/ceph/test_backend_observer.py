"""The backend observer against a real Ceph cluster of its own: 5 BlueStore
OSDs and an erasure-coded k=2 m=2 pool, which stays readable with one OSD
down. gantry-csi's controller observes it as a Ceph user with only
mon 'allow r' (what docs/install.md asks for) and publishes StorageBackend
"obs" to the FAKE API server (no real control plane runs here; the status
is what the contract says, tests/controller/backends/ checks its shape).

One scenario, as an operator would meet it:
- a second client reads outside Gantry: the published client read rate rises
  by the rate that client measured itself (within 25 %);
- an OSD is killed under that read load: Degraded within 10 s;
- it is marked out: Recovering, with a recovery rate within 25 % of Ceph's
  own `recovering_bytes_per_sec` averaged over the same window (each
  published 10 s mean beside Ceph's samples of those 10 s);
- all PGs are active+clean again: Healthy within 15 s.
It prints the latencies, the rates, and the observer's cost (commands per
minute, CPU of the whole controller process).

Starts its own cluster (tests/ceph/cluster.sh start DIR PORT 5) beside the
fixture's, on a free port, and purges it at the end."""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "controller", "backends"))
sys.path.insert(0, os.path.join(HERE, "..", "canary"))
import canary  # noqa: E402
import observer_env as env  # noqa: E402

CLUSTER_SH = os.path.join(HERE, "cluster.sh")
POOL = "ec22"
OSD = 3           # the OSD killed and marked out
POLL = 2          # --backend-poll-seconds
READERS = 2       # reads in flight of the outside client
MEAN_S = 10       # the observer publishes rates as means over this many seconds


def ceph(conf, *args, timeout=60):
    return subprocess.run(["ceph", "-c", conf, "--connect-timeout", "20", *args],
                          capture_output=True, text=True, timeout=timeout, check=True).stdout


class Admin:
    """The cluster's admin over python3-rados: one connection for every check."""

    def __init__(self, conf):
        import rados
        self.c = rados.Rados(conffile=conf, conf={"rados_mon_op_timeout": "30",
                                                  "rados_osd_op_timeout": "30"})
        self.c.connect(timeout=30)

    def status(self):
        rc, out, err = self.c.mon_command(json.dumps({"prefix": "status", "format": "json"}), b"")
        if rc != 0:
            raise RuntimeError("status: %s" % err)
        return json.loads(out)

    def shutdown(self):
        self.c.shutdown()


def all_clean(st):
    pg = st["pgmap"]
    return sum(s["count"] for s in pg["pgs_by_state"] if s["state_name"] == "active+clean") == \
        pg["num_pgs"]


class Reader:
    """A client outside Gantry: `rados bench rand` on the pool; its own
    bandwidth (bytes/s) once it ends."""

    def __init__(self, conf, seconds):
        self.proc = subprocess.Popen(["rados", "-c", conf, "-p", POOL, "bench", str(seconds), "rand",
                                      "-t", str(READERS), "--no-verify"],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def finish(self, timeout):
        out, _ = self.proc.communicate(timeout=timeout)
        m = re.search(r"Bandwidth \(MB/sec\):\s+([0-9.]+)", out)
        if self.proc.returncode != 0 or not m:
            raise AssertionError("rados bench failed:\n" + out)
        return float(m.group(1)) * (1 << 20)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.communicate()


class Recorder:
    """Every second: Ceph's own status (as admin) beside the published one."""

    def __init__(self, admin, api):
        self.admin, self.api = admin, api
        self.rows = []
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stopping.wait(1.0):
            try:
                st = self.admin.status()
                obj = env.backend(self.api, "obs") or {}
            except Exception as e:  # noqa: BLE001 -- a missed second is not a failure
                print("recorder: %s" % e)
                continue
            self.rows.append((time.monotonic(), st, obj.get("status") or {}))

    def stop(self):
        self.stopping.set()
        self.thread.join(timeout=30)


class Figures(dict):
    """Figures printed as they are measured (a later failure keeps them)."""

    def __setitem__(self, k, v):
        print("FIGURE %s: %s" % (k, v), flush=True)
        super().__setitem__(k, v)


class BackendObserverTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gantry-obs-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        self.cdir = os.path.join(self.tmp, "ceph")
        self.conf = os.path.join(self.cdir, "ceph.conf")
        port = env.free_port()
        self.addCleanup(subprocess.run, ["bash", CLUSTER_SH, "purge", self.cdir], timeout=300,
                        stdout=subprocess.DEVNULL)
        subprocess.run(["bash", CLUSTER_SH, "start", self.cdir, str(port), "5", "3"], check=True,
                       timeout=600, stdout=subprocess.DEVNULL)
        ceph(self.conf, "osd", "erasure-code-profile", "set", "ec22", "k=2", "m=2",
             "crush-failure-domain=osd")
        ceph(self.conf, "osd", "pool", "create", POOL, "16", "16", "erasure", "ec22")
        ceph(self.conf, "osd", "pool", "set", POOL, "min_size", "3")
        ceph(self.conf, "osd", "pool", "application", "enable", POOL, "rados")  # else HEALTH_WARN
        # ~1.2 GB of 4 MiB objects for the reader to read and the OSDs to recover
        subprocess.run(["rados", "-c", self.conf, "-p", POOL, "bench", "120", "write", "-t", "8",
                        "--max-objects", "300", "--no-cleanup"], check=True, timeout=300,
                       stdout=subprocess.DEVNULL)
        subprocess.run(["bash", CLUSTER_SH, "wait", self.cdir], check=True, timeout=400)
        self.admin = Admin(self.conf)
        self.addCleanup(self.admin.shutdown)

        # the observer's user: read-only on the mons, nothing else
        key = canary.ceph_key()
        keyring = os.path.join(self.cdir, "observer.keyring")
        subprocess.run(["ceph-authtool", "--create-keyring", keyring, "-n", "client.observer",
                        "--add-key", key, "--cap", "mon", "allow r"], check=True,
                       stdout=subprocess.DEVNULL)
        ceph(self.conf, "auth", "import", "-i", keyring)
        os.unlink(keyring)
        keyfile = os.path.join(self.tmp, "observer.key")
        with open(os.open(keyfile, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write(key)
        config = os.path.join(self.tmp, "gantry.json")
        with open(config, "w") as f:
            json.dump({"clusters": [{"clusterID": "obs", "monitors": ["127.0.0.1:%d" % port],
                                     "userID": "observer", "keyFile": keyfile,
                                     "rbdTimeoutSeconds": 5}]}, f)

        self.api = env.start_fake(self.tmp, {})
        self.addCleanup(self.api.stop)
        self.metrics_port = env.free_port()
        os.environ["POD_NAME"] = "ctrl-obs"
        self.plugin = env.Plugin(mode="controller", node_id=None, config=config,
                                 workdir=os.path.join(self.tmp, "csi"),
                                 extra=["--kubeconfig", self.api.write_kubeconfig(
                                     os.path.join(self.tmp, "kc")),
                                     "--backend-poll-seconds", str(POLL),
                                     "--metrics-addr", "127.0.0.1:%d" % self.metrics_port])
        os.makedirs(self.plugin.workdir, exist_ok=True)
        self.addCleanup(lambda: canary.keep_log(self.plugin.log_path, "ceph_backend_observer"))
        self.plugin.start()
        self.addCleanup(self.plugin.stop)

    def status(self):
        return (env.backend(self.api, "obs") or {}).get("status") or {}

    def wait_state(self, state, timeout):
        """Seconds until the published state is @state (bounded by @timeout)."""
        t0 = time.monotonic()
        env.wait_for(state, lambda: self.status().get("state") == state, timeout, step=0.2)
        return time.monotonic() - t0

    def samples(self):
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % self.metrics_port,
                                    timeout=10) as r:
            text = r.read().decode()
        m = re.search(r'^gantry_observer_samples_total\{backend="obs"\} (\d+)', text, re.M)
        return int(m.group(1)) if m else 0

    def cpu_seconds(self):
        with open("/proc/%d/stat" % self.plugin.proc.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def kill_osd(self):
        pidfile = os.path.join(self.cdir, "run", "osd.%d.pid" % OSD)
        with open(pidfile) as f:
            pid = int(f.read())
        with open("/proc/%d/cmdline" % pid, "rb") as f:  # ours, not a reused number
            self.assertIn(self.conf.encode(), f.read())
        os.kill(pid, signal.SIGKILL)
        os.unlink(pidfile)

    def test_states_and_rates_follow_the_cluster(self):
        figures = Figures()
        self.wait_state("Healthy", 30)
        t_run, cpu0, n0 = time.monotonic(), self.cpu_seconds(), self.samples()
        rec = Recorder(self.admin, self.api)
        self.addCleanup(rec.stop)

        # -- a second client reads outside Gantry
        time.sleep(12)  # a full averaging window of the idle cluster
        idle = self.status()["clientReadBytesPerSec"]
        t0 = time.monotonic()
        reader = Reader(self.conf, 40)
        self.addCleanup(reader.stop)
        rate = reader.finish(timeout=120)
        seen = [r[2].get("clientReadBytesPerSec", 0) for r in rec.rows
                if t0 + 14 <= r[0] <= time.monotonic() - 1]
        published = sum(seen) / len(seen) - idle
        figures["reader (its own count)"] = "%.1f MB/s" % (rate / 1e6)
        figures["published read rate, minus idle"] = "%.1f MB/s (idle %.1f MB/s)" % (
            published / 1e6, idle / 1e6)
        self.assertGreater(len(seen), 8)
        self.assertLess(abs(published - rate), 0.25 * rate, figures)

        # -- an OSD killed under a read load
        reader = Reader(self.conf, 900)
        self.addCleanup(reader.stop)
        time.sleep(5)
        self.kill_osd()
        figures["killed -> Degraded"] = "%.1f s" % self.wait_state("Degraded", 10)
        self.assertIn("OSD_DOWN", self.status()["reason"])
        # Ceph counts degraded objects a few seconds after it reports the OSD down
        env.wait_for("degradedRatio > 0", lambda: self.status().get("degradedRatio", 0) > 0, 20)

        # -- marked out: recovery
        time.sleep(5)
        ceph(self.conf, "osd", "out", str(OSD))
        t_out = time.monotonic()
        figures["out -> Recovering"] = "%.1f s" % self.wait_state("Recovering", 15)
        t_rec = time.monotonic()
        env.wait_for("active+clean", lambda: rec.rows and rec.rows[-1][0] > t_rec and
                     all_clean(rec.rows[-1][1]), 900, step=1)
        t_clean = next(r[0] for r in rec.rows if r[0] > t_rec and all_clean(r[1]))
        self.wait_state("Healthy", max(0.1, 15 - (time.monotonic() - t_clean)))
        figures["active+clean -> Healthy"] = "%.1f s" % (time.monotonic() - t_clean)
        figures["recovery lasted"] = "%.0f s after out" % (t_clean - t_out)
        reader.stop()

        # recovery rate: each published one beside Ceph's own averaged over the
        # same MEAN_S seconds it covers, then both over the recovery
        def ceph_trailing(t):
            xs = [r[1]["pgmap"].get("recovering_bytes_per_sec", 0) for r in rec.rows
                  if t - MEAN_S < r[0] <= t]
            return sum(xs) / len(xs)
        window = [r for r in rec.rows if t_rec + MEAN_S <= r[0] <= t_clean - 2]
        self.assertGreater(len(window), 10, "recovery too short to compare")
        ceph_mean = sum(ceph_trailing(r[0]) for r in window) / len(window)
        ours = sum(r[2].get("recoveryBytesPerSec", 0) for r in window) / len(window)
        figures["recovery: ceph status mean"] = "%.1f MB/s over %d s" % (
            ceph_mean / 1e6, window[-1][0] - window[0][0])
        figures["recovery: published mean"] = "%.1f MB/s" % (ours / 1e6)
        self.assertTrue(all(r[2].get("state") == "Recovering" for r in window),
                        "state left Recovering during recovery")
        self.assertLess(abs(ours - ceph_mean), 0.25 * ceph_mean, figures)

        minutes = (time.monotonic() - t_run) / 60
        figures["commands per minute"] = "%.1f" % ((self.samples() - n0) / minutes)
        figures["controller CPU"] = "%.2f %% of a core over %.1f min" % (
            100 * (self.cpu_seconds() - cpu0) / (minutes * 60), minutes)


if __name__ == "__main__":
    unittest.main()
