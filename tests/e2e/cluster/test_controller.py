"""jobset-controller end to end on hack/cluster (issue 6 part 4).

Pods are fake (kwok); their fate is set by pod-template annotations
(docs/cluster.md): jobset-test/run-for, exit-code, fail-if-*.
"""
import hashlib
import json
import signal
import time

from conftest import (condition, jobset, rjob, terminal, wait_for, wait_terminal)

JS = "jobset.sigs.k8s.io/"
LONG = {"jobset-test/run-for": "1h"}


def owner_uid(obj):
    for r in obj["metadata"].get("ownerReferences", []) or []:
        if r.get("controller") and r.get("kind") == "JobSet":
            return r["uid"]
    return None


def test_completes_and_children_match_spec(kube, ctl, ns):
    js = jobset("demo", [rjob("leader", 1), rjob("workers", 2, parallelism=2, completions=2)],
                coordinator={"replicatedJob": "leader"})
    kube.create(js, ns)
    obj = wait_terminal(kube, "demo", ns, "Completed")
    uid = obj["metadata"]["uid"]
    assert condition(obj, "Completed")["reason"] == "AllJobsCompleted"
    assert obj["status"]["restarts"] == 0

    svc = kube.get("service", "demo", ns)
    assert svc["spec"]["clusterIP"] == "None"
    assert svc["spec"]["selector"] == {JS + "jobset-name": "demo"}
    assert svc["spec"]["publishNotReadyAddresses"] is True
    ref = svc["metadata"]["ownerReferences"][0]
    assert (ref["kind"], ref["name"], ref["uid"], ref["controller"], ref["blockOwnerDeletion"]) == \
        ("JobSet", "demo", uid, True, True)

    jobs = {j["metadata"]["name"]: j for j in kube.jobs(ns, "demo")}
    assert sorted(jobs) == ["demo-leader-0", "demo-workers-0", "demo-workers-1"]
    expect = {
        "demo-leader-0": ("leader", "1", "0", "0", "0"),
        "demo-workers-0": ("workers", "2", "0", "1", "1"),
        "demo-workers-1": ("workers", "2", "1", "2", "2"),
    }
    for name, (rj, reps, idx, gidx, grpidx) in expect.items():
        j = jobs[name]
        want = {
            "jobset-name": "demo", "jobset-uid": uid, "replicatedjob-name": rj, "replicatedjob-replicas": reps,
            "global-replicas": "3", "job-index": idx, "job-global-index": gidx,
            "job-key": hashlib.sha1(f"{ns}/{name}".encode()).hexdigest(), "group-name": "default",
            "group-replicas": "3", "job-group-index": grpidx, "restart-attempt": "0",
            "coordinator": "demo-leader-0-0.demo",
        }
        for where in (j["metadata"], j["spec"]["template"]["metadata"]):
            for k, v in want.items():
                assert where["labels"].get(JS + k) == v, (name, "label", k, where["labels"])
                assert where["annotations"].get(JS + k) == v, (name, "annotation", k)
        ref = j["metadata"]["ownerReferences"]
        assert len(ref) == 1 and ref[0]["uid"] == uid and ref[0]["controller"] and ref[0]["blockOwnerDeletion"]
        assert j["spec"]["template"]["spec"]["subdomain"] == "demo"
        assert j["spec"]["suspend"] is False
        assert j["spec"]["completionMode"] == "Indexed"
    # Indexed pods get hostname <job>-<index> from the Job controller.
    pods = kube.list("pods", ns, JS + "jobset-name=demo")
    assert sorted(p["spec"]["hostname"] for p in pods) == \
        ["demo-leader-0-0", "demo-workers-0-0", "demo-workers-0-1", "demo-workers-1-0", "demo-workers-1-1"]
    assert {p["spec"]["subdomain"] for p in pods} == {"demo"}
    events = kube.events(ns, "AllJobsCompleted")
    assert events and events[0]["regarding"]["uid"] == uid and events[0]["reportingController"] == "jobset"


