"""Container mode (issue 12): `jobset run --runtime podman`. The image is
built offline from a FROM scratch Containerfile holding one static program
(ctrprobe.c), so nothing is pulled; podman uses the test-only
containers.conf beside this file (runc, cgroupfs, no default ulimits)."""
import hashlib
import json
import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest
import yaml

from conftest import wait_for

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module", autouse=True)
def podman_env():
    old = os.environ.get("CONTAINERS_CONF")
    os.environ["CONTAINERS_CONF"] = str(HERE / "containers.conf")
    yield
    if old is None:
        del os.environ["CONTAINERS_CONF"]
    else:
        os.environ["CONTAINERS_CONF"] = old


@pytest.fixture(scope="module")
def image(tmp_path_factory, podman_env):
    """localhost/jobset-probe:<hash of ctrprobe.c>, built once per change."""
    if not shutil.which("podman"):
        pytest.fail("podman is not installed; scripts/setup-debian.sh installs it")
    src = HERE / "ctrprobe.c"
    tag = "localhost/jobset-probe:" + hashlib.sha256(src.read_bytes()).hexdigest()[:12]
    if subprocess.run(["podman", "image", "exists", tag]).returncode == 0:
        return tag
    ctx = tmp_path_factory.mktemp("image")
    subprocess.run(["gcc", "-static", "-O2", "-o", str(ctx / "ctrprobe"), str(src)], check=True,
                   capture_output=True)
    (ctx / "Containerfile").write_text(
        "FROM scratch\nCOPY ctrprobe /ctrprobe\nENV PATH=/ IMAGE_VAR=from-image\nWORKDIR /\n"
        'ENTRYPOINT ["/ctrprobe"]\nCMD ["info", "from-cmd"]\n')
    subprocess.run(["podman", "build", "-q", "-t", tag, str(ctx)], check=True, capture_output=True)
    return tag


def pod_spec(containers, **extra):
    return dict({"restartPolicy": "Never", "containers": containers}, **extra)


def rjob(name, spec, completions=1, **job):
    return {"name": name, "template": {"spec": dict(
        {"completions": completions, "parallelism": completions, "backoffLimit": 0, "template": {"spec": spec}},
        **job)}}


def jobset(*rjobs, name="ct", docs=(), **spec):
    js = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": name},
          "spec": dict({"replicatedJobs": list(rjobs)}, **spec)}
    return yaml.safe_dump_all([*docs, js], sort_keys=False)


def leftovers(run_dir):
    """Pods, containers and networks of podman that this run left: those
    labelled with its network's name (state.json `runner.containers`), so
    that other runs on the machine at the same time are not counted. A run
    that recorded no network made nothing in podman."""
    state = json.loads((Path(run_dir) / "state.json").read_text())
    net = ((state.get("runner") or {}).get("containers") or {}).get("network")
    if not net:
        return []
    out = []
    for what in (["pod", "ps", "-q"], ["network", "ls", "-q"], ["ps", "-aq"]):
        r = subprocess.run(["podman", *what, "--filter", f"label=io.jobset.run={net}"], capture_output=True, text=True)
        out += r.stdout.split()
    return out


