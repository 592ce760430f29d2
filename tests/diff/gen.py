"""Seeded generator of random valid JobSets and their failure scripts for the
differential test against upstream JobSet v0.12.0 (tests/diff/difftest.py).

A case is a fully defaulted JobSet (as upstream's defaulting webhook would
leave it: neither controller's webhooks run in the test) plus a script. The
script is declarative, so it plays out the same on both control planes:

* the pod-template annotations of hack/cluster's kwok stages
  (docs/cluster.md): how long a pod runs (`jobset-test/run-for`), and which
  pods fail (`jobset-test/fail-if-restart-attempt`,
  `fail-if-job-restart-attempt`, `fail-if-job-index`,
  `fail-if-completion-index`) with which exit code and container reason;
* the Job template decides the Job's failure reason: `BackoffLimitExceeded`
  (backoffLimit 0 or 1), `PodFailurePolicy` (a podFailurePolicy rule FailJob
  on the script's exit code), `DeadlineExceeded` (activeDeadlineSeconds below
  the pod's run time);
* timed actions: `resume` (a JobSet created suspended is resumed N seconds
  after it was created, once it reports `Suspended=True`).

Determinism: an outcome must not depend on which of two controllers' passes
sees an event first. The generator therefore keeps every "decisive" moment
(a Job succeeding or failing) of different replicatedJobs at least GAP_S
apart in an idealised timeline (all pods of an attempt start at 0, a pod of
wave w ends at (w + 1) * run-for), and rejects shapes whose outcome is a race
by construction (see `_racy`); the draw is then repeated with the same RNG,
so a case is still a pure function of its seed.

Failures are always bounded: every failing pod names the restart attempts it
fails in, so even `...AndIgnoreMaxRestarts` actions end.

    python3 tests/diff/gen.py SEED        # print the case as JSON
"""
import json
import random
import sys

# Seconds between decisive moments of different replicatedJobs. The pods of
# one case start up to a few seconds apart on a loaded machine (the Job
# controller works through every case's Jobs at once): 5 s was too little
# at load 30 (seed 300000, Any: a success at 2 s lost to a failure at 9 s).
GAP_S = 7
# Pod run times (s) a replicatedJob may get; distinct per replicatedJob.
RUN_FOR = [2, 10, 18, 26]
# A replicatedJob that is never waited for (not a success target) may run
# "forever" (beyond any case).
LONG_RUN = "1h"
RJ_NAMES = ["a", "b", "c"]
ACTIONS = ["FailJobSet", "RestartJobSet", "RestartJobSetAndIgnoreMaxRestarts",
           "RestartJob", "RestartJobAndIgnoreMaxRestarts"]
REASONS = ["BackoffLimitExceeded", "PodFailurePolicy", "DeadlineExceeded"]
# onJobFailureMessagePatterns: the Job controller's messages (the same
# kube-controller-manager on both sides), e.g. "Job has reached the specified
# backoff limit", "Job was active longer than specified deadline",
# "Container c for pod ... failed with exit code 42 matching FailJob rule at index 0".
PATTERNS = ["backoff limit", "deadline", "exit code 42", "^nomatch$", ".*"]


def _subset(rng, items, min_n=1):
    """A non-empty (min_n) random subset of items, in their order."""
    items = list(items)
    n = rng.randint(min_n, len(items))
    pick = set(rng.sample(range(len(items)), n))
    return [x for i, x in enumerate(items) if i in pick]


class Reject(Exception):
    """The draw is racy or out of bounds: draw again."""


