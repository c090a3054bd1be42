"""The gradients of global pooling by groups of lanes sized to the plane
(``Tuning.packed_planes``): the plane walk's groups (window.plane_group_lanes, several
planes to a workgroup where they are small) each write their plane's dx in 4-element chunks
(common/plane_write.wgsl), the max gradient after its plane's argmax (common/plane_reduce.wgsl)
in the same pass.  For max and average pooling whose one window covers each whole plane, and
adaptive pooling to one output."""

from __future__ import annotations

import math
from functools import partial
from typing import Optional

from ..tuning import Tuning
from .core import Kernel, Pass, Program, Slot, Split
from .grids import IN_SIZES, as_5d, sorted_constants, stride_fields, tensor_stride_params
from .split import iterations, loop_total
from .window import flat_planes, plane_group_lanes, plane_lanes, plane_loops, plane_regrid


def write_loops(constants: dict, params: dict) -> dict:
    """common/plane_write.wgsl's loop: a lane's chunks of a plane (which spans at most
    (size + 2) // 4 + 1 chunks)."""
    size = params["in_d"] * params["in_h"] * params["in_w"]
    return {"chunk": iterations(1, -(-((size + 2) // 4 + 1) // plane_lanes(constants, params)))}


def max_grad_loops(constants: dict, params: dict) -> dict:
    """max_pool_grad_plane.wgsl's loops: the plane walk's, then the writes."""
    return dict(plane_loops(constants, params), **write_loops(constants, params))


_PARAMS = ("channels",) + IN_SIZES + ("planes", "plane_origin", "plane_lanes")
_DX = Slot("dx", True, snippet="write4_one_{storage}.wgsl")
MAX_POOL_GRAD_PLANE = Kernel(
    "max_pool_grad_plane.wgsl", (Slot("x", False, snippet="read4_{storage}.wgsl"), Slot("dy", False), _DX),
    value_slot="x", library=("max_accumulator.wgsl", "plane_lanes.wgsl", "plane_reduce.wgsl", "plane_write.wgsl"),
    params=_PARAMS + stride_fields("x", "dy", "dx", axes="nc") + ("opaque_zero",), loops=max_grad_loops,
)
AVERAGE_POOL_GRAD_PLANE = Kernel(
    "average_pool_grad_plane.wgsl", (Slot("dy", False), _DX), value_slot="dy",
    library=("as_written.wgsl", "plane_lanes.wgsl", "plane_write.wgsl"),
    params=_PARAMS + stride_fields("dy", "dx", axes="nc") + ("opaque_zero",), loops=write_loops,
)


def plane_gradient(desc, tuning: Tuning, summed: bool = False, divisor_override: Optional[int] = None):
    """The one-pass program of ``desc``, a max gradient (it has an ``input``: x) or an
    average gradient whose one window covers each whole plane, by the plane walk's groups
    (``summed``: the max gradient writes 0 + dy, as the binned gathers; ``divisor_override``:
    the average's divisor instead of the plane's size); None where the tuning does not take
    packed planes, the planes of x or dx are not contiguous, or the loops do not fit the
    tuning's budget."""
    x, dy, dx = getattr(desc, "input", None), desc.input_gradient, desc.output_gradient
    if not (tuning.plane_walk and tuning.packed_planes) or not all(flat_planes(t) for t in (x, dx) if t is not None):
        return None
    n, c, in_d, in_h, in_w = as_5d(dx.sizes, dx.strides)[0]
    lanes = plane_group_lanes(in_d * in_h * in_w, n * c, tuning)
    groups = tuning.plane_lanes // lanes
    constants = {"WG_X": tuning.plane_lanes}
    if not tuning.shapes_in_params:  # (else the kernels read them from Params)
        constants["PLANE_LANES"] = lanes
    params = {"channels": c, "in_d": in_d, "in_h": in_h, "in_w": in_w, "planes": n * c, "plane_origin": 0,
              "plane_lanes": lanes, **tensor_stride_params("dy", dy), **tensor_stride_params("dx", dx)}
    if x is not None:
        kernel, roles = MAX_POOL_GRAD_PLANE, ("input", "input_gradient", "output_gradient")
        constants["SUMMED"] = summed   # (a plane in one run: plane_loops' span is the plane's size)
        if tuning.plane_chunks > 1:
            constants["STEP"] = tuning.plane_chunks
        params.update(tensor_stride_params("x", x))
    else:
        kernel, roles = AVERAGE_POOL_GRAD_PLANE, ("input_gradient", "output_gradient")
        if divisor_override is not None:
            constants["DIVISOR_OVERRIDE"] = divisor_override
    if loop_total(kernel, constants, params) > tuning.loop_budget:
        return None
    grid = plane_regrid(groups, 0, n * c)[2]
    return Program((Pass(kernel, roles, sorted_constants(constants), params, grid,
                         Split(1, partial(plane_regrid, groups))),))


def covers_planes(desc) -> bool:
    """Whether the one window of ``desc`` (a fixed-window gradient) covers each whole input
    plane: the window is the plane's size, with no start padding or dilation."""
    window = desc.window
    return tuple(window.window_size) == tuple(desc.output_gradient.sizes[2:]) and not any(window.start_padding) \
        and all(d == 1 for d in window.dilations) and math.prod(desc.input_gradient.sizes[2:]) == 1
