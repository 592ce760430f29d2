"""GPUs (issue 12): nvidia.com/gpu limits get distinct devices of a fake
device list (--gpus), as environment variables in process mode; a JobSet
that needs more than exist is refused before anything starts. The check on
a machine with real GPUs is scripts/gpu-check (not part of the suite)."""
import yaml


def rjob(name, replicas=1, gpus=2, script='echo "cuda=$CUDA_VISIBLE_DEVICES nv=$NVIDIA_VISIBLE_DEVICES"',
         depends=None, extra_ctrs=(), init=()):
    spec = {"restartPolicy": "Never", "containers": [
        {"name": "c", "image": "cuda", "command": ["sh", "-c", script],
         "resources": {"limits": {"nvidia.com/gpu": gpus}}}, *extra_ctrs]}
    if init:
        spec["initContainers"] = list(init)
    r = {"name": name, "replicas": replicas,
         "template": {"spec": {"completions": 1, "parallelism": 1, "template": {"spec": spec}}}}
    if depends:
        r["dependsOn"] = [{"name": depends, "status": "Complete"}]
    return r


def jobset(*rjobs, name="g"):
    return yaml.safe_dump({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": name},
                           "spec": {"replicatedJobs": list(rjobs)}}, sort_keys=False)


def test_each_pod_gets_its_own_devices(run):
    side = {"name": "side", "image": "x", "command": ["sh", "-c", 'echo "side=${CUDA_VISIBLE_DEVICES-unset}"']}
    init = {"name": "prep", "image": "x", "command": ["sh", "-c", 'echo "init=$CUDA_VISIBLE_DEVICES"'],
            "resources": {"limits": {"nvidia.com/gpu": "1"}, "requests": {"nvidia.com/gpu": "1"}}}
    r = run(jobset(rjob("w", replicas=2, extra_ctrs=[side], init=[init]), rjob("solo", gpus=1)),
            "--gpus", "0,1,2,3,4")
    assert r.rc == 0, r.stdout + r.stderr
    seen = []
    for pod in ("g-w-0-0", "g-w-1-0"):
        main = r.logs(pod, "c").split()
        cuda = main[0].split("=")[1]
        assert main[1] == "nv=" + cuda
        assert len(cuda.split(",")) == 2
        seen += cuda.split(",")
        assert r.logs(pod, "side").strip() == "side=unset"  # asked for none, sees none
        # The init container's device is handed on to the pod's own.
        assert r.logs(pod, "prep").strip() == "init=" + cuda.split(",")[0]
    seen += r.logs("g-solo-0-0", "c").split()[0].split("=")[1].split(",")
    assert sorted(seen) == ["0", "1", "2", "3", "4"]  # five devices, nobody shares


def test_more_gpus_than_exist_is_refused_before_anything_starts(run):
    r = run(jobset(rjob("leader", gpus=1), rjob("workers", replicas=3, gpus=2)), "--gpus", "0,1,2,3")
    assert r.rc == 2, r.stdout + r.stderr
    assert ("needs 7 GPUs (nvidia.com/gpu) at once (leader: 1 pods x 1 = 1, workers: 3 pods x 2 = 6), "
            "but this machine has 4") in r.stderr, r.stderr
    assert "nothing was started" in r.stderr and not r.dir.exists()

    r = run(jobset(rjob("big", gpus=3)), "--gpus", "0,1")
    assert r.rc == 2 and "every pod of ReplicatedJob 'big' needs 3 GPUs" in r.stderr, r.stderr

    r = run(jobset(rjob("any", gpus=1)), "--gpus", "none")
    assert r.rc == 2 and "this machine has 0" in r.stderr, r.stderr


def test_replicated_jobs_in_sequence_share_devices(run):
    """dependsOn Complete: the second runs after the first, on the same two."""
    r = run(jobset(rjob("first"), rjob("second", depends="first")), "--gpus", "7,9")
    assert r.rc == 0, r.stdout + r.stderr
    assert r.logs("g-first-0-0", "c").split()[0] == "cuda=7,9"
    assert r.logs("g-second-0-0", "c").split()[0] == "cuda=7,9"


def test_bad_gpu_flag_and_quantity(run):
    r = run(jobset(rjob("w", gpus=1)), "--gpus", "0,0")
    assert r.rc == 2 and "--gpus takes device ids" in r.stderr, r.stderr
    r = run(jobset(rjob("w", gpus="half")), "--gpus", "0")
    assert r.rc == 2 and "nvidia.com/gpu must be a whole number" in r.stderr, r.stderr


