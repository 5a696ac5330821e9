#!/usr/bin/env python3
"""FAKE Kubernetes API server for Gantry's tests and demo (not a real one).

A real kube-apiserver needs etcd and a cluster; this stands in for the small
part gantry-scheduler talks to, with the same wire shapes:

  GET  /api/v1/nodes, /api/v1/pods, /api/v1/persistentvolumeclaims,
       /api/v1/persistentvolumes, /apis/storage.k8s.io/v1/{storageclasses,csinodes,volumeattachments},
       /apis/batch/v1/jobs, /apis/scheduling.x-k8s.io/v1alpha1/podgroups,
       /apis/scheduling.k8s.io/v1alpha2/podgroups (Kubernetes' own; none with
       --no-workload-api), /apis/gantry.io/v1alpha1/storagebackends (and /api/v1/namespaces/NS/{pods,persistentvolumeclaims},
       and /apis/.../namespaces/NS/{jobs,podgroups})
       -> a NodeList etc. with metadata.resourceVersion, paged by
          limit/continue, filtered by simple label and field selectors
  GET  /apis/GROUP/VERSION -> the discovery document (APIResourceList) of
       each group version served
  GET  same ?watch=1&resourceVersion=RV[&allowWatchBookmarks=true]
       -> 200, chunked, one JSON event per line (ADDED/MODIFIED/DELETED,
          BOOKMARK when asked), from RV on; an RV older than the last
          compaction gets an ERROR event with a 410 Status (or HTTP 410 in
          --gone-mode http), as the real server does
  GET  any of those paths + /NAME (namespaced: .../namespaces/NS/RES/NAME)
       -> the object, or 404 with a NotFound Status
  POST /api/v1/namespaces/NS/pods/NAME/binding
       -> sets spec.nodeName (404 no pod, 409 already bound or UID mismatch)
  POST /api/v1/namespaces/NS/events -> 201, the Event kept (named from its
       generateName; listed as any namespaced resource)
  PATCH /api/v1/namespaces/NS/events/NAME (merge patch) -> the Event updated
  POST /apis/coordination.k8s.io/v1/namespaces/NS/leases  -> create (409 exists)
  PUT  .../leases/NAME   -> replace; a metadata.resourceVersion other than the
                            stored one is refused with 409 Conflict, as the
                            real server does (optimistic concurrency)
  POST /apis/gantry.io/v1alpha1/storagebackends -> create (409 exists; the
       status sent is dropped: the CRD has the status subresource)
  PATCH /apis/gantry.io/v1alpha1/storagebackends/NAME/status -> a merge patch
       of the status only
  PATCH /api/v1/persistentvolumes/NAME, /api/v1/namespaces/NS/pods/NAME with
       Content-Type: application/merge-patch+json
       -> a JSON merge patch (RFC 7386) of the PV or pod (404 none, 415
          another type); the watch shows it MODIFIED

Every API request must carry "Authorization: Bearer TOKEN" (--token) or, with
--client-ca, a client certificate signed by that CA; otherwise 401. TLS with
--tls-cert/--tls-key. Tests steer it through /fake/... (no auth needed):

  POST   /fake/objects/RESOURCE          upsert an object (ADDED / MODIFIED); a
                                         Job gets the defaults the real server
                                         fills (completions, parallelism,
                                         completionMode, backoffLimit)
  DELETE /fake/objects/RESOURCE/NS/NAME  delete (NS "_" for cluster-scoped)
  POST   /fake/compact                   forget history: older RVs get 410
  POST   /fake/drop                      cut every open watch (no final chunk)
  POST   /fake/bookmark                  send a BOOKMARK on watches that asked
  POST   /fake/hold, /fake/release       cut open watches and keep new ones
                                         unanswered until released
  POST   /fake/hold-bindings, /fake/release-bindings
                                         keep Binding POSTs unanswered until
                                         released (a client that gives up
                                         first binds nothing)
  POST   /fake/hold-lists {"resource","count","skip","fresh"}, /fake/release-lists
                                         after SKIP (default 0) lists of RESOURCE
                                         answered as usual, the next COUNT are
                                         answered only once released: with what
                                         was there when they came (a stale
                                         answer), or with "fresh": true what is
                                         there when released
  POST   /fake/slow {"seconds": S}       every API request waits S seconds before it
                                         is looked at (0: none): a slow server
  POST   /fake/tokens {"tokens": [...]}  the bearer tokens accepted from now on
  POST   /fake/serve {"resource", "served"}
                                         serve RESOURCE from now on, or stop
                                         serving it (as a CRD applied or deleted,
                                         a cluster upgraded): its discovery entry
                                         goes (the group version answers 404 once
                                         empty), its requests answer 404, its open
                                         watches end; its objects are kept
  POST   /fake/fail {"verb","resource","status","count","mode"}
         the next COUNT matching API requests fail with STATUS (mode "event":
         a watch answers 200 + an ERROR event with that code)
  GET    /fake/requests, /fake/bindings, /fake/state
  DELETE /fake/requests

Standard library only. Prints "fake-kube-apiserver ready port=N" when it
listens, exits on SIGTERM/SIGINT, when its parent dies, or after
--max-seconds, so a crashed test never leaves it running.
"""

import argparse
import base64
import bisect
import copy
import json
import os
import select
import signal
import socket
import ssl
import sys
import threading
import time
import urllib.parse
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

