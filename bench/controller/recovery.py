#!/usr/bin/env python3
"""recovery.py - restart recovery on real nodes (issue 23 item 3), the driver
of bench/controller/recovery.sh (which brings up the cluster and the images;
BENCHMARKS.md "Restart recovery on real nodes" has the figures).

    recovery.py run --out DIR [--reps N] [--variants "upstream foreground direct inplace"]
    recovery.py report DIR...           the table (markdown) from DIR/*.json

Needs a running `hack/cluster up --real-nodes N` (environment of `hack/cluster
env`), deploy/ applied (the Deployment jobset-system/jobset-controller-manager)
and the images of recovery.sh loaded: jobset-controller:0.1.0 (ours),
jobset-upstream:<ver> (upstream's manager, static), the agent image, busybox.

One run (one variant, one rep) is: the controller Deployment switched to the
variant (image and flags; Recreate rollout; skipped when unchanged), a fresh
namespace, one JobSet of 2 ReplicatedJobs x 4 Jobs x 4 pods (32 pods, spread
over the real nodes by the scheduler's defaults), every pod a shell worker
with a SIGTERM handler that takes 2 s (terminationGracePeriodSeconds 5).
Once every pod is Ready and every worker has started, the driver creates the
file `go` in a hostPath directory every pod mounts; the worker of a-0-0
polls for it (every 0.2 s), writes `failed` and exits 1.  t0 is that file's
mtime (the process's exit, to the millisecond on this machine's clock, the
driver's clock too).  The run ends when every pod of the next attempt is
Running and Ready and every worker of the next attempt has started (each
worker writes a mark file w.<rjob>-<job>-<pod>.<n> when it starts: n = 0 in
attempt 0, 1 in the next).  A pod, Job and JobSet watch (LIST+WATCH of the
namespace, tests/e2e/cluster/kapi.py) timestamps every step on arrival.

Variants:
  upstream    sigs.k8s.io/jobset v0.12.0's manager in the same Deployment (its
              defaults: leader election, internal certificates, webhooks on
              the same Service and configurations as deploy/'s), Recreate
  foreground  ours, --restart-cleanup=foreground (upstream's cleanup)
  direct      ours, --restart-cleanup=direct (the default)
  inplace     ours (direct), restartStrategy InPlaceRestart, each pod's one
              container the in-place-restart-agent in main-container mode
              running the same worker (restartPolicy OnFailure, as
              tests/e2e/realnodes/test_inplace_restart.py); the agent SIGKILLs
              its worker when told to restart, so no grace period is spent
Ours always runs with --feature-gates=InPlaceRestart=true (one image, one
flag set but the cleanup mode).

Each run writes DIR/<variant>-<rep>.json: the steps (seconds after t0), the
load average at t0, the nodes used, and the raw per-pod first-seen times.
"""
import argparse
import calendar
import glob
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "e2e" / "cluster"))
import kapi  # noqa: E402  LIST+WATCH and plain HTTPS with the admin certificate

JS = "jobset.sigs.k8s.io/"
ANN = JS + "in-place-restart-attempt"
SYSTEM_NS = "jobset-system"
DEPLOY = "jobset-controller-manager"
BUSYBOX = "localhost/jobset-test/busybox:1"
AGENT_IMAGE = os.environ.get("RECOVERY_AGENT_IMAGE", "localhost/jobset-test/agent:1")
OURS_IMAGE = "jobset-controller:0.1.0"
UPSTREAM_IMAGE = os.environ.get("RECOVERY_UPSTREAM_IMAGE", "jobset-upstream:v0.12.0")
VARIANTS = ("upstream", "foreground", "direct", "inplace")
RJOBS, JOBS, PODS = 2, 4, 4
GRACE_S, HANDLER_S = 5, 2

