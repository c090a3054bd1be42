"""Fractional max pooling: a bins pass writes each (n, c) plane's windows from its samples
into a bin table (wgsl/fractional_bins.wgsl; one row per plane), then the bins walk pools
them (the windows' size fixed: BIN_D, BIN_H, BIN_W).  Its gradient: the same argmax into
scratch, then a gather visiting the windows that cover each dx element (a search of the
plane's row: common/fractional_covering.wgsl)."""

from __future__ import annotations

import math
import struct

import numpy as np

from ..descs.fractional import SAMPLE_ORDER, alpha
from ..dtypes import DataType
from ..tuning import Tuning
from .binned import (BINS_MAX, GATHER_LIBRARY, GATHER_PARAMS, PART, argmax_passes, bin_table, binned_passes,
                     covering_loops, gather_passes)
from .core import Kernel, Pass, Program, Slot
from .grids import FLAT_GRID, IN_SIZES, OUT_SIZES, as_3d, as_5d, flat_grid, sorted_constants, stride_fields
from .registry import register
from .split import search_probes
from .window import MAX

FRACTIONAL_BINS = Kernel(
    "fractional_bins.wgsl", (Slot("samples", False), Slot("bins", True)), value_slot="samples",
    library=("flat_index.wgsl", "exact_f32.wgsl"),
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


def covering_bound(size_in: int, window: int, out: int, data_type: DataType) -> int:
    """The most windows (of ``out``) that can cover one input along a dimension, whatever
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
    span = out * a
    if data_type == DataType.FLOAT16 and span >= 65504:  # (float16 overflows to infinity there)
        return out
    error = 4 * _ROUNDOFF[data_type] * (span + 2) + 1e-6
    return min(out, math.floor((window + 3 * error + 1) / a) + 3)


def _bits(value: np.float32) -> int:
    return struct.unpack("<I", struct.pack("<f", float(value)))[0]


def _bins_pass(desc, wg_x: int) -> tuple:
    """(the pass writing each plane's windows into the bin table, the table)."""
    in_sizes = as_5d(desc.input.sizes, desc.input.strides)[0]
    out_sizes = as_5d(desc.output.sizes, desc.output.strides)[0]
    windows = as_3d(desc.window_size, 1)
    planes = in_sizes[0] * in_sizes[1]
    entries = 1 + sum(out_sizes[2:])
    data_type = desc.samples.data_type
    order = SAMPLE_ORDER[desc.dimension_count]
    params = {"total": planes * entries, "channels": in_sizes[1],
              "samples_n": desc.samples.strides[0], "samples_c": desc.samples.strides[1],
              "samples_k": desc.samples.strides[2]}
    for a, size_in, out, k in zip("dhw", in_sizes[2:], out_sizes[2:], windows):
        params.update({f"in_{a}": size_in, f"out_{a}": out, f"k_{a}": k, f"sample_{a}": order.get(a, 0),
                       f"alpha_{a}": _bits(alpha(size_in, k, out, data_type))})
    pass_ = Pass(FRACTIONAL_BINS, ("samples", "bins"), sorted_constants({"WG_X": wg_x}), params,
                 flat_grid(planes * entries, wg_x))
    return pass_, bin_table(planes, out_sizes[2:])


def _table_constants(desc) -> dict:
    """The bins walk's constants of a fractional bin table: a row per plane, windows of a
    fixed size."""
    return {"PLANE_ROWS": True, **{f"BIN_{a}": k for a, k in zip("DHW", as_3d(desc.window_size, 1))}}


@register("fractional_max_pool")
def _fractional_max_pool_program(desc, tuning: Tuning) -> Program:
    bins_pass, table = _bins_pass(desc, tuning.flat_workgroup)
    passes, scratch = binned_passes(BINS_MAX, MAX, desc, _table_constants(desc), tuning)
    return Program((bins_pass,) + passes, scratch=(("bins", table),) + scratch)


@register("fractional_max_pool_grad")
def _fractional_max_pool_grad_program(desc, tuning: Tuning) -> Program:
    """The forward windows' argmax into scratch (the bins walk writing only indices), then
    the gather adding each window's dy at its argmax."""
    forward = desc.forward
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
    gather, gather_scratch = gather_passes(FRACTIONAL_MAX_POOL_GRAD, desc, tensors, described, tuning, constants,
                                           counts=cover)
    return Program((bins_pass,) + argmax + gather, scratch=(("bins", table),) + argmax_scratch + gather_scratch)
