"""A run's picture, report.html (docs/local.md "A picture of the run"), and
the demo it is shown with (scripts/demo, examples/demo.yaml): a worker fails
once, the whole JobSet restarts and resumes from its checkpoint, and the
picture has a row per pod, the attempt marker and the failure's mark.

The page is checked as text (self-contained, escaped) and in a real
browser: Debian's chromium (scripts/setup-debian.sh installs it) renders it
headless, its DOM is read back and a screenshot taken. Without chromium the
browser tests fail, naming the package: they never skip.
"""
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO, wait_for

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from report_page import (EXTERNAL, browse, count_colour, groups, keep_screenshot, parse, png_pixels,  # noqa: E402
                         spans)

EX = REPO / "examples"


@pytest.fixture(scope="module")
def demo(jobset_bin, demo_dir, tmp_path_factory):
    """The demo, run once for this file as scripts/demo runs it."""
    d = tmp_path_factory.mktemp("demo")
    env = dict(os.environ, PATH=f"{demo_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}")
    start = time.monotonic()
    p = subprocess.run([str(jobset_bin), "run", "--run-dir", str(d / "run"), str(EX / "demo.yaml")], cwd=d, env=env,
                       capture_output=True, text=True, timeout=120)
    return p, d / "run", time.monotonic() - start


def test_demo_fails_once_restarts_and_resumes(demo):
    p, run_dir, took = demo
    assert p.returncode == 0, p.stdout + p.stderr
    js = json.loads((run_dir / "jobset.json").read_text())
    assert js["status"]["restarts"] == 1 and js["status"]["terminalState"] == "Completed"
    events = (run_dir / "events.log").read_text()
    # Worker rank 1 (Job 0, index 1) fails in attempt 0, and only there.
    assert len(re.findall(r"Warning Failed pod/demo-workers-0-1-\w+: worker: exit code 1 \(Error\)", events)) == 1, events
    assert "RestartJobSetFailurePolicyAction jobset/demo" in events
    leader = "".join(f.read_text() for f in sorted((run_dir / "logs").glob("demo-leader-0-0-*/leader.log")))
    assert "resumed from checkpoint at step 3" in leader
    # 4 workers send (rank+1)*step for steps 1..10: 10 * 55, resumed or not.
    assert "leader: result=550" in leader
    # Long enough to see, short enough for a first command.
    assert 1.5 < took < 30, took
    assert f"picture of the run: {run_dir}/report.html" in p.stdout


def test_demo_picture_is_self_contained_with_rows_and_marks(demo):
    p, run_dir, _ = demo
    html = (run_dir / "report.html").read_text()
    assert html.startswith("<!DOCTYPE html>") and html.rstrip().endswith("</html>")
    assert not EXTERNAL.search(html), EXTERNAL.search(html)
    doc = parse(html)
    rows = groups(doc, "row")
    assert [r["data-job"] for r in rows] == ["demo-leader-0", "demo-workers-0", "demo-workers-0", "demo-workers-1",
                                            "demo-workers-1"]
    assert {r["data-kind"] for r in rows} == {"pod"}
    assert [a["data-attempt"] for a in groups(doc, "attempt")] == ["1"]
    marks = groups(doc, "fail-mark")
    assert len(marks) == 1 and marks[0]["data-exit-code"] == "1", marks
    assert marks[0]["data-pod"].startswith("demo-workers-0-1-")
    # Text alternatives: the failure's and the restart's titles say what.
    assert any("failed at" in t and "(attempt 0): worker: exit code 1 (Error)" in t for t in doc.titles), doc.titles
    assert any(t.startswith("attempt 1 began at") and "DefaultFailurePolicy" in t for t in doc.titles)
    # One source of numbers: the goodput the summary printed.
    goodput = json.loads((run_dir / "jobset.json").read_text())["phaseSummary"]["goodput"]
    assert f"<strong>{goodput:.2f}</strong>" in html
    assert f"goodput {goodput:.2f}" in p.stdout


