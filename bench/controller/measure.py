#!/usr/bin/env python3
"""measure.py - one measurement of the controller benchmark on a running
hack/cluster (bench/controller/suite.sh drives it; see BENCHMARKS.md).

    measure.py controller --name NAME --ready-url URL --jobset FILE [--restart] -- CMD...
    measure.py raw --list JOBS.json -- RAWCREATE...
    measure.py jobset --jobs N [--pods P] [--max-restarts R]      print the benchmark JobSet
    measure.py rawlist --jobs N [--pods P] --cli JOBSET --out F   the raw loop's List
    measure.py held --name NAME --ready-url URL -- CMD...   memory over a held cluster

Both measuring modes create N Jobs (--jobs) of P pods (--pods) in a fresh
namespace and report, as one JSON object on stdout (progress on stderr):

  create_to_all_jobs_s   JobSet POST (or the raw loop's start) -> a watch on
                         the namespace has seen every Job ADDED
  create_to_all_ready_s  ... -> every Job reports status.ready >= P (kcm,
                         scheduler and kwok dominate this one)
  settled_s              ... -> every Job ready and the process under test
                         quiet (< 0.05 CPU-s per second) for 5 s
  cpu_s.*                CPU seconds (user+sys) of the process under test and
                         of each control-plane component, over [create, all
                         Jobs] and [create, settled]
  rss_ready_mb           VmRSS of the controller once ready, before the JobSet
                         (the idle RSS)
  peak_rss_mb            VmHWM of the process under test (ru_maxrss for the
                         raw loop); rss_per_job_kb = (peak - idle) / N
  requests.*             API requests the process under test made, counted
                         by the API server itself: every request of the
                         benchmark identity (CN=jobset-bench-controller, not
                         in system:masters) is routed by FlowSchemas
                         a-bench-<verb>-<resource> to the exempt priority
                         level, and apiserver_flowcontrol_dispatched_requests_total
                         is diffed per FlowSchema.  Nothing is throttled
                         by APF, as for system:masters.
  reconciles             controller_runtime_reconcile_total{controller="jobset"}
                         of the controller (--metrics-url; upstream serves it
                         over HTTPS behind TokenReview, so --metrics-token
                         gets a ServiceAccount token for it), scraped just
                         before the create snapshot and just after the
                         settled one, so the scrapes' own TokenReviews are
                         not counted as the controller's requests

held: the cluster already holds a JobSet and all its Jobs and pods
(bench/controller/held.sh made them); CMD starts cold against it, lists and
watches everything it caches, reconciles, and goes quiet (< 0.05 CPU-s per
second for --quiet-s).  Reports ready_s, quiet_s (start -> quiet), cpu_s,
peak_rss_mb (VmHWM), rss_end_mb and the pods and Jobs the API server holds
(apiserver_storage_objects).

--restart (controller mode): once settled, the pod of Job index 0 is marked
Failed (status PATCH as admin: its container exited 1); the JobSet needs a
failurePolicy (measure.py jobset --max-restarts).  Adds "restart": inject ->
that Job Failed, Failed -> every Job of attempt 1 ADDED, ... -> all ready,
with CPU, requests and reconciles over the restart.

The process under test gets {kubeconfig} (the benchmark identity) and the
other {placeholders} in CMD substituted; see suite.sh.  --target-comm NAME
measures (and stops) the descendant process called NAME instead of CMD
itself, for wrappers such as heaptrack.
"""

import argparse
import base64
import http.client
import json
import os
import signal
import ssl
import subprocess
import sys
import threading
import time
import urllib.parse

CLK_TCK = os.sysconf("SC_CLK_TCK")
BENCH_USER = "jobset-bench-controller"
VERBS = ["create", "update", "patch", "delete", "get", "list", "watch"]
RESOURCES = {
    "jobs": (["batch"], ["jobs", "jobs/status"]),
    "jobsets": (["jobset.x-k8s.io"], ["jobsets", "jobsets/status"]),
    "pods": ([""], ["pods", "pods/status"]),
    "events": (["", "events.k8s.io"], ["events"]),
    "zother": (["*"], ["*"]),
}
COMPONENTS = ["kube-apiserver", "etcd", "kube-controller-manager", "kube-scheduler", "kwok"]


