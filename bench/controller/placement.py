#!/usr/bin/env python3
"""placement.py - one measurement of the exclusive-placement benchmark
(issue 14 item 2) on a running hack/cluster; bench/controller/placement.sh
drives it, one fresh control plane per target.

    placement.py --name NAME --ready-url URL --webhook-port P [--jobs 50] [--pods 4]
                 [--topology KEY] -- CMD...

Starts CMD (a controller serving its admission webhooks on 127.0.0.1:P with
the cluster's webhook certificate), registers the four JobSet admission
webhooks against it (the JobSet mutating/validating hooks and the pod
mutating/validating hooks, upstream's names and paths, failurePolicy Fail,
for the benchmark namespace only), creates one JobSet of --jobs Jobs x
--pods pods with alpha.jobset.sigs.k8s.io/exclusive-topology: --topology,
and reports as one JSON object on stdout:

  create_to_all_bound_s   JobSet POST -> every pod of every Job has
                          spec.nodeName (polled every 100 ms as admin)
  create_to_all_pods_s    ... -> every pod exists
  admission_rejections    apiserver_admission_webhook_rejection_count of
                          the API server, diffed over the run, by webhook
                          name (the API server's own count)
  pod_creates_by_code     apiserver_request_total POST pods by HTTP code
                          (the Job controller's creates, rejected ones too)
  requests                API requests of the controller (the benchmark
                          identity, counted by FlowSchema; measure.py)
  exclusive               every Job's pods in one domain, no two Jobs in
                          the same domain (checked on the bound pods)
"""

import argparse
import base64
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import measure as m  # noqa: E402

NS = "placement"
NS_LABEL = ("jobset-bench", "placement")
HOOK_NAMES = ("jobset-bench-mutating", "jobset-bench-validating")


def rejections(text):
    """{webhook name: count} of apiserver_admission_webhook_rejection_count."""
    out = {}
    for line in text.splitlines():
        if not line.startswith("apiserver_admission_webhook_rejection_count{"):
            continue
        labels, val = line.rsplit(" ", 1)
        i = labels.index('name="') + 6
        name = labels[i:labels.index('"', i)]
        out[name] = out.get(name, 0) + float(val)
    return out


def diff(a, b):
    return {k: int(b.get(k, 0) - a.get(k, 0)) for k in sorted(set(a) | set(b)) if b.get(k, 0) != a.get(k, 0)}


def register(cl, port):
    ca = base64.b64encode(open(cl.env["JOBSET_TEST_CA"], "rb").read()).decode()
    sel = {"matchLabels": {NS_LABEL[0]: NS_LABEL[1]}}

    def hook(name, path, group, version, resource, ops, pods):
        h = {"name": name, "admissionReviewVersions": ["v1"], "sideEffects": "None", "failurePolicy": "Fail",
             "timeoutSeconds": 10, "namespaceSelector": sel,
             "clientConfig": {"url": f"https://127.0.0.1:{port}{path}", "caBundle": ca},
             "rules": [{"apiGroups": [group], "apiVersions": [version], "operations": ops,
                        "resources": [resource]}]}
        if pods:
            h["objectSelector"] = {"matchExpressions": [{"key": "jobset.sigs.k8s.io/jobset-name",
                                                         "operator": "Exists"}]}
        return h

    cl.apply("/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations", {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": HOOK_NAMES[0]},
        "webhooks": [hook("mjobset.kb.io", "/mutate-jobset-x-k8s-io-v1alpha2-jobset", "jobset.x-k8s.io",
                          "v1alpha2", "jobsets", ["CREATE"], False),
                     hook("mpod.kb.io", "/mutate--v1-pod", "", "v1", "pods", ["CREATE"], True)]})
    cl.apply("/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": HOOK_NAMES[1]},
        "webhooks": [hook("vjobset.kb.io", "/validate-jobset-x-k8s-io-v1alpha2-jobset", "jobset.x-k8s.io",
                          "v1alpha2", "jobsets", ["CREATE", "UPDATE"], False),
                     hook("vpod.kb.io", "/validate--v1-pod", "", "v1", "pods", ["CREATE"], True)]})


def wait_hooks(cl, timeout=60):
    """Until the API server calls the hooks in NS: a dry-run JobSet comes
    back defaulted by the mutating hook."""
    probe = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "probe"},
             "spec": {"replicatedJobs": []}}
    deadline = m.now() + timeout
    while True:
        st, out = cl.req("POST", f"/apis/jobset.x-k8s.io/v1alpha2/namespaces/{NS}/jobsets?dryRun=All", probe,
                         ok=None)
        if st in (200, 201) and "successPolicy" in json.loads(out).get("spec", {}):
            return
        if m.now() > deadline:
            raise RuntimeError(f"webhooks not active after {timeout} s: HTTP {st} {out[:300]!r}")
        time.sleep(0.3)


