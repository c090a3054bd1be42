"""The forward fixed-window pooling kernels: an operator's accumulator (max_pool.wgsl,
avg_pool.wgsl, lp_pool.wgsl) under one of the window walks (common/window_walk*.wgsl):
"general" for any strides; "rows" when tensors are contiguous along W and "channels" when
contiguous along C (four outputs per invocation from 4-element chunk loads and stores);
"rows_tail" when only the input is contiguous along W (chunk loads, scalar stores);
"rows_any" the same for rows that start anywhere (chunks from scalar loads); "plane"
for global pooling (a reduction: workgroups reduce runs of each plane).  Windows longer than
an invocation may walk split into parts, merged by further passes (kernels/split.py)."""

from __future__ import annotations

import dataclasses
import math
from functools import partial
from typing import Optional

from ..dtypes import DataType
from ..tuning import Tuning
from .core import Kernel, Pass, Program, Slot, Split
from .grids import (GRID_LIBRARY, IN_SIZES, LINES_GRID, OUT_SIZES, as_3d, as_5d, contiguous_along, divisor_params,
                    fold_groups, lines_regrid, sorted_constants, stride_fields, strides_5d, tensor_stride_params,
                    tuned_lines_grid, window_constants)
from .registry import register
from .split import Accumulator, fewest_parts, iterations, loop_total, merge_kernel, merge_passes, partials_desc

_CHUNKED = (
    Slot("x", False, snippet="read4_{storage}.wgsl"),
    Slot("y", True, snippet="write4_{storage}.wgsl"),
    Slot("idx", True, snippet="write4_index_{storage}.wgsl"),
)
_PART = Slot("part", True, snippet="words_write.wgsl")  # a split walk's partial results
WALKS = {  # walk -> (its files in wgsl/common, its slots)
    "general": (("store_one.wgsl", "window_walk.wgsl", "window_walk_one.wgsl"),
                (Slot("x", False), Slot("y", True), Slot("idx", True), _PART)),
    "rows": (("window_walk_rows.wgsl", "rows_store4.wgsl"), _CHUNKED),
    "rows_tail": (("window_walk_rows.wgsl", "store_one.wgsl", "rows_store_tail.wgsl"),
                  (_CHUNKED[0], Slot("y", True), Slot("idx", True))),
    "rows_any": (("window_walk_rows.wgsl", "store_one.wgsl", "rows_store_tail.wgsl"),
                 (Slot("x", False, snippet="read_{storage}.wgsl read4_any.wgsl"), Slot("y", True), Slot("idx", True))),
    "channels": (("window_walk_channels.wgsl",), _CHUNKED),
    "plane": (("store_one.wgsl", "plane_lanes.wgsl", "plane_reduce.wgsl", "window_walk_plane.wgsl"),
              (_CHUNKED[0], Slot("y", True), Slot("idx", True), _PART)),
}
# The general walk's kernels besides one output per invocation ("general"): name -> entry point
GENERAL_ENTRIES = {"general_two": "window_walk_two.wgsl", "general_pairs": "window_walk_pairs.wgsl"}
CHUNKED_WALKS = ("rows", "rows_tail", "channels")  # the walks that need 4-element aligned tensors
ROWS_WALKS = ("rows", "rows_tail", "rows_any")  # window_walk_rows.wgsl's
SPLIT_WALKS = ("general", "plane")  # the walks that split windows longer than an invocation may walk
ROWS_MAX_CHUNKS = 8  # window_walk_rows.wgsl's span holds 32 elements
UNROLLED = 4  # window_walk.wgsl: windows written out up to this many taps per dimension
PAIR_SPAN = 8  # window_walk_pairs.wgsl's PAIR_WORDS (5) words hold a pair's row of up to 8 elements, at either parity
CHANNELS_WRITTEN_OUT = 6  # window_walk_channels.wgsl's WRITTEN_OUT: at most this many rows and columns


# Params of every walk (window_walk_pass); opaque_zero: common/as_written.wgsl's (always 0);
# chain_part: the general walk's part in a chained pass (window_walk.wgsl's CHAINED)
WALK_PARAMS = ("channels",) + IN_SIZES + OUT_SIZES + stride_fields("x", "y", "idx") + LINES_GRID + ("opaque_zero",)
# The plane walk's run and lanes per plane where they are not override constants
# (Tuning.shapes_in_params), in the declaration it shares with the rows and channels walks
# (0 there)
PLANE_RUN = ("span", "plane_lanes")


