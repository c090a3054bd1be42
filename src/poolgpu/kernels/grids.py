"""Geometry shared by the kernels: 5-D views of tensors, override constants of a window,
uniform values of strides and divisors, workgroup grids and the layout predicates that
decide which kernels a tensor's strides allow."""

from __future__ import annotations

import math
from typing import Mapping

from ..dtypes import DataType
from ..limits import WEBGPU
from ..tensor_desc import TensorDesc

MAX_WORKGROUPS_PER_DIM = 65535
# Workgroups stay within WebGPU's guaranteed sizes whatever the Tuning (NVIDIA's Vulkan
# driver also allows only 64 along z); x and y never exceed a Tuning's 256 invocations.
MAX_WORKGROUP_SIZE_Z = WEBGPU["max-compute-workgroup-size-z"]

def as_5d(sizes: tuple, strides: tuple):
    """{N, C, spatial...} -> {N, C, D, H, W} by inserting unit leading spatial dimensions."""
    missing = 5 - len(sizes)
    return sizes[:2] + (1,) * missing + sizes[2:], strides[:2] + (0,) * missing + strides[2:]


def as_3d(values: tuple, fill: int) -> tuple:
    return (fill,) * (3 - len(values)) + tuple(values)


# Params fields (see Kernel.params) of the values this module computes, by group.
IN_SIZES = ("in_d", "in_h", "in_w")      # the (forward) input's spatial sizes
OUT_SIZES = ("out_d", "out_h", "out_w")  # the (forward) output's
LINES_GRID = ("columns", "lines", "line_groups", "planes", "plane_origin",  # lines_grid: common/grid.wgsl
              "columns_magic", "columns_shift", "lines_magic", "lines_shift")
GRID_LIBRARY = ("divide.wgsl", "grid.wgsl")  # common/grid.wgsl and what it calls
ROW_GRID = ("column_groups", "rows", "row_origin")  # row_grid: common/row_grid.wgsl
FLAT_GRID = ("total", "origin")  # flat_grid: common/flat_index.wgsl (outputs from `origin`)


def stride_fields(*names: str, axes: str = "ncdhw") -> tuple:
    """The fields of tensor_stride_params for each tensor name (along ``axes``: kernels
    reading rows in chunks take W's stride as 1)."""
    return tuple(f"{name}_{axis}" for name in names for axis in axes)


def divisor_fields(*names: str) -> tuple:
    """The fields of divisor_params for each name: the divisor, its magic and shift."""
    return tuple(f"{name}{suffix}" for name in names for suffix in ("", "_magic", "_shift"))


def divisor_params(name: str, d: int) -> dict:
    """Params ``name``, ``name_magic`` and ``name_shift`` of common/divide.wgsl's divide():
    n / d for every u32 n by a multiply-high and shifts (Granlund and Montgomery)."""
    ceil_log2 = (d - 1).bit_length()
    magic = ((1 << 32) * ((1 << ceil_log2) - d)) // d + 1
    return {name: d, f"{name}_magic": magic & 0xFFFFFFFF, f"{name}_shift": max(ceil_log2 - 1, 0)}


def tensor_stride_params(name: str, tensor) -> dict:
    if tensor is None:
        return {f"{name}_{axis}": 0 for axis in "ncdhw"}
    _, strides = as_5d(tensor.sizes, tensor.strides)
    return {f"{name}_{axis}": s for axis, s in zip("ncdhw", strides)}


def fold_groups(groups: int) -> tuple:
    """A grid of `groups` workgroups numbered ``wg.y * 65535 + wg.x`` (x at most 65535; the
    kernel skips groups past the end).  Its y exceeds 65535 only past 65535^2 groups, where
    :func:`chunked` splits the pass."""
    across = min(max(groups, 1), MAX_WORKGROUPS_PER_DIM)
    return (across, math.ceil(groups / across), 1)


def grid_fits(grid: tuple) -> bool:
    return all(g <= MAX_WORKGROUPS_PER_DIM for g in grid)