def log(msg):
    print(f"[measure {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def now():
    return time.monotonic()


# ------------------------------------------------------------------ cluster


class Cluster:
    def __init__(self, state_dir):
        self.dir = state_dir
        env = {}
        with open(os.path.join(state_dir, "env")) as f:
            for line in f:
                line = line.strip()
                if line.startswith("export ") and "=" in line:
                    k, v = line[7:].split("=", 1)
                    env[k] = v.strip("'\"")
        self.env = env
        u = urllib.parse.urlparse(env["JOBSET_TEST_SERVER"])
        self.host, self.port = u.hostname, u.port
        assert self.host == "127.0.0.1", "loopback only"
        self.admin = self._ctx(env["JOBSET_TEST_CLIENT_CERT"], env["JOBSET_TEST_CLIENT_KEY"])

    def _ctx(self, cert, key):
        ctx = ssl.create_default_context(cafile=self.env["JOBSET_TEST_CA"])
        ctx.load_cert_chain(cert, key)
        return ctx

    def conn(self, ctx=None, timeout=60):
        return http.client.HTTPSConnection(self.host, self.port, context=ctx or self.admin, timeout=timeout)

    def req(self, method, path, body=None, ctx=None, ok=(200, 201), ctype="application/json"):
        c = self.conn(ctx)
        try:
            hdrs = {"Accept": "application/json"}
            data = None
            if body is not None:
                data = body if isinstance(body, (bytes, str)) else json.dumps(body)
                hdrs["Content-Type"] = ctype
            c.request(method, path, body=data, headers=hdrs)
            r = c.getresponse()
            out = r.read()
            if ok and r.status not in ok:
                raise RuntimeError(f"{method} {path}: HTTP {r.status}: {out[:300]!r}")
            return r.status, out
        finally:
            c.close()

    def apply(self, path, obj, ctx=None):
        """Server-side apply (create or update)."""
        name = obj["metadata"]["name"]
        return self.req("PATCH", f"{path}/{name}?fieldManager=jobset-bench&force=true", obj, ctx=ctx,
                        ctype="application/apply-patch+yaml")

    def metrics(self):
        _, out = self.req("GET", "/metrics", ctx=self.admin)
        return out.decode()

    def pid(self, comp):
        try:
            with open(os.path.join(self.dir, "pids", comp + ".pid")) as f:
                return int(f.read().strip())
        except (OSError, ValueError):
            return None


def proc_cpu(pid):
    """user+sys CPU seconds of pid (its own threads; not reaped children)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK
    except (OSError, IndexError, ValueError):
        return None


def proc_status(pid, key):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])  # kB
    except OSError:
        pass
    return None


# ------------------------------------------------------------ bench identity


def setup_identity(cl):
    """A client cert CN=jobset-bench-controller (no groups) bound to
    cluster-admin, its kubeconfig, and FlowSchemas that count its requests
    by verb and resource.  Returns the kubeconfig path."""
    b = os.path.join(cl.dir, "bench")
    os.makedirs(b, exist_ok=True)
    pki = os.path.join(cl.dir, "pki")
    crt, key = os.path.join(b, "ctl.crt"), os.path.join(b, "ctl.key")
    if not os.path.exists(crt):
        ext = os.path.join(b, "ctl.ext")
        with open(ext, "w") as f:
            f.write("basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
                    "extendedKeyUsage=clientAuth\n")
        subprocess.run(["openssl", "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                        "-nodes", "-subj", "/CN=" + BENCH_USER, "-keyout", key, "-out", b + "/ctl.csr"],
                       check=True, capture_output=True)
        subprocess.run(["openssl", "x509", "-req", "-in", b + "/ctl.csr", "-CA", pki + "/ca.crt", "-CAkey",
                        pki + "/ca.key", "-CAcreateserial", "-CAserial", b + "/ca.srl", "-days", "30",
                        "-sha256", "-extfile", ext, "-out", crt], check=True, capture_output=True)
    kc = os.path.join(b, "kubeconfig")

    def b64(p):
        with open(p, "rb") as f:
            return base64.b64encode(f.read()).decode()

    with open(kc, "w") as f:
        f.write(f"""apiVersion: v1
kind: Config
clusters:
- name: bench
  cluster:
    server: https://{cl.host}:{cl.port}
    certificate-authority-data: {b64(cl.env['JOBSET_TEST_CA'])}
users:
- name: {BENCH_USER}
  user:
    client-certificate-data: {b64(crt)}
    client-key-data: {b64(key)}
contexts:
- name: bench
  context: {{cluster: bench, user: {BENCH_USER}, namespace: default}}
current-context: bench
""")
    cl.bench_ctx = cl._ctx(crt, key)
    cl.apply("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": BENCH_USER},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": BENCH_USER}]})
    subj = [{"kind": "User", "user": {"name": BENCH_USER}}]
    names = []
    for verb in VERBS:
        vv = [verb, "deletecollection"] if verb == "delete" else [verb]
        for res, (groups, plurals) in RESOURCES.items():
            name = f"a-bench-{verb}-{res}"
            names.append(name)
            rule = {"subjects": subj, "resourceRules": [{"verbs": vv, "apiGroups": groups, "resources": plurals,
                                                         "clusterScope": True, "namespaces": ["*"]}]}
            fs_apply(cl, name, [rule])
    # Everything else (other verbs, non-resource URLs) of the identity.
    fs_apply(cl, "a-bench-zz-any", [{"subjects": subj,
                                     "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
                                                        "clusterScope": True, "namespaces": ["*"]}],
                                     "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}])
    # Wait until APF uses them: a probe request must show up under a-bench-*.
    deadline = now() + 30
    while True:
        cl.req("GET", "/version", ctx=cl.bench_ctx)
        if "a-bench-zz-any" in flow_counts(cl.metrics()):
            break
        if now() > deadline:
            raise RuntimeError("FlowSchemas a-bench-* not in effect after 30 s")
        time.sleep(0.3)
    return kc


def fs_apply(cl, name, rules):
    cl.apply("/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas", {
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema", "metadata": {"name": name},
        "spec": {"matchingPrecedence": 2, "priorityLevelConfiguration": {"name": "exempt"}, "rules": rules}})


def flow_counts(text):
    """{flow_schema: count} of apiserver_flowcontrol_dispatched_requests_total for a-bench-*."""
    out = {}
    for line in text.splitlines():
        if not line.startswith("apiserver_flowcontrol_dispatched_requests_total{"):
            continue
        labels, val = line.rsplit(" ", 1)
        i = labels.find('flow_schema="')
        if i < 0:
            continue
        fs = labels[i + 13:labels.index('"', i + 13)]
        if fs.startswith("a-bench-"):
            out[fs] = out.get(fs, 0) + float(val)
    return out


def job_posts(text):
    """{code: count} of apiserver_request_total for POST jobs (every user;
    only the process under test creates Jobs here)."""
    return posts_by_code(text, "jobs")


def posts_by_code(text, resource):
    """{code: count} of apiserver_request_total for POST `resource` (every user)."""
    out = {}
    for line in text.splitlines():
        if (line.startswith("apiserver_request_total{") and f'resource="{resource}"' in line
                and 'verb="POST"' in line and 'subresource=""' in line):
            labels, val = line.rsplit(" ", 1)
            i = labels.index('code="') + 6
            code = labels[i:labels.index('"', i)]
            out[code] = out.get(code, 0) + float(val)
    return out


def req_diff(a, b):
    d = {k: int(b.get(k, 0) - a.get(k, 0)) for k in set(a) | set(b)}
    by_verb, by_res = {}, {}
    for k, v in d.items():
        if not v:
            continue
        parts = k[len("a-bench-"):].split("-")
        verb, res = (parts[0], parts[1]) if parts[0] != "zz" else ("other", "any")
        by_verb[verb] = by_verb.get(verb, 0) + v
        key = f"{verb} {res}"
        by_res[key] = by_res.get(key, 0) + v
    return {"total": sum(d.values()), "by_verb": dict(sorted(by_verb.items())),
            "by_verb_resource": dict(sorted(by_res.items()))}


# ------------------------------------------------------------------ watcher

ATTEMPT_LABEL = "jobset.sigs.k8s.io/restart-attempt"


class JobWatch(threading.Thread):
    """Watches Jobs in a namespace (admin identity; not counted).  Counts
    only the Jobs of restart attempt self.attempt; a Job is ready when its
    status.ready reaches self.pods."""

    def __init__(self, cl, ns, want, pods=1):
        super().__init__(daemon=True)
        self.cl, self.ns, self.want, self.pods = cl, ns, want, pods
        self.attempt = "0"
        self.seen, self.ready = set(), set()
        self.t_all = self.t_ready = None
        self.t_first = None
        self.t_failed = None  # first Job of an earlier attempt with Failed=True
        self.err = None
        self.restarts = 0
        self.cv = threading.Condition()
        _, out = cl.req("GET", f"/apis/batch/v1/namespaces/{ns}/jobs?limit=1")
        self.rv = json.loads(out)["metadata"]["resourceVersion"]

    def next_attempt(self, attempt):
        """Start counting the Jobs of restart attempt `attempt` from zero."""
        with self.cv:
            self.attempt = attempt
            self.seen, self.ready = set(), set()
            self.t_all = self.t_ready = self.t_first = self.t_failed = None

    def note(self, t, obj):
        meta = obj["metadata"]
        name = meta["name"]
        attempt = (meta.get("labels") or {}).get(ATTEMPT_LABEL, "0")
        status = obj.get("status") or {}
        with self.cv:
            if attempt != self.attempt:
                if self.t_failed is None and any(c.get("type") == "Failed" and c.get("status") == "True"
                                                 for c in status.get("conditions") or []):
                    self.t_failed = t
                    self.cv.notify_all()
                return
            if self.t_first is None:
                self.t_first = t
            self.seen.add(name)
            if status.get("ready", 0) >= self.pods:
                self.ready.add(name)
            if self.t_all is None and len(self.seen) >= self.want:
                self.t_all = t
            if self.t_ready is None and len(self.ready) >= self.want:
                self.t_ready = t
            self.cv.notify_all()

    def relist(self):
        _, out = self.cl.req("GET", f"/apis/batch/v1/namespaces/{self.ns}/jobs")
        t = now()
        lst = json.loads(out)
        for obj in lst["items"]:
            self.note(t, obj)
        self.rv = lst["metadata"]["resourceVersion"]

    def run(self):
        """Watch, resuming from the last resourceVersion when the server ends
        the stream (it drops watchers that fall behind), relisting on 410."""
        try:
            while True:
                c = self.cl.conn(timeout=3600)
                c.request("GET", f"/apis/batch/v1/namespaces/{self.ns}/jobs?watch=1&resourceVersion={self.rv}"
                                 f"&allowWatchBookmarks=true&timeoutSeconds=3000")
                r = c.getresponse()
                if r.status == 410:
                    c.close()
                    self.relist()
                    continue
                if r.status != 200:
                    raise RuntimeError(f"watch: HTTP {r.status}")
                while True:
                    line = r.readline()
                    if not line:
                        break
                    t = now()
                    ev = json.loads(line)
                    typ, obj = ev["type"], ev["object"]
                    if typ == "ERROR":
                        if obj.get("code") == 410:
                            self.relist()
                            break
                        raise RuntimeError(f"watch error: {obj}")
                    self.rv = obj["metadata"].get("resourceVersion", self.rv)
                    if typ in ("ADDED", "MODIFIED"):
                        self.note(t, obj)
                c.close()
                self.restarts += 1
        except Exception as e:  # noqa: BLE001 - reported to the main thread
            with self.cv:
                self.err = e
                self.cv.notify_all()

    def wait(self, what, timeout):
        deadline = now() + timeout
        with self.cv:
            while getattr(self, what) is None:
                if self.err:
                    raise RuntimeError(f"job watch: {self.err}")
                left = deadline - now()
                if left <= 0:
                    return None
                self.cv.wait(min(left, 1.0))
            return getattr(self, what)


class StageTrace(threading.Thread):
    """Watches the Jobs and Pods of restart attempt 0 while a restart runs
    (admin identity, not counted) and notes when each object first reached
    each stage of its deletion: Job deletionTimestamp set, Job gone; pod
    deletionTimestamp set, pod terminal, pod finalizers empty, pod gone.
    summary() gives, per stage, when 10 %, 50 % and 100 % of the objects had
    reached it, relative to t0: which step of the chain holds a restart up."""

    STAGES = ("job_deleting", "job_gone", "pod_deleting", "pod_terminal", "pod_unfinalized", "pod_gone")

    def __init__(self, cl, ns):
        super().__init__(daemon=True)
        self.cl, self.ns = cl, ns
        self.t = {k: {} for k in self.STAGES}
        self.lock = threading.Lock()
        self.stop = False

    def _mark(self, stage, name, t):
        with self.lock:
            self.t[stage].setdefault(name, t)

    def _note(self, kind, typ, obj, t):
        meta = obj["metadata"]
        if (meta.get("labels") or {}).get(ATTEMPT_LABEL, "0") != "0":
            return
        name = meta["name"]
        if typ == "DELETED":
            self._mark(kind + "_gone", name, t)
        if meta.get("deletionTimestamp"):
            self._mark(kind + "_deleting", name, t)
            if kind == "pod":
                if (obj.get("status") or {}).get("phase") in ("Failed", "Succeeded"):
                    self._mark("pod_terminal", name, t)
                if not meta.get("finalizers"):
                    self._mark("pod_unfinalized", name, t)

    def _watch(self, kind, path):
        _, out = self.cl.req("GET", f"{path}?limit=1")
        rv = json.loads(out)["metadata"]["resourceVersion"]
        while not self.stop:
            c = self.cl.conn(timeout=3600)
            c.request("GET", f"{path}?watch=1&resourceVersion={rv}&timeoutSeconds=3000")
            r = c.getresponse()
            if r.status != 200:
                return
            while not self.stop:
                line = r.readline()
                if not line:
                    break
                ev = json.loads(line)
                if ev["type"] == "ERROR":
                    return
                rv = ev["object"]["metadata"].get("resourceVersion", rv)
                self._note(kind, ev["type"], ev["object"], now())
            c.close()

    def run(self):
        threading.Thread(target=self._watch, args=("job", f"/apis/batch/v1/namespaces/{self.ns}/jobs"),
                         daemon=True).start()
        self._watch("pod", f"/api/v1/namespaces/{self.ns}/pods")

    def summary(self, t0, n):
        out = {}
        with self.lock:
            for stage, ts in self.t.items():
                v = sorted(x - t0 for x in ts.values())
                if not v:
                    continue
                pick = lambda q: round(v[min(len(v) - 1, max(0, int(q * n) - 1))], 2)  # noqa: E731
                out[stage] = {"count": len(v), "p10": pick(0.1), "p50": pick(0.5), "last": round(v[-1], 2)}
        return out


# ------------------------------------------------------------------ controller metrics

METRICS_SA = "jobset-bench-metrics"


def metrics_token(cl):
    """A ServiceAccount token allowed to GET /metrics, for a metrics server
    behind controller-runtime's WithAuthenticationAndAuthorization filter
    (upstream's), which checks bearer tokens by TokenReview and
    SubjectAccessReview."""
    cl.apply("/api/v1/namespaces/default/serviceaccounts",
             {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": METRICS_SA}})
    cl.apply("/apis/rbac.authorization.k8s.io/v1/clusterroles", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": METRICS_SA},
        "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]})
    cl.apply("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": METRICS_SA},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": METRICS_SA},
        "subjects": [{"kind": "ServiceAccount", "name": METRICS_SA, "namespace": "default"}]})
    _, out = cl.req("POST", f"/api/v1/namespaces/default/serviceaccounts/{METRICS_SA}/token",
                    {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                     "spec": {"expirationSeconds": 86400}})
    return json.loads(out)["status"]["token"]


def scrape(url, token=None, save=None):
    """GET url (loopback, http or https unverified) -> the text, or None."""
    u = urllib.parse.urlparse(url)
    assert u.hostname == "127.0.0.1", "loopback only"
    try:
        c = (http.client.HTTPSConnection(u.hostname, u.port, timeout=10, context=ssl._create_unverified_context())
             if u.scheme == "https" else http.client.HTTPConnection(u.hostname, u.port, timeout=10))
        c.request("GET", u.path or "/", headers={"Authorization": f"Bearer {token}"} if token else {})
        r = c.getresponse()
        text = r.read().decode()
        if r.status != 200:
            log(f"scrape {url}: HTTP {r.status}: {text[:200]}")
            return None
    except OSError as e:
        log(f"scrape {url}: {e}")
        return None
    if save:
        with open(save, "w") as f:
            f.write(text)
    return text


def reconcile_counts(text):
    """{controller: count} of controller_runtime_reconcile_total, summed over results."""
    out = {}
    for line in (text or "").splitlines():
        if not line.startswith("controller_runtime_reconcile_total{"):
            continue
        labels, val = line.rsplit(" ", 1)
        i = labels.find('controller="')
        if i >= 0:
            ctl = labels[i + 12:labels.index('"', i + 12)]
            out[ctl] = out.get(ctl, 0) + int(float(val))
    return out


# ------------------------------------------------------------------ the JobSet

HERE = os.path.dirname(os.path.abspath(__file__))
# `jobset render` prints at most 10,000 objects (src/base/limits.h), the
# Service included; rawlist renders bigger JobSets in chunks of this many Jobs.
RENDER_CHUNK = 9999


def make_jobset(jobs, pods=1, max_restarts=0, rjob="w"):
    """The benchmark JobSet (jobset.yaml.in) as YAML text."""
    with open(os.path.join(HERE, "jobset.yaml.in")) as f:
        text = "".join(line for line in f if not line.startswith("#"))
    fp = (f"  failurePolicy:\n    maxRestarts: {max_restarts}\n    restartStrategy: Recreate\n"
          if max_restarts else "")
    text = text.replace("@FAILURE_POLICY@\n", fp)
    return text.replace("@REPLICAS@", str(jobs)).replace("@PODS@", str(pods)).replace("@RJOB@", rjob)


def raw_list(jobs, pods, cli):
    """The Service and `jobs` Jobs the controller would create for the
    benchmark JobSet, as a List: `jobset render -o json` of the JobSet, or,
    above render's limit, of several JobSets of at most RENDER_CHUNK Jobs
    whose ReplicatedJobs are named w, w1, w2, ... (one Service kept).  The
    Jobs are the same size whichever chunk they come from."""
    items = []
    done, k = 0, 0
    while done < jobs:
        n = min(RENDER_CHUNK, jobs - done)
        out = subprocess.run([cli, "render", "-o", "json", "-"], input=make_jobset(n, pods, rjob=f"w{k or ''}"),
                             capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError(f"jobset render: {out.stderr.strip()}")
        got = json.loads(out.stdout)["items"]
        items += got if k == 0 else [o for o in got if o["kind"] == "Job"]
        done, k = done + n, k + 1
    assert sum(o["kind"] == "Job" for o in items) == jobs
    return {"apiVersion": "v1", "kind": "List", "items": items}


# ------------------------------------------------------------------ runs


def snapshot(cl, pid):
    cpu = {c: proc_cpu(cl.pid(c)) for c in COMPONENTS if cl.pid(c)}
    if pid:
        cpu["under_test"] = proc_cpu(pid)
    text = cl.metrics()
    return {"t": now(), "cpu": cpu, "flows": flow_counts(text), "posts": job_posts(text)}


def cpu_diff(a, b):
    return {k: round(b["cpu"][k] - a["cpu"][k], 2) for k in a["cpu"]
            if a["cpu"].get(k) is not None and b["cpu"].get(k) is not None}


def new_namespace(cl, name):
    cl.req("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})


def wait_url(url, timeout, proc):
    deadline = now() + timeout
    u = urllib.parse.urlparse(url)
    assert u.hostname == "127.0.0.1", "loopback only"
    while now() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"process under test exited with {proc.returncode} before ready")
        try:
            c = (http.client.HTTPSConnection(u.hostname, u.port, timeout=2,
                                             context=ssl._create_unverified_context())
                 if u.scheme == "https" else http.client.HTTPConnection(u.hostname, u.port, timeout=2))
            c.request("GET", u.path or "/")
            if c.getresponse().status == 200:
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{url} not ready after {timeout} s")


def find_comm(root, comm, timeout=20):
    """The pid of the process called comm in root's session (root itself
    included), waiting for it to appear: the program a wrapper runs."""
    comm = comm[:15]  # the kernel truncates comm to 15 characters
    deadline = now() + timeout
    while now() < deadline:
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                with open(f"/proc/{d}/comm") as f:
                    c = f.read().strip()
                with open(f"/proc/{d}/stat") as f:
                    sid = int(f.read().rsplit(")", 1)[1].split()[3])
            except (OSError, ValueError, IndexError):
                continue
            if c == comm and sid == root:
                return int(d)
        time.sleep(0.1)
    raise RuntimeError(f"no process {comm!r} under pid {root} after {timeout} s")


def wait_quiet(pid, quiet_s, timeout):
    """Wait until pid used < 0.05 CPU-s per second for quiet_s seconds.
    Returns (quiet since, True) or, at the timeout or when pid is gone,
    (quiet since, False)."""
    last, quiet_since = proc_cpu(pid), now()
    deadline = now() + timeout
    while now() < deadline:
        time.sleep(1)
        c = proc_cpu(pid)
        if c is None:
            return quiet_since, False
        if c - last > 0.05:
            quiet_since = now()
        last = c
        if now() - quiet_since >= quiet_s:
            return quiet_since, True
    return quiet_since, False


def settle(watch, pid, args):
    """Wait for every Job ready, then for the process under test to be quiet."""
    t_ready = watch.wait("t_ready", args.ready_timeout)
    if t_ready is None:
        log(f"not all Jobs ready after {args.ready_timeout:.0f} s ({len(watch.ready)}/{watch.want}); settling anyway")
    if pid:
        wait_quiet(pid, args.quiet_s, args.quiet_timeout)
    return t_ready


def rounded(t, t0, nd=3):
    return round(t - t0, nd) if t is not None else None


def inject_failure(cl, ns, job_index="0"):
    """Mark the first Running pod of Job index job_index Failed, as if its
    container had exited 1 (status PATCH, admin identity: not counted).
    Returns the pod's name."""
    sel = urllib.parse.quote(f"jobset.sigs.k8s.io/job-index={job_index}")
    _, out = cl.req("GET", f"/api/v1/namespaces/{ns}/pods?labelSelector={sel}")
    pods = [p for p in json.loads(out)["items"] if (p.get("status") or {}).get("phase") == "Running"]
    if not pods:
        raise RuntimeError(f"no Running pod of Job index {job_index} to fail")
    pod = pods[0]
    now_s = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    statuses = [{"name": c["name"], "image": c["image"], "imageID": "", "ready": False, "restartCount": 0,
                 "started": False,
                 "state": {"terminated": {"exitCode": 1, "reason": "Error", "startedAt": now_s, "finishedAt": now_s}}}
                for c in pod["spec"]["containers"]]
    conds = [{"type": t, "status": "False", "reason": "PodFailed", "lastTransitionTime": now_s}
             for t in ("Ready", "ContainersReady")]
    name = pod["metadata"]["name"]
    cl.req("PATCH", f"/api/v1/namespaces/{ns}/pods/{name}/status",
           {"status": {"phase": "Failed", "containerStatuses": statuses, "conditions": conds}},
           ctype="application/strategic-merge-patch+json")
    return name


def measure_restart(cl, ns, watch, pid, args, metrics):
    """Fail one pod of the settled JobSet and time the restart (see the module doc)."""
    rec0 = metrics()
    watch.next_attempt("1")
    trace = StageTrace(cl, ns)
    trace.start()
    s0 = snapshot(cl, pid)
    t0 = now()
    pod = inject_failure(cl, ns)
    log(f"restart: pod {pod} marked Failed")
    t_failed = watch.wait("t_failed", args.timeout)
    t_all = watch.wait("t_all", args.timeout)
    if t_all is None:
        raise RuntimeError(f"restart: only {len(watch.seen)}/{args.jobs} Jobs of attempt 1 after {args.timeout:.0f} s")
    s1 = snapshot(cl, pid)
    trace.stop = True
    stages = trace.summary(t0, args.jobs)
    log(f"restart: {args.jobs} Jobs of attempt 1 exist after {t_all - t0:.2f} s; stages {stages}")
    t_ready = settle(watch, pid, args)
    s2 = snapshot(cl, pid)
    rec1 = metrics()
    return {
        "failed_pod": pod,
        "inject_to_job_failed_s": rounded(t_failed, t0),
        "job_failed_to_all_new_jobs_s": rounded(t_all, t_failed) if t_failed else None,
        "inject_to_all_new_jobs_s": rounded(t_all, t0),
        "inject_to_all_new_ready_s": rounded(t_ready, t0),
        "settled_s": round(s2["t"] - t0, 1),
        "cpu_s": {"to_all_new_jobs": cpu_diff(s0, s1), "to_settled": cpu_diff(s0, s2)},
        "requests": {"to_all_new_jobs": req_diff(s0["flows"], s1["flows"]),
                     "to_settled": req_diff(s0["flows"], s2["flows"])},
        "reconciles": diff_counts(rec0, rec1),
        "stages": stages,
    }


def diff_counts(a, b):
    if a is None or b is None:
        return None
    return {k: b.get(k, 0) - a.get(k, 0) for k in b}


def run_one(args, kind):
    cl = Cluster(args.cluster_dir)
    kc = setup_identity(cl)
    ns = args.namespace
    new_namespace(cl, ns)
    log(f"namespace {ns}; identity {BENCH_USER} ({kc})")
    subst = {"kubeconfig": kc, "namespace": ns, "cluster_dir": cl.dir,
             "webhook_cert_dir": cl.env["JOBSET_TEST_WEBHOOK_CERT_DIR"],
             "qps": str(args.qps), "burst": str(args.burst)}
    cmd = [a.format(**subst) for a in args.cmd]
    result = {"kind": kind, "case": args.case, "name": args.name, "jobs": args.jobs, "pods_per_job": args.pods,
              "qps": args.qps, "burst": args.burst, "cmd": cmd, "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
              "nodes": int(cl.env.get("JOBSET_TEST_NODES", "0") or 0)}
    proc = None
    pid = None
    logf = open(args.log, "w") if args.log else subprocess.DEVNULL
    token = metrics_token(cl) if kind == "controller" and args.metrics_token else None

    def metrics(save=None):
        if kind != "controller" or not args.metrics_url:
            return None
        text = scrape(args.metrics_url.format(**subst), token, save)
        return reconcile_counts(text) if text is not None else None

    try:
        if kind == "controller":
            proc = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT, start_new_session=True)
            pid = find_comm(proc.pid, args.target_comm) if args.target_comm else proc.pid
            t = now()
            wait_url(args.ready_url.format(**subst), args.start_timeout, proc)
            result["ready_s"] = round(now() - t, 2)
            time.sleep(args.warmup_s)  # informer caches sync, leader election settles
        watch = JobWatch(cl, ns, args.jobs, args.pods)
        watch.start()
        rec0 = metrics()
        s0 = snapshot(cl, pid)
        load0 = os.getloadavg()[0]
        if pid:
            result["rss_ready_mb"] = round(proc_status(pid, "VmRSS") / 1024, 1)
        if kind == "controller":
            with open(args.jobset) as f:
                js = f.read()
            t0 = now()
            cl.req("POST", f"/apis/jobset.x-k8s.io/v1alpha2/namespaces/{ns}/jobsets", js,
                   ctype="application/yaml")
        else:
            t0 = now()
            proc = subprocess.Popen(cmd + ["--namespace", ns, args.list], stdout=subprocess.PIPE,
                                    stderr=logf, start_new_session=True)
            pid = proc.pid
        t_all = watch.wait("t_all", args.timeout)
        if t_all is None:
            raise RuntimeError(f"only {len(watch.seen)}/{args.jobs} Jobs after {args.timeout:.0f} s")
        s1 = snapshot(cl, pid if kind == "controller" else None)
        log(f"{args.jobs} Jobs exist after {t_all - t0:.2f} s")
        if kind == "raw":
            out = proc.stdout.read()
            # wait4 (not Popen.wait) for this child's own rusage
            _, status, raw_ru = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
            proc.stdout.close()
            result["raw"] = json.loads(out.decode().strip().splitlines()[-1])
            result["raw_exit"] = proc.returncode
            pid = None
        if args.until == "jobs":
            # Throughput only: stop once every Job exists (no ready/settled figures).
            result["until"] = "jobs"
            result["create_to_first_job_s"] = rounded(watch.t_first, t0)
            result["create_to_all_jobs_s"] = rounded(t_all, t0)
            result["loadavg_start"] = load0
            result["cpu_s"] = {"to_all_jobs": cpu_diff(s0, s1)}
            result["requests"] = {"to_all_jobs": req_diff(s0["flows"], s1["flows"])}
            if kind == "controller":
                result["peak_rss_create_mb"] = round(proc_status(pid, "VmHWM") / 1024, 1)
                result["cpu_s"]["under_test_total"] = proc_cpu(pid)
            else:
                result["cpu_s"]["under_test_total"] = round(raw_ru.ru_utime + raw_ru.ru_stime, 2)
            return result
        t_ready = settle(watch, pid, args)
        s2 = snapshot(cl, pid)
        rec1 = metrics(args.out + ".metrics.txt" if args.out else None)
        result["create_to_first_job_s"] = rounded(watch.t_first, t0)
        result["create_to_all_jobs_s"] = rounded(t_all, t0)
        result["create_to_all_ready_s"] = rounded(t_ready, t0)
        result["settled_s"] = round(s2["t"] - t0, 1)
        result["watch_restarts"] = watch.restarts
        result["loadavg_start"] = load0
        result["cpu_s"] = {"to_all_jobs": cpu_diff(s0, s1), "to_settled": cpu_diff(s0, s2)}
        result["requests"] = {"to_all_jobs": req_diff(s0["flows"], s1["flows"]),
                              "to_settled": req_diff(s0["flows"], s2["flows"])}
        result["job_posts_by_code"] = {k: int(s2["posts"].get(k, 0) - s0["posts"].get(k, 0))
                                       for k in s2["posts"] if s2["posts"].get(k, 0) != s0["posts"].get(k, 0)}
        result["reconciles"] = diff_counts(rec0, rec1)
        if kind == "controller":
            result["peak_rss_create_mb"] = round(proc_status(pid, "VmHWM") / 1024, 1)
            if args.restart:
                result["restart"] = measure_restart(cl, ns, watch, pid, args, metrics)
            result["cpu_s"]["under_test_total"] = proc_cpu(pid)
            result["peak_rss_mb"] = round(proc_status(pid, "VmHWM") / 1024, 1)
            result["rss_end_mb"] = round(proc_status(pid, "VmRSS") / 1024, 1)
            result["rss_per_job_kb"] = round((result["peak_rss_create_mb"] - result["rss_ready_mb"]) * 1024
                                             / args.jobs, 1)
            result["threads"] = proc_status(pid, "Threads")
        else:
            ru = raw_ru
            result["cpu_s"]["under_test_total"] = round(ru.ru_utime + ru.ru_stime, 2)
            result["cpu_s"]["to_all_jobs"]["under_test"] = result["cpu_s"]["under_test_total"]
            result["cpu_s"]["to_settled"]["under_test"] = result["cpu_s"]["under_test_total"]
            result["peak_rss_mb"] = round(ru.ru_maxrss / 1024, 1)
        return result
    finally:
        stop(proc, pid, args.stop_timeout)
        if logf is not subprocess.DEVNULL:
            logf.close()


