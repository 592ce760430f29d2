"""End-to-end tests of `jobset validate` and `jobset render` as a user runs them, and of the
options every subcommand shares (-o, --feature-gates).

JOBSET_BIN points at the built binary; JS_SHARED_DIR at ../shared (upstream examples).
"""
import json
import os
import pathlib
import subprocess

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[3]
BIN = os.environ.get("JOBSET_BIN", str(ROOT / "build" / "jobset"))
SHARED = pathlib.Path(os.environ.get("JS_SHARED_DIR", ROOT.parent / "shared"))
EXAMPLES = sorted((SHARED / "upstream-examples").rglob("*.yaml"))
GATED = {"restartjob-action.yaml": "RestartJob", "restartjobandignoremaxrestarts-action.yaml": "RestartJob",
         "jobset-main-container-mode.yaml": "InPlaceRestart", "jobset-sidecar-container-mode.yaml": "InPlaceRestart"}


def run(*args, stdin=None):
    return subprocess.run([BIN, *args], input=stdin, capture_output=True, text=True, timeout=60)


def test_examples_are_present():
    assert len(EXAMPLES) > 30, f"upstream examples not found under {SHARED}"


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: str(p.relative_to(SHARED)))
def test_validate_upstream_example(path):
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    jobsets = [d for d in docs if d.get("kind") == "JobSet"]
    r = run("validate", str(path))
    if not jobsets:
        assert r.returncode == 0
        assert "not a JobSet" in r.stderr
        return
    gate = GATED.get(path.name)
    if gate:
        assert r.returncode == 1
        assert f"{gate} feature gate" in r.stderr
        r = run("validate", "--feature-gates", f"{gate}=true", str(path))
    assert r.returncode == 0, r.stderr
    assert "is valid" in r.stdout
    for d in docs:
        if d.get("kind") not in (None, "JobSet"):
            assert "not a JobSet" in r.stderr


@pytest.mark.parametrize("path", [p for p in EXAMPLES if p.name not in GATED and any(
    d and d.get("kind") == "JobSet" for d in yaml.safe_load_all(p.read_text()))],
                         ids=lambda p: p.name)
def test_render_upstream_example(path):
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    jobsets = [d for d in docs if d.get("kind") == "JobSet"]
    r = run("render", "-o", "json", str(path))
    assert r.returncode == 0, r.stderr
    items = json.loads(r.stdout)["items"]
    js = jobsets[0]
    name = js["metadata"].get("name") or js["metadata"]["generateName"]
    rjobs = js["spec"]["replicatedJobs"]
    jobs = [i for i in items if i["kind"] == "Job"]
    assert len(jobs) == sum(rj.get("replicas", 1) for rj in rjobs) if len(jobsets) == 1 else len(jobs) > 0
    for job in jobs:
        labels = job["metadata"]["labels"]
        assert labels["jobset.sigs.k8s.io/jobset-name"] == name
        assert job["metadata"]["name"] == f'{name}-{labels["jobset.sigs.k8s.io/replicatedjob-name"]}-{labels["jobset.sigs.k8s.io/job-index"]}'
        assert job["spec"]["template"]["metadata"]["labels"]["jobset.sigs.k8s.io/job-key"] == labels["jobset.sigs.k8s.io/job-key"]
        assert job["metadata"]["ownerReferences"][0]["controller"] is True
    svcs = [i for i in items if i["kind"] == "Service"]
    net = js["spec"].get("network", {})
    if net.get("enableDNSHostnames", True):
        assert svcs and svcs[0]["spec"]["clusterIP"] == "None"
        assert svcs[0]["metadata"]["name"] == (net.get("subdomain") or name)


def test_render_yaml_is_stable_and_reloads():
    path = SHARED / "upstream-examples/simple/paralleljobs.yaml"
    a, b = run("render", str(path)), run("render", str(path))
    assert a.returncode == 0 and a.stdout == b.stdout
    assert len([d for d in yaml.safe_load_all(a.stdout) if d]) > 1


def test_render_attempt():
    path = SHARED / "upstream-examples/simple/paralleljobs.yaml"
    r = run("render", "--attempt", "2", "-o", "json", str(path))
    items = json.loads(r.stdout)["items"]
    assert all(i["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"] == "2" for i in items if i["kind"] == "Job")
    assert run("render", "--attempt", "-1", str(path)).returncode == 2


