"""Max unpooling: deterministic winner selection (integer atomicMax), then a gather (each
output element copies its winner) or, into dense outputs, a scatter (each winner copies
itself); or (``Tuning.unpool_gather``, on output planes of at least
``Tuning.unpool_gather_plane`` elements) a gather in which each output element finds its
winner among the input elements whose band holds it (common/unpool_band.wgsl), the atomic
pick kept for the strays.  Its gradient: the same winners, then a gather over dx (each input
element reads dy where it won)."""

from __future__ import annotations

import math
from dataclasses import replace
from functools import partial

from ..dtypes import DataType
from ..tuning import Tuning
from ..tensor_desc import TensorDesc
from .chunking import max_offset
from .core import Kernel, Pass, Program, Slot, Split
from .grids import (GRID_LIBRARY, IN_SIZES, LINES_GRID, OUT_SIZES, as_5d, contiguous_along, divisor_fields, divisor_params,
                    fold_groups, lines_regrid, sorted_constants, stride_fields, strides_5d, tensor_stride_params,
                    tuned_lines_grid)
from .registry import register
from .split import iterations


def _unpool_source_kernel(file: str, slots: tuple, value_slot: str, chunks: bool, params: tuple,
                          library: tuple = ()) -> Kernel:
    """A pass over input elements (common/unpool_source.wgsl), reading the indices one by one
    or (``chunks``) in 4-element chunks."""
    idx = Slot("idx", False, snippet="read4_index_{storage}.wgsl" if chunks else "")
    source = GRID_LIBRARY + ("unpool_source.wgsl", "unpool_indices4.wgsl" if chunks else "unpool_indices1.wgsl")
    return Kernel(file, (idx,) + slots, value_slot=value_slot, library=source + library, params=params,
                  loops=_no_loops)


def _no_loops(constants: dict, params: dict) -> dict:
    return {}  # (the passes over input elements write their four elements out)


# The winner slots (common/unpool_slots.wgsl): divide() by the output's sizes, y's strides.
_OUTPUT_DIVISORS = divisor_fields("out_w", "out_h", "out_d", "channels")
_SLOTS = ("output_coordinates.wgsl", "unpool_slots.wgsl")
MAX_UNPOOL_WINNERS, MAX_UNPOOL_WINNERS_CHUNKS = (
    _unpool_source_kernel("max_unpool_winners.wgsl", (Slot("winner", True, snippet="atomic_b32.wgsl"),), "idx", chunks,
                          # out_first, out_count: the output elements whose winners a dispatch picks
                          IN_SIZES + stride_fields("idx", "y") + _OUTPUT_DIVISORS + ("out_first", "out_count")
                          + LINES_GRID, _SLOTS)
    for chunks in (False, True))
MAX_UNPOOL_SCATTER, MAX_UNPOOL_SCATTER_CHUNKS = (
    _unpool_source_kernel(
        "max_unpool_scatter.wgsl", (Slot("winner", True, snippet="atomic_b32.wgsl"), Slot("x", False), Slot("y", True)),
        "x", chunks,
        # out_first, out_count: the whole output (this pass does not run in chunks)
        IN_SIZES + stride_fields("idx", "x", "y") + _OUTPUT_DIVISORS + ("out_first", "out_count") + LINES_GRID,
        _SLOTS)
    for chunks in (False, True))
# The gather (Tuning.unpool_gather): the strays into the winner scratch, marking their planes
# in `flags` (one word per (n, c) plane), then the gather over the output.
MAX_UNPOOL_STRAYS, MAX_UNPOOL_STRAYS_CHUNKS = (
    _unpool_source_kernel(
        "max_unpool_strays.wgsl",
        (Slot("winner", True, snippet="atomic_b32.wgsl"), Slot("flags", True, snippet="atomic_b32.wgsl")), "idx", chunks,
        IN_SIZES + stride_fields("idx") + _OUTPUT_DIVISORS + ("out_first", "out_count") + LINES_GRID,
        ("output_coordinates.wgsl", "unpool_band.wgsl"))
    for chunks in (False, True))


