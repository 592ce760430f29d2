"""In-place restart (KEP-467, SPEC §11.16 and §13; docs/in-place-restart.md)
on hack/cluster: the controller with --feature-gates=InPlaceRestart=true and
our in-place-restart-agent binary, one agent process per pod.

kwok pods have no containers, so this test stands in for the kubelet: each
pod's "agent sidecar" is a real in-place-restart-agent process started here
(out of cluster, $KUBECONFIG, NAMESPACE) with the KEP's least privilege (a
ServiceAccount that may patch pods and read JobSets in the namespace), and
restarting a pod in place is
starting its agent process again, the pod object untouched - what the
kubelet does when the agent exits with the code its restartPolicyRules map
to RestartAllContainers. The barrier is the agent's startup-probe endpoint,
polled here as the kubelet's startupProbe would. Every wait polls a
condition with a deadline.
"""
import json
import os
import signal
import subprocess
import urllib.error
import urllib.request

import pytest

from conftest import _free_port, condition, mint_token, wait_for
from webhook_common import binary

ATTEMPT = "jobset.sigs.k8s.io/in-place-restart-attempt"
EXIT_CODE = 42
LONG = {"jobset-test/run-for": "1h"}


def inplace_jobset(name, replicas=2, pods=2, max_restarts=3, strategy="InPlaceRestart", annotations=None):
    tmpl = {"metadata": {"annotations": dict(LONG)},
            "spec": {"restartPolicy": "Never",
                     "containers": [{"name": "worker", "image": "busybox", "command": ["true"]}]}}
    rj = {"name": "w", "replicas": replicas,
          "template": {"spec": {"parallelism": pods, "completions": pods, "backoffLimit": 2147483647,
                                "podReplacementPolicy": "Failed", "template": tmpl}}}
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": name, "annotations": dict(annotations or {})},
            "spec": {"failurePolicy": {"maxRestarts": max_restarts, "restartStrategy": strategy},
                     "replicatedJobs": [rj]}}


AGENT_SA = "jobset-in-place-restart"


def agent_kubeconfig(kube, ns, path):
    """A kubeconfig for the agents with the KEP's least privilege: a
    ServiceAccount of `ns` that may patch pods and read JobSets there, and
    nothing else (docs/in-place-restart.md)."""
    kube.run("create", "serviceaccount", AGENT_SA, "-n", ns)
    kube.apply({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                "metadata": {"name": AGENT_SA, "namespace": ns},
                "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["patch"]},
                          {"apiGroups": ["jobset.x-k8s.io"], "resources": ["jobsets"],
                           "verbs": ["get", "list", "watch"]}]}, ns)
    kube.run("create", "rolebinding", AGENT_SA, "-n", ns, f"--role={AGENT_SA}",
             f"--serviceaccount={ns}:{AGENT_SA}")
    token = mint_token(kube, AGENT_SA, ns)
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "agent",
        "clusters": [{"name": "c", "cluster": {"server": os.environ["JOBSET_TEST_SERVER"],
                                                "certificate-authority": os.environ["JOBSET_TEST_CA"]}}],
        "users": [{"name": "agent", "user": {"token": token}}],
        "contexts": [{"name": "agent", "context": {"cluster": "c", "user": "agent", "namespace": ns}}]}))
    path.chmod(0o600)
    return path