BAD = [
    ("wrong apiVersion", "apiVersion: jobset.x-k8s.io/v1alpha1\nkind: JobSet\nmetadata: {name: a}\n", "1:1", "apiVersion"),
    ("missing kind", "apiVersion: v1\nmetadata: {name: a}\n", "", "apiVersion and kind are required"),
    ("syntax", "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nspec: [\n", "", "Syntax error"),
    ("unknown field", "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: a}\nspec:\n  replicatedJob: []\n",
     "5:3", 'did you mean "replicatedJobs"'),
    ("number for string", "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: a}\nspec:\n  managedBy: 12\n",
     "5:3", "expected string, got integer"),
    ("yes for string", "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: a}\nspec:\n  managedBy: yes\n",
     "5:3", "YAML 1.1"),
    ("a scalar document", "hello\n", "", "mapping"),
]


@pytest.mark.parametrize("name,text,pos,needle", BAD, ids=[b[0] for b in BAD])
def test_bad_input_names_the_place(name, text, pos, needle):
    r = run("validate", "-", stdin=text)
    assert r.returncode == 1, r.stderr
    assert needle in r.stderr
    assert "<stdin>:" in r.stderr
    if pos:
        assert f"<stdin>:{pos}:" in r.stderr


def test_reports_every_error_and_json_output():
    text = ("apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: a}\nspec:\n"
            "  ttlSecondsAfterFinished: -1\n  managedBy: nope\n  replicatedJobs:\n  - name: w\n    replicas: -2\n"
            "    template:\n      spec:\n        template:\n          spec:\n            containers: [{name: c, image: i}]\n")
    r = run("validate", "-o", "json", "-", stdin=text)
    assert r.returncode == 1
    report = json.loads(r.stdout)
    fields = {e["field"] for e in report[0]["errors"]}
    assert {"spec.ttlSecondsAfterFinished", "spec.managedBy", "spec.replicatedJobs[0].replicas"} <= fields
    line = {e["field"]: e["line"] for e in report[0]["errors"]}
    assert line["spec.replicatedJobs[0].replicas"] == 9


def test_exit_codes_and_help():
    assert run("validate").returncode == 2
    assert run("validate", "/nonexistent.yaml").returncode == 2
    assert run("bogus").returncode == 2
    for cmd in ("validate", "render", "version"):
        r = run(cmd, "--help")
        assert r.returncode == 0 and "usage: jobset" in r.stdout
    assert "v1alpha2" in run("version").stdout


def test_huge_and_binary_input(tmp_path):
    big = tmp_path / "big.yaml"
    with open(big, "wb") as f:
        f.write(b"a: " + b"x" * (100 * 1024 * 1024) + b"\n")
    r = run("validate", str(big))
    assert r.returncode == 1 and "larger than" in r.stderr
    garbage = tmp_path / "garbage.bin"
    garbage.write_bytes(bytes(range(256)) * 64)
    r = run("validate", str(garbage))
    assert r.returncode == 1 and f"{garbage}:" in r.stderr


def test_near_miss_kind_in_our_group_is_an_error():
    text = "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: Jobset\nmetadata: {name: a}\n"
    r = run("validate", "-", stdin=text)
    assert r.returncode == 1
    assert '<stdin>:2:1: kind:' in r.stderr and 'did you mean "JobSet"' in r.stderr


NEWER_POD_SPEC = """\
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: newer}
spec:
  replicatedJobs:
  - name: w
    template:
      spec:
        template:
          spec:
            restartPolicy: Never
            schedulingGroup: {podGroupName: my-group}
            containers: [{name: c, image: busybox}]
            volumes:
            - name: cert
              projected:
                sources:
                - podCertificate: {signerName: example.com/s, keyType: ED25519, credentialBundlePath: c.pem,
                                   userAnnotations: {example.com/team: ml}}
"""