def test_pods_are_containers_of_their_images(run, image):
    server = pod_spec([{"name": "srv", "image": image, "args": ["serve", "8080"]}])
    client = pod_spec(
        [{"name": "dial", "image": image, "command": ["/ctrprobe", "dial", "ct-server-0-0.ct", "8080"]},
         {"name": "info", "image": image, "args": ["info", "$(POD_IP)", "$$(kept)"], "workingDir": "/etc",
          "env": [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                  {"name": "GREETING", "value": "hi-$(POD_IP)"}]},
         {"name": "cmd", "image": image}],
        initContainers=[{"name": "first", "image": image, "command": ["/ctrprobe", "write", "/proc/self/fd/1", "init ran"]}])
    r = run(jobset(rjob("server", server), rjob("client", client)), "--runtime", "podman", timeout=180)
    assert r.rc == 0, r.stdout + r.stderr + r.events()
    assert r.logs("ct-client-0-0", "dial").strip() == "got: hello from ct-server-0-0"
    assert r.logs("ct-client-0-0", "first").strip() == "init ran"
    info = r.logs("ct-client-0-0", "info").splitlines()
    ip = "10." + info[[l.startswith("env=POD_IP=") for l in info].index(True)].split("=10.")[1]
    assert "hostname=ct-client-0-0" in info and "cwd=/etc" in info
    assert info[info.index("arg=/ctrprobe") + 1:][:3] == ["arg=info", "arg=" + ip, "arg=$(kept)"]
    assert f"env=GREETING=hi-{ip}" in info and "env=JOB_COMPLETION_INDEX=0" in info
    assert "env=IMAGE_VAR=from-image" in info and "env=PATH=/" in info  # the image's PATH, not ours
    # No command and no args: the image's ENTRYPOINT and CMD.
    assert "arg=from-cmd" in r.logs("ct-client-0-0", "cmd").splitlines()
    assert "Normal Runtime jobset/ct: pods are podman pods" in r.events()
    assert leftovers(r.dir) == []


def test_exit_code_reaches_the_job_controller(run, image):
    spec = pod_spec([{"name": "c", "image": image, "args": ["exit", "3"]}])
    js = jobset(rjob("w", spec, podFailurePolicy={"rules": [
        {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [3]}}]}))
    r = run(js, "--runtime", "podman", timeout=120)
    assert r.rc == 1, r.stdout + r.stderr
    job = [j for j in r.jobs if j["metadata"]["name"] == "ct-w-0"][0]
    failed = [c for c in job["status"]["conditions"] if c["type"] == "Failed"][0]
    assert failed["reason"] == "PodFailurePolicy", failed
    assert "exit code 3" in failed["message"], failed
    assert leftovers(r.dir) == []


def test_volumes_in_containers(run, image, tmp_path):
    host = tmp_path / "host"
    host.mkdir()
    (host / "in").write_text("from the host\n")
    cfg = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": {"k": "v1"}}
    spec = pod_spec(
        [{"name": "c", "image": image, "args": ["cat", "/shared/note"],
          "volumeMounts": [{"name": "scratch", "mountPath": "/shared"}]},
         {"name": "h", "image": image, "args": ["cat", "/host/in"],
          "volumeMounts": [{"name": "h", "mountPath": "/host", "readOnly": True}]},
         {"name": "m", "image": image, "args": ["cat", "/cfg/k"],
          "volumeMounts": [{"name": "cfg", "mountPath": "/cfg"}]},
         {"name": "p", "image": image, "args": ["write", "/data/out", "kept"],
          "volumeMounts": [{"name": "claim", "mountPath": "/data"}]}],
        initContainers=[{"name": "fill", "image": image, "args": ["write", "/shared/note", "shared by the pod"],
                         "volumeMounts": [{"name": "scratch", "mountPath": "/shared"}]}],
        volumes=[{"name": "scratch", "emptyDir": {}}, {"name": "h", "hostPath": {"path": str(host)}},
                 {"name": "cfg", "configMap": {"name": "cfg"}},
                 {"name": "claim", "persistentVolumeClaim": {"claimName": "data"}}])
    r = run(jobset(rjob("w", spec), docs=[cfg]), "--runtime", "podman", timeout=120)
    assert r.rc == 0, r.stdout + r.stderr + r.events()
    assert r.logs("ct-w-0-0", "c").strip() == "shared by the pod"
    assert r.logs("ct-w-0-0", "h").strip() == "from the host"
    assert r.logs("ct-w-0-0", "m").strip() == "v1"
    assert (r.dir / "volumes" / "data" / "out").read_text() == "kept\n"


