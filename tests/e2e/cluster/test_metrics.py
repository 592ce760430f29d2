"""Restart, phase and goodput metrics against a timeline (issue 16 item 2;
docs/metrics.md).

A JobSet with one restart runs on the test control plane while the test
records its timeline: each poll of the JobSet is stamped with the wall
clock before the request and after the answer, and the phase the object
names (the same rule as core/phase.h, restated below) is derived. A phase
change the controller made happened after the last poll that did not show
it began, and no later than the first poll that showed it answered, plus
SLACK: the controller reads its clock for the change after its status write
was answered and its cache has the write (ctrl/phases.c). Each scraped value
is checked against the interval those bounds give. Waits poll conditions;
nothing sleeps in place of one.
"""
import base64
import http.client
import json
import math
import os
import re
import ssl
import sys
import tempfile
import time
from pathlib import Path

import yaml

from conftest import jobset, rjob, wait_for

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import monitoring  # noqa: E402

# From the answer to the status write to the controller's clock read: the
# read-your-writes wait on its own cache (a watch event on 127.0.0.1) and
# the event and metric calls - milliseconds; generous for a loaded 2-core
# machine or a sanitizer build.
SLACK = 0.5
# The timeline's polls: one GET on a kept-alive connection (a few ms), then
# this pause. The bounds of a change are as wide as a poll plus this.
POLL_GAP_S = 0.02
RUN_FOR = 4  # seconds each pod runs (jobset-test/run-for)
FAIL_ONCE = {"jobset-test/fail-if-job-index": "0", "jobset-test/fail-if-restart-attempt": "0",
             "jobset-test/exit-code": "3", "jobset-test/run-for": f"{RUN_FOR}s"}
LONG = {"jobset-test/run-for": "1h"}


def phase(obj):
    """docs/metrics.md "Phases", first match wins."""
    st = obj.get("status") or {}
    conds = {c["type"]: c["status"] for c in st.get("conditions") or []}
    if conds.get("Completed") == "True" or conds.get("Failed") == "True":
        return "finished"
    if obj["spec"].get("suspend"):
        return "suspended"
    if conds.get("RestartingJobSet") == "True":
        return "restarting"
    want = sum(r.get("replicas", 1) for r in obj["spec"]["replicatedJobs"])
    have = sum(r.get("ready", 0) + r.get("succeeded", 0) for r in st.get("replicatedJobsStatus") or [])
    return "running" if want == have else "pending"


