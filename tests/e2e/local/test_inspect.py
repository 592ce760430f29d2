"""Issue 11: commands on a run directory - `run --detach`, `jobset ps`,
`logs [-f] [--tail N]`, `describe`, `down` and `evict` - on a live run, and
podFailurePolicy onPodConditions matching the DisruptionTarget an eviction
sets."""
import json
import re
import subprocess

import pytest

from conftest import jobset_yaml, wait_for

# Pod i of Job j prints "line 1..3" and then waits until the file go-<host>
# exists in the shared work directory (the run's work/), then exits 0. On
# SIGTERM it exits 143, as most programs do.
WAITERS = jobset_yaml("waiters", 'trap "exit 143" TERM; for i in 1 2 3; do echo "line $i of $HOSTNAME"; done; '
                      'until [ -e go-$HOSTNAME ]; do sleep 0.05; done; echo "bye from $HOSTNAME"', replicas=2,
                      completions=2, grace=5, job_extra="        backoffLimit: 0\n%s")

IGNORE_DISRUPTION = """        podFailurePolicy:
          rules:
          - action: Ignore
            onPodConditions: [{type: DisruptionTarget}]
"""
FAIL_ON_DISRUPTION = """        podFailurePolicy:
          rules:
          - action: FailJob
            onPodConditions: [{type: DisruptionTarget, status: "True"}]
"""


class Live:
    def __init__(self, jobset_bin, tmp_path, manifest, *args):
        self.bin, self.dir, self.cwd = str(jobset_bin), tmp_path / "run", tmp_path
        (tmp_path / "m.yaml").write_text(manifest)
        r = self.js("run", "--detach", "--run-dir", str(self.dir), *args, str(tmp_path / "m.yaml"))
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip() == str(self.dir)

    def js(self, *args, timeout=60):
        return subprocess.run([self.bin, *args], cwd=self.cwd, capture_output=True, text=True, timeout=timeout)

    def state(self):
        try:
            return json.loads((self.dir / "state.json").read_text())
        except (OSError, ValueError):
            return None

    def pods(self, phase=None):
        s = self.state()
        return [p for p in (s["pods"] if s else []) if phase is None or p["status"]["phase"] == phase]

    def release(self, host):
        (self.dir / "work" / f"go-{host}").touch()

    def wait_done(self):
        wait_for(lambda: (s := self.state()) and s["runner"]["final"], timeout=60, what="the run to end")
        return self.state()


@pytest.fixture
def live(jobset_bin, tmp_path):
    """live(manifest, *args) -> Live; every runner is brought down at the end,
    whatever the test did."""
    runs = []

    def start(manifest, *args):
        runs.append(Live(jobset_bin, tmp_path, manifest, *args))
        return runs[-1]

    yield start
    for r in runs:
        r.js("down", "-d", str(r.dir), "--timeout", "10")


