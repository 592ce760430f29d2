"""After every other cluster test (pytest runs files in name order; this one
is last): the API server refused the controller's ServiceAccount nothing,
and everything it did is granted by deploy/'s rules as rendered.

Every request of deploy/'s ServiceAccount is in the API server's audit log
(hack/cluster's policy: the ServiceAccounts of jobset-system, metadata
only), with the authorizer's decision as an annotation. A verb deploy/
lacks would show there as "forbid" even when the
controller only retries it quietly (an informer's LIST, a Lease update); the
tests that made it would likely fail too, but this names the verb. The
requests are also matched against the rendered rules themselves, so the
check does not rest on the API server alone, and the grants never used are
printed (upstream's role grants some the controller never uses: pods
update/patch/delete, jobs/status, ...; deploy/ keeps upstream's role,
test_least_privilege.py::test_rbac_is_upstreams).
"""
import json
import os
from pathlib import Path

import pytest
import yaml

from conftest import CONTROLLER_SA, ROOT, SYSTEM_NS

pytestmark = pytest.mark.skipif(not os.environ.get("JOBSET_TEST_AUDIT_LOG"),
                                reason="JOBSET_TEST_AUDIT_LOG unset: run hack/cluster up and eval hack/cluster env")

SA_USER = f"system:serviceaccount:{SYSTEM_NS}:{CONTROLLER_SA}"


def allowed(rules, group, resource, verb, name=None):
    for r in rules:
        if "nonResourceURLs" in r:
            continue
        if not ({"*", group} & set(r.get("apiGroups") or [])):
            continue
        if not ({"*", resource} & set(r.get("resources") or [])):
            continue
        if not ({"*", verb} & set(r.get("verbs") or [])):
            continue
        if r.get("resourceNames") and name not in r["resourceNames"]:
            continue
        return True
    return False


def test_controller_was_refused_nothing(kube):
    docs = [d for d in yaml.safe_load_all(kube.run("kustomize", str(ROOT / "deploy")).stdout) if d]
    cluster_rules, ns_rules = [], []
    for d in docs:
        if d["kind"] not in ("ClusterRoleBinding", "RoleBinding"):
            continue
        if not any(s.get("kind") == "ServiceAccount" and s.get("name") == CONTROLLER_SA
                   for s in d.get("subjects") or []):
            continue
        role = next(r for r in docs if r["kind"] == d["roleRef"]["kind"] and
                    r["metadata"]["name"] == d["roleRef"]["name"])
        (cluster_rules if d["kind"] == "ClusterRoleBinding" else ns_rules).extend(role["rules"])
    used, refused, ungranted = {}, [], []
    needle = f'"username":"{SA_USER}"'
    for line in Path(os.environ["JOBSET_TEST_AUDIT_LOG"]).read_text().splitlines():
        if needle not in line:
            continue  # decode only the controller's lines: the log is long
        e = json.loads(line)
        # The controller's requests (kubectl runs as this identity in some
        # tests too: `auth whoami`).
        if e["user"]["username"] != SA_USER or not e.get("userAgent", "").startswith("jobset-controller/"):
            continue
        if e.get("stage") != "ResponseComplete":
            continue
        ref = e.get("objectRef") or {}
        res = ref.get("resource", "") + (f"/{ref['subresource']}" if ref.get("subresource") else "")
        key = (e["verb"], ref.get("apiGroup", ""), res, ref.get("namespace") == SYSTEM_NS)
        used[key] = used.get(key, 0) + 1
        # RBAC's verdict is the authorization annotation; a 403 for another
        # reason (creating an event in a namespace being deleted: the
        # NamespaceLifecycle admission) is not a missing grant.
        code = (e.get("responseStatus") or {}).get("code", 0)
        if code == 401 or (e.get("annotations") or {}).get("authorization.k8s.io/decision") != "allow":
            refused.append(f'{e["verb"]} {e["requestURI"]}: {code} {(e.get("responseStatus") or {}).get("message", "")}')
        if not ref:
            continue  # non-resource URLs: the controller requests none
        ok = allowed(cluster_rules, ref.get("apiGroup", ""), res, e["verb"], ref.get("name")) or (
            ref.get("namespace") == SYSTEM_NS and allowed(ns_rules, ref.get("apiGroup", ""), res, e["verb"],
                                                          ref.get("name")))
        if not ok:
            ungranted.append(f'{e["verb"]} {e["requestURI"]}')
    assert used, "no request of the controller's ServiceAccount in the audit log"
    assert not refused, "the API server refused the controller:\n" + "\n".join(sorted(set(refused))[:50])
    assert not ungranted, "not granted by deploy/'s rules:\n" + "\n".join(sorted(set(ungranted))[:50])
    # What the run used (printed with -s or on failure): the controller's
    # whole API surface.
    for (verb, group, res, in_system), n in sorted(used.items()):
        print(f"{n:7d} {verb:6s} {group or 'core'}/{res}{' (jobset-system)' if in_system else ''}")
    # The surface this suite must have exercised, or the check above proves
    # little: reconciling, leader election, events, certificates, reviews.
    must = {("create", "batch", "jobs"), ("patch", "jobset.x-k8s.io", "jobsets/status"),
            ("list", "jobset.x-k8s.io", "jobsets"), ("watch", "batch", "jobs"), ("update", "coordination.k8s.io", "leases"),
            ("create", "events.k8s.io", "events"), ("update", "", "secrets"),
            ("update", "admissionregistration.k8s.io", "validatingwebhookconfigurations"),
            ("create", "authentication.k8s.io", "tokenreviews"),
            ("create", "authorization.k8s.io", "subjectaccessreviews")}
    seen = {(v, g, r) for v, g, r, _ in used}
    assert must <= seen, f"never exercised (run this file after the whole cluster suite): {sorted(must - seen)}"
