"""Containment of `hack/cluster up --real-nodes` (issue 23, docs/cluster.md
"Real nodes"): two real-node clusters run at once without colliding, and
nothing of either stays on the machine after `down` - after an orderly down
of one, and after a SIGKILL of every process of the other (a crash) followed
by `down`, which sweeps what the crash left.

Manages its own two clusters (state dirs under a temporary directory), so it
runs with or without the tier's cluster. Needs root (namespaces, cgroups).
"""
import json
import os
import re
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
CLUSTER = ROOT / "hack" / "cluster"
# Paths a kubelet, containerd or the CNI plugins would write on the host
# if they were not kept in the cluster's mount namespaces.
HOST_PATHS = ["/var/lib/kubelet", "/var/lib/cni", "/var/log/containers", "/var/log/pods",
              "/run/containerd", "/run/netns", "/var/lib/containerd", "/etc/cni/net.d",
              "/opt/cni", "/usr/libexec/kubernetes", "/opt/containerd"]

if os.geteuid() != 0:
    pytest.fail("real-node clusters need root (namespaces, cgroups, containerd)", pytrace=False)


def _run(*args, **kw):
    return subprocess.run(list(args), capture_output=True, text=True, **kw)


def _tree(path):
    """Every entry under path (names only), or None when it does not exist."""
    p = Path(path)
    if not p.exists():
        return None
    return sorted(str(q.relative_to(p)) for q in p.rglob("*"))


# Mount points and sources a kubelet, containerd or CNI plugin makes.
OURS = re.compile(r"kubelet|containerd|/run/netns/cni-|/var/lib/cni|/var/log/(pods|containers)|jobset-|cni\d")


def host_state(ids):
    """What a real-node cluster could leave on the machine, and only that
    (other sessions on the machine change it too: podman's mounts, veths and
    rules, other clusters): links and addresses of the clusters' veths (ids)
    and of CNI bridges and their veths; iptables rules that name pod,
    node or service addresses or kube-proxy's and the CNI plugins' chains;
    kubelet/containerd/CNI mounts; the top-level cgroups a kubelet or
    containerd makes; the well-known paths; processes carrying the clusters'
    marks."""
    links, addrs = [], []
    for l in _run("ip", "-o", "link").stdout.splitlines():
        name = re.sub(r"^\d+: ", "", l).split()[0].split("@")[0].rstrip(":")
        if (name.startswith("js") and name[2:] in ids) or re.fullmatch(r"cni\d+", name) or " master cni" in l:
            links.append(name)
    for l in _run("ip", "-o", "addr").stdout.splitlines():
        dev, fam, addr = l.split()[1:4]
        if (dev.startswith("js") and dev[2:] in ids) or re.fullmatch(r"cni\d+", dev) or \
                addr.startswith(("10.63.", "10.244.")):
            addrs.append(f"{dev} {fam} {addr}")
    rules = {}
    for tool in ("iptables-save", "ip6tables-save"):
        out = _run(tool).stdout
        rules[tool] = sorted(l for l in out.splitlines() if l and not l.startswith(("#", ":"))
                             and re.search(r"10\.244\.|10\.63\.|KUBE-|CNI-|cni\d", l))
    mounts = sorted(" ".join((l.split()[4], l.split(" - ")[1].split()[1]))
                    for l in Path("/proc/self/mountinfo").read_text().splitlines() if OURS.search(l))
    cgroups = sorted(str(p) for p in Path("/sys/fs/cgroup").glob("*/*") if p.is_dir() and
                     (p.name in {f"jobset-{i}" for i in ids} or p.name in ("k8s.io", "kubepods", "kubepods.slice")))
    paths = {p: _tree(p) for p in HOST_PATHS}
    if paths["/run/netns"] is not None:  # podman's are netns-*, containerd's cni-*
        paths["/run/netns"] = [n for n in paths["/run/netns"] if n.startswith("cni-")]
    marked = []
    for env in Path("/proc").glob("[0-9]*/environ"):
        try:
            data = env.read_bytes()
        except OSError:
            continue
        if any(f"JOBSET_CLUSTER_ID={i}".encode() + b"\0" in data for i in ids):
            marked.append(env.parent.name)
    return {"links": sorted(links), "addrs": sorted(addrs), "rules": rules, "mounts": mounts,
            "cgroups": cgroups, "paths": paths, "marked": sorted(marked)}


def cluster_id(d):
    """hack/cluster's ID of the cluster in state dir d (cluster.d/nodes.sh rn_id)."""
    out = subprocess.run(["bash", "-c", f'. "{ROOT}/hack/cluster.d/nodes.sh"; DIR="{d}"; rn_id'],
                         capture_output=True, text=True).stdout.strip()
    assert re.fullmatch(r"[0-9a-f]{8}", out), out
    return out


def diff(before, after):
    out = {}
    for k in before:
        if before[k] != after[k]:
            out[k] = (before[k], after[k]) if not isinstance(before[k], list) else \
                {"gone": sorted(set(before[k]) - set(after[k])), "new": sorted(set(after[k]) - set(before[k]))}
    return out


