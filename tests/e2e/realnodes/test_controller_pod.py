"""The controller as users deploy it (deploy/: a Deployment on a real node,
RBAC, webhooks with TLS through their Service), running a JobSet whose pods
run on real kubelets and find each other by DNS name through CoreDNS."""
import json

from conftest import SYSTEM_NS, busybox_pod, condition, jobset_obj, rjob, wait_for


def test_controller_runs_on_a_real_node(controller, nodes):
    pods = controller.pods(SYSTEM_NS, "control-plane=controller-manager")
    running = [p for p in pods if p["status"].get("phase") == "Running"]
    assert running and running[0]["spec"]["nodeName"] in nodes, json.dumps(pods)[-2000:]
    # The webhooks' caBundle was injected by the controller's own certificate management.
    vwc = controller.get("validatingwebhookconfiguration", "jobset-validating-webhook-configuration")
    assert vwc and all(w["clientConfig"].get("caBundle") for w in vwc["webhooks"]), vwc


def test_pods_find_each_other_by_dns(controller, ns, nodes):
    # Two Jobs of two pods; each pod serves, and resolves and reaches the next
    # pod of the ring by its stable name <jobset>-<rjob>-<job>-<index>.<subdomain>
    # (through CoreDNS), then serves a while longer for its own predecessor.
    script = ("mkdir -p /www && echo pong-$(hostname) > /www/ping && httpd -p 8080 -h /www; "
              "i=$((JOBSET_JOB_INDEX * 2 + JOB_COMPLETION_INDEX)); n=$(((i + 1) % 4)); "
              "peer=d-w-$((n / 2))-$((n % 2)).d; "
              "for t in $(seq 1 120); do r=$(wget -qO- http://$peer:8080/ping 2>/dev/null) && "
              "echo got-$r && sleep 15 && exit 0; sleep 0.5; done; exit 1")
    pod = busybox_pod(["sh", "-c", script])
    pod["containers"][0]["env"] = [{"name": "JOBSET_JOB_INDEX", "valueFrom": {"fieldRef": {
        "fieldPath": "metadata.labels['jobset.sigs.k8s.io/job-index']"}}}]
    js = jobset_obj("d", [rjob("w", 2, pod, parallelism=2, completions=2)],
                    network={"enableDNSHostnames": True})
    controller.apply(js, ns)

    def done():
        o = controller.get("jobset", "d", ns)
        return o if condition(o, "Completed") or condition(o, "Failed") else None

    o = wait_for("JobSet d finished", done, timeout=180)
    assert condition(o, "Completed"), json.dumps(o.get("status"))
    pods = controller.pods(ns, "jobset.sigs.k8s.io/jobset-name=d")
    assert len(pods) == 4 and {p["spec"]["nodeName"] for p in pods} <= set(nodes)
    got = sorted(controller.logs(ns, p["metadata"]["name"]).strip() for p in pods)
    assert got == [f"got-pong-d-w-{j}-{c}" for j in (0, 1) for c in (0, 1)], got
