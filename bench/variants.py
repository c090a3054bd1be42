"""Kernel variants side by side on one device, for tuning (a developer's tool, not the bench).

    python3 -m bench.variants --cases A,B --dtype float32,float16 --ops max,avg,max_idx \\
        --variants current,out1,wg256 [--layout nhwc | nchw,nhwc] [--tuned-for gpu]

Each variant changes one choice of the device's ``pg.Tuning`` for the ops compiled under
it (they compose with '+': ``out1+wg256``); every variant's result is checked against the reference
before it is timed, and a variant compiling to the same dispatches as one before it is
reported as such, not timed again.  Every variant and the copy roofline are timed in ONE
submission, ``--rounds`` rounds of a pass each (bench/timing.py's ``interleaved``: GPUs'
clocks stay up, data rotates out of L2); times are per dispatch, fastest and median pass.
The sweep at GPU scale (bench/sweep.py) tries every variant, at the values in ``SWEEP``.
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import numpy as np

import poolgpu as pg
from poolgpu.dispatches import Planner

from .cases import CASES, Data, build
from .check import check, error_reason
from .poolgpu_run import descriptions, rotating_runs, upload_inputs
from .roofline import Roofline
from .timing import ROTATE, GpuTimer, interleaved

VARIANTS = {
    "current": "the kernels as they are (the device's tuning)",
    "outN": "N outputs per invocation of the general walk (Tuning.outputs_per_invocation)",
    "wgN": "workgroups of N invocations in the (column, line, plane) grids (Tuning.lines_workgroup)",
    "rowsN": "the walks chosen for CPU adapters, N output rows per rows-walk invocation",
    "blockgather": "the gradients' block gathers instead of the row gathers (Tuning.row_gathers)",
    "tapsfirst": "the block gathers' loops (a window read once per tap) instead of windows first",
    "planeN": "global pooling by the plane walk, workgroups of N invocations (Tuning.plane_lanes)",
    "noplane": "global pooling by the general walk (Tuning.plane_walk off)",
    "partN": "the plane walk's workgroups reduce runs of at most N elements (Tuning.plane_part)",
    "budgetN": "at most N loop iterations per invocation before windows split (Tuning.loop_budget)",
    "planechunksN": "the plane walk's lanes load N chunks per step, written out (Tuning.plane_chunks)",
    "packedN": "global pooling and its gradients on planes of any size by the plane walk, lanes sized to the plane, "
               "at most N chunks each (Tuning.packed_planes, plane_lane_chunks)",
    "nopacked": "the plane walk only for planes of at least a workgroup's lanes, one to a workgroup "
                "(Tuning.packed_planes off)",
    "planewgN": "the plane walk cuts planes, or gives packed planes more lanes, for at least N workgroups "
                "(Tuning.plane_workgroups)",
    "channelsout": "the channels walk's rows and columns written out (Tuning.channels_written_out)",
    "wholewg": "the (column, line, plane) grids numbered flat: every lane busy (Tuning.whole_workgroups)",
    "roichannelsN": "ROI align's walk: N channels' outputs per invocation, sharing a bin's samples "
                    "(Tuning.roi_align_channels: 1 or 4)",
    "roipoolN": "ROI pooling's walk: N channels' outputs per invocation, sharing a bin (Tuning.roi_pool_channels: "
                "1 or 4)",
    "roichannelslast": "ROI align over a channels-last copy of the input, four channels per invocation "
                       "read as 16-byte loads, neighbouring lanes on neighbouring runs of them "
                       "(Tuning.roi_align_channels_last)",
    "roinchw": "ROI align's walk over the input as it is (Tuning.roi_align_channels_last off)",
    "roipoolchannels": "ROI pooling's walk with neighbouring lanes on neighbouring runs of four channels of a bin "
                       "(Tuning.roi_pool_channel_lanes)",
    "roipoolbins": "ROI pooling's walk with neighbouring lanes on neighbouring bins of a plane "
                   "(Tuning.roi_pool_channel_lanes off)",
    "roipoolgradchannels": "ROI pooling's gradient with neighbouring lanes on neighbouring channels of a block "
                           "(Tuning.roi_pool_grad_channel_lanes)",
    "roipoolgradblocks": "ROI pooling's gradient with neighbouring lanes on neighbouring blocks of a plane "
                         "(Tuning.roi_pool_grad_channel_lanes off)",
    "roigradN": "ROI align's average gradient: workgroups of N channels' blocks sharing the samples' weights "
                "(Tuning.roi_align_grad_channels; 1: a block per invocation)",
    "flatunderN": "the (column, line, plane) grids numbered flat where a line has fewer than N columns "
                  "(Tuning.flat_lines_under; 1: never)",
    "unpoolgather": "unpooling as a gather over the output, atomics only for strays, on planes of every size "
                    "(Tuning.unpool_gather, unpool_gather_plane=1)",
    "unpoolplaneN": "unpooling as a gather on output planes of at least N elements, the atomic pick on smaller ones "
                    "(Tuning.unpool_gather_plane)",
    "fractionalwalk": "fractional max pooling and its gradient by the fractional walks (Tuning.fractional_walks)",
    "nofractionalwalk": "fractional max pooling and its gradient by the bins walk (Tuning.fractional_walks off)",
    "pairs": "16-bit inputs: the general walk's two outputs per invocation from shared words (Tuning.paired_words)",
    "lponepass": "Lp pooling's gradient over disjoint windows in one pass (Tuning.lp_gradient_one_pass)",
    "nolponepass": "Lp pooling's gradient in two passes everywhere (Tuning.lp_gradient_one_pass off)",
    "norows": "no rows walks (Tuning.rows_walks off): the general walk where the GPU preset takes it",
    "anyrows": "rows that start anywhere: the rows walks (with rows_walks) and the gradients' row gathers from "
               "single loads (Tuning.any_rows)",
    "noanyrows": "rows that start anywhere: the general walk and the block gathers (Tuning.any_rows off)",
}
# The values the sweep (bench/sweep.py) tries for each variant taking a number; a variant
# without values here is left out of it (say which).
SWEEP = {"outN": (1, 2), "wgN": (64, 128, 256), "rowsN": (4,), "planeN": (64, 128, 256), "partN": (4096, 65536),
         "planechunksN": (2, 4), "packedN": (1, 2, 4, 16), "planewgN": (528, 2112),
         "unpoolplaneN": (4096, 16384), "flatunderN": (4, 8),
         "roichannelsN": (1, 4), "roigradN": (1, 8, 64), "roipoolN": (1, 4)}


def _apply(tuning: pg.Tuning, part: str) -> pg.Tuning:
    name, digits = part.rstrip("0123456789"), part[len(part.rstrip("0123456789")):]
    replace = dataclasses.replace
    if part == "current":
        return tuning
    if name == "out" and digits:
        return replace(tuning, outputs_per_invocation=int(digits))
    if name == "wg" and digits:
        return replace(tuning, lines_workgroup=int(digits))
    if name == "rows" and digits:
        return replace(tuning, walk="auto", rows_walks=True, plane_walk=False, rows_per_invocation=int(digits))
    if name == "plane" and digits:
        return replace(tuning, plane_walk=True, plane_lanes=int(digits))
    if part == "noplane":
        return replace(tuning, plane_walk=False)
    if name == "part" and digits:
        return replace(tuning, plane_part=int(digits))
    if name == "budget" and digits:
        return replace(tuning, loop_budget=int(digits))
    if name == "planechunks" and digits:
        return replace(tuning, plane_chunks=int(digits))
    if name == "packed" and digits:
        return replace(tuning, packed_planes=True, plane_lane_chunks=int(digits))
    if part == "nopacked":
        return replace(tuning, packed_planes=False)
    if name == "planewg" and digits:
        return replace(tuning, plane_workgroups=int(digits))
    if part == "channelsout":
        return replace(tuning, channels_written_out=True)
    if part == "wholewg":
        return replace(tuning, whole_workgroups=True)
    if name == "roichannels" and digits:
        return replace(tuning, roi_align_channels=int(digits))
    if name == "roipool" and digits:
        return replace(tuning, roi_pool_channels=int(digits))
    if part == "roichannelslast":
        return replace(tuning, roi_align_channels_last=True)
    if part == "roinchw":
        return replace(tuning, roi_align_channels_last=False)
    if part == "roipoolchannels":
        return replace(tuning, roi_pool_channels=4, roi_pool_channel_lanes=True)
    if part == "roipoolbins":
        return replace(tuning, roi_pool_channel_lanes=False)
    if part == "roipoolgradchannels":
        return replace(tuning, roi_pool_grad_channel_lanes=True)
    if part == "roipoolgradblocks":
        return replace(tuning, roi_pool_grad_channel_lanes=False)
    if name == "roigrad" and digits:
        return replace(tuning, roi_align_grad_channels=int(digits))
    if name == "flatunder" and digits:
        return replace(tuning, flat_lines_under=int(digits))
    if part == "unpoolgather":
        return replace(tuning, unpool_gather=True, unpool_gather_plane=1)
    if name == "unpoolplane" and digits:
        return replace(tuning, unpool_gather=True, unpool_gather_plane=int(digits))
    if part == "fractionalwalk":
        return replace(tuning, fractional_walks=True)
    if part == "nofractionalwalk":
        return replace(tuning, fractional_walks=False)
    if part == "pairs":
        return replace(tuning, paired_words=True)
    if part == "lponepass":
        return replace(tuning, lp_gradient_one_pass=True)
    if part == "nolponepass":
        return replace(tuning, lp_gradient_one_pass=False)
    if part == "norows":
        return replace(tuning, rows_walks=False)
    if part == "anyrows":
        return replace(tuning, any_rows=True)
    if part == "noanyrows":
        return replace(tuning, any_rows=False)
    if part == "blockgather":
        return replace(tuning, row_gathers=False)
    if part == "tapsfirst":
        return replace(tuning, windows_first=False)
    raise SystemExit(f"unknown variant {part!r}; known: " + "; ".join(f"{k}: {v}" for k, v in VARIANTS.items()))


def variant(name: str, tuning: pg.Tuning) -> pg.Tuning:
    """``tuning`` with the variant's changes ('+' composes them: ``out1+wg256``)."""
    for part in name.split("+"):
        tuning = _apply(tuning, part)
    return tuning


