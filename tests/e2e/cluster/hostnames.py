"""The one-hostname invariant (issue 22, #392), checked from a pod watch.

A JobSet's pod is reached by its hostname `<job>-<index>.<subdomain>`; a
restart recreates the Jobs under the same names. The guarantee: never two
pods of the same hostname from different restart attempts (the
`jobset.sigs.k8s.io/restart-attempt` label, and the RestartJob action's
`job-restart-attempt`) run at the same time - an old pod in its grace period
beside its successor would answer for the same name.

A pod's hostname and attempt are taken from the first sight of it (its labels
as the Job controller created it): a label someone edits later does not move
it. HostnameCheck keeps the pods of every JobSet as one cluster-wide watch of
pods with a `jobset.sigs.k8s.io/jobset-name` label reports them, in the API
server's order, and records a violation the moment a pod occupies a
hostname that a pod of another attempt still occupies. A pod occupies its
hostname while it exists in the API (no DELETED event yet) and is Running,
or is Pending and bound to a node (its containers may be starting); a pod
being deleted still occupies it until it is terminal or gone. The key is
(namespace, JobSet uid, hostname, subdomain): a JobSet deleted and created
again under its name is another JobSet. The hostname is the pod's
spec.hostname (the Job controller sets it for Indexed Jobs), else derived
from the labels: `<jobset>-<rjob>-<job-index>-<completion-index>`.

HostnameWatch runs the check in a thread (kapi.list_watch); one watch
connection for a whole pytest session or chaos run.
"""
import threading
import time

import kapi

JS = "jobset.sigs.k8s.io/"
POD_PATH = "/api/v1/pods?labelSelector=" + JS + "jobset-name"


def hostname_key(pod):
    """(namespace, jobset uid, hostname, subdomain) of a JobSet's pod, or
    None when the labels do not say which JobSet it belongs to."""
    md = pod.get("metadata") or {}
    lb = md.get("labels") or {}
    spec = pod.get("spec") or {}
    js = lb.get(JS + "jobset-name")
    if not js:
        return None
    host = spec.get("hostname")
    if not host:
        idx = lb.get("batch.kubernetes.io/job-completion-index") or \
            (md.get("annotations") or {}).get("batch.kubernetes.io/job-completion-index", "?")
        host = f"{js}-{lb.get(JS + 'replicatedjob-name', '?')}-{lb.get(JS + 'job-index', '?')}-{idx}"
    return (md.get("namespace"), lb.get(JS + "jobset-uid") or js, host, spec.get("subdomain") or "")


def attempt(pod):
    """(restart-attempt, job-restart-attempt) of a pod: which incarnation of
    its Job it belongs to."""
    lb = (pod.get("metadata") or {}).get("labels") or {}
    return (lb.get(JS + "restart-attempt", "?"), lb.get(JS + "job-restart-attempt", "0"))


def occupies(pod):
    """True while the pod holds its hostname: Running, or Pending and bound."""
    st = pod.get("status") or {}
    phase = st.get("phase")
    return phase == "Running" or (phase == "Pending" and bool((pod.get("spec") or {}).get("nodeName")))


class HostnameCheck:
    """The state machine: feed it a LIST (relist) and the events after it
    (apply); `violations` lists each overlap once per pair of pods, as a
    dict with the time, the key and both pods (name, uid, attempt, phase,
    deleting)."""

    def __init__(self, clock=time.monotonic):
        self.clock = clock
        self.lock = threading.Lock()
        self.first = {}      # uid -> (key, attempt) at first sight: labels edited later do not move a pod
        self.live = {}       # uid -> (key, attempt, summary) for pods that occupy their hostname
        self.by_key = {}     # key -> {uid: attempt}
        self.violations = []
        self.pairs = set()
        self.events = 0
        self.last_event = clock()

    @staticmethod
    def _summary(pod):
        md, st = pod.get("metadata") or {}, pod.get("status") or {}
        return {"name": md.get("name"), "uid": md.get("uid"), "attempt": attempt(pod), "phase": st.get("phase"),
                "node": (pod.get("spec") or {}).get("nodeName"), "deleting": bool(md.get("deletionTimestamp")),
                "rv": md.get("resourceVersion")}

    def _drop(self, uid):
        had = self.live.pop(uid, None)
        if had:
            peers = self.by_key.get(had[0], {})
            peers.pop(uid, None)
            if not peers:
                self.by_key.pop(had[0], None)

    def _put(self, pod):
        md = pod.get("metadata") or {}
        uid = md.get("uid")
        if not uid:
            return
        if uid not in self.first:
            self.first[uid] = (hostname_key(pod), attempt(pod))
        key, mine = self.first[uid]
        if key is None:
            return
        self._drop(uid)
        if not occupies(pod):
            return
        summ = dict(self._summary(pod), attempt=mine)
        peers = self.by_key.setdefault(key, {})
        for other, their in peers.items():
            if their != mine and (other, uid) not in self.pairs:
                self.pairs.add((other, uid))
                self.pairs.add((uid, other))
                self.violations.append({"at": self.clock(), "key": key, "old": self.live[other][2], "new": summ})
        peers[uid] = mine
        self.live[uid] = (key, mine, summ)

    def relist(self, items, rv=None):
        """Replace the state with a LIST's items (checking them against each
        other)."""
        with self.lock:
            self.live.clear()
            self.by_key.clear()
            now = {(p.get("metadata") or {}).get("uid") for p in items}
            self.first = {u: v for u, v in self.first.items() if u in now}
            for pod in items:
                self._put(pod)
            self.last_event = self.clock()

    def apply(self, etype, pod):
        """One watch event (ADDED, MODIFIED, DELETED)."""
        with self.lock:
            self.events += 1
            self.last_event = self.clock()
            if etype == "DELETED":
                uid = (pod.get("metadata") or {}).get("uid")
                self._drop(uid)
                self.first.pop(uid, None)
            else:
                self._put(pod)

    def since(self, t0):
        """Violations recorded at or after monotonic time t0."""
        with self.lock:
            return [v for v in self.violations if v["at"] >= t0]


def describe(v):
    """One line per violation, for a test failure."""
    ns, _, host, sub = v["key"]
    o, n = v["old"], v["new"]
    return (f"hostname {host}.{sub} in {ns}: pod {n['name']} (attempt {'/'.join(n['attempt'])}, {n['phase']} "
            f"on {n['node']}) while {o['name']} (attempt {'/'.join(o['attempt'])}, {o['phase']}"
            f"{', being deleted' if o['deleting'] else ''}) still held it")


class HostnameWatch:
    """A HostnameCheck fed by one cluster-wide pod watch in a thread."""

    def __init__(self, path=POD_PATH):
        self.check = HostnameCheck()
        self.stop_ev = threading.Event()
        self.synced = threading.Event()
        self.path = path
        self.thread = threading.Thread(target=self._run, name="hostname-watch", daemon=True)

    def _on_list(self, items, rv):
        self.check.relist(items, rv)
        self.synced.set()

    def _run(self):
        kapi.list_watch(self.path, self._on_list, self.check.apply, self.stop_ev)

    def start(self, timeout=30):
        """Start watching; returns once the first LIST is in."""
        self.thread.start()
        if not self.synced.wait(timeout):
            raise AssertionError(f"hostname watch: no LIST of {self.path} within {timeout}s")
        return self

    def settle(self, quiet=0.2, timeout=1.0):
        """Wait (at most `timeout` s) until no event came for `quiet` s, so
        that the events of what just happened are in."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and time.monotonic() - self.check.last_event < quiet:
            time.sleep(0.05)

    def close(self):
        self.stop_ev.set()
