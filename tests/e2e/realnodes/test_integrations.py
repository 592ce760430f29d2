"""Kubeflow Trainer and Kueue on real nodes, once each (issue 23): a TrainJob
whose JobSet's pods start on the real kubelets and exit 0, and a JobSet that
Kueue keeps suspended until it admits it, which then runs to Completed on
the real kubelets. Both with the controller from deploy/ as a pod.

Their managers run as the kwok tier runs them (tests/e2e/cluster/test_kueue.py
and test_trainer.py, whose Kueue and Trainer classes are reused here): out of
cluster, as processes of the machine with their CRDs, RBAC and webhook
registrations from their module sources. Only their network namespace
differs: they run in the real-node cluster's own (`nsenter` into the holder
of hack/cluster's namespaces), where the API server is, so the webhooks they
serve on 127.0.0.1 are reached at the URL the kwok tier registers; and they
carry the cluster's JOBSET_CLUSTER_ID, so `hack/cluster down` sweeps them if
a test leaves them behind. Their health probes are asked from inside that
namespace too.

Pods use the busybox image every real node has offline
(imagePullPolicy: Never).

With node quarantine (gate NodeQuarantine, test_quarantine.py) a
Kueue-admitted JobSet's restart keeps both: Kueue's flavor nodeSelector
and our required `metadata.name NotIn` term on attempt 1's pods."""
import hashlib
import importlib.util
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from conftest import ROOT, busybox_pod, cluster_conftest, condition, jobset_obj, rjob, wait_for
from test_quarantine import quarantine_jobset, quarantine_pod, run_and_check

CLUSTER_TESTS = ROOT / "tests" / "e2e" / "cluster"