RESOURCES = {
    # resource: (kind, apiVersion, namespaced, url prefix)
    "nodes": ("Node", "v1", False, "/api/v1"),
    "pods": ("Pod", "v1", True, "/api/v1"),
    "persistentvolumeclaims": ("PersistentVolumeClaim", "v1", True, "/api/v1"),
    "persistentvolumes": ("PersistentVolume", "v1", False, "/api/v1"),
    "storageclasses": ("StorageClass", "storage.k8s.io/v1", False, "/apis/storage.k8s.io/v1"),
    "volumeattributesclasses": ("VolumeAttributesClass", "storage.k8s.io/v1", False,
                                "/apis/storage.k8s.io/v1"),
    "jobs": ("Job", "batch/v1", True, "/apis/batch/v1"),
    "podgroups": ("PodGroup", "scheduling.x-k8s.io/v1alpha1", True,
                  "/apis/scheduling.x-k8s.io/v1alpha1"),
    # Kubernetes' own PodGroups (GenericWorkload); a key of its own, the URL says "podgroups"
    "podgroups.scheduling.k8s.io": ("PodGroup", "scheduling.k8s.io/v1alpha2", True,
                                    "/apis/scheduling.k8s.io/v1alpha2"),
    # what kubelet writes when it registers a node plugin (read by gantry-csi's controller)
    "csinodes": ("CSINode", "storage.k8s.io/v1", False, "/apis/storage.k8s.io/v1"),
    # what the external attacher makes per attached PV (read by gantry-csi's eviction policy)
    "volumeattachments": ("VolumeAttachment", "storage.k8s.io/v1", False, "/apis/storage.k8s.io/v1"),
    # gantry-scheduler's leader election (--leader-elect)
    "leases": ("Lease", "coordination.k8s.io/v1", True, "/apis/coordination.k8s.io/v1"),
    # what gantry-csi's node plugin posts on pods (bandwidth events)
    "events": ("Event", "v1", True, "/api/v1"),
    # each storage backend's live state (gantry-csi's backend observer publishes it
    # through the status subresource; gantry-scheduler follows it)
    "storagebackends": ("StorageBackend", "gantry.io/v1alpha1", False, "/apis/gantry.io/v1alpha1"),
}
GROUPS = {"/api/v1": "", "/apis/storage.k8s.io/v1": "storage.k8s.io", "/apis/batch/v1": "batch",
          "/apis/scheduling.x-k8s.io/v1alpha1": "scheduling.x-k8s.io",
          "/apis/scheduling.k8s.io/v1alpha2": "scheduling.k8s.io",
          "/apis/coordination.k8s.io/v1": "coordination.k8s.io",
          "/apis/gantry.io/v1alpha1": "gantry.io"}


# Group versions served; main() drops the Workload API's with --no-workload-api,
# as a cluster without the GenericWorkload feature gate does.
SERVED_PREFIXES = set(GROUPS)
# Resources not served now (--not-served, POST /fake/serve): a CRD not
# installed yet or deleted, an API a cluster's version lacks. Changed under
# State.cond.
UNSERVED_RESOURCES = set()


def plural(resource):
    """The URL's name of a resource key ("podgroups.scheduling.k8s.io" -> "podgroups")."""
    return resource.split(".")[0]


def resource_key(prefix, name):
    """The RESOURCES key of the resource @name under @prefix, or None."""
    for key, (_, _, _, p) in RESOURCES.items():
        if (p == prefix and plural(key) == name and prefix in SERVED_PREFIXES
                and key not in UNSERVED_RESOURCES):
            return key
    return None


