"""Gang scheduling (KEP-969, gate JobSetWorkloadAwareSchedulingAPI) against a
real kube-scheduler with gang scheduling on: Kubernetes 1.36 from
hack/cluster (JOBSET_K8S_VERSION=v1.36.3, GenericWorkload, GangScheduling,
TopologyAwareWorkloadScheduling and WorkloadAwarePreemption on the API
server and the scheduler). scripts/test runs this file in the gang phase of
the cluster tier, on a cluster of its own; on an older control plane it is
skipped with the reason.

The spec.scheduling tests use KEP-969's field names; one uses our first
names (deprecated aliases for one release) with the old gate name, to show
they still work end to end. The last three are upstream's workload-aware
scheduling e2e scenarios (kubernetes-sigs/jobset#1252, merged as
39d8ff93): a plain JobSet on the WAS cluster, and the manual mode - the
user's own Workload and PodGroup named from the pod template - with a gang
and with a rack topology constraint.

The capacity is our own kwok nodes, labelled for this test only, so the
cluster's default nodes never take a pod: a node of 3 CPUs for a gang of 4
one-CPU pods is short by one pod. A plain scheduler would bind three; the
gang must bind none. A second node frees the capacity and all four start.
"""
import json
import subprocess
import uuid

import pytest

from conftest import jobset, rjob, wait_for, wait_terminal
from webhook_common import WebhookHost, binary

pytestmark = pytest.mark.usefixtures("kube")

GATE = "--feature-gates=JobSetWorkloadAwareSchedulingAPI=true"
OLD_GATE = "--feature-gates=WorkloadAwareScheduling=true"  # its deprecated alias
RACK = "topology.kubernetes.io/rack"


@pytest.fixture(scope="module", autouse=True)
def needs_136(kube):
    v = json.loads(kube.run("version", "-o", "json").stdout)["serverVersion"]
    minor = int("".join(ch for ch in v["minor"] if ch.isdigit()))
    if minor < 36:
        pytest.skip(f"gang scheduling needs Kubernetes >= 1.36 (this control plane is {v['gitVersion']}); "
                    "scripts/test cluster runs it in its gang phase on JOBSET_K8S_VERSION=v1.36.3")


@pytest.fixture
def gang_ctl(controller):
    """The session controller with the gate on (restarted once)."""
    if not (getattr(controller, "gang", False) and controller.proc and controller.proc.poll() is None):
        controller.stop()
        controller.custom = True
        controller.start(GATE)
        controller.gang = True
    return controller


def node(name, label, cpu, rack=None):
    """A kwok node that only this test's pods select."""
    res = {"cpu": str(cpu), "memory": "64Gi", "pods": "110", "ephemeral-storage": "100Gi"}
    labels = {"type": "kwok", "kubernetes.io/hostname": name, "jobset-test/gang": label}
    if rack:
        labels[RACK] = rack
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "annotations": {"kwok.x-k8s.io/node": "fake"}, "labels": labels},
            "spec": {},
            "status": {"allocatable": res, "capacity": res,
                       "addresses": [{"type": "InternalIP", "address": "10.64.254.1"}]}}


