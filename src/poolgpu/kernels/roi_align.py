"""ROI align (DirectML's ROI_ALIGN, ROI_ALIGN1 and ROI_ALIGN_GRAD): a regions pass writes each
ROI's row of the region table (wgsl/roi_align_regions.wgsl, common/roi_align_table.wgsl),
then the walk samples each output's bin (wgsl/roi_align.wgsl; the outputs of
``Tuning.roi_align_channels`` neighbouring channels per invocation where they allow, or with
``Tuning.roi_align_channels_last`` four from 16-byte loads of a channels-last input or copy), split
into parts and merged (wgsl/roi_align_merge.wgsl) where an output's samples are more than one
invocation may visit.  The input gradient: a mask pass (which ROIs reach each tile of the input,
wgsl/roi_align_tiles.wgsl) and a gather by 8 x 8 blocks of dx (wgsl/roi_align_grad.wgsl; the
average's by workgroups of ``Tuning.roi_align_grad_channels`` channels sharing the samples'
weights, wgsl/roi_align_grad_shared.wgsl), in runs of the ROIs chained through scratch where
they are more than one invocation may visit."""

from __future__ import annotations

import math
import struct
from dataclasses import replace
from functools import partial
from typing import Optional

from ..dtypes import DataType
from ..errors import ValidationError
from ..tensor_desc import TensorDesc
from ..tuning import Tuning
from .core import Kernel, Pass, Program, Slot, Split
from .grids import (FLAT_GRID, channels_last_desc, divisor_fields, divisor_params, flat_grid, flat_regrid,
                    sorted_constants, stride_fields)
from .registry import register
from .split import LOOP_LIMIT, fewest_parts, iterations, longest_run, loop_total, search_probes


def f32_bits(value: float) -> int:
    return struct.unpack("<I", struct.pack("<f", value))[0]


def visit_bound(desc, size: int) -> int:
    """The most samples inside [-1, size] one output visits along an axis of ``size``
    elements: at most the samples per output, and where those are ceil(bin) or fewer,
    spaced at least half an element apart (so at most 2 * size + 3 inside; 3 more for
    rounding), else the minimum."""
    return max(1, min(desc.maximum_samples_per_output, max(desc.minimum_samples_per_output, 2 * size + 6)))


def _regions_loops(constants: dict, params: dict) -> dict:
    """roi_align_regions.wgsl: two binary searches of 32 probes, the header's two axes."""
    return {"probe": iterations(2, 32), "axis": iterations(1, 2)}


# The table's readers' Params: sizes, output_offset's bits (the merge, which samples nothing,
# leaves out the input's height and width)
TABLE_PARAMS = ("channels", "in_n", "in_h", "in_w", "out_h", "out_w", "out_offset")
MERGE_TABLE_PARAMS = tuple(p for p in TABLE_PARAMS if p not in ("in_h", "in_w"))
# common/roi_outputs.wgsl's divisions (the walk and its merge): the magic and shift of the
# output's width and height and of the channels
OUTPUT_DIVISORS = tuple(f for f in divisor_fields("out_w", "out_h", "channels") if f not in TABLE_PARAMS)
REGIONS = Kernel(
    "roi_align_regions.wgsl", (Slot("roi", False), Slot("batch", False, snippet="batch_words_{storage}.wgsl"),
                               Slot("table", True, snippet="words_write.wgsl")), value_slot="roi",
    library=("roi_align_table.wgsl", "flat_index.wgsl", "as_written.wgsl"),
    params=("total", "batch_r", "roi_r", "roi_k", "in_n", "in_h", "in_w", "out_h", "out_w", "out_offset",
            "scale_x", "scale_y", "in_offset", "min_region", "min_samples", "max_samples", "opaque_zero"),
    loops=_regions_loops,
)


