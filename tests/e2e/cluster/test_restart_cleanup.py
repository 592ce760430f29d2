"""The restart cleanup's guarantee on a real control plane (#392, issue 22;
src/core/cleanup.h, docs/differences.md "Restart without the garbage
collector"): no two pods of one hostname from different restart attempts run
at once, in the modes where it once broke with the default
--restart-cleanup=direct:

- a JobSet suspended in the middle of its restart (a queue preempting it),
  then resumed while the old pods are still in their grace period;
- BlockingRecreate, where no pod of the new attempt may run while any pod of
  the old one does, whatever its hostname.

The old pods linger: kwok stops a deleted pod only after its
`jobset-test/stop-after` (a process that runs on into its grace period,
hack/cluster.d/kwok.yaml). The hostname check is the session's pod watch
(hostnames.py, conftest's autouse `cluster_invariants`), read here too so the
test names what it found; the BlockingRecreate check is a watch of its own.
"""
import json
import threading
import time

import hostnames
import kapi
from conftest import condition, hostname_watch, jobset, rjob, wait_for

JS = "jobset.sigs.k8s.io/"
GRACE_S = 25
LINGER = {"jobset-test/run-for": "1h", "jobset-test/stop-after": f"{GRACE_S}s"}


def pods(kube, ns, name, attempt=None):
    sel = f"{JS}jobset-name={name}" + (f",{JS}restart-attempt={attempt}" if attempt is not None else "")
    return kube.list("pods", ns, sel)


def running(ps):
    return [p for p in ps if (p.get("status") or {}).get("phase") == "Running"]


def overlaps(w, t0, ns):
    w.settle()
    return [hostnames.describe(v) for v in w.check.since(t0) if v["key"][0] == ns]


class AttemptWatch:
    """A watch of one namespace's JobSet pods that records every moment when
    pods of two restart attempts of one JobSet occupy their hostnames at
    once (BlockingRecreate's promise; hostnames.occupies)."""

    def __init__(self, ns):
        self.lock = threading.Lock()
        self.live = {}     # uid -> (jobset uid or name, restart-attempt)
        self.first = {}    # uid -> (jobset, attempt) at first sight
        self.mixed = []
        self.stop = threading.Event()
        self.synced = threading.Event()
        path = f"/api/v1/namespaces/{ns}/pods?labelSelector={JS}jobset-name"
        self.thread = threading.Thread(target=kapi.list_watch, args=(path, self._list, self._event, self.stop),
                                       daemon=True)

    def _put(self, pod):
        md = pod.get("metadata") or {}
        uid = md.get("uid")
        lb = md.get("labels") or {}
        self.first.setdefault(uid, (lb.get(JS + "jobset-uid") or lb.get(JS + "jobset-name"),
                                    hostnames.attempt(pod)[0]))
        self.live.pop(uid, None)
        if hostnames.occupies(pod):
            self.live[uid] = self.first[uid]
            js = self.first[uid][0]
            attempts = {a for j, a in self.live.values() if j == js}
            if len(attempts) > 1:
                self.mixed.append((md.get("name"), sorted(attempts)))

    def _list(self, items, rv):
        with self.lock:
            self.live.clear()
            for p in items:
                self._put(p)
        self.synced.set()

    def _event(self, etype, pod):
        with self.lock:
            if etype == "DELETED":
                self.live.pop((pod.get("metadata") or {}).get("uid"), None)
            else:
                self._put(pod)

    def __enter__(self):
        self.thread.start()
        assert self.synced.wait(30), "pod watch: no LIST within 30 s"
        return self

    def __exit__(self, *exc):
        self.stop.set()


def test_suspend_mid_restart_keeps_one_pod_per_hostname(kube, ctl, ns):
    """A JobSet restarts (old pods deleted, each running on for 20 s), is
    suspended at once (RestartingJobSet=False, JobSetSuspended) and resumed
    while the old pods still run: no Job of the new attempt starts a pod
    beside an old pod of its hostname; every name comes back once its old
    pod is gone. Before the fix, the suspended JobSet stopped looking at the
    old pods and created every name, and the resume started them at once."""
    w = hostname_watch()
    t0 = time.monotonic()
    name = "js-sus"
    kube.create(jobset(name, [rjob("a", 1, annotations=LINGER), rjob("b", 2, annotations=LINGER)],
                       failurePolicy={"maxRestarts": 3}), ns)
    wait_for("3 pods of attempt 0 running", lambda: len(running(pods(kube, ns, name, 0))) == 3, 90)
    kube.run("annotate", "jobsets.jobset.x-k8s.io", name, "-n", ns, f"{JS}restart-request=0")
    wait_for("the old pods marked for deletion, still running",
             lambda: (lambda ps: len(ps) == 3 and all(p["metadata"].get("deletionTimestamp") for p in ps)
                      and len(running(ps)) == 3)(pods(kube, ns, name, 0)), 60)
    deleted_at = time.monotonic()
    kube.run("patch", "jobsets.jobset.x-k8s.io", name, "-n", ns, "--type=merge", "-p",
             json.dumps({"spec": {"suspend": True}}))
    wait_for("Suspended=True", lambda: (condition(kube.jobset(name, ns), "Suspended") or {}).get("status") == "True",
             30)
    kube.run("patch", "jobsets.jobset.x-k8s.io", name, "-n", ns, "--type=merge", "-p",
             json.dumps({"spec": {"suspend": False}}))
    # Resumed within the old pods' grace period: the test means nothing otherwise.
    assert time.monotonic() - deleted_at < GRACE_S, "resumed too late to overlap"
    wait_for("3 pods of attempt 1 running", lambda: len(running(pods(kube, ns, name, 1))) == 3, 120)
    assert not pods(kube, ns, name, 0) or not running(pods(kube, ns, name, 0))
    assert kube.jobset(name, ns)["status"]["restarts"] == 1
    found = overlaps(w, t0, ns)
    assert not found, "\n".join(found)


def test_blocking_recreate_waits_for_every_old_pod(kube, ctl, ns):
    """BlockingRecreate with the default direct cleanup: a restart (on
    request) deletes the old Jobs at once (Background); a-0's old pod stops
    at once, b-0's and b-1's run on for 25 s. No pod of attempt 1 - not even
    a-0's, whose own old pod is over - runs while any pod of attempt 0 does.
    Before the fix, a-0 came back one pass after the old Jobs were gone."""
    w = hostname_watch()
    t0 = time.monotonic()
    name = "js-blk"
    with AttemptWatch(ns) as aw:
        kube.create(jobset(name, [rjob("a", 1, annotations={"jobset-test/run-for": "1h"}),
                                  rjob("b", 2, annotations=LINGER)],
                           failurePolicy={"maxRestarts": 2, "restartStrategy": "BlockingRecreate"}), ns)
        wait_for("3 pods of attempt 0 running", lambda: len(running(pods(kube, ns, name, 0))) == 3, 90)
        kube.run("annotate", "jobsets.jobset.x-k8s.io", name, "-n", ns, f"{JS}restart-request=0")
        wait_for("3 pods of attempt 1 running", lambda: len(running(pods(kube, ns, name, 1))) == 3, 120)
        assert kube.jobset(name, ns)["status"]["restarts"] == 1
        with aw.lock:
            mixed = list(aw.mixed)
    assert not mixed, f"pods of two attempts ran at once: {mixed}"
    found = overlaps(w, t0, ns)
    assert not found, "\n".join(found)
