"""The restart cleanup's guarantee on a real control plane (#392, issue 22;
src/core/cleanup.h, docs/differences.md "Restart without the garbage
collector"): no two pods of one hostname from different restart attempts run
at once, in the modes where it once broke with the default
--restart-cleanup=direct:

- a JobSet suspended in the middle of its restart (a queue preempting it),
  then resumed while the old pods are still in their grace period;
- BlockingRecreate, where no pod of the new attempt may run while any pod of
  the old one does, whatever its hostname;
- an old pod in its grace period from which a user removed the jobset-name
  label, so it left the controller's label-scoped pod cache (and the
  session's label-scoped pod watch) while it still ran.

The old pods linger: kwok stops a deleted pod only after its
`jobset-test/stop-after` (a process that runs on into its grace period,
hack/cluster.d/kwok.yaml). The hostname check is the session's pod watch
(hostnames.py, conftest's autouse `cluster_invariants`), read here too so the
test names what it found; the BlockingRecreate check is a watch of its own,
and so is the unlabelled pod's check (HostWatch: all pods of the namespace,
no label selector, each pod keyed by what it was at first sight).
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


class PodWatch:
    """A list-watch of pods at `path` on a thread of its own; a subclass
    says what a pod's state means (_put) and keeps `live`, a dict by uid
    that a delete or a relist clears."""

    def __init__(self, path):
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.synced = threading.Event()
        self.thread = threading.Thread(target=kapi.list_watch, args=(path, self._list, self._event, self.stop),
                                       daemon=True)

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


class AttemptWatch(PodWatch):
    """A watch of one namespace's JobSet pods that records every moment when
    pods of two restart attempts of one JobSet occupy their hostnames at
    once (BlockingRecreate's promise; hostnames.occupies)."""

    def __init__(self, ns):
        super().__init__(f"/api/v1/namespaces/{ns}/pods?labelSelector={JS}jobset-name")
        self.live = {}     # uid -> (jobset uid or name, restart-attempt)
        self.first = {}    # uid -> (jobset, attempt) at first sight
        self.mixed = []

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



def request_restart(kube, ns, name, n, marked=True):
    """Wait until the `n` pods of attempt 0 run, ask for a restart, and (with
    `marked`) wait until every old pod is marked for deletion yet still runs
    (the lingering grace period the tests need)."""
    wait_for(f"{n} pods of attempt 0 running", lambda: len(running(pods(kube, ns, name, 0))) == n, 90)
    kube.run("annotate", "jobsets.jobset.x-k8s.io", name, "-n", ns, f"{JS}restart-request=0")
    if marked:
        wait_for("the old pods marked for deletion, still running",
                 lambda: (lambda ps: len(ps) == n and all(p["metadata"].get("deletionTimestamp") for p in ps)
                          and len(running(ps)) == n)(pods(kube, ns, name, 0)), 60)


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
    request_restart(kube, ns, name, 3)
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
        request_restart(kube, ns, name, 3, marked=False)
        wait_for("3 pods of attempt 1 running", lambda: len(running(pods(kube, ns, name, 1))) == 3, 120)
        assert kube.jobset(name, ns)["status"]["restarts"] == 1
        with aw.lock:
            mixed = list(aw.mixed)
    assert not mixed, f"pods of two attempts ran at once: {mixed}"
    found = overlaps(w, t0, ns)
    assert not found, "\n".join(found)


class HostWatch(PodWatch):
    """A watch of every pod of one namespace (no label selector: a pod whose
    labels someone removed stays in view) that records each moment two pods
    of one hostname from different restart attempts occupy it at once. A
    pod's hostname key and attempt are taken at its first sight."""

    def __init__(self, ns):
        super().__init__(f"/api/v1/namespaces/{ns}/pods")
        self.first = {}    # uid -> (hostname key, attempt, name)
        self.live = {}     # uid -> True while it occupies its hostname
        self.overlaps = []

    def _put(self, pod):
        md = pod.get("metadata") or {}
        uid = md.get("uid")
        if uid not in self.first:
            key = hostnames.hostname_key(pod)
            if key is None:
                return  # never a JobSet pod in this watch's view
            self.first[uid] = (key, hostnames.attempt(pod), md.get("name"))
        self.live.pop(uid, None)
        if hostnames.occupies(pod):
            key, att, name = self.first[uid]
            for other in self.live:
                okey, oatt, oname = self.first[other]
                found = f"{key[2]}: {name} (attempt {att[0]}) and {oname} (attempt {oatt[0]})"
                if okey == key and oatt != att and found not in self.overlaps:
                    self.overlaps.append(found)  # once per pair, not per update
            self.live[uid] = True


def test_old_pod_without_jobset_label_still_holds_its_hostname(kube, ctl, ns):
    """A restart deletes the old pods, which run on for 25 s; a user removes
    the jobset-name label from one of them while it runs. It leaves the
    controller's label-scoped pod cache as if deleted, but its hostname is
    held until it is gone: no pod of the new attempt of that hostname runs
    beside it (a watch of all the namespace's pods; the session's watch is
    label-scoped and misses it). Before the fix, a-0 of attempt 1 started
    about a second after the label went, 20 s before the old pod stopped."""
    name = "js-unl"
    with HostWatch(ns) as hw:
        kube.create(jobset(name, [rjob("a", 1, annotations=LINGER), rjob("b", 1, annotations=LINGER)],
                           failurePolicy={"maxRestarts": 2}), ns)
        request_restart(kube, ns, name, 2)
        old = next(p for p in pods(kube, ns, name, 0)
                   if p["metadata"]["labels"].get(f"{JS}replicatedjob-name") == "a")
        old_name = old["metadata"]["name"]
        kube.run("label", "pod", old_name, "-n", ns, f"{JS}jobset-name-")
        unlabelled_at = time.monotonic()
        # The label went within the old pod's grace period: else the test means nothing.
        assert "Running" == ((kube.get("pods", old_name, ns) or {}).get("status") or {}).get("phase"), \
            "the old pod stopped before its label was removed"
        wait_for("2 pods of attempt 1 running", lambda: len(running(pods(kube, ns, name, 1))) == 2, 120)
        assert time.monotonic() - unlabelled_at < 120
        with hw.lock:
            found = list(hw.overlaps)
    assert not found, "pods of one hostname from two attempts ran at once:\n" + "\n".join(found)
    assert kube.jobset(name, ns)["status"]["restarts"] == 1


def test_held_old_pod_behind_a_busy_name_does_not_spin(kube, ctl, ns):
    """A restart deletes the two old pods of Job a-0, which run on for 25 s;
    a user removes the jobset-name label from one of them, so it leaves the
    controller's pod cache and is held (ctrl/holdpods.h) while its sibling,
    still cached, holds the same Job name. Its check waits for that name,
    and the JobSet is reconciled again when the sibling's end shows in the
    cache: while the sibling runs, the controller makes at most a few passes
    a second. Before the fix a held pod waiting on a busy name asked to be
    reconciled again at once, pass after pass (about 2,000 passes a second
    on real nodes, bench/controller/recovery.sh)."""
    from test_controller_own_writes import reconciles
    name = "js-spin"
    kube.create(jobset(name, [rjob("a", 1, parallelism=2, completions=2, annotations=LINGER)],
                       failurePolicy={"maxRestarts": 2}), ns)
    request_restart(kube, ns, name, 2)
    old = sorted(p["metadata"]["name"] for p in pods(kube, ns, name, 0))
    kube.run("label", "pod", old[0], "-n", ns, f"{JS}jobset-name-")
    # The window is a measurement, not a wait for a condition: passes
    # counted over WINDOW_S while the sibling is known to run throughout.
    window_s = 5
    before = reconciles(ctl)
    time.sleep(window_s)
    passes = reconciles(ctl) - before
    sibling = kube.get("pods", old[1], ns) or {}
    assert (sibling.get("status") or {}).get("phase") == "Running", "the sibling stopped within the window"
    assert passes <= 10 * window_s, f"{passes:.0f} reconciles in {window_s} s while an old pod held the name"
    wait_for("2 pods of attempt 1 running", lambda: len(running(pods(kube, ns, name, 1))) == 2, 120)
    assert kube.jobset(name, ns)["status"]["restarts"] == 1
