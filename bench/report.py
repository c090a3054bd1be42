"""The bench's outputs: a terminal table, the same as Markdown, and a PNG plot of each case's
share of the copy roofline, poolgpu's and the peers'; and the published tables and plot made
from the committed runs (bench/latest.json, the newest bench/gpu/*.json):

    python -m bench.report --markdown bench/latest.json bench/gpu/2026-11-23-h100.json
    python -m bench.report --publish      # docs/bench-tables.md and bench/latest.png from them
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from . import ROOT
from .peers import LABELS
from .ratios import BASE, TARGETS
from .timing import PER_PASS, SUMMARY

LATEST = ROOT / "bench" / "latest.json"  # the latest run on a CPU adapter (lavapipe)
GPU_RUNS = ROOT / "bench" / "gpu"  # runs on real GPUs, <date>-<gpu>.json
TABLES = ROOT / "docs" / "bench-tables.md"
PLOT = ROOT / "bench" / "latest.png"

SHORT_TYPE = {"float32": "f32", "float16": "f16"}


def row_label(row: dict) -> str:
    return f"{row['case']} {row['op']} {SHORT_TYPE.get(row['dtype'], row['dtype'])} {row['layout'].upper()}"


def _ms(value: float) -> str:
    return f"{value:.3g}" if value < 100 else f"{value:.0f}"


def summary(results: dict) -> str:
    """The statistic a run's tables use: "min_ms" (timing.SUMMARY) unless the run says
    otherwise (runs before it used medians)."""
    return results.get("summary", SUMMARY)


def _poolgpu_cells(row: dict, stat: str) -> list:
    if row["status"] != "ok":
        return [row["status"].upper() if row["status"] == "check failed" else row["status"], "", "", ""]
    return [
        _ms(row["poolgpu"][stat]),
        f"{row['poolgpu']['gb_per_s']:.2f}",
        _ms(row["copy"][stat]),
        f"{row['pct_of_copy']:.0f}%",
    ]


def _ratio_text(ratio: float) -> str:
    return f"{ratio:.0f}x" if ratio >= 10 else f"{ratio:.2g}x"


def _peer_cell(row: dict, name: str, stat: str = SUMMARY) -> str:
    peer = row.get("peers", {}).get(name)
    if peer is None:
        return ""
    if peer["status"] in ("ok", "mismatch"):
        cell = _ms(peer[stat])
        if peer.get("ratio") is not None:
            cell += f" ({_ratio_text(peer['ratio'])})"
        return cell + (" ✗" if peer["status"] == "mismatch" else "")
    return "n/a" if peer["status"] == "unsupported" else "-"


SKIPPED = ("not available", "not applicable")  # summarised under the table, not listed


def table(results: dict, rows=None) -> tuple:
    """(header, body) of ``rows`` (default: all listed); a column per peer that has a cell."""
    stat = summary(results)
    rows = [r for r in (results["rows"] if rows is None else rows) if r["status"] not in SKIPPED]
    peers = [name for name, peer in results["peers"].items()
             if peer["status"] == "available" and any(_peer_cell(r, name, stat) for r in rows)]
    head = ["case", "operator", "type", "layout", "poolgpu ms", "GB/s", "copy ms", "% of copy"]
    body = [
        [row["case"], row["op"], SHORT_TYPE.get(row["dtype"], row["dtype"]), row["layout"].upper()]
        + _poolgpu_cells(row, stat) + [_peer_cell(row, p, stat) for p in peers]
        for row in rows
    ]
    return head + [LABELS[p] for p in peers], body


TIMER_TEXT = {
    "timestamp": "GPU timestamps",
    "passes": f"GPU timestamps, per dispatch in passes of {PER_PASS} alternating with the copy's in one submission",
    "wall": "wall clock around a synchronised submission",
}


def legend(results: dict) -> list:
    timer = results["timer"]
    times = ("the fastest of the repetitions after warm-up (the machine only adds time)" if summary(results) == "min_ms"
             else "medians over repetitions after warm-up")
    lines = [f"Note: {results['note']}."] if results.get("note") else []
    lines += [
        f"{results['adapter']['name']} ({results['adapter']['backend']}, {results['adapter']['description']}), "
        f"{results['date']}; times are {times}, "
        f"{TIMER_TEXT[timer['kind']]}"
        + (f" ({timer['note']})" if timer["note"] else "") + ".",
        "copy = a plain copy kernel moving the same bytes (input read once, outputs written once) in the same run; "
        "% of copy = its time / poolgpu's.",
        f"Peers: {'ms' if summary(results) == 'min_ms' else 'median ms'} (poolgpu time / peer time); n/a = the peer has no such operator or layout; "
        "✗ = its result differs from the reference.",
    ]
    missing = [r for r in results["rows"] if r["status"] == "not available"]
    if missing:
        ops = ", ".join(dict.fromkeys(r["op"] for r in missing))
        lines.append(f"Not available in this poolgpu yet ({len(missing)} rows, they light up as operators land): {ops}.")
    for name, peer in results["peers"].items():
        if peer["status"] != "available":
            lines.append(f"{peer['label']}: {peer['status']}")
    host = results.get("host")
    if host:
        lines.append(
            "Host: cached op(x, out=y) {:.1f} us; numpy -> pooled -> numpy (1x1x8x8) {:.0f} us; "
            "per op of 100 in one batch() {:.1f} us (medians).".format(
                host["op_call"]["median_us"], host["numpy_round_trip"]["median_us"], host["batch_per_op"]["median_us"])
        )
    return lines


def _ratio_cell(result) -> str:
    if result is None:
        return ""
    if result["status"] != "ok":
        return result["status"].upper() if result["status"] == "check failed" else result["status"]
    low, high = result["range"]
    return f"{result['ratio']:.2f}x [{low:.2f}-{high:.2f}]" + (" met" if result["met"] else "")


def ratios_table(results: dict) -> tuple:
    """(header, body) of the ratio targets (bench/ratios.py): a row per case, data type and
    layout; max's time, and each operator's time / max's."""
    measured = results.get("ratios") or []
    ops = [op for op in TARGETS if any(op in m["ops"] for m in measured)]
    head = ["case", "type", "layout", f"{BASE} ms"] + [f"{op} / {BASE} (<= {TARGETS[op]:g}x)" for op in ops]
    body = []
    for m in measured:
        base = m["ops"].get(BASE, {"status": "not measured"})
        base_cell = _ms(base["min_ms"]) if base["status"] == "ok" else base["status"]
        body.append([m["case"], SHORT_TYPE.get(m["dtype"], m["dtype"]), m["layout"].upper(), base_cell]
                    + [_ratio_cell(m["ops"].get(op)) for op in ops])
    return head, body


