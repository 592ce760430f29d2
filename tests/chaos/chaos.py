#!/usr/bin/env python3
"""The adversary driver (issue 22): JobSets of every policy shape run on
hack/cluster with our controller while a second client plays other users and
tools, and invariants are checked from views independent of the controller.

    eval "$(hack/cluster env)"
    python3 tests/chaos/chaos.py --seed 7 --edits 1000      # one run
    python3 tests/chaos/chaos.py --seed 7 --edits 1000 --workdir /tmp/c7   # its logs there

The workload: a pool of JobSets (`SHAPES`: restarts, RestartJob actions,
FailJobSet rules, suspend/resume, exclusive placement, InOrder startup,
dependsOn, success policy Any, volumeClaimPolicies, and values at their
limits) whose pods the kwok Stages of hack/cluster run and fail by their
annotations (docs/cluster.md), as the e2e tests do. The controller runs with
its webhooks (internal certificates, gates placement) and the RestartJob
gate, under the e2e fixtures' supervisor (conftest.Supervisor: a lost lease
is restarted, a death by signal is a crash).

The adversary (`EDITS`), in bursts: edits, removes and adds labels,
annotations, finalizers and ownerReferences of child Jobs, pods, Services
and PVCs; deletes children; patches the status subresources of Jobs, pods
and JobSets; suspends and resumes JobSets and child Jobs; edits the
templates of suspended JobSets; sets extreme but schema-valid values. Every
choice comes from one random.Random(seed); the targets are the objects that
exist when the edit is made, picked in name order, so a replay with the same
seed makes the same choices against what the cluster holds then (timing can
make those differ).

After each burst the adversary heals what only it could undo (it removes
the finalizers it added and resumes the JobSets it suspended), then the
invariants are checked (`Invariants`):
  1. the controller process never died of a signal (a lost lease, exit 1
     with `leader election lost: exiting`, is counted and restarted);
  2. within SETTLE_S every JobSet is terminal or carries a True condition
     saying why not (Suspended, StartupPolicyInProgress), and within
     QUIET_BOUND_S after that the controller's CPU (utime+stime from
     /proc/<pid>/stat) stays under QUIET_CPU of one core for QUIET_WINDOW_S;
  3. no Job is created twice for the same (JobSet uid, name, restart
     attempt, job restart attempt) unless the adversary deleted (or
     orphaned onto a missing owner) the one before: a Job watch by uid,
     and the API server's audit log of the controller's successful creates;
  4. never two pods of one hostname from different attempts occupy it at
     once (hostnames.py, one pod watch over the whole run).
A violation stops the run: it prints the seed, the replay command, the
violation and the edit log's tail (the whole log is in the work dir).
"""
import argparse
import calendar
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "tests/e2e/cluster"))
import audit  # noqa: E402
import conftest as e2e  # noqa: E402  (tests/e2e/cluster/conftest.py: Kube, Controller, the supervisor)
import hostnames  # noqa: E402
import kapi  # noqa: E402
from test_controller_webhooks import Setup  # noqa: E402

JS = "jobset.sigs.k8s.io/"
GROUP = "jobset.x-k8s.io"
HOLD = "chaos.jobset-test/hold"  # the finalizer the adversary adds (and removes when it heals)
SETTLE_S = 240          # bound: every JobSet terminal or explained after a burst
# The Job controller keys its pod expectations by namespace/name: a Job
# deleted while one of its pod creations is unobserved, then made again
# under the same name (every restart does that), can sit with no pods
# until the 5-minute ControllerExpectationsTimeout (kubernetes/kubernetes
# #131917, #142142). Such a Job is waited for until that timeout plus this
# margin from its creation, and counted in the figures.
JOB_CONTROLLER_TIMEOUT_S = 300 + 45
QUIET_CPU = 0.05        # bound: controller CPU, in cores, once settled
QUIET_WINDOW_S = 5      # ... averaged over this window
QUIET_BOUND_S = 60      # ... reached within this long after settling
POOL = 8                # JobSets kept running during a burst
# JobCreationBlocked: a Job of the JobSet's is held by a Job it does not
# control (an orphan the adversary made, KNOWN_BUGS "job-orphaned"), which
# only a user can end; the condition names it.
EXPLAINED = ("Suspended", "StartupPolicyInProgress", "JobCreationBlocked")
PATIENCE_S = 300        # how long a request of the driver waits out an API server that does not answer
TICK = os.sysconf("SC_CLK_TCK")

# Edits that trigger a known controller bug: off (False) while the bug is
# not fixed on main, each named for the bug; switch one on (--with NAME) to
# reproduce it; on (True) once the fix is on main.
KNOWN_BUGS = {
    # JobSets of replicas near 2^31 (schema-valid): the plan was
    # proportional to replicas and the controller grew by ~0.45 GB/s (issue
    # 22); fixed: refused by the webhook, LimitExceeded in the controller.
    "huge-replicas": True,
    # alpha.jobset.sigs.k8s.io/exclusive-topology removed from (or changed
    # on) a follower pod: the placement pass dereferenced a NULL topology,
    # SIGSEGV (issue 22); fixed: the key comes from the JobSet.
    "pod-exclusive-annotation": True,
    # a jobset.sigs.k8s.io/ label removed from (or changed on) a child Job:
    # the label-scoped cache lost it (jobset-name; fixed on `expect`: the
    # controller puts it back), or the core refused the JobSet every pass
    # with no condition and no event (restart-attempt, replicatedjob-name,
    # job-index; seed 4242). Fixed: the core reads those labels from the
    # Job's pod template, which cannot change once it ran
    # (chaos-job-label*.scn, test_child_edits.py).
    "job-label": True,
    # a child Job's controller ownerReference removed (or made
    # controller=false): the JobSet does not adopt it (#1165) and cannot
    # create its own Job of that name (AlreadyExists); it stayed
    # unfinished with JobCreationFailed events but no condition that says
    # why (found by this driver, seed 1; docs/reliability.md "Chaos").
    # Fixed: the condition JobCreationBlocked names the Job and what ends
    # the wait (EXPLAINED); deleting it or restoring the ownerReference
    # lets the JobSet proceed at once (chaos-job-orphaned*.scn,
    # test_child_edits.py).
    "job-orphaned": True,
    # status.restarts of a JobSet written back to a lower number by someone
    # else: the controller took the attempt from it, so a Job deleted
    # meanwhile was made again under the lower attempt while a pod of the
    # higher one still ran, two attempts on one hostname (found by this
    # driver, seed 20261202; docs/reliability.md "Chaos"). Fixed: the
    # counter is restored from the highest restart-attempt label among the
    # JobSet's Jobs and its running pods, and the highest count the
    # controller's watch delivered (core/status.c; chaos-restarts-rewound.scn,
    # chaos-restarts-rewound-no-jobs.scn).
    # Raising it is always made (the controller then restarts, or fails the
    # JobSet at 2^31-1).
    "jobset-restarts-rewound": True,
    # the finished (Succeeded) leader pod of an exclusive Job deleted, then
    # a follower retried: the new follower waited behind its gate for a
    # leader that will never exist again (index 0 is done), and the JobSet
    # never finished (upstream's webhook refuses such a follower for ever
    # too; found by this driver, seed 20261205; docs/reliability.md
    # "Chaos"). Fixed: with no leader pod, the domain is the one the Job's
    # placed followers agree on, and with none placed either (the JobSet or
    # the Job suspended, which deletes the followers, then resumed: seed
    # 4242, excl-76) a follower is elected to lead (core/placement.h).
    "finished-leader-deleted": True,
}


