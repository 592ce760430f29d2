"""The examples/ manifests, run end to end: exit code, final status, logs."""
import re

from conftest import REPO

EX = REPO / "examples"


def test_demo_success_all_and_coordinator(run):
    r = run(EX / "demo.yaml")
    assert r.rc == 0, r.stderr
    assert r.status["terminalState"] == "Completed"
    # Worker 1 fails once in attempt 0; the set restarts once (test_report.py).
    assert r.status["restarts"] == 1
    assert r.condition("Completed")["reason"] == "AllJobsCompleted"
    # 4 workers (ranks 0-3) send (rank+1)*step for steps 1..10: 10 * 55.
    assert "leader: result=550" in r.logs("demo-leader-0-0", "leader")
    workers = r.logs("demo-workers-", "worker")
    # Workers found the leader by the coordinator endpoint, at its own
    # address, in both attempts (a worker may connect more than once: to the
    # old attempt's leader, which turns it away).
    connected = re.findall(r"connected to leader demo-leader-0-0\.demo at (\S+)", workers)
    assert len(connected) >= 8 and set(connected) == {"10.244.0.2"}, connected
    assert "logs:" in r.stdout and str(r.dir) in r.stdout


def test_success_any_stops_the_rest(run):
    r = run(EX / "success-any.yaml")
    assert r.rc == 0, r.stderr
    assert r.status["terminalState"] == "Completed"
    assert "searcher 1 found it" in r.logs("race-search-1-0", "search")
    complete = [j["metadata"]["name"] for j in r.jobs
                if any(c["type"] == "Complete" and c["status"] == "True" for c in j["status"].get("conditions", []))]
    assert complete == ["race-search-1"]
    # The two searchers sleeping 600 s were stopped, not waited for.
    m = re.search(r"Completed in ([0-9.]+)s", r.stdout)
    assert m and float(m.group(1)) < 30


def test_restart_resumes_from_checkpoint(run):
    r = run(EX / "restart-resume.yaml")
    assert r.rc == 0, r.stderr + r.stdout
    assert r.status["terminalState"] == "Completed"
    assert r.status["restarts"] == 1
    leader = r.logs("restart-leader-0-0", "leader")
    assert "resumed from checkpoint at step 2" in leader
    assert "leader: result=45" in leader
    assert "worker 1: failing at step 3" in r.logs("restart-workers-0-1", "worker")
    assert "DefaultFailurePolicy" in r.events()
    assert r.condition("Completed")["reason"] == "AllJobsCompleted"


def test_failjobset_by_exit_code_rule(run):
    r = run(EX / "fail-exitcode.yaml")
    assert r.rc == 1
    assert r.status["terminalState"] == "Failed"
    assert r.status["restarts"] == 0
    failed = r.condition("Failed")
    assert failed["reason"] == "FailJobSetFailurePolicyAction"
    assert "fatal-workers-0" in failed["message"]
    job = next(j for j in r.jobs if j["metadata"]["name"] == "fatal-workers-0")
    conds = {c["type"]: c for c in job["status"]["conditions"] if c["status"] == "True"}
    # FailureTarget first, then Failed, both with the pod failure policy reason.
    assert conds["FailureTarget"]["reason"] == "PodFailurePolicy"
    assert conds["Failed"]["reason"] == "PodFailurePolicy"
    assert re.search(r"Container worker for pod default/fatal-workers-0-1-\w+ failed with exit code 42 "
                     r"matching FailJob rule at index 0", conds["Failed"]["message"])
    assert "Failed" in r.stdout


def test_startup_inorder(run):
    r = run(EX / "startup-inorder.yaml")
    assert r.rc == 0, r.stderr
    assert r.condition("StartupPolicyCompleted")["reason"] == "InOrderStartupPolicyCompleted"
    ev = r.events()
    leader_started = ev.index("Started pod/inorder-leader-0-0-")
    workers_created = ev.index("Created job/inorder-workers-0")
    assert leader_started < workers_created


def test_depends_on_complete(run):
    r = run(EX / "depends-on.yaml")
    assert r.rc == 0, r.stderr
    ev = r.events()
    train_created = ev.index("Created job/pipeline-train-0")
    for j in ("pipeline-prepare-0", "pipeline-prepare-1"):
        assert ev.index(f"CompletionsReached job/{j}") < train_created
    assert "training on 2 shards" in r.logs("pipeline-train-0-0", "train")