def _rjob(rng, name, run_for, fail):
    """One replicatedJob: its shape, pod template and failure script."""
    replicas = rng.randint(1, 3)
    parallelism = rng.randint(1, 2)
    completions = parallelism + (1 if rng.random() < 0.2 else 0)
    ann = {"jobset-test/run-for": f"{run_for}s" if isinstance(run_for, int) else run_for}
    job_spec = {"parallelism": parallelism, "completions": completions, "completionMode": "Indexed",
                "backoffLimit": 0}
    script = None
    if fail:
        reason = rng.choice(REASONS)
        code = rng.choice([1, 42, 137])
        script = {"reason": reason, "code": code,
                  "attempts": fail["attempts"], "job_attempts": fail.get("job_attempts"),
                  "jobs": None, "completions": None}
        if rng.random() < 0.5 and replicas > 1:
            script["jobs"] = _subset(rng, range(replicas)) if not fail.get("single_job") else [rng.randrange(replicas)]
        elif fail.get("single_job"):
            script["jobs"] = [rng.randrange(replicas)]
        if rng.random() < 0.3 and completions > 1:
            script["completions"] = [rng.randrange(completions)]
        ann["jobset-test/exit-code"] = str(code)
        ann["jobset-test/fail-reason"] = rng.choice(["Error", "OOMKilled"])
        ann["jobset-test/fail-if-restart-attempt"] = ",".join(map(str, script["attempts"]))
        if script["job_attempts"] is not None:
            ann["jobset-test/fail-if-job-restart-attempt"] = ",".join(map(str, script["job_attempts"]))
        if script["jobs"] is not None:
            ann["jobset-test/fail-if-job-index"] = ",".join(map(str, script["jobs"]))
        if script["completions"] is not None:
            ann["jobset-test/fail-if-completion-index"] = ",".join(map(str, script["completions"]))
        if reason == "PodFailurePolicy":
            job_spec["podFailurePolicy"] = {"rules": [
                {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [code]}}]}
        elif reason == "DeadlineExceeded":
            # Only the failing pods must outlive the deadline: the Job of a
            # pod that would succeed must succeed first, so the script's
            # failing Jobs get the deadline through... the same template.
            # Hence: every Job of this replicatedJob fails by deadline in
            # the failing attempts; the pods run long, the deadline is
            # run_for. Outside the failing attempts they could not succeed,
            # so this reason is only drawn for replicatedJobs that fail in
            # every attempt that runs (checked by the caller).
            job_spec["activeDeadlineSeconds"] = run_for
            ann["jobset-test/run-for"] = LONG_RUN
            ann.pop("jobset-test/exit-code")
            ann.pop("jobset-test/fail-reason")
            for k in [k for k in ann if k.startswith("jobset-test/fail-if-")]:
                ann.pop(k)
            script.update(jobs=None, completions=None)
        else:
            job_spec["backoffLimit"] = 1 if rng.random() < 0.15 else 0
    job_spec["template"] = {
        "metadata": {"annotations": ann},
        "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 0,
                 "containers": [{"name": "c", "image": "busybox", "command": ["true"]}]}}
    return {"name": name, "replicas": replicas, "template": {"spec": job_spec}}, script


