"""Least privilege, proven (issue 13 item 5), on hack/cluster.

* The controller of every cluster test runs as deploy/'s ServiceAccount with
  deploy/'s RBAC and nothing else (conftest.py); here: that identity and its
  bindings are exactly deploy/'s, deploy/'s rules are upstream's
  (sigs.k8s.io/jobset v0.12.0 config/components/rbac, read from the Go
  module cache) plus the one documented addition, and a ClusterRole with one
  verb removed makes the controller fail visibly - a Warning event, the
  error metrics, a log line, the API server's audit log - and work again
  once the verb is back. test_zz_audit.py checks, after every other test,
  that the API server refused the controller nothing.
* /metrics over HTTPS with TokenReview and SubjectAccessReview (SPEC §12.7):
  an authorised scrape works, no token or a bad token is 401, a token
  without the metrics-reader role is 403, a forged token is 401; plain HTTP
  gets nothing; repeated scrapes cost one review of each kind (the audit
  log counts them).
* TLS of the webhook and metrics servers: TLS 1.0 and 1.1 refused by the
  server, 1.2 and 1.3 served; a configured cipher list honoured (a cipher
  outside it refused); a TLS 1.3 minimum refuses 1.2.
* Modes: what hack/cluster writes for the controller's identity (token,
  kubeconfig) is 0600 in a 0700 directory even under umask 0; the state dir
  and its keys likewise. (The controller's cert dir: test_controller_webhooks.py.)
* Tokens never reach the controller's log, even at -v 10 with a token the
  API server refuses.
"""
import copy
import json
import os
import socket
import ssl
import stat
import subprocess
import uuid
import warnings
from pathlib import Path

import pytest
import yaml

from conftest import (CONTROLLER_SA, METRICS_NS, ROOT, SYSTEM_NS, Controller, _free_port, controller_kubeconfig,
                      ensure_sa, https_get, jobset, metrics_token, mint_token, rjob, upstream_module_dir, wait_for,
                      write_token_kubeconfig)

pytestmark = pytest.mark.skipif(not os.environ.get("JOBSET_TEST_KUBECONFIG"),
                                reason="JOBSET_TEST_KUBECONFIG unset: run hack/cluster up and eval hack/cluster env")

SA_USER = f"system:serviceaccount:{SYSTEM_NS}:{CONTROLLER_SA}"
# deploy/'s names for upstream's (kustomize namePrefix "jobset-").
ROLE_NAMES = {"jobset-manager-role": "manager-role", "jobset-leader-election-role": "leader-election-role",
              "jobset-manager-secrets-role": "manager-secrets-role", "jobset-proxy-role": "proxy-role",
              "jobset-metrics-reader": "metrics-reader"}
# What deploy/ grants beyond upstream (SPEC §12.9: the pod controller's
# DisruptionTarget write, missing upstream, also hang detection's
# ProgressDeadlineExceeded; KEP-969's Workload and PodGroups,
# merged upstream after v0.12.0) - nothing else.
OURS_ONLY = {("jobset-manager-role", "", "pods/status", "update")} | {
    ("jobset-manager-role", "scheduling.k8s.io", res, verb)
    for res in ("workloads", "podgroups") for verb in ("create", "delete", "get", "list")}
# Upstream binds its metrics-reader ClusterRole to the controller's own
# ServiceAccount (a scaffold leftover: the controller never scrapes
# itself); deploy/ leaves it for the scraper (docs/differences.md).
UPSTREAM_ONLY_BINDINGS = {("ClusterRole", "metrics-reader")}


def rendered(kube):
    """deploy/ as `kubectl kustomize` renders it (what a user installs)."""
    return [d for d in yaml.safe_load_all(kube.run("kustomize", str(ROOT / "deploy")).stdout) if d]


