"""deploy/monitoring/ (docs/metrics.md "Dashboard and alerts"): the Grafana
dashboard and the example PrometheusRule parse, and every metric they name
is one the controller declares (src/ctrl/controller.c) with the right type
for how it is used, and docs/metrics.md or docs/controller.md documents it.
tests/e2e/cluster/test_metrics.py checks the same names against a real
scrape."""
import json
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import monitoring  # noqa: E402

DOCS = (monitoring.ROOT / "docs" / "metrics.md").read_text() + (monitoring.ROOT / "docs" / "controller.md").read_text()


def test_files_parse():
    d = json.loads(monitoring.DASHBOARD.read_text())
    assert d["panels"] and all(p.get("targets") for p in d["panels"])
    assert len({p["id"] for p in d["panels"]}) == len(d["panels"])
    rules = monitoring.alert_rules()
    assert rules and all(r.get("alert") and r.get("expr") and r.get("annotations", {}).get("summary") for r in rules)
    assert len({r["alert"] for r in rules}) == len(rules)
    docs = [x for x in yaml.safe_load_all(monitoring.ALERTS.read_text()) if x]
    assert [(x["apiVersion"], x["kind"]) for x in docs] == [("monitoring.coreos.com/v1", "PrometheusRule")]
    k = yaml.safe_load((monitoring.MONITORING / "kustomization.yaml").read_text())
    assert k["resources"] == ["jobset-alerts.yaml"]
    assert k["configMapGenerator"][0]["files"] == ["jobset-dashboard.json"]


def test_expression_parser():
    """The name extraction the checks below rely on."""
    cases = {
        'sum by (reason, action) (increase(jobset_restarts_by_reason_total[30m])) > 5':
            {"jobset_restarts_by_reason_total"},
        'histogram_quantile(0.9, sum by (le) (rate(x_seconds_bucket{trigger="restart"}[1h]))) > 600':
            {"x_seconds_bucket"},
        'a < 0.5 and on (namespace, jobset_name) sum by (namespace) (b{phase="x"}) > 3600': {"a", "b"},
        'jobset_goodput_ratio': {"jobset_goodput_ratio"},
    }
    for expr, want in cases.items():
        assert monitoring.metrics_in(expr) == want, expr


def test_every_referenced_metric_is_declared_and_documented():
    decl = monitoring.declared()
    assert {"jobset_failed_total", "jobset_completed_total", "jobset_goodput_ratio"} <= set(decl), decl
    refs = monitoring.referenced()
    assert refs, "no metric found in deploy/monitoring/"
    for name, where in sorted(refs.items()):
        fam = monitoring.family(name)
        if fam != name:
            assert decl.get(fam) == "histogram", f"{name} ({where}): {fam} is not a declared histogram"
        else:
            assert name in decl and decl[name] != "histogram", f"{name} ({where}) is not a declared counter/gauge"
        assert f"`{fam}`" in DOCS, f"{fam} ({where}) is not documented"
    # The new families are all shown somewhere.
    new = {"jobset_restarts_by_reason_total", "jobset_time_to_all_ready_seconds", "jobset_phase_duration_seconds",
           "jobset_phase_seconds_total", "jobset_goodput_ratio"}
    assert new <= {monitoring.family(n) for n in refs}, new - {monitoring.family(n) for n in refs}


def test_every_declared_metric_is_documented():
    # A family may be documented with its siblings: docs/controller.md has
    # "`jobset_controller_informer_lists_total`, `..._watches_total`".
    for name in monitoring.declared():
        assert f"`{name}`" in DOCS or f"`{name.rsplit('_', 2)[0]}" in DOCS, f"{name} is not documented"
