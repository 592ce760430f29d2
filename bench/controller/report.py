#!/usr/bin/env python3
"""report.py - tables and plots from bench/controller/suite.sh results.

    report.py summary DIR|FILE.json...
        Markdown tables on stdout (suite.sh prints them at the end).
    report.py heap --binary BIN [--jobs N] [--command FILE] [--write LABEL] HEAPTRACK.zst
        The top allocation sites by peak heap of a heaptrack profile
        (bench/controller/heap.sh), named by the innermost function of BIN
        on each stack; --write LABEL also puts them into BENCHMARKS.md
        between <!-- bench-heap-LABEL:begin/end -->.
    report.py write [--bench-md BENCHMARKS.md] [--plots DIR] [--title T] [--note TEXT] DIR...
        Puts the tables, the plots and the command lines that made them
        (each DIR's command.txt) into BENCHMARKS.md between the markers
        <!-- bench-suite:begin --> and <!-- bench-suite:end --> (appended
        when absent), and writes controller-cpu.png and controller-rss.png
        (CPU seconds and peak RSS against N, one line per target) into
        --plots (default bench/controller/plots).

Each cell is the median over the runs of one (case, N, target), with the
number of runs when there is more than one; ratios (ours / upstream, and
create -> all Jobs over the raw loop's) are of medians from the same DIRs.
matplotlib comes from bench/controller/requirements.txt (pip-installed
when missing).
"""

import argparse
import glob
import json
import os
import re
import statistics
import subprocess
import sys
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BEGIN, END = "<!-- bench-suite:begin -->", "<!-- bench-suite:end -->"
ORDER = {"ours": 0, "upstream": 1, "raw": 2, "raw-qps": 3}
LABEL = {"ours": "ours", "upstream": "upstream v0.12.0", "raw": "raw create loop", "raw-qps": "raw loop, 500 QPS"}


def load(paths):
    files = []
    for p in paths:
        files += sorted(glob.glob(os.path.join(p, "*-[0-9]*.json"))) if os.path.isdir(p) else [p]
    runs = []
    for f in files:
        with open(f) as fh:
            r = json.load(fh)
        if not isinstance(r, dict) or r.get("kind") not in ("controller", "raw"):
            continue  # e.g. the raw loop's rendered List
        r.setdefault("case", "create")
        r.setdefault("pods_per_job", 1)
        runs.append(r)
    return runs


def groups(runs, case):
    """{(jobs, pods): {target: [runs]}} for one case, sorted by size."""
    out = {}
    for r in runs:
        if r["case"] == case:
            out.setdefault((r["jobs"], r["pods_per_job"]), {}).setdefault(r["name"], []).append(r)
    return {k: dict(sorted(v.items(), key=lambda kv: ORDER.get(kv[0], 9))) for k, v in sorted(out.items())}


def med(rs, f):
    vals = []
    for r in rs:
        try:
            v = f(r)
        except (KeyError, TypeError):
            v = None
        if v is not None:
            vals.append(v)
    return statistics.median(vals) if vals else None


def fmt(v, nd=1):
    if v is None:
        return "–"
    if isinstance(v, int) or (isinstance(v, float) and v.is_integer() and abs(v) >= 100):
        return f"{int(v):,}"
    return f"{v:,.{nd}f}"


def ratio(a, b):
    return f"{a / b:.2f}" if a is not None and b else "–"


def reconciles(r, key=None):
    rec = (r.get("restart", {}) if key == "restart" else r).get("reconciles")
    return rec.get("jobset") if rec else None


