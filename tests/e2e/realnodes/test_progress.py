"""Hang detection on real kubelets (ours, gate ProgressDeadline;
docs/progress-deadline.md "On a cluster"): the controller from deploy/
with the gate (conftest.py), its pod webhook giving each pod the heartbeat
volume and the watcher sidecar - the in-place restart agent of the
controller's image in --watch-progress mode, the default
--progress-watcher-image - on 2 real nodes.

One JobSet of 2 pods (deadline 3 s, startup allowance 10 s), the tier's
static busybox as workload: each pod touches $JOBSET_PROGRESS_FILE 3 times
a second apart; in attempt 0 the pod of completion index 1 then stops
beating and blocks (a hang), the other exits 0; in attempt 1 both exit 0
after their beats. The watcher sees the silence, exits with its report,
the kubelet puts the report in the pod's status, the controller sets the
condition, records the event and deletes the pod; the Job's FailJob rule
on the condition fails the Job and the JobSet restarts exactly once and
completes in attempt 1.

Measured and printed (-s): the detection delay, from the instant the
deadline ran out (last heartbeat + 3 s, the watcher's own mtime reading)
to the controller's Warning event (its eventTime, microseconds), and its
two parts: the watcher's timer lateness and the path report -> kubelet ->
API -> controller.

A second JobSet's workload traps SIGTERM and exits 0 (as many training
launchers do): its hung pod must still end Failed with the condition, so
that the Job counts a failure - with a podFailurePolicy the Job controller
counts a pod by its phase alone, and a Succeeded one would be a completed
index.
"""
import json
import threading
import time
from datetime import datetime, timezone

import kapi
from conftest import REAL, condition, jobset_obj, rjob, wait_for

BUSYBOX = "localhost/jobset-test/busybox:1"
JS = "jobset.sigs.k8s.io/"
DEADLINE_S = 3
# Within deadline + this many seconds (the kubelet's container-exit
# detection, its status write, the controller's watch and writes).
SLACK_S = 5


def _micro(text):
    """Epoch ms of an RFC 3339 time with up to microseconds."""
    text = text.rstrip("Z")
    fmt = "%Y-%m-%dT%H:%M:%S.%f" if "." in text else "%Y-%m-%dT%H:%M:%S"
    return datetime.strptime(text, fmt).replace(tzinfo=timezone.utc).timestamp() * 1000


def _report(pod):
    for cs in (pod.get("status") or {}).get("initContainerStatuses") or []:
        if cs.get("name") != "jobset-progress":
            continue
        for k in ("state", "lastState"):
            t = (cs.get(k) or {}).get("terminated") or {}
            if t.get("exitCode") == 86 and t.get("message"):
                return json.loads(t["message"])
    return None


def _worker_pod(worker, grace, **extra):
    """A pod running shell `worker` with $ATTEMPT, its restart attempt
    (the label, through the downward API), on a real node."""
    env = [{"name": "ATTEMPT", "valueFrom": {"fieldRef": {
        "fieldPath": "metadata.labels['jobset.sigs.k8s.io/restart-attempt']"}}}]
    pod = {"restartPolicy": "Never", "terminationGracePeriodSeconds": grace, "nodeSelector": REAL,
           "containers": [{"name": "main", "image": BUSYBOX, "imagePullPolicy": "Never",
                           "command": ["/bin/sh", "-c", worker], "env": env}]}
    pod.update(extra)
    return pod


