"""Fixtures for the jobset-controller end-to-end tests on hack/cluster.

The control plane comes from `hack/cluster up` (env from `hack/cluster env`).
These fixtures install the JobSet CRD, run build/jobset-controller out of
cluster as a subprocess, and give each test its own namespace. Everything is
asserted with kubectl, an independent client. Waits poll a condition with a
deadline; nothing sleeps in place of a condition.

The controller runs as deploy/'s ServiceAccount with deploy/'s RBAC and
nothing more ($JOBSET_TEST_CONTROLLER_KUBECONFIG: a token minted by
`hack/cluster up` through the TokenRequest API), so its Lease, and the
Secret of internal certificate management, live in the namespace deploy/'s
Roles grant: jobset-system. A verb the RBAC lacks fails a test. /metrics is
HTTPS behind TokenReview and SubjectAccessReview, as upstream's: the tests
scrape it with the token of a ServiceAccount bound to deploy/'s
jobset-metrics-reader ClusterRole.
"""
import base64
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
import weakref
from pathlib import Path

import pytest
import yaml

# hostnames and kapi sit beside this file; appended, so that another
# directory's conftest that loads this one (tests/fault, tests/chaos) keeps
# its own modules first.
if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.append(str(Path(__file__).resolve().parent))
import audit  # noqa: E402,F401  (tests/fault and tests/chaos reach it through this module)
import hostnames  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
POLL_S = 0.25
# deploy/'s namespace: its Roles (leases, secrets) hold only there.
SYSTEM_NS = "jobset-system"
CONTROLLER_SA = "jobset-controller-manager"
# The scraper: a ServiceAccount bound to deploy/'s metrics-reader ClusterRole,
# outside jobset-system (whose ServiceAccounts the audit log records).
METRICS_NS = "jobset-e2e-metrics"
METRICS_SA = "metrics-reader"


def _need_env():
    if not os.environ.get("JOBSET_TEST_KUBECONFIG"):
        pytest.skip("JOBSET_TEST_KUBECONFIG is unset: run `hack/cluster up` and "
                    "`eval \"$(hack/cluster env)\"` first (scripts/test cluster does both)",
                    allow_module_level=True)


