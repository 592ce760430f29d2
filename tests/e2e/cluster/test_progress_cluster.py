"""Hang detection on a cluster (ours, gate ProgressDeadline;
docs/progress-deadline.md "On a cluster") against a real control plane,
with our controller hosting its webhooks (deploy/'s configurations,
registered by URL as test_controller_webhooks.py does) and deploy/'s RBAC.

The pod webhook gives each pod of a ReplicatedJob with a deadline its
heartbeat volume, env and the watcher sidecar, and the label the
controller's cache of watched pods selects on. kwok runs no container, so
THE TEST STANDS IN FOR THE WATCHER: it writes what the kubelet would write
once the sidecar exits with its report (the sidecar's status with
lastState.terminated, exit code 86, the report as termination message) to
the pod's status. The controller must then judge the report against the
JobSet and the pod's start, set the pod condition ProgressDeadlineExceeded,
record a Warning event and delete the pod; the Job's podFailurePolicy
(FailJob on that condition) fails the Job and the JobSet restarts once and
completes. A report that the JobSet's settings and the pod's start do not
support is refused: the pod is left alone. The real watcher on real
kubelets is tests/e2e/realnodes/test_progress.py.
"""
import calendar
import json
import os
import time

import pytest

from conftest import condition, jobset, rjob, wait_for, wait_terminal
from test_controller_webhooks import Setup

JS = "jobset.sigs.k8s.io/"
DEADLINE = JS + "progress-deadline-seconds"
STARTUP = JS + "progress-startup-seconds"
WATCHER = "jobset-progress"
EXIT_EXCEEDED = 86

pytestmark = pytest.mark.skipif(not os.environ.get("JOBSET_TEST_KUBECONFIG"),
                                reason="JOBSET_TEST_KUBECONFIG unset: run hack/cluster up and eval hack/cluster env")


@pytest.fixture(scope="module")
def setup(kube, crd, controller, tmp_path_factory):
    # One controller at a time reconciles: the session controller steps
    # aside (the `ctl` fixture restarts it for later tests).
    controller.stop()
    s = Setup(kube, tmp_path_factory.mktemp("progress-cluster"))
    s.start_controller(f"jobset-hang-{s.id}", extra=("--feature-gates=ProgressDeadline=true",))
    yield s
    rc = s.stop_controller()
    assert rc == 0, f"controller exit status {rc} on SIGTERM; log {s.ctl.log}"


def rfc3339_ms(text):
    """Milliseconds since the epoch of a Kubernetes timestamp (seconds)."""
    return calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%SZ")) * 1000


def hang_jobset(name, run_for="8s"):
    """2 pods with a 2 s deadline (startup 3 s); a stalled pod fails its
    Job at once (FailJob on the condition), the JobSet restarts once. The
    backoffLimit would otherwise replace the pod: only the rule meeting the
    condition restarts the set."""
    r = rjob("w", 1, parallelism=2, completions=2, backoff_limit=5,
             annotations={"jobset-test/run-for": run_for, "jobset-test/stop-after": "3s"})
    r["template"]["spec"]["podFailurePolicy"] = {"rules": [
        {"action": "FailJob", "onPodConditions": [{"type": "ProgressDeadlineExceeded"}]}]}
    obj = jobset(name, [r], failurePolicy={"maxRestarts": 1})
    obj["metadata"]["annotations"] = {DEADLINE: "2", STARTUP: "3"}
    return obj


def running_pods(kube, ns, name, attempt):
    pods = kube.list("pods", ns, f"{JS}jobset-name={name},{JS}restart-attempt={attempt}")
    return [p for p in pods if (p.get("status") or {}).get("phase") == "Running"
            and not p["metadata"].get("deletionTimestamp")]


