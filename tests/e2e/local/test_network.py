"""The network of `jobset run` (docs/local.md, "Network"): a namespace per pod
on a bridge in the run's own namespace, so runs never see each other and a
restarted pod never meets its previous attempt's sockets; --publish; and the
degraded mode's loopback block per run.

Pods are small Python programs. Where two runs must overlap, each pod
announces itself with a file in a shared directory and waits (polling, with
a deadline) for the other run's file, so the overlap is certain rather than
likely.
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import textwrap
import uuid
from pathlib import Path

import pytest

from conftest import Run, jobset_yaml, processes_with_env, wait_for

# Shared by the pods below: wait for a file with a deadline.
PRELUDE = """
import os, socket, sys, time
def wait_file(path, timeout=60):
    end = time.monotonic() + timeout
    while not os.path.exists(path):
        if time.monotonic() > end:
            sys.exit('timed out waiting for ' + path)
        time.sleep(0.02)
def dial(host, port, timeout=60):
    end = time.monotonic() + timeout
    while True:
        try:
            return socket.create_connection((host, port), timeout=5)
        except OSError:
            if time.monotonic() > end:
                raise
            time.sleep(0.05)
def read_all(s):
    out = b''
    while True:
        b = s.recv(4096)
        if not b:
            return out.decode()
        out += b
"""


def _pod(name, script, env=None, replicas=1):
    """One ReplicatedJob of one Indexed pod running `script` with python3."""
    env_yaml = "".join(f"\n              - {{name: {k}, value: \"{v}\"}}" for k, v in (env or {}).items())
    code = textwrap.indent(PRELUDE + textwrap.dedent(script), " " * 16)
    return f"""
  - name: {name}
    replicas: {replicas}
    template:
      spec:
        backoffLimit: 0
        template:
          spec:
            restartPolicy: Never
            terminationGracePeriodSeconds: 1
            containers:
            - name: main
              image: python
              command:
              - python3
              - -c
              - |
{code}
              env:
              - name: JOBSET
                valueFrom: {{fieldRef: {{fieldPath: "metadata.labels['jobset.sigs.k8s.io/jobset-name']"}}}}
              - name: ATTEMPT
                valueFrom: {{fieldRef: {{fieldPath: "metadata.labels['jobset.sigs.k8s.io/restart-attempt']"}}}}
              - name: POD_IP
                valueFrom: {{fieldRef: {{fieldPath: status.podIP}}}}{env_yaml}"""


def _jobset(name, *rjobs, max_restarts=0):
    policy = f"\n  failurePolicy: {{maxRestarts: {max_restarts}}}" if max_restarts else ""
    return f"""apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {{name: {name}}}
