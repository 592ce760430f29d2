"""The generated CRD (deploy/crd, tools/crdgen) against upstream's.

Upstream's CRD is read from the Go module cache at test time
(`go mod download -json sigs.k8s.io/jobset@v0.12.0`, GOMODCACHE under
$JOBSET_CACHE/go as hack/cluster uses); nothing of it is committed. For the
JobSet-owned fields (everything but the embedded Job and PVC templates) the
property tree, types, required lists, enums and defaults must be the same;
other differences (formats, minimums, list types, CEL, and everything inside
the embedded Kubernetes schemas, which follow the Kubernetes version of the
control plane) are reported, and the known ones are listed below.

Also: the committed CRD is exactly what tools/crdgen makes from the OpenAPI
documents of the newest Kubernetes the project supports (checked in the gang
phase, whose cluster is that version), it keeps the pod-spec fields newer than
the oldest supported version, and the API server of any supported version
accepts it and stores those fields.
"""
import difflib
import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from conftest import UPSTREAM_VERSION, jobset, rjob, upstream_module_dir
from webhook_common import ROOT, binary

OURS = ROOT / "deploy" / "crd" / "jobset.x-k8s.io_jobsets.yaml"

# Deliberate differences in JobSet-owned fields (path, keyword): ours is
# stricter where SPEC §5.2 says the schema checks it.
KNOWN = {
    (".spec.replicatedJobs[].replicas", "minimum"),         # SPEC §5.2 S10: negative replicas rejected
    (".spec.coordinator.jobIndex", "format"),               # int32 in our model
    (".spec.coordinator.podIndex", "format"),
    # KEP-969 (gang scheduling) is merged upstream but not released in v0.12.0.
    (".spec.scheduling", "only in ours"),
}

# Fields and printer columns of upstream KEPs merged after the release we
# compare with (docs/differences.md "Feature gates"): only in ours, by design.
KEP_FIELDS = {
    ".spec.activeDeadlineSeconds",   # KEP-1186
    ".status.startTime",             # KEP-1186
    ".status.executionAttempts",     # KEP-1282
}
KEP_COLUMNS = {"StartTime"}          # KEP-1186 "API Changes"


def upstream_crd():
    return upstream_module_dir() / "config" / "components" / "crd" / "bases" / "jobset.x-k8s.io_jobsets.yaml"