def storage_objects(text, resource):
    """apiserver_storage_objects{resource=...} from the API server's metrics."""
    for line in text.splitlines():
        if line.startswith("apiserver_storage_objects{") and f'resource="{resource}"' in line:
            return int(float(line.rsplit(" ", 1)[1]))
    return None


def run_held(args):
    cl = Cluster(args.cluster_dir)
    kc = setup_identity(cl)
    subst = {"kubeconfig": kc, "cluster_dir": cl.dir, "qps": str(args.qps), "burst": str(args.burst)}
    cmd = [a.format(**subst) for a in args.cmd]
    text = cl.metrics()
    result = {"kind": "held", "name": args.name, "cmd": cmd, "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
              "pods_in_cluster": storage_objects(text, "pods"),
              "jobs_in_cluster": storage_objects(text, "jobs.batch"),
              "loadavg_start": os.getloadavg()[0]}
    logf = open(args.log, "w") if args.log else subprocess.DEVNULL
    proc = None
    try:
        t0 = now()
        proc = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT, start_new_session=True)
        pid = proc.pid
        wait_url(args.ready_url.format(**subst), args.start_timeout, proc)
        result["ready_s"] = round(now() - t0, 2)
        quiet_since, quiet = wait_quiet(pid, args.quiet_s, args.quiet_timeout)
        if proc.poll() is not None:
            raise RuntimeError(f"process under test exited with {proc.returncode}")
        if not quiet:
            log(f"not quiet after {args.quiet_timeout:.0f} s; measuring anyway")
        result["quiet_s"] = round(quiet_since - t0, 1)
        result["cpu_s"] = proc_cpu(pid)
        result["peak_rss_mb"] = round(proc_status(pid, "VmHWM") / 1024, 1)
        result["rss_end_mb"] = round(proc_status(pid, "VmRSS") / 1024, 1)
        result["threads"] = proc_status(pid, "Threads")
        log(f"{args.name}: peak RSS {result['peak_rss_mb']} MB, {result['cpu_s']} CPU-s, "
            f"quiet after {result['quiet_s']} s")
        return result
    finally:
        stop(proc, None, args.stop_timeout)
        if logf is not subprocess.DEVNULL:
            logf.close()