def report_as_the_watcher(kube, pod, report):
    """What the kubelet writes when the watcher exits with its report and is
    restarted: this stands in for the sidecar (kwok runs no container)."""
    st = {"initContainerStatuses": [{
        "name": WATCHER, "image": pod["spec"]["initContainers"][-1]["image"], "imageID": "", "ready": True,
        "started": True, "restartCount": 1, "state": {"running": {"startedAt": time.strftime(
            "%Y-%m-%dT%H:%M:%SZ", time.gmtime())}},
        "lastState": {"terminated": {"exitCode": EXIT_EXCEEDED, "reason": "Error", "message": json.dumps(report),
                                     "startedAt": pod["status"]["containerStatuses"][0]["state"]["running"][
                                         "startedAt"],
                                     "finishedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}}}]}
    kube.run("patch", "pod", pod["metadata"]["name"], "-n", pod["metadata"]["namespace"], "--subresource=status",
             "--type=merge", "-p", json.dumps({"status": st}))


def start_ms(pod):
    return rfc3339_ms(pod["status"]["containerStatuses"][0]["state"]["running"]["startedAt"])


def test_injection_and_report_fail_the_pod_and_restart(kube, setup):
    ns = setup.namespace(f"e2e-hang-{setup.id}")
    kube.create(hang_jobset("hang"), ns)
    pods = wait_for("attempt 0's 2 pods running", lambda: len(running_pods(kube, ns, "hang", 0)) == 2 and
                    running_pods(kube, ns, "hang", 0), 60)

    # The webhook's work, on every pod.
    for p in pods:
        spec = p["spec"]
        assert p["metadata"]["labels"].get(JS + "progress-watch") == "watched", p["metadata"]
        assert p["metadata"]["annotations"][DEADLINE] == "2" and p["metadata"]["annotations"][STARTUP] == "3"
        assert {"name": WATCHER, "emptyDir": {"sizeLimit": "1Mi"}} in spec["volumes"], spec["volumes"]
        c = spec["containers"][0]
        assert c["env"][0] == {"name": "JOBSET_PROGRESS_FILE", "value": "/run/jobset/progress/heartbeat"}, c
        assert {"name": WATCHER, "mountPath": "/run/jobset/progress"} in c["volumeMounts"], c
        w = spec["initContainers"][-1]
        assert w["name"] == WATCHER and w["restartPolicy"] == "Always", w
        assert w["command"] == ["/usr/local/bin/in-place-restart-agent", "--watch-progress"], w
        env = {e["name"]: e["value"] for e in w["env"]}
        assert env["JOBSET_PROGRESS_DEADLINE_SECONDS"] == "2" and env["JOBSET_PROGRESS_STARTUP_SECONDS"] == "3"

    # A premature report (judged 1 s after the start: within the startup
    # allowance) is refused: the pod is left alone.
    early, stalled = pods
    report_as_the_watcher(kube, early, {"reason": "ProgressDeadlineExceeded", "atMs": start_ms(early) + 1000})

    # The stalled pod: last heartbeat 0.5 s after its start, judged 2.6 s
    # after it: 100 ms over the 2 s deadline.
    beat = start_ms(stalled) + 500
    t0 = time.monotonic()
    report_as_the_watcher(kube, stalled, {"reason": "ProgressDeadlineExceeded", "heartbeatMs": beat,
                                          "atMs": beat + 2100, "message": "stands in for the watcher"})
    name = stalled["metadata"]["name"]

    def marked_and_deleting():
        p = kube.get("pod", name, ns)
        return p if p and p["metadata"].get("deletionTimestamp") and condition(p, "ProgressDeadlineExceeded") else None
    p = wait_for("the stalled pod marked and deleted", marked_and_deleting, 30)
    delay = time.monotonic() - t0
    print(f"report -> condition and deletion seen: {delay:.2f} s")
    cond = condition(p, "ProgressDeadlineExceeded")
    assert cond["reason"] == "ProgressDeadlineExceeded", cond
    assert "last heartbeat at " in cond["message"] and "progress deadline 2 s" in cond["message"], cond
    assert "exceeded by 100 ms" in cond["message"], cond

    ev = wait_for("the Warning event", lambda: [e for e in kube.events(ns, "ProgressDeadlineExceeded")
                                               if (e.get("regarding") or {}).get("name") == name], 30)
    assert ev[0]["type"] == "Warning" and "deleting it within its grace period" in ev[0]["note"], ev
    assert "progress deadline 2 s" in ev[0]["note"], ev

    # The Job fails by its podFailurePolicy; the JobSet restarts once and
    # completes in attempt 1 (whose pods nobody reports).
    js = wait_terminal(kube, "hang", ns, "Completed", 120)
    assert js["status"]["restarts"] == 1, json.dumps(js["status"])

    # The premature report changed nothing: that pod was never marked.
    ev_early = [e for e in kube.events(ns, "ProgressDeadlineExceeded")
                if (e.get("regarding") or {}).get("name") == early["metadata"]["name"]]
    assert not ev_early, ev_early
    log = open(setup.ctl.log).read()
    assert f"pod {ns}/{early['metadata']['name']}: the progress watcher's report is refused: within its deadline" \
        in log, "the refusal is not in the controller's log"


def test_no_watcher_without_a_deadline(kube, setup):
    """A JobSet with no deadline: no injection, no label (so no watch), and
    a report-shaped status on its pod does nothing."""
    ns = setup.namespace(f"e2e-hang-none-{setup.id}")
    r = rjob("w", 1, annotations={"jobset-test/run-for": "3s"})
    kube.create(jobset("plain", [r]), ns)
    pods = wait_for("its pod running", lambda: running_pods(kube, ns, "plain", 0), 60)
    p = pods[0]
    assert JS + "progress-watch" not in (p["metadata"].get("labels") or {}), p["metadata"]
    assert not p["spec"].get("initContainers") and not p["spec"].get("volumes"), p["spec"]
    assert all(e["name"] != "JOBSET_PROGRESS_FILE" for e in p["spec"]["containers"][0].get("env") or [])
    js = wait_terminal(kube, "plain", ns, "Completed", 60)
    assert js["status"].get("restarts", 0) == 0