def _taps_walked(constants: dict, params: dict) -> tuple:
    """window_walk.wgsl: per dimension (D, H, W), the taps one invocation walks of a window
    (of its part): written out, the window size; looping, at most the part's share of the
    taps inside the input (ceil(in / dilation) at most)."""
    walked = []
    for axis in "DHW":
        taps, dilation = constants[f"K{axis}"], constants[f"L{axis}"]
        if taps <= UNROLLED:
            walked.append(taps)
            continue
        inside = min(taps, -(-params[f"in_{axis.lower()}"] // dilation))
        walked.append(-(-inside // constants.get(f"PARTS_{axis}", 1)))
    return tuple(walked)


def general_loops(constants: dict, params: dict) -> dict:
    """window_walk.wgsl's loops: a looping dimension's loop runs once per window plane or row
    that holds it, OUTPUTS windows per invocation."""
    d, h, w = _taps_walked(constants, params)
    outputs = constants.get("OUTPUTS", 1)
    loops = {"kd": 0, "kh": 0, "kw": 0}
    if constants["KD"] > UNROLLED:
        loops["kd"] = outputs * iterations(1, d)
    if constants["KH"] > UNROLLED:
        loops["kh"] = outputs * iterations(d, h)
    if constants["KW"] > UNROLLED:
        loops["kw"] = outputs * iterations(d * h, w)
    return loops


def _rows_walked(constants: dict) -> int:
    """The input rows the rows and channels walks visit per window plane."""
    return (constants["ROWS"] - 1) * constants["SH"] + (constants["KH"] - 1) * constants["LH"] + 1


def rows_loops(constants: dict, params: dict) -> dict:
    """window_walk_rows.wgsl's loops (fill_span_paired's, four_taps' per output row)."""
    planes, rows = constants["KD"], _rows_walked(constants)
    chunks, paired = constants["CHUNKS"], constants.get("PAIRED", False)
    return {
        "kd": iterations(1, planes), "r": iterations(planes, rows),
        "p": iterations(planes * rows, constants.get("PAIRS", 1)) if paired else 0,
        "j": iterations(planes * rows, chunks),
        "l": iterations(planes * rows * chunks, 4) if paired else 0,
        "kw": iterations(planes * rows * constants["ROWS"], constants["KW"]),
    }


def channels_loops(constants: dict, params: dict) -> dict:
    """window_walk_channels.wgsl's loops (none along H and W where WRITTEN_OUT)."""
    planes, rows = constants["KD"], _rows_walked(constants)
    columns = (constants["COLS"] - 1) * constants["SW"] + (constants["KW"] - 1) * constants["LW"] + 1
    if constants.get("WRITTEN_OUT", False):
        return {"kd": iterations(1, planes), "r": 0, "q": 0}
    return {"kd": iterations(1, planes), "r": iterations(planes, rows), "q": iterations(planes * rows, columns)}


def plane_lanes(constants: dict, params: dict) -> int:
    """The lanes per plane of a plane kernel: its override constant, or under
    ``Tuning.shapes_in_params`` its Params field (common/plane_lanes.wgsl)."""
    return constants.get("PLANE_LANES") or params["plane_lanes"]


def plane_loops(constants: dict, params: dict) -> dict:
    """common/plane_reduce.wgsl's loops: a lane's chunks of its run of the plane (SPAN
    elements, one chunk more where they straddle chunks; STEP per step, the rest one by one),
    the merge tree of its group."""
    lanes = plane_lanes(constants, params)
    # (SPAN and span absent: a plane in one run, the max gradient's)
    span = constants.get("SPAN") or params.get("span") or params["in_d"] * params["in_h"] * params["in_w"]
    step = constants.get("STEP", 1)
    chunks = -(-(span // 4 + 1) // lanes)
    one_by_one = {"q": iterations(1, chunks), "s": 0, "r": 0} if step == 1 else \
        {"q": 0, "s": iterations(1, chunks // step), "r": iterations(1, step - 1)}
    return dict(one_by_one, half=iterations(1, lanes.bit_length() - 1))


_WALK_LOOPS = {"general": general_loops, "rows": rows_loops, "rows_tail": rows_loops, "rows_any": rows_loops,
               "channels": channels_loops, "plane": plane_loops}


def _pooling_kernels(accumulator: Accumulator) -> dict:
    """The operator's kernel under each walk, and the merge of its split walks ("merge")."""
    shared = GRID_LIBRARY + ("window_constants.wgsl", "window_geometry.wgsl", "taps.wgsl")
    kernels = {}
    for walk, (walk_files, slots) in WALKS.items():
        partials = (accumulator.partials,) if walk in SPLIT_WALKS else ()
        params = WALK_PARAMS + (("chain_part",) if walk == "general" else PLANE_RUN)
        kernels[walk] = Kernel(accumulator.file, slots + accumulator.slots, "x",
                               library=accumulator.library + partials + shared + walk_files, params=params,
                               loops=_WALK_LOOPS[walk])
    # the general walk's other entry points (two outputs per invocation; 16-bit pairs sharing
    # words): kernels of their own, so that none holds the others' windows (window_walk_one.wgsl)
    general = kernels["general"]
    for name, entry in GENERAL_ENTRIES.items():
        kernels[name] = dataclasses.replace(general, library=tuple(
            entry if f == "window_walk_one.wgsl" else f for f in general.library))
    kernels["merge"] = merge_kernel(accumulator)
    return kernels


COMPENSATED_SUM = ("compensated_sum.wgsl", "as_written.wgsl")  # the library and what it needs
MAX = Accumulator("max_pool.wgsl", ("max_accumulator.wgsl",), "max_partials.wgsl", 4)
#: An average's divisor: its override constants (for average_divisor_constants' values) and,
#: for the gradients, the functions computing it
AVERAGE_DIVISOR = ("average_divisor_constants.wgsl", "average_divisor.wgsl", "as_written.wgsl")
AVERAGE = Accumulator("avg_pool.wgsl", COMPENSATED_SUM + AVERAGE_DIVISOR[:1], "sum_partials.wgsl", 3)
LP = Accumulator("lp_pool.wgsl", COMPENSATED_SUM + ("lp_power.wgsl",), "lp_partials.wgsl", 3)
MAX_POOL = _pooling_kernels(MAX)
AVERAGE_POOL = _pooling_kernels(AVERAGE)
LP_POOL = _pooling_kernels(LP)


def _row_span(window) -> tuple:
    """(LEAD, CHUNKS) of window_walk_rows.wgsl: where four outputs' taps start in their first
    4-element chunk, and how many chunks they span."""
    lead = -window.start_padding[-1] % 4
    return lead, (lead + 3 * window.strides[-1] + (window.window_size[-1] - 1) * window.dilations[-1]) // 4 + 1


def reads_pairs(desc) -> bool:
    """Whether window_walk_rows.wgsl reads x eight elements (two chunks) per load (PAIRED):
    16-bit x whose rows and planes hold whole pairs of chunks."""
    return desc.input.data_type.size == 2 and pair_aligned(desc.input)


def pair_aligned(t) -> bool:
    """Whether ``t``'s rows and planes hold whole pairs of 4-element chunks (W a multiple of
    8, every other stride too)."""
    in_w = as_5d(t.sizes, t.strides)[0][4]
    return in_w % 8 == 0 and all(st % 8 == 0 for a, st in strides_5d(t).items() if a != "w")


def _pair_constants(window, lead: int, chunks: int) -> dict:
    """PARITY and PAIRS of window_walk_rows.wgsl: whether the span's first chunk, c0 = column
    * SW - (PW + LEAD) / 4, is odd in every invocation (1), in none (0) or in some (2), and
    how many pairs of chunks hold the span (LEAD, CHUNKS: _row_span's)."""
    stride = window.strides[-1]
    parity = (-(window.start_padding[-1] + lead) // 4) % 2 if stride % 2 == 0 else 2
    return {"PARITY": parity, "PAIRS": (chunks + 1) // 2 if parity == 0 else (chunks + 2) // 2}


def pairs_fit(desc) -> bool:
    """Whether the general walk may compute two outputs per invocation from shared words
    (window_walk_pairs.wgsl): 16-bit x contiguous along W with its other strides even,
    windows written out along W whose pair of rows spans at most PAIR_SPAN elements."""
    window, strides = desc.window, strides_5d(desc.input)
    span = window.strides[-1] + (window.window_size[-1] - 1) * window.dilations[-1] + 1
    return desc.input.data_type.size == 2 and strides.get("w", 1) == 1 \
        and all(st % 2 == 0 for axis, st in strides.items() if axis != "w") \
        and window.window_size[-1] <= UNROLLED and span <= PAIR_SPAN


def plane_walk_fits(in_spatial: tuple, out_spatial: tuple, tuning: Tuning) -> bool:
    """Whether pooling each input plane to one output is the plane walk's: planes of any size
    with ``tuning.packed_planes`` (lanes sized to the plane), else planes of at least
    ``tuning.plane_lanes`` elements (a workgroup per plane: on smaller ones most of its lanes
    would idle: an H100, case C's 49-element planes, 24% of copy against 31% for one
    invocation per output)."""
    return all(o == 1 for o in out_spatial) and (tuning.packed_planes or math.prod(in_spatial) >= tuning.plane_lanes)


def plane_group_lanes(plane: int, planes: int, tuning: Tuning) -> int:
    """The lanes of the plane walk reducing each of ``planes`` planes of ``plane`` elements
    (common/plane_lanes.wgsl's PLANE_LANES): with ``tuning.packed_planes``, the fewest (a
    power of two, at most ``plane_lanes``) giving no lane more than ``plane_lane_chunks`` of
    the chunks a plane spans, doubled while the workgroups number fewer than
    ``plane_workgroups``; else a workgroup's."""
    workgroup = tuning.plane_lanes
    if not tuning.packed_planes:
        return workgroup
    chunks = plane // 4 + 1   # (at most: a plane starting between chunks spans one more)
    lanes = min(workgroup, 1 << (-(-chunks // tuning.plane_lane_chunks) - 1).bit_length())
    while lanes < workgroup and -(-planes * lanes // workgroup) < tuning.plane_workgroups:
        lanes *= 2
    return lanes


def flat_planes(t) -> bool:
    """Whether each (n, c) plane of ``t`` is contiguous (element e of a plane at offset e)."""
    sizes = as_5d(t.sizes, t.strides)[0]
    strides = strides_5d(t)
    return all(strides.get(axis, step) == step for axis, step in
               (("w", 1), ("h", sizes[4]), ("d", sizes[3] * sizes[4])))


def _covers_plane(desc, tuning: Tuning) -> bool:
    """Whether ``desc``'s one window covers each whole, contiguous input plane, for the plane
    walk."""
    window, in_spatial = desc.window, tuple(desc.input.sizes[2:])
    return tuple(window.window_size) == in_spatial and not any(window.start_padding) \
        and all(d == 1 for d in window.dilations) and flat_planes(desc.input) \
        and plane_walk_fits(in_spatial, desc.output.sizes[2:], tuning)


def _allowed_walks(desc, tuning: Tuning) -> dict:
    """walk -> a function saying whether ``desc``'s layout allows it, fastest first (the
    plane walk, the rows walk, the channels walk, the rows walk with scalar stores, the same
    from rows that start anywhere, the general walk).  A walk whose loops would run longer
    than ``tuning.loop_budget`` is not allowed (the general walk splits long windows)."""
    tensors = [t for t in (desc.input, desc.output, getattr(desc, "output_indices", None)) if t is not None]
    out_w, channels = as_5d(desc.output.sizes, desc.output.strides)[0][4], desc.input.sizes[1]
    span_fits = _row_span(desc.window)[1] <= ROWS_MAX_CHUNKS

    def fits(walk: str) -> bool:  # (every operator's walks loop alike: max pooling's kernels stand in)
        p = window_walk_pass(MAX_POOL, desc, ("input", "output", None), tuning, walk)
        return loop_total(p.kernel, p.constants, p.params) <= tuning.loop_budget

    return {
        "plane": lambda: _covers_plane(desc, tuning),
        "rows": lambda: out_w % 4 == 0 and span_fits and contiguous_along(tensors, "w") and fits("rows"),
        "channels": lambda: channels % 4 == 0 and contiguous_along(tensors, "c") and fits("channels"),
        "rows_tail": lambda: out_w >= 4 and span_fits and contiguous_along(tensors[:1], "w") and fits("rows_tail"),
        "rows_any": lambda: out_w >= 4 and span_fits and strides_5d(desc.input).get("w", 1) == 1
        and fits("rows_any"),
        "general": lambda: True,
    }


def walk_for(desc, tuning: Tuning) -> str:
    """The walk of ``tuning.walk`` where ``desc``'s layout allows it (else "general"), or
    for "auto" the fastest one it allows (see _allowed_walks) among those the tuning admits
    (_admitted)."""
    allows = _allowed_walks(desc, tuning)
    if tuning.walk != "auto":
        return tuning.walk if allows[tuning.walk]() else "general"
    return next(walk for walk, fits in allows.items() if _admitted(walk, tuning) and fits())


def _admitted(walk: str, tuning: Tuning) -> bool:
    """Whether "auto" may take ``walk`` under ``tuning``: the plane walk with ``plane_walk``,
    the rows walks with ``rows_walks`` (and from rows that start anywhere, ``any_rows``)."""
    if walk == "plane":
        return tuning.plane_walk
    if walk in ROWS_WALKS:
        return tuning.rows_walks and (walk != "rows_any" or tuning.any_rows)
    return True


def unaligned_walk(desc, tuning: Tuning) -> str:
    """The walk of the calls whose tensors do not start where a chunked walk needs them
    (``window_walk_program``'s fallback): the rows walk from rows that start anywhere where
    the tuning and layout allow it, else the general walk."""
    allows = _allowed_walks(desc, tuning)
    return "rows_any" if tuning.walk == "auto" and _admitted("rows_any", tuning) and allows["rows_any"]() \
        else "general"


def _plane_params(first: int, planes: int) -> dict:
    """The grid params of the plane walk: only its units count (a group of lanes each: a
    plane, or a part of one)."""
    return {"columns": 1, "lines": 1, "line_groups": 1, "planes": planes, "plane_origin": first,
            **divisor_params("columns", 1), **divisor_params("lines", 1)}


def plane_regrid(groups: int, first: int, count: int) -> tuple:
    """The plane walk over units [first, first + count), ``groups`` to a workgroup."""
    return {}, _plane_params(first, count), fold_groups(-(-count // groups))


def window_walk_pass(kernels_by_walk: dict, desc, roles: tuple, tuning: Tuning, walk: str = "general",
                     parts: tuple = (), *, operands: tuple = (), chain_part: Optional[int] = None,
                     pairs: bool = False, **constants) -> Pass:
    """A pass of a window-walk kernel: `walk` picks the walk (see walk_for); the general
    walk computes ``tuning.outputs_per_invocation`` neighbouring outputs along W per
    invocation (window_walk.wgsl's OUTPUTS), or with ``parts`` (along D, H, W) one part
    of one output's window (one output per invocation, however many parts); the plane walk
    with ``parts`` (one count), a part of a plane per workgroup (split walks: where they
    have more than one part, their roles name the partial results' scratch "part" fourth).
    ``chain_part``: the general walk's part ``chain_part`` of every window, continuing the
    accumulators the pass of the part before saved (CHAINED).  ``pairs``: the general walk's
    two outputs per invocation from shared words (window_walk_pairs.wgsl: where pairs_fit).
    ``operands``: the roles of the accumulator's operand slots (Accumulator.operands; None:
    absent)."""
    workgroup = tuning.lines_workgroup
    walk_slots = len(WALKS[walk][1])
    roles = (tuple(roles) + (None,) * 4)[:walk_slots]  # (only split walks save parts)
    roles += tuple(operands) + (None,) * (len(kernels_by_walk[walk].slots) - walk_slots - len(operands))
    in_sizes, _ = as_5d(desc.input.sizes, desc.input.strides)
    n, c, out_d, out_h, out_w = as_5d(desc.output.sizes, desc.output.strides)[0]
    if walk in ROWS_WALKS:  # (ow / 4, oh / ROWS, (n, c, od)): output rows share input rows
        rows = min(tuning.rows_per_invocation, out_h)
        grid_constants, grid_params, grid = tuned_lines_grid(-(-out_w // 4), -(-out_h // rows), n * c * out_d, tuning)
        constants["LEAD"], constants["CHUNKS"] = _row_span(desc.window)
        constants["ROWS"] = rows
        if walk != "rows":   # rows_store_tail.wgsl: 16-bit outputs contiguous along W stored in pairs
            constants["PAIR_STORES"] = desc.output.data_type.size == 2 and strides_5d(desc.output).get("w") == 1
        if walk != "rows_any" and reads_pairs(desc):
            constants.update(PAIRED=True, **_pair_constants(desc.window, constants["LEAD"], constants["CHUNKS"]))
    elif walk == "plane":  # a group of lanes per (n, c, part), numbered flat
        count = parts[0] if parts else 1
        lanes = plane_group_lanes(math.prod(in_sizes[2:]), n * c, tuning)
        groups = tuning.plane_lanes // lanes
        grid_constants, grid_params = {}, _plane_params(0, n * c * count)
        grid = fold_groups(-(-n * c * count // groups))
        plane_params = {"span": _plane_span(desc, count), "plane_lanes": lanes}
        grid_constants.update(WG_X=tuning.plane_lanes, PARTS=count)
        if not tuning.shapes_in_params:  # (else window_walk_plane.wgsl reads them from Params)
            grid_constants.update(PLANE_LANES=lanes, SPAN=plane_params["span"])
        if tuning.plane_chunks > 1:  # (STEP 1: the override's default)
            grid_constants["STEP"] = tuning.plane_chunks
    elif walk == "channels":  # (c / 4, ow / COLS, (n, od, oh / ROWS)): 2 x 2 outputs share loads
        # ... where windows overlap.  Disjoint ones share none, and a block of them only adds
        # registers: case B (2x2 stride 2) on lavapipe, one output per invocation made average
        # and Lp 1.2x faster, max 1.1x, but max with indices 0.93x (a block shares its index
        # arithmetic), so that keeps its blocks.
        _, extent_h, extent_w = as_3d(desc.window.extents, 1)
        _, stride_h, stride_w = as_3d(desc.window.strides, 1)
        indices = getattr(desc, "output_indices", None) is not None
        rows = 2 if out_h > 1 and (stride_h < extent_h or indices) else 1
        cols = 2 if out_w > 1 and (stride_w < extent_w or indices) else 1
        grid_constants, grid_params, grid = tuned_lines_grid(c // 4, -(-out_w // cols), n * out_d * -(-out_h // rows),
                                                             tuning)
        constants["ROWS"], constants["COLS"] = rows, cols
        spans = ((rows - 1) * stride_h + extent_h, (cols - 1) * stride_w + extent_w)
        if tuning.channels_written_out and max(spans) <= CHANNELS_WRITTEN_OUT:
            constants["WRITTEN_OUT"] = True
    else:  # (ow / OUTPUTS, oh, ((n, c, od), part)); chained: (ow, oh, (n, c, od))
        count = math.prod(parts or (1, 1, 1))
        paired = pairs and not parts and out_w > 1   # (window_walk_program)
        outputs = 1 if parts else 2 if paired else min(tuning.outputs_per_invocation, out_w)  # (split: one each)
        grid_constants, grid_params, grid = tuned_lines_grid(-(-out_w // outputs), out_h,
                                                             n * c * out_d * (1 if chain_part is not None else count),
                                                             tuning)
        constants["OUTPUTS"] = outputs
        if count > 1:
            constants.update(PARTS=count, **{f"PARTS_{axis}": p for axis, p in zip("DHW", parts)})
        if chain_part is not None:
            constants["CHAINED"] = True
    # chunks (see chunked) are runs of planes: (n, c, od), or (n, od, oh) for channels
    per_plane = grid_params["planes"] // (n if walk == "channels" else n * c)
    regrid = partial(plane_regrid, groups) if walk == "plane" else \
        partial(lines_regrid, grid_params["columns"], grid_params["lines"], workgroup,
                flat=grid_constants.get("FLAT", False))
    split = Split(per_plane, regrid, whole_n=walk == "channels", whole=tuple(r for r in operands if r is not None))
    constants.update(grid_constants, **_walked_window_constants(desc, walk, tuning, constants))
    params = {
        "channels": c,
        "in_d": in_sizes[2], "in_h": in_sizes[3], "in_w": in_sizes[4],
        "out_d": out_d, "out_h": out_h, "out_w": out_w,
        **grid_params,
    }
    if walk == "general":
        params["chain_part"] = chain_part or 0
    else:
        params.update(plane_params if walk == "plane" else dict.fromkeys(PLANE_RUN, 0))
    indices = getattr(desc, "output_indices", None)
    for name, tensor in (("x", desc.input), ("y", desc.output), ("idx", indices)):
        params.update(tensor_stride_params(name, tensor))
    kernel = kernels_by_walk[walk]
    if walk == "general" and constants["OUTPUTS"] == 2:
        kernel = kernels_by_walk["general_pairs" if paired else "general_two"]
    return Pass(kernel, roles, sorted_constants(constants), params, grid, split)


def _walked_window_constants(desc, walk: str, tuning: Tuning, constants: dict) -> dict:
    """The window's override constants for a walk over ``desc`` (and its merges), the
    accumulator's ``constants`` given: none in the plane walk's shape-generic form, where the
    window is the plane, whose size the walk reads from Params, and a padded average's
    divisor is its count of taps (the same number: INCLUDE_PADDING off), so that a new size
    builds no pipeline."""
    if walk == "plane" and tuning.shapes_in_params and _plane_divisor_counts(constants):
        return {"INCLUDE_PADDING": False} if "INCLUDE_PADDING" in constants else {}
    return window_constants(desc.window)


def _plane_divisor_counts(constants: dict) -> bool:
    """Whether an average's divisor over a whole plane (avg_pool.wgsl) is its count of taps
    whatever INCLUDE_PADDING says: no divisor clipped to a counted end padding, none wider
    than u32.  (Other accumulators have no such constants.)"""
    return not constants.get("CLIP_DIVISOR", False) and not constants.get("WIDE_DIVISOR", False)


def _plane_span(desc, parts: int) -> int:
    """The elements of a plane each workgroup of the plane walk reduces (SPAN): the plane in
    ``parts`` runs, a multiple of 4 elements (whole chunks where the plane starts aligned)."""
    plane = math.prod(desc.input.sizes[2:])
    return (-(-plane // parts) + 3) // 4 * 4 if parts > 1 else plane


def _plane_parts(desc, tuning: Tuning) -> int:
    """How many runs the plane walk cuts each plane into: runs of at most
    ``tuning.plane_part`` elements, and few enough chunks per lane for the loop budget; where
    planes take a workgroup each and are fewer than ``tuning.plane_workgroups``, more runs,
    of at least ``plane_lane_chunks`` chunks per lane."""
    plane, planes = math.prod(desc.input.sizes[2:]), desc.input.sizes[0] * desc.input.sizes[1]
    lanes = plane_group_lanes(plane, planes, tuning)
    longest = min(tuning.plane_part, 4 * lanes * (tuning.loop_budget - 2) - 4)
    parts = -(-plane // longest)
    if lanes == tuning.plane_lanes and planes * parts < tuning.plane_workgroups:  # (a chunk per lane at least)
        parts = max(parts, min(-(-tuning.plane_workgroups // planes), plane // (4 * lanes)))
    return parts


def _general_parts(kernel: Kernel, whole: Pass, budget: int) -> tuple:
    """The fewest parts along D, H, W of the general walk's windows (all 1: unsplit) for its
    loops to fit ``budget``."""
    base = dict(whole.constants, OUTPUTS=1)

    def trips(parts: tuple) -> int:
        cut = dict(base, **{f"PARTS_{axis}": p for axis, p in zip("DHW", parts)})
        return loop_total(kernel, cut, whole.params)

    counts = tuple(size if size > UNROLLED else 0 for size in _taps_walked(base, whole.params))
    return fewest_parts(trips, counts, budget)


def window_walk_passes(kernels_by_walk: dict, accumulator: Accumulator, desc, roles: tuple, tuning: Tuning,
                       walk: str, operands: tuple = (), **constants) -> tuple:
    """(the passes computing ``desc``'s outputs into ``roles`` (input, y, idx) on `walk`,
    the scratch they need): one pass, or where the general walk's window has more taps
    than ``tuning.loop_budget`` allows, or the plane walk's plane more than one
    workgroup's run, the split walk and its merge passes (an ordered accumulator's
    general walk: one chained pass per part).  ``operands``: the roles of the accumulator's
    operand slots."""
    whole = window_walk_pass(kernels_by_walk, desc, roles, tuning, walk, operands=operands, **constants)
    if walk == "general" and loop_total(whole.kernel, whole.constants, whole.params) > tuning.loop_budget:
        parts = _general_parts(kernels_by_walk[walk], whole, tuning.loop_budget)
    elif walk == "plane" and _plane_parts(desc, tuning) > 1:
        parts = (_plane_parts(desc, tuning),)
    else:
        return (whole,), ()
    if math.prod(parts) == 1:  # (the general walk's windows fit once it computes one output per invocation)
        one = window_walk_pass(kernels_by_walk, desc, roles, tuning, walk, parts, operands=operands, **constants)
        return (one,), ()
    out_sizes = as_5d(desc.output.sizes, desc.output.strides)[0]
    if accumulator.ordered:  # (only the general walk: walk_for never gives an ordered accumulator the plane walk)
        chain = tuple(window_walk_pass(kernels_by_walk, desc, roles + ("part",), tuning, walk, parts, operands=operands,
                                       chain_part=p, **constants) for p in range(math.prod(parts)))
        return chain, (("part", partials_desc(out_sizes, 1, accumulator.words)),)
    walk_pass = window_walk_pass(kernels_by_walk, desc, roles + ("part",), tuning, walk, parts, operands=operands,
                                 **constants)
    merge_params = {key: walk_pass.params[key] for key in ("channels",) + IN_SIZES + OUT_SIZES + stride_fields("y", "idx")}
    merge_constants = {**constants, **_walked_window_constants(desc, walk, tuning, constants)}
    merges, scratch = merge_passes(kernels_by_walk["merge"], accumulator, out_sizes, math.prod(parts), roles[1:],
                                   merge_params, merge_constants, tuning.lines_workgroup, tuning.loop_budget,
                                   value_type=desc.input.data_type, operands=operands)
    part = partials_desc(out_sizes, math.prod(parts), accumulator.words)
    return (walk_pass,) + merges, (("part", part),) + scratch


def window_walk_program(kernels_by_walk: dict, accumulator: Accumulator, desc, roles: tuple, tuning: Tuning,
                        walk: Optional[str] = None, operands: tuple = (), **constants) -> Program:
    """The passes of window_walk_passes on `walk` (default: walk_for's), with unaligned_walk's
    as the fallback for calls whose tensor offsets are not 4-element aligned; the
    general walk with ``tuning.paired_words`` two outputs per invocation from shared words
    where pairs_fit, the plain general walk its fallback for inputs at odd offsets."""
    walk = walk or walk_for(desc, tuning)
    passes, scratch = window_walk_passes(kernels_by_walk, accumulator, desc, roles, tuning, walk, operands, **constants)
    if walk == "general" and len(passes) == 1 and tuning.paired_words and pairs_fit(desc):
        # two outputs per invocation from shared words, where x's rows start at even elements
        paired = window_walk_pass(kernels_by_walk, desc, roles, tuning, walk, operands=operands, pairs=True,
                                  **constants)
        if loop_total(paired.kernel, paired.constants, paired.params) <= tuning.loop_budget:
            return Program((paired,), aligned=roles[:1], fallback=Program(passes), aligned_elements=2)
    if walk not in CHUNKED_WALKS:
        return Program(passes, scratch=scratch)
    unaligned = unaligned_walk(desc, tuning)
    fallback = Program(*window_walk_passes(kernels_by_walk, accumulator, desc, roles, tuning,
                                           unaligned if unaligned in kernels_by_walk else "general", operands,
                                           **constants))
    aligned = roles[:1] if walk == "rows_tail" else tuple(r for r in roles if r is not None)
    pairs = walk in ("rows", "rows_tail") and reads_pairs(desc)
    return Program(passes, scratch=scratch, aligned=aligned, fallback=fallback, aligned_elements=8 if pairs else 4)


@register("max_pool")
def max_pool_program(desc, tuning: Tuning) -> Program:
    indices = "output_indices" if getattr(desc, "output_indices", None) is not None else None
    return window_walk_program(MAX_POOL, MAX, desc, ("input", "output", indices), tuning)


def average_divisor_constants(desc) -> dict:
    """The override constants of an average's divisor (avg_pool.wgsl, and for the gradients
    common/average_divisor.wgsl): INCLUDE_PADDING; with ``counted_end_padding`` short of the
    end padding (ceil_mode's extension), CLIP_DIVISOR and the counted end padding in ED, EH,
    EW; WIDE_DIVISOR where padding counts and a window has more than 2^32 - 1 elements; or
    DIVISOR_OVERRIDE."""
    if desc.divisor_override is not None:  # include_padding is irrelevant: the cheaper count
        return {"INCLUDE_PADDING": True, "DIVISOR_OVERRIDE": desc.divisor_override}
    constants = {"INCLUDE_PADDING": desc.include_padding}
    if desc.include_padding and desc.window.element_count > 2**32 - 1:
        constants["WIDE_DIVISOR"] = True
    if desc.include_padding and desc.counted_end_padding != desc.window.end_padding:
        constants["CLIP_DIVISOR"] = True
        constants.update(zip(("ED", "EH", "EW"), as_3d(desc.counted_end_padding, 0)))
    return constants


@register("average_pool")
def average_pool_program(desc, tuning: Tuning) -> Program:
    return window_walk_program(AVERAGE_POOL, AVERAGE, desc, ("input", "output", None), tuning,
                               **average_divisor_constants(desc))


LP_PLAIN_SUM_TAPS = 9  # lp_pool.wgsl: windows up to this many taps sum without compensation
LP_UNSCALED_FLOAT16_MAX_P = 4  # lp_pool.wgsl: float16 |x|^p stays in f32's normal range


def lp_constants(desc) -> dict:
    """lp_pool.wgsl's override constants for ``desc`` (an Lp pooling description)."""
    compensated = math.prod(desc.window.window_size) > LP_PLAIN_SUM_TAPS
    scaled = not (desc.input.data_type == DataType.FLOAT16 and desc.p <= LP_UNSCALED_FLOAT16_MAX_P)
    return {"P": desc.p, "COMPENSATED": compensated, "SCALED": scaled}


@register("lp_pool")
def _lp_pool_program(desc, tuning: Tuning) -> Program:
    return window_walk_program(LP_POOL, LP, desc, ("input", "output", None), tuning, **lp_constants(desc))