def test_failed_run_marks_exit_code_and_escapes_messages(run, tmp_path):
    """A command that cannot be started: its StartError message carries the
    command's name, which goes through the page escaped."""
    r = run("""
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: broken}
spec:
  replicatedJobs:
  - name: w
    replicas: 1
    template:
      spec:
        backoffLimit: 0
        template:
          spec:
            restartPolicy: Never
            containers:
            - name: c
              image: busybox
              command: ["/nonexistent/<script>alert(1)</script>"]
""")
    assert r.rc == 1, r.stdout + r.stderr
    html = (r.dir / "report.html").read_text()
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    doc = parse(html)
    assert doc.by_class["Failed"], "the result is not marked Failed"
    marks = groups(doc, "fail-mark")
    assert [m["data-exit-code"] for m in marks] == ["128"], marks
    assert "exit 128 (StartError)" in html


def test_interrupted_run_writes_its_picture(jobset_bin, demo_dir, tmp_path):
    manifest = tmp_path / "sleep.yaml"
    manifest.write_text("""
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: sleepy}
spec:
  replicatedJobs:
  - name: w
    replicas: 1
    template:
      spec:
        parallelism: 2
        completions: 2
        template:
          spec:
            restartPolicy: Never
            terminationGracePeriodSeconds: 1
            containers:
            - name: c
              image: busybox
              command: [sleep, "600"]
""")
    run_dir = tmp_path / "run"
    proc = subprocess.Popen([str(jobset_bin), "run", "--run-dir", str(run_dir), str(manifest)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        def running():
            s = run_dir / "state.json"
            try:
                pods = json.loads(s.read_text())["pods"]
            except (OSError, ValueError):
                return False
            return len(pods) == 2 and all(p["status"].get("phase") == "Running" for p in pods)

        wait_for(running, 30, "two running pods")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, out + err
    assert f"picture of the run: {run_dir}/report.html" in out
    doc = parse((run_dir / "report.html").read_text())
    assert doc.by_class["Interrupted"]
    assert len(groups(doc, "row")) == 2 and not groups(doc, "fail-mark")
    # Deleted while running: their stop is drawn, not a failure.
    assert len(spans(doc, "terminating")) == 2


# ---- in a real browser (report_page.browse) ----

def test_picture_in_chromium_dom(demo, tmp_path):
    _, run_dir, _ = demo
    dom = browse(run_dir / "report.html", tmp_path, "--dump-dom")
    doc = parse(dom)
    # The browser built the SVG's rows, markers and marks from the page.
    assert len(groups(doc, "row")) == 5, dom[:2000]
    assert len(groups(doc, "rjob")) == 2 and len(groups(doc, "job")) == 3
    assert [a["data-attempt"] for a in groups(doc, "attempt")] == ["1"]
    assert [m["data-exit-code"] for m in groups(doc, "fail-mark")] == ["1"]
    assert len(spans(doc, "running")) >= 5 and spans(doc, "pending")
    assert "RestartJobSetFailurePolicyAction" in dom


def test_picture_in_chromium_screenshot(demo, tmp_path):
    _, run_dir, _ = demo
    shot = tmp_path / "report.png"
    browse(run_dir / "report.html", tmp_path, f"--screenshot={shot}", "--window-size=1200,800")
    assert shot.exists() and shot.stat().st_size > 10_000, "no screenshot, or an empty one"
    w, h, bpp, rows = png_pixels(shot)
    assert (w, h) == (1200, 800)
    # Painted: the running bars' blue and the failure's red are on screen
    # (the timeline is above the fold).
    assert count_colour(rows, bpp, (0x3b, 0x7d, 0xd8)) > 2000, "no running bars in the screenshot"
    assert count_colour(rows, bpp, (0xd3, 0x3a, 0x30)) > 20, "no failure mark in the screenshot"
    keep_screenshot(shot, "report.png")