def _gather_kernel(chunks: bool, run4: bool, along_w: bool = False) -> Kernel:
    """max_unpool_gather.wgsl reading the candidates' indices one by one or (``chunks``,
    along C) four channels per load, writing runs of one element or (``run4``) four, their
    stray winners four per load where the run lies along W (``along_w``)."""
    strays4 = run4 and along_w
    return Kernel(
        "max_unpool_gather.wgsl",
        (Slot("x", False), Slot("idx", False, snippet="read4_index_{storage}.wgsl" if chunks else ""),
         Slot("flags", False), Slot("winner", True, snippet="take4_b32.wgsl" if strays4 else "take_b32.wgsl"),
         Slot("y", True, snippet="write4_{storage}.wgsl" if run4 else "")),
        value_slot="x",
        library=GRID_LIBRARY + ("unpool_band.wgsl", "unpool_candidates4.wgsl" if chunks else "unpool_candidates1.wgsl",
                                "unpool_strays4.wgsl" if strays4 else "unpool_strays1.wgsl",
                                "unpool_store4.wgsl" if run4 else "unpool_store1.wgsl"),
        params=divisor_fields("in_w", "in_h", "in_d") + ("out_w",) + divisor_fields("out_h", "out_d", "channels")
        + stride_fields("idx", "x", "y")
        + LINES_GRID,
        loops=_no_loops,
    )


MAX_UNPOOL_GATHER = _gather_kernel(False, False)
MAX_UNPOOL_GATHER_RUNS = _gather_kernel(False, True)
MAX_UNPOOL_GATHER_ROWS = _gather_kernel(False, True, along_w=True)
MAX_UNPOOL_GATHER_CHUNKS = _gather_kernel(True, True)
ZERO_FILL = Kernel("zero_fill.wgsl", (Slot("y", True, snippet="write4_{storage}.wgsl"),), value_slot="y",
                   params=("quads",),  # the element count / 4 (a multiple of 4)
                   loops=lambda constants, params: {"k": iterations(1, constants["QUADS"])})
# Inputs larger than a binding are read in ranges (chunked; unpool_walk.wgsl only): a
# dispatch copies winners j in [source_first, source_first + source_count); with `zeros` it
# writes the type's zero where there is no winner, with `reset` it clears the winners.
UNPOOL_PARAMS = ("channels",) + IN_SIZES + OUT_SIZES + stride_fields("x", "y") + LINES_GRID \
    + ("source_first", "source_count", "zeros", "reset")
MAX_UNPOOL = Kernel(
    "max_unpool.wgsl", (Slot("x", False), Slot("winner", True, snippet="take_b32.wgsl"), Slot("y", True)),
    value_slot="x", library=GRID_LIBRARY + ("unpool_walk.wgsl",), params=UNPOOL_PARAMS, loops=_no_loops,
)
# The gradient's gather over dx (max_unpool_grad.wgsl): out_* dy's sizes, divide() by those
# its dy_offset divides by; dy_count: dy's elements (an index at or past it lies outside);
# out_first, out_count: the dy elements a dispatch gathers; zeros: whether it also zeroes dx
# where the index lies outside dy.
MAX_UNPOOL_GRAD = _unpool_source_kernel(
    "max_unpool_grad.wgsl",
    (Slot("winner", True, snippet="atomic_b32.wgsl"), Slot("dy", False), Slot("dx", True)), "dy", False,
    IN_SIZES + stride_fields("idx", "dy", "dx") + divisor_fields("out_w", "out_h", "out_d", "channels")
    + ("dy_count", "out_first", "out_count", "zeros") + LINES_GRID, ("output_coordinates.wgsl",))
MAX_UNPOOL_ROWS = Kernel(
    "max_unpool.wgsl",
    (Slot("x", False), Slot("winner", True, snippet="take4_b32.wgsl"), Slot("y", True, snippet="write4_{storage}.wgsl")),
    value_slot="x", library=GRID_LIBRARY + ("unpool_walk_rows.wgsl",), params=UNPOOL_PARAMS, loops=_no_loops,
)


