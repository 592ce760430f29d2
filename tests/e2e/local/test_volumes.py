"""Volumes in process mode (issue 12): one row per kind of volume, each a
JobSet whose pod proves what it sees through its log, plus the rule that a
mount target missing on this machine is never created on it."""
import os
import uuid
from pathlib import Path

import pytest
import yaml


def jobset(containers, volumes=(), init=(), name="vol", docs=(), restart="Never"):
    """A one-pod JobSet (plus extra documents) as YAML text."""
    spec = {"restartPolicy": restart, "containers": list(containers)}
    if volumes:
        spec["volumes"] = list(volumes)
    if init:
        spec["initContainers"] = list(init)
    js = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": name},
        "spec": {"replicatedJobs": [{"name": "w", "template": {"spec": {
            "completions": 1, "parallelism": 1, "backoffLimit": 0, "template": {"spec": spec}}}}]},
    }
    return yaml.safe_dump_all([*docs, js], sort_keys=False)


def sh(name, script, mounts=(), **extra):
    c = {"name": name, "image": "busybox", "command": ["sh", "-c", script]}
    if mounts:
        c["volumeMounts"] = list(mounts)
    c.update(extra)
    return c


def missing_path():
    """A top-level path that does not exist on this machine."""
    p = Path("/jobset-e2e-" + uuid.uuid4().hex[:8])
    assert not p.exists()
    return p


def test_empty_dir_is_shared_by_the_pods_containers_and_removed_after(run):
    target = missing_path()
    text = jobset(
        init=[sh("fill", f"echo from-init > {target}/a", [{"name": "scratch", "mountPath": str(target)}])],
        containers=[sh("read", f"cat {target}/a; ls -ld {target} | cut -c1-10",
                       [{"name": "scratch", "mountPath": str(target)}])],
        volumes=[{"name": "scratch", "emptyDir": {}}])
    r = run(text)
    assert r.rc == 0, r.stdout + r.stderr
    assert r.logs("vol-w-0-0", "read").splitlines() == ["from-init", "drwxrwxrwx"]
    assert not target.exists()
    assert not (r.dir / "pods").exists() or not any((r.dir / "pods").iterdir())


def test_host_path_over_a_missing_target_leaves_the_machine_alone(run, tmp_path):
    src = tmp_path / "data"
    src.mkdir()
    (src / "in.txt").write_text("hello from the host\n")
    target = missing_path()
    text = jobset([sh("c", f"cat {target}/deep/in.txt; echo out > {target}/deep/out.txt; ls /",
                      [{"name": "d", "mountPath": f"{target}/deep"}])],
                  volumes=[{"name": "d", "hostPath": {"path": str(src), "type": "Directory"}}])
    r = run(text)
    assert r.rc == 0, r.stdout + r.stderr
    log = r.logs("vol-w-0-0", "c").splitlines()
    assert log[0] == "hello from the host"
    # The container's / has the machine's entries plus the new one.
    assert target.name in log and "usr" in log and "tmp" in log
    assert (src / "out.txt").read_text() == "out\n"
    assert not target.exists()


def test_missing_target_below_an_existing_directory(run, tmp_path):
    """The parent exists on the machine (not /): it is replicated in the
    container, its own entries still there, the new directory only inside."""
    parent = tmp_path / "parent"
    parent.mkdir()
    (parent / "keep.txt").write_text("kept\n")
    src = tmp_path / "src"
    src.mkdir()
    text = jobset([sh("c", f"cat {parent}/keep.txt; echo x > {parent}/new/x; echo y > {parent}/keep2.txt",
                      [{"name": "d", "mountPath": f"{parent}/new"}])],
                  volumes=[{"name": "d", "hostPath": {"path": str(src)}}])
    r = run(text)
    assert r.rc == 0, r.stdout + r.stderr
    assert r.logs("vol-w-0-0", "c").splitlines() == ["kept"]
    assert (src / "x").read_text() == "x\n"
    assert sorted(p.name for p in parent.iterdir()) == ["keep.txt"]  # nothing new on the machine


