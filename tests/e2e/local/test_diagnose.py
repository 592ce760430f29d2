"""Issue 11, "hard to diagnose": exit codes and reasons in events, jobs.json
and the summary; restarts as events; one event format, causes before
effects, no duplicated pairs; pods stopped by a deletion are not Failed;
jobset.json true after an interrupt; machine-readable output."""
import json
import re
import signal
import subprocess

from conftest import REPO, jobset_yaml, wait_for

EX = REPO / "examples"

# TIME TYPE REASON[,REASON] kind/name[: message]
EVENT_LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ (Normal|Warning) [A-Za-z]+(,[A-Za-z]+)* "
                        r"(pod|job|jobset|service|persistentvolumeclaim)/[a-z0-9.-]+(: .*)?$")


def _lines(r):
    return r.events().splitlines()


def test_exit_code_in_event_jobs_json_and_summary(run):
    r = run(EX / "fail-exitcode.yaml")
    assert r.rc == 1
    pod = r.pod("fatal-workers-0-1-")
    name = pod["metadata"]["name"]
    # The event says which container exited how.
    assert f"Warning Failed pod/{name}: worker: exit code 42 (Error)" in r.events()
    # jobs.json: the pod's status as a kubelet writes it.
    assert pod["status"]["phase"] == "Failed"
    term = pod["status"]["containerStatuses"][0]["state"]["terminated"]
    assert term["exitCode"] == 42 and term["reason"] == "Error"
    assert term["startedAt"] and term["finishedAt"]
    # The summary, compose-like.
    assert f"pod/{name}: worker Exited (42)" in r.stdout
    assert "pods: 0 succeeded, 1 failed, 2 stopped" in r.stdout


ON_FAILURE = jobset_yaml("onf", "echo failing; exit 42", restart="OnFailure", job_extra="        backoffLimit: 1\n")


def test_on_failure_pod_past_backoff_limit_is_failed(run):
    """An OnFailure pod is restarted in place until the Job's backoffLimit
    is passed; the Job controller then deletes it. It failed on its own:
    its event, the summary and -o json's failedPods say so, with the exit
    code, not "stopped"."""
    r = run(ON_FAILURE, "-o", "json", "--backoff-ms", "100")
    assert r.rc == 1, r.stdout + r.stderr
    summary = json.loads(r.stdout)
    assert summary["result"] == "Failed"
    assert summary["pods"]["failed"] == 1 and summary["pods"]["stopped"] == 0, summary["pods"]
    [pod] = summary["failedPods"]
    assert pod["job"] == "onf-w-0"
    assert pod["containers"][0]["exitCode"] == 42 and pod["containers"][0]["restartCount"] == 1
    ev = r.events()
    line = next(l for l in ev.splitlines() if " pod/onf-w-0-0-" in l and " Failed " in l)
    assert "Warning Failed" in line and "exit code 42 (Error)" in line and "after 1 restart" in line, line
    assert "BackOff pod/onf-w-0-0-" in ev  # the restart before it
    assert ev.index("BackOff pod/onf-w-0-0-") < ev.index("BackoffLimitExceeded job/onf-w-0")


def test_every_event_has_one_format_and_causes_come_first(run):
    r = run(EX / "fail-exitcode.yaml")
    lines = _lines(r)
    bad = [l for l in lines if not EVENT_LINE.match(l)]
    assert not bad, bad
    ev = r.events()
    pod_failed = ev.index("Warning Failed pod/fatal-workers-0-1-")
    job_failed = ev.index("Warning PodFailurePolicy job/fatal-workers-0:")
    jobset_failed = ev.index("Warning FailJobSetFailurePolicyAction jobset/fatal:")
    assert pod_failed < job_failed < jobset_failed
    # The Job's outcome is reported once (at FailureTarget), not again at Failed.
    assert ev.count("PodFailurePolicy job/fatal-workers-0:") == 1


