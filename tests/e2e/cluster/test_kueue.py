"""Kueue (sigs.k8s.io/kueue, $JOBSET_KUEUE_VERSION) queueing JobSets that
our controller and webhooks run, on hack/cluster (docs/integrations.md).

Set-up, the way the other cluster tests run our controller:
- Kueue's CRDs from its module source (the Go module cache, downloaded
  through the module proxy as `hack/cluster build kueue` does);
- its manager (`hack/cluster build kueue`) out of cluster with the admin
  kubeconfig, only the JobSet integration enabled, serving its webhooks on
  127.0.0.1 with hack/cluster's host serving certificate;
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
import socket
import subprocess
import tempfile
import urllib.request
from pathlib import Path

import pytest
import yaml

from conftest import Controller, condition, terminal, wait_for, wait_terminal
from test_controller_webhooks import Setup

pytestmark = [
    pytest.mark.skipif(not os.environ.get("JOBSET_TEST_KUBECONFIG"),
                       reason="JOBSET_TEST_KUBECONFIG unset: run hack/cluster up and eval hack/cluster env"),
    # Opt-in until these tests have passed on hack/cluster (issue 15): the
    # Kueue build did not finish in the session that wrote them.
    pytest.mark.skipif(os.environ.get("JOBSET_TEST_KUEUE") != "1",
                       reason="Kueue tests not yet verified: JOBSET_TEST_KUEUE=1 after `hack/cluster build kueue` "
                              "runs them (docs/integrations.md)"),
]

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
KUEUE_NS = "kueue-system"


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def kueue_source():
    """Kueue's module source (CRDs, webhook manifests) at the built version."""
    version = os.environ.get("JOBSET_KUEUE_VERSION", "v0.17.0")
    cache = Path(os.environ.get("JOBSET_CACHE", Path.home() / ".cache" / "jobset"))
    env = dict(os.environ, GOPATH=str(cache / "go"), GOMODCACHE=str(cache / "go" / "pkg" / "mod"),
               GOFLAGS="-mod=mod", GOTOOLCHAIN="local")
    with tempfile.TemporaryDirectory() as tmp:
        p = subprocess.run(["go", "mod", "download", "-json", f"sigs.k8s.io/kueue@{version}"], cwd=tmp,
                           capture_output=True, text=True, env=env, timeout=600)
    assert p.returncode == 0, f"go mod download sigs.k8s.io/kueue@{version}: {p.stderr or p.stdout}"
    return Path(json.loads(p.stdout)["Dir"])


class Kueue:
    """Kueue's manager, out of cluster."""

    def __init__(self, kube, src, tmp, label):
        self.kube, self.src, self.tmp, self.label = kube, src, Path(tmp), label
        self.port = _free_port()
        self.health = _free_port()
        self.configs = []
        self.proc = None

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
        }
        path = self.tmp / "kueue-config.yaml"
        path.write_text(yaml.safe_dump(cfg))
        self.log = self.tmp / "kueue.log"
        binary = os.environ.get("JOBSET_KUEUE_BIN", "")
        assert os.access(binary, os.X_OK), f"Kueue binary {binary!r} missing: hack/cluster build kueue"
        env = dict(os.environ, KUBECONFIG=os.environ["JOBSET_TEST_KUBECONFIG"])
        with open(self.log, "w") as out:
            # The visibility API server would need an APIService; TAS is on
            # for the rack test.
            self.proc = subprocess.Popen([binary, f"--config={path}",
                                          "--feature-gates=VisibilityOnDemand=false,TopologyAwareScheduling=true",
                                          "--zap-log-level=2"],
                                         stdout=out, stderr=subprocess.STDOUT, env=env)
        wait_for("Kueue /readyz", lambda: self._ready() or self._died(), 120)

    def _ready(self):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.health}/readyz", timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    def _died(self):
        if self.proc.poll() is not None:
            raise AssertionError(f"kueue exited {self.proc.returncode}: {self.log.read_text()[-4000:]}")
        return False

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for kind, name in self.configs:
            self.kube.run("delete", kind, name, "--ignore-not-found", check=False)


