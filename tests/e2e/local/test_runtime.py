"""Runtime behaviour: name resolution, Job semantics, bad input, teardown."""
import os
import resource
import signal
import subprocess
import uuid
from pathlib import Path

import pytest

from conftest import REPO, processes_with_env, start_marked, wait_for

DNS = """
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: dns}
spec:
  coordinator: {replicatedJob: b, jobIndex: 0, podIndex: 1}
  replicatedJobs:
  - name: a
    template:
      spec:
        completions: 1
        parallelism: 1
        template:
          spec:
            restartPolicy: Never
            containers:
            - name: probe
              image: busybox
              command: [sh, -c, 'hostname; for n in dns-b-0-1.dns dns-b-0-1.dns.default.svc dns-b-0-1.dns.default.svc.cluster.local $COORD; do getent hosts $n; done']
              env:
              - name: COORD
                valueFrom: {fieldRef: {fieldPath: "metadata.annotations['jobset.sigs.k8s.io/coordinator']"}}
  - name: b
    template:
      spec:
        completions: 2
        parallelism: 2
        template:
          spec:
            restartPolicy: Never
            containers:
            - name: probe
              image: busybox
              command: [sh, -c, 'echo "me=$(hostname) ip=$IP ns=$NS"; getent hosts $(hostname)']
              env:
              - {name: IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}
              - {name: NS, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}
"""


def test_pod_names_resolve_in_every_pod(run):
    r = run(DNS)
    assert r.rc == 0, r.stderr
    a = r.logs("dns-a-0-0", "probe")
    assert a.splitlines()[0] == "dns-a-0-0"
    b1 = r.logs("dns-b-0-1", "probe")
    ip = b1.split("ip=")[1].split()[0]
    assert ip == "10.244.0.4"  # position 2 (after a-0-0 and b-0-0) of the run's /16, base + 2 + 2
    assert "me=dns-b-0-1" in b1 and "ns=default" in b1
    lines = [l for l in a.splitlines()[1:] if l]
    assert len(lines) == 4
    assert all(l.split()[0] == ip for l in lines), a  # every form, and the coordinator


def test_namespace_option(run):
    r = run(DNS, "--namespace", "team-a")
    assert r.rc == 0, r.stderr
    assert "ns=team-a" in r.logs("dns-b-0-0", "probe")
    assert r.jobset["metadata"]["namespace"] == "team-a"


def _one(name, pod_spec, job_extra=""):
    return f"""
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {{name: {name}}}
spec:
  replicatedJobs:
  - name: w
    template:
      spec:
        completions: 1
        parallelism: 1
{job_extra}        template:
          spec:
{pod_spec}"""


def test_onfailure_restarts_then_backoff_limit(run):
    r = run(_one("flaky", """            restartPolicy: OnFailure
            containers:
            - name: main
              image: busybox
              command: [sh, -c, 'echo attempt; exit 3']
""", "        backoffLimit: 2\n"), "--backoff-ms", "50")
    assert r.rc == 1
    assert r.condition("Failed")["reason"] == "FailedJobs"
    job = r.jobs[0]
    failed = [c for c in job["status"]["conditions"] if c["type"] == "Failed"][0]
    assert failed["reason"] == "BackoffLimitExceeded"
    assert r.logs("flaky-w-0-0", "main").count("attempt") >= 2


def test_active_deadline(run):
    r = run(_one("slow", """            restartPolicy: Never
            terminationGracePeriodSeconds: 1
            containers:
            - name: main
              image: busybox
              command: [sleep, "600"]
""", "        activeDeadlineSeconds: 1\n"))
    assert r.rc == 1
    reasons = {c["type"]: c["reason"] for c in r.jobs[0]["status"]["conditions"]}
    assert reasons["FailureTarget"] == "DeadlineExceeded" and reasons["Failed"] == "DeadlineExceeded"


def test_init_containers_and_sidecar(run):
    r = run(_one("init", """            restartPolicy: Never
            initContainers:
            - name: setup
              image: busybox
              command: [sh, -c, 'mkdir -p sub && echo setup > order.txt']
            - name: side
              image: busybox
              restartPolicy: Always
              command: [sh, -c, 'echo sidecar up >> order.txt; exec sleep 600']
            terminationGracePeriodSeconds: 1
            containers:
            - name: main
              image: busybox
              workingDir: sub
              # A sidecar counts as started once its process runs (no
              # startupProbe), so main may start before the sidecar's first
              # line: wait for it (bounded) rather than race it.
              command: [sh, -c, 'pwd; for i in $(seq 200); do grep -q "sidecar up" ../order.txt && break; sleep 0.05; done; cat ../order.txt']
"""))
    assert r.rc == 0, r.stderr
    out = r.logs("init-w-0-0", "main").splitlines()
    # Init containers ran in order, the sidecar kept running, then main ran
    # in its workingDir; the sidecar was stopped when main finished.
    assert out[0].endswith("/sub")
    assert out[1:] == ["setup", "sidecar up"]


