"""Exit codes and failure policies from real processes on real kubelets:
a Job's podFailurePolicy matching a process's exit code ends the JobSet
through its FailJobSet rule; an evicted pod (the Eviction API, as `kubectl
drain` evicts) gets its SIGTERM, its grace period, and DisruptionTarget,
which the Job's Ignore rule does not count."""
import json
import time

from conftest import busybox_pod, condition, jobset_obj, rjob, wait_for


def _finished(kube, ns, name):
    def f():
        o = kube.get("jobset", name, ns)
        return o if condition(o, "Completed") or condition(o, "Failed") else None
    return f


def test_exit_code_fails_jobset_through_pod_failure_policy(controller, ns):
    # Pod index 1 exits 42 at once; FailJob on 42 -> the Job fails with reason
    # PodFailurePolicy -> FailJobSet, although maxRestarts would allow 3.
    pod = busybox_pod(["sh", "-c", 'if [ "$JOB_COMPLETION_INDEX" = 1 ]; then exit 42; fi; sleep 30'])
    job = rjob("w", 1, pod, parallelism=2, completions=2, backoff=3,
               podFailurePolicy={"rules": [{"action": "FailJob",
                                            "onExitCodes": {"operator": "In", "values": [42]}}]})
    js = jobset_obj("exit", [job], failurePolicy={
        "maxRestarts": 3,
        "rules": [{"name": "OnExit42", "action": "FailJobSet", "onJobFailureReasons": ["PodFailurePolicy"]}]})
    controller.apply(js, ns)
    o = wait_for("JobSet exit finished", _finished(controller, ns, "exit"), timeout=120)
    c = condition(o, "Failed")
    assert c, json.dumps(o.get("status"))
    assert (o.get("status") or {}).get("restarts", 0) == 0, o["status"]
    assert c.get("reason") == "FailJobSetFailurePolicyAction", c
    def job_failed():
        job = controller.get("job", "exit-w-0", ns) or {}
        return [x for x in (job.get("status") or {}).get("conditions") or []
                if x["type"] in ("Failed", "FailureTarget") and x["status"] == "True"]

    jc = wait_for("Job exit-w-0 failed", job_failed, timeout=60)
    assert {x["reason"] for x in jc} == {"PodFailurePolicy"}, jc
    codes = [s["state"]["terminated"]["exitCode"]
             for p in controller.pods(ns, "batch.kubernetes.io/job-completion-index=1")
             for s in p["status"].get("containerStatuses", []) if "terminated" in s.get("state", {})]
    assert 42 in codes, codes


def test_eviction_is_ignored_and_grace_is_honoured(controller, ns):
    # The process traps SIGTERM, says so, and exits 7 two seconds later: an
    # exit code only the handler gives, after the grace period began.
    script = ('trap \'echo term; sleep 2; exit 7\' TERM; '
              'if [ -e /tmp/evicted ]; then exit 0; fi; '
              'while :; do sleep 0.2; done')
    pod = busybox_pod(["sh", "-c", script], grace=10)
    job = rjob("w", 1, pod, backoff=0, podFailurePolicy={"rules": [
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
        {"action": "FailJob", "onExitCodes": {"operator": "NotIn", "values": [0]}}]})
    controller.apply(jobset_obj("evict", [job], failurePolicy={"maxRestarts": 0}), ns)

    def running():
        ps = [p for p in controller.pods(ns, "jobset.sigs.k8s.io/jobset-name=evict")
              if p["status"].get("phase") == "Running"]
        return ps[0] if ps else None

    victim = wait_for("the pod Running", running, timeout=120)
    name, uid = victim["metadata"]["name"], victim["metadata"]["uid"]
    t0 = time.monotonic()
    controller.run("create", "--raw", f"/api/v1/namespaces/{ns}/pods/{name}/eviction", "-f", "-",
                   input=json.dumps({"apiVersion": "policy/v1", "kind": "Eviction",
                                     "metadata": {"name": name, "namespace": ns}}))
    seen = {}

    def terminated():
        p = controller.get("pod", name, ns)
        if not p or p["metadata"]["uid"] != uid:
            return "gone"
        for s in p["status"].get("containerStatuses", []):
            if "terminated" in s.get("state", {}):
                seen["t"] = s["state"]["terminated"]
                seen["conds"] = [c["type"] for c in p["status"].get("conditions", []) if c["status"] == "True"]
                return "terminated"
        return None

    wait_for("the evicted pod terminated", terminated, timeout=60)
    assert time.monotonic() - t0 >= 1.5, "the pod ended before its SIGTERM handler could have"
    if "t" in seen:
        assert seen["t"]["exitCode"] == 7, seen
        assert "DisruptionTarget" in seen["conds"], seen
    # The Job does not count it (backoffLimit 0): a new pod replaces it, and
    # the JobSet neither fails nor restarts.
    def replaced():
        ps = [p for p in controller.pods(ns, "jobset.sigs.k8s.io/jobset-name=evict") if p["metadata"]["uid"] != uid]
        return ps or None

    wait_for("a replacement pod", replaced, timeout=60)
    o = controller.get("jobset", "evict", ns)
    assert not condition(o, "Failed") and (o.get("status") or {}).get("restarts", 0) == 0, o.get("status")
    job = controller.get("job", "evict-w-0", ns)
    assert not [c for c in job["status"].get("conditions", []) if c["type"] == "Failed" and c["status"] == "True"]