@register("max_unpool")
def _max_unpool_program(desc, tuning: Tuning) -> Program:
    x, indices, y = desc.input, desc.indices, desc.output
    workgroup = tuning.lines_workgroup
    n, c, in_d, in_h, in_w = as_5d(x.sizes, x.strides)[0]
    _, _, out_d, out_h, out_w = as_5d(y.sizes, y.strides)[0]
    in_columns = -(-in_w // 4)  # common/unpool_source.wgsl: four input elements per invocation
    in_constants, in_params, in_grid = tuned_lines_grid(in_columns, in_h, n * c * in_d, tuning)
    sizes = {"channels": c, "in_d": in_d, "in_h": in_h, "in_w": in_w}
    out_plane, in_plane = out_d * out_h * out_w, in_d * in_h * in_w
    # the passes over input elements (common/unpool_source.wgsl)
    source_constants = {**in_constants, "WIDE_INDICES": indices.data_type == DataType.UINT64}
    source_params = {**sizes, **tensor_stride_params("idx", indices), **tensor_stride_params("y", y),
                     **divisor_params("out_d", out_d), **divisor_params("out_h", out_h),
                     **divisor_params("out_w", out_w), **divisor_params("channels", c),
                     **in_params, **_target_range(out_plane, 0, n * c)}
    winners = Pass(
        MAX_UNPOOL_WINNERS, ("indices", "winner"), sorted_constants(source_constants), source_params, in_grid,
        # indices scatter anywhere: the winners of a chunk of output planes are picked over
        # every input plane
        Split(in_d, partial(lines_regrid, in_columns, in_h, workgroup, flat=in_constants.get("FLAT", False)),
              scatter="winner",
              filter=partial(_target_range, out_plane)),
    )

    def write(kernel: Kernel, columns: int) -> Pass:
        constants, grid_params, grid = tuned_lines_grid(columns, out_h, n * c * out_d, tuning)
        constants["PACKED_INPUT"] = x.is_packed
        params = {**sizes, "out_d": out_d, "out_h": out_h, "out_w": out_w,
                  **tensor_stride_params("x", x), **tensor_stride_params("y", y), **grid_params,
                  **_source_range(in_plane, 0, n * c, True, True)}
        # each output element copies its winner's input element, anywhere: only the general
        # walk copies winners in ranges (for inputs larger than a binding)
        split = Split(out_d, partial(lines_regrid, columns, out_h, workgroup, flat=constants.get("FLAT", False)),
                      gather="input",
                      filter=partial(_source_range, in_plane), ranged=kernel is MAX_UNPOOL)
        return Pass(kernel, ("input", "winner", "output"), sorted_constants(constants), params, grid, split)

    # The winner scratch starts zero-filled and the last pass (write or scatter) leaves it
    # zeroed again.
    scratch = (("winner", TensorDesc(DataType.UINT32, y.sizes)),)
    general = Program((winners, write(MAX_UNPOOL, out_w)), scratch=scratch)
    if tuning.unpool_gather and out_plane >= tuning.unpool_gather_plane:
        return _gather_program(desc, tuning, general)
    # Indices contiguous along W are read in 4-element chunks where they start at a multiple
    # of 4 elements (else the general program runs).
    chunks = contiguous_along([indices], "w")
    source_kernels = (MAX_UNPOOL_WINNERS_CHUNKS, MAX_UNPOOL_SCATTER_CHUNKS) if chunks else \
        (MAX_UNPOOL_WINNERS, MAX_UNPOOL_SCATTER)
    fast_winners = replace(winners, kernel=source_kernels[0])
    aligned = ("indices",) if chunks else ()
    if max_offset(y) + 1 == y.element_count and y.element_count % 4 == 0:
        # A dense output (any order of its dimensions): zero it whole in 4-element chunks,
        # then only the winners write, walking the input, not the (larger) output and its
        # whole scratch (with the grid and index chunks above, on lavapipe case A 1.8x
        # faster, channels-last 3x; whole tensors only: each chunk of a scattered output
        # would walk the whole input).  Channels-last indices: runs of four channels
        # (ALONG_C), neighbouring lanes on neighbouring elements.
        along_c = c >= 4 and c % 4 == 0 and contiguous_along([indices], "c")
        if along_c:
            grid_constants, grid_params, in_grid = tuned_lines_grid(c // 4, in_w, n * in_d * in_h, tuning)
            source_constants = {**grid_constants, "WIDE_INDICES": source_constants["WIDE_INDICES"], "ALONG_C": True}
            source_params = {**source_params, **grid_params}
            source_kernels, aligned = (MAX_UNPOOL_WINNERS_CHUNKS, MAX_UNPOOL_SCATTER_CHUNKS), ("indices",)
        # the winners' slots at the output elements' offsets where y is in another order
        # (common/unpool_slots.wgsl): both passes the same
        source_constants = sorted_constants({**source_constants, "SLOTS_AT_OFFSETS": not y.is_packed})
        fast_winners = Pass(source_kernels[0], ("indices", "winner"), source_constants, source_params, in_grid)
        scatter = Pass(source_kernels[1], ("indices", "winner", "input", "output"), source_constants,
                       {**source_params, **tensor_stride_params("x", x)}, in_grid)
        sparse = Program((_zero_fill_pass(y, tuning.flat_workgroup), fast_winners, scatter), scratch=scratch, whole_only=True)
        return replace(sparse, aligned=("output",) + aligned, fallback=general)
    if out_w % 4 == 0 and contiguous_along([y], "w"):
        rows = Program((fast_winners, write(MAX_UNPOOL_ROWS, out_w // 4)), scratch=scratch)
        return replace(rows, aligned=("output",) + aligned, fallback=general)
    if chunks:
        return Program((fast_winners, general.passes[1]), scratch=scratch, aligned=aligned, fallback=general)
    return general


def _zero_fill_pass(y: TensorDesc, wg_x: int, role: str = "output") -> Pass:
    """zero_fill.wgsl over the dense tensor ``y`` (its element count a multiple of 4)."""
    quads_per_lane = 4
    quads = y.element_count // 4
    return Pass(ZERO_FILL, (role,), sorted_constants({"WG_X": wg_x, "QUADS": quads_per_lane}),
                {"quads": quads}, fold_groups(math.ceil(quads / (wg_x * quads_per_lane))))


def band(size_in: int, size_out: int) -> tuple:
    """(stride, before, width) of the bands along a dimension of ``size_in`` inputs unpooled
    into ``size_out`` (common/unpool_band.wgsl): input j's band is [j * stride - before,
    j * stride - before + width).  The stride is the ratio of the sizes, rounded; the band
    holds the windows of max pooling at that stride of sizes stride and stride + 1 with or
    without padding (2 x 2 and 3 x 3 at stride 2, padding 0 or 1), so each output coordinate
    has 2 candidates (3 at stride 1), and a single input the whole dimension."""
    if size_in == 1:
        return size_out, 0, size_out
    stride = max(1, (2 * size_out + size_in) // (2 * size_in))
    if stride == 1:
        return 1, 1, 3
    return stride, stride // 2, 2 * stride


def band_candidates(bands: tuple, run: int = 1) -> int:
    """The most input coordinates whose bands hold one of ``run`` consecutive output
    coordinates starting at a multiple of ``run`` (the count repeats with the start modulo
    the stride)."""
    stride, before, width = bands
    if width == stride:  # (a single input: its band is the dimension)
        return 1
    most = 0
    for first in range(0, stride * run, run):
        last = (first + run - 1 + before) // stride
        lowest = -(-(first + before - width + 1) // stride)
        most = max(most, last - lowest + 1)
    return most


def _flags_desc(planes: int) -> TensorDesc:
    """The gather's flags: a word per (n, c) plane, a multiple of 4 of them (zero_fill.wgsl)."""
    return TensorDesc(DataType.UINT32, (1, 1, -(-planes // 4) * 4))


def _band_constants(x: TensorDesc, y: TensorDesc) -> tuple:
    """(the bands along D, H and W, common/unpool_band.wgsl's constants of them)."""
    in_sizes, out_sizes = as_5d(x.sizes, x.strides)[0][2:], as_5d(y.sizes, y.strides)[0][2:]
    bands = tuple(band(i, o) for i, o in zip(in_sizes, out_sizes))
    constants = {}
    for axis, (stride, before, width) in zip("DHW", bands):
        constants.update({f"BAND_STRIDE_{axis}": stride, f"BAND_BEFORE_{axis}": before, f"BAND_WIDTH_{axis}": width})
    return bands, constants


def _strays_pass(indices: TensorDesc, y: TensorDesc, bands: dict, tuning: Tuning, chunks: bool) -> Pass:
    """max_unpool_strays.wgsl over the input elements, four per invocation (their indices in
    4-element chunks where ``chunks``)."""
    n, c, in_d, in_h, in_w = as_5d(indices.sizes, indices.strides)[0]
    _, _, out_d, out_h, out_w = as_5d(y.sizes, y.strides)[0]
    constants, grid_params, grid = tuned_lines_grid(-(-in_w // 4), in_h, n * c * in_d, tuning)
    params = {"in_d": in_d, "in_h": in_h, "in_w": in_w, **tensor_stride_params("idx", indices), **grid_params,
              **divisor_params("out_w", out_w), **divisor_params("out_h", out_h), **divisor_params("out_d", out_d),
              **divisor_params("channels", c), **_target_range(out_d * out_h * out_w, 0, n * c)}
    constants = {**constants, **bands, "WIDE_INDICES": indices.data_type == DataType.UINT64}
    return Pass(MAX_UNPOOL_STRAYS_CHUNKS if chunks else MAX_UNPOOL_STRAYS, ("indices", "winner", "flags"),
                sorted_constants(constants), params, grid)


def _gather_program(desc, tuning: Tuning, general: Program) -> Program:
    """The strays, the gather over the output (runs of four where the output is contiguous
    along the run), the flags cleared; its fallback for tensors at other offsets the same with
    runs of one and indices read one by one, and for tensors larger than a binding the
    general program (whole tensors only: the strays and the flags are picked over all)."""
    x, indices, y = desc.input, desc.indices, desc.output
    n, c, in_d, in_h, in_w = as_5d(x.sizes, x.strides)[0]
    _, _, out_d, out_h, out_w = as_5d(y.sizes, y.strides)[0]
    bands, band_constants = _band_constants(x, y)
    along_c = c > 1 and strides_5d(y).get("c") == 1   # channels-last output: lanes along C
    if along_c:
        run = 4 if c % 4 == 0 and contiguous_along([y], "c") else 1
        chunks = run == 4 and contiguous_along([indices], "c")
        lines, planes = out_w, n * out_d * out_h
    else:
        run = 4 if out_w % 4 == 0 and contiguous_along([y], "w") else 1
        chunks = False
        lines, planes = out_h, n * c * out_d
    flags = _flags_desc(n * c)
    scratch = (("winner", TensorDesc(DataType.UINT32, y.sizes)), ("flags", flags))

    def gather(run: int, chunks: bool) -> Pass:
        columns = (c if along_c else out_w) // run
        constants, grid_params, grid = tuned_lines_grid(columns, lines, planes, tuning)
        kernel = MAX_UNPOOL_GATHER_CHUNKS if chunks else MAX_UNPOOL_GATHER if run == 1 else \
            MAX_UNPOOL_GATHER_RUNS if along_c else MAX_UNPOOL_GATHER_ROWS
        constants.update(band_constants, RUN=run, ALONG_C=along_c, PACKED_INPUT=x.is_packed,
                         RUN_ALIGNED=not along_c and run % bands[2][0] == 0,
                         WIDE_INDICES=indices.data_type == DataType.UINT64,
                         CANDIDATES_D=band_candidates(bands[0]), CANDIDATES_H=band_candidates(bands[1]),
                         CANDIDATES_W=band_candidates(bands[2], 1 if along_c else run))
        params = {**divisor_params("in_d", in_d), **divisor_params("in_h", in_h), **divisor_params("in_w", in_w),
                  "out_w": out_w, **divisor_params("out_h", out_h), **divisor_params("out_d", out_d),
                  **divisor_params("channels", c),
                  **tensor_stride_params("idx", indices), **tensor_stride_params("x", x),
                  **tensor_stride_params("y", y), **grid_params}
        return Pass(kernel, ("input", "indices", "flags", "winner", "output"), sorted_constants(constants), params,
                    grid)

    clear = _zero_fill_pass(flags, tuning.flat_workgroup, "flags")
    strays_chunks = contiguous_along([indices], "w")
    plain = Program((_strays_pass(indices, y, band_constants, tuning, False), gather(1, False), clear),
                    scratch=scratch, fallback=general, whole_only=True)
    if run == 1 and not strays_chunks:
        return plain
    aligned = (("output",) if run == 4 else ()) + (("indices",) if chunks or strays_chunks else ())
    return Program((_strays_pass(indices, y, band_constants, tuning, strays_chunks), gather(run, chunks), clear),
                   scratch=scratch, aligned=aligned, fallback=plain, whole_only=True)


def _target_range(out_plane: int, first: int, planes: int, *_) -> dict:
    """max_unpool_winners.wgsl: only indices into output planes [first, first + planes) count."""
    return {"out_first": first * out_plane, "out_count": planes * out_plane}


def _source_range(in_plane: int, first: int, planes: int, first_range: bool, last_range: bool) -> dict:
    """max_unpool.wgsl: copy only winners in input planes [first, first + planes); outputs
    without a winner are zeroed with the first range, winners reset with the last."""
    return {"source_first": first * in_plane, "source_count": planes * in_plane,
            "zeros": int(first_range), "reset": int(last_range)}


def _unpool_grad_range(out_plane: int, first: int, planes: int, *_) -> dict:
    """max_unpool_grad.wgsl: gather dy planes [first, first + planes); the chunk holding
    plane 0 also zeroes dx where the index lies outside dy."""
    return {**_target_range(out_plane, first, planes), "zeros": int(first == 0)}


@register("max_unpool_grad")
def _max_unpool_grad_program(desc, tuning: Tuning) -> Program:
    """The winners of max unpooling (max_unpool_winners.wgsl), then the gather over dx
    (max_unpool_grad.wgsl)."""
    indices, dy, dx = desc.indices, desc.input_gradient, desc.output_gradient
    workgroup = tuning.lines_workgroup
    n, c, in_d, in_h, in_w = as_5d(indices.sizes, indices.strides)[0]
    _, _, out_d, out_h, out_w = as_5d(dy.sizes, dy.strides)[0]
    in_columns = -(-in_w // 4)  # common/unpool_source.wgsl: four elements per invocation
    grid_constants, grid_params, grid = tuned_lines_grid(in_columns, in_h, n * c * in_d, tuning)
    constants = sorted_constants({**grid_constants, "WIDE_INDICES": indices.data_type == DataType.UINT64})
    out_plane = out_d * out_h * out_w
    params = {"channels": c, "in_d": in_d, "in_h": in_h, "in_w": in_w, **tensor_stride_params("idx", indices),
              **grid_params}
    regrid = partial(lines_regrid, in_columns, in_h, workgroup, flat=grid_constants.get("FLAT", False))
    output_params = {**divisor_params("out_d", out_d), **divisor_params("out_h", out_h),
                     **divisor_params("out_w", out_w), **divisor_params("channels", c)}
    # (winner slots at flat logical indices: y's strides unread)
    winners = Pass(MAX_UNPOOL_WINNERS, ("indices", "winner"), constants,
                   {**params, **output_params, **tensor_stride_params("y", dy), **_target_range(out_plane, 0, n * c)},
                   grid, Split(in_d, regrid, scatter="winner", filter=partial(_target_range, out_plane)))
    gather_params = {
        **params, "dy_count": dy.element_count, **output_params, **tensor_stride_params("dy", dy),
        **tensor_stride_params("dx", dx), **_unpool_grad_range(out_plane, 0, n * c),
    }
    # For dy larger than a binding, chunks run over dy's planes (the winners' scratch);
    # the gather visits every dx element per chunk, reading the chunk's dy planes and
    # winners (the split's scatter and gather roles both follow the chunk).
    gather = Pass(MAX_UNPOOL_GRAD, ("indices", "winner", "input_gradient", "output_gradient"), constants,
                  gather_params, grid,
                  Split(in_d, regrid, scatter="input_gradient", gather="winner",
                        filter=partial(_unpool_grad_range, out_plane)))
    # the winner scratch starts zero-filled and the gather leaves it zeroed again
    return Program((winners, gather), scratch=(("winner", TensorDesc(DataType.UINT32, dy.sizes)),))