def grants(role):
    """A Role's rules as a set of (apiGroup, resource, verb) and
    ("nonResourceURL", url, verb)."""
    out = set()
    for r in role.get("rules") or []:
        for v in r["verbs"]:
            for url in r.get("nonResourceURLs") or []:
                out.add(("nonResourceURL", url, v))
            for g in r.get("apiGroups") or []:
                for res in r.get("resources") or []:
                    out.add((g, res, v))
    return out


def roles_of(docs):
    return {d["metadata"]["name"]: d for d in docs if d["kind"] in ("ClusterRole", "Role")}


def bindings_of(docs, sa_name):
    """(roleRef kind, roleRef name, binding namespace or None) of every
    binding that names ServiceAccount `sa_name`."""
    out = set()
    for d in docs:
        if d["kind"] not in ("ClusterRoleBinding", "RoleBinding"):
            continue
        if any(s.get("kind") == "ServiceAccount" and s.get("name") == sa_name for s in d.get("subjects") or []):
            out.add((d["roleRef"]["kind"], d["roleRef"]["name"], d["metadata"].get("namespace")))
    return out


def audit(user, pred=lambda e: True):
    """The API server's audit events of `user` (a ServiceAccount of
    jobset-system: hack/cluster's policy logs those) that satisfy `pred`."""
    path = Path(os.environ["JOBSET_TEST_AUDIT_LOG"])
    needle = f'"username":"{user}"'
    out = []
    for line in path.read_text().splitlines():
        if needle not in line:
            continue  # decode only the user's lines: the log is long
        e = json.loads(line)
        if e["user"]["username"] == user and pred(e):
            out.append(e)
    return out


# ---- the controller's identity and RBAC ----

def test_controller_runs_as_deploy_service_account(kube, ctl):
    assert ctl.kubeconfig == controller_kubeconfig()
    p = kube.run("auth", "whoami", "-o", "json", f"--kubeconfig={ctl.kubeconfig}")
    who = json.loads(p.stdout)["status"]["userInfo"]
    assert who["username"] == SA_USER, who
    assert "system:masters" not in who.get("groups", []), who
    # Nothing binds that ServiceAccount but deploy/'s own bindings.
    live = []
    for kind in ("clusterrolebindings", "rolebindings"):
        live += [dict(b, kind="ClusterRoleBinding" if kind == "clusterrolebindings" else "RoleBinding")
                 for b in json.loads(kube.run("get", kind, "-A", "-o", "json").stdout)["items"]]
    docs = rendered(kube)
    live_b = {(k, n, ns) for k, n, ns in bindings_of(live, CONTROLLER_SA)}
    assert live_b == bindings_of(docs, CONTROLLER_SA), live_b
    # And what those bindings grant is what deploy/ says.
    items = json.loads(kube.run("get", "clusterroles,roles", "-A", "-o", "json").stdout)["items"]
    live_roles = {(r["kind"], r["metadata"]["name"], r["metadata"].get("namespace")): r for r in items}
    for name, role in roles_of(docs).items():
        key = (role["kind"], name, SYSTEM_NS if role["kind"] == "Role" else None)
        assert key in live_roles and grants(live_roles[key]) == grants(role), name
    # The controller's requests reach the API server as that identity.
    mine = audit(SA_USER, lambda e: e["userAgent"].startswith("jobset-controller/"))
    assert mine, "no request of the controller in the audit log"


