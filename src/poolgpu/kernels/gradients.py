"""Gradients: each invocation owns a block of dx elements and gathers what lands on them
(deterministic: no atomics, a fixed summation order)."""

from __future__ import annotations

import math
from dataclasses import replace
from functools import partial
from typing import Mapping, Optional

from ..dtypes import DataType
from ..tensor_desc import TensorDesc
from ..tuning import Tuning
from .core import Kernel, Pass, Program, Slot, Split
from .grids import (GRID_LIBRARY, IN_SIZES, LINES_GRID, OUT_SIZES, ROW_GRID, as_3d, as_5d, channels_last_desc, contiguous_along,
                    divisor_fields, divisor_params, lines_regrid, row_grid, rows_regrid, sorted_constants,
                    stride_fields, strides_5d, tensor_stride_params, tuned_lines_grid, window_constants)
from .planes import covers_planes, plane_gradient
from .registry import register
from .split import GRADIENT_MERGE, fewest_parts, gradient_merge_passes, iterations, loop_total  # noqa: F401
from .window import (AVERAGE_DIVISOR, CHUNKED_WALKS, LP, LP_POOL, MAX, MAX_POOL, average_divisor_constants,
                     lp_constants, pair_aligned, reads_pairs, unaligned_walk, walk_for, window_walk_passes)

