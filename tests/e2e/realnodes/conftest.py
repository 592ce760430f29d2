"""Fixtures for the real-node tests (scripts/test realnodes, docs/cluster.md
"Real nodes"): a cluster from `hack/cluster up --real-nodes N` (env from
`hack/cluster env`, JOBSET_TEST_REAL_NODES names the nodes), and the
controller installed from deploy/ as users install it - `kubectl apply -k`,
a Deployment on a real node, its webhooks reached through their Service -
with its image assembled offline from build/'s binaries and their shared
libraries (`hack/cluster image bundle`).

Every test here is also watched for the one-hostname invariant (no two pods
of one hostname from different restart attempts running at once): the
session-wide pod watch of tests/e2e/cluster/hostnames.py.
"""
import importlib.util
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
CLUSTER = ROOT / "hack" / "cluster"
BUILD = Path(os.environ.get("JOBSET_TEST_BUILD_DIR", ROOT / "build"))
CONTROLLER_IMAGE = "jobset-controller:0.1.0"  # deploy/kustomization.yaml's
BUSYBOX = "localhost/jobset-test/busybox:1"
SYSTEM_NS = "jobset-system"
# Real nodes only: a cluster may have kwok nodes beside them (up --nodes N --real-nodes M).
REAL = {"type": "real"}

sys.path.insert(0, str(ROOT / "tests" / "e2e" / "cluster"))
import hostnames  # noqa: E402  tests/e2e/cluster/hostnames.py: the one-hostname watch

# The cluster tier's conftest, as a module of another name (this file is
# "conftest" here): its wait_for and its kubectl wrapper.
_spec = importlib.util.spec_from_file_location("cluster_conftest", ROOT / "tests" / "e2e" / "cluster" / "conftest.py")
cluster_conftest = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cluster_conftest)
wait_for = cluster_conftest.wait_for


class Kube(cluster_conftest.Kube):
    """The cluster tier's kubectl wrapper; get() also for cluster-scoped
    objects and whole lists, and pods and logs."""

    def apply(self, obj, ns=None):
        docs = obj if isinstance(obj, list) else [obj]
        return super().apply("\n---\n".join(json.dumps(d) for d in docs), ns)

    def get(self, kind, name=None, ns=None, selector=None):
        args = ["get", kind] + ([name] if name else []) + (["-n", ns] if ns else []) + \
            (["-l", selector] if selector else []) + ["-o", "json"]
        p = self.run(*args, check=False, timeout=120)
        return json.loads(p.stdout) if p.returncode == 0 else None

    def pods(self, ns, selector=None):
        return (self.get("pods", ns=ns, selector=selector) or {}).get("items", [])

    def logs(self, ns, pod, container=None, previous=False):
        args = ["logs", "-n", ns, pod] + (["-c", container] if container else []) + (["-p"] if previous else [])
        p = self.run(*args, check=False)
        return p.stdout if p.returncode == 0 else ""


