"""Kueue (sigs.k8s.io/kueue, $JOBSET_KUEUE_VERSION) queueing JobSets that
our controller and webhooks run, on hack/cluster (docs/integrations.md).

Set-up, the way the other cluster tests run our controller:
- Kueue's CRDs from its module source (the Go module cache, downloaded
  through the module proxy as `hack/cluster build kueue` does);
- its manager (`hack/cluster build kueue`) out of cluster with the admin
  kubeconfig, only the JobSet integration enabled, waitForPodsReady on,
  serving its webhooks on 127.0.0.1 with hack/cluster's host serving
  certificate (also at the fixed metrics-cert path it insists on, in a
  mount namespace of its own: private_etc);
- its JobSet, Workload, ClusterQueue, Cohort and ResourceFlavor webhooks
  registered by URL (the others serve integrations that are off), ours as
  test_controller_webhooks.py registers them; all scoped to namespaces
  labelled with this run's id;
- jobset-controller with its webhooks and internal certificate management.

Pods run on the kwok nodes for as long as their `jobset-test/run-for`
annotation says; every wait polls a condition with a deadline.
"""
import base64
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from conftest import ManagerProcess, _free_port, condition, go_module_dir, terminal, wait_for, wait_terminal
from test_controller_webhooks import Setup

pytestmark = [
    pytest.mark.skipif(not os.environ.get("JOBSET_TEST_KUBECONFIG"),
                       reason="JOBSET_TEST_KUBECONFIG unset: run hack/cluster up and eval hack/cluster env"),
    # The cluster tier builds it (`hack/cluster build clients`); run alone,
    # the tests say why they did not run.
    pytest.mark.skipif(not os.access(os.environ.get("JOBSET_KUEUE_BIN", ""), os.X_OK),
                       reason="Kueue's manager is not built: `hack/cluster build kueue` (or `clients`), then "
                              "`eval \"$(hack/cluster env)\"` (docs/integrations.md)"),
]

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
KUEUE_NS = "kueue-system"
# reportingController of the events Kueue's JobSet reconciler writes.
KUEUE_JOBSET = "jobset.x-k8s.io/jobset-kueue-controller"


def private_etc(layer):
    """The command prefix that runs a program with `layer` overlaid on /etc
    in a mount namespace of its own (private propagation: the host never
    sees it): through an unprivileged user namespace, or as root with
    CAP_SYS_ADMIN. Fails, saying why, when the machine allows neither."""
    overlay = f'mount -t overlay kueue-etc -o lowerdir={layer}:/etc /etc && exec "$0" "$@"'
    tried = []
    for ns in (["--user", "--map-root-user", "--mount"], ["--mount"]):
        cmd = ["unshare", *ns, "sh", "-c", overlay]
        p = subprocess.run([*cmd, "test", "-d", "/etc/kueue"], capture_output=True, text=True, timeout=30)
        if p.returncode == 0:
            return cmd
        tried.append(f"unshare {' '.join(ns)}: {p.stderr.strip()}")
    raise AssertionError("no mount namespace for Kueue's fixed /etc/kueue/metrics/certs "
                         "(unprivileged user namespaces, or root with CAP_SYS_ADMIN): " + "; ".join(tried))