def test_rbac_is_upstreams(kube):
    ours_docs = rendered(kube)
    ours = roles_of(ours_docs)
    up_dir = upstream_module_dir() / "config" / "components" / "rbac"
    up_kust = yaml.safe_load((up_dir / "kustomization.yaml").read_text())
    up_docs = [d for f in up_kust["resources"] for d in yaml.safe_load_all((up_dir / f).read_text()) if d]
    up = roles_of(up_docs)
    extra, missing = set(), set()
    for name, up_name in ROLE_NAMES.items():
        assert name in ours and up_name in up, (name, up_name)
        assert ours[name]["kind"] == up[up_name]["kind"], name
        if ours[name]["kind"] == "Role":
            assert ours[name]["metadata"]["namespace"] == SYSTEM_NS
        o, u = grants(ours[name]), grants(up[up_name])
        extra |= {(name, *g) for g in o - u}
        missing |= {(name, *g) for g in u - o}
    assert extra == OURS_ONLY, f"deploy/ grants more than upstream: {sorted(extra - OURS_ONLY)}"
    assert not missing, f"deploy/ grants less than upstream: {sorted(missing)}"
    # No other role in deploy/.
    assert set(ours) == set(ROLE_NAMES), set(ours) - set(ROLE_NAMES)
    # The same bindings to the controller's ServiceAccount, but one.
    ours_b = {(k, ROLE_NAMES[n]) for k, n, _ in bindings_of(ours_docs, CONTROLLER_SA)}
    up_b = {(k, n) for k, n, _ in bindings_of(up_docs, "controller-manager")}
    assert up_b - ours_b == UPSTREAM_ONLY_BINDINGS and not ours_b - up_b, (up_b, ours_b)


@pytest.fixture
def probe_identity(kube, tmp_path):
    """A ServiceAccount in jobset-system with every binding deploy/ gives
    the controller's, except that jobset-manager-role is replaced by a copy
    without `create` on batch/jobs. Yields (kubeconfig, username,
    ClusterRole name, the full rules)."""
    pid = uuid.uuid4().hex[:6]
    sa, role = f"rbac-probe-{pid}", f"jobset-rbac-probe-{pid}"
    docs = rendered(kube)
    full = roles_of(docs)["jobset-manager-role"]
    reduced = copy.deepcopy(full)
    removed = 0
    for r in reduced["rules"]:
        if r.get("apiGroups") == ["batch"] and r.get("resources") == ["jobs"] and "create" in r["verbs"]:
            r["verbs"].remove("create")
            removed += 1
    assert removed == 1, "deploy/'s manager role has no create on batch/jobs to remove"
    reduced["metadata"] = {"name": role}
    ensure_sa(kube, sa, SYSTEM_NS)
    kube.apply(reduced)
    made = []
    for kind, ref, bns in sorted(bindings_of(docs, CONTROLLER_SA), key=str):
        name = f"{ref}-{pid}"
        ref = role if ref == "jobset-manager-role" else ref
        if kind == "ClusterRole" and bns is None:
            kube.run("create", "clusterrolebinding", name, f"--clusterrole={ref}", f"--serviceaccount={SYSTEM_NS}:{sa}")
            made.append(("clusterrolebinding", name, None))
        else:
            flag = "--clusterrole" if kind == "ClusterRole" else "--role"
            kube.run("create", "rolebinding", name, f"{flag}={ref}", f"--serviceaccount={SYSTEM_NS}:{sa}", "-n", bns)
            made.append(("rolebinding", name, bns))
    assert len(made) == len(bindings_of(docs, CONTROLLER_SA)) >= 4, made
    kc = write_token_kubeconfig(tmp_path / "probe.kubeconfig", mint_token(kube, sa, SYSTEM_NS))
    yield kc, f"system:serviceaccount:{SYSTEM_NS}:{sa}", role, full["rules"]
    for kind, name, bns in made:
        kube.run("delete", kind, name, *(["-n", bns] if bns else []), "--ignore-not-found", check=False)
    kube.run("delete", "clusterrole", role, "--ignore-not-found", check=False)
    kube.run("delete", "serviceaccount", sa, "-n", SYSTEM_NS, "--ignore-not-found", check=False)


