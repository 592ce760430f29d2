"""The JAX example (examples/jax/jax-cpu.yaml, issue 12): JobSet's announced
shape - multi-process JAX with a coordinator from the JobSet - on CPU, in
process mode. jax (CPU) comes from PyPI into a virtual environment cached
outside the repository (~/.cache/jobset/venv-jax-<version>), made once."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

JAX_VERSION = "0.4.38"


@pytest.fixture(scope="module")
def jax_bin():
    venv = Path.home() / ".cache" / "jobset" / f"venv-jax-{JAX_VERSION}"
    done = venv / ".installed"
    if not done.exists():
        # A half-made environment (an interrupted install) is made again.
        shutil.rmtree(venv, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "python3"), "-m", "pip", "install", "-q", f"jax[cpu]=={JAX_VERSION}"],
                       check=True, timeout=1200)
        done.write_text(JAX_VERSION + "\n")
    return venv / "bin"


def test_jax_multi_process_restarts_from_checkpoint(run, jax_bin, monkeypatch):
    monkeypatch.setenv("PATH", f"{jax_bin}:{os.environ.get('PATH', '/usr/bin:/bin')}")
    r = run(REPO / "examples" / "jax" / "jax-cpu.yaml", "--backoff-ms", "100", timeout=600)
    assert r.rc == 0, r.stdout + r.stderr + r.events()
    assert r.condition("Completed"), r.status
    assert r.status["restarts"] == 1  # the injected failure, once
    logs = r.logs("jax-slice-", "jax")
    # Four processes found the coordinator and summed across processes,
    # in both attempts.
    assert logs.count("cross-process sum 10 (expected 10)") == 8, logs
    assert "[3] injected failure at step 12" in r.logs("jax-slice-1-1", "jax")
    assert logs.count("resumed from checkpoint at step 10") == 4, logs
    result = json.loads((r.dir / "volumes" / "checkpoints-jax" / "result.json").read_text())
    assert result["attempt"] == 1 and result["resumed_from"] == 10
    assert result["error"] < 1e-3, result