class Kueue(ManagerProcess):
    """Kueue's manager, out of cluster."""

    def __init__(self, kube, src, tmp, label):
        super().__init__("Kueue", _free_port())
        self.kube, self.src, self.tmp, self.label = kube, src, Path(tmp), label
        self.port = _free_port()
        self.configs = []

    def install_crds(self):
        bases = self.src / "config" / "components" / "crd" / "bases"
        self.kube.run("apply", "--server-side", "--force-conflicts", "-f", str(bases), timeout=180)
        for f in sorted(bases.glob("*.yaml")):
            name = yaml.safe_load(f.read_text())["metadata"]["name"]
            wait_for(f"CRD {name} Established",
                     lambda: condition(self.kube.get("crd", name, "default"), "Established"), 60)

    def register_webhooks(self, run_id):
        """Kueue's manifests, JobSet and Kueue's own kinds only, by URL."""
        ca = base64.b64encode(Path(os.environ["JOBSET_TEST_CA"]).read_bytes()).decode()
        text = (self.src / "config" / "components" / "webhook" / "manifests.yaml").read_text()
        for d in [d for d in yaml.safe_load_all(text) if d]:
            hooks = []
            for h in d["webhooks"]:
                path = h["clientConfig"]["service"]["path"]
                if "jobset" not in path and "kueue-x-k8s-io" not in path:
                    continue
                h["clientConfig"] = {"url": f"https://127.0.0.1:{self.port}{path}", "caBundle": ca}
                h["namespaceSelector"] = {"matchLabels": {self.label[0]: self.label[1]}}
                h["timeoutSeconds"] = 10
                hooks.append(h)
            d["webhooks"] = hooks
            d["metadata"] = {"name": f"kueue-{d['kind'].lower()}-{run_id}"}
            self.kube.run("create", "-f", "-", input=json.dumps(d))
            self.configs.append((d["kind"], d["metadata"]["name"]))

    def start(self):
        cfg = {
            "apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
            "namespace": KUEUE_NS,
            "health": {"healthProbeBindAddress": f"127.0.0.1:{self.health}"},
            "metrics": {"bindAddress": "0"},
            "webhook": {"port": self.port, "host": "127.0.0.1",
                        "certDir": os.environ["JOBSET_TEST_WEBHOOK_CERT_DIR"]},
            "leaderElection": {"leaderElect": False},
            "internalCertManagement": {"enable": False},
            "integrations": {"frameworks": ["jobset.x-k8s.io/jobset"]},
            # Kueue then reads readiness from our replicatedJobsStatus
            # (ready + succeeded Jobs against replicas) into the Workload's
            # PodsReady condition; never reached in 5 min, it would evict.
            "waitForPodsReady": {"timeout": "5m", "blockAdmission": False},
        }
        path = self.tmp / "kueue-config.yaml"
        path.write_text(yaml.safe_dump(cfg))
        binary = os.environ.get("JOBSET_KUEUE_BIN", "")
        assert os.access(binary, os.X_OK), f"Kueue binary {binary!r} missing: hack/cluster build kueue"
        env = dict(os.environ, KUBECONFIG=os.environ["JOBSET_TEST_KUBECONFIG"])
        # Without internal certificate management Kueue 0.17 loads a metrics
        # serving certificate from the fixed path /etc/kueue/metrics/certs,
        # even with metrics off (cmd/kueue/main.go). It gets hack/cluster's
        # host certificate there in a mount namespace of its own: a
        # read-only overlay of /etc, so nothing outside the test changes.
        layer = self.tmp / "etc-layer"
        certs = layer / "kueue" / "metrics" / "certs"
        certs.mkdir(parents=True)
        for f in ("tls.crt", "tls.key"):
            shutil.copy(Path(os.environ["JOBSET_TEST_WEBHOOK_CERT_DIR"]) / f, certs / f)
        # The visibility API server would need an APIService; TAS is on for
        # the rack test.
        self.spawn([*private_etc(layer), binary, f"--config={path}",
                    "--feature-gates=VisibilityOnDemand=false,TopologyAwareScheduling=true", "--zap-log-level=2"],
                   env, self.tmp / "kueue.log")

    def stop(self):
        self.terminate()
        for kind, name in self.configs:
            self.kube.run("delete", kind, name, "--ignore-not-found", check=False)


@pytest.fixture(scope="module")
def env(kube, crd, controller, tmp_path_factory):
    controller.stop()  # one controller at a time: ours with webhooks below
    tmp = tmp_path_factory.mktemp("kueue")
    s = Setup(kube, tmp)
    kube.run("create", "namespace", KUEUE_NS, check=False)
    s.start_controller(f"jobset-kueue-{s.id}")
    k = Kueue(kube, go_module_dir("sigs.k8s.io/kueue", os.environ.get("JOBSET_KUEUE_VERSION", "v0.17.0")), tmp,
              s.label)
    try:
        k.install_crds()
        k.register_webhooks(s.id)
        k.start()
        s.kueue = k
        yield s
    finally:
        k.stop()
        rc = s.stop_controller()
    assert rc == 0, f"controller exit status {rc} on SIGTERM; log {s.ctl.log}"