def test_missing_verb_fails_visibly(kube, controller, ns, tmp_path, probe_identity):
    kc, user, role, full_rules = probe_identity
    # One controller at a time reconciles: the session one steps aside.
    controller.stop()
    c = Controller(kube, SYSTEM_NS, f"rbac-probe-{uuid.uuid4().hex[:6]}", tmp_path, kubeconfig=kc)
    try:
        c.start()
        kube.create(jobset("js-forbidden", [rjob("r", 2)]), ns)

        def refused():
            evs = [e for e in kube.events(ns, "JobCreationFailed") if e.get("type") == "Warning"]
            return evs if evs and "forbidden" in evs[0].get("note", "") else None
        ev = wait_for("a JobCreationFailed Warning saying forbidden", refused, 60)[0]
        assert f'User "{user}" cannot create resource "jobs"' in ev["note"], ev["note"]
        assert ev["regarding"]["name"] == "js-forbidden"
        assert kube.jobs(ns, "js-forbidden") == []
        m = c.metrics()
        assert 'jobset_controller_actions_total{action="CreateJob",result="error"}' in m
        assert 'rest_client_requests_total{method="POST",code="403"}' in m
        assert f'User "{user}" cannot create resource "jobs"' in c.log.read_text()
        denied = audit(user, lambda e: e["verb"] == "create" and e.get("objectRef", {}).get("resource") == "jobs" and
                       e["responseStatus"]["code"] == 403)
        assert denied, "the API server's audit log shows no refused create of jobs"
        # The verb back, nothing else changed: the same controller creates
        # the Jobs on its next retry.
        kube.apply({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                    "metadata": {"name": role}, "rules": full_rules})
        wait_for("both Jobs once create is granted", lambda: len(kube.jobs(ns, "js-forbidden")) == 2, 120)
    finally:
        assert c.stop() == 0
        controller.start()


# ---- /metrics: TokenReview and SubjectAccessReview ----

def test_metrics_authn_authz(kube, ctl, tmp_path):
    port = ctl.metrics_port
    code, body = https_get(port, "metrics", metrics_token(kube))
    assert code == 200 and "# TYPE jobset_completed_total counter" in body, (code, body[:200])
    assert https_get(port, "metrics") == (401, "Unauthorized\n")
    assert https_get(port, "metrics", "not-a-token") == (401, "Unauthorized\n")
    # A real token with its signature changed: a forgery, not a user.
    ensure_sa(kube, "metrics-nobody", METRICS_NS)
    real = mint_token(kube, "metrics-nobody", METRICS_NS)
    head, payload, sig = real.split(".")
    forged = ".".join([head, payload, sig[:-4] + ("AAAA" if not sig.endswith("AAAA") else "BBBB")])
    assert https_get(port, "metrics", forged) == (401, "Unauthorized\n")
    # Authenticated, but not bound to jobset-metrics-reader.
    code, body = https_get(port, "metrics", real)
    assert code == 403, (code, body)
    assert body == f"Authorization denied for user system:serviceaccount:{METRICS_NS}:metrics-nobody\n"
    assert "jobset_" not in body
    # Plain HTTP on the metrics port gets no metrics; the probes stay plain.
    code, body = ctl.http("metrics", port)
    assert code != 200 and "jobset_" not in body, (code, body[:200])
    assert ctl.http("healthz") == (200, "ok\n")
    # Repeated scrapes with one token: one TokenReview and one
    # SubjectAccessReview (the cache), whatever the number of scrapes.
    fresh = mint_token(kube, "metrics-reader", METRICS_NS)

    def reviews():
        ev = audit(SA_USER, lambda e: e["verb"] == "create" and
                   e.get("objectRef", {}).get("resource") in ("tokenreviews", "subjectaccessreviews"))
        return (sum(e["objectRef"]["resource"] == "tokenreviews" for e in ev),
                sum(e["objectRef"]["resource"] == "subjectaccessreviews" for e in ev))
    t0, s0 = reviews()
    for _ in range(5):
        assert https_get(port, "metrics", fresh)[0] == 200
    t1, s1 = reviews()
    assert (t1 - t0, s1 - s0) == (1, 1), ((t0, s0), (t1, s1))


# ---- TLS of the webhook and metrics servers ----

