"""The fault proxy itself, on the wire: what a client sees for each action,
over HTTP/2 (curl, an independent client), against the real API server.

One table row per action: the rule set, the request, and what the client
must get (HTTP version, status, headers, body, curl's exit code), plus the
proxy's counters. The scenarios (test_faults.py) then rely on these.
"""
import json
import os
import subprocess
import uuid

import pytest

from conftest import Proxy, wait_for

CM = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "v"}}


@pytest.fixture(scope="module")
def proxy(kube, tmp_path_factory):
    p = Proxy(tmp_path_factory.mktemp("proxy"), "wire")
    yield p
    p.close()


@pytest.fixture
def pns(kube):
    name = f"fault-proxy-{uuid.uuid4().hex[:6]}"
    kube.run("create", "namespace", name)
    yield name
    kube.run("delete", "namespace", name, "--wait=false", check=False)


def curl(proxy, method, path, body=None, timeout=30):
    """One request through the proxy, as the admin, over HTTP/2 only.
    Returns (curl exit code, status, HTTP version, headers, body)."""
    args = ["curl", "-sS", "--http2", "--max-time", str(timeout), "--cacert", str(proxy.ca),
            "--cert", os.environ["JOBSET_TEST_CLIENT_CERT"], "--key", os.environ["JOBSET_TEST_CLIENT_KEY"],
            "-X", method, "-D", "-", "-w", "\n%{http_code} %{http_version}",
            f"https://127.0.0.1:{proxy.port}{path}"]
    if body is not None:
        args += ["-H", "Content-Type: application/json", "--data-binary", json.dumps(body)]
    # Bytes: text mode would fold the header block's CRLFs.
    p = subprocess.run(args, capture_output=True, timeout=timeout + 10)
    out, _, tail = p.stdout.decode().rpartition("\n")
    code, _, version = tail.partition(" ")
    head, _, payload = out.partition("\r\n\r\n")
    headers = {}
    for line in head.split("\r\n")[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    return p.returncode, int(code or 0), version, headers, payload


def status_of(payload):
    return json.loads(payload)


CASES = [
    # id, rules, method, path (ns filled in), body, check(result, proxy, ns, kube)
    ("passthrough", [], "GET", "/api/v1/namespaces/{ns}", None,
     lambda r, *_: r[:3] == (0, 200, "2")),
    ("status-429-retry-after", [{"name": "x", "action": "status", "code": 429, "retry_after": 3}],
     "GET", "/api/v1/namespaces/{ns}", None,
     lambda r, *_: r[1] == 429 and r[2] == "2" and r[3].get("retry-after") == "3"
     and status_of(r[4])["reason"] == "TooManyRequests"),
    ("status-500", [{"name": "x", "action": "status", "code": 500}], "GET", "/api/v1/namespaces/{ns}", None,
     lambda r, *_: r[1] == 500 and status_of(r[4])["reason"] == "InternalError" and "retry-after" not in r[3]),
    ("status-503", [{"name": "x", "action": "status", "code": 503}], "GET", "/api/v1/namespaces/{ns}", None,
     lambda r, *_: r[1] == 503 and status_of(r[4])["reason"] == "ServiceUnavailable"),
    ("status-409-on-patch-only", [{"name": "x", "match": {"method": ["PATCH"]}, "action": "status", "code": 409}],
     "GET", "/api/v1/namespaces/{ns}", None, lambda r, px, *_: r[1] == 200 and px.injected("x") == 0),
    ("reset-stream", [{"name": "x", "action": "reset", "reset": "stream"}], "GET", "/api/v1/namespaces/{ns}",
     None, lambda r, *_: r[0] != 0 and r[1] == 200 and not r[4].rstrip().endswith("}")),
    ("reset-connection", [{"name": "x", "action": "reset", "reset": "connection"}], "GET",
     "/api/v1/namespaces/{ns}", None, lambda r, *_: r[0] != 0),
    ("duplicate-create", [{"name": "x", "match": {"method": ["POST"]}, "action": "duplicate", "hold_ms": 50}],
     "POST", "/api/v1/namespaces/{ns}/configmaps", dict(CM, metadata={"name": "dup"}),
     lambda r, px, ns, kube: r[1] == 409 and status_of(r[4])["reason"] == "AlreadyExists"
     and kube.get("configmap", "dup", ns) is not None
     and [e.get("first") for e in px.entries() if e["fault"] == "x"][-1] == 201),
    ("watch-gone", [{"name": "x", "match": {"watch": True}, "action": "watch_gone", "after_events": 1}],
     "GET", "/api/v1/namespaces/{ns}/configmaps?watch=1", None,
     lambda r, *_: r[0] == 0 and [json.loads(x)["type"] for x in r[4].split("\n") if x.strip()] == ["ADDED", "ERROR"]
     and json.loads(r[4].strip().split("\n")[-1])["object"]["code"] == 410),
    ("watch-drop", [{"name": "x", "match": {"watch": True}, "action": "watch_drop", "after_events": 1}],
     "GET", "/api/v1/namespaces/{ns}/configmaps?watch=1", None,
     lambda r, *_: r[0] == 0 and [json.loads(x)["type"] for x in r[4].split("\n") if x.strip()] == ["ADDED"]),
    ("watch-410-answer", [{"name": "x", "match": {"watch": True}, "action": "status", "code": 410}],
     "GET", "/api/v1/namespaces/{ns}/configmaps?watch=1", None,
     lambda r, *_: r[1] == 410 and status_of(r[4])["reason"] == "Expired"),
    ("count-only", [{"name": "x", "action": "count"}], "GET", "/api/v1/namespaces/{ns}", None,
     lambda r, px, *_: r[1] == 200 and px.matched("x") == 1 and px.injected("x") == 0),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_wire(case, proxy, pns, kube):
    name, rules, method, path, body, check = case
    # A ConfigMap to watch (the watch cases see it as their first event).
    kube.run("create", "configmap", "seed", "-n", pns, "--from-literal=a=b")
    proxy.call("POST", "/reset")
    proxy.rules([dict(r, limit=1) for r in rules])
    r = curl(proxy, method, path.format(ns=pns), body)
    proxy.rules([])
    assert check(r, proxy, pns, kube), (name, r[:3], r[3], r[4][:500])
    if rules and name not in ("status-409-on-patch-only", "count-only"):
        assert proxy.injected("x") == 1, proxy.stats()


def test_hold_then_drop(proxy, pns):
    """A held request stays held (the counter shows it) until released;
    dropped, the client sees its stream reset."""
    import threading
    proxy.call("POST", "/reset")
    proxy.rules([{"name": "x", "action": "hold", "limit": 1}])
    out = {}
    t = threading.Thread(target=lambda: out.setdefault("r", curl(proxy, "GET", f"/api/v1/namespaces/{pns}")))
    t.start()
    wait_for("the request held", lambda: proxy.stats()["held"] == 1, 20)
    assert "r" not in out
    assert proxy.release(drop=True) == {"released": 1}
    t.join(30)
    proxy.rules([])
    assert out["r"][0] != 0 and out["r"][1] == 0, out["r"][:3]


def test_http2_only(proxy):
    """The controller's production path is HTTP/2: an HTTP/1.1-only client is
    refused at the TLS handshake (no ALPN h2)."""
    p = subprocess.run(["curl", "-sS", "--http1.1", "--max-time", "10", "--cacert", str(proxy.ca),
                        "--cert", os.environ["JOBSET_TEST_CLIENT_CERT"], "--key", os.environ["JOBSET_TEST_CLIENT_KEY"],
                        f"https://127.0.0.1:{proxy.port}/api"], capture_output=True, text=True, timeout=20)
    assert p.returncode != 0