def the_jobset(jobs, pods, topo):
    rj = {"name": "w", "replicas": jobs, "template": {"spec": {
        "parallelism": pods, "completions": pods, "backoffLimit": 0, "completionMode": "Indexed",
        "template": {"metadata": {"annotations": {"jobset-test/run-for": "1h"}},
                     "spec": {"restartPolicy": "OnFailure",
                              "containers": [{"name": "main", "image": "busybox", "command": ["sleep", "3600"],
                                              "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}}}}}
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": "place", "annotations": {"alpha.jobset.sigs.k8s.io/exclusive-topology": topo}},
            "spec": {"replicatedJobs": [rj]}}


def pods_now(cl):
    _, out = cl.req("GET", f"/api/v1/namespaces/{NS}/pods")
    return json.loads(out)["items"]


def exclusive(cl, pods, topo):
    """True when each Job's pods share one domain and no two Jobs share one."""
    _, out = cl.req("GET", "/api/v1/nodes")
    dom = {n["metadata"]["name"]: (n["metadata"].get("labels") or {}).get(topo) for n in json.loads(out)["items"]}
    by_job = {}
    for p in pods:
        job = p["metadata"]["labels"].get("job-name")
        by_job.setdefault(job, set()).add(dom.get(p["spec"].get("nodeName")))
    if any(len(d) != 1 or None in d for d in by_job.values()):
        return False
    doms = [next(iter(d)) for d in by_job.values()]
    return len(doms) == len(set(doms))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cluster-dir", default=os.environ.get("JOBSET_CLUSTER_DIR", "/tmp/js-bench-cluster"))
    ap.add_argument("--name", required=True)
    ap.add_argument("--jobs", type=int, default=50)
    ap.add_argument("--pods", type=int, default=4)
    ap.add_argument("--topology", default="cloud.google.com/gke-nodepool")
    ap.add_argument("--ready-url", required=True)
    ap.add_argument("--webhook-port", type=int, required=True)
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--log")
    ap.add_argument("--out")
    ap.add_argument("cmd", nargs="+")
    a = ap.parse_args()

    cl = m.Cluster(a.cluster_dir)
    kc = m.setup_identity(cl)
    cl.req("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                          "metadata": {"name": NS, "labels": {NS_LABEL[0]: NS_LABEL[1]}}})
    subst = {"kubeconfig": kc, "webhook_cert_dir": cl.env["JOBSET_TEST_WEBHOOK_CERT_DIR"]}
    cmd = [x.format(**subst) for x in a.cmd]
    want = a.jobs * a.pods
    res = {"name": a.name, "jobs": a.jobs, "pods_per_job": a.pods, "topology": a.topology, "cmd": cmd,
           "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "nodes": int(cl.env.get("JOBSET_TEST_NODES", "0") or 0)}
    logf = open(a.log, "w") if a.log else subprocess.DEVNULL
    proc = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        m.wait_url(a.ready_url, 60, proc)
        register(cl, a.webhook_port)
        wait_hooks(cl)
        time.sleep(3)  # informer caches sync, as measure.py's warm-up
        res["loadavg_start"] = os.getloadavg()[0]
        s0 = m.snapshot(cl, proc.pid)
        t0 = m.now()
        text0 = cl.metrics()
        cl.req("POST", f"/apis/jobset.x-k8s.io/v1alpha2/namespaces/{NS}/jobsets", the_jobset(a.jobs, a.pods,
                                                                                               a.topology))
        t_pods = t_bound = None
        deadline = t0 + a.timeout
        while m.now() < deadline:
            ps = pods_now(cl)
            live = [p for p in ps if not p["metadata"].get("deletionTimestamp")]
            t = m.now()
            if t_pods is None and len(live) >= want:
                t_pods = t
            if len(live) >= want and all(p["spec"].get("nodeName") for p in live):
                t_bound = t
                break
            time.sleep(0.1)
        if t_bound is None:
            raise RuntimeError(f"not every pod bound after {a.timeout:.0f} s "
                               f"({sum(1 for p in live if p['spec'].get('nodeName'))}/{want})")
        s1 = m.snapshot(cl, proc.pid)
        text1 = cl.metrics()
        m.log(f"{a.name}: {want} pods bound {t_bound - t0:.2f} s after the JobSet POST")
        res["create_to_all_pods_s"] = round(t_pods - t0, 2)
        res["create_to_all_bound_s"] = round(t_bound - t0, 2)
        res["admission_rejections"] = diff(rejections(text0), rejections(text1))
        res["admission_rejections_total"] = sum(res["admission_rejections"].values())
        res["pod_creates_by_code"] = diff(m.posts_by_code(text0, "pods"), m.posts_by_code(text1, "pods"))
        res["requests"] = m.req_diff(s0["flows"], s1["flows"])
        res["cpu_s"] = m.cpu_diff(s0, s1)
        res["exclusive"] = exclusive(cl, live, a.topology)
    finally:
        m.stop(proc, proc.pid, 30)
        if logf is not subprocess.DEVNULL:
            logf.close()
    text = json.dumps(res, indent=1)
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
