"""The metric names deploy/monitoring/ refers to, and those the controller
declares, for tests/e2e/cli/test_monitoring.py (against the source and
docs/metrics.md) and tests/e2e/cluster/test_metrics.py (against a scrape)."""
import json
import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
MONITORING = ROOT / "deploy" / "monitoring"
DASHBOARD = MONITORING / "jobset-dashboard.json"
ALERTS = MONITORING / "jobset-alerts.yaml"

# What a PromQL expression names that is not a metric: aggregation
# modifiers take label lists, which are removed first; functions are
# followed by "("; keywords stand alone.
_LABEL_LISTS = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_MATCHERS = re.compile(r"\{[^}]*\}")
_STRINGS = re.compile(r'"[^"]*"')
_RANGES = re.compile(r"\[[^\]]*\]")
_IDENT = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_KEYWORDS = {"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring", "group_left",
             "group_right", "inf", "nan"}
_HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")


def metrics_in(expr):
    """The metric names an expression reads (histogram series suffixes
    kept: `x_bucket`)."""
    e = _STRINGS.sub("", _RANGES.sub("", _MATCHERS.sub("", _LABEL_LISTS.sub("", expr))))
    names = set()
    for m in _IDENT.finditer(e):
        rest = e[m.end():].lstrip()
        word = m.group()
        if rest.startswith("(") or word.lower() in _KEYWORDS or word[0].isdigit():
            continue
        names.add(word)
    return names


def family(name):
    """The family a series name belongs to (a histogram's _bucket, _sum,
    _count map to the histogram)."""
    for s in _HISTOGRAM_SUFFIXES:
        if name.endswith(s):
            return name[: -len(s)]
    return name


def dashboard_exprs():
    d = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in d["panels"] for t in p.get("targets", []) if t.get("expr")]
    for v in d.get("templating", {}).get("list", []):
        q = v.get("definition") or ""
        m = re.match(r"label_values\((\w+)", q)
        if m:
            exprs.append(m.group(1))
    return exprs


def alert_rules():
    docs = [d for d in yaml.safe_load_all(ALERTS.read_text()) if d]
    return [r for d in docs for g in d["spec"]["groups"] for r in g["rules"]]


def referenced():
    """{series name: [where]} over the dashboard and the alerts."""
    out = {}
    for e in dashboard_exprs():
        for n in metrics_in(e):
            out.setdefault(n, []).append("dashboard")
    for r in alert_rules():
        for n in metrics_in(r["expr"]):
            out.setdefault(n, []).append("alert " + r["alert"])
    return out


def declared():
    """{family name: type} of the controller's table (src/ctrl/controller.c)."""
    src = (ROOT / "src" / "ctrl" / "controller.c").read_text()
    table = src[src.index("families[JS__M__COUNT]"):]
    table = table[: table.index("\n};")]
    return {m.group(1): m.group(2).lower() for m in
            re.finditer(r'=\s*\{"(\w+)",.*?JS_METRICS_(COUNTER|GAUGE|HISTOGRAM)', table, re.S)}


def exposed(text):
    """{family name: type} of a Prometheus text exposition."""
    return {m.group(1): m.group(2) for m in re.finditer(r"^# TYPE (\S+) (\S+)$", text, re.M)}
