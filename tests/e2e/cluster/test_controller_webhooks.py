"""jobset-controller hosting the admission webhooks with internal certificate
management (SPEC §12.5, docs/controller.md "Webhooks"), out of cluster on
hack/cluster.

The test registers deploy/webhook/manifests.yaml's two configurations under
names of its own, rewritten from the in-cluster Service to
`url: https://127.0.0.1:<port>/...` with an empty caBundle, and scoped to
namespaces labelled with this run's id (nothing else on the cluster goes
through them). The controller runs with --cert-management=internal and
deploy/'s RBAC: as deploy/ does, the test creates the empty Secret in
jobset-system (the Role grants get/list/update/watch on secrets there, not
create), and the controller must fill it, write the serving pair to its cert
dir (0700, files 0600, under umask 0), fill both caBundles, and then admit,
default, reject and reconcile JobSets itself. kubectl is the independent
client; every wait polls with a deadline.
"""
import base64
import json
import os
import socket
import ssl
import stat
import uuid
from pathlib import Path

import pytest
import yaml

from conftest import SYSTEM_NS, Controller, condition, wait_for, wait_terminal
from webhook_common import api_post

ROOT = Path(__file__).resolve().parents[3]
TOPO = "topology.kubernetes.io/zone"

pytestmark = pytest.mark.skipif(not os.environ.get("JOBSET_TEST_KUBECONFIG"),
                                reason="JOBSET_TEST_KUBECONFIG unset: run hack/cluster up and eval hack/cluster env")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Setup:
    def __init__(self, kube, tmp):
        self.kube = kube
        self.id = uuid.uuid4().hex[:6]
        self.label = ("jobset-controller-webhooks-e2e", self.id)
        self.system_ns = SYSTEM_NS
        self.secret = f"jobset-webhook-server-cert-{self.id}"
        self.service = "jobset-webhook-service"
        self.port = _free_port()
        self.cert_dir = Path(tmp) / "certs"
        self.configs = {}  # kind -> name

    def register(self):
        """deploy/'s configurations, renamed, pointed at 127.0.0.1 and with
        an empty caBundle, only for namespaces with our label."""
        docs = [d for d in yaml.safe_load_all((ROOT / "deploy/webhook/manifests.yaml").read_text()) if d]
        assert {d["kind"] for d in docs} == {"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}
        for d in docs:
            d["metadata"]["name"] = f'{d["metadata"]["name"]}-{self.id}'
            for h in d["webhooks"]:
                path = h["clientConfig"]["service"]["path"]
                h["clientConfig"] = {"url": f"https://127.0.0.1:{self.port}{path}", "caBundle": ""}
                h["namespaceSelector"] = {"matchLabels": {self.label[0]: self.label[1]}}
                h["timeoutSeconds"] = 10
            self.kube.run("create", "-f", "-", input=json.dumps(d))
            self.configs[d["kind"]] = d["metadata"]["name"]

    def config(self, kind):
        return json.loads(self.kube.run("get", kind, self.configs[kind], "-o", "json").stdout)

    def namespace(self, name):
        self.kube.run("create", "namespace", name)
        self.kube.run("label", "namespace", name, f"{self.label[0]}={self.label[1]}")
        wait_for(f"ServiceAccount {name}/default", lambda: self.kube.get("serviceaccount", "default", name))
        return name

    def create_secret(self):
        """The empty Secret, as deploy/webhook/secret.yaml has it."""
        sec = {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
               "metadata": {"name": self.secret, "namespace": self.system_ns}}
        self.kube.run("create", "-f", "-", input=json.dumps(sec))

    def start_controller(self, lease, umask=None, extra=()):
        """Our controller with its webhooks and internal certificate
        management, serving the configurations register() made (the empty
        Secret and both registrations first); `self.ctl`, once both
        caBundles are filled. For the clients' tests (Kueue, Trainer) too."""
        self.kube.run("create", "namespace", self.system_ns, check=False)
        self.create_secret()
        self.register()
        self.args = ("--cert-management=internal", f"--cert-namespace={self.system_ns}",
                     f"--webhook-secret-name={self.secret}", "--webhook-host=127.0.0.1", f"--webhook-port={self.port}",
                     f"--webhook-cert-dir={self.cert_dir}",
                     f"--mutating-webhook-configuration={self.configs['MutatingWebhookConfiguration']}",
                     f"--validating-webhook-configuration={self.configs['ValidatingWebhookConfiguration']}",
                     "--cert-extra-sans=127.0.0.1", "--cert-check-interval=2s")
        self.ctl = Controller(self.kube, self.system_ns, lease, self.cert_dir.parent, webhooks=True)
        self.ctl.start(*self.args, *extra, umask=umask)
        wait_for("our caBundles", lambda: all(self.config(k)["webhooks"][0]["clientConfig"].get("caBundle")
                                              for k in self.configs), 60)
        return self.ctl

    def stop_controller(self):
        """SIGTERM the controller, remove what start_controller made; its
        exit status."""
        rc = self.ctl.stop()
        self.cleanup()
        return rc

    def cleanup(self):
        for kind, name in self.configs.items():
            self.kube.run("delete", kind, name, "--ignore-not-found", check=False)
        self.kube.run("delete", "secret", self.secret, "-n", self.system_ns, "--ignore-not-found", check=False)


@pytest.fixture(scope="module")
def setup(kube, crd, controller, tmp_path_factory):
    # One controller at a time reconciles: the session controller steps
    # aside (the `ctl` fixture restarts it for later tests).
    controller.stop()
    tmp = tmp_path_factory.mktemp("controller-webhooks")
    s = Setup(kube, tmp)
    # umask 0: the modes of what it writes are its own, not the umask's.
    s.start_controller(f"jobset-whc-{s.id}", umask=0)
    yield s
    rc = s.stop_controller()
    assert rc == 0, f"controller exit status {rc} on SIGTERM; log {s.ctl.log}"


def secret_certs(kube, s):
    sec = kube.get("secret", s.secret, s.system_ns)
    data = (sec or {}).get("data") or {}
    return {k: base64.b64decode(v).decode() for k, v in data.items()}


def test_secret_cert_dir_and_ca_bundles(kube, setup):
    s = setup
    certs = wait_for("Secret with ca.crt, ca.key, tls.crt, tls.key",
                     lambda: (lambda c: c if set(c) == {"ca.crt", "ca.key", "tls.crt", "tls.key"} else None)(
                         secret_certs(kube, s)), 30)
    # /readyz was 200 (Controller.start waited), so the pair is in the cert dir.
    assert (s.cert_dir / "tls.crt").read_text() == certs["tls.crt"]
    assert (s.cert_dir / "tls.key").read_text() == certs["tls.key"]
    # Created by the controller under umask 0: the dir 0700, every file 0600.
    assert stat.S_IMODE(s.cert_dir.stat().st_mode) == 0o700, oct(s.cert_dir.stat().st_mode)
    for f in ("tls.crt", "tls.key", "ca.crt"):
        assert stat.S_IMODE((s.cert_dir / f).stat().st_mode) == 0o600, (f, oct((s.cert_dir / f).stat().st_mode))
    want = base64.b64encode(certs["ca.crt"].encode()).decode()

    def bundles():
        got = [h["clientConfig"].get("caBundle") for kind in s.configs for h in s.config(kind)["webhooks"]]
        return got if len(got) == 4 and all(b == want for b in got) else None
    wait_for("caBundle of all four webhooks = the Secret's ca.crt", bundles, 30)

    # The server presents that certificate: it verifies against the Secret's
    # CA for 127.0.0.1 (the extra SAN) and names the in-cluster Service.
    ctx = ssl.create_default_context(cadata=certs["ca.crt"])
    with socket.create_connection(("127.0.0.1", s.port), timeout=5) as raw:
        with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            peer = tls.getpeercert()
    sans = {v for k, v in peer["subjectAltName"]}
    assert {f"{s.service}.{s.system_ns}.svc", f"{s.service}.{s.system_ns}.svc.cluster.local",
            "127.0.0.1"} <= sans, sans
    issuer = dict(x[0] for x in peer["issuer"])
    assert issuer == {"organizationName": "jobset", "commonName": "jobset-ca"}


def test_defaulted_rejected_and_completed(kube, setup):
    s = setup
    ns = s.namespace(f"whc-{s.id}")
    rj = {"name": "workers", "replicas": 1,
          "template": {"spec": {"parallelism": 2, "completions": 2, "backoffLimit": 0,
                                "template": {"metadata": {"annotations": {
                                    "alpha.jobset.sigs.k8s.io/exclusive-topology": TOPO}},
                                             "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}}
    js = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "hooked"},
          "spec": {"replicatedJobs": [rj]}}
    last = {}

    def create():
        p = kube.run("create", "-n", ns, "-o", "json", "-f", "-", input=json.dumps(js), check=False)
        last["err"] = p.stderr
        return json.loads(p.stdout) if p.returncode == 0 else None
    # The API server's webhook configuration cache may lag the registration.
    obj = wait_for("JobSet created through the webhooks", create, 60)
    spec = obj["spec"]
    job = spec["replicatedJobs"][0]["template"]["spec"]
    assert job["completionMode"] == "Indexed"
    assert job["template"]["spec"]["restartPolicy"] == "OnFailure"
    assert spec["successPolicy"] == {"operator": "All"}
    assert spec["startupPolicy"] == {"startupPolicyOrder": "AnyOrder"}
    assert spec["network"] == {"enableDNSHostnames": True, "publishNotReadyAddresses": True}
    assert spec["replicatedJobs"][0]["groupName"] == "default"

    bad = json.loads(json.dumps(js))
    bad["metadata"]["name"] = "bad"
    # A name the CRD schema lets through and our validation does not (WH-040).
    bad["spec"]["replicatedJobs"][0]["name"] = "username.llama65b"
    p = kube.run("create", "-n", ns, "-f", "-", input=json.dumps(bad), check=False)
    assert p.returncode != 0, "a dotted replicatedJob name was accepted"
    assert "spec.replicatedJobs[0].name" in p.stderr and "DNS-1035" in p.stderr, p.stderr
    # The raw answer names our webhook and carries the field path as a cause.
    code, status = api_post(f"/apis/jobset.x-k8s.io/v1alpha2/namespaces/{ns}/jobsets", bad)
    assert code == 422, status
    assert status["message"].startswith('admission webhook "vjobset.kb.io" denied the request'), status
    assert "spec.replicatedJobs[0].name" in {c.get("field") for c in status["details"]["causes"]}, status
    assert kube.jobset("bad", ns) is None

    # The same controller reconciles it; the pods went through mpod/vpod,
    # whose lookups (pods by label, the leader's node) are the controller's.
    done = wait_terminal(kube, "hooked", ns, "Completed", timeout=150)
    assert condition(done, "Completed")
    pods = kube.list("pods", ns, "jobset.sigs.k8s.io/jobset-name=hooked")
    by_index = {p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"]: p for p in pods
                if p["status"].get("phase") == "Succeeded"}
    assert set(by_index) == {"0", "1"}, [p["metadata"]["name"] for p in pods]
    leader, follower = by_index["0"], by_index["1"]
    assert leader["spec"]["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0][
        "topologyKey"] == TOPO
    node = json.loads(kube.run("get", "node", leader["spec"]["nodeName"], "-o", "json").stdout)
    assert follower["spec"]["nodeSelector"] == {TOPO: node["metadata"]["labels"][TOPO]}
    kube.run("delete", "namespace", ns, "--wait=false", check=False)


def test_ca_bundle_restored_after_reset(kube, setup):
    s = setup
    kind = "ValidatingWebhookConfiguration"
    want = s.config(kind)["webhooks"][0]["clientConfig"]["caBundle"]
    assert want
    patch = [{"op": "replace", "path": "/webhooks/0/clientConfig/caBundle", "value": ""}]
    kube.run("patch", kind, s.configs[kind], "--type=json", "-p", json.dumps(patch))
    wait_for("caBundle injected again", lambda: s.config(kind)["webhooks"][0]["clientConfig"].get("caBundle") == want,
             30)


def test_restart_reuses_valid_secret(kube, setup):
    s = setup
    before = secret_certs(kube, s)
    rv = kube.get("secret", s.secret, s.system_ns)["metadata"]["resourceVersion"]
    s.ctl.restart(*s.args)
    code, body = s.ctl.http("readyz")
    assert code == 200, body
    assert secret_certs(kube, s) == before
    assert kube.get("secret", s.secret, s.system_ns)["metadata"]["resourceVersion"] == rv
    assert (s.cert_dir / "tls.crt").read_text() == before["tls.crt"]


def test_readyz_waits_for_certificates(kube, setup, tmp_path):
    """A replica that cannot put the serving pair into its cert dir (here a
    path below a regular file; in cluster, deploy/'s read-only Secret mount
    before the kubelet synced it) stays unready with SPEC §12.5's reason,
    while the first replica keeps serving: webhooks and probes run on every
    replica, not only the leader."""
    s = setup
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    ro = blocker / "certs"
    other = Controller(kube, s.system_ns, f"jobset-whc-{s.id}", tmp_path, webhooks=True)
    args = [a for a in s.args if not a.startswith(("--webhook-port", "--webhook-cert-dir"))]
    try:
        other.start(*args, f"--webhook-port={_free_port()}", f"--webhook-cert-dir={ro}", wait_leader=False,
                    wait_ready=False)
        wait_for("second replica's /healthz", lambda: other.http("healthz")[0] == 200 or other._died(), 30)
        # It has read the (valid) Secret and tried the cert dir at least once.
        wait_for("second replica failing to write its cert dir",
                 lambda: "cannot write to" in other.log.read_text() or other._died(), 30)
        code, body = other.http("readyz")
        assert code == 503 and "certificates are not ready" in body, (code, body)
        assert s.ctl.http("readyz")[0] == 200
        assert s.ctl.leader() == s.ctl.identity
    finally:
        assert other.stop() == 0


# ---- exclusive placement through scheduling gates (docs/controller.md
# "Exclusive placement"; the controller runs with the default
# --exclusive-placement=gates) ----

GATE = "jobset.sigs.k8s.io/exclusive-placement"


def _events(kube, ns, reason):
    items = json.loads(kube.run("get", "events.v1.events.k8s.io", "-n", ns, "-o", "json").stdout)["items"]
    return [e for e in items if e.get("reason") == reason]


def _gates(pod):
    return [g["name"] for g in pod["spec"].get("schedulingGates") or []]


def _index(pod):
    return pod["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"]


def _live(pods):
    return [p for p in pods if not p["metadata"].get("deletionTimestamp")
            and p["status"].get("phase") not in ("Succeeded", "Failed")]


def _node_label(kube, node, key, value):
    arg = f"{key}={value}" if value is not None else f"{key}-"
    kube.run("label", "node", node, arg, "--overwrite")


def _exclusive_jobset(name, topo, pods, selector):
    rj = {"name": "workers", "replicas": 1,
          "template": {"spec": {"parallelism": pods, "completions": pods, "backoffLimit": 10,
                                "template": {"metadata": {"annotations": {
                                    "alpha.jobset.sigs.k8s.io/exclusive-topology": topo,
                                    "jobset-test/run-for": "1h"}},
                                    "spec": {"nodeSelector": selector,
                                             "containers": [{"name": "c", "image": "busybox"}]}}}}}
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": name},
            "spec": {"replicatedJobs": [rj]}}


def test_placement_gates_wait_follow_and_repair(kube, setup):
    """Followers are created at once (no admission rejection), wait behind the
    gate with an Event saying why (#1187), follow the leader once it is bound,
    and are repaired once they no longer match the leader's domain (#1269):
    here the leader's Node is relabelled, and the next pod event of the Job
    (a follower deleted by hand) makes the controller look again."""
    s = setup
    ns = s.namespace(f"place-{s.id}")
    pin, key, node = f"jobset-test/place-{s.id}", f"jobset-test/domain-{s.id}", "kwok-node-0"
    sel = "jobset.sigs.k8s.io/jobset-name=gated"
    try:
        # No node carries `pin` yet: the leader cannot be scheduled.
        kube.run("create", "-n", ns, "-f", "-", input=json.dumps(_exclusive_jobset("gated", key, 4, {pin: "yes"})))
        pods = wait_for("all four pods created", lambda: (lambda p: p if len(p) == 4 else None)(
            kube.list("pods", ns, sel)), 60)
        for p in pods:
            assert p["metadata"]["labels"].get(GATE) == "gated", p["metadata"]
            if _index(p) == "0":
                leader = p["metadata"]["name"]
                assert GATE not in _gates(p)
            else:
                assert GATE in _gates(p), p["spec"]
                assert key not in (p["spec"].get("nodeSelector") or {})

        def waiting():
            ev = [e for e in _events(kube, ns, "ExclusivePlacementWaiting")
                  if f"waiting for leader pod {leader} to be scheduled" in e.get("note", "")]
            return ev if len({e["regarding"]["name"] for e in ev}) == 3 else None
        wait_for("an ExclusivePlacementWaiting event on each follower", waiting, 60)
        # The Job controller never saw a refusal.
        assert not _events(kube, ns, "FailedCreate"), _events(kube, ns, "FailedCreate")

        def placed(domain):
            def check():
                live = _live(kube.list("pods", ns, sel))
                ok = len(live) == 4 and all(
                    p["spec"].get("nodeName") == node and GATE not in _gates(p) and
                    (_index(p) == "0" or p["spec"]["nodeSelector"].get(key) == domain) for p in live)
                return live if ok else None
            return check

        # Let the leader in: the followers follow it into domain a.
        kube.run("label", "node", node, f"{pin}=yes", f"{key}=a", "--overwrite")
        live = wait_for(f"all four pods on {node}, followers pinned to {key}=a", placed("a"), 90)
        followers = sorted(p["metadata"]["name"] for p in live if _index(p) != "0")

        # The leader's domain becomes b; the next pod event of the Job (one
        # follower deleted) repairs the two followers still pinned to a.
        _node_label(kube, node, key, "b")
        kube.run("delete", "pod", "-n", ns, followers[0], "--wait=false")
        wait_for(f"all four pods on {node}, followers pinned to {key}=b", placed("b"), 120)
        repaired = {e["regarding"]["name"] for e in _events(kube, ns, "ExclusivePlacementViolation")}
        assert set(followers[1:]) <= repaired, (followers, repaired)
        assert not _events(kube, ns, "FailedCreate")
    finally:
        _node_label(kube, node, pin, None)
        _node_label(kube, node, key, None)
        kube.run("delete", "namespace", ns, "--wait=false", check=False)


def test_placement_survives_edited_follower_annotations(kube, setup):
    """Issue 22: a user removes the exclusive-topology annotation from one
    gated follower (and sets another's to a key no Node has) before the
    leader is bound. That once crashed the whole controller (SIGSEGV) when
    the placement pass lifted the gate: the key is now the JobSet's, so the
    controller stays up and every follower is pinned to the leader's domain
    under the JobSet's key; the JobSet proceeds."""
    s = setup
    ns = s.namespace(f"place-edit-{s.id}")
    pin, key, node = f"jobset-test/edit-{s.id}", f"jobset-test/domain-edit-{s.id}", "kwok-node-0"
    sel = "jobset.sigs.k8s.io/jobset-name=edited"
    ann = "alpha.jobset.sigs.k8s.io/exclusive-topology"
    try:
        kube.run("create", "-n", ns, "-f", "-", input=json.dumps(_exclusive_jobset("edited", key, 3, {pin: "yes"})))
        pods = wait_for("all three pods created, the followers gated", lambda: (lambda p: p if len(p) == 3 and all(
            _index(x) == "0" or GATE in _gates(x) for x in p) else None)(kube.list("pods", ns, sel)), 60)
        followers = sorted(p["metadata"]["name"] for p in pods if _index(p) != "0")
        kube.run("annotate", "pod", "-n", ns, followers[0], f"{ann}-")
        kube.run("annotate", "pod", "-n", ns, followers[1], f"{ann}=jobset-test/no-such-key", "--overwrite")
        edited = {p["metadata"]["name"]: p["metadata"].get("annotations", {}).get(ann)
                  for p in kube.list("pods", ns, sel) if p["metadata"]["name"] in followers}
        assert edited == {followers[0]: None, followers[1]: "jobset-test/no-such-key"}, edited
        s.ctl._died()

        # The leader binds: the placement pass lifts both gates.
        kube.run("label", "node", node, f"{pin}=yes", f"{key}=a", "--overwrite")

        def placed():
            s.ctl._died()  # fails the test at once if the controller is gone
            live = _live(kube.list("pods", ns, sel))
            ok = len(live) == 3 and all(
                p["spec"].get("nodeName") == node and GATE not in _gates(p) and
                (_index(p) == "0" or (p["spec"].get("nodeSelector") or {}).get(key) == "a") for p in live)
            return live if ok else None
        live = wait_for(f"all three pods on {node}, followers pinned to {key}=a", placed, 90)
        # The same pods: placed, not repaired (deleted and made again).
        assert sorted(p["metadata"]["name"] for p in live if _index(p) != "0") == followers
        assert "jobset-test/no-such-key" not in json.dumps([p["spec"].get("nodeSelector") for p in live])
        assert s.ctl.proc.poll() is None, s.ctl.log.read_text()[-3000:]
        # The JobSet proceeds: its Job runs all three pods.
        wait_for("the Job counting three active pods", lambda: (lambda j: j and all(
            (x.get("status") or {}).get("active") == 3 for x in j) and j)(kube.list("jobs", ns, sel)), 60)
    finally:
        _node_label(kube, node, pin, None)
        _node_label(kube, node, key, None)
        kube.run("delete", "namespace", ns, "--wait=false", check=False)


def test_placement_empty_domain_never_injected(kube, setup):
    """A leader on a Node whose topology label is empty gives no domain: the
    followers stay gated and say so (#1088); once the label has a value they
    follow (the controller looks again with backoff: Nodes are not watched)."""
    s = setup
    ns = s.namespace(f"place-empty-{s.id}")
    key = f"jobset-test/domain-{s.id}"
    node = f"place-empty-{s.id}"
    spec = {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": node, "annotations": {"kwok.x-k8s.io/node": "fake"},
                         "labels": {"type": "kwok", "kubernetes.io/hostname": node, key: ""}},
            "status": {"allocatable": {"cpu": "64", "memory": "512Gi", "pods": "110"},
                       "capacity": {"cpu": "64", "memory": "512Gi", "pods": "110"}}}
    kube.run("create", "-f", "-", input=json.dumps(spec))
    try:
        kube.run("create", "-n", ns, "-f", "-",
                 input=json.dumps(_exclusive_jobset("empty", key, 2, {"kubernetes.io/hostname": node})))

        def said():
            ev = [e for e in _events(kube, ns, "ExclusivePlacementWaiting")
                  if f"node {node} of leader pod" in e.get("note", "") and
                  f"has an empty value for label {key}" in e.get("note", "")]
            return ev or None
        wait_for("the follower saying its leader's node has an empty domain", said, 90)
        follower = [p for p in kube.list("pods", ns, "jobset.sigs.k8s.io/jobset-name=empty") if _index(p) == "1"]
        assert follower and GATE in _gates(follower[0]), follower
        assert key not in (follower[0]["spec"].get("nodeSelector") or {}), follower[0]["spec"]

        _node_label(kube, node, key, "d1")

        def followed():
            f = [p for p in _live(kube.list("pods", ns, "jobset.sigs.k8s.io/jobset-name=empty")) if _index(p) == "1"]
            return f if f and GATE not in _gates(f[0]) and f[0]["spec"]["nodeSelector"].get(key) == "d1" else None
        wait_for(f"the follower pinned to {key}=d1", followed, 90)
    finally:
        kube.run("delete", "namespace", ns, "--wait=false", check=False)
        kube.run("delete", "node", node, "--ignore-not-found", "--wait=false", check=False)


def test_placement_follower_retry_after_leader_succeeded(kube, setup):
    """Index 0 succeeded and the Job controller makes a follower again (the
    retry of one that failed): the new follower follows the finished leader
    (the Job controller never makes index 0 again), so the Job runs its
    retry and ends; before, it waited behind its gate for ever and the
    JobSet never finished (found by tests/chaos, seed 2)."""
    s = setup
    ns = s.namespace(f"place-retry-{s.id}")
    key = "cloud.google.com/gke-nodepool"
    ann = {"alpha.jobset.sigs.k8s.io/exclusive-topology": key, "jobset-test/run-for": "1s",
           "jobset-test/fail-if-completion-index": "1", "jobset-test/exit-code": "1"}
    rj = {"name": "w", "replicas": 1,
          "template": {"spec": {"parallelism": 2, "completions": 2, "backoffLimit": 1,
                                "template": {"metadata": {"annotations": ann},
                                             "spec": {"restartPolicy": "Never",
                                                      "containers": [{"name": "c", "image": "busybox"}]}}}}}
    js = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "retry"},
          "spec": {"replicatedJobs": [rj]}}
    try:
        kube.run("create", "-n", ns, "-f", "-", input=json.dumps(js))
        obj = wait_terminal(kube, "retry", ns, "Failed", timeout=120)
        assert condition(obj, "Failed")["reason"] == "FailedJobs"
        pods = kube.list("pods", ns, "jobset.sigs.k8s.io/jobset-name=retry")
        leader = [p for p in pods if _index(p) == "0"]
        followers = [p for p in pods if _index(p) == "1"]
        assert len(leader) == 1 and leader[0]["status"]["phase"] == "Succeeded", leader
        assert len(followers) == 2, [p["metadata"]["name"] for p in followers]
        domain = kube.get("node", leader[0]["spec"]["nodeName"], "default")["metadata"]["labels"][key]
        for p in followers:
            assert not _gates(p) and p["status"]["phase"] == "Failed", (p["metadata"]["name"], p["spec"], p["status"])
            assert p["spec"]["nodeSelector"].get(key) == domain, p["spec"]
    finally:
        kube.run("delete", "namespace", ns, "--wait=false", check=False)


