"""Issue 11, hygiene: capped and rotated logs, a fresh run directory per run
(or an explicit reuse), a per-user run root, the pods' working directory,
the live view clipped to the terminal (with stopping pods), and the demo
without namespaces."""
import fcntl
import os
import pty
import re
import select
import stat
import struct
import subprocess
import termios
import time

from conftest import REPO, jobset_yaml

EX = REPO / "examples"


# 5 MB of numbered 100-byte lines, then a last line.
CHATTY = jobset_yaml("chatty", 'i=0; while [ $i -lt 50000 ]; do printf "%099d\\n" $i; i=$((i+1)); done; echo the-end')


def test_logs_are_capped_and_rotated(run, jobset_bin):
    r = run(CHATTY, "--log-max-bytes", "64Ki", "--log-max-files", "3", timeout=120)
    assert r.rc == 0, r.stdout + r.stderr
    (pod,) = [p for p in (r.dir / "logs").iterdir()]
    files = sorted(f.name for f in pod.iterdir())
    assert files == ["main.log", "main.log.1", "main.log.2"], files
    assert all((pod / f).stat().st_size <= 64 * 1024 for f in files)
    # The newest bytes are kept, in order across the files.
    text = "".join((pod / f).read_text() for f in ("main.log.2", "main.log.1", "main.log"))
    assert text.endswith("%099d\nthe-end\n" % 49999)
    tail = subprocess.run([str(jobset_bin), "logs", "-d", str(r.dir), "--tail", "2", "chatty-w-0-0"],
                          capture_output=True, text=True, timeout=30)
    assert tail.stdout == "%099d\nthe-end\n" % 49999
    whole = subprocess.run([str(jobset_bin), "logs", "-d", str(r.dir), "chatty-w-0-0"], capture_output=True,
                           text=True, timeout=30)
    assert whole.stdout == text


def test_log_cap_options_are_checked(run):
    r = run(CHATTY, "--log-max-bytes", "10")
    assert r.rc == 2 and "--log-max-bytes must be at least 1024 bytes" in r.stderr, r.stderr
    # A suffix it does not know is called that, not "too small".
    r = run(CHATTY, "--log-max-bytes", "10mi")
    assert r.rc == 2 and "optional suffix K, Ki, M, Mi, G or Gi" in r.stderr, r.stderr
    r = run(CHATTY, "--log-max-files", "0")
    assert r.rc == 2 and "--log-max-files" in r.stderr


HELLO = jobset_yaml("hello", 'echo "hello from $HOSTNAME"; echo made > made-by-pod.txt')


def test_a_run_dir_is_fresh_unless_reuse_is_asked(run, tmp_path):
    first = run(HELLO)
    assert first.rc == 0, first.stderr
    (old_pod,) = [p.name for p in (first.dir / "logs").iterdir()]
    again = run(HELLO)
    assert again.rc == 2
    assert "is not empty" in again.stderr and "--reuse-run-dir" in again.stderr
    reused = run(HELLO, "--reuse-run-dir")
    assert reused.rc == 0, reused.stderr
    (new_pod,) = [p.name for p in (reused.dir / "logs").iterdir()]
    assert new_pod != old_pod  # the old run's logs are gone, not mixed in
    assert reused.events().count("Started pod/") == 1
    assert (reused.dir / "work" / "made-by-pod.txt").exists()  # work/ is kept


def test_pods_work_in_the_run_directory_by_default(run, tmp_path):
    r = run(HELLO)
    assert r.rc == 0, r.stderr
    assert (r.dir / "work" / "made-by-pod.txt").read_text() == "made\n"
    assert not (tmp_path / "made-by-pod.txt").exists()  # the caller's directory stays clean


def test_workdir_pod_and_cwd(run, tmp_path):
    r = run(HELLO, "--workdir", "pod")
    assert r.rc == 0, r.stderr
    assert (r.dir / "work" / "hello-w-0-0" / "made-by-pod.txt").exists()
    r = run(HELLO, "--workdir", "cwd", "--reuse-run-dir")
    assert r.rc == 0, r.stderr
    assert (tmp_path / "made-by-pod.txt").exists()
    r = run(HELLO, "--workdir", "elsewhere")
    assert r.rc == 2 and "--workdir takes run, pod or cwd" in r.stderr