def test_newer_pod_spec_fields_pass_validate_and_render():
    """Pod-spec fields newer than the oldest supported Kubernetes (1.36's
    schedulingGroup, 1.35's podCertificate.userAnnotations; issue 24) are
    the API server's to check: validate accepts them and render carries
    them into the pods' template."""
    r = run("validate", "-", stdin=NEWER_POD_SPEC)
    assert r.returncode == 0 and "is valid" in r.stdout, r.stderr
    r = run("render", "-o", "json", "-", stdin=NEWER_POD_SPEC)
    assert r.returncode == 0, r.stderr
    job = next(i for i in json.loads(r.stdout)["items"] if i["kind"] == "Job")
    pod = job["spec"]["template"]["spec"]
    assert pod["schedulingGroup"] == {"podGroupName": "my-group"}
    assert pod["volumes"][0]["projected"]["sources"][0]["podCertificate"]["userAnnotations"] == {
        "example.com/team": "ml"}


@pytest.mark.parametrize("replicas,want", [
    # within the size limits, past what render prints
    (50000, "render prints at most 10000"),
    # past the size limits (issue 22, docs/differences.md "Size limits")
    (1000000, "spec.replicatedJobs[0].replicas: Invalid value: 1000000: the JobSet would have 1000000 child Jobs"),
])
def test_render_refuses_a_huge_jobset_quickly(tmp_path, replicas, want):
    f = tmp_path / "huge.yaml"
    f.write_text("apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: h}\nspec:\n"
                 f"  replicatedJobs:\n  - name: w\n    replicas: {replicas}\n    template:\n      spec:\n"
                 "        template:\n          spec:\n            containers: [{name: c, image: i}]\n")
    r = run("render", str(f))
    assert r.returncode == 1
    assert want in r.stderr, r.stderr
    assert r.stdout == ""


IN_PLACE = SHARED / "upstream-examples" / "in-place-restart" / "jobset-main-container-mode.yaml"
# (subcommand, options, exit status, text on stdout or stderr). The shared options are parsed in one
# place (src/cli/manifest.c), so each subcommand says the same thing. InPlaceRestart=true is refused
# by the simulator, which models Jobs and not the pods an in-place restart needs (docs/differences.md);
# `jobset run` drives it (tests/e2e/local/test_inplace_restart.py).
OPTION_CASES = [
    ("validate", ["--feature-gates", "InPlaceRestart=true"], 0, "is valid"),
    ("render", ["--feature-gates", "InPlaceRestart=true"], 0, "kind: Job"),
    ("run", ["--feature-gates", "RestartJob=true,InPlaceRestart=1,Nope=true"], 2, "unknown feature gate 'Nope'"),
    ("simulate", ["--feature-gates", "InPlaceRestart=true"], 2, "the simulator models Jobs, not Pods"),
    # KEP-969: gang scheduling is the Kubernetes scheduler's; nothing here could gang pods.
    ("run", ["--feature-gates", "JobSetWorkloadAwareSchedulingAPI=true"], 2,
     "JobSetWorkloadAwareSchedulingAPI=true is refused"),
    ("simulate", ["--feature-gates", "JobSetWorkloadAwareSchedulingAPI=true"], 2,
     "JobSetWorkloadAwareSchedulingAPI=true is refused"),
    ("validate", ["--feature-gates", "InPlaceRestart=true,JobSetWorkloadAwareSchedulingAPI=true"], 0, "is valid"),
    # Its deprecated alias (our first name) is the same gate.
    ("run", ["--feature-gates", "WorkloadAwareScheduling=true"], 2, "JobSetWorkloadAwareSchedulingAPI=true is refused"),
    ("validate", ["--feature-gates", "InPlaceRestart=true,WorkloadAwareScheduling=true"], 0, "is valid"),
    ("validate", ["--feature-gates", "RestartJob"], 2, "invalid feature gate 'RestartJob': expected Name=true|false"),
    ("render", ["--feature-gates", "Nope=true"], 2, "unknown feature gate 'Nope'"),
    ("run", ["--feature-gates", "TLSOptions=false"], 2, "locked to true"),
    ("simulate", ["--feature-gates", "RestartJob=yes"], 2, "expected Name=true|false"),
    # component-base's AllAlpha/AllBeta: every alpha gate not named takes the value.
    ("validate", ["--feature-gates", "AllAlpha=true,AllBeta=false"], 0, "is valid"),
    ("render", ["--feature-gates", "AllAlpha=1"], 0, "kind: Job"),
    ("render", ["--feature-gates", "AllBeta=true"], 1, "needs the InPlaceRestart feature gate"),  # it is alpha
    ("run", ["--feature-gates", "AllAlpha=true"], 2, "turns it on too: add JobSetWorkloadAwareSchedulingAPI=false"),
    ("run", ["--feature-gates", "AllAlpha=true,JobSetWorkloadAwareSchedulingAPI=false,Nope=1"], 2,
     "unknown feature gate 'Nope'"),
    ("simulate", ["--feature-gates", "AllAlpha=true,JobSetWorkloadAwareSchedulingAPI=false"], 2,
     "turns it on too: add InPlaceRestart=false"),
    ("validate", ["-o", "yaml"], 2, "jobset validate: -o takes text or json, not 'yaml'"),
    ("render", ["-o", "text"], 2, "jobset render: -o takes yaml or json, not 'text'"),
    ("render", ["--output", "json", "--feature-gates", "InPlaceRestart=true"], 0, '"kind": "List"'),
]


