"""Hang detection in `jobset run` (gate ProgressDeadline, ours;
docs/progress-deadline.md): a pod that stops touching $JOBSET_PROGRESS_FILE
for longer than its deadline is stopped and fails with the pod condition
ProgressDeadlineExceeded; the JobSet's policies decide what follows."""
import re
from datetime import datetime, timezone

from conftest import REPO
from test_containers import image, jobset, leftovers, pod_spec, podman_env, rjob  # noqa: F401 (fixtures)

GATE = ("--feature-gates", "ProgressDeadline=true")
EXAMPLE = REPO / "examples" / "hang-once.yaml"


def _ms(stamp):
    return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc).timestamp() * 1000


def test_hang_once_is_detected_and_the_set_recovers(run):
    """examples/hang-once.yaml: 3 pods, deadline 2 s; worker 1 of attempt 0
    beats three times and hangs. The stall is detected, the set restarts
    once, and attempt 1 beats and completes."""
    r = run(str(EXAMPLE), *GATE)
    assert r.rc == 0, r.stdout + r.stderr
    assert r.condition("Completed"), r.status
    assert r.status["restarts"] == 1

    ev = [line for line in r.events().splitlines() if " ProgressDeadlineExceeded pod/" in line]
    assert len(ev) == 1, r.events()
    m = re.search(r"Warning ProgressDeadlineExceeded pod/(hang-once-workers-0-1-\w+): last heartbeat at (\S+), "
                  r"[\d.]+ s ago: progress deadline 2 s \(jobset.sigs.k8s.io/progress-deadline-seconds\) "
                  r"exceeded by (\d+) ms", ev[0])
    assert m, ev[0]
    stalled, late = m.group(1), int(m.group(3))

    # The stalled pod failed with the condition, from attempt 0; its reason
    # and message name the last heartbeat and the deadline.
    pod = r.pod(stalled)
    assert pod["status"]["phase"] == "Failed"
    assert pod["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"] == "0"
    cond = [c for c in pod["status"]["conditions"] if c["type"] == "ProgressDeadlineExceeded"]
    assert len(cond) == 1 and cond[0]["status"] == "True", pod["status"]["conditions"]
    assert cond[0]["reason"] == "ProgressDeadlineExceeded"
    assert m.group(2) in cond[0]["message"] and "progress deadline 2 s" in cond[0]["message"]
    assert pod["metadata"]["annotations"]["jobset.sigs.k8s.io/progress-deadline-seconds"] == "2"
    env = {e["name"]: e.get("value") for e in pod["spec"]["containers"][0]["env"]}
    assert env["JOBSET_PROGRESS_FILE"].endswith(f"/progress/{stalled}/heartbeat")
    assert "Warning Failed pod/" + stalled in r.events()

    # Detection delay: the silence allowed (2 s) plus the runner's lateness.
    # The check is scheduled for the instant the deadline passes, so the
    # lateness is the loop's timer slack, not a polling interval.
    hb = _ms(m.group(2))
    print(f"\nhang detection: deadline 2000 ms, detected {late} ms after it "
          f"(last heartbeat {m.group(2)}; total silence {2000 + late} ms)")
    assert 0 < late < 1000, late
    assert hb > 0

    # Attempt 1 beat for 6 s (three times the deadline) and completed.
    done = [p for p in r.pods if p["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"] == "1"]
    assert len(done) == 3 and all(p["status"]["phase"] == "Succeeded" for p in done), [
        (p["metadata"]["name"], p["status"]["phase"]) for p in done]
    assert "hanging at step 4" in r.logs(stalled, "worker")


NEVER_BEATS = """
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: pfp
  annotations:
    jobset.sigs.k8s.io/progress-deadline-seconds: "60"
spec:
  failurePolicy:
    maxRestarts: 3
    rules:
    - name: HangIsFatal
      action: FailJobSet
      onJobFailureReasons: [PodFailurePolicy]
  replicatedJobs:
  - name: w
    template:
      metadata:
        annotations:
          jobset.sigs.k8s.io/progress-deadline-seconds: "1"
          jobset.sigs.k8s.io/progress-startup-seconds: "1"
      spec:
        backoffLimit: 5
        podFailurePolicy:
          rules:
          - action: FailJob
            onPodConditions: [{type: ProgressDeadlineExceeded}]
        template:
          spec:
            restartPolicy: Never
            terminationGracePeriodSeconds: 1
            containers:
            - name: c
              image: busybox
              command: [sh, -c, "trap 'exit 0' TERM; while :; do sleep 0.1; done"]
"""