def test_stop_sends_sigterm_within_the_grace_period(run, image):
    """The JobSet completes when `quick` does (successPolicy Any), once it
    reached `waiter`; the still running `waiter` is stopped: SIGTERM reaches
    it through the client, well within its grace period."""
    quick = pod_spec([{"name": "c", "image": image, "args": ["dial", "ct-waiter-0-0.ct", "9000"]}])
    waiter = pod_spec([{"name": "c", "image": image, "args": ["term", "9000"]}], terminationGracePeriodSeconds=60)
    js = jobset(rjob("quick", quick), rjob("waiter", waiter),
                successPolicy={"operator": "Any", "targetReplicatedJobs": ["quick"]})
    r = run(js, "--runtime", "podman", timeout=50)
    assert r.rc == 0, r.stdout + r.stderr + r.events()
    assert r.logs("ct-quick-0-0", "c").strip() == "got: ready"
    assert r.logs("ct-waiter-0-0", "c").splitlines() == ["waiting", "got SIGTERM"]
    assert leftovers(r.dir) == []


def test_images_are_never_pulled_without_consent(run, image):
    spec = pod_spec([{"name": "c", "image": "localhost/jobset-absent:none"}])
    r = run(jobset(rjob("w", spec)), "--runtime", "podman")
    assert r.rc == 2, r.stdout + r.stderr
    assert "image 'localhost/jobset-absent:none'" in r.stderr and "--pull missing" in r.stderr, r.stderr
    assert not r.dir.exists()
    r = run(jobset(rjob("w", spec)), "--runtime", "podman", "--pull", "missing")
    assert r.rc == 2 and "podman pull failed" in r.stderr, r.stderr
    r = run(jobset(rjob("w", spec)), "--runtime", "rkt")
    assert r.rc == 2 and "--runtime takes process, podman or docker" in r.stderr


def attempt_spec(image, code, linger_ms):
    """A pod that fails (code != 0) or lingers after SIGTERM in restart
    attempt 0, and succeeds at once in any later attempt."""
    env = [{"name": "ATTEMPT", "valueFrom": {"fieldRef": {
        "fieldPath": "metadata.labels['jobset.sigs.k8s.io/restart-attempt']"}}}]
    return pod_spec([{"name": "c", "image": image, "env": env,
                      "args": ["attempt", "$(ATTEMPT)", str(code), str(linger_ms)]}],
                    terminationGracePeriodSeconds=30)


def podman_wrapper(tmp_path, monkeypatch, prelude):
    """Put first on PATH a `podman` that runs the shell `prelude` (fault
    injection), then the real podman."""
    real = shutil.which("podman")
    d = tmp_path / "podman-bin"
    d.mkdir()
    (d / "podman").write_text(f'#!/bin/sh\n{prelude}\nexec {real} "$@"\n')
    (d / "podman").chmod(0o755)
    monkeypatch.setenv("PATH", f"{d}:{os.environ['PATH']}")


def fail_once(tmp_path, monkeypatch, command):
    """podman fails `command` (its first two words) once, with exit code
    125 and an error of its own, as if its IPAM or OCI runtime failed.
    Returns the file that says it did."""
    once = tmp_path / "failed-once"
    podman_wrapper(tmp_path, monkeypatch,
                   f'if [ "$1 $2" = "{command}" ] && [ ! -e {once} ]; then\n'
                   f'  : > {once}; echo "Error: IPAM error: injected" >&2; exit 125\nfi')
    return once


@pytest.fixture
def slow_pod_rm(tmp_path, monkeypatch):
    """A `podman` first on PATH that takes 2 s longer to remove a pod, as a
    loaded machine may: the old pod then holds its address for a while
    after its last container is gone, every time (fault injection, not a
    wait)."""
    podman_wrapper(tmp_path, monkeypatch, '[ "$1 $2" = "pod rm" ] && sleep 2')