def _landing(constants: dict, params: dict, axis: str) -> int:
    """The most taps of a window dimension that one dx element's tap loop visits (of a split
    gather's part): windows_covering.wgsl's tap_run, every tap_step taps from first_tap, of
    those whose windows exist; their windows lie dilation / gcd(dilation, stride) apart."""
    taps, step = constants[f"K{axis}"], min(constants[f"T{axis}"], constants[f"K{axis}"])
    apart = constants[f"L{axis}"] // (constants[f"S{axis}"] // constants[f"T{axis}"])
    visited = min(-(-taps // step), -(-params[f"out_{axis.lower()}"] // apart))
    return -(-visited // constants.get(f"PARTS_{axis}", 1))


def block_gather_loops(constants: dict, params: dict) -> dict:
    """The block gathers' loops (max_pool_grad.wgsl, average_pool_grad.wgsl): the block's
    elements (one along element-block dimensions), for each the taps landing on it, and
    first_tap's times_mod (32 steps a call) where a tap step passes 65536; none on the
    windows-first visit (written out)."""
    names = ("rd", "rh", "rw", "kd", "kh", "kw", "bit")
    if constants.get("WINDOWS_FIRST", False):
        return dict.fromkeys(names, 0)
    if constants.get("DISJOINT", False):  # (average_pool_grad.wgsl: the block's elements, no taps)
        sd, sh, sw = (constants[f"S{a}"] for a in "DHW")
        return dict(dict.fromkeys(names, 0), rd=iterations(1, sd), rh=iterations(sd, sh), rw=iterations(sd * sh, sw))
    bd, bh, bw = (1 if constants.get(f"BY_ELEMENT_{a}", False) else constants[f"S{a}"] for a in "DHW")
    nd, nh, nw = (_landing(constants, params, a) for a in "DHW")
    elements = bd * bh * bw
    calls = {"D": elements, "H": elements * nd, "W": elements * nd * nh}  # first_tap's, per dimension
    return {"rd": iterations(1, bd), "rh": iterations(bd, bh), "rw": iterations(bd * bh, bw),
            "kd": iterations(elements, nd), "kh": iterations(elements * nd, nh), "kw": iterations(elements * nd * nh, nw),
            "bit": sum(iterations(calls[a], 32) for a in "DHW" if constants[f"T{a}"] > 65536)}


def disjoint_loops(constants: dict, params: dict) -> dict:
    """max_pool_grad_disjoint.wgsl's loops: the window's taps (the lanes written out), the
    block's elements."""
    kd, kh, kw, sd, sh, sw = (constants[name] for name in ("KD", "KH", "KW", "SD", "SH", "SW"))
    return {"kd": iterations(1, kd), "kh": iterations(kd, kh), "kw": iterations(kd * kh, kw),
            "rd": iterations(1, sd), "rh": iterations(sd, sh), "rw": iterations(sd * sh, sw),
            "bit": 0}  # (windows_covering.wgsl's first_tap goes unused)


def disjoint_rows_loops(constants: dict, params: dict) -> dict:
    """max_pool_grad_disjoint_rows.wgsl's loops (its span, taps and windows are written out)."""
    kd, kh, sd, sh = (constants[name] for name in ("KD", "KH", "SD", "SH"))
    return {"kd": iterations(1, kd), "kh": iterations(kd, kh),
            "rd": iterations(1, sd), "rh": iterations(sd, sh), "bit": 0}  # (first_tap goes unused)


def rows_gather_loops(constants: dict, params: dict) -> dict:
    """common/gather_rows.wgsl's loops: window planes, rows, and chunks past the four
    written out."""
    kd, rows = constants["KD"], constants["OH_ROWS"]
    return {"kd": iterations(1, kd), "i": iterations(kd, rows),
            "j": iterations(kd * rows, max(constants["DY_CHUNKS"] - 4, 0))}


# Params: in_* the forward input's (dx's) spatial sizes, out_* the forward output's (dy's);
# the block gathers (_gradient_block_pass) divide by the blocks along D, H, W and by C
# (common/divide.wgsl), over rows of blocks (common/row_grid.wgsl).
BLOCK_PARAMS = ("channels",) + IN_SIZES + OUT_SIZES + divisor_fields("blocks_d", "blocks_h", "blocks_w") \
    + ("channels_magic", "channels_shift") + ROW_GRID
ROWS_PARAMS = ("channels",) + IN_SIZES + OUT_SIZES + stride_fields("dy", "dx", axes="ncdh") + LINES_GRID  # rows: W's 1


def _block_gather_kernels(file: str, slots: tuple, library: tuple, params: tuple, argmax: bool) -> tuple:
    """A block gather's kernel with one channel per invocation (which splits: partial sums
    into its `part` slot), and with four over channels-last tensors (chunked dy, arg and dx;
    common/gather_lanes4.wgsl)."""
    shared = ("window_constants.wgsl",) + library + ("divide.wgsl", "taps.wgsl", "windows_covering.wgsl",
                                                     "row_grid.wgsl")
    lanes = {n: (f"gather_lanes{n}.wgsl",) + ((f"argmax_lanes{n}.wgsl",) if argmax else ()) for n in (1, 4)}
    chunked = {"dy": "read4_{storage}.wgsl", "arg": "read4_b32.wgsl", "dx": "write4_{storage}.wgsl"}
    one = slots + (Slot("part", True, snippet="words_write.wgsl"),)
    four = tuple(replace(s, snippet=chunked[s.name]) for s in slots)
    return tuple(Kernel(file, s, "dy", library=shared + lanes[n], params=params, loops=block_gather_loops)
                 for s, n in ((one, 1), (four, 4)))


MAX_POOL_GRAD, MAX_POOL_GRAD_CHANNELS = _block_gather_kernels(
    "max_pool_grad.wgsl", (Slot("dy", False), Slot("arg", False), Slot("dx", True)),
    ("as_written.wgsl", "windows_first.wgsl"),
    BLOCK_PARAMS + stride_fields("dy", "dx", "arg") + ("opaque_zero",), argmax=True)  # arg: packed, or channels-last with dx
AVERAGE_POOL_GRAD, AVERAGE_POOL_GRAD_CHANNELS = _block_gather_kernels(
    "average_pool_grad.wgsl", (Slot("dy", False), Slot("dx", True)),
    AVERAGE_DIVISOR + ("windows_first.wgsl",),
    BLOCK_PARAMS + stride_fields("dy", "dx") + ("opaque_zero",), argmax=False)
LP_POOL_GRAD = Kernel(
    "lp_pool_grad.wgsl", (Slot("x", False), Slot("y", False), Slot("dy", False), Slot("dx", True),
                          Slot("part", True, snippet="words_write.wgsl")), "dy",
    library=("window_constants.wgsl", "lp_power.wgsl", "lp_derivative.wgsl", "divide.wgsl", "taps.wgsl",
             "windows_covering.wgsl", "row_grid.wgsl", "gather_lanes1.wgsl"),
    params=BLOCK_PARAMS + stride_fields("x", "y", "dy", "dx"), loops=block_gather_loops,
)
_DISJOINT_LIBRARY = ("window_constants.wgsl", "divide.wgsl", "taps.wgsl", "windows_covering.wgsl", "max_accumulator.wgsl",
                     "row_grid.wgsl", "disjoint_gradient.wgsl")
DISJOINT_PARAMS = BLOCK_PARAMS + stride_fields("x", "dy", "dx")
MAX_POOL_GRAD_DISJOINT = Kernel(
    "max_pool_grad_disjoint.wgsl", (Slot("x", False), Slot("dy", False), Slot("dx", True)), value_slot="x",
    library=_DISJOINT_LIBRARY + ("disjoint_lanes1.wgsl",), params=DISJOINT_PARAMS, loops=disjoint_loops,
)
# Lp pooling's accumulator (lp_pool.wgsl) fed by the one pass over disjoint windows
LP_POOL_GRAD_DISJOINT = Kernel(
    "lp_pool.wgsl", (Slot("x", False), Slot("dy", False), Slot("dx", True)), value_slot="x",
    library=LP.library + ("lp_derivative.wgsl", "window_constants.wgsl", "divide.wgsl", "taps.wgsl",
                          "windows_covering.wgsl", "row_grid.wgsl", "lp_grad_disjoint.wgsl"),
    params=DISJOINT_PARAMS + ("opaque_zero",), loops=disjoint_loops,
)
MAX_POOL_GRAD_DISJOINT_CHANNELS = Kernel(  # four channels per invocation, in 4-element chunks
    "max_pool_grad_disjoint.wgsl",
    (Slot("x", False, snippet="read4_{storage}.wgsl"), Slot("dy", False, snippet="read4_{storage}.wgsl"),
     Slot("dx", True, snippet="write4_{storage}.wgsl")),
    value_slot="x", library=_DISJOINT_LIBRARY + ("disjoint_lanes4.wgsl",), params=DISJOINT_PARAMS,
    loops=disjoint_loops,
)
# The one-pass disjoint gradient over rows, by (x and dx in pairs of chunks, dy in chunks):
# see max_pool_grad_disjoint_rows.wgsl and common/disjoint_rows_*.wgsl.
MAX_POOL_GRAD_DISJOINT_ROWS = {
    (pairs, dy_chunks): Kernel(
        "max_pool_grad_disjoint_rows.wgsl",
        (Slot("x", False, snippet="read4_{storage}.wgsl"),
         Slot("dy", False, snippet="read4_{storage}.wgsl" if dy_chunks else ""),
         Slot("dx", True, snippet="write8_b16.wgsl" if pairs else "write4_{storage}.wgsl")),
        value_slot="x",
        library=_DISJOINT_LIBRARY + ("disjoint_rows_pairs.wgsl" if pairs else "disjoint_rows_chunks.wgsl",
                                     "disjoint_rows_dy4.wgsl" if dy_chunks else "disjoint_rows_dy1.wgsl"),
        params=DISJOINT_PARAMS, loops=disjoint_rows_loops,
    )
    for pairs in (False, True) for dy_chunks in (False, True)
}
# The row gathers (common/gather_rows.wgsl): "rows" where dy, dx (and the argmax) rows are
# whole 4-element chunks, "rows_any" where they start anywhere (chunks of single loads, dx
# stored element by element)
_ROWS_IO = {
    "rows": ("read4_{storage}.wgsl", "read4_b32.wgsl", "write4_{storage}.wgsl", "gather_rows_store4.wgsl"),
    "rows_any": ("read_{storage}.wgsl read4_any.wgsl", "read_b32.wgsl read4_any.wgsl", "write_{storage}.wgsl",
                 "gather_rows_store_any.wgsl"),
}
MAX_POOL_GRAD_ROWS = {
    gather: Kernel(
        "max_pool_grad_rows.wgsl",
        (Slot("dy", False, snippet=dy), Slot("arg", False, snippet=arg), Slot("dx", True, snippet=dx)),
        value_slot="dy",
        library=GRID_LIBRARY + ("window_constants.wgsl", "as_written.wgsl", "gather_rows.wgsl", store),
        params=ROWS_PARAMS + ("opaque_zero",), loops=rows_gather_loops,
    )
    for gather, (dy, arg, dx, store) in _ROWS_IO.items()
}
AVERAGE_POOL_GRAD_ROWS = {
    gather: Kernel(
        "average_pool_grad_rows.wgsl", (Slot("dy", False, snippet=dy), Slot("dx", True, snippet=dx)),
        value_slot="dy",
        library=GRID_LIBRARY + ("window_constants.wgsl",) + AVERAGE_DIVISOR + ("gather_rows.wgsl", store),
        params=ROWS_PARAMS + ("opaque_zero",), loops=rows_gather_loops,
    )
    for gather, (dy, _, dx, store) in _ROWS_IO.items()
}


def _channel_lanes(dx) -> bool:
    """Whether the block gathers run lanes along C (common/windows_covering.wgsl's
    CHANNEL_LANES): dx channels-last, so neighbouring lanes touch neighbouring elements
    (coalesced), not elements C apart (lavapipe, A and B NHWC: 10-25% faster)."""
    return dx.sizes[1] > 1 and strides_5d(dx).get("c") == 1


def _gathers_channels(desc, tuning: Tuning) -> bool:
    """Whether dy and dx meet the four-channel block gathers' layout (gather_lanes4.wgsl):
    channels-last, C a multiple of 4, 4-element aligned steps; and their loops fit the
    tuning's budget (they do not split)."""
    dy, dx = desc.input_gradient, desc.output_gradient
    return _channel_lanes(dx) and dx.sizes[1] % 4 == 0 and contiguous_along([dy, dx], "c") \
        and _fits(_gradient_block_pass(AVERAGE_POOL_GRAD_CHANNELS, desc, tuning, {}, _block_constants(desc.window,
                                                                                                      tuning)), tuning)



# The most dx elements a block gather's invocation visits (the product of the strides of the
# dimensions it takes whole blocks along).  Past it, element_block_axes gives dimensions element
# blocks (common/windows_covering.wgsl's BY_ELEMENT_{D,H,W}): loops of hundreds of thousands
# of iterations (strides far beyond the input: blocks mostly outside it) stall a GPU, and
# llvmpipe stops every loop of an invocation after 65535 iterations of them all together.
BLOCK_ELEMENTS_MAX = 4096


def element_block_axes(window) -> str:
    """The dimensions ("D", "H", "W") along which the block gathers take element blocks: the
    largest strides first, until the other strides' product is at most BLOCK_ELEMENTS_MAX
    (none for strides like 2x2, 16x16 or 16x16x16: their blocks are unchanged)."""
    blocked = dict(zip("DHW", as_3d(window.strides, 1)))
    while math.prod(blocked.values()) > BLOCK_ELEMENTS_MAX:
        del blocked[max(blocked, key=blocked.get)]
    return "".join(axis for axis in "DHW" if axis not in blocked)


def _gradient_block_pass(kernel: Kernel, desc, tuning: Tuning, tensors: dict, constants: dict, windows_w: int = 1,
                         scratch: Optional[Mapping[str, TensorDesc]] = None, channels_per_lane: int = 1,
                         elements: Optional[str] = None, parts: tuple = (1, 1, 1)) -> Pass:
    """One invocation per block of stride-many dx elements along each dimension (see
    wgsl/common/windows_covering.wgsl; one element along ``elements``, by default
    element_block_axes), or `windows_w` times the stride along W, rows of
    blocks folded as in max pooling; over channels-last dx, lanes along C, each taking
    `channels_per_lane` channels; with ``parts`` (along D, H, W), one part of the taps
    landing on its elements (a split gather).  ``tensors`` maps slot names to description
    roles (or ``scratch`` names; a slot it does not name is absent)."""
    dy, dx, window = desc.input_gradient, desc.output_gradient, desc.window
    n, c, in_d, in_h, in_w = as_5d(dx.sizes, dx.strides)[0]
    _, _, out_d, out_h, out_w = as_5d(dy.sizes, dy.strides)[0]
    # blocks b * stride - pad % stride + [0, stride) cover [0, size); element blocks: one per element
    # (the disjoint kernels are never given any: _max_pool_grad_program)
    elements = element_block_axes(window) if elements is None else elements
    count = math.prod(parts)
    blocks_d, blocks_h, blocks_w = (
        size if axis in elements else -(-(size + pad % stride) // stride)
        for axis, size, stride, pad in zip("DHW", (in_d, in_h, in_w), as_3d(window.strides, 1),
                                           as_3d(window.start_padding, 0))
    )
    blocks_w = -(-blocks_w // windows_w)
    wg_x = tuning.block_workgroup
    if windows_w == 1 and _channel_lanes(dx):
        per_n, lanes = blocks_d * blocks_h * blocks_w * count, -(-c // channels_per_lane)
        grid_constants, grid_params, grid = row_grid(lanes, n * per_n, wg_x, tuning.shapes_in_params)
        split = Split(per_n, partial(rows_regrid, lanes, wg_x, whole_rows=tuning.shapes_in_params), whole_n=True)
        grid_constants.update(CHANNEL_LANES=True, CHANNELS_PER_LANE=channels_per_lane)
    else:
        grid_constants, grid_params, grid = row_grid(blocks_w, n * c * blocks_d * blocks_h * count, wg_x,
                                                     tuning.shapes_in_params)
        split = Split(blocks_d * blocks_h * count, partial(rows_regrid, blocks_w, wg_x,
                                                           whole_rows=tuning.shapes_in_params))
    if count > 1:
        grid_constants.update(PARTS=count, **{f"PARTS_{axis}": p for axis, p in zip("DHW", parts)})
    params = {
        "channels": c,
        "in_d": in_d, "in_h": in_h, "in_w": in_w,
        "out_d": out_d, "out_h": out_h, "out_w": out_w,
        **divisor_params("blocks_d", blocks_d), **divisor_params("blocks_h", blocks_h),
        **divisor_params("blocks_w", blocks_w), **divisor_params("channels", c),
        **grid_params,
    }
    described = dict(desc.input_tensors() + desc.output_tensors(), **(scratch or {}))
    for slot, role in tensors.items():
        if role in described:
            params.update(tensor_stride_params(slot, described[role]))
    by_element = {f"BY_ELEMENT_{axis}": True for axis in elements}
    constants = {**grid_constants, **window_constants(window), **by_element, **constants}
    roles = tuple(tensors.get(slot.name) for slot in kernel.slots)
    return Pass(kernel, roles, sorted_constants(constants), params, grid, split)


def _fits(p: Pass, tuning: Tuning) -> bool:
    """Whether the pass's loops fit ``tuning.loop_budget``."""
    return loop_total(p.kernel, p.constants, p.params) <= tuning.loop_budget


def _block_gather_passes(kernel: Kernel, desc, tuning: Tuning, tensors: dict, constants: dict,
                         scratch: Optional[Mapping[str, TensorDesc]] = None) -> tuple:
    """(the passes of a one-lane block gather, the scratch they add): blocks as
    element_block_axes makes them, with element blocks along more dimensions (the largest
    strides first) until their loops fit ``tuning.loop_budget``; else, where more taps land
    on one element than that allows, the split gather (each invocation sums a part of an
    element's taps) and its merge passes (window_walk_merge.wgsl over gradient_sum.wgsl:
    the parts added in order)."""
    axes = element_block_axes(desc.window)
    strides = dict(zip("DHW", as_3d(desc.window.strides, 1)))
    while True:
        elements = _gradient_block_pass(kernel, desc, tuning, tensors, constants, scratch=scratch, elements=axes)
        if _fits(elements, tuning):
            return (elements,), ()
        if len(axes) == 3:
            break
        axis = max((a for a in "DHW" if a not in axes), key=strides.get)
        axes = "".join(a for a in "DHW" if a in axes or a == axis)
    base = dict(elements.constants)

    def trips(parts: tuple) -> int:
        cut = dict(base, **{f"PARTS_{axis}": p for axis, p in zip("DHW", parts)})
        return loop_total(kernel, cut, elements.params)

    parts = fewest_parts(trips, tuple(_landing(base, elements.params, axis) for axis in "DHW"), tuning.loop_budget)
    walk = _gradient_block_pass(kernel, desc, tuning, dict(tensors, part="dx_part"), constants, scratch=scratch,
                                elements="DHW", parts=parts)
    merges, merge_scratch = gradient_merge_passes(desc.output_gradient, math.prod(parts), tuning.lines_workgroup,
                                                  tuning.loop_budget)
    return (walk,) + merges, merge_scratch


def _tap_steps(window) -> dict:
    """T{D,H,W} and I{D,H,W} of windows_covering.wgsl's first_tap: the taps landing on one
    block element recur every step = stride / gcd(dilation, stride) taps."""
    constants = {}
    for axis, s, l in zip("DHW", as_3d(window.strides, 1), as_3d(window.dilations, 1)):
        step = s // math.gcd(l, s)
        constants.update({f"T{axis}": step, f"I{axis}": pow(l // (s // step), -1, step)})
    return constants


def _block_constants(window, tuning: Tuning) -> dict:
    """The block gathers' override constants: the tap steps of first_tap (T, I), and where
    the tuning takes it, with strides of at most 2 and at most 2 windows reaching a block
    along every dimension, the windows-first visit (common/windows_first.wgsl: WINDOWS_FIRST,
    NW)."""
    constants = _tap_steps(window)
    reaching = [(e - 1) // s + 1 for e, s in zip(as_3d(window.extents, 1), as_3d(window.strides, 1))]
    if tuning.windows_first and max(as_3d(window.strides, 1)) <= 2 and max(reaching) <= 2:
        constants.update(WINDOWS_FIRST=True, **{f"NW{axis}": m for axis, m in zip("DHW", reaching)})
    return constants


def _row_gather(desc, tuning: Tuning) -> Optional[str]:
    """The row gather (common/gather_rows.wgsl) the tuning takes where dx and dy meet its
    layout: "rows" for rows of whole chunks (the argmax scratch, packed, then meets it too),
    "rows_any" for rows that start anywhere (``tuning.any_rows``); None for neither."""
    dy, dx = desc.input_gradient, desc.output_gradient
    in_w, out_w = as_5d(dx.sizes, dx.strides)[0][4], as_5d(dy.sizes, dy.strides)[0][4]
    if not tuning.row_gathers or element_block_axes(desc.window) or any(
            strides_5d(t).get("w", 1) != 1 for t in (dx, dy)):
        return None
    gather = "rows" if in_w % 4 == 0 and out_w % 4 == 0 and contiguous_along([dx, dy], "w") else "rows_any"
    if gather == "rows_any" and not tuning.any_rows:
        return None
    return gather if _fits(_gradient_rows_pass(MAX_POOL_GRAD_ROWS[gather], desc, tuning, {}, {}), tuning) else None


def _dy_chunks(window) -> int:
    """DY_CHUNKS of common/gather_rows.wgsl: the most aligned 4-column chunks that the
    windows reaching eight dx elements w0 .. w0 + 7 (w0 a multiple of 8) span."""
    stride, pad, extent = window.strides[-1], window.start_padding[-1], window.extents[-1]
    most = 1
    for w0 in range(0, 32 * stride, 8):  # the chunks' pattern repeats with w0 every lcm(8, 4 * stride)
        # (not clamped at the row's start: a wide window's blocks far from it need every
        # chunk, and w0 here stays small)
        first = -(-(w0 + pad - (extent - 1)) // stride)
        last = (w0 + 7 + pad) // stride
        most = max(most, last // 4 - first // 4 + 1)
    return most


def _fixed_columns(window) -> dict:
    """FIXED_COLUMNS and FIRST_CHUNK of common/gather_rows.wgsl: with a stride of 1 or 2 along
    W, the invocation of w0 = 8 * column visits the chunks from w0 / (4 * stride) + FIRST_CHUNK
    (the first window reaching w0 is ceil((w0 + pad - (extent - 1)) / stride), not clamped)."""
    stride, pad, extent = window.strides[-1], window.start_padding[-1], window.extents[-1]
    if stride > 2:
        return {}
    return {"FIXED_COLUMNS": True, "FIRST_CHUNK": (-(-(pad - (extent - 1)) // stride)) // 4}


def _oh_rows(window) -> int:
    """OH_ROWS of common/gather_rows.wgsl: the most window rows that can cover two dx rows
    h0, h0 + 1 (h0 even)."""
    stride, pad, extent = as_3d(window.strides, 1)[1], as_3d(window.start_padding, 0)[1], as_3d(window.extents, 1)[1]
    most = 1
    for h0 in range(0, 2 * stride, 2):  # the pattern repeats with h0 every lcm(2, stride)
        first = -(-(h0 + pad - (extent - 1)) // stride)
        last = (h0 + 1 + pad) // stride
        most = max(most, last - first + 1)
    return most


def _gradient_rows_pass(kernel: Kernel, desc, tuning: Tuning, tensors: dict, constants: dict) -> Pass:
    """One invocation per 2 x 8 dx elements along H and W (common/gather_rows.wgsl).
    ``tensors`` maps slot names to description roles."""
    dy, dx, window = desc.input_gradient, desc.output_gradient, desc.window
    n, c, in_d, in_h, in_w = as_5d(dx.sizes, dx.strides)[0]
    _, _, out_d, out_h, out_w = as_5d(dy.sizes, dy.strides)[0]
    columns = -(-in_w // 8)
    grid_constants, grid_params, grid = tuned_lines_grid(columns, -(-in_h // 2), n * c * in_d, tuning)
    constants = {**grid_constants, **window_constants(window), "DY_CHUNKS": _dy_chunks(window),
                 "OH_ROWS": _oh_rows(window), **_fixed_columns(window), **constants}
    params = {
        "channels": c, "in_d": in_d, "in_h": in_h, "in_w": in_w, "out_d": out_d, "out_h": out_h, "out_w": out_w,
        **tensor_stride_params("dy", dy), **tensor_stride_params("dx", dx), **grid_params,
    }
    split = Split(in_d, partial(lines_regrid, columns, -(-in_h // 2), tuning.lines_workgroup,
                                flat=grid_constants.get("FLAT", False)))
    return Pass(kernel, tuple(tensors.get(slot.name) for slot in kernel.slots), sorted_constants(constants), params, grid, split)


def _lone_windows_disjoint(desc):
    """``desc`` with the stride of every dimension that has a single window (output size 1)
    raised to the window's extent: the same windows and results, but the gathers see
    windows that cannot overlap there (global pooling's gradient: one tap per dx element,
    not a search over the whole window for the one window)."""
    out_sizes = desc.input_gradient.sizes[2:]
    window = desc.window
    strides = tuple(max(s, e) if o == 1 else s for s, e, o in zip(window.strides, window.extents, out_sizes))
    return desc if strides == window.strides else replace(desc, strides=strides)


def _channels_last_io(desc) -> bool:
    """Whether x and dx are channels-last (the argmax scratch then is too)."""
    return _channel_lanes(desc.output_gradient) and strides_5d(desc.input).get("c") == 1


@register("max_pool_grad")
def _max_pool_grad_program(desc, tuning: Tuning) -> Program:
    whole_planes = plane_gradient(desc, tuning) if covers_planes(desc) else None
    if whole_planes is not None:
        return whole_planes
    desc = _lone_windows_disjoint(desc)
    disjoint = {"x": "input", "dy": "input_gradient", "dx": "output_gradient"}
    if _disjoint(desc) and _fits(_gradient_block_pass(MAX_POOL_GRAD_DISJOINT, desc, tuning, disjoint, {}), tuning):
        # (with element blocks, reading each window once per element: the gather instead)
        return _disjoint_max_pool_grad_program(desc, tuning)
    forward = desc.forward
    if _channels_last_io(desc):
        # channels-last x and dx: a channels-last argmax too (and output, which pass 1 does
        # not write), so that pass 1 can take the channels walk and the gather (lanes along
        # C) reads it coalesced
        sizes = forward.output.sizes
        forward = replace(forward, output=channels_last_desc(forward.output.data_type, sizes),
                          output_indices=channels_last_desc(DataType.UINT32, sizes))
    walk = walk_for(forward, tuning)
    gather = _row_gather(desc, tuning) or \
        ("channels" if _channels_last_io(desc) and _gathers_channels(desc, tuning) else "blocks")
    # (for calls whose tensors do not start where the chunked walks and gathers need them)
    fallback = _argmax_then_gather(desc, forward, tuning, unaligned_walk(forward, tuning),
                                   "rows_any" if gather == "rows" and tuning.any_rows else "blocks")
    if walk == "plane" and gather == "blocks":
        return fallback   # (the plane walk's argmax only before the row and channel gathers)
    aligned = (("input",) if walk in CHUNKED_WALKS else ()) + \
        (("input_gradient", "output_gradient") if gather in ("rows", "channels") else ())
    program = _argmax_then_gather(desc, forward, tuning, walk, gather)
    if not aligned:  # (a walk and a gather that take tensors anywhere)
        return program
    pairs = walk in ("rows", "rows_tail") and reads_pairs(forward)  # pass 1 reads x in pairs of chunks
    return replace(program, aligned=aligned, fallback=fallback, aligned_elements=8 if pairs else 4)


def _argmax_then_gather(desc, forward, tuning: Tuning, walk: str, gather: str) -> Program:
    """Pass 1: forward max pooling (``forward``, on ``walk``) writing only each window's
    argmax (into scratch; no forward values: the y slot is absent); pass 2: the gather
    ("rows" or "rows_any", "channels": four channels per invocation in 4-element chunks, or "blocks")
    adding each window's dy at its argmax."""
    argmax, walk_scratch = window_walk_passes(MAX_POOL, MAX, forward, ("input", None, "argmax"), tuning, walk)
    scratch = (("argmax", forward.output_indices),) + walk_scratch
    tensors = {"dy": "input_gradient", "arg": "argmax", "dx": "output_gradient"}
    if gather in MAX_POOL_GRAD_ROWS:
        gathers, gather_scratch = (_gradient_rows_pass(MAX_POOL_GRAD_ROWS[gather], desc, tuning, tensors, {}),), ()
    elif gather == "channels":
        gathers, gather_scratch = (_gradient_block_pass(MAX_POOL_GRAD_CHANNELS, desc, tuning, tensors,
                                                        _block_constants(desc.window, tuning), scratch=dict(scratch),
                                                        channels_per_lane=4),), ()
    else:
        gathers, gather_scratch = _block_gather_passes(MAX_POOL_GRAD, desc, tuning, tensors,
                                                       _block_constants(desc.window, tuning), dict(scratch))
    return Program(argmax + gathers, scratch=scratch + gather_scratch)


def _disjoint_max_pool_grad_program(desc, tuning: Tuning) -> Program:
    """No dx element lies in two windows: one pass finds each argmax and writes its block
    (measured faster than the two passes on lavapipe, case B: 39 ms to 50)."""
    window = desc.window
    disjoint = {"x": "input", "dy": "input_gradient", "dx": "output_gradient"}
    general = Program((_gradient_block_pass(MAX_POOL_GRAD_DISJOINT, desc, tuning, disjoint, {}),))
    if _channels_last_io(desc) and _gathers_channels(desc, tuning) and contiguous_along([desc.input], "c"):
        # four channels per invocation, x, dy and dx in 4-element chunks
        four = Program((_gradient_block_pass(MAX_POOL_GRAD_DISJOINT_CHANNELS, desc, tuning, disjoint, {},
                                             channels_per_lane=4),))
        return replace(four, aligned=("input", "input_gradient", "output_gradient"), fallback=general)
    in_w = desc.input.sizes[-1]  # dx rows are written in whole chunks
    if in_w % 4 or window.start_padding[-1] or window.strides[-1] > 8 or \
            not contiguous_along([desc.input, desc.output_gradient], "w"):
        return general
    # four windows along W per invocation, x and dx in 4-element chunks (B: 39 ms to 23);
    # 16-bit ones in pairs of chunks where blocks start at multiples of 8 elements (even
    # strides), and the four windows' dy as one chunk where dy rows are whole chunks
    pairs = reads_pairs(desc) and window.strides[-1] % 2 == 0 and \
        desc.output_gradient.data_type.size == 2 and pair_aligned(desc.output_gradient)
    dy_chunks = desc.input_gradient.sizes[-1] % 4 == 0 and contiguous_along([desc.input_gradient], "w")
    kernel = MAX_POOL_GRAD_DISJOINT_ROWS[pairs, dy_chunks]
    rows = Program((_gradient_block_pass(kernel, desc, tuning, disjoint, {}, windows_w=4),))
    aligned = ("input", "output_gradient") + (("input_gradient",) if dy_chunks else ())
    return replace(rows, aligned=aligned, fallback=general, aligned_elements=8 if pairs else 4)


@register("average_pool_grad")
def _average_pool_grad_program(desc, tuning: Tuning) -> Program:
    whole_planes = plane_gradient(desc, tuning, divisor_override=desc.divisor_override) if covers_planes(desc) else None
    if whole_planes is not None:
        return whole_planes
    desc = _lone_windows_disjoint(desc)
    tensors = {"dy": "input_gradient", "dx": "output_gradient"}
    constants = average_divisor_constants(desc)
    block_constants = {**constants, **_block_constants(desc.window, tuning)}
    if _disjoint(desc) and not block_constants.get("WINDOWS_FIRST"):
        # each block's window read once (windows-first, where it is taken, already does)
        disjoint = dict(block_constants, DISJOINT=True)
        if _fits(_gradient_block_pass(AVERAGE_POOL_GRAD, desc, tuning, tensors, disjoint), tuning):
            block_constants = disjoint
    passes, scratch = _block_gather_passes(AVERAGE_POOL_GRAD, desc, tuning, tensors, block_constants)
    general = Program(passes, scratch=scratch)
    gather = _row_gather(desc, tuning)
    if gather is not None:
        def rows(gather: str) -> Program:
            return Program((_gradient_rows_pass(AVERAGE_POOL_GRAD_ROWS[gather], desc, tuning, tensors, constants),))

        if gather == "rows_any":
            return rows(gather)
        # (rows of whole chunks need their tensors at multiples of 4 elements: else single loads)
        return replace(rows(gather), aligned=("input_gradient", "output_gradient"),
                       fallback=rows("rows_any") if tuning.any_rows else general)
    if _gathers_channels(desc, tuning):  # four channels per invocation, in 4-element chunks
        four = Program((_gradient_block_pass(AVERAGE_POOL_GRAD_CHANNELS, desc, tuning, tensors, block_constants,
                                             channels_per_lane=4),))
        return replace(four, aligned=("input_gradient", "output_gradient"), fallback=general)
    return general


def _disjoint(desc) -> bool:
    """Whether no dx element lies in two windows (stride >= dilated extent everywhere), and
    the one-pass gradients' blocks hold whole windows (no element blocks)."""
    window = desc.window
    return all(s >= e for s, e in zip(window.strides, window.extents)) and not element_block_axes(window)


@register("lp_pool_grad")
def _lp_pool_grad_program(desc, tuning: Tuning) -> Program:
    """Where windows do not overlap (with ``Tuning.lp_gradient_one_pass``): one pass computing
    each window's y and writing its block (common/lp_grad_disjoint.wgsl).  Else pass 1: the
    forward Lp pooling (on the walk of walk_for) into scratch "lp_output"; pass 2: the gather
    adding each window's dy times its d y / d x (lp_pool_grad.wgsl)."""
    desc = _lone_windows_disjoint(desc)
    forward = desc.forward
    if tuning.lp_gradient_one_pass and _disjoint(desc):
        one = _gradient_block_pass(LP_POOL_GRAD_DISJOINT, desc, tuning,
                                   {"x": "input", "dy": "input_gradient", "dx": "output_gradient"},
                                   lp_constants(forward))
        if _fits(one, tuning):
            return Program((one,))
    walk = walk_for(forward, tuning)

    def program(walk: str) -> Program:
        passes, walk_scratch = window_walk_passes(LP_POOL, LP, forward, ("input", "lp_output", None), tuning, walk,
                                                  **lp_constants(forward))
        scratch = (("lp_output", forward.output),) + walk_scratch
        tensors = {"x": "input", "y": "lp_output", "dy": "input_gradient", "dx": "output_gradient"}
        gathers, gather_scratch = _block_gather_passes(LP_POOL_GRAD, desc, tuning, tensors,
                                                       {**_tap_steps(desc.window), "P": desc.p}, dict(scratch))
        return Program(passes + gathers, scratch=scratch + gather_scratch)

    if walk not in CHUNKED_WALKS:
        return program(walk)
    pairs = walk in ("rows", "rows_tail") and reads_pairs(forward)
    return replace(program(walk), aligned=("input",), fallback=program(unaligned_walk(forward, tuning)),
                   aligned_elements=8 if pairs else 4)