def test_detach_ps_logs_describe_down(live, tmp_path):
    run = live(WAITERS % "")
    wait_for(lambda: len(run.pods("Running")) == 4, what="4 running pods")
    ps = run.js("ps", "-d", str(run.dir))
    assert ps.returncode == 0, ps.stderr
    assert re.search(r"jobset waiters  Running \(runner pid \d+\)", ps.stdout)
    rows = [l.split() for l in ps.stdout.splitlines()[2:]]
    assert len(rows) == 4 and all(r[1] == "1/1" and r[2] == "Running" for r in rows), ps.stdout
    # logs by hostname (the newest pod of it), complete lines so far.
    wait_for(lambda: "line 3" in run.js("logs", "-d", str(run.dir), "waiters-w-0-0").stdout, what="three lines")
    tail = run.js("logs", "-d", str(run.dir), "--tail", "1", "waiters-w-0-0")
    assert tail.stdout == "line 3 of waiters-w-0-0\n"
    desc = run.js("describe", "-d", str(run.dir), "waiters-w-1-1")
    assert desc.returncode == 0, desc.stderr
    assert re.search(r"Name: +waiters-w-1-1-\w+", desc.stdout)
    assert "State:          Running" in desc.stdout and "Normal Started pod/waiters-w-1-1-" in desc.stdout
    # logs -f ends by itself once the container has finished.
    follow = subprocess.Popen([run.bin, "logs", "-f", "-d", str(run.dir), "waiters-w-0-1"], cwd=tmp_path,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    run.release("waiters-w-0-1")
    out, _ = follow.communicate(timeout=30)
    assert out.splitlines() == [f"line {i} of waiters-w-0-1" for i in (1, 2, 3)] + ["bye from waiters-w-0-1"]
    # down: as Ctrl-C; the runner writes its results and is gone.
    down = run.js("down", "-d", str(run.dir))
    assert down.returncode == 0, down.stderr
    assert "Interrupted" in down.stdout
    s = run.state()
    assert s["runner"]["final"] and s["runner"]["state"] == "Interrupted"
    js = json.loads((run.dir / "jobset.json").read_text())
    assert any(c["type"] == "Interrupted" and "jobset down" in c["message"] for c in js["status"]["conditions"])
    ps = run.js("ps", "-d", str(run.dir))
    assert "Stopped" in ps.stdout and "Exited (143)" in ps.stdout, ps.stdout
    assert "Completed" in ps.stdout and "Exited (0)" in ps.stdout  # the one released
    assert "runner.log" in {p.name for p in run.dir.iterdir()}
    # Down again: nothing to stop, not an error.
    assert run.js("down", "-d", str(run.dir)).returncode == 0


def test_eviction_ignored_by_pod_failure_policy(live):
    run = live(WAITERS % IGNORE_DISRUPTION)
    wait_for(lambda: len(run.pods("Running")) == 4, what="4 running pods")
    ev = run.js("evict", "-d", str(run.dir), "waiters-w-0-0")
    assert ev.returncode == 0, ev.stderr
    assert re.match(r"pod/waiters-w-0-0-\w+ evicted", ev.stdout)
    # With backoffLimit 0 a counted failure would fail the Job; the Ignore
    # rule on DisruptionTarget keeps it, and the pod is replaced once the
    # evicted one is gone (podReplacementPolicy Failed).
    wait_for(lambda: sum(p["metadata"]["name"].startswith("waiters-w-0-0-") for p in run.pods("Running")) == 1
             and len(run.pods("Failed")) == 1, what="a replacement pod")
    for h in ("waiters-w-0-0", "waiters-w-0-1", "waiters-w-1-0", "waiters-w-1-1"):
        run.release(h)
    assert run.wait_done()["runner"]["state"] == "Completed"
    items = json.loads((run.dir / "jobs.json").read_text())["items"]
    job = next(i for i in items if i["kind"] == "Job" and i["metadata"]["name"] == "waiters-w-0")
    assert job["status"]["failed"] == 0 and job["status"]["succeeded"] == 2
    evicted = [i for i in items if i["kind"] == "Pod" and i["status"]["phase"] == "Failed"]
    assert len(evicted) == 1
    cond = [c for c in evicted[0]["status"]["conditions"] if c["type"] == "DisruptionTarget"]
    assert cond and cond[0]["status"] == "True" and cond[0]["reason"] == "EvictionByEvictionAPI"
    assert evicted[0]["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 143
    log = (run.dir / "events.log").read_text()
    assert re.search(r"Warning Evicted pod/waiters-w-0-0-\w+: evicted by jobset evict", log)


def test_eviction_fails_the_job_by_pod_failure_policy(live):
    run = live(WAITERS % FAIL_ON_DISRUPTION)
    wait_for(lambda: len(run.pods("Running")) == 4, what="4 running pods")
    assert run.js("evict", "-d", str(run.dir), "waiters-w-1-1").returncode == 0
    s = run.wait_done()
    assert s["runner"]["state"] == "Failed"
    items = json.loads((run.dir / "jobs.json").read_text())["items"]
    job = next(i for i in items if i["kind"] == "Job" and i["metadata"]["name"] == "waiters-w-1")
    failed = [c for c in job["status"]["conditions"] if c["type"] == "Failed"][0]
    assert failed["reason"] == "PodFailurePolicy"
    assert re.match(r"Pod default/waiters-w-1-1-\w+ has condition DisruptionTarget matching FailJob rule at index 0",
                    failed["message"]), failed


def test_commands_refuse_what_they_cannot_do(live, tmp_path):
    run = live(WAITERS % "")
    wait_for(lambda: len(run.pods("Running")) == 4, what="4 running pods")
    r = run.js("logs", "-d", str(run.dir), "waiters-w-")
    assert r.returncode == 1 and "names 4 pods" in r.stderr
    r = run.js("describe", "-d", str(run.dir), "nope")
    assert r.returncode == 1 and "no pod 'nope'" in r.stderr
    r = run.js("logs", "-d", str(run.dir), "-c", "nope", "waiters-w-0-0")
    assert r.returncode == 1 and "no container 'nope'" in r.stderr
    r = run.js("ps", "-d", str(tmp_path))
    assert r.returncode == 2 and "not a run directory" in r.stderr
    # A second runner in a live run directory, even with --reuse-run-dir.
    r = run.js("run", "--reuse-run-dir", "--run-dir", str(run.dir), str(tmp_path / "m.yaml"))
    assert r.returncode == 2 and "a runner is live" in r.stderr
    assert run.js("down", "-d", str(run.dir)).returncode == 0
    r = run.js("evict", "-d", str(run.dir), "waiters-w-0-0")
    assert r.returncode == 1 and "not running" in r.stderr


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_ps_of_the_last_run_by_default(jobset_bin, tmp_path, fmt):
    """Without --run-dir, commands look at the last run started (per user)."""
    env = {"PATH": "/usr/bin:/bin", "XDG_RUNTIME_DIR": str(tmp_path / "xdg")}
    (tmp_path / "xdg").mkdir(mode=0o700)
    (tmp_path / "m.yaml").write_text(WAITERS % "")
    r = subprocess.run([str(jobset_bin), "run", "--detach", str(tmp_path / "m.yaml")], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    d = r.stdout.strip()
    down = ["down", "-d", d, "--timeout", "10"]
    assert d.startswith(str(tmp_path / "xdg" / "jobset") + "/waiters-")
    args = ["ps"] + (["-o", "json"] if fmt == "json" else [])
    wait_for(lambda: "waiters-w-1-1" in subprocess.run([str(jobset_bin), *args], env=env, capture_output=True,
                                                       text=True).stdout, what="ps to list the pods")
    try:
        assert subprocess.run([str(jobset_bin), "down"], env=env, capture_output=True, timeout=60).returncode == 0
    finally:
        subprocess.run([str(jobset_bin), *down], capture_output=True, timeout=60)
