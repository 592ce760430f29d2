"""Admission webhooks end to end: the API server calls the webhooks of
build/jobset-controller (out of cluster, a standby replica) for JobSets and
pods, and kubectl, an independent client, sees the result. Cases are from acceptance-cases.md §2
(defaulting, WH-001..019), §3 (rejections, WH-030..144), §4 (updates,
WH-150..172) and §14 (exclusive placement pod webhooks).
"""
import json
import os
import uuid

import pytest

from webhook_common import WebhookHost, api_post, jobset, rjob, wait_until

pytestmark = pytest.mark.skipif(not os.environ.get("JOBSET_TEST_KUBECONFIG"),
                                reason="JOBSET_TEST_KUBECONFIG unset: run hack/cluster up and eval hack/cluster env")


@pytest.fixture(scope="module")
def host(kube, crd, tmp_path_factory):
    h = WebhookHost(kube, tmp_path_factory.mktemp("webhook")).start()
    yield h
    rc = h.stop()
    assert rc == 0, f"jobset-controller exit status {rc} on SIGTERM; log {h.log}"


@pytest.fixture
def wns(kube, host, request):
    name = f"wh-{request.node.name[:20].lower()}-{uuid.uuid4().hex[:5]}"
    name = "".join(c if c.isalnum() else "-" for c in name).strip("-")[:63]
    host.namespace(name)
    yield name
    kube.run("delete", "namespace", name, "--wait=false", check=False)


def create(kube, ns, obj, check=True):
    return kube.run("create", "-n", ns, "-o", "json", "-f", "-", input=json.dumps(obj), check=check)


# ---- defaulting (WH-001..019) ----

def test_defaulting_on_create(kube, wns):
    objs = [
        jobset("plain"),  # WH-001, 003, 007, 009, 011, 012, 017, 019
        jobset("kept", [rjob("rj", job_spec={"completionMode": "NonIndexed"}, pod_spec={"restartPolicy": "Never"})],
               network={"enableDNSHostnames": False}, successPolicy={"operator": "Any"},
               startupPolicy={"startupPolicyOrder": "InOrder"}),  # WH-002, 004, 008, 010, 011
        jobset("rules", failurePolicy={"rules": [{"name": "ruleWithAName", "action": "FailJobSet"},
                                                 {"action": "RestartJobSet"}]},
               volumeClaimPolicies=[{"templates": [{"metadata": {"name": "test-volume"},
                                                    "spec": {"accessModes": ["ReadWriteOnce"]}}]}]),
        jobset("fp-empty", failurePolicy={}, network={"publishNotReadyAddresses": False}),  # WH-005, 016
    ]
    # WH-015 needs a mount of the claim for our stricter validation.
    objs[2]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0]["volumeMounts"] = [
        {"name": "test-volume", "mountPath": "/data"}]
    got = {}
    for o in objs:
        got[o["metadata"]["name"]] = json.loads(create(kube, wns, o).stdout)["spec"]
    s = got["plain"]
    r = s["replicatedJobs"][0]
    assert r["template"]["spec"]["completionMode"] == "Indexed"                        # WH-001
    assert s["network"] == {"enableDNSHostnames": True, "publishNotReadyAddresses": True}  # WH-003, 019
    assert r["template"]["spec"]["template"]["spec"]["restartPolicy"] == "OnFailure"  # WH-007
    assert s["successPolicy"] == {"operator": "All"}                                   # WH-009
    assert s["startupPolicy"] == {"startupPolicyOrder": "AnyOrder"}                   # WH-011
    assert "managedBy" not in s                                                         # WH-012
    assert r["replicas"] == 1 and r["groupName"] == "default"                           # WH-017
    s = got["kept"]
    r = s["replicatedJobs"][0]
    assert r["template"]["spec"]["completionMode"] == "NonIndexed"                     # WH-002
    assert s["network"] == {"enableDNSHostnames": False, "publishNotReadyAddresses": True}  # WH-004
    assert r["template"]["spec"]["template"]["spec"]["restartPolicy"] == "Never"      # WH-008
    assert s["successPolicy"] == {"operator": "Any"}                                   # WH-010
    assert s["startupPolicy"] == {"startupPolicyOrder": "InOrder"}                    # WH-011
    s = got["rules"]
    assert [x["name"] for x in s["failurePolicy"]["rules"]] == ["ruleWithAName", "failurePolicyRule1"]  # WH-014
    assert s["volumeClaimPolicies"][0]["retentionPolicy"] == {"whenDeleted": "Delete"}  # WH-015
    s = got["fp-empty"]
    assert s["failurePolicy"] == {"restartStrategy": "Recreate"}                       # WH-016
    assert s["network"] == {"enableDNSHostnames": True, "publishNotReadyAddresses": False}  # WH-005


