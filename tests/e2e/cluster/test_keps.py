"""The merged upstream KEPs against a real control plane (docs/differences.md
"Feature gates"): KEP-1282 execution attempts, KEP-1186 activeDeadlineSeconds
of a whole JobSet, KEP-1150 container resources edited while suspended.

Pods are fake (kwok); their fate is set by pod-template annotations
(docs/cluster.md). The webhook side of KEP-1150 and KEP-1186 is in
test_controller_webhooks.py.
"""
import json
import re

import pytest

from conftest import condition, jobset, rjob, wait_for, wait_terminal

JS = "jobset.sigs.k8s.io/"
ATTEMPT = JS + "execution-attempt"
LONG = {"jobset-test/run-for": "1h"}


def gated(controller, gates):
    controller.restart(f"--feature-gates={gates}")
    controller.custom = True
    return controller


def patch(kube, name, ns, body):
    kube.run("patch", "jobsets.jobset.x-k8s.io", name, "-n", ns, "--type=merge", "-p", json.dumps(body))


def suspended(kube, name, ns):
    """The Suspended condition's status ("True"/"False"), or None."""
    for c in ((kube.jobset(name, ns) or {}).get("status") or {}).get("conditions") or []:
        if c.get("type") == "Suspended":
            return c.get("status")
    return None


def annotations(job):
    return (job["metadata"].get("annotations") or {},
            job["spec"]["template"]["metadata"].get("annotations") or {})


def test_kep_1282_restart_and_resume_count(kube, controller, ns):
    """KEP-1282 "Controller Logic" 2-4: the first run is attempt 0, a
    whole-JobSet restart and a suspend/resume cycle each add one, and the
    Jobs and their pod templates carry the value (so do the pods)."""
    gated(controller, "ExecutionAttemptsTracking=true")
    fail_once = {"jobset-test/fail-if-job-index": "0", "jobset-test/fail-if-restart-attempt": "0",
                 "jobset-test/exit-code": "3", "jobset-test/run-for": "2s"}
    kube.create(jobset("ea-restart", [rjob("a", 1, annotations=fail_once)], failurePolicy={"maxRestarts": 2}), ns)
    obj = wait_terminal(kube, "ea-restart", ns, "Completed")
    assert obj["status"]["restarts"] == 1 and obj["status"]["executionAttempts"] == 1
    for j in kube.jobs(ns, "ea-restart"):
        assert annotations(j) and all(a.get(ATTEMPT) == "1" for a in annotations(j)), j["metadata"]

    kube.create(jobset("ea-resume", [rjob("a", 2, annotations=LONG)]), ns)
    wait_for("executionAttempts 0 and two Jobs", lambda: (kube.jobset("ea-resume", ns).get("status") or {}).get(
        "executionAttempts") == 0 and len(kube.jobs(ns, "ea-resume")) == 2)
    assert all(annotations(j)[1].get(ATTEMPT) == "0" for j in kube.jobs(ns, "ea-resume"))
    patch(kube, "ea-resume", ns, {"spec": {"suspend": True}})
    wait_for("Suspended=True", lambda: suspended(kube, "ea-resume", ns) == "True")
    assert kube.jobset("ea-resume", ns)["status"]["executionAttempts"] == 0
    patch(kube, "ea-resume", ns, {"spec": {"suspend": False}})
    wait_for("Suspended=False", lambda: suspended(kube, "ea-resume", ns) == "False")
    assert kube.jobset("ea-resume", ns)["status"]["executionAttempts"] == 1
    jobs = kube.jobs(ns, "ea-resume")
    assert all(not j["spec"].get("suspend") and annotations(j)[0][ATTEMPT] == "1" and annotations(j)[1][ATTEMPT] == "1"
               for j in jobs), [j["metadata"] for j in jobs]
    pods = wait_for("pods of the resumed attempt", lambda: [
        p for p in kube.list("pods", ns, JS + "jobset-name=ea-resume")
        if (p["metadata"].get("annotations") or {}).get(ATTEMPT) == "1"] or None, 60)
    assert pods


def test_kep_1282_gate_off(kube, ctl, ns):
    """KEP-1282 "5. Feature Gate Disabled Behavior": nothing is written."""
    kube.create(jobset("ea-off", [rjob("a", 1)]), ns)
    obj = wait_terminal(kube, "ea-off", ns, "Completed")
    assert "executionAttempts" not in obj["status"]
    assert all(ATTEMPT not in a for j in kube.jobs(ns, "ea-off") for a in annotations(j))