def ratios_legend(results: dict) -> list:
    if results.get("ratios_note"):
        return [f"Ratio targets: {results['ratios_note']}."]
    if not results.get("ratios"):
        return []
    return [f"Ratio targets: each operator and {BASE} pooling alternate in one submission, a pass of "
            f"{PER_PASS} dispatches per operator per round (bench/ratios.py); the median over the rounds of "
            f"each round's time / {BASE}'s, [range]; {BASE} ms: its fastest pass, per dispatch; met: at or "
            "under the target."]


def _aligned(head, body, numeric_from: int) -> list:
    widths = [max(len(str(r[i])) for r in [head] + body) for i in range(len(head))]

    def line(values):
        return "  ".join(str(v).rjust(w) if i >= numeric_from else str(v).ljust(w)
                         for i, (v, w) in enumerate(zip(values, widths))).rstrip()

    return [line(head), "  ".join("-" * w for w in widths)] + [line(r) for r in body]


def text_table(results: dict) -> str:
    lines = _aligned(*table(results), numeric_from=4)
    head, body = ratios_table(results)
    if body:
        lines += [""] + _aligned(head, body, numeric_from=3)
    return "\n".join(lines + [""] + legend(results) + ratios_legend(results))


def _markdown_table(head, body) -> list:
    return (["| " + " | ".join(head) + " |", "|" + "|".join(" --- " for _ in head) + "|"]
            + ["| " + " | ".join(str(c) for c in r) + " |" for r in body])