class Agent:
    """One in-place-restart-agent process for one pod (sidecar mode)."""

    def __init__(self, ns, jobset, pod, logdir, kubeconfig, **env):
        self.ns, self.jobset, self.pod, self.logdir = ns, jobset, pod, logdir
        self.kubeconfig = kubeconfig
        self.extra = env
        self.port = _free_port()
        self.proc = None
        self.n = 0

    def start(self):
        self.n += 1
        env = dict(os.environ, KUBECONFIG=str(self.kubeconfig), NAMESPACE=self.ns,
                   JOBSET_NAME=self.jobset, POD_NAME=self.pod, STARTUP_PROBE_PORT=str(self.port),
                   IN_PLACE_RESTART_EXIT_CODE=str(EXIT_CODE), **self.extra)
        if "WORKER_COMMAND" in self.extra:
            del env["STARTUP_PROBE_PORT"]
        self.log = self.logdir / f"agent-{self.pod}-{self.n}.log"
        with open(self.log, "w") as out:
            self.proc = subprocess.Popen([str(binary("in-place-restart-agent", "JOBSET_AGENT_BIN"))], env=env,
                                         stdout=out, stderr=subprocess.STDOUT)
        return self

    def exited(self):
        return self.proc.poll()

    def barrier_lifted(self):
        """The startup probe's view: 200 on the default path."""
        if self.proc.poll() is not None:
            return False
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/barrier-is-down", timeout=2) as r:
                return r.status == 200
        except (urllib.error.URLError, OSError):
            return False

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture
def gated(controller):
    """The session controller with the InPlaceRestart gate on (restarted
    with the defaults by the next test's `ctl`)."""
    controller.stop()
    controller.custom = True
    controller.start("--feature-gates=InPlaceRestart=true")
    return controller


def pods_of(kube, ns, name):
    return [p for p in kube.list("pods", ns, f"jobset.sigs.k8s.io/jobset-name={name}")
            if not p["metadata"].get("deletionTimestamp")]


def status(kube, name, ns):
    return (kube.jobset(name, ns) or {}).get("status") or {}


def test_in_place_restart_bookkeeping_with_agents(kube, gated, ns, tmp_path):
    kube.create(inplace_jobset("ipr"), ns)
    pods = wait_for("4 pods Running", lambda: (lambda ps: ps if len(ps) == 4 and all(
        p["status"].get("phase") == "Running" for p in ps) else None)(pods_of(kube, ns, "ipr")), 90)
    uids = {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods}
    job_uids = {j["metadata"]["name"]: j["metadata"]["uid"] for j in kube.jobs(ns, "ipr")}
    kc = agent_kubeconfig(kube, ns, tmp_path / "agent.kubeconfig")
    agents = {n: Agent(ns, "ipr", n, tmp_path, kc) for n in uids}
    try:
        # Start-up: nobody has a current attempt yet, every agent writes 0
        # and waits at its barrier until the controller makes 0 current.
        for a in agents.values():
            a.start()
        wait_for("every pod at attempt 0", lambda: all(
            (p["metadata"].get("annotations") or {}).get(ATTEMPT) == "0" for p in pods_of(kube, ns, "ipr")), 60)
        wait_for("currentInPlaceRestartAttempt 0", lambda: status(kube, "ipr", ns).get(
            "currentInPlaceRestartAttempt") == 0, 60)
        wait_for("every barrier lifted", lambda: all(a.barrier_lifted() for a in agents.values()), 30)
        assert "previousInPlaceRestartAttempt" not in status(kube, "ipr", ns)

        # One pod's worker fails and the kubelet restarts that pod in
        # place: its agent starts again and writes current + 1 = 1.
        first = sorted(agents)[0]
        agents[first].proc.kill()
        agents[first].proc.wait()
        agents[first].start()
        # The controller marks attempt 0 outdated; the other agents exit
        # with the restart exit code (the kubelet would restart their pods).
        wait_for("previousInPlaceRestartAttempt 0", lambda: status(kube, "ipr", ns).get(
            "previousInPlaceRestartAttempt") == 0, 60)
        others = [a for n, a in agents.items() if n != first]
        wait_for("the outdated agents exiting", lambda: all(a.exited() is not None for a in others), 60)
        assert [a.exited() for a in others] == [EXIT_CODE] * 3, [a.log.read_text()[-500:] for a in others]
        assert not agents[first].barrier_lifted(), "the restarted pod must wait for the others"
        for a in others:
            a.start()
        wait_for("every pod at attempt 1", lambda: all(
            (p["metadata"].get("annotations") or {}).get(ATTEMPT) == "1" for p in pods_of(kube, ns, "ipr")), 60)
        wait_for("currentInPlaceRestartAttempt 1", lambda: status(kube, "ipr", ns).get(
            "currentInPlaceRestartAttempt") == 1, 60)
        wait_for("every barrier lifted again", lambda: all(a.barrier_lifted() for a in agents.values()), 30)

        # In place: the same pods and Jobs, no JobSet restart.
        st = status(kube, "ipr", ns)
        assert st.get("restarts", 0) == 0 and st["previousInPlaceRestartAttempt"] == 0, st
        assert {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods_of(kube, ns, "ipr")} == uids
        assert {j["metadata"]["name"]: j["metadata"]["uid"] for j in kube.jobs(ns, "ipr")} == job_uids
        assert not condition(kube.jobset("ipr", ns), "Failed")

        # An attempt beyond maxRestarts (3) fails the JobSet.
        for a in agents.values():
            a.stop()
        kube.run("annotate", "pod", "-n", ns, first, f"{ATTEMPT}=4", "--overwrite")
        failed = wait_for("Failed ReachedMaxRestarts", lambda: condition(kube.jobset("ipr", ns), "Failed"), 60)
        assert failed["reason"] == "ReachedMaxRestarts", failed
    finally:
        for a in agents.values():
            a.stop()


