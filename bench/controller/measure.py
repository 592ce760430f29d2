#!/usr/bin/env python3
"""measure.py - one measurement of the controller benchmark on a running
hack/cluster (bench/controller/run.sh drives it; see BENCHMARKS.md).

    measure.py controller --name NAME --ready-url URL -- CMD...
    measure.py raw --list JOBS.json [--qps Q --burst B] -- RAWCREATE...
    measure.py summary RESULT.json...

Both modes create the same 1,000 Jobs in a fresh namespace and report, as
one JSON object on stdout (progress on stderr):

  create_to_all_jobs_s   JobSet POST (or the raw loop's start) -> a watch on
                         the namespace has seen every Job ADDED
  create_to_all_ready_s  ... -> every Job reports status.ready >= 1 (kcm,
                         scheduler and kwok dominate this one)
  cpu_s.*                CPU seconds (user+sys) of the process under test and
                         of each control-plane component, over [create, all
                         Jobs] and [create, settled]; settled = every Job
                         ready and the process under test quiet for 5 s
  peak_rss_mb            VmHWM of the process under test (ru_maxrss for the
                         raw loop)
  requests.*             API requests the process under test made, counted
                         by the API server itself: every request of the
                         benchmark identity (CN=jobset-bench-controller, not
                         in system:masters) is routed by FlowSchemas
                         a-bench-<verb>-<resource> to the exempt priority
                         level, and apiserver_flowcontrol_dispatched_requests_total
                         is diffed per FlowSchema.  Nothing is throttled
                         by APF, as for system:masters.

The process under test gets {kubeconfig} (the benchmark identity) and the
other {placeholders} in CMD substituted; see run.sh.
"""

import argparse
import base64
import http.client
import json
import os
import signal
import ssl
import statistics
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
    out = {}
    for line in text.splitlines():
        if (line.startswith("apiserver_request_total{") and 'resource="jobs"' in line and 'verb="POST"' in line
                and 'subresource=""' in line):
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


class JobWatch(threading.Thread):
    """Watches Jobs in a namespace (admin identity; not counted)."""

    def __init__(self, cl, ns, want):
        super().__init__(daemon=True)
        self.cl, self.ns, self.want = cl, ns, want
        self.seen, self.ready = set(), set()
        self.t_all = self.t_ready = None
        self.t_first = None
        self.err = None
        self.restarts = 0
        self.cv = threading.Condition()
        _, out = cl.req("GET", f"/apis/batch/v1/namespaces/{ns}/jobs?limit=1")
        self.rv = json.loads(out)["metadata"]["resourceVersion"]

    def note(self, t, obj):
        name = obj["metadata"]["name"]
        with self.cv:
            if self.t_first is None:
                self.t_first = t
            self.seen.add(name)
            if (obj.get("status") or {}).get("ready", 0) >= 1:
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


def settle(cl, watch, pid, t0, args):
    """Wait for every Job ready, then for the process under test to be quiet."""
    t_ready = watch.wait("t_ready", args.ready_timeout)
    if t_ready is None:
        log(f"not all Jobs ready after {args.ready_timeout} s ({len(watch.ready)}/{watch.want}); settling anyway")
    if pid:
        last, quiet_since = proc_cpu(pid), now()
        deadline = now() + args.quiet_timeout
        while now() < deadline:
            time.sleep(1)
            c = proc_cpu(pid)
            if c is None:
                break
            if c - last > 0.05:
                quiet_since = now()
            last = c
            if now() - quiet_since >= args.quiet_s:
                break
    return t_ready


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
    result = {"kind": kind, "name": args.name, "jobs": args.jobs, "qps": args.qps, "burst": args.burst,
              "cmd": cmd, "date": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    proc = None
    logf = open(args.log, "w") if args.log else subprocess.DEVNULL
    try:
        if kind == "controller":
            proc = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT, start_new_session=True)
            t = now()
            wait_url(args.ready_url.format(**subst), 60, proc)
            result["ready_s"] = round(now() - t, 2)
            time.sleep(args.warmup_s)  # informer caches sync, leader election settles
            pid = proc.pid
        else:
            pid = None
        watch = JobWatch(cl, ns, args.jobs)
        watch.start()
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
            raise RuntimeError(f"only {len(watch.seen)}/{args.jobs} Jobs after {args.timeout} s")
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
        t_ready = settle(cl, watch, pid, t0, args)
        s2 = snapshot(cl, pid)
        result["create_to_first_job_s"] = round(watch.t_first - t0, 3) if watch.t_first else None
        result["create_to_all_jobs_s"] = round(t_all - t0, 3)
        result["create_to_all_ready_s"] = round(t_ready - t0, 3) if t_ready else None
        result["settled_s"] = round(s2["t"] - t0, 1)
        result["watch_restarts"] = watch.restarts
        result["loadavg_start"] = load0
        result["cpu_s"] = {"to_all_jobs": cpu_diff(s0, s1), "to_settled": cpu_diff(s0, s2)}
        result["requests"] = {"to_all_jobs": req_diff(s0["flows"], s1["flows"]),
                              "to_settled": req_diff(s0["flows"], s2["flows"])}
        result["job_posts_by_code"] = {k: int(s2["posts"].get(k, 0) - s0["posts"].get(k, 0))
                                       for k in s2["posts"] if s2["posts"].get(k, 0) != s0["posts"].get(k, 0)}
        if kind == "controller" and args.scrape_url:
            try:
                c = http.client.HTTPConnection("127.0.0.1", urllib.parse.urlparse(args.scrape_url).port, timeout=5)
                c.request("GET", urllib.parse.urlparse(args.scrape_url).path)
                with open(args.out + ".metrics.txt" if args.out else "/dev/null", "wb") as f:
                    f.write(c.getresponse().read())
            except OSError as e:
                log(f"scrape {args.scrape_url}: {e}")
        if kind == "controller":
            result["cpu_s"]["under_test_total"] = proc_cpu(pid)
            result["peak_rss_mb"] = round(proc_status(pid, "VmHWM") / 1024, 1)
            result["rss_end_mb"] = round(proc_status(pid, "VmRSS") / 1024, 1)
            result["threads"] = proc_status(pid, "Threads")
        else:
            ru = raw_ru
            result["cpu_s"]["under_test_total"] = round(ru.ru_utime + ru.ru_stime, 2)
            result["cpu_s"]["to_all_jobs"]["under_test"] = result["cpu_s"]["under_test_total"]
            result["cpu_s"]["to_settled"]["under_test"] = result["cpu_s"]["under_test_total"]
            result["peak_rss_mb"] = round(ru.ru_maxrss / 1024, 1)
        return result
    finally:
        if proc and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if logf is not subprocess.DEVNULL:
            logf.close()