def _api_connection():
    """A kept-alive HTTPS connection to the API server as the admin of
    $JOBSET_TEST_KUBECONFIG (kubectl takes a few hundred ms a call; the
    bounds below are as wide as a poll). The key is written to a private
    temporary file only while the context loads it."""
    cfg = yaml.safe_load(Path(os.environ["JOBSET_TEST_KUBECONFIG"]).read_text())
    cluster, user = cfg["clusters"][0]["cluster"], cfg["users"][0]["user"]
    ctx = ssl.create_default_context(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
    with tempfile.NamedTemporaryFile("wb") as cert, tempfile.NamedTemporaryFile("wb") as key:
        cert.write(base64.b64decode(user["client-certificate-data"]))
        key.write(base64.b64decode(user["client-key-data"]))
        cert.flush()
        key.flush()
        ctx.load_cert_chain(cert.name, key.name)
    host, port = re.fullmatch(r"https://([^:/]+):(\d+)/?", cluster["server"]).groups()
    return http.client.HTTPSConnection(host, int(port), context=ctx, timeout=10)


class Timeline:
    """Polls of one JobSet: (t_before, t_after, phase, object)."""

    def __init__(self, name, ns):
        self.path = f"/apis/jobset.x-k8s.io/v1alpha2/namespaces/{ns}/jobsets/{name}"
        self.conn = _api_connection()
        self.polls = []

    def poll(self):
        t0 = time.time()
        self.conn.request("GET", self.path)
        r = self.conn.getresponse()
        body = r.read()
        t1 = time.time()
        if r.status == 404:
            return None
        assert r.status == 200, (r.status, body[:200])
        obj = json.loads(body)
        self.polls.append((t0, t1, phase(obj), obj))
        return obj

    def until(self, what, pred, timeout=120):
        """Poll until pred(object) holds."""
        deadline = time.monotonic() + timeout
        while True:
            obj = self.poll()
            if obj and pred(obj):
                return obj
            assert time.monotonic() < deadline, f"timed out after {timeout}s waiting for {what}; last: {obj!r}"
            time.sleep(POLL_GAP_S)

    def transitions(self):
        """[(phase, lo, hi)]: each phase change and when it happened."""
        out = []
        for i, (t0, t1, ph, _) in enumerate(self.polls):
            if i == 0 or ph != self.polls[i - 1][2]:
                lo = self.polls[i - 1][0] if i else -math.inf
                out.append((ph, lo, t1 + SLACK))
        return out


def scrape(ctl):
    """{(name, frozenset(labels)): value} of every sample."""
    out = {}
    for line in ctl.metrics().splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.fullmatch(r"(\w+)(?:\{(.*)\})? (\S+)", line)
        assert m, line
        labels = frozenset(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
        out[(m.group(1), labels)] = float(m.group(3))
    return out


def value(samples, name, **labels):
    return samples.get((name, frozenset(labels.items())), 0.0)


def within(what, got, lo, hi):
    assert lo <= got <= hi, f"{what} = {got:.3f}, want within [{lo:.3f}, {hi:.3f}]"


def test_one_restart_against_its_timeline(kube, ctl, ns):
    before = scrape(ctl)
    tl = Timeline("gp", ns)
    t_create0 = time.time()
    kube.create(jobset("gp", [rjob("w", 2, annotations=FAIL_ONCE)], failurePolicy={"maxRestarts": 1}), ns)
    t_create1 = time.time()
    done = tl.until("Completed", lambda o: phase(o) == "finished", timeout=180)
    assert done["status"]["restarts"] == 1 and done["status"].get("terminalState") == "Completed", done["status"]
    tr = tl.transitions()
    assert [p for p, _, _ in tr] == ["pending", "running", "restarting", "running", "finished"], tr
    (_, _, _), (_, run1_lo, run1_hi), (_, rst_lo, rst_hi), (_, run2_lo, run2_hi), (_, fin_lo, fin_hi) = tr
    # The pending phase and the creation's wait start at creationTimestamp,
    # which the API server stamps during the create, in whole seconds.
    c_lo, c_hi = math.floor(t_create0), t_create1
    after = scrape(ctl)
    name = dict(jobset_name="gp", namespace=ns)

    # Restarts by reason and action: the pod exited 3 with backoffLimit 0.
    restarts = {k: v - before.get(k, 0.0) for k, v in after.items()
                if k[0] == "jobset_restarts_by_reason_total" and v - before.get(k, 0.0) > 0}
    assert restarts == {("jobset_restarts_by_reason_total",
                         frozenset({("reason", "BackoffLimitExceeded"), ("action", "RestartJobSet")})): 1.0}, restarts

    # Time to all-ready: one observation each for the creation and the restart.
    def hist_delta(trigger):
        n = value(after, "jobset_time_to_all_ready_seconds_count", trigger=trigger) - \
            value(before, "jobset_time_to_all_ready_seconds_count", trigger=trigger)
        s = value(after, "jobset_time_to_all_ready_seconds_sum", trigger=trigger) - \
            value(before, "jobset_time_to_all_ready_seconds_sum", trigger=trigger)
        return n, s
    n, s = hist_delta("creation")
    assert n == 1, n
    within("time to all ready from creation", s, run1_lo - c_hi, run1_hi - c_lo)
    n, s = hist_delta("restart")
    assert n == 1, n
    within("time to all ready after the restart", s, run2_lo - rst_hi, run2_hi - rst_lo)
    # The +Inf bucket counts it too.
    assert value(after, "jobset_time_to_all_ready_seconds_bucket", trigger="restart", le="+Inf") == \
        value(after, "jobset_time_to_all_ready_seconds_count", trigger="restart")

    # Per-phase seconds of this JobSet, frozen since it finished.
    ph = {p: value(after, "jobset_phase_duration_seconds", phase=p, **name)
          for p in ("pending", "running", "restarting", "suspended")}
    within("pending", ph["pending"], run1_lo - c_hi, run1_hi - c_lo)
    within("running", ph["running"], (rst_lo - run1_hi) + (fin_lo - run2_hi), (rst_hi - run1_lo) + (fin_hi - run2_lo))
    within("restarting", ph["restarting"], run2_lo - rst_hi, run2_hi - rst_lo)
    assert ph["suspended"] == 0, ph
    # The pods ran RUN_FOR seconds each attempt: all-ready time cannot
    # exceed that (plus one SLACK per boundary).
    assert ph["running"] <= 2 * RUN_FOR + 4 * SLACK, ph
    # Goodput: running over the wall time from creation to the finish,
    # which the phases partition.
    wall = ph["pending"] + ph["running"] + ph["restarting"]
    within("wall time", wall, fin_lo - c_hi, fin_hi - c_lo)
    g = value(after, "jobset_goodput_ratio", **name)
    assert abs(g - ph["running"] / wall) < 1e-6, (g, ph)
    assert 0 < g < 1

    # Fleet totals hold at least this JobSet's time (others may add theirs).
    for p in ("pending", "running", "restarting"):
        d = value(after, "jobset_phase_seconds_total", phase=p) - value(before, "jobset_phase_seconds_total", phase=p)
        assert d >= ph[p] - 1e-6, (p, d, ph[p])

    # Deleted: its series go, its time stays in the totals.
    kube.run("delete", "jobsets.jobset.x-k8s.io", "gp", "-n", ns, "--wait=true")
    gone = wait_for("per-JobSet series dropped", lambda: (lambda s: s if not any(
        k[0] in ("jobset_phase_duration_seconds", "jobset_goodput_ratio") and ("jobset_name", "gp") in k[1]
        and ("namespace", ns) in k[1] for k in s) else None)(scrape(ctl)))
    for p in ("pending", "running", "restarting"):
        assert value(gone, "jobset_phase_seconds_total", phase=p) >= value(after, "jobset_phase_seconds_total", phase=p)


def test_resume_against_its_timeline(kube, ctl, ns):
    """A JobSet created suspended: its suspended time, the resume's wait for
    all-ready, and a goodput whose wall time starts at the resume."""
    before = scrape(ctl)
    tl = Timeline("rs", ns)
    t_create0 = time.time()
    kube.create(jobset("rs", [rjob("w", 2, annotations=LONG)], suspend=True), ns)
    t_create1 = time.time()
    tl.until("Suspended=True", lambda o: any(c["type"] == "Suspended" and c["status"] == "True"
                                             for c in (o.get("status") or {}).get("conditions") or []))
    t_suspended_seen = tl.polls[-1][1]
    t_resume0 = time.time()
    kube.run("patch", "jobsets.jobset.x-k8s.io", "rs", "-n", ns, "--type=merge", "-p", '{"spec":{"suspend":false}}')
    t_resume1 = time.time()
    tl.until("all ready", lambda o: phase(o) == "running")
    # The controller stamps the resume when it reconciles the edit: after
    # the patch was sent, and no later than its Suspended=False write
    # (first seen) plus SLACK.
    seen_resumed = next(t1 for (t0, t1, _, o) in tl.polls if t0 >= t_resume1 and any(
        c["type"] == "Suspended" and c["status"] == "False" for c in (o.get("status") or {}).get("conditions") or []))
    ready = [t for t in tl.transitions() if t[0] == "running"][0]
    after = scrape(ctl)
    n = value(after, "jobset_time_to_all_ready_seconds_count", trigger="resume") - \
        value(before, "jobset_time_to_all_ready_seconds_count", trigger="resume")
    s = value(after, "jobset_time_to_all_ready_seconds_sum", trigger="resume") - \
        value(before, "jobset_time_to_all_ready_seconds_sum", trigger="resume")
    assert n == 1, n
    within("time to all ready from the resume", s, ready[1] - (seen_resumed + SLACK), ready[2] - t_resume0)
    name = dict(jobset_name="rs", namespace=ns)
    sus = value(after, "jobset_phase_duration_seconds", phase="suspended", **name)
    # From the Suspended condition (written by the first reconcile, whole
    # seconds: not before the create, not after it was first seen) to the
    # resume the controller saw.
    within("suspended", sus, t_resume0 - t_suspended_seen, seen_resumed + SLACK - math.floor(t_create0))
    pend = value(after, "jobset_phase_duration_seconds", phase="pending", **name)
    run = value(after, "jobset_phase_duration_seconds", phase="running", **name)
    assert pend > 0 and run >= 0, (pend, run)
    # The goodput's wall time starts at the resume: suspended time is not in
    # it (the scrape brought every value up to the same instant).
    g = value(after, "jobset_goodput_ratio", **name)
    assert abs(g - run / (pend + run)) < 1e-3 if pend + run > 0 else g == 0, (g, pend, run)


def test_dashboard_and_alerts_name_exported_metrics(kube, ctl):
    """Every metric deploy/monitoring/ names is one a running controller
    exposes, with the type its use needs (a histogram for _bucket)."""
    fams = monitoring.exposed(ctl.metrics())
    for series, where in sorted(monitoring.referenced().items()):
        fam = monitoring.family(series)
        if fam != series:
            assert fams.get(fam) == "histogram", f"{series} ({where}): {fam} is {fams.get(fam)}"
        else:
            assert fams.get(series) in ("counter", "gauge"), f"{series} ({where}) is not exposed"
    # `kubectl apply -k deploy/monitoring` installs the rule and the
    # dashboard as a ConfigMap for Grafana's sidecar.
    objs = {(d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all(
        kube.run("kustomize", str(monitoring.MONITORING)).stdout) if d}
    assert set(objs) == {("PrometheusRule", "jobset-alerts"), ("ConfigMap", "jobset-grafana-dashboard")}, set(objs)
    cm = objs[("ConfigMap", "jobset-grafana-dashboard")]
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1" and cm["metadata"]["namespace"] == "jobset-system"
    assert json.loads(cm["data"]["jobset-dashboard.json"]) == json.loads(monitoring.DASHBOARD.read_text())


def test_controller_restart_starts_the_accounting_over(kube, ctl, ns):
    """docs/metrics.md "When the controller restarts": a running JobSet
    that never restarted says nothing of when it became all ready, so the
    new controller counts it running from its first reconcile: no pending
    time from before the restart, goodput 1."""
    tl = Timeline("cr", ns)
    kube.create(jobset("cr", [rjob("w", 2, annotations=LONG)]), ns)
    tl.until("all ready", lambda o: phase(o) == "running")
    name = dict(jobset_name="cr", namespace=ns)
    before = scrape(ctl)
    assert value(before, "jobset_phase_duration_seconds", phase="pending", **name) > 0, "no pending time before"
    t_restart0 = time.time()
    ctl.restart()
    after = wait_for("the JobSet's series again", lambda: (lambda s: s if ("jobset_goodput_ratio", frozenset(
        name.items())) in s else None)(scrape(ctl)))
    t_scraped = time.time()
    assert value(after, "jobset_phase_duration_seconds", phase="pending", **name) == 0, after
    within("running since the new controller saw it", value(after, "jobset_phase_duration_seconds", phase="running",
                                                              **name), 0, t_scraped - t_restart0)
    assert value(after, "jobset_goodput_ratio", **name) == 1