def test_pod_failure_policy_matches_the_condition(run):
    """A podFailurePolicy rule onPodConditions ProgressDeadlineExceeded
    fails the Job at once (backoffLimit 5 unused), and the JobSet rule on
    reason PodFailurePolicy fails the set instead of restarting it. The
    template's annotation (1 s) overrides the JobSet's (60 s); the pod
    fails although its workload exits 0 on SIGTERM."""
    r = run(NEVER_BEATS, *GATE)
    assert r.rc == 1, r.stdout + r.stderr
    assert r.condition("Failed"), r.status
    assert r.status["restarts"] == 0
    assert "no heartbeat since its containers started" in r.events()
    assert "startup allowance 1 s" in r.events()
    job = r.jobs[0]
    failed = [c for c in job["status"]["conditions"] if c["type"] == "Failed"]
    assert failed and failed[0]["reason"] == "PodFailurePolicy", job["status"]
    assert "has condition ProgressDeadlineExceeded matching FailJob rule at index 0" in failed[0]["message"]
    (pod,) = r.pods
    assert pod["status"]["phase"] == "Failed"
    assert pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 0


def test_gate_off_refuses_the_annotations(run):
    r = run(str(EXAMPLE))
    assert r.rc == 2, r.stdout + r.stderr
    assert "metadata.annotations[jobset.sigs.k8s.io/progress-deadline-seconds]" in r.stderr
    assert "ProgressDeadline feature gate" in r.stderr
    assert not r.dir.exists()


def test_bad_values_name_the_field_and_the_range(run):
    bad = NEVER_BEATS.replace('progress-startup-seconds: "1"', 'progress-startup-seconds: "2147483648"')
    r = run(bad, *GATE)
    assert r.rc == 2, r.stdout + r.stderr
    assert ("spec.replicatedJobs[0].template.metadata.annotations[jobset.sigs.k8s.io/progress-startup-seconds]"
            in r.stderr)
    assert "from 1 to 2147483647" in r.stderr


def test_container_mode_mounts_the_heartbeat_directory(run, image):
    """Podman mode: the pod's heartbeat directory is bind-mounted at
    /run/jobset/progress and $JOBSET_PROGRESS_FILE names the file in it.
    Pod 1 of attempt 0 beats 3 times and hangs (its workload exits 0 on
    SIGTERM); the stall is detected, the set restarts, and attempt 1
    completes; no container is left."""
    attempt = {"name": "A", "valueFrom": {"fieldRef": {
        "fieldPath": "metadata.labels['jobset.sigs.k8s.io/restart-attempt']"}}}
    spec = pod_spec([{"name": "c", "image": image, "args": ["beat", "$(JOBSET_PROGRESS_FILE)", "$(A)", "3"],
                      "env": [attempt]}], terminationGracePeriodSeconds=2)
    only_1 = spec | {"containers": [dict(spec["containers"][0], args=["beat", "$(JOBSET_PROGRESS_FILE)", "1", "3"])]}
    js = jobset(rjob("ok", only_1, completions=2), rjob("hang", spec), failurePolicy={"maxRestarts": 1})
    js = js.replace("metadata:\n  name: ct\n", "metadata:\n  name: ct\n  annotations:\n"
                    "    jobset.sigs.k8s.io/progress-deadline-seconds: '2'\n"
                    "    jobset.sigs.k8s.io/progress-startup-seconds: '20'\n")
    assert "progress-deadline-seconds" in js
    r = run(js, "--runtime", "podman", *GATE, timeout=180)
    assert r.rc == 0, r.stdout + r.stderr + r.events()
    assert r.status["restarts"] == 1, r.events()
    m = re.search(r"Warning ProgressDeadlineExceeded pod/(ct-hang-0-0-\w+): last heartbeat at \S+, [\d.]+ s ago: "
                  r"progress deadline 2 s \S+ exceeded by (\d+) ms", r.events())
    assert m, r.events()
    print(f"\nhang detection (podman): deadline 2000 ms, detected {m.group(2)} ms after it")
    stalled = r.pod(m.group(1))
    assert stalled["status"]["phase"] == "Failed"
    assert [c["type"] for c in stalled["status"]["conditions"] if c["type"] == "ProgressDeadlineExceeded"]
    env = {e["name"]: e.get("value") for e in stalled["spec"]["containers"][0]["env"]}
    assert env["JOBSET_PROGRESS_FILE"] == "/run/jobset/progress/heartbeat"
    assert r.logs(m.group(1), "c").splitlines()[:4] == ["beat 1", "beat 2", "beat 3", "hanging"]
    assert (r.dir / "progress" / m.group(1) / "heartbeat").exists()
    assert "attempt 1: done" in r.logs("ct-hang-0-0", "c")
    assert leftovers(r.dir) == []