def _cluster_test_module(name):
    """tests/e2e/cluster/<name>.py as module cluster_<name>, with the cluster
    tier's conftest as the `conftest` it imports from (here `conftest` is
    this directory's)."""
    saved = sys.modules.get("conftest")
    sys.modules["conftest"] = cluster_conftest
    try:
        spec = importlib.util.spec_from_file_location(f"cluster_{name}", CLUSTER_TESTS / f"{name}.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        sys.modules["conftest"] = saved
    return mod


cluster_kueue = _cluster_test_module("test_kueue")
cluster_trainer = _cluster_test_module("test_trainer")

KUEUE_BIN = os.environ.get("JOBSET_KUEUE_BIN", "")
TRAINER_BIN = os.environ.get("JOBSET_TRAINER_BIN", "")
QUEUE_LABEL = cluster_kueue.QUEUE_LABEL
GROUP = cluster_trainer.GROUP


def _state_dir():
    return Path(os.environ["JOBSET_CLUSTER_DIR"])


def _in_cluster_net():
    """The command prefix that runs a program in the cluster's network
    namespace (hack/cluster.d/nodes.sh: held by pids/nsholder.pid)."""
    pid = (_state_dir() / "pids" / "nsholder.pid").read_text().strip()
    assert pid.isdigit() and Path(f"/proc/{pid}").exists(), f"no namespace holder {pid!r}: is the cluster up?"
    return ["nsenter", "-t", pid, "-n", "--"]


def _cluster_id():
    """hack/cluster's <ID> of the state directory (rn_id: the first 8 hex
    digits of the SHA-1 of its real path)."""
    return hashlib.sha1(os.path.realpath(_state_dir()).encode()).hexdigest()[:8]


def in_cluster_net(manager):
    """A subclass of ManagerProcess `manager` (Kueue, Trainer) whose process
    runs in the cluster's network namespace, marked as the cluster's."""

    class InClusterNet(manager):
        def spawn(self, args, env, log, timeout=120):
            super().spawn([*_in_cluster_net(), *args], dict(env, JOBSET_CLUSTER_ID=_cluster_id()), log, timeout)

        def ready(self):
            p = subprocess.run([*_in_cluster_net(), "curl", "-sf", "-o", "/dev/null", "--max-time", "2",
                                f"http://127.0.0.1:{self.health}/readyz"], capture_output=True, timeout=30)
            return p.returncode == 0

    return InClusterNet


@pytest.fixture(scope="module")
def label():
    """The label of the namespaces these managers' webhooks serve."""
    return ("jobset-test/rn-clients", uuid.uuid4().hex[:8])


def labelled(kube, ns, label):
    kube.run("label", "namespace", ns, f"{label[0]}={label[1]}")
    return ns


@pytest.fixture(scope="module")
def kueue(controller, label, tmp_path_factory):
    if not os.access(KUEUE_BIN, os.X_OK):
        pytest.fail(f"Kueue's manager {KUEUE_BIN!r} is not built: hack/cluster build kueue "
                    "(scripts/test realnodes builds it)", pytrace=False)
    tmp = tmp_path_factory.mktemp("kueue")
    controller.run("create", "namespace", cluster_kueue.KUEUE_NS, check=False)
    src = cluster_conftest.go_module_dir("sigs.k8s.io/kueue", os.environ.get("JOBSET_KUEUE_VERSION", "v0.17.0"))
    k = in_cluster_net(cluster_kueue.Kueue)(controller, src, tmp, label)
    try:
        k.install_crds()
        k.register_webhooks(label[1])
        k.start()
        yield k
    finally:
        k.stop()


@pytest.fixture(scope="module")
def trainer(controller, label, tmp_path_factory):
    if not os.access(TRAINER_BIN, os.X_OK):
        pytest.fail(f"Trainer's manager {TRAINER_BIN!r} is not built: hack/cluster build trainer "
                    "(scripts/test realnodes builds it)", pytrace=False)
    tmp = tmp_path_factory.mktemp("trainer")
    src = cluster_conftest.go_module_dir("github.com/kubeflow/trainer/v2", cluster_trainer.VERSION)
    t = in_cluster_net(cluster_trainer.Trainer)(controller, src, tmp, label)
    runtime = f"rn-{label[1]}"
    try:
        t.install_crds()
        t.identity()
        t.certificates()
        t.register_webhooks()
        t.start()
        yield t, runtime
    finally:
        # Trainer keeps a finalizer on a runtime while TrainJobs use it:
        # the TrainJobs go first, then the runtime, while Trainer runs.
        controller.run("delete", f"trainjobs.{GROUP}", "--all", "--all-namespaces", "--timeout=120s", check=False,
                       timeout=150)
        controller.run("delete", "clustertrainingruntime", runtime, "--ignore-not-found", "--timeout=60s",
                       check=False, timeout=90)
        t.stop()


def _node_pod(command, **extra):
    """A busybox pod whose process prints the node it runs on (from the
    kubelet's downward API) before `command`."""
    spec = busybox_pod(["sh", "-c", f'echo "ran on $NODE"; {command}'], **extra)
    spec["containers"][0]["env"] = [{"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}]
    return spec


def _assert_ran_on_real_nodes(kube, ns, name, count, nodes):
    """`count` pods of JobSet `name`, each Succeeded on a real node, its
    container's process ended with exit code 0 and said which node it ran
    on (the kubelet's own answer)."""
    pods = kube.pods(ns, f"jobset.sigs.k8s.io/jobset-name={name}")
    assert len(pods) == count, [(p["metadata"]["name"], p["status"].get("phase")) for p in pods]
    for p in pods:
        pn, node = p["metadata"]["name"], p["spec"].get("nodeName")
        assert p["status"].get("phase") == "Succeeded" and node in nodes, (pn, node, p["status"])
        term = p["status"]["containerStatuses"][0]["state"].get("terminated") or {}
        assert term.get("exitCode") == 0 and term.get("containerID", "").startswith("containerd://"), (pn, term)
        assert kube.logs(ns, pn).splitlines()[:1] == [f"ran on {node}"], (pn, kube.logs(ns, pn))


def test_trainjob_runs_on_real_nodes(trainer, controller, ns, nodes, label):
    """A TrainJob of 2 nodes: Trainer makes its JobSet, our controller runs
    it, its 2 pods run on the real kubelets and exit 0, the JobSet is
    Completed and the TrainJob Complete with our condition's reason."""
    _, runtime = trainer
    labelled(controller, ns, label)
    rspec = cluster_trainer.runtime_spec({})
    pod = rspec["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    pod["spec"] = _node_pod("sleep 1")
    del pod["spec"]["restartPolicy"]  # as Trainer's runtimes: our webhook defaults it
    pod["spec"]["containers"][0]["name"] = "node"  # the container Trainer fills from the TrainJob
    controller.apply({"apiVersion": f"{GROUP}/v1alpha1", "kind": "ClusterTrainingRuntime",
                      "metadata": {"name": runtime}, "spec": rspec})
    controller.apply(cluster_trainer.trainjob("tj", runtime, num_nodes=2), ns)

    def done():
        o = controller.get("jobset", "tj", ns)
        return o if condition(o, "Completed") or condition(o, "Failed") else None

    o = wait_for("the TrainJob's JobSet finished", done, timeout=240)
    assert condition(o, "Completed"), json.dumps(o.get("status"))
    owner = o["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"]) == ("TrainJob", "tj"), owner
    _assert_ran_on_real_nodes(controller, ns, "tj", 2, nodes)
    tj = wait_for("TrainJob tj Complete", lambda: condition(controller.get(f"trainjobs.{GROUP}", "tj", ns),
                                                                "Complete") and
                  controller.get(f"trainjobs.{GROUP}", "tj", ns), timeout=60)
    assert condition(tj, "Complete")["reason"] == condition(o, "Completed")["reason"], tj["status"]
    assert not condition(tj, "Failed"), tj["status"]


def test_kueue_admitted_jobset_runs_on_real_nodes(kueue, controller, ns, nodes, label):
    """A JobSet of a LocalQueue that holds admission: Kueue's webhook
    suspends it at creation, its Workload waits without quota, nothing of
    it runs; once the hold is lifted Kueue admits it, and its 2 pods run on
    the real kubelets to Completed."""
    labelled(controller, ns, label)
    cq = f"rn-{label[1]}"
    controller.apply({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": cq}})
    controller.apply({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": cq},
                      "spec": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
                               "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                                   {"name": cq, "resources": [{"name": "cpu", "nominalQuota": "1"}]}]}]}})
    controller.apply({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                      "metadata": {"name": "lq", "namespace": ns},
                      "spec": {"clusterQueue": cq, "stopPolicy": "Hold"}})
    wait_for(f"ClusterQueue {cq} active", lambda: condition(controller.get("clusterqueues.kueue.x-k8s.io", cq),
                                                             "Active"), timeout=60)
    pod = _node_pod("sleep 1")
    pod["containers"][0]["resources"] = {"requests": {"cpu": "100m"}}
    js = jobset_obj("queued", [rjob("w", 2, pod)])
    js["metadata"]["labels"] = {QUEUE_LABEL: "lq"}
    controller.run("create", "-n", ns, "-f", "-", input=json.dumps(js))
    # Suspended by Kueue's webhook at creation (we did not ask for it).
    assert controller.get("jobset", "queued", ns)["spec"].get("suspend") is True
    wl = wait_for("its Workload queued", lambda: cluster_kueue.workload_of(controller, ns, "queued"), timeout=60)
    wait_for("Suspended=True", lambda: condition(controller.get("jobset", "queued", ns), "Suspended"), timeout=60)
    assert not condition(wl, "QuotaReserved"), wl.get("status")
    assert controller.get("jobs", ns=ns)["items"] == [] and controller.pods(ns) == []
    controller.run("patch", "localqueue.kueue.x-k8s.io", "lq", "-n", ns, "--type=merge", "-p",
                   json.dumps({"spec": {"stopPolicy": "None"}}))

    def done():
        o = controller.get("jobset", "queued", ns)
        return o if condition(o, "Completed") or condition(o, "Failed") else None

    o = wait_for("the admitted JobSet finished", done, timeout=240)
    assert condition(o, "Completed"), json.dumps(o.get("status"))
    assert o["spec"].get("suspend") is False, o["spec"]
    _assert_ran_on_real_nodes(controller, ns, "queued", 2, nodes)
    # Resumed by us once Kueue admitted it (its Suspended condition ours).
    sus = next(c for c in o["status"]["conditions"] if c["type"] == "Suspended")
    assert (sus["status"], sus["reason"]) == ("False", "ResumeJobs"), sus
    wait_for("its Workload Finished",
             lambda: condition(cluster_kueue.workload_of(controller, ns, "queued"), "Finished"), timeout=60)


def test_kueue_flavor_and_node_quarantine(kueue, controller, ns, nodes, label):
    """A JobSet admitted by Kueue to a flavor whose nodeLabels select the
    real nodes (the pod asks for no node itself: Kueue's nodeSelector is
    its only one), with node quarantine: its pod exits 137 on the first
    node in attempt 0, attempt 1's pod carries Kueue's nodeSelector and our
    NotIn term, runs on the other real node, and the JobSet completes after
    one restart, its Workload Finished."""
    labelled(controller, ns, label)
    cq = f"rnq-{label[1]}"
    flavor_labels = {"jobset-test/real-node": "true"}
    controller.apply({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": cq},
                      "spec": {"nodeLabels": flavor_labels}})
    controller.apply({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": cq},
                      "spec": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
                               "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                                   {"name": cq, "resources": [{"name": "cpu", "nominalQuota": "1"}]}]}]}})
    controller.apply({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                      "metadata": {"name": "lq", "namespace": ns}, "spec": {"clusterQueue": cq}})
    wait_for(f"ClusterQueue {cq} active", lambda: condition(controller.get("clusterqueues.kueue.x-k8s.io", cq),
                                                             "Active"), timeout=60)
    pod = quarantine_pod(nodes[0], node_selector=None)
    pod["containers"][0]["resources"] = {"requests": {"cpu": "100m"}}
    obj = quarantine_jobset("kq", pod)
    obj["metadata"]["labels"] = {QUEUE_LABEL: "lq"}
    controller.run("create", "-n", ns, "-f", "-", input=json.dumps(obj))
    first, second, js = run_and_check(controller, ns, "kq", nodes)
    # Kueue admitted it (it was suspended at creation) and its flavor's
    # nodeSelector is on the running attempt's pod beside our requirement.
    assert js["spec"].get("suspend") is False, js["spec"]
    pods = controller.pods(ns, "jobset.sigs.k8s.io/jobset-name=kq,jobset.sigs.k8s.io/restart-attempt=1")
    assert len(pods) == 1, [p["metadata"]["name"] for p in pods]
    spec = pods[0]["spec"]
    assert spec.get("nodeSelector") == flavor_labels, spec.get("nodeSelector")
    terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert all({"key": "metadata.name", "operator": "NotIn", "values": [first]} in t["matchFields"] for t in terms), \
        terms
    assert spec["nodeName"] == second and pods[0]["status"].get("phase") == "Succeeded", pods[0]["status"]
    wait_for("its Workload Finished",
             lambda: condition(cluster_kueue.workload_of(controller, ns, "kq"), "Finished"), timeout=60)
    print(f"\nKueue-admitted: attempt 0 on {first} exited 137; attempt 1 on {second} "
          f"(nodeSelector {spec['nodeSelector']}, NotIn [{first}])")