def test_missing_command_fails_before_start(run):
    r = run(_one("nocmd", """            restartPolicy: Never
            containers:
            - name: trainer
              image: python:3
"""))
    assert r.rc == 2
    assert "container 'trainer' has no command" in r.stderr
    assert not (r.dir / "logs").exists()


def test_invalid_manifest_fails_before_start(run):
    r = run("""
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: Bad_Name}
spec:
  replicatedJobs:
  - name: w
    replicas: -1
    template: {spec: {template: {spec: {containers: [{name: c, image: busybox, command: ["true"]}]}}}}
""")
    assert r.rc == 2
    assert "metadata.name" in r.stderr
    assert "nothing was started" in r.stderr
    assert not r.dir.exists()


HUGE = """
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: huge}
spec:
  replicatedJobs:
  - name: w
    replicas: %s
    template:
      spec:
        completionMode: NonIndexed
        parallelism: %s
        completions: 2147483647
        template: {spec: {containers: [{name: c, image: busybox, command: ["true"]}]}}
"""


@pytest.mark.parametrize("replicas,parallelism,want", [
    # the size limit of every runtime (docs/differences.md, "Size limits")
    ("2000000000", "1", "huge.yaml:8:5: spec.replicatedJobs[0].replicas: Invalid value: 2000000000: the JobSet "
     "would have 2000000000 child Jobs (replicas summed over its ReplicatedJobs); at most 100000 are allowed"),
    # the local runtime's own: one address per pod held at once (docs/local.md)
    ("1", "2147483647", "spec.replicatedJobs[0] (w): the run would hold 2147483647 pods at once"),
])
def test_jobset_over_a_size_limit_is_refused_at_once(jobset_bin, tmp_path, replicas, parallelism, want):
    """Issue 22: these numbers are schema-valid; planning them took memory
    in proportion (the runner was killed out of memory). They are refused
    before anything starts. The address-space limit keeps a regression from
    taking the machine's memory (not under ASan, whose shadow memory needs
    more)."""
    path = tmp_path / "huge.yaml"
    path.write_text(HUGE % (replicas, parallelism))

    def limit():
        if not os.environ.get("ASAN_OPTIONS"):
            resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    r = subprocess.run([str(jobset_bin), "run", "--run-dir", str(tmp_path / "run"), str(path)], cwd=tmp_path,
                       capture_output=True, text=True, timeout=30, preexec_fn=limit)
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    assert want in r.stderr and "nothing was started" in r.stderr, r.stderr
    assert not (tmp_path / "run").exists()


SLEEPERS = """
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: sleepers}
spec:
  replicatedJobs:
  - name: w
    replicas: 2
    template:
      spec:
        completions: 2
        parallelism: 2
        template:
          spec:
            restartPolicy: Never
            terminationGracePeriodSeconds: %d
            containers:
            - name: main
              image: busybox
              command: [sh, -c, 'sleep 600 & sleep 600 & wait']
              env: [{name: JS_E2E_MARKER, value: "%s"}]
"""


def _start(jobset_bin, tmp_path, grace):
    marker = "m" + uuid.uuid4().hex
    # 4 pods x (sh + 2 sleeps) = 12 processes carry the marker.
    return start_marked(jobset_bin, tmp_path, SLEEPERS % (grace, marker), marker, 12), marker


def test_sigkill_of_runner_leaves_no_process(jobset_bin, tmp_path):
    p, marker = _start(jobset_bin, tmp_path, 30)
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=10)
    wait_for(lambda: not processes_with_env(marker), timeout=10, what="every container process to die")


def test_sigterm_stops_everything_within_grace(jobset_bin, tmp_path):
    p, marker = _start(jobset_bin, tmp_path, 1)
    p.send_signal(signal.SIGTERM)
    # `sh` as PID 1 ignores SIGTERM, so this takes the 1 s grace period.
    assert p.wait(timeout=15) == 130
    assert not processes_with_env(marker)
    assert (tmp_path / "run" / "jobset.json").exists()


