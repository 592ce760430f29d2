"""The Helm chart charts/jobset (docs/integrations.md "Helm"): it lints, its
default rendering is deploy/ (hack/gen-deploy writes deploy/ from it, so the
two cannot drift without this failing), its values do what values.yaml
says, and `helm install` onto the test control plane is accepted with the
installed objects matching deploy/.

helm is the cached build of `hack/cluster build helm` (Debian has none).

The install shares the cluster with the other tests, which already hold
deploy/'s namespace and RBAC (hack/cluster up, test_webhook_deploy.py): the
test hands those objects to the release the way Helm documents adoption
(the managed-by label and the release annotations), and installs with
webhook.namespaceSelector matching no namespace. The webhook configurations
point at an in-cluster Service that nothing serves here (kwok runs no
containers), so without the selector every JobSet write in the cluster
would be refused, or sent towards the Service's cluster IP, while they
exist. Afterwards the webhook configurations and the release record are
removed; the rest stays as test_webhook_deploy.py leaves it.
"""
import json
import os
import subprocess
import uuid

import pytest
import yaml

from webhook_common import ROOT

pytestmark = pytest.mark.skipif(not os.environ.get("JOBSET_TEST_KUBECONFIG"),
                                reason="JOBSET_TEST_KUBECONFIG unset: run hack/cluster up and eval hack/cluster env")

CHART = ROOT / "charts" / "jobset"
CLUSTER = ROOT / "hack" / "cluster"
NS = "jobset-system"
RELEASE = "jobset"
RELEASE_NS = "default"


