"""Another user's edits to a running JobSet's child Jobs (tests/chaos
KNOWN_BUGS "job-label" and "job-orphaned"; docs/reliability.md "Findings"):
the jobset.sigs.k8s.io/ labels of a Job removed or rewritten, and its
controller ownerReference removed or made controller: false.

Pods are fake (kwok); the pod-template annotation jobset-test/run-for sets
how long they run (docs/cluster.md).
"""
import json

from conftest import condition, jobset, rjob, terminal, wait_for, wait_terminal
from test_controller_own_writes import audit_offset, controller_job_requests

JS = "jobset.sigs.k8s.io/"
BLOCKED = "JobCreationBlocked"


def owner_uid(obj):
    for r in obj["metadata"].get("ownerReferences", []) or []:
        if r.get("controller") and r.get("kind") == "JobSet":
            return r["uid"]
    return None


def start(kube, ns, name, run_for):
    """A JobSet of one rjob of 2 Jobs, once both are active; its uid."""
    kube.create(jobset(name, [rjob("r", 2, annotations={"jobset-test/run-for": run_for})]), ns)
    wait_for("2 Jobs active", lambda: len([j for j in kube.jobs(ns, name)
                                           if (j.get("status") or {}).get("active")]) == 2, 60)
    return kube.jobset(name, ns)["metadata"]["uid"]


def test_child_job_labels_removed_and_rewritten(kube, ctl, ns):
    """Seed 4242: the restart-attempt, replicatedjob-name and job-index
    labels of running Jobs removed or rewritten. The pod templates carry
    them unchanged: the JobSet completes in its first attempt, no Job made
    again (before: the core refused the JobSet every pass, no condition, no
    event; a restart-attempt of 7 would have been taken as the JobSet's)."""
    start(kube, ns, "js-relabel", "8s")
    off = audit_offset()
    kube.run("label", "jobs.batch", "js-relabel-r-0", "-n", ns, JS + "restart-attempt-",
             JS + "replicatedjob-name-", JS + "job-index-")
    kube.run("label", "--overwrite", "jobs.batch", "js-relabel-r-1", "-n", ns, JS + "restart-attempt=7",
             JS + "job-index=x")
    js = wait_terminal(kube, "js-relabel", ns, "Completed", timeout=60)
    assert js["status"].get("restarts", 0) == 0, js["status"]
    assert not [r for r in controller_job_requests(ns, off) if r[0] in ("create", "delete")]


def test_orphaned_child_job_named_in_a_condition(kube, ctl, ns):
    """Seed 1: the controller ownerReference of a running Job removed. It is
    not adopted (#1165) and its name cannot be made again: the JobSet says
    so in JobCreationBlocked, naming the Job and what ends the wait, while
    the orphan runs out; once it is deleted the JobSet makes its own Job of
    that name at once and completes (before: JobCreationFailed events only,
    and the deletion went unnoticed until the failed key's backoff ran
    out)."""
    uid = start(kube, ns, "js-orphan", "8s")
    old = kube.get("jobs.batch", "js-orphan-r-1", ns)["metadata"]["uid"]
    kube.run("patch", "jobs.batch", "js-orphan-r-1", "-n", ns, "--type=json",
             "-p", '[{"op":"remove","path":"/metadata/ownerReferences"}]')
    c = wait_for(BLOCKED, lambda: condition(kube.jobset("js-orphan", ns), BLOCKED), 30)
    assert c["reason"] == "JobNotControlled", c
    assert "js-orphan-r-1" in c["message"] and "delete that Job" in c["message"], c
    wait_for("the orphan complete", lambda: condition(kube.get("jobs.batch", "js-orphan-r-1", ns), "Complete"), 60)
    js = kube.jobset("js-orphan", ns)
    assert not terminal(js) and condition(js, BLOCKED), js["status"]
    kube.run("delete", "jobs.batch", "js-orphan-r-1", "-n", ns, "--wait=true")
    js = wait_terminal(kube, "js-orphan", ns, "Completed", timeout=45)
    assert not condition(js, BLOCKED), js["status"]
    new = kube.get("jobs.batch", "js-orphan-r-1", ns)
    assert new["metadata"]["uid"] != old and owner_uid(new) == uid


def test_relabelled_orphan_still_named_in_a_condition(kube, ctl, ns):
    """CI seed 993656309 (dep-27): a running Job's jobset-name label
    rewritten to another name, then its controller ownerReference removed.
    Its pod template still names the JobSet it was made for, so that JobSet
    still says JobCreationBlocked and proceeds once it is deleted (before:
    neither index of the cache showed it to the JobSet, whose creates were
    answered AlreadyExists with no condition, unfinished for ever)."""
    start(kube, ns, "js-relabel-orphan", "8s")
    kube.run("label", "--overwrite", "jobs.batch", "js-relabel-orphan-r-1", "-n", ns,
             JS + "jobset-name=someone-else")
    kube.run("patch", "jobs.batch", "js-relabel-orphan-r-1", "-n", ns, "--type=json",
             "-p", '[{"op":"remove","path":"/metadata/ownerReferences"}]')
    c = wait_for(BLOCKED, lambda: condition(kube.jobset("js-relabel-orphan", ns), BLOCKED), 30)
    assert c["reason"] == "JobNotControlled" and "js-relabel-orphan-r-1" in c["message"], c
    kube.run("delete", "jobs.batch", "js-relabel-orphan-r-1", "-n", ns, "--wait=true")
    js = wait_terminal(kube, "js-relabel-orphan", ns, "Completed", timeout=45)
    assert not condition(js, BLOCKED), js["status"]


def test_child_job_not_controller_then_restored(kube, ctl, ns):
    """The ownerReference of a running Job set to controller: false, then
    back to true: JobCreationBlocked while it is not the controller; then
    the Job is the JobSet's child again, and it completes with it (no Job
    made again)."""
    uid = start(kube, ns, "js-notctl", "10s")
    job = kube.get("jobs.batch", "js-notctl-r-0", ns)
    ref = dict(job["metadata"]["ownerReferences"][0])

    def set_controller(flag):
        ref["controller"] = flag
        kube.run("patch", "jobs.batch", "js-notctl-r-0", "-n", ns, "--type=merge",
                 "-p", json.dumps({"metadata": {"ownerReferences": [ref]}}))

    set_controller(False)
    c = wait_for(BLOCKED, lambda: condition(kube.jobset("js-notctl", ns), BLOCKED), 30)
    assert "js-notctl-r-0" in c["message"], c
    set_controller(True)
    js = wait_terminal(kube, "js-notctl", ns, "Completed", timeout=60)
    assert not condition(js, BLOCKED), js["status"]
    again = kube.get("jobs.batch", "js-notctl-r-0", ns)
    assert again["metadata"]["uid"] == job["metadata"]["uid"] and owner_uid(again) == uid