spec:{policy}
  replicatedJobs:""" + "".join(rjobs) + "\n"


def _start(jobset_bin, tmp_path, tag, manifest, *args):
    d = tmp_path / tag
    d.mkdir()
    (d / "js.yaml").write_text(manifest)
    p = subprocess.Popen([str(jobset_bin), "run", "--run-dir", str(d / "run"), *args, str(d / "js.yaml")],
                         cwd=d, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return p, d


def _finish(p, d, timeout=120):
    out, err = p.communicate(timeout=timeout)
    return Run(subprocess.CompletedProcess(p.args, p.returncode, out, err), d / "run")


# A server on 0.0.0.0:7400 without SO_REUSEADDR, up at the same time as the
# other run's (files in SYNC), answering with its JobSet's name; a client
# that finds it by name and prints the answer.
SERVER = """
s = socket.socket()
s.bind(('0.0.0.0', 7400))
s.listen()
me, other = os.environ['JOBSET'], os.environ['OTHER']
open(os.path.join(os.environ['SYNC'], 'up-' + me), 'w').close()
wait_file(os.path.join(os.environ['SYNC'], 'up-' + other))
print('bound 0.0.0.0:7400 while', other, 'was up too', flush=True)
c, peer = s.accept()
c.sendall(('I am ' + me).encode())
c.close()
"""
CLIENT = """
me = os.environ['JOBSET']
s = dial(me + '-srv-0-0.' + me, 7400)
print('client of', me, 'got:', read_all(s), flush=True)
"""


def test_two_runs_at_once_never_see_each_other(jobset_bin, tmp_path):
    sync = tmp_path / "sync"
    sync.mkdir()
    runs = []
    for me, other in (("alpha", "beta"), ("beta", "alpha")):
        env = {"OTHER": other, "SYNC": str(sync)}
        manifest = _jobset(me, _pod("srv", SERVER, env), _pod("cli", CLIENT, env))
        runs.append((me, *_start(jobset_bin, tmp_path, me, manifest)))
    for me, p, d in runs:
        r = _finish(p, d)
        assert r.rc == 0, (me, r.stdout, r.stderr, r.logs(me + "-srv", "main"))
        other = "beta" if me == "alpha" else "alpha"
        assert f"bound 0.0.0.0:7400 while {other} was up too" in r.logs(me + "-srv-0-0", "main")
        # Both runs hand out the same addresses, and each reached its own.
        assert r.logs(me + "-cli-0-0", "main").strip() == f"client of {me} got: I am {me}"
        ev = r.events()
        assert f"Normal Network jobset/{me}: every pod has its own network namespace" in ev
        assert re.search(rf"Started pod/{me}-srv-0-0-\w+: hostname {me}-srv-0-0, IP 10.244.0.2$", ev, re.M), ev


# Attempt 0 serves one connection, closing first (so its side of the
# connection sits in TIME_WAIT), and fails; the JobSet restarts, and attempt
# 1 binds the same address and port - without SO_REUSEADDR, which in a shared
# network namespace fails with EADDRINUSE for a minute.
RESTART_SERVER = """
s = socket.socket()
s.bind(('0.0.0.0', 7500))
s.listen()
print('attempt', os.environ['ATTEMPT'], 'bound', os.environ['POD_IP'] + ':7500', flush=True)
c, peer = s.accept()
c.sendall(('attempt ' + os.environ['ATTEMPT']).encode())
c.shutdown(socket.SHUT_WR)
read_all(c)
c.close()
sys.exit(1 if os.environ['ATTEMPT'] == '0' else 0)
"""
RESTART_CLIENT = """
me = os.environ['JOBSET']
s = dial(me + '-srv-0-0.' + me, 7500)
got = read_all(s)
s.close()
print('got', got, flush=True)
"""


def test_restarted_server_binds_the_same_port(run):
    r = run(_jobset("again", _pod("srv", RESTART_SERVER), _pod("cli", RESTART_CLIENT), max_restarts=1))
    assert r.rc == 0, (r.stdout, r.stderr, r.logs("again-srv", "main"))
    assert r.status["restarts"] == 1
    srv = r.logs("again-srv-0-0", "main")
    assert "attempt 0 bound 10.244.0.2:7500" in srv and "attempt 1 bound 10.244.0.2:7500" in srv, srv
    assert "Address already in use" not in srv
    assert "got attempt 1" in r.logs("again-cli-0-0", "main")


# Each attempt serves one connection; attempt 0 then fails, attempt 1 ends
# the run. The pod's port is forwarded from the host.
PUBLISHED = """
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('0.0.0.0', 8000))
s.listen()
c, peer = s.accept()
c.sendall(('attempt %s of %s at %s' % (os.environ['ATTEMPT'], os.environ['HOSTNAME'], os.environ['POD_IP'])).encode())
c.close()
sys.exit(1 if os.environ['ATTEMPT'] == '0' else 0)
"""


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _fetch(port):
    """What 127.0.0.1:port answers, or None while nothing does."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            out = b""
            while True:
                b = s.recv(4096)
                if not b:
                    return out.decode() or None
                out += b
    except OSError:
        return None