def test_read_only_mount_and_existing_target(run, tmp_path):
    src = tmp_path / "ro"
    src.mkdir()
    (src / "f").write_text("ro-data\n")
    target = tmp_path / "existing"
    target.mkdir()
    text = jobset([sh("c", f"cat {target}/f; if echo x > {target}/g; then echo writable; else echo refused; fi",
                      [{"name": "d", "mountPath": str(target), "readOnly": True}])],
                  volumes=[{"name": "d", "hostPath": {"path": str(src)}}])
    r = run(text)
    assert r.rc == 0, r.stdout + r.stderr
    log = r.logs("vol-w-0-0", "c")
    assert "ro-data" in log and "refused" in log, log
    assert not (src / "g").exists() and list(target.iterdir()) == []


def test_host_path_types(run, tmp_path):
    made = tmp_path / "made" / "here"
    target = missing_path()
    text = jobset([sh("c", f"touch {target}/ok", [{"name": "d", "mountPath": str(target)}])],
                  volumes=[{"name": "d", "hostPath": {"path": str(made), "type": "DirectoryOrCreate"}}])
    r = run(text)
    assert r.rc == 0, r.stdout + r.stderr
    assert (made / "ok").exists()

    text = jobset([sh("c", "true", [{"name": "d", "mountPath": str(target)}])],
                  volumes=[{"name": "d", "hostPath": {"path": str(tmp_path / "absent"), "type": "Directory"}}])
    r = run(text, "--reuse-run-dir")
    assert r.rc == 1, r.stdout + r.stderr
    assert "hostPath " + str(tmp_path / "absent") in r.events(), r.events()


def test_persistent_volume_claims_of_the_pod_and_of_the_manifest(run):
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
           "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}
    text = jobset([sh("c", "echo a > /claims/data/a; echo b > /claims/other/sub/b",
                      [{"name": "data", "mountPath": "/claims/data"},
                       {"name": "other", "mountPath": "/claims/other/sub", "subPath": "nested"}])],
                  volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
                           {"name": "other", "persistentVolumeClaim": {"claimName": "scratch-claim"}}],
                  docs=[pvc])
    r = run(text)
    assert r.rc == 0, r.stdout + r.stderr
    assert "Normal Created persistentvolumeclaim/data: directory " in r.events()
    # Claims the JobSet does not own are kept at the end of the run.
    assert (r.dir / "volumes" / "data" / "a").read_text() == "a\n"
    assert (r.dir / "volumes" / "scratch-claim" / "nested" / "b").read_text() == "b\n"
    assert not Path("/claims").exists()


CONFIG = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"},
          "data": {"mode": "fast", "app.conf": "threads=4\n"},
          "binaryData": {"blob": "AAEC"}}
SECRET = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds"},
          "data": {"password": "czNjcjN0"},  # s3cr3t
          "stringData": {"user": "alice"}}


def test_config_map_and_secret_volumes(run):
    script = ("cd /etc/app && ls; cat app.conf mode; od -An -tx1 blob; "
              "cat /etc/creds/login; echo; stat -c %a /etc/creds/login; "
              "if touch /etc/app/new 2>/dev/null; then echo writable; else echo read-only; fi")
    text = jobset([sh("c", script, [{"name": "cfg", "mountPath": "/etc/app"},
                                    {"name": "sec", "mountPath": "/etc/creds"}])],
                  volumes=[{"name": "cfg", "configMap": {"name": "settings"}},
                           {"name": "sec", "secret": {"secretName": "creds", "defaultMode": 0o600,
                                                      "items": [{"key": "user", "path": "login"}]}}],
                  docs=[CONFIG, SECRET])
    r = run(text)
    assert r.rc == 0, r.stdout + r.stderr
    log = r.logs("vol-w-0-0", "c").split()
    assert log[:3] == ["app.conf", "blob", "mode"]
    assert log[3:] == ["threads=4", "fast", "00", "01", "02", "alice", "600", "read-only"], log