def test_agent_bypass_and_no_bookkeeping_without_in_place(kube, gated, ns, tmp_path):
    """A JobSet that restarts by recreating: the agent lifts its barrier at
    once and writes nothing; the controller keeps no in-place status."""
    kube.create(inplace_jobset("rec", replicas=1, pods=1, strategy="Recreate"), ns)
    pod = wait_for("the pod Running", lambda: (lambda ps: ps[0] if len(ps) == 1 and ps[0]["status"].get(
        "phase") == "Running" else None)(pods_of(kube, ns, "rec")), 90)
    a = Agent(ns, "rec", pod["metadata"]["name"], tmp_path, agent_kubeconfig(kube, ns, tmp_path / "kc")).start()
    try:
        wait_for("the barrier lifted", a.barrier_lifted, 30)
        p = kube.get("pod", pod["metadata"]["name"], ns)
        assert ATTEMPT not in (p["metadata"].get("annotations") or {})
        st = status(kube, "rec", ns)
        assert "currentInPlaceRestartAttempt" not in st and "previousInPlaceRestartAttempt" not in st, st
    finally:
        a.stop()


def test_agent_main_container_mode(kube, gated, ns, tmp_path):
    """WORKER_COMMAND: the agent runs the worker once the barrier lifts and
    exits with its status; in place, only at the current attempt."""
    kube.create(inplace_jobset("one", replicas=1, pods=1), ns)
    pod = wait_for("the pod Running", lambda: (lambda ps: ps[0] if len(ps) == 1 and ps[0]["status"].get(
        "phase") == "Running" else None)(pods_of(kube, ns, "one")), 90)
    kc = agent_kubeconfig(kube, ns, tmp_path / "kc")
    a = Agent(ns, "one", pod["metadata"]["name"], tmp_path, kc,
              WORKER_COMMAND="echo worker ran at attempt $ATTEMPT; exit 7", ATTEMPT="x").start()
    try:
        wait_for("the agent to exit with the worker's status", lambda: a.exited() is not None, 60)
        assert a.exited() == 7, a.log.read_text()
        assert "worker ran at attempt x" in a.log.read_text()
        assert status(kube, "one", ns).get("currentInPlaceRestartAttempt") == 0
    finally:
        a.stop()


def test_agent_refuses_bad_configuration(tmp_path):
    agent = str(binary("in-place-restart-agent", "JOBSET_AGENT_BIN"))
    base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "NAMESPACE": "x"}
    cases = [({}, "JOBSET_NAME must be set"),
             ({"JOBSET_NAME": "j"}, "POD_NAME must be set"),
             ({"JOBSET_NAME": "j", "POD_NAME": "p", "IN_PLACE_RESTART_EXIT_CODE": "x"}, "IN_PLACE_RESTART_EXIT_CODE"),
             ({"JOBSET_NAME": "j", "POD_NAME": "p", "WORKER_COMMAND": "true", "STARTUP_PROBE_PORT": "1"},
              "WORKER_COMMAND cannot be set with")]
    for env, want in cases:
        p = subprocess.run([agent], env={**base, **env}, capture_output=True, text=True, timeout=10)
        assert p.returncode == 1 and want in p.stderr, (env, p.returncode, p.stderr)