def test_one_signal_delivered_twice_is_not_a_second_interrupt(jobset_bin, tmp_path):
    """`timeout` signals the runner and then its process group: the same
    SIGTERM twice at once is one request (pods get their grace period);
    a SIGTERM asked again later kills at once."""
    p, marker = _start(jobset_bin, tmp_path, 30)
    p.send_signal(signal.SIGTERM)
    p.send_signal(signal.SIGTERM)
    events = tmp_path / "run" / "events.log"
    wait_for(lambda: "SIGTERM: stopping every pod" in events.read_text(), what="the first SIGTERM")
    assert "SIGTERM again" not in events.read_text()
    # `sh` ignores SIGTERM: within its 30 s grace the pods still run, until asked again.
    assert p.poll() is None and processes_with_env(marker)
    wait_for(lambda: "SIGTERM again" in (p.send_signal(signal.SIGTERM) or events.read_text()), timeout=10,
             what="a later SIGTERM to count as a second one")
    assert p.wait(timeout=15) == 130
    assert not processes_with_env(marker)


# A container whose command cannot be exec'd: the runtime reports a start
# error (exit code 128, as containerd's StartError) and, with restartPolicy
# Never, the pod fails and counts toward backoffLimit. This used to hang:
# nothing (no exit, no output, no timer) was left to wake the loop.
@pytest.mark.parametrize("command", ["no-such-program-xyz", "/nonexistent/no-such-program"])
def test_command_not_found_fails_the_pod(run, command):
    r = run(_one("nocmd", f"""            restartPolicy: Never
            containers:
            - name: c
              image: busybox
              command: ["{command}"]
""", "        backoffLimit: 0\n"), timeout=30)
    assert r.rc == 1, r.stdout + r.stderr
    assert r.condition("Failed")["reason"] == "FailedJobs"
    job = r.jobs[0]
    assert job["status"]["failed"] == 1 and job["status"]["active"] == 0
    reasons = {c["type"]: c["reason"] for c in job["status"]["conditions"]}
    assert reasons["Failed"] == "BackoffLimitExceeded"
    assert f'exec: "{command}"' in r.logs("nocmd-w-0-0", "c")
    ev = r.events()
    assert "Warning Failed pod/nocmd-w-0-0-" in ev
    assert "Stalled" not in ev  # fixed at the root, not by the loop's stall check


def test_command_not_found_restarts_with_onfailure(run):
    r = run(_one("nocmd", """            restartPolicy: OnFailure
            containers:
            - name: c
              image: busybox
              command: [no-such-program-xyz]
""", "        backoffLimit: 2\n"), "--backoff-ms", "20", timeout=30)
    assert r.rc == 1, r.stdout + r.stderr
    reasons = {c["type"]: c["reason"] for c in r.jobs[0]["status"]["conditions"]}
    assert reasons["Failed"] == "BackoffLimitExceeded"
    # One pod, its container restarted in place: every attempt logged its
    # start error, and no second pod was created.
    log = r.logs("nocmd-w-0-0", "c")
    assert log.count("executable file not found") >= 2, log
    assert len(list((r.dir / "logs").iterdir())) == 1


def test_nothing_left_to_wait_for_ends_the_run(run):
    # With replicas 0 the JobSet has no Jobs: on a cluster it would wait for
    # an edit forever. Locally nothing can change it, so the loop's stall
    # check reports it and the run ends as Failed instead of blocking.
    r = run("""
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: empty}
spec:
  replicatedJobs:
  - name: w
    replicas: 0
    template: {spec: {template: {spec: {restartPolicy: Never, containers: [{name: c, image: busybox, command: ["true"]}]}}}}
""", timeout=30)
    assert r.rc == 1, r.stdout + r.stderr
    assert "Stalled" in r.stdout
    ev = r.events()
    assert "Warning Stalled jobset/empty: nothing is running or scheduled (0 Jobs, 0 pods" in ev
    assert "recovered" not in ev
    assert r.condition("Completed") is None and r.condition("Failed") is None
    assert r.jobs == []


RESTART_JOB = """
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: rj}
spec:
  failurePolicy:
    maxRestarts: 1
    rules:
    - name: one
      action: RestartJob
  replicatedJobs:
  - name: w
    replicas: 2
    template:
      spec:
        backoffLimit: 0
        template:
          spec:
            restartPolicy: Never
            containers:
            - name: c
              image: busybox
              command: [sh, -c, 'if [ "$JI" = 0 ] && [ ! -e flag ]; then touch flag; exit 1; fi; echo ok']
              env:
              - name: JI
                valueFrom: {fieldRef: {fieldPath: "metadata.annotations['jobset.sigs.k8s.io/job-index']"}}
"""


