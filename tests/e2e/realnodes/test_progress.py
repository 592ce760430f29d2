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
"""
import json
import time
from datetime import datetime, timezone

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


def test_stalled_pod_detected_and_set_restarts(controller, ns, nodes):
    worker = ('for i in 1 2 3; do touch "$JOBSET_PROGRESS_FILE"; echo beat $i; sleep 1; done; '
              'if [ "$ATTEMPT" = 0 ] && [ "$JOB_COMPLETION_INDEX" = 1 ]; then echo hanging; '
              'while :; do sleep 60; done; fi; echo done')
    env = [{"name": "ATTEMPT", "valueFrom": {"fieldRef": {
        "fieldPath": "metadata.labels['jobset.sigs.k8s.io/restart-attempt']"}}}]
    pod = {"restartPolicy": "Never", "terminationGracePeriodSeconds": 2, "nodeSelector": REAL,
           "containers": [{"name": "main", "image": BUSYBOX, "imagePullPolicy": "Never",
                           "command": ["/bin/sh", "-c", worker], "env": env}],
           "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
                                          "whenUnsatisfiable": "DoNotSchedule",
                                          "labelSelector": {"matchLabels": {JS + "jobset-name": "hang"}}}]}
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