def queue(kube, s, ns, name, cpu, preemption=None, flavor=None, flavors=None, fungibility=None, hold=False):
    """ResourceFlavors, a ClusterQueue for `ns` and a LocalQueue `name` in ns
    pointing at it. The quota is `cpu` CPUs of `flavor` (default: a plain
    flavor of its own), or `flavors`, a list of (ResourceFlavor, CPUs)
    tried in that order. `hold`: the LocalQueue starts with stopPolicy
    Hold (nothing of it is admitted until that is lifted)."""
    flavors = flavors or [(flavor or {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
                                      "metadata": {"name": f"{name}-{s.id}"}}, cpu)]
    for f, _ in flavors:
        kube.apply(f)
    cq = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
          "metadata": {"name": f"{name}-{s.id}"},
          "spec": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
                   "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                       {"name": f["metadata"]["name"], "resources": [{"name": "cpu", "nominalQuota": str(c)}]}
                       for f, c in flavors]}]}}
    if preemption:
        cq["spec"]["preemption"] = preemption
    if fungibility:
        cq["spec"]["flavorFungibility"] = fungibility
    kube.apply(cq)
    lq = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
          "metadata": {"name": name, "namespace": ns}, "spec": {"clusterQueue": cq["metadata"]["name"]}}
    if hold:
        lq["spec"]["stopPolicy"] = "Hold"
    kube.apply(lq)
    wait_for(f"ClusterQueue {cq['metadata']['name']} active",
             lambda: condition(kube.get("clusterqueues.kueue.x-k8s.io", cq["metadata"]["name"], "default"), "Active"))
    return cq["metadata"]["name"]


def queued_jobset(name, lq, run_for, replicas=1, cpu="1", labels=None, **spec):
    pod = {"metadata": {"annotations": {"jobset-test/run-for": run_for}},
           "spec": {"restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox", "command": ["true"],
                                    "resources": {"requests": {"cpu": cpu}}}]}}
    s = {"replicatedJobs": [{"name": "w", "replicas": replicas, "template": {"spec": {
        "parallelism": 1, "completions": 1, "backoffLimit": 0, "template": pod}}}]}
    s.update(spec)
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": name, "labels": {QUEUE_LABEL: lq, **(labels or {})}}, "spec": s}


def suspended(kube, name, ns):
    return (kube.jobset(name, ns) or {}).get("spec", {}).get("suspend") is True


def services(kube, ns, name):
    return [x for x in kube.list("services", ns) if x["metadata"]["name"] == name]


def workload_of(kube, ns, name):
    for w in kube.list("workloads.kueue.x-k8s.io", ns):
        if any(o.get("kind") == "JobSet" and o.get("name") == name for o in w["metadata"].get("ownerReferences", [])):
            return w
    return None


def test_quota_for_two_third_waits_with_nothing(kube, env):
    ns = env.namespace(f"kueue-quota-{env.id}")
    # The LocalQueue holds admission while the three are created, so that
    # Kueue's suspension at creation can be seen before it admits any.
    queue(kube, env, ns, "lq", 2, hold=True)
    names = ("js-a", "js-b", "js-c")
    for n in names:
        kube.create(queued_jobset(n, "lq", "8s"), ns)
        # Kueue's webhook suspends it at creation; its Workload queues.
        assert suspended(kube, n, ns), kube.jobset(n, ns)["spec"]
    wait_for("three Workloads queued", lambda: all(workload_of(kube, ns, n) for n in names), 60)
    wait_for("Suspended=True on the three", lambda: all(condition(kube.jobset(n, ns), "Suspended") for n in names), 60)
    for n in names:
        assert kube.jobs(ns, n) == [] and services(kube, ns, n) == [], n
    kube.run("patch", "localqueue.kueue.x-k8s.io", "lq", "-n", ns, "--type=merge", "-p",
             json.dumps({"spec": {"stopPolicy": "None"}}))
    wait_for("two admitted", lambda: sum(not suspended(kube, n, ns) for n in ("js-a", "js-b", "js-c")) == 2, 60)
    waiting = [n for n in ("js-a", "js-b", "js-c") if suspended(kube, n, ns)]
    assert len(waiting) == 1
    third = waiting[0]
    # While the two run: the third is queued with no child Job and no Service (#535).
    running = [n for n in ("js-a", "js-b", "js-c") if n != third]
    wait_for("the admitted two running", lambda: all(kube.jobs(ns, n) for n in running), 60)
    assert terminal(kube.jobset(third, ns)) is None
    assert kube.jobs(ns, third) == [] and services(kube, ns, third) == []
    assert condition(kube.jobset(third, ns), "Suspended")["reason"] == "SuspendedJobs"
    w = workload_of(kube, ns, third)
    assert w is not None and not condition(w, "QuotaReserved"), w and w.get("status")
    for n in running:
        wait_for(f"{n}'s Workload PodsReady", lambda: condition(workload_of(kube, ns, n), "PodsReady"), 60)
        wait_terminal(kube, n, ns, "Completed", 120)
    # Quota frees: Kueue admits the third, which then runs to completion.
    wait_terminal(kube, third, ns, "Completed", 120)
    assert len(kube.jobs(ns, third)) == 1 and services(kube, ns, third)
    assert condition(workload_of(kube, ns, third), "Finished")