def sweep_names() -> tuple:
    """(every variant the sweep tries, the VARIANTS it leaves out): "current", then each of
    VARIANTS, those taking a number at each of its SWEEP values."""
    names, left_out = ["current"], []
    for key in VARIANTS:
        if key == "current":
            continue
        if key.endswith("N"):
            names += [key[:-1] + str(value) for value in SWEEP.get(key, ())]
            left_out += [] if SWEEP.get(key) else [key]
        else:
            names.append(key)
    return names, left_out


def kernels_of(device, problem, layout: str, tuning: pg.Tuning) -> list:
    """What ``problem``'s ops dispatch under ``tuning`` on ``device`` (pipelines, bindings,
    uniforms, grids): two tunings with the same compile to the same kernels."""
    planned = []
    for _, desc in descriptions(problem, layout):
        planner = Planner(desc, tuning, device.limits["max-storage-buffer-binding-size"],
                          device.limits.get("min-storage-buffer-offset-alignment", 256))
        planned += [(d.pipeline_key, d.bindings, d.uniform, d.grid) for d in planner.dispatches(planner.standalone())]
    return planned


def compare(device, case: str, dtype: str, op: str, variants: list, layout, rounds: int,
            tiny: bool = False) -> dict:
    """{variant: (min, median) seconds per dispatch, or the reason it was not timed}, and
    "copy": the copy roofline's, for one operator on one case (``layout``: one, or several
    timed side by side; see compare_problem)."""
    problem = build(op, Data(CASES[case], dtype, tiny, 0))
    return {} if problem is None else compare_problem(device, problem, layout, variants, rounds)


