"""Every upstream example JobSet that needs no real image or special hardware
runs to its expected terminal state under jobset-controller.

The containers never run (kwok fakes the pods), so each example's script is
replaced by pod-template annotations that reproduce what the script does:
how long it runs and when it fails (docs/cluster.md). The table below says
which, and why, per example; examples left out are listed with the reason.
"""
import copy
import os
from pathlib import Path

import pytest

from conftest import condition, load_yaml, wait_for, wait_terminal

SHARED = Path(os.environ.get("JS_SHARED_DIR", Path(__file__).resolve().parents[4] / "shared"))
EXAMPLES = SHARED / "upstream-examples"
LONG = {"jobset-test/run-for": "1h"}

# file -> (pod annotations per replicatedJob ("*" = every other), expected
# terminalState or "Running", expected restarts, expected Failed reason)
CASES = {
    "simple/coordinator.yaml": ({}, "Completed", 0, None),
    # Placement is the pod webhook's job (not served here); the Jobs run.
    "simple/exclusive-placement.yaml": ({}, "Completed", 0, None),
    # The leader exits 1 every attempt: BlockingRecreate until maxRestarts 3.
    "simple/failure-policy.yaml": ({"leader": {"jobset-test/exit-code": "1"}, "workers": LONG},
                                   "Failed", 3, "ReachedMaxRestarts"),
    "simple/group.yaml": ({}, "Completed", 0, None),
    # Leader sleeps 3600 s and workers loop forever: it runs, it never ends.
    "simple/jobset-with-network.yaml": ({"*": LONG}, "Running", 0, None),
    "simple/paralleljobs.yaml": ({}, "Completed", 0, None),
    # The leader sleeps 10000 s; success is decided by the workers alone.
    "simple/success-policy.yaml": ({"leader": LONG}, "Completed", 0, None),
    "simple/ttl-after-finished.yaml": ({}, "Completed", 0, None),
    # Leader pod index 0 exits 1 after 10 s on every attempt.
    "failure-policy/failjobset-action.yaml": (
        {"leader": {"jobset-test/fail-if-completion-index": "0", "jobset-test/run-for": "2s"}, "workers": LONG},
        "Failed", 0, "FailJobSetFailurePolicyAction"),
    "failure-policy/restartjobset-action.yaml": (
        {"leader": {"jobset-test/fail-if-completion-index": "0", "jobset-test/run-for": "1s"}, "workers": LONG},
        "Failed", 3, "ReachedMaxRestarts"),
    # maxRestarts 0, the failure does not match the PodFailurePolicy rule.
    "failure-policy/host-maintenance-event-model.yaml": (
        {"leader": {"jobset-test/fail-if-completion-index": "0", "jobset-test/run-for": "1s"}, "workers": LONG},
        "Failed", 0, "ReachedMaxRestarts"),
    # "...AndIgnoreMaxRestarts" would restart forever when the leader always
    # fails; it fails on the first attempt only, so it then completes.
    "failure-policy/restartjobsetandignoremaxrestarts-action.yaml": (
        {"leader": {"jobset-test/fail-if-completion-index": "0", "jobset-test/fail-if-restart-attempt": "0"}},
        "Completed", 1, None),
    "failure-policy/onjobfailurereasons-present.yaml": (
        {"leader": {"jobset-test/fail-if-completion-index": "0", "jobset-test/fail-if-restart-attempt": "0"}},
        "Completed", 1, None),
    "failure-policy/onjobfailurereasons-present-podfailurepolicy.yaml": (
        {"leader": {"jobset-test/fail-if-completion-index": "0", "jobset-test/fail-if-restart-attempt": "0"}},
        "Completed", 1, None),
    "depends-on/depends-on.yaml": ({}, "Completed", 0, None),
    "depends-on/multiple-depends-on.yaml": ({}, "Completed", 0, None),
    "startup-policy/startup-driver-ready.yaml": ({}, "Completed", 0, None),
    "pytorch/cnn-mnist/mnist.yaml": ({}, "Completed", 0, None),
    "pytorch/resnet-cifar10/resnet.yaml": ({}, "Completed", 0, None),
    "tensorflow/mnist.yaml": ({}, "Completed", 0, None),
}

# Left out, with the reason (checked below so the list stays complete).
SKIPPED = {
    "failure-policy/restartjob-action.yaml": "needs `kubectl exec` into live containers to fail a Job",
    "failure-policy/restartjobandignoremaxrestarts-action.yaml": "needs `kubectl exec` into live containers",
    "volume-claim-policy/single-pvc.yaml": "needs a storage provisioner (pods wait for a bound PVC)",
    "in-place-restart": "its agent is a container and its pods restart containers, neither of which kwok runs: "
                        "test_inplace_restart.py drives the protocol with real agent processes instead",
    "tpu-multislice": "TPU hardware and Kueue",
    "workload-aware-scheduling": "Workload/PodGroup APIs and DRA",
    "argo-workflow": "Argo Workflows",
    "prometheus-operator": "Prometheus operator CRDs",
}


def patched(doc, annotations):
    doc = copy.deepcopy(doc)
    # Upstream's examples predate two required fields of the v0.12 schema
    # (its own CRD rejects them as written): failurePolicy.rules[].name and
    # podFailurePolicy onPodConditions[].status. Fill them as upstream's
    # docs describe.
    for i, rule in enumerate((doc["spec"].get("failurePolicy") or {}).get("rules") or []):
        rule.setdefault("name", f"rule{i}")
    for rj in doc["spec"]["replicatedJobs"]:
        for rule in (rj["template"]["spec"].get("podFailurePolicy") or {}).get("rules") or []:
            for pc in rule.get("onPodConditions") or []:
                pc.setdefault("status", "True")
    for rj in doc["spec"]["replicatedJobs"]:
        ann = annotations.get(rj["name"], annotations.get("*", {}))
        meta = rj["template"]["spec"]["template"].setdefault("metadata", {})
        meta.setdefault("annotations", {}).update(ann)
    doc["metadata"].pop("namespace", None)
    return doc


def test_every_example_is_covered():
    assert EXAMPLES.is_dir(), f"{EXAMPLES} missing (JS_SHARED_DIR)"
    for f in sorted(EXAMPLES.rglob("*.yaml")):
        rel = str(f.relative_to(EXAMPLES))
        if not any(d.get("kind") == "JobSet" for d in load_yaml(f)):
            continue
        assert rel in CASES or rel in SKIPPED or rel.split("/")[0] in SKIPPED, f"{rel}: add it to CASES or SKIPPED"


@pytest.mark.parametrize("rel", sorted(CASES))
def test_example(kube, ctl, ns, rel):
    annotations, want, restarts, reason = CASES[rel]
    docs = [d for d in load_yaml(EXAMPLES / rel) if d.get("kind") == "JobSet"]
    assert docs, rel
    for d in docs:
        kube.create(patched(d, annotations), ns)
    for d in docs:
        name = d["metadata"]["name"]
        if want == "Running":
            total = sum(r.get("replicas", 1) for r in d["spec"]["replicatedJobs"])

            def all_ready():
                st = (kube.jobset(name, ns) or {}).get("status", {})
                ready = sum(r.get("ready", 0) for r in st.get("replicatedJobsStatus") or [])
                return ready == total and st
            st = wait_for(f"{name}: all {total} jobs ready", all_ready, 60)
            assert not st.get("terminalState")
            continue
        obj = wait_terminal(kube, name, ns, want, timeout=120)
        assert obj["status"].get("restarts", 0) == restarts, obj["status"]
        if reason:
            assert condition(obj, "Failed")["reason"] == reason