def _wait_placed(kube, ns, sel, n):
    """Wait until the n pods `sel` selects run, none gated (the followers
    placed); them by completion index."""
    def placed():
        live = _live(kube.list("pods", ns, sel))
        ok = len(live) == n and all(p["status"].get("phase") == "Running" and not _gates(p) for p in live)
        return live if ok else None
    return {_index(p): p for p in wait_for(f"{n} pods running, the followers placed", placed, 90)}


def _pod_finished(kube, ns, pod, exit_code):
    """Make a Running pod Succeeded (exit 0) or Failed, as its node would
    report it (kwok leaves a terminal pod as it is)."""
    cs = [{"name": "c", "ready": False, "restartCount": 0, "image": "busybox", "imageID": "",
           "state": {"terminated": {"exitCode": exit_code, "reason": "Completed" if exit_code == 0 else "Error"}}}]
    body = {"status": {"phase": "Succeeded" if exit_code == 0 else "Failed", "containerStatuses": cs}}
    kube.run("patch", "pod", pod, "-n", ns, "--subresource=status", "--type=merge", "-p", json.dumps(body))


def test_placement_follower_retry_after_leader_pod_deleted(kube, setup):
    """Index 0 succeeded and its pod was deleted (by a user; the pod
    garbage collector does the same), then a follower fails and the Job
    controller makes it again: with no leader pod to read a domain from, the
    retry follows the Job's placed followers into their domain and runs.
    Before, it waited behind its gate for ever ("none is running or
    pending") and the JobSet never finished (tests/chaos, seed 20261205,
    KNOWN_BUGS finished-leader-deleted)."""
    s = setup
    ns = s.namespace(f"place-gone-{s.id}")
    key = "cloud.google.com/gke-nodepool"
    sel = "jobset.sigs.k8s.io/jobset-name=gone"
    js = _exclusive_jobset("gone", key, 3, {})
    js["spec"]["replicatedJobs"][0]["template"]["spec"]["backoffLimit"] = 2
    try:
        kube.run("create", "-n", ns, "-f", "-", input=json.dumps(js))
        by_index = _wait_placed(kube, ns, sel, 3)
        domain = kube.get("node", by_index["0"]["spec"]["nodeName"], "default")["metadata"]["labels"][key]
        assert {by_index[i]["spec"]["nodeSelector"].get(key) for i in ("1", "2")} == {domain}

        # Index 0 succeeds; once the Job counted it, its pod is deleted.
        leader = by_index["0"]["metadata"]["name"]
        _pod_finished(kube, ns, leader, 0)
        wait_for("the Job counting index 0 succeeded", lambda: (lambda j: j and (j[0].get("status") or {}).get(
            "completedIndexes") == "0" and j)(kube.list("jobs", ns, sel)), 60)
        kube.run("delete", "pod", leader, "-n", ns, "--wait=false")
        wait_for(f"leader pod {leader} gone", lambda: kube.get("pod", leader, ns) is None, 60)

        # Follower 1 fails: the Job controller makes it again, gated.
        failed = by_index["1"]["metadata"]["name"]
        _pod_finished(kube, ns, failed, 1)

        def retried():
            pods = [p for p in kube.list("pods", ns, sel) if _index(p) == "1" and p["metadata"]["name"] != failed]
            return pods[0] if pods else None
        retry = wait_for("the retry of follower index 1", retried, 60)
        assert not [p for p in kube.list("pods", ns, sel) if _index(p) == "0"]

        def running():
            p = kube.get("pod", retry["metadata"]["name"], ns)
            ok = p and not _gates(p) and p["status"].get("phase") == "Running"
            return p if ok else None
        p = wait_for(f"retry {retry['metadata']['name']} ungated and running", running, 60)
        assert p["spec"]["nodeSelector"].get(key) == domain, p["spec"]
        assert not [e for e in _events(kube, ns, "ExclusivePlacementViolation")]
    finally:
        kube.run("delete", "namespace", ns, "--wait=false", check=False)