def test_defaulting_is_idempotent_on_reapply(kube, wns):
    # Upstream #926: re-applying the same manifest must not change the spec.
    # metadata.generation moves only when the spec does; resourceVersion also
    # moves on every status write (a controller may be reconciling this
    # JobSet), so it cannot tell a spec change from a status update.
    o = jobset("again")
    gens = []
    for _ in range(3):
        p = kube.run("apply", "--server-side", "-n", wns, "-o", "json", "-f", "-", input=json.dumps(o))
        gens.append(json.loads(p.stdout)["metadata"]["generation"])
    assert gens == [gens[0]] * 3, f"generation after each of 3 server-side applies: {gens}"
    spec = kube.jobset("again", wns)["spec"]
    assert spec["replicatedJobs"][0]["template"]["spec"]["completionMode"] == "Indexed"  # still defaulted


# ---- rejections on create (WH-030..144) ----

LONG = "a" * 62
REJECT = [
    ("WH-033", jobset("neg", [rjob("rj", replicas=-1)]), ["spec.replicatedJobs[0].replicas",
                                                          "greater than or equal to 0"]),
    ("WH-036", jobset("spt", successPolicy={"operator": "All", "targetReplicatedJobs": ["does-not-exist"]}),
     ["does-not-exist"]),
    ("WH-037", jobset("sub64", network={"enableDNSHostnames": True, "subdomain": "a" * 64}),
     ["spec.network.subdomain"]),
    ("WH-038", jobset("badsub", network={"subdomain": "Bad_Sub"}), ["spec.network.subdomain", "DNS-1123 subdomain",
                                                                    "DNS-1035 label"]),
    ("WH-040", jobset("dotted", [rjob("username.llama65b")]), ["spec.replicatedJobs[0].name", "DNS-1035"]),
    ("WH-041", jobset("grp", [rjob("rj", groupName="a" * 64)]), ["spec.replicatedJobs[0].groupName"]),
    ("WH-043", dict(jobset(LONG, [rjob("rj", replicas=101)])), ["spec.replicatedJobs[0].name",
                                                                 "JobSet name is too long"]),
    ("WH-055", jobset("mb", managedBy="notDomainPrefixedPathControllerName"),
     ["spec.managedBy", "domain-prefixed path"]),
    ("WH-087", jobset("dep", [rjob("a", dependsOn=[{"name": "a", "status": "Ready"}])]),
     ["spec.replicatedJobs[0].dependsOn"]),
    ("S1", jobset("order", [rjob("a"), rjob("b", dependsOn=[{"name": "a", "status": "Ready"}])],
                  startupPolicy={"startupPolicyOrder": "InOrder"}),
     ["StartupPolicy and DependsOn APIs are mutually exclusive"]),
    ("template", jobset("tmpl", [rjob("rj", pod_spec={"restartPolicy": "Always"})]),
     ["spec.replicatedJobs[0].template.spec.template.spec.restartPolicy"]),
    # Issue 22, docs/differences.md "Size limits" (ours: upstream has none).
    ("size-limit", jobset("huge", [rjob("rj", replicas=2_000_000_000)]),
     ["spec.replicatedJobs[0].replicas", "2000000000", "at most 100000 are allowed"]),
]


@pytest.mark.parametrize("case,obj,needles", REJECT, ids=[c[0] for c in REJECT])
def test_rejected_with_field_path(kube, wns, case, obj, needles):
    p = create(kube, wns, obj, check=False)
    assert p.returncode != 0, f"{case}: accepted"
    for n in needles:
        assert n in p.stderr, f"{case}: {n!r} not in {p.stderr!r}"
    assert kube.jobset(obj["metadata"]["name"], wns) is None