# The worker: a mark when it starts (its attempt's n), a SIGTERM handler that
# takes HANDLER_S (a checkpoint flushed), and for a-0-0 in attempt 0 the
# failure on the driver's signal.  Only shell builtins and sleep: the agent
# image has busybox as sh and sleep only.
WORKER = (
    f"trap 'sleep {HANDLER_S}; exit 0' TERM; "
    "K=$RJOB-$JOB_INDEX-$JOB_COMPLETION_INDEX; "
    "n=0; while [ -e /m/w.$K.$n ]; do n=$((n+1)); done; : > /m/w.$K.$n; "
    "if [ $K = a-0-0 ] && [ ! -e /m/failed ]; then "
    "while [ ! -e /m/go ]; do sleep 0.2; done; : > /m/failed; exit 1; fi; "
    "while :; do sleep 3600 & wait $!; done")


def log(msg):
    print(f"[recovery {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def kubectl(*args, input=None, check=True, timeout=300):
    p = subprocess.run(["kubectl", *args], input=input, capture_output=True, text=True, timeout=timeout,
                       env=dict(os.environ, KUBECONFIG=os.environ["JOBSET_TEST_KUBECONFIG"]))
    if check and p.returncode != 0:
        raise RuntimeError(f"kubectl {' '.join(args)}: {p.stderr.strip()[-2000:]}")
    return p


def wait_for(what, fn, timeout, period=0.2):
    deadline = time.monotonic() + timeout
    while True:
        v = fn()
        if v:
            return v
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(period)


# ------------------------------------------------------------------ the controller

def controller_spec(variant, ours_args):
    """(image, command, args) of the Deployment's container for a variant."""
    if variant == "upstream":
        return UPSTREAM_IMAGE, ["/manager"], ["--leader-elect", "--zap-log-level=2"]
    mode = "foreground" if variant == "foreground" else "direct"
    args = [a for a in ours_args if not a.startswith(("--restart-cleanup", "--feature-gates"))]
    return OURS_IMAGE, ["/usr/local/bin/jobset-controller"], \
        args + ["--feature-gates=InPlaceRestart=true", f"--restart-cleanup={mode}"]


def probe_jobset():
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "probe"},
            "spec": {"replicatedJobs": [{"name": "w", "replicas": 1, "template": {"spec": {"template": {"spec": {
                "restartPolicy": "Never", "containers": [{"name": "c", "image": BUSYBOX, "command": ["true"]}]}}}}}]}}


class Controller:
    """The one controller Deployment of deploy/, switched between variants."""

    def __init__(self):
        d = json.loads(kubectl("get", "deployment", DEPLOY, "-n", SYSTEM_NS, "-o", "json").stdout)
        c = d["spec"]["template"]["spec"]["containers"][0]
        self.ours_args = c.get("args") or []
        if c.get("image") != OURS_IMAGE:
            raise SystemExit(f"the Deployment runs {c.get('image')}, not {OURS_IMAGE}: apply deploy/ first")
        self.current = None
        # Recreate: never two controllers (ours and upstream) at once.
        kubectl("patch", "deployment", DEPLOY, "-n", SYSTEM_NS, "--type=merge", "-p",
                json.dumps({"spec": {"strategy": {"type": "Recreate", "rollingUpdate": None}}}))

    def switch(self, variant):
        spec = controller_spec(variant, self.ours_args)
        if spec == self.current:
            return 0.0
        t = time.monotonic()
        image, command, args = spec
        kubectl("patch", "deployment", DEPLOY, "-n", SYSTEM_NS, "--type=json", "-p", json.dumps([
            {"op": "replace", "path": "/spec/template/spec/containers/0/image", "value": image},
            {"op": "replace", "path": "/spec/template/spec/containers/0/command", "value": command},
            {"op": "replace", "path": "/spec/template/spec/containers/0/args", "value": args}]))
        kubectl("rollout", "status", f"deployment/{DEPLOY}", "-n", SYSTEM_NS, "--timeout=300s", timeout=320)
        # Its webhooks answer (certificates in the Secret and the caBundles,
        # the kubelet's copy of the Secret synced): a dry-run create is admitted.
        wait_for(f"the {variant} controller's webhooks", lambda: kubectl(
            "create", "--dry-run=server", "-n", "default", "-f", "-", input=json.dumps(probe_jobset()),
            check=False).returncode == 0, timeout=300, period=1)
        # Leading: the lease names the new pod (a predecessor that did not
        # release it leaves it to expire, 15 s).
        pods = json.loads(kubectl("get", "pods", "-n", SYSTEM_NS, "-l", "control-plane=controller-manager",
                                  "-o", "json").stdout)["items"]
        live = [p["metadata"]["name"] for p in pods if not p["metadata"].get("deletionTimestamp")]

        def leader():
            for ls in json.loads(kubectl("get", "leases", "-n", SYSTEM_NS, "-o", "json").stdout)["items"]:
                h = (ls.get("spec") or {}).get("holderIdentity") or ""
                if any(h.startswith(n) for n in live):
                    return h
            return None

        try:
            wait_for(f"the {variant} controller to lead", leader, timeout=90, period=1)
        except TimeoutError:
            log("no lease names the new pod; going on (the JobSet's readiness below waits for it anyway)")
        self.current = spec
        return time.monotonic() - t