def test_placement_leader_elected_when_index0_done_and_no_follower_placed(kube, setup):
    """Index 0 succeeded, the JobSet was suspended (which deletes the
    followers) and its finished leader pod deleted, then resumed: the Job
    controller makes the followers again, gated, and never a leader. With
    neither a leader pod nor a placed follower to take a domain from, the
    follower of the lowest index is elected to lead: its gate is lifted with
    no domain, and once it is bound the other follows it into its domain.
    Before, both waited behind their gates for ever (tests/chaos, seed
    4242, excl-76; KNOWN_BUGS finished-leader-deleted)."""
    s = setup
    ns = s.namespace(f"place-elect-{s.id}")
    key = "cloud.google.com/gke-nodepool"
    sel = "jobset.sigs.k8s.io/jobset-name=elect"
    js = _exclusive_jobset("elect", key, 3, {})
    try:
        kube.run("create", "-n", ns, "-f", "-", input=json.dumps(js))
        by_index = _wait_placed(kube, ns, sel, 3)
        leader = by_index["0"]["metadata"]["name"]
        _pod_finished(kube, ns, leader, 0)
        wait_for("the Job counting index 0 succeeded", lambda: (lambda j: j and (j[0].get("status") or {}).get(
            "completedIndexes") == "0" and j)(kube.list("jobs", ns, sel)), 60)

        # Suspended: the Job controller deletes the running followers.
        kube.run("patch", "jobsets.jobset.x-k8s.io", "elect", "-n", ns, "--type=merge", "-p",
                 '{"spec":{"suspend":true}}')
        wait_for("the followers gone", lambda: not [p for p in kube.list("pods", ns, sel) if _index(p) != "0"], 90)
        kube.run("delete", "pod", leader, "-n", ns, "--wait=false")
        wait_for(f"leader pod {leader} gone", lambda: kube.get("pod", leader, ns) is None, 60)
        kube.run("patch", "jobsets.jobset.x-k8s.io", "elect", "-n", ns, "--type=merge", "-p",
                 '{"spec":{"suspend":false}}')

        def both_running():
            live = [p for p in _live(kube.list("pods", ns, sel)) if _index(p) in ("1", "2")]
            ok = len(live) == 2 and all(p["status"].get("phase") == "Running" and not _gates(p) for p in live)
            return {_index(p): p for p in live} if ok else None
        now = wait_for("both new followers ungated and running", both_running, 90)
        assert not [p for p in kube.list("pods", ns, sel) if _index(p) == "0"]
        elected, follower = now["1"], now["2"]
        assert elected["metadata"]["annotations"].get("jobset.sigs.k8s.io/exclusive-placement-leader") == "elected"
        assert key not in (elected["spec"].get("nodeSelector") or {}), elected["spec"]
        domain = kube.get("node", elected["spec"]["nodeName"], "default")["metadata"]["labels"][key]
        assert follower["spec"]["nodeSelector"].get(key) == domain, follower["spec"]
        assert "jobset.sigs.k8s.io/exclusive-placement-leader" not in follower["metadata"]["annotations"]
        assert [e for e in _events(kube, ns, "ExclusivePlacementLeaderElected")
                if (e.get("regarding") or {}).get("name") == elected["metadata"]["name"]]
        assert not _events(kube, ns, "ExclusivePlacementViolation")
        for p in (elected, follower):
            _pod_finished(kube, ns, p["metadata"]["name"], 0)
        wait_terminal(kube, "elect", ns, "Completed", timeout=90)
    finally:
        kube.run("delete", "namespace", ns, "--wait=false", check=False)


