"""`kubectl jobset` (issue 16 item 3; docs/kubectl-jobset.md) on hack/cluster.

The plugin is build/kubectl-jobset (a symlink to build/jobset), run with the
admin kubeconfig; what it prints is checked against kubectl's own view
(`kubectl get jobsets` prints the CRD's columns server-side). Pods are kwok's
(docs/cluster.md): their fate comes from pod-template annotations; a test
finalizer holds the pods of an old attempt in Terminating so that a restart
is caught half-way.
"""
import json
import os
import re
import subprocess
import threading
import time
from pathlib import Path

import yaml

from conftest import ROOT, jobset, rjob, terminal, wait_for, wait_terminal

JS = "jobset.sigs.k8s.io/"
LONG = {"jobset-test/run-for": "1h"}
HOLD = "jobset-test.x-k8s.io/hold"


def plugin_path():
    b = os.environ.get("JOBSET_BIN")
    build = Path(b).parent if b else ROOT / "build"
    if (build / "build.ninja").exists():
        subprocess.run(["ninja", "-C", str(build), "jobset"], check=True, capture_output=True)
    p = build / "kubectl-jobset"
    assert p.exists(), f"{p} missing: build the jobset target (it makes the kubectl-jobset symlink)"
    return p


def kj(kube, *args, check=None, input=None, env=None):
    """Run kubectl-jobset; `check` True/False asserts the exit status."""
    p = subprocess.run([str(plugin_path()), *args], capture_output=True, text=True, input=input,
                       env=env or kube.env, timeout=60)
    if check is True:
        assert p.returncode == 0, f"kubectl-jobset {' '.join(args)}: {p.returncode}: {p.stderr}"
    elif check is False:
        assert p.returncode != 0, f"kubectl-jobset {' '.join(args)} succeeded: {p.stdout}"
    return p


def cells(table):
    """Rows of a kubectl table as lists of cells, cut at the header's column
    starts (cells may be empty, so whitespace splitting would not do)."""
    lines = table.rstrip("\n").split("\n")
    starts = [m.start() for m in re.finditer(r"\S+", lines[0])]
    out = []
    for line in lines:
        row = [line[s:e].strip() for s, e in zip(starts, starts[1:] + [None])]
        out.append(row)
    return out


def pods(kube, ns, name, attempt=None):
    sel = f"{JS}jobset-name={name}" + (f",{JS}restart-attempt={attempt}" if attempt is not None else "")
    return kube.list("pods", ns, sel)


