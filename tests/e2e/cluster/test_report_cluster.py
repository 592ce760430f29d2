"""`kubectl jobset report NAME -o html|json` (issue 25 part 3, the cluster
half; docs/kubectl-jobset.md "report"): the picture `jobset run` writes as
report.html, drawn for a JobSet on hack/cluster from what the API holds.

One JobSet restarts once: worker 1 fails in attempt 0 with exit code 3 (kwok
pods: docs/cluster.md "Annotations"). A test finalizer first holds the pods
of attempt 0, so the report sees them as objects (the failure's exit code
from containerStatuses); once released they are deleted, and the report
rebuilds them from their events (no exit code); once the events are gone
too (deleted here, as their TTL would), only "no record" rows are left.
Each page is checked as text and as a DOM, and rendered once in headless
chromium. Then the errors: an unknown name, and a reader without the
permission to list pods.
"""
import json
import sys
from pathlib import Path

from conftest import (ensure_sa, jobset, mint_token, rjob, wait_for, wait_terminal,  # noqa: F401
                      write_token_kubeconfig)
from test_kubectl_jobset import HOLD, kj, pods, release

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from report_page import (EXTERNAL, browse, count_colour, groups, keep_screenshot, parse, png_pixels,  # noqa: E402
                         spans)

JOBS = ["rep-leader-0", "rep-w-0", "rep-w-1"]


def report(kube, ns, fmt="html"):
    p = kj(kube, "report", "rep", "-n", ns, "-o", fmt, check=True)
    return p.stdout


def restarted_once(kube, ns):
    """The JobSet of the module docstring; returns when it has Completed,
    attempt 0's pods still held."""
    fail = {"jobset-test/run-for": "2s", "jobset-test/fail-if-job-index": "1",
            "jobset-test/fail-if-restart-attempt": "0", "jobset-test/exit-code": "3"}
    js = jobset("rep", [rjob("leader", 1, annotations={"jobset-test/run-for": "2s"}), rjob("w", 2, annotations=fail)],
                failurePolicy={"maxRestarts": 1})
    for r in js["spec"]["replicatedJobs"]:
        r["template"]["spec"]["template"]["metadata"]["finalizers"] = [HOLD]
    kube.create(js, ns)
    done = wait_terminal(kube, "rep", ns, "Completed", timeout=120)
    assert done["status"]["restarts"] == 1
    wait_for("3 pods of attempt 0 held", lambda: len(pods(kube, ns, "rep", 0)) == 3)


def check_page(html):
    assert html.startswith("<!DOCTYPE html>") and html.rstrip().endswith("</html>")
    assert not EXTERNAL.search(html), EXTERNAL.search(html)
    assert '<meta name="generator" content="kubectl jobset report">' in html
    doc = parse(html)
    rows = groups(doc, "row")
    assert sorted({r["data-job"] for r in rows}) == JOBS, rows
    assert len(rows) == 3 and {r["data-kind"] for r in rows} == {"pod"}, rows
    assert [a["data-attempt"] for a in groups(doc, "attempt")] == ["1"]
    assert doc.by_class["Completed"], "the result is not marked Completed"
    # No numbers made up: the totals are left out, saying why.
    assert "Phase totals and goodput are not shown" in html and "goodput</strong>" not in html
    assert "What this page cannot show" in html
    return doc, rows


