"""Kubeflow Trainer v2 (github.com/kubeflow/trainer/v2, $JOBSET_TRAINER_VERSION)
turning TrainJobs into JobSets that our controller and webhooks run, on
hack/cluster (docs/integrations.md).

Set-up, the way the other cluster tests run our controller:
- Trainer's CRDs from its module source (manifests/base/crds in the Go module
  cache, downloaded through the module proxy as `hack/cluster build trainer`
  does), never copied into this repository;
- its controller manager (`hack/cluster build trainer`) out of cluster, as
  its own ServiceAccount kubeflow-system/kubeflow-trainer-controller-manager
  bound to the ClusterRole of its manifests/base/rbac (so its server-side
  applies of JobSets are in hack/cluster's audit log, with their bodies);
- its certificates: Trainer's cert-controller rotator keeps the Secret
  kubeflow-system/kubeflow-trainer-webhook-cert and injects its CA into
  the ValidatingWebhookConfiguration validator.trainer.kubeflow.org, but
  never writes the serving pair to disk (a pod gets it mounted). The test
  fills the Secret with a CA and a serving certificate it mints (valid for
  Trainer's Service name, which the rotator checks, and 127.0.0.1), and
  writes the pair where Trainer's webhook server reads it,
  /tmp/k8s-webhook-server/serving-certs (fixed in Trainer's code, so two
  of these runs cannot share a machine);
- its three validating webhooks (manifests/base/webhook) registered by URL
  under that configuration name; ours as test_controller_webhooks.py
  registers them; the namespaced ones scoped to this run's namespaces;
- a ClusterTrainingRuntime whose template is a JobSet, and a namespaced
  TrainingRuntime whose pods fail.

Pods run on the kwok nodes (jobset-test/* annotations); every wait polls a
condition with a deadline.
"""
import base64
import json
import os
import shutil
import ssl
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml

from conftest import ManagerProcess, _free_port, condition, go_module_dir, mint_token, terminal, wait_for, wait_terminal
from test_controller_webhooks import Setup

VERSION = os.environ.get("JOBSET_TRAINER_VERSION", "v2.0.1")
BINARY = os.environ.get("JOBSET_TRAINER_BIN", "")

pytestmark = [
    pytest.mark.skipif(not os.environ.get("JOBSET_TEST_KUBECONFIG"),
                       reason="JOBSET_TEST_KUBECONFIG unset: run hack/cluster up and eval hack/cluster env"),
    pytest.mark.skipif(not os.access(BINARY, os.X_OK),
                       reason=f"Trainer binary {BINARY!r} not built: `hack/cluster build clients` (or `build trainer`) "
                              "builds it (docs/integrations.md)"),
]

# Out of cluster Trainer takes "kubeflow-system" as its namespace (no
# ServiceAccount namespace file) for its Secret and certificate names.
TRAINER_NS = "kubeflow-system"
TRAINER_SA = "kubeflow-trainer-controller-manager"
TRAINER_SECRET = "kubeflow-trainer-webhook-cert"
TRAINER_SERVICE = f"kubeflow-trainer-controller-manager.{TRAINER_NS}.svc"
TRAINER_VWC = "validator.trainer.kubeflow.org"
TRAINER_CERT_DIR = Path("/tmp/k8s-webhook-server/serving-certs")
GROUP = "trainer.kubeflow.org"
ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"