def _waves(rj):
    s = rj["template"]["spec"]
    return -(-s["completions"] // s["parallelism"])


def _racy(rjobs, scripts, run_fors, success):
    """Why this shape's outcome would depend on timing, or None.

    The idealised timeline of one attempt: a Job's pods of wave w end at
    (w + 1) * run_for; a Job succeeds when its last wave does, fails when its
    first failing pod does (backoffLimit 1 adds a retry of ~10 s: only
    allowed where nothing else is decisive)."""
    moments = []  # (time, rjob index)
    for i, (rj, sc, rf) in enumerate(zip(rjobs, scripts, run_fors)):
        if rf is None:
            continue  # runs beyond the case: never decisive
        waves = _waves(rj)
        moments.append((waves * rf, i))
        if sc:
            if sc["completions"] is not None:
                par = rj["template"]["spec"]["parallelism"]
                moments.append(((sc["completions"][0] // par + 1) * rf, i))
            else:
                moments.append((rf, i))
            if rj["template"]["spec"].get("backoffLimit", 0) > 0:
                return "backoffLimit retry timing"
    for t1, i in moments:
        for t2, j in moments:
            if i != j and abs(t1 - t2) < GAP_S:
                return f"moments {t1}s ({RJ_NAMES[i]}) and {t2}s ({RJ_NAMES[j]}) closer than {GAP_S}s"
    # Within one replicatedJob: a Job succeeding at the moment another fails
    # decides the JobSet under operator Any.
    if success["operator"] == "Any":
        targets = success.get("targetReplicatedJobs") or [rj["name"] for rj in rjobs]
        for rj, sc in zip(rjobs, scripts):
            if sc and rj["name"] in targets and (sc["jobs"] is not None and len(sc["jobs"]) < rj["replicas"]):
                return f"operator Any on {rj['name']} whose Jobs partly fail"
            if sc and rj["name"] in targets and sc["completions"] is not None:
                return f"operator Any on {rj['name']} whose Jobs succeed in the failure-free attempts"
    return None


def _draw(rng):
    nrj = rng.choice([1, 1, 2, 2, 2, 3])
    names = RJ_NAMES[:nrj]
    # Success policy first: it decides which replicatedJobs may run forever.
    op = rng.choice(["All", "All", "Any"])
    success = {"operator": op}
    if rng.random() < 0.4:
        success["targetReplicatedJobs"] = _subset(rng, names)
    targets = success.get("targetReplicatedJobs") or names

    # Failure policy.
    fp = None
    if rng.random() < 0.8:
        fp = {"maxRestarts": rng.randint(0, 3),
              "restartStrategy": rng.choice(["Recreate", "Recreate", "BlockingRecreate"])}
        rules = []
        for k in range(rng.choice([0, 1, 1, 2, 3])):
            rule = {"name": f"rule{k}", "action": rng.choice(ACTIONS)}
            if rng.random() < 0.5:
                rule["onJobFailureReasons"] = _subset(rng, REASONS)
            if rng.random() < 0.2:
                rule["onJobFailureMessagePatterns"] = _subset(rng, PATTERNS)[:2]
            if rng.random() < 0.4:
                rule["targetReplicatedJobs"] = _subset(rng, names)
            rules.append(rule)
        if rules:
            fp["rules"] = rules
    per_job = fp is not None and any(r["action"].startswith("RestartJob") and not r["action"].startswith("RestartJobSet")
                                     for r in fp.get("rules", []))

    # Which replicatedJobs fail, in which attempts. Attempts of different
    # replicatedJobs are disjoint (one failing replicatedJob per attempt).
    # Attempt 0 goes to the first failing replicatedJob (in a random order),
    # so most scripts fail at least once.
    attempts = list(range(3))
    fails = {}
    for n in rng.sample(names, len(names)):
        if rng.random() < 0.55 and attempts:
            k = rng.randint(1, min(2, len(attempts)))
            mine, attempts = sorted(attempts[:k]), attempts[k:]
            f = {"attempts": mine}
            if per_job:
                # RestartJob replaces one Job at a time: fail one Job (which
                # one is the first to fail must not be a race), in bounded
                # per-Job attempts.
                f["single_job"] = True
                f["job_attempts"] = sorted(_subset(rng, [0, 1]))
            fails[n] = f
    # InOrder creates replicatedJob k+1 only once every Job of k is ready
    # (a pass per step, seconds on a loaded machine): nothing may be
    # decisive before the last replicatedJob is surely created.
    in_order = rng.random() < 0.3
    run_pool = RUN_FOR[1:] + [RUN_FOR[-1] + 8] if in_order else RUN_FOR[:]
    rng.shuffle(run_pool)
    rjobs, scripts, run_fors = [], [], []
    for i, n in enumerate(names):
        rf = run_pool[i]
        long = n not in targets and n not in fails and rng.random() < 0.5
        f = fails.get(n)
        if f and rf < 10 and (max(f["attempts"]) > 0 or f.get("job_attempts")):
            # After a restart, `RestartingJobSet=False` (reason and event
            # JobsReady) comes once every Job of the new attempt is ready
            # or succeeded at once; a Job failing 2 s after its pod starts
            # closes that window before the last Job of the attempt may be
            # recreated (each controller recreates names in its own order).
            raise Reject("a failure in a later attempt closes the all-ready window")
        rj, sc = _rjob(rng, n, LONG_RUN if long else rf, f)
        if sc and sc["reason"] == "DeadlineExceeded":
            # Deadline failures hit every Job in every attempt: only when
            # the replicatedJob has nothing else to do. Bound it by the
            # restarts: allowed only without ...AndIgnoreMaxRestarts rules.
            if fp is None or any("IgnoreMaxRestarts" in r["action"] for r in fp.get("rules", [])) or per_job:
                raise Reject("deadline with unbounded restarts")
        if sc and sc["reason"] == "DeadlineExceeded" and rf < 10 and fp and fp["maxRestarts"] > 0:
            raise Reject("a deadline failure in a later attempt closes the all-ready window")
        rjobs.append(rj)
        scripts.append(sc)
        run_fors.append(None if long else rf)
    why = _racy(rjobs, scripts, run_fors, success)
    if why:
        raise Reject(why)

    spec = {"replicatedJobs": rjobs, "successPolicy": success,
            "startupPolicy": {"startupPolicyOrder": "InOrder" if in_order else "AnyOrder"},
            "network": {"enableDNSHostnames": True, "publishNotReadyAddresses": True}}
    if fp:
        spec["failurePolicy"] = fp
    if rng.random() < 0.25:
        k = rng.randrange(nrj)
        rj = rjobs[k]
        spec["coordinator"] = {"replicatedJob": rj["name"], "jobIndex": rng.randrange(rj["replicas"]),
                               "podIndex": rng.randrange(rj["template"]["spec"]["completions"])}
    actions = []
    if rng.random() < 0.2:
        # Resumed once the controller has seen it suspended (Suspended=True)
        # and `at` seconds have passed: a resume before the first pass would
        # make a different case on a slower control plane.
        spec["suspend"] = True
        actions.append({"at": rng.choice([1, 3]), "do": "resume", "after": "Suspended=True"})
    uses_restart_job = per_job
    return {"jobset": {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                       "metadata": {"name": "js"}, "spec": spec},
            "actions": actions, "scripts": scripts, "gates": ["RestartJob"] if uses_restart_job else []}


def generate(seed):
    """The case of `seed` (an int): a dict with `jobset` (the object to
    create), `actions` (timed script actions), `scripts` (the failure script
    per replicatedJob, for reports) and `draws` (rejected draws before it)."""
    rng = random.Random(seed)
    for draws in range(1000):
        try:
            case = _draw(rng)
            case["seed"] = seed
            case["draws"] = draws
            return case
        except Reject:
            continue
    raise RuntimeError(f"seed {seed}: no race-free draw in 1000 tries")


if __name__ == "__main__":
    print(json.dumps(generate(int(sys.argv[1])), indent=1))