def test_report_of_a_restart_as_it_fades(kube, ctl, ns, tmp_path):
    restarted_once(kube, ns)
    try:
        # 1. Attempt 0's pods are still objects: all seen, the failure with its exit code.
        html = report(kube, ns)
        doc, rows = check_page(html)
        assert all(r["data-from-events"] == "0" and r["data-no-record"] == "0" for r in rows), rows
        assert sum(int(r["data-pods"]) for r in rows) == 6, rows
        marks = groups(doc, "fail-mark")
        assert len(marks) == 1 and marks[0]["data-exit-code"] == "3" and marks[0]["data-source"] == "seen", marks
        failed_pod = marks[0]["data-pod"]
        assert failed_pod.startswith("rep-w-1-0-"), failed_pod
        assert "exit 3 (Error)" in html
        assert any("attempt 1 began at" in t and "RestartJobSetFailurePolicyAction" in t for t in doc.titles), doc.titles
        js1 = json.loads(report(kube, ns, "json"))
        assert js1["origin"] == "cluster" and js1["restarts"] == 1 and js1["phases"] is None
        assert sorted((p["attempt"], p["source"]) for p in js1["pods"]) == [(0, "seen")] * 3 + [(1, "seen")] * 3
        fp = [p for p in js1["pods"] if p["end"] == "failed"]
        assert [(p["name"], p["exitCode"], p["reason"]) for p in fp] == [(failed_pod, 3, "Error")], fp
        assert [(r["attempt"], r["reason"]) for r in js1["restartsAt"]] == [(1, "RestartJobSetFailurePolicyAction")]
    finally:
        release(kube, ns)
    wait_for("attempt 0 pods gone", lambda: not pods(kube, ns, "rep", 0))

    # 2. Attempt 0's pods are gone: rebuilt from their Jobs' events; the
    # failed one is known from its Job's BackoffLimitExceeded, its exit code not.
    html = report(kube, ns)
    doc, rows = check_page(html)
    assert [r["data-from-events"] for r in rows] == ["1", "1", "1"], rows
    marks = groups(doc, "fail-mark")
    assert [(m["data-pod"], m["data-exit-code"], m["data-source"]) for m in marks] == [(failed_pod, "", "events")], marks
    assert "its exit code is not recorded" in html and "BackoffLimitExceeded" in html
    assert spans(doc, "unrecorded"), "attempt 0 is not drawn as unrecorded"
    js2 = json.loads(report(kube, ns, "json"))
    old = [p for p in js2["pods"] if p["attempt"] == 0]
    assert {p["source"] for p in old} == {"events"} and len(old) == 3, old
    # The leader and worker 0 ran as long as worker 1: their Jobs' Completed
    # events may or may not have come before the restart deleted them.
    assert sorted(p["end"] for p in old if p["end"] != "failed") in (["succeeded"] * 2, ["succeeded", "unknown"],
                                                                     ["unknown"] * 2), old
    assert [p["name"] for p in old if p["end"] == "failed"] == [failed_pod]
    assert [p.get("exitCode", "absent") for p in js2["pods"] if p["end"] == "failed"] == [None]

    # The picture in a real browser, once: its DOM and a screenshot.
    page = tmp_path / "run.html"
    page.write_text(html)
    dom = parse(browse(page, tmp_path, "--dump-dom"))
    assert len(groups(dom, "row")) == 3 and [a["data-attempt"] for a in groups(dom, "attempt")] == ["1"]
    assert [m["data-source"] for m in groups(dom, "fail-mark")] == ["events"]
    shot = tmp_path / "run.png"
    browse(page, tmp_path, f"--screenshot={shot}", "--window-size=1200,800")
    assert shot.exists() and shot.stat().st_size > 10_000, "no screenshot, or an empty one"
    w, h, bpp, px = png_pixels(shot)
    assert (w, h) == (1200, 800)
    assert count_colour(px, bpp, (0x3b, 0x7d, 0xd8)) > 500, "no running bars in the screenshot"
    assert count_colour(px, bpp, (0xd3, 0x3a, 0x30)) > 20, "no failure mark in the screenshot"
    keep_screenshot(shot, "report-cluster.png")

    # 3. The events expire (deleted here, as --event-ttl would): attempt 0
    # has no record left; the restart is placed at attempt 1's first Job.
    kube.run("delete", "events.events.k8s.io", "--all", "-n", ns)
    wait_for("events gone", lambda: not kube.events(ns))
    html = report(kube, ns)
    doc, rows = check_page(html)
    assert [(r["data-from-events"], r["data-no-record"]) for r in rows] == [("0", "1")] * 3, rows
    assert not groups(doc, "fail-mark")
    assert "placed at the creation of the attempt" in html and "reason not recorded" in html
    assert "3 pods of earlier attempts left no record" in html


def test_report_errors_name_what_is_missing(kube, ctl, ns, tmp_path):
    nf = kj(kube, "report", "nope", "-n", ns, check=False)
    assert nf.returncode == 1 and f'"nope" not found in namespace "{ns}"' in nf.stderr, nf.stderr
    bad = kj(kube, "report", "nope", "-n", ns, "-o", "yaml", check=False)
    assert bad.returncode == 2 and '"yaml"' in bad.stderr and "html or json" in bad.stderr
    # A reader who may get JobSets but not list pods: the server's
    # Forbidden, naming the resource and the namespace; nothing on stdout.
    kube.create(jobset("rep", [rjob("w", 1)]), ns)
    wait_terminal(kube, "rep", ns, "Completed")
    ensure_sa(kube, "reader", ns)
    kube.run("create", "role", "jobsets-only", "-n", ns, "--verb=get,list", "--resource=jobsets.jobset.x-k8s.io,jobs.batch")
    kube.run("create", "rolebinding", "jobsets-only", "-n", ns, "--role=jobsets-only", f"--serviceaccount={ns}:reader")
    kc = write_token_kubeconfig(tmp_path / "reader.kubeconfig", mint_token(kube, "reader", ns), namespace=ns)
    env = dict(kube.env, KUBECONFIG=kc)
    p = kj(kube, "report", "rep", "-n", ns, check=False, env=env)
    assert p.returncode == 1 and p.stdout == "", p.stdout[:200]
    assert "Forbidden" in p.stderr and '"pods"' in p.stderr and ns in p.stderr, p.stderr
    # Pods readable, events not: the page is drawn and says what it lacks.
    kube.run("create", "role", "pods-too", "-n", ns, "--verb=list", "--resource=pods")
    kube.run("create", "rolebinding", "pods-too", "-n", ns, "--role=pods-too", f"--serviceaccount={ns}:reader")
    p = wait_for("pods readable by the reader",
                 lambda: (lambda q: q if q.returncode == 0 else None)(kj(kube, "report", "rep", "-n", ns, env=env)))
    assert "cannot be read" in p.stderr and "ignoring" in p.stderr, p.stderr
    assert "The events could not be read (Forbidden" in p.stdout
