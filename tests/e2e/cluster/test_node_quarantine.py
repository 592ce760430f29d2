"""Node quarantine across restarts (ours, gate NodeQuarantine;
docs/node-quarantine.md) against a real control plane and scheduler.

Pods are fake (kwok): their fate is set by pod-template annotations
(docs/cluster.md). A pod of attempt 0 fails with exit code 137 on whatever
node the scheduler picked; the JobSet names 137 as a node fault, so the
whole-JobSet restart keeps attempt 1 off that node: its Jobs carry the list
and a `metadata.name NotIn` requirement, none of its pods is bound there,
and the NodesQuarantined condition and a NodeQuarantined event name it, `kubectl jobset describe` lists it,
and `kubectl jobset report` says it under the restart.
A per-Job restart (RestartJob) keeps the recreated Job off the node its
own pod failed on.
"""
import json
import os
import subprocess

from conftest import ROOT, condition, jobset, rjob, wait_for, wait_terminal
from test_kubectl_jobset import kj

JS = "jobset.sigs.k8s.io/"
EXIT_CODES = JS + "node-quarantine-exit-codes"
LIST = JS + "quarantined-nodes"


def gated(controller, gates):
    controller.restart(f"--feature-gates={gates}")
    controller.custom = True
    return controller


def attempt_pods(kube, ns, name, attempt):
    return kube.list("pods", ns, f"{JS}jobset-name={name},{JS}restart-attempt={attempt}")


def test_failed_node_kept_off_next_attempt(kube, controller, ns):
    gated(controller, "NodeQuarantine=true")
    fail_once = {"jobset-test/fail-if-completion-index": "0", "jobset-test/fail-if-restart-attempt": "0",
                 "jobset-test/exit-code": "137", "jobset-test/run-for": "2s"}
    # Four pods on four nodes: without the quarantine attempt 1 would use
    # every node again, the failed one included.
    obj = jobset("nq", [rjob("w", 1, parallelism=4, completions=4, annotations=fail_once)],
                 failurePolicy={"maxRestarts": 2})
    obj["metadata"]["annotations"] = {EXIT_CODES: "134,137"}
    kube.create(obj, ns)

    # The node the failing pod ran on, seen while it exists.
    def failed_node():
        for p in attempt_pods(kube, ns, "nq", 0):
            if (p.get("status") or {}).get("phase") == "Failed":
                return p["spec"].get("nodeName")
        return None
    seen = None
    try:
        seen = wait_for("attempt 0's pod failed", failed_node, 60)
    except AssertionError:
        pass  # gone already: the restart is quicker than our polling; the condition says which

    js = wait_terminal(kube, "nq", ns, "Completed", 120)
    assert js["status"]["restarts"] == 1, json.dumps(js["status"])
    cond = condition(js, "NodesQuarantined")
    assert cond and cond["reason"] == "NodesQuarantined", json.dumps(js["status"])
    # "attempt 1 keeps off 1 node (node:last attempt:reason): kwok-node-2:1:exitCode=137"
    entry = cond["message"].rsplit(": ", 1)[1]
    node, until, why = entry.split(":")
    assert until == "1" and why == "exitCode=137", cond["message"]
    assert node.startswith("kwok-node-"), cond["message"]
    if seen:
        assert node == seen, (node, seen)

    ev = [e for e in kube.events(ns, "NodeQuarantined") if node in (e.get("note") or "")]
    assert ev and ev[0]["type"] == "Warning" and "exit code 137" in ev[0]["note"], ev

    for j in kube.jobs(ns, "nq"):
        tmpl = j["spec"]["template"]
        assert tmpl["metadata"]["annotations"][LIST] == f"{node}:1:exitCode=137"
        terms = tmpl["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
            "nodeSelectorTerms"]
        assert terms and all({"key": "metadata.name", "operator": "NotIn", "values": [node]} in t["matchFields"]
                             for t in terms), terms
    d = kj(kube, "describe", "nq", "-n", ns, check=True).stdout
    assert f"{node}: exit code 137, kept off through attempt 1" in d, d
    # The picture (`kubectl jobset report`, src/picture/html.c) says it
    # under the restart, from the NodeQuarantined event.
    page = kj(kube, "report", "nq", "-n", ns, check=True).stdout
    item = page[page.index("<li>Attempt 1 began"):]
    item = item[:item.index("</li>\n")]
    assert f'<ul class="quarantine"><li>Quarantined: node {node} is kept off attempts 1 to 1: pod nq-w-0-0-' in item, item

    pods = attempt_pods(kube, ns, "nq", 1)
    assert len(pods) >= 4, [p["metadata"]["name"] for p in pods]
    assert all(p["spec"].get("nodeName") and p["spec"]["nodeName"] != node for p in pods), \
        [(p["metadata"]["name"], p["spec"].get("nodeName")) for p in pods]