def test_several_errors_in_one_response(kube, wns):  # WH-050
    o = jobset(LONG, [rjob("rj", replicas=101)], successPolicy={"operator": "All", "targetReplicatedJobs": ["x"]},
               managedBy="nope")
    code, st = api_post(f"/apis/jobset.x-k8s.io/v1alpha2/namespaces/{wns}/jobsets", o)
    assert code == 422, st
    assert st["reason"] == "Invalid" and st["details"]["kind"] == "JobSet", st
    assert st["details"]["group"] == "jobset.x-k8s.io" and st["details"]["name"] == LONG, st
    assert 'admission webhook "vjobset.kb.io" denied the request' in st["message"], st
    assert f'JobSet.jobset.x-k8s.io "{LONG}" is invalid: [' in st["message"], st
    fields = {c["field"] for c in st["details"]["causes"]}
    assert {"spec.replicatedJobs[0].name", "spec.managedBy", "spec.successPolicy.targetReplicatedJobs[0]"} <= fields, st
    assert all(c["reason"].startswith("FieldValue") or c["reason"] == "InternalError" for c in st["details"]["causes"])


# ---- updates (WH-150..172) ----

def test_update_rules(kube, wns):
    base = jobset("upd", managedBy="example.com/old", suspend=True)
    create(kube, wns, base)

    def patch(p, check=False):
        return kube.run("patch", "jobsets.jobset.x-k8s.io", "upd", "-n", wns, "--type=merge", "-p", json.dumps(p),
                        check=check)

    assert patch({"metadata": {"labels": {"hello": "world"}}}).returncode == 0            # WH-152
    tmpl = kube.jobset("upd", wns)["spec"]["replicatedJobs"]
    tmpl[0]["template"]["spec"]["template"]["metadata"] = {"annotations": {"key": "value"}}
    assert patch({"spec": {"replicatedJobs": tmpl}}).returncode == 0                      # WH-155 (suspended)
    assert patch({"spec": {"suspend": False}}).returncode == 0                             # WH-151
    p = patch({"spec": {"managedBy": "example.com/new"}})                                  # WH-153
    assert p.returncode != 0 and "spec.managedBy" in p.stderr
    tmpl = kube.jobset("upd", wns)["spec"]["replicatedJobs"]
    tmpl[0]["template"]["spec"]["template"]["metadata"] = {"annotations": {"key": "other"}}
    p = patch({"spec": {"replicatedJobs": tmpl}})                                          # WH-157 (running)
    assert p.returncode != 0 and "spec.replicatedJobs" in p.stderr
    tmpl = kube.jobset("upd", wns)["spec"]["replicatedJobs"]
    tmpl[0]["replicas"] = 2
    p = patch({"spec": {"replicatedJobs": tmpl}})                                          # WH-167
    assert p.returncode != 0 and "spec.replicatedJobs" in p.stderr
    p = patch({"spec": {"network": {"enableDNSHostnames": False}}})                       # WH-172 (CEL)
    assert p.returncode != 0 and "Value is immutable" in p.stderr
    assert patch({"spec": {"suspend": True}}).returncode == 0                              # WH-150
    js = kube.jobset("upd", wns)
    assert js["spec"]["managedBy"] == "example.com/old" and js["spec"]["replicatedJobs"][0]["replicas"] == 1


# ---- pod webhooks (§14): followers wait for their leader, then share its domain ----

