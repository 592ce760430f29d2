"""A plain HTTPS client of hack/cluster's API server with the admin
certificate (never kubectl: no process per request), and a LIST+WATCH loop.

Used where kubectl is too slow or a view must be independent of the
controller under test: the fault scenarios' Job driver (tests/fault), the
one-hostname watch of every cluster e2e test (hostnames.py) and the
adversary of tests/chaos. Reads the environment of `hack/cluster env`
(JOBSET_TEST_SERVER, JOBSET_TEST_CA, JOBSET_TEST_CLIENT_CERT/KEY).
"""
import http.client
import json
import os
import ssl
import time


class Api:
    """HTTP/1.1 to the API server with the admin certificate, directly (never
    through a proxy). Requests are retried while the API server is away
    (a scenario restarts it), up to `patience` seconds."""

    def __init__(self, patience=90):
        server = os.environ["JOBSET_TEST_SERVER"].split("://", 1)[1]
        self.host, port = server.rsplit(":", 1)
        self.port = int(port)
        self.ctx = ssl.create_default_context(cafile=os.environ["JOBSET_TEST_CA"])
        self.ctx.load_cert_chain(os.environ["JOBSET_TEST_CLIENT_CERT"], os.environ["JOBSET_TEST_CLIENT_KEY"])
        self.patience = patience
        self.conn = None

    def connect(self, timeout=30):
        return http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=timeout)

    def request(self, method, path, body=None, ctype="application/json"):
        """One request; (status, decoded JSON body or None). 5xx answers and
        connection errors are retried until `patience` has passed."""
        deadline = time.monotonic() + self.patience
        data = json.dumps(body).encode() if body is not None else None
        while True:
            try:
                if self.conn is None:
                    self.conn = self.connect()
                self.conn.request(method, path, body=data, headers={"Content-Type": ctype} if data else {})
                resp = self.conn.getresponse()
                raw = resp.read()
                if resp.status >= 500 and time.monotonic() < deadline:
                    time.sleep(0.2)  # the API server or etcd restarting: retry
                    continue
                try:
                    return resp.status, json.loads(raw) if raw else None
                except ValueError:
                    return resp.status, {"raw": raw.decode(errors="replace")}
            except (OSError, http.client.HTTPException):
                if self.conn:
                    self.conn.close()
                self.conn = None
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def watch(self, path, timeout=60):
        """Yield the events of one watch (ends when the server ends it or
        no byte came for `timeout` seconds)."""
        conn = self.connect(timeout=timeout)
        try:
            conn.request("GET", path)
            resp = conn.getresponse()
            if resp.status != 200:
                yield {"type": "ERROR", "object": {"code": resp.status, "message": resp.read()[:500].decode()}}
                return
            while True:
                line = resp.readline()
                if not line:
                    return
                yield json.loads(line)
        finally:
            conn.close()


def list_watch(path, on_list, on_event, stop, api=None, watch_seconds=30):
    """LIST `path` (a collection path, with or without a query), then WATCH
    it from the LIST's resourceVersion, and again after every watch ends,
    until the threading.Event `stop` is set. `on_list(items, rv)` gets each
    LIST's items (the state to replace; after a 410 Gone or a broken watch
    the loop lists again); `on_event(type, obj)` every ADDED, MODIFIED and
    DELETED event in the server's order. Bookmarks keep the position. Never
    returns an error: the API server being away is waited out."""
    api = api or Api(patience=5)
    sep = "&" if "?" in path else "?"
    rv = None
    while not stop.is_set():
        try:
            if rv is None:
                code, lst = api.request("GET", path)
                if code != 200:
                    time.sleep(0.2)
                    continue
                rv = lst["metadata"]["resourceVersion"]
                on_list(lst.get("items") or [], rv)
            url = (f"{path}{sep}watch=1&allowWatchBookmarks=true&resourceVersion={rv}"
                   f"&timeoutSeconds={watch_seconds}")
            for ev in api.watch(url, timeout=watch_seconds + 15):
                t = ev.get("type")
                obj = ev.get("object") or {}
                if t == "ERROR":
                    rv = None  # 410 Gone (too old) or another refusal: list again
                    break
                new_rv = (obj.get("metadata") or {}).get("resourceVersion")
                if new_rv:
                    rv = new_rv
                if t in ("ADDED", "MODIFIED", "DELETED"):
                    on_event(t, obj)
                if stop.is_set():
                    return
        except (OSError, http.client.HTTPException, ValueError):
            rv = None
            time.sleep(0.2)