def test_env_from_config_maps_and_secrets(run):
    c = sh("c", 'echo "mode=$MODE pw=$PW cfg_mode=$CFG_mode user=$user opt=${OPT-unset}"',
           env=[{"name": "MODE", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "mode"}}},
                {"name": "PW", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "password"}}},
                {"name": "OPT", "valueFrom": {"configMapKeyRef": {"name": "nope", "key": "k", "optional": True}}}],
           envFrom=[{"prefix": "CFG_", "configMapRef": {"name": "settings"}}, {"secretRef": {"name": "creds"}},
                    {"configMapRef": {"name": "absent", "optional": True}}])
    r = run(jobset([c], docs=[CONFIG, SECRET]))
    assert r.rc == 0, r.stdout + r.stderr
    assert r.logs("vol-w-0-0", "c").strip() == "mode=fast pw=s3cr3t cfg_mode=fast user=alice opt=unset"


@pytest.mark.parametrize("case,want", [
    ({"env": [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "nope", "key": "k"}}}]},
     "ConfigMap 'nope' is not in the manifest"),
    ({"env": [{"name": "X", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "nokey"}}}]},
     "Secret 'creds' has no key 'nokey'"),
    ({"envFrom": [{"secretRef": {"name": "nope"}}]}, "Secret 'nope' is not in the manifest"),
    ({"volumeMounts": [{"name": "undefined", "mountPath": "/x"}]}, "names volume 'undefined'"),
    ({"volumeMounts": [{"name": "cfg", "mountPath": "relative"}]}, "must be an absolute path"),
    ({"volumeMounts": [{"name": "cfg", "mountPath": "/x", "subPath": "../up"}]}, "without '..'"),
    ({"volumeMounts": [{"name": "gone", "mountPath": "/x"}]}, "ConfigMap 'missing' is not in the manifest"),
    ({"volumeMounts": [{"name": "dapi", "mountPath": "/x"}]}, "downwardAPI volumes are not supported locally"),
])
def test_bad_references_are_refused_before_anything_starts(run, case, want):
    c = sh("c", "true", **case)
    vols = [{"name": "cfg", "configMap": {"name": "settings"}},
            {"name": "gone", "configMap": {"name": "missing"}},
            {"name": "dapi", "downwardAPI": {"items": []}}]
    if "downwardAPI" not in want:
        vols.pop()
    if "missing" not in want:
        vols.pop(1)
    r = run(jobset([c], volumes=vols, docs=[CONFIG, SECRET]))
    assert r.rc == 2, r.stdout + r.stderr
    assert want in r.stderr and "nothing was started" in r.stderr, r.stderr
    assert not r.dir.exists()


def test_malformed_secret_is_refused(run):
    bad = dict(SECRET, data={"password": "not base64!"})
    r = run(jobset([sh("c", "true")], docs=[bad]))
    assert r.rc == 2 and "Secret/creds: data['password'] is not valid base64" in r.stderr, r.stderr


def test_nested_mounts_land_on_top(run, tmp_path):
    outer, inner = tmp_path / "outer", tmp_path / "inner"
    outer.mkdir()
    inner.mkdir()
    (inner / "i").write_text("inner\n")
    target = missing_path()
    # Listed child first: mounts go parents first whatever the order.
    text = jobset([sh("c", f"cat {target}/sub/i; ls {target}",
                      [{"name": "in", "mountPath": f"{target}/sub"}, {"name": "out", "mountPath": str(target)}])],
                  volumes=[{"name": "out", "hostPath": {"path": str(outer)}},
                           {"name": "in", "hostPath": {"path": str(inner)}}])
    r = run(text)
    assert r.rc == 0, r.stdout + r.stderr
    assert r.logs("vol-w-0-0", "c").split() == ["inner", "sub"]
    assert (outer / "sub").is_dir()  # the mount point, made inside the outer volume as runc does
    assert not target.exists()


def test_volume_mounts_need_namespaces(run):
    target = missing_path()
    text = jobset([sh("c", "true", [{"name": "e", "mountPath": str(target)}])],
                  volumes=[{"name": "e", "emptyDir": {}}])
    r = run(text, "--no-namespaces")
    assert r.rc == 1, r.stdout + r.stderr
    assert "volume mounts need a mount namespace" in r.events()