# Columns: (header, getter, digits); a getter returns None when not applicable.
CREATE_COLS = [
    ("create → all Jobs (s)", lambda r: r["create_to_all_jobs_s"], 1),
    ("create → all ready (s)", lambda r: r["create_to_all_ready_s"], 0),
    ("create → settled (s)", lambda r: r["settled_s"], 0),
    ("CPU to all Jobs (s)", lambda r: r["cpu_s"]["to_all_jobs"].get("under_test"), 2),
    ("CPU to settled (s)", lambda r: r["cpu_s"]["to_settled"].get("under_test"), 1),
    ("CPU per Job (ms)", lambda r: r["cpu_s"]["to_settled"]["under_test"] * 1000 / r["jobs"], 1),
    ("idle RSS (MB)", lambda r: r.get("rss_ready_mb"), 1),
    ("peak RSS (MB)", lambda r: r.get("peak_rss_create_mb", r.get("peak_rss_mb")), 1),
    ("RSS per Job (KB)", lambda r: r.get("rss_per_job_kb"), 1),
    ("API requests to settled", lambda r: r["requests"]["to_settled"]["total"], 0),
    ("Job POSTs 409", lambda r: r.get("job_posts_by_code", {}).get("409", 0), 0),
    ("reconciles", lambda r: reconciles(r), 0),
]
RESTART_COLS = [
    ("inject → Job Failed (s)", lambda r: r["restart"]["inject_to_job_failed_s"], 1),
    ("Job Failed → all new Jobs (s)", lambda r: r["restart"]["job_failed_to_all_new_jobs_s"], 1),
    ("inject → all new Jobs (s)", lambda r: r["restart"]["inject_to_all_new_jobs_s"], 1),
    ("inject → all new ready (s)", lambda r: r["restart"]["inject_to_all_new_ready_s"], 0),
    ("CPU, restart to settled (s)", lambda r: r["restart"]["cpu_s"]["to_settled"].get("under_test"), 1),
    ("API requests, restart to settled", lambda r: r["restart"]["requests"]["to_settled"]["total"], 0),
    ("reconciles, restart", lambda r: reconciles(r, "restart"), 0),
    ("peak RSS (MB)", lambda r: r.get("peak_rss_mb"), 1),
]
# Columns that get an "ours / upstream" ratio row.
RATIO_COLS = {"create → all Jobs (s)", "create → settled (s)", "CPU to settled (s)", "CPU per Job (ms)",
              "peak RSS (MB)", "RSS per Job (KB)", "API requests to settled", "reconciles",
              "Job Failed → all new Jobs (s)", "inject → all new Jobs (s)", "CPU, restart to settled (s)",
              "API requests, restart to settled", "reconciles, restart"}


def table(runs, case, cols):
    g = groups(runs, case)
    if not g:
        return ""
    lines = ["| N | pods | target | runs | " + " | ".join(h for h, _, _ in cols) + " |",
             "|---|---|---|---|" + "---|" * len(cols)]
    for (jobs, pods), by_t in g.items():
        meds = {t: [med(rs, f) for _, f, _ in cols] for t, rs in by_t.items()}
        for t, rs in by_t.items():
            cells = [fmt(v, nd) for v, (_, _, nd) in zip(meds[t], cols)]
            lines.append(f"| {jobs:,} | {jobs * pods:,} | {LABEL.get(t, t)} | {len(rs)} | " + " | ".join(cells) + " |")
        if "ours" in meds and "upstream" in meds:
            cells = [ratio(a, b) if h in RATIO_COLS else "" for a, b, (h, _, _) in
                     zip(meds["ours"], meds["upstream"], cols)]
            lines.append(f"| {jobs:,} | | *ours / upstream* | | " + " | ".join(cells) + " |")
        if case == "create" and "raw" in meds:
            for t in ("ours", "upstream"):
                if t in meds:
                    lines.append(f"| {jobs:,} | | *{t} / raw, create → all Jobs* | | "
                                 f"{ratio(meds[t][0], meds['raw'][0])} |" + " |" * (len(cols) - 1))
    return "\n".join(lines) + "\n"


def load_info(runs):
    la = [r.get("loadavg_start") for r in runs if r.get("loadavg_start") is not None]
    return f"load average at the start of measurements {min(la):.1f} – {max(la):.1f}" if la else ""


def summary_md(runs):
    out = []
    for case, cols, title in (("create", CREATE_COLS, "Creation: one JobSet of N single-pod Jobs"),
                              ("memory", CREATE_COLS, "Memory: one JobSet of N Jobs × P pods"),
                              ("restart", RESTART_COLS, "Restart: one pod of the settled JobSet fails")):
        t = table(runs, case, cols)
        if t:
            out.append(f"#### {title}\n\n{t}")
    info = load_info(runs)
    if info:
        out.append(f"({info}.)\n")
    return "\n".join(out)


def requests_by_kind(runs):
    """One line per (case, N, target): requests by verb and resource of the last run."""
    lines = []
    for case in ("create", "memory", "restart"):
        for (jobs, pods), by_t in groups(runs, case).items():
            for t, rs in by_t.items():
                r = rs[-1]
                key = r["restart"]["requests"] if case == "restart" else r["requests"]
                kinds = ", ".join(f"{k} {v:,}" for k, v in key["to_settled"]["by_verb_resource"].items())
                lines.append(f"- {case} {jobs:,}×{pods}, {LABEL.get(t, t)}: {kinds}")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ plots