def test_priority_preempts_running_jobset(kube, env):
    ns = env.namespace(f"kueue-preempt-{env.id}")
    queue(kube, env, ns, "lq", 1, preemption={"withinClusterQueue": "LowerPriority"})
    for name, value in (("low", 100), ("high", 1000)):
        kube.apply({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
                    "metadata": {"name": f"{name}-{env.id}"}, "value": value})
    kube.create(queued_jobset("js-low", "lq", "15s", labels={PRIORITY_LABEL: f"low-{env.id}"}), ns)
    wait_for("js-low running", lambda: not suspended(kube, "js-low", ns) and kube.jobs(ns, "js-low")
             and kube.jobs(ns, "js-low")[0].get("status", {}).get("active"), 60)
    kube.create(queued_jobset("js-high", "lq", "3s", labels={PRIORITY_LABEL: f"high-{env.id}"}), ns)
    # Preempted: Kueue suspends the running JobSet; we suspend its Jobs
    # (they are kept: it was running, SPEC §11, docs/differences.md (a)).
    wait_for("js-low suspended", lambda: suspended(kube, "js-low", ns), 60)
    wait_for("js-low's Jobs suspended", lambda: all(j["spec"].get("suspend") for j in kube.jobs(ns, "js-low")), 60)
    wait_for("Suspended=True on js-low", lambda: condition(kube.jobset("js-low", ns), "Suspended"), 60)
    # Kueue's record of it, while it lasts (re-admission sets Evicted=False).
    wait_for("js-low's Workload Evicted by preemption",
             lambda: (condition(workload_of(kube, ns, "js-low"), "Evicted") or {}).get("reason") == "Preempted", 60)
    wait_terminal(kube, "js-high", ns, "Completed", 120)
    # Re-admitted once the high one finished; it completes.
    low = wait_terminal(kube, "js-low", ns, "Completed", 180)
    # A suspension is not a restart.
    assert low["status"].get("restarts", 0) == 0, low["status"]
    sus = [c for c in low["status"]["conditions"] if c["type"] == "Suspended"][0]
    assert sus["status"] == "False" and sus["reason"] == "ResumeJobs"
    # Each transition is an event: suspended at creation and by the
    # preemption, resumed at admission and at re-admission (a repeat is
    # folded into the first Event's series, as client-go's recorder does).
    seen = {}
    for e in kube.events(ns):
        if e.get("regarding", {}).get("name") == "js-low" and e.get("reportingController") != KUEUE_JOBSET:
            seen[e["reason"]] = seen.get(e["reason"], 0) + ((e.get("series") or {}).get("count") or 1)
    assert seen.get("SuspendedJobs") == 2 and seen.get("ResumeJobs") == 2, seen
    w = workload_of(kube, ns, "js-low")
    assert condition(w, "Finished"), w["status"]
    evictions = (w["status"].get("schedulingStats") or {}).get("evictions", [])
    assert [(e["reason"], e["count"]) for e in evictions] == [("Preempted", 1)], w["status"]


def pool_flavor(name, pool, taint_key=None):
    """A ResourceFlavor for the kwok nodes of `pool`, with a toleration of
    `taint_key` (the nodes have no taints: it only has to reach the pods)."""
    f = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": name},
         "spec": {"nodeLabels": {"cloud.google.com/gke-nodepool": pool}}}
    if taint_key:
        f["spec"]["tolerations"] = [{"key": taint_key, "operator": "Exists", "effect": "NoSchedule"}]
    return f


