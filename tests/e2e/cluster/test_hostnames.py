"""The one-hostname check itself (hostnames.py, conftest's autouse
`cluster_invariants`): the state machine on made-up events, and the
session's pod watch on a real overlap made by hand (two bare pods of one
hostname and two attempts, both Running on kwok)."""
import json

import pytest

import hostnames
from conftest import LEASE_LOST, exit_kind, hostname_watch, wait_for

JS = "jobset.sigs.k8s.io/"


def pod(uid, attempt, phase="Running", node="n1", host="js-r-0-0", deleting=False, jra=None, ns="ns",
        jsuid="u1"):
    labels = {JS + "jobset-name": "js", JS + "jobset-uid": jsuid, JS + "restart-attempt": str(attempt)}
    if jra is not None:
        labels[JS + "job-restart-attempt"] = str(jra)
    md = {"name": f"p-{uid}", "uid": uid, "namespace": ns, "labels": labels}
    if deleting:
        md["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": md, "spec": {"hostname": host, "subdomain": "js", "nodeName": node},
            "status": {"phase": phase}}


# (name, events, number of violations)
CASES = [
    ("successor after the old pod ended", [("ADDED", pod("a", 0)), ("MODIFIED", pod("a", 0, "Failed")),
                                           ("ADDED", pod("b", 1))], 0),
    ("successor after the old pod was deleted", [("ADDED", pod("a", 0)), ("DELETED", pod("a", 0)),
                                                 ("ADDED", pod("b", 1))], 0),
    ("successor beside a running old pod", [("ADDED", pod("a", 0)), ("ADDED", pod("b", 1))], 1),
    ("old pod in its grace period", [("ADDED", pod("a", 0, deleting=True)), ("ADDED", pod("b", 1))], 1),
    ("successor bound but not started", [("ADDED", pod("a", 0)), ("ADDED", pod("b", 1, "Pending"))], 1),
    ("successor gated, not bound", [("ADDED", pod("a", 0)), ("ADDED", pod("b", 1, "Pending", node=None))], 0),
    ("RestartJob's next incarnation beside the old", [("ADDED", pod("a", 0, jra=0)), ("ADDED", pod("b", 0, jra=1))],
     1),
    ("two pods of one attempt (the Job controller's replacement)", [("ADDED", pod("a", 0)), ("ADDED", pod("b", 0))],
     0),
    ("other hostnames", [("ADDED", pod("a", 0)), ("ADDED", pod("b", 1, host="js-r-1-0"))], 0),
    ("another JobSet of the same name", [("ADDED", pod("a", 0)), ("ADDED", pod("b", 1, jsuid="u2"))], 0),
    ("another namespace", [("ADDED", pod("a", 0)), ("ADDED", pod("b", 1, ns="other"))], 0),
    ("a label edited later does not move a pod", [("ADDED", pod("a", 0)), ("MODIFIED", pod("a", 7)),
                                                   ("ADDED", pod("b", 7, "Failed")), ("ADDED", pod("c", 0))], 0),
    ("one pair counted once", [("ADDED", pod("a", 0)), ("ADDED", pod("b", 1)), ("MODIFIED", pod("b", 1)),
                               ("MODIFIED", pod("a", 0))], 1),
]


@pytest.mark.parametrize("name,events,want", CASES, ids=[c[0] for c in CASES])
def test_check_state_machine(name, events, want):
    c = hostnames.HostnameCheck()
    for t, p in events:
        c.apply(t, p)
    assert len(c.violations) == want, [hostnames.describe(v) for v in c.violations]


def test_relist_replaces_state():
    c = hostnames.HostnameCheck()
    c.apply("ADDED", pod("a", 0))
    c.relist([pod("b", 1)])  # "a" went while the watch was broken
    c.apply("ADDED", pod("c", 1))
    assert c.violations == []
    c.relist([pod("d", 0), pod("e", 1)])
    assert len(c.violations) == 1


@pytest.mark.parametrize("rc,log,kind", [
    (0, "", "clean"), (1, "x\n" + LEASE_LOST + "\nstopped\n", "lost-lease"), (1, "start: forbidden\n", "error"),
    (-11, "", "crash"), (-6, LEASE_LOST, "crash"), (2, "usage", "error")])
def test_exit_kinds(rc, log, kind):
    assert exit_kind(rc, log) == kind


def test_session_watch_sees_an_overlap(kube, ns):
    """Two bare pods that claim one hostname of a JobSet from attempts 0 and
    1, both Running: the session's watch records exactly that overlap (this
    namespace is excused from the autouse check, which would otherwise fail
    this test for it)."""
    from conftest import EXCUSED_NAMESPACES
    EXCUSED_NAMESPACES.add(ns)
    w = hostname_watch()
    before = len(w.check.violations)
    for uid_attempt in (0, 1):
        p = {"apiVersion": "v1", "kind": "Pod",
             "metadata": {"name": f"fake-{uid_attempt}", "annotations": {"jobset-test/run-for": "1h"},
                          "labels": {JS + "jobset-name": "fake", JS + "jobset-uid": "fake-uid",
                                     JS + "restart-attempt": str(uid_attempt)}},
             "spec": {"hostname": "fake-r-0-0", "subdomain": "fake", "restartPolicy": "Never",
                      "containers": [{"name": "c", "image": "busybox"}]}}
        kube.run("create", "-n", ns, "-f", "-", input=json.dumps(p))
    found = wait_for("the watch to record the overlap",
                     lambda: [v for v in w.check.violations[before:] if v["key"][0] == ns], 60)
    assert len(found) == 1, found
    assert {found[0]["old"]["attempt"][0], found[0]["new"]["attempt"][0]} == {"0", "1"}
    assert found[0]["key"][2:] == ("fake-r-0-0", "fake")