def compare_problem(device, problem, layout, variants: list, rounds: int, warmup_s: float = 0.0) -> dict:
    """compare()'s results for ``problem``: every variant's runs share ROTATE uploads of the
    inputs; one compiling to the kernels of a variant before it is "same kernels as" that
    one; after at least ``warmup_s`` seconds of untimed rounds, ``rounds`` timed ones.
    ``layout``: "nchw" or "nhwc", or a sequence of them, every variant timed in each, in
    the same rounds (results keyed "<variant> <layout>")."""
    results, runs_of, planned = {}, {}, {}
    base = device.tuning
    layouts = (layout,) if isinstance(layout, str) else tuple(layout)
    for each in layouts:
        input_sets = [upload_inputs(device, problem, each) for _ in range(ROTATE)]
        for variant_name in variants:
            name = variant_name if len(layouts) == 1 else f"{variant_name} {each}"
            tuning = variant(variant_name, base)
            try:
                kernels = kernels_of(device, problem, each, tuning)
                same = next((other for other, theirs in planned.items() if theirs == kernels), None)
                if same is not None:
                    results[name] = f"same kernels as {same}"
                    continue
                planned[name] = kernels
                device.tuning = tuning
                runs = rotating_runs(device, problem, each, input_sets=input_sets)
                for run in runs:
                    run.record()
                mismatch = check(runs[0].outputs(), problem)
            except Exception as exc:  # reported, never hiding the other variants
                results[name] = f"error: {error_reason(exc)}"
                continue
            finally:
                device.tuning = base
            if mismatch:
                results[name] = f"check failed: {mismatch}"
            else:
                runs_of[name] = runs
    if not runs_of:
        return results
    first = next(iter(runs_of.values()))[0]
    copies = Roofline(device, GpuTimer(device), warmup_s=warmup_s).rotating(first.read_bytes, first.written_bytes, ROTATE)
    groups = [copies] + [[run.record for run in runs] for runs in runs_of.values()]
    start = time.perf_counter()
    while time.perf_counter() - start < warmup_s:
        interleaved(device, groups, 1)
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
    p.add_argument("--layout", default="nchw", help="nchw, nhwc, or both (nchw,nhwc): every variant in each, "
                                                    "timed in the same rounds")
    p.add_argument("--variants", default="current")
    p.add_argument("--rounds", type=int, default=16, help="timed passes per variant (default 16)")
    p.add_argument("--tuned-for", choices=("cpu", "gpu"), help="compile for this class of device (default: its own)")
    p.add_argument("--tiny", action="store_true", help="the cases' tiny shapes (plumbing checks)")
    args = p.parse_args(argv)
    device = pg.Device()
    if "timestamp-query" not in device.features:
        raise SystemExit(f"{device.name} has no timestamp-query: variants are timed with GPU timestamps")
    if args.tuned_for:
        device.tuning = pg.Tuning.preset(args.tuned_for)
    variants, layouts = args.variants.split(","), args.layout.split(",")
    if not set(layouts) <= {"nchw", "nhwc"}:
        raise SystemExit(f"--layout: expected nchw, nhwc or both, got {args.layout!r}")
    columns = variants if len(layouts) == 1 else [f"{v} {layout}" for layout in layouts for v in variants]
    print(f"{device.name}, kernels for {device.tuned_for}; us per dispatch, fastest/median pass, % of copy")
    print("case op dtype | copy | " + " | ".join(columns))
    for case in args.cases.split(","):
        for dtype in args.dtype.split(","):
            for op in args.ops.split(","):
                results = compare(device, case, dtype, op, variants, layouts, args.rounds, args.tiny)
                if not results:
                    continue
                copy = results.get("copy", (float("nan"),))[0]
                cells = []
                for name in columns:
                    r = results[name]
                    cells.append(r if isinstance(r, str) else f"{r[0] * 1e6:.1f}/{r[1] * 1e6:.1f} ({100 * copy / r[0]:.0f}%)")
                print(f"{case} {op} {dtype} | {copy * 1e6:.1f} | " + " | ".join(cells), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