# ------------------------------------------------------------------ the workload

def jobset(name, variant, marks):
    inplace = variant == "inplace"
    env = [{"name": "RJOB", "valueFrom": {"fieldRef": {"fieldPath": f"metadata.labels['{JS}replicatedjob-name']"}}},
           {"name": "JOB_INDEX", "valueFrom": {"fieldRef": {"fieldPath": f"metadata.labels['{JS}job-index']"}}}]
    if inplace:
        env += [{"name": "JOBSET_NAME", "valueFrom": {"fieldRef": {
                    "fieldPath": f"metadata.annotations['{JS}jobset-name']"}}},
                {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                {"name": "SHELL", "value": "/bin/sh"},
                {"name": "WORKER_COMMAND", "value": WORKER}]
        container = {"name": "worker", "image": AGENT_IMAGE, "imagePullPolicy": "Never", "env": env}
    else:
        container = {"name": "worker", "image": BUSYBOX, "imagePullPolicy": "Never", "env": env,
                     "command": ["sh", "-c", WORKER]}
    container["volumeMounts"] = [{"name": "m", "mountPath": "/m"}]
    pod = {"restartPolicy": "OnFailure" if inplace else "Never", "terminationGracePeriodSeconds": GRACE_S,
           "nodeSelector": {"type": "real"}, "containers": [container],
           "volumes": [{"name": "m", "hostPath": {"path": str(marks)}}]}
    if inplace:
        pod["serviceAccountName"] = "agent"
    job = {"parallelism": PODS, "completions": PODS, "completionMode": "Indexed",
           "backoffLimit": 2147483647 if inplace else 0, "template": {"spec": pod}}
    if inplace:
        job["podReplacementPolicy"] = "Failed"
    fp = {"maxRestarts": 3}
    if inplace:
        fp["restartStrategy"] = "InPlaceRestart"
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": name},
            "spec": {"failurePolicy": fp,
                     "replicatedJobs": [{"name": r, "replicas": JOBS, "template": {"spec": job}} for r in ("a", "b")]}}


def agent_rbac(api, ns):
    objs = [
        ("/api/v1/namespaces/{ns}/serviceaccounts", {"apiVersion": "v1", "kind": "ServiceAccount",
                                                     "metadata": {"name": "agent"}}),
        ("/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles",
         {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "agent"},
          "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["patch"]},
                    {"apiGroups": ["jobset.x-k8s.io"], "resources": ["jobsets"], "verbs": ["get", "list", "watch"]}]}),
        ("/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
         {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "agent"},
          "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "agent"},
          "subjects": [{"kind": "ServiceAccount", "name": "agent", "namespace": ns}]})]
    for path, body in objs:
        code, out = api.request("POST", path.format(ns=ns), body)
        if code >= 300:
            raise RuntimeError(f"POST {path}: {code} {out}")


# ------------------------------------------------------------------ the watch