def markdown(results: dict) -> str:
    """float32 NCHW rows (those with peers, by default) in view, the others folded."""
    main = [r for r in results["rows"] if (r["dtype"], r["layout"]) == ("float32", "nchw")]
    rest = [r for r in results["rows"] if (r["dtype"], r["layout"]) != ("float32", "nchw")]
    lines = _markdown_table(*table(results, main)) if main else []
    if table(results, rest)[1]:
        lines += ["", "<details><summary>float16 and NHWC rows</summary>", ""]
        lines += _markdown_table(*table(results, rest)) + ["", "</details>"]
    lines += [""] + [line + "  " for line in legend(results)]
    head, body = ratios_table(results)
    if body:
        lines += [""] + _markdown_table(head, body)
    notes = ratios_legend(results)
    return "\n".join(lines + ([""] + [line + "  " for line in notes] if notes else [])) + "\n"


def run_name(results: dict) -> str:
    """A short name for a run's adapter: "lavapipe" (Vulkan) or "llvmpipe" (OpenGL) for Mesa's
    CPU adapters, the GPU's model otherwise ("H100")."""
    adapter = results["adapter"]
    if adapter.get("type") == "cpu" or "llvmpipe" in adapter["name"]:
        return "lavapipe" if adapter["backend"] == "vulkan" else adapter["name"].split()[0]
    return gpu_model(adapter["name"])


_VENDORS = {"nvidia", "amd", "ati", "intel", "apple", "qualcomm", "arm", "(tm)", "(r)"}


def gpu_model(name: str) -> str:
    """The model in an adapter's name: its words up to the first with a digit, vendor dropped
    ("NVIDIA H100 80GB HBM3" -> "H100", "NVIDIA GeForce RTX 4090" -> "GeForce RTX 4090")."""
    words = [w for w in re.split(r"[\s/]+", name) if w and w.lower() not in _VENDORS]
    for i, word in enumerate(words):
        if any(ch.isdigit() for ch in word):
            return " ".join(words[: i + 1])
    return " ".join(words[:2]) or "gpu"


def gpu_run_name(results: dict) -> str:
    """bench/gpu/'s file name of a run: <date>-<gpu model>.json ("2026-11-23-h100.json")."""
    model = re.sub(r"[^a-z0-9]+", "-", gpu_model(results["adapter"]["name"]).lower()).strip("-") or "gpu"
    return f"{results['date'][:10]}-{model}.json"


def _case_order(runs) -> list:
    from .cases import CASES

    seen = list(dict.fromkeys(r["case"] for results in runs for r in results["rows"]))
    return [c for c in CASES if c in seen] + [c for c in seen if c not in CASES]


# poolgpu's variants in the plot: (dtype, layout) -> marker, colour, label
_VARIANT_STYLE = {
    ("float32", "nchw"): ("o", "tab:blue", "poolgpu f32 NCHW"),
    ("float16", "nchw"): ("s", "tab:cyan", "poolgpu f16 NCHW"),
    ("float32", "nhwc"): ("D", "navy", "poolgpu f32 NHWC"),
    ("float16", "nhwc"): ("p", "slateblue", "poolgpu f16 NHWC"),
}
_PEER_MARKERS = "^v<>P*Xh"
_PLOT_TOP = 250  # % of copy: points above are drawn at the top, their value written beside


