"""Fixtures of the fault scenarios (test_faults.py) on hack/cluster.

The control plane comes from `hack/cluster up` (with its audit log). Each
scenario runs jobset-controller out of cluster, as deploy/'s ServiceAccount
with deploy/'s RBAC (its bearer token, which the proxy passes on; its Lease
in jobset-system, where deploy/'s Role allows it), behind the fault proxy
(faultproxy.py, run by Debian's /usr/bin/python3 with python3-h2),
and plays the Job controller itself: the Jobs carry spec.managedBy, so the
built-in Job controller leaves them alone and JobDriver below writes their
status (started, then Complete or Failed) through the API server. That keeps
a 200-Job JobSet's creation, restart and completion to seconds, and makes
which Job fails, and when, exact.

Everything is asserted through independent views: the API server (kubectl
and a plain HTTPS client here), its audit log, the proxy's log and counters,
and the controller's /metrics. Waits poll a condition with a deadline.
"""
import concurrent.futures
import http.client
import importlib.util
import json
import os
import signal
import subprocess
import threading
import time
import urllib.request
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("e2e_cluster_common", ROOT / "tests/e2e/cluster/conftest.py")
e2e = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(e2e)
kapi = e2e.hostnames.kapi
wait_for = e2e.wait_for
condition = e2e.condition

PROXY_PYTHON = "/usr/bin/python3"  # Debian's: python3-h2 (scripts/setup-debian.sh)
LABEL = "jobset.sigs.k8s.io/"
DRIVER = "jobset-test/driver"
FAKETIME_LIB = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1"


def _need_env():
    if not os.environ.get("JOBSET_TEST_KUBECONFIG"):
        pytest.fail("JOBSET_TEST_KUBECONFIG is unset: run `hack/cluster up` and "
                    "`eval \"$(hack/cluster env)\"` first (scripts/test cluster does both)")
    for v in ("JOBSET_TEST_AUDIT_LOG", "JOBSET_TEST_CONTROLLER_TOKEN_FILE"):
        if not os.environ.get(v):
            pytest.fail(f"{v} is unset: this cluster's `hack/cluster` is older than the fault scenarios")


@pytest.fixture(scope="session")
def kube():
    _need_env()
    return e2e.Kube()


@pytest.fixture(scope="session")
def crd(kube):
    kube.run("apply", "--server-side", "--force-conflicts", "-f", str(e2e._crd_path()))
    e2e.wait_crd_served(kube)


@pytest.fixture
def ns(kube, request):
    name = f"fault-{request.node.callspec.id[:40]}-{uuid.uuid4().hex[:5]}".lower()
    name = "".join(ch if ch.isalnum() or ch == "-" else "-" for ch in name)[:63].strip("-")
    kube.run("create", "namespace", name)
    yield name
    # The JobSet first, and gone before the next scenario: every controller
    # watches all namespaces, and one left in a terminating namespace would
    # be worked on by the next scenario's controller.
    kube.run("delete", "jobsets.jobset.x-k8s.io", "--all", "-n", name, "--wait=true", check=False, timeout=120)
    kube.run("delete", "namespace", name, "--wait=false", check=False)


free_port = e2e._free_port


# ---- a plain HTTPS client of the API server (admin), for the driver ----

Api = kapi.Api


# ---- the Job controller stand-in ----