def test_failing_gpu_is_kept_out_of_the_next_attempt(run):
    """Node quarantine locally (docs/node-quarantine.md "Locally"): the
    GPUs are the nodes. A pod given GPU 0 dies with exit code 137; the
    JobSet names 137 a node fault, so the next attempt is given GPU 1 and
    completes. Without the rule the restart takes GPU 0 again (lowest
    first), fails every attempt, and the JobSet fails."""
    script = 'echo "cuda=$CUDA_VISIBLE_DEVICES"; [ "$CUDA_VISIBLE_DEVICES" != 0 ] || exit 137'
    doc = yaml.safe_load(jobset(rjob("w", gpus=1, script=script)))
    doc["spec"]["replicatedJobs"][0]["template"]["spec"]["backoffLimit"] = 0
    doc["spec"]["failurePolicy"] = {"maxRestarts": 2}
    doc["metadata"]["annotations"] = {"jobset.sigs.k8s.io/node-quarantine-exit-codes": "137"}
    r = run(yaml.safe_dump(doc), "--gpus", "0,1", "--feature-gates", "NodeQuarantine=true")
    assert r.rc == 0, r.stdout + r.stderr
    ev = r.events()
    assert "NodeQuarantined" in ev and "node gpu-0 is kept off attempts 1 to 1" in ev, ev
    assert "attempt 1 keeps off 1 node (node:last attempt:reason): gpu-0:1:exitCode=137" in ev, ev
    assert sorted(r.logs("g-w-0-0", "c").split()) == ["cuda=0", "cuda=1"], r.logs("g-w-0-0", "c")  # one pod each
    # The picture says it under the restart (src/picture/html.c): GPU 0 is
    # the node attempt 1 keeps off, and why.
    page = (r.dir / "report.html").read_text()
    item = page[page.index("<li>Attempt 1 began"):]
    item = item[:item.index("</li>\n")]
    assert '<ul class="quarantine"><li>Quarantined: node gpu-0 is kept off attempts 1 to 1: pod g-w-0-0-' in item, item
    assert "failed there (exit code 137)" in item, item

    del doc["metadata"]["annotations"]
    r = run(yaml.safe_dump(doc), "--gpus", "0,1", "--feature-gates", "NodeQuarantine=true", "--reuse-run-dir")
    assert r.rc != 0 and "cuda=1" not in r.logs("g-w-0-0", "c"), r.stdout + r.stderr


def test_quarantine_that_leaves_no_gpu_says_so_in_a_condition(run):
    """No room left locally (docs/node-quarantine.md "No room left"): one
    GPU, the pod given it dies with exit code 137, so attempt 1 keeps off
    the only device and its pod cannot start. The JobSet says so in the
    condition QuarantineLeavesNoRoom (with its Warning event), naming the
    pod and the device; nothing else can change in a local run, so the
    stall check then ends it (Failed, exit 1) with the condition in the
    status."""
    doc = yaml.safe_load(jobset(rjob("w", gpus=1, script="exit 137")))
    doc["spec"]["replicatedJobs"][0]["template"]["spec"]["backoffLimit"] = 0
    doc["spec"]["failurePolicy"] = {"maxRestarts": 2}
    doc["metadata"]["annotations"] = {"jobset.sigs.k8s.io/node-quarantine-exit-codes": "137"}
    r = run(yaml.safe_dump(doc), "--gpus", "0", "--feature-gates", "NodeQuarantine=true")
    assert r.rc == 1 and "Stalled" in r.stdout + r.stderr, r.stdout + r.stderr
    assert r.status["restarts"] == 1, r.status
    c = r.condition("QuarantineLeavesNoRoom")
    assert c and c["reason"] == "QuarantineLeavesNoRoom", r.status
    assert c["message"].startswith("pod g-w-0-0 cannot be scheduled while attempt 1 keeps off 1 node (gpu-0)"), c
    assert "the pod needs 1 nvidia.com/gpu and 0 are not quarantined" in c["message"], c
    ev = r.events()
    assert "Warning QuarantineLeavesNoRoom jobset/g: pod g-w-0-0 cannot be scheduled" in ev, ev


def test_failing_gpu_is_kept_off_a_job_restarted_on_its_own(run):
    """Node quarantine for a per-Job restart (failure policy RestartJob):
    the attempt goes on, and the restarted Job's pod that died with 137 on
    GPU 0 blames it, so the Job made again is given GPU 1 and completes.
    Without the quarantine the recreated Job takes GPU 0 again (lowest
    first), fails until the budget is spent, and the JobSet fails."""
    script = 'echo "cuda=$CUDA_VISIBLE_DEVICES"; [ "$CUDA_VISIBLE_DEVICES" != 0 ] || exit 137'
    doc = yaml.safe_load(jobset(rjob("w", gpus=1, script=script)))
    doc["spec"]["replicatedJobs"][0]["template"]["spec"]["backoffLimit"] = 0
    doc["spec"]["failurePolicy"] = {"maxRestarts": 2, "rules": [{"name": "nodeFault", "action": "RestartJob"}]}
    doc["metadata"]["annotations"] = {"jobset.sigs.k8s.io/node-quarantine-exit-codes": "137"}
    gates = "NodeQuarantine=true,RestartJob=true"
    r = run(yaml.safe_dump(doc), "--gpus", "0,1", "--feature-gates", gates, "--backoff-ms", "50")
    assert r.rc == 0, r.stdout + r.stderr
    assert r.status["restarts"] == 0 and r.status["replicatedJobsStatus"][0]["jobRestarts"] == [1], r.status
    ev = r.events()
    assert ("node gpu-0 is kept off the Jobs made from now on, through attempt 0: pod g-w-0-0" in ev
            and "its Job g-w-0 is restarted on its own" in ev), ev
    assert "attempt 0 keeps off 1 node (node:last attempt:reason): gpu-0:0:exitCode=137" in ev, ev
    assert sorted(r.logs("g-w-0-0", "c").split()) == ["cuda=0", "cuda=1"], r.logs("g-w-0-0", "c")
    made = {j["metadata"]["labels"]["jobset.sigs.k8s.io/job-restart-attempt"]:
            j["spec"]["template"]["metadata"]["annotations"].get("jobset.sigs.k8s.io/quarantined-nodes")
            for j in r.jobs}
    assert made == {"0": None, "1": "gpu-0:0:exitCode=137"}, made

    del doc["metadata"]["annotations"]
    r = run(yaml.safe_dump(doc), "--gpus", "0,1", "--feature-gates", gates, "--backoff-ms", "50",
            "--reuse-run-dir")
    assert r.rc != 0 and "cuda=1" not in r.logs("g-w-0-0", "c"), r.stdout + r.stderr