def need_matplotlib():
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        req = os.path.join(HERE, "requirements.txt")
        print(f"report.py: installing {req} with pip", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "-r", req], check=True)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def plot(runs, path, ylabel, title, getter, command):
    """One line per target over the create case's N (plus memory-case points)."""
    plt = need_matplotlib()
    foot = command.count("\n") + 1 if command else 0
    fig, ax = plt.subplots(figsize=(7.5, 4.8 + 0.12 * foot), dpi=110)
    series = {}
    for case in ("create", "memory"):
        for (jobs, pods), by_t in groups(runs, case).items():
            for t, rs in by_t.items():
                v = med(rs, getter)
                if v is not None:
                    series.setdefault((t, case, pods), []).append((jobs, v))
    style = {"ours": ("tab:blue", "o"), "upstream": ("tab:orange", "s"), "raw": ("tab:gray", "^"),
             "raw-qps": ("tab:green", "v")}
    for (t, case, pods), pts in sorted(series.items(), key=lambda kv: (ORDER.get(kv[0][0], 9), kv[0][1])):
        xs, ys = zip(*sorted(pts))
        color, marker = style.get(t, ("black", "x"))
        label = LABEL.get(t, t) + ("" if case == "create" else f" ({pods} pods per Job)")
        ax.plot(xs, ys, marker=marker, color=color, linestyle="-" if case == "create" else "none",
                markerfacecolor=color if case == "create" else "white", label=label)
        # ours' labels below its points, the others' above: close values stay readable
        dy, va = (-6, "top") if t == "ours" else (6, "bottom")
        for x, y in zip(xs, ys):
            ax.annotate(f"{y:,.0f}" if y >= 10 else f"{y:.1f}", (x, y), textcoords="offset points",
                        xytext=(6, dy), va=va, fontsize=8, color=color)
    ax.set_xlabel("child Jobs in the JobSet (N, log scale)")
    ax.set_ylabel(ylabel + " (log scale)")
    ax.set_title(title, fontsize=11)
    # log-log: a controller whose cost is linear in N draws a line of slope 1
    # (the dotted guide); the small N stay apart from each other
    xs_all = sorted({x for pts in series.values() for x, _ in pts}) or [1]
    ys_all = [y for pts in series.values() for _, y in pts if y > 0] or [1]
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(xs_all[0] / 1.4, xs_all[-1] * 1.6)
    ax.set_ylim(min(ys_all) / 2, max(ys_all) * 2.5)
    ax.set_xticks(xs_all)
    ax.xaxis.set_major_formatter(plt.FuncFormatter(lambda x, _: f"{x:,.0f}"))
    ax.xaxis.set_minor_formatter(plt.NullFormatter())
    from matplotlib.ticker import LogLocator
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_minor_formatter(plt.NullFormatter())
    ax.yaxis.set_major_formatter(plt.FuncFormatter(lambda y, _: f"{y:,.0f}" if y >= 1 else f"{y:g}"))
    if len(xs_all) > 1 and ("ours", "create", 1) in series:
        x0, y0 = sorted(series[("ours", "create", 1)])[0]
        ax.plot([x0, xs_all[-1]], [y0, y0 * xs_all[-1] / x0], linestyle=":", color="tab:blue", alpha=0.5,
                label="linear from ours at the smallest N")
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=8, loc="upper left")
    if command:
        fig.text(0.01, 0.01, "made by: " + command, fontsize=6, color="dimgray", family="monospace", va="bottom")
    fig.tight_layout(rect=(0, (0.025 * foot + 0.01) / (1 + 0.025 * foot), 1, 1))
    fig.savefig(path)
    plt.close(fig)


def commands(dirs):
    out = []
    for d in dirs:
        f = os.path.join(d, "command.txt") if os.path.isdir(d) else None
        if f and os.path.exists(f):
            with open(f) as fh:
                out.append(fh.read().strip())
    return out


def short_command(cmds, width=130):
    """The command lines, relative to the repository, wrapped for the plot footer."""
    lines = []
    for c in cmds:
        for m in re.finditer(r"^command: (.*)$", c, re.M):
            lines += textwrap.wrap(m.group(1).replace(ROOT + "/", ""), width, subsequent_indent="    ",
                                   break_on_hyphens=False)
    return "\n".join(lines)