def test_kep_1186_deadline(kube, controller, ns):
    """KEP-1186 "Controller Logic": a JobSet active past its deadline fails
    with DeadlineExceeded, its Jobs are deleted and the metric counts it;
    the field is mutable, so lowering it on a running JobSet takes effect."""
    c = gated(controller, "JobSetActiveDeadlineSeconds=true")
    kube.create(jobset("dl", [rjob("a", 2, annotations=LONG)], activeDeadlineSeconds=3), ns)
    obj = wait_terminal(kube, "dl", ns, "Failed", timeout=60)
    assert condition(obj, "Failed")["reason"] == "DeadlineExceeded"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", obj["status"]["startTime"])
    wait_for("the Jobs deleted", lambda: not kube.jobs(ns, "dl"), 60)
    assert kube.events(ns, "DeadlineExceeded")
    assert 'jobset_active_deadline_exceeded_total{jobset_name="dl",namespace="%s"} 1' % ns in c.metrics()

    kube.create(jobset("dl-mut", [rjob("a", 1, annotations=LONG)], activeDeadlineSeconds=3600), ns)
    wait_for("startTime", lambda: (kube.jobset("dl-mut", ns).get("status") or {}).get("startTime"))
    assert not condition(kube.jobset("dl-mut", ns), "Failed")
    patch(kube, "dl-mut", ns, {"spec": {"activeDeadlineSeconds": 1}})
    obj = wait_terminal(kube, "dl-mut", ns, "Failed", timeout=60)
    assert condition(obj, "Failed")["reason"] == "DeadlineExceeded"


def test_kep_1186_suspended_does_not_count(kube, controller, ns):
    """KEP-1186 "2. Interaction with suspend": startTime is cleared while
    suspended, and the deadline does not run."""
    gated(controller, "JobSetActiveDeadlineSeconds=true")
    kube.create(jobset("dl-susp", [rjob("a", 1, annotations=LONG)], activeDeadlineSeconds=2, suspend=True), ns)
    wait_for("Suspended=True", lambda: suspended(kube, "dl-susp", ns) == "True")
    # Longer than the deadline, as a condition the controller cannot cause: a
    # JobSet created later in the same namespace fails by its own deadline.
    kube.create(jobset("dl-clock", [rjob("a", 1, annotations=LONG)], activeDeadlineSeconds=3), ns)
    wait_terminal(kube, "dl-clock", ns, "Failed", timeout=60)
    obj = kube.jobset("dl-susp", ns)
    assert not condition(obj, "Failed") and "startTime" not in obj["status"], obj["status"]


def test_kep_1186_crd_minimum(kube, ctl, ns):
    """KEP-1186 "API Changes": minimum 1, enforced by the CRD schema."""
    r = kube.run("create", "-n", ns, "-f", "-", input=json.dumps(
        jobset("dl-zero", [rjob("a", 1)], activeDeadlineSeconds=0)), check=False)
    assert r.returncode != 0 and "activeDeadlineSeconds" in r.stderr, r.stderr


def _server_minor(kube):
    v = json.loads(kube.run("version", "-o", "json").stdout)["serverVersion"]
    return int(re.match(r"\d+", v["minor"]).group())


def test_kep_1150_resources_on_resume(kube, controller, ns):
    """KEP-1150 "Controller Changes": resources edited while suspended are
    sent to the Jobs in the resume patch. Before Kubernetes 1.35
    (MutablePodResourcesForSuspendedJobs, KEP-5440) the API server refuses
    it, and the controller says so with a FailedResourcePropagation
    Warning ("Risks and Mitigations")."""
    gated(controller, "MutablePodResourcesForSuspendedJobSets=true")
    kube.create(jobset("mr", [rjob("a", 1, annotations=LONG)]), ns)
    wait_for("a running Job", lambda: [j for j in kube.jobs(ns, "mr") if (j.get("status") or {}).get("active")])
    patch(kube, "mr", ns, {"spec": {"suspend": True}})
    wait_for("Suspended=True", lambda: suspended(kube, "mr", ns) == "True")
    kube.run("patch", "jobsets.jobset.x-k8s.io", "mr", "-n", ns, "--type=json", "-p", json.dumps([
        {"op": "add", "path": "/spec/replicatedJobs/0/template/spec/template/spec/containers/0/resources",
         "value": {"requests": {"cpu": "250m"}}}]))
    patch(kube, "mr", ns, {"spec": {"suspend": False}})
    if _server_minor(kube) < 35:
        ev = wait_for("FailedResourcePropagation", lambda: kube.events(ns, "FailedResourcePropagation"), 60)
        # The API server's error, then the hint (the KEP's message), both
        # within the 1 KiB of a note however long the error is.
        note = ev[0]["note"]
        assert ev[0]["type"] == "Warning" and note.endswith(
            ". Ensure MutablePodResourcesForSuspendedJobs is enabled on the API server."), ev[0]
        assert 'child Job mr-a-0: Job.batch "mr-a-0" is invalid' in note and len(note.encode()) <= 1024, note
        assert ev[0]["regarding"]["kind"] == "JobSet"
    else:
        def updated():
            j = kube.jobs(ns, "mr")[0]
            c = j["spec"]["template"]["spec"]["containers"][0]
            return (c.get("resources") or {}).get("requests", {}).get("cpu") == "250m" and not j["spec"].get("suspend")
        wait_for("the Job resumed with the new requests", updated, 60)


