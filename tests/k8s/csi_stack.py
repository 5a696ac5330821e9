"""The controller side of Gantry as manifests/ deploy it, run on a real
control plane (control_plane.py): the manifests' Namespace, ServiceAccount,
RBAC and CSIDriver applied to the API server, the snapshot CRDs and the
snapshot-controller of ../shared/k8s/crd, and every container of the
gantry-controller Deployment started as a process with the exact `args` of
manifests/controller.yaml, read from the file.

What a pod would get from its environment is substituted, nothing else:
  - the socket: --csi-address=/csi/csi.sock and --endpoint=unix:///csi/csi.sock
    point at a socket in the work folder (the pod's emptyDir);
  - the API: each process gets --kubeconfig with its own TokenRequest token of
    the pod's ServiceAccount (in a pod: the projected token, in-cluster);
  - the containers' `env` is resolved as kubelet would, fieldRefs from a pod
    that the applied Deployment really made (kube-controller-manager's
    ReplicaSet; it never runs: there is no kubelet), so the provisioner finds
    the Deployment as the owner of its CSIStorageCapacity objects;
  - gantry-csi's --config is the Ceph fixture's driver config (the pod's
    ConfigMap mount) and --metrics-addr a free loopback port;
  - the liveness-probe container is not run (no HTTP probe here);
  - snapshot-controller (from crd/snapshot-controller) runs under its own
    ServiceAccount with its own upstream RBAC, and is told the namespace of
    its leader-election lease (kube-system) that in a pod it would take from
    the pod's namespace.

forbidden() lists every line of every log that shows a 403: the tests fail
on any, so the manifests' RBAC is proven sufficient on the real authorizer."""
import glob
import json
import os
import re
import subprocess
import sys
import unittest

import yaml

import control_plane as cp

MANIFESTS = os.path.join(cp.SOURCE, "manifests")
NS = "gantry-system"
SA = "gantry-controller"
SOCKET_IN_POD = "/csi/csi.sock"
# what the authorizer's refusal looks like in a Go client's log and in
# gantry-csi's (not the "Forbidden:" of a field validation error, a 422, nor a
# resourceVersion 403)
FORBIDDEN = re.compile(r"is forbidden: User|cannot \w+ resource|reason=forbidden|"
                       r"HTTP 403|403 Forbidden|Forbidden \(")


def manifest(name):
    with open(os.path.join(MANIFESTS, name)) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def controller_containers():
    """The containers of the gantry-controller Deployment, by name."""
    dep = [d for d in manifest("controller.yaml") if d["kind"] == "Deployment"][0]
    return {c["name"]: c for c in dep["spec"]["template"]["spec"]["containers"]}


def crd_dir(plane):
    return os.path.join(os.path.dirname(plane.bin), "crd")


def apply(plane, docs):
    plane.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(docs))