def write(args):
    runs = load(args.dirs)
    if not runs:
        sys.exit("report.py: no results in " + " ".join(args.dirs))
    cmds = commands(args.dirs)
    os.makedirs(args.plots, exist_ok=True)
    cmd1 = short_command(cmds)
    cpu_png = os.path.join(args.plots, "controller-cpu.png")
    rss_png = os.path.join(args.plots, "controller-rss.png")
    plot(runs, cpu_png, "CPU seconds, create → settled",
         "Controller CPU, create → settled (raw loop: whole process)",
         lambda r: r["cpu_s"]["to_settled"].get("under_test"), cmd1)
    plot(runs, rss_png, "peak RSS (MB)", "Peak RSS of the controller (raw loop: ru_maxrss)",
         lambda r: r.get("peak_rss_create_mb", r.get("peak_rss_mb")), cmd1)
    md_dir = os.path.dirname(os.path.abspath(args.bench_md))
    rel = lambda p: os.path.relpath(os.path.abspath(p), md_dir)  # noqa: E731
    parts = [BEGIN, f"### {args.title}", ""]
    if args.note:
        parts += [args.note.strip(), ""]
    parts += ["Made by (each directory's `command.txt`):", "", "```"]
    for c in cmds:
        parts.append(c.replace(ROOT + "/", ""))
    parts += ["```", "",
              "Tables and plots: `bench/controller/report.py write "
              + ("--note '<the paragraph above>' " if args.note else "")
              + f"{' '.join(rel_arg(d) for d in args.dirs)}`.",
              "", summary_md(runs),
              "API requests by verb and resource, create (or restart) → settled, last run of each:", "",
              requests_by_kind(runs),
              f"![controller CPU against N]({rel(cpu_png)})", "",
              f"![controller peak RSS against N]({rel(rss_png)})", "", END]
    section = "\n".join(parts) + "\n"
    with open(args.bench_md) as f:
        md = f.read()
    if BEGIN in md and END in md:
        a, b = md.index(BEGIN), md.index(END) + len(END)
        md = md[:a] + section.rstrip("\n") + md[b:]
    else:
        md = md.rstrip("\n") + "\n\n" + section
    with open(args.bench_md, "w") as f:
        f.write(md)
    print(f"report.py: wrote {args.bench_md}, {cpu_png}, {rss_png}", file=sys.stderr)


# ------------------------------------------------------------------ heap profile


def human(n):
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div:
            return f"{n / div:,.1f} {unit}"
    return f"{n:,} B"


def own_functions(binary):
    """Names of the functions defined in binary (its symbol table): ours."""
    out = subprocess.run(["nm", "--defined-only", binary], capture_output=True, text=True, check=True).stdout
    return {ln.split()[2] for ln in out.splitlines() if len(ln.split()) == 3 and ln.split()[1] in "Tt"}


def frame_name(f):
    """heaptrack's folded frame 'fn (file.c)' -> 'fn'."""
    return re.sub(r" \([^()]*\)$", "", f.strip())


# Our allocation wrappers: a site is where they are called from.
WRAPPERS = re.compile(r"^(js_x\w+|js_buf_\w+|reserve)$")


def heap_tables(folded, own, top=10):
    """From heaptrack's folded stacks (root first, peak bytes last): the
    allocation sites (innermost function of ours on the stack, and the
    library function it called) and our functions inclusive, by peak."""
    sites, incl, total = {}, {}, 0
    for line in folded.splitlines():
        stack, _, n = line.rpartition(" ")
        if not n.isdigit():
            continue
        n = int(n)
        total += n
        frames = [frame_name(f) for f in stack.rstrip(";").split(";")]
        ours = [i for i, f in enumerate(frames) if f in own and not WRAPPERS.match(f)]
        if not ours:
            key = ("(outside our code)", frames[-1] if frames else "?", "")
        else:
            i = ours[-1]
            callee = frames[i + 1] if i + 1 < len(frames) else "(direct)"
            callers = " ← ".join(frames[j] for j in reversed(ours[-3:-1]))
            key = (frames[i], callee if not callee.startswith("0x") else "(library internals)", callers)
        e = sites.setdefault(key[:2], [0, {}])
        e[0] += n
        e[1][key[2]] = e[1].get(key[2], 0) + n
        for f in {frames[i] for i in ours} - {"_start", "main"}:
            incl[f] = incl.get(f, 0) + n
    return total, sorted(sites.items(), key=lambda kv: -kv[1][0])[:top], sorted(incl.items(), key=lambda kv: -kv[1])