def wait_for(what, fn, timeout=60.0):
    """Poll fn() every 250 ms until it returns a truthy value; fail after
    `timeout` seconds naming `what` and the last value seen."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        last = fn()
        if last:
            return last
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}; last: {last!r}")
        time.sleep(POLL_S)


class Kube:
    """kubectl with the admin kubeconfig."""

    def __init__(self):
        self.kubectl = os.environ.get("KUBECTL") or shutil.which("kubectl")
        self.env = dict(os.environ, KUBECONFIG=os.environ["JOBSET_TEST_KUBECONFIG"])

    def run(self, *args, input=None, check=True, timeout=60):
        p = subprocess.run([self.kubectl, *args], input=input, capture_output=True, text=True,
                           env=self.env, timeout=timeout)
        if check and p.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({p.returncode}): {p.stderr.strip()}")
        return p

    def apply(self, obj, ns=None):
        args = ["apply", "-f", "-"] + (["-n", ns] if ns else [])
        return self.run(*args, input=json.dumps(obj) if not isinstance(obj, str) else obj)

    def create(self, obj, ns):
        return self.run("create", "-n", ns, "-f", "-", input=json.dumps(obj))

    def get(self, kind, name, ns):
        p = self.run("get", kind, name, "-n", ns, "-o", "json", check=False)
        if p.returncode != 0:
            if "NotFound" in p.stderr or "not found" in p.stderr:
                return None
            raise AssertionError(f"kubectl get {kind} {name}: {p.stderr.strip()}")
        return json.loads(p.stdout)

    def list(self, kind, ns, selector=None):
        args = ["get", kind, "-n", ns, "-o", "json"] + (["-l", selector] if selector else [])
        return json.loads(self.run(*args).stdout)["items"]

    def jobset(self, name, ns):
        return self.get("jobsets.jobset.x-k8s.io", name, ns)

    def jobs(self, ns, jobset=None):
        sel = f"jobset.sigs.k8s.io/jobset-name={jobset}" if jobset else None
        return self.list("jobs.batch", ns, sel)

    def events(self, ns, reason=None):
        items = self.list("events.events.k8s.io", ns)
        return [e for e in items if reason is None or e.get("reason") == reason]


def condition(obj, ctype):
    for c in (obj or {}).get("status", {}).get("conditions", []) or []:
        if c.get("type") == ctype and c.get("status") == "True":
            return c
    return None


def terminal(obj):
    return (obj or {}).get("status", {}).get("terminalState")


@pytest.fixture(scope="session")
def kube():
    _need_env()
    return Kube()


UPSTREAM_VERSION = "v0.12.0"


def go_module_dir(module, version):
    """The source of Go module `module`@`version` in hack/cluster's module
    cache ($JOBSET_CACHE/go/pkg/mod), downloaded through the module proxy if
    it is not there yet; never committed. Upstream JobSet's CRD and config/,
    Trainer's manifests/."""
    cache = Path(os.environ.get("JOBSET_CACHE", Path.home() / ".cache" / "jobset"))
    env = dict(os.environ, GOPATH=str(cache / "go"), GOMODCACHE=str(cache / "go" / "pkg" / "mod"),
               GOFLAGS="-mod=mod", GOTOOLCHAIN="local")
    with tempfile.TemporaryDirectory() as tmp:
        p = subprocess.run(["go", "mod", "download", "-json", f"{module}@{version}"], cwd=tmp,
                           capture_output=True, text=True, env=env, timeout=600)
    if p.returncode != 0:
        raise AssertionError(f"go mod download {module}@{version}: {p.stderr or p.stdout}")
    return Path(json.loads(p.stdout)["Dir"])


def upstream_module_dir():
    """sigs.k8s.io/jobset at UPSTREAM_VERSION: upstream's CRD and config/
    for the comparisons."""
    return go_module_dir("sigs.k8s.io/jobset", UPSTREAM_VERSION)


def _crd_path():
    """Our generated CRD once deploy/ has it; until then upstream's."""
    for p in [ROOT / "deploy" / "crd" / "jobset.x-k8s.io_jobsets.yaml",
              ROOT / "deploy" / "crd" / "bases" / "jobset.x-k8s.io_jobsets.yaml"]:
        if p.exists():
            return p
    return upstream_module_dir() / "config" / "components" / "crd" / "bases" / "jobset.x-k8s.io_jobsets.yaml"