class Watch:
    """LIST+WATCH of pods, Jobs and JobSets of one namespace; keeps the last
    object of each uid, whether it was deleted, and the first time (time.time
    at arrival) each uid was seen in each state `mark()` distinguishes."""

    PATHS = {"pod": "/api/v1/namespaces/{ns}/pods",
             "job": "/apis/batch/v1/namespaces/{ns}/jobs",
             "jobset": "/apis/jobset.x-k8s.io/v1alpha2/namespaces/{ns}/jobsets"}

    def __init__(self, ns):
        self.ns = ns
        self.lock = threading.Lock()
        self.objs = {k: {} for k in self.PATHS}      # kind -> uid -> last object
        self.gone = {k: {} for k in self.PATHS}      # kind -> uid -> time of DELETED
        self.first = {}                              # (kind, uid, state) -> time first seen
        self.stop = threading.Event()
        self.threads = []

    def _see(self, kind, etype, obj, now):
        uid = (obj.get("metadata") or {}).get("uid")
        if not uid:
            return
        with self.lock:
            if etype == "DELETED":
                self.gone[kind].setdefault(uid, now)
            self.objs[kind][uid] = obj
            for st in states(kind, obj):
                self.first.setdefault((kind, uid, st), now)

    def start(self):
        for kind, path in self.PATHS.items():
            def on_list(items, rv, kind=kind):
                now = time.time()
                for o in items:
                    self._see(kind, "ADDED", o, now)

            def on_event(t, o, kind=kind):
                self._see(kind, t, o, time.time())

            th = threading.Thread(target=kapi.list_watch, daemon=True,
                                  args=(path.format(ns=self.ns), on_list, on_event, self.stop),
                                  kwargs={"watch_seconds": 120})
            th.start()
            self.threads.append(th)
        return self

    def close(self):
        self.stop.set()

    def snapshot(self):
        with self.lock:
            return ({k: dict(v) for k, v in self.objs.items()}, {k: dict(v) for k, v in self.gone.items()},
                    dict(self.first))


def ready(pod):
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


def restarts(pod):
    return max([c.get("restartCount", 0) for c in (pod.get("status") or {}).get("containerStatuses") or []] or [0])


def states(kind, o):
    """The states of an object whose first sight is a step of the trace."""
    md, st = o.get("metadata") or {}, o.get("status") or {}
    out = ["seen"]
    if md.get("deletionTimestamp"):
        out.append("deleting")
    if kind == "pod":
        phase = st.get("phase")
        if (o.get("spec") or {}).get("nodeName"):
            out.append("scheduled")
        if phase == "Running":
            out.append("running")
        if phase in ("Succeeded", "Failed"):
            out.append("terminal")
        for c in st.get("containerStatuses") or []:
            term = (c.get("state") or {}).get("terminated") or (c.get("lastState") or {}).get("terminated")
            if term and term.get("exitCode") not in (None, 0):
                out.append("exited-nonzero")
            if (c.get("state") or {}).get("terminated"):
                out.append("container-stopped")
        n = restarts(o)
        if ready(o):
            out.append("ready")
            out.append(f"ready-r{n}")
        if n and phase == "Running" and all((c.get("state") or {}).get("running")
                                             for c in st.get("containerStatuses") or []):
            out.append(f"running-r{n}")
        a = (md.get("annotations") or {}).get(ANN)
        if a is not None:
            out.append(f"attempt-{a}")
    elif kind == "job":
        for c in st.get("conditions") or []:
            if c.get("status") == "True" and c.get("type") in ("Failed", "FailureTarget", "Complete"):
                out.append(c["type"].lower())
    elif kind == "jobset":
        out.append(f"restarts-{st.get('restarts', 0)}")
        for f in ("currentInPlaceRestartAttempt", "previousInPlaceRestartAttempt"):
            if f in st:
                out.append(f"{f}-{st[f]}")
    return out


def attempt_label(o):
    return ((o.get("metadata") or {}).get("labels") or {}).get(JS + "restart-attempt")


def pod_key(o):
    lb = (o.get("metadata") or {}).get("labels") or {}
    return f"{lb.get(JS + 'replicatedjob-name')}-{lb.get(JS + 'job-index')}-" \
           f"{lb.get('batch.kubernetes.io/job-completion-index')}"


# ------------------------------------------------------------------ one run

def marks_of(marks, n):
    """{key: mtime} of the workers' start marks of attempt n."""
    out = {}
    for f in glob.glob(str(marks / f"w.*.{n}")):
        out[Path(f).name[2:-len(f".{n}")]] = os.stat(f).st_mtime
    return out