def _now():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class JobDriver:
    """Plays the Job controller for the Jobs of one JobSet (spec.managedBy =
    jobset-test/driver), as Kubernetes 1.34's does (status.terminating is
    always reported): a new Job is started (startTime, active 1, ready 1);
    once armed, Job `fail_index` of restart attempt 0 fails with
    BackoffLimitExceeded (a RestartJobSet rule) and Job `rj_index` fails with
    PodFailurePolicy while its job-restart-attempt is 0 (a RestartJob rule);
    the Jobs of a later restart attempt run too, and complete once finish()
    was called (a test calls it when the controller reports them all ready,
    so the JobsReady and completion steps never fold into one)."""

    def __init__(self, ns, jobset, fail_index, rj_index):
        self.ns, self.jobset = ns, jobset
        self.fail_index, self.rj_index = fail_index, rj_index
        self.api = Api()
        self.local = threading.local()
        # Status writes go out 8 at a time (one connection each), as a Job
        # controller's workers would; those of one Job in order, through
        # the same worker.
        self.pools = [concurrent.futures.ThreadPoolExecutor(1) for _ in range(8)]
        self.started = {}  # uid -> the startTime the driver gave it
        self.seen = {}     # uid -> (owner uid, name, restart attempt, job restart attempt): every Job seen
        self.lock = threading.Lock()
        self.armed = False
        self.finishing = False
        self.state = {}  # uid -> "running" | "Complete" | "Failed"
        self.errors = []
        self.stop = threading.Event()
        self.path = (f"/apis/batch/v1/namespaces/{ns}/jobs?labelSelector="
                     f"{LABEL}jobset-name%3D{jobset}")
        self.thread = threading.Thread(target=self.run, daemon=True)

    def start(self):
        self.thread.start()
        return self

    def close(self):
        self.stop.set()
        for p in self.pools:
            p.shutdown(wait=True, cancel_futures=True)

    def arm(self):
        """From now on the failing Jobs fail; the Jobs seen so far are
        looked at again at once."""
        with self.lock:
            self.armed = True
        self.redrive()

    def disarm(self):
        """Back to before arm(): no Job is failed."""
        with self.lock:
            self.armed = False

    def running(self, owner):
        """Jobs of the JobSet with uid `owner` the driver started."""
        with self.lock:
            return sum(1 for uid, s in self.state.items() if s == "running" and self.seen[uid][0] == owner)

    def finish(self):
        """From now on the Jobs of restart attempts >= 1 complete."""
        with self.lock:
            self.finishing = True
        self.redrive()

    def redrive(self):
        code, lst = Api().request("GET", self.path)
        assert code == 200, lst
        for f in [self.drive(j) for j in lst["items"]]:
            if f:
                f.result()

    def run(self):
        while not self.stop.is_set():
            try:
                code, lst = self.api.request("GET", self.path)
                if code != 200:
                    continue
                for j in lst["items"]:
                    self.drive(j)
                rv = lst["metadata"]["resourceVersion"]
                for ev in Api().watch(f"{self.path}&watch=1&resourceVersion={rv}&timeoutSeconds=30"):
                    if self.stop.is_set():
                        return
                    if ev["type"] in ("ADDED", "MODIFIED"):
                        self.drive(ev["object"])
                    elif ev["type"] == "ERROR":
                        break
            except (OSError, http.client.HTTPException, ValueError):
                time.sleep(0.2)  # the API server is away (a scenario restarts it)

    def drive(self, j):
        md, st = j["metadata"], j.get("status") or {}
        lb = md.get("labels") or {}
        owner = [o.get("uid") for o in md.get("ownerReferences") or [] if o.get("controller")]
        with self.lock:
            self.seen[md["uid"]] = (owner[0] if owner else None, md["name"], lb.get(LABEL + "restart-attempt"),
                                    lb.get(LABEL + "job-restart-attempt", "0"))
        if md.get("deletionTimestamp") or (j.get("spec") or {}).get("managedBy") != DRIVER:
            return
        if any(c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
               for c in st.get("conditions") or []):
            return
        idx = int(lb.get(LABEL + "job-index", "-1"))
        attempt = int(lb.get(LABEL + "restart-attempt", "0"))
        jra = int(lb.get(LABEL + "job-restart-attempt", "0"))
        uid = md["uid"]
        with self.lock:
            have = self.state.get(uid)
            if have in ("Complete", "Failed"):
                return
            if self.armed and idx == self.fail_index and attempt == 0:
                want = ("Failed", "BackoffLimitExceeded")
            elif self.armed and idx == self.rj_index and jra == 0:
                want = ("Failed", "PodFailurePolicy")
            elif attempt >= 1 and self.finishing:
                want = ("Complete", "CompletionsReached")
            elif have != "running":
                want = ("running", None)
            else:
                return
            self.state[uid] = want[0]
            start = self.started.setdefault(uid, st.get("startTime") or _now())
        pool = self.pools[hash(uid) % len(self.pools)]
        return pool.submit(self.patch, md["name"], self.status(want, start))

    @staticmethod
    def status(want, start):
        now = _now()
        kind, reason = want
        if kind == "running":
            return {"startTime": start, "active": 1, "ready": 1, "terminating": 0}

        def cond(t):
            return {"type": t, "status": "True", "reason": reason, "message": f"jobset-test driver: {reason}",
                    "lastProbeTime": now, "lastTransitionTime": now}
        if kind == "Complete":
            return {"startTime": start, "active": 0, "ready": 0, "terminating": 0, "succeeded": 1,
                    "completedIndexes": "0", "completionTime": now,
                    "conditions": [cond("SuccessCriteriaMet"), cond("Complete")]}
        return {"startTime": start, "active": 0, "ready": 0, "terminating": 0, "failed": 1,
                "conditions": [cond("FailureTarget"), cond("Failed")]}

    def patch(self, name, status):
        if not hasattr(self.local, "api"):
            self.local.api = Api()
        code, out = self.local.api.request("PATCH", f"/apis/batch/v1/namespaces/{self.ns}/jobs/{name}/status",
                                     {"status": status}, "application/merge-patch+json")
        if code == 404:
            return  # deleted meanwhile (a restart): its successor is driven instead
        if code != 200:
            self.errors.append(f"PATCH {name}/status: {code} {out}")


