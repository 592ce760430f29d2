#!/usr/bin/env python3
"""recovery_rates.py - the controller's reconcile passes during recovery.sh's
restarts, and how soon a Job name's new pod follows its old pods' stop
(BENCHMARKS.md "Restart recovery on real nodes").

    recovery_rates.py rates SAMPLES DIR    per run of DIR (recovery.py's
        <variant>-<rep>.json): passes of controller="jobset" (all results)
        from the failure (t0) to the recovery, their mean rate, the highest
        rate between two samples, and the passes in the 30 s after (the
        namespace's deletion); then, per controller pod, the highest rate
        over the whole sampling; SAMPLES from reconcile-sampler.sh
    recovery_rates.py gaps DIR...          per variant, over every Job name of
        every run: first pod of the name's new Job seen minus the name's last
        old pod seen terminal or gone (s)
"""
import collections
import glob
import json
import statistics
import sys


def series(path):
    """[(epoch s, pod, total passes of controller="jobset")], time-ordered."""
    by = collections.defaultdict(dict)
    for line in open(path):
        f = line.split()
        if len(f) == 4 and 'controller="jobset"' in f[2]:
            by[(float(f[0]), f[1])][f[2]] = float(f[3])
    return sorted((t, pod, sum(v.values())) for (t, pod), v in by.items())


def at(ser, t):
    """The last sample at or before t, or None."""
    best = None
    for s in ser:
        if s[0] > t:
            break
        best = s
    return best


def rates(samples, out):
    ser = series(samples)
    print("| run | failure → recovered (s) | passes | passes/s | highest passes/s between samples | passes in the 30 s after |")
    print("|---|---|---|---|---|---|")
    for f in sorted(glob.glob(f"{out}/*.json")):
        r = json.load(open(f))
        t0, t1 = r["t0"], r["t0"] + r["total_s"]
        a, b = at(ser, t0), at(ser, t1)
        name = f"{r['variant']}-{r['rep']}"
        if not a or not b or a[1] != b[1]:
            print(f"| {name} | {r['total_s']:.1f} | no samples | | | |")
            continue
        win = [s for s in ser if a[0] <= s[0] <= b[0] + 1.5 and s[1] == a[1]]
        peak = max(((y[2] - x[2]) / (y[0] - x[0]) for x, y in zip(win, win[1:])), default=0.0)
        c = at(ser, t1 + 30)
        after = f"{c[2] - b[2]:.0f}" if c and c[1] == b[1] else "– (controller switched)"
        n = b[2] - a[2]
        print(f"| {name} | {r['total_s']:.1f} | {n:.0f} | {n / max(b[0] - a[0], 1e-9):.1f} | {peak:.1f} | {after} |")
    # Over the whole sampling (creates, restarts, deletions), per controller pod.
    top = collections.defaultdict(float)
    for x, y in zip(ser, ser[1:]):
        if x[1] == y[1]:
            top[x[1]] = max(top[x[1]], (y[2] - x[2]) / (y[0] - x[0]))
    print()
    for pod, v in top.items():
        print(f"{pod}: at most {v:.1f} passes/s between two samples")


def gaps(dirs):
    for v in ("upstream", "foreground", "direct"):
        g = []
        for d in dirs:
            for f in sorted(glob.glob(f"{d}/{v}-*.json")):
                names = collections.defaultdict(lambda: {"stop": [], "new": []})
                for p in json.load(open(f)).get("pods") or []:
                    e = names[p["key"].rsplit("-", 1)[0]]
                    if p["old"]:
                        e["stop"].append(min(x for x in (p["first"].get("terminal"), p["gone"], 1e9)
                                             if x is not None))
                    elif "seen" in p["first"]:
                        e["new"].append(p["first"]["seen"])
                g += [min(e["new"]) - max(e["stop"]) for e in names.values() if e["stop"] and e["new"]]
        if g:
            g.sort()
            print(f"{v}: {len(g)} names, median {statistics.median(g):.2f} s, "
                  f"{sum(x <= 1.2 for x in g)} within 1.2 s, max {g[-1]:.2f} s")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "rates":
        rates(sys.argv[2], sys.argv[3])
    elif len(sys.argv) >= 3 and sys.argv[1] == "gaps":
        gaps(sys.argv[2:])
    else:
        sys.exit(__doc__)