def test_quarantine_that_leaves_no_node_says_so(kube, controller, ns):
    """No room left (docs/node-quarantine.md "No room left"): the pod is
    pinned to one node by its nodeSelector and fails there with exit code
    137 in attempt 0, so attempt 1 keeps off the only node it may use. The
    scheduler leaves its pod Pending, Unschedulable, and the JobSet says so:
    QuarantineLeavesNoRoom=True naming the pod, the node and the
    scheduler's words, with a Warning event. Suspended, no pod waits any
    more and the condition goes False."""
    gated(controller, "NodeQuarantine=true")
    node = "kwok-node-1"
    fail_once = {"jobset-test/fail-if-restart-attempt": "0", "jobset-test/exit-code": "137",
                 "jobset-test/run-for": "1s"}
    r = rjob("w", 1, annotations=fail_once)
    r["template"]["spec"]["template"]["spec"]["nodeSelector"] = {"kubernetes.io/hostname": node}
    obj = jobset("nr", [r], failurePolicy={"maxRestarts": 2})
    obj["metadata"]["annotations"] = {EXIT_CODES: "137"}
    kube.create(obj, ns)

    def no_room():
        js = kube.jobset("nr", ns)
        return condition(js, "QuarantineLeavesNoRoom") and js
    # The controller reads the pending pods at most every 15 s.
    js = wait_for("QuarantineLeavesNoRoom=True", no_room, 120)
    assert js["status"]["restarts"] == 1, json.dumps(js["status"])
    cond = condition(js, "QuarantineLeavesNoRoom")
    assert cond["reason"] == "QuarantineLeavesNoRoom", cond
    pods = attempt_pods(kube, ns, "nr", 1)
    assert len(pods) == 1 and not pods[0]["spec"].get("nodeName"), pods
    pod = pods[0]["metadata"]["name"]
    assert cond["message"].startswith(f"pod {pod} cannot be scheduled while attempt 1 keeps off 1 node ({node}); "
                                      "the scheduler says: "), cond
    assert "didn't match Pod's node affinity/selector" in cond["message"], cond
    ev = wait_for("the QuarantineLeavesNoRoom event", lambda: kube.events(ns, "QuarantineLeavesNoRoom"), 30)
    assert ev[0]["type"] == "Warning" and pod in ev[0]["note"], ev

    kube.run("patch", "jobsets.jobset.x-k8s.io", "nr", "-n", ns, "--type=merge", "-p", '{"spec":{"suspend":true}}')

    def room():
        js = kube.jobset("nr", ns)
        for c in js["status"].get("conditions", []):
            if c["type"] == "QuarantineLeavesNoRoom" and c["status"] == "False":
                return c
        return None
    c = wait_for("QuarantineLeavesNoRoom=False once suspended", room, 60)
    assert c["reason"] == "QuarantineLeavesRoom", c


