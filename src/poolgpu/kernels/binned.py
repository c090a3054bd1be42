"""Variable-bin pooling (ROI, adaptive; fractional in .fractional): a bins pass writes each
output coordinate's input range into a bin table (wgsl/common/bin_table.wgsl), then a binned
pass pools each bin (ROI pooling: ``Tuning.roi_pool_channels`` neighbouring channels' bins per
invocation where they allow).  And the binned gradients: gathers over dx visiting the bins that cover
each element (adaptive: common/adaptive_range.wgsl's bins, swapped; ROI: each ROI's run of
covering bins, common/bin_search.wgsl)."""

from __future__ import annotations

import math
import struct
from functools import partial
from typing import Optional

from ..descs import AveragePooling1Desc, MaxPooling2Desc
from ..dtypes import DataType
from ..tuning import Tuning
from ..tensor_desc import TensorDesc
from .core import Kernel, Pass, Program, Slot, Split
from .grids import (FLAT_GRID, IN_SIZES, OUT_SIZES, as_5d, divisor_fields, divisor_params, flat_grid, flat_regrid,
                    sorted_constants, stride_fields, tensor_stride_params)
from .planes import plane_gradient
from .registry import register
from .roi_align import ROI_BLOCK, tile_layout   # (roi_pool_grad.wgsl's blocks lie in its tiles, 8 x 2^k)
from .split import (Accumulator, fewest_parts, gradient_merge_passes, iterations, longest_run, loop_total,
                    merge_passes, partials_desc, search_probes)
from .window import (AVERAGE, AVERAGE_POOL, MAX, MAX_POOL, average_pool_program, max_pool_program,
                     plane_walk_fits)

