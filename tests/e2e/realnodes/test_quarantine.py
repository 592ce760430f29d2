"""Node quarantine across restarts on real kubelets (ours, gate
NodeQuarantine; docs/node-quarantine.md): the controller from deploy/ with
the gate (conftest.py), 2 real nodes, the real kube-scheduler.

One pod whose busybox workload exits 137 in restart attempt 0 (the attempt
read from its label through the downward API) and 0 otherwise; the JobSet
names 137 as a node fault. The pod prefers the first real node (a preferred
node affinity), so attempt 0 runs there and, without the quarantine,
attempt 1 would run there again; with it attempt 1's Job carries a required
`metadata.name NotIn` term, so the scheduler puts its pod on the other
node, the NodesQuarantined condition names the first node, and the JobSet
completes after exactly one restart. The kwok tier's
tests/e2e/cluster/test_node_quarantine.py checks the same with fake pods;
here the exit code is a real container's, reported by a real kubelet.
"""
import json

from conftest import REAL, condition, jobset_obj, rjob, wait_for

BUSYBOX = "localhost/jobset-test/busybox:1"
JS = "jobset.sigs.k8s.io/"
ATTEMPT_ENV = [{"name": "ATTEMPT", "valueFrom": {"fieldRef": {
    "fieldPath": "metadata.labels['jobset.sigs.k8s.io/restart-attempt']"}}}]
# Exit 137 (as a container killed by SIGKILL, the OOM killer's mark) in
# attempt 0, succeed after.
WORKER = 'echo attempt $ATTEMPT on $NODE; if [ "$ATTEMPT" = 0 ]; then exit 137; fi; echo done'


def quarantine_pod(prefer, node_selector=REAL):
    env = ATTEMPT_ENV + [{"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}]
    pod = {"restartPolicy": "Never", "terminationGracePeriodSeconds": 2,
           "containers": [{"name": "main", "image": BUSYBOX, "imagePullPolicy": "Never",
                           "command": ["/bin/sh", "-c", WORKER], "env": env}],
           # The scheduler's choice made certain: attempt 0 on `prefer`, and
           # attempt 1 too unless something keeps it off.
           "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
               {"weight": 100, "preference": {"matchFields": [
                   {"key": "metadata.name", "operator": "In", "values": [prefer]}]}}]}}}
    if node_selector:
        pod["nodeSelector"] = node_selector
    return pod


def quarantine_jobset(name, pod):
    obj = jobset_obj(name, [rjob("w", 1, pod, backoff=0)], failurePolicy={"maxRestarts": 2})
    obj["metadata"]["annotations"] = {JS + "node-quarantine-exit-codes": "137"}
    return obj


def run_and_check(kube, ns, name, nodes):
    """Wait for the JobSet to finish; check the nodes of its two attempts,
    the condition and attempt 1's Job. Returns (attempt 0's node, attempt
    1's node)."""
    seen = {}

    def finished():
        for p in kube.pods(ns, f"{JS}jobset-name={name}"):
            a = p["metadata"]["labels"].get(JS + "restart-attempt")
            if p["spec"].get("nodeName"):
                seen.setdefault(a, {})[p["metadata"]["name"]] = (p["spec"]["nodeName"],
                                                                   p["status"].get("phase"))
        o = kube.get("jobset", name, ns) or {}
        c = condition(o, "NodesQuarantined")
        if c:
            seen["condition"] = c
        return o if (o.get("status") or {}).get("terminalState") else None

    js = wait_for(f"JobSet {name} finished", finished, timeout=240)
    assert js["status"]["terminalState"] == "Completed", json.dumps(js["status"])
    assert js["status"]["restarts"] == 1, json.dumps(js["status"])
    first = nodes[0]
    # Attempt 0's pod may be gone before a poll sees it (the condition
    # names its node in any case).
    assert {n for n, _ in seen.get("0", {}).values()} <= {first}, (seen, nodes)
    second = {n for n, _ in seen.get("1", {}).values()}
    assert second == {nodes[1]}, (seen, nodes)
    c = seen.get("condition") or condition(js, "NodesQuarantined")
    # "attempt 1 keeps off 1 node (node:last attempt:reason): real-node-0:1:exitCode=137"
    assert c and c["reason"] == "NodesQuarantined" and c["message"].endswith(f": {first}:1:exitCode=137"), c
    jobs = kube.get("jobs", ns=ns, selector=f"{JS}jobset-name={name}")["items"]
    assert jobs, "attempt 1's Job gone"
    for j in jobs:
        tmpl = j["spec"]["template"]
        assert tmpl["metadata"]["annotations"][JS + "quarantined-nodes"] == f"{first}:1:exitCode=137", tmpl
        terms = tmpl["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
            "nodeSelectorTerms"]
        assert terms and all({"key": "metadata.name", "operator": "NotIn", "values": [first]} in t["matchFields"]
                             for t in terms), terms
    return first, nodes[1], js


def test_node_of_exit_137_kept_off_the_next_attempt(controller, ns, nodes):
    obj = quarantine_jobset("nq", quarantine_pod(nodes[0]))
    controller.apply(obj, ns)
    first, second, js = run_and_check(controller, ns, "nq", nodes)
    evs = json.loads(controller.run("get", "events.events.k8s.io", "-n", ns, "-o", "json").stdout)["items"]
    ev = [e for e in evs if e.get("reason") == "NodeQuarantined"]
    assert ev and ev[0]["type"] == "Warning" and first in ev[0]["note"] and "exit code 137" in ev[0]["note"], ev
    print(f"\nattempt 0 on {first} exited 137; attempt 1 on {second}; restarts {js['status']['restarts']}")