@pytest.mark.parametrize("mode", ["namespaces", "--no-namespaces"])
def test_publish_reaches_a_pod_across_restarts(jobset_bin, tmp_path, mode):
    port = _free_port()
    args = ["--publish", f"pub-srv-0-0:8000:{port}"] + ([mode] if mode.startswith("--") else [])
    p, d = _start(jobset_bin, tmp_path, "pub", _jobset("pub", _pod("srv", PUBLISHED), max_restarts=1), *args)
    try:
        first = wait_for(lambda: _fetch(port), timeout=60, what="the published port to answer")
        assert first.startswith("attempt 0 of pub-srv-0-0 at "), first
        second = wait_for(lambda: (lambda g: g if g and g.startswith("attempt 1") else None)(_fetch(port)),
                          timeout=60, what="the restarted pod to answer on the same host port")
        assert second.startswith("attempt 1 of pub-srv-0-0 at "), second
    except BaseException:
        p.kill()
        p.communicate()
        raise
    r = _finish(p, d)
    assert r.rc == 0, (r.stdout, r.stderr)
    assert r.status["restarts"] == 1
    if mode == "namespaces":
        assert first.endswith(" at 10.244.0.2")
    # The run is over: the host port is closed again.
    assert _fetch(port) is None


# Degraded mode: the pod prints its address and waits for the other run's.
LOOPBACK = """
me, other = os.environ['JOBSET'], os.environ['OTHER']
open(os.path.join(os.environ['SYNC'], 'ip-' + me), 'w').write(os.environ['POD_IP'])
wait_file(os.path.join(os.environ['SYNC'], 'ip-' + other))
s = socket.socket()
s.bind((os.environ['POD_IP'], 7600))
print('bound', os.environ['POD_IP'], flush=True)
"""


def test_degraded_runs_get_different_loopback_blocks(jobset_bin, tmp_path):
    sync = tmp_path / "sync"
    sync.mkdir()
    runs = []
    for me, other in (("one", "two"), ("two", "one")):
        manifest = _jobset(me, _pod("w", LOOPBACK, {"OTHER": other, "SYNC": str(sync)}))
        runs.append((me, *_start(jobset_bin, tmp_path, me, manifest, "--no-namespaces")))
    ips = {}
    for me, p, d in runs:
        r = _finish(p, d)
        assert r.rc == 0, (me, r.stdout, r.stderr, r.logs(me, "main"))
        ips[me] = (sync / ("ip-" + me)).read_text()
        assert f"bound {ips[me]}" in r.logs(me + "-w-0-0", "main")
        # One line at the start says so, with the block.
        lines = [l for l in r.events().splitlines() if f"Warning DegradedNetwork jobset/{me}:" in l]
        block = ".".join(ips[me].split(".")[:2])
        assert len(lines) == 1 and f"pods use {block}.0.0/16" in lines[0], r.events()
    a, b = ips["one"].split("."), ips["two"].split(".")
    assert a[0] == b[0] == "127"
    assert a[1] != b[1], ips  # different blocks
    assert a[2:] == b[2:] == ["0", "2"]  # same position in each


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"),
                    reason="needs root to run the runner as another user (setpriv)")
def test_unprivileged_runner_gets_pod_networks(jobset_bin, demo_dir):
    # An ordinary user: the runner enters a user namespace of its own and
    # builds the same network there. pytest's own tmp_path is private to
    # root, so this test makes a directory nobody can use.
    tmp_path = Path(tempfile.mkdtemp(prefix="js-e2e-unpriv-"))
    tmp_path.chmod(0o777)
    try:
        _unprivileged(jobset_bin, demo_dir, tmp_path)
    finally:
        shutil.rmtree(tmp_path, ignore_errors=True)


def _unprivileged(jobset_bin, demo_dir, tmp_path):
    manifest = _jobset("solo", _pod("srv", SERVER, {"OTHER": "solo", "SYNC": str(tmp_path)}),
                       _pod("cli", CLIENT, {"OTHER": "solo", "SYNC": str(tmp_path)}))
    (tmp_path / "js.yaml").write_text(manifest)
    (tmp_path / "js.yaml").chmod(0o644)
    env = dict(os.environ, HOME=str(tmp_path), PATH=f"{demo_dir}:/usr/bin:/bin")
    p = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", str(jobset_bin), "run",
                        "--run-dir", str(tmp_path / "run"), str(tmp_path / "js.yaml")],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    r = Run(p, tmp_path / "run")
    assert (tmp_path / "run" / "events.log").exists(), (r.rc, r.stdout, r.stderr)
    if r.rc != 0 and "no user namespace" in r.events():
        pytest.skip("this kernel gives unprivileged users no user namespaces")
    assert r.rc == 0, (r.stdout, r.stderr, r.events())
    assert "inside a user namespace of the runner" in r.events()
    assert r.logs("solo-cli-0-0", "main").strip() == "client of solo got: I am solo"