def plot(runs, path) -> str:
    """Write the PNG: a row of panels per run (``runs``: one results dict or several, e.g. the
    latest lavapipe run and a GPU's), a panel per case, the operators along x and the % of
    the copy roofline on a linear y axis; poolgpu's variants and each peer (float32 NCHW) as
    labelled markers.  Returns "" on success, else why not (matplotlib missing, nothing
    measured)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed"
    runs = [runs] if isinstance(runs, dict) else list(runs)
    runs = [r for r in runs if any(row["status"] == "ok" for row in r["rows"])]
    if not runs:
        return "no row was measured"
    cases = [c for c in _case_order(runs) if any(r["case"] == c and r["status"] == "ok" for res in runs for r in res["rows"])]
    ops = {c: list(dict.fromkeys(r["op"] for res in runs for r in res["rows"] if r["case"] == c and r["status"] == "ok"))
           for c in cases}
    peers = list(dict.fromkeys(name for res in runs for name, peer in res["peers"].items()
                               if peer["status"] == "available"))
    colours = plt.get_cmap("tab10").colors
    peer_style = {name: (_PEER_MARKERS[k % len(_PEER_MARKERS)], colours[(k + 1) % 10]) for k, name in enumerate(peers)}
    fig, axes = plt.subplots(len(runs), len(cases), squeeze=False, sharey="row",
                             gridspec_kw={"width_ratios": [max(len(ops[c]), 2) for c in cases]},
                             figsize=(2.2 + 0.42 * sum(max(len(ops[c]), 2) for c in cases), 0.9 + 3.0 * len(runs)))
    handles = {}
    for row_axes, results in zip(axes, runs):
        values = []
        for ax, case in zip(row_axes, cases):
            x_of = {op: i for i, op in enumerate(ops[case])}
            points = []  # (x, pct, marker, colour, label)
            for r in results["rows"]:
                if r["case"] != case or r["status"] != "ok":
                    continue
                variant = (r["dtype"], r["layout"])
                marker, colour, label = _VARIANT_STYLE.get(variant, ("o", "grey", f"poolgpu {variant}"))
                points.append((x_of[r["op"]], r["pct_of_copy"], marker, colour, label, 6))
                if variant == ("float32", "nchw"):
                    for name, peer in (r.get("peers") or {}).items():
                        pct = peer.get("pct_of_copy")
                        if pct and name in peer_style:
                            points.append((x_of[r["op"]], pct, *peer_style[name], LABELS.get(name, name), 5))
            for x, pct, marker, colour, label, size in points:
                values.append(pct)
                shown = min(pct, _PLOT_TOP)
                handle, = ax.plot(x, shown, marker, color=colour, markersize=size, alpha=0.85, linestyle="none",
                                  markeredgewidth=0.5, markeredgecolor="black")
                handles.setdefault(label, handle)
                if pct > _PLOT_TOP:
                    ax.annotate(f"{pct:.0f}%", (x, shown), xytext=(3, -3), textcoords="offset points", fontsize=6)
            ax.axhline(100, color="black", linewidth=0.8, linestyle="--")
            ax.set_xticks(range(len(ops[case])), ops[case], rotation=60, ha="right", fontsize=7)
            ax.set_xlim(-0.6, max(len(ops[case]), 2) - 0.4)
            ax.grid(axis="y", alpha=0.3)
            ax.tick_params(axis="y", labelsize=7)
            ax.set_title(case, fontsize=9)
        top = max(values, default=100)
        row_axes[0].set_ylim(0, min(max(110, top * 1.08), _PLOT_TOP * 1.04))
        adapter = results["adapter"]
        row_axes[0].set_ylabel(f"% of copy roofline\n{run_name(results)} ({adapter['backend']}), {results['date'][:10]}",
                               fontsize=8)
    order = [label for _, _, label in _VARIANT_STYLE.values()] + [LABELS.get(p, p) for p in peers]
    labels = [label for label in order if label in handles] + [label for label in handles if label not in order]
    fig.suptitle("poolgpu bench: % of the copy roofline = copy time / operator time for the same bytes "
                 "(higher is faster; dashed: the copy's speed); peers on float32 NCHW", fontsize=9)
    fig.legend([handles[label] for label in labels], labels, loc="lower center", ncol=min(len(labels), 8),
               fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.05 + 0.02 * (len(labels) > 8), 1, 0.97))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return ""


# -- the published tables: the latest CPU-adapter run and the newest GPU run, side by side --

def newest_gpu_run(directory: Path = None):
    """The bench/gpu/ run with the latest date (then file name)."""
    runs = sorted((directory or GPU_RUNS).glob("*.json"))
    return max(runs, key=lambda path: (load(path)["date"], path.name)) if runs else None


def published_sources() -> list:
    """The runs docs/bench-tables.md and bench/latest.png are made from."""
    return [path for path in (LATEST, newest_gpu_run()) if path is not None and path.exists()]


def load(path) -> dict:
    return json.loads(Path(path).read_text())


def headline(runs: list) -> tuple:
    """(header, body): per case and operator (float32 NCHW), each run's % of copy, then each
    run's peers as poolgpu time / peer time."""
    names = [run_name(results) for results in runs]
    keys = list(dict.fromkeys((r["case"], r["op"]) for results in runs for r in results["rows"]
                              if (r["dtype"], r["layout"]) == ("float32", "nchw") and r["status"] not in SKIPPED))
    keys.sort(key=lambda k: _case_order(runs).index(k[0]))
    by_key = [{(r["case"], r["op"]): r for r in results["rows"] if (r["dtype"], r["layout"]) == ("float32", "nchw")}
              for results in runs]
    peer_columns = [(i, name) for i, results in enumerate(runs) for name, peer in results["peers"].items()
                    if peer["status"] == "available"
                    and any((r.get("peers") or {}).get(name, {}).get("ratio") for r in by_key[i].values())]
    head = ["case", "operator"] + [f"% of copy, {n}" for n in names]
    head += [f"{LABELS.get(p, p)} ({names[i]})" for i, p in peer_columns]
    body = []
    for key in keys:
        cells = [key[0], key[1]]
        for rows in by_key:
            row = rows.get(key)
            cells.append("" if row is None else f"{row['pct_of_copy']:.0f}%" if row["status"] == "ok"
                         else _poolgpu_cells(row, SUMMARY)[0])
        for i, p in peer_columns:
            peer = ((by_key[i].get(key) or {}).get("peers") or {}).get(p)
            if peer is None:
                cells.append("")
            elif peer.get("ratio") is not None:
                cells.append(_ratio_text(peer["ratio"]) + (" ✗" if peer["status"] == "mismatch" else ""))
            else:
                cells.append("n/a" if peer["status"] == "unsupported" else "-")
        body.append(cells)
    return head, body