# ------------------------------------------------------------------ summary


def summary(files):
    rows = {}
    for p in files:
        with open(p) as f:
            r = json.load(f)
        rows.setdefault(r["name"], []).append(r)

    def mmm(vals):
        vals = [v for v in vals if v is not None]
        if not vals:
            return "-"
        if len(vals) == 1:
            return f"{vals[0]:g}"
        return f"{min(vals):g} / {statistics.median(vals):g} / {max(vals):g}"

    cols = [("create → 1,000 Jobs (s)", lambda r: r["create_to_all_jobs_s"]),
            ("create → all Jobs ready (s)", lambda r: r["create_to_all_ready_s"]),
            ("CPU to 1,000 Jobs (s)", lambda r: r["cpu_s"]["to_all_jobs"].get("under_test")),
            ("CPU to settled (s)", lambda r: r["cpu_s"]["to_settled"].get("under_test")),
            ("peak RSS (MB)", lambda r: r["peak_rss_mb"]),
            ("API requests to 1,000 Jobs", lambda r: r["requests"]["to_all_jobs"]["total"]),
            ("API requests to settled", lambda r: r["requests"]["to_settled"]["total"]),
            ("apiserver CPU to 1,000 Jobs (s)", lambda r: r["cpu_s"]["to_all_jobs"].get("kube-apiserver"))]
    print("| run | n | " + " | ".join(c for c, _ in cols) + " |")
    print("|---|---|" + "---|" * len(cols))
    for name, rs in rows.items():
        print(f"| {name} | {len(rs)} | " + " | ".join(mmm([f(r) for r in rs]) for _, f in cols) + " |")
    print()
    for name, rs in rows.items():
        r = rs[-1]
        print(f"{name}: requests by verb/resource (last run, to settled): "
              + ", ".join(f"{k} {v}" for k, v in r["requests"]["to_settled"]["by_verb_resource"].items()))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="mode", required=True)
    for mode in ("controller", "raw"):
        p = sub.add_parser(mode)
        p.add_argument("--cluster-dir", default=os.environ.get("JOBSET_CLUSTER_DIR", "/tmp/js-bench-cluster"))
        p.add_argument("--name", required=True)
        p.add_argument("--namespace", default="bench")
        p.add_argument("--jobs", type=int, default=1000)
        p.add_argument("--qps", type=float, default=500)
        p.add_argument("--burst", type=int, default=500)
        p.add_argument("--timeout", type=float, default=600, help="create -> all Jobs")
        p.add_argument("--ready-timeout", type=float, default=300)
        p.add_argument("--quiet-s", type=float, default=5)
        p.add_argument("--quiet-timeout", type=float, default=60)
        p.add_argument("--log", help="stdout/stderr of the process under test")
        p.add_argument("--out", help="write the JSON result here too")
        if mode == "controller":
            p.add_argument("--ready-url", required=True)
            p.add_argument("--jobset", required=True)
            p.add_argument("--warmup-s", type=float, default=3)
            p.add_argument("--scrape-url", help="plain-http metrics of the process under test, saved at the end")
        else:
            p.add_argument("--list", required=True, help="List JSON (jobset render -o json)")
        p.add_argument("cmd", nargs="+")
    p = sub.add_parser("summary")
    p.add_argument("files", nargs="+")
    args = ap.parse_args()
    if args.mode == "summary":
        summary(args.files)
        return
    res = run_one(args, args.mode)
    s = json.dumps(res, indent=1)
    print(s)
    if args.out:
        with open(args.out, "w") as f:
            f.write(s + "\n")


if __name__ == "__main__":
    main()