def test_restarted_job_keeps_off_the_failed_node(kube, controller, ns):
    """A per-Job restart (failure policy RestartJob) quarantines too: Job
    w-0's pod fails with 137 in job-restart-attempt 0; the attempt goes on
    (status.restarts stays 0), the Job made again (job-restart-attempt 1)
    carries the list and the NotIn requirement and its pods are bound
    elsewhere; Job w-1, made before, carries nothing."""
    gated(controller, "NodeQuarantine=true,RestartJob=true")
    fail_once = {"jobset-test/fail-if-job-index": "0", "jobset-test/fail-if-completion-index": "0",
                 "jobset-test/fail-if-job-restart-attempt": "0", "jobset-test/exit-code": "137",
                 "jobset-test/run-for": "2s"}
    obj = jobset("nqj", [rjob("w", 2, parallelism=2, completions=2, annotations=fail_once)],
                 failurePolicy={"maxRestarts": 2, "rules": [{"name": "nodeFault", "action": "RestartJob"}]})
    obj["metadata"]["annotations"] = {EXIT_CODES: "137"}
    kube.create(obj, ns)

    js = wait_terminal(kube, "nqj", ns, "Completed", 120)
    st = js["status"]
    assert st.get("restarts", 0) == 0 and st["replicatedJobsStatus"][0]["jobRestarts"] == [1, 0], json.dumps(st)
    cond = condition(js, "NodesQuarantined")
    assert cond and cond["message"].startswith("attempt 0 keeps off 1 node"), json.dumps(st)
    node, until, why = cond["message"].rsplit(": ", 1)[1].split(":")
    assert node.startswith("kwok-node-") and until == "0" and why == "exitCode=137", cond["message"]
    ev = [e for e in kube.events(ns, "NodeQuarantined") if node in (e.get("note") or "")]
    assert ev and "its Job nqj-w-0 is restarted on its own" in ev[0]["note"], ev

    jobs = {j["metadata"]["name"]: j for j in kube.jobs(ns, "nqj")}
    again = jobs["nqj-w-0"]["spec"]["template"]
    assert again["metadata"]["labels"][JS + "job-restart-attempt"] == "1", again["metadata"]
    assert again["metadata"]["annotations"][LIST] == f"{node}:0:exitCode=137", again["metadata"]
    terms = again["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"]
    assert terms and all({"key": "metadata.name", "operator": "NotIn", "values": [node]} in t["matchFields"]
                         for t in terms), terms
    assert LIST not in (jobs["nqj-w-1"]["spec"]["template"]["metadata"].get("annotations") or {})

    pods = [p for p in attempt_pods(kube, ns, "nqj", 0)
            if p["metadata"]["labels"].get(JS + "job-index") == "0"
            and p["metadata"]["labels"].get(JS + "job-restart-attempt") == "1"]
    assert len(pods) >= 2, [p["metadata"]["name"] for p in pods]
    assert all(p["spec"].get("nodeName") and p["spec"]["nodeName"] != node for p in pods), \
        [(p["metadata"]["name"], p["spec"].get("nodeName")) for p in pods]


def test_rules_refused_without_gate(ns):
    """`jobset validate` shares the webhook's validation: with the gate
    off a rule is refused with its field path, naming the gate; with it on
    a value out of range is refused with the range."""
    binary = os.environ.get("JOBSET_BIN") or str(ROOT / "build" / "jobset")
    obj = jobset("nq", [rjob("w")])
    obj["metadata"]["annotations"] = {EXIT_CODES: "137"}

    def validate(o, *flags):
        return subprocess.run([binary, "validate", *flags, "-"], input=json.dumps(o), text=True,
                              capture_output=True)
    p = validate(obj)
    assert p.returncode != 0 and f"metadata.annotations[{EXIT_CODES}]" in p.stdout + p.stderr, p
    assert "NodeQuarantine" in p.stdout + p.stderr, p
    assert validate(obj, "--feature-gates=NodeQuarantine=true").returncode == 0
    obj["metadata"]["annotations"] = {EXIT_CODES: "0"}
    p = validate(obj, "--feature-gates=NodeQuarantine=true")
    assert p.returncode != 0 and "1 to 255" in p.stdout + p.stderr, p