def test_placement_webhook_mode_is_upstreams(kube, setup):
    """--exclusive-placement=webhook: no label, no gate, no pod cache; the
    follower is pinned by mpod.kb.io at admission, as upstream."""
    s = setup
    s.ctl.restart(*s.args, "--exclusive-placement=webhook")
    ns = s.namespace(f"place-wh-{s.id}")
    try:
        js = _exclusive_jobset("upstream", TOPO, 2, {})
        del js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["metadata"]["annotations"][
            "jobset-test/run-for"]
        kube.run("create", "-n", ns, "-f", "-", input=json.dumps(js))
        done = wait_terminal(kube, "upstream", ns, "Completed", timeout=150)
        assert condition(done, "Completed")
        pods = [p for p in kube.list("pods", ns, "jobset.sigs.k8s.io/jobset-name=upstream")
                if p["status"].get("phase") == "Succeeded"]
        by_index = {_index(p): p for p in pods}
        assert set(by_index) == {"0", "1"}, [p["metadata"]["name"] for p in pods]
        for p in pods:
            assert GATE not in p["metadata"]["labels"] and GATE not in _gates(p), p["metadata"]
        node = json.loads(kube.run("get", "node", by_index["0"]["spec"]["nodeName"], "-o", "json").stdout)
        assert by_index["1"]["spec"]["nodeSelector"] == {TOPO: node["metadata"]["labels"][TOPO]}
        assert 'jobset_controller_cache_objects{resource="pods"}' not in s.ctl.metrics()
    finally:
        kube.run("delete", "namespace", ns, "--wait=false", check=False)
        s.ctl.restart(*s.args)


