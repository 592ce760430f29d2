"""Helpers for the webhook e2e tests (tests/e2e/cluster/test_webhook_*.py).

WebhookHost runs the shipped build/jobset-controller out of cluster with its
admission webhooks on 127.0.0.1 and the serving certificate `hack/cluster`
made for them ($JOBSET_TEST_WEBHOOK_CERT_DIR, signed by the cluster CA;
--cert-management=none), and registers the four admission webhooks against
https://127.0.0.1:<port>/... with the CA as caBundle. The registrations only
match namespaces labelled with this run's id, so nothing else on the cluster
(the controller tests) ever goes through them, and they are deleted on
teardown.

The process under test is a standby replica: it runs for a Lease that a
placeholder holder keeps for an hour, so it serves admission (every replica
does, leader or not, SPEC §12) and never reconciles. JobSets the tests create
are reconciled by the session controller when one runs, as before, and never
by two controllers at once. Every wait polls a condition with a deadline.
"""
import base64
import datetime
import json
import os
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

from conftest import SYSTEM_NS, Controller, _free_port

ROOT = Path(__file__).resolve().parents[3]
POLL_S = 0.2


def wait_until(what, fn, timeout=60.0):
    deadline = time.monotonic() + timeout
    last = None
    while True:
        last = fn()
        if last:
            return last
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}; last: {last!r}")
        time.sleep(POLL_S)


def build_dir():
    b = os.environ.get("JOBSET_BIN")
    return Path(b).resolve().parent if b else ROOT / "build"


def binary(name, env_var):
    """A binary of our build: $env_var, else <build>/<name>, built first
    when the build tree is a ninja or make tree."""
    b = os.environ.get(env_var)
    if b:
        return Path(b)
    d = build_dir()
    if (d / "build.ninja").exists() or (d / "Makefile").exists():
        subprocess.run(["cmake", "--build", str(d), "--target", name], check=True, capture_output=True)
    p = d / name
    if not p.exists():
        raise AssertionError(f"{p} missing: build it (cmake --build {d} --target {name})")
    return p


# The standby's Lease: in the session controller's namespace (deploy/'s
# leader-election Role holds there only), held by a placeholder for longer
# than any run.
LEASE_NS = SYSTEM_NS
LEASE_HOLDER = "webhook-e2e-placeholder"