class Cluster:
    def __init__(self, d):
        self.dir = d
        self.env = dict(os.environ, JOBSET_CLUSTER_DIR=str(d))

    def hc(self, *args, check=True, timeout=300):
        p = _run(str(CLUSTER), *args, env=self.env, timeout=timeout)
        if check and p.returncode != 0:
            raise AssertionError(f"hack/cluster {' '.join(args)} ({self.dir}) failed: {p.stderr[-3000:]}")
        return p

    def kubectl(self, *args, input=None):
        p = subprocess.run([str(CLUSTER), "kubectl", *args], input=input, capture_output=True, text=True,
                           env=self.env, timeout=60)
        assert p.returncode == 0, f"kubectl {' '.join(args)}: {p.stderr}"
        return p.stdout

    def run_pods(self, nodes):
        """One busybox pod pinned to each node; returns {node: podIP} once all run."""
        docs = []
        for n in nodes:
            docs.append({"apiVersion": "v1", "kind": "Pod",
                         "metadata": {"name": f"c-{n}", "namespace": "default"},
                         "spec": {"nodeName": n, "terminationGracePeriodSeconds": 1,
                                  "containers": [{"name": "c", "image": "localhost/jobset-test/busybox:1",
                                                  "imagePullPolicy": "Never",
                                                  "command": ["sleep", "3600"]}]}})
        self.kubectl("apply", "-f", "-", input="\n---\n".join(json.dumps(d) for d in docs))
        deadline = time.monotonic() + 120
        while True:
            pods = json.loads(self.kubectl("get", "pods", "-n", "default", "-o", "json"))["items"]
            ips = {p["spec"]["nodeName"]: p["status"].get("podIP") for p in pods
                   if p["status"].get("phase") == "Running"}
            if len(ips) == len(nodes) and all(ips.values()):
                return ips
            assert time.monotonic() < deadline, f"pods not Running in {self.dir}: {json.dumps(pods)[-2000:]}"
            time.sleep(0.5)


def _marked_pids(cid):
    pids = set()
    for env in Path("/proc").glob("[0-9]*/environ"):
        try:
            if f"JOBSET_CLUSTER_ID={cid}".encode() + b"\0" in env.read_bytes():
                pids.add(int(env.parent.name))
        except OSError:
            pass
    for procs in Path("/sys/fs/cgroup").glob(f"*/jobset-{cid}/**/cgroup.procs"):
        pids.update(int(x) for x in procs.read_text().split())
    return pids


def test_two_clusters_contained_and_swept():
    with tempfile.TemporaryDirectory(prefix="jobset-contain-") as tmp:
        a, b = Cluster(Path(tmp) / "a"), Cluster(Path(tmp) / "b")
        ids = (cluster_id(a.dir), cluster_id(b.dir))
        before = host_state(ids)
        try:
            a.hc("up", "--nodes", "0", "--real-nodes", "2")
            b.hc("up", "--nodes", "0", "--real-nodes", "2")
            nodes = ["real-node-0", "real-node-1"]
            ips_a, ips_b = a.run_pods(nodes), b.run_pods(nodes)
            # The same pod addresses in both: each cluster's network is its own.
            assert ips_a == ips_b, (ips_a, ips_b)
            assert ips_a["real-node-0"].startswith("10.244.0.") and ips_a["real-node-1"].startswith("10.244.1.")
            # While both run, the host has gained one veth each and nothing else.
            during = diff(before, host_state(ids))
            new_links = during.pop("links", {}).get("new", [])
            new_addrs = during.pop("addrs", {}).get("new", [])
            during.pop("marked", None)
            # The clusters' own /jobset-<ID> cgroups, and no other.
            new_cgroups = during.pop("cgroups", {}).get("new", [])
            assert all(Path(c).name.startswith("jobset-") for c in new_cgroups), new_cgroups
            assert len(new_links) == 2 and all(l.startswith("js") for l in new_links), new_links
            new_addrs = [x for x in new_addrs if " inet " in x]  # the veths' IPv6 link-local ones aside
            assert len(new_addrs) == 2 and all(" 10.62." in a_ for a_ in new_addrs), new_addrs
            assert during == {}, f"the clusters changed the host: {during}"

            # A: the orderly way.
            a.hc("down")
            # B: a crash - every process of the cluster SIGKILLed, containers
            # included, then `down`.
            cid = ids[1]
            pids = _marked_pids(cid)
            assert len(pids) > 10, pids
            for _ in range(20):
                for p in pids:
                    try:
                        os.kill(p, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                time.sleep(0.2)
                pids = _marked_pids(cid)
                if not pids:
                    break
            assert not pids, f"processes of the cluster survived SIGKILL: {pids}"
            # What the crash left: the cluster's cgroups (runc's, per container).
            left = [str(p) for p in Path("/sys/fs/cgroup").glob(f"*/jobset-{cid}")]
            assert left, "expected the crashed cluster's cgroups to be left behind"
            b.hc("down")
        finally:
            for c in (a, b):
                if Path(c.dir).exists():
                    c.hc("down", check=False)
        after = host_state(ids)
    assert diff(before, after) == {}, f"left on the machine: {diff(before, after)}"
