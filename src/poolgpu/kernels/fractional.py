"""Fractional max pooling: a table pass writes each (n, c) plane's window starts from its
samples (wgsl/fractional_table.wgsl; one row per plane), then the fractional walk pools
them (wgsl/fractional_max_pool.wgsl: neighbouring lanes on neighbouring outputs; four
outputs along W per invocation with ``Tuning.rows_walks``).  Its gradient: the
same walk writing only each window's argmax into scratch, then a gather over dx visiting the
windows that cover each element, whose runs the table holds too
(wgsl/fractional_max_pool_grad.wgsl).

Windows or covering runs longer than an invocation may walk take the general path instead:
a bins pass writing each plane's windows into a bin table (wgsl/fractional_bins.wgsl), the
bins walk (split into parts and merged), and a gather searching the plane's row
(common/fractional_covering.wgsl)."""

from __future__ import annotations

import math
import struct
from dataclasses import replace
from functools import partial

import numpy as np

from ..descs.fractional import SAMPLE_ORDER, alpha
from ..dtypes import DataType
from ..tensor_desc import TensorDesc
from ..tuning import Tuning
from .binned import (BINS_MAX, GATHER_LIBRARY, GATHER_PARAMS, PART, argmax_passes, bin_table, binned_passes,
                     covering_loops, gather_passes)
from .core import Kernel, Pass, Program, Slot, Split
from .grids import (FLAT_GRID, GRID_LIBRARY, IN_SIZES, LINES_GRID, OUT_SIZES, as_3d, as_5d, contiguous_along,
                    divisor_fields, divisor_params, flat_grid, lines_regrid, sorted_constants, stride_fields,
                    strides_5d, tensor_stride_params, tuned_lines_grid)
from .registry import register
from .split import iterations, loop_total, search_probes
from .window import MAX

FRACTIONAL_BINS = Kernel(
    "fractional_bins.wgsl", (Slot("samples", False), Slot("bins", True)), value_slot="samples",
    library=("fractional_window.wgsl", "flat_index.wgsl", "exact_f32.wgsl"),
    params=FLAT_GRID[:1] + ("channels",) + IN_SIZES + OUT_SIZES + ("k_d", "k_h", "k_w", "alpha_d", "alpha_h", "alpha_w",
                                                                   "sample_d", "sample_h", "sample_w", "samples_n",
                                                                   "samples_c", "samples_k"),
    loops=lambda constants, params: {},
)