def one_run(api, ctl, variant, rep, out, cluster_dir):
    total_pods = RJOBS * JOBS * PODS
    switch_s = ctl.switch(variant)
    ns = f"rc-{variant}-{rep}-{uuid.uuid4().hex[:4]}"
    marks = Path(cluster_dir) / "shared" / ns
    marks.mkdir(parents=True, exist_ok=True)
    os.chmod(marks, 0o777)
    code, body = api.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                             "metadata": {"name": ns}})
    if code >= 300:
        raise RuntimeError(f"namespace {ns}: {code} {body}")
    wait_for("the default ServiceAccount", lambda: api.request(
        "GET", f"/api/v1/namespaces/{ns}/serviceaccounts/default")[0] == 200, timeout=60)
    if variant == "inplace":
        agent_rbac(api, ns)
    w = Watch(ns).start()
    ok = False
    try:
        t_create = time.time()
        code, body = api.request("POST", f"/apis/jobset.x-k8s.io/v1alpha2/namespaces/{ns}/jobsets",
                                 jobset("rc", variant, marks))
        if code >= 300:
            raise RuntimeError(f"JobSet: {code} {body}")

        def attempt0_up():
            objs, _, _ = w.snapshot()
            pods = [p for p in objs["pod"].values() if ready(p) and not p["metadata"].get("deletionTimestamp")]
            if variant == "inplace":
                js = list(objs["jobset"].values())
                if not js or (js[0].get("status") or {}).get("currentInPlaceRestartAttempt") != 0:
                    return False
            return len(pods) == total_pods and len(marks_of(marks, 0)) == total_pods

        wait_for("attempt 0: every pod Ready, every worker started", attempt0_up, timeout=600, period=0.5)
        t_up = time.time()
        time.sleep(2)  # let the controller and the kubelets' status updates go quiet before the failure
        load = open("/proc/loadavg").read().split()[:3]
        objs, _, _ = w.snapshot()
        nodes = sorted({p["spec"].get("nodeName") for p in objs["pod"].values()})
        old_pods = set(objs["pod"])
        old_jobs = set(objs["job"])
        t_go = time.time()
        (marks / "go").touch()
        wait_for("the worker's failure", lambda: (marks / "failed").exists(), timeout=30, period=0.05)
        t0 = os.stat(marks / "failed").st_mtime

        def next_up():
            objs, _, _ = w.snapshot()
            if variant == "inplace":
                pods = [p for p in objs["pod"].values()
                        if p["metadata"]["uid"] in old_pods and ready(p) and restarts(p) >= 1]
                js = list(objs["jobset"].values())
                cur = (js[0].get("status") or {}).get("currentInPlaceRestartAttempt") if js else None
                ok = cur == 1
            else:
                pods = [p for p in objs["pod"].values() if attempt_label(p) == "1" and ready(p)
                        and (p.get("status") or {}).get("phase") == "Running"
                        and not p["metadata"].get("deletionTimestamp")]
                ok = True
            return ok and len(pods) == total_pods and len(marks_of(marks, 1)) == total_pods

        wait_for("the next attempt: every pod Running and Ready, every worker started", next_up, timeout=600,
                 period=0.2)
        time.sleep(0.5)  # the last events in flight
        objs, gone, first = w.snapshot()
        ok = True
    finally:
        w.close()
        if not ok:
            drop_namespace(api, ns)
    res = analyse(variant, objs, gone, first, old_pods, old_jobs, t0, marks_of(marks, 1))
    res["pods"] = pod_trace(objs, gone, first, old_pods, t0)
    res.update({"variant": variant, "rep": rep, "namespace": ns, "load_at_failure": load, "nodes": nodes,
                "controller_switch_s": round(switch_s, 1), "attempt0_up_s": round(t_up - t_create, 2),
                "go_to_exit_s": round(t0 - t_go, 3), "t0": t0})
    (out / f"{variant}-{rep}.json").write_text(json.dumps(res, indent=1))
    log(f"{variant} rep {rep}: recovered in {res['total_s']:.2f} s (load {' '.join(load)}); "
        + ", ".join(f"{k} {v}" for k, v in res["steps"].items()))
    drop_namespace(api, ns)
    return res