def merge_patch(target, patch):
    """RFC 7386: objects merge key by key, null removes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


def status_obj(code, reason, message):
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}


def history_rv(entry):
    return entry[0]


def obj_key(obj):
    md = obj.get("metadata", {})
    ns = md.get("namespace", "")
    return f"{ns}/{md['name']}" if ns else md["name"]


# ---------------------------------------------------------------- selectors

def match_labels(obj, selector):
    labels = obj.get("metadata", {}).get("labels") or {}
    for term in filter(None, (t.strip() for t in selector.split(","))):
        if "!=" in term:
            k, v = term.split("!=", 1)
            if labels.get(k) == v:
                return False
        elif "==" in term or "=" in term:
            k, v = term.replace("==", "=").split("=", 1)
            if labels.get(k) != v:
                return False
        elif term.startswith("!"):
            if term[1:] in labels:
                return False
        elif term not in labels:
            return False
    return True


def field_value(obj, path):
    cur = obj
    for part in path.split("."):
        if not isinstance(cur, dict):
            return ""
        cur = cur.get(part)
    return "" if cur is None else str(cur)


def match_fields(obj, selector):
    for term in filter(None, (t.strip() for t in selector.split(","))):
        if "!=" in term:
            k, v = term.split("!=", 1)
            if field_value(obj, k) == v:
                return False
        else:
            k, v = term.replace("==", "=").split("=", 1)
            if field_value(obj, k) != v:
                return False
    return True


def discovery(prefix):
    """The APIResourceList a group version's discovery document is, or None
    when it serves nothing (a CRD's group once its last CRD is gone: 404)."""
    resources = [{"name": plural(k), "singularName": kind.lower(), "namespaced": nsd,
                  "kind": kind, "verbs": ["get", "list", "watch"]}
                 for k, (kind, _, nsd, p) in RESOURCES.items()
                 if p == prefix and k not in UNSERVED_RESOURCES]
    if not resources:
        return None
    return {"kind": "APIResourceList", "apiVersion": "v1",
            "groupVersion": prefix[len("/apis/"):] if prefix.startswith("/apis/") else "v1",
            "resources": resources}


# -------------------------------------------------------------------- state

class State:
    def __init__(self, gone_mode):
        self.cond = threading.Condition()
        self.rv = 1000
        self.objects = {r: {} for r in RESOURCES}
        self.history = []          # (rv, type, resource, obj)
        self.compacted_rv = 0      # watches from an RV below this get 410
        self.snapshots = {}        # continue id -> (rv, items)
        self.drop_gen = 0
        self.bookmark_gen = 0
        self.failures = []         # dicts from /fake/fail
        self.requests = []
        self.bindings = []
        self.open_watches = 0
        self.watch_count = 0
        self.connections = 0       # TCP connections accepted
        self.gone_mode = gone_mode
        self.stopping = False
        self.hold = False
        self.hold_bindings = False
        self.held_bindings = 0
        self.held_watches = 0
        self.list_holds = []       # dicts from /fake/hold-lists
        self.held_lists = 0
        self.list_release_gen = 0
        self.tokens = set()
        self.slow_s = 0.0          # /fake/slow

    def next_rv(self):
        self.rv += 1
        return str(self.rv)

    def upsert(self, resource, obj):
        kind, api_version, namespaced, _ = RESOURCES[resource]
        obj = copy.deepcopy(obj)
        if resource == "jobs":  # the defaults batch/v1 fills in
            spec = obj.setdefault("spec", {})
            spec.setdefault("parallelism", 1)
            spec.setdefault("completions", spec["parallelism"]
                            if spec.get("completionMode") == "Indexed" else None)
            if spec["completions"] is None:
                del spec["completions"]
            spec.setdefault("completionMode", "NonIndexed")
            spec.setdefault("backoffLimit", 6)
            spec.setdefault("suspend", False)
            obj.setdefault("status", {})
        md = obj.setdefault("metadata", {})
        if namespaced:
            md.setdefault("namespace", "default")
        else:
            md.pop("namespace", None)
        with self.cond:
            key = obj_key(obj)
            old = self.objects[resource].get(key)
            md.setdefault("uid", old["metadata"]["uid"] if old else str(uuid.uuid4()))
            md.setdefault("creationTimestamp", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
            md["resourceVersion"] = self.next_rv()
            obj["kind"], obj["apiVersion"] = kind, api_version
            self.objects[resource][key] = obj
            self.history.append((self.rv, "MODIFIED" if old else "ADDED", resource, obj))
            self.cond.notify_all()
            return obj

    def delete(self, resource, key):
        with self.cond:
            obj = self.objects[resource].pop(key, None)
            if obj is None:
                return None
            obj = copy.deepcopy(obj)
            obj["metadata"]["resourceVersion"] = self.next_rv()
            self.history.append((self.rv, "DELETED", resource, obj))
            self.cond.notify_all()
            return obj

    def compact(self):
        with self.cond:
            self.compacted_rv = self.rv + 1
            self.history = []
            self.snapshots = {}

    def take_failure(self, verb, resource):
        with self.cond:
            for f in self.failures:
                if f["count"] > 0 and f.get("verb") in (None, verb) and f.get("resource") in (None, resource):
                    f["count"] -= 1
                    return f
            return None


# ------------------------------------------------------------------ handler

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-kube-apiserver/0"
    # As the real server (Go sets TCP_NODELAY on every connection): without
    # it, Nagle holds a response's body back until the client's delayed ACK
    # of the headers, 40 ms on every request. Buffered writes put headers
    # and body in one segment; handle_one_request flushes after each
    # request, and a watch flushes each chunk itself.
    disable_nagle_algorithm = True
    wbufsize = 64 << 10

    def log_message(self, fmt, *args):  # quiet: tests read stdout for readiness
        if self.server.verbose:
            sys.stderr.write("fake-kube-apiserver: " + (fmt % args) + "\n")

    # -- helpers
    def send_json(self, code, body, headers=None):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def send_status(self, code, reason, message):
        self.send_json(code, status_obj(code, reason, message))

    def read_body(self, limit=4 << 20):
        n = int(self.headers.get("Content-Length") or 0)
        if n > limit:
            raise ValueError("body too large")
        return self.rfile.read(n) if n else b""

    def authenticated(self):
        srv, tokens = self.server, self.server.state.tokens
        auth = self.headers.get("Authorization", "")
        if tokens and auth.startswith("Bearer ") and auth[7:] in tokens:
            return True
        if srv.client_ca and isinstance(self.connection, ssl.SSLSocket):
            if self.connection.getpeercert():
                return True
        return not tokens and not srv.client_ca

    # -- routing
    def do_GET(self):
        self.route("GET")

    def do_POST(self):
        self.route("POST")

    def do_DELETE(self):
        self.route("DELETE")

    def do_PATCH(self):
        self.route("PATCH")

    def do_PUT(self):
        self.route("PUT")

    def route(self, method):
        url = urllib.parse.urlsplit(self.path)
        q = dict(urllib.parse.parse_qsl(url.query, keep_blank_values=True))
        parts = [urllib.parse.unquote(p) for p in url.path.strip("/").split("/")]
        try:
            if parts and parts[0] == "fake":
                return self.control(method, parts[1:], q)
            self.wait_slow(method)
            return self.api(method, url.path, parts, q)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            self.close_connection = True

    def api(self, method, path, parts, q):
        st = self.server.state
        verb, resource, ns, name, sub = self.classify(method, parts, q)
        authed = self.authenticated()
        with st.cond:
            if len(st.requests) >= 100000:  # a long demo must not grow without bound
                del st.requests[:50000]
            st.requests.append({"method": method, "path": path, "query": q, "verb": verb,
                                "group": GROUPS[RESOURCES[resource][3]] if resource else None,
                                "resource": plural(resource) + ("/" + sub if sub else "") if resource else None,
                                "authenticated": authed})
        if not authed:
            return self.send_status(401, "Unauthorized", "Unauthorized")
        if resource is None and method == "GET" and path.rstrip("/") in SERVED_PREFIXES:
            with st.cond:
                doc = discovery(path.rstrip("/"))
            if doc:
                return self.send_json(200, doc)
        if resource is None:
            self.read_body()  # as the real server: the connection stays usable for the next request
            return self.send_status(404, "NotFound", f"the server could not find the requested resource ({path})")
        fail = st.take_failure(verb, resource + ("/" + sub if sub else ""))
        if fail and not (verb == "watch" and fail.get("mode") == "event"):
            self.read_body()  # as the real server: the connection stays usable for the next request
            return self.send_status(fail["status"], "InternalError" if fail["status"] >= 500 else "Failure",
                                    f"fake failure injected for {verb} {resource}")
        if verb == "create" and sub == "binding":
            return self.bind(ns, name)
        if verb == "create" and resource == "events":
            try:
                ev = json.loads(self.read_body() or b"null")
            except ValueError:
                return self.send_status(400, "BadRequest", "the body is not JSON")
            if not isinstance(ev, dict):
                return self.send_status(400, "BadRequest", "the body is not a v1 Event")
            md = ev.setdefault("metadata", {})
            md["namespace"] = ns
            md.setdefault("name", md.get("generateName", "event.") + uuid.uuid4().hex[:10])
            return self.send_json(201, st.upsert("events", ev))
        if verb == "patch" and resource == "persistentvolumes" and sub is None and name and ns is None:
            return self.merge_patch(resource, name)
        if verb == "patch" and resource in ("pods", "events") and sub is None and name and ns:
            return self.merge_patch(resource, name, ns)
        if verb in ("create", "update") and resource == "leases":
            return self.write(verb, resource, ns, name)
        if verb == "create" and resource == "storagebackends" and name is None:
            return self.write(verb, resource, None, None, drop_status=True)
        if verb == "patch" and resource == "storagebackends" and sub == "status" and name:
            return self.merge_patch(resource, name, only="status")
        if verb == "list":
            return self.list(resource, ns, q)
        if verb == "get" and name and not sub:
            with st.cond:
                obj = st.objects[resource].get(f"{ns}/{name}" if ns else name)
                obj = copy.deepcopy(obj) if obj is not None else None
            if obj is None:
                return self.send_status(404, "NotFound", f'{resource} "{name}" not found')
            return self.send_json(200, obj)
        if verb == "watch":
            return self.watch(resource, ns, q, fail)
        return self.send_status(405, "MethodNotAllowed", f"{method} is not supported on {path}")

    def write(self, verb, resource, ns, name, drop_status=False):
        """POST (create) or PUT (update, resourceVersion checked) of @resource;
        @drop_status: a resource with the status subresource, whose create
        ignores the status sent, as the real server does."""
        st = self.server.state
        try:
            obj = json.loads(self.read_body() or b"null")
        except ValueError as e:
            return self.send_status(400, "BadRequest", f"invalid JSON: {e}")
        md = obj.get("metadata") if isinstance(obj, dict) else None
        if not isinstance(md, dict) or not md.get("name") or (name and md["name"] != name):
            return self.send_status(400, "BadRequest", "metadata.name: missing or not the path's")
        if drop_status:
            obj.pop("status", None)
        if ns is not None:
            md["namespace"] = ns
        key = f"{ns}/{md['name']}" if ns is not None else md["name"]
        with st.cond:
            old = st.objects[resource].get(key)
            if verb == "create" and old is not None:
                return self.send_status(409, "AlreadyExists", f'{resource} "{md["name"]}" already exists')
            if verb == "update":
                if old is None:
                    return self.send_status(404, "NotFound", f'{resource} "{name}" not found')
                if md.get("resourceVersion") and md["resourceVersion"] != old["metadata"]["resourceVersion"]:
                    return self.send_status(409, "Conflict", f'Operation cannot be fulfilled on {resource} '
                                            f'"{name}": the object has been modified; please apply your '
                                            "changes to the latest version and try again")
            md.pop("resourceVersion", None)
            obj = st.upsert(resource, obj)
        return self.send_json(201 if verb == "create" else 200, obj)

    def merge_patch(self, resource, name, ns=None, only=None):
        """A merge patch of the object; @only: through a subresource that
        takes that one field and ignores the rest (as status does)."""
        st = self.server.state
        ctype = self.headers.get("Content-Type", "").split(";")[0].strip()
        if ctype != "application/merge-patch+json":
            return self.send_status(415, "UnsupportedMediaType",
                                    f"the body of the request was in an unknown format ({ctype})")
        try:
            patch = json.loads(self.read_body() or b"null")
        except ValueError as e:
            return self.send_status(400, "BadRequest", f"invalid JSON: {e}")
        if not isinstance(patch, dict):
            return self.send_status(400, "BadRequest", "a merge patch must be a JSON object")
        if only:
            patch = {only: patch[only]} if only in patch else {}
        with st.cond:
            obj = copy.deepcopy(st.objects[resource].get(f"{ns}/{name}" if ns else name))
            if obj is None:
                return self.send_status(404, "NotFound", f'{resource} "{name}" not found')
            obj = merge_patch(obj, patch)
            obj["metadata"]["name"] = name
            if ns:
                obj["metadata"]["namespace"] = ns
            obj["metadata"].pop("resourceVersion", None)
            obj = st.upsert(resource, obj)
        return self.send_json(200, obj)

    @staticmethod
    def classify(method, parts, q):
        """(verb, resource, namespace, name, subresource) of an API path."""
        for prefix in GROUPS:
            n = prefix.count("/")
            if parts[:n] == prefix.strip("/").split("/"):
                rest = parts[n:]
                break
        else:
            return None, None, None, None, None
        ns = None
        if len(rest) >= 2 and rest[0] == "namespaces":
            ns, rest = rest[1], rest[2:]
        key = resource_key(prefix, rest[0]) if rest else None
        if key is None:
            return None, None, None, None, None
        if ns is not None and not RESOURCES[key][2]:
            return None, None, None, None, None
        resource, name = key, rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        if method == "POST" and resource == "pods" and sub == "binding" and ns:
            return "create", resource, ns, name, sub
        if method == "POST" and resource == "leases" and ns and name is None:
            return "create", resource, ns, None, None
        if method == "PUT" and resource == "leases" and ns and name and sub is None:
            return "update", resource, ns, name, None
        if method == "POST" and resource == "events" and name is None and ns:
            return "create", resource, ns, None, None
        if method == "POST" and resource == "storagebackends" and name is None and ns is None:
            return "create", resource, None, None, None
        if method == "GET" and name is None:
            watch = q.get("watch", "") in ("1", "true")
            return ("watch" if watch else "list"), resource, ns, None, None
        return method.lower(), resource, ns, name, sub

    def selected(self, obj, ns, q):
        if ns and obj.get("metadata", {}).get("namespace") != ns:
            return False
        if q.get("labelSelector") and not match_labels(obj, q["labelSelector"]):
            return False
        if q.get("fieldSelector") and not match_fields(obj, q["fieldSelector"]):
            return False
        return True

    # -- list
    def hold_list(self):
        """/fake/hold-lists: waits (under st.cond) until /fake/release-lists."""
        st = self.server.state
        gen = st.list_release_gen
        st.held_lists += 1
        st.cond.notify_all()
        while st.list_release_gen == gen and not st.stopping and not self.client_gone():
            st.cond.wait(0.2)
        st.held_lists -= 1

    def list(self, resource, ns, q):
        st = self.server.state
        kind, api_version, _, _ = RESOURCES[resource]
        limit = int(q.get("limit") or 0)
        cont = q.get("continue")
        with st.cond:
            hold = next((h for h in st.list_holds if h["count"] > 0 and h["resource"] == resource),
                        None)
            if hold and hold["skip"] > 0:
                hold["skip"] -= 1
                hold = None
            elif hold:
                hold["count"] -= 1
            if hold and hold["fresh"]:
                self.hold_list()
            if cont:
                try:
                    cid, start = json.loads(base64.urlsafe_b64decode(cont.encode()))
                except (ValueError, TypeError):
                    return self.send_status(400, "BadRequest", "invalid continue token")
                snap = st.snapshots.get(cid)
                if snap is None:
                    return self.send_status(410, "Expired", "The provided continue parameter is too old "
                                            "to display a consistent list result. You can start a new list "
                                            "without the continue parameter.")
                rv, items = snap
            else:
                rv = str(st.rv)
                items = [copy.deepcopy(o) for _, o in sorted(st.objects[resource].items())
                         if self.selected(o, ns, q)]
                for o in items:  # list items carry no kind/apiVersion
                    o.pop("kind", None)
                    o.pop("apiVersion", None)
                start, cid = 0, None
            page = items[start:start + limit] if limit > 0 else items[start:]
            meta = {"resourceVersion": rv}
            if limit > 0 and start + limit < len(items):
                if cid is None:
                    cid = uuid.uuid4().hex
                    st.snapshots[cid] = (rv, items)
                meta["continue"] = base64.urlsafe_b64encode(json.dumps([cid, start + limit]).encode()).decode()
                meta["remainingItemCount"] = len(items) - start - limit
            if hold and not hold["fresh"]:
                self.hold_list()
        self.send_json(200, {"kind": kind + "List", "apiVersion": api_version, "metadata": meta,
                             "items": page})

    # -- watch
    def wait_slow(self, method):
        """/fake/slow: the request waits (a GET whose client gives up ends
        its wait; a body not read yet would look like a close)."""
        st = self.server.state
        with st.cond:
            until = time.monotonic() + st.slow_s
            while (not st.stopping and time.monotonic() < until
                   and not (method == "GET" and self.client_gone())):
                st.cond.wait(min(0.2, max(0.0, until - time.monotonic())))

    def client_gone(self):
        # A watch client sends nothing after its request: anything readable
        # on the socket is its FIN (or a TLS close_notify).
        try:
            return bool(select.select([self.connection], [], [], 0)[0])
        except (OSError, ValueError):
            return True

    def write_chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def watch(self, resource, ns, q, fail):
        st = self.server.state
        kind, api_version, _, _ = RESOURCES[resource]
        rv_param = q.get("resourceVersion", "")
        bookmarks = q.get("allowWatchBookmarks", "") in ("1", "true")
        timeout = min(int(q.get("timeoutSeconds") or 1800), 1800)
        deadline = time.monotonic() + timeout
        with st.cond:  # /fake/hold: new watches wait here, unanswered
            st.held_watches += 1
            st.cond.notify_all()
            while st.hold and not st.stopping and not self.client_gone():
                st.cond.wait(0.2)
            st.held_watches -= 1
            since = int(rv_param) if rv_param.isdigit() and rv_param != "0" else None
            gone = since is not None and since + 1 < st.compacted_rv
            gone_msg = f"too old resource version: {since} ({st.compacted_rv - 1})"
        if gone and st.gone_mode == "http":
            return self.send_status(410, "Expired", gone_msg)
        with st.cond:
            pending = []
            if since is None:  # "" or "0": the current state first, as ADDED
                since = st.rv
                pending = [(st.rv, "ADDED", resource, o) for _, o in sorted(st.objects[resource].items())]
            drop_gen, bookmark_gen = st.drop_gen, st.bookmark_gen
            st.open_watches += 1
            st.watch_count += 1
            st.cond.notify_all()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        clean_end = True
        try:
            if gone or (fail and fail.get("mode") == "event"):
                code = 410 if gone else fail["status"]
                msg = gone_msg if gone else "fake failure injected"
                ev = {"type": "ERROR", "object": status_obj(code, "Expired" if code == 410 else "InternalError", msg)}
                self.write_chunk(json.dumps(ev).encode() + b"\n")
                return
            last = since
            seen = since  # history up to this RV is looked at
            while True:
                with st.cond:
                    while True:
                        # history is in RV order: look at what came since
                        # the last look only, not the whole of it each time
                        i = bisect.bisect_right(st.history, seen, key=history_rv)
                        new = [h for h in st.history[i:] if h[2] == resource]
                        seen = st.rv
                        if (new or pending or st.drop_gen != drop_gen or st.stopping
                                or resource in UNSERVED_RESOURCES
                                or st.bookmark_gen != bookmark_gen or time.monotonic() >= deadline):
                            break
                        st.cond.wait(min(0.5, max(0.01, deadline - time.monotonic())))
                        if self.client_gone():
                            break
                    if st.drop_gen != drop_gen or st.stopping or self.client_gone():
                        clean_end = False
                        return
                    if resource in UNSERVED_RESOURCES:
                        return  # no longer served: the watch ends, as when a CRD is deleted
                    send_bookmark = bookmarks and st.bookmark_gen != bookmark_gen
                    bookmark_gen = st.bookmark_gen
                    current_rv = st.rv
                    expired = time.monotonic() >= deadline
                events = pending + new
                pending = []
                for rv, etype, _, obj in events:
                    last = max(last, rv)
                    if self.selected(obj, ns, q):
                        self.write_chunk(json.dumps({"type": etype, "object": obj}).encode() + b"\n")
                if send_bookmark:
                    last = max(last, current_rv)
                    bm = {"type": "BOOKMARK", "object": {"kind": kind, "apiVersion": api_version,
                                                         "metadata": {"resourceVersion": str(last)}}}
                    self.write_chunk(json.dumps(bm).encode() + b"\n")
                if expired and not events:
                    return
        finally:
            with st.cond:
                st.open_watches -= 1
                st.cond.notify_all()
            if clean_end:
                try:
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                except OSError:
                    pass
            else:  # a dropped connection: no final chunk, just gone
                self.close_connection = True
                try:
                    self.connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    # -- binding
    def bind(self, ns, name):
        st = self.server.state
        try:
            b = json.loads(self.read_body() or b"null")
        except ValueError:
            return self.send_status(400, "BadRequest", "the body is not JSON")
        if not isinstance(b, dict) or b.get("kind") != "Binding" or b.get("apiVersion") != "v1":
            return self.send_status(400, "BadRequest", "the body is not a v1 Binding")
        target = b.get("target") or {}
        md = b.get("metadata") or {}
        if target.get("kind", "Node") != "Node" or not target.get("name"):
            return self.send_status(422, "Invalid", "Binding.target: must name a Node")
        if md.get("name") != name or md.get("namespace", ns) != ns:
            return self.send_status(400, "BadRequest", "Binding.metadata.name does not match the path")
        with st.cond:  # /fake/hold-bindings: wait here, unanswered
            st.held_bindings += 1
            st.cond.notify_all()
            while st.hold_bindings and not st.stopping and not self.client_gone():
                st.cond.wait(0.2)
            st.held_bindings -= 1
            if self.client_gone():
                return None
            pod = st.objects["pods"].get(f"{ns}/{name}")
            if pod is None:
                return self.send_status(404, "NotFound", f'pods "{name}" not found')
            uid = md.get("uid")
            if uid and uid != pod["metadata"]["uid"]:
                return self.send_status(409, "Conflict", f"Operation cannot be fulfilled on pods/binding "
                                        f'"{name}": Precondition failed: UID in precondition: {uid}, '
                                        f"UID in object meta: {pod['metadata']['uid']}")
            if pod.get("spec", {}).get("nodeName"):
                return self.send_status(409, "Conflict", f'Operation cannot be fulfilled on pods/binding "{name}": '
                                        f"pod {name} is already assigned to node \"{pod['spec']['nodeName']}\"")
            st.bindings.append({"namespace": ns, "name": name, "uid": uid, "node": target["name"]})
            pod = copy.deepcopy(pod)
            pod.setdefault("spec", {})["nodeName"] = target["name"]
            pod["metadata"].pop("resourceVersion", None)
        st.upsert("pods", pod)
        self.send_json(201, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                             "code": 201})

    # -- control
    def control(self, method, parts, q):
        st = self.server.state
        try:
            body = json.loads(self.read_body() or b"null")
        except ValueError:
            return self.send_json(400, {"error": "body is not JSON"})
        op = parts[0] if parts else ""
        if op == "objects" and len(parts) == 2 and method == "POST" and parts[1] in RESOURCES:
            return self.send_json(200, st.upsert(parts[1], body))
        if op == "objects" and len(parts) == 4 and method == "DELETE" and parts[1] in RESOURCES:
            key = parts[3] if parts[2] == "_" else f"{parts[2]}/{parts[3]}"
            obj = st.delete(parts[1], key)
            return self.send_json(200 if obj else 404, obj or {"error": "no such object"})
        if op == "objects" and len(parts) == 2 and method == "GET" and parts[1] in RESOURCES:
            with st.cond:
                return self.send_json(200, list(st.objects[parts[1]].values()))
        if op == "compact" and method == "POST":
            st.compact()
            return self.send_json(200, {"compactedBelow": st.compacted_rv})
        if op in ("hold", "release") and method == "POST":
            with st.cond:
                st.hold = op == "hold"
                if st.hold:  # held watches cannot see what changes meanwhile
                    st.drop_gen += 1
                st.cond.notify_all()
            return self.send_json(200, {})
        if op in ("hold-bindings", "release-bindings") and method == "POST":
            with st.cond:
                st.hold_bindings = op == "hold-bindings"
                st.cond.notify_all()
            return self.send_json(200, {})
        if op == "slow" and method == "POST":
            with st.cond:
                st.slow_s = max(0.0, float(body.get("seconds", 0)))
                st.cond.notify_all()
            return self.send_json(200, {"seconds": st.slow_s})
        if op == "hold-lists" and method == "POST":
            h = {"resource": body.get("resource"), "count": int(body.get("count", 1)),
                 "skip": int(body.get("skip", 0)), "fresh": bool(body.get("fresh"))}
            with st.cond:
                st.list_holds.append(h)
            return self.send_json(200, h)
        if op == "release-lists" and method == "POST":
            with st.cond:
                st.list_holds = []
                st.list_release_gen += 1
                st.cond.notify_all()
            return self.send_json(200, {})
        if op == "tokens" and method == "POST":
            with st.cond:
                st.tokens = set(body.get("tokens", []))
            return self.send_json(200, {})
        if op in ("drop", "bookmark") and method == "POST":
            with st.cond:
                if op == "drop":
                    st.drop_gen += 1
                else:
                    st.bookmark_gen += 1
                st.cond.notify_all()
            return self.send_json(200, {})
        if op == "fail" and method == "POST":
            f = {"verb": body.get("verb"), "resource": body.get("resource"),
                 "status": int(body.get("status", 500)), "count": int(body.get("count", 1)),
                 "mode": body.get("mode", "http")}
            with st.cond:
                st.failures.append(f)
            return self.send_json(200, f)
        if op == "serve" and method == "POST" and isinstance(body, dict) and body.get("resource") in RESOURCES:
            with st.cond:
                if body.get("served", True):
                    UNSERVED_RESOURCES.discard(body["resource"])
                else:
                    UNSERVED_RESOURCES.add(body["resource"])
                st.cond.notify_all()
            return self.send_json(200, {"resource": body["resource"],
                                        "served": body["resource"] not in UNSERVED_RESOURCES})
        if op == "gone-mode" and method == "POST":
            st.gone_mode = body.get("mode", "event")
            return self.send_json(200, {"mode": st.gone_mode})
        if op == "requests" and method == "GET":
            with st.cond:
                return self.send_json(200, st.requests)
        if op == "requests" and method == "DELETE":
            with st.cond:
                st.requests = []
            return self.send_json(200, {})
        if op == "bindings" and method == "GET":
            with st.cond:
                return self.send_json(200, st.bindings)
        if op == "state" and method == "GET":
            with st.cond:
                return self.send_json(200, {"resourceVersion": str(st.rv), "openWatches": st.open_watches,
                                            "watches": st.watch_count, "requests": len(st.requests),
                                            "connections": st.connections,
                                            "failuresLeft": sum(f["count"] for f in st.failures),
                                            "heldWatches": st.held_watches,
                                            "heldBindings": st.held_bindings,
                                            "heldLists": st.held_lists,
                                            "compactedBelow": st.compacted_rv})
        return self.send_json(404, {"error": f"unknown control request {method} /fake/{'/'.join(parts)}"})


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    tls_context = None

    def handle_error(self, request, client_address):  # a dropped client is normal here
        if self.verbose:
            super().handle_error(request, client_address)

    def finish_request(self, request, client_address):
        with self.state.cond:
            self.state.connections += 1
        # TLS handshakes happen here, on the connection's own thread, so a
        # client that connects and stalls cannot block the accept loop.
        if self.tls_context is not None:
            request.settimeout(10)
            try:
                request = self.tls_context.wrap_socket(request, server_side=True)
            except (ssl.SSLError, OSError):
                request.close()
                return
            request.settimeout(None)
            try:
                super().finish_request(request, client_address)
            finally:
                request.close()  # the raw socket was detached by wrap_socket
            return
        super().finish_request(request, client_address)


# ---------------------------------------------------------------------- seed

def seed_objects(nodes, leaves, pods):
    """A GPU cluster as Gantry sees it: Topograph labels, training pods with
    GPU requests, dataset and checkpoint PVCs/PVs of csi.gantry.io."""
    out = {r: [] for r in RESOURCES}
    spines = max(1, leaves // 4)
    for i in range(nodes):
        leaf = i % leaves
        name = f"gpu-{i:04d}"
        out["nodes"].append({
            "metadata": {"name": name, "labels": {
                "kubernetes.io/hostname": name,
                "nvidia.com/gpu.present": "true",
                "network.topology.nvidia.com/accelerator": f"nvl-{i // 8}",
                "network.topology.nvidia.com/leaf": f"leaf-{leaf}",
                "network.topology.nvidia.com/spine": f"spine-{leaf % spines}",
                "network.topology.nvidia.com/core": "core-0",
                "gantry.io/nic-gbps": "400",
                "gantry.io/nvmeof-transports": "tcp,rdma"}},
            "spec": {"podCIDR": f"10.{100 + i // 256}.{i % 256}.0/24"},
            "status": {
                "capacity": {"cpu": "128", "memory": "2Ti", "nvidia.com/gpu": "8", "pods": "110"},
                "allocatable": {"cpu": "126", "memory": "1990Gi", "nvidia.com/gpu": "8", "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
                "addresses": [{"type": "InternalIP", "address": f"10.0.{i // 256}.{i % 256}"}]}})
    out["storageclasses"] = [
        {"metadata": {"name": "gantry-dataset"}, "provisioner": "csi.gantry.io",
         "parameters": {"tier": "dataset", "clusterID": "nvme", "pool": "rbd", "dataPool": "ecdata",
                        "fsType": "ext4", "gantry.io/read-gbps-per-gpu": "3"},
         "reclaimPolicy": "Delete", "volumeBindingMode": "WaitForFirstConsumer", "allowVolumeExpansion": True},
        {"metadata": {"name": "gantry-checkpoint"}, "provisioner": "csi.gantry.io",
         "parameters": {"tier": "checkpoint", "fsType": "xfs", "gantry.io/write-gbps-per-gpu": "2"},
         "reclaimPolicy": "Delete", "volumeBindingMode": "WaitForFirstConsumer", "allowVolumeExpansion": True},
    ]
    ds_uuid = "5f1c7a36-2b4e-4c1a-9a55-1d2e3f4a5b6c"
    out["persistentvolumes"].append({
        "metadata": {"name": "pvc-imagenet", "annotations": {"pv.kubernetes.io/provisioned-by": "csi.gantry.io"}},
        "spec": {"capacity": {"storage": "2Ti"}, "accessModes": ["ReadOnlyMany"],
                 "persistentVolumeReclaimPolicy": "Delete", "storageClassName": "gantry-dataset",
                 "claimRef": {"kind": "PersistentVolumeClaim", "namespace": "training", "name": "imagenet"},
                 "csi": {"driver": "csi.gantry.io", "fsType": "ext4",
                         "volumeHandle": f"0001-0004-nvme-0000000000000002-{ds_uuid}",
                         "volumeAttributes": {"tier": "dataset", "clusterID": "nvme",
                                              "monitors": "10.0.9.1:3300,10.0.9.2:3300,10.0.9.3:3300",
                                              "pool": "rbd", "dataPool": "ecdata",
                                              "imageName": f"csi-vol-{ds_uuid}", "fsType": "ext4",
                                              "mapOptions": "ms_mode=prefer-crc"}}},
        "status": {"phase": "Bound"}})
    out["persistentvolumeclaims"].append({
        "metadata": {"name": "imagenet", "namespace": "training"},
        "spec": {"accessModes": ["ReadOnlyMany"], "storageClassName": "gantry-dataset",
                 "resources": {"requests": {"storage": "2Ti"}}, "volumeName": "pvc-imagenet"},
        "status": {"phase": "Bound", "capacity": {"storage": "2Ti"}}})
    if pods:  # the Job that owns the training pods (its parallelism: their gang's size)
        out["jobs"].append({
            "metadata": {"name": "llm", "namespace": "training",
                         "uid": "11111111-2222-3333-4444-555555555555",
                         "labels": {"gantry.io/job": "llm"}},
            "spec": {"parallelism": pods, "completions": pods, "completionMode": "Indexed",
                     "backoffLimit": 0,
                     "template": {"metadata": {"labels": {"gantry.io/job": "llm"}},
                                  "spec": {"restartPolicy": "Never", "schedulerName": "gantry-scheduler",
                                           "containers": [{"name": "trainer",
                                                           "image": "nvcr.io/nvidia/pytorch:24.10-py3"}]}}},
            "status": {"active": pods}})
    for j in range(pods):
        ck_uuid = str(uuid.UUID(int=j + 1))
        pvc = f"ckpt-llm-{j}"
        out["persistentvolumes"].append({
            "metadata": {"name": f"pvc-{ck_uuid}"},
            "spec": {"capacity": {"storage": "512Gi"}, "accessModes": ["ReadWriteOnce"],
                     "persistentVolumeReclaimPolicy": "Delete", "storageClassName": "gantry-checkpoint",
                     "claimRef": {"kind": "PersistentVolumeClaim", "namespace": "training", "name": pvc},
                     "csi": {"driver": "csi.gantry.io", "fsType": "xfs",
                             "volumeHandle": f"0002-0005-tgt-a-0000000000000000-{ck_uuid}",
                             "volumeAttributes": {"tier": "checkpoint", "targetID": "tgt-a",
                                                  "nqn": f"nqn.2026-11.io.gantry:{ck_uuid}",
                                                  "addresses": "tcp:10.0.1.5:4420,rdma:10.0.1.5:4420",
                                                  "nguid": ck_uuid.replace("-", ""), "uuid": ck_uuid,
                                                  "fsType": "xfs"}}},
            "status": {"phase": "Bound"}})
        out["persistentvolumeclaims"].append({
            "metadata": {"name": pvc, "namespace": "training"},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "gantry-checkpoint",
                     "resources": {"requests": {"storage": "512Gi"}}, "volumeName": f"pvc-{ck_uuid}"},
            "status": {"phase": "Bound"}})
        out["pods"].append({
            "metadata": {"name": f"llm-worker-{j}", "namespace": "training",
                         "labels": {"gantry.io/job": "llm", "batch.kubernetes.io/job-name": "llm"},
                         "annotations": {"gantry.io/dataset-read-gbps": "25",
                                         "gantry.io/checkpoint-write-gbps": "10"},
                         "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "llm",
                                              "uid": "11111111-2222-3333-4444-555555555555",
                                              "controller": True}]},
            "spec": {"schedulerName": "gantry-scheduler",
                     "containers": [{"name": "trainer", "image": "nvcr.io/nvidia/pytorch:24.10-py3",
                                     "resources": {"requests": {"nvidia.com/gpu": "8", "cpu": "32"},
                                                   "limits": {"nvidia.com/gpu": "8"}},
                                     "volumeMounts": [{"name": "data", "mountPath": "/data", "readOnly": True},
                                                      {"name": "ckpt", "mountPath": "/ckpt"}]}],
                     "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "imagenet",
                                                                             "readOnly": True}},
                                 {"name": "ckpt", "persistentVolumeClaim": {"claimName": pvc}}]},
            "status": {"phase": "Pending"}})
    return out


