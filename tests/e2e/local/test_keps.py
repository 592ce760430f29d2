"""The merged upstream KEPs in `jobset run` (docs/differences.md "Feature gates").

KEP-1282 (execution attempts) and KEP-1186 (activeDeadlineSeconds of a whole
JobSet) are decided by the reconcile core, so the local runtime honours them
with the same gates as the controller. KEP-1150 (resource edits while
suspended) needs an edit of a suspended JobSet, which a local run cannot
receive; only its gate is accepted here.
"""
from conftest import jobset_yaml

ATTEMPT = "jobset.sigs.k8s.io/execution-attempt"

RESTART_ONCE = f"""
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {{name: ea}}
spec:
  failurePolicy: {{maxRestarts: 1}}
  replicatedJobs:
  - name: w
    template:
      spec:
        backoffLimit: 0
        template:
          spec:
            restartPolicy: Never
            containers:
            - name: c
              image: busybox
              command: [sh, -c, 'echo "attempt=$EA"; if [ ! -e flag ]; then touch flag; exit 1; fi']
              env:
              - name: EA
                valueFrom: {{fieldRef: {{fieldPath: "metadata.annotations['{ATTEMPT}']"}}}}
"""


def test_kep_1282_restart_counts_an_execution_attempt(run):
    """KEP-1282 "3. Increment on restart" and "4. Data Propagation": the
    first run is attempt 0, the whole-JobSet restart makes it 1, and each
    attempt's pods see their value through the annotation."""
    r = run(RESTART_ONCE, "--feature-gates", "ExecutionAttemptsTracking=true", "--backoff-ms", "50")
    assert r.rc == 0, r.stdout + r.stderr
    assert r.status["restarts"] == 1
    assert r.status["executionAttempts"] == 1
    logs = r.logs("ea-w-0", "c")
    assert "attempt=0" in logs and "attempt=1" in logs, logs
    by_attempt = {j["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"]: j for j in r.jobs}
    assert by_attempt["1"]["metadata"]["annotations"][ATTEMPT] == "1"
    assert by_attempt["1"]["spec"]["template"]["metadata"]["annotations"][ATTEMPT] == "1"


def test_kep_1282_gate_off_leaves_no_trace(run):
    """KEP-1282 "5. Feature Gate Disabled Behavior"."""
    r = run(RESTART_ONCE, "--backoff-ms", "50")
    assert r.rc == 0, r.stdout + r.stderr
    assert r.status["restarts"] == 1
    assert "executionAttempts" not in r.status
    assert "attempt=\n" in r.logs("ea-w-0", "c")
    assert all(ATTEMPT not in j["metadata"].get("annotations", {}) for j in r.jobs)


def test_kep_1186_deadline_fails_a_wedged_jobset(run):
    """KEP-1186 "Controller Logic": a JobSet active longer than
    activeDeadlineSeconds fails with DeadlineExceeded and its Jobs are
    deleted; status.startTime is when it became active."""
    m = jobset_yaml("dl", "sleep 600", grace=1).replace("spec:\n  replicatedJobs:",
                                                        "spec:\n  activeDeadlineSeconds: 2\n  replicatedJobs:", 1)
    r = run(m, "--feature-gates", "JobSetActiveDeadlineSeconds=true")
    assert r.rc == 1, r.stdout + r.stderr
    failed = r.condition("Failed")
    assert failed and failed["reason"] == "DeadlineExceeded", r.status
    assert r.status["startTime"].endswith("Z")
    assert "DeadlineExceeded" in r.events()
    # The Job was deleted, not failed: no Job of the run finished by itself.
    assert all(not any(c["type"] in ("Failed", "Complete") and c["status"] == "True"
                       for c in j.get("status", {}).get("conditions", [])) for j in r.jobs)


def test_kep_1186_field_needs_the_gate(run):
    """KEP-1186 "Validation", the feature-gate guard: the field is refused
    while JobSetActiveDeadlineSeconds is off."""
    m = jobset_yaml("dl", "true").replace("spec:\n  replicatedJobs:",
                                          "spec:\n  activeDeadlineSeconds: 2\n  replicatedJobs:", 1)
    r = run(m)
    assert r.rc == 2
    assert "JobSetActiveDeadlineSeconds" in r.stderr and "spec.activeDeadlineSeconds" in r.stderr


def test_kep_1150_gate_is_known(run):
    """KEP-1150 "Feature Gate": accepted by name (nothing to edit locally)."""
    r = run(jobset_yaml("mr", "true"), "--feature-gates", "MutablePodResourcesForSuspendedJobSets=true")
    assert r.rc == 0, r.stdout + r.stderr