def fractional_gather_loops(constants: dict, params: dict) -> dict:
    """The fractional gather's loops: two searches of the plane's windows per dimension, and
    at most COVER_D x COVER_H x COVER_W covering windows (of its part)."""
    d, h, w = (-(-constants[f"COVER_{a}"] // constants.get(f"PARTS_{a}", 1)) for a in "DHW")
    probes = sum(search_probes(2, params[f"out_{a}"]) for a in "dhw")
    return dict(covering_loops(d, h, w), probe=probes)


FRACTIONAL_MAX_POOL_GRAD = Kernel(
    "adaptive_max_pool_grad.wgsl", (Slot("dy", False), Slot("arg", False), Slot("bins", False), Slot("dx", True), PART),
    value_slot="dy", library=("bin_table.wgsl", "bin_search.wgsl", "fractional_covering.wgsl") + GATHER_LIBRARY,
    params=GATHER_PARAMS + stride_fields("dy", "arg", "dx"),
    loops=fractional_gather_loops,
)

# The unit roundoff of each sample type: half an ulp of 1, relative.
_ROUNDOFF = {DataType.FLOAT32: 2.0**-24, DataType.FLOAT16: 2.0**-11, DataType.BFLOAT16: 2.0**-8}


def covering_bound(size_in: int, window: int, out: int, data_type: DataType, span: int = 1) -> int:
    """The most windows (of ``out``) that can cover one input along a dimension (or meet
    ``span`` consecutive inputs: cover one as windows ``span - 1`` longer would), whatever
    the samples in [0, 1).

    Window o < out - 1 starts at T(v(o)) - T(w) (T: truncation), v(o) the computed (o + u) *
    alpha, within E of the exact value; windows covering input i have T(v(o)) in K = window
    consecutive integers [A, A + K), so (o + u) * alpha lies in [A - E, A + K + E): at most
    (K + 2E) / alpha + 1 of them.  The last window, and the starts clamped to in - K (v(o)
    past in - K + w, within E + 1 of its exact value: at most (E + 1) / alpha + 1 windows),
    add at most 2 more.  E: three roundings (o, o + u, the product) of values up to out *
    alpha, each within the type's roundoff, and a margin."""
    a = float(alpha(size_in, window, out, data_type))
    if not (math.isfinite(a) and a > 0):
        return out
    largest = out * a   # (the largest value the rounded products reach)
    if data_type == DataType.FLOAT16 and largest >= 65504:  # (float16 overflows to infinity there)
        return out
    error = 4 * _ROUNDOFF[data_type] * (largest + 2) + 1e-6
    return min(out, math.floor((window + span - 1 + 3 * error + 1) / a) + 3)


# The fractional walks: a window table per plane (fractional_table.wgsl), the walk over each
# output's window (fractional_max_pool.wgsl) and the gradient's gather over dx
# (fractional_max_pool_grad.wgsl).
_TABLE_PARAMS = ("k_d", "k_h", "k_w", "alpha_d", "alpha_h", "alpha_w", "sample_d", "sample_h", "sample_w", "samples_n",
                 "samples_c", "samples_k")
FRACTIONAL_TABLE = Kernel(
    "fractional_table.wgsl", (Slot("samples", False), Slot("bins", True)), value_slot="samples",
    library=("fractional_window.wgsl", "flat_index.wgsl", "exact_f32.wgsl"),
    # entries: per plane, one per start (and COVERS: per input coordinate); row_words: per plane
    params=FLAT_GRID[:1] + ("entries", "row_words", "channels") + IN_SIZES + OUT_SIZES + _TABLE_PARAMS,
    loops=lambda constants, params: {
        "probe": search_probes(2, max(params[f"out_{a}"] for a in "dhw")) if constants["COVERS"] else 0},
)


def _padded(count: int) -> int:
    return -(-count // 4) * 4


def _walk_loops(constants: dict, params: dict) -> dict:
    """fractional_max_pool.wgsl's loops: the window's rows along D and H, and per row its taps
    past 4 (written out up to 4)."""
    d, h, w = (constants[f"WINDOW_{a}"] for a in "DHW")
    return {"kd": iterations(1, d), "kh": iterations(d, h), "kw": iterations(d * h, w) if w > 4 else 0}


def _walk_kernel(run: int, store4: bool = False) -> Kernel:
    """fractional_max_pool.wgsl walking ``run`` outputs per invocation (one, or four along
    W), stored four at a time (``store4``) or one by one."""
    stores = ("rows_store4.wgsl",) if store4 else ("store_one.wgsl", "rows_store_tail.wgsl") if run == 4 else \
        ("store_one.wgsl",)
    slots = (Slot("x", False), Slot("bins", False, snippet="table_b32.wgsl"),
             Slot("y", True, snippet="write4_{storage}.wgsl" if store4 else ""),
             Slot("idx", True, snippet="write4_index_{storage}.wgsl" if store4 else ""))
    return Kernel(
        "fractional_max_pool.wgsl", slots, value_slot="x",
        library=("max_accumulator.wgsl",) + GRID_LIBRARY + ("window_constants.wgsl", "window_geometry.wgsl",
                                                            f"fractional_walk{run}.wgsl") + stores,
        params=IN_SIZES + ("out_w",) + divisor_fields("out_d", "channels") + stride_fields("x", "y", "idx")
        + LINES_GRID + ("row_words", "starts_h", "starts_w"),
        loops=_walk_loops,
    )


FRACTIONAL_WALK = _walk_kernel(1)
FRACTIONAL_WALK_FOUR = _walk_kernel(4)
FRACTIONAL_WALK_ROWS = _walk_kernel(4, store4=True)


def _gather_loops(constants: dict, params: dict) -> dict:
    """fractional_max_pool_grad.wgsl's loops: the windows covering its elements, at most
    COVER_D x COVER_H x COVER_W (along W, meeting any of its RUN elements)."""
    d, h, w = (constants[f"COVER_{a}"] for a in "DHW")
    return {"od": iterations(1, d), "oh": iterations(d, h), "ow": iterations(d * h, w)}


def _gather_kernel(store4: bool) -> Kernel:
    return Kernel(
        "fractional_max_pool_grad.wgsl",
        (Slot("dy", False), Slot("arg", False), Slot("bins", False, snippet="table_b32.wgsl"),
         Slot("dx", True, snippet="write4_{storage}.wgsl" if store4 else "")),
        value_slot="dy",
        library=GRID_LIBRARY + ("fractional_grad_store4.wgsl" if store4 else "fractional_grad_store1.wgsl",),
        params=("in_h", "in_w") + divisor_fields("in_d", "channels") + stride_fields("dy", "arg", "dx")
        + LINES_GRID + ("row_words", "covers_d", "covers_h", "covers_w"),
        loops=_gather_loops,
    )


FRACTIONAL_GATHER = _gather_kernel(False)
FRACTIONAL_GATHER_ROWS = _gather_kernel(True)

#: The most words of a window table the fractional walks take (WebGPU's guaranteed binding, 128 MiB).
TABLE_WORDS = 2**25


def _table(desc, covers: bool, wg_x: int) -> tuple:
    """(the pass writing ``desc``'s window table, the table, its layout: row_words and the
    offsets of the starts along H and W and of the covering runs along D, H, W)."""
    in_sizes = as_5d(desc.input.sizes, desc.input.strides)[0]
    out_sizes = as_5d(desc.output.sizes, desc.output.strides)[0]
    planes = in_sizes[0] * in_sizes[1]
    starts = [_padded(o) for o in out_sizes[2:]]
    firsts = [_padded(i) for i in in_sizes[2:]]
    entries = sum(starts) + (sum(firsts) if covers else 0)
    layout = {"row_words": sum(starts) + (2 * sum(firsts) if covers else 0),
              "starts_h": starts[0], "starts_w": starts[0] + starts[1],
              "covers_d": sum(starts), "covers_h": sum(starts) + 2 * firsts[0],
              "covers_w": sum(starts) + 2 * (firsts[0] + firsts[1])}
    params = {**_sample_params(desc), "total": planes * entries, "entries": entries, "row_words": layout["row_words"]}
    pass_ = Pass(FRACTIONAL_TABLE, ("samples", "bins"), sorted_constants({"WG_X": wg_x, "COVERS": covers}), params,
                 flat_grid(planes * entries, wg_x))
    return pass_, TensorDesc(DataType.UINT32, (1, planes, layout["row_words"])), layout


def _walk_pass(desc, roles: tuple, layout: dict, tuning: Tuning, run: int) -> tuple:
    """(the fractional walk pooling ``desc`` into ``roles`` (y, idx; None: not written), ``run``
    outputs per invocation, the roles it needs aligned), or None where its loops pass the
    tuning's budget."""
    x, y, idx = desc.input, (desc.output if roles[0] else None), (desc.output_indices if roles[1] else None)
    n, c, in_d, in_h, in_w = as_5d(x.sizes, x.strides)[0]
    _, _, out_d, out_h, out_w = as_5d(desc.output.sizes, desc.output.strides)[0]
    written = [t for t in (y, idx) if t is not None]
    store4 = run == 4 and out_w % 4 == 0 and contiguous_along(written, "w")
    kernel = FRACTIONAL_WALK if run == 1 else FRACTIONAL_WALK_ROWS if store4 else FRACTIONAL_WALK_FOUR
    columns = -(-out_w // run)
    constants, grid_params, grid = tuned_lines_grid(columns, out_h, n * c * out_d, tuning)
    constants.update({f"WINDOW_{a}": k for a, k in zip("DHW", as_3d(desc.window_size, 1))})
    if run == 4 and not store4:  # (rows_store_tail.wgsl: 16-bit pairs in one word store)
        constants["PAIR_STORES"] = y is not None and y.data_type.size == 2 and strides_5d(y).get("w") == 1
    params = {"in_d": in_d, "in_h": in_h, "in_w": in_w, "out_w": out_w,
              **divisor_params("out_d", out_d), **divisor_params("channels", c), **tensor_stride_params("x", x),
              **tensor_stride_params("y", y), **tensor_stride_params("idx", idx), **grid_params,
              "row_words": layout["row_words"], "starts_h": layout["starts_h"], "starts_w": layout["starts_w"]}
    if loop_total(kernel, constants, params) > tuning.loop_budget:
        return None
    split = Split(out_d, partial(lines_regrid, columns, out_h, tuning.lines_workgroup,
                                 flat=constants.get("FLAT", False)), whole=("bins",))
    aligned = tuple(r for r in roles if r) if store4 else ()
    return Pass(kernel, ("input", "bins") + roles, sorted_constants(constants), params, grid, split), aligned


def _walk_program(desc, roles: tuple, tuning: Tuning, covers: bool, then=None) -> "Program | None":
    """The window table and the fractional walk (four outputs along W per invocation with the
    rows walks, the one-output walk where their four-at-a-time stores meet unaligned outputs),
    followed by
    ``then(layout, tuning, run)``'s (passes, scratch, aligned roles) (None: they do not fit);
    None where no walk fits the loop budget or the table a binding."""
    table_pass, table, layout = _table(desc, covers, tuning.flat_workgroup)
    if table.element_count > TABLE_WORDS:
        return None

    def program(run: int) -> "Program | None":
        walk = _walk_pass(desc, roles, layout, tuning, run)
        rest = ((), (), ()) if then is None else then(layout, tuning, run)
        if walk is None or rest is None:
            return None
        passes, scratch, aligned = rest
        return Program((table_pass, walk[0]) + passes, scratch=(("bins", table),) + scratch,
                       aligned=walk[1] + aligned)

    one = program(1)
    if one is None:
        return None
    four = program(4) if tuning.rows_walks else None
    if four is None:
        return one
    return replace(four, fallback=one) if four.aligned else four


def _sample_params(desc) -> dict:
    """The table passes' uniform values: sizes, and per dimension its window, alpha (as f32
    bits) and which sample it takes."""
    in_sizes = as_5d(desc.input.sizes, desc.input.strides)[0]
    out_sizes = as_5d(desc.output.sizes, desc.output.strides)[0]
    order = SAMPLE_ORDER[desc.dimension_count]
    params = {"channels": in_sizes[1], "samples_n": desc.samples.strides[0], "samples_c": desc.samples.strides[1],
              "samples_k": desc.samples.strides[2]}
    for a, size_in, out, k in zip("dhw", in_sizes[2:], out_sizes[2:], as_3d(desc.window_size, 1)):
        params.update({f"in_{a}": size_in, f"out_{a}": out, f"k_{a}": k, f"sample_{a}": order.get(a, 0),
                       f"alpha_{a}": _bits(alpha(size_in, k, out, desc.samples.data_type))})
    return params


def _bits(value: np.float32) -> int:
    return struct.unpack("<I", struct.pack("<f", float(value)))[0]


def _bins_pass(desc, wg_x: int) -> tuple:
    """(the pass writing each plane's windows into the bin table, the table)."""
    in_sizes = as_5d(desc.input.sizes, desc.input.strides)[0]
    out_sizes = as_5d(desc.output.sizes, desc.output.strides)[0]
    planes = in_sizes[0] * in_sizes[1]
    entries = 1 + sum(out_sizes[2:])
    pass_ = Pass(FRACTIONAL_BINS, ("samples", "bins"), sorted_constants({"WG_X": wg_x}),
                 {**_sample_params(desc), "total": planes * entries}, flat_grid(planes * entries, wg_x))
    return pass_, bin_table(planes, out_sizes[2:])


def _table_constants(desc) -> dict:
    """The bins walk's constants of a fractional bin table: a row per plane, windows of a
    fixed size."""
    return {"PLANE_ROWS": True, **{f"BIN_{a}": k for a, k in zip("DHW", as_3d(desc.window_size, 1))}}


@register("fractional_max_pool")
def _fractional_max_pool_program(desc, tuning: Tuning) -> Program:
    roles = ("output", None if desc.output_indices is None else "output_indices")
    walked = _walk_program(desc, roles, tuning, False) if tuning.fractional_walks else None
    if walked is not None:
        return walked
    bins_pass, table = _bins_pass(desc, tuning.flat_workgroup)
    passes, scratch = binned_passes(BINS_MAX, MAX, desc, _table_constants(desc), tuning)
    return Program((bins_pass,) + passes, scratch=(("bins", table),) + scratch)


def _gather_pass(desc, layout: dict, tuning: Tuning, run: int) -> tuple:
    """(the gather over dx, ``run`` elements along W per invocation (of
    ``tuning.rows_per_invocation`` rows where 4), its aligned roles), or None where the
    windows covering them pass the loop budget."""
    forward, dy, dx = desc.forward, desc.input_gradient, desc.output_gradient
    arg = forward.output_indices
    n, c, in_d, in_h, in_w = as_5d(dx.sizes, dx.strides)[0]
    _, _, out_d, out_h, out_w = as_5d(dy.sizes, dy.strides)[0]
    store4 = run == 4 and in_w % 4 == 0 and contiguous_along([dx], "w")
    kernel = FRACTIONAL_GATHER_ROWS if store4 else FRACTIONAL_GATHER
    columns = -(-in_w // run)
    rows = min(tuning.rows_per_invocation, in_h) if run == 4 else 1
    lines = -(-in_h // rows)
    constants, grid_params, grid = tuned_lines_grid(columns, lines, n * c * in_d, tuning)
    constants["ROWS"] = rows
    spans = (1, rows, run)
    constants.update(RUN=run, **{f"COVER_{a}": covering_bound(i, k, o, forward.samples.data_type, span)
                                 for a, i, k, o, span in zip("DHW", (in_d, in_h, in_w), as_3d(forward.window_size, 1),
                                                             (out_d, out_h, out_w), spans)})
    params = {"in_h": in_h, "in_w": in_w,
              **divisor_params("in_d", in_d), **divisor_params("channels", c), **tensor_stride_params("dy", dy),
              **tensor_stride_params("arg", arg), **tensor_stride_params("dx", dx), **grid_params,
              **{key: layout[key] for key in ("row_words", "covers_d", "covers_h", "covers_w")}}
    if loop_total(kernel, constants, params) > tuning.loop_budget:
        return None
    split = Split(in_d, partial(lines_regrid, columns, lines, tuning.lines_workgroup, flat=constants.get("FLAT", False)),
                  whole=("bins",))
    return (Pass(kernel, ("input_gradient", "argmax", "bins", "output_gradient"), sorted_constants(constants), params,
                 grid, split), ("output_gradient",) if store4 else ())


@register("fractional_max_pool_grad")
def _fractional_max_pool_grad_program(desc, tuning: Tuning) -> Program:
    """The forward windows' argmax into scratch (the walk writing only indices), then the
    gather adding each window's dy at its argmax."""
    forward = desc.forward

    def gather(layout: dict, tuning: Tuning, run: int):
        found = _gather_pass(desc, layout, tuning, run)
        return None if found is None else ((found[0],), (("argmax", forward.output_indices),), found[1])

    walked = _walk_program(forward, (None, "argmax"), tuning, True, gather) if tuning.fractional_walks else None
    if walked is not None:
        return walked
    bins_pass, table = _bins_pass(forward, tuning.flat_workgroup)
    argmax, argmax_scratch = argmax_passes(forward, _table_constants(forward), tuning)
    in_sizes = as_5d(forward.input.sizes, forward.input.strides)[0]
    out_sizes = as_5d(forward.output.sizes, forward.output.strides)[0]
    cover = tuple(covering_bound(i, k, o, forward.samples.data_type)
                  for i, k, o in zip(in_sizes[2:], as_3d(forward.window_size, 1), out_sizes[2:]))
    described = {"input_gradient": desc.input_gradient, "argmax": forward.output_indices,
                 "output_gradient": desc.output_gradient}
    tensors = {"dy": "input_gradient", "arg": "argmax", "bins": "bins", "dx": "output_gradient"}
    constants = {f"COVER_{a}": n for a, n in zip("DHW", cover)}
    gather_passes_, gather_scratch = gather_passes(FRACTIONAL_MAX_POOL_GRAD, desc, tensors, described, tuning,
                                                   constants, counts=cover)
    return Program((bins_pass,) + argmax + gather_passes_, scratch=(("bins", table),) + argmax_scratch + gather_scratch)
