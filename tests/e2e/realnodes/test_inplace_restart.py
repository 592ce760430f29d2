"""In-place restart (KEP-467, docs/in-place-restart.md) with the agent on
real kubelets: 2 Jobs x 2 pods on 2 nodes, each pod's one container the
in-place-restart-agent in main-container mode running a shell worker
(restartPolicy OnFailure: Kubernetes 1.34's kubelet restarts the failed
container in place; the RestartAllContainers rules of the docs' sidecar
mode need 1.35). One worker fails once; its container restarts, its agent
writes attempt 1, the controller tells the three others to follow, each of
their agents exits with the restart code, the kubelet restarts those
containers too, and all four run attempt 1 to completion: the same pods
(uids) throughout, every container restarted once, status.restarts 0."""
import json
import os
from pathlib import Path

import pytest

from conftest import BUILD, REAL, condition, hc, jobset_obj, rjob, wait_for

AGENT_IMAGE = "localhost/jobset-test/agent:1"
ANN = "jobset.sigs.k8s.io/in-place-restart-attempt"


@pytest.fixture(scope="module")
def agent_image(controller):
    hc("image", "bundle", AGENT_IMAGE, "--entrypoint", "/usr/local/bin/in-place-restart-agent",
       f"{BUILD / 'in-place-restart-agent'}=/usr/local/bin/in-place-restart-agent",
       "/bin/busybox=/bin/sh", "/bin/busybox=/bin/sleep")
    return AGENT_IMAGE


def _agent_rbac(kube, ns):
    kube.apply([
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "agent"}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "agent"},
         "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["patch"]},
                   {"apiGroups": ["jobset.x-k8s.io"], "resources": ["jobsets"], "verbs": ["get", "list", "watch"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "agent"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "agent"},
         "subjects": [{"kind": "ServiceAccount", "name": "agent", "namespace": ns}]}], ns)


def test_in_place_restart_on_real_kubelets(controller, ns, nodes, agent_image):
    _agent_rbac(controller, ns)
    marks = Path(os.environ["JOBSET_CLUSTER_DIR"]) / "shared" / ns
    marks.mkdir(parents=True, exist_ok=True)
    # First run of a pod: leave a mark; the last pod fails, the others work
    # (and are told to follow). Second run: work briefly and succeed.
    worker = ('m=/m/$POD_NAME; if [ -e $m ]; then echo second-run; sleep 2; exit 0; fi; : > $m; '
              'if [ "$JOB_INDEX$JOB_COMPLETION_INDEX" = 11 ]; then sleep 3; echo failing; exit 1; fi; '
              'echo first-run; sleep 120')
    env = [{"name": "JOBSET_NAME", "valueFrom": {"fieldRef": {
               "fieldPath": "metadata.annotations['jobset.sigs.k8s.io/jobset-name']"}}},
           {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
           {"name": "JOB_INDEX", "valueFrom": {"fieldRef": {
               "fieldPath": "metadata.labels['jobset.sigs.k8s.io/job-index']"}}},
           {"name": "SHELL", "value": "/bin/sh"},
           {"name": "WORKER_COMMAND", "value": worker}]
    pod = {"restartPolicy": "OnFailure", "serviceAccountName": "agent", "terminationGracePeriodSeconds": 2,
           "nodeSelector": REAL,
           "containers": [{"name": "worker", "image": agent_image, "imagePullPolicy": "Never", "env": env,
                           "volumeMounts": [{"name": "m", "mountPath": "/m"}]}],
           "volumes": [{"name": "m", "hostPath": {"path": str(marks)}}],
           "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
                                          "whenUnsatisfiable": "DoNotSchedule",
                                          "labelSelector": {"matchLabels": {"jobset.sigs.k8s.io/jobset-name": "ipr"}}}]}
    job = rjob("w", 2, pod, parallelism=2, completions=2, backoff=2147483647, podReplacementPolicy="Failed")
    controller.apply(jobset_obj("ipr", [job], failurePolicy={"maxRestarts": 3, "restartStrategy": "InPlaceRestart"}), ns)

    sel = "jobset.sigs.k8s.io/jobset-name=ipr"

    def four_at_zero():
        ps = controller.pods(ns, sel)
        ok = len(ps) == 4 and all((p["metadata"].get("annotations") or {}).get(ANN) == "0" for p in ps)
        return ps if ok else None

    first = wait_for("4 pods at attempt 0", four_at_zero, timeout=180)
    uids = {p["metadata"]["name"]: p["metadata"]["uid"] for p in first}
    assert {p["spec"]["nodeName"] for p in first} == set(nodes[:2]), [p["spec"].get("nodeName") for p in first]

    def done():
        o = controller.get("jobset", "ipr", ns)
        return o if condition(o, "Completed") or condition(o, "Failed") else None

    o = wait_for("JobSet ipr finished", done, timeout=300)
    pods = controller.pods(ns, sel)
    logs = {p["metadata"]["name"]: controller.logs(ns, p["metadata"]["name"]) for p in pods}
    assert condition(o, "Completed"), (json.dumps(o.get("status")), logs)
    st = o["status"]
    assert st.get("restarts", 0) == 0 and st.get("currentInPlaceRestartAttempt") == 1, st
    # The same pods, each container restarted in place (once: attempt 1).
    assert {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods} == uids
    for p in pods:
        assert p["metadata"]["annotations"].get(ANN) == "1", p["metadata"]
        assert [c["restartCount"] for c in p["status"]["containerStatuses"]] == [1], p["status"]
        assert "second-run" in logs[p["metadata"]["name"]], logs
