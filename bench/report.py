"""The bench's outputs: a terminal table, the same as Markdown, and a PNG plot of each case's
share of the copy roofline, poolgpu's and the peers'."""

from __future__ import annotations

from .peers import LABELS
from .ratios import BASE, TARGETS
from .timing import PER_PASS, SUMMARY

SHORT_TYPE = {"float32": "f32", "float16": "f16"}


def row_label(row: dict) -> str:
    return f"{row['case']} {row['op']} {SHORT_TYPE.get(row['dtype'], row['dtype'])} {row['layout'].upper()}"


def _ms(value: float) -> str:
    return f"{value:.3g}" if value < 100 else f"{value:.0f}"


def _poolgpu_cells(row: dict) -> list:
    if row["status"] != "ok":
        return [row["status"].upper() if row["status"] == "check failed" else row["status"], "", "", ""]
    return [
        _ms(row["poolgpu"][SUMMARY]),
        f"{row['poolgpu']['gb_per_s']:.2f}",
        _ms(row["copy"][SUMMARY]),
        f"{row['pct_of_copy']:.0f}%",
    ]


def _peer_cell(row: dict, name: str) -> str:
    peer = row.get("peers", {}).get(name)
    if peer is None:
        return ""
    if peer["status"] in ("ok", "mismatch"):
        cell = _ms(peer[SUMMARY])
        if peer.get("ratio") is not None:
            ratio = peer["ratio"]
            cell += f" ({ratio:.0f}x)" if ratio >= 10 else f" ({ratio:.2g}x)"
        return cell + (" ✗" if peer["status"] == "mismatch" else "")
    return "n/a" if peer["status"] == "unsupported" else "-"


SKIPPED = ("not available", "not applicable")  # summarised under the table, not listed


def table(results: dict, rows=None) -> tuple:
    """(header, body) of ``rows`` (default: all listed); a column per peer that has a cell."""
    rows = [r for r in (results["rows"] if rows is None else rows) if r["status"] not in SKIPPED]
    peers = [name for name, peer in results["peers"].items()
             if peer["status"] == "available" and any(_peer_cell(r, name) for r in rows)]
    head = ["case", "operator", "type", "layout", "poolgpu ms", "GB/s", "copy ms", "% of copy"]
    body = [
        [row["case"], row["op"], SHORT_TYPE.get(row["dtype"], row["dtype"]), row["layout"].upper()]
        + _poolgpu_cells(row) + [_peer_cell(row, p) for p in peers]
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
    lines = [
        f"{results['adapter']['name']} ({results['adapter']['backend']}, {results['adapter']['description']}), "
        f"{results['date']}; times are the fastest of the repetitions after warm-up (the machine only adds time), "
        f"{TIMER_TEXT[timer['kind']]}"
        + (f" ({timer['note']})" if timer["note"] else "") + ".",
        "copy = a plain copy kernel moving the same bytes (input read once, outputs written once) in the same run; "
        "% of copy = its time / poolgpu's.",
        "Peers: ms (poolgpu time / peer time); n/a = the peer has no such operator or layout; "
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
    return "\n".join(lines + [""] + [line + "  " for line in ratios_legend(results)]) + "\n"


def plot(results: dict, path) -> str:
    """Write the PNG: one panel per (data type, layout), a row per case and operator,
    poolgpu's share of the copy roofline as bars and the peers' as markers.
    Returns "" on success, else why not (matplotlib missing, nothing measured)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed"
    measured = [r for r in results["rows"] if r["status"] == "ok"]
    if not measured:
        return "no row was measured"
    variants = list(dict.fromkeys((r["dtype"], r["layout"]) for r in measured))
    keys = list(dict.fromkeys((r["case"], r["op"]) for r in measured))
    by_key = {(r["case"], r["op"], r["dtype"], r["layout"]): r for r in measured}
    peers = [name for name, peer in results["peers"].items() if peer["status"] == "available"]
    markers = "os^Dv"
    fig, axes = plt.subplots(1, len(variants), sharex=True, sharey=True, squeeze=False,
                             figsize=(1.8 + 3.6 * len(variants), 1.6 + 0.2 * len(keys)))
    for ax, (dtype, layout) in zip(axes[0], variants):
        for i, (case, op) in enumerate(keys):
            row = by_key.get((case, op, dtype, layout))
            if row is None:
                continue
            ax.barh(i, row["pct_of_copy"], height=0.6, color="tab:blue", label="poolgpu" if i == 0 else None)
            for k, name in enumerate(peers):
                pct = (row.get("peers", {}).get(name) or {}).get("pct_of_copy")
                if pct:
                    ax.plot(pct, i, markers[k % len(markers)], color=plt.get_cmap("tab10").colors[k + 1],
                            markersize=5, label=LABELS[name])
        ax.axvline(100, color="black", linewidth=0.8, linestyle="--")
        ax.set_xscale("log")
        ax.set_title(f"{SHORT_TYPE.get(dtype, dtype)} {layout.upper()}", fontsize=9)
        ax.grid(axis="x", which="both", alpha=0.3)
        ax.tick_params(axis="x", labelsize=7)
    axes[0][0].set_yticks(range(len(keys)), [f"{case} {op}" for case, op in keys], fontsize=7)
    axes[0][0].invert_yaxis()
    handles = {"poolgpu": None}
    for ax in axes[0]:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            handles[label] = handles.get(label) or handle
    adapter = results["adapter"]
    fig.suptitle(f"poolgpu bench: % of the copy kernel's bandwidth (copy time / operator time), higher is faster\n"
                 f"{adapter['name']} ({adapter['backend']}), {results['date'][:10]}", fontsize=9)
    fig.legend(handles.values(), handles.keys(), loc="lower center", ncol=len(handles), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return ""
