"""`jobset run` prints the phase and goodput summary and writes it to
jobset.json (issue 16 item 4; docs/metrics.md, docs/local.md). The numbers
come from the same accountant as the controller's metrics (core/phase.h).

The JobSet's two workers run for known times: on attempt 0 worker 0 exits 1
after RUN0 seconds (the other keeps running until the restart deletes it),
on attempt 1 both run RUN1 seconds and exit 0. So the run spends time
pending (pods starting), running (all ready), restarting (the old attempt
deleted, the new one starting) and running again.
"""
import json

RUN0, RUN1 = 1.5, 2.0

MANIFEST = f"""
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {{name: goodput}}
spec:
  failurePolicy: {{maxRestarts: 1}}
  replicatedJobs:
  - name: w
    replicas: 2
    template:
      spec:
        backoffLimit: 0
        template:
          spec:
            restartPolicy: Never
            terminationGracePeriodSeconds: 1
            containers:
            - name: main
              image: busybox
              command: [sh, -c, 'if [ "$ATTEMPT" = 0 ]; then sleep {RUN0}; [ "$IDX" = 0 ] && exit 1; sleep 30; fi; sleep {RUN1}']
              env:
              - name: ATTEMPT
                valueFrom: {{fieldRef: {{fieldPath: "metadata.labels['jobset.sigs.k8s.io/restart-attempt']"}}}}
              - name: IDX
                valueFrom: {{fieldRef: {{fieldPath: "metadata.labels['jobset.sigs.k8s.io/job-index']"}}}}
"""


def test_summary_after_one_restart(run):
    r = run(MANIFEST)
    assert r.rc == 0, r.stdout + r.stderr
    assert r.condition("Completed"), r.status
    assert r.status["restarts"] == 1
    s = r.jobset["phaseSummary"]
    # Every phase the run went through has time; it was never suspended.
    assert s["pendingSeconds"] > 0, s
    assert s["restartingSeconds"] > 0, s
    assert s["suspendedSeconds"] == 0, s
    assert s["restarts"] == 1, s
    # All-ready time is the workers' known run times, a little less (a
    # phase begins when the reconcile sees it) - never more than they ran
    # plus the restart's grace period.
    assert RUN0 + RUN1 - 1.0 <= s["runningSeconds"] <= RUN0 + RUN1 + 2.0, s
    # The phases partition the wall clock from creation to the finish.
    total = s["pendingSeconds"] + s["runningSeconds"] + s["restartingSeconds"]
    assert abs(total - s["wallSeconds"]) < 0.01, s
    assert 0 < s["goodput"] < 1, s
    assert abs(s["goodput"] - s["runningSeconds"] / s["wallSeconds"]) < 1e-6, s
    # One wait for all-ready after the creation, one after the restart;
    # the restart's is the restarting time (it ends when all are ready).
    triggers = [w["trigger"] for w in s["timeToAllReady"]]
    assert triggers == ["creation", "restart"], s
    assert abs(s["timeToAllReady"][1]["seconds"] - s["restartingSeconds"]) < 0.01, s
    assert abs(s["timeToAllReady"][0]["seconds"] - s["pendingSeconds"]) < 0.01, s
    # The same summary on the terminal.
    assert "phases: pending" in r.stdout and "goodput" in r.stdout, r.stdout
    assert "time to all ready: creation" in r.stdout and ", restart" in r.stdout, r.stdout


def test_summary_in_json_output(run):
    r = run(MANIFEST, "-o", "json")
    assert r.rc == 0, r.stdout + r.stderr
    doc = json.loads(r.stdout)
    s = doc["phaseSummary"]
    assert s == r.jobset["phaseSummary"], (s, r.jobset["phaseSummary"])
    assert s["restartingSeconds"] > 0 and 0 < s["goodput"] < 1, s
