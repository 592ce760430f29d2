"""Fixtures for end-to-end runs of `jobset run`.

JOBSET_BIN points at the built binary (default build/jobset). The example
program is taken from <build>/examples/jobset-demo when the build made it,
else compiled here from examples/demo/jobset-demo.c with cc.
"""
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="session")
def jobset_bin():
    b = Path(os.environ.get("JOBSET_BIN", REPO / "build" / "jobset")).resolve()
    if not b.exists():
        pytest.fail(f"JOBSET_BIN {b} does not exist; build first")
    return b


@pytest.fixture(scope="session")
def demo_dir(jobset_bin, tmp_path_factory):
    built = jobset_bin.parent / "examples" / "jobset-demo"
    if built.exists():
        return built.parent
    d = tmp_path_factory.mktemp("demo-bin")
    subprocess.run(["cc", "-std=c17", "-O2", "-Wall", "-Wextra", "-Werror", "-o", str(d / "jobset-demo"),
                    str(REPO / "examples" / "demo" / "jobset-demo.c")], check=True)
    return d


class Run:
    def __init__(self, proc, run_dir):
        self.rc = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.dir = run_dir

    @property
    def jobset(self):
        return json.loads((self.dir / "jobset.json").read_text())

    @property
    def status(self):
        return self.jobset["status"]

    @property
    def items(self):
        """jobs.json: a v1 List of every Job, then every pod."""
        doc = json.loads((self.dir / "jobs.json").read_text())
        assert doc["kind"] == "List", doc
        return doc["items"]

    @property
    def jobs(self):
        return [i for i in self.items if i["kind"] == "Job"]

    @property
    def pods(self):
        return [i for i in self.items if i["kind"] == "Pod"]

    def pod(self, prefix):
        """The one pod whose name starts with prefix."""
        found = [p for p in self.pods if p["metadata"]["name"].startswith(prefix)]
        assert len(found) == 1, [p["metadata"]["name"] for p in self.pods]
        return found[0]

    def condition(self, ctype):
        for c in self.status.get("conditions", []):
            if c["type"] == ctype and c["status"] == "True":
                return c
        return None

    def logs(self, pod_prefix, container):
        """Concatenated logs of every pod whose name starts with pod_prefix."""
        out = []
        for p in sorted((self.dir / "logs").glob(pod_prefix + "*")):
            f = p / (container + ".log")
            if f.exists():
                out.append(f.read_text())
        return "\n".join(out)

    def events(self):
        return (self.dir / "events.log").read_text()


@pytest.fixture
def run(jobset_bin, demo_dir, tmp_path):
    """run(manifest_path_or_yaml_text, *args, timeout=60) -> Run."""

    def go(manifest, *args, timeout=90):
        if "\n" in str(manifest):
            path = tmp_path / "manifest.yaml"
            path.write_text(manifest)
        else:
            path = Path(manifest)
        run_dir = tmp_path / "run"
        env = dict(os.environ, PATH=f"{demo_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}")
        proc = subprocess.run([str(jobset_bin), "run", "--run-dir", str(run_dir), *args, str(path)],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=timeout)
        r = Run(proc, run_dir)
        # The loop's stall check must never be what moved a run along.
        ev = run_dir / "events.log"
        assert not ev.exists() or "internal error of the local runtime" not in ev.read_text(), ev.read_text()
        return r

    return go


def wait_for(pred, timeout=30.0, what="condition"):
    """Poll pred() until true or fail after timeout seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.05)
    pytest.fail(f"timed out after {timeout}s waiting for {what}")


def processes_with_env(marker):
    """PIDs of processes whose environment contains marker."""
    pids = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            if marker.encode() in (p / "environ").read_bytes():
                pids.append(int(p.name))
        except (OSError, PermissionError):
            pass
    return pids


def start_marked(jobset_bin, tmp_path, manifest, marker, n_procs):
    """Start `jobset run -q` on `manifest` (YAML text whose containers carry
    `marker` in their environment) in tmp_path/run, and wait until n_procs
    container processes carry it. Returns the runner's Popen."""
    (tmp_path / "m.yaml").write_text(manifest)
    p = subprocess.Popen([str(jobset_bin), "run", "-q", "--run-dir", str(tmp_path / "run"), str(tmp_path / "m.yaml")],
                         cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_for(lambda: len(processes_with_env(marker)) >= n_procs, what=f"{n_procs} container processes")
    return p


def have_cc():
    return shutil.which("cc") is not None


def jobset_yaml(name, command, *, replicas=1, completions=1, restart="Never", grace=None, job_extra="", env=None):
    """A JobSet of one ReplicatedJob `w` (`replicas` Indexed Jobs of
    `completions` pods each) whose container `main` runs `sh -c command`
    with the variables of `env` (a dict) set.
    `job_extra` is YAML added to the Job spec, indented 8 spaces."""
    grace_line = f"            terminationGracePeriodSeconds: {grace}\n" if grace is not None else ""
    cmd = command.replace("'", "''")
    env_lines = "".join(f"              - {{name: {k}, value: \"{v}\"}}\n" for k, v in (env or {}).items())
    return f"""
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {{name: {name}}}
spec:
  replicatedJobs:
  - name: w
    replicas: {replicas}
    template:
      spec:
        completions: {completions}
        parallelism: {completions}
{job_extra}        template:
          spec:
            restartPolicy: {restart}
{grace_line}            containers:
            - name: main
              image: busybox
              command: [sh, -c, '{cmd}']
""" + ("              env:\n" + env_lines if env_lines else "")