def test_kep_1150_resume_keeps_what_admission_added(kube, controller, ns):
    """KEP-1150 "Controller Changes" (issue 24): resources are merged into the
    Job's containers by name, so what a mutating admission policy added to
    the Job at creation (an env var in its container, a sidecar) survives
    the resume; sending the template's whole container lists instead was an
    immutable change the API server refused on every retry. Needs the API
    server's MutablePodResourcesForSuspendedJobs (the gang phase, 1.36) and
    MutatingAdmissionPolicy (admissionregistration.k8s.io/v1, 1.36)."""
    if _server_minor(kube) < 36:
        pytest.skip("needs Kubernetes >= 1.36 (MutatingAdmissionPolicy v1, MutablePodResourcesForSuspendedJobs): "
                    "the gang phase of the cluster tier runs it")
    gated(controller, "MutablePodResourcesForSuspendedJobSets=true")
    name = f"inject-{ns}"
    # An apply configuration may not set atomic lists (a sidecar's command):
    # the sidecar keeps its image's (kwok never runs it).
    add = ('Object{spec: Object.spec{template: Object.spec.template{spec: Object.spec.template.spec{containers: ['
           'Object.spec.template.spec.containers{name: "c", env: [Object.spec.template.spec.containers.env{'
           'name: "INJECTED", value: "1"}]}, '
           'Object.spec.template.spec.containers{name: "sidecar", image: "busybox"}]}}}}')
    kube.apply({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicy",
                "metadata": {"name": name},
                "spec": {"matchConstraints": {"resourceRules": [{
                    "apiGroups": ["batch"], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["jobs"]}]},
                    "failurePolicy": "Fail", "reinvocationPolicy": "Never",
                    "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": add}}]}})
    kube.apply({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicyBinding",
                "metadata": {"name": name},
                "spec": {"policyName": name, "matchResources": {"namespaceSelector": {
                    "matchLabels": {"kubernetes.io/metadata.name": ns}}}}})
    try:
        probe = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "probe"},
                 "spec": {"suspend": True, "template": {"spec": {"restartPolicy": "Never", "containers": [
                     {"name": "c", "image": "busybox"}]}}}}

        def policy_active():
            p = kube.run("create", "-n", ns, "--dry-run=server", "-o", "json", "-f", "-", input=json.dumps(probe),
                         check=False)
            return p.returncode == 0 and len(json.loads(p.stdout)["spec"]["template"]["spec"]["containers"]) == 2
        wait_for("the admission policy in force", policy_active, 60)

        kube.create(jobset("mi", [rjob("a", 1, annotations=LONG)]), ns)
        wait_for("a running Job", lambda: [j for j in kube.jobs(ns, "mi") if (j.get("status") or {}).get("active")])
        created = kube.jobs(ns, "mi")[0]["spec"]["template"]["spec"]["containers"]
        assert [c["name"] for c in created] == ["c", "sidecar"] and created[0]["env"] == [
            {"name": "INJECTED", "value": "1"}], created
        patch(kube, "mi", ns, {"spec": {"suspend": True}})
        wait_for("Suspended=True", lambda: suspended(kube, "mi", ns) == "True")
        kube.run("patch", "jobsets.jobset.x-k8s.io", "mi", "-n", ns, "--type=json", "-p", json.dumps([
            {"op": "add", "path": "/spec/replicatedJobs/0/template/spec/template/spec/containers/0/resources",
             "value": {"requests": {"cpu": "250m"}}}]))
        patch(kube, "mi", ns, {"spec": {"suspend": False}})

        def resumed():
            j = kube.jobs(ns, "mi")[0]
            cs = j["spec"]["template"]["spec"]["containers"]
            return not j["spec"].get("suspend") and cs[0].get("resources", {}).get("requests", {}).get("cpu") == "250m"
        wait_for("the Job resumed with the new requests", resumed, 60)
        cs = kube.jobs(ns, "mi")[0]["spec"]["template"]["spec"]["containers"]
        assert [c["name"] for c in cs] == ["c", "sidecar"] and cs[0]["env"] == [{"name": "INJECTED", "value": "1"}], cs
        assert not kube.events(ns, "FailedResourcePropagation")
    finally:
        kube.run("delete", "mutatingadmissionpolicybinding", name, "--ignore-not-found", check=False)
        kube.run("delete", "mutatingadmissionpolicy", name, "--ignore-not-found", check=False)