def test_kep_gates_in_the_webhook(kube, setup):
    """vjobset.kb.io with the gates of the merged KEPs. KEP-1150 "Webhook
    Changes": with MutablePodResourcesForSuspendedJobSets, container
    resource requests/limits may change while suspended, nothing else of a
    container; without it they may not. KEP-1186 "Validation":
    activeDeadlineSeconds may not be set while JobSetActiveDeadlineSeconds
    is off, and is mutable while it is on."""
    s = setup
    ns = s.namespace(f"keps-{s.id}")

    def attempt(*args):
        p = kube.run(*args, check=False)
        return p.returncode == 0, p.stderr

    def res(cpu):
        return ["patch", "jobsets.jobset.x-k8s.io", "sized", "-n", ns, "--type=json", "-p", json.dumps([
            {"op": "add", "path": "/spec/replicatedJobs/0/template/spec/template/spec/containers/0/resources",
             "value": {"requests": {"cpu": cpu}}}])]

    def deadline(name, v):
        return ["patch", "jobsets.jobset.x-k8s.io", name, "-n", ns, "--type=merge", "-p",
                json.dumps({"spec": {"activeDeadlineSeconds": v}})]

    js = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "sized"},
          "spec": {"suspend": True, "replicatedJobs": [{"name": "w", "template": {"spec": {"template": {"spec": {
              "containers": [{"name": "c", "image": "busybox"}]}}}}}]}}
    try:
        wait_for("JobSet created through the webhooks", lambda: kube.run(
            "create", "-n", ns, "-f", "-", input=json.dumps(js), check=False).returncode == 0, 60)
        ok, err = attempt(*res("1"))
        assert not ok and "spec.replicatedJobs" in err and "resource" not in err, err
        ok, err = attempt(*deadline("sized", 60))
        assert not ok and "JobSetActiveDeadlineSeconds" in err, err

        s.ctl.restart(*s.args, "--feature-gates=MutablePodResourcesForSuspendedJobSets=true,"
                      "JobSetActiveDeadlineSeconds=true")

        def accepted():
            return attempt(*res("2"))[0]
        wait_for("a resource edit of the suspended JobSet accepted", accepted, 60)
        assert kube.jobset("sized", ns)["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"][
            "containers"][0]["resources"] == {"requests": {"cpu": "2"}}
        ok, err = attempt("patch", "jobsets.jobset.x-k8s.io", "sized", "-n", ns, "--type=json", "-p", json.dumps([
            {"op": "replace", "path": "/spec/replicatedJobs/0/template/spec/template/spec/containers/0/image",
             "value": "busybox:1"}]))
        assert not ok and "spec.replicatedJobs" in err, err
        ok, err = attempt(*deadline("sized", 60))
        assert ok, err
        ok, err = attempt(*deadline("sized", 30))
        assert ok, err
        ok, err = attempt("patch", "jobsets.jobset.x-k8s.io", "sized", "-n", ns, "--type=merge", "-p",
                          json.dumps({"spec": {"suspend": False}}))
        assert ok, err
        ok, err = attempt(*res("3"))
        assert not ok and "spec.replicatedJobs" in err, err
    finally:
        kube.run("delete", "namespace", ns, "--wait=false", check=False)
        s.ctl.restart(*s.args)
