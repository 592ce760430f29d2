"""The API server's audit log of hack/cluster (JOBSET_TEST_AUDIT_LOG:
every request of the ServiceAccounts of jobset-system at level Metadata,
their Job creates at level Request, docs/cluster.md), as an independent
record of what the controller under test did."""
import json
import os
from pathlib import Path

LABEL = "jobset.sigs.k8s.io/"


def audit_offset():
    p = Path(os.environ["JOBSET_TEST_AUDIT_LOG"])
    return p.stat().st_size if p.exists() else 0


def audit_job_creates(ns, offset):
    """The API server's record of Job creates in `ns` since `offset`:
    [(owner uid, name, attempt, jra, code, time)]."""
    out = []
    p = Path(os.environ["JOBSET_TEST_AUDIT_LOG"])
    with open(p, "rb") as f:
        f.seek(offset)
        for line in f:
            try:
                e = json.loads(line)
            except ValueError:
                continue
            ref = e.get("objectRef") or {}
            if (e.get("verb") != "create" or ref.get("resource") != "jobs" or ref.get("namespace") != ns
                    or e.get("stage") != "ResponseComplete"):
                continue
            md = (e.get("requestObject") or {}).get("metadata") or {}
            lb = md.get("labels") or {}
            owner = [o.get("uid") for o in md.get("ownerReferences") or [] if o.get("controller")]
            out.append((owner[0] if owner else None, md.get("name"), lb.get(LABEL + "restart-attempt"),
                        lb.get(LABEL + "job-restart-attempt", "0"), (e.get("responseStatus") or {}).get("code"),
                        e.get("stageTimestamp")))
    return out
