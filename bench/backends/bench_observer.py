"""What the backend observer costs, on the fixture's two real clusters: two
gantry-csi controllers side by side with the same config and the same FAKE
API server (no control plane here), one observing (--backend-poll-seconds 2)
and one not (0, the baseline), both otherwise idle for the same minutes.
Printed: mon commands per cluster per minute (the observer's own
gantry_observer_samples_total), the CPU the observer adds (observing minus
baseline, as a share of one core, per cluster) and the ratio of the two
controllers' CPU. The observing one holds the Lease and writes the
StorageBackend objects, so its figure includes the writes. Asserts nothing
about time."""
import os
import re
import shutil
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "ceph"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "controller", "backends"))
sys.path.insert(0, os.path.join(HERE, ".."))
import ceph_env  # noqa: E402
import observer_env as env  # noqa: E402
from figure import figure  # noqa: E402
from proc_cpu import process_cpu_seconds  # noqa: E402

SECONDS = float(os.environ.get("GANTRY_BENCH_OBSERVER_SECONDS", "120"))


def samples(port):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10) as r:
        text = r.read().decode()
    return {m.group(1): int(m.group(2)) for m in
            re.finditer(r'^gantry_observer_samples_total\{backend="([^"]+)"\} (\d+)', text, re.M)}


def main():
    tmp = tempfile.mkdtemp(prefix="gantry-bench-observer-")
    api = env.start_fake(tmp, {})
    plugins = []
    try:
        kc = api.write_kubeconfig(os.path.join(tmp, "kc"))
        ports = {}
        for name, poll in (("observing", "2"), ("baseline", "0")):
            ports[name] = env.free_port()
            os.environ["POD_NAME"] = name
            p = env.Plugin(mode="controller", node_id=None, config=ceph_env.CONFIG,
                           workdir=os.path.join(tmp, name),
                           extra=["--kubeconfig", kc, "--backend-poll-seconds", poll,
                                  "--metrics-addr", "127.0.0.1:%d" % ports[name]])
            os.makedirs(p.workdir, exist_ok=True)
            plugins.append((name, p.start()))
        env.wait_for("both clusters published", lambda: env.backend(api, "perf") and
                     env.backend(api, "capa"), 60)
        time.sleep(5)  # past the start: connections made, first writes done
        cpu0 = {n: process_cpu_seconds(p.proc.pid) for n, p in plugins}
        n0, t0 = samples(ports["observing"]), time.monotonic()
        time.sleep(SECONDS)
        cpu = {n: process_cpu_seconds(p.proc.pid) - cpu0[n] for n, p in plugins}
        n1, dt = samples(ports["observing"]), time.monotonic() - t0
        clusters = [b for b in n1 if b in ("perf", "capa")]
        per_min = sum(n1[b] - n0.get(b, 0) for b in clusters) / len(clusters) / (dt / 60)
        added = (cpu["observing"] - cpu["baseline"]) / dt / len(clusters)
        figure("observer_commands_per_cluster_minute", per_min,
               what="mon commands (status) per cluster per minute, %d clusters, %.0f s" %
               (len(clusters), dt))
        figure("observer_cpu_core_share_per_cluster", added,
               what="CPU the observer adds per observed cluster, share of one core "
               "(observing controller %.3f s, baseline %.3f s over %.0f s)" %
               (cpu["observing"], cpu["baseline"], dt))
        figure("observer_controller_cpu_ratio",
               cpu["observing"] / cpu["baseline"] if cpu["baseline"] > 0 else float("nan"),
               what="CPU of the observing controller / the same controller not observing")
    finally:
        for _, p in plugins:
            p.stop()
        api.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