def test_stalled_pod_detected_and_set_restarts(controller, ns, nodes):
    worker = ('for i in 1 2 3; do touch "$JOBSET_PROGRESS_FILE"; echo beat $i; sleep 1; done; '
              'if [ "$ATTEMPT" = 0 ] && [ "$JOB_COMPLETION_INDEX" = 1 ]; then echo hanging; '
              'while :; do sleep 60; done; fi; echo done')
    pod = _worker_pod(worker, 2, topologySpreadConstraints=[{
        "maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {JS + "jobset-name": "hang"}}}])
    job = rjob("w", 1, pod, parallelism=2, completions=2, backoff=0,
               podFailurePolicy={"rules": [{"action": "FailJob",
                                            "onPodConditions": [{"type": "ProgressDeadlineExceeded"}]}]})
    obj = jobset_obj("hang", [job], failurePolicy={"maxRestarts": 2})
    obj["metadata"]["annotations"] = {JS + "progress-deadline-seconds": str(DEADLINE_S),
                                      JS + "progress-startup-seconds": "10"}
    controller.apply(obj, ns)

    # Watch attempt 0's pods until the stalled one is gone: keep the last
    # version that carries the watcher's report and our condition.
    seen = {}

    def stalled_gone():
        ps = controller.pods(ns, f"{JS}jobset-name=hang,{JS}restart-attempt=0")
        for p in ps:
            if _report(p):
                seen["report"] = _report(p)
                seen["pod"] = p
        js = controller.get("jobset", "hang", ns) or {}
        return seen.get("pod") is not None and (js.get("status") or {}).get("restarts", 0) >= 1

    wait_for("the stalled pod reported and the JobSet restarted", stalled_gone, timeout=180)
    p, rep = seen["pod"], seen["report"]
    name = p["metadata"]["name"]
    assert p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"] == "1", name
    assert rep.get("heartbeatMs"), rep  # it beat before it hung

    def the_event():
        evs = json.loads(controller.run("get", "events.events.k8s.io", "-n", ns, "-o", "json").stdout)["items"]
        return [e for e in evs if e.get("reason") == "ProgressDeadlineExceeded"
                and (e.get("regarding") or {}).get("name") == name]
    ev = wait_for("the Warning event", the_event, timeout=60)[0]
    assert ev["type"] == "Warning" and "deleting it within its grace period" in ev["note"], ev
    assert f"progress deadline {DEADLINE_S} s" in ev["note"], ev

    js = wait_for("the JobSet completed", lambda: (lambda j: j if (j.get("status") or {}).get("terminalState")
                                                    else None)(controller.get("jobset", "hang", ns) or {}),
                  timeout=180)
    assert js["status"]["terminalState"] == "Completed", json.dumps(js["status"])
    assert js["status"]["restarts"] == 1, json.dumps(js["status"])

    due = rep["heartbeatMs"] + DEADLINE_S * 1000
    event_ms = _micro(ev.get("eventTime") or ev["metadata"]["creationTimestamp"])
    watcher_late = rep["atMs"] - due
    path = event_ms - rep["atMs"]
    total = event_ms - due
    print(f"\nhang detection on real nodes: deadline {DEADLINE_S} s; watcher late {watcher_late} ms; "
          f"report -> controller's event {path:.0f} ms; detection delay (deadline ran out -> event) "
          f"{total:.0f} ms")
    assert 0 < watcher_late < 1000, rep
    assert total < SLACK_S * 1000, (total, rep, ev.get("eventTime"))
    if condition(p, "ProgressDeadlineExceeded"):
        assert "exceeded by" in condition(p, "ProgressDeadlineExceeded")["message"]


class PodHistory:
    """Every version of a namespace's pods from one watch (kapi.list_watch),
    by uid: what a poll could miss between the controller's write and the
    pod's removal."""

    def __init__(self, ns):
        self.lock = threading.Lock()
        self.versions = {}
        self.synced = threading.Event()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=kapi.list_watch, daemon=True, args=(
            f"/api/v1/namespaces/{ns}/pods", self._list, self._event, self.stop))

    def _list(self, items, rv):
        for p in items:
            self._event("ADDED", p)
        self.synced.set()

    def _event(self, etype, pod):
        with self.lock:
            self.versions.setdefault(pod["metadata"]["uid"], []).append((etype, pod))

    def __enter__(self):
        self.thread.start()
        assert self.synced.wait(30), "no LIST of the namespace's pods"
        return self

    def __exit__(self, *exc):
        self.stop.set()

    def of(self, pred):
        with self.lock:
            return {u: list(v) for u, v in self.versions.items() if pred(v[-1][1])}


def test_hung_pod_whose_workload_exits_0_on_sigterm_still_fails(controller, ns):
    """The controller's deletion sends SIGTERM; a workload that traps it
    and exits 0 would leave the kubelet to end the pod Succeeded (restart
    policy Never, every container exited 0). The pod must end Failed with
    the condition, and the Job - whose podFailurePolicy makes it count by
    phase - fail, so that the set restarts once."""
    # `sleep & wait`: sh runs its trap only between commands, and wait is
    # one it leaves at a signal; a foreground sleep would outlast the grace
    # period and the pod would end 137 (SIGKILL) whatever we write.
    worker = ("trap 'echo got TERM; exit 0' TERM; "
              'for i in 1 2 3; do touch "$JOBSET_PROGRESS_FILE"; echo beat $i; sleep 1; done; '
              'if [ "$ATTEMPT" = 0 ]; then echo hanging; while :; do sleep 60 & wait $!; done; fi; echo done')
    pod = _worker_pod(worker, 5)
    # Count (the default action) made explicit: any podFailurePolicy makes
    # the Job controller wait for the pod's phase and go by it alone.
    job = rjob("w", 1, pod, backoff=0,
               podFailurePolicy={"rules": [{"action": "Count",
                                            "onPodConditions": [{"type": "ProgressDeadlineExceeded"}]}]})
    obj = jobset_obj("trapper", [job], failurePolicy={"maxRestarts": 2})
    obj["metadata"]["annotations"] = {JS + "progress-deadline-seconds": str(DEADLINE_S),
                                      JS + "progress-startup-seconds": "10"}
    with PodHistory(ns) as hist:
        controller.apply(obj, ns)
        js = wait_for("the JobSet ended", lambda: (lambda j: j if (j.get("status") or {}).get("terminalState")
                                                   else None)(controller.get("jobset", "trapper", ns) or {}),
                      timeout=180)
        first = lambda p: (p["metadata"].get("labels") or {}).get(JS + "restart-attempt") == "0"  # noqa: E731
        wait_for("attempt 0's pod removed", lambda: all(v[-1][0] == "DELETED" for v in hist.of(first).values())
                 and hist.of(first), timeout=60)
        pods = hist.of(first)
    assert len(pods) == 1, list(pods)
    versions = [p for _, p in next(iter(pods.values()))]
    last = versions[-1]
    name = last["metadata"]["name"]
    main = [c for c in last["status"].get("containerStatuses") or [] if c["name"] == "main"]
    term = (main[0]["state"].get("terminated") if main else None) or {}
    phases = [p["status"].get("phase") for p in versions]
    # The premise: the workload got SIGTERM and exited 0 (not 137).
    assert term.get("exitCode") == 0, (name, main)
    assert last["status"]["phase"] == "Failed", (name, phases)
    assert "Succeeded" not in phases, (name, phases)
    # Terminal only once the containers stopped (the kubelet's verdict, not
    # a phase written over running containers).
    for p in versions:
        if p["status"].get("phase") == "Failed":
            assert all("terminated" in (cs.get("state") or {}) for cs in p["status"].get("containerStatuses") or []), \
                (name, p["status"].get("containerStatuses"))
    c = condition(last, "ProgressDeadlineExceeded")
    assert c and "exceeded by" in c["message"], (name, last["status"].get("conditions"))
    assert js["status"]["terminalState"] == "Completed", json.dumps(js["status"])
    assert js["status"]["restarts"] == 1, json.dumps(js["status"])
    print(f"\n{name}: phases {phases}, main exited {term.get('exitCode')} ({term.get('reason')}), "
          f"pod reason {last['status'].get('reason')}")