def test_restart_jobset_then_completes(kube, ctl, ns):
    fail_once = {"jobset-test/fail-if-job-index": "1", "jobset-test/fail-if-restart-attempt": "0",
                 "jobset-test/exit-code": "3"}
    js = jobset("js-restart", [rjob("rjob", 2, annotations=fail_once)],
                failurePolicy={"maxRestarts": 3,
                               "rules": [{"name": "restart", "action": "RestartJobSet", "onJobFailureReasons": ["BackoffLimitExceeded"]}]})
    kube.create(js, ns)
    obj = wait_terminal(kube, "js-restart", ns, "Completed")
    assert obj["status"]["restarts"] == 1
    assert obj["status"].get("restartsCountTowardsMax") == 1
    for j in kube.jobs(ns, "js-restart"):
        assert j["metadata"]["labels"][JS + "restart-attempt"] == "1"
    assert kube.events(ns, "RestartJobSetFailurePolicyAction")


def test_restart_cleans_up_directly(kube, ctl, ns):
    """docs/differences.md "Restart without the garbage collector": the Jobs of the old attempt are
    deleted in the Background and their pods by DeletePod actions, and the
    new attempt is created once no old pod runs; with --restart-cleanup=foreground, upstream's
    Foreground deletion, no DeletePod is sent. Either way the restart completes."""
    fail_once = {"jobset-test/fail-if-job-index": "0", "jobset-test/fail-if-restart-attempt": "0",
                 "jobset-test/exit-code": "3", "jobset-test/run-for": "2s"}
    others = {"jobset-test/run-for": "8s"}

    def run(name):
        js = jobset(name, [rjob("a", 1, annotations=fail_once), rjob("b", 3, annotations=others)],
                    failurePolicy={"maxRestarts": 2})
        kube.create(js, ns)
        obj = wait_terminal(kube, name, ns, "Completed")
        assert obj["status"]["restarts"] == 1
        jobs = kube.jobs(ns, name)
        assert sorted(j["metadata"]["name"] for j in jobs) == [f"{name}-a-0", f"{name}-b-0", f"{name}-b-1", f"{name}-b-2"]
        assert all(j["metadata"]["labels"][JS + "restart-attempt"] == "1" for j in jobs)
        # No pod of attempt 0 is left running.
        old = [p for p in kube.list("pods", ns, f"{JS}jobset-name={name},{JS}restart-attempt=0")
               if p.get("status", {}).get("phase") not in ("Succeeded", "Failed")]
        assert not old, [p["metadata"]["name"] for p in old]

    def delete_pods(text):
        return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                   if line.startswith("jobset_controller_actions_total{") and 'action="DeletePod"' in line
                   and 'result="ok"' in line)

    before = delete_pods(ctl.metrics())
    run("js-direct")
    assert delete_pods(ctl.metrics()) >= before + 1
    ctl.restart("--restart-cleanup=foreground")
    ctl.custom = True
    run("js-fg")
    assert delete_pods(ctl.metrics()) == 0


def test_max_restarts_exhausted(kube, ctl, ns):
    js = jobset("js-max", [rjob("rjob", 1, annotations={"jobset-test/exit-code": "1"})],
                failurePolicy={"maxRestarts": 1})
    kube.create(js, ns)
    obj = wait_terminal(kube, "js-max", ns, "Failed")
    assert condition(obj, "Failed")["reason"] == "ReachedMaxRestarts"
    assert obj["status"]["restarts"] == 1
    assert "jobset_failed_total{jobset_name=\"js-max\",namespace=\"%s\"} 1" % ns in ctl.metrics()


def test_no_failure_policy_fails(kube, ctl, ns):
    kube.create(jobset("js-nofp", [rjob("r", 1, annotations={"jobset-test/exit-code": "2"})]), ns)
    obj = wait_terminal(kube, "js-nofp", ns, "Failed")
    assert condition(obj, "Failed")["reason"] == "FailedJobs"