def load(path):
    d = yaml.safe_load(Path(path).read_text())
    return d, d["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def compare(u, o, path="", embedded=False, out=None):
    """Differences as (owned?, path, what, upstream, ours)."""
    out = [] if out is None else out
    strict = ("type", "required", "enum", "default")
    loose = ("format", "minimum", "maximum", "maxItems", "minItems", "maxLength", "minLength", "pattern",
             "x-kubernetes-list-type", "x-kubernetes-list-map-keys", "x-kubernetes-map-type",
             "x-kubernetes-int-or-string", "x-kubernetes-preserve-unknown-fields", "x-kubernetes-validations")
    for k in strict + loose:
        uv, ov = u.get(k), o.get(k)
        if k == "required":
            uv, ov = sorted(uv or []), sorted(ov or [])
        if k == "x-kubernetes-validations":
            uv, ov = bool(uv), bool(ov)  # rules are ours in our words; presence must match
        if uv != ov:
            out.append((not embedded and k in strict, path, k, uv, ov))
    up, op = u.get("properties") or {}, o.get("properties") or {}
    for k in sorted(set(up) | set(op)):
        emb = embedded or (path.endswith("replicatedJobs[]") and k == "template")
        if k not in op or k not in up:
            out.append((not emb, f"{path}.{k}", "missing in ours" if k not in op else "only in ours", None, None))
            continue
        compare(up[k], op[k], f"{path}.{k}", emb, out)
    if "items" in u or "items" in o:
        emb = embedded or path.endswith(".templates")
        if "items" in u and "items" in o:
            compare(u["items"], o["items"], path + "[]", emb, out)
        else:
            out.append((not emb, path + "[]", "items", "items" in u, "items" in o))
    if isinstance(u.get("additionalProperties"), dict) and isinstance(o.get("additionalProperties"), dict):
        compare(u["additionalProperties"], o["additionalProperties"], path + "{}", embedded, out)
    return out


def test_structure_matches_upstream():
    ud, us = load(upstream_crd())
    od, os_ = load(OURS)
    # Identity, printer columns, subresources (SPEC §1).
    assert od["metadata"]["name"] == ud["metadata"]["name"] == "jobsets.jobset.x-k8s.io"
    assert od["spec"]["names"] == ud["spec"]["names"]
    assert od["spec"]["group"] == ud["spec"]["group"] and od["spec"]["scope"] == ud["spec"]["scope"]
    uv, ov = ud["spec"]["versions"][0], od["spec"]["versions"][0]
    for k in ("name", "served", "storage", "subresources"):
        assert ov[k] == uv[k], k
    cols = lambda v: [(c["name"], c["jsonPath"], c["type"], c.get("priority", 0)) for c in v["additionalPrinterColumns"]
                      if c["name"] not in KEP_COLUMNS]
    assert cols(ov) == cols(uv)
    assert {c["name"] for c in ov["additionalPrinterColumns"]} >= KEP_COLUMNS

    diffs = compare(us, os_)
    kep = [d for d in diffs if d[1] in KEP_FIELDS and d[2] == "only in ours"]
    assert len(kep) == len(KEP_FIELDS), kep
    diffs = [d for d in diffs if d not in kep]
    owned = [d for d in diffs if d[0] and (d[1], d[2]) not in KNOWN]
    other = [d for d in diffs if not d[0] or (d[1], d[2]) in KNOWN]
    print(f"\nCRD vs upstream {UPSTREAM_VERSION}: {len(owned)} differences in JobSet-owned required/enum/default/"
          f"type/tree, {len(other)} others (reported):")
    for d in other:
        print(f"  {'known' if (d[1], d[2]) in KNOWN else 'info '} {d[1]}: {d[2]}: upstream={d[3]!r} ours={d[4]!r}"[:240])
    assert not owned, "\n".join(f"{d[1]}: {d[2]}: upstream={d[3]!r} ours={d[4]!r}" for d in owned)
    # Everything known is still a difference (otherwise drop it from KNOWN).
    assert KNOWN <= {(d[1], d[2]) for d in diffs}


def newest_kubernetes():
    """The newest Kubernetes version the project supports, named once in
    hack/cluster (the gang phase's cluster, and the CRD's embedded schemas)."""
    return subprocess.run([str(ROOT / "hack" / "cluster"), "version", "newest"], capture_output=True, text=True,
                          check=True).stdout.strip()


def served_version(kube):
    return json.loads(kube.run("version", "-o", "json").stdout)["serverVersion"]["gitVersion"]


# Fields of pod specs newer than the oldest supported Kubernetes (1.34) that
# the CRD must keep: 1.36's pod-level schedulingGroup (upstream's
# workload-aware-scheduling docs and e2e put it in the JobSet's pod template,
# kubernetes-sigs/jobset#1252) and 1.35's podCertificate.userAnnotations.
POD = ".spec.replicatedJobs[].template.spec.template.spec"
NEWER_POD_FIELDS = (POD + ".schedulingGroup.podGroupName",
                    POD + ".volumes[].projected.sources[].podCertificate.userAnnotations")


def schema_at(schema, path):
    """The node of an openAPIV3Schema at a dotted path ("[]" steps into
    items), or None."""
    node = schema
    for part in path.strip(".").split("."):
        for step in part.replace("[]", ".[]").split("."):
            node = (node.get("items") if step == "[]" else (node.get("properties") or {}).get(step)) if node else None
    return node


def test_crd_has_the_newest_pod_spec_fields():
    _, schema = load(OURS)
    missing = [p for p in NEWER_POD_FIELDS if schema_at(schema, p) is None]
    assert not missing, f"the CRD lacks {missing}: it was generated against an older Kubernetes than " \
                        f"{newest_kubernetes()}; run tools/crdgen/regen.sh"


@pytest.mark.skipif(not os.environ.get("JOBSET_TEST_KUBECONFIG"), reason="needs hack/cluster (JOBSET_TEST_KUBECONFIG)")
def test_committed_crd_is_generated_from_the_newest_kubernetes(kube, tmp_path):
    """The committed CRD is byte for byte what tools/crdgen makes from the
    newest supported Kubernetes' OpenAPI documents: it fails when the schema
    lags that version. Runs in the cluster tier's gang phase (its cluster is
    that version); on another control plane it is skipped with the reason."""
    newest, served = newest_kubernetes(), served_version(kube)
    if served != newest:
        pytest.skip(f"this control plane is {served}; the CRD is generated from {newest} (`hack/cluster version "
                    "newest`), which the gang phase of scripts/test cluster runs")
    for name, path in (("batch", "/openapi/v3/apis/batch/v1"), ("core", "/openapi/v3/api/v1")):
        (tmp_path / f"{name}.json").write_text(kube.run("get", "--raw", path).stdout)
    out = tmp_path / "crd.yaml"
    subprocess.run([str(binary("jobset-crdgen", "JOBSET_CRDGEN_BIN")), "--batch", str(tmp_path / "batch.json"),
                    "--core", str(tmp_path / "core.json"), "-o", str(out)], check=True)
    if out.read_bytes() != OURS.read_bytes():
        diff = list(difflib.unified_diff(OURS.read_text().splitlines(), out.read_text().splitlines(),
                                         "deploy/crd (committed)", f"generated from {served}", n=1, lineterm=""))
        pytest.fail(f"deploy/crd/jobset.x-k8s.io_jobsets.yaml lags Kubernetes {served}, the newest supported "
                    f"version: run tools/crdgen/regen.sh ({len(diff)} diff lines; the first 40):\n"
                    + "\n".join(diff[:40]), pytrace=False)


@pytest.mark.skipif(not os.environ.get("JOBSET_TEST_KUBECONFIG"), reason="needs hack/cluster (JOBSET_TEST_KUBECONFIG)")
def test_committed_crd_is_served_with_newer_pod_fields(kube, crd, ns):
    """On any supported control plane (the oldest, 1.34, in the cluster
    tier): the API server takes the CRD (generated from the newest) as a
    structural schema, and stores a JobSet whose pod template has the newer
    pod-spec fields as written, neither pruned nor refused."""
    kube.run("apply", "--server-side", "--dry-run=server", "--force-conflicts", "-f", str(OURS))
    r = rjob("w")
    pod = r["template"]["spec"]["template"]["spec"]
    pod["schedulingGroup"] = {"podGroupName": "my-group"}
    pod["volumes"] = [{"name": "cert", "projected": {"sources": [{"podCertificate": {
        "signerName": "example.com/signer", "keyType": "ED25519", "credentialBundlePath": "creds.pem",
        "userAnnotations": {"example.com/team": "ml"}}}]}}]
    # Suspended from creation: no Jobs (docs/differences.md (a)), so a
    # controller running alongside makes nothing of it on an older cluster.
    kube.apply(jobset("newer-pod-fields", [r], suspend=True), ns)
    got = kube.jobset("newer-pod-fields", ns)["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    assert got["schedulingGroup"] == {"podGroupName": "my-group"}
    assert got["volumes"][0]["projected"]["sources"][0]["podCertificate"]["userAnnotations"] == {
        "example.com/team": "ml"}
