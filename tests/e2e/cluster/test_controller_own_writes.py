"""The controller's view of its own writes (issue 22): no Job is created
twice because its cache lags behind its creates, and a child Job that the
label-scoped Job cache stops seeing (another user removed its
jobset.sigs.k8s.io/jobset-name label) neither stalls the JobSet's passes
nor keeps it from finishing.

Every request of the controller is read back from the API server's audit
log (hack/cluster's policy records the ServiceAccounts of jobset-system), an
independent view.
"""
import json
import os
from pathlib import Path

import pytest

from conftest import CONTROLLER_SA, SYSTEM_NS, jobset, rjob, wait_for, wait_terminal

JS = "jobset.sigs.k8s.io/"
SA_USER = f"system:serviceaccount:{SYSTEM_NS}:{CONTROLLER_SA}"


def audit_path():
    p = os.environ.get("JOBSET_TEST_AUDIT_LOG")
    if not p:
        pytest.fail("JOBSET_TEST_AUDIT_LOG is unset: run `hack/cluster up` and `eval \"$(hack/cluster env)\"`")
    return Path(p)


def audit_offset():
    p = audit_path()
    return p.stat().st_size if p.exists() else 0


def controller_job_requests(ns, offset):
    """The controller's completed requests on Jobs in `ns` since `offset`:
    [(verb, name, code)] (a create's name from its request URI's answer:
    objectRef.name)."""
    out = []
    needle = f'"username":"{SA_USER}"'.encode()
    with open(audit_path(), "rb") as f:
        f.seek(offset)
        for line in f:
            if needle not in line:
                continue
            try:
                e = json.loads(line)
            except ValueError:
                continue
            ref = e.get("objectRef") or {}
            if (e.get("stage") != "ResponseComplete" or ref.get("resource") != "jobs"
                    or ref.get("namespace") != ns or ref.get("subresource")):
                continue
            out.append((e["verb"], ref.get("name"), (e.get("responseStatus") or {}).get("code")))
    return out


def reconciles(ctl):
    """controller_runtime_reconcile_total of the jobset controller, all results."""
    n = 0.0
    for line in ctl.metrics().splitlines():
        if line.startswith('controller_runtime_reconcile_total{controller="jobset"'):
            n += float(line.rsplit(" ", 1)[1])
    return n


def test_no_create_answered_already_exists(kube, ctl, ns):
    """A JobSet of a few hundred Jobs: each is POSTed once, none answered 409."""
    n = 300
    off = audit_offset()
    kube.create(jobset("js-once", [rjob("r", n)]), ns)
    wait_terminal(kube, "js-once", ns, "Completed", timeout=300)
    reqs = controller_job_requests(ns, off)
    creates = [r for r in reqs if r[0] == "create"]
    assert len([r for r in creates if r[2] == 201]) == n, creates[:5]
    conflicts = [r for r in creates if r[2] != 201]
    assert not conflicts, f"{len(conflicts)} Job creates not answered 201: {conflicts[:5]}"
    assert not [r for r in reqs if r[0] == "get"], "the controller read a Job by GET (a create met AlreadyExists)"


def test_child_job_hidden_from_the_cache(kube, ctl, ns):
    """A running child Job loses the label the controller's Job cache selects
    on: the controller (its owner) puts the label back, so it sees the Job
    again, and the JobSet completes; its passes meanwhile stay few, and no
    read-your-writes wait of it runs out."""
    run = {"jobset-test/run-for": "20s"}
    kube.create(jobset("js-hidden", [rjob("r", 3, annotations=run)]), ns)
    wait_for("3 Jobs active", lambda: len([j for j in kube.jobs(ns, "js-hidden")
                                           if (j.get("status") or {}).get("active")]) == 3, 60)
    uid = kube.jobset("js-hidden", ns)["metadata"]["uid"]
    off = audit_offset()
    before = reconciles(ctl)
    kube.run("label", "jobs.batch", "js-hidden-r-1", "-n", ns, JS + "jobset-name-")
    js = wait_terminal(kube, "js-hidden", ns, "Completed", timeout=90)
    assert js["status"]["restarts"] == 0
    job = kube.get("jobs.batch", "js-hidden-r-1", ns)
    assert job["metadata"]["labels"].get(JS + "jobset-name") == "js-hidden", job["metadata"]["labels"]
    assert [r["uid"] for r in job["metadata"]["ownerReferences"] if r.get("controller")] == [uid]
    reqs = controller_job_requests(ns, off)
    creates = [r for r in reqs if r[0] == "create"]
    # One create of the hidden Job answered AlreadyExists is how the
    # controller learns of it; a stalled key met it again on every pass.
    assert len(creates) <= 2 and all(r[1] == "js-hidden-r-1" for r in creates), creates
    assert [r for r in reqs if r[0] == "patch" and r[1] == "js-hidden-r-1" and r[2] == 200], reqs
    passes = reconciles(ctl) - before
    assert passes <= 40, f"{passes:.0f} reconciles while one Job was hidden"
    log = ctl.log.read_text()
    assert not [ln for ln in log.splitlines() if f"{ns}/js-hidden" in ln and "still do not show" in ln], \
        "a read-your-writes wait of the JobSet ran out"
