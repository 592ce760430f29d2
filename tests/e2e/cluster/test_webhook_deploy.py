"""deploy/ applies cleanly to the test control plane, as a user installs it:

    kubectl apply --server-side -k deploy/

The controller's Deployment object is accepted (it does not run here: the
fake nodes have no images), its pod template passes the `restricted` Pod
Security level that deploy/ puts on its namespace, the RBAC is the least
privilege of SPEC §12.9, and `kubectl explain` reads the generated schema.
The webhook configurations point at a Service nothing serves on this
cluster, so the test removes them again at once (with failurePolicy Fail
they would refuse every JobSet write).
"""
import json
import os

import pytest

from webhook_common import ROOT

pytestmark = pytest.mark.skipif(not os.environ.get("JOBSET_TEST_KUBECONFIG"),
                                reason="JOBSET_TEST_KUBECONFIG unset: run hack/cluster up and eval hack/cluster env")

NS = "jobset-system"
HOOKS = (("mutatingwebhookconfiguration", "jobset-mutating-webhook-configuration"),
         ("validatingwebhookconfiguration", "jobset-validating-webhook-configuration"))


@pytest.fixture(scope="module")
def applied(kube, crd):
    try:
        p = kube.run("apply", "--server-side", "-k", str(ROOT / "deploy"), check=False, timeout=120)
    finally:
        for kind, name in HOOKS:
            kube.run("delete", kind, name, "--ignore-not-found", check=False)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_every_object_applied(applied):
    for obj in ("namespace/jobset-system", "customresourcedefinition.apiextensions.k8s.io/jobsets.jobset.x-k8s.io",
                "serviceaccount/jobset-controller-manager", "clusterrole.rbac.authorization.k8s.io/jobset-manager-role",
                "deployment.apps/jobset-controller-manager", "service/jobset-webhook-service",
                "service/jobset-controller-manager-metrics-service",
                "mutatingwebhookconfiguration.admissionregistration.k8s.io/jobset-mutating-webhook-configuration",
                "validatingwebhookconfiguration.admissionregistration.k8s.io/jobset-validating-webhook-configuration"):
        assert f"{obj} serverside-applied" in applied, applied


def test_deployment_accepted_and_hardened(kube, applied):
    d = kube.get("deployment", "jobset-controller-manager", NS)
    assert d is not None
    spec = d["spec"]["template"]["spec"]
    assert spec["serviceAccountName"] == "jobset-controller-manager"
    assert spec["securityContext"]["runAsNonRoot"] is True
    c = spec["containers"][0]
    assert c["name"] == "manager"
    assert c["securityContext"]["readOnlyRootFilesystem"] is True
    assert c["securityContext"]["allowPrivilegeEscalation"] is False
    assert c["securityContext"]["capabilities"]["drop"] == ["ALL"]
    assert c["resources"]["requests"] == {"cpu": "500m", "memory": "128Mi"}
    assert c["livenessProbe"]["httpGet"]["path"] == "/healthz" and c["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert {p["containerPort"] for p in c["ports"]} == {9443, 8443, 8081}
    # The pod it would create is admitted under the namespace's "restricted"
    # Pod Security level.
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pss-probe", "namespace": NS,
                                                           "labels": d["spec"]["template"]["metadata"]["labels"]},
           "spec": spec}
    p = kube.run("create", "--dry-run=server", "-f", "-", input=json.dumps(pod), check=False)
    assert p.returncode == 0 and "Warning" not in p.stderr, p.stderr


def test_rbac_least_privilege(kube, applied):
    sa = f"system:serviceaccount:{NS}:jobset-controller-manager"

    def can(verb, res, ns=None):
        args = ["auth", "can-i", verb, res, "--as", sa] + (["-n", ns] if ns else ["--all-namespaces"])
        return kube.run(*args, check=False).stdout.strip() == "yes"
    for verb, res in (("create", "jobs.batch"), ("delete", "jobs.batch"), ("patch", "jobsets.jobset.x-k8s.io/status"),
                      ("create", "services"), ("delete", "pods"), ("update", "pods/status"), ("list", "nodes"),
                      ("create", "persistentvolumeclaims"), ("create", "events.events.k8s.io")):
        assert can(verb, res), f"cannot {verb} {res}"
    for verb, res in (("delete", "persistentvolumeclaims"), ("create", "pods"), ("delete", "nodes"),
                      ("update", "nodes"), ("get", "secrets"), ("create", "deployments.apps")):
        assert not can(verb, res), f"can {verb} {res} cluster-wide"
    assert can("get", "secrets", NS) and can("update", "leases.coordination.k8s.io", NS)
    assert not can("get", "secrets", "default")


def test_webhook_configurations(kube, crd):
    # Rendered, not applied: the registrations the API server would use.
    out = kube.run("kustomize", str(ROOT / "deploy")).stdout
    import yaml
    docs = {(d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all(out) if d}
    m = docs[("MutatingWebhookConfiguration", "jobset-mutating-webhook-configuration")]["webhooks"]
    v = docs[("ValidatingWebhookConfiguration", "jobset-validating-webhook-configuration")]["webhooks"]
    want = {"mjobset.kb.io": ("/mutate-jobset-x-k8s-io-v1alpha2-jobset", ["CREATE"]),
            "mpod.kb.io": ("/mutate--v1-pod", ["CREATE"]),
            "vjobset.kb.io": ("/validate-jobset-x-k8s-io-v1alpha2-jobset", ["CREATE", "UPDATE"]),
            "vpod.kb.io": ("/validate--v1-pod", ["CREATE"])}
    for h in m + v:
        path, ops = want.pop(h["name"])
        assert h["clientConfig"]["service"] == {"name": "jobset-webhook-service", "namespace": NS, "path": path}
        assert h["failurePolicy"] == "Fail" and h["sideEffects"] == "None" and h["admissionReviewVersions"] == ["v1"]
        assert h["rules"][0]["operations"] == ops
        if "pod" in h["name"]:
            assert h["objectSelector"]["matchExpressions"] == [
                {"key": "jobset.sigs.k8s.io/jobset-name", "operator": "Exists"}]
    assert not want
    svc = docs[("Service", "jobset-webhook-service")]["spec"]
    assert svc["ports"][0]["port"] == 443 and svc["ports"][0]["targetPort"] == 9443


@pytest.mark.parametrize("path,needle", [
    ("jobset.spec.replicatedJobs.template", "spec\t<Object>"),
    ("jobset.spec.replicatedJobs.template.spec", "completionMode"),
    ("jobset.spec.replicatedJobs.template.spec.template.spec.containers", "image"),
    ("jobset.spec.volumeClaimPolicies.templates.spec", "accessModes"),
    ("jobset.spec.failurePolicy.restartStrategy", "Recreate"),
])
def test_kubectl_explain(kube, crd, path, needle):
    out = kube.run("explain", path).stdout
    assert needle in out, out[:2000]