def test_whole_set_restart_waits_for_the_old_pods_addresses(run, image, slow_pod_rm):
    """Issue 24 item 7: a restart once the failing pod is gone, while the
    other two still stop (1.5 s after their SIGTERM). The new pod at each
    position gets the address its old pod held only once the old pod (and
    its infra container, which holds the address) is removed: no IPAM
    error, no second restart, which maxRestarts 1 would refuse."""
    js = jobset(rjob("fail", attempt_spec(image, 1, 0)), rjob("linger", attempt_spec(image, 0, 1500), completions=2),
                failurePolicy={"maxRestarts": 1})
    r = run(js, "--runtime", "podman", timeout=180)
    assert r.rc == 0, r.stdout + r.stderr + r.events()
    assert r.status["restarts"] == 1, r.events()
    assert r.condition("Completed"), r.status
    # It waited for the address: no attempt to make the pod failed.
    assert "already allocated" not in r.events() and "FailedCreatePodSandBox" not in r.events(), r.events()
    for pod in ("ct-linger-0-0", "ct-linger-0-1", "ct-fail-0-0"):
        assert "attempt 1: done" in r.logs(pod, "c").splitlines(), r.events()
    assert leftovers(r.dir) == []


def test_a_runtime_error_making_a_pod_is_retried_not_counted(run, image, tmp_path, monkeypatch):
    """Issue 24 item 7: the runtime failing to make a pod (here the first
    `podman pod start`, as an IPAM error would) is the runtime's error, not
    the workload's: the pod stays pending and is made again after the
    back-off (Warning FailedCreatePodSandBox); with backoffLimit 0 and no
    restarts allowed, the JobSet still completes."""
    once = fail_once(tmp_path, monkeypatch, "pod start")
    r = run(jobset(rjob("w", pod_spec([{"name": "c", "image": image, "args": ["exit", "0"]}]))),
            "--runtime", "podman", "--backoff-ms", "100", timeout=120)
    assert r.rc == 0, r.stdout + r.stderr + r.events()
    assert once.exists()
    assert "Warning FailedCreatePodSandBox pod/ct-w-0-0-" in r.events(), r.events()
    assert "IPAM error: injected" in r.events()
    assert r.status.get("restarts", 0) == 0 and r.condition("Completed"), r.status
    pods = [p for p in r.pods if p["metadata"]["name"].startswith("ct-w-0-0")]
    assert [p["status"]["phase"] for p in pods] == ["Succeeded"], pods
    assert leftovers(r.dir) == []


def test_a_runtime_error_creating_a_container_is_retried_not_counted(run, image, tmp_path, monkeypatch):
    """Issue 24 item 7: `podman run` exiting 125 before the container ran
    (no pidfile: podman's own error) is retried after the back-off (Warning
    CreateContainerError), not counted: backoffLimit 0 still completes."""
    once = fail_once(tmp_path, monkeypatch, "run --rm")
    spec = pod_spec([{"name": "c", "image": image, "args": ["exit", "0"]}],
                    initContainers=[{"name": "i", "image": image, "args": ["exit", "0"]}])
    r = run(jobset(rjob("w", spec)), "--runtime", "podman", "--backoff-ms", "100", timeout=120)
    assert r.rc == 0, r.stdout + r.stderr + r.events()
    assert once.exists()
    assert "Warning CreateContainerError pod/ct-w-0-0-" in r.events(), r.events()
    assert r.pod("ct-w-0-0")["status"]["phase"] == "Succeeded", r.events()
    assert leftovers(r.dir) == []


def test_exit_code_125_of_a_container_that_ran_is_its_own(run, image):
    """The runtime's error code, 125, from a container that ran (podman
    wrote its pidfile) is the workload's exit code, a failure as any."""
    r = run(jobset(rjob("x", pod_spec([{"name": "c", "image": image, "args": ["exit", "125"]}]))),
            "--runtime", "podman", timeout=120)
    assert r.rc == 1, r.stdout + r.stderr + r.events()
    assert "Warning Failed pod/ct-x-0-0-" in r.events() and "c: exit code 125" in r.events(), r.events()
    assert "CreateContainerError" not in r.events()
    assert leftovers(r.dir) == []