class WebhookHost:
    def __init__(self, kube, logdir):
        self.kube = kube
        self.run_id = uuid.uuid4().hex[:8]
        self.label = ("jobset-webhook-e2e", self.run_id)
        self.logdir = Path(logdir)
        self.ctl = None
        self.lease = f"jobset-webhook-e2e-{self.run_id}"
        self.names = (f"jobset-e2e-mutating-{self.run_id}", f"jobset-e2e-validating-{self.run_id}")

    def start(self):
        cert_dir = os.environ.get("JOBSET_TEST_WEBHOOK_CERT_DIR")
        assert cert_dir, "JOBSET_TEST_WEBHOOK_CERT_DIR unset (hack/cluster env)"
        self.hold_lease()
        self.port = _free_port()
        self.ctl = Controller(self.kube, LEASE_NS, self.lease, self.logdir, webhooks=True)
        # Controller.start waits for /readyz: caches synced and the webhook
        # server serving the certificate.
        self.args = ("--cert-management=none", f"--webhook-cert-dir={cert_dir}", "--webhook-host=127.0.0.1",
                     f"--webhook-port={self.port}")
        self.ctl.start(*self.args, wait_leader=False)
        self.log = self.ctl.log
        assert self.ctl.leader() == LEASE_HOLDER, "the webhook host must stand by, not reconcile"
        ctx = ssl.create_default_context(cafile=os.environ["JOBSET_TEST_CA"])
        wait_until("webhook TLS handshake verified with the cluster CA", lambda: self._handshake(ctx), 30)
        self.register()
        return self

    def restart(self, *extra):
        """The same host on the same port, with `extra` flags (e.g.
        --exclusive-placement=webhook); the registrations stay."""
        self.ctl.stop()
        self.ctl.start(*self.args, *extra, wait_leader=False)

    def hold_lease(self):
        now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                 "metadata": {"name": self.lease, "namespace": LEASE_NS},
                 "spec": {"holderIdentity": LEASE_HOLDER, "leaseDurationSeconds": 3600,
                          "acquireTime": now, "renewTime": now}}
        self.kube.run("create", "namespace", LEASE_NS, check=False)
        self.kube.run("create", "-f", "-", input=json.dumps(lease))

    def _handshake(self, ctx):
        if self.ctl.proc.poll() is not None:
            raise AssertionError(f"jobset-controller exited {self.ctl.proc.returncode}: "
                                 f"{self.log.read_text()[-2000:]}")
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=2) as raw:
                with ctx.wrap_socket(raw, server_hostname="127.0.0.1"):
                    return True
        except OSError:
            return False

    def url(self, path):
        return f"https://127.0.0.1:{self.port}{path}"

    def register(self):
        ca = base64.b64encode(Path(os.environ["JOBSET_TEST_CA"]).read_bytes()).decode()
        sel = {"matchLabels": {self.label[0]: self.label[1]}}

        def hook(name, path, group, version, resource, ops, pods):
            h = {"name": name, "admissionReviewVersions": ["v1"], "sideEffects": "None",
                 "failurePolicy": "Fail", "timeoutSeconds": 10, "namespaceSelector": sel,
                 "clientConfig": {"url": self.url(path), "caBundle": ca},
                 "rules": [{"apiGroups": [group], "apiVersions": [version], "operations": ops,
                            "resources": [resource]}]}
            if pods:
                h["objectSelector"] = {"matchExpressions": [
                    {"key": "jobset.sigs.k8s.io/jobset-name", "operator": "Exists"}]}
            return h

        mutating = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
                    "metadata": {"name": self.names[0]},
                    "webhooks": [hook("mjobset.kb.io", "/mutate-jobset-x-k8s-io-v1alpha2-jobset",
                                      "jobset.x-k8s.io", "v1alpha2", "jobsets", ["CREATE"], False),
                                 hook("mpod.kb.io", "/mutate--v1-pod", "", "v1", "pods", ["CREATE"], True)]}
        validating = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
                      "metadata": {"name": self.names[1]},
                      "webhooks": [hook("vjobset.kb.io", "/validate-jobset-x-k8s-io-v1alpha2-jobset",
                                        "jobset.x-k8s.io", "v1alpha2", "jobsets", ["CREATE", "UPDATE"], False),
                                   hook("vpod.kb.io", "/validate--v1-pod", "", "v1", "pods", ["CREATE"], True)]}
        for obj in (mutating, validating):
            self.kube.run("apply", "--server-side", "-f", "-", input=json.dumps(obj))

    def namespace(self, name):
        """Create a namespace the registrations apply to, and wait until the
        API server's webhook cache has picked them up (a dry-run create comes
        back defaulted)."""
        self.kube.run("create", "namespace", name)
        self.kube.run("label", "namespace", name, f"{self.label[0]}={self.label[1]}")
        probe = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "probe"},
                 "spec": {"replicatedJobs": []}}

        last = {}

        def defaulted():
            p = self.kube.run("create", "--dry-run=server", "-n", name, "-o", "json", "-f", "-",
                              input=json.dumps(probe), check=False)
            last["stderr"] = p.stderr
            return p.returncode == 0 and "successPolicy" in json.loads(p.stdout).get("spec", {})
        try:
            wait_until("webhooks active in " + name, defaulted, 60)
        except AssertionError as e:
            raise AssertionError(f"{e}; kubectl: {last.get('stderr')!r}; webhook log: "
                                 f"{self.log.read_text()[-2000:]!r}") from None
        return name

    def stop(self):
        """Delete the registrations, then SIGTERM the controller; its exit
        status (None when it had to be killed)."""
        for kind, name in zip(("mutatingwebhookconfiguration", "validatingwebhookconfiguration"), self.names):
            self.kube.run("delete", kind, name, "--ignore-not-found", check=False)
        rc = None
        if self.ctl and self.ctl.proc:
            rc = self.ctl.stop(timeout=20)
        self.kube.run("delete", "lease", self.lease, "-n", LEASE_NS, "--ignore-not-found", check=False)
        return rc


def jobset(name, rjobs=None, **spec):
    s = {"replicatedJobs": rjobs if rjobs is not None else [rjob("rj")]}
    s.update(spec)
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": name}, "spec": s}


def rjob(name, replicas=None, job_spec=None, pod_spec=None, **extra):
    pod = {"containers": [{"name": "c", "image": "busybox"}]}
    pod.update(pod_spec or {})
    spec = {"template": {"spec": pod}}
    spec.update(job_spec or {})
    r = {"name": name, "template": {"spec": spec}}
    if replicas is not None:
        r["replicas"] = replicas
    r.update(extra)
    return r


def api_post(path, obj):
    """POST `obj` to the API server as the admin (client certificate), so a
    test sees the raw Status of a rejection rather than kubectl's rendering.
    Returns (HTTP code, decoded body)."""
    ctx = ssl.create_default_context(cafile=os.environ["JOBSET_TEST_CA"])
    ctx.load_cert_chain(os.environ["JOBSET_TEST_CLIENT_CERT"], os.environ["JOBSET_TEST_CLIENT_KEY"])
    req = urllib.request.Request(os.environ["JOBSET_TEST_SERVER"] + path, data=json.dumps(obj).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())
