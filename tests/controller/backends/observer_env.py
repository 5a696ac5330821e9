"""What the tests of the backend observer share: gantry-csi's controller
started against the FAKE API server (tests/fakeapi/), and the StorageBackend
objects read back from it with the client's own token."""
import json
import os
import socket
import sys
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "conformance"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "fakeapi"))
from csi_client import Plugin  # noqa: E402,F401
from fake_api_proc import start_fake  # noqa: E402,F401

API = "/apis/gantry.io/v1alpha1/storagebackends"
STATES = ("Healthy", "Degraded", "Recovering", "Unavailable")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def api_get(api, path):
    """GET @path of the fake as the observer's own client does (bearer token);
    None on 404."""
    req = urllib.request.Request(api.base + path,
                                 headers={"Authorization": "Bearer " + api.token})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.loads(r.read())
    except urllib.error.HTTPError as e:
        if e.code == 404:
            return None
        raise


def backend(api, name):
    return api_get(api, API + "/" + name)


def wait_for(what, fn, timeout, step=0.25):
    """fn() until it returns something true, at most @timeout seconds."""
    deadline = time.monotonic() + timeout
    while True:
        v = fn()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %.0f s waiting for %s" % (timeout, what))
        time.sleep(step)