def stop(proc, pid, timeout):
    """SIGTERM the process under test (pid, maybe a wrapper's child), then
    wait for proc, the process we started, to exit."""
    if not proc or proc.poll() is not None:
        return
    try:
        os.kill(pid or proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        log(f"pid {proc.pid} still running {timeout:.0f} s after SIGTERM; killing its session")
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def scale_timeouts(args):
    """Defaults that grow with the number of Jobs and pods: the control plane
    on 2 cores creates and starts roughly 10 - 40 pods a second, depending on
    what else runs."""
    pods = args.jobs * args.pods
    if args.timeout is None:
        args.timeout = max(600.0, 0.1 * pods)
    if args.ready_timeout is None:
        args.ready_timeout = max(300.0, 0.2 * pods)
    if args.quiet_timeout is None:
        args.quiet_timeout = max(60.0, 0.02 * pods)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="mode", required=True)
    for mode in ("controller", "raw"):
        p = sub.add_parser(mode)
        p.add_argument("--cluster-dir", default=os.environ.get("JOBSET_CLUSTER_DIR", "/tmp/js-bench-cluster"))
        p.add_argument("--name", required=True)
        p.add_argument("--case", default="create", help="label stored in the result (create, memory, restart)")
        p.add_argument("--namespace", default="bench")
        p.add_argument("--jobs", type=int, default=1000)
        p.add_argument("--pods", type=int, default=1, help="pods per Job")
        p.add_argument("--qps", type=float, default=500)
        p.add_argument("--burst", type=int, default=500)
        p.add_argument("--timeout", type=float, help="create -> all Jobs (default scales with Jobs x pods)")
        p.add_argument("--ready-timeout", type=float)
        p.add_argument("--quiet-s", type=float, default=5)
        p.add_argument("--quiet-timeout", type=float)
        p.add_argument("--stop-timeout", type=float, default=30, help="SIGTERM -> exit of what we started")
        p.add_argument("--log", help="stdout/stderr of the process under test")
        p.add_argument("--out", help="write the JSON result here too")
        p.add_argument("--until", choices=("settled", "jobs"), default="settled",
                       help="jobs: stop once every Job exists (create throughput only)")
        if mode == "controller":
            p.add_argument("--ready-url", required=True)
            p.add_argument("--start-timeout", type=float, default=60)
            p.add_argument("--jobset", required=True)
            p.add_argument("--warmup-s", type=float, default=3)
            p.add_argument("--metrics-url", help="the controller's metrics, scraped before and after")
            p.add_argument("--metrics-token", action="store_true",
                           help="send a ServiceAccount bearer token allowed to GET /metrics")
            p.add_argument("--restart", action="store_true", help="then fail one pod and time the restart")
            p.add_argument("--target-comm", help="measure the descendant process with this name")
        else:
            p.add_argument("--list", required=True, help="List JSON (measure.py rawlist)")
        p.add_argument("cmd", nargs="+")
    p = sub.add_parser("held")
    p.add_argument("--cluster-dir", default=os.environ.get("JOBSET_CLUSTER_DIR", "/tmp/js-bench-cluster"))
    p.add_argument("--name", required=True)
    p.add_argument("--ready-url", required=True)
    p.add_argument("--start-timeout", type=float, default=300)
    p.add_argument("--quiet-s", type=float, default=20)
    p.add_argument("--quiet-timeout", type=float, default=900)
    p.add_argument("--stop-timeout", type=float, default=30)
    p.add_argument("--qps", type=float, default=500)
    p.add_argument("--burst", type=int, default=500)
    p.add_argument("--log")
    p.add_argument("--out")
    p.add_argument("cmd", nargs="+")
    p = sub.add_parser("jobset")
    p.add_argument("--jobs", type=int, required=True)
    p.add_argument("--pods", type=int, default=1)
    p.add_argument("--max-restarts", type=int, default=0)
    p.add_argument("--scheduler-name", help="pods wait for this scheduler (none runs: they stay Pending)")
    p = sub.add_parser("rawlist")
    p.add_argument("--jobs", type=int, required=True)
    p.add_argument("--pods", type=int, default=1)
    p.add_argument("--cli", required=True, help="the jobset CLI (render)")
    p.add_argument("--out", required=True)
    args = ap.parse_args()
    if args.mode == "jobset":
        text = make_jobset(args.jobs, args.pods, args.max_restarts)
        if args.scheduler_name:
            text = text.replace("            restartPolicy: OnFailure\n",
                                f"            restartPolicy: OnFailure\n            schedulerName: {args.scheduler_name}\n")
        sys.stdout.write(text)
        return
    if args.mode == "held":
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
        res = run_held(args)
        s = json.dumps(res, indent=1)
        print(s)
        if args.out:
            with open(args.out, "w") as f:
                f.write(s + "\n")
        return
    if args.mode == "rawlist":
        with open(args.out, "w") as f:
            json.dump(raw_list(args.jobs, args.pods, args.cli), f)
        return
    scale_timeouts(args)
    # SIGTERM (suite.sh stopped) must still run run_one's cleanup, which
    # stops the controller under test: it runs in its own session and would
    # otherwise be left running against a cluster that is gone.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    res = run_one(args, args.mode)
    s = json.dumps(res, indent=1)
    print(s)
    if args.out:
        with open(args.out, "w") as f:
            f.write(s + "\n")


if __name__ == "__main__":
    main()