def test_default_run_root_is_per_user_and_private(jobset_bin, tmp_path):
    (tmp_path / "HELLO.yaml").write_text(HELLO)
    env = {"PATH": "/usr/bin:/bin", "TMPDIR": str(tmp_path)}
    r = subprocess.run([str(jobset_bin), "run", "-q", str(tmp_path / "HELLO.yaml")], env=env, cwd=tmp_path,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    root = tmp_path / f"jobset-run-{os.getuid()}"
    assert stat.S_IMODE(root.stat().st_mode) == 0o700
    (run_dir,) = [d for d in root.iterdir() if d.name.startswith("hello-")]
    assert (run_dir / "jobset.json").exists()
    assert (root / "latest").resolve() == run_dir.resolve()
    # A root others could write to is refused, not used.
    root.chmod(0o777)
    r = subprocess.run([str(jobset_bin), "run", "-q", str(tmp_path / "HELLO.yaml")], env=env, cwd=tmp_path,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "only you can write to" in r.stderr


def test_no_namespaces_runs_the_demo(run):
    r = run(EX / "demo.yaml", "--no-namespaces")
    assert r.rc == 0, r.stdout + r.stderr + r.logs("demo-", "worker")
    assert "leader: result=550" in r.logs("demo-leader-0-0", "leader")
    assert "Warning Degraded jobset/demo:" in r.events()


# --- the live view, on a pseudo-terminal of 12 rows ---

def _pty_run(jobset_bin, demo_dir, tmp_path, manifest, rows, timeout=60, cols=120):
    (tmp_path / "v.yaml").write_text(manifest)
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    env = dict(os.environ, PATH=f"{demo_dir}:/usr/bin:/bin")
    p = subprocess.Popen([str(jobset_bin), "run", "--run-dir", str(tmp_path / "run"), str(tmp_path / "v.yaml")],
                         stdin=slave, stdout=slave, stderr=slave, cwd=tmp_path, env=env)
    os.close(slave)
    out = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if select.select([master], [], [], 0.5)[0]:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the runner closed the terminal
                break
            if not chunk:
                break
            out += chunk
        elif p.poll() is not None:
            break
    os.close(master)
    assert p.wait(timeout=10) in (0, 1), out.decode(errors="replace")
    return out.decode(errors="replace")


def _most_erased(out):
    """The most lines one redraw of the view erased: its height."""
    erase = "\x1b[1A\x1b[2K"
    return max((len(m.group(0)) // len(erase) for m in re.finditer(r"(?:\x1b\[1A\x1b\[2K)+", out)), default=0)


def test_live_view_is_clipped_to_the_terminal(jobset_bin, demo_dir, tmp_path):
    rjobs = "".join(f"""
  - name: r{i:02d}
    template:
      spec:
        template:
          spec:
            restartPolicy: Never
            containers: [{{name: c, image: busybox, command: [sh, -c, "sleep 1"]}}]""" for i in range(30))
    manifest = f"""
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {{name: wide}}
spec:
  replicatedJobs:{rjobs}
"""
    out = _pty_run(jobset_bin, demo_dir, tmp_path, manifest, rows=12)
    assert 0 < _most_erased(out) <= 11, _most_erased(out)
    assert "more ReplicatedJobs (jobset ps)" in out
    assert "jobset wide Completed" in out
    # Narrower than its rows: every line of the view is cut to the width
    # (less one column), so none wraps into a row the redraw would not erase.
    (tmp_path / "narrow").mkdir()
    out = _pty_run(jobset_bin, demo_dir, tmp_path / "narrow", manifest, rows=12, cols=60)
    assert 0 < _most_erased(out) <= 11, _most_erased(out)
    plain = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", out)
    view = [l for l in plain.replace("\r", "").split("\n")
            if l.startswith(("jobset wide  ", "  REPLICATEDJOB", "  r0", "  r1", "  r2", "  ..."))]
    assert view and max(map(len, view)) <= 59, [l for l in view if len(l) > 59]


STOPPING = """
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: slowstop}
spec:
  failurePolicy: {maxRestarts: 1}
  replicatedJobs:
  - name: leader
    template:
      spec:
        backoffLimit: 0
        template:
          spec:
            restartPolicy: Never
            terminationGracePeriodSeconds: 3
            containers:
            - name: c
              image: busybox
              command: [sh, -c, 'trap "sleep 1.5; exit 0" TERM; [ -e done ] && exit 0; while :; do sleep 0.05; done']
  - name: worker
    template:
      spec:
        backoffLimit: 0
        template:
          spec:
            restartPolicy: Never
            containers:
            - name: c
              image: busybox
              command: [sh, -c, 'if [ -e done ]; then exit 0; fi; sleep 0.5; touch done; exit 1']
"""


def test_live_view_shows_stopping_pods(jobset_bin, demo_dir, tmp_path):
    out = _pty_run(jobset_bin, demo_dir, tmp_path, STOPPING, rows=40)
    # While the JobSet restarts, the old leader takes 1.5 s to stop: the
    # view shows it under STOPPING instead of looking hung.
    assert re.search(r"\n  leader +\S+ +\d+ +\d+ +\d+ +\d+ +1 ", out), out
    assert "jobset slowstop Completed" in out