def running(ps):
    return [p for p in ps if p.get("status", {}).get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")]


def release(kube, ns):
    """Drop the test finalizer from every pod of the namespace."""
    for p in kube.list("pods", ns):
        fins = p["metadata"].get("finalizers") or []
        if HOLD in fins:
            i = fins.index(HOLD)
            kube.run("patch", "pod", p["metadata"]["name"], "-n", ns, "--type=json",
                     "-p", json.dumps([{"op": "test", "path": f"/metadata/finalizers/{i}", "value": HOLD},
                                       {"op": "remove", "path": f"/metadata/finalizers/{i}"}]), check=False)


def test_get_matches_kubectl(kube, ctl, ns):
    kube.create(jobset("js-done", [rjob("w", 1)]), ns)
    kube.create(jobset("js-long", [rjob("w", 2, annotations=LONG)], suspend=False), ns)
    wait_terminal(kube, "js-done", ns, "Completed")
    wait_for("js-long running", lambda: len(running(pods(kube, ns, "js-long"))) == 2)

    ours, theirs = kj(kube, "get", "-n", ns, check=True).stdout, kube.run("get", "jobsets.jobset.x-k8s.io", "-n", ns).stdout
    a, b = cells(ours), cells(theirs)
    assert a[0] == b[0] == ["NAME", "TERMINALSTATE", "RESTARTS", "COMPLETED", "SUSPENDED", "AGE", "STARTTIME"]
    age = a[0].index("AGE")
    for x, y in zip(a[1:], b[1:]):  # ages may tick between the two calls
        assert x[:age] == y[:age], (ours, theirs)
    assert [r[0] for r in a[1:]] == ["js-done", "js-long"]
    assert a[1][1:5] == ["Completed", "0", "True", ""] and a[2][1:5] == ["", "0", "", "false"]
    assert re.fullmatch(r"\d+s", a[1][age]), a[1]
    # -o wide: the CRD has no priority > 0 column, so the same columns.
    assert cells(kj(kube, "get", "-n", ns, "-o", "wide", check=True).stdout)[0] == a[0]
    # One by name, and every namespace (NAMESPACE first), flags before the command too.
    one = cells(kj(kube, "-n", ns, "get", "js-long", check=True).stdout)
    assert len(one) == 2 and one[1][0] == "js-long"
    every = cells(kj(kube, "get", "-A", check=True).stdout)
    assert every[0][:2] == ["NAMESPACE", "NAME"] and [ns, "js-done"] in [r[:2] for r in every]
    # Machine formats: as kubectl's, managedFields dropped.
    obj = json.loads(kj(kube, "get", "js-long", "-n", ns, "-o", "json", check=True).stdout)
    live = kube.jobset("js-long", ns)
    assert obj["metadata"]["uid"] == live["metadata"]["uid"] and "managedFields" not in obj["metadata"]
    lst = yaml.safe_load(kj(kube, "get", "-n", ns, "-o", "yaml", check=True).stdout)
    assert lst["kind"] == "List" and [i["metadata"]["name"] for i in lst["items"]] == ["js-done", "js-long"]
    assert kj(kube, "get", "-n", ns, "-o", "name", check=True).stdout == \
        kube.run("get", "jobsets.jobset.x-k8s.io", "-n", ns, "-o", "name").stdout
    # Errors as kubectl's: NotFound word for word, bad flags named.
    nf, knf = kj(kube, "get", "nope", "-n", ns, check=False), kube.run("get", "jobsets.jobset.x-k8s.io", "nope", "-n", ns, check=False)
    assert nf.returncode == 1 and nf.stderr.strip() == knf.stderr.strip(), (nf.stderr, knf.stderr)
    bad = kj(kube, "get", "-n", ns, "-o", "xml", check=False)
    assert bad.returncode == 2 and '"xml"' in bad.stderr and "json,name,wide,yaml" in bad.stderr
    assert "context" in kj(kube, "get", "--context", "no-such-context", check=False).stderr
    assert "--rjob" in kj(kube, "get", "--rjob", "w", check=False).stderr
    empty = kj(kube, "get", "-n", "kube-public", check=True)
    assert empty.stdout == "" and empty.stderr.strip() == "No resources found in kube-public namespace."


def test_kubectl_finds_the_plugin(kube, ctl, ns):
    """kubectl's plugin discovery: an executable kubectl-jobset on PATH makes `kubectl jobset`."""
    kube.create(jobset("js-plug", [rjob("w", 1)]), ns)
    wait_terminal(kube, "js-plug", ns, "Completed")
    env = dict(kube.env, PATH=f"{plugin_path().parent}:{os.environ['PATH']}")
    p = subprocess.run([kube.kubectl, "jobset", "get", "js-plug", "-n", ns, "-o", "name"], capture_output=True,
                       text=True, env=env, timeout=60)
    assert p.returncode == 0 and p.stdout == "jobset.jobset.x-k8s.io/js-plug\n", p.stderr
    # The same binary as `jobset kubectl`; `jobset describe` stays the local run's.
    q = subprocess.run([str(plugin_path().parent / "jobset"), "kubectl", "get", "js-plug", "-n", ns, "-o", "name"],
                       capture_output=True, text=True, env=kube.env, timeout=60)
    assert q.stdout == p.stdout


def test_describe_mid_restart_shows_both_attempts(kube, ctl, ns):
    """Issue 16 "done when": describe on a JobSet mid-restart shows both attempts. The test finalizer
    keeps the pods of attempt 0 Terminating while attempt 1 runs."""
    held = dict(LONG)
    js = jobset("js-mid", [rjob("leader", 1, annotations=held), rjob("w", 2, annotations=held)],
                failurePolicy={"maxRestarts": 0})
    for r in js["spec"]["replicatedJobs"]:
        r["template"]["spec"]["template"]["metadata"]["finalizers"] = [HOLD]
    kube.create(js, ns)
    try:
        wait_for("3 pods of attempt 0 running", lambda: len(running(pods(kube, ns, "js-mid", 0))) == 3)
        out = kj(kube, "restart", "js-mid", "-n", ns, check=True).stdout
        assert out == "jobset.jobset.x-k8s.io/js-mid restart requested (attempt 0 ends, attempt 1 starts)\n"
        wait_for("3 pods of attempt 1 running", lambda: len(running(pods(kube, ns, "js-mid", 1))) == 3, 90)
        old = pods(kube, ns, "js-mid", 0)
        assert len(old) == 3 and all(p["metadata"].get("deletionTimestamp") for p in old)
        d = kj(kube, "describe", "js-mid", "-n", ns, check=True).stdout
        assert "\nState:       Restarting\n" in d or "\nState:       Running\n" in d, d
        assert "\nRestarts:    1 (0 counted toward maxRestarts)\n" in d, d
        tree = d[d.index("Replicated Jobs:\n"):d.index("Events:\n")]
        for rj, n in (("leader", 1), ("w", 2)):
            sect = tree[tree.index(f"\n  {rj}  replicas {n}"):]
            nxt = re.search(r"\n  \S", sect[1:])  # the next ReplicatedJob
            sect = sect[:nxt.start() + 2] if nxt else sect
            cur, prev = sect.index("    Attempt 1 (current)\n"), sect.index("    Attempt 0 (previous)\n")
            assert cur < prev, sect
            for i in range(n):
                job = f"js-mid-{rj}-{i}"
                new_pods = [p for p in pods(kube, ns, "js-mid", 1) if p["metadata"]["labels"]["batch.kubernetes.io/job-name"] == job]
                old_pods = [p for p in old if p["metadata"]["labels"]["batch.kubernetes.io/job-name"] == job]
                assert len(new_pods) == len(old_pods) == 1
                np, op = new_pods[0], old_pods[0]
                assert re.search(rf"      Job {job}  Active  active 1 .*\n        Pod {np['metadata']['name']}  Running  "
                                 rf"node {np['spec']['nodeName']}  restarts 0\n", sect[cur:prev]), sect
                assert re.search(rf"      Job {job}( \(deleted\)|  Terminating.*)\n        Pod {op['metadata']['name']}  "
                                 rf"Terminating  node {op['spec']['nodeName']}  restarts 0\n", sect[prev:]), sect
        assert "  Failure:  a failed Job restarts the whole JobSet (recreating every Job), at most 0 times (0 used)" in d
        assert "restart-request=0 (spent)" in d
        events = d[d.index("Events:\n"):]
        assert re.search(r"Normal\s+RestartRequested\s+\S+\s+jobset\s+jobset/js-mid\s+restart requested through "
                         r"annotation jobset.sigs.k8s.io/restart-request=0", events), events
    finally:
        release(kube, ns)
    # Once the old pods are gone, only the current attempt is left.
    wait_for("attempt 0 pods gone", lambda: not pods(kube, ns, "js-mid", 0))
    d = kj(kube, "describe", "js-mid", "-n", ns, check=True).stdout
    assert "Attempt 1 (current)" in d and "Attempt 0" not in d
    release(kube, ns)


def test_describe_mid_restart_foreground(kube, ctl, ns):
    """With --restart-cleanup=foreground (upstream's), an old Job stays, Terminating, until its pods
    are gone, and its name is not reused before: describe shows that Job and its pod under attempt 0
    while the other ReplicatedJob already runs attempt 1."""
    ctl.restart("--restart-cleanup=foreground")
    ctl.custom = True
    js = jobset("js-fg", [rjob("leader", 1, annotations=LONG), rjob("w", 1, annotations=LONG)])
    js["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["metadata"]["finalizers"] = [HOLD]
    kube.create(js, ns)
    try:
        wait_for("2 pods of attempt 0 running", lambda: len(running(pods(kube, ns, "js-fg", 0))) == 2)
        kj(kube, "restart", "js-fg", "-n", ns, check=True)
        wait_for("leader of attempt 1 running", lambda: len(running(pods(kube, ns, "js-fg", 1))) == 1, 90)
        old = pods(kube, ns, "js-fg", 0)
        assert [p["metadata"]["labels"][JS + "replicatedjob-name"] for p in old] == ["w"]
        wait_for("old Job js-fg-w-0 terminating",
                 lambda: (kube.get("jobs.batch", "js-fg-w-0", ns) or {}).get("metadata", {}).get("deletionTimestamp"))
        d = kj(kube, "describe", "js-fg", "-n", ns, check=True).stdout
        new_leader = pods(kube, ns, "js-fg", 1)[0]
        assert re.search(r"\n  leader  replicas 1 .*\n    Attempt 1 \(current\)\n      Job js-fg-leader-0  Active .*\n"
                         rf"        Pod {new_leader['metadata']['name']}  Running  node \S+  restarts 0\n  w  ", d), d
        assert re.search(r"\n  w  replicas 1 .*\n    Attempt 0 \(previous\)\n      Job js-fg-w-0  Terminating .*\n"
                         rf"        Pod {old[0]['metadata']['name']}  Terminating  node \S+  restarts 0\n", d), d
    finally:
        release(kube, ns)
    wait_for("w of attempt 1 running", lambda: len(running(pods(kube, ns, "js-fg", 1))) == 2, 90)


def test_restart_request(kube, ctl, ns):
    """The restart API: a new attempt, not counted toward maxRestarts; refused when finished or
    suspended; NotFound for an unknown JobSet."""
    kube.create(jobset("js-r", [rjob("w", 2, annotations=LONG)], failurePolicy={"maxRestarts": 1}), ns)
    wait_for("js-r running", lambda: len(running(pods(kube, ns, "js-r", 0))) == 2)
    # Asked twice before any controller acts: the second is the same request, and one restart follows.
    ctl.stop()
    try:
        assert kj(kube, "restart", "js-r", "-n", ns, check=True).stdout == \
            "jobset.jobset.x-k8s.io/js-r restart requested (attempt 0 ends, attempt 1 starts)\n"
        assert kj(kube, "restart", "js-r", "-n", ns, check=True).stdout == \
            "jobset.jobset.x-k8s.io/js-r restart already requested (attempt 0 ends)\n"
    finally:
        ctl.start()
    wait_for("attempt 1 running", lambda: len(running(pods(kube, ns, "js-r", 1))) == 2, 90)
    assert kube.jobset("js-r", ns)["status"]["restarts"] == 1
    kj(kube, "restart", "js-r", "-n", ns, check=True)
    wait_for("attempt 2 running", lambda: len(running(pods(kube, ns, "js-r", 2))) == 2, 90)
    st = kube.jobset("js-r", ns)["status"]
    assert st["restarts"] == 2 and st.get("restartsCountTowardsMax", 0) == 0
    assert kube.jobset("js-r", ns)["metadata"]["annotations"][JS + "restart-request"] == "1"
    # Refused: suspended, finished, managed by another controller, unknown.
    kube.run("patch", "jobsets.jobset.x-k8s.io", "js-r", "-n", ns, "--type=merge", "-p",
             json.dumps({"spec": {"suspend": True}}))
    p = kj(kube, "restart", "js-r", "-n", ns, check=False)
    assert p.returncode == 1 and "suspended" in p.stderr and "spec.suspend" in p.stderr
    kube.create(jobset("js-fin", [rjob("w", 1)]), ns)
    wait_terminal(kube, "js-fin", ns, "Completed")
    p = kj(kube, "restart", "js-fin", "-n", ns, check=False)
    assert p.returncode == 1 and "has finished (Completed)" in p.stderr
    kube.create(jobset("js-other", [rjob("w", 1)], managedBy="example.com/other"), ns)
    p = kj(kube, "restart", "js-other", "-n", ns, check=False)
    assert p.returncode == 1 and "managed by example.com/other (spec.managedBy)" in p.stderr
    p = kj(kube, "restart", "nope", "-n", ns, check=False)
    assert p.returncode == 1 and p.stderr.strip() == 'Error from server (NotFound): jobsets.jobset.x-k8s.io "nope" not found'


def log_line(text):
    """Append one line to the log every fake pod serves (hack/cluster's kwok ClusterLogs, CRI format)."""
    path = os.environ.get("JOBSET_TEST_KWOK_LOG")
    assert path, "JOBSET_TEST_KWOK_LOG unset: a cluster from before kwok served logs; run `hack/cluster down && hack/cluster up`"
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S.000000000Z", time.gmtime())
    with open(path, "a") as f:
        f.write(f"{stamp} stdout F {text}\n")
    return Path(path)


def served(path):
    """The lines the pods serve: the log file's messages."""
    return [line.split(" ", 3)[3] for line in path.read_text().splitlines()]


def test_logs(kube, ctl, ns):
    """Through the pods/log subresource: kwok serves one log file for every container
    (docs/cluster.md), so the expected text is that file's."""
    marker = f"marker-{ns}"
    path = log_line(marker)
    kube.create(jobset("js-logs", [rjob("w", 2, annotations=LONG)], failurePolicy={"maxRestarts": 0}), ns)
    wait_for("js-logs running", lambda: len(running(pods(kube, ns, "js-logs", 0))) == 2)
    by_index = {p["metadata"]["labels"][JS + "job-index"]: p["metadata"]["name"] for p in pods(kube, ns, "js-logs", 0)}
    want = "".join(line + "\n" for line in served(path))
    # One pod: its log as kubectl logs prints it, no prefix.
    ours = kj(kube, "logs", "js-logs", "-n", ns, "--rjob", "w", "--index", "1", check=True).stdout
    assert ours == kube.run("logs", by_index["1"], "-n", ns).stdout == want and marker in ours
    # Every pod of the attempt: kubectl's --prefix form, pods in name order.
    ours = kj(kube, "logs", "js-logs", "-n", ns, check=True).stdout
    assert ours == "".join(f"[pod/{by_index[i]}/c] {line}\n" for i in sorted(by_index, key=lambda i: by_index[i])
                           for line in served(path))
    assert kj(kube, "logs", "js-logs", "-n", ns, "--tail", "1", check=True).stdout == \
        "".join(f"[pod/{by_index[i]}/c] {marker}\n" for i in sorted(by_index, key=lambda i: by_index[i]))
    # -f follows both pods: a line written later arrives from each.
    proc = subprocess.Popen([str(plugin_path()), "logs", "js-logs", "-n", ns, "-f"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=kube.env)
    got = []
    reader = threading.Thread(target=lambda: got.extend(proc.stdout), daemon=True)
    reader.start()
    try:
        wait_for("the log so far from both pods", lambda: sum(marker in line for line in got) == 2)
        later = f"later-{ns}"
        log_line(later)
        wait_for("the later line from both pods", lambda: sorted(line for line in got if later in line) ==
                 sorted(f"[pod/{n}/c] {later}\n" for n in by_index.values()))
    finally:
        proc.terminate()
        proc.wait(10)
    # Selection errors name the flag and what is valid.
    p = kj(kube, "logs", "js-logs", "-n", ns, "--rjob", "nope", check=False)
    assert p.returncode == 2 and '--rjob "nope"' in p.stderr and "valid: w" in p.stderr
    p = kj(kube, "logs", "js-logs", "-n", ns, "--rjob", "w", "--index", "2", check=False)
    assert p.returncode == 2 and "Job indexes 0 to 1" in p.stderr
    p = kj(kube, "logs", "js-logs", "-n", ns, "--attempt", "1", check=False)
    assert p.returncode == 2 and "attempts 0 to 0" in p.stderr
    p = kj(kube, "logs", "nope", "-n", ns, check=False)
    assert p.returncode == 1 and "NotFound" in p.stderr
    p = kj(kube, "logs", "js-logs", "-n", ns, "-c", "nope", "--rjob", "w", "--index", "0", check=False)
    q = kube.run("logs", by_index["0"], "-n", ns, "-c", "nope", check=False)
    assert p.returncode == 1 and q.returncode == 1 and p.stderr == q.stderr, (p.stderr, q.stderr)
    # After a restart the default is the new attempt; the old one's pods are gone.
    kj(kube, "restart", "js-logs", "-n", ns, check=True)
    wait_for("attempt 1 running", lambda: len(running(pods(kube, ns, "js-logs", 1))) == 2, 90)
    wait_for("attempt 0 gone", lambda: not pods(kube, ns, "js-logs", 0))
    new = sorted(p["metadata"]["name"] for p in pods(kube, ns, "js-logs", 1))
    ours = kj(kube, "logs", "js-logs", "-n", ns, "--tail", "1", check=True).stdout
    assert [line.split(" ")[0] for line in ours.splitlines()] == [f"[pod/{n}/c]" for n in new]
    p = kj(kube, "logs", "js-logs", "-n", ns, "--attempt", "0", check=False)
    assert p.returncode == 1 and f"{JS}restart-attempt=0" in p.stderr


def test_diff(kube, ctl, ns, tmp_path):
    doc = jobset("js-diff", [rjob("w", 2, annotations=LONG)])
    doc["metadata"]["namespace"] = ns
    f = tmp_path / "js.yaml"
    f.write_text(yaml.safe_dump(doc))
    # Nothing exists yet: every object is new.
    p = kj(kube, "diff", str(f), check=False)
    assert p.returncode == 1, p.stderr
    for obj in ("jobset.x-k8s.io.v1alpha2.JobSet", "batch.v1.Job", "v1.Service"):
        assert f".{obj}.{ns}.js-diff" in p.stdout or f"/{obj}.{ns}.js-diff" in p.stdout, p.stdout
    kube.create(doc, ns)
    wait_for("js-diff running", lambda: len(running(pods(kube, ns, "js-diff", 0))) == 2)
    # What the controller made is what render makes: no difference.
    p = kj(kube, "diff", str(f))
    assert p.returncode == 0 and p.stdout == "", p.stdout + p.stderr
    # A new image and a third replica: shown, exit 1.
    doc["spec"]["replicatedJobs"][0]["replicas"] = 3
    doc["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0]["image"] = "busybox:1.36"
    f.write_text(yaml.safe_dump(doc))
    p = kj(kube, "diff", str(f))
    assert p.returncode == 1
    assert re.search(r"\n-\s+image: busybox\n\+\s+image: busybox:1.36\n", p.stdout), p.stdout
    assert re.search(r"\n-\s+replicas: 2\n\+\s+replicas: 3\n", p.stdout), p.stdout
    assert f"/LIVE/batch.v1.Job.{ns}.js-diff-w-2\t1970-01-01" in p.stdout  # new: absent from LIVE
    # The namespace of the file wins; a different -n is refused as kubectl does.
    p = kj(kube, "diff", str(f), "-n", "default", check=False)
    assert p.returncode == 2 and f"--namespace={ns}" in p.stderr


def test_names_never_become_part_of_a_query(kube, ctl, ns):
    """A name or namespace goes into the request path: one that is not a
    name is refused before any request ('a?dryRun=All' once made restart a
    server-side dry run that reported success)."""
    kube.create(jobset("js-q", [rjob("w", 1, annotations=LONG)]), ns)
    for args in (["restart", "js-q?dryRun=All"], ["get", "js-q?x=1"], ["describe", ".."], ["logs", "a/b"]):
        p = kj(kube, *args, "-n", ns)
        assert p.returncode == 2 and "invalid resource name" in p.stderr, (args, p.returncode, p.stderr)
    p = kj(kube, "get", "js-q", "-n", "Bad/NS")
    assert p.returncode == 2 and "invalid namespace" in p.stderr, p.stderr
    st = kube.jobset("js-q", ns).get("status") or {}
    assert st.get("restarts", 0) == 0 and "jobset.sigs.k8s.io/restart-request" not in \
        (kube.jobset("js-q", ns)["metadata"].get("annotations") or {})