class CsiStack:
    def __init__(self, plane, driver_config):
        self.plane = plane
        self.config = driver_config
        self.socket = os.path.join(plane.dir, "csi", "csi.sock")
        self.names = []

    # --- objects --------------------------------------------------------
    def apply_objects(self):
        p = self.plane
        apply(p, manifest("namespace.yaml"))
        # the Deployment too: its pods never run, but own the capacity objects
        apply(p, manifest("controller.yaml"))
        apply(p, manifest("csidriver.yaml"))
        crds = [f for f in sorted(glob.glob(os.path.join(crd_dir(p), "snapshot", "*.yaml")))
                if not f.endswith("kustomization.yaml")]
        for f in crds:
            p.kubectl("create", "-f", f)
        for f in crds:
            with open(f) as fh:
                name = yaml.safe_load(fh)["metadata"]["name"]
            p.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd/" + name)
        p.kubectl("apply", "-f", os.path.join(crd_dir(p), "snapshot-controller",
                                               "rbac-snapshot-controller.yaml"))

    # --- processes ------------------------------------------------------
    def _args(self, args, kubeconfig):
        out = []
        for a in args:
            a = a.replace("unix://" + SOCKET_IN_POD, "unix://" + self.socket)
            a = a.replace("=" + SOCKET_IN_POD, "=" + self.socket)
            out.append(a)
        return out + ["--kubeconfig=" + kubeconfig]

    def _token_kubeconfig(self, name, ns, sa):
        """A kubeconfig with a fresh token of @ns/@sa for container @name."""
        self.plane.sa_token(ns, sa)  # makes the account if needed
        tr = self.plane.api("POST", "/api/v1/namespaces/%s/serviceaccounts/%s/token" % (ns, sa),
                            {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                             "spec": {"expirationSeconds": 7200}})
        cp.canary.register_value("k8s-sa-token", tr["status"]["token"])  # a JWT: no canary
        return self.plane.write_kubeconfig(name, tr["status"]["token"])

    def controller_pod(self):
        """A pod the Deployment's ReplicaSet made (waits for it)."""
        sel = "app.kubernetes.io/component%3Dcontroller"
        return cp.wait_for(lambda: self.plane.api(
            "GET", "/api/v1/namespaces/%s/pods?labelSelector=%s" % (NS, sel))["items"], 60,
            "a pod of the gantry-controller Deployment")[0]

    @staticmethod
    def _env(container, pod):
        env = {}
        for e in container.get("env", []):
            if "value" in e:
                env[e["name"]] = e["value"]
                continue
            path = e["valueFrom"]["fieldRef"]["fieldPath"]
            env[e["name"]] = {"metadata.name": pod["metadata"]["name"],
                              "metadata.namespace": pod["metadata"]["namespace"]}[path]
        return env

    def start(self):
        p = self.plane
        os.makedirs(os.path.dirname(self.socket), exist_ok=True)
        build = os.environ.get("GANTRY_BUILD_DIR", os.path.join(cp.SOURCE, "build"))
        cs = controller_containers()
        pod = self.controller_pod()
        # gantry-csi first: the sidecars wait for its socket
        args = []
        for a in cs["gantry-csi"]["args"]:
            if a.startswith("--config="):
                a = "--config=" + self.config
            elif a.startswith("--metrics-addr="):
                a = "--metrics-addr=127.0.0.1:%d" % cp.free_port()
            args.append(a)
        self._spawn("gantry-csi", [os.path.join(build, "bin", "gantry-csi")] + args, NS, SA,
                    self._env(cs["gantry-csi"], pod))
        cp.wait_for(lambda: os.path.exists(self.socket), 30, "the gantry-csi socket")
        for name, c in cs.items():
            if name in ("gantry-csi", "liveness-probe"):
                continue
            self._spawn(name, [os.path.join(p.bin, name)] + c["args"], NS, SA, self._env(c, pod))
        with open(os.path.join(crd_dir(p), "snapshot-controller",
                               "setup-snapshot-controller.yaml")) as f:
            sc = [d for d in yaml.safe_load_all(f) if d][0]["spec"]["template"]["spec"]
        # in a pod, leader election defaults to the pod's namespace
        self._spawn("snapshot-controller",
                    [os.path.join(p.bin, "snapshot-controller")] + sc["containers"][0]["args"] +
                    ["--leader-election-namespace=kube-system"],
                    "kube-system", sc["serviceAccountName"], {})

    def _spawn(self, name, argv, ns, sa, env):
        kc = self._token_kubeconfig(name, ns, sa)
        self.plane.spawn(name, self._args(argv, kc), env=env)
        self.names.append(name)

    def forbidden(self):
        """Every log line of the stack (and of kube-controller-manager) that
        shows a 403, as "name: line"."""
        out = []
        for name in self.names + ["kube-controller-manager"]:
            if name not in self.plane.procs:
                continue
            for line in self.plane.log(name).splitlines():
                if FORBIDDEN.search(line) and not line.startswith("=== start"):
                    out.append("%s: %s" % (name, line[:400]))
        return out

    def dead(self):
        return [n for n in self.names if not self.plane.procs[n].alive()]


def ceph_secret(plane, name, secrets):
    """The Secret a StorageClass names for the Ceph user (manifests/secrets/)."""
    plane.api("POST", "/api/v1/namespaces/%s/secrets" % NS, {
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": NS},
        "stringData": secrets})


def user_namespace(plane, ns):
    """Namespace @ns with its default ServiceAccount (kube-controller-manager
    makes it; pods are refused before)."""
    plane.ensure_namespace(ns)
    cp.wait_for(lambda: plane.api("GET", "/api/v1/namespaces/%s/serviceaccounts/default" % ns),
                60, "the default ServiceAccount of " + ns)


SCHEDULER = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


def ceph_env():
    """tests/ceph/ceph_env.py (imported late: it reads GANTRY_CEPH_DIR)."""
    sys.path.insert(0, os.path.join(cp.HERE, "..", "ceph"))
    import ceph_env as e
    return e


