"""The seed's multislice shape on real nodes: examples/jax/jax-cpu.yaml (2
slices x 2 hosts, JAX on CPU with gloo) as a JobSet of the controller from
deploy/, its 4 pods on 2 real kubelets. The coordinator is found by its
stable DNS name through CoreDNS; the last process crashes once (exit 3) and
the JobSet restarts every Job; the next attempt resumes from the checkpoint
on a volume both nodes see (a hostPath on the cluster's state directory,
standing in for the example's ReadWriteMany claim: the test cluster has no
storage provisioner).

The image is built without a registry from what the machine has: Debian's
python3.11 and its standard library with their shared libraries
(`hack/cluster image bundle`); the jax venv the local JAX test uses
(~/.cache/jobset/venv-jax-<version>) is mounted read-only from the machine
(a hostPath), as a cluster would mount a shared software volume."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import REAL, ROOT, condition, hc, wait_for

JAX_VERSION = "0.4.38"
IMAGE = f"localhost/jobset-test/jax:{JAX_VERSION}"


@pytest.fixture(scope="module")
def jax_image(controller):
    venv = Path.home() / ".cache" / "jobset" / f"venv-jax-{JAX_VERSION}"
    if not (venv / ".installed").exists():
        # As tests/e2e/local/test_jax.py makes it (PyPI), once per machine.
        shutil.rmtree(venv, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "python3"), "-m", "pip", "install", "-q", f"jax[cpu]=={JAX_VERSION}"],
                       check=True, timeout=1200)
        (venv / ".installed").write_text(JAX_VERSION + "\n")
    site = next((venv / "lib").glob("python3.*/site-packages"))
    py = Path("/usr/bin/python3.11")
    assert py.exists() and site.parent.name == "python3.11", (py, site)
    # The image: Python and its standard library (~60 MB), and the shared
    # libraries of the machine that the venv's extension modules need
    # (jaxlib's libstdc++ ...). The venv's packages themselves (~640 MB:
    # jaxlib alone 370 MB) reach the pods as a read-only hostPath volume
    # (jax_volume): copying them into an image, archiving it and unpacking
    # it into each node's containerd took 2 - 4 of the test's 4 - 6 minutes
    # on 2 loaded cores, and proves nothing about the JobSet.
    libs = {}
    for so in site.rglob("*.so*"):
        out = subprocess.run(["ldd", str(so)], capture_output=True, text=True).stdout
        for line in out.splitlines():
            parts = line.split()
            if len(parts) >= 3 and parts[1] == "=>" and parts[2].startswith("/") and \
                    not parts[2].startswith(str(site)):
                libs[parts[2]] = os.path.realpath(parts[2])
    hc("image", "bundle", IMAGE, "--env", f"PYTHONPATH={site}", str(py), f"{py}=/usr/bin/python3",
       "/usr/lib/python3.11", *(f"{real}={path}" for path, real in sorted(libs.items())), timeout=900)
    return IMAGE, site


def test_jax_multislice_restarts_and_resumes_on_real_nodes(controller, ns, nodes, jax_image):
    docs = list(yaml.safe_load_all((ROOT / "examples" / "jax" / "jax-cpu.yaml").read_text()))
    cm = next(d for d in docs if d["kind"] == "ConfigMap")
    js = next(d for d in docs if d["kind"] == "JobSet")
    shared = Path(os.environ["JOBSET_CLUSTER_DIR"]) / "shared" / ns / "checkpoints"
    shared.mkdir(parents=True, exist_ok=True)
    del js["spec"]["volumeClaimPolicies"]
    pod = js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    image, site = jax_image
    pod["volumes"].append({"name": "checkpoints", "hostPath": {"path": str(shared)}})
    pod["volumes"].append({"name": "jax-site", "hostPath": {"path": str(site), "type": "Directory"}})
    c = pod["containers"][0]
    c["image"], c["imagePullPolicy"] = image, "Never"
    c["volumeMounts"].append({"name": "jax-site", "mountPath": str(site), "readOnly": True})
    pod["nodeSelector"] = REAL
    # Spread the 4 processes over the nodes (2 per node).
    pod["topologySpreadConstraints"] = [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
                                         "whenUnsatisfiable": "DoNotSchedule",
                                         "labelSelector": {"matchLabels": {"jobset.sigs.k8s.io/jobset-name": "jax"}},
                                         "matchLabelKeys": ["jobset.sigs.k8s.io/restart-attempt"]}]
    controller.apply(cm, ns)
    controller.apply(js, ns)

    def done():
        o = controller.get("jobset", "jax", ns)
        return o if condition(o, "Completed") or condition(o, "Failed") else None

    o = wait_for("the JAX JobSet finished", done, timeout=900)
    pods = controller.pods(ns, "jobset.sigs.k8s.io/jobset-name=jax")
    logs = {p["metadata"]["name"]: controller.logs(ns, p["metadata"]["name"]) for p in pods}
    assert condition(o, "Completed"), (json.dumps(o.get("status")), logs)
    assert o["status"]["restarts"] == 1, o["status"]
    attempt1 = [p for p in pods if p["metadata"]["labels"].get("jobset.sigs.k8s.io/restart-attempt") == "1"]
    assert len(attempt1) == 4 and {p["spec"]["nodeName"] for p in attempt1} == set(nodes[:2]), \
        [(p["metadata"]["name"], p["spec"]["nodeName"]) for p in attempt1]
    text = "\n".join(logs[p["metadata"]["name"]] for p in attempt1)
    # The coordinator was found by name and every process summed across processes;
    # all four resumed from step 10's checkpoint.
    assert text.count("cross-process sum 10 (expected 10)") == 4, text
    assert text.count("resumed from checkpoint at step 10") == 4, text
    result = json.loads((shared / "result.json").read_text())
    assert result["attempt"] == 1 and result["resumed_from"] == 10 and result["error"] < 1e-3, result