def test_no_duplicated_pairs_and_stopped_pods_are_not_failed(run):
    r = run(EX / "restart-resume.yaml")
    assert r.rc == 0, r.stdout + r.stderr
    lines = [l.split(" ", 1)[1] for l in _lines(r)]
    # The core's condition and action events with one message are one line.
    assert sum("jobset/restart: applying RestartJobSet" in l for l in lines) == 1
    assert "Warning DefaultFailurePolicy,RestartJobSetFailurePolicyAction jobset/restart:" in r.events()
    assert sum("jobset completed successfully" in l for l in lines) == 1
    objs = [l.split(": ", 1) for l in lines]
    assert all(a != b for a, b in zip(objs, objs[1:])), "two identical events in a row"
    # The leader deleted by the restart was stopped, not failed.
    ev = r.events()
    assert re.search(r"Normal Stopped pod/restart-leader-0-0-\w+: deleted with its Job; leader: exit code 143", ev)
    assert not re.search(r"Failed pod/restart-leader", ev)


def test_pods_stopped_after_success_are_not_failed(run):
    r = run(EX / "success-any.yaml")
    assert r.rc == 0, r.stderr
    ev = r.events()
    for i in (0, 2):
        assert re.search(rf"Normal Stopped pod/race-search-{i}-0-\w+: deleted with its Job", ev), ev
    assert "Failed pod/" not in ev
    assert "pods: 1 succeeded, 0 failed, 2 stopped" in r.stdout
    stopped = [p for p in r.pods if p["metadata"]["annotations"].get("jobset.local/stop") == "JobDeleted"]
    assert len(stopped) == 2 and all(p["metadata"]["deletionTimestamp"] for p in stopped)


FLAKY = jobset_yaml("flaky", 'n=$(cat count 2>/dev/null || echo 0); echo $((n+1)) > count; [ $n -ge 2 ] || exit 3',
                    restart="OnFailure", job_extra="        backoffLimit: 3\n")


def test_container_restarts_are_events_and_statuses(run):
    r = run(FLAKY, "--backoff-ms", "20", "--workdir", "pod")
    assert r.rc == 0, r.stdout + r.stderr
    ev = r.events()
    backoffs = re.findall(r"Warning BackOff pod/flaky-w-0-0-\w+: back-off \d+ ms restarting failed container main "
                          r"\(restart (\d)\): exit code 3 \(Error\)", ev)
    assert backoffs == ["1", "2"], ev
    cs = r.pod("flaky-w-0-0-")["status"]["containerStatuses"][0]
    assert cs["restartCount"] == 2
    assert cs["state"]["terminated"]["exitCode"] == 0
    assert cs["lastState"]["terminated"]["exitCode"] == 3


SLEEPERS = jobset_yaml("sleepers", 'trap "exit 0" TERM; echo up; while :; do sleep 0.05; done', replicas=2,
                       completions=2, grace=5)


def _state(d):
    try:
        return json.loads((d / "state.json").read_text())
    except (OSError, ValueError):
        return None


def _running(d, n):
    s = _state(d)
    return s and sum(p["status"]["phase"] == "Running" for p in s["pods"]) >= n