@pytest.fixture(scope="module")
def env(kube, crd, controller, tmp_path_factory):
    controller.stop()  # one controller at a time: ours with webhooks below
    tmp = tmp_path_factory.mktemp("kueue")
    s = Setup(kube, tmp)
    kube.run("create", "namespace", s.system_ns, check=False)
    kube.run("create", "namespace", KUEUE_NS, check=False)
    s.create_secret()
    s.register()
    c = Controller(kube, s.system_ns, f"jobset-kueue-{s.id}", tmp, webhooks=True)
    c.start("--cert-management=internal", f"--cert-namespace={s.system_ns}", f"--webhook-secret-name={s.secret}",
            "--webhook-host=127.0.0.1", f"--webhook-port={s.port}", f"--webhook-cert-dir={s.cert_dir}",
            f"--mutating-webhook-configuration={s.configs['MutatingWebhookConfiguration']}",
            f"--validating-webhook-configuration={s.configs['ValidatingWebhookConfiguration']}",
            "--cert-extra-sans=127.0.0.1", "--cert-check-interval=2s")
    wait_for("our caBundles", lambda: all(s.config(k)["webhooks"][0]["clientConfig"].get("caBundle")
                                          for k in s.configs), 60)
    k = Kueue(kube, kueue_source(), tmp, s.label)
    try:
        k.install_crds()
        k.register_webhooks(s.id)
        k.start()
        s.kueue = k
        s.ctl = c
        yield s
    finally:
        k.stop()
        rc = c.stop()
        s.cleanup()
    assert rc == 0, f"controller exit status {rc} on SIGTERM; log {c.log}"


def queue(kube, s, ns, name, cpu, preemption=None, flavor=None):
    """A ResourceFlavor, a ClusterQueue with `cpu` CPUs of quota for `ns`, and
    a LocalQueue `name` in ns pointing at it."""
    flavor = flavor or {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
                        "metadata": {"name": f"{name}-{s.id}"}}
    kube.apply(flavor)
    cq = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
          "metadata": {"name": f"{name}-{s.id}"},
          "spec": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
                   "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                       {"name": flavor["metadata"]["name"], "resources": [{"name": "cpu", "nominalQuota": str(cpu)}]}]}]}}
    if preemption:
        cq["spec"]["preemption"] = preemption
    kube.apply(cq)
    kube.apply({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                "metadata": {"name": name, "namespace": ns}, "spec": {"clusterQueue": cq["metadata"]["name"]}})
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
    queue(kube, env, ns, "lq", 2)
    for n in ("js-a", "js-b", "js-c"):
        kube.create(queued_jobset(n, "lq", "8s"), ns)
        # Kueue's webhook suspends it at creation; its Workload queues.
        assert suspended(kube, n, ns), kube.jobset(n, ns)["spec"]
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
    wait_terminal(kube, "js-high", ns, "Completed", 120)
    # Re-admitted once the high one finished; it completes.
    low = wait_terminal(kube, "js-low", ns, "Completed", 180)
    # A suspension is not a restart.
    assert low["status"].get("restarts", 0) == 0, low["status"]
    sus = [c for c in low["status"]["conditions"] if c["type"] == "Suspended"][0]
    assert sus["status"] == "False" and sus["reason"] == "ResumeJobs"
    reasons = [e["reason"] for e in kube.events(ns) if e.get("regarding", {}).get("name") == "js-low"]
    assert "SuspendedJobs" in reasons and "ResumeJobs" in reasons, reasons
    w = workload_of(kube, ns, "js-low")
    evicted = [c for c in w["status"]["conditions"] if c["type"] == "Evicted"]
    assert evicted and evicted[0]["reason"] == "Preempted", w["status"]["conditions"]


def test_flavor_node_selector_and_tolerations_reach_pods(kube, env):
    ns = env.namespace(f"kueue-flavor-{env.id}")
    flavor = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
              "metadata": {"name": f"pool1-{env.id}"},
              "spec": {"nodeLabels": {"cloud.google.com/gke-nodepool": "pool-1"},
                       "tolerations": [{"key": "jobset-test/dedicated", "operator": "Exists", "effect": "NoSchedule"}]}}
    queue(kube, env, ns, "lq", 4, flavor=flavor)
    kube.create(queued_jobset("js-flavor", "lq", "2s", replicas=2), ns)
    wait_terminal(kube, "js-flavor", ns, "Completed", 120)
    pods = kube.list("pods", ns, "jobset.sigs.k8s.io/jobset-name=js-flavor")
    assert len(pods) == 2
    for p in pods:
        assert p["spec"]["nodeSelector"].get("cloud.google.com/gke-nodepool") == "pool-1", p["spec"]
        assert {"key": "jobset-test/dedicated", "operator": "Exists", "effect": "NoSchedule"} in p["spec"]["tolerations"]
        node = kube.get("node", p["spec"]["nodeName"], "default")
        assert node["metadata"]["labels"]["cloud.google.com/gke-nodepool"] == "pool-1"


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