def drop_namespace(api, ns):
    """Delete the run's namespace and wait until it is gone, so nothing of
    this run loads the next one."""
    api.request("DELETE", f"/api/v1/namespaces/{ns}")
    wait_for(f"namespace {ns} gone", lambda: api.request("GET", f"/api/v1/namespaces/{ns}")[0] == 404,
             timeout=300, period=1)


def analyse(variant, objs, gone, first, old_pods, old_jobs, t0, marks1):
    """Steps of one restart, seconds after t0 (None when never seen)."""
    def rel(t):
        return None if t is None else round(t - t0, 2)

    def firsts(kind, uids, state):
        ts = [first.get((kind, u, state)) for u in uids]
        return ts

    def first_of(ts):
        ts = [t for t in ts if t is not None]
        return min(ts) if ts else None

    def all_of(ts):
        return None if not ts or any(t is None for t in ts) else max(ts)

    victim = [u for u in old_pods if pod_key(objs["pod"][u]) == "a-0-0"]
    js = list(objs["jobset"])
    steps = {"failure_seen": first_of(firsts("pod", victim, "exited-nonzero"))}
    if variant == "inplace":
        steps["victim_restarted"] = first_of(firsts("pod", victim, "running-r1"))
        steps["previous_attempt_0"] = first_of(firsts("jobset", js, "previousInPlaceRestartAttempt-0"))
        steps["all_pods_attempt_1"] = all_of(firsts("pod", old_pods, "attempt-1"))
        steps["all_containers_restarted"] = all_of(firsts("pod", old_pods, "running-r1"))
        steps["current_attempt_1"] = first_of(firsts("jobset", js, "currentInPlaceRestartAttempt-1"))
        steps["all_ready"] = all_of(firsts("pod", old_pods, "ready-r1"))
        new_pods = [u for u in objs["pod"] if u not in old_pods]
        steps["pods_recreated"] = len(new_pods)
    else:
        vjob = [u for u in old_jobs if objs["job"][u]["metadata"]["name"] == "rc-a-0"]
        steps["job_failed"] = first_of(firsts("job", vjob, "failed") + firsts("job", vjob, "failuretarget"))
        steps["restart_counted"] = first_of(firsts("jobset", js, "restarts-1"))
        steps["old_first_deleting"] = first_of(firsts("pod", old_pods, "deleting"))
        # A pod stopped: terminal (its containers exited), or gone before the
        # watch saw it terminal.
        stopped = [first_of([first.get(("pod", u, "terminal")), gone["pod"].get(u)]) for u in old_pods]
        steps["old_all_stopped"] = all_of(stopped)
        steps["old_pods_gone"] = all_of([gone["pod"].get(u) for u in old_pods])
        steps["old_jobs_gone"] = all_of([gone["job"].get(u) for u in old_jobs])
        new_jobs = [u for u, j in objs["job"].items() if u not in old_jobs and attempt_label(j) == "1"]
        new_pods = [u for u, p in objs["pod"].items() if u not in old_pods and attempt_label(p) == "1"]
        steps["new_first_job"] = first_of(firsts("job", new_jobs, "seen"))
        steps["new_all_jobs"] = all_of(firsts("job", new_jobs, "seen")) if len(new_jobs) == RJOBS * JOBS else None
        steps["new_all_pods_created"] = all_of(firsts("pod", new_pods, "seen"))
        steps["new_all_scheduled"] = all_of(firsts("pod", new_pods, "scheduled"))
        steps["new_all_running"] = all_of(firsts("pod", new_pods, "running"))
        steps["all_ready"] = all_of(firsts("pod", new_pods, "ready"))
    steps["all_workers_started"] = max(marks1.values()) if marks1 else None
    end = [steps["all_ready"], steps["all_workers_started"]]
    total = max(t for t in end if t is not None)
    out = {k: (v if k == "pods_recreated" else rel(v)) for k, v in steps.items()}
    return {"total_s": round(total - t0, 2), "steps": out}