def heap(args):
    own = own_functions(args.binary)
    tmp = args.data + ".peak.folded"
    run = subprocess.run(["heaptrack_print", "-f", args.data, "-p", "0", "-a", "0", "-T", "0",
                          "--flamegraph-cost-type", "peak", "-F", tmp], capture_output=True, text=True, check=True)
    stats = {k: v.strip() for k, v in re.findall(r"^(total runtime|calls to allocation functions|"
                                                 r"temporary memory allocations|peak heap memory consumption|"
                                                 r"peak RSS \(including heaptrack overhead\)):(.*)$",
                                                 run.stdout, re.M)}
    with open(tmp) as f:
        total, sites, incl = heap_tables(f.read(), own, args.top)
    res = ""
    if args.result and os.path.exists(args.result):
        with open(args.result) as f:
            r = json.load(f)
        res = (f" The controller's RSS under heaptrack: {r.get('rss_ready_mb')} MB idle, peak (VmHWM) "
               f"{r.get('peak_rss_mb')} MB; {reconciles(r) or '?'} reconciles; all Jobs ready "
               f"{r.get('create_to_all_ready_s')} s and settled {r.get('settled_s')} s after the create "
               "(slowed by heaptrack).")
    lines = [f"Peak heap {human(total)}; "
             f"{stats.get('calls to allocation functions', '?')} calls to allocation functions, "
             f"{stats.get('temporary memory allocations', '?')} temporary; peak RSS under heaptrack "
             f"{stats.get('peak RSS (including heaptrack overhead)', '?')}.{res}",
             "",
             f"Top {len(sites)} allocation sites by peak heap (the innermost function of ours on the stack, "
             "and what it called):", "",
             "| # | function (ours) | calls into | peak | share | per child Job | main callers |",
             "|---|---|---|---|---|---|---|"]
    for k, ((fn, callee), (n, callers)) in enumerate(sites, 1):
        main_callers = max(callers.items(), key=lambda kv: kv[1])[0] if callers else ""
        per_job = human(n // args.jobs) if args.jobs else "–"
        lines.append(f"| {k} | `{fn}` | `{callee}` | {human(n)} | {100 * n / total:.1f} % | {per_job} | "
                     f"{'`' + main_callers + '`' if main_callers else ''} |")
    lines += ["", f"Our functions by peak heap allocated under them (inclusive; top {args.top}):", "",
              "| function | peak | share |", "|---|---|---|"]
    for fn, n in incl[:args.top]:
        lines.append(f"| `{fn}` | {human(n)} | {100 * n / total:.1f} % |")
    body = "\n".join(lines) + "\n"
    print(body)
    if args.write:
        cmd = ""
        if args.command and os.path.exists(args.command):
            with open(args.command) as f:
                cmd = f.read().strip().replace(ROOT + "/", "")
        begin, end = f"<!-- bench-heap-{args.write}:begin -->", f"<!-- bench-heap-{args.write}:end -->"
        section = (f"{begin}\n### Heap profile ({args.write}): {args.jobs:,}-Job JobSet, create → settled\n\n"
                   f"```\n{cmd}\n```\n\n{body}{end}")
        with open(args.bench_md) as f:
            md = f.read()
        if begin in md and end in md:
            md = md[:md.index(begin)] + section + md[md.index(end) + len(end):]
        else:
            md = md.rstrip("\n") + "\n\n" + section + "\n"
        with open(args.bench_md, "w") as f:
            f.write(md)


def rel_arg(d):
    return d.replace(ROOT + "/", "")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="mode", required=True)
    p = sub.add_parser("summary")
    p.add_argument("paths", nargs="+")
    p = sub.add_parser("write")
    p.add_argument("--bench-md", default=os.path.join(ROOT, "BENCHMARKS.md"))
    p.add_argument("--plots", default=os.path.join(HERE, "plots"))
    p.add_argument("--title", default="Results")
    p.add_argument("--note", help="a paragraph put under the title (conditions, caveats)")
    p.add_argument("dirs", nargs="+")
    p = sub.add_parser("heap")
    p.add_argument("--binary", required=True, help="the profiled program (its functions are 'ours')")
    p.add_argument("--jobs", type=int, default=0, help="child Jobs, for the per-Job column")
    p.add_argument("--top", type=int, default=10)
    p.add_argument("--command", help="command.txt to quote")
    p.add_argument("--result", help="the measure.py result of the profiled run")
    p.add_argument("--write", metavar="LABEL")
    p.add_argument("--bench-md", default=os.path.join(ROOT, "BENCHMARKS.md"))
    p.add_argument("data")
    args = ap.parse_args()
    if args.mode == "heap":
        heap(args)
    elif args.mode == "summary":
        runs = load(args.paths)
        print(summary_md(runs))
        print(requests_by_kind(runs))
    else:
        write(args)


if __name__ == "__main__":
    main()
