"""A real JAX program that hangs once and recovers by itself
(examples/jax-hang, issue 25 part 1; docs/progress-deadline.md): 3
processes with jax.distributed; in attempt 0 process 1 leaves the loop and
exits normally, so it blocks in jax.distributed's shutdown barrier while the
others block in the step's collective. Every pod stays Running and silent
until the progress deadline (4 s) fails them; the set restarts once and
attempt 1 resumes from the checkpoint of step 3.

jax (CPU) comes from PyPI, pinned in examples/jax-hang/requirements.txt,
into a virtual environment cached outside the repository
(~/.cache/jobset/venv-jax-<version>, the one tests/e2e/local/test_jax.py
uses), made once. No network on a cold machine fails the test, naming the
command: it never skips."""
import os
import re
import shlex
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from conftest import REPO

EXAMPLE = REPO / "examples" / "jax-hang"
GATE = ("--feature-gates", "ProgressDeadline=true")
DEADLINE_MS = 4000


def _requirements():
    text = (EXAMPLE / "requirements.txt").read_text()
    m = re.search(r"^jax==(\S+)$", text, re.M)
    assert m, "examples/jax-hang/requirements.txt pins no jax version"
    return text, m.group(1)


def _must(cmd, timeout):
    """Run cmd; on failure fail the test naming the command and its output."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"`{shlex.join(map(str, cmd))}` did not finish in {timeout} s (no network?)")
    if p.returncode != 0:
        pytest.fail(f"`{shlex.join(map(str, cmd))}` failed (exit {p.returncode}; no network?):\n"
                    f"{p.stdout[-2000:]}{p.stderr[-3000:]}")


@pytest.fixture(scope="module")
def jax_bin():
    """The venv's bin directory, with the example's requirements installed.
    The stamp holds the requirements installed, so a changed pin installs
    again; a venv made by test_jax.py (same jax version) is completed."""
    text, version = _requirements()
    venv = Path.home() / ".cache" / "jobset" / f"venv-jax-{version}"
    stamp = venv / ".jax-hang-requirements"
    py = venv / "bin" / "python3"
    if stamp.exists() and stamp.read_text() == text:
        return venv / "bin"
    if not py.exists():
        _must([sys.executable, "-m", "venv", str(venv)], timeout=120)
    start = time.monotonic()
    _must([str(py), "-m", "pip", "install", "-q", "-r", str(EXAMPLE / "requirements.txt")], timeout=1200)
    print(f"\njax {version}: pip install -r examples/jax-hang/requirements.txt into {venv} "
          f"took {time.monotonic() - start:.0f} s")
    _must([str(py), "-c", f"import jax; assert jax.__version__ == {version!r}, jax.__version__"], timeout=120)
    stamp.write_text(text)
    return venv / "bin"


def _ms(stamp):
    """Milliseconds since the epoch of an events.log or heartbeat time."""
    return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc).timestamp() * 1000


def _attempt(pod):
    return pod["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"]


def test_jax_hang_is_detected_and_resumes_from_the_checkpoint(run, jax_bin, monkeypatch):
    monkeypatch.setenv("PATH", f"{jax_bin}:{os.environ.get('PATH', '/usr/bin:/bin')}")
    start = time.monotonic()
    r = run(str(EXAMPLE / "jax-hang.yaml"), *GATE, timeout=240)
    took = time.monotonic() - start
    assert r.rc == 0, r.stdout + r.stderr + r.events()
    assert r.condition("Completed"), r.status
    assert r.status["restarts"] == 1, r.events()  # the hang, once

    # Attempt 0 had exactly 3 pods, each of them hung and stopped: process 1
    # left the loop and exited normally, and blocked in jax.distributed's
    # shutdown barrier (jax's atexit handler); the others blocked in the
    # collective of step 4. The example's faulthandler timer wrote where each
    # was a second before the deadline.
    first = sorted((p for p in r.pods if _attempt(p) == "0"), key=lambda p: p["metadata"]["name"])
    names = [p["metadata"]["name"] for p in first]
    assert [n[:len("jax-hang-workers-0-0")] for n in names] == [
        "jax-hang-workers-0-0", "jax-hang-workers-0-1", "jax-hang-workers-0-2"], names
    one = r.logs(names[1], "jax")
    assert "[1] leaving the loop before step 4: normal exit" in one, one
    assert re.search(r"jax/_src/distributed\.py\", line \d+ in shutdown", one), one
    for n in (names[0], names[2]):
        log = r.logs(n, "jax")
        assert "step 3 loss" in log and "step 4 loss" not in log, log
        assert "in process_allgather" in log, log

    # The pods whose deadline ran out first (their last heartbeats are
    # milliseconds apart: 1 to 3 of them) failed with the condition and a
    # Warning event naming the last heartbeat and the deadline. The Job
    # failed as the first of them began to stop (backoffLimit 0: a pod being
    # deleted counts as failed, as upstream's Job controller counts it), so
    # no replacement was started, and its controller stopped the others.
    # None ended Succeeded: process 1 never got out of its exit.
    events = r.events()
    lates, hung = [], []
    for p in first:
        name, stop = p["metadata"]["name"], p["metadata"]["annotations"].get("jobset.local/stop")
        assert p["status"]["phase"] == "Failed", (name, p["status"])
        assert stop in ("ProgressDeadlineExceeded", "JobFailed"), (name, stop)
        if stop == "JobFailed":
            assert f"Normal Stopped pod/{name}: deleted by the Job controller when its Job failed" in events
            continue
        hung.append(name)
        cond = [c for c in p["status"].get("conditions", []) if c["type"] == "ProgressDeadlineExceeded"]
        assert len(cond) == 1 and cond[0]["status"] == "True", (name, p["status"].get("conditions"))
        assert "progress deadline 4 s" in cond[0]["message"], cond[0]
        m = re.search(rf"Warning ProgressDeadlineExceeded pod/{name}: last heartbeat at (\S+), [\d.]+ s ago: "
                      r"progress deadline 4 s \(jobset.sigs.k8s.io/progress-deadline-seconds\) exceeded by (\d+) ms",
                      events)
        assert m, (name, events)
        lates.append(int(m.group(2)))
    assert hung, events

    # Detection delay: the deadline plus the runner's timer lateness.
    print(f"\njax hang: detected {min(lates)} - {max(lates)} ms after the {DEADLINE_MS} ms deadline "
          f"({', '.join(hung)}); the whole run {took:.1f} s")
    assert all(0 <= late < 1000 for late in lates), lates

    # Attempt 1: every process resumed from the checkpoint of step 3 (the
    # last step every process finished) and completed all 8 steps.
    done = [p for p in r.pods if _attempt(p) == "1"]
    assert len(done) == 3 and all(p["status"]["phase"] == "Succeeded" for p in done), [
        (p["metadata"]["name"], p["status"]["phase"]) for p in done]
    for p in done:
        name = p["metadata"]["name"]
        log, i = r.logs(name, "jax"), name[len("jax-hang-workers-0-")]
        assert f"[{i}] attempt 1: 3 processes" in log, log
        assert f"[{i}] resumed from step 3" in log, log
        assert f"[{i}] step 4 loss" in log and f"[{i}] step 8 loss" in log and f"[{i}] done: w=" in log, log
    ckpt = r.dir / "work" / "jax-hang-ckpt" / "jax-hang"
    assert sorted(f.name for f in ckpt.iterdir()) == [f"step-{s:04d}.json" for s in range(1, 9)]