def pod_trace(objs, gone, first, old_pods, t0):
    """Per pod: its key, attempt, node, when the watch first saw each state
    and when it went (s after t0), and its containers' own times as the
    kubelet wrote them (RFC 3339, whole seconds): what a step's time is
    made of."""
    out = []
    for uid, p in objs["pod"].items():
        sts = sorted({st for (k, u, st) in first if k == "pod" and u == uid})
        cs = []
        for c in (p.get("status") or {}).get("containerStatuses") or []:
            cs.append({"restartCount": c.get("restartCount"), "state": c.get("state"),
                       "lastState": c.get("lastState")})
        out.append({"key": pod_key(p), "old": uid in old_pods, "attempt": attempt_label(p),
                    "node": (p.get("spec") or {}).get("nodeName"),
                    "first": {st: round(first[("pod", uid, st)] - t0, 2) for st in sts},
                    "gone": round(gone["pod"][uid] - t0, 2) if uid in gone["pod"] else None,
                    "containers": cs})
    return out


def epoch(rfc3339):
    """Seconds since the epoch of a Kubernetes timestamp (2026-12-02T11:52:06Z)."""
    return calendar.timegm(time.strptime(rfc3339, "%Y-%m-%dT%H:%M:%SZ"))


def pod_spans(runs):
    """Medians over runs of the per-pod spans that say who holds a step:
    (name, {variant: median seconds})."""
    def span(p, a, b):
        f = p["first"]
        if a in f and (b in f or (b == "gone" and p.get("gone") is not None)):
            return (p["gone"] if b == "gone" else f[b]) - f[a]
        return None

    defs = [("old pod: marked for deletion → stopped (kubelet: SIGTERM, the 2 s handler, status)",
             lambda p: p["old"] and span(p, "deleting", "terminal")),
            ("old pod: stopped → object gone (kubelet's final status, the API server)",
             lambda p: p["old"] and span(p, "terminal", "gone")),
            ("new pod: created → scheduled (scheduler)", lambda p: not p["old"] and span(p, "seen", "scheduled")),
            ("new pod: scheduled → Running (kubelet, containerd)",
             lambda p: not p["old"] and span(p, "scheduled", "running")),
            ("in place: container stopped → running again (kubelet)",
             lambda p: p["old"] and span(p, "container-stopped", "running-r1"))]
    def kubelet_restart(p):
        # The kubelet's own times of a container restarted in place (whole seconds).
        for c in p["containers"]:
            fin = ((c.get("lastState") or {}).get("terminated") or {}).get("finishedAt")
            st = ((c.get("state") or {}).get("running") or {}).get("startedAt")
            if fin and st:
                return epoch(st) - epoch(fin)
        return None

    def agent_exit(p, r):
        # previousInPlaceRestartAttempt 0 seen -> the container exited, by
        # the kubelet's clock (whole seconds; not the failed pod's own)
        prev = r["steps"].get("previous_attempt_0")
        if p["key"] == "a-0-0" or prev is None:
            return None
        for c in p["containers"]:
            fin = ((c.get("lastState") or {}).get("terminated") or {}).get("finishedAt")
            if fin:
                return epoch(fin) - r["t0"] - prev
        return None

    defs += [("in place: its container exited → started again (kubelet's own times, whole seconds)",
              lambda p: p["old"] and kubelet_restart(p)),
             ("in place: `previousInPlaceRestartAttempt` 0 → the container exited (agent; kubelet's "
              "time, whole seconds)", None)]
    out = []
    for name, fn in defs:
        row = {}
        for v in VARIANTS:
            if fn is None:
                vals = [x for r in runs if r["variant"] == v for p in r.get("pods", []) if p["old"]
                        for x in [agent_exit(p, r)] if x is not None]
            else:
                vals = [x for r in runs if r["variant"] == v for p in r.get("pods", []) for x in [fn(p)]
                        if x is not None and x is not False]
            if vals:
                row[v] = (statistics.median(vals), max(vals))
        if row:
            out.append((name, row))
    return out


# ------------------------------------------------------------------ report