def assert_pods_on_pool(kube, ns, name, pool, toleration_key, count, stale=None):
    """`count` pods of `name` succeeded on `pool` with its selector and
    toleration; with `stale`, a toleration key no pod may carry (the other
    flavor's, from an earlier admission)."""
    pods = [p for p in kube.list("pods", ns, f"jobset.sigs.k8s.io/jobset-name={name}")
            if p.get("status", {}).get("phase") == "Succeeded"]
    assert len(pods) == count, [(p["metadata"]["name"], p.get("status", {}).get("phase")) for p in pods]
    for p in pods:
        assert p["spec"]["nodeSelector"] == {"cloud.google.com/gke-nodepool": pool}, p["spec"]
        assert {"key": toleration_key, "operator": "Exists", "effect": "NoSchedule"} in p["spec"]["tolerations"]
        assert not [t for t in p["spec"]["tolerations"] if t.get("key") == stale], p["spec"]["tolerations"]
        node = kube.get("node", p["spec"]["nodeName"], "default")
        assert node["metadata"]["labels"]["cloud.google.com/gke-nodepool"] == pool, (p["metadata"]["name"], node)


def test_flavor_node_selector_and_tolerations_reach_pods(kube, env):
    """A flavor's nodeLabels and tolerations reach the pods: of a JobSet
    admitted for the first time (its Jobs are created then, from the
    template Kueue edited: differences.md), and of a JobSet preempted on one
    flavor and re-admitted on another, whose existing suspended Jobs we
    patch on resume. That patch rebuilds nodeSelector and tolerations from
    the template, so the re-admitted pods carry only the second flavor's
    (issue 24; upstream v0.12.0 merges and keeps the first flavor's
    toleration too: differences.md §16.18)."""
    ns = env.namespace(f"kueue-flavor-{env.id}")
    f0 = pool_flavor(f"pool0-{env.id}", "pool-0", "jobset-test/pool0")
    f1 = pool_flavor(f"pool1-{env.id}", "pool-1", "jobset-test/pool1")
    # 2 CPUs of pool-0, 2 of pool-1. A workload that could preempt in
    # pool-0 does so rather than trying pool-1 (MayStopSearch), so the
    # preempted one moves to pool-1.
    queue(kube, env, ns, "lq", 0, flavors=[(f0, 2), (f1, 2)],
          preemption={"withinClusterQueue": "LowerPriority"}, fungibility={"whenCanPreempt": "MayStopSearch"})
    for name, value in (("low", 100), ("high", 1000)):
        kube.apply({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
                    "metadata": {"name": f"flv-{name}-{env.id}"}, "value": value})
    # First admission: two Jobs, created with pool-0's selector and toleration.
    kube.create(queued_jobset("js-move", "lq", "20s", replicas=2, labels={PRIORITY_LABEL: f"flv-low-{env.id}"}), ns)
    wait_for("js-move's pods running on pool-0", lambda: [
        p for p in kube.list("pods", ns, "jobset.sigs.k8s.io/jobset-name=js-move")
        if p.get("status", {}).get("phase") == "Running"
        and p["spec"].get("nodeSelector", {}).get("cloud.google.com/gke-nodepool") == "pool-0"][1:], 60)
    jobs0 = {j["metadata"]["name"]: j["metadata"]["uid"] for j in kube.jobs(ns, "js-move")}
    assert len(jobs0) == 2
    # A higher-priority JobSet of 2 CPUs takes pool-0: js-move is preempted,
    # its Jobs suspended, and Kueue re-admits it on pool-1.
    kube.create(queued_jobset("js-pool0", "lq", "3s", replicas=2, labels={PRIORITY_LABEL: f"flv-high-{env.id}"}), ns)
    wait_for("js-move preempted", lambda: (condition(workload_of(kube, ns, "js-move"), "Evicted") or {}).get("reason")
             == "Preempted", 60)
    wait_terminal(kube, "js-pool0", ns, "Completed", 120)
    wait_terminal(kube, "js-move", ns, "Completed", 180)
    # The same Jobs, resumed with pool-1's selector and toleration.
    jobs = kube.jobs(ns, "js-move")
    assert {j["metadata"]["name"]: j["metadata"]["uid"] for j in jobs} == jobs0
    for j in jobs:
        pt = j["spec"]["template"]["spec"]
        assert pt["nodeSelector"] == {"cloud.google.com/gke-nodepool": "pool-1"}, pt
        assert pt["tolerations"] == f1["spec"]["tolerations"], pt
    w = workload_of(kube, ns, "js-move")
    assert [f["flavors"]["cpu"] for f in w["status"]["admission"]["podSetAssignments"]] == [f1["metadata"]["name"]]
    assert_pods_on_pool(kube, ns, "js-move", "pool-1", "jobset-test/pool1", 2, stale="jobset-test/pool0")
    assert_pods_on_pool(kube, ns, "js-pool0", "pool-0", "jobset-test/pool0", 2)