def wait_crd_served(kube, timeout=60):
    """Wait until the JobSet CRD is usable, not merely stored: the CRD has
    Established=True *for its current generation's schema* (a re-apply of a
    changed CRD flips NamesAccepted/Established again), and the API server
    answers a LIST and a server-side dry-run create of a JobSet (discovery
    and the storage for the resource are in place). Creating JobSets earlier
    fails with "the server could not find the requested resource", or is
    routed to a CRD version still being swapped in."""
    def established():
        obj = kube.get("crd", "jobsets.jobset.x-k8s.io", "default")
        st = (obj or {}).get("status", {})
        served = "v1alpha2" in (st.get("storedVersions") or [])
        return condition(obj, "Established") and condition(obj, "NamesAccepted") and served
    wait_for("CRD jobsets.jobset.x-k8s.io Established and NamesAccepted", established, timeout)
    probe = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
             "metadata": {"name": "crd-probe", "namespace": "default"},
             "spec": {"replicatedJobs": [{"name": "r", "template": {"spec": {"template": {"spec": {
                 "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}}]}}
    last = {}

    def serving():
        p = kube.run("get", "jobsets.jobset.x-k8s.io", "-A", "-o", "name", check=False)
        q = kube.run("create", "--dry-run=server", "-f", "-", input=json.dumps(probe), check=False)
        last["err"] = (p.stderr + q.stderr).strip()
        # A denial by an admission webhook registered by another test also
        # proves the resource is served: the request got past routing.
        return p.returncode == 0 and (q.returncode == 0 or "admission webhook" in q.stderr)
    try:
        wait_for("the API server serving jobsets.jobset.x-k8s.io", serving, timeout)
    except AssertionError as e:
        raise AssertionError(f"{e}; kubectl: {last.get('err')!r}") from None


@pytest.fixture(scope="session")
def crd(kube):
    path = _crd_path()
    kube.run("apply", "--server-side", "--force-conflicts", "-f", str(path))
    wait_crd_served(kube)
    return path


def controller_kubeconfig():
    """deploy/'s ServiceAccount (hack/cluster up), else the admin's."""
    return os.environ.get("JOBSET_TEST_CONTROLLER_KUBECONFIG") or os.environ["JOBSET_TEST_KUBECONFIG"]


def mint_token(kube, sa, ns, duration="1h"):
    """A bearer token for ServiceAccount ns/sa from the TokenRequest API.
    With $JOBSET_TEST_TOKEN_RECORD set (scripts/test), the token is also
    appended to that file (0600), so that tests/e2e/scan_secrets.py can
    look for every token of the run in every log afterwards."""
    tok = kube.run("create", "token", sa, "-n", ns, f"--duration={duration}").stdout.strip()
    assert tok.startswith("eyJ"), "TokenRequest gave no token"
    record = os.environ.get("JOBSET_TEST_TOKEN_RECORD")
    if record:
        fd = os.open(record, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(fd, "a") as f:
            f.write(tok + "\n")
    return tok


def write_token_kubeconfig(path, token, namespace=SYSTEM_NS):
    """A kubeconfig with `token` inline, 0600 from the start (test_least_privilege,
    test_report_cluster)."""
    server, ca = os.environ["JOBSET_TEST_SERVER"], Path(os.environ["JOBSET_TEST_CA"]).read_text()
    kc = {"apiVersion": "v1", "kind": "Config", "current-context": "c",
          "clusters": [{"name": "c", "cluster": {"server": server,
                                                 "certificate-authority-data": base64.b64encode(ca.encode()).decode()}}],
          "users": [{"name": "u", "user": {"token": token}}],
          "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u", "namespace": namespace}}]}
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(kc, f)
    return str(path)


def ensure_sa(kube, sa, ns, cluster_role=None):
    """ServiceAccount ns/sa, bound cluster-wide to `cluster_role` when given."""
    kube.run("create", "namespace", ns, check=False)
    kube.run("create", "serviceaccount", sa, "-n", ns, check=False)
    if cluster_role:
        kube.run("create", "clusterrolebinding", f"{ns}-{sa}", f"--clusterrole={cluster_role}",
                 f"--serviceaccount={ns}:{sa}", check=False)


_metrics_token = {}


def metrics_token(kube):
    """The scraper's token (minted once per session)."""
    if "t" not in _metrics_token:
        ensure_sa(kube, METRICS_SA, METRICS_NS, "jobset-metrics-reader")
        _metrics_token["t"] = mint_token(kube, METRICS_SA, METRICS_NS, "2h")
    return _metrics_token["t"]


def https_get(port, path, token=None, timeout=5):
    """GET https://127.0.0.1:port/path (the server's certificate is not
    checked: the metrics server's is self-signed, as upstream's, whose
    ServiceMonitor skips verification). Returns (code, body); (0, error)
    when no HTTP answer came."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    req = urllib.request.Request(f"https://127.0.0.1:{port}/{path}",
                                 headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError as e:
        return 0, str(e)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def controller_binary():
    b = os.environ.get("JOBSET_CONTROLLER_BIN")
    if b:
        return b
    build = ROOT / "build"
    if (build / "build.ninja").exists():
        # scripts/test builds the tree; make sure our target is there too.
        subprocess.run(["ninja", "-C", str(build), "jobset-controller"], check=True, capture_output=True)
    b = build / "jobset-controller"
    if not b.exists():
        raise AssertionError(f"{b} missing: build it (ninja -C build jobset-controller)")
    return str(b)


LEASE_LOST = "leader election lost: exiting"


def exit_kind(rc, log_text):
    """What a jobset-controller exit means: "clean" (0, after SIGTERM),
    "lost-lease" (1 with its last words LEASE_LOST: leadership could not be
    renewed within the renew deadline, an orderly exit that a Deployment
    restarts), "crash" (killed by a signal: SIGSEGV, SIGABRT, ...), or
    "error" (another status: a startup error or a usage error, which the
    test that started it looks at)."""
    if rc == 0:
        return "clean"
    if rc is not None and rc < 0:
        return "crash"
    if rc == 1 and LEASE_LOST in log_text[-4000:]:
        return "lost-lease"
    return "error"


class Supervisor:
    """Watches every Controller of the session (one thread, a poll every
    250 ms), as a Deployment's kubelet would: a process that exits after
    losing its lease is started again with the same flags, ports and
    identity (a note in `restarts`); a process killed by a signal nobody sent
    it is a crash, recorded in `crashes` (the autouse fixture
    `cluster_invariants` fails the test it happened in) and not restarted.
    An exit the test asked for (stop()) is neither."""

    def __init__(self):
        self.lock = threading.RLock()
        self.controllers = weakref.WeakSet()
        self.crashes = []   # {"at", "rc", "log", "tail"}
        self.restarts = []  # {"at", "log"}: lost leases
        self.thread = None

    def watch(self, c):
        with self.lock:
            self.controllers.add(c)
            if self.thread is None:
                self.thread = threading.Thread(target=self._run, name="controller-supervisor", daemon=True)
                self.thread.start()

    def _run(self):
        while True:
            time.sleep(POLL_S)
            for c in list(self.controllers):
                self.check(c)

    def check(self, c):
        with self.lock:
            p = c.proc
            if p is None or c.expect_exit or p.poll() is None or getattr(p, "supervised", False):
                return
            p.supervised = True
            text = c.log.read_text(errors="replace") if c.log.exists() else ""
            kind = exit_kind(p.returncode, text)
            if kind == "lost-lease":
                self.restarts.append({"at": time.monotonic(), "log": str(c.log)})
                print(f"controller {c.identity}: {LEASE_LOST} (exit 1, log {c.log}); started again")
                c.n += 1
                c.log = Path(c.logdir) / f"controller-{c.n}.log"
                c._spawn()
            elif kind == "crash":
                self.crashes.append({"at": time.monotonic(), "rc": p.returncode, "log": str(c.log),
                                     "tail": text[-3000:]})

    def crashes_since(self, t0):
        with self.lock:
            return [x for x in self.crashes if x["at"] >= t0]


_supervisor = Supervisor()


class Controller:
    """One jobset-controller process, out of cluster."""

    def __init__(self, kube, lease_ns, lease_name, logdir, webhooks=False, kubeconfig=None):
        self.kube = kube
        self.webhooks = webhooks
        self.kubeconfig = kubeconfig or controller_kubeconfig()
        self.lease_ns = lease_ns
        self.lease_name = lease_name
        self.logdir = logdir
        self.proc = None
        self.n = 0
        self.expect_exit = True  # nothing runs yet
        self.umask = None

    def start(self, *extra, wait_leader=True, wait_ready=True, umask=None):
        """Start it with `extra` flags; `umask` for the process (None: ours)."""
        self.metrics_port = _free_port()
        self.health_port = _free_port()
        self.n += 1
        self.log = Path(self.logdir) / f"controller-{self.n}.log"
        self.identity = f"e2e-{self.n}-{uuid.uuid4().hex[:6]}"
        args = [controller_binary(), f"--kubeconfig={self.kubeconfig}",
                f"--metrics-bind-address=127.0.0.1:{self.metrics_port}",
                f"--health-probe-bind-address=127.0.0.1:{self.health_port}",
                f"--leader-elect-namespace={self.lease_ns}", f"--leader-elect-name={self.lease_name}",
                f"--leader-elect-identity={self.identity}", "--concurrency=4", "-v", "1",
                # The admission webhooks (on by default) are tested by
                # test_controller_webhooks.py; the controller tests run
                # without them, so they need no certificates or Secret.
                *([] if self.webhooks else ["--enable-webhooks=false"]), *extra]
        self.args, self.umask = args, umask
        with _supervisor.lock:
            self.expect_exit = False
            self._spawn()
        _supervisor.watch(self)
        if wait_ready:
            wait_for("controller /readyz", lambda: self.http("readyz")[0] == 200 or self._died(), 30)
        if wait_leader:
            wait_for("controller to lead", lambda: self.leader() == self.identity or self._died(), 30)
        return self

    def _spawn(self):
        """Start the process of `self.args` (under the supervisor's lock)."""
        with open(self.log, "w") as out:
            self.proc = subprocess.Popen(self.args, stdout=out, stderr=subprocess.STDOUT,
                                         **({} if self.umask is None else {"umask": self.umask}))

    def _died(self):
        """Raise if the process exited, unless it lost its lease (then the
        supervisor has started it again, as a Deployment would)."""
        _supervisor.check(self)
        if self.proc.poll() is not None:
            raise AssertionError(f"controller exited {self.proc.returncode}: {self.log.read_text()[-3000:]}")
        return False

    def http(self, path, port=None):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port or self.health_port}/{path}", timeout=2) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()
        except OSError as e:
            return 0, str(e)

    def metrics(self):
        """/metrics over HTTPS with the scraper's token (SPEC §12.7)."""
        code, body = https_get(self.metrics_port, "metrics", metrics_token(self.kube))
        assert code == 200, (code, body)
        return body

    def leader(self):
        lease = self.kube.get("leases.coordination.k8s.io", self.lease_name, self.lease_ns)
        return ((lease or {}).get("spec") or {}).get("holderIdentity")

    def stop(self, sig=signal.SIGTERM, timeout=30):
        if not self.proc:
            return None
        with _supervisor.lock:
            self.expect_exit = True
        _supervisor.check(self)  # a crash before this stop is a crash, not this stop's exit
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        self.proc = None
        return rc

    def restart(self, *extra):
        self.stop()
        return self.start(*extra)


class ManagerProcess:
    """A client's controller manager (Kueue, Trainer) run out of cluster:
    its output in a log, ready once its /readyz on 127.0.0.1:`health`
    answers 200, stopped with SIGTERM (SIGKILL after 30 s)."""

    def __init__(self, name, health):
        self.name, self.health, self.proc = name, health, None

    def spawn(self, args, env, log, timeout=120):
        """Start `args` with `env`, output to `log`; wait for /readyz,
        failing with the log's tail if the process exits first."""
        self.log = Path(log)
        with open(self.log, "w") as out:
            self.proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=env)
        wait_for(f"{self.name} /readyz", lambda: self.ready() or self.died(), timeout)

    def ready(self):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.health}/readyz", timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    def died(self):
        if self.proc.poll() is not None:
            raise AssertionError(f"{self.name} exited {self.proc.returncode}: {self.log.read_text()[-4000:]}")
        return False

    def terminate(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


_hostname_watch = []
# Namespaces whose overlaps a test makes on purpose (test_hostnames.py).
EXCUSED_NAMESPACES = set()


def hostname_watch():
    """The session's watch of every JobSet pod (hostnames.HostnameWatch),
    started at its first use."""
    if not _hostname_watch:
        _hostname_watch.append(hostnames.HostnameWatch().start())
    return _hostname_watch[0]


@pytest.fixture(autouse=True)
def cluster_invariants():
    """Every cluster test, whatever it tests, fails when during it
    - two pods of the same hostname from different restart attempts ran at
      once (hostnames.py: one cluster-wide pod watch for the session), or
    - a controller started by these fixtures died of a signal (Supervisor;
      a lost lease is an orderly exit, restarted, and only noted).
    Without a cluster (JOBSET_TEST_KUBECONFIG unset) it does nothing."""
    if not os.environ.get("JOBSET_TEST_KUBECONFIG"):
        yield
        return
    w = hostname_watch()
    t0 = time.monotonic()
    yield
    w.settle()
    problems = [hostnames.describe(v) for v in w.check.since(t0) if v["key"][0] not in EXCUSED_NAMESPACES]
    problems += [f"controller killed by signal {-c['rc']} (log {c['log']}): ...{c['tail'][-1500:]}"
                 for c in _supervisor.crashes_since(t0)]
    if problems:
        pytest.fail("invariant violated during this test:\n" + "\n".join(problems), pytrace=False)


@pytest.fixture(scope="session")
def controller(kube, crd, tmp_path_factory):
    ns = SYSTEM_NS
    kube.run("create", "namespace", ns, check=False)
    c = Controller(kube, ns, f"jobset-e2e-{uuid.uuid4().hex[:6]}", tmp_path_factory.mktemp("controller"))
    c.start()
    yield c
    if c.proc is not None:  # a test may have stopped it (test_controller_webhooks.py)
        rc = c.stop()
        assert rc == 0, f"controller exit status {rc} on SIGTERM; log {c.log}"


@pytest.fixture
def ctl(controller):
    """The session controller, restarted with default flags if a test
    changed them."""
    if controller.proc is None or controller.proc.poll() is not None or getattr(controller, "custom", False):
        controller.stop()
        controller.custom = False
        controller.start()
    return controller


def wait_default_sa(kube, ns, timeout=60):
    """Pods are refused until the namespace's `default` ServiceAccount exists
    (ServiceAccount admission), and the Job controller then retries pod
    creation with a backoff that doubles from 10 s: a test that creates
    JobSets before the serviceaccount controller caught up (the first test
    after `hack/cluster up`, while kube-controller-manager is still syncing)
    can lose a minute or more. Wait for it first."""
    wait_for(f"ServiceAccount {ns}/default", lambda: kube.get("serviceaccount", "default", ns), timeout)


@pytest.fixture
def ns(kube, request):
    name = f"e2e-{request.node.name[:30].lower().replace('_', '-').strip('-')}-{uuid.uuid4().hex[:5]}"
    name = "".join(ch for ch in name if ch.isalnum() or ch == "-")[:63].strip("-")
    kube.run("create", "namespace", name)
    wait_default_sa(kube, name)
    yield name
    kube.run("delete", "namespace", name, "--wait=false", check=False)


# ---- JobSet builders ----

def pod_template(annotations=None, restart_policy="Never"):
    return {
        "metadata": {"annotations": dict(annotations or {})},
        "spec": {"restartPolicy": restart_policy,
                 "containers": [{"name": "c", "image": "busybox", "command": ["true"]}]},
    }


def rjob(name, replicas=1, parallelism=1, completions=1, annotations=None, backoff_limit=0, **extra):
    r = {"name": name, "replicas": replicas,
         "template": {"spec": {"parallelism": parallelism, "completions": completions,
                               "backoffLimit": backoff_limit,
                               "template": pod_template(annotations)}}}
    r.update(extra)
    return r


def jobset(name, rjobs, **spec):
    s = {"replicatedJobs": rjobs}
    s.update(spec)
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": name}, "spec": s}


def wait_terminal(kube, name, ns, want, timeout=90):
    js = wait_for(f"jobset {ns}/{name} terminal", lambda: terminal(kube.jobset(name, ns)) and kube.jobset(name, ns),
                  timeout)
    assert terminal(js) == want, f"terminalState {terminal(js)}, want {want}: {json.dumps(js.get('status'))}"
    return js


def load_yaml(path):
    return [d for d in yaml.safe_load_all(Path(path).read_text()) if d]