# The bins passes' loops: wide_int.wgsl's, a fixed number (div_wide: 32 bits; the 192-bit
# Wide helpers: 6 words): adaptive_range's two div_wide; per ROI, its five values and four
# corners (each rounded: a wide_negate and its wide_add), then one bin_range (wide_negate,
# four wide_add, wide_is_zero, three wide_mul, two div_wide).
ADAPTIVE_BINS = Kernel(
    "adaptive_bins.wgsl", (Slot("bins", True),), value_slot="bins",
    library=("wide_int.wgsl", "adaptive_range.wgsl", "flat_index.wgsl"),
    params=IN_SIZES + OUT_SIZES + ("total",),  # total: out_d + out_h + out_w bins
    loops=lambda constants, params: {"bit": iterations(2, 32), "k": 0},
)
_WIDE = iterations(1, 6)  # one of the Wide helpers' loops
ROI_BINS = Kernel(
    "roi_bins.wgsl", (Slot("roi", False), Slot("bins", True)), value_slot="roi",
    library=("wide_int.wgsl", "flat_index.wgsl"),
    params=("roi_r", "roi_k",  # element strides of the ROI tensor along R and along its 5 values
            "batches", "in_h", "in_w", "pooled_h", "pooled_w",
            "scale_bits",  # spatial_scale as f32 bits
            "total"),  # R * (1 + pooled_h + pooled_w)
    loops=lambda constants, params: {"bit": iterations(2, 32),
                                     "k": iterations(1, 5) + iterations(1, 4) + 4 * 2 * _WIDE + 10 * _WIDE},
)
def _longest_bins(table: dict, params: dict) -> tuple:
    """The most taps of a bin along D, H and W, for a bin table of override constants
    ``table``: fixed bins (BIN_D, BIN_H, BIN_W) are that long; ROI bins are clamped to the
    input; adaptive bins [floor(o * in / out), ceil((o + 1) * in / out)) span at most
    ceil(in / out) + 1."""
    if table.get("BIN_W"):
        return tuple(table[f"BIN_{a}"] for a in "DHW")
    if table.get("ROI", False):
        return 1, params["in_h"], params["in_w"]
    return tuple(-(-params[f"in_{a}"] // params[f"out_{a}"]) + (params[f"in_{a}"] % params[f"out_{a}"] != 0)
                 for a in "dhw")


def bins_loops(constants: dict, params: dict) -> dict:
    """window_walk_bins.wgsl's loops over one bin (of its part)."""
    d, h, w = (-(-size // constants.get(f"PARTS_{axis}", 1))
               for size, axis in zip(_longest_bins(constants, params), "DHW"))
    return {"d": iterations(1, d), "h": iterations(d, h), "w": iterations(d * h, w)}


# common/window_walk_bins.wgsl's divisions of an output's number: by the output's sizes, then by the
# runs of channels an invocation takes (channel_runs: C / CHANNELS)
BINNED_OUTPUT_DIVISORS = divisor_fields("out_d", "out_h", "out_w", "channel_runs")


def binned_output_divisors(out_sizes: tuple, channel_runs: int) -> dict:
    """The BINNED_OUTPUT_DIVISORS params for outputs of 5-D sizes ``out_sizes``."""
    return {**{key: value for axis, size in zip("dhw", out_sizes[2:]) for key, value in
               divisor_params(f"out_{axis}", size).items()}, **divisor_params("channel_runs", channel_runs)}


def _bins_kernel(accumulator: Accumulator) -> Kernel:
    """The operator's bins walk (common/window_walk_bins.wgsl)."""
    slots = (Slot("x", False), Slot("bins", False), Slot("y", True), Slot("idx", True),
             Slot("part", True, snippet="words_write.wgsl")) + accumulator.slots
    library = accumulator.library + (accumulator.partials, "window_constants.wgsl", "window_geometry.wgsl", "taps.wgsl",
                                     "divide.wgsl", "bin_table.wgsl", "flat_index.wgsl", "window_walk_bins.wgsl",
                                     "store_one.wgsl")
    # source_first, source_count: ROI pooling in chunks (window_walk_bins.wgsl)
    params = FLAT_GRID + ("channels",) + IN_SIZES + BINNED_OUTPUT_DIVISORS + stride_fields("x", "y", "idx") \
        + ("source_first", "source_count", "opaque_zero")
    return Kernel(accumulator.file, slots, "x", library=library, params=params, loops=bins_loops)


BINS_MAX = _bins_kernel(MAX)
BINS_AVERAGE = _bins_kernel(AVERAGE)
# ... and their merges (split bins)
MERGES = {MAX: MAX_POOL["merge"], AVERAGE: AVERAGE_POOL["merge"]}


def bin_table(rows: int, out_spatial_3d: tuple) -> TensorDesc:
    """The bin table: per row a source batch word and a (start, end) pair per output
    coordinate along D, H and W."""
    return TensorDesc(DataType.UINT32, (1, rows, 1 + 2 * sum(out_spatial_3d)))


def binned_passes(kernel: Kernel, accumulator: Accumulator, desc, table: dict, tuning: Tuning,
                  roles: Optional[tuple] = None, merge: Optional[Kernel] = None, constants: dict = {}) -> tuple:
    """(the passes pooling each output's bin of ``desc.input`` into ``roles`` (y, idx) with
    ``kernel``, a bins walk (default roles: the description's outputs), over a bin table
    of override constants ``table`` (common/bin_table.wgsl's ROI or PLANE_ROWS,
    window_walk_bins.wgsl's BIN_D, BIN_H, BIN_W): one pass, or where bins hold more taps
    than ``tuning.loop_budget`` allows, the split walk and its merge passes (``merge``: the
    accumulator's merge kernel, default MERGES'); the scratch they add.  ``constants``: the
    accumulator's override constants; its operand slots are left absent."""
    roi = table.get("ROI", False)
    in_sizes, _ = as_5d(desc.input.sizes, desc.input.strides)
    out_sizes, _ = as_5d(desc.output.sizes, desc.output.strides)
    wg_x = tuning.flat_workgroup
    params = {
        "channels": in_sizes[1],
        "in_d": in_sizes[2], "in_h": in_sizes[3], "in_w": in_sizes[4],
        **binned_output_divisors(out_sizes, in_sizes[1]),
        **_source_planes(0, 2**32 - 1),
    }
    indices = getattr(desc, "output_indices", None)
    if roles is None:
        roles = ("output", None if indices is None else "output_indices")
    params.update(tensor_stride_params("x", desc.input))
    params.update(tensor_stride_params("y", desc.output))
    params.update(tensor_stride_params("idx", indices))
    outputs = math.prod(out_sizes)

    def trips(parts: tuple) -> int:
        return loop_total(kernel, {**table, **{f"PARTS_{a}": p for a, p in zip("DHW", parts)}}, params)

    parts = fewest_parts(trips, _longest_bins(table, params), tuning.loop_budget)
    count = math.prod(parts)
    walk_constants = {**constants, **table, "WG_X": wg_x, "PARTS": count,
                      **{f"PARTS_{a}": p for a, p in zip("DHW", parts)}}
    regrid = partial(flat_regrid, wg_x)
    per_plane = math.prod(out_sizes[2:]) * count
    if roi:  # an ROI's input planes are data (its batch): x is read in ranges of planes
        split = Split(per_plane, regrid, whole=("roi", "bins"), gather="input", filter=_source_planes)
    else:
        split = Split(per_plane, regrid, whole=("bins",))
    walk_roles = ("input", "bins") + (roles if count == 1 else (None, None)) + (None if count == 1 else "part",)
    walk_roles += (None,) * len(accumulator.slots)
    walk = Pass(kernel, walk_roles, sorted_constants(walk_constants), {**params, "total": outputs * count, "origin": 0},
                flat_grid(outputs * count, wg_x), split)
    if count == 1:
        return (walk,), ()
    merge_params = {key: params[key] for key in ("channels",) + IN_SIZES + OUT_SIZES + stride_fields("y", "idx")}
    merges, scratch = merge_passes(merge or MERGES[accumulator], accumulator, out_sizes, count, roles, merge_params,
                                   constants, tuning.lines_workgroup, tuning.loop_budget,
                                   value_type=desc.input.data_type)
    return (walk,) + merges, (("part", partials_desc(out_sizes, count, accumulator.words)),) + scratch


def _source_planes(first: int, planes: int, *_) -> dict:
    """window_walk_bins.wgsl's ROI filter: only outputs reading input planes (batch * C + c) in
    [first, first + planes) are written."""
    return {"source_first": first, "source_count": planes}


def _adaptive_bins_pass(desc, wg_x: int) -> tuple:
    """(the pass writing adaptive pooling's bin table, the table)."""
    in_sizes, _ = as_5d(desc.input.sizes, desc.input.strides)
    out_sizes, _ = as_5d(desc.output.sizes, desc.output.strides)
    bins = sum(out_sizes[2:])
    params = {
        "in_d": in_sizes[2], "in_h": in_sizes[3], "in_w": in_sizes[4],
        "out_d": out_sizes[2], "out_h": out_sizes[3], "out_w": out_sizes[4],
        "total": bins,
    }
    constants = sorted_constants({"WG_X": wg_x})
    pass_ = Pass(ADAPTIVE_BINS, ("bins",), constants, params, flat_grid(bins, wg_x))
    return pass_, bin_table(1, out_sizes[2:])


# Tuning.fixed_window_min_row (8): the fixed-window kernels give each output row a workgroup
# row of 64 lanes: on rows narrower than this most lanes idle (global pooling: 1 of 64), where
# the bin kernels pack outputs flat.  Measured on lavapipe: 3 to 7 times slower for rows of 1
# to 4, on par from 7 or 8.


def _fixed_window_for_bins(desc, tuning: Tuning):
    """The window (= stride) of the fixed-window pooling equal to ``desc``'s adaptive bins,
    where it exists (every input size a multiple of its output size: in / out) and is worth
    it (rows of at least ``tuning.fixed_window_min_row`` outputs, or where the tuning takes
    the plane walk, global pooling); else None."""
    in_spatial, out_spatial = desc.input.sizes[2:], desc.output.sizes[2:]
    if tuning.plane_walk and plane_walk_fits(in_spatial, out_spatial, tuning):
        return tuple(in_spatial)
    if any(i % o for i, o in zip(in_spatial, out_spatial)) or out_spatial[-1] < tuning.fixed_window_min_row:
        return None
    return tuple(i // o for i, o in zip(in_spatial, out_spatial))


def _binned_program(kernel: Kernel, accumulator: Accumulator, desc, tuning: Tuning) -> Program:
    bins_pass, table = _adaptive_bins_pass(desc, tuning.flat_workgroup)
    passes, scratch = binned_passes(kernel, accumulator, desc, {}, tuning)
    return Program((bins_pass,) + passes, scratch=(("bins", table),) + scratch)


@register("adaptive_max_pool")
def _adaptive_max_pool_program(desc, tuning: Tuning) -> Program:
    window = _fixed_window_for_bins(desc, tuning)
    if window is not None:
        return max_pool_program(
            MaxPooling2Desc(desc.input, desc.output, desc.output_indices, window_size=window, strides=window), tuning
        )
    return _binned_program(BINS_MAX, MAX, desc, tuning)


@register("adaptive_average_pool")
def _adaptive_average_pool_program(desc, tuning: Tuning) -> Program:
    if not desc.input.data_type.is_float:
        from .quantized import integer_adaptive_average_pool_program  # (it builds on this module)
        return integer_adaptive_average_pool_program(desc, tuning)
    window = _fixed_window_for_bins(desc, tuning)
    if window is not None:  # the same compensated sum in the same order: the same bits
        return average_pool_program(
            AveragePooling1Desc(desc.input, desc.output, window_size=window, strides=window), tuning)
    return _binned_program(BINS_AVERAGE, AVERAGE, desc, tuning)


def _roi_bins_pass(desc, wg_x: int) -> tuple:
    """(the pass writing ROI pooling's bin table, one row per ROI, the table)."""
    rois = desc.roi.sizes[2]
    pooled_h, pooled_w = desc.pooled_size
    entries = 1 + pooled_h + pooled_w  # per ROI: the batch with the unit D pair, then H and W bins
    params = {
        "roi_r": desc.roi.strides[2], "roi_k": desc.roi.strides[3],
        "batches": desc.input.sizes[0], "in_h": desc.input.sizes[2], "in_w": desc.input.sizes[3],
        "pooled_h": pooled_h, "pooled_w": pooled_w,
        "scale_bits": struct.unpack("<I", struct.pack("<f", desc.spatial_scale))[0],
        "total": rois * entries,
    }
    constants = sorted_constants({"WG_X": wg_x})
    bins_pass = Pass(ROI_BINS, ("roi", "bins"), constants, params, flat_grid(rois * entries, wg_x))
    return bins_pass, bin_table(rois, (1, pooled_h, pooled_w))


def roi_channels_walk(passes: tuple, channels: int, tuning: Tuning) -> Optional[Pass]:
    """ROI pooling's walk (``passes``: binned_passes') taking ``tuning.roi_pool_channels``
    channels per invocation (window_walk_bins.wgsl's CHANNELS; neighbouring lanes on
    neighbouring runs of them with ``tuning.roi_pool_channel_lanes``), or None where it does not
    apply (one channel each; bins in parts; C not a multiple).  Whole tensors only: its
    invocations read several input planes each, which ranges of planes would cut."""
    walk, per = passes[0], tuning.roi_pool_channels
    if per == 1 or len(passes) > 1 or channels % per:
        return None
    total = walk.params["total"] // per
    constants = {**dict(walk.constants), "CHANNELS": per, "CHANNEL_LANES": tuning.roi_pool_channel_lanes}
    return Pass(walk.kernel, walk.tensors, sorted_constants(constants),
                {**walk.params, **divisor_params("channel_runs", channels // per), "total": total},
                flat_grid(total, tuning.flat_workgroup))


@register("roi_pool")
def _roi_pool_program(desc, tuning: Tuning) -> Program:
    bins_pass, table = _roi_bins_pass(desc, tuning.flat_workgroup)
    passes, scratch = binned_passes(BINS_MAX, MAX, desc, {"ROI": True}, tuning)
    program = Program((bins_pass,) + passes, scratch=(("bins", table),) + scratch)
    grouped = roi_channels_walk(passes, desc.input.sizes[1], tuning)
    if grouped is None:
        return program
    return Program((bins_pass, grouped), scratch=program.scratch, whole_only=True, fallback=program)


# The binned pooling gradients: straightforward gathers (each dx element visits the bins
# covering it, in a fixed order: deterministic, no float atomics), one invocation per dx
# element, numbered flat (common/bins_gather.wgsl, common/gather_parts.wgsl).
GATHER_LIBRARY = ("taps.wgsl", "gather_parts.wgsl", "bins_gather.wgsl", "flat_index.wgsl")
_ADAPTIVE_GATHER_LIBRARY = ("wide_int.wgsl", "adaptive_range.wgsl", "adaptive_covering.wgsl") + GATHER_LIBRARY
GATHER_PARAMS = FLAT_GRID + ("channels",) + IN_SIZES + OUT_SIZES  # in_*: dx's, out_*: dy's
PART = Slot("part", True, snippet="words_write.wgsl")  # a split gather's partial sums


def _wide(params: dict, axis: str) -> bool:
    """Whether adaptive_range's products along ``axis`` can pass 32 bits (wide_int.wgsl's
    div_wide then loops over 32 bits)."""
    size_in, size_out = params[f"in_{axis}"], params[f"out_{axis}"]
    return (size_in + 1) * (size_out + 1) >= 2**32


def _covering(constants: dict, params: dict) -> tuple:
    """The most bins covering one dx element along D, H, W (of a split gather's part):
    adaptive bins with in and out swapped (common/adaptive_range.wgsl)."""
    swapped = {f"in_{a}": params[f"out_{a}"] for a in "dhw"} | {f"out_{a}": params[f"in_{a}"] for a in "dhw"}
    return tuple(-(-size // constants.get(f"PARTS_{axis}", 1))
                 for size, axis in zip(_longest_bins({}, swapped), "DHW"))


def covering_loops(d: int, h: int, w: int) -> dict:
    """The binned gathers' loops over the bins covering a dx element: at most d x h x w."""
    return {"od": iterations(1, d), "oh": iterations(d, h), "ow": iterations(d * h, w)}


def adaptive_gather_loops(counts_bins: bool, constants: dict, params: dict) -> dict:
    """The adaptive gathers' loops over the bins covering a dx element, and div_wide's 32
    steps in each adaptive_range of covered() (two per dimension) and, where the gather
    counts each bin (``counts_bins``: the average's), in each bin_count (two per bin of a
    dimension's loop)."""
    d, h, w = _covering(constants, params)
    wide = {a: _wide(params, a) for a in "dhw"}
    bit = sum(iterations(2, 32) for a in "dhw" if wide[a])
    if counts_bins:
        runs = {"d": d, "h": d * h, "w": d * h * w}
        bit += sum(iterations(2 * runs[a], 32) for a in "dhw" if wide[a])
    # (wide_int.wgsl's Wide helpers, "k", go unused)
    return dict(covering_loops(d, h, w), bit=bit, k=0)


ADAPTIVE_MAX_POOL_GRAD = Kernel(
    "adaptive_max_pool_grad.wgsl", (Slot("dy", False), Slot("arg", False), Slot("dx", True), PART), value_slot="dy",
    library=_ADAPTIVE_GATHER_LIBRARY, params=GATHER_PARAMS + stride_fields("dy", "arg", "dx"),
    loops=partial(adaptive_gather_loops, False),
)
ADAPTIVE_AVERAGE_POOL_GRAD = Kernel(
    "adaptive_average_pool_grad.wgsl", (Slot("dy", False), Slot("dx", True), PART), value_slot="dy",
    library=_ADAPTIVE_GATHER_LIBRARY + ("as_written.wgsl",),
    params=GATHER_PARAMS + stride_fields("dy", "dx") + ("opaque_zero",),
    loops=partial(adaptive_gather_loops, True),
)


def _gather_pass(kernel: Kernel, desc, tensors: dict, described: dict, wg_x: int, constants: dict,
                 parts: tuple = (1, 1, 1)) -> Pass:
    """One invocation per element of ``desc.output_gradient`` (dx), or with ``parts`` (along
    D, H, W) per part of the bins covering it, in chunks of its (n, c) planes.  ``tensors``
    maps slot names to roles, ``described`` roles to TensorDescs."""
    dy, dx = desc.input_gradient, desc.output_gradient
    in_sizes, out_sizes = as_5d(dx.sizes, dx.strides)[0], as_5d(dy.sizes, dy.strides)[0]
    count = math.prod(parts)
    total = math.prod(in_sizes) * count
    params = {
        "total": total, "origin": 0, "channels": in_sizes[1],
        "in_d": in_sizes[2], "in_h": in_sizes[3], "in_w": in_sizes[4],
        "out_d": out_sizes[2], "out_h": out_sizes[3], "out_w": out_sizes[4],
    }
    for slot, role in tensors.items():
        if slot not in ("part", "bins"):  # (partial sums and tables: numbered flat, no strides)
            params.update(tensor_stride_params(slot, described[role]))
    constants = {**constants, "WG_X": wg_x, "PARTS": count, **{f"PARTS_{axis}": p for axis, p in zip("DHW", parts)}}
    split = Split(math.prod(in_sizes[2:]) * count, partial(flat_regrid, wg_x), whole=("bins",))
    return Pass(kernel, tuple(tensors.get(slot.name) for slot in kernel.slots), sorted_constants(constants), params,
                flat_grid(total, wg_x), split)


def gather_passes(kernel: Kernel, desc, tensors: dict, described: dict, tuning: Tuning, constants: dict = {},
                  counts: Optional[tuple] = None) -> tuple:
    """(the passes of a binned gather, the scratch they add): one, or where more bins cover a
    dx element than ``tuning.loop_budget`` allows, the split gather and its merges.
    ``counts``: the most bins covering an element along D, H, W (default: adaptive
    bins')."""
    whole = _gather_pass(kernel, desc, tensors, described, tuning.flat_workgroup, constants)

    def trips(parts: tuple) -> int:
        return loop_total(kernel, {**constants, **{f"PARTS_{axis}": p for axis, p in zip("DHW", parts)}},
                          whole.params)

    parts = fewest_parts(trips, counts or _covering({}, whole.params), tuning.loop_budget)
    if math.prod(parts) == 1:
        return (whole,), ()
    split = _gather_pass(kernel, desc, dict(tensors, part="dx_part"), described, tuning.flat_workgroup, constants,
                         parts)
    merges, scratch = gradient_merge_passes(desc.output_gradient, math.prod(parts), tuning.lines_workgroup,
                                            tuning.loop_budget)
    return (split,) + merges, scratch


def argmax_passes(forward, table: dict, tuning: Tuning) -> tuple:
    """(the binned walk writing only ``forward``'s argmax (UINT32 indices) into scratch
    "argmax", the scratch)."""
    argmax, split_scratch = binned_passes(BINS_MAX, MAX, forward, table, tuning, roles=(None, "argmax"))
    return argmax, (("argmax", forward.output_indices),) + split_scratch


def _to_one(desc) -> bool:
    """Whether the adaptive pooling of the gradient ``desc`` pools each plane to one output."""
    return math.prod(desc.input_gradient.sizes[2:]) == 1


@register("adaptive_max_pool_grad")
def _adaptive_max_pool_grad_program(desc, tuning: Tuning) -> Program:
    """Adaptive max pooling's argmax of every bin into scratch (the forward binned pass,
    writing only indices), then the gather adding each bin's dy at its argmax."""
    whole_planes = plane_gradient(desc, tuning, summed=True) if _to_one(desc) else None
    if whole_planes is not None:  # (pooling to one output: the same bits)
        return whole_planes
    forward, wg_x = desc.forward, tuning.flat_workgroup
    bins_pass, table = _adaptive_bins_pass(forward, wg_x)
    argmax, argmax_scratch = argmax_passes(forward, {}, tuning)
    described = {"input_gradient": desc.input_gradient, "argmax": forward.output_indices,
                 "output_gradient": desc.output_gradient}
    gather, gather_scratch = gather_passes(
        ADAPTIVE_MAX_POOL_GRAD, desc, {"dy": "input_gradient", "arg": "argmax", "dx": "output_gradient"}, described,
        tuning)
    return Program((bins_pass,) + argmax + gather, scratch=(("bins", table),) + argmax_scratch + gather_scratch)


@register("adaptive_average_pool_grad")
def _adaptive_average_pool_grad_program(desc, tuning: Tuning) -> Program:
    whole_planes = plane_gradient(desc, tuning) if _to_one(desc) else None
    if whole_planes is not None:  # (pooling to one output: the same bits)
        return whole_planes
    described = {"input_gradient": desc.input_gradient, "output_gradient": desc.output_gradient}
    passes, scratch = gather_passes(ADAPTIVE_AVERAGE_POOL_GRAD, desc, {"dy": "input_gradient", "dx": "output_gradient"},
                                    described, tuning)
    return Program(passes, scratch=scratch)


def roi_gather_loops(constants: dict, params: dict) -> dict:
    """roi_pool_grad.wgsl's loops: the mask words and bits of its run of ROIs, in each ROI four
    searches (the runs of H and W bins meeting the block) and at most every bin, then the
    block's elements (and before, unless FIRST, their carried sums)."""
    rois = params["roi_end"] - params["roi_first"]
    words = -(-params["roi_end"] // 32) - params["roi_first"] // 32
    pooled_h, pooled_w = params["pooled_h"], params["pooled_w"]
    probes = search_probes(2 * rois, pooled_h) + search_probes(2 * rois, pooled_w)
    return {"word": iterations(1, words), "bit": iterations(words, 32), "probe": probes,
            "oh": iterations(rois, pooled_h), "ow": iterations(rois * pooled_h, pooled_w),
            "j": 0 if constants.get("FIRST", True) else iterations(1, ROI_BLOCK * ROI_BLOCK),
            "k": iterations(1, ROI_BLOCK * ROI_BLOCK)}


TILE_PARAMS = ("tile", "tiles", "tiles_x", "mask_words")  # roi_align.tile_layout's
ROI_POOL_GRAD = Kernel(
    "roi_pool_grad.wgsl", (Slot("dy", False), Slot("arg", False), Slot("bins", False),
                           Slot("mask", False, snippet="words_read.wgsl"), Slot("dx", True),
                           Slot("acc", True, snippet="words_write.wgsl")),
    value_slot="dy",
    library=("carried_blocks.wgsl", "tile_masks.wgsl", "bin_search.wgsl", "divide.wgsl", "flat_index.wgsl"),
    params=FLAT_GRID + ("roi_first", "roi_end", "channels", "in_h") + divisor_fields("in_w")
    + ("pooled_h", "pooled_w") + TILE_PARAMS + stride_fields("dy", "arg", "dx", axes="nchw"),
    loops=roi_gather_loops,
)
ROI_POOL_TILES = Kernel(
    "roi_pool_tiles.wgsl", (Slot("bins", False), Slot("mask", True, snippet="words_write.wgsl")), value_slot="bins",
    library=("tile_masks.wgsl", "flat_index.wgsl"), params=("total", "rois", "pooled_h", "pooled_w") + TILE_PARAMS,
    loops=lambda constants, params: {"k": iterations(1, 32)},
)


def _roi_gather_passes(desc, wg_x: int, tiles: dict, channel_lanes: bool, budget: int) -> tuple:
    """(the gathers over dx's ROI_BLOCK x ROI_BLOCK blocks, the scratch they add): one, or one
    per run of the ROIs where they are more than one invocation may visit (each run the longest
    within ``budget``, one ROI at least), carrying the sums in scratch "acc"; numbered with the
    channels fastest where ``channel_lanes`` (roi_pool_grad.wgsl's CHANNEL_LANES)."""
    dx = desc.output_gradient
    n, c, in_h, in_w = dx.sizes
    pooled_h, pooled_w = desc.pooled_size
    rois = desc.roi.sizes[2]
    blocks = -(-in_h // ROI_BLOCK) * -(-in_w // ROI_BLOCK)
    total = n * c * blocks
    params = {"total": total, "origin": 0, "channels": c, "in_h": in_h, **divisor_params("in_w", in_w),
              "pooled_h": pooled_h, "pooled_w": pooled_w, **tiles}
    for slot, tensor in (("dy", desc.input_gradient), ("arg", desc.forward.output_indices), ("dx", dx)):
        params.update({f"{slot}_{axis}": stride for axis, stride in zip("nchw", tensor.strides)})
    base = {"WG_X": wg_x, "CHANNEL_LANES": channel_lanes}

    def fits(first: int, end: int) -> bool:   # (a run after the first also loads the carried sums)
        constants = dict(base, FIRST=first == 0)
        return loop_total(ROI_POOL_GRAD, constants, dict(params, roi_first=first, roi_end=end)) <= budget

    runs, first = [], 0
    while first < rois:
        end = longest_run(partial(fits, first), first, rois)
        runs.append((first, end))
        first = end
    runs = runs or [(0, 0)]
    passes = []
    for k, (first, end) in enumerate(runs):
        first_run, last_run = k == 0, k == len(runs) - 1
        roles = ("input_gradient", "argmax", "bins", "mask", "output_gradient" if last_run else None,
                 None if first_run and last_run else "acc")
        passes.append(Pass(ROI_POOL_GRAD, roles, sorted_constants({**base, "FIRST": first_run, "LAST": last_run}),
                           dict(params, roi_first=first, roi_end=end), flat_grid(total, wg_x)))   # (no Split)
    scratch = (("acc", TensorDesc(DataType.UINT32, (n, c, in_h * in_w))),) if len(runs) > 1 else ()
    return tuple(passes), scratch


@register("roi_pool_grad")
def _roi_pool_grad_program(desc, tuning: Tuning) -> Program:
    """ROI pooling's argmax of every bin into scratch (the forward binned pass, writing only
    indices), the masks of the ROIs reaching each tile of the input, then the gather adding
    each bin's dy at its argmax, block by block, in runs of the ROIs carrying the sums where
    there are more than one invocation may visit."""
    forward, wg_x = desc.forward, tuning.flat_workgroup
    bins_pass, table = _roi_bins_pass(forward, wg_x)
    argmax, argmax_scratch = argmax_passes(forward, {"ROI": True}, tuning)
    grouped = roi_channels_walk(argmax, forward.input.sizes[1], tuning)   # (the program runs whole only)
    argmax = argmax if grouped is None else (grouped,)
    n, _, in_h, in_w = desc.output_gradient.sizes
    rois = desc.roi.sizes[2]
    tiles = tile_layout(n, in_h, in_w, rois)
    masks = n * tiles["tiles"] * tiles["mask_words"]
    pooled_h, pooled_w = desc.pooled_size
    mask_pass = Pass(ROI_POOL_TILES, ("bins", "mask"), sorted_constants({"WG_X": wg_x}),
                     {"total": masks, "rois": rois, "pooled_h": pooled_h, "pooled_w": pooled_w, **tiles},
                     flat_grid(masks, wg_x))
    scratch = (("bins", table),) + argmax_scratch + (("mask", TensorDesc(DataType.UINT32, (1, 1, masks))),)
    first = (bins_pass,) + argmax + (mask_pass,)
    gathers, gather_scratch = _roi_gather_passes(desc, wg_x, tiles, tuning.roi_pool_grad_channel_lanes,
                                                 tuning.loop_budget)
    # The argmax runs over ROIs and the gather over images, which chunks of (n, c) planes
    # cannot both follow: run whole only.
    return Program(first + gathers, scratch=scratch + gather_scratch, whole_only=True)