def test_topology_aware_scheduling_one_rack_per_job(kube, env):
    """Kueue's TAS places each child Job in one rack of the kwok nodes
    (`jobset-test/rack`, two nodes a rack): pods of 40 CPUs on 64-CPU nodes,
    two a Job, so a Job needs both nodes of a rack. Kueue tells a JobSet's
    Jobs apart by our `jobset.sigs.k8s.io/job-index` label and its pods by
    the Job's completion index."""
    ns = env.namespace(f"kueue-tas-{env.id}")
    topo = f"racks-{env.id}"
    kube.apply({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Topology", "metadata": {"name": topo},
                "spec": {"levels": [{"nodeLabel": "jobset-test/rack"}, {"nodeLabel": "kubernetes.io/hostname"}]}})
    flavor = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
              "metadata": {"name": f"tas-{env.id}"},
              "spec": {"nodeLabels": {"type": "kwok"}, "topologyName": topo}}
    queue(kube, env, ns, "lq", 256, flavor=flavor)
    js = queued_jobset("js-tas", "lq", "2s", replicas=2, cpu="40")
    tmpl = js["spec"]["replicatedJobs"][0]["template"]["spec"]
    tmpl["parallelism"] = tmpl["completions"] = 2
    tmpl["template"]["metadata"]["annotations"].update({
        "kueue.x-k8s.io/podset-slice-required-topology": "jobset-test/rack",
        "kueue.x-k8s.io/podset-slice-size": "2"})
    kube.create(js, ns)
    wait_terminal(kube, "js-tas", ns, "Completed", 180)
    pods = kube.list("pods", ns, "jobset.sigs.k8s.io/jobset-name=js-tas")
    racks, nodes = {}, {}
    for p in pods:
        idx = p["metadata"]["labels"]["jobset.sigs.k8s.io/job-index"]
        node = kube.get("node", p["spec"]["nodeName"], "default")
        racks.setdefault(idx, set()).add(node["metadata"]["labels"]["jobset-test/rack"])
        nodes.setdefault(idx, set()).add(p["spec"]["nodeName"])
    assert sorted(racks) == ["0", "1"], racks
    assert all(len(r) == 1 for r in racks.values()), racks
    assert all(len(n) == 2 for n in nodes.values()), nodes
    assert racks["0"] != racks["1"], racks


def test_failing_jobset_restarts_then_fails_and_frees_quota(kube, env):
    """A JobSet whose pod fails restarts within its admission (Kueue does
    not evict it: a restart is not a suspension), then fails for good; Kueue
    declares its Workload finished with our reason and gives the quota to
    the next JobSet."""
    ns = env.namespace(f"kueue-fail-{env.id}")
    queue(kube, env, ns, "lq", 1)
    bad = queued_jobset("js-bad", "lq", "1s", failurePolicy={"maxRestarts": 1})
    bad["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["metadata"]["annotations"].update(
        {"jobset-test/exit-code": "42", "jobset-test/fail-reason": "Crashed"})
    kube.create(bad, ns)
    wait_for("js-bad admitted", lambda: not suspended(kube, "js-bad", ns), 60)
    kube.create(queued_jobset("js-next", "lq", "1s"), ns)
    js = wait_terminal(kube, "js-bad", ns, "Failed", 120)
    assert js["status"]["restarts"] == 1, js["status"]
    failed = condition(js, "Failed")
    assert failed and failed["reason"] == "ReachedMaxRestarts", js["status"]
    w = workload_of(kube, ns, "js-bad")
    fin = condition(w, "Finished")
    assert fin and fin["reason"] == "Failed" and fin["message"] == failed["message"], w["status"]
    assert not (w["status"].get("schedulingStats") or {}).get("evictions"), w["status"]
    # Only 1 CPU of quota: js-next is admitted once js-bad's is released.
    wait_terminal(kube, "js-next", ns, "Completed", 120)
    reserved = [c for c in workload_of(kube, ns, "js-next")["status"]["conditions"] if c["type"] == "QuotaReserved"]
    assert reserved and reserved[0]["lastTransitionTime"] >= fin["lastTransitionTime"], (reserved, fin)


