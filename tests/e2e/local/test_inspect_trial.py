"""What a new user's trial of the inspection commands found: `logs -f`
from before the first output (every line, once, in order, rotated files
included; said on stderr when rotation outruns it), `logs -f` right after
`run --detach`, `logs --tail` with lines longer than 64 KiB, `ps` and
`describe` after the runner was killed, `down --timeout 0`, and usage
errors on one line."""
import json
import os
import re
import signal
import subprocess

import pytest

from conftest import jobset_yaml, wait_for


def js(jobset_bin, *args, cwd, timeout=120):
    return subprocess.run([str(jobset_bin), *args], cwd=cwd, capture_output=True, text=True, timeout=timeout)


def detach(jobset_bin, tmp_path, manifest, *args):
    (tmp_path / "m.yaml").write_text(manifest)
    run_dir = tmp_path / "run"
    r = js(jobset_bin, "run", "--detach", "--run-dir", str(run_dir), *args, str(tmp_path / "m.yaml"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    return run_dir


@pytest.fixture
def runs(jobset_bin):
    """Run directories to bring down at the end, whatever the test did."""
    dirs = []
    yield dirs
    for d in dirs:
        subprocess.run([str(jobset_bin), "down", "-d", str(d), "--timeout", "10"], capture_output=True, timeout=60)


def state(run_dir):
    try:
        return json.loads((run_dir / "state.json").read_text())
    except (OSError, ValueError):
        return None


# The pod waits for go-<host> in the run's work directory, then prints
# 1..N: the follower below starts before the pod exists and before its
# first line.
def seq_yaml(n):
    return jobset_yaml("seq", f"until [ -e go-$HOSTNAME ]; do sleep 0.05; done; seq 1 {n}")


def release_when_followed(run_dir):
    """Let the pod print once `logs -f` watches its log: the follower makes
    the pod's log directory (the runner makes it at the first output, which
    waits for go-<host>) before it watches it (docs/local.md)."""
    wait_for(lambda: any(run_dir.glob("logs/seq-w-0-0-*")), what="logs -f to watch the log")
    (run_dir / "work" / "go-seq-w-0-0").touch()


def follow_seq(jobset_bin, tmp_path, run_dir):
    """`jobset logs -f` of the seq pod, started before it prints, released
    once it watches; returns (exit status, stdout, stderr)."""
    follow = subprocess.Popen([str(jobset_bin), "logs", "-f", "-d", str(run_dir), "seq-w-0-0"], cwd=tmp_path,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    release_when_followed(run_dir)
    out, err = follow.communicate(timeout=120)
    return follow.returncode, out, err


@pytest.mark.parametrize("opts", [[], ["--log-max-bytes", "64Ki", "--log-max-files", "40"]],
                         ids=["one-file", "rotated"])
def test_logs_follow_from_before_the_first_line(jobset_bin, tmp_path, runs, opts):
    # 300000 lines are 2 MB: with 40 files of 64 KiB every line stays on
    # disk, so every line must come out, once and in order.
    run_dir = detach(jobset_bin, tmp_path, seq_yaml(300000), *opts)
    runs.append(run_dir)
    # Right after --detach: the pod may not be in the state yet; -f waits.
    rc, out, err = follow_seq(jobset_bin, tmp_path, run_dir)
    assert rc == 0, err
    assert err == ""
    assert out == "".join(f"{i}\n" for i in range(1, 300001))
    if opts:
        assert any(run_dir.glob("logs/*/main.log.30")), "the log was rotated"


def test_logs_follow_says_when_rotation_outran_it(jobset_bin, tmp_path, runs):
    # 15 MB through two files of 64 KiB: the follower may well fall behind.
    # Whatever it prints is whole lines, in order, each once; every jump is
    # announced on stderr.
    run_dir = detach(jobset_bin, tmp_path, seq_yaml(2000000), "--log-max-bytes", "64Ki", "--log-max-files", "2")
    runs.append(run_dir)
    rc, out, err = follow_seq(jobset_bin, tmp_path, run_dir)
    assert rc == 0, err
    nums = [int(x) for x in out.splitlines()]
    assert nums and nums[-1] == 2000000
    assert all(b > a for a, b in zip(nums, nums[1:])), "out of order or repeated"
    jumps = sum(1 for a, b in zip(nums, nums[1:]) if b != a + 1) + (nums[0] != 1)
    warned = err.count("rotated faster than it was read")
    assert jumps <= warned, (err, nums[0], [(a, b) for a, b in zip(nums, nums[1:]) if b != a + 1][:5])
    assert all(re.match(r"jobset logs: the log of seq-w-0-0-\w+/main rotated faster than it was read: .*lines "
                        r"(are|may be) missing here$", l) for l in err.splitlines()), err


def test_logs_tail_keeps_long_lines_whole(run, jobset_bin):
    # A 200 KB line, a short one, a 100 KB line that a 64 KiB cap splits
    # across two files, and a last line without a newline.
    r = run(jobset_yaml("long", 'head -c 200000 /dev/zero | tr "\\0" a; echo; echo short; '
                        'head -c 100000 /dev/zero | tr "\\0" b; echo; printf end'),
            "--log-max-bytes", "64Ki", "--log-max-files", "10")
    assert r.rc == 0, r.stderr
    assert any(r.dir.glob("logs/*/main.log.2")), "the lines span rotated files"

    def logs(*a):
        return subprocess.run([str(jobset_bin), "logs", "-d", str(r.dir), *a, "long-w-0-0"], capture_output=True,
                              text=True, timeout=60)

    full = logs()
    assert full.stdout == "a" * 200000 + "\nshort\n" + "b" * 100000 + "\nend"
    assert logs("--tail", "3").stdout == "short\n" + "b" * 100000 + "\nend"
    assert logs("--tail", "4").stdout == full.stdout
    assert logs("--tail", "0").stdout == ""


def test_ps_after_the_runner_was_killed(jobset_bin, tmp_path, runs):
    run_dir = detach(jobset_bin, tmp_path, jobset_yaml("stale", "until false; do sleep 0.05; done", replicas=2))
    runs.append(run_dir)
    wait_for(lambda: (s := state(run_dir)) and sum(p["status"]["phase"] == "Running" for p in s["pods"]) == 2,
             what="2 running pods")
    os.kill(state(run_dir)["runner"]["pid"], signal.SIGKILL)
    wait_for(lambda: "(the runner died)" in js(jobset_bin, "ps", "-d", str(run_dir), cwd=tmp_path).stdout,
             what="ps to see the runner gone")
    ps = js(jobset_bin, "ps", "-d", str(run_dir), cwd=tmp_path)
    rows = [l.split() for l in ps.stdout.splitlines()[2:]]
    assert len(rows) == 2 and all(r[1] == "0/1" and r[2] == "Unknown" for r in rows), ps.stdout
    assert "Running" not in "\n".join(ps.stdout.splitlines()[1:])
    d = js(jobset_bin, "describe", "-d", str(run_dir), "stale-w-0-0", cwd=tmp_path)
    assert "Status:         Unknown (the runner died; it last said Running, phase Running)" in d.stdout, d.stdout


def test_down_timeout_zero_stops_at_once(jobset_bin, tmp_path, runs):
    # The pod ignores SIGTERM and has a 60 s grace period: only the kill
    # that --timeout 0 asks for at once ends it.
    run_dir = detach(jobset_bin, tmp_path, jobset_yaml("stubborn", 'trap "" TERM; until false; do sleep 0.05; done',
                                                       grace=60))
    runs.append(run_dir)
    wait_for(lambda: (s := state(run_dir)) and s["pods"] and s["pods"][0]["status"]["phase"] == "Running",
             what="a running pod")
    down = js(jobset_bin, "down", "-d", str(run_dir), "--timeout", "0", cwd=tmp_path, timeout=30)
    assert down.returncode == 0, down.stderr
    assert "takes" not in down.stderr
    s = state(run_dir)
    assert s["runner"]["final"] and s["runner"]["state"] == "Interrupted"


@pytest.mark.parametrize("args,message", [
    (["logs", "--bogus", "p"], "jobset logs: unknown option '--bogus'"),
    (["logs"], "jobset logs: a POD is needed"),
    (["logs", "a", "b"], "jobset logs: unexpected argument 'b'"),
    (["logs", "--tail", "x", "p"], "jobset logs: --tail takes a whole number from 0 to 2147483647, not 'x'"),
    (["ps", "x"], "jobset ps: unexpected argument 'x'"),
    (["ps", "-f"], "jobset ps: --follow is not an option of ps"),
    (["ps", "--tail", "3"], "jobset ps: --tail is not an option of ps"),
    (["describe", "-x", "p"], "jobset describe: unknown option '-x'"),
    (["describe"], "jobset describe: a POD is needed"),
    (["down", "--timeout", "-1"], "jobset down: --timeout takes a whole number from 0 to 86400, not '-1'"),
])
def test_usage_errors_name_the_command(jobset_bin, tmp_path, args, message):
    r = js(jobset_bin, *args, cwd=tmp_path)
    assert r.returncode == 2
    lines = r.stderr.splitlines()
    assert lines[0] == message
    assert lines[1].startswith(f"usage: jobset {args[0]} ") and len(lines) == 3, r.stderr