def of_run(network):
    """Pods, containers (any state) and networks of podman labelled as the
    run's whose network is `network`."""
    out = []
    for what in (["pod", "ps", "-q"], ["ps", "-aq"], ["network", "ls", "-q"]):
        r = subprocess.run(["podman", *what, "--filter", f"label=io.jobset.run={network}"], capture_output=True,
                           text=True, check=True)
        out += r.stdout.split()
    return out


def running(network):
    """The run's running containers, not the pods' infra containers."""
    r = subprocess.run(["podman", "ps", "--format", "{{.Names}}", "--filter", f"label=io.jobset.run={network}"],
                       capture_output=True, text=True, check=True)
    return [n for n in r.stdout.split() if not n.endswith("-infra")]


def detached(jobset_bin, tmp_path, manifest_text):
    """Start `jobset run --detach` in container mode. Returns the run
    directory, a reader of its state.json, and the run's network once the
    state names it."""
    manifest = tmp_path / "m.yaml"
    manifest.write_text(manifest_text)
    run_dir = tmp_path / "run"
    subprocess.run([str(jobset_bin), "run", "--detach", "--runtime", "podman", "--run-dir", str(run_dir),
                    str(manifest)], check=True, capture_output=True, text=True, timeout=60)

    def state():
        try:
            return json.loads((run_dir / "state.json").read_text())
        except (OSError, ValueError):
            return {}

    network = wait_for(lambda: state().get("runner", {}).get("containers", {}).get("network"), timeout=60,
                       what="the run's network in state.json")
    return run_dir, state, network


def test_a_runner_killed_with_sigkill_leaves_no_containers(jobset_bin, image, tmp_path):
    """Issue 24 item 8: the runner's reaper, a process that outlives it,
    removes every pod, container and network of the run once the runner
    dies without doing so itself; `jobset ps` says nothing is left, and
    `jobset down` has nothing to do."""
    spec = pod_spec([{"name": "c", "image": image, "args": ["term"]}], terminationGracePeriodSeconds=30)
    run_dir, state, network = detached(jobset_bin, tmp_path, jobset(rjob("w", spec, completions=2)))
    try:
        wait_for(lambda: len(running(network)) == 2, timeout=60, what="both containers running")
        os.kill(state()["runner"]["pid"], signal.SIGKILL)
        wait_for(lambda: of_run(network) == [], timeout=30, what="no pod, container or network of the run")
        ps = subprocess.run([str(jobset_bin), "ps", "--run-dir", str(run_dir)], capture_output=True, text=True)
        assert ps.returncode == 0, ps.stderr
        assert "(the runner died)" in ps.stdout, ps.stdout
        assert f"containers: nothing of this run is left in podman (network {network})" in ps.stdout, ps.stdout
        down = subprocess.run([str(jobset_bin), "down", "--run-dir", str(run_dir)], capture_output=True, text=True)
        assert down.returncode == 0 and "removed" not in down.stdout, down.stdout + down.stderr
    finally:
        subprocess.run(["podman", "network", "rm", "-f", "-t", "0", network], capture_output=True)


