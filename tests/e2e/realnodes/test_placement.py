"""Exclusive placement with the real kube-scheduler binding pods on real
nodes, each node its own topology domain (hack/cluster labels the real
nodes: node I in zone real-zone-I with 2 pools): each Job's pods share one
node, no two Jobs share one; and upstream #1276, a leader that fails once
and is retried, with its followers placed beside the retry."""
import json
import os
from pathlib import Path

from conftest import busybox_pod, condition, jobset_obj, rjob, wait_for

TOPO = "topology.kubernetes.io/zone"


def _exclusive(name, pod, jobs=2, pods=2):
    js = jobset_obj(name, [rjob("w", jobs, pod, parallelism=pods, completions=pods, backoff=1)])
    js["metadata"]["annotations"] = {"alpha.jobset.sigs.k8s.io/exclusive-topology": TOPO}
    return js


def _check(kube, ns, name, nodes):
    def done():
        o = kube.get("jobset", name, ns)
        return o if condition(o, "Completed") or condition(o, "Failed") else None

    o = wait_for(f"JobSet {name} finished", done, timeout=180)
    assert condition(o, "Completed"), json.dumps(o.get("status"))
    by_job = {}
    every = kube.pods(ns, f"jobset.sigs.k8s.io/jobset-name={name}")
    detail = [(p["metadata"]["name"], p["spec"].get("nodeName"), p["status"].get("phase"),
               p["metadata"]["labels"].get("jobset.sigs.k8s.io/exclusive-placement"),
               p["spec"].get("nodeSelector"), bool(p["spec"].get("affinity"))) for p in every]
    for p in every:
        if p["status"].get("phase") == "Succeeded":
            by_job.setdefault(p["metadata"]["labels"]["jobset.sigs.k8s.io/job-index"], set()).add(p["spec"]["nodeName"])
    assert len(by_job) == 2 and all(len(v) == 1 for v in by_job.values()), (by_job, detail)
    placed = [next(iter(v)) for v in by_job.values()]
    assert len(set(placed)) == 2 and set(placed) <= set(nodes), (by_job, detail)
    return kube.pods(ns, f"jobset.sigs.k8s.io/jobset-name={name}")


def test_exclusive_placement_on_real_nodes(controller, ns, nodes):
    controller.apply(_exclusive("ex", busybox_pod(["sh", "-c", "sleep 8"])), ns)
    _check(controller, ns, "ex", nodes)


def test_leader_failing_once_is_retried_beside_its_followers(controller, ns, nodes):
    # The leader (completion index 0) of each Job exits 1 on its first run
    # (a marker on a hostPath both nodes see: the cluster's state dir), and
    # its retry succeeds; the followers wait for, and land beside, the leader.
    shared = Path(os.environ["JOBSET_CLUSTER_DIR"]) / "shared" / ns
    shared.mkdir(parents=True, exist_ok=True)
    script = ('if [ "$JOB_COMPLETION_INDEX" = 0 ] && [ ! -e /m/$JOB_NAME ]; then touch /m/$JOB_NAME; exit 1; fi; '
              "sleep 8")
    pod = busybox_pod(["sh", "-c", script], volumes=[{"name": "m", "hostPath": {"path": str(shared)}}])
    pod["containers"][0]["volumeMounts"] = [{"name": "m", "mountPath": "/m"}]
    pod["containers"][0]["env"] = [{"name": "JOB_NAME", "valueFrom": {"fieldRef": {
        "fieldPath": "metadata.labels['job-name']"}}}]
    controller.apply(_exclusive("lead", pod), ns)
    pods = _check(controller, ns, "lead", nodes)
    failed_leaders = [p for p in pods if p["status"].get("phase") == "Failed"
                      and p["metadata"]["labels"].get("batch.kubernetes.io/job-completion-index") == "0"]
    assert len(failed_leaders) == 2, [(p["metadata"]["name"], p["status"].get("phase")) for p in pods]
    assert sorted(f.name for f in shared.iterdir()) == ["lead-w-0", "lead-w-1"]