def mint_certs(d):
    """A CA and a serving pair signed by it, both RSA in PKCS#1 (Trainer's
    rotator parses ca.key that way), the CA named as the rotator names its
    own (it checks the CA for the DNS name kubeflow-trainer-ca), the serving
    certificate valid for Trainer's Service name and 127.0.0.1. Returns
    {ca.crt, ca.key, tls.crt, tls.key} as bytes."""
    d.mkdir(parents=True, exist_ok=True)

    def ossl(*args):
        p = subprocess.run(["openssl", *args], cwd=d, capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, f"openssl {args[0]}: {p.stderr}"
    ossl("genrsa", "-traditional", "-out", "ca.key", "2048")
    ossl("req", "-x509", "-new", "-key", "ca.key", "-days", "3650", "-subj", "/O=kubeflow-trainer/CN=kubeflow-trainer-ca",
         "-addext", "subjectAltName=DNS:kubeflow-trainer-ca",
         "-addext", "keyUsage=critical,digitalSignature,keyEncipherment,keyCertSign", "-out", "ca.crt")
    ossl("genrsa", "-traditional", "-out", "tls.key", "2048")
    ossl("req", "-new", "-key", "tls.key", "-subj", f"/CN={TRAINER_SERVICE}", "-out", "tls.csr")
    (d / "ext").write_text(f"subjectAltName=DNS:{TRAINER_SERVICE},IP:127.0.0.1\n"
                           "keyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n")
    ossl("x509", "-req", "-in", "tls.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-days", "3650",
         "-extfile", "ext", "-out", "tls.crt")
    return {n: (d / n).read_bytes() for n in ("ca.crt", "ca.key", "tls.crt", "tls.key")}


class Trainer(ManagerProcess):
    """Trainer's controller manager, out of cluster."""

    def __init__(self, kube, src, tmp, label):
        super().__init__("Trainer", _free_port())
        self.kube, self.src, self.tmp, self.label = kube, src, Path(tmp), label
        self.port = _free_port()
        self.registered = False

    def install_crds(self):
        crds = sorted((self.src / "manifests" / "base" / "crds").glob(f"{GROUP}_*.yaml"))
        assert len(crds) == 3, crds
        for f in crds:
            self.kube.run("apply", "--server-side", "--force-conflicts", "-f", str(f), timeout=180)
        for f in crds:
            name = yaml.safe_load(f.read_text())["metadata"]["name"]
            wait_for(f"CRD {name} Established",
                     lambda: condition(self.kube.get("crd", name, "default"), "Established"), 60)

    def identity(self):
        """Its ServiceAccount with its own ClusterRole; a kubeconfig with a
        minted token (0600)."""
        rbac = self.src / "manifests" / "base" / "rbac" / "role.yaml"
        role = yaml.safe_load(rbac.read_text())
        self.kube.apply(role)
        self.kube.run("create", "namespace", TRAINER_NS, check=False)
        self.kube.run("create", "serviceaccount", TRAINER_SA, "-n", TRAINER_NS, check=False)
        self.kube.run("create", "clusterrolebinding", TRAINER_SA, f"--clusterrole={role['metadata']['name']}",
                      f"--serviceaccount={TRAINER_NS}:{TRAINER_SA}", check=False)
        token = self.tmp / "trainer.token"
        fd = os.open(token, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(mint_token(self.kube, TRAINER_SA, TRAINER_NS, "2h"))
        self.kubeconfig = self.tmp / "trainer.kubeconfig"
        cfg = {"apiVersion": "v1", "kind": "Config",
               "clusters": [{"name": "c", "cluster": {"server": os.environ["JOBSET_TEST_SERVER"],
                                                      "certificate-authority": os.environ["JOBSET_TEST_CA"]}}],
               "users": [{"name": "trainer", "user": {"tokenFile": str(token)}}],
               "contexts": [{"name": "c", "context": {"cluster": "c", "user": "trainer"}}], "current-context": "c"}
        fd = os.open(self.kubeconfig, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(yaml.safe_dump(cfg))

    def certificates(self):
        certs = mint_certs(self.tmp / "trainer-certs")  # certs/ is our controller's
        self.ca = certs["ca.crt"]
        self.kube.run("delete", "secret", TRAINER_SECRET, "-n", TRAINER_NS, "--ignore-not-found")
        sec = {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
               "metadata": {"name": TRAINER_SECRET, "namespace": TRAINER_NS},
               "data": {k: base64.b64encode(v).decode() for k, v in certs.items()}}
        self.kube.run("create", "-f", "-", input=json.dumps(sec))
        if TRAINER_CERT_DIR.exists():
            shutil.rmtree(TRAINER_CERT_DIR)
        TRAINER_CERT_DIR.mkdir(parents=True, mode=0o700)
        for n in ("tls.crt", "tls.key"):
            fd = os.open(TRAINER_CERT_DIR / n, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(certs[n])

    def register_webhooks(self):
        """manifests/base/webhook's configuration under the name Trainer's
        rotator injects into, by URL, with an empty caBundle (the rotator
        fills it from the Secret)."""
        docs = [d for d in yaml.safe_load_all((self.src / "manifests/base/webhook/manifests.yaml").read_text()) if d]
        assert [d["kind"] for d in docs] == ["ValidatingWebhookConfiguration"], docs
        d = docs[0]
        d["metadata"] = {"name": TRAINER_VWC}
        for h in d["webhooks"]:
            h["clientConfig"] = {"url": f"https://127.0.0.1:{self.port}{h['clientConfig']['service']['path']}"}
            h["namespaceSelector"] = {"matchLabels": {self.label[0]: self.label[1]}}
            h["timeoutSeconds"] = 10
        self.kube.run("delete", "validatingwebhookconfiguration", TRAINER_VWC, "--ignore-not-found")
        self.kube.run("create", "-f", "-", input=json.dumps(d))
        self.registered = True

    def start(self):
        env = dict(os.environ, KUBECONFIG=str(self.kubeconfig))
        # Its webhook server reads the pair from $TMPDIR/k8s-webhook-server,
        # its rotator checks /tmp/k8s-webhook-server: one place only with
        # TMPDIR unset.
        env.pop("TMPDIR", None)
        # /readyz: the rotator found the certificates valid and injected
        # the CA, and the webhook server is listening.
        self.spawn([BINARY, f"--webhook-server-port={self.port}", f"--health-probe-bind-address=127.0.0.1:{self.health}",
                    "--metrics-bind-address=0", "--leader-elect=false", f"--webhook-secret-name={TRAINER_SECRET}",
                    "--zap-log-level=2"], env, self.tmp / "trainer.log")
        want = base64.b64encode(self.ca).decode()
        wait_for("the CA in validator.trainer.kubeflow.org",
                 lambda: all(h["clientConfig"].get("caBundle") == want for h in json.loads(self.kube.run(
                     "get", "validatingwebhookconfiguration", TRAINER_VWC, "-o", "json").stdout)["webhooks"]), 60)

    def stop(self):
        self.terminate()
        if self.registered:
            self.kube.run("delete", "validatingwebhookconfiguration", TRAINER_VWC, "--ignore-not-found", check=False)
        self.kube.run("delete", "secret", TRAINER_SECRET, "-n", TRAINER_NS, "--ignore-not-found", check=False)
        shutil.rmtree(TRAINER_CERT_DIR, ignore_errors=True)


def pod_template(annotations):
    return {"metadata": {"annotations": annotations},
            "spec": {"containers": [{"name": "node", "image": "busybox", "command": ["true"]}]}}


def runtime_spec(annotations, num_nodes=1):
    """A runtime whose template is a JobSet of one replicated Job "node",
    the one Trainer fills from TrainJob.spec.trainer (its ancestor label).
    No restartPolicy, as Trainer's own runtimes: the JobSet webhook
    defaults it."""
    return {"mlPolicy": {"numNodes": num_nodes},
            "template": {"spec": {"replicatedJobs": [{
                "name": "node",
                "template": {"metadata": {"labels": {ANCESTOR: "trainer"}},
                             "spec": {"backoffLimit": 0, "template": pod_template(annotations)}}}]}}}


@pytest.fixture(scope="module")
def env(kube, crd, controller, tmp_path_factory):
    controller.stop()  # one controller at a time: ours with webhooks below
    tmp = tmp_path_factory.mktemp("trainer")
    s = Setup(kube, tmp)
    s.start_controller(f"jobset-trainer-{s.id}")
    t = Trainer(kube, go_module_dir("github.com/kubeflow/trainer/v2", VERSION), tmp, s.label)
    try:
        t.install_crds()
        t.identity()
        t.certificates()
        t.register_webhooks()
        t.start()
        s.trainer = t
        s.runtime = f"jobset-e2e-{s.id}"
        kube.apply({"apiVersion": f"{GROUP}/v1alpha1", "kind": "ClusterTrainingRuntime",
                    "metadata": {"name": s.runtime}, "spec": runtime_spec({"jobset-test/run-for": "2s"})})
        yield s
    finally:
        # Trainer keeps a finalizer on a runtime while TrainJobs use it:
        # the TrainJobs go first, then the runtime, while Trainer runs.
        kube.run("delete", f"trainjobs.{GROUP}", "--all", "--all-namespaces", "--timeout=120s", check=False,
                 timeout=150)
        kube.run("delete", "clustertrainingruntime", f"jobset-e2e-{s.id}", "--ignore-not-found", "--timeout=60s",
                 check=False, timeout=90)
        t.stop()
        rc = s.stop_controller()
    assert rc == 0, f"controller exit status {rc} on SIGTERM; log {s.ctl.log}"


def trainjob(name, runtime, kind="ClusterTrainingRuntime", num_nodes=2, suspend=None):
    spec = {"runtimeRef": {"name": runtime, "apiGroup": GROUP, "kind": kind}, "trainer": {"numNodes": num_nodes}}
    if suspend is not None:
        spec["suspend"] = suspend
    return {"apiVersion": f"{GROUP}/v1alpha1", "kind": "TrainJob", "metadata": {"name": name}, "spec": spec}


def get_trainjob(kube, name, ns):
    return kube.get(f"trainjobs.{GROUP}", name, ns)


def trainer_applies(name, ns):
    """Trainer's server-side applies of JobSet ns/name in the audit log
    (hack/cluster's policy records them with their bodies), oldest first."""
    out = []
    with open(os.environ["JOBSET_TEST_AUDIT_LOG"]) as f:
        for line in f:
            if TRAINER_SA not in line or '"jobsets"' not in line:
                continue
            e = json.loads(line)
            o = e.get("objectRef", {})
            if (e.get("verb") == "patch" and o.get("resource") == "jobsets" and o.get("name") == name
                    and o.get("namespace") == ns and e.get("stage") == "ResponseComplete"
                    and e["user"]["username"] == f"system:serviceaccount:{TRAINER_NS}:{TRAINER_SA}"):
                out.append(e)
    return out


def api_apply(path, body, manager):
    """A server-side apply PATCH of `body` to `path` as the admin."""
    ctx = ssl.create_default_context(cafile=os.environ["JOBSET_TEST_CA"])
    ctx.load_cert_chain(os.environ["JOBSET_TEST_CLIENT_CERT"], os.environ["JOBSET_TEST_CLIENT_KEY"])
    req = urllib.request.Request(f"{os.environ['JOBSET_TEST_SERVER']}{path}?fieldManager={manager}&force=true",
                                 data=json.dumps(body).encode(), method="PATCH",
                                 headers={"Content-Type": "application/apply-patch+yaml"})
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_trainjob_runs_as_jobset_to_completion(kube, env):
    ns = env.namespace(f"trainer-ok-{env.id}")
    kube.create(trainjob("tj-ok", env.runtime), ns)
    wait_for("the JobSet of TrainJob tj-ok", lambda: kube.jobset("tj-ok", ns), 60)
    js = json.loads(kube.run("get", "jobsets.jobset.x-k8s.io", "tj-ok", "-n", ns, "--show-managed-fields",
                             "-o", "json").stdout)
    # Trainer made it with server-side apply, as field manager "trainer",
    # owned by the TrainJob; our webhook defaulted it.
    assert any(m.get("manager") == "trainer" and m.get("operation") == "Apply"
               for m in js["metadata"]["managedFields"]), js["metadata"]["managedFields"]
    owner = js["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner.get("controller")) == ("TrainJob", "tj-ok", True)
    rj = js["spec"]["replicatedJobs"][0]
    assert rj["template"]["spec"]["parallelism"] == 2 and rj["template"]["spec"]["completions"] == 2, rj
    assert rj["template"]["spec"]["template"]["spec"]["restartPolicy"] == "OnFailure", rj
    assert js["spec"]["successPolicy"]["operator"] == "All", js["spec"]
    js = wait_terminal(kube, "tj-ok", ns, "Completed", 120)
    assert len(kube.list("pods", ns, "jobset.sigs.k8s.io/jobset-name=tj-ok")) == 2
    # The TrainJob reports our JobSet's Completed condition as Complete.
    tj = wait_for("TrainJob tj-ok Complete", lambda: condition(get_trainjob(kube, "tj-ok", ns), "Complete")
                  and get_trainjob(kube, "tj-ok", ns), 60)
    ours = condition(js, "Completed")
    theirs = condition(tj, "Complete")
    assert (theirs["reason"], theirs["message"]) == (ours["reason"], ours["message"]), (theirs, ours)
    assert not condition(tj, "Failed"), tj["status"]
    # A single server-side apply made it; generation 1 throughout.
    assert len(trainer_applies("tj-ok", ns)) >= 1
    assert kube.jobset("tj-ok", ns)["metadata"]["generation"] == 1


def test_reapplying_unchanged_jobset_keeps_generation(kube, env):
    """jobset#926: a server-side apply of an unchanged JobSet changes
    nothing. A suspended TrainJob makes Trainer re-apply its JobSet on
    every reconcile; the test also re-sends Trainer's own apply body
    (kubectl's case: test_webhook_admission.py)."""
    ns = env.namespace(f"trainer-gen-{env.id}")
    kube.create(trainjob("tj-gen", env.runtime, suspend=True), ns)
    js = wait_for("the suspended JobSet of TrainJob tj-gen", lambda: kube.jobset("tj-gen", ns), 60)
    assert js["spec"]["suspend"] is True
    gen, spec = js["metadata"]["generation"], js["spec"]
    # Suspended since creation: no child Job and no Service yet
    # (docs/differences.md, "Kubeflow Trainer").
    wait_for("Suspended=True on tj-gen", lambda: condition(kube.jobset("tj-gen", ns), "Suspended"), 30)
    assert kube.jobs(ns, "tj-gen") == [] and kube.list("services", ns) == []
    wait_for("Trainer's apply in the audit log", lambda: trainer_applies("tj-gen", ns), 30)
    # Each TrainJob change is a reconcile: Trainer applies the JobSet again.
    for i in range(3):
        before = len(trainer_applies("tj-gen", ns))
        kube.run("annotate", "--overwrite", f"trainjobs.{GROUP}/tj-gen", "-n", ns, f"e2e/touch={i}")
        wait_for(f"Trainer's re-apply {i + 1}", lambda: len(trainer_applies("tj-gen", ns)) > before, 30)
    applies = trainer_applies("tj-gen", ns)
    # The first created it; every later one was accepted.
    codes = [e["responseStatus"]["code"] for e in applies]
    assert codes == [201] + [200] * (len(codes) - 1), codes
    js = kube.jobset("tj-gen", ns)
    assert js["metadata"]["generation"] == gen, (gen, js["metadata"]["generation"])
    assert js["spec"] == spec
    # Trainer's own body, re-sent as Trainer would.
    body = applies[-1]["requestObject"]
    code, out = api_apply(f"/apis/jobset.x-k8s.io/v1alpha2/namespaces/{ns}/jobsets/tj-gen", body, "trainer")
    assert code == 200, out
    assert out["metadata"]["generation"] == gen and out["spec"] == spec, out["metadata"]
    # Resuming the TrainJob: Trainer applies suspend=false (the whole
    # spec again, kubeflow/trainer#3008); we accept it and run it.
    kube.run("patch", f"trainjobs.{GROUP}/tj-gen", "-n", ns, "--type=merge", "-p", '{"spec":{"suspend":false}}')
    wait_terminal(kube, "tj-gen", ns, "Completed", 120)
    assert kube.jobset("tj-gen", ns)["metadata"]["generation"] == gen + 1
    wait_for("TrainJob tj-gen Complete", lambda: condition(get_trainjob(kube, "tj-gen", ns), "Complete"), 60)
    codes = [e["responseStatus"]["code"] for e in trainer_applies("tj-gen", ns)]
    assert codes == [201] + [200] * (len(codes) - 1), codes


def test_failing_trainjob_ends_failed_with_our_reason(kube, env):
    ns = env.namespace(f"trainer-fail-{env.id}")
    kube.apply({"apiVersion": f"{GROUP}/v1alpha1", "kind": "TrainingRuntime",
                "metadata": {"name": "fails", "namespace": ns},
                "spec": runtime_spec({"jobset-test/run-for": "1s", "jobset-test/exit-code": "3"})})
    kube.create(trainjob("tj-fail", "fails", kind="TrainingRuntime", num_nodes=1), ns)
    js = wait_terminal(kube, "tj-fail", ns, "Failed", 120)
    ours = condition(js, "Failed")
    assert ours["reason"] == "FailedJobs", ours
    assert ours["message"] == "jobset failed due to one or more job failures (first failed job: tj-fail-node-0)", ours
    tj = wait_for("TrainJob tj-fail Failed", lambda: condition(get_trainjob(kube, "tj-fail", ns), "Failed")
                  and get_trainjob(kube, "tj-fail", ns), 60)
    theirs = condition(tj, "Failed")
    assert (theirs["reason"], theirs["message"]) == (ours["reason"], ours["message"]), (theirs, ours)
    assert not condition(tj, "Complete"), tj["status"]
    assert terminal(kube.jobset("tj-fail", ns)) == "Failed"


def test_trainer_webhooks_answer_through_url_registration(kube, env):
    """Trainer's own validating webhook answers through the URL
    registration: a TrainJob whose name is no DNS-1035 label (Trainer's
    rule, not the CRD's) is refused by it."""
    ns = env.namespace(f"trainer-hook-{env.id}")
    p = kube.run("create", "-n", ns, "-f", "-", input=json.dumps(trainjob("9tj", env.runtime)), check=False)
    assert p.returncode != 0, p.stdout
    assert 'admission webhook "validator.trainjob.trainer.kubeflow.org" denied' in p.stderr, p.stderr
    assert "metadata.name" in p.stderr, p.stderr