def gang_jobset(name, label, pods, replicas=1, run_for="1h", scheduling=None):
    r = rjob("workers", replicas=replicas, parallelism=pods, completions=pods)
    spec = r["template"]["spec"]
    spec["completionMode"] = "Indexed"
    pod = spec["template"]
    pod["metadata"]["annotations"]["jobset-test/run-for"] = run_for
    pod["spec"]["nodeSelector"] = {"jobset-test/gang": label}
    pod["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
    return jobset(name, [r], scheduling={} if scheduling is None else scheduling)


def pods_of(kube, ns, name):
    return kube.list("pods", ns, f"jobset.sigs.k8s.io/jobset-name={name}")


def unschedulable(p):
    return any(c.get("type") == "PodScheduled" and c.get("status") == "False"
               for c in p.get("status", {}).get("conditions", []) or [])


def test_without_gang_three_of_four_start(kube, gang_ctl, ns):
    """The capacity of the gang test without spec.scheduling: three pods
    bind, the fourth waits - what the gang must prevent."""
    label = f"p-{uuid.uuid4().hex[:8]}"
    kube.apply(node(f"{label}-a", label, 3))
    try:
        js = gang_jobset("plain", label, 4)
        del js["spec"]["scheduling"]
        kube.create(js, ns)

        def three_and_one():
            ps = pods_of(kube, ns, "plain")
            bound = [p for p in ps if p["spec"].get("nodeName")]
            return len(ps) == 4 and len(bound) == 3 and sum(unschedulable(p) for p in ps) == 1
        wait_for("3 pods bound and 1 unschedulable", three_and_one, 120)
        assert kube.get("workloads.scheduling.k8s.io", "plain", ns) is None
        assert all("schedulingGroup" not in p["spec"] for p in pods_of(kube, ns, "plain"))
    finally:
        kube.run("delete", "jobsets.jobset.x-k8s.io", "plain", "-n", ns, "--wait=true", check=False)
        kube.run("delete", "node", f"{label}-a", "--wait=false", check=False)


def test_all_or_nothing(kube, gang_ctl, ns):
    label = f"g-{uuid.uuid4().hex[:8]}"
    nodes = [f"{label}-a", f"{label}-b"]
    kube.apply(node(nodes[0], label, 3))
    try:
        kube.create(gang_jobset("gang", label, 4, scheduling={"schedulingPolicy": {"gang": {}},
                                                              "disruptionMode": {"all": {}}}), ns)
        # The controller's objects: one Workload, one PodGroup of 4.
        wl = wait_for("Workload", lambda: kube.get("workloads.scheduling.k8s.io", "gang", ns))
        assert wl["spec"]["controllerRef"] == {"apiGroup": "jobset.x-k8s.io", "kind": "JobSet", "name": "gang"}
        pg = wait_for("PodGroup", lambda: kube.get("podgroups.scheduling.k8s.io", "gang", ns))
        assert pg["spec"]["schedulingPolicy"] == {"gang": {"minCount": 4}}
        assert pg["spec"]["disruptionMode"] == "PodGroup"  # KEP-969's {all: {}} in 1.36's words
        # KEP-969: the Job names its group template by an annotation, not a label.
        job = wait_for("the Job", lambda: kube.jobs(ns, "gang"))[0]
        assert job["metadata"]["annotations"]["scheduling.k8s.io/group-template-name"] == "gang"
        assert "scheduling.k8s.io/group-template-name" not in job["metadata"].get("labels", {})

        # Short by one pod: the scheduler tried the gang and failed it -
        # the PodGroup says PodGroupScheduled=False, or every pod
        # PodScheduled=False - and bound none.
        def gang_failed():
            ps = pods_of(kube, ns, "gang")
            bound = [p["metadata"]["name"] for p in ps if p["spec"].get("nodeName")]
            assert bound == [], f"pods bound with the gang short by one: {bound}"
            g = kube.get("podgroups.scheduling.k8s.io", "gang", ns)
            conds = (g or {}).get("status", {}).get("conditions", []) or []
            failed = any(c.get("type") == "PodGroupScheduled" and c.get("status") == "False" for c in conds)
            return len(ps) == 4 and (failed or all(unschedulable(p) for p in ps)) and ps
        ps = wait_for("the scheduler to fail the gang", gang_failed, 120)
        assert all(p["spec"]["schedulingGroup"] == {"podGroupName": "gang"} for p in ps)
        bound = [p["metadata"]["name"] for p in pods_of(kube, ns, "gang") if p["spec"].get("nodeName")]
        assert bound == [], f"pods bound with the gang short by one: {bound}"

        # Capacity freed: all four start.
        kube.apply(node(nodes[1], label, 1))

        def all_running():
            ps = pods_of(kube, ns, "gang")
            return len(ps) == 4 and all(p["spec"].get("nodeName") in nodes and
                                        p.get("status", {}).get("phase") == "Running" for p in ps)
        wait_for("all 4 pods bound and Running", all_running, 120)
    finally:
        kube.run("delete", "node", *nodes, "--wait=false", check=False)


def test_suspend_resume(kube, gang_ctl, ns):
    """Suspend deletes the Workload and PodGroups; resume makes them again
    (KEP-969 "Workload Lifecycle"). InOrder startup: one group per
    ReplicatedJob, the workers' from its replicatedJobs entry."""
    label = f"g-{uuid.uuid4().hex[:8]}"
    js = gang_jobset("sr", label, 2, scheduling={"replicatedJobs": [
        {"targetReplicatedJobs": ["workers"], "schedulingPolicy": {"gang": {"minCount": 2}}}]})
    js["spec"]["replicatedJobs"].insert(0, rjob("driver"))
    js["spec"]["startupPolicy"] = {"startupPolicyOrder": "InOrder"}
    kube.create(js, ns)
    groups = ["sr-driver", "sr-workers"]

    def present():
        return [g for g in groups if kube.get("podgroups.scheduling.k8s.io", g, ns)]
    wait_for("both PodGroups", lambda: present() == groups)
    assert kube.get("podgroups.scheduling.k8s.io", "sr-workers", ns)["spec"]["schedulingPolicy"] == {
        "gang": {"minCount": 2}}
    kube.run("patch", "jobsets.jobset.x-k8s.io", "sr", "-n", ns, "--type=merge", "-p", '{"spec":{"suspend":true}}')
    wait_for("PodGroups and Workload deleted while suspended",
             lambda: not present() and not kube.get("workloads.scheduling.k8s.io", "sr", ns))
    kube.run("patch", "jobsets.jobset.x-k8s.io", "sr", "-n", ns, "--type=merge", "-p", '{"spec":{"suspend":false}}')
    wait_for("PodGroups and Workload back on resume",
             lambda: present() == groups and kube.get("workloads.scheduling.k8s.io", "sr", ns))


def test_scheduling_group_in_the_pod_template(kube, gang_ctl, ns, tmp_path):
    """Upstream's manual mode (kubernetes-sigs/jobset#1252): the user makes
    the PodGroup and names it in the JobSet's pod template with 1.36's
    spec.schedulingGroup.podGroupName, without spec.scheduling. `kubectl
    apply` with its default validation (strict) takes it - the CRD's pod
    spec is the newest supported Kubernetes' (a 1.34-generated CRD refuses
    the unknown field) - so does `jobset validate`, and the field reaches
    the pods, which the scheduler places as that gang."""
    label = f"m-{uuid.uuid4().hex[:8]}"
    kube.apply({"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
                "metadata": {"name": "manual-group"},
                "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}}, ns)
    kube.apply(node(f"{label}-a", label, 2))
    try:
        js = gang_jobset("manual", label, 2)
        del js["spec"]["scheduling"]
        js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["schedulingGroup"] = {
            "podGroupName": "manual-group"}
        path = tmp_path / "manual.json"
        path.write_text(json.dumps(js))
        v = subprocess.run([str(binary("jobset", "JOBSET_BIN")), "validate", str(path)], capture_output=True,
                           text=True, timeout=60)
        assert v.returncode == 0 and "is valid" in v.stdout, v.stdout + v.stderr
        kube.run("apply", "--validate=strict", "-n", ns, "-f", str(path))
        stored = kube.jobset("manual", ns)["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
        assert stored["schedulingGroup"] == {"podGroupName": "manual-group"}

        def running():
            ps = pods_of(kube, ns, "manual")
            return len(ps) == 2 and all(p["spec"].get("nodeName") == f"{label}-a" and
                                        p.get("status", {}).get("phase") == "Running" for p in ps) and ps
        ps = wait_for("both pods of the manual gang bound and Running", running, 120)
        assert all(p["spec"]["schedulingGroup"] == {"podGroupName": "manual-group"} for p in ps)
        # The controller made no group of its own: the user's is the one.
        assert kube.get("workloads.scheduling.k8s.io", "manual", ns) is None
        assert kube.get("podgroups.scheduling.k8s.io", "manual", ns) is None
    finally:
        kube.run("delete", "jobsets.jobset.x-k8s.io", "manual", "-n", ns, "--wait=true", check=False)
        kube.run("delete", "node", f"{label}-a", "--wait=false", check=False)


def test_deprecated_names_still_work(kube, gang_ctl, crd, tmp_path):
    """Our first names - the gate WorkloadAwareScheduling and the fields
    policy, replicatedJobPolicies[].targetReplicatedJob, disruption - are
    deprecated aliases of KEP-969's for one release. A webhook host started
    with the old gate name logs a warning once at start and validates
    spec.scheduling (the gate is on); `kubectl apply --validate=strict`
    takes the manifest (the CRD keeps the old names) and prints the
    webhook's admission warnings naming the new names; the controller makes
    the groups the new names would make. Both names of one field: refused."""
    host = WebhookHost(kube, tmp_path).start()
    try:
        host.restart(OLD_GATE)
        assert "feature gate 'WorkloadAwareScheduling' is deprecated" in host.ctl.log.read_text()
        ns = host.namespace(f"gang-old-{uuid.uuid4().hex[:6]}")
        label = f"d-{uuid.uuid4().hex[:8]}"
        js = gang_jobset("old", label, 2, scheduling={
            "policy": {"basic": {}},
            "replicatedJobPolicies": [{"targetReplicatedJob": "workers", "policy": {"gang": {}},
                                       "disruption": "All"}]})
        js["spec"]["replicatedJobs"].insert(0, rjob("driver"))
        path = tmp_path / "old.json"
        path.write_text(json.dumps(js))
        p = kube.run("apply", "--validate=strict", "-n", ns, "-f", str(path))
        for old, new in (("policy", "schedulingPolicy"), ("replicatedJobPolicies", "replicatedJobs"),
                         ("replicatedJobPolicies[0].targetReplicatedJob",
                          "replicatedJobPolicies[0].targetReplicatedJobs"),
                         ("replicatedJobPolicies[0].disruption", "replicatedJobPolicies[0].disruptionMode")):
            assert f"spec.scheduling.{old}: deprecated field name, use spec.scheduling.{new}" in p.stderr, p.stderr
        pg = wait_for("the workers' PodGroup", lambda: kube.get("podgroups.scheduling.k8s.io", "old-workers", ns))
        assert pg["spec"]["schedulingPolicy"] == {"gang": {"minCount": 2}}
        assert pg["spec"]["disruptionMode"] == "PodGroup"
        driver = wait_for("the driver's PodGroup", lambda: kube.get("podgroups.scheduling.k8s.io", "old-driver", ns))
        assert driver["spec"]["schedulingPolicy"] == {"basic": {}}
        job = wait_for("the workers' Job", lambda: [j for j in kube.jobs(ns, "old")
                                                     if j["metadata"]["name"].startswith("old-workers-")])[0]
        assert job["metadata"]["annotations"]["scheduling.k8s.io/group-template-name"] == "workers"
        # Both names of one field: refused, naming the old one's path.
        js["metadata"]["name"] = "both"
        js["spec"]["scheduling"]["schedulingPolicy"] = {"basic": {}}
        path.write_text(json.dumps(js))
        p = kube.run("apply", "-n", ns, "-f", str(path), check=False)
        assert p.returncode != 0 and "spec.scheduling.policy: Forbidden" in p.stderr, p.stderr
        kube.run("delete", "namespace", ns, "--wait=false", check=False)
    finally:
        assert host.stop() == 0, f"webhook host log {host.ctl.log}"


# ---- upstream's WAS e2e scenarios (kubernetes-sigs/jobset#1252) ----

def manual_gang(kube, ns, prefix, js_name, label, pods, constraints=None):
    """The user's Workload (controllerRef to the JobSet to come, template
    `workers`, gang of `pods`) and PodGroup from it, as upstream's e2e makes
    them; and the JobSet (2 Jobs x `pods`/2, run 3 s) whose pods name the
    PodGroup, without spec.scheduling."""
    kube.apply({"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "Workload",
                "metadata": {"name": f"{prefix}-wl"},
                "spec": {"controllerRef": {"apiGroup": "jobset.x-k8s.io", "kind": "JobSet", "name": js_name},
                         "podGroupTemplates": [{"name": "workers",
                                                "schedulingPolicy": {"gang": {"minCount": pods}}}]}}, ns)
    pg = {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup", "metadata": {"name": f"{prefix}-pg"},
          "spec": {"podGroupTemplateRef": {"workload": {"workloadName": f"{prefix}-wl",
                                                        "podGroupTemplateName": "workers"}},
                   "schedulingPolicy": {"gang": {"minCount": pods}}}}
    if constraints:
        pg["spec"]["schedulingConstraints"] = constraints
    kube.apply(pg, ns)
    js = gang_jobset(js_name, label, pods // 2, replicas=2, run_for="3s")
    del js["spec"]["scheduling"]
    js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["schedulingGroup"] = {
        "podGroupName": f"{prefix}-pg"}
    kube.create(js, ns)


def all_bound(kube, ns, name, n):
    def fn():
        ps = pods_of(kube, ns, name)
        return len(ps) == n and all(p["spec"].get("nodeName") for p in ps) and ps
    return wait_for(f"all {n} pods of {name} bound", fn, 120)


def test_was_plain_jobset_completes(kube, gang_ctl, ns):
    """#1252 "should complete a simple JobSet on a WAS-enabled cluster": no
    spec.scheduling, no schedulingGroup; nothing gang-related is made."""
    kube.create(jobset("simple-was", [rjob("rj")]), ns)
    wait_terminal(kube, "simple-was", ns, "Completed", timeout=120)
    assert kube.list("workloads.scheduling.k8s.io", ns) == []
    assert kube.list("podgroups.scheduling.k8s.io", ns) == []


def test_was_manual_gang(kube, gang_ctl, ns):
    """#1252 "should gang-schedule all pods in a JobSet": the user's
    Workload gang-wl and PodGroup gang-pg (gang of 4), a JobSet of 2 Jobs x
    2 pods naming gang-pg. All 4 bind; our controller leaves the user's
    objects alone (the Workload keeps its controllerRef to the JobSet and
    is not deleted, the PodGroup keeps minCount 4); the JobSet completes."""
    label = f"w-{uuid.uuid4().hex[:8]}"
    kube.apply(node(f"{label}-a", label, 4))
    try:
        manual_gang(kube, ns, "gang", "gang-js", label, 4)
        ps = all_bound(kube, ns, "gang-js", 4)
        assert all(p["spec"]["schedulingGroup"] == {"podGroupName": "gang-pg"} for p in ps)
        wait_terminal(kube, "gang-js", ns, "Completed", timeout=120)
        wl = kube.get("workloads.scheduling.k8s.io", "gang-wl", ns)
        assert wl and wl["spec"]["controllerRef"]["name"] == "gang-js", wl
        pg = kube.get("podgroups.scheduling.k8s.io", "gang-pg", ns)
        assert pg and pg["spec"]["schedulingPolicy"] == {"gang": {"minCount": 4}}, pg
        assert kube.get("workloads.scheduling.k8s.io", "gang-js", ns) is None  # none of ours
    finally:
        kube.run("delete", "node", f"{label}-a", "--wait=false", check=False)


def test_was_topology_one_rack(kube, gang_ctl, ns):
    """#1252 "should co-locate all pods within the same rack": as the manual
    gang, with the PodGroup's schedulingConstraints.topology on
    topology.kubernetes.io/rack (the scheduler's TopologyAwareWorkloadScheduling).
    Four 2-CPU nodes, two per rack, for 4 one-CPU pods: the same gang
    without the constraint first, which the default scoring spreads over
    both racks (so the test can tell); with it, all 4 land in one rack."""
    label = f"t-{uuid.uuid4().hex[:8]}"
    racks = {f"{label}-r1": [f"{label}-a", f"{label}-b"], f"{label}-r2": [f"{label}-c", f"{label}-d"]}
    nodes = [n for ns_ in racks.values() for n in ns_]
    for rack, members in racks.items():
        for n in members:
            kube.apply(node(n, label, 2, rack=rack))
    try:
        manual_gang(kube, ns, "ctl", "ctl-js", label, 4)
        on = {p["spec"]["nodeName"] for p in all_bound(kube, ns, "ctl-js", 4)}
        used = {rack for rack, members in racks.items() if on & set(members)}
        assert len(used) == 2, f"without the constraint the pods took {sorted(on)}: racks {sorted(used)}"
        wait_terminal(kube, "ctl-js", ns, "Completed", timeout=120)

        manual_gang(kube, ns, "tas", "tas-js", label, 4, constraints={"topology": [{"key": RACK}]})
        ps = all_bound(kube, ns, "tas-js", 4)
        on = {p["spec"]["nodeName"] for p in ps}
        assert on <= set(nodes), on
        used = {rack for rack, members in racks.items() if on & set(members)}
        assert len(used) == 1, f"pods on {sorted(on)}: racks {sorted(used)}"
        pg = kube.get("podgroups.scheduling.k8s.io", "tas-pg", ns)
        assert pg["spec"]["schedulingConstraints"] == {"topology": [{"key": RACK}]}
        wait_terminal(kube, "tas-js", ns, "Completed", timeout=120)
    finally:
        kube.run("delete", "node", *nodes, "--wait=false", check=False)