STEP_NAMES = {
    "failure_seen": "the failed container seen (kubelet → API)",
    "job_failed": "its Job Failed (Job controller)",
    "restart_counted": "JobSet `restarts` 1 (controller)",
    "old_first_deleting": "first old pod marked for deletion",
    "old_all_stopped": "every old pod stopped (terminal or gone)",
    "old_pods_gone": "every old pod object gone",
    "old_jobs_gone": "every old Job object gone",
    "new_first_job": "first Job of the next attempt",
    "new_all_jobs": "all 8 Jobs of the next attempt",
    "new_all_pods_created": "all 32 new pods created",
    "new_all_scheduled": "all 32 scheduled",
    "new_all_running": "all 32 Running",
    "victim_restarted": "failed container running again (kubelet)",
    "previous_attempt_0": "`previousInPlaceRestartAttempt` 0 (controller)",
    "all_pods_attempt_1": "every pod's agent wrote attempt 1",
    "all_containers_restarted": "every container restarted, running",
    "current_attempt_1": "`currentInPlaceRestartAttempt` 1 (barrier lifted)",
    "all_ready": "all 32 pods Ready",
    "all_workers_started": "all 32 workers started",
}


def report(dirs):
    runs = []
    for d in dirs:
        for f in sorted(glob.glob(os.path.join(d, "*-*.json"))):
            r = json.loads(Path(f).read_text())
            if "variant" in r:
                runs.append(r)
    by = {v: [r for r in runs if r["variant"] == v] for v in VARIANTS}
    med = {v: statistics.median([r["total_s"] for r in rs]) for v, rs in by.items() if rs}
    up = med.get("upstream")
    lines = ["| variant | runs | failure → every pod of the next attempt Running, Ready, its worker started "
             "(median, s) | each run (s) | × upstream | load average at the failure |", "|---|---|---|---|---|---|"]
    for v, rs in by.items():
        if not rs:
            continue
        loads = [float(r["load_at_failure"][0]) for r in rs]
        ratio = f"{med[v] / up:.2f}" if up else "–"
        each = ", ".join(f"{r['total_s']:.1f}" for r in rs)
        lines.append(f"| {v} | {len(rs)} | **{med[v]:.1f}** | {each} | "
                     f"{ratio} | {min(loads):.1f} – {max(loads):.1f} |")
    lines += ["", "Median time of each step after the failure (s; a step's time is when the watch first saw it):",
              "", "| step | " + " | ".join(v for v in VARIANTS if by[v]) + " |",
              "|---|" + "---|" * len([v for v in VARIANTS if by[v]])]
    for k, name in STEP_NAMES.items():
        cells, anyv = [], False
        for v in VARIANTS:
            if not by[v]:
                continue
            vals = [r["steps"].get(k) for r in by[v] if r["steps"].get(k) is not None]
            if vals:
                anyv = True
                cells.append(f"{statistics.median(vals):.2f}")
            else:
                cells.append("–")
        if anyv:
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
    spans = pod_spans(runs)
    if spans:
        shown = [v for v in VARIANTS if by[v]]
        lines += ["", "Per pod (median / max over every pod of every run, s):", "",
                  "| span | " + " | ".join(shown) + " |", "|---|" + "---|" * len(shown)]
        for name, row in spans:
            lines.append(f"| {name} | " + " | ".join(
                f"{row[v][0]:.2f} / {row[v][1]:.2f}" if v in row else "–" for v in shown) + " |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--out", required=True)
    r.add_argument("--reps", type=int, default=3)
    r.add_argument("--variants", default=" ".join(VARIANTS))
    p = sub.add_parser("report")
    p.add_argument("dirs", nargs="+")
    a = ap.parse_args()
    if a.cmd == "report":
        print(report(a.dirs))
        return
    variants = a.variants.split()
    for v in variants:
        if v not in VARIANTS:
            raise SystemExit(f"unknown variant {v}; known: {' '.join(VARIANTS)}")
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    api = kapi.Api()
    ctl = Controller()
    cluster_dir = os.environ["JOBSET_CLUSTER_DIR"]
    failures = 0
    for rep in range(a.reps):
        for v in variants:  # interleaved: a b c d a b c d ...
            try:
                one_run(api, ctl, v, rep, out, cluster_dir)
            except (RuntimeError, TimeoutError) as e:
                failures += 1
                log(f"{v} rep {rep} failed: {e}")
                (out / f"failed-{v}-{rep}.txt").write_text(str(e))
    print(report([str(out)]))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