def start_target(plane, tid, leaf, traddr, workdir=None, **kw):
    """A gantry-target process (tests/gantry-target/targetproc.py, stand-in configfs)
    killed with the test process; returns it and its driver-config entry."""
    sys.path.insert(0, os.path.join(cp.HERE, "..", "gantry-target"))
    from targetproc import Target
    t = Target(workdir=workdir or os.path.join(plane.dir, tid), **kw)
    t.preexec = cp._die_with_parent
    t.start()
    tok = os.path.join(t.dir, "token.client")
    with open(tok, "w") as f:
        f.write(t.token + "\n")
    return t, {"id": tid, "url": t.url, "tokenFile": tok, "leaf": leaf,
               "addresses": [{"transport": "tcp", "traddr": traddr, "trsvcid": "4420"}]}


def fixture_config():
    """The Ceph fixture's driver config (both clusters), as a dict."""
    with open(ceph_env().CONFIG) as f:
        return json.load(f)


class StoryTest(unittest.TestCase):
    """A user story's test case: one control plane (with controllers and a
    plain kube-scheduler) per test file, objects in namespace USER_NS, the
    logs' tails printed when a test fails."""
    USER_NS = "story"
    TAG = "k8s_story"
    targets = []

    @classmethod
    def set_up_story(cls, plane):
        """The story's objects and processes; returns its CsiStack, not
        started yet (objects applied)."""
        raise NotImplementedError

    @classmethod
    def setUpClass(cls):
        cls.plane = cp.ControlPlane(os.environ.get("GANTRY_TEST_TAG", cls.TAG), controllers=True,
                                    scheduler_config=SCHEDULER)
        cls.plane.start()
        try:
            cls.stack = cls.set_up_story(cls.plane)
            cls.stack.start()
            user_namespace(cls.plane, cls.USER_NS)
        except BaseException:
            cls.plane.print_logs()
            cls.tearDownClass()  # a failed setUpClass gets none
            raise

    @classmethod
    def tearDownClass(cls):
        cls.plane.stop()
        for t in cls.targets:
            t.cleanup()

    @classmethod
    def start_targets(cls, specs, clusters_config):
        """Starts gantry-target for each (id, leaf, traddr, workdir, kwargs) of
        @specs and writes a driver config of the fixture's clusters and them;
        returns its path."""
        cls.targets = []
        entries = []
        for tid, leaf, traddr, wd, kw in specs:
            t, entry = start_target(cls.plane, tid, leaf, traddr, wd, **kw)
            cls.targets.append(t)
            entries.append(entry)
        with open(clusters_config) as f:
            cfg = json.load(f)
        cfg["targets"] = entries
        # checkpoint classes default to auth: dhchap: the controller makes
        # each host's key here at its first publish, as with a writable
        # gantry-dhchap directory
        keydir = os.path.join(cls.plane.dir, "dhchap")
        os.makedirs(keydir, mode=0o700, exist_ok=True)
        cfg["dhchapKeyDir"] = keydir
        path = os.path.join(cls.plane.dir, "gantry.json")
        with open(path, "w") as f:
            json.dump(cfg, f)
        return path

    def tearDown(self):
        outcome = getattr(self, "_outcome", None)
        if outcome is not None and not getattr(outcome, "success", True):
            self.plane.print_logs(60)

    def ns(self, path):
        return "/api/v1/namespaces/%s/%s" % (self.USER_NS, path)

    def snap(self, path):
        return "/apis/snapshot.storage.k8s.io/v1/namespaces/%s/%s" % (self.USER_NS, path)

    def get(self, path):
        return self.plane.api("GET", path)

    def pv_of(self, claim, timeout=180):
        """The PV of PVC @claim once it is Bound (waits)."""
        name = cp.wait_for(lambda: (lambda o: o["spec"]["volumeName"] if o["status"].get(
            "phase") == "Bound" else None)(self.get(self.ns("persistentvolumeclaims/" + claim))),
            timeout, "PVC %s to be Bound" % claim)
        return self.get("/api/v1/persistentvolumes/" + name)


def rbd_ls(conf, pool="rbd"):
    r = subprocess.run(["rbd", "-c", conf, "ls", pool], capture_output=True, text=True,
                       timeout=60, check=True)
    return set(r.stdout.split())


def debug(msg):
    sys.stderr.write(msg + "\n")