# ---- the proxy ----

class Proxy:
    """One faultproxy process in front of the API server, with its control API
    and log. The serving certificate is signed by the cluster's CA."""

    def __init__(self, workdir, name="proxy", rules=None, seed=1):
        self.dir = Path(workdir)
        self.name = name
        pki = Path(os.environ["JOBSET_CLUSTER_DIR"]) / "pki"
        self.ca = pki / "ca.crt"
        self.cert, self.key = self.dir / f"{name}.crt", self.dir / f"{name}.key"
        self._make_cert(pki)
        self.log = self.dir / f"{name}.log"
        self.out = self.dir / f"{name}.out"
        ready = self.dir / f"{name}.ready"
        rules_file = self.dir / f"{name}.rules.json"
        rules_file.write_text(json.dumps(rules or []))
        self.proc = subprocess.Popen(
            [PROXY_PYTHON, str(HERE / "faultproxy.py"), "--upstream", os.environ["JOBSET_TEST_SERVER"],
             "--ca", str(self.ca), "--cert", str(self.cert), "--key", str(self.key),
             "--client-cert", os.environ["JOBSET_TEST_CONTROLLER_CERT"],
             "--client-key", os.environ["JOBSET_TEST_CONTROLLER_KEY"],
             "--rules", str(rules_file), "--log", str(self.log), "--seed", str(seed),
             "--ready-file", str(ready)],
            stdout=open(self.out, "w"), stderr=subprocess.STDOUT)
        got = wait_for(f"{name} listening", lambda: self._died() or (ready.exists() and ready.read_text()), 20)
        info = json.loads(got)
        self.port, self.control = info["port"], info["control"]

    def _died(self):
        if self.proc.poll() is not None:
            raise AssertionError(f"faultproxy exited {self.proc.returncode}: {self.out.read_text()[-2000:]}")
        return False

    def _make_cert(self, pki):
        csr, ext = self.dir / f"{self.name}.csr", self.dir / f"{self.name}.ext"
        ext.write_text("basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
                       "extendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n")
        subprocess.run(["openssl", "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                        "-nodes", "-subj", "/CN=faultproxy", "-keyout", str(self.key), "-out", str(csr)],
                       check=True, capture_output=True)
        subprocess.run(["openssl", "x509", "-req", "-in", str(csr), "-CA", str(pki / "ca.crt"),
                        "-CAkey", str(pki / "ca.key"), "-CAcreateserial", "-CAserial",
                        str(self.dir / f"{self.name}.srl"), "-days", "30", "-sha256", "-extfile", str(ext),
                        "-out", str(self.cert)], check=True, capture_output=True)

    def kubeconfig(self, path):
        """A kubeconfig for the controller: deploy/'s ServiceAccount (the
        token file `hack/cluster up` minted), the proxy as the server."""
        import base64
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump({
                "apiVersion": "v1", "kind": "Config", "current-context": "c",
                "clusters": [{"name": "c", "cluster": {
                    "server": f"https://127.0.0.1:{self.port}",
                    "certificate-authority-data": base64.b64encode(self.ca.read_bytes()).decode()}}],
                "users": [{"name": "u", "user": {"tokenFile": os.environ["JOBSET_TEST_CONTROLLER_TOKEN_FILE"]}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u",
                                                       "namespace": e2e.SYSTEM_NS}}]}, f)
        return path

    def call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(f"http://127.0.0.1:{self.control}{path}", data=data, method=method)
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.loads(r.read())

    def rules(self, rules):
        return self.call("PUT", "/rules", rules)

    def stats(self):
        return self.call("GET", "/stats")

    def injected(self, rule):
        return self.stats()["rules"].get(rule, {}).get("injected", 0)

    def matched(self, rule):
        return self.stats()["rules"].get(rule, {}).get("matched", 0)

    def release(self, drop):
        return self.call("POST", "/release", {"drop": drop})

    def mark(self, epoch):
        return self.call("POST", "/mark", {"epoch": epoch})

    def entries(self):
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines() if line.strip()]

    def close(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


# ---- the controller under test ----

class Controller(e2e.Controller):
    """One jobset-controller process talking to the API server through a
    proxy, leader election on (a Lease of its own per scenario). The probes
    and /metrics come from the e2e tests' Controller."""

    def __init__(self, kube, workdir, name, kubeconfig, lease_name, lease=None, env=None, extra=()):
        super().__init__(kube, e2e.SYSTEM_NS, lease_name, workdir, kubeconfig=kubeconfig)
        self.dir = Path(workdir)
        self.name = name
        self.identity = f"{name}-{uuid.uuid4().hex[:6]}"
        self.log = self.dir / f"{name}.log"
        self.env = env
        self.extra = list(extra)
        self.config = None
        if lease:
            self.config = self.dir / f"{name}.config.yaml"
            self.config.write_text(
                "apiVersion: config.jobset.x-k8s.io/v1alpha1\nkind: Configuration\nleaderElection:\n"
                f"  leaderElect: true\n  leaseDuration: {lease[0]}s\n  renewDeadline: {lease[1]}s\n"
                f"  retryPeriod: {lease[2]}s\n")
        self.proc = None

    def start(self, wait_leader=True):
        self.metrics_port, self.health_port = free_port(), free_port()
        args = [e2e.controller_binary(), f"--kubeconfig={self.kubeconfig}",
                *([f"--config={self.config}"] if self.config else []),
                f"--metrics-bind-address=127.0.0.1:{self.metrics_port}",
                f"--health-probe-bind-address=127.0.0.1:{self.health_port}",
                f"--leader-elect-namespace={self.lease_ns}", f"--leader-elect-name={self.lease_name}",
                f"--leader-elect-identity={self.identity}", "--concurrency=4", "-v", "1",
                "--enable-webhooks=false", "--feature-gates=RestartJob=true", *self.extra]
        env = dict(os.environ, **(self.env or {}))
        self.proc = subprocess.Popen(args, stdout=open(self.log, "a"), stderr=subprocess.STDOUT, env=env)
        wait_for(f"{self.name} /readyz", lambda: self.http("readyz")[0] == 200 or self.died(), 60)
        if wait_leader:
            wait_for(f"{self.name} to lead", lambda: self.leads() or self.died(), 60)
        return self

    def died(self):
        return self._died()

    def metrics(self):
        return parse_metrics(super().metrics())

    def leads(self):
        code, body = e2e.https_get(self.metrics_port, "metrics", e2e.metrics_token(self.kube))
        return code == 200 and f'leader_election_master_status{{name="{self.lease_name}"}} 1' in body

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig):
        self.proc.send_signal(sig)

    def wait(self, timeout):
        return self.proc.wait(timeout)

    def stop(self):
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
            try:
                return self.proc.wait(40)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        return self.proc.wait() if self.proc else None


def parse_metrics(text):
    """Prometheus text -> {(name, ((label, value), ...)): float}."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        head, _, val = line.rpartition(" ")
        name, labels = head, ()
        if "{" in head:
            name, _, rest = head.partition("{")
            pairs = []
            for item in rest.rstrip("}").split('",'):
                if not item:
                    continue
                k, _, v = item.partition("=")
                pairs.append((k.strip(","), v.strip('"')))
            labels = tuple(sorted(pairs))
        out[(name, labels)] = float(val)
    return out


def metric(m, name, **labels):
    return m.get((name, tuple(sorted(labels.items()))), 0.0)


audit_offset = e2e.audit.audit_offset
audit_job_creates = e2e.audit.audit_job_creates


def faketime_env(control_file):
    """Environment that runs a program under libfaketime with a wall-clock
    offset read from `control_file` (re-read every second); the monotonic
    clock is left alone, as an NTP step would."""
    Path(control_file).write_text("+0\n")
    return {"LD_PRELOAD": FAKETIME_LIB, "FAKETIME_TIMESTAMP_FILE": str(control_file),
            "FAKETIME_CACHE_DURATION": "1", "FAKETIME_DONT_FAKE_MONOTONIC": "1",
            "FAKETIME_DONT_RESET": "1"}
