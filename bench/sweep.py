"""The Tuning sweep at GPU scale: every kernel variant bench/variants.py knows, on every
operator of the bench's GPU-scale cases (cases.SCALE_BATCH), each checked, then timed with
the copy roofline in one submission (bench.variants.compare_problem).  Its table is what
``Tuning.for_gpu()``'s choices rest on: a GPU's is kept as bench/gpu/tuning-<date>-<gpu>.json.

    python -m bench.sweep [--cases A,B] [--ops max,avg] [--variants out1,wg256] [--json PATH]

Variants compiling to the same kernels as one before them are listed as such, not timed;
``--deadline-s`` leaves the entries it does not reach as not run.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import fnmatch
import json
import math
import sys
import time
from pathlib import Path

import poolgpu as pg

from . import plan as bench_plan
from . import variants as kernel_variants
from .cases import CASES, SCALE_BATCH, Data, build
from .run import DEFAULT_VARIANTS, RESULTS, _choice, _jsonable, _versions

SHORT = {"float32": "f32", "float16": "f16"}


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.sweep", description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", help="vulkan, metal, d3d12 or opengl (default: the best adapter)")
    p.add_argument("--adapter", help="a substring of the adapter's name")
    p.add_argument("--cases", default=",".join(SCALE_BATCH), help="comma-separated (default: %(default)s)")
    p.add_argument("--ops", default="*", help="comma-separated operator names or patterns (default: every one)")
    p.add_argument("--variants", help="comma-separated variants (default: every one bench/variants.py knows, "
                                      "at its SWEEP values)")
    p.add_argument("--rounds", type=int, default=8, help="timed passes per variant (default: %(default)s)")
    p.add_argument("--warmup-s", type=float, default=0.0, help="untimed rounds for at least this long per entry")
    p.add_argument("--tuned-for", choices=("cpu", "gpu"), help="the preset the variants change (default: the device's)")
    p.add_argument("--tiny", action="store_true", help="the cases' tiny shapes, repeated as at scale (plumbing)")
    p.add_argument("--deadline-s", type=float, help="entries not started within this many seconds are not run")
    p.add_argument("--json", type=Path, default=RESULTS / "tuning.json", help="the table (default: %(default)s)")
    args = p.parse_args(argv)
    args.case_names = _choice(args.cases, tuple(SCALE_BATCH), "--cases")
    args.op_patterns = [pattern.strip() for pattern in args.ops.split(",") if pattern.strip()]
    return args


def plan(args) -> list:
    """(case, dtype, layout, op): float32 NCHW for every case first, then the other data types
    and layouts of the cases the bench runs in every variant, then those of the cases run in
    their own types."""
    entries = []
    variants = list(DEFAULT_VARIANTS) + [(d, "nchw") for name in args.case_names for d in CASES[name].dtypes]
    for dtype, layout in dict.fromkeys(variants):
        for name in args.case_names:
            case = CASES[name]
            own = (dtype, layout) in [(d, "nchw") for d in case.dtypes]
            if own or (case.every_variant and (dtype, layout) in DEFAULT_VARIANTS):
                entries += [(case, dtype, layout, op) for op in case.ops
                            if any(fnmatch.fnmatchcase(op, pattern) for pattern in args.op_patterns)]
    return entries


def affected(device, entries: list, names: list, tiny: bool) -> list:
    """(entry, the variants among ``names`` that change its kernels), for the entries some
    variant changes, in an order that times every variant early: first, one by one, the entry
    changed by most of the variants no entry before it was timed with, then the others in
    plan order.  Found without a GPU (the programs the variants plan, bench.plan's stand-in
    inputs)."""
    changed = []
    for case, dtype, layout, op in entries:
        problem = build(op, bench_plan._Shapes(case, dtype, tiny, SCALE_BATCH[case.name] // case.sizes[0]))
        if problem is None:
            continue
        current = kernel_variants.kernels_of(device, problem, layout, device.tuning)
        differ = []
        for name in names:
            if name == "current":
                continue
            try:
                kernels = kernel_variants.kernels_of(device, problem, layout, kernel_variants.variant(name, device.tuning))
            except Exception:  # a variant that cannot plan this entry: timed, and reported there
                kernels = None
            if kernels != current:
                differ.append(name)
        if differ:
            changed.append(((case, dtype, layout, op), differ))
    ordered, covered, rest = [], set(), list(changed)
    while rest:
        best = max(rest, key=lambda item: len(set(item[1]) - covered))
        if not set(best[1]) - covered:
            break
        ordered.append(best)
        covered |= set(best[1])
        rest.remove(best)
    return ordered + rest


def entry_result(measured: dict, names: list) -> dict:
    """An entry's variants as JSON, the best among those timed, and each one's time against
    "current" (below 1: faster)."""
    copy = measured.get("copy")
    table, timed = {}, {}
    for name in names:
        found = measured.get(name, "not compared")
        if isinstance(found, str):
            if found.startswith("same kernels as "):
                table[name] = {"status": "same kernels", "as": found.removeprefix("same kernels as ")}
            else:
                status, _, reason = found.partition(": ")
                table[name] = {"status": status, "reason": reason}
            continue
        fastest, median = found
        timed[name] = fastest
        table[name] = {"status": "ok", "min_ms": fastest * 1e3, "median_ms": median * 1e3,
                       "pct_of_copy": 100 * copy[0] / fastest}
    result = {"copy_ms": copy[0] * 1e3 if copy else None, "variants": table}
    if timed:
        result["best"] = min(timed, key=timed.get)
        if "current" in timed:
            for name, seconds in timed.items():
                table[name]["vs_current"] = seconds / timed["current"]
    return result


def summarise(entries: list) -> dict:
    """Per variant: the entries it won, and its geometric mean time against "current" over
    the entries where both were timed."""
    summary = {}
    for entry in entries:
        for name, result in entry.get("variants", {}).items():
            row = summary.setdefault(name, {"best_in": 0, "timed_in": 0, "log_vs_current": 0.0})
            if result["status"] == "ok" and "vs_current" in result:
                row["timed_in"] += 1
                row["log_vs_current"] += math.log(result["vs_current"])
            row["best_in"] += entry.get("best") == name
    for row in summary.values():
        log = row.pop("log_vs_current")
        row["geomean_vs_current"] = math.exp(log / row["timed_in"]) if row["timed_in"] else None
    return summary


def main(argv=None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    try:
        device = pg.Device(backend=args.backend, adapter=args.adapter)
    except pg.DeviceError as exc:
        print(f"sweep: {exc}", file=sys.stderr)
        return 2
    if "timestamp-query" not in device.features:
        print(f"sweep: {device.name} has no timestamp-query: variants are timed with GPU timestamps", file=sys.stderr)
        return 2
    if args.tuned_for:
        device.tuning = pg.Tuning.preset(args.tuned_for)
    names, left_out = kernel_variants.sweep_names()
    names = args.variants.split(",") if args.variants else names
    results = {
        "sweep": "poolgpu Tuning variants", "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "adapter": dict(device.info, driver=device.info.get("description", "")), "versions": _versions(),
        "tuning": dataclasses.asdict(device.tuning), "variants": {n: kernel_variants.VARIANTS.get(n, "") for n in names},
        "variants_left_out": left_out,
        "settings": {"argv": sys.argv[1:] if argv is None else list(argv), "rounds": args.rounds,
                     "warmup_s": args.warmup_s, "tiny": args.tiny, "deadline_s": args.deadline_s},
        "entries": [],
    }
    print(f"sweep: {device.name}, kernels for {device.tuned_for}; {len(names)} variants"
          + (f" (left out, no values to try: {', '.join(left_out)})" if left_out else ""), file=sys.stderr)
    print("case op type layout | copy us | fastest variant: us (% of copy, time / current's) | others")
    data = {}
    for (case, dtype, layout, op), changing in affected(device, plan(args), names, args.tiny):
        entry = {"case": case.name, "batch": SCALE_BATCH[case.name], "dtype": dtype, "layout": layout, "op": op}
        if args.deadline_s is not None and time.perf_counter() - started > args.deadline_s:
            results["entries"].append(dict(entry, status="not run", reason=f"--deadline-s {args.deadline_s:g}"))
            continue
        key = (case.name, dtype)
        if key not in data:
            data = {key: Data(case, dtype, args.tiny, 0).repeated(SCALE_BATCH[case.name] // case.sizes[0])}
        problem = build(op, data[key])
        if problem is None:
            continue
        entry_started = time.perf_counter()
        timed = ["current"] + changing
        measured = kernel_variants.compare_problem(device, problem, layout, timed, args.rounds, args.warmup_s)
        entry.update(entry_result(measured, timed), status="ok", input_sizes=data[key].sizes,
                     sweep_s=round(time.perf_counter() - entry_started, 2))
        results["entries"].append(entry)
        print(_line(entry), flush=True)
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(dict(results, partial=True), indent=1, default=_jsonable) + "\n")
    results["summary"] = summarise(results["entries"])
    results["elapsed_s"] = round(time.perf_counter() - started, 1)
    args.json.write_text(json.dumps(results, indent=1, default=_jsonable) + "\n")
    print("\nvariant: entries it was fastest in, geometric mean of its time / current's")
    for name, row in results["summary"].items():
        mean = row["geomean_vs_current"]
        print(f"  {name}: {row['best_in']}, " + (f"{mean:.3f}x over {row['timed_in']}" if mean else "not timed"))
    failed = [f"{e['case']} {e['op']} {name}" for e in results["entries"] for name, r in e.get("variants", {}).items()
              if r["status"] in ("check failed", "error")]
    print(f"\nWritten: {args.json} ({results['elapsed_s']} s)")
    if failed:
        print(f"sweep: {len(failed)} variant(s) failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


def _line(entry: dict) -> str:
    head = f"{entry['case']} N={entry['input_sizes'][0]} {entry['op']} {SHORT.get(entry['dtype'])} {entry['layout'].upper()}"
    copy = entry["copy_ms"]
    if "best" not in entry:
        return f"{head} | - | nothing timed: " + "; ".join(f"{n}: {r['status']}" for n, r in entry["variants"].items())
    best = entry["variants"][entry["best"]]
    vs = f", {best['vs_current']:.2f}x" if "vs_current" in best else ""
    others = ", ".join(f"{n} {r['min_ms'] * 1e3:.1f}" if r["status"] == "ok" else f"{n} {r['status']}"
                       for n, r in entry["variants"].items() if n != entry["best"] and r["status"] != "same kernels")
    return (f"{head} | {copy * 1e3:.1f} | {entry['best']}: {best['min_ms'] * 1e3:.1f} "
            f"({best['pct_of_copy']:.0f}%{vs}) | {others}")


if __name__ == "__main__":
    raise SystemExit(main())