def test_exclusive_placement_of_an_admitted_jobset(kube, env):
    """Exclusive placement (our scheduling gate, `--exclusive-placement=gates`)
    under Kueue: the pods carry Kueue's flavor selector from the template and
    the followers our leader's rack on top, so each Job of the admitted
    JobSet runs in a rack of its own."""
    ns = env.namespace(f"kueue-excl-{env.id}")
    flavor = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
              "metadata": {"name": f"kwok-{env.id}"}, "spec": {"nodeLabels": {"type": "kwok"}}}
    queue(kube, env, ns, "lq", 8, flavor=flavor)
    js = queued_jobset("js-excl", "lq", "3s", replicas=2)
    tmpl = js["spec"]["replicatedJobs"][0]["template"]["spec"]
    tmpl["parallelism"] = tmpl["completions"] = 2
    tmpl["template"]["metadata"]["annotations"]["alpha.jobset.sigs.k8s.io/exclusive-topology"] = "jobset-test/rack"
    kube.create(js, ns)
    wait_terminal(kube, "js-excl", ns, "Completed", 120)
    racks = {}
    for p in kube.list("pods", ns, "jobset.sigs.k8s.io/jobset-name=js-excl"):
        assert p["spec"]["nodeSelector"].get("type") == "kwok", p["spec"]
        assert not p["spec"].get("schedulingGates"), p["spec"]
        node = kube.get("node", p["spec"]["nodeName"], "default")
        racks.setdefault(p["metadata"]["labels"]["jobset.sigs.k8s.io/job-index"], set()).add(
            node["metadata"]["labels"]["jobset-test/rack"])
    assert sorted(racks) == ["0", "1"] and all(len(r) == 1 for r in racks.values()), racks
    assert racks["0"] != racks["1"], racks


def test_in_order_exclusive_jobset_preempted_and_readmitted(kube, env):
    """A JobSet with InOrder startup, two ReplicatedJobs and exclusive
    placement is preempted while it runs and re-admitted: its kept Jobs are
    resumed in order (the second once the first is ready again), its
    followers wait for their new leaders, and it completes without a
    restart."""
    ns = env.namespace(f"kueue-inorder-{env.id}")
    flavor = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
              "metadata": {"name": f"io-{env.id}"}, "spec": {"nodeLabels": {"type": "kwok"}}}
    queue(kube, env, ns, "lq", 4, flavor=flavor, preemption={"withinClusterQueue": "LowerPriority"})
    for name, value in (("low", 100), ("high", 1000)):
        kube.apply({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
                    "metadata": {"name": f"io-{name}-{env.id}"}, "value": value})
    js = queued_jobset("js-io", "lq", "20s", replicas=1, labels={PRIORITY_LABEL: f"io-low-{env.id}"},
                       startupPolicy={"startupPolicyOrder": "InOrder"})
    first = js["spec"]["replicatedJobs"][0]
    first["template"]["spec"]["parallelism"] = first["template"]["spec"]["completions"] = 2
    first["template"]["spec"]["template"]["metadata"]["annotations"][
        "alpha.jobset.sigs.k8s.io/exclusive-topology"] = "jobset-test/rack"
    second = json.loads(json.dumps(first))
    second["name"] = "v"
    js["spec"]["replicatedJobs"].append(second)
    kube.create(js, ns)
    wait_for("both ReplicatedJobs of js-io running", lambda: len(
        [j for j in kube.jobs(ns, "js-io") if j.get("status", {}).get("active") == 2]) == 2, 90)
    jobs = {j["metadata"]["uid"] for j in kube.jobs(ns, "js-io")}
    kube.create(queued_jobset("js-io-high", "lq", "3s", cpu="3", labels={PRIORITY_LABEL: f"io-high-{env.id}"}), ns)
    wait_for("js-io preempted", lambda: (condition(workload_of(kube, ns, "js-io"), "Evicted") or {}).get("reason")
             == "Preempted", 60)
    wait_terminal(kube, "js-io-high", ns, "Completed", 120)
    done = wait_terminal(kube, "js-io", ns, "Completed", 180)
    assert done["status"].get("restarts", 0) == 0, done["status"]
    assert condition(done, "StartupPolicyCompleted"), done["status"]
    assert {j["metadata"]["uid"] for j in kube.jobs(ns, "js-io")} == jobs, "Jobs recreated, not resumed"