def handshake(port, version, ciphers=None):
    """One handshake at exactly TLS `version` (and, for TLS 1.2, only
    `ciphers`). Returns the negotiated cipher name, or the reason of the
    server's refusal (an alert this client received)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    # Security level 0 so that this client offers TLS 1.0/1.1 at all: the
    # refusal must be the server's.
    ctx.set_ciphers((ciphers or "ALL") + ":@SECLEVEL=0")
    with warnings.catch_warnings():
        # TLS 1.0/1.1 are deprecated in Python too: offering them is the point.
        warnings.simplefilter("ignore", DeprecationWarning)
        ctx.minimum_version = ctx.maximum_version = version
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
            with ctx.wrap_socket(raw) as tls:
                return tls.cipher()[0]
    except ssl.SSLError as e:
        return e.reason


@pytest.fixture
def standby_lease(kube, tmp_path):
    """A Lease in jobset-system held by a placeholder for an hour: a
    controller running for it stands by (serves webhooks and metrics,
    never reconciles beside the session controller). Its name."""
    from webhook_common import WebhookHost
    host = WebhookHost(kube, tmp_path)
    host.hold_lease()
    yield host.lease
    kube.run("delete", "lease", host.lease, "-n", SYSTEM_NS, "--ignore-not-found", check=False)


@pytest.fixture
def tls_host(kube, tmp_path, standby_lease):
    """A standby jobset-controller (its Lease held by a placeholder) serving
    the webhooks with hack/cluster's certificate (ECDSA) and /metrics, with
    flags of the test's choosing."""
    from webhook_common import LEASE_HOLDER
    hosts = []

    def start(*flags):
        for h in hosts:
            assert h.stop() in (0, None)
        wp = _free_port()
        c = Controller(kube, SYSTEM_NS, standby_lease, tmp_path, webhooks=True)
        c.start("--cert-management=none", f"--webhook-cert-dir={os.environ['JOBSET_TEST_WEBHOOK_CERT_DIR']}",
                "--webhook-host=127.0.0.1", f"--webhook-port={wp}", *flags, wait_leader=False)
        assert c.leader() == LEASE_HOLDER
        c.webhook_port = wp
        hosts.append(c)
        # /readyz waited for the webhook server to serve its certificate.
        return c
    yield start
    for h in hosts:
        assert h.stop() in (0, None)