def hc(*args, check=True, timeout=600):
    p = subprocess.run([str(CLUSTER), *args], capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise AssertionError(f"hack/cluster {' '.join(args)} failed: {p.stderr[-3000:]}")
    return p


def real_nodes():
    names = [n for n in os.environ.get("JOBSET_TEST_REAL_NODES", "").split(",") if n]
    return names


@pytest.fixture(scope="session")
def kube():
    if not os.environ.get("JOBSET_TEST_KUBECONFIG") or len(real_nodes()) < 2:
        pytest.fail("these tests need a cluster with >= 2 real nodes: hack/cluster up --real-nodes 2 and "
                    "eval \"$(hack/cluster env)\" (scripts/test realnodes does both)", pytrace=False)
    return Kube()


@pytest.fixture(scope="session")
def nodes():
    return real_nodes()


@pytest.fixture(scope="session")
def controller(kube):
    """The controller from deploy/ (CRD, RBAC, webhooks, Deployment), its
    image bundled from build/jobset-controller (and the in-place restart
    agent, as the Dockerfile's image has it) and loaded into every node."""
    ctl, agent = BUILD / "jobset-controller", BUILD / "in-place-restart-agent"
    for b in (ctl, agent):
        assert b.exists(), f"{b} is missing: build first (cmake --build build)"
    hc("image", "bundle", CONTROLLER_IMAGE, "--entrypoint", "/usr/local/bin/jobset-controller",
       f"{ctl}=/usr/local/bin/jobset-controller", f"{agent}=/usr/local/bin/in-place-restart-agent")
    kube.run("apply", "--server-side", "--force-conflicts", "-k", str(ROOT / "deploy"))
    # The one flag a user adds for in-place restart (docs/in-place-restart.md),
    # hang detection (docs/progress-deadline.md) and node quarantine
    # (docs/node-quarantine.md): test_inplace_restart.py, test_progress.py
    # and test_quarantine.py need the gates, the other tests do not mind them
    # (no JobSet of theirs sets a progress deadline or a quarantine rule: no
    # watcher, no watch, no failed-pod LIST).
    kube.run("patch", "deployment", "jobset-controller-manager", "-n", SYSTEM_NS, "--type=json", "-p",
             json.dumps([{"op": "add", "path": "/spec/template/spec/containers/0/args/-",
                          "value": "--feature-gates=InPlaceRestart=true,ProgressDeadline=true,NodeQuarantine=true"}]))
    if kube.get("nodes", selector="type=kwok")["items"]:
        # A mixed cluster: the controller's pod must not land on a fake node.
        kube.run("patch", "deployment", "jobset-controller-manager", "-n", SYSTEM_NS, "--type=merge", "-p",
                 json.dumps({"spec": {"template": {"spec": {"nodeSelector": REAL}}}}))

    def ready():
        # The rollout of the patched template done, not merely a replica
        # available: the first one (without the gates) may still serve the
        # webhooks while the patched one starts.
        d = kube.get("deployment", "jobset-controller-manager", SYSTEM_NS)
        st = (d or {}).get("status") or {}
        want = (d or {}).get("spec", {}).get("replicas", 1)
        return d and st.get("observedGeneration", 0) >= d["metadata"]["generation"] and \
            st.get("updatedReplicas", 0) == want and st.get("availableReplicas", 0) >= want and \
            st.get("replicas", 0) == want

    try:
        wait_for("the controller's Deployment available", ready, timeout=180)
        # The webhooks answer (their caBundle injected, the Service's endpoint
        # reached by the API server): a dry-run create is admitted.
        probe = jobset_obj("probe", [rjob("w", 1, busybox_pod(["true"]))])

        wait_for("the webhooks to admit a JobSet", lambda: kube.run(
            "create", "--dry-run=server", "-n", "default", "-f", "-", input=json.dumps(probe),
            check=False).returncode == 0, timeout=120)
    except AssertionError:
        pods = kube.pods(SYSTEM_NS)
        detail = json.dumps([p.get("status") for p in pods])[-3000:]
        logs = "".join(kube.logs(SYSTEM_NS, p["metadata"]["name"]) for p in pods)[-3000:]
        raise AssertionError(f"controller not ready: {detail}\n{logs}")
    return kube


@pytest.fixture
def ns(kube):
    name = f"rn-{uuid.uuid4().hex[:8]}"
    kube.run("create", "namespace", name)
    # ServiceAccount admission is on (pods get tokens): wait for "default".
    wait_for(f"serviceaccount default in {name}", lambda: kube.get("serviceaccount", "default", name))
    yield name
    kube.run("delete", "namespace", name, "--wait=false", check=False)


_watch = []


@pytest.fixture(autouse=True)
def one_hostname_invariant(request):
    """Fails a test during which two pods of one hostname from different
    restart attempts ran at once (tests/e2e/cluster/hostnames.py)."""
    if "kube" not in request.fixturenames:
        yield
        return
    if not _watch:
        _watch.append(hostnames.HostnameWatch().start())
    w = _watch[0]
    t0 = time.monotonic()
    yield
    w.settle()
    problems = [hostnames.describe(v) for v in w.check.since(t0)]
    if problems:
        pytest.fail("one-hostname invariant violated:\n" + "\n".join(problems), pytrace=False)


# ------------------------------------------------------------ object builders

def busybox_pod(command, grace=2, **extra):
    spec = {"restartPolicy": "Never", "terminationGracePeriodSeconds": grace, "nodeSelector": REAL,
            "containers": [{"name": "main", "image": BUSYBOX, "imagePullPolicy": "Never",
                            "command": command}]}
    spec.update(extra)
    return spec


def rjob(name, replicas, pod_spec, parallelism=1, completions=1, backoff=0, **job_extra):
    job = {"parallelism": parallelism, "completions": completions, "backoffLimit": backoff,
           "completionMode": "Indexed", "template": {"spec": pod_spec}}
    job.update(job_extra)
    return {"name": name, "replicas": replicas, "template": {"spec": job}}


def jobset_obj(name, rjobs, **spec):
    s = {"replicatedJobs": rjobs}
    s.update(spec)
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": name}, "spec": s}


def condition(obj, ctype):
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == ctype and c.get("status") == "True":
            return c
    return None
