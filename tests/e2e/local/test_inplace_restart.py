"""In-place restart in the local runtime (KEP-467, docs/in-place-restart.md):
the processes of every pod really restart, the pods are not recreated, and
each run sees its attempt through the downward API."""
import yaml

from conftest import REPO

EX = REPO / "examples" / "in-place-restart.yaml"
ATTEMPT = "jobset.sigs.k8s.io/in-place-restart-attempt"


def test_example_restarts_every_pod_in_place(run):
    r = run(EX, "--feature-gates", "InPlaceRestart=true")
    assert r.rc == 0, r.stderr + r.stdout
    st = r.status
    assert st["terminalState"] == "Completed" and st["restarts"] == 0, st
    assert st["currentInPlaceRestartAttempt"] == 1 and st["previousInPlaceRestartAttempt"] == 0, st
    # Four pods, never replaced: each ran its worker at attempt 0 and again at 1.
    pods = r.pods
    assert len(pods) == 4, [p["metadata"]["name"] for p in pods]
    lines = (r.dir / "work" / "ipr-demo" / "log").read_text().splitlines()
    for p in pods:
        name = p["metadata"]["name"]
        mine = [ln.split(" attempt ")[1] for ln in lines if ln.startswith(name + " ")]
        assert mine == ["0", "1"], (name, lines)
        assert p["metadata"]["annotations"][ATTEMPT] == "1"
        assert p["status"]["phase"] == "Succeeded"
        cs = p["status"]["containerStatuses"][0]
        # One in-place restart of the container: the first run is lastState.
        assert cs["restartCount"] == 1, cs
        assert cs["state"]["terminated"]["exitCode"] == 0
    failed = next(p for p in pods if p["metadata"]["name"].startswith("ipr-demo-workers-0-1-"))
    assert failed["status"]["containerStatuses"][0]["lastState"]["terminated"]["exitCode"] == 3
    assert "failing" in r.logs("ipr-demo-workers-0-1-", "worker")
    # The other three were told to follow by previousInPlaceRestartAttempt.
    assert r.events().count("InPlaceRestart pod/") == 3


def test_attempts_beyond_max_restarts_fail_the_jobset(run, tmp_path):
    js = yaml.safe_load(EX.read_text())
    js["spec"]["failurePolicy"]["maxRestarts"] = 1
    worker = js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0]
    worker["command"] = ["sh", "-c", "sleep 0.2; exit 3"]  # fails at every attempt
    r = run(yaml.safe_dump(js), "--feature-gates", "InPlaceRestart=true")
    assert r.rc == 1, r.stderr + r.stdout
    failed = r.condition("Failed")
    assert failed and failed["reason"] == "ReachedMaxRestarts", r.status
    assert r.status["restarts"] == 0


def test_gate_off_refuses_the_strategy(run):
    r = run(EX)
    assert r.rc == 2
    assert "InPlaceRestart" in r.stderr