def test_down_removes_what_a_killed_runner_left(jobset_bin, image, tmp_path):
    """When even the reaper is gone (killed with its runner), `jobset ps`
    lists what the run left and `jobset down` removes it."""
    spec = pod_spec([{"name": "c", "image": image, "args": ["term"]}], terminationGracePeriodSeconds=30)
    run_dir, state, network = detached(jobset_bin, tmp_path, jobset(rjob("w", spec)))
    try:
        wait_for(lambda: running(network), timeout=60, what="the container running")
        pid = state()["runner"]["pid"]
        reapers = [int(p) for p in subprocess.run(["pgrep", "-P", str(pid), "-x", "jobset-reaper"],
                                                  capture_output=True, text=True).stdout.split()]
        assert len(reapers) == 1, reapers
        os.kill(reapers[0], signal.SIGKILL)
        os.kill(pid, signal.SIGKILL)
        wait_for(lambda: subprocess.run([str(jobset_bin), "ps", "--run-dir", str(run_dir)], capture_output=True,
                                        text=True).stdout.count("(the runner died)"), what="the runner gone")
        ps = subprocess.run([str(jobset_bin), "ps", "--run-dir", str(run_dir)], capture_output=True, text=True)
        assert f"left by the runner in podman: 1 pod, 2 containers, 1 network (network {network})" in ps.stdout, \
            ps.stdout
        down = subprocess.run([str(jobset_bin), "down", "--run-dir", str(run_dir)], capture_output=True, text=True)
        assert down.returncode == 0, down.stdout + down.stderr
        assert "removed what the runner left in podman: 1 pod, 2 containers, 1 network" in down.stdout, down.stdout
        assert of_run(network) == []
    finally:
        subprocess.run(["podman", "network", "rm", "-f", "-t", "0", network], capture_output=True)


def test_making_pods_does_not_hold_up_the_runner(jobset_bin, image, tmp_path, monkeypatch):
    """Issue 24 item 9: podman makes pods in child processes the runner's
    loop reaps, a few at once, so the runner serves `jobset ps` and signals
    while they are made. Here `podman pod create` waits for a gate the test
    opens only at the end (fault injection: a slow runtime): several pods
    are being made at once, `jobset ps` shows them ContainerCreating, and a
    SIGINT is handled (its event written) while every create still waits.
    Pods that were not begun are never made, and nothing is left."""
    gate, creates = tmp_path / "gate", tmp_path / "creates"
    creates.mkdir()
    # At most 60 s, so that a runner that never serves the SIGINT fails
    # the test rather than hangs it.
    podman_wrapper(tmp_path, monkeypatch,
                   f'if [ "$1 $2" = "pod create" ]; then\n  : > {creates}/$$; i=0\n'
                   f'  while [ ! -e {gate} ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done\nfi')
    cpus = os.cpu_count() or 1
    at_once = min(max(2 * cpus, 4), 16)  # container.c: twice the processors, 4 to 16
    spec = pod_spec([{"name": "c", "image": image, "args": ["exit", "0"]}])
    manifest = tmp_path / "m.yaml"
    manifest.write_text(jobset(rjob("w", spec, completions=at_once + 4)))
    run_dir = tmp_path / "run"
    subprocess.run([str(jobset_bin), "run", "--detach", "--runtime", "podman", "--run-dir", str(run_dir),
                    str(manifest)], check=True, capture_output=True, text=True, timeout=60)

    def runner_pid():
        try:
            return json.loads((run_dir / "state.json").read_text())["runner"]["pid"]
        except (OSError, ValueError, KeyError):
            return None

    runner = wait_for(runner_pid, timeout=60, what="the runner's pid in state.json")
    try:
        wait_for(lambda: len(list(creates.iterdir())) >= 2, timeout=60, what="two `pod create` under way at once")

        def ps():
            return subprocess.run([str(jobset_bin), "ps", "--run-dir", str(run_dir)], capture_output=True,
                                  text=True).stdout

        wait_for(lambda: ps().count("ContainerCreating") >= 2, timeout=20, what="jobset ps: ContainerCreating")
        os.kill(runner, signal.SIGINT)
        wait_for(lambda: "Normal Interrupted" in (run_dir / "events.log").read_text(), timeout=20,
                 what="the SIGINT served while pods are being made")
        assert not gate.exists()
        assert len(list(creates.iterdir())) <= at_once
    finally:
        gate.touch()
    wait_for(lambda: not Path(f"/proc/{runner}").exists() or
             Path(f"/proc/{runner}/stat").read_text().split(")")[-1].split()[0] == "Z",
             timeout=60, what="the runner's end")
    # Those begun were made and removed; the others were never begun.
    assert len(list(creates.iterdir())) == at_once
    assert leftovers(run_dir) == []
