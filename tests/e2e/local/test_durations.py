"""Durations at the extremes the schema allows (issue 22), in the local runtime.

terminationGracePeriodSeconds is an int64: its largest values once
overflowed `seconds * 1000` (undefined behaviour; in practice INT64_MAX
wrapped to -1000 ms, so the first Ctrl-C killed at once, and INT64_MAX/1000+1
wrapped to a huge negative kill time, which read as "never kill", so not even
a second Ctrl-C stopped a pod that ignores SIGTERM: the run hung). Now the
grace period saturates: such a pod keeps running after the first interrupt
(its grace period is, in practice, forever), and the second interrupt - or
`jobset down`, which sends it after its --timeout - kills it at once
(docs/local.md "Interrupts").
"""
import json
import signal
import subprocess
import time
import uuid
from datetime import datetime

import pytest

from conftest import jobset_yaml, processes_with_env, start_marked, wait_for

INT64_MAX = 2**63 - 1

# One pod whose PID 1 ignores SIGTERM (as do its children: an ignored signal
# stays ignored across exec).
STUBBORN_CMD = 'trap "" TERM; while :; do sleep 1; done'


def _start(jobset_bin, tmp_path, grace):
    marker = "m" + uuid.uuid4().hex
    manifest = jobset_yaml("stubborn", STUBBORN_CMD, grace=grace, env={"JS_E2E_MARKER": marker})
    return start_marked(jobset_bin, tmp_path, manifest, marker, 1), marker


def _until(pred, timeout):
    """Poll pred() until true (True) or `timeout` seconds pass (False)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.05)
    return False


def _events(tmp_path):
    ev = tmp_path / "run" / "events.log"
    return ev.read_text() if ev.exists() else ""


# INT64_MAX: the schema's largest; INT64_MAX // 1000 + 1: the smallest whose
# milliseconds overflow (it wrapped to "never kill"); INT32_MAX: far, but
# representable even as int32 seconds.
@pytest.mark.parametrize("grace", [INT64_MAX, INT64_MAX // 1000 + 1, 2**31 - 1])
def test_largest_grace_period_then_second_interrupt(jobset_bin, tmp_path, grace):
    """The first SIGINT gives the pod its (practically endless) grace period:
    it still runs; the second SIGINT kills it at once and the run ends."""
    p, marker = _start(jobset_bin, tmp_path, grace)
    p.send_signal(signal.SIGINT)
    wait_for(lambda: "SIGINT: stopping every pod" in _events(tmp_path), what="the first SIGINT")
    # The stop has been decided (the event is written after every pod was
    # signalled): a pod killed by it would be going now.
    assert p.poll() is None, p.communicate()
    assert processes_with_env(marker), "the pod was killed at once, without its grace period"
    # The same signal within half a second is one request delivered twice:
    # ask again, one signal at a time (a signal still pending when the
    # runner ends would kill it), until the runner takes one as the second.
    for _ in range(20):
        p.send_signal(signal.SIGINT)
        if _until(lambda: "SIGINT again" in _events(tmp_path), 1.0):
            break
    assert "SIGINT again" in _events(tmp_path)
    assert p.wait(timeout=20) == 130
    assert not processes_with_env(marker)
    js = json.loads((tmp_path / "run" / "jobset.json").read_text())
    assert any(c["type"] == "Interrupted" and c["status"] == "True" for c in js["status"]["conditions"])


def test_largest_grace_period_jobset_down_timeout(jobset_bin, tmp_path):
    """`jobset down --timeout N` never hangs on such a pod: after N seconds
    it sends the second "down", which kills every pod at once."""
    p, marker = _start(jobset_bin, tmp_path, INT64_MAX)
    d = subprocess.run([str(jobset_bin), "down", "-d", str(tmp_path / "run"), "--timeout", "1"],
                       capture_output=True, text=True, timeout=30)
    assert d.returncode == 0, d.stderr
    assert "killing every pod now" in d.stderr, d.stderr
    assert p.wait(timeout=20) == 130
    assert not processes_with_env(marker)
    ev = _events(tmp_path)
    assert "jobset down: stopping every pod" in ev and "jobset down again" in ev, ev


@pytest.mark.parametrize("grace", [-1, 0])
def test_negative_and_zero_grace_period(jobset_bin, tmp_path, grace):
    """0 kills at once (SIGKILL, no SIGTERM); a negative value is 1 s, as the
    API server sets it (Kubernetes 1.27): one interrupt ends the run."""
    p, marker = _start(jobset_bin, tmp_path, grace)
    p.send_signal(signal.SIGINT)
    assert p.wait(timeout=20) == 130
    assert not processes_with_env(marker)


GRACE = 5

# A JobSet restart (failurePolicy) while the pod of index 0 ignores SIGTERM:
# its grace period is waited for, then it is killed; the name is recreated
# only after the old pod is gone. Attempt 1 succeeds.
RESTART = """
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: slowstop}
spec:
  failurePolicy: {maxRestarts: 1}
  replicatedJobs:
  - name: w
    template:
      spec:
        completions: 2
        parallelism: 2
        backoffLimit: 0
        template:
          spec:
            restartPolicy: Never
            terminationGracePeriodSeconds: %d
            containers:
            - name: main
              image: busybox
              command: [sh, -c, 'trap "" TERM; if [ "$ATTEMPT" = 0 ]; then if [ "$JOB_COMPLETION_INDEX" = 1 ]; then sleep 1; exit 1; fi; while :; do sleep 1; done; fi; exit 0']
              env:
              - name: ATTEMPT
                valueFrom: {fieldRef: {fieldPath: "metadata.labels['jobset.sigs.k8s.io/restart-attempt']"}}
""" % GRACE


def _ts(s):
    return datetime.strptime(s, "%Y-%m-%dT%H:%M:%SZ").timestamp()


def test_restart_waits_out_the_grace_period(run):
    r = run(RESTART, timeout=120)
    assert r.rc == 0, r.stdout + r.stderr
    assert r.status["restarts"] == 1
    pods = [p for p in r.items if p["kind"] == "Pod"]

    def pod(attempt, index):
        found = [p for p in pods if p["metadata"]["labels"].get("jobset.sigs.k8s.io/restart-attempt") == str(attempt)
                 and p["metadata"]["annotations"].get("batch.kubernetes.io/job-completion-index") == str(index)]
        assert len(found) == 1, (attempt, index, [p["metadata"]["name"] for p in pods])
        return found[0]

    old, new = pod(0, 0), pod(1, 0)
    term = old["status"]["containerStatuses"][0]["state"]["terminated"]
    # Deleted by the restart; SIGTERM ignored; SIGKILL once the grace
    # period was over (second-resolution timestamps: one second of slack).
    deleted, finished = _ts(old["metadata"]["deletionTimestamp"]), _ts(term["finishedAt"])
    assert GRACE - 1 <= finished - deleted <= GRACE + 5, (old["metadata"], term)
    assert term.get("signal") == 9 or term["exitCode"] == 137, term
    # The hostname's new pod started only after the old one was gone.
    assert _ts(new["status"]["startTime"]) >= finished, (new["status"], term)