def test_tls_versions_and_ciphers(tls_host):
    v = ssl.TLSVersion
    c = tls_host("--tls-cipher-suites=TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256")
    for port in (c.webhook_port, c.metrics_port):
        assert handshake(port, v.TLSv1) == "TLSV1_ALERT_PROTOCOL_VERSION", port
        assert handshake(port, v.TLSv1_1) == "TLSV1_ALERT_PROTOCOL_VERSION", port
        assert handshake(port, v.TLSv1_2) == "ECDHE-ECDSA-AES128-GCM-SHA256", port
        assert handshake(port, v.TLSv1_3).startswith("TLS_"), port
        # Outside the configured list: refused, though the key could serve it.
        assert handshake(port, v.TLSv1_2, "ECDHE-ECDSA-AES256-GCM-SHA384") == "SSLV3_ALERT_HANDSHAKE_FAILURE", port
        assert handshake(port, v.TLSv1_2, "ECDHE-ECDSA-CHACHA20-POLY1305") == "SSLV3_ALERT_HANDSHAKE_FAILURE", port
    # Without a list OpenSSL's defaults serve the other ciphers too.
    c = tls_host()
    for port in (c.webhook_port, c.metrics_port):
        assert handshake(port, v.TLSv1_2, "ECDHE-ECDSA-AES256-GCM-SHA384") == "ECDHE-ECDSA-AES256-GCM-SHA384"
        assert handshake(port, v.TLSv1_1) == "TLSV1_ALERT_PROTOCOL_VERSION"
    # A TLS 1.3 minimum (upstream's tls.minVersion: VersionTLS13).
    c = tls_host("--tls-min-version=VersionTLS13")
    for port in (c.webhook_port, c.metrics_port):
        assert handshake(port, v.TLSv1_2) == "TLSV1_ALERT_PROTOCOL_VERSION", port
        assert handshake(port, v.TLSv1_3).startswith("TLS_"), port
    # An unknown cipher name stops the controller at start, as upstream.
    p = subprocess.run([str(ROOT / "build" / "jobset-controller") if not os.environ.get("JOBSET_CONTROLLER_BIN")
                        else os.environ["JOBSET_CONTROLLER_BIN"], f"--kubeconfig={controller_kubeconfig()}",
                        "--tls-cipher-suites=TLS_NOPE", "--metrics-bind-address=0",
                        "--health-probe-bind-address=0"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 1 and 'invalid cipher suites: unknown or unsupported cipher suite "TLS_NOPE"' in p.stderr, \
        p.stderr


# ---- modes of what we write ----

def test_identity_files_private(kube, tmp_path):
    out = tmp_path / "sa"
    p = subprocess.run([str(ROOT / "hack" / "cluster"), "controller-sa", "--out", str(out)],
                       capture_output=True, text=True, timeout=120, preexec_fn=lambda: os.umask(0))
    assert p.returncode == 0, p.stderr
    assert stat.S_IMODE(out.stat().st_mode) == 0o700
    for f in ("controller-sa.token", "controller-sa.kubeconfig"):
        assert stat.S_IMODE((out / f).stat().st_mode) == 0o600, f
    # The kubeconfig works, as the controller's ServiceAccount.
    who = json.loads(kube.run("auth", "whoami", "-o", "json", f"--kubeconfig={out / 'controller-sa.kubeconfig'}").stdout)
    assert who["status"]["userInfo"]["username"] == SA_USER
    # The state dir of hack/cluster, its keys and kubeconfigs.
    state = Path(os.environ["JOBSET_CLUSTER_DIR"])
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    private = [state / "kubeconfig", state / "controller-sa.kubeconfig", state / "controller-sa.token",
               *sorted((state / "pki").glob("*.key")), state / "pki" / "webhook" / "tls.key"]
    for f in private:
        assert stat.S_IMODE(f.stat().st_mode) == 0o600, f
    for d in (state / "pki", state / "logs"):
        assert stat.S_IMODE(d.stat().st_mode) == 0o700, d


# ---- tokens never logged ----

def test_tokens_never_logged(kube, tmp_path, standby_lease):
    """A token the API server refuses (a forged signature) at -v 10: the
    controller says why its caches do not sync, and the token is nowhere in
    its log. A scrape with a valid token, likewise."""
    real = mint_token(kube, CONTROLLER_SA, SYSTEM_NS, "10m")
    head, payload, sig = real.split(".")
    forged = ".".join([head, payload, sig[::-1]])
    kc = write_token_kubeconfig(tmp_path / "forged.kubeconfig", forged)
    c = Controller(kube, SYSTEM_NS, f"forged-{uuid.uuid4().hex[:6]}", tmp_path, kubeconfig=kc)
    try:
        c.start("-v", "10", "--leader-elect=false", wait_ready=False, wait_leader=False)
        wait_for("the controller saying its cache cannot list",
                 lambda: "cache of jobsets: list failed" in c.log.read_text() or c._died(), 30)
        assert c.http("readyz")[0] == 503
    finally:
        c.stop()
    text = c.log.read_text()
    assert "Unauthorized" in text, text[-2000:]
    for t in (forged, sig, sig[::-1], real):
        assert t not in text
    # A valid token on a scrape at -v 10.
    c2 = Controller(kube, SYSTEM_NS, standby_lease, tmp_path)
    try:
        c2.start("-v", "10", wait_leader=False)
        tok = metrics_token(kube)
        assert https_get(c2.metrics_port, "metrics", tok)[0] == 200
        assert https_get(c2.metrics_port, "metrics", forged)[0] == 401
    finally:
        assert c2.stop() == 0
    text = c2.log.read_text()
    assert "metrics: 401 Unauthorized" in text
    for t in (tok, forged, Path(os.environ["JOBSET_TEST_CONTROLLER_TOKEN_FILE"]).read_text().strip()):
        assert t not in text