class Violation(AssertionError):
    pass


# ---------------------------------------------------------------- workload

def pod_template(ann=None, run_for=None, node_selector=None, mounts=None, tgps=None):
    a = {"jobset-test/run-for": run_for or "2s"}
    a.update(ann or {})
    c = {"name": "c", "image": "busybox", "command": ["true"]}
    if mounts:
        c["volumeMounts"] = [{"name": m, "mountPath": f"/{m}"} for m in mounts]
    spec = {"restartPolicy": "Never", "containers": [c]}
    if node_selector:
        spec["nodeSelector"] = node_selector
    if tgps is not None:
        spec["terminationGracePeriodSeconds"] = tgps
    return {"metadata": {"annotations": a}, "spec": spec}


def rjob(name, replicas=1, pods=1, ann=None, backoff=0, run_for=None, tmpl=None, **extra):
    r = {"name": name, "replicas": replicas,
         "template": {"spec": {"parallelism": pods, "completions": pods, "backoffLimit": backoff,
                               "template": tmpl or pod_template(ann, run_for)}}}
    r.update(extra)
    return r


def jobset(name, rjobs, **spec):
    s = {"replicatedJobs": rjobs}
    s.update(spec)
    return {"apiVersion": f"{GROUP}/v1alpha2", "kind": "JobSet", "metadata": {"name": name}, "spec": s}


FAIL0 = {"jobset-test/fail-if-job-index": "0", "jobset-test/fail-if-restart-attempt": "0",
         "jobset-test/exit-code": "3"}


def shape_plain(rng, name):
    return jobset(name, [rjob("r", rng.randint(1, 3), rng.randint(1, 2))])


def shape_restart(rng, name):
    return jobset(name, [rjob("a", 2, ann=FAIL0), rjob("b", rng.randint(1, 2), run_for="4s")],
                  failurePolicy={"maxRestarts": 3})


def shape_restart_job(rng, name):
    ann = {"jobset-test/fail-if-job-index": "1", "jobset-test/fail-if-job-restart-attempt": "0",
           "jobset-test/exit-code": "5"}
    return jobset(name, [rjob("w", 2, ann=ann)],
                  failurePolicy={"maxRestarts": 2, "rules": [{"name": "rj", "action": "RestartJob"}]})


def shape_fail_jobset(rng, name):
    return jobset(name, [rjob("w", 2, ann={"jobset-test/fail-if-job-index": "1", "jobset-test/exit-code": "9"})],
                  failurePolicy={"maxRestarts": 4, "rules": [
                      {"name": "fail", "action": "FailJobSet", "onJobFailureReasons": ["BackoffLimitExceeded"]}]})


def shape_suspended(rng, name):
    return jobset(name, [rjob("r", 2, 2)], suspend=True)


EXCL_LABEL = "jobset-test/chaos-exclusive"  # the nodes of exclusive JobSets (Run.add_nodes)


def shape_exclusive(rng, name):
    # One Job per node, on nodes of their own: a leader's anti-affinity
    # keeps every pod of another Job (every JobSet pod has a job-key) out of
    # its domain, so exclusive Jobs on the shared nodes would stop the rest
    # of the workload from scheduling until the scheduler's next retry.
    tmpl = pod_template({"alpha.jobset.sigs.k8s.io/exclusive-topology": "kubernetes.io/hostname"}, "3s",
                        node_selector={EXCL_LABEL: "yes"})
    tmpl["spec"]["tolerations"] = [{"key": EXCL_LABEL, "operator": "Exists", "effect": "NoSchedule"}]
    return jobset(name, [rjob("x", rng.randint(1, 2), rng.randint(2, 3), tmpl=tmpl, backoff=3)],
                  failurePolicy={"maxRestarts": 2})


def shape_in_order(rng, name):
    return jobset(name, [rjob("a", 1, run_for="3s"), rjob("b", 1, run_for="3s"), rjob("c", 2)],
                  startupPolicy={"startupPolicyOrder": "InOrder"})


def shape_depends(rng, name):
    st = rng.choice(["Complete", "Ready"])
    return jobset(name, [rjob("init", 1, run_for="2s"), rjob("main", 2, dependsOn=[{"name": "init", "status": st}])])


def shape_success_any(rng, name):
    return jobset(name, [rjob("lead", 1, run_for="1h"), rjob("w", 2)],
                  successPolicy={"operator": "Any", "targetReplicatedJobs": ["w"]})