def helm(*args, check=True, timeout=180):
    p = subprocess.run([str(CLUSTER), "helm", *args], capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise AssertionError(f"helm {' '.join(args)} failed ({p.returncode}): {p.stderr.strip()}")
    return p


def docs(text):
    return [d for d in yaml.safe_load_all(text) if d]


def by_key(objs):
    return {(d["kind"], d["metadata"]["name"]): d for d in objs}


def template(*values):
    args = ["template", RELEASE, str(CHART)]
    for v in values:
        args += ["--set", v]
    return by_key(docs(helm(*args).stdout))


def kustomized(kube):
    return by_key(docs(kube.run("kustomize", str(ROOT / "deploy")).stdout))


def subset(want, got, path=""):
    """Every field of `want` is in `got` with the same value (lists element
    by element, same length); the API server's defaults and Helm's
    ownership metadata are extra fields in `got`. Returns the first
    difference as a string, or None."""
    if isinstance(want, dict):
        if not isinstance(got, dict):
            return f"{path}: want an object, got {got!r}"
        for k, v in want.items():
            if k not in got:
                return f"{path}.{k}: missing"
            d = subset(v, got[k], f"{path}.{k}")
            if d:
                return d
        return None
    if isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            return f"{path}: want {want!r}, got {got!r}"
        for i, (w, g) in enumerate(zip(want, got)):
            d = subset(w, g, f"{path}[{i}]")
            if d:
                return d
        return None
    return None if want == got else f"{path}: want {want!r}, got {got!r}"


def args_of(objs):
    return objs[("Deployment", "jobset-controller-manager")]["spec"]["template"]["spec"]["containers"][0]["args"]


def test_lint_default_and_every_mode():
    for values in ([], ["certManager.enable=true"], ["webhook.enable=false"], ["prometheus.enable=false"],
                   ["prometheus.serviceMonitor.enable=true"], ["namespace.create=false"]):
        args = ["lint", "--strict", str(CHART)]
        for v in values:
            args += ["--set", v]
        p = helm(*args, check=False)
        assert p.returncode == 0 and "0 chart(s) failed" in p.stdout, (values, p.stdout, p.stderr)


def test_deploy_is_generated_from_the_chart():
    p = subprocess.run([str(ROOT / "hack" / "gen-deploy"), "--check"], capture_output=True, text=True, timeout=180)
    assert p.returncode == 0, p.stderr[-4000:]


def test_template_equals_kustomize_output(kube):
    """The objects themselves, not only the files: `helm template` with the
    default values against `kubectl kustomize deploy/` (which adds its
    labels and image on top of the generated files)."""
    helm_objs = by_key(docs(helm("template", RELEASE, str(CHART), "--include-crds").stdout))
    kust = kustomized(kube)
    assert set(helm_objs) == set(kust)
    for key, want in kust.items():
        got = helm_objs[key]
        if key[0] == "CustomResourceDefinition":
            # The same file (the chart's crds/ links to deploy/crd/); only
            # kustomize's labels are added on this side.
            for k in ("app.kubernetes.io/name", "app.kubernetes.io/part-of"):
                want["metadata"]["labels"].pop(k)
            if not want["metadata"]["labels"]:
                del want["metadata"]["labels"]
        assert got == want, f"{key}: {subset(want, got) or subset(got, want)}"


def test_values_change_what_they_say():
    base = template()
    assert args_of(base)[:1] == ["--leader-elect"] and "--cert-management=internal" in args_of(base)

    off = template("webhook.enable=false")
    assert "--enable-webhooks=false" in args_of(off)
    for k in (("MutatingWebhookConfiguration", "jobset-mutating-webhook-configuration"),
              ("ValidatingWebhookConfiguration", "jobset-validating-webhook-configuration"),
              ("Service", "jobset-webhook-service"), ("Secret", "jobset-webhook-server-cert"),
              ("Role", "jobset-manager-secrets-role")):
        assert k in base and k not in off, k
    pod = off[("Deployment", "jobset-controller-manager")]["spec"]["template"]["spec"]
    assert "volumes" not in pod and {p["name"] for p in pod["containers"][0]["ports"]} == {"metrics", "health"}

    cm = template("certManager.enable=true")
    assert "--cert-management=none" in args_of(cm)
    assert ("Secret", "jobset-webhook-server-cert") not in cm and ("Role", "jobset-manager-secrets-role") not in cm
    cert = cm[("Certificate", "jobset-serving-cert")]["spec"]
    assert cert["secretName"] == "jobset-webhook-server-cert"
    assert cert["dnsNames"][0] == f"jobset-webhook-service.{NS}.svc"
    assert cert["issuerRef"] == {"kind": "Issuer", "name": "jobset-selfsigned-issuer"}
    assert ("Issuer", "jobset-selfsigned-issuer") in cm
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        o = cm[(kind, f"jobset-{kind[:-len('WebhookConfiguration')].lower()}-webhook-configuration")]
        assert o["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == f"{NS}/jobset-serving-cert"
    ext = template("certManager.enable=true", "certManager.issuerRef.name=corp", "certManager.issuerRef.kind=ClusterIssuer")
    assert ext[("Certificate", "jobset-serving-cert")]["spec"]["issuerRef"] == {"name": "corp", "kind": "ClusterIssuer"}
    assert ("Issuer", "jobset-selfsigned-issuer") not in ext

    nom = template("prometheus.enable=false")
    assert "--metrics-bind-address=0" in args_of(nom)
    assert ("Service", "jobset-controller-manager-metrics-service") not in nom
    assert ("ClusterRole", "jobset-proxy-role") not in nom
    sm = template("prometheus.serviceMonitor.enable=true")[("ServiceMonitor", "jobset-controller-manager-metrics-monitor")]
    assert sm["spec"]["endpoints"][0]["port"] == "https" and sm["spec"]["selector"] == {
        "matchLabels": {"control-plane": "controller-manager"}}

    t = template("controller.replicas=2", "controller.leaderElection.enable=false", "image.repository=reg/js",
                 "image.tag=v9", "image.pullPolicy=Always", "controller.featureGates.RestartJob=false",
                 "controller.featureGates.ElasticJobSet=true", "controller.nodeSelector.pool=system",
                 "controller.tolerations[0].key=dedicated", "controller.tolerations[0].operator=Exists",
                 "controller.resources.limits.memory=1Gi", "controller.clientConnection.qps=50",
                 "commonLabels.team=batch", "namespace.name=js")
    d = t[("Deployment", "jobset-controller-manager")]
    pod = d["spec"]["template"]["spec"]
    c = pod["containers"][0]
    assert d["spec"]["replicas"] == 2 and d["metadata"]["namespace"] == "js" and d["metadata"]["labels"]["team"] == "batch"
    assert c["image"] == "reg/js:v9" and c["imagePullPolicy"] == "Always"
    assert "--leader-elect=false" in c["args"] and "--kube-api-qps=50" in c["args"]
    assert "--feature-gates=ElasticJobSet=true,RestartJob=false" in c["args"]
    assert pod["nodeSelector"] == {"pool": "system"}
    assert pod["tolerations"] == [{"key": "dedicated", "operator": "Exists"}]
    assert c["resources"]["limits"] == {"memory": "1Gi"}
    hook = t[("MutatingWebhookConfiguration", "jobset-mutating-webhook-configuration")]["webhooks"][0]
    assert hook["clientConfig"]["service"]["namespace"] == "js"
    assert t[("Namespace", "js")]["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    assert ("Namespace", "js") not in template("namespace.name=js", "namespace.create=false")


HOOKS = (("mutatingwebhookconfiguration", "jobset-mutating-webhook-configuration"),
         ("validatingwebhookconfiguration", "jobset-validating-webhook-configuration"))
KINDS = {"Namespace": "namespace", "ServiceAccount": "serviceaccount", "ClusterRole": "clusterrole",
         "ClusterRoleBinding": "clusterrolebinding", "Role": "role.rbac.authorization.k8s.io",
         "RoleBinding": "rolebinding.rbac.authorization.k8s.io", "Deployment": "deployment.apps",
         "Service": "service", "Secret": "secret",
         "MutatingWebhookConfiguration": "mutatingwebhookconfiguration",
         "ValidatingWebhookConfiguration": "validatingwebhookconfiguration"}


def live(kube, obj):
    ns = obj["metadata"].get("namespace")
    args = ["get", KINDS[obj["kind"]], obj["metadata"]["name"], "-o", "json"] + (["-n", ns] if ns else [])
    p = kube.run(*args, check=False)
    return json.loads(p.stdout) if p.returncode == 0 else None


@pytest.fixture(scope="module")
def installed(kube, crd):
    want = {k: v for k, v in kustomized(kube).items() if k[0] != "CustomResourceDefinition"}
    # Adoption: what the cluster already holds becomes the release's.
    for obj in want.values():
        if live(kube, obj) is None:
            continue
        ns = obj["metadata"].get("namespace")
        ref = [KINDS[obj["kind"]], obj["metadata"]["name"]] + (["-n", ns] if ns else [])
        kube.run("label", "--overwrite", *ref, "app.kubernetes.io/managed-by=Helm")
        kube.run("annotate", "--overwrite", *ref, f"meta.helm.sh/release-name={RELEASE}",
                 f"meta.helm.sh/release-namespace={RELEASE_NS}")
    # A label no namespace has: nothing in this cluster reaches the hooks.
    sel = f"jobset-helm-e2e-{uuid.uuid4().hex[:6]}"
    try:
        p = helm("install", RELEASE, str(CHART), "-n", RELEASE_NS, "--set",
                 f"webhook.namespaceSelector.matchLabels.{sel}=never", check=False)
        objs = {k: live(kube, o) for k, o in want.items()}
        status = helm("status", RELEASE, "-n", RELEASE_NS, "-o", "json", check=False)
    finally:
        for kind, name in HOOKS:
            kube.run("delete", kind, name, "--ignore-not-found", check=False)
        # The release record only: uninstall would delete the namespace and
        # RBAC the other tests run with.
        kube.run("delete", "secret", "-n", RELEASE_NS, "-l", f"owner=helm,name={RELEASE}", check=False)
    assert p.returncode == 0, p.stderr
    return want, objs, status


def test_install_accepted(installed):
    _, _, status = installed
    assert status.returncode == 0, status.stderr
    info = json.loads(status.stdout)["info"]
    assert info["status"] == "deployed", info


def test_installed_objects_match_deploy(installed):
    want, objs, _ = installed
    missing = [k for k, o in objs.items() if o is None]
    assert not missing, missing
    for key, w in want.items():
        got = objs[key]
        assert got["metadata"]["labels"].get("app.kubernetes.io/managed-by") == "Helm", key
        if key[0].endswith("WebhookConfiguration"):
            for h in got["webhooks"]:
                assert list(h["namespaceSelector"]["matchLabels"].values()) == ["never"], h
        d = subset(w, got)
        assert d is None, f"{key}: {d}"