def document(runs: list, sources: list) -> str:
    """docs/bench-tables.md: the headline table, then each run's full tables."""
    shown = " ".join(str(s) for s in sources)
    lines = [
        "# Bench tables",
        "",
        f"Generated by `python -m bench.report --markdown {shown}` from the committed runs "
        "(`bench/latest.json`: the latest run on lavapipe; `bench/gpu/`: runs on real GPUs); "
        "regenerate it rather than edit it. How they are measured: [performance-method.md](performance-method.md).",
        "",
        "## Headline: float32 NCHW",
        "",
        "% of copy = the copy roofline's time for the same bytes / poolgpu's time (100%: as fast as a plain copy). "
        "Peers: poolgpu time / peer time (below 1: poolgpu is faster); n/a: the peer has no such operator; "
        "✗: its result differs from the reference.",
        "",
    ]
    lines += _markdown_table(*headline(runs))
    for results, source in zip(runs, sources):
        adapter = results["adapter"]
        lines += ["", f"## {run_name(results)}: {adapter['name']} ({adapter['backend']}), {results['date'][:10]}", "",
                  f"From `{source}`.", ""]
        lines += markdown(results).rstrip("\n").splitlines()
    return "\n".join(lines) + "\n"


def _shown_path(path) -> str:
    path = Path(path).resolve()
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


def publish() -> str:
    """Rewrite docs/bench-tables.md and bench/latest.png from the committed runs; returns why
    there is no plot, or ""."""
    sources = published_sources()
    runs = [load(path) for path in sources]
    TABLES.parent.mkdir(parents=True, exist_ok=True)
    TABLES.write_text(document(runs, [_shown_path(p) for p in sources]))
    return plot(runs, PLOT)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.report", description=__doc__.splitlines()[0])
    p.add_argument("--markdown", nargs="+", metavar="JSON", help="print the tables of these runs (the headline "
                                                                   "table puts them side by side)")
    p.add_argument("--png", type=Path, help="with --markdown: also plot these runs into this file")
    p.add_argument("--publish", action="store_true",
                   help="rewrite docs/bench-tables.md and bench/latest.png from bench/latest.json and the "
                        "newest bench/gpu/*.json")
    args = p.parse_args(argv)
    if args.publish:
        why = publish()
        print(f"written: {_shown_path(TABLES)}" + (f"; no plot: {why}" if why else f", {_shown_path(PLOT)}"))
        return 0
    if not args.markdown:
        p.error("--markdown JSON... or --publish")
    runs = [load(path) for path in args.markdown]
    sys.stdout.write(document(runs, [_shown_path(path) for path in args.markdown]))
    if args.png:
        why = plot(runs, args.png)
        if why:
            print(f"bench.report: no plot: {why}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