def row_grid(columns: int, rows: int, wg_x: int, whole_rows: bool = False) -> tuple:
    """(constants, params, grid) of common/row_grid.wgsl: `rows` rows of `columns`
    invocations in workgroups of `wg_x` lanes, ROW_LANES of them along a row (rows shorter
    than a workgroup share one: no idle lanes; with ``whole_rows``, the shape-generic form,
    a row takes whole workgroups whatever its length); row groups over workgroup y, folded
    into z past 65535, or all workgroups numbered flat where a row needs more than 65535
    (FOLDED)."""
    lanes = wg_x if whole_rows else min(columns, wg_x)
    column_groups = math.ceil(columns / lanes)
    row_groups = math.ceil(rows / (wg_x // lanes))
    constants = {"WG_X": wg_x, "ROW_LANES": lanes}
    params = {"column_groups": column_groups, "rows": rows, "row_origin": 0}
    across = min(row_groups, MAX_WORKGROUPS_PER_DIM)
    grid = (column_groups, across, math.ceil(row_groups / across))
    if not grid_fits(grid):
        constants["FOLDED"] = True
        grid = fold_groups(column_groups * row_groups)
    return constants, params, grid


def flat_grid(total: int, wg_x: int) -> tuple:
    """Workgroups for `total` invocations numbered ``group * wg_x + lane`` (flat_index.wgsl)."""
    return fold_groups(math.ceil(total / wg_x))


def rows_regrid(columns: int, wg_x: int, first: int, count: int, whole_rows: bool = False) -> tuple:
    constants, params, grid = row_grid(columns, count, wg_x, whole_rows)
    return {"FOLDED": constants.get("FOLDED", False)}, dict(params, row_origin=first), grid


def flat_regrid(wg_x: int, first: int, count: int) -> tuple:
    return {}, {"total": count, "origin": first}, flat_grid(count, wg_x)


def sorted_constants(constants: Mapping) -> tuple:
    return tuple(sorted(constants.items()))


def window_constants(window) -> dict:
    """The window geometry as the override constants K/S/L/P{D,H,W} and PADDED."""
    constants = {"PADDED": window.has_padding}
    for axis, k, s, l, p in zip(
        "DHW",
        as_3d(window.window_size, 1),
        as_3d(window.strides, 1),
        as_3d(window.dilations, 1),
        as_3d(window.start_padding, 0),
    ):
        constants.update({f"K{axis}": k, f"S{axis}": s, f"L{axis}": l, f"P{axis}": p})
    return constants


# The forward fixed-window pooling kernels: an operator's accumulator (max_pool.wgsl,
# avg_pool.wgsl, lp_pool.wgsl) under one of the window walks (common/window_walk*.wgsl):

def strides_5d(tensor) -> dict:
    """Axis -> stride of the dimensions of size > 1 (the others are never stepped)."""
    sizes, strides = as_5d(tensor.sizes, tensor.strides)
    return {axis: st for axis, size, st in zip("ncdhw", sizes, strides) if size > 1}


def contiguous_along(tensors, axis: str) -> bool:
    """Whether every tensor has unit stride along `axis` and 4-element aligned steps along
    the others: the layout the chunked walks read and write 4 elements at a time."""
    for t in tensors:
        strides = strides_5d(t)
        if strides.get(axis, 1) != 1 or any(st % 4 for a, st in strides.items() if a != axis):
            return False
    return True




def lines_grid(columns: int, lines: int, planes: int, workgroup: int, flat: bool = False) -> tuple:
    """Workgroup shape, uniform values and grid of window_geometry.wgsl's grid_position:
    `workgroup` invocations, WG_X of them along a line of `columns` (exactly, when a line is shorter:
    no idle lanes), the rest over lines, and over planes when lines are few; plane groups
    over workgroup z, folded into y past 65535.  Where even so a dimension would exceed
    65535 workgroups, they are numbered flat instead (grid.wgsl's FOLDED).  Planes count
    from ``plane_origin`` (a chunk's first, see chunked).  With ``flat``
    (``Tuning.whole_workgroups``), the positions themselves are numbered flat, `workgroup` to a
    workgroup (grid.wgsl's FLAT: every lane of every workgroup but the last busy), where their
    numbers fit a u32."""
    params = {"columns": columns, "lines": lines, "planes": planes, "plane_origin": 0,
              **divisor_params("columns", columns), **divisor_params("lines", lines)}
    if flat and columns * lines * planes <= 2**32 - workgroup:
        groups = math.ceil(columns * lines * planes / workgroup)
        return {"WG_X": workgroup, "WG_Y": 1, "WG_Z": 1, "FLAT": True}, dict(params, line_groups=1), fold_groups(groups)
    wg_x = min(columns, workgroup)
    wg_y = min(max(1, workgroup // wg_x), lines)
    wg_z = min(max(1, workgroup // (wg_x * wg_y)), planes, MAX_WORKGROUP_SIZE_Z)
    line_groups = math.ceil(lines / wg_y)
    plane_groups = math.ceil(planes / wg_z)
    folds = math.ceil(plane_groups / MAX_WORKGROUPS_PER_DIM)
    constants = {"WG_X": wg_x, "WG_Y": wg_y, "WG_Z": wg_z}
    params["line_groups"] = line_groups
    grid = (math.ceil(columns / wg_x), line_groups * folds, min(plane_groups, MAX_WORKGROUPS_PER_DIM))
    if not grid_fits(grid):
        constants["FOLDED"] = True
        grid = fold_groups(math.ceil(columns / wg_x) * line_groups * plane_groups)
    return constants, params, grid


def tuned_lines_grid(columns: int, lines: int, planes: int, tuning) -> tuple:
    """lines_grid with ``tuning``'s workgroup, numbered flat under ``whole_workgroups`` or
    where a line has fewer than ``tuning.flat_lines_under`` columns (a workgroup that narrow
    along x would leave CPU adapters' SIMD vectors, which run along x, mostly idle)."""
    flat = tuning.whole_workgroups or columns < tuning.flat_lines_under
    return lines_grid(columns, lines, planes, tuning.lines_workgroup, flat)


def lines_regrid(columns: int, lines: int, workgroup: int, first: int, count: int, flat: bool = False) -> tuple:
    """lines_grid over planes [first, first + count); ``flat``: the whole pass's grid is FLAT."""
    constants, params, grid = lines_grid(columns, lines, count, workgroup, flat)
    shape = {"FLAT": True} if flat else {}
    return {"FOLDED": constants.get("FOLDED", False), **shape}, dict(params, plane_origin=first), grid


def channels_last_desc(data_type: DataType, sizes: tuple) -> TensorDesc:
    """A packed channels-last tensor: C innermost, then W, H, D, N."""
    strides, step = [0] * len(sizes), 1
    for axis in [1] + list(range(len(sizes) - 1, 1, -1)) + [0]:
        strides[axis], step = step, step * sizes[axis]
    return TensorDesc(data_type, sizes, tuple(strides))