def _local_addresses(fib_trie):
    """The addresses fib_trie lists as this namespace's own (/32 host LOCAL)."""
    lines = fib_trie.splitlines()
    return {lines[i - 1].split()[-1] for i, l in enumerate(lines) if "/32 host LOCAL" in l and i > 0}


# More pods than the makers make ahead (32): the rest are made on request
# while the runner goes on starting the others, and each pod's containers
# start once its own network is made. Every pod records the addresses its
# namespace holds (/proc/net/fib_trie and /proc/net/if_inet6 are per
# network namespace).
def test_many_pods_each_in_their_own_network(run, tmp_path):
    d = tmp_path / "seen"
    d.mkdir()
    r = run(jobset_yaml("many", 'cat /proc/net/fib_trie > "$D/$HOSTNAME"; '
                        'cat /proc/net/if_inet6 > "$D/$HOSTNAME.v6" 2>/dev/null || :', replicas=3, completions=16,
                        env={"D": d}), timeout=180)
    assert r.rc == 0, (r.stdout, r.stderr, r.events())
    ips = {p["spec"]["hostname"]: p["status"]["podIP"] for p in r.items if p["kind"] == "Pod"}
    assert len(ips) == 48 and len(set(ips.values())) == 48, ips
    for host, ip in ips.items():
        # Its own loopback and its own address, nobody else's.
        assert _local_addresses((d / host).read_text()) == {"127.0.0.1", ip}, host
        # IPv6 is on (::1 on lo where the kernel has it), but eth0 has no
        # link-local address: nothing for the bridge to flood.
        v6 = (d / (host + ".v6")).read_text().splitlines()
        assert not [l for l in v6 if l.split()[-1] != "lo"], (host, v6)
    # Position p of the JobSet has 10.244.0.(2+p), made ahead or not.
    assert ips["many-w-0-0"] == "10.244.0.2" and ips["many-w-2-15"] == "10.244.0.49"


# An interrupt while pods wait for their networks: the pods waiting are
# stopped before they ever start, the requests for them are given up, and
# the run ends as after any interrupt.
def test_interrupt_while_networks_are_made(jobset_bin, tmp_path):
    marker = "m" + uuid.uuid4().hex
    p, d = _start(jobset_bin, tmp_path, "int", jobset_yaml("sleepy", "exec sleep 600", replicas=4, completions=16,
                                                           grace=1, env={"JS_E2E_MARKER": marker}))
    wait_for(lambda: processes_with_env(marker), what="a first container process")
    p.send_signal(signal.SIGINT)
    r = _finish(p, d, timeout=60)
    assert r.rc == 130, (r.stdout, r.stderr)
    assert not processes_with_env(marker)
    # Nothing of the run's network reached the machine's namespace, and
    # with the runner and its pods gone nothing holds the namespaces (fds
    # only, nothing under /var/run/netns): the kernel takes them apart.
    assert not [n for n in os.listdir("/sys/class/net") if n == "jsbr0" or n.startswith("jsv")]
    conds = {c["type"]: c for c in r.status.get("conditions", [])}
    assert conds["Interrupted"]["status"] == "True", r.status
    pods = [i for i in r.items if i["kind"] == "Pod"]
    assert len(pods) >= 16 and all(p["status"]["phase"] in ("Succeeded", "Failed") for p in pods), r.items


def test_names_resolve_as_on_a_cluster(run):
    """A pod resolves its own bare hostname (the kubelet's hosts entry) and
    its peers as <host>.<subdomain> and longer, but not a peer's bare
    hostname: on a cluster that name is in no DNS zone, and a program
    relying on it would pass here and fail after submit."""
    check = ("getent hosts $HOSTNAME >/dev/null || exit 10; "
             "p=dns-w-0-$(( 1 - JOB_COMPLETION_INDEX )); "
             "getent hosts $p.dns >/dev/null || exit 11; "
             "getent hosts $p.dns.default.svc.cluster.local >/dev/null || exit 12; "
             "! getent hosts $p >/dev/null || exit 13")
    r = run(jobset_yaml("dns", check, completions=2))
    assert r.rc == 0, r.stdout + r.events()