def test_jobset_json_is_final_and_true_after_sigint(jobset_bin, tmp_path):
    (tmp_path / "m.yaml").write_text(SLEEPERS)
    d = tmp_path / "run"
    p = subprocess.Popen([str(jobset_bin), "run", "-q", "--run-dir", str(d), str(tmp_path / "m.yaml")],
                         cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for(lambda: _running(d, 4), what="4 running pods in state.json")
    p.send_signal(signal.SIGINT)
    assert p.wait(timeout=30) == 130
    st = json.loads((d / "jobset.json").read_text())["status"]
    rjs = st["replicatedJobsStatus"][0]
    # The pods exited 0 on SIGTERM, but they were deleted: nothing ran to
    # completion, nothing is active.
    assert (rjs["active"], rjs["ready"], rjs["succeeded"], rjs["failed"]) == (0, 0, 0, 0), rjs
    cond = [c for c in st["conditions"] if c["type"] == "Interrupted"]
    assert len(cond) == 1 and cond[0]["status"] == "True" and cond[0]["reason"] == "RunInterrupted"
    assert "SIGINT" in cond[0]["message"] and "4 running pods were deleted" in cond[0]["message"]
    assert "terminalState" not in st
    jobs = [i for i in json.loads((d / "jobs.json").read_text())["items"] if i["kind"] == "Job"]
    assert all(j["status"]["active"] == 0 and j["status"]["ready"] == 0 for j in jobs)
    state = _state(d)
    assert state["runner"]["state"] == "Interrupted" and state["runner"]["final"] is True


def test_sigpipe_on_stdout_never_loses_jobset_json(jobset_bin, demo_dir, tmp_path):
    """`jobset run ... | head -1`: the reader goes away after one line."""
    d = tmp_path / "run"
    env_path = f"{demo_dir}:/usr/bin:/bin"
    p = subprocess.run(["bash", "-c", f'"{jobset_bin}" run --run-dir "{d}" "{EX / "demo.yaml"}" | head -1; '
                        'echo "rc=${PIPESTATUS[0]}"'], cwd=tmp_path, capture_output=True, text=True, timeout=90,
                       env={"PATH": env_path})
    # One event line, then the runner's exit status: it outlived its reader.
    assert p.stdout.splitlines()[1:] == ["rc=0"], p.stdout + p.stderr
    js = json.loads((d / "jobset.json").read_text())
    assert js["status"]["terminalState"] == "Completed", js["status"]


def test_run_output_json_summary(run):
    r = run(EX / "fail-exitcode.yaml", "-o", "json")
    assert r.rc == 1
    s = json.loads(r.stdout)  # stdout is the summary alone
    assert s["result"] == "Failed" and s["exitCode"] == 1
    assert s["reason"] == "FailJobSetFailurePolicyAction"
    assert s["pods"] == {"succeeded": 0, "failed": 1, "stopped": 2, "other": 0}
    (fp,) = s["failedPods"]
    assert fp["name"].startswith("fatal-workers-0-1-") and fp["job"] == "fatal-workers-0"
    c = fp["containers"][0]
    assert (c["name"], c["exitCode"], c["reason"]) == ("worker", 42, "Error")
    assert c["log"].endswith(f"/logs/{fp['name']}/worker.log")
    assert "Warning Failed pod/" in r.stderr  # events went to stderr


def test_events_json_lines(run):
    r = run(EX / "fail-exitcode.yaml", "--events", "json")
    assert r.rc == 1
    events = [json.loads(l) for l in r.stdout.splitlines() if l.startswith("{")]
    assert events and all({"time", "type", "reason", "reasons", "involvedObject", "message"} <= e.keys()
                          for e in events)
    failed = [e for e in events if e["reason"] == "Failed" and e["involvedObject"]["kind"] == "Pod"]
    assert failed and "exit code 42" in failed[0]["message"]
    assert failed[0]["involvedObject"]["namespace"] == "default"
    assert re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$", failed[0]["time"])


def test_run_usage_errors_say_what_is_wrong(jobset_bin, tmp_path):
    """One line naming the problem, not the whole help."""
    cases = [
        ([], "which manifest?"),
        (["a.yaml", "b.yaml"], "one manifest FILE at a time, not 2"),
        (["--bogus", "a.yaml"], "unknown option, or an option without its value: '--bogus'"),
        (["-n", "Bad_NS", "a.yaml"], "-n takes a namespace, a DNS-1123 label"),
        (["--events", "xml", "a.yaml"], "--events takes text or json, not 'xml'"),
        (["--follow", "-o", "json", "a.yaml"], "--follow writes the pods' output to standard output"),
    ]
    for args, want in cases:
        p = subprocess.run([str(jobset_bin), "run", *args], cwd=tmp_path, capture_output=True, text=True, timeout=30)
        assert p.returncode == 2, (args, p.stderr)
        assert p.stderr.startswith("jobset run: ") and want in p.stderr, (args, p.stderr)
        assert len(p.stderr.splitlines()) == 1, (args, p.stderr)