def test_feature_gates_reach_validation_and_the_core(run):
    r = run(RESTART_JOB)
    assert r.rc == 2
    assert "RestartJob feature gate" in r.stderr and "nothing was started" in r.stderr
    assert not r.dir.exists()

    r = run(RESTART_JOB, "--feature-gates", "RestartJob=true", "--backoff-ms", "50")
    assert r.rc == 0, r.stdout + r.stderr
    # Only Job 0 was restarted (RestartJob), not the whole JobSet.
    assert r.status["restarts"] == 0
    assert r.status["replicatedJobsStatus"][0]["jobRestarts"] == [1, 0]
    attempts = sorted((j["metadata"]["name"], j["metadata"]["labels"]["jobset.sigs.k8s.io/job-restart-attempt"])
                      for j in r.jobs)
    assert attempts == [("rj-w-0", "0"), ("rj-w-0", "1"), ("rj-w-1", "0")]
    assert "RestartJobFailurePolicyAction" in r.events()


def test_unknown_feature_gate_is_a_usage_error(run):
    r = run(RESTART_JOB, "--feature-gates", "NoSuchGate=true")
    assert r.rc == 2
    assert "unknown feature gate 'NoSuchGate'" in r.stderr


def test_teardown_waits_without_spinning(jobset_bin, tmp_path):
    # The Job's activeDeadlineSeconds passes while the runner waits out the
    # grace period after SIGTERM. A deadline nobody acts on any more used to
    # make poll() return at once, over and over, until the pods were gone.
    marker = "m" + uuid.uuid4().hex
    (tmp_path / "m.yaml").write_text(f"""
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {{name: spin}}
spec:
  replicatedJobs:
  - name: w
    template:
      spec:
        activeDeadlineSeconds: 1
        template:
          spec:
            restartPolicy: Never
            terminationGracePeriodSeconds: 4
            containers:
            - name: main
              image: busybox
              command: [sh, -c, 'sleep 600; true']
              env: [{{name: JS_E2E_MARKER, value: "{marker}"}}]
""")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.Popen([str(jobset_bin), "run", "-q", "--run-dir", str(tmp_path / "run"), str(tmp_path / "m.yaml")],
                         cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_for(lambda: processes_with_env(marker), what="the container to start")
    p.send_signal(signal.SIGTERM)
    p.communicate(timeout=15)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    # `sh` ignores SIGTERM, so the run lasts the 4 s grace period; waiting
    # must cost next to no CPU (a spinning loop burns whatever it can get).
    assert cpu < 0.3, f"runner used {cpu:.2f}s of CPU during a 4 s teardown"
    assert not processes_with_env(marker)


def test_volume_claim_policies_do_not_livelock(run):
    """Upstream's volume-claim-policy example runs to Completed (issue 11: it
    used to plan CreatePVC ~20,000 times a second forever). Each claim is
    created once, as a directory of the run, and mounted where the pods ask
    (/workspace/... does not exist on this machine and is not created here).
    At the end the JobSet goes: its Delete claim goes with it, the Retain
    claim keeps the checkpoints the node pods wrote."""
    shared = Path(os.environ.get("JS_SHARED_DIR", REPO.parent / "shared"))
    example = shared / "upstream-examples" / "volume-claim-policy" / "single-pvc.yaml"
    r = run(example, "--backoff-ms", "1", timeout=60)
    assert r.rc == 0, r.stdout + r.stderr
    assert r.condition("Completed"), r.status
    ev = r.events()
    for claim in ("initializer-volume-claim-trainjob", "checkpoints-volume-claim-trainjob"):
        assert ev.count(f"Created persistentvolumeclaim/{claim}:") == 1, ev
    ckpt = r.dir / "volumes" / "checkpoints-volume-claim-trainjob"
    assert sorted(p.name for p in ckpt.iterdir()) == ["model_0.txt", "model_1.txt", "model_2.txt"]
    assert (ckpt / "model_1.txt").read_text() == "Checkpoint: model_1\n"
    assert not (r.dir / "volumes" / "initializer-volume-claim-trainjob").exists()
    assert "Qwen3-30b" in r.logs("volume-claim-trainjob-node-0-2", "node")
    assert not Path("/workspace").exists()
    assert "RuntimeBug" not in ev, ev
    assert len(ev.splitlines()) < 200, f"{len(ev.splitlines())} event lines"