def _walk_loops(constants: dict, params: dict) -> dict:
    """roi_align.wgsl: the inside samples of its part along Y, and along X for each."""
    y = -(-params["visit_y"] // constants.get("PARTS_Y", 1))
    x = -(-params["visit_x"] // constants.get("PARTS_X", 1))
    return {"iy": iterations(1, y), "ix": iterations(y, x)}


_SAMPLE_LIBRARY = ("roi_align_table.wgsl", "roi_align_reduce.wgsl", "roi_align_sample.wgsl")
WALK = Kernel(
    "roi_align.wgsl", (Slot("x", False), Slot("table", False, snippet="words_read.wgsl"), Slot("y", True),
                       Slot("part", True, snippet="words_write.wgsl"), Slot("arg", True, snippet="words_write.wgsl")),
    value_slot="x", library=_SAMPLE_LIBRARY + ("divide.wgsl", "roi_outputs.wgsl", "taps.wgsl", "flat_index.wgsl",
                                               "as_written.wgsl"),
    params=FLAT_GRID + TABLE_PARAMS + OUTPUT_DIVISORS + ("oob", "source_first", "source_count", "opaque_zero")
    + stride_fields("x", "y", axes="nchw"),
    loops=_walk_loops,
)
MERGE = Kernel(
    "roi_align_merge.wgsl", (Slot("part", False, snippet="words_read.wgsl"),
                             Slot("merged", True, snippet="words_write.wgsl"),
                             Slot("table", False, snippet="words_read.wgsl"), Slot("y", True),
                             Slot("arg", True, snippet="words_write.wgsl")),
    value_slot="y", library=("roi_align_table.wgsl", "roi_align_reduce.wgsl", "divide.wgsl", "roi_outputs.wgsl",
                             "flat_index.wgsl", "as_written.wgsl"),
    params=FLAT_GRID + MERGE_TABLE_PARAMS + OUTPUT_DIVISORS + ("oob", "opaque_zero") + stride_fields("y", axes="nchw"),
    loops=lambda constants, params: {"p": iterations(1, constants["GROUP"])},
)
PART_WORDS = 5  # roi_align_reduce.wgsl
ARG_WORDS = 3   # the argmax sample of an output: iy, ix, corner


def region_table(desc) -> TensorDesc:
    rois = desc.roi.sizes[-2]
    out_h, out_w = desc.output_size
    return TensorDesc(DataType.UINT32, (1, rois, 7 + 4 * (out_h + out_w)))


def sample_constants(desc) -> dict:
    """The override constants of how samples are read and reduced."""
    return {"REDUCE_MAX": desc.reduction_function == "max", "NEAREST": desc.interpolation_mode == "nearest_neighbor",
            "WEIGHTED": desc.weighted_corner_max, "ALIGN_CORNERS": desc.align_regions_to_corners}


def table_params(desc, input_sizes: tuple) -> dict:
    n, c, in_h, in_w = input_sizes
    out_h, out_w = desc.output_size
    return {"channels": c, "in_n": n, "in_h": in_h, "in_w": in_w, "out_h": out_h, "out_w": out_w,
            "out_offset": f32_bits(desc.output_pixel_offset)}


def regions_pass(desc, input_sizes: tuple, wg_x: int) -> Pass:
    """The pass writing ``desc``'s region table (scratch "table")."""
    rois = desc.roi.sizes[-2]
    out_h, out_w = desc.output_size
    region = desc.minimum_region_size
    params = {
        **table_params(desc, input_sizes), "total": rois * (1 + out_h + out_w),
        "batch_r": desc.batch_indices.strides[-1], "roi_r": desc.roi.strides[-2], "roi_k": desc.roi.strides[-1],
        "scale_x": f32_bits(desc.spatial_scale_x), "scale_y": f32_bits(desc.spatial_scale_y),
        "in_offset": f32_bits(desc.input_pixel_offset), "min_region": f32_bits(region or 0.0),
        "min_samples": desc.minimum_samples_per_output, "max_samples": desc.maximum_samples_per_output,
    }
    constants = {"WG_X": wg_x, "BATCH_SIGNED32": desc.batch_indices.data_type == DataType.INT32,
                 "HAS_MIN_REGION": region is not None, "ALIGN_CORNERS": desc.align_regions_to_corners}
    return Pass(REGIONS, ("roi", "batch_indices", "table"), sorted_constants(constants), params,
                flat_grid(params["total"], wg_x))


def _source_planes(first: int, planes: int, *_) -> dict:
    """roi_align.wgsl's filter: only outputs reading input planes in [first, first + planes)
    are written (and those of invalid ROIs by the first range)."""
    return {"source_first": first, "source_count": planes}


def walk_passes(desc, output: str, argmax, tuning: Tuning) -> tuple:
    """(the walk computing ``desc``'s outputs into role ``output`` (None: only the argmax,
    into scratch ``argmax`` where given), and its merges, the scratch they add)."""
    rois, c = desc.roi.sizes[-2], desc.input.sizes[1]
    out_h, out_w = desc.output_size
    outputs = rois * c * out_h * out_w
    wg_x = tuning.flat_workgroup
    divisors = {**divisor_params("out_w", out_w), **divisor_params("out_h", out_h), **divisor_params("channels", c)}
    params = {**table_params(desc, desc.input.sizes), **divisors, "oob": f32_bits(desc.out_of_bounds_input_value),
              **_source_planes(0, 2**32 - 1),
              **{f"x_{a}": s for a, s in zip("nchw", desc.input.strides)}}
    out_desc = getattr(desc, "output", None)
    params.update({f"y_{a}": s for a, s in zip("nchw", out_desc.strides if output else (0, 0, 0, 0))})
    bounds = {"visit_y": visit_bound(desc, desc.input.sizes[2]), "visit_x": visit_bound(desc, desc.input.sizes[3])}
    base = sample_constants(desc)

    def trips(parts: tuple) -> int:
        return loop_total(WALK, {**base, "PARTS_Y": parts[0], "PARTS_X": parts[1]}, bounds)

    parts = fewest_parts(trips, (bounds["visit_y"], bounds["visit_x"]), tuning.loop_budget)
    count = math.prod(parts)
    constants = {**base, "WG_X": wg_x, "PARTS": count, "PARTS_Y": parts[0], "PARTS_X": parts[1]}
    regrid = partial(flat_regrid, wg_x)
    split = Split(out_h * out_w * count, regrid, whole=("table",), gather="input", filter=_source_planes)
    walk_params = {**params, **bounds, "total": outputs * count, "origin": 0}
    roles = ("input", "table") + ((output, None, argmax) if count == 1 else (None, "part", None))
    walk = Pass(WALK, roles, sorted_constants(constants), walk_params, flat_grid(outputs * count, wg_x), split)
    if count == 1:
        return (walk,), ()
    merge_params = {key: params[key] for key in MERGE_TABLE_PARAMS + OUTPUT_DIVISORS + ("oob",)
                    + stride_fields("y", axes="nchw")}
    passes, scratch = [walk], [("part", TensorDesc(DataType.UINT32, (rois, c, out_h * out_w * count * PART_WORDS)))]
    group = max(1, tuning.loop_budget - 1)
    source, target = "part", "merged"
    while True:
        groups = -(-count // group)
        final = groups == 1
        level = {"REDUCE_MAX": base["REDUCE_MAX"], "ALIGN_CORNERS": base["ALIGN_CORNERS"], "WG_X": wg_x, "PARTS": count, "GROUP": min(group, count), "FINAL": final}
        roles = (source, None, "table", output, argmax) if final else (source, target, "table", None, None)
        split = Split(out_h * out_w * groups, regrid, whole=("table",))
        passes.append(Pass(MERGE, roles, sorted_constants(level), {**merge_params, "total": outputs * groups,
                                                                    "origin": 0},
                           flat_grid(outputs * groups, wg_x), split, value_type=desc.input.data_type))
        if final:
            return tuple(passes), tuple(scratch)
        if len(scratch) == 1:
            scratch.append(("merged", TensorDesc(DataType.UINT32, (rois, c, out_h * out_w * groups * PART_WORDS))))
        count, source, target = groups, target, source


# The walk over a packed channels-last input (roi_align_channels_last.wgsl), and the copy of
# another layout into one (to_channels_last.wgsl): Tuning.roi_align_channels_last.
TO_CHANNELS_LAST = Kernel(
    "to_channels_last.wgsl", (Slot("x", False), Slot("y", True, snippet="write4_{storage}.wgsl")), value_slot="x",
    library=("divide.wgsl", "flat_index.wgsl"),
    params=("total",) + divisor_fields("runs", "in_w", "in_h") + stride_fields("x", axes="nchw"),
    loops=lambda constants, params: {},
)
WALK_CHANNELS_LAST = Kernel(
    "roi_align_channels_last.wgsl", (Slot("x", False, snippet="read4_{storage}.wgsl"),
                                     Slot("table", False, snippet="words_read.wgsl"), Slot("y", True)),
    value_slot="x", library=("roi_align_table.wgsl", "roi_align_reduce.wgsl", "divide.wgsl", "flat_index.wgsl",
                             "as_written.wgsl"),
    params=("total",) + TABLE_PARAMS + OUTPUT_DIVISORS + ("oob", "opaque_zero", "x_n", "x_h", "x_w")
    + stride_fields("y", axes="nchw"),   # (x_c is 1)
    loops=_walk_loops,
)


def _channels_last_program(desc, walk: Pass, regions: Pass, scratch: tuple, tuning: Tuning) -> Optional[Program]:
    """ROI align by the channels-last walk (``walk``: the walk it replaces, whole), reading
    the input where it is packed channels-last, else its copy in scratch "x_channels_last";
    None where it does not apply: C no multiple of 4, or a copy that would not pay: fewer
    outputs than input elements (each output reads at least one element, four where bilinear;
    lavapipe, 8x256x56x56 float32 into 7x7 bins of 64 ROIs, an output an eighth of the
    input: the copy and the walk took 0.96x the time of the walk over the input as it is;
    of 1,000 ROIs, twice the input: 0.58x)."""
    n, c, in_h, in_w = desc.input.sizes
    if c % 4:
        return None
    packed = channels_last_desc(desc.input.data_type, desc.input.sizes)
    direct = desc.input.strides == packed.strides   # (its offset a multiple of 4 elements: aligned below)
    if not direct and walk.params["total"] < desc.input.element_count:
        return None
    wg_x = tuning.flat_workgroup
    total = walk.params["total"] // 4
    kept = TABLE_PARAMS + OUTPUT_DIVISORS + ("oob",) + stride_fields("y", axes="nchw")
    params = {key: walk.params[key] for key in kept}
    params.update({**divisor_params("channels", c // 4), "total": total, "visit_y": walk.params["visit_y"],
                   "visit_x": walk.params["visit_x"], "x_n": packed.strides[0], "x_h": packed.strides[2],
                   "x_w": packed.strides[3]})
    samples = sample_constants(desc)
    constants = sorted_constants({"WG_X": wg_x, **samples})
    source = "input" if direct else "x_channels_last"
    channels_last = Pass(WALK_CHANNELS_LAST, (source, "table", "output"), constants, params, flat_grid(total, wg_x))
    if direct:
        return Program((regions, channels_last), scratch=scratch, whole_only=True, aligned=("input",))
    copies = n * in_h * in_w * (c // 4)
    copy_params = {"total": copies, **divisor_params("runs", c // 4), **divisor_params("in_w", in_w),
                   **divisor_params("in_h", in_h), **{f"x_{a}": s for a, s in zip("nchw", desc.input.strides)}}
    copy = Pass(TO_CHANNELS_LAST, ("input", "x_channels_last"), sorted_constants({"WG_X": wg_x}), copy_params,
                flat_grid(copies, wg_x))
    return Program((regions, copy, channels_last), scratch=scratch + (("x_channels_last", packed),), whole_only=True)


@register("roi_align")
def _roi_align_program(desc, tuning: Tuning) -> Program:
    regions = regions_pass(desc, desc.input.sizes, tuning.flat_workgroup)
    passes, scratch = walk_passes(desc, "output", None, tuning)
    program = Program((regions,) + passes, scratch=(("table", region_table(desc)),) + scratch)
    walk, per = passes[0], tuning.roi_align_channels
    c = desc.input.sizes[1]
    if per > 1 and len(passes) == 1 and c % per == 0:
        # Channels per invocation (roi_align.wgsl's CHANNELS), whole tensors only: the
        # invocations cover several planes each, which chunks of planes would cut.
        total = walk.params["total"] // per
        params = {**walk.params, **divisor_params("channels", c // per), "total": total}
        constants = sorted_constants({**dict(walk.constants), "CHANNELS": per})
        grouped = Pass(WALK, walk.tensors, constants, params, flat_grid(total, tuning.flat_workgroup))
        program = Program((regions, grouped), scratch=program.scratch, whole_only=True, fallback=program)
    if len(passes) == 1 and tuning.roi_align_channels_last:
        channels_last = _channels_last_program(desc, walk, regions, program.scratch, tuning)
        if channels_last is not None:   # (for inputs at odd offsets and larger than a binding)
            return replace(channels_last, fallback=program)
    return program


# The input gradient: a mask pass (which ROIs reach each tile of the input) and the gathers.
TILES = Kernel(
    "roi_align_tiles.wgsl", (Slot("table", False, snippet="words_read.wgsl"),
                             Slot("mask", True, snippet="words_write.wgsl")), value_slot="table",
    library=("roi_align_table.wgsl", "tile_masks.wgsl", "flat_index.wgsl", "as_written.wgsl"),
    params=("total", "rois", "out_h", "out_w", "out_offset", "tile", "tiles", "tiles_x", "mask_words", "opaque_zero"),
    loops=lambda constants, params: {"k": iterations(1, 32), "oh": iterations(32, params["out_h"]),
                                     "ow": iterations(32, params["out_w"])},
)


def _gather_loops(constants: dict, params: dict) -> dict:
    """roi_align_grad.wgsl: the mask words and bits of its run of ROIs, and in each ROI the
    scans for the outputs meeting the block, those of its run of outputs (at most all), the
    average's samples along Y (per output row) and X (per output), each run found by two
    searches where NEAR, and its rows of the block (per output row), the maximum's two rows
    per output, then the block's elements."""
    rois = params["roi_end"] - params["roi_first"]
    out_h, out_w = params["oh_end"] - params["oh_first"], params["ow_end"] - params["ow_first"]
    words = -(-params["roi_end"] // 32) - params["roi_first"] // 32
    average = not constants.get("REDUCE_MAX", False)
    loops = {"word": iterations(1, words), "bit": iterations(words, 32),
             "m": iterations(rois, params["out_h"]) + iterations(rois, params["out_w"]),
             "oh": iterations(rois, out_h), "ow": iterations(rois * out_h, out_w), "i": 0, "probe": 0,
             "j": iterations(rois * out_h, ROI_BLOCK) if average else 0,
             "q": 0 if average else iterations(rois * out_h * out_w, 2),
             "k": iterations(1, ROI_BLOCK * ROI_BLOCK)}
    if average:
        for runs, axis in ((rois * out_h, "y"), (rois * out_h * out_w, "x")):
            visit = params[f"visit_{axis}"]
            if constants.get(f"NEAR_{axis.upper()}", False):
                loops["probe"] += search_probes(2 * runs, visit)
                visit = params[f"near_{axis}"]
            loops["i"] += iterations(runs, visit)
    return loops


ROI_BLOCK = 8  # roi_align_grad.wgsl's BLOCK: its blocks lie in tile_layout's tiles (8 x 2^k)
# a gather's run: its ROIs, and (a run of one ROI) its output rows and columns
RUN_FIELDS = ("roi_first", "roi_end", "oh_first", "oh_end", "ow_first", "ow_end")
GATHER = Kernel(
    "roi_align_grad.wgsl", (Slot("dy", False), Slot("arg", False, snippet="words_read.wgsl"),
                            Slot("table", False, snippet="words_read.wgsl"),
                            Slot("mask", False, snippet="words_read.wgsl"), Slot("dx", True),
                            Slot("acc", True, snippet="words_write.wgsl")), value_slot="dy",
    library=("roi_align_table.wgsl", "roi_align_block.wgsl", "carried_blocks.wgsl", "tile_masks.wgsl",
             "flat_index.wgsl", "as_written.wgsl"),
    params=FLAT_GRID + RUN_FIELDS + ("channels", "in_h", "in_w", "out_h", "out_w", "out_offset", "tile", "tiles",
                                     "tiles_x", "mask_words", "opaque_zero") + stride_fields("dy", "dx", axes="nchw"),
    loops=_gather_loops,
)


def _shared_gather_loops(constants: dict, params: dict) -> dict:
    """roi_align_grad_shared.wgsl: as roi_align_grad.wgsl's (_gather_loops), the average's,
    but the weights of the outputs meeting the block shared out among WG_X lanes (each lane
    at most ceil((rows + columns) / WG_X) outputs' samples, of either axis), and the
    block's rows written out, four columns at a time."""
    rois = params["roi_end"] - params["roi_first"]
    out_h, out_w = params["oh_end"] - params["oh_first"], params["ow_end"] - params["ow_first"]
    words = -(-params["roi_end"] // 32) - params["roi_first"] // 32
    rounds = -(-words // SHARED_LIST_WORDS)
    shares = -(-(out_h + out_w) // constants["WG_X"])
    # (a round: one lane lists the ROIs of SHARED_LIST_WORDS mask words, then every lane
    # visits them; the rounds' lists hold the run's ROIs once)
    loops = {"word": iterations(1, rounds), "scan": iterations(rounds, SHARED_LIST_WORDS),
             "bit": iterations(words, 32), "entry": rois + rounds,
             "m": iterations(rois, params["out_h"]) + iterations(rois, params["out_w"]),
             "k": iterations(rois, shares), "oh": iterations(rois, out_h), "ow": iterations(rois * out_h, out_w),
             "i": 0, "probe": 0}
    for axis in ("y", "x"):
        visit = params[f"visit_{axis}"]
        if constants.get(f"NEAR_{axis.upper()}", False):
            loops["probe"] += search_probes(2 * rois * shares, visit)
            visit = params[f"near_{axis}"]
        loops["i"] += iterations(rois * shares, visit)
    return loops


SHARED_GATHER = Kernel(
    "roi_align_grad_shared.wgsl", (Slot("dy", False), Slot("table", False, snippet="words_read.wgsl"),
                                   Slot("mask", False, snippet="words_read.wgsl"), Slot("dx", True),
                                   Slot("acc", True, snippet="words_write.wgsl")), value_slot="dy",
    library=("roi_align_table.wgsl", "roi_align_block.wgsl", "carried_blocks.wgsl", "tile_masks.wgsl", "as_written.wgsl"),
    params=("total",) + RUN_FIELDS + ("channels", "in_h", "in_w", "out_h", "out_w", "out_offset", "tile", "tiles",
                                      "tiles_x", "mask_words", "opaque_zero") + stride_fields("dy", "dx", axes="nchw"),
    loops=_shared_gather_loops,
)
#: roi_align_grad_shared.wgsl's MAX_OUT: the most output rows (and columns) it takes
SHARED_MAX_OUT = 32
#: roi_align_grad_shared.wgsl's LIST_WORDS: the mask words a round lists the ROIs of
SHARED_LIST_WORDS = 8
#: The most words of tile masks a gradient's program allocates: tiles grow until they fit.
MASK_WORDS = 1 << 22


def tile_layout(images: int, height: int, width: int, rois: int) -> dict:
    """The tiles' params: the smallest side from 8 (doubling) whose masks fit MASK_WORDS."""
    words = -(-rois // 32)
    tile = 8
    while True:
        tiles_x, tiles_y = -(-width // tile), -(-height // tile)
        if images * tiles_x * tiles_y * words <= MASK_WORDS or tile >= max(height, width):
            return {"tile": tile, "tiles_x": tiles_x, "tiles": tiles_x * tiles_y, "mask_words": words}
        tile *= 2


def gather_runs(trips, rois: int, out_h: int, out_w: int, budget: int) -> list:
    """The gathers' runs, in order: ``(roi_first, roi_end, oh_first, oh_end, ow_first, ow_end)``,
    whole ROIs where one fits ``budget`` (``trips(run)``: one invocation's loops over the
    run), else runs of one ROI's output rows, else of one output row's columns."""
    runs, r = [], 0
    while r < rois:
        if trips((r, r + 1, 0, out_h, 0, out_w)) <= budget:
            end = longest_run(lambda e: trips((r, e, 0, out_h, 0, out_w)) <= budget, r, rois)
            runs.append((r, end, 0, out_h, 0, out_w))
            r = end
            continue
        oh = 0
        while oh < out_h:
            if trips((r, r + 1, oh, oh + 1, 0, out_w)) <= budget:
                end = longest_run(lambda e: trips((r, r + 1, oh, e, 0, out_w)) <= budget, oh, out_h)
                runs.append((r, r + 1, oh, end, 0, out_w))
                oh = end
                continue
            ow = 0
            while ow < out_w:
                end = longest_run(lambda e: trips((r, r + 1, oh, oh + 1, ow, e)) <= budget, ow, out_w)
                runs.append((r, r + 1, oh, oh + 1, ow, end))
                ow = end
            oh += 1
        r += 1
    return runs


def shared_lanes(desc, tuning: Tuning) -> int:
    """The lanes (channels) of roi_align_grad_shared.wgsl's workgroups for ``desc``'s input
    gradient: ``Tuning.roi_align_grad_channels``, at most the next power of two from C; 1
    where it does not apply (the maximum, whose weights are each channel's own; outputs
    past SHARED_MAX_OUT rows or columns)."""
    c = desc.input_sizes[1]
    if desc.reduction_function == "max" or max(desc.output_size) > SHARED_MAX_OUT:
        return 1
    return min(tuning.roi_align_grad_channels, 1 << (c - 1).bit_length())


def gradient_passes(desc, tiles: dict, tuning: Tuning, lanes: int = 1) -> tuple:
    """(the mask pass and the gathers, the scratch they add) of ``desc``'s input gradient
    (RoiAlignGradDesc), after its regions pass (and argmax walk for the maximum): one gather
    over dx's blocks, or one per run of the ROIs where they are more than one invocation may
    visit, continuing the sums in scratch "acc".  ``lanes`` > 1: by roi_align_grad_shared.wgsl,
    workgroups of that many channels' blocks (whole tensors only: no split)."""
    n, c, in_h, in_w = desc.input_sizes
    rois = desc.roi.sizes[-2]
    out_h, out_w = desc.output_size
    wg_x = tuning.flat_workgroup
    masks = n * tiles["tiles"] * tiles["mask_words"]
    mask_pass = Pass(TILES, ("table", "mask"), sorted_constants({"WG_X": wg_x, "ALIGN_CORNERS":
                                                                  desc.align_regions_to_corners}),
                     {"total": masks, "rois": rois, "out_h": out_h, "out_w": out_w,
                      "out_offset": f32_bits(desc.output_pixel_offset), **tiles}, flat_grid(masks, wg_x))
    if loop_total(TILES, mask_pass.constants, mask_pass.params) > LOOP_LIMIT:
        # (the mask pass is not split: past the limit llvmpipe would cut its loops short, silently)
        raise ValidationError("output_size", f"ROI align's gradient takes outputs whose height and width add up to "
                                             f"at most {(LOOP_LIMIT - 33) // 32 - 2}, got {desc.output_size}")
    dx, dy = desc.output_gradient, desc.input_gradient
    blocks = -(-in_h // ROI_BLOCK) * -(-in_w // ROI_BLOCK)
    params = {"total": n * c * blocks, "origin": 0, "channels": c, "in_h": in_h, "in_w": in_w,
              "out_h": out_h, "out_w": out_w, "out_offset": f32_bits(desc.output_pixel_offset), **tiles,
              "visit_y": visit_bound(desc, in_h), "visit_x": visit_bound(desc, in_w),
              **{f"dy_{a}": s for a, s in zip("nchw", dy.strides)}, **{f"dx_{a}": s for a, s in zip("nchw", dx.strides)}}
    # the samples of an output at [e0 - 1, e0 + BLOCK + 1) around a block: at most those of a
    # window of BLOCK + 2 elements; searched for where an output may have more
    near = visit_bound(desc, ROI_BLOCK + 2)
    params.update(near_y=min(near, params["visit_y"]), near_x=min(near, params["visit_x"]))
    base = {**sample_constants(desc), "NEAR_Y": params["visit_y"] > near, "NEAR_X": params["visit_x"] > near}

    kernel, grid = GATHER, flat_grid(params["total"], wg_x)
    base["WG_X"] = wg_x
    if lanes > 1:   # a workgroup per (image, block, run of `lanes` channels); the average's
        kernel = SHARED_GATHER
        base = {**{k: v for k, v in base.items() if k not in ("REDUCE_MAX", "WEIGHTED")}, "WG_X": lanes}
        del params["origin"]   # (not split: no chunks of blocks)
        params["total"] = n * blocks * -(-c // lanes)
        grid = flat_grid(params["total"] * lanes, lanes)

    def trips(run: tuple) -> int:
        return loop_total(kernel, base, {**params, **dict(zip(RUN_FIELDS, run))})

    if trips((0, 1, 0, 1, 0, 1)) > tuning.loop_budget:
        raise ValidationError("maximum_samples_per_output", f"an output of up to {params['visit_y']} x "
                              f"{params['visit_x']} samples is more than one invocation may visit; limit the "
                              f"samples (maximum_samples_per_output, sampling_ratio)")
    runs = gather_runs(trips, rois, out_h, out_w, tuning.loop_budget) or [(0, 0, 0, out_h, 0, out_w)]
    split = Split(blocks, partial(flat_regrid, wg_x), whole=("input_gradient", "argmax", "table", "mask"))
    argmax = "argmax" if desc.reduction_function == "max" else None
    gathers = []
    for k, run in enumerate(runs):
        first_run, last_run = k == 0, k == len(runs) - 1
        constants = {**base, "FIRST": first_run, "LAST": last_run}
        roles = ("input_gradient",) + ((argmax,) if kernel is GATHER else ()) + (
            "table", "mask", "output_gradient" if last_run else None, None if first_run and last_run else "acc")
        gathers.append(Pass(kernel, roles, sorted_constants(constants), {**params, **dict(zip(RUN_FIELDS, run))},
                            grid, split if kernel is GATHER else None))
    scratch = (("mask", TensorDesc(DataType.UINT32, (1, 1, masks))),)
    if len(runs) > 1:   # the f32 sums carried from run to run, plane by plane
        scratch += (("acc", TensorDesc(DataType.UINT32, (n, c, in_h * in_w))),)
    return (mask_pass,) + tuple(gathers), scratch


@register("roi_align_grad")
def _roi_align_grad_program(desc, tuning: Tuning) -> Program:
    regions = regions_pass(desc, desc.input_sizes, tuning.flat_workgroup)
    passes, scratch = (regions,), [("table", region_table(desc))]
    if desc.reduction_function == "max":
        argmax, walk_scratch = walk_passes(desc, None, "argmax", tuning)
        rois, c = desc.roi.sizes[-2], desc.input_sizes[1]
        passes += argmax
        scratch += [("argmax", TensorDesc(DataType.UINT32, (rois, c, math.prod(desc.output_size) * ARG_WORDS)))]
        scratch += list(walk_scratch)
    n, _, in_h, in_w = desc.input_sizes
    tiles = tile_layout(n, in_h, in_w, desc.roi.sizes[-2])
    gather, gather_scratch = gradient_passes(desc, tiles, tuning)
    # max: the argmax runs over ROIs and the gather over images, which chunks of (n, c)
    # planes cannot both follow; run whole only.
    program = Program(passes + gather, scratch=tuple(scratch) + gather_scratch,
                      whole_only=desc.reduction_function == "max")
    lanes = shared_lanes(desc, tuning)
    if lanes == 1:
        return program
    # workgroups of channels: whole tensors only, the gather by invocations the fallback
    shared, shared_scratch = gradient_passes(desc, tiles, tuning, lanes)
    return Program(passes + shared, scratch=tuple(scratch) + shared_scratch, whole_only=True, fallback=program)