def main():
    ap = argparse.ArgumentParser(description="FAKE Kubernetes API server for tests (not a real one)")
    ap.add_argument("--bind", default="127.0.0.1", help="address to listen on (loopback only)")
    ap.add_argument("--port", type=int, default=0, help="0 picks a free port")
    ap.add_argument("--token", action="append", help="a bearer token API requests may carry (repeatable)")
    ap.add_argument("--tls-cert")
    ap.add_argument("--tls-key")
    ap.add_argument("--client-ca", help="accept client certificates signed by this CA")
    ap.add_argument("--seed", help="JSON file {resource: [objects]} loaded at start")
    ap.add_argument("--nodes", type=int, default=0, help="generate this many GPU nodes")
    ap.add_argument("--leaves", type=int, default=4)
    ap.add_argument("--pods", type=int, default=0, help="generate this many training pods (+ PVCs/PVs)")
    ap.add_argument("--gone-mode", choices=["event", "http"], default="event")
    ap.add_argument("--max-seconds", type=int, default=900, help="exit after this long (a safety net)")
    ap.add_argument("--no-workload-api", action="store_true",
                    help="serve no scheduling.k8s.io/v1alpha2 (a cluster without GenericWorkload)")
    ap.add_argument("--not-served", action="append", default=[], metavar="RESOURCE",
                    help="serve no RESOURCE (e.g. storagebackends: its CRD not installed) until "
                         "POST /fake/serve says so (repeatable)")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    for res in args.not_served:
        if res not in RESOURCES:
            ap.error(f"--not-served: unknown resource {res}")
        UNSERVED_RESOURCES.add(res)
    if args.bind not in ("127.0.0.1", "::1", "localhost"):
        ap.error("--bind: loopback only")

    if args.no_workload_api:
        SERVED_PREFIXES.discard("/apis/scheduling.k8s.io/v1alpha2")
    state = State(args.gone_mode)
    seed = seed_objects(args.nodes, max(1, args.leaves), args.pods) if args.nodes or args.pods else {}
    if args.seed:
        with open(args.seed) as f:
            for res, objs in json.load(f).items():
                seed.setdefault(res, []).extend(objs)
    for res, objs in seed.items():
        for o in objs:
            state.upsert(res, o)

    srv = Server((args.bind, args.port), Handler)
    srv.state, srv.client_ca, srv.verbose = state, args.client_ca, args.verbose
    state.tokens = set(args.token or [])
    if args.tls_cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(args.tls_cert, args.tls_key)
        if args.client_ca:
            ctx.load_verify_locations(args.client_ca)
            ctx.verify_mode = ssl.CERT_OPTIONAL
        srv.tls_context = ctx

    parent = os.getppid()
    started = time.monotonic()

    def stop(*_):
        with state.cond:
            state.stopping = True
            state.cond.notify_all()
        threading.Thread(target=srv.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)

    def watchdog():
        while not state.stopping:
            if os.getppid() != parent or time.monotonic() - started > args.max_seconds:
                stop()
                return
            time.sleep(0.5)

    threading.Thread(target=watchdog, daemon=True).start()
    print(f"fake-kube-apiserver ready port={srv.server_address[1]}", flush=True)
    srv.serve_forever(poll_interval=0.2)
    srv.server_close()


if __name__ == "__main__":
    main()
