"""The adversary driver (chaos.py) as a test of the cluster tier.

JS_CHAOS_SEED pins the seed (default: a new one each run, printed first and
in any failure with the command that replays it); JS_CHAOS_EDITS (1000) and
JS_CHAOS_BURST (250) size the run; JS_CHAOS_WITH (comma list) switches on the
edits of known, unfixed bugs (chaos.KNOWN_BUGS).
"""
import os
import random

import pytest

import chaos


@pytest.mark.skipif(not os.environ.get("JOBSET_TEST_KUBECONFIG"),
                    reason="JOBSET_TEST_KUBECONFIG unset: run hack/cluster up and eval hack/cluster env")
def test_adversary(tmp_path):
    seed = int(os.environ.get("JS_CHAOS_SEED") or random.SystemRandom().randrange(2**31))
    edits = int(os.environ.get("JS_CHAOS_EDITS", "1000"))
    burst = int(os.environ.get("JS_CHAOS_BURST", "250"))
    enable = [w for w in os.environ.get("JS_CHAOS_WITH", "").split(",") if w]
    print(f"chaos: seed {seed}, {edits} edits in bursts of {burst}, work dir {tmp_path}", flush=True)
    figures = chaos.Run(seed, edits, burst, tmp_path, enable).run()
    print(figures)
    assert figures["edits"] >= edits