def test_restart_job_recreates_only_failed_job(kube, controller, ns):
    controller.restart("--feature-gates=RestartJob=true")
    controller.custom = True
    js = jobset("js-rj", [rjob("rjob", 2, annotations={"jobset-test/fail-if-job-index": "1",
                                                      "jobset-test/run-for": "2s"})],
                failurePolicy={"maxRestarts": 2, "rules": [{"name": "restart-job", "action": "RestartJob"}]})
    kube.create(js, ns)
    first = wait_for("2 jobs", lambda: (lambda j: j if len(j) == 2 else None)(kube.jobs(ns, "js-rj")))
    uids = {j["metadata"]["name"]: j["metadata"]["uid"] for j in first}
    obj = wait_terminal(kube, "js-rj", ns, "Failed")
    assert condition(obj, "Failed")["reason"] == "ReachedMaxRestarts"
    assert obj["status"]["restarts"] == 0
    st = obj["status"]["replicatedJobsStatus"][0]
    assert st["jobRestarts"][0] == 0 and st["jobRestarts"][1] == 2, st
    jobs = {j["metadata"]["name"]: j for j in kube.jobs(ns, "js-rj")}
    # Job 0 was never recreated; job 1 was, with its own attempt label.
    assert jobs["js-rj-rjob-0"]["metadata"]["uid"] == uids["js-rj-rjob-0"]
    assert "js-rj-rjob-1" not in jobs or jobs["js-rj-rjob-1"]["metadata"]["uid"] != uids["js-rj-rjob-1"]
    assert kube.events(ns, "RestartJobFailurePolicyAction")