def shape_claims(rng, name):
    # No PV controller on hack/cluster: the claims stay Pending, so a pod
    # that mounts one never schedules. The JobSet stays suspended (its
    # claims are still made, CTRL-186), for the adversary's PVC edits.
    tmpl = pod_template(mounts=["data"])
    vcp = [{"templates": [{"metadata": {"name": "data"},
                           "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}],
            "retentionPolicy": {"whenDeleted": rng.choice(["Delete", "Retain"])}}]
    return jobset(name, [rjob("r", 1, tmpl=tmpl)], suspend=True, volumeClaimPolicies=vcp)


def shape_extreme(rng, name):
    """Values at their limits: a name that makes the pods' hostname exactly
    63 characters, int32/int64 maxima where they cannot stall the JobSet."""
    big32 = 2**31 - 1
    # hostname <name>-e-<job index>-<pod index> must be <= 63
    tmpl = pod_template(run_for="2s", tgps=rng.choice([0, big32, 2**63 - 1]))
    fails = rng.random() < 0.5
    if fails:  # the first attempt fails: a restart under maxRestarts 2^31-1
        tmpl["metadata"]["annotations"].update({"jobset-test/fail-if-restart-attempt": "0",
                                                "jobset-test/exit-code": "2"})
    # backoffLimit 2^31-1 only where no pod fails: the Job controller would
    # retry a failing pod for ever.
    r = rjob("e", 1, 1, tmpl=tmpl, backoff=0 if fails else rng.choice([0, big32]))
    r["template"]["spec"]["activeDeadlineSeconds"] = rng.choice([big32, 2**63 - 1])
    spec = {"ttlSecondsAfterFinished": rng.choice([0, big32]),
            "failurePolicy": {"maxRestarts": big32}}
    return jobset(name, [r], **spec)


def shape_huge(rng, name):
    return jobset(name, [rjob("h", rng.choice([2**31 - 1, 2_000_000_000]), run_for="1s")])


SHAPES = [("plain", shape_plain, 2), ("restart", shape_restart, 3), ("restartjob", shape_restart_job, 2),
          ("failjs", shape_fail_jobset, 1), ("susp", shape_suspended, 2), ("excl", shape_exclusive, 3),
          ("inorder", shape_in_order, 2), ("dep", shape_depends, 2), ("any", shape_success_any, 1),
          ("pvc", shape_claims, 1), ("ext", shape_extreme, 1), ("huge", shape_huge, 1)]


def long_name(prefix, rjob_name="e"):
    """A JobSet name whose pods' hostname <name>-<rjob>-0-0 is 63 long."""
    n = 63 - len(f"-{rjob_name}-0-0")
    return (prefix + "-" + "x" * n)[:n]


# ---------------------------------------------------------------- views

class JobWatch:
    """Every Job of the namespace by uid, from a watch: the key it was
    created with, and which keys' Jobs were deleted (and by the adversary)."""

    def __init__(self, ns):
        self.ns = ns
        self.lock = threading.Lock()
        self.first = {}                     # uid -> key at first sight
        self.created = defaultdict(list)    # key -> [uid, ...] in order
        self.gone = set()                   # uids deleted
        self.adversary = set()              # uids the adversary deleted or pointed at a missing owner
        self.violations = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="job-watch", daemon=True)

    @staticmethod
    def key(job):
        md = job.get("metadata") or {}
        lb = md.get("labels") or {}
        owner = [o.get("uid") for o in md.get("ownerReferences") or [] if o.get("controller")]
        return (owner[0] if owner else None, md.get("name"), lb.get(JS + "restart-attempt"),
                lb.get(JS + "job-restart-attempt", "0"))

    def _see(self, job):
        uid = (job.get("metadata") or {}).get("uid")
        if not uid or uid in self.first:
            return
        k = self.key(job)
        self.first[uid] = k
        prev = self.created[k]
        if prev and not all(u in self.adversary for u in prev):
            self.violations.append(f"Job {k[1]} (attempt {k[2]}/{k[3]}, owner {k[0]}) created again as {uid}: "
                                   f"earlier {prev}, of which the adversary deleted "
                                   f"{[u for u in prev if u in self.adversary]}")
        prev.append(uid)

    def on_list(self, items, rv):
        with self.lock:
            for j in items:
                self._see(j)

    def on_event(self, t, job):
        with self.lock:
            if t == "DELETED":
                self.gone.add(job["metadata"]["uid"])
            else:
                self._see(job)

    def mark(self, uid):
        with self.lock:
            self.adversary.add(uid)

    def allowed(self, k):
        """How many creates of key k the run allows: one, plus one per Job of
        k the adversary removed."""
        with self.lock:
            return 1 + sum(1 for u in self.created.get(k, []) if u in self.adversary)

    def _run(self):
        kapi.list_watch(f"/apis/batch/v1/namespaces/{self.ns}/jobs", self.on_list, self.on_event, self.stop)

    def start(self):
        self.thread.start()
        return self


def audit_creates(ns, offset):
    """The controller's successful Job creates in `ns` from the API server's
    audit log since byte `offset`: {JobWatch key: count}, or None without
    an audit log."""
    path = os.environ.get("JOBSET_TEST_AUDIT_LOG")
    if not path or not Path(path).exists():
        return None
    out = defaultdict(int)
    for owner, name, att, jra, code, _ in audit.audit_job_creates(ns, offset):
        if code == 201:
            out[(owner, name, att, jra)] += 1
    return out


def cpu_seconds(pid):
    """utime + stime of process `pid`, in seconds (/proc/<pid>/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


# ---------------------------------------------------------------- the adversary

def esc(key):
    """A map key as a JSON pointer token."""
    return key.replace("~", "~0").replace("/", "~1")


class Adversary:
    """The other users and tools. Each edit: one request as the cluster
    admin; its outcome (HTTP status) goes into the edit log."""

    KINDS = {"jobs": ("/apis/batch/v1", "Job"), "pods": ("/api/v1", "Pod"), "services": ("/api/v1", "Service"),
             "persistentvolumeclaims": ("/api/v1", "PVC"), "jobsets": (f"/apis/{GROUP}/v1alpha2", "JobSet")}

    def __init__(self, rng, ns, api, jobs, log, enabled):
        self.rng, self.ns, self.api, self.jobs, self.log = rng, ns, api, jobs, log
        self.enabled = enabled
        self.cache = {}
        self.n = 0          # edits chosen (an edit without a target sends nothing)
        self.sent = 0       # requests sent
        self.accepted = 0
        self.by_kind = defaultdict(int)
        self.edits = [(w, f) for w, f in [
            (6, self.edit_label), (5, self.edit_annotation), (3, self.add_finalizer), (2, self.drop_finalizer),
            (3, self.edit_owner), (4, self.delete_child), (4, self.patch_status), (3, self.suspend_resume),
            (2, self.edit_suspended_template), (2, self.edit_job_spec), (2, self.extreme_metadata),
            (1, self.suspend_child_job)]]
        self.total_weight = sum(w for w, _ in self.edits)

    def path(self, kind, name=None, sub=None):
        base, _ = self.KINDS[kind]
        p = f"{base}/namespaces/{self.ns}/{kind}"
        if name:
            p += "/" + urllib.parse.quote(name)
        if sub:
            p += "/" + sub
        return p

    def objects(self, kind):
        """The objects of `kind` now, by name (a LIST; cached for 5 edits)."""
        t = self.cache.get(kind)
        if t and self.n - t[0] < 5:
            return t[1]
        code, lst = self.api.request("GET", self.path(kind))
        items = sorted((lst or {}).get("items") or [], key=lambda o: o["metadata"]["name"]) if code == 200 else []
        self.cache[kind] = (self.n, items)
        return items

    def pick(self, kind, where=None):
        items = [o for o in self.objects(kind) if where is None or where(o)]
        return self.rng.choice(items) if items else None

    def child_kind(self):
        return self.rng.choice(["jobs", "pods", "pods", "services", "persistentvolumeclaims"])

    def send(self, what, kind, obj, method, path, body, ctype="application/json-patch+json"):
        code, out = self.api.request(method, path, body, ctype)
        self.sent += 1
        self.cache.pop(kind, None)
        ok = 200 <= code < 300
        self.accepted += ok
        self.by_kind[what] += 1
        msg = "" if ok else ((out or {}).get("message") or "")[:200]
        self.log(what=what, kind=kind, name=obj["metadata"]["name"], uid=obj["metadata"].get("uid"),
                 body=body, code=code, msg=msg)
        return ok

    def one(self):
        """Make one random edit; False when no target existed (nothing sent)."""
        self.n += 1
        x = self.rng.uniform(0, self.total_weight)
        for w, f in self.edits:
            x -= w
            if x <= 0:
                return f()
        return self.edits[-1][1]()

    # -- labels and annotations

    def _edit_map(self, what, field, keys_of_ours):
        kind = self.child_kind()
        obj = self.pick(kind)
        if obj is None:
            return False
        cur = obj["metadata"].get(field) or {}
        r = self.rng.random()
        ours = sorted(k for k in cur if k.startswith(keys_of_ours) and not self.known_bug(kind, field, k))
        if r < 0.45 and ours:
            k = self.rng.choice(ours)
            body = [{"op": "test", "path": f"/metadata/{field}/{esc(k)}", "value": cur[k]},
                    {"op": "remove", "path": f"/metadata/{field}/{esc(k)}"}]
            what += "-remove"
        elif r < 0.7 and ours:
            k = self.rng.choice(ours)
            v = self.rng.choice(["", "7", "x" * 63, "other", cur[k] + "0"])
            body = [{"op": "replace", "path": f"/metadata/{field}/{esc(k)}", "value": v}]
            what += "-change"
        else:
            k = self.rng.choice([f"chaos.jobset-test/{self.n}", JS + "restart-attempt", JS + "jobset-name",
                                 "alpha.jobset.sigs.k8s.io/exclusive-topology"])
            if self.known_bug(kind, field, k):
                k = f"chaos.jobset-test/{self.n}"
            v = self.rng.choice(["a", "9", "x" * 63] + (["kubernetes.io/hostname"] if field == "annotations" else []))
            body = [{"op": "add", "path": f"/metadata/{field}", "value": {**cur, k: v}}]
            what += "-add"
        if kind == "jobs" and field == "labels":
            self.jobs.mark(obj["metadata"]["uid"])  # a Job relabelled may be replaced
        return self.send(what, kind, obj, "PATCH", self.path(kind, obj["metadata"]["name"]), body)

    def known_bug(self, kind, field, key):
        """Whether editing `key` of `field` on a `kind` would trigger a known
        bug that is not switched on (KNOWN_BUGS)."""
        if kind == "pods" and field == "annotations" and key == "alpha.jobset.sigs.k8s.io/exclusive-topology":
            return not self.enabled["pod-exclusive-annotation"]
        if kind == "jobs" and field == "labels" and key.startswith(JS):
            return not self.enabled["job-label"]
        return False

    def edit_label(self):
        return self._edit_map("label", "labels", (JS, "batch.kubernetes.io/", "controller-uid"))

    def edit_annotation(self):
        return self._edit_map("annotation", "annotations", (JS, "alpha.jobset.sigs.k8s.io/", "batch.kubernetes.io/"))

    def extreme_metadata(self):
        """A JobSet's or child's labels and annotations at the size limits:
        63-character values, an annotation near the 256 KiB total."""
        kind = self.rng.choice(["jobsets", "jobs", "pods"])
        obj = self.pick(kind)
        if obj is None:
            return False
        if self.rng.random() < 0.5:
            body = {"metadata": {"labels": {f"chaos.jobset-test/l{self.n}": "v" * 63}}}
        else:
            # Near the 256 KiB limit on the JobSet; smaller on children,
            # whose LISTs and watch events every edit and view reads.
            size = 200_000 if kind == "jobsets" else 16_000
            body = {"metadata": {"annotations": {f"chaos.jobset-test/a{self.n}": "z" * size}}}
        return self.send("extreme-metadata", kind, obj, "PATCH", self.path(kind, obj["metadata"]["name"]), body,
                         "application/merge-patch+json")

    # -- finalizers

    def add_finalizer(self):
        kind = self.rng.choice(["jobs", "pods", "services", "persistentvolumeclaims", "jobsets"])
        obj = self.pick(kind, lambda o: HOLD not in (o["metadata"].get("finalizers") or []))
        if obj is None:
            return False
        fins = list(obj["metadata"].get("finalizers") or []) + [HOLD]
        return self.send("finalizer-add", kind, obj, "PATCH", self.path(kind, obj["metadata"]["name"]),
                         [{"op": "add", "path": "/metadata/finalizers", "value": fins}])

    def drop_finalizer(self):
        """Remove a finalizer someone else put there (the Job controller's
        batch.kubernetes.io/job-tracking on pods, the garbage collector's)."""
        kind = self.rng.choice(["pods", "jobs", "persistentvolumeclaims"])
        obj = self.pick(kind, lambda o: any(f != HOLD for f in o["metadata"].get("finalizers") or []))
        if obj is None:
            return False
        fins = [f for f in obj["metadata"]["finalizers"] if f == HOLD]
        body = [{"op": "test", "path": "/metadata/finalizers", "value": obj["metadata"]["finalizers"]},
                {"op": "replace", "path": "/metadata/finalizers", "value": fins}]
        return self.send("finalizer-drop", kind, obj, "PATCH", self.path(kind, obj["metadata"]["name"]), body)

    # -- ownerReferences

    def edit_owner(self):
        kind = self.child_kind()
        obj = self.pick(kind)
        if obj is None:
            return False
        refs = obj["metadata"].get("ownerReferences") or []
        r = self.rng.random()
        if kind == "jobs" and not self.enabled["job-orphaned"] and (r < 0.35 or 0.6 <= r < 0.8):
            r = 0.5  # the missing-owner edit instead (the garbage collector deletes the Job)
        if r < 0.35 and refs:
            body = [{"op": "test", "path": "/metadata/ownerReferences", "value": refs},
                    {"op": "remove", "path": "/metadata/ownerReferences"}]
            what = "owner-remove"
            if kind == "jobs":
                self.jobs.mark(obj["metadata"]["uid"])
        elif r < 0.6 and refs:
            # The controller reference pointed at an owner that does not
            # exist: the garbage collector deletes the object.
            bad = [dict(o, uid="00000000-0000-4000-8000-00000000c4a0") if o.get("controller") else o for o in refs]
            body = [{"op": "test", "path": "/metadata/ownerReferences", "value": refs},
                    {"op": "replace", "path": "/metadata/ownerReferences", "value": bad}]
            what = "owner-missing"
            if kind == "jobs":
                self.jobs.mark(obj["metadata"]["uid"])
        elif r < 0.8 and refs:
            if kind == "jobs":
                self.jobs.mark(obj["metadata"]["uid"])
            body = [{"op": "test", "path": "/metadata/ownerReferences", "value": refs},
                    {"op": "replace", "path": "/metadata/ownerReferences",
                     "value": [dict(o, controller=False) for o in refs]}]
            what = "owner-uncontrolled"
        else:
            # A second owner (another JobSet of the namespace, not a controller).
            other = self.pick("jobsets")
            if other is None:
                return False
            ref = {"apiVersion": f"{GROUP}/v1alpha2", "kind": "JobSet", "name": other["metadata"]["name"],
                   "uid": other["metadata"]["uid"]}
            body = [{"op": "add", "path": "/metadata/ownerReferences", "value": refs + [ref]}]
            what = "owner-add"
        return self.send(what, kind, obj, "PATCH", self.path(kind, obj["metadata"]["name"]), body)

    # -- deletes

    @staticmethod
    def finished_leader(o):
        """A Succeeded leader pod of an exclusive Job (KNOWN_BUGS
        finished-leader-deleted), known by what no edit can change: the
        JobSet's name (shape_exclusive) and the pod's hostname (index 0)."""
        return (o["metadata"]["name"].startswith("excl-") and (o.get("status") or {}).get("phase") == "Succeeded"
                and ((o.get("spec") or {}).get("hostname") or "").endswith("-0"))

    def delete_child(self):
        kind = self.child_kind()
        keep = kind == "pods" and not self.enabled["finished-leader-deleted"]
        obj = self.pick(kind, lambda o: not o["metadata"].get("deletionTimestamp") and
                        not (keep and self.finished_leader(o)))
        if obj is None:
            return False
        if kind == "jobs":
            self.jobs.mark(obj["metadata"]["uid"])
        prop = self.rng.choice(["Background", "Foreground", "Orphan"])
        body = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": prop,
                "preconditions": {"uid": obj["metadata"]["uid"]}}
        return self.send(f"delete-{prop.lower()}", kind, obj, "DELETE", self.path(kind, obj["metadata"]["name"]),
                         body, "application/json")

    # -- status subresources

    def patch_status(self):
        kind = self.rng.choice(["jobs", "pods", "jobsets"])
        obj = self.pick(kind)
        if obj is None:
            return False
        st = obj.get("status") or {}
        r = self.rng.random()
        if kind == "pods":
            if r < 0.5 and st.get("phase") == "Running":
                # The pod failed, as a node would report it.
                cs = [{"name": "c", "ready": False, "restartCount": 0, "image": "busybox", "imageID": "",
                       "state": {"terminated": {"exitCode": self.rng.choice([1, 3, 137]), "reason": "Error"}}}]
                body = {"status": {"phase": "Failed", "containerStatuses": cs}}
                what = "status-pod-failed"
            else:
                body = {"status": {"conditions": [{"type": "Ready", "status": self.rng.choice(["True", "False"])}]}}
                what = "status-pod-ready"
        elif kind == "jobs":
            if r < 0.5:
                body = {"status": {"active": self.rng.choice([0, 1, 2**31 - 1]),
                                   "ready": self.rng.choice([0, 2**31 - 1])}}
                what = "status-job-counts"
            else:
                body = {"status": {"failed": self.rng.choice([0, 1, 2**31 - 1])}}
                what = "status-job-failed"
        else:
            if r < 0.35:
                body = {"status": {"conditions": []}}
                what = "status-jobset-conditions"
            elif r < 0.7:
                cur = st.get("restarts") or 0
                lower = [0, 1] if self.enabled["jobset-restarts-rewound"] else []
                choice = self.rng.choice(lower + [min(cur + 1, 2**31 - 1), 2**31 - 1])
                if choice < cur and not self.enabled["jobset-restarts-rewound"]:
                    choice = cur
                body = {"status": {"restarts": choice,
                                   "restartsCountTowardsMax": self.rng.choice([0, 2**31 - 1])}}
                what = "status-jobset-restarts"
            else:
                body = {"status": {"replicatedJobsStatus": []}}
                what = "status-jobset-rjobs"
        return self.send(what, kind, obj, "PATCH", self.path(kind, obj["metadata"]["name"], "status"), body,
                         "application/merge-patch+json")

    # -- suspend, templates, specs

    def suspend_resume(self):
        obj = self.pick("jobsets", lambda o: not (o.get("status") or {}).get("terminalState"))
        if obj is None:
            return False
        want = not bool(obj["spec"].get("suspend"))
        if not want and obj["spec"].get("volumeClaimPolicies"):
            want = True  # its claims never bind (shape_claims)
        return self.send("suspend" if want else "resume", "jobsets", obj, "PATCH",
                         self.path("jobsets", obj["metadata"]["name"]), {"spec": {"suspend": want}},
                         "application/merge-patch+json")

    def edit_suspended_template(self):
        obj = self.pick("jobsets", lambda o: o["spec"].get("suspend"))
        if obj is None:
            return False
        rjs = obj["spec"]["replicatedJobs"]
        i = self.rng.randrange(len(rjs))
        base = f"/spec/replicatedJobs/{i}/template/spec/template"
        r = self.rng.random()
        if r < 0.3:
            body = [{"op": "add", "path": f"{base}/metadata/labels", "value": {f"chaos.jobset-test/t{self.n}": "x"}}]
            what = "template-labels"
        elif r < 0.55:
            # Added to what is there: a template no node matches would stall
            # any controller's JobSet.
            pod = rjs[i]["template"]["spec"]["template"].get("spec") or {}
            sel = dict(pod.get("nodeSelector") or {}, **{"kubernetes.io/os": "linux"})
            body = [{"op": "add", "path": f"{base}/spec/nodeSelector", "value": sel}]
            what = "template-nodeselector"
        elif r < 0.8:
            pod = rjs[i]["template"]["spec"]["template"].get("spec") or {}
            tol = list(pod.get("tolerations") or []) + [{"key": "chaos", "operator": "Exists", "effect": "NoSchedule"}]
            body = [{"op": "add", "path": f"{base}/spec/tolerations", "value": tol}]
            what = "template-tolerations"
        else:
            ann = dict((rjs[i]["template"]["spec"]["template"].get("metadata") or {}).get("annotations") or {})
            ann["jobset-test/run-for"] = self.rng.choice(["1s", "3s"])
            body = [{"op": "add", "path": f"{base}/metadata/annotations", "value": ann}]
            what = "template-annotations"
        return self.send(what, "jobsets", obj, "PATCH", self.path("jobsets", obj["metadata"]["name"]), body)

    def edit_job_spec(self):
        obj = self.pick("jobs", lambda o: not o["metadata"].get("deletionTimestamp"))
        if obj is None:
            return False
        r = self.rng.random()
        if r < 0.4:
            body = {"spec": {"parallelism": self.rng.choice([1, 2, 2**31 - 1])}}
            what = "job-parallelism"
        elif r < 0.7:
            body = {"spec": {"activeDeadlineSeconds": self.rng.choice([1, 2**31 - 1, 2**63 - 1])}}
            what = "job-deadline"
        else:
            body = {"spec": {"backoffLimit": self.rng.choice([0, 2**31 - 1])}}
            what = "job-backoff"
        return self.send(what, "jobs", obj, "PATCH", self.path("jobs", obj["metadata"]["name"]), body,
                         "application/merge-patch+json")

    def suspend_child_job(self):
        obj = self.pick("jobs", lambda o: not o["metadata"].get("deletionTimestamp"))
        if obj is None:
            return False
        want = not bool(obj["spec"].get("suspend"))
        return self.send("job-suspend" if want else "job-resume", "jobs", obj, "PATCH",
                         self.path("jobs", obj["metadata"]["name"]), {"spec": {"suspend": want}},
                         "application/merge-patch+json")

    # -- healing

    def heal(self):
        """Undo what only the adversary can: its finalizers, suspended
        JobSets (other than the claims shape) are resumed, a Job it gave
        the largest backoffLimit gets one its failures already exceed, and a
        Job whose failed count it set to 2^31-1 is deleted."""
        self.heal_finalizers()
        self.heal_backoff()
        self.heal_failed_count()
        for o in self.objects("jobsets"):
            if o["spec"].get("suspend") and not o["spec"].get("volumeClaimPolicies"):
                self.api.request("PATCH", self.path("jobsets", o["metadata"]["name"]), {"spec": {"suspend": False}},
                                 "application/merge-patch+json")
        self.cache.clear()

    def heal_backoff(self):
        """A Job whose pods always fail, given backoffLimit 2^31-1, is
        retried by the Job controller for ever with its pod backoff (10 s
        doubling to 6 min): nothing any JobSet controller does ends it, so
        the settle bound would measure the Job controller. The limit goes
        back below the failures seen (failed > backoffLimit fails the Job at
        once; no failure yet: 0), as a user would undo such an edit (CI seed
        993656309: restart-44-a-0, 5 failures, no condition after 240 s)."""
        self.cache.pop("jobs", None)
        for o in self.objects("jobs"):
            st = o.get("status") or {}
            done = any(c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
                       for c in st.get("conditions") or [])
            if o["spec"].get("backoffLimit") == 2**31 - 1 and not done and not o["metadata"].get("deletionTimestamp"):
                self.api.request("PATCH", self.path("jobs", o["metadata"]["name"]),
                                 {"spec": {"backoffLimit": max(0, (st.get("failed") or 0) - 1)}},
                                 "application/merge-patch+json")
        self.cache.pop("jobs", None)

    def heal_failed_count(self):
        """A Job whose status.failed the adversary set to 2^31-1 wedges the
        Job controller: counting one more failed pod overflows the field,
        the API server refuses every status write of it (and refuses to
        lower the counter), and the Job never finishes (seed 4242:
        dep-128-main-1, one failed pod uncounted, no condition after 240 s).
        No JobSet controller can write a Job's status for it; a user would
        delete such a Job, and so does this (counted as the adversary's
        deletion): its JobSet makes it again."""
        self.cache.pop("jobs", None)
        for o in self.objects("jobs"):
            st = o.get("status") or {}
            done = any(c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
                       for c in st.get("conditions") or [])
            if (st.get("failed") or 0) == 2**31 - 1 and not done and not o["metadata"].get("deletionTimestamp"):
                uid = o["metadata"]["uid"]
                self.jobs.mark(uid)
                self.api.request("DELETE", self.path("jobs", o["metadata"]["name"]),
                                 {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background",
                                  "preconditions": {"uid": uid}}, "application/json")
        self.cache.pop("jobs", None)

    def heal_finalizers(self):
        """Remove the adversary's finalizer from every object that has it."""
        for kind in self.KINDS:
            self.cache.pop(kind, None)
            for o in self.objects(kind):
                fins = o["metadata"].get("finalizers") or []
                if HOLD in fins:
                    self.api.request("PATCH", self.path(kind, o["metadata"]["name"]),
                                     [{"op": "replace", "path": "/metadata/finalizers",
                                       "value": [f for f in fins if f != HOLD]}], "application/json-patch+json")
        self.cache.clear()


# ---------------------------------------------------------------- the run

def explained(js):
    st = js.get("status") or {}
    if st.get("terminalState"):
        return True
    return any(c.get("type") in EXPLAINED and c.get("status") == "True" for c in st.get("conditions") or [])


class Run:
    def __init__(self, seed, edits, burst, workdir, enable):
        self.seed, self.target, self.burst = seed, edits, burst
        self.rng = random.Random(seed)
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.enable = dict(KNOWN_BUGS, **{k: True for k in enable})
        self.editlog = open(self.workdir / "edits.jsonl", "w")
        self.tail = []
        self.history = []
        self.created = 0
        self.refused = 0
        self.counter = 0
        self.figures = {"bursts": [], "lost_leases": 0, "job_controller_stalls": 0}
        self.stalls = set()
        self.t0 = time.monotonic()
        self.failed = False

    def log(self, **entry):
        entry = dict(entry, i=self.adv.n if hasattr(self, "adv") else 0, t=round(time.monotonic() - self.t0, 2))
        line = json.dumps(entry)
        self.editlog.write(line + "\n")
        self.editlog.flush()
        self.tail.append({k: (v if k != "body" else json.dumps(v)[:300]) for k, v in entry.items()})
        self.history.append({k: entry.get(k) for k in ("i", "what", "kind", "name")})
        del self.tail[:-40]

    def fail(self, what):
        msg = [f"chaos run FAILED (seed {self.seed}): {what}",
               f"replay: python3 tests/chaos/chaos.py --seed {self.seed} --edits {self.target} --burst {self.burst}"
               + "".join(f" --with {k}" for k, v in self.enable.items() if v and not KNOWN_BUGS.get(k)),
               f"edit log: {self.workdir / 'edits.jsonl'} ({self.adv.sent} edits); controller logs in {self.workdir}",
               "last edits:"] + [json.dumps(e) for e in self.tail[-25:]]
        self.failed = True
        self.keep_job_controller_log()
        raise Violation("\n".join(msg))

    def keep_job_controller_log(self):
        """The kube-controller-manager's lines about this run's namespace,
        into the work dir: `hack/cluster down` removes the cluster's logs,
        and a stall of the Job controller is only explained there."""
        log = Path(os.environ.get("JOBSET_CLUSTER_DIR", "/tmp/jobset-cluster")) / "logs" / "kube-controller-manager.log"
        ns = getattr(self, "ns", None)
        try:
            with open(log, errors="replace") as src, open(self.workdir / "kube-controller-manager.log", "w") as dst:
                for line in src:
                    if ns and ns in line:
                        dst.write(line)
        except OSError as e:
            print(f"chaos: could not keep {log}: {e}")

    # -- workload

    def new_jobset(self, live=()):
        # At most one exclusive JobSet at a time: two nodes of their own.
        excl = any(j["metadata"]["name"].startswith("excl-") for j in live)
        shapes = [(n, f, w) for n, f, w in SHAPES if (n != "huge" or self.enable["huge-replicas"])
                  and not (n == "excl" and excl)]
        x = self.rng.uniform(0, sum(w for _, _, w in shapes))
        for n, f, w in shapes:
            x -= w
            if x <= 0:
                break
        self.counter += 1
        self.last_shape = n
        name = long_name(f"{n}{self.counter}") if n == "ext" else f"{n}-{self.counter}"
        obj = f(self.rng, name)
        code, out = self.api.request("POST", f"/apis/{GROUP}/v1alpha2/namespaces/{self.ns}/jobsets", obj)
        self.log(what="create-jobset", kind="jobsets", name=name, shape=n, code=code,
                 msg="" if code == 201 else ((out or {}).get("message") or "")[:300])
        if code == 201:
            self.created += 1
        else:
            self.refused += 1

    def jobsets(self):
        code, lst = self.api.request("GET", f"/apis/{GROUP}/v1alpha2/namespaces/{self.ns}/jobsets")
        return (lst or {}).get("items") or [] if code == 200 else []

    def fill_pool(self):
        live = [j for j in self.jobsets() if not (j.get("status") or {}).get("terminalState")
                and not j["metadata"].get("deletionTimestamp")]
        for _ in range(POOL - len(live)):
            self.new_jobset(live)
            live = live + [{"metadata": {"name": f"{self.last_shape}-"}}]

    def clear_finished(self):
        for j in self.jobsets():
            st = j.get("status") or {}
            if st.get("terminalState") or j["spec"].get("volumeClaimPolicies"):
                self.api.request("DELETE", f"/apis/{GROUP}/v1alpha2/namespaces/{self.ns}/jobsets/"
                                 f"{j['metadata']['name']}", {"propagationPolicy": "Background"})

    def teardown(self):
        """Stop the controller, remove the webhook registrations, the nodes
        and (unless the run failed) the namespace; each step is tried even
        when an earlier one fails. The controller's exit status."""
        rc = []
        ctl = getattr(self.setup, "ctl", None)
        steps = [("stop the controller", lambda: rc.append(ctl.stop()) if ctl else None),
                 ("remove the webhook registrations", self.setup.cleanup)]
        if hasattr(self, "adv"):
            # Its finalizers would keep a namespace kept for a post-mortem
            # from ever being deleted.
            steps.append(("remove the adversary's finalizers", self.adv.heal_finalizers))
        steps += [(f"delete node {n}", lambda n=n: self.kube.run("delete", "node", n, "--wait=false", check=False))
                  for n in getattr(self, "nodes", [])]
        if hasattr(self, "ns") and not self.failed:
            steps.append(("delete the namespace",
                          lambda: self.kube.run("delete", "namespace", self.ns, "--wait=false", check=False)))
        for what, step in steps:
            for attempt in range(3):
                try:
                    step()
                    break
                except (subprocess.TimeoutExpired, AssertionError) as e:
                    print(f"teardown: {what}: {e}" + ("; again" if attempt < 2 else "; left behind"))
        if hasattr(self, "ns") and self.failed:
            print(f"namespace {self.ns} kept for a post-mortem (its controller is stopped)")
        return rc[0] if rc else None

    def add_nodes(self):
        """Two kwok nodes for the exclusive JobSets, tainted so nothing else
        lands there."""
        self.nodes = []
        for i in range(2):
            node = f"chaos-{self.setup.id}-{i}"
            spec = {"apiVersion": "v1", "kind": "Node",
                    "metadata": {"name": node, "annotations": {"kwok.x-k8s.io/node": "fake"},
                                 "labels": {"type": "kwok", "kubernetes.io/hostname": node, "kubernetes.io/os": "linux",
                                            "kubernetes.io/arch": "amd64", EXCL_LABEL: "yes"}},
                    "spec": {"taints": [{"key": EXCL_LABEL, "value": "yes", "effect": "NoSchedule"}]},
                    "status": {"allocatable": {"cpu": "64", "memory": "512Gi", "pods": "110"},
                               "capacity": {"cpu": "64", "memory": "512Gi", "pods": "110"}}}
            self.kube.run("create", "-f", "-", input=json.dumps(spec))
            self.nodes.append(node)

    # -- invariants

    def check_now(self):
        crashes = e2e._supervisor.crashes_since(self.t0)
        if crashes:
            c = crashes[0]
            self.fail(f"the controller died of signal {-c['rc']} (log {c['log']}):\n{c['tail'][-2000:]}")
        self.pods.settle()
        bad = self.pods.check.since(0)
        if bad:
            self.fail("one hostname, two attempts:\n" + "\n".join(hostnames.describe(v) for v in bad))
        if self.jobs.violations:
            self.fail("a Job created twice:\n" + "\n".join(self.jobs.violations))

    def check_audit(self):
        counts = audit_creates(self.ns, self.audit_offset)
        if counts is None:
            return "no audit log"
        over = [(k, n, self.jobs.allowed(k)) for k, n in counts.items() if n > self.jobs.allowed(k)]
        if over:
            self.fail("the audit log shows Jobs created more often than allowed:\n" +
                      "\n".join(f"{k}: {n} creates, {a} allowed" for k, n, a in over))
        return f"{sum(counts.values())} creates"

    def describe(self, js):
        """A JobSet, its Jobs and pods in a few lines (for a failure)."""
        name = js["metadata"]["name"]
        out = [f"JobSet {name}: spec.suspend={js['spec'].get('suspend')} status="
               f"{json.dumps(js.get('status'))[:800]}"]
        sel = urllib.parse.quote(f"{JS}jobset-name={name}")
        _, jobs = self.api.request("GET", f"/apis/batch/v1/namespaces/{self.ns}/jobs?labelSelector={sel}")
        for j in (jobs or {}).get("items") or []:
            md, sp, st = j["metadata"], j["spec"], j.get("status") or {}
            out.append(f"  Job {md['name']} uid {md['uid'][:8]} attempt {md.get('labels', {}).get(JS + 'restart-attempt')}"
                       f" suspend={sp.get('suspend')} parallelism={sp.get('parallelism')} deleting="
                       f"{bool(md.get('deletionTimestamp'))} owners={[o['uid'][:8] for o in md.get('ownerReferences') or []]}"
                       f" created={md.get('creationTimestamp')}"
                       f" status={json.dumps({k: st.get(k) for k in ('startTime', 'active', 'ready', 'succeeded', 'failed')})}"
                       f" conditions={[c['type'] for c in st.get('conditions') or [] if c.get('status') == 'True']}")
        _, pods = self.api.request("GET", f"/api/v1/namespaces/{self.ns}/pods")
        for p in (pods or {}).get("items") or []:
            if not p["metadata"]["name"].startswith(name + "-"):
                continue
            md, sp, st = p["metadata"], p["spec"], p.get("status") or {}
            out.append(f"  pod {md['name']} {st.get('phase')} node={sp.get('nodeName')} gates="
                       f"{[g['name'] for g in sp.get('schedulingGates') or []]} nodeSelector={sp.get('nodeSelector')}"
                       f" deleting={bool(md.get('deletionTimestamp'))} finalizers={md.get('finalizers')}")
        out.append("  edits of it: " + ", ".join(f"{e['i']}:{e['what']}:{e.get('kind')}/{e.get('name')}"
                                                 for e in self.history if e.get("name", "").startswith(name)))
        return "\n".join(out)

    def job_controller_stalled(self, jobsets):
        """True when each JobSet in jobsets has an unsuspended Job that the
        Job controller made no pod for and wrote no condition or count on,
        created less than JOB_CONTROLLER_TIMEOUT_S ago: the stall of
        kubernetes#131917, which ends when its expectations time out (see
        JOB_CONTROLLER_TIMEOUT_S). With or without status.startTime: CI's
        seed 993656309 met such a Job with none (excl-6-x-1, made again
        under its name after the garbage collector deleted the first, then
        suspended and resumed; spec.suspend false, no status at all for
        240 s). A JobSet controller's part ends once the Job exists
        unsuspended; whatever keeps the Job controller from it is waited out
        to the same bound, and the run fails if the Job has no pod then.
        Each such Job is counted once in figures["job_controller_stalls"]."""
        _, pods = self.api.request("GET", f"/api/v1/namespaces/{self.ns}/pods")
        owners = {o.get("uid") for p in (pods or {}).get("items") or []
                  for o in p["metadata"].get("ownerReferences") or []}
        now = time.time()
        for js in jobsets:
            sel = urllib.parse.quote(f"{JS}jobset-name={js['metadata']['name']}")
            _, jobs = self.api.request("GET", f"/apis/batch/v1/namespaces/{self.ns}/jobs?labelSelector={sel}")
            stalled = []
            for j in (jobs or {}).get("items") or []:
                md, st = j["metadata"], j.get("status") or {}
                if (j["spec"].get("suspend") or st.get("conditions")
                        or any(st.get(k) for k in ("active", "ready", "terminating", "succeeded", "failed"))
                        or md["uid"] in owners):
                    continue
                made = calendar.timegm(time.strptime(md["creationTimestamp"], "%Y-%m-%dT%H:%M:%SZ"))
                if now - made < JOB_CONTROLLER_TIMEOUT_S:
                    stalled.append(md["uid"])
            if not stalled:
                return False
            self.stalls.update(stalled)
        self.figures["job_controller_stalls"] = len(self.stalls)
        return True

    def settle(self, burst_no):
        t = time.monotonic()
        last = []

        def done():
            nonlocal last
            last = [j for j in self.jobsets() if not explained(j)]
            return not last
        while not done():
            self.check_now()
            if time.monotonic() - t > SETTLE_S and self.job_controller_stalled(last):
                pass
            elif time.monotonic() - t > SETTLE_S:
                self.fail(f"after burst {burst_no}, {len(last)} JobSets neither terminal nor explained within "
                          f"{SETTLE_S}s:\n" + "\n".join(self.describe(j) for j in last[:4]))
            time.sleep(1)
        settled = time.monotonic() - t
        # Quiet: CPU over a window, within the bound.
        t2 = time.monotonic()
        while True:
            pid = self.ctl.proc.pid
            try:
                c0 = cpu_seconds(pid)
                time.sleep(QUIET_WINDOW_S)
                used = (cpu_seconds(pid) - c0) / QUIET_WINDOW_S
            except OSError:
                used = None  # restarted meanwhile (a lost lease): measure again
            if used is not None and used < QUIET_CPU:
                break
            if time.monotonic() - t2 > QUIET_BOUND_S:
                self.fail(f"after burst {burst_no} the controller did not go quiet: {used:.3f} cores over "
                          f"{QUIET_WINDOW_S}s, {QUIET_BOUND_S}s after every JobSet settled")
        self.check_now()
        return settled, used

    # -- main

    def run(self):
        self.kube = e2e.Kube()
        # The API server of a machine shared with other work can stall for
        # a minute or more (seen at load average 130): requests wait it out
        # rather than fail the run for what is not the controller's doing.
        self.api = kapi.Api(patience=PATIENCE_S)
        self.kube.run("apply", "--server-side", "--force-conflicts", "-f", str(e2e._crd_path()))
        e2e.wait_crd_served(self.kube)
        self.setup = Setup(self.kube, self.workdir)
        try:
            self.audit_offset = audit.audit_offset() if os.environ.get("JOBSET_TEST_AUDIT_LOG") else 0
            self.ctl = self.setup.start_controller(f"chaos-{self.setup.id}",
                                                   extra=("--feature-gates=RestartJob=true",))
            self.add_nodes()
            self.ns = self.setup.namespace(f"chaos-{self.seed % 100000}-{self.setup.id}")
            self.pods = hostnames.HostnameWatch(f"/api/v1/namespaces/{self.ns}/pods").start()
            self.jobs = JobWatch(self.ns).start()
            self.adv = Adversary(self.rng, self.ns, self.api, self.jobs, self.log, self.enable)
            burst_no = 0
            while self.adv.sent < self.target:
                burst_no += 1
                self.fill_pool()
                n = min(self.burst, self.target - self.adv.sent)
                start, acc0, t_burst = self.adv.sent, self.adv.accepted, time.monotonic()
                while self.adv.sent - start < n:
                    if self.adv.n % 25 == 0:
                        self.fill_pool()
                        self.check_now()
                    self.adv.one()
                    time.sleep(self.rng.uniform(0, 0.01))
                took = time.monotonic() - t_burst
                self.adv.heal()
                settled, cpu = self.settle(burst_no)
                self.figures["bursts"].append({"edits": self.adv.sent - start, "accepted": self.adv.accepted - acc0,
                                               "edit_s": round(took, 1), "settled_s": round(settled, 1),
                                               "cpu": round(cpu, 4)})
                print(f"burst {burst_no}: {self.adv.sent - start} edits in {took:.0f}s ({self.adv.accepted - acc0} "
                      f"accepted), settled in {settled:.1f}s, controller {cpu:.3f} cores after", flush=True)
                self.clear_finished()
            self.figures["audit"] = self.check_audit()
            self.check_now()
        finally:
            self.figures.update(edits=self.adv.sent if hasattr(self, "adv") else 0,
                                accepted=self.adv.accepted if hasattr(self, "adv") else 0,
                                by_kind=dict(self.adv.by_kind) if hasattr(self, "adv") else {},
                                jobsets_created=self.created, jobsets_refused=self.refused,
                                jobs_seen=len(self.jobs.first) if hasattr(self, "jobs") else 0,
                                pod_events=self.pods.check.events if hasattr(self, "pods") else 0,
                                lost_leases=len([r for r in e2e._supervisor.restarts if r["at"] >= self.t0]),
                                seconds=round(time.monotonic() - self.t0))
            (self.workdir / "figures.json").write_text(json.dumps(self.figures, indent=1))
            for w in ("pods", "jobs"):
                if hasattr(self, w):
                    getattr(self, w).stop_ev.set() if w == "pods" else self.jobs.stop.set()
            rc = self.teardown()
            self.editlog.close()
            if rc not in (0, None):
                raise Violation(f"controller exit status {rc} on SIGTERM (seed {self.seed}); log {self.ctl.log}")
        return self.figures


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=None, help="the run's seed (default: random, printed)")
    ap.add_argument("--edits", type=int, default=1000, help="adversary edits in all (default 1000)")
    ap.add_argument("--burst", type=int, default=250, help="edits per burst (default 250)")
    ap.add_argument("--workdir", default=None, help="edit log, controller logs, figures (default: a temp dir)")
    ap.add_argument("--with", dest="enable", action="append", default=[], choices=sorted(KNOWN_BUGS),
                    help="also make the edits of a known, unfixed bug")
    a = ap.parse_args(argv)
    if not os.environ.get("JOBSET_TEST_KUBECONFIG"):
        sys.exit("JOBSET_TEST_KUBECONFIG unset: hack/cluster up, then eval \"$(hack/cluster env)\"")
    seed = a.seed if a.seed is not None else random.SystemRandom().randrange(2**31)
    workdir = a.workdir or tempfile.mkdtemp(prefix=f"chaos-{seed}-")
    print(f"chaos: seed {seed}, {a.edits} edits in bursts of {a.burst}, work dir {workdir}", flush=True)
    figures = Run(seed, a.edits, a.burst, workdir, a.enable).run()
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
