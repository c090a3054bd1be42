"""Kernel variants side by side on one device, for tuning (a developer's tool, not the bench).

    python3 -m bench.variants --cases A,B --dtype float32,float16 --ops max,avg,max_idx \\
        --variants current,out1,wg256 [--layout nhwc] [--tuned-for gpu]

Each variant changes one of kernels.py's choices for the ops compiled under it (they
compose with '+': ``out1+wg256``); every variant's result is checked against the reference
before it is timed.  Every variant and the copy roofline are timed in ONE submission,
``--rounds`` rounds of a pass each (bench/timing.py's ``interleaved``: GPUs' clocks stay
up, data rotates out of L2); times are per dispatch, fastest and median pass.
"""

from __future__ import annotations

import argparse
import contextlib

import numpy as np

import poolgpu as pg
import poolgpu.kernels as kernels

from .cases import CASES, Data, build
from .check import check
from .poolgpu_run import rotating_runs
from .roofline import Roofline
from .timing import ROTATE, GpuTimer, interleaved

_CHOICES = ((kernels.gradients, "_gathers_rows"), (kernels.gradients, "_block_constants"),
            (kernels.window, "walk_for"), (kernels.gradients, "walk_for"), (kernels.window, "ROWS_PER_INVOCATION"),
            (kernels.window, "GPU_OUTPUTS_PER_INVOCATION"), (kernels.grids, "LINES_WORKGROUP"))
VARIANTS = {
    "current": "the kernels as they are",
    "outN": "N outputs per invocation of the general walk on GPUs (kernels.GPU_OUTPUTS_PER_INVOCATION)",
    "wgN": "workgroups of N invocations in the (column, line, plane) grids instead of 64",
    "rowsN": "the walks chosen for CPU adapters, N output rows per rows-walk invocation",
    "blockgather": "the gradients' block gathers instead of the row gathers",
    "tapsfirst": "the block gathers' loops (a window read once per tap) instead of windows first",
}


def _apply(part: str) -> None:
    name, digits = part.rstrip("0123456789"), part[len(part.rstrip("0123456789")):]
    if part == "current":
        return
    if name == "out" and digits:
        kernels.window.GPU_OUTPUTS_PER_INVOCATION = int(digits)
    elif name == "wg" and digits:
        kernels.grids.LINES_WORKGROUP = int(digits)
    elif name == "rows" and digits:
        cpu_walk = kernels.window.walk_for
        kernels.window.walk_for = kernels.gradients.walk_for = lambda desc, gpu: cpu_walk(desc, False)
        kernels.window.ROWS_PER_INVOCATION = int(digits)
    elif part == "blockgather":
        kernels.gradients._gathers_rows = lambda desc: False
    elif part == "tapsfirst":
        kernels.gradients._block_constants = kernels.gradients._tap_steps
    else:
        raise SystemExit(f"unknown variant {part!r}; known: " + "; ".join(f"{k}: {v}" for k, v in VARIANTS.items()))


@contextlib.contextmanager
def variant(name: str):
    saved = {choice: getattr(*choice) for choice in _CHOICES}
    try:
        for part in name.split("+"):
            _apply(part)
        yield
    finally:
        for (module, name), value in saved.items():
            setattr(module, name, value)


def compare(device, case: str, dtype: str, op: str, variants: list, layout: str, rounds: int,
            tiny: bool = False) -> dict:
    """{variant: (min, median) seconds per dispatch, or the reason it was not timed}, and
    "copy": the copy roofline's, for one operator on one case."""
    problem = build(op, Data(CASES[case], dtype, tiny, 0))
    if problem is None:
        return {}
    results, runs_of = {}, {}
    for name in variants:
        device._ops.clear()      # ops and pipelines compiled under another variant
        device._pipelines.clear()
        kernels.shader_source.cache_clear()
        with variant(name):
            runs = rotating_runs(device, problem, layout)
            for run in runs:
                run.record()
            mismatch = check(runs[0].outputs(), problem)
        if mismatch:
            results[name] = f"check failed: {mismatch}"
        else:
            runs_of[name] = runs
    if not runs_of:
        return results
    first = next(iter(runs_of.values()))[0]
    copies = Roofline(device, GpuTimer(device)).rotating(first.read_bytes, first.written_bytes, ROTATE)
    groups = [copies] + [[run.record for run in runs] for runs in runs_of.values()]
    timings = interleaved(device, groups, rounds)
    results["copy"] = (min(timings[0]), float(np.median(timings[0])))
    for name, seconds in zip(runs_of, timings[1:]):
        results[name] = (min(seconds), float(np.median(seconds)))
    return results


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m bench.variants", description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", default="A,B")
    p.add_argument("--dtype", default="float32")
    p.add_argument("--ops", default="max,avg")
    p.add_argument("--layout", default="nchw", choices=("nchw", "nhwc"))
    p.add_argument("--variants", default="current")
    p.add_argument("--rounds", type=int, default=16, help="timed passes per variant (default 16)")
    p.add_argument("--tuned-for", choices=("cpu", "gpu"), help="compile for this class of device (default: its own)")
    p.add_argument("--tiny", action="store_true", help="the cases' tiny shapes (plumbing checks)")
    args = p.parse_args(argv)
    device = pg.Device()
    if "timestamp-query" not in device.features:
        raise SystemExit(f"{device.name} has no timestamp-query: variants are timed with GPU timestamps")
    device.tuned_for = args.tuned_for or device.tuned_for
    variants = args.variants.split(",")
    print(f"{device.name}, kernels for {device.tuned_for}; us per dispatch, fastest/median pass, % of copy")
    print("case op dtype | copy | " + " | ".join(variants))
    for case in args.cases.split(","):
        for dtype in args.dtype.split(","):
            for op in args.ops.split(","):
                results = compare(device, case, dtype, op, variants, args.layout, args.rounds, args.tiny)
                if not results:
                    continue
                copy = results.get("copy", (float("nan"),))[0]
                cells = []
                for name in variants:
                    r = results[name]
                    cells.append(r if isinstance(r, str) else f"{r[0] * 1e6:.1f}/{r[1] * 1e6:.1f} ({100 * copy / r[0]:.0f}%)")
                print(f"{case} {op} {dtype} | {copy * 1e6:.1f} | " + " | ".join(cells), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