def test_fail_jobset_rule_on_reason(kube, ctl, ns):
    r = rjob("workers", 2, annotations={"jobset-test/exit-code": "42", "jobset-test/fail-if-job-index": "0"})
    r["template"]["spec"]["podFailurePolicy"] = {
        "rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}]}
    js = jobset("js-failrule", [r], failurePolicy={
        "maxRestarts": 5,
        "rules": [{"name": "fail", "action": "FailJobSet", "onJobFailureReasons": ["PodFailurePolicy"]},
                  {"name": "restart", "action": "RestartJobSet"}]})
    kube.create(js, ns)
    obj = wait_terminal(kube, "js-failrule", ns, "Failed")
    c = condition(obj, "Failed")
    assert c["reason"] == "FailJobSetFailurePolicyAction"
    assert "js-failrule-workers-0" in c["message"]
    assert obj["status"]["restarts"] == 0


def test_success_policy_any(kube, ctl, ns):
    js = jobset("js-any", [rjob("leader", 1, annotations=LONG), rjob("workers", 2)],
                successPolicy={"operator": "Any", "targetReplicatedJobs": ["workers"]})
    kube.create(js, ns)
    wait_terminal(kube, "js-any", ns, "Completed")
    # Finished: the still-active leader Job is deleted.
    wait_for("leader job deleted", lambda: not any(
        j["metadata"]["name"] == "js-any-leader-0" and not j["metadata"].get("deletionTimestamp")
        for j in kube.jobs(ns, "js-any")))


def _creation_order(kube, ns, name, n, timeout=90):
    seen = []

    def step():
        for j in sorted(kube.jobs(ns, name), key=lambda j: j["metadata"]["creationTimestamp"]):
            if j["metadata"]["name"] not in seen:
                seen.append(j["metadata"]["name"])
        return len(seen) >= n
    wait_for(f"{n} jobs of {name}", step, timeout)
    return seen


def test_in_order_startup(kube, ctl, ns):
    gate = f"e2e-gate-{ns}"[:63]
    first = rjob("a", 1, annotations=LONG)
    first["template"]["spec"]["template"]["spec"]["nodeSelector"] = {"jobset-e2e/gate": gate}
    js = jobset("js-inorder", [first, rjob("b", 1, annotations=LONG), rjob("c", 1)],
                startupPolicy={"startupPolicyOrder": "InOrder"})
    kube.create(js, ns)
    # "a" cannot schedule, so it never gets ready: the controller must wait.
    obj = wait_for("StartupPolicyInProgress", lambda: condition(kube.jobset("js-inorder", ns),
                                                                "StartupPolicyInProgress") and
                   kube.jobset("js-inorder", ns))
    assert condition(obj, "StartupPolicyInProgress")["reason"] == "InOrderStartupPolicyInProgress"
    assert [j["metadata"]["name"] for j in kube.jobs(ns, "js-inorder")] == ["js-inorder-a-0"]
    node = kube.list("nodes", "default")[0]["metadata"]["name"]
    kube.run("label", "node", node, f"jobset-e2e/gate={gate}", "--overwrite")
    try:
        order = _creation_order(kube, ns, "js-inorder", 3)
        assert order == ["js-inorder-a-0", "js-inorder-b-0", "js-inorder-c-0"]
        wait_for("StartupPolicyCompleted", lambda: condition(kube.jobset("js-inorder", ns), "StartupPolicyCompleted"))
    finally:
        kube.run("label", "node", node, "jobset-e2e/gate-", check=False)


def test_depends_on_complete(kube, ctl, ns):
    init = rjob("init", 1, annotations={"jobset-test/run-for": "2s"})
    trainer = rjob("trainer", 2, dependsOn=[{"name": "init", "status": "Complete"}])
    kube.create(jobset("js-dep", [init, trainer]), ns)
    wait_terminal(kube, "js-dep", ns, "Completed")
    jobs = {j["metadata"]["name"]: j for j in kube.jobs(ns, "js-dep")}
    done = jobs["js-dep-init-0"]["status"]["completionTime"]
    for t in ("js-dep-trainer-0", "js-dep-trainer-1"):
        assert jobs[t]["metadata"]["creationTimestamp"] >= done, (t, jobs[t]["metadata"]["creationTimestamp"], done)


def test_suspend_then_resume(kube, ctl, ns):
    kube.create(jobset("js-susp", [rjob("r", 2)], suspend=True), ns)
    obj = wait_for("Suspended", lambda: condition(kube.jobset("js-susp", ns), "Suspended") and
                   kube.jobset("js-susp", ns))
    assert condition(obj, "Suspended")["reason"] == "SuspendedJobs"
    assert kube.jobs(ns, "js-susp") == []  # suspended since creation: no children (#535)
    kube.run("patch", "jobsets.jobset.x-k8s.io", "js-susp", "-n", ns, "--type=merge", "-p",
             json.dumps({"spec": {"suspend": False}}))
    obj = wait_terminal(kube, "js-susp", ns, "Completed")
    sus = [c for c in obj["status"]["conditions"] if c["type"] == "Suspended"][0]
    assert sus["status"] == "False" and sus["reason"] == "ResumeJobs"


def test_suspend_running_jobset(kube, ctl, ns):
    kube.create(jobset("js-susp2", [rjob("r", 2, annotations=LONG)]), ns)
    wait_for("2 active", lambda: len(kube.jobs(ns, "js-susp2")) == 2)
    kube.run("patch", "jobsets.jobset.x-k8s.io", "js-susp2", "-n", ns, "--type=merge", "-p",
             json.dumps({"spec": {"suspend": True}}))
    wait_for("jobs suspended", lambda: all(j["spec"].get("suspend") for j in kube.jobs(ns, "js-susp2")))
    wait_for("Suspended", lambda: condition(kube.jobset("js-susp2", ns), "Suspended"))


def test_ttl_deletes_jobset(kube, ctl, ns):
    kube.create(jobset("js-ttl", [rjob("r", 1)], ttlSecondsAfterFinished=2), ns)
    wait_for("jobset completed or gone", lambda: kube.jobset("js-ttl", ns) is None or
             terminal(kube.jobset("js-ttl", ns)) == "Completed")
    wait_for("jobset deleted by TTL", lambda: kube.jobset("js-ttl", ns) is None, 30)


def test_foreign_managed_by_left_alone(kube, ctl, ns):
    kube.create(jobset("js-foreign", [rjob("r", 1)], managedBy="example.com/other-controller"), ns)
    kube.create(jobset("js-mine", [rjob("r", 1)]), ns)
    # The queue is FIFO: once ours is done, the foreign one was seen long ago.
    wait_terminal(kube, "js-mine", ns, "Completed")
    obj = kube.jobset("js-foreign", ns)
    assert kube.jobs(ns, "js-foreign") == []
    assert kube.get("service", "js-foreign", ns) is None
    assert not obj.get("status") or not obj["status"].get("conditions"), obj.get("status")


def vm_rss_mb(proc):
    """Resident memory of a subprocess now, MB (/proc/PID/status VmRSS)."""
    with open(f"/proc/{proc.pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmRSS for pid {proc.pid}")


def test_huge_jobset_fails_others_run(kube, controller, ns):
    """Issue 22: 2,000,000,000 replicas (schema-valid) grew the controller
    by 0.45 GB/s until the machine ran out of memory. Created while no
    controller runs and no webhook is installed, it must fail with a
    condition and a Warning event naming the bound (docs/differences.md,
    "Size limits"), create nothing, and leave the controller small and
    serving the JobSet next to it."""
    controller.stop()
    huge = jobset("js-huge", [rjob("r", 1)])
    huge["spec"]["replicatedJobs"][0]["replicas"] = 2_000_000_000
    kube.create(huge, ns)
    kube.create(jobset("js-normal", [rjob("r", 2)]), ns)
    controller.start()
    peak = [0.0]

    def sample(value):
        controller._died()  # fails with the log's tail: the old controller aborted out of memory
        peak[0] = max(peak[0], vm_rss_mb(controller.proc))
        return value

    obj = wait_for("js-huge failed", lambda: sample(terminal(kube.jobset("js-huge", ns)) and kube.jobset("js-huge", ns)))
    cond = condition(obj, "Failed")
    assert obj["status"]["terminalState"] == "Failed" and cond["reason"] == "LimitExceeded", obj["status"]
    for part in ("spec.replicatedJobs[0].replicas", "2000000000", "at most 100000"):
        assert part in cond["message"], cond["message"]
    events = wait_for("LimitExceeded event", lambda: sample(kube.events(ns, "LimitExceeded")))
    assert events[0]["type"] == "Warning" and events[0]["regarding"]["name"] == "js-huge", events[0]
    wait_terminal(kube, "js-normal", ns, "Completed")
    sample(None)
    assert kube.jobs(ns, "js-huge") == []
    assert kube.get("service", "js-huge", ns) is None
    print(f"controller VmRSS peak {peak[0]:.0f} MB")
    # A generous bound, not a figure: the controller idles at about 20 MB.
    assert peak[0] < 200, f"controller VmRSS peaked at {peak[0]:.0f} MB"


def test_delete_cascades_without_recreation(kube, ctl, ns):
    kube.create(jobset("js-del", [rjob("r", 3, annotations=LONG)]), ns)
    wait_for("3 jobs", lambda: len(kube.jobs(ns, "js-del")) == 3)
    kube.run("delete", "jobsets.jobset.x-k8s.io", "js-del", "-n", ns, "--cascade=foreground", "--wait=true",
             timeout=90)
    assert kube.jobset("js-del", ns) is None
    wait_for("children gone", lambda: kube.jobs(ns, "js-del") == [], 60)
    # A later JobSet completing proves the controller has processed the deletion.
    kube.create(jobset("js-after", [rjob("r", 1)]), ns)
    wait_terminal(kube, "js-after", ns, "Completed")
    assert kube.jobs(ns, "js-del") == []  # #561: nothing recreated
    assert kube.get("service", "js-del", ns) is None


def test_recreated_jobset_never_adopts_old_children(kube, ctl, ns):
    kube.create(jobset("js-same", [rjob("r", 2, annotations=LONG)]), ns)
    old = wait_for("2 jobs", lambda: (lambda j: j if len(j) == 2 else None)(kube.jobs(ns, "js-same")))
    old_uids = {j["metadata"]["uid"] for j in old}
    # Orphan the children: they outlive their JobSet, without an owner.
    kube.run("delete", "jobsets.jobset.x-k8s.io", "js-same", "-n", ns, "--cascade=orphan", "--wait=true")
    wait_for("children orphaned", lambda: all(owner_uid(j) is None for j in kube.jobs(ns, "js-same")))
    kube.create(jobset("js-same", [rjob("r", 2)]), ns)
    new_uid = wait_for("new jobset", lambda: (kube.jobset("js-same", ns) or {}).get("metadata", {}).get("uid"))
    wait_for("JobCreationFailed", lambda: [e for e in kube.events(ns, "JobCreationFailed")
                                           if e["regarding"]["uid"] == new_uid])
    for j in kube.jobs(ns, "js-same"):
        assert j["metadata"]["uid"] in old_uids and owner_uid(j) is None  # not adopted (#1165)
    st = kube.jobset("js-same", ns).get("status", {})
    assert not terminal({"status": st})
    # Once the strays are gone, the new JobSet makes its own children and completes.
    kube.run("delete", "jobs.batch", "-n", ns, "-l", JS + "jobset-name=js-same", "--wait=true", timeout=90)
    obj = wait_terminal(kube, "js-same", ns, "Completed")
    for j in kube.jobs(ns, "js-same"):
        assert owner_uid(j) == new_uid
    assert obj["metadata"]["uid"] == new_uid


def test_sigkill_mid_creation_no_duplicates(kube, controller, ns):
    n = 60
    controller.restart("--kube-api-qps=20", "--kube-api-burst=1")
    controller.custom = True
    kube.create(jobset("js-kill", [rjob("r", n, annotations=LONG)]), ns)
    count = wait_for("some jobs created", lambda: (lambda k: k if 5 <= k else 0)(len(kube.jobs(ns, "js-kill"))), 30)
    assert count < n, "creation finished before the kill; lower the QPS"
    assert controller.stop(signal.SIGKILL) == -signal.SIGKILL
    # The successor waits for the dead leader's lease to expire (15 s).
    controller.start()
    controller.custom = False
    jobs = wait_for(f"{n} jobs", lambda: (lambda j: j if len(j) >= n else None)(kube.jobs(ns, "js-kill")), 90)
    uid = kube.jobset("js-kill", ns)["metadata"]["uid"]
    names = [j["metadata"]["name"] for j in jobs]
    assert len(names) == n and sorted(names) == sorted(f"js-kill-r-{i}" for i in range(n))
    assert all(owner_uid(j) == uid for j in jobs)
    assert not kube.events(ns, "JobCreationFailed")
    wait_for("all ready", lambda: (kube.jobset("js-kill", ns)["status"].get("replicatedJobsStatus") or
                                   [{}])[0].get("ready") == n, 60)
    assert len(kube.jobs(ns, "js-kill")) == n


def test_metrics_and_probes(kube, ctl, ns):
    assert ctl.http("healthz")[0] == 200
    assert ctl.http("readyz")[0] == 200
    kube.create(jobset("js-metrics", [rjob("r", 1)]), ns)
    wait_terminal(kube, "js-metrics", ns, "Completed")
    m = wait_for("completed counter", lambda: (lambda t: t if f'jobset_completed_total{{jobset_name="js-metrics",'
                                                           f'namespace="{ns}"}} 1' in t else None)(ctl.metrics()), 10)
    for needle in ("# TYPE jobset_failed_total counter", "# TYPE jobset_completed_total counter",
                   'controller_runtime_reconcile_total{controller="jobset",result="success"}',
                   'controller_runtime_reconcile_time_seconds_bucket{controller="jobset",le="+Inf"}',
                   'workqueue_depth{name="jobset"}', 'workqueue_queue_duration_seconds_count{name="jobset"}',
                   'rest_client_requests_total{method="POST",code="201"}',
                   'rest_client_requests_total{method="PATCH",code="200"}',  # the status merge patch
                   'jobset_controller_actions_total{action="CreateJob",result="ok"}',
                   'leader_election_master_status{name="%s"} 1' % ctl.lease_name):
        assert needle in m, needle


def test_second_replica_waits_then_takes_over(kube, controller, ns, tmp_path):
    from conftest import Controller
    if controller.proc is None:
        controller.start()
    other = Controller(kube, controller.lease_ns, controller.lease_name, tmp_path)
    other.start(wait_leader=False)
    try:
        assert controller.leader() == controller.identity
        assert 'leader_election_master_status{name="%s"} 0' % controller.lease_name in other.metrics()
        # SIGTERM releases the lease: the standby takes over well before expiry.
        t0 = time.monotonic()
        assert controller.stop() == 0
        wait_for("standby leads", lambda: controller.leader() == other.identity, 20)
        took = time.monotonic() - t0
        assert took < 10, f"takeover took {took:.1f}s (the lease was not released?)"
        kube.create(jobset("js-takeover", [rjob("r", 1)]), ns)
        wait_terminal(kube, "js-takeover", ns, "Completed")
    finally:
        assert other.stop() == 0
        controller.start()
        controller.custom = False
