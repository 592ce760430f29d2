"""The differential test's case generator (tests/diff/gen.py): a case is a
pure function of its seed, every generated JobSet is valid (our validator,
`jobset validate`, which checks what the API server and upstream's webhook
would), and the generator reaches every shape it claims to cover."""
import collections
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
import gen  # noqa: E402

SEEDS = range(700000, 700300)


def jobset_bin():
    b = os.environ.get("JOBSET_BIN") or str(ROOT / "build" / "jobset")
    assert Path(b).exists(), f"{b} missing: build it (ninja -C build jobset) or set JOBSET_BIN"
    return b


def test_same_seed_same_case():
    for s in list(SEEDS)[:50]:
        assert json.dumps(gen.generate(s), sort_keys=True) == json.dumps(gen.generate(s), sort_keys=True)
    assert gen.generate(1)["jobset"] != gen.generate(2)["jobset"]


def test_every_case_is_valid(tmp_path):
    files = []
    for s in SEEDS:
        p = tmp_path / f"{s}.json"
        p.write_text(json.dumps(gen.generate(s)["jobset"]))
        files.append(str(p))
    r = subprocess.run([jobset_bin(), "validate", "--feature-gates", "RestartJob=true", *files],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]


def test_shapes_are_covered():
    seen = collections.Counter()
    for s in SEEDS:
        c = gen.generate(s)
        spec = c["jobset"]["spec"]
        seen[f"rjobs={len(spec['replicatedJobs'])}"] += 1
        seen[f"success={spec['successPolicy']['operator']}"] += 1
        seen["success targets"] += "targetReplicatedJobs" in spec["successPolicy"]
        seen[spec["startupPolicy"]["startupPolicyOrder"]] += 1
        seen["coordinator"] += "coordinator" in spec
        seen["suspend"] += bool(spec.get("suspend"))
        fp = spec.get("failurePolicy")
        seen["no failurePolicy"] += fp is None
        for r in (fp or {}).get("rules", []):
            seen[r["action"]] += 1
            seen["onJobFailureReasons"] += "onJobFailureReasons" in r
            seen["onJobFailureMessagePatterns"] += "onJobFailureMessagePatterns" in r
            seen["rule targets"] += "targetReplicatedJobs" in r
        if fp:
            seen[fp["restartStrategy"]] += 1
        for sc in c["scripts"]:
            if sc:
                seen[sc["reason"]] += 1
    want = ["rjobs=1", "rjobs=2", "rjobs=3", "success=All", "success=Any", "success targets", "AnyOrder",
            "InOrder", "coordinator", "suspend", "no failurePolicy", "Recreate", "BlockingRecreate",
            "onJobFailureReasons", "onJobFailureMessagePatterns", "rule targets",
            *gen.ACTIONS, *gen.REASONS]
    missing = [w for w in want if not seen[w]]
    assert not missing, f"never generated in {len(SEEDS)} seeds: {missing} ({dict(seen)})"
