"""`jobset kubectl` / `kubectl-jobset` without a cluster (docs/kubectl-jobset.md): which mode the
binary is in, usage errors that name the flag and what is valid, and kubeconfig errors. The
commands against a cluster are tests/e2e/cluster/test_kubectl_jobset.py.

JOBSET_BIN points at the built binary; kubectl-jobset is a symlink to it (made here when the
build did not make one next to it).
"""
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
BIN = os.environ.get("JOBSET_BIN", str(ROOT / "build" / "jobset"))


@pytest.fixture
def plugin(tmp_path):
    link = tmp_path / "kubectl-jobset"
    link.symlink_to(BIN)
    return str(link)


def run(argv, kubeconfig="/nonexistent/kubeconfig"):
    env = dict(os.environ, KUBECONFIG=kubeconfig, HOME="/nonexistent")
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env)


def test_help_in_both_forms(plugin):
    a, b = run([plugin, "--help"]), run([BIN, "kubectl", "--help"])
    assert a.returncode == b.returncode == 0 and a.stdout == b.stdout
    for cmd in ("get [NAME]", "describe NAME", "logs NAME", "restart NAME", "diff FILE", "report NAME"):
        assert cmd in a.stdout
    assert "kubectl CMD" in run([BIN, "--help"]).stdout


@pytest.mark.parametrize("args,code,words", [
    (["bogus"], 2, ['unknown command "bogus"', "get, describe, logs, restart, diff, report"]),
    (["get", "-o", "xml"], 2, ['"xml"', "json,name,wide,yaml"]),
    (["get", "--bogus"], 2, ["unknown flag: --bogus"]),
    (["get", "-n"], 2, ["flag needs an argument: -n"]),
    (["get", "a", "-A"], 2, ["cannot be retrieved by name across all namespaces"]),
    (["get", "--rjob", "w"], 2, ["unknown flag for get: --rjob"]),
    (["describe"], 2, ["describe takes the JobSet's NAME"]),
    (["describe", "x", "-o", "json"], 2, ["unknown flag for describe: -o"]),
    (["-o", "json", "describe", "x"], 2, ["unknown flag for describe: -o"]),
    # Before the command word too, whatever the flag's value.
    (["--tail=-1", "restart", "x"], 2, ["unknown flag for restart: --tail=-1"]),
    (["--feature-gates", "RestartJob=true", "restart", "x"], 2, ["unknown flag for restart: --feature-gates"]),
    (["-o", "json", "--tail", "5", "get"], 2, ["unknown flag for get: --tail"]),
    (["logs", "x", "--tail", "many"], 2, ['"many"', "--tail"]),
    (["restart", "x", "-f"], 2, ["unknown flag for restart: -f"]),
    (["diff"], 2, ["diff takes one FILE"]),
    (["diff", "x.yaml", "--feature-gates", "NoSuchGate=true"], 2, ["--feature-gates"]),
    (["report"], 2, ["report takes the JobSet's NAME"]),
    (["report", "x", "-o", "yaml"], 2, ['"yaml"', "html or json"]),
    (["report", "x", "--tail", "5"], 2, ["unknown flag for report: --tail"]),
    (["-o", "svg", "report", "x"], 2, ['"svg"', "html or json"]),
])
def test_usage_errors(plugin, args, code, words):
    p = run([plugin, *args])
    assert p.returncode == code, p.stderr
    assert p.stderr.startswith("error: ") and p.stdout == ""
    for w in words:
        assert w in p.stderr, p.stderr


def test_kubeconfig_errors_are_named(plugin, tmp_path):
    p = run([plugin, "get"])
    assert p.returncode == 2 and p.stderr.startswith("error: kubeconfig") and "/nonexistent/kubeconfig" in p.stderr
    cfg = tmp_path / "config"
    cfg.write_text("apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n")
    p = run([plugin, "get", "--context", "nope"], kubeconfig=str(cfg))
    assert p.returncode == 2 and "nope" in p.stderr, p.stderr


def test_local_commands_stay_local(plugin, tmp_path):
    """`jobset describe` reads a run directory; only the kubectl forms reach a cluster."""
    p = run([BIN, "describe", "some-pod", "-d", str(tmp_path / "no-run")])
    assert p.returncode != 0 and "kubeconfig" not in p.stderr
    p = run([plugin, "describe", "some-jobset"])
    assert p.returncode == 2 and "kubeconfig" in p.stderr