def test_kep969_deprecated_names_warn(tmp_path):
    """KEP-969 renamed the gate and the spec.scheduling fields; the old
    names are accepted for one release, and `jobset validate` says which
    new name to use (on stderr; the manifest is still valid). Both names of
    one field are refused with the field path."""
    r = run("validate", "--feature-gates", "InPlaceRestart=true,WorkloadAwareScheduling=true", str(IN_PLACE))
    assert r.returncode == 0 and "is valid" in r.stdout, r.stdout + r.stderr
    assert "feature gate 'WorkloadAwareScheduling' is deprecated" in r.stderr, r.stderr
    assert "use 'JobSetWorkloadAwareSchedulingAPI'" in r.stderr, r.stderr
    r = run("validate", "--feature-gates", "InPlaceRestart=true,JobSetWorkloadAwareSchedulingAPI=true", str(IN_PLACE))
    assert r.returncode == 0 and "deprecated" not in r.stderr, r.stdout + r.stderr

    def manifest(scheduling):
        doc = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "g"},
               "spec": {"scheduling": scheduling, "replicatedJobs": [
                   {"name": "w", "template": {"spec": {"template": {"spec": {
                       "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}}]}}
        p = tmp_path / "g.json"
        p.write_text(json.dumps(doc))
        return str(p)
    gate = ["--feature-gates", "JobSetWorkloadAwareSchedulingAPI=true"]
    r = run("validate", *gate, manifest({"replicatedJobPolicies": [{"targetReplicatedJob": "w",
                                                                    "disruption": "All"}]}))
    assert r.returncode == 0 and "is valid" in r.stdout, r.stdout + r.stderr
    for want in ("spec.scheduling.replicatedJobPolicies: deprecated field name, use spec.scheduling.replicatedJobs",
                 "replicatedJobPolicies[0].targetReplicatedJob: deprecated field name",
                 "replicatedJobPolicies[0].disruption: deprecated field name"):
        assert want in r.stderr, r.stderr
    r = run("validate", *gate, manifest({"replicatedJobs": [{"targetReplicatedJobs": ["w"],
                                                             "disruptionMode": {"all": {}}}]}))
    assert r.returncode == 0 and "deprecated" not in r.stderr, r.stdout + r.stderr
    r = run("validate", *gate, manifest({"policy": {"basic": {}}, "schedulingPolicy": {"gang": {}}}))
    assert r.returncode == 1, r.stdout + r.stderr
    assert "spec.scheduling.policy: Forbidden" in r.stderr and "both are set" in r.stderr, r.stderr


@pytest.mark.parametrize("cmd,opts,rc,needle", OPTION_CASES,
                         ids=[f"{c[0]} {' '.join(c[1])}" for c in OPTION_CASES])
def test_shared_options(cmd, opts, rc, needle, tmp_path):
    run_dir = tmp_path / "run"
    extra = ["--run-dir", str(run_dir)] if cmd == "run" else []
    r = run(cmd, *opts, *extra, str(IN_PLACE))
    assert r.returncode == rc, r.stdout + r.stderr
    assert needle in (r.stdout if rc == 0 else r.stderr), r.stdout + r.stderr
    assert not run_dir.exists()  # a refused run starts nothing