def test_exclusive_placement_pods(kube, wns, ctl):
    # `ctl`: the session controller (it leads) lifts the followers' gates
    # (--exclusive-placement=gates, the default); this host only admits.
    topo = "topology.kubernetes.io/zone"
    labels = {"jobset.sigs.k8s.io/jobset-name": "ex", "jobset.sigs.k8s.io/replicatedjob-name": "rj",
              "jobset.sigs.k8s.io/job-index": "0", "jobset.sigs.k8s.io/job-key": "k" + uuid.uuid4().hex[:20]}
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "ex-rj-0", "labels": labels},
           "spec": {"completionMode": "Indexed", "completions": 3, "parallelism": 3, "backoffLimit": 0,
                    "template": {"metadata": {"labels": labels, "annotations": {
                        "jobset.sigs.k8s.io/jobset-name": "ex", "alpha.jobset.sigs.k8s.io/exclusive-topology": topo,
                        "jobset-test/run-for": "1h"}},
                        "spec": {"restartPolicy": "Never", "priority": 0,
                                 "containers": [{"name": "c", "image": "busybox"}]}}}}
    kube.run("create", "-n", wns, "-f", "-", input=json.dumps(job))

    def pods():
        ps = kube.list("pods", wns, "jobset.sigs.k8s.io/jobset-name=ex")
        return ps if len(ps) == 3 and all(p["spec"].get("nodeName") for p in ps) else None
    ps = wait_until("3 pods scheduled", pods, 120)
    by_index = {p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"]: p for p in ps}
    leader = by_index["0"]
    aff = leader["spec"]["affinity"]
    term = aff["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]
    assert term["topologyKey"] == topo
    assert term["labelSelector"]["matchExpressions"][0]["values"] == [labels["jobset.sigs.k8s.io/job-key"]]
    anti = aff["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]
    assert [e["operator"] for e in anti["labelSelector"]["matchExpressions"]] == ["Exists", "NotIn", "In"]
    assert leader["metadata"]["labels"]["jobset.sigs.k8s.io/priority"] == "0"
    nodes = {n["metadata"]["name"]: n for n in json.loads(kube.run("get", "nodes", "-o", "json").stdout)["items"]}
    zone = nodes[leader["spec"]["nodeName"]]["metadata"]["labels"][topo]
    for i in ("1", "2"):
        f = by_index[i]
        assert f["spec"]["nodeSelector"] == {topo: zone}
        assert "affinity" not in f["spec"]
        assert nodes[f["spec"]["nodeName"]]["metadata"]["labels"][topo] == zone
    # Gates: no follower was refused (upstream refuses them until the leader
    # is bound, SPEC §9.3 PV7/PV8; test_follower_without_leader).
    evs = [e for e in kube.list("events", wns) if e.get("reason") == "FailedCreate"]
    assert not evs, [e.get("message") for e in evs]


def test_follower_without_leader(kube, host, wns):
    """Gates mode (the default): the follower is admitted behind the gate,
    labelled for the placement cache. --exclusive-placement=webhook:
    upstream's refusals (SPEC §9.3 PV5, PV7)."""
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "lonely-rj-0-1-abcde",
                        "labels": {"jobset.sigs.k8s.io/jobset-name": "lonely",
                                   "jobset.sigs.k8s.io/replicatedjob-name": "rj", "jobset.sigs.k8s.io/job-index": "0"},
                        "annotations": {"jobset.sigs.k8s.io/jobset-name": "lonely",
                                        "alpha.jobset.sigs.k8s.io/exclusive-topology": "topology.kubernetes.io/zone",
                                        "batch.kubernetes.io/job-completion-index": "1"}},
           "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    gate = "jobset.sigs.k8s.io/exclusive-placement"
    got = json.loads(create(kube, wns, pod).stdout)
    assert [g["name"] for g in got["spec"]["schedulingGates"]] == [gate], got["spec"]
    assert got["metadata"]["labels"][gate] == "gated"
    assert "nodeSelector" not in got["spec"]
    kube.run("delete", "pod", "-n", wns, pod["metadata"]["name"], "--wait=false")

    host.restart("--exclusive-placement=webhook")
    try:
        pod["metadata"]["name"] = "lonely-rj-0-1-fghij"
        p = create(kube, wns, pod, check=False)
        assert p.returncode != 0
        assert 'admission webhook "vpod.kb.io" denied the request' in p.stderr
        assert "follower pod node selector not set" in p.stderr
        pod["spec"]["nodeSelector"] = {"topology.kubernetes.io/zone": "zone-0"}
        p = create(kube, wns, pod, check=False)
        assert p.returncode != 0 and "expected 1 leader pod (lonely-rj-0-0), but got 0" in p.stderr
    finally:
        host.restart()
    # Not a JobSet pod: never sent to the webhooks (objectSelector).
    del pod["metadata"]["labels"]["jobset.sigs.k8s.io/jobset-name"]
    assert create(kube, wns, pod).returncode == 0
