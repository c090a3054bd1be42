"""The kernel registry: each operator's Program (its passes: .wgsl file, tensors, override
constants, uniform values, dispatch geometry) and how a shader's source is assembled.

A shader is one file in ``wgsl/``.  Before compiling, one small visible step prepends:

1. the value snippet of its main tensor's data type (``wgsl/common/value_*.wgsl``: the
   ``Raw`` and ``Key`` types and how values compare), and
2. one I/O snippet per tensor (``wgsl/common/{read,write}_b{8,16,32,64}.wgsl`` or
   ``absent.wgsl``), with ``$name``, ``$binding`` and ``$access`` substituted, giving the
   kernel ``x_load(e)``, ``y_store(e, v)``, ... over u32 words whatever the type.

Everything else is specialised by override constants.  Binding 0 is the kernel's
``struct Params`` uniform; Python fills it by field name (see :func:`params_fields`), so
the shader's struct is the one place that fixes its layout.
"""

from __future__ import annotations

import math
import re
import struct
from dataclasses import dataclass, replace
from functools import lru_cache, partial
from pathlib import Path
from string import Template
from typing import Callable, Mapping, Optional

from .descs import AveragePooling1Desc, MaxPooling2Desc
from .dtypes import DataType
from .errors import DeviceError
from .tensor_desc import TensorDesc

WGSL_DIR = Path(__file__).parent / "wgsl"
MAX_WORKGROUPS_PER_DIM = 65535


@lru_cache(maxsize=None)
def read_wgsl(name: str) -> str:
    return (WGSL_DIR / name).read_text()


@dataclass(frozen=True)
class Slot:
    """A tensor binding of a shader: its prefix in WGSL (``x`` gives ``x_load``) and whether
    the shader writes it.  ``snippet`` names a ``wgsl/common`` I/O snippet to use instead of
    the data type's read/write one (e.g. ``atomic_b32.wgsl`` for atomic scratch words);
    ``{storage}`` in it becomes the data type's storage class (``read4_{storage}.wgsl``)."""

    name: str
    output: bool
    snippet: str = ""


@dataclass(frozen=True)
class Kernel:
    """A .wgsl file and its tensor slots, bound in order from binding 1 (0 is Params).
    ``library`` lists shared files (``wgsl/common/``) appended after it, such as the
    window walk that calls the operator's accumulator."""

    file: str
    slots: tuple
    value_slot: str  # the slot whose data type picks the value snippet
    library: tuple = ()


@dataclass(frozen=True)
class Split:
    """How a pass divides when its tensors exceed a storage binding (see :func:`chunked`).

    Every kernel numbers its grid's units (planes, rows or outputs) plane by plane of its
    tensors' {N, C}: ``per_plane`` units per (n, c) plane (per n where ``whole_n``, as the
    channels walk, whose units hold all of C), so a run of planes is a run of units, and
    ``regrid(first unit, units)`` gives the override constants, params and grid of the pass
    restricted to them (the kernel adds its uniform origin to the units it numbers).  Roles
    in ``whole`` are bound whole (bin tables, ROIs).  A role accessed at data-dependent
    planes is restricted by ``filter(first plane, planes, first range?, last range?)`` ->
    params: ``gather`` (read: the pass runs once per range of its planes; only where
    ``ranged``, else the program's fallback runs) or ``scatter`` (written: its planes follow
    the chunk, the pass's own units run over all of theirs)."""

    per_plane: int
    regrid: Callable
    whole_n: bool = False
    whole: tuple = ()
    gather: str = ""
    scatter: str = ""
    filter: Optional[Callable] = None
    ranged: bool = True


@dataclass(frozen=True)
class View:
    """The part of tensor ``role`` one dispatch of a chunked program binds: the elements the
    kernel addresses as ``first`` .. ``last`` (offsets from the tensor's element 0), stored
    ``shift`` elements from there (a chunk-sized scratch holds only its chunk's planes)."""

    role: str
    first: int
    last: int
    shift: int = 0


@dataclass(frozen=True)
class Pass:
    """One dispatch of a kernel: which tensor feeds each slot (a role of the description, a
    scratch name, a :class:`View` of one in a chunked program, or None for an absent
    optional output), its override constants, its uniform values (all but the per-slot
    ``<name>_base`` offsets), its workgroup grid, and how it splits for large tensors."""

    kernel: Kernel
    tensors: tuple
    constants: tuple  # sorted (name, value) pairs: hashable, part of the pipeline key
    params: Mapping[str, int]
    grid: tuple
    split: Optional[Split] = None


@dataclass(frozen=True)
class Program:
    """What a compiled operator dispatches, in order, plus the scratch tensors its passes
    share (allocated once per compiled operator).

    A program reading or writing whole 4-element chunks needs its tensors to start at
    multiples of 4 elements (``aligned_elements``: 8 where it reads pairs of chunks):
    ``aligned`` lists those roles, and ``fallback`` is the program to run when a call's
    tensor offsets break that."""

    passes: tuple
    scratch: tuple = ()  # (name, TensorDesc) pairs
    aligned: tuple = ()
    fallback: "Program | None" = None
    aligned_elements: int = 4
    whole_only: bool = False  # never chunked: the fallback runs where a tensor exceeds a binding


def _value_snippet(data_type: DataType) -> str:
    name = data_type.name.lower()
    bits = 8 * data_type.size
    if data_type.is_float or name == "uint32":
        return read_wgsl(f"common/value_{name}.wgsl")
    if bits == 64:
        sign_bit = 0x80000000 if name == "int64" else 0
        return Template(read_wgsl("common/value_int64.wgsl")).substitute(sign_bit=hex(sign_bit))
    shift = 32 - bits if name.startswith("int") and bits < 32 else 0
    return Template(read_wgsl("common/value_int.wgsl")).substitute(
        shift=shift, has_floor="true" if bits < 32 else "false")


@lru_cache(maxsize=None)
def shader_source(kernel: Kernel, data_types: tuple, writable_inputs: frozenset = frozenset()) -> str:
    """The full WGSL of ``kernel`` for the data types of its slots (None: absent output).

    ``writable_inputs`` names input slots to declare read_write: WebGPU forbids a buffer
    bound read-only and writable in one dispatch, so an input sharing a buffer with an
    output must be declared writable (it is still only read)."""
    parts = []
    by_slot = dict(zip((s.name for s in kernel.slots), data_types))
    parts.append(_value_snippet(by_slot[kernel.value_slot]))
    for binding, (slot, data_type) in enumerate(zip(kernel.slots, data_types), start=1):
        if data_type is None:
            parts.append(Template(read_wgsl("common/absent.wgsl")).substitute(name=slot.name))
            continue
        direction = "write" if slot.output else "read"
        access = "read_write" if slot.name in writable_inputs else "read"
        snippet = read_wgsl("common/" + (slot.snippet or direction + "_{storage}.wgsl").format(storage=data_type.storage))
        parts.append(Template(snippet).substitute(name=slot.name, binding=binding, access=access))
    parts += [read_wgsl(kernel.file)] + [read_wgsl(f"common/{name}") for name in kernel.library]
    return "\n".join(parts)


@lru_cache(maxsize=None)
def params_fields(kernel: Kernel) -> tuple:
    """Field names of the kernel's ``struct Params`` (all u32), in declaration order."""
    text = "\n".join([read_wgsl(kernel.file)] + [read_wgsl(f"common/{name}") for name in kernel.library])
    text = re.sub(r"//[^\n]*", "", text)  # comments first: a brace in one would end the struct
    match = re.search(r"struct\s+Params\s*\{(.*?)\}", text, re.S)
    fields = re.findall(r"(\w+)\s*:\s*(\w+)", match.group(1))
    assert all(t == "u32" for _, t in fields), f"{kernel.file}: Params must hold only u32 fields"
    return tuple(name for name, _ in fields)


def pack_params(kernel: Kernel, values: Mapping[str, int]) -> bytes:
    names = params_fields(kernel)
    values = {"opaque_zero": 0, **values}  # always 0: common/as_written.wgsl
    missing = set(names) - set(values)
    assert not missing, f"{kernel.file}: no value for Params fields {sorted(missing)}"
    words = [values[n] for n in names]
    # A uniform struct's size is padded to its 16-byte alignment.
    words += [0] * (-len(words) % 4)
    return struct.pack(f"<{len(words)}I", *words)


# ---------------------------------------------------------------------------------------
# Geometry shared by the fixed-window pooling kernels


def as_5d(sizes: tuple, strides: tuple):
    """{N, C, spatial...} -> {N, C, D, H, W} by inserting unit leading spatial dimensions."""
    missing = 5 - len(sizes)
    return sizes[:2] + (1,) * missing + sizes[2:], strides[:2] + (0,) * missing + strides[2:]


def as_3d(values: tuple, fill: int) -> tuple:
    return (fill,) * (3 - len(values)) + tuple(values)


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


def row_grid(columns: int, rows: int, wg_x: int) -> tuple:
    """(constants, params, grid) of common/row_grid.wgsl: `rows` rows of `columns`
    invocations in workgroups of `wg_x` lanes, ROW_LANES of them along a row (rows shorter
    than a workgroup share one: no idle lanes); row groups over workgroup y, folded into z
    past 65535, or all workgroups numbered flat where a row needs more than 65535 (FOLDED)."""
    lanes = min(columns, wg_x)
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


def _rows_regrid(columns: int, wg_x: int, first: int, count: int) -> tuple:
    constants, params, grid = row_grid(columns, count, wg_x)
    return {"FOLDED": constants.get("FOLDED", False)}, dict(params, row_origin=first), grid


def _flat_regrid(wg_x: int, first: int, count: int) -> tuple:
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
# "general" for any strides; "rows" when tensors are contiguous along W and "channels" when
# contiguous along C (four outputs per invocation from 4-element chunk loads and stores);
# "rows_tail" when only the input is contiguous along W (chunk loads, scalar stores).

_CHUNKED = (
    Slot("x", False, snippet="read4_{storage}.wgsl"),
    Slot("y", True, snippet="write4_{storage}.wgsl"),
    Slot("idx", True, snippet="write4_index_{storage}.wgsl"),
)
WALKS = {  # walk -> (its files in wgsl/common, its slots)
    "general": (("window_walk.wgsl",), (Slot("x", False), Slot("y", True), Slot("idx", True))),
    "rows": (("window_walk_rows.wgsl", "rows_store4.wgsl"), _CHUNKED),
    "rows_tail": (("window_walk_rows.wgsl", "rows_store_tail.wgsl"), (_CHUNKED[0], Slot("y", True), Slot("idx", True))),
    "channels": (("window_walk_channels.wgsl",), _CHUNKED),
    "plane": (("window_walk_plane.wgsl",), (Slot("x", False), Slot("y", True), Slot("idx", True))),
}
CHUNKED_WALKS = ("rows", "rows_tail", "channels")  # the walks that need 4-element aligned tensors
ROWS_MAX_CHUNKS = 8  # window_walk_rows.wgsl's span holds 32 elements
ROWS_PER_INVOCATION = 4  # output rows of window_walk_rows.wgsl's invocations (fewer where out_h is)


def _pooling_kernels(file: str, accumulator: tuple) -> dict:
    """The operator's kernel under each walk."""
    shared = ("grid.wgsl", "window_constants.wgsl", "window_geometry.wgsl")
    return {
        walk: Kernel(file, slots, "x", library=accumulator + shared + walk_files)
        for walk, (walk_files, slots) in WALKS.items()
    }


MAX_POOL = _pooling_kernels("max_pool.wgsl", ("max_accumulator.wgsl",))
COMPENSATED_SUM = ("compensated_sum.wgsl", "as_written.wgsl")  # the library and what it needs
AVERAGE_POOL = _pooling_kernels("avg_pool.wgsl", COMPENSATED_SUM)
LP_POOL = _pooling_kernels("lp_pool.wgsl", COMPENSATED_SUM)


def _strides_5d(tensor) -> dict:
    """Axis -> stride of the dimensions of size > 1 (the others are never stepped)."""
    sizes, strides = as_5d(tensor.sizes, tensor.strides)
    return {axis: st for axis, size, st in zip("ncdhw", sizes, strides) if size > 1}


def _contiguous_along(tensors, axis: str) -> bool:
    """Whether every tensor has unit stride along `axis` and 4-element aligned steps along
    the others: the layout the chunked walks read and write 4 elements at a time."""
    for t in tensors:
        strides = _strides_5d(t)
        if strides.get(axis, 1) != 1 or any(st % 4 for a, st in strides.items() if a != axis):
            return False
    return True


def _row_span(window) -> tuple:
    """(LEAD, CHUNKS) of window_walk_rows.wgsl: where four outputs' taps start in their first
    4-element chunk, and how many chunks they span."""
    lead = -window.start_padding[-1] % 4
    return lead, (lead + 3 * window.strides[-1] + (window.window_size[-1] - 1) * window.dilations[-1]) // 4 + 1


def _reads_pairs(desc) -> bool:
    """Whether window_walk_rows.wgsl reads x eight elements (two chunks) per load (PAIRED):
    16-bit x whose rows and planes hold whole pairs of chunks."""
    return desc.input.data_type.size == 2 and _pair_aligned(desc.input)


def _pair_aligned(t) -> bool:
    """Whether ``t``'s rows and planes hold whole pairs of 4-element chunks (W a multiple of
    8, every other stride too)."""
    in_w = as_5d(t.sizes, t.strides)[0][4]
    return in_w % 8 == 0 and all(st % 8 == 0 for a, st in _strides_5d(t).items() if a != "w")


def _pair_constants(window, lead: int, chunks: int) -> dict:
    """PARITY and PAIRS of window_walk_rows.wgsl: whether the span's first chunk, c0 = column
    * SW - (PW + LEAD) / 4, is odd in every invocation (1), in none (0) or in some (2), and
    how many pairs of chunks hold the span (LEAD, CHUNKS: _row_span's)."""
    stride = window.strides[-1]
    parity = (-(window.start_padding[-1] + lead) // 4) % 2 if stride % 2 == 0 else 2
    return {"PARITY": parity, "PAIRS": (chunks + 1) // 2 if parity == 0 else (chunks + 2) // 2}


# The plane walk's workgroup (window_walk_plane.wgsl's PLANE_LANES): smaller planes would
# leave most of its lanes idle (an H100, case C's 49-element planes: 24% of copy, against
# 31% for one invocation per output).
PLANE_LANES = 256


def _plane_walk_fits(in_spatial: tuple, out_spatial: tuple) -> bool:
    """Whether pooling each input plane to one output is the plane walk's (planes of at
    least PLANE_LANES elements)."""
    return all(o == 1 for o in out_spatial) and math.prod(in_spatial) >= PLANE_LANES


def _covers_plane(desc) -> bool:
    """Whether ``desc``'s one window covers each whole input plane, for the plane walk."""
    window, in_spatial = desc.window, tuple(desc.input.sizes[2:])
    return tuple(window.window_size) == in_spatial and not any(window.start_padding) \
        and all(d == 1 for d in window.dilations) and _plane_walk_fits(in_spatial, desc.output.sizes[2:])


def _walk_for(desc, gpu: bool) -> str:
    """The fastest window walk whose layout requirements ``desc`` meets: on a software
    adapter (lavapipe, llvmpipe; ``gpu`` false) the rows walk's several outputs per
    invocation, which share their loads; on GPUs the general walk, whose neighbouring lanes
    read neighbouring elements (two outputs each: GPU_OUTPUTS_PER_INVOCATION; measured on an
    H100, case A: the rows walk 2-4x slower), and a workgroup per output for global pooling."""
    tensors = [t for t in (desc.input, desc.output, getattr(desc, "output_indices", None)) if t is not None]
    window = desc.window
    out_w, channels = as_5d(desc.output.sizes, desc.output.strides)[0][4], desc.input.sizes[1]
    span_fits = _row_span(window)[1] <= ROWS_MAX_CHUNKS
    if gpu and _covers_plane(desc):
        return "plane"
    if not gpu and out_w % 4 == 0 and span_fits and _contiguous_along(tensors, "w"):
        return "rows"
    if channels % 4 == 0 and _contiguous_along(tensors, "c"):
        return "channels"
    if not gpu and out_w >= 4 and span_fits and _contiguous_along(tensors[:1], "w"):
        return "rows_tail"
    return "general"


# Invocations per workgroup of lines_grid (on an H100, 256 instead of 64: -2% to +8%).
LINES_WORKGROUP = 64


def lines_grid(columns: int, lines: int, planes: int) -> tuple:
    """Workgroup shape, uniform values and grid of window_geometry.wgsl's grid_position:
    LINES_WORKGROUP invocations, WG_X of them along a line of `columns` (exactly, when a line is shorter:
    no idle lanes), the rest over lines, and over planes when lines are few; plane groups
    over workgroup z, folded into y past 65535.  Where even so a dimension would exceed
    65535 workgroups, they are numbered flat instead (grid.wgsl's FOLDED).  Planes count
    from ``plane_origin`` (a chunk's first, see chunked)."""
    wg_x = min(columns, LINES_WORKGROUP)
    wg_y = min(max(1, LINES_WORKGROUP // wg_x), lines)
    wg_z = min(max(1, LINES_WORKGROUP // (wg_x * wg_y)), planes)
    line_groups = math.ceil(lines / wg_y)
    plane_groups = math.ceil(planes / wg_z)
    folds = math.ceil(plane_groups / MAX_WORKGROUPS_PER_DIM)
    constants = {"WG_X": wg_x, "WG_Y": wg_y, "WG_Z": wg_z}
    params = {"columns": columns, "lines": lines, "line_groups": line_groups, "planes": planes, "plane_origin": 0}
    grid = (math.ceil(columns / wg_x), line_groups * folds, min(plane_groups, MAX_WORKGROUPS_PER_DIM))
    if not grid_fits(grid):
        constants["FOLDED"] = True
        grid = fold_groups(math.ceil(columns / wg_x) * line_groups * plane_groups)
    return constants, params, grid


def _lines_regrid(columns: int, lines: int, first: int, count: int) -> tuple:
    constants, params, grid = lines_grid(columns, lines, count)
    return {"FOLDED": constants.get("FOLDED", False)}, dict(params, plane_origin=first), grid


def _plane_params(first: int, planes: int) -> dict:
    """The grid params of the plane walk: only its planes count (one workgroup each)."""
    return {"columns": 1, "lines": 1, "line_groups": 1, "planes": planes, "plane_origin": first}


def _plane_regrid(first: int, count: int) -> tuple:
    return {}, _plane_params(first, count), fold_groups(count)


def _window_walk_pass(kernels_by_walk: dict, desc, roles: tuple, walk: str = "general", outputs: int = 1,
                      **constants) -> Pass:
    """A pass of a window-walk kernel: `walk` picks the walk (see _walk_for); ``outputs``:
    the general walk's neighbouring outputs along W per invocation (window_walk.wgsl's
    OUTPUTS)."""
    in_sizes, _ = as_5d(desc.input.sizes, desc.input.strides)
    n, c, out_d, out_h, out_w = as_5d(desc.output.sizes, desc.output.strides)[0]
    if walk in ("rows", "rows_tail"):  # (ow / 4, oh / ROWS, (n, c, od)): output rows share input rows
        rows = min(ROWS_PER_INVOCATION, out_h)
        grid_constants, grid_params, grid = lines_grid(-(-out_w // 4), -(-out_h // rows), n * c * out_d)
        constants["LEAD"], constants["CHUNKS"] = _row_span(desc.window)
        constants["ROWS"] = rows
        if walk == "rows_tail":   # rows_store_tail.wgsl: 16-bit outputs contiguous along W stored in pairs
            constants["PAIR_STORES"] = desc.output.data_type.size == 2 and _strides_5d(desc.output).get("w") == 1
        if _reads_pairs(desc):
            constants.update(PAIRED=True, **_pair_constants(desc.window, constants["LEAD"], constants["CHUNKS"]))
    elif walk == "plane":  # a workgroup per (n, c), numbered flat
        grid_constants, grid_params, grid = {}, _plane_params(0, n * c), fold_groups(n * c)
        x_sizes, x_strides = as_5d(desc.input.sizes, desc.input.strides)
        grid_constants["FLAT_PLANE"] = x_strides[2:] == (x_sizes[3] * x_sizes[4], x_sizes[4], 1)
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
        grid_constants, grid_params, grid = lines_grid(c // 4, -(-out_w // cols), n * out_d * -(-out_h // rows))
        constants["ROWS"], constants["COLS"] = rows, cols
    else:  # (ow / OUTPUTS, oh, (n, c, od))
        outputs = min(outputs, out_w)
        grid_constants, grid_params, grid = lines_grid(-(-out_w // outputs), out_h, n * c * out_d)
        constants["OUTPUTS"] = outputs
    # chunks (see chunked) are runs of planes: (n, c, od), or (n, od, oh) for channels
    per_plane = grid_params["planes"] // (n if walk == "channels" else n * c)
    regrid = _plane_regrid if walk == "plane" else partial(_lines_regrid, grid_params["columns"], grid_params["lines"])
    split = Split(per_plane, regrid, whole_n=walk == "channels")
    constants.update(grid_constants, **window_constants(desc.window))
    params = {
        "channels": c,
        "in_d": in_sizes[2], "in_h": in_sizes[3], "in_w": in_sizes[4],
        "out_d": out_d, "out_h": out_h, "out_w": out_w,
        **grid_params,
    }
    indices = getattr(desc, "output_indices", None)
    for name, tensor in (("x", desc.input), ("y", desc.output), ("idx", indices)):
        params.update(tensor_stride_params(name, tensor))
    return Pass(kernels_by_walk[walk], roles, sorted_constants(constants), params, grid, split)


# Neighbouring outputs along W per invocation of the general walk on GPUs (window_walk.wgsl's
# OUTPUTS: 1 or 2).  Measured on an H100, float32, with windows written out: 2 outputs
# against 1, case A max 1.2-1.4x faster, B 1.3-1.6x, 1D 1.3-1.4x, 3D 1.2x; 4 outputs were
# 0.8-0.9x as fast as 2 (float16 1.0-1.1x, 3D 0.85x).
GPU_OUTPUTS_PER_INVOCATION = 2


def _general_outputs(gpu: bool) -> int:
    """The general walk's OUTPUTS for a device of this class."""
    return GPU_OUTPUTS_PER_INVOCATION if gpu else 1


def _window_walk_program(kernels_by_walk: dict, desc, roles: tuple, gpu: bool, **constants) -> Program:
    """One window-walk pass, on the fastest walk the layout allows, with the general walk
    as the fallback for calls whose tensor offsets are not 4-element aligned."""
    walk = _walk_for(desc, gpu)
    outputs = _general_outputs(gpu)
    if walk not in CHUNKED_WALKS:
        return Program((_window_walk_pass(kernels_by_walk, desc, roles, walk, outputs, **constants),))
    general = Program((_window_walk_pass(kernels_by_walk, desc, roles, "general", outputs, **constants),))
    fast = (_window_walk_pass(kernels_by_walk, desc, roles, walk, **constants),)
    aligned = roles[:1] if walk == "rows_tail" else tuple(r for r in roles if r is not None)
    pairs = walk in ("rows", "rows_tail") and _reads_pairs(desc)
    return Program(fast, aligned=aligned, fallback=general, aligned_elements=8 if pairs else 4)


def _max_pool_program(desc, gpu: bool) -> Program:
    indices = "output_indices" if getattr(desc, "output_indices", None) is not None else None
    return _window_walk_program(MAX_POOL, desc, ("input", "output", indices), gpu)


def _average_divisor_constants(desc) -> dict:
    """The override constants of an average's divisor (avg_pool.wgsl, and for the gradients
    common/average_divisor.wgsl): INCLUDE_PADDING; with ``counted_end_padding`` short of the
    end padding (ceil_mode's extension), CLIP_DIVISOR and the counted end padding in ED, EH,
    EW; or DIVISOR_OVERRIDE."""
    if desc.divisor_override is not None:  # include_padding is irrelevant: the cheaper count
        return {"INCLUDE_PADDING": True, "DIVISOR_OVERRIDE": desc.divisor_override}
    constants = {"INCLUDE_PADDING": desc.include_padding}
    if desc.include_padding and desc.counted_end_padding != desc.window.end_padding:
        constants["CLIP_DIVISOR"] = True
        constants.update(zip(("ED", "EH", "EW"), as_3d(desc.counted_end_padding, 0)))
    return constants


def _average_pool_program(desc, gpu: bool) -> Program:
    return _window_walk_program(AVERAGE_POOL, desc, ("input", "output", None), gpu,
                                **_average_divisor_constants(desc))


LP_PLAIN_SUM_TAPS = 9  # lp_pool.wgsl: windows up to this many taps sum without compensation
LP_UNSCALED_FLOAT16_MAX_P = 4  # lp_pool.wgsl: float16 |x|^p stays in f32's normal range


def _lp_pool_program(desc, gpu: bool) -> Program:
    compensated = math.prod(desc.window.window_size) > LP_PLAIN_SUM_TAPS
    scaled = not (desc.input.data_type == DataType.FLOAT16 and desc.p <= LP_UNSCALED_FLOAT16_MAX_P)
    return _window_walk_program(LP_POOL, desc, ("input", "output", None), gpu, P=desc.p,
                                COMPENSATED=compensated, SCALED=scaled)


# ---------------------------------------------------------------------------------------
# Variable-bin pooling (ROI, adaptive): a bins pass writes each output coordinate's input
# range into a bin table (wgsl/common/bin_table.wgsl), then a binned pass pools each bin.

BINNED_WG_X = 64

ADAPTIVE_BINS = Kernel(
    "adaptive_bins.wgsl", (Slot("bins", True),), value_slot="bins",
    library=("wide_int.wgsl", "adaptive_range.wgsl", "flat_index.wgsl"),
)
ROI_BINS = Kernel(
    "roi_bins.wgsl", (Slot("roi", False), Slot("bins", True)), value_slot="roi",
    library=("wide_int.wgsl", "flat_index.wgsl"),
)
BINNED_MAX = Kernel(
    "binned_max.wgsl", (Slot("x", False), Slot("bins", False), Slot("y", True), Slot("idx", True)), value_slot="x",
    library=("bin_table.wgsl", "flat_index.wgsl"),
)
BINNED_AVERAGE = Kernel(
    "binned_average.wgsl", (Slot("x", False), Slot("bins", False), Slot("y", True)), value_slot="x",
    library=("bin_table.wgsl", "flat_index.wgsl") + COMPENSATED_SUM,
)


def _bin_table(rows: int, out_spatial_3d: tuple) -> TensorDesc:
    """The bin table: per row a source batch word and a (start, end) pair per output
    coordinate along D, H and W."""
    return TensorDesc(DataType.UINT32, (1, rows, 1 + 2 * sum(out_spatial_3d)))


def _binned_pass(kernel: Kernel, desc, roi: bool) -> Pass:
    """The pass pooling each output's bin of ``desc.input`` into ``desc.output`` (and
    ``desc.output_indices`` where the kernel has an idx slot)."""
    in_sizes, _ = as_5d(desc.input.sizes, desc.input.strides)
    out_sizes, _ = as_5d(desc.output.sizes, desc.output.strides)
    total = math.prod(out_sizes)
    params = {
        "total": total, "origin": 0, "channels": in_sizes[1],
        "in_d": in_sizes[2], "in_h": in_sizes[3], "in_w": in_sizes[4],
        "out_d": out_sizes[2], "out_h": out_sizes[3], "out_w": out_sizes[4],
    }
    indices = getattr(desc, "output_indices", None)
    by_slot = {  # slot -> (role, tensor); the bin table is the program's scratch
        "x": ("input", desc.input), "bins": ("bins", None), "y": ("output", desc.output),
        "idx": ("output_indices" if indices is not None else None, indices),
    }
    for slot in kernel.slots:
        if slot.name != "bins":
            params.update(tensor_stride_params(slot.name, by_slot[slot.name][1]))
    roles = tuple(by_slot[slot.name][0] for slot in kernel.slots)
    constants = sorted_constants({"ROI": roi, "WG_X": BINNED_WG_X})
    regrid = partial(_flat_regrid, BINNED_WG_X)
    if kernel is BINNED_MAX:
        params.update(_source_planes(0, 2**32 - 1))
    if roi:  # an ROI's input planes are data (its batch): x is read in ranges of planes
        split = Split(math.prod(out_sizes[2:]), regrid, whole=("roi", "bins"), gather="input",
                      filter=_source_planes)
    else:
        split = Split(math.prod(out_sizes[2:]), regrid, whole=("bins",))
    return Pass(kernel, roles, constants, params, flat_grid(total, BINNED_WG_X), split)


def _source_planes(first: int, planes: int, *_) -> dict:
    """binned_max.wgsl's ROI filter: only outputs reading input planes (batch * C + c) in
    [first, first + planes) are written."""
    return {"source_first": first, "source_count": planes}


def _adaptive_bins_pass(desc) -> tuple:
    """(the pass writing adaptive pooling's bin table, the table)."""
    in_sizes, _ = as_5d(desc.input.sizes, desc.input.strides)
    out_sizes, _ = as_5d(desc.output.sizes, desc.output.strides)
    bins = sum(out_sizes[2:])
    params = {
        "in_d": in_sizes[2], "in_h": in_sizes[3], "in_w": in_sizes[4],
        "out_d": out_sizes[2], "out_h": out_sizes[3], "out_w": out_sizes[4],
        "total": bins,
    }
    constants = sorted_constants({"WG_X": BINNED_WG_X})
    pass_ = Pass(ADAPTIVE_BINS, ("bins",), constants, params, flat_grid(bins, BINNED_WG_X))
    return pass_, _bin_table(1, out_sizes[2:])


# The fixed-window kernels give each output row a workgroup row of 64 lanes: on rows narrower
# than this most lanes idle (global pooling: 1 of 64), where the bin kernels pack outputs
# flat.  Measured on lavapipe: 3 to 7 times slower for rows of 1 to 4, on par from 7 or 8.
FIXED_WINDOW_MIN_ROW = 8


def _fixed_window_for_bins(desc, gpu: bool):
    """The window (= stride) of the fixed-window pooling equal to ``desc``'s adaptive bins,
    where it exists (every input size a multiple of its output size: in / out) and is worth
    it (rows of at least FIXED_WINDOW_MIN_ROW outputs, or on GPUs global pooling: the plane
    walk); else None."""
    in_spatial, out_spatial = desc.input.sizes[2:], desc.output.sizes[2:]
    if gpu and _plane_walk_fits(in_spatial, out_spatial):
        return tuple(in_spatial)
    if any(i % o for i, o in zip(in_spatial, out_spatial)) or out_spatial[-1] < FIXED_WINDOW_MIN_ROW:
        return None
    return tuple(i // o for i, o in zip(in_spatial, out_spatial))


def _binned_program(kernel: Kernel, desc) -> Program:
    bins_pass, table = _adaptive_bins_pass(desc)
    return Program((bins_pass, _binned_pass(kernel, desc, roi=False)), scratch=(("bins", table),))


def _adaptive_max_pool_program(desc, gpu: bool) -> Program:
    window = _fixed_window_for_bins(desc, gpu)
    if window is not None:
        return _max_pool_program(
            MaxPooling2Desc(desc.input, desc.output, desc.output_indices, window_size=window, strides=window), gpu
        )
    return _binned_program(BINNED_MAX, desc)


def _adaptive_average_pool_program(desc, gpu: bool) -> Program:
    window = _fixed_window_for_bins(desc, gpu)
    if window is not None:  # the same compensated sum in the same order: the same bits
        return _average_pool_program(
            AveragePooling1Desc(desc.input, desc.output, window_size=window, strides=window), gpu)
    return _binned_program(BINNED_AVERAGE, desc)


def _roi_pool_program(desc, gpu: bool) -> Program:
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
    constants = sorted_constants({"WG_X": BINNED_WG_X})
    bins_pass = Pass(ROI_BINS, ("roi", "bins"), constants, params, flat_grid(rois * entries, BINNED_WG_X))
    table = _bin_table(rois, (1, pooled_h, pooled_w))
    return Program((bins_pass, _binned_pass(BINNED_MAX, desc, roi=True)), scratch=(("bins", table),))


# ---------------------------------------------------------------------------------------
# Gradients: each invocation owns a block of dx elements and gathers what lands on them
# (deterministic: no atomics, a fixed summation order)

def _block_gather_kernels(file: str, slots: tuple, library: tuple, argmax: bool) -> tuple:
    """A block gather's kernel with one channel per invocation, and with four over
    channels-last tensors (chunked dy, arg and dx; common/gather_lanes4.wgsl)."""
    shared = ("window_constants.wgsl",) + library + ("divide.wgsl", "windows_covering.wgsl", "row_grid.wgsl")
    lanes = {n: (f"gather_lanes{n}.wgsl",) + ((f"argmax_lanes{n}.wgsl",) if argmax else ()) for n in (1, 4)}
    chunked = {"dy": "read4_{storage}.wgsl", "arg": "read4_b32.wgsl", "dx": "write4_{storage}.wgsl"}
    four = tuple(replace(s, snippet=chunked[s.name]) for s in slots)
    return (Kernel(file, slots, "dy", library=shared + lanes[1]), Kernel(file, four, "dy", library=shared + lanes[4]))


MAX_POOL_GRAD, MAX_POOL_GRAD_CHANNELS = _block_gather_kernels(
    "max_pool_grad.wgsl", (Slot("dy", False), Slot("arg", False), Slot("dx", True)), ("windows_first.wgsl",),
    argmax=True)
AVERAGE_POOL_GRAD, AVERAGE_POOL_GRAD_CHANNELS = _block_gather_kernels(
    "average_pool_grad.wgsl", (Slot("dy", False), Slot("dx", True)),
    ("average_divisor.wgsl", "as_written.wgsl", "windows_first.wgsl"), argmax=False)
_DISJOINT_LIBRARY = ("window_constants.wgsl", "divide.wgsl", "windows_covering.wgsl", "max_accumulator.wgsl",
                     "row_grid.wgsl", "disjoint_gradient.wgsl")
MAX_POOL_GRAD_DISJOINT = Kernel(
    "max_pool_grad_disjoint.wgsl", (Slot("x", False), Slot("dy", False), Slot("dx", True)), value_slot="x",
    library=_DISJOINT_LIBRARY + ("disjoint_lanes1.wgsl",),
)
MAX_POOL_GRAD_DISJOINT_CHANNELS = Kernel(  # four channels per invocation, in 4-element chunks
    "max_pool_grad_disjoint.wgsl",
    (Slot("x", False, snippet="read4_{storage}.wgsl"), Slot("dy", False, snippet="read4_{storage}.wgsl"),
     Slot("dx", True, snippet="write4_{storage}.wgsl")),
    value_slot="x", library=_DISJOINT_LIBRARY + ("disjoint_lanes4.wgsl",),
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
    )
    for pairs in (False, True) for dy_chunks in (False, True)
}
MAX_POOL_GRAD_ROWS = Kernel(
    "max_pool_grad_rows.wgsl",
    (Slot("dy", False, snippet="read4_{storage}.wgsl"), Slot("arg", False, snippet="read4_b32.wgsl"),
     Slot("dx", True, snippet="write4_{storage}.wgsl")), value_slot="dy",
    library=("grid.wgsl", "window_constants.wgsl", "gather_rows.wgsl"),
)
AVERAGE_POOL_GRAD_ROWS = Kernel(
    "average_pool_grad_rows.wgsl",
    (Slot("dy", False, snippet="read4_{storage}.wgsl"), Slot("dx", True, snippet="write4_{storage}.wgsl")),
    value_slot="dy",
    library=("grid.wgsl", "window_constants.wgsl", "average_divisor.wgsl", "as_written.wgsl", "gather_rows.wgsl"),
)


def _channel_lanes(dx) -> bool:
    """Whether the block gathers run lanes along C (common/windows_covering.wgsl's
    CHANNEL_LANES): dx channels-last, so neighbouring lanes touch neighbouring elements
    (coalesced), not elements C apart (lavapipe, A and B NHWC: 10-25% faster)."""
    return dx.sizes[1] > 1 and _strides_5d(dx).get("c") == 1


def _gathers_channels(desc) -> bool:
    """Whether dy and dx meet the four-channel block gathers' layout (gather_lanes4.wgsl):
    channels-last, C a multiple of 4, 4-element aligned steps."""
    dy, dx = desc.input_gradient, desc.output_gradient
    return _channel_lanes(dx) and dx.sizes[1] % 4 == 0 and _contiguous_along([dy, dx], "c")


def _channels_last(data_type: DataType, sizes: tuple) -> TensorDesc:
    """A packed channels-last tensor: C innermost, then W, H, D, N."""
    strides, step = [0] * len(sizes), 1
    for axis in [1] + list(range(len(sizes) - 1, 1, -1)) + [0]:
        strides[axis], step = step, step * sizes[axis]
    return TensorDesc(data_type, sizes, tuple(strides))


def _gradient_block_pass(kernel: Kernel, desc, tensors: dict, constants: dict, windows_w: int = 1,
                         scratch: Optional[Mapping[str, TensorDesc]] = None, channels_per_lane: int = 1) -> Pass:
    """One invocation per block of stride-many dx elements along each dimension (see
    wgsl/common/windows_covering.wgsl), or `windows_w` times the stride along W, rows of
    blocks folded as in max pooling; over channels-last dx, lanes along C, each taking
    `channels_per_lane` channels.  ``tensors`` maps slot names to description roles (or
    ``scratch`` names)."""
    dy, dx, window = desc.input_gradient, desc.output_gradient, desc.window
    n, c, in_d, in_h, in_w = as_5d(dx.sizes, dx.strides)[0]
    _, _, out_d, out_h, out_w = as_5d(dy.sizes, dy.strides)[0]
    # blocks b * stride - pad % stride + [0, stride) cover [0, size)
    blocks_d, blocks_h, blocks_w = (
        -(-(size + pad % stride) // stride)
        for size, stride, pad in zip((in_d, in_h, in_w), as_3d(window.strides, 1), as_3d(window.start_padding, 0))
    )
    blocks_w = -(-blocks_w // windows_w)
    wg_x = 64
    if windows_w == 1 and _channel_lanes(dx):
        per_n, lanes = blocks_d * blocks_h * blocks_w, -(-c // channels_per_lane)
        grid_constants, grid_params, grid = row_grid(lanes, n * per_n, wg_x)
        split = Split(per_n, partial(_rows_regrid, lanes, wg_x), whole_n=True)
        grid_constants.update(CHANNEL_LANES=True, CHANNELS_PER_LANE=channels_per_lane)
    else:
        grid_constants, grid_params, grid = row_grid(blocks_w, n * c * blocks_d * blocks_h, wg_x)
        split = Split(blocks_d * blocks_h, partial(_rows_regrid, blocks_w, wg_x))
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
    constants = {**grid_constants, **window_constants(window), **constants}
    return Pass(kernel, tuple(tensors.values()), sorted_constants(constants), params, grid, split)


def _tap_steps(window) -> dict:
    """T{D,H,W} and I{D,H,W} of windows_covering.wgsl's first_tap: the taps landing on one
    block element recur every step = stride / gcd(dilation, stride) taps."""
    constants = {}
    for axis, s, l in zip("DHW", as_3d(window.strides, 1), as_3d(window.dilations, 1)):
        step = s // math.gcd(l, s)
        constants.update({f"T{axis}": step, f"I{axis}": pow(l // (s // step), -1, step)})
    return constants


def _block_constants(window) -> dict:
    """The block gathers' override constants: the tap steps of first_tap (T, I), and with
    strides of at most 2 and at most 2 windows reaching a block along every dimension, the
    windows-first visit (common/windows_first.wgsl: WINDOWS_FIRST, NW)."""
    constants = _tap_steps(window)
    reaching = [(e - 1) // s + 1 for e, s in zip(as_3d(window.extents, 1), as_3d(window.strides, 1))]
    if max(as_3d(window.strides, 1)) <= 2 and max(reaching) <= 2:
        constants.update(WINDOWS_FIRST=True, **{f"NW{axis}": m for axis, m in zip("DHW", reaching)})
    return constants


def _gathers_rows(desc) -> bool:
    """Whether dx and dy meet the row gathers' layout (common/gather_rows.wgsl); the argmax
    scratch, packed, then meets it too."""
    dy, dx = desc.input_gradient, desc.output_gradient
    in_w, out_w = as_5d(dx.sizes, dx.strides)[0][4], as_5d(dy.sizes, dy.strides)[0][4]
    return in_w % 4 == 0 and out_w % 4 == 0 and _contiguous_along([dx, dy], "w")


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


def _gradient_rows_pass(kernel: Kernel, desc, tensors: dict, constants: dict) -> Pass:
    """One invocation per 2 x 8 dx elements along H and W (common/gather_rows.wgsl).
    ``tensors`` maps slot names to description roles."""
    dy, dx, window = desc.input_gradient, desc.output_gradient, desc.window
    n, c, in_d, in_h, in_w = as_5d(dx.sizes, dx.strides)[0]
    _, _, out_d, out_h, out_w = as_5d(dy.sizes, dy.strides)[0]
    columns = -(-in_w // 8)
    grid_constants, grid_params, grid = lines_grid(columns, -(-in_h // 2), n * c * in_d)
    constants = {**grid_constants, **window_constants(window), "DY_CHUNKS": _dy_chunks(window),
                 "OH_ROWS": _oh_rows(window), **_fixed_columns(window), **constants}
    params = {
        "channels": c, "in_d": in_d, "in_h": in_h, "in_w": in_w, "out_d": out_d, "out_h": out_h, "out_w": out_w,
        **tensor_stride_params("dy", dy), **tensor_stride_params("dx", dx), **grid_params,
    }
    split = Split(in_d, partial(_lines_regrid, columns, -(-in_h // 2)))
    return Pass(kernel, tuple(tensors.values()), sorted_constants(constants), params, grid, split)


def _lone_windows_disjoint(desc):
    """``desc`` with the stride of every dimension that has a single window (output size 1)
    raised to the window's extent: the same windows and results, but the gathers see
    windows that cannot overlap there (global pooling's gradient: one tap per dx element,
    not a search over the whole window for the one window)."""
    out_sizes = desc.input_gradient.sizes[2:]
    window = desc.window
    strides = tuple(max(s, e) if o == 1 else s for s, e, o in zip(window.strides, window.extents, out_sizes))
    return desc if strides == window.strides else replace(desc, strides=strides)


def _max_pool_grad_program(desc, gpu: bool) -> Program:
    desc = _lone_windows_disjoint(desc)
    window = desc.window
    forward = desc.forward
    channels_last = _channel_lanes(desc.output_gradient) and _strides_5d(desc.input).get("c") == 1
    if channels_last:
        # channels-last x and dx: a channels-last argmax too (and output, which pass 1 does
        # not write), so that pass 1 can take the channels walk and the gather (lanes along
        # C) reads it coalesced
        sizes = forward.output.sizes
        forward = replace(forward, output=_channels_last(forward.output.data_type, sizes),
                          output_indices=_channels_last(DataType.UINT32, sizes))
    scratch = (("argmax", forward.output_indices),)
    tensors = {"dy": "input_gradient", "arg": "argmax", "dx": "output_gradient"}

    def two_passes(walk: str, rows: bool, channels: bool = False) -> Program:
        # Pass 1: forward max pooling writing only each window's argmax (into scratch; no
        # forward values: the y slot is absent); pass 2: the gather adding each window's dy
        # at its argmax.  Pass 1 is forward max pooling with indices, so on GPUs it takes
        # the general walk's outputs per invocation as that does.
        argmax = _window_walk_pass(MAX_POOL, forward, ("input", None, "argmax"), walk, _general_outputs(gpu))
        if rows:
            gather = _gradient_rows_pass(MAX_POOL_GRAD_ROWS, desc, tensors, {})
        elif channels:  # four channels per invocation, in 4-element chunks
            gather = _gradient_block_pass(MAX_POOL_GRAD_CHANNELS, desc, tensors, _block_constants(window),
                                          scratch=dict(scratch), channels_per_lane=4)
        else:
            gather = _gradient_block_pass(MAX_POOL_GRAD, desc, tensors, _block_constants(window),
                                          scratch=dict(scratch))
        return Program((argmax, gather), scratch=scratch)

    if all(s >= e for s, e in zip(window.strides, window.extents)):
        # No dx element lies in two windows: one pass finds each argmax and writes its block
        # (measured faster than the two passes below on lavapipe, case B: 39 ms to 50).
        disjoint = {"x": "input", "dy": "input_gradient", "dx": "output_gradient"}
        general = Program((_gradient_block_pass(MAX_POOL_GRAD_DISJOINT, desc, disjoint, {}),))
        if channels_last and _gathers_channels(desc) and _contiguous_along([desc.input], "c"):
            # four channels per invocation, x, dy and dx in 4-element chunks
            four = Program((_gradient_block_pass(MAX_POOL_GRAD_DISJOINT_CHANNELS, desc, disjoint, {},
                                                 channels_per_lane=4),))
            return replace(four, aligned=("input", "input_gradient", "output_gradient"), fallback=general)
        in_w = desc.input.sizes[-1]  # dx rows are written in whole chunks
        if in_w % 4 or window.start_padding[-1] or window.strides[-1] > 8 or \
                not _contiguous_along([desc.input, desc.output_gradient], "w"):
            return general
        # four windows along W per invocation, x and dx in 4-element chunks (B: 39 ms to 23);
        # 16-bit ones in pairs of chunks where blocks start at multiples of 8 elements (even
        # strides), and the four windows' dy as one chunk where dy rows are whole chunks
        pairs = _reads_pairs(desc) and window.strides[-1] % 2 == 0 and \
            desc.output_gradient.data_type.size == 2 and _pair_aligned(desc.output_gradient)
        dy_chunks = desc.input_gradient.sizes[-1] % 4 == 0 and _contiguous_along([desc.input_gradient], "w")
        kernel = MAX_POOL_GRAD_DISJOINT_ROWS[pairs, dy_chunks]
        rows = Program((_gradient_block_pass(kernel, desc, disjoint, {}, windows_w=4),))
        aligned = ("input", "output_gradient") + (("input_gradient",) if dy_chunks else ())
        return replace(rows, aligned=aligned, fallback=general, aligned_elements=8 if pairs else 4)
    general = two_passes("general", rows=False)
    walk, rows = _walk_for(forward, gpu), _gathers_rows(desc)
    channels = channels_last and _gathers_channels(desc)
    if walk not in CHUNKED_WALKS and not rows and not channels:
        return general
    aligned = (("input",) if walk in CHUNKED_WALKS else ()) + (("input_gradient", "output_gradient") if rows else ()) + \
        (("input_gradient", "output_gradient") if channels else ())
    pairs = walk in ("rows", "rows_tail") and _reads_pairs(forward)  # pass 1 reads x in pairs of chunks
    return replace(two_passes(walk, rows, channels), aligned=aligned, fallback=general,
                   aligned_elements=8 if pairs else 4)


def _average_pool_grad_program(desc, gpu: bool) -> Program:
    desc = _lone_windows_disjoint(desc)
    tensors = {"dy": "input_gradient", "dx": "output_gradient"}
    constants = _average_divisor_constants(desc)
    block_constants = {**constants, **_block_constants(desc.window)}
    general = Program((_gradient_block_pass(AVERAGE_POOL_GRAD, desc, tensors, block_constants),))
    if _gathers_rows(desc):
        rows = Program((_gradient_rows_pass(AVERAGE_POOL_GRAD_ROWS, desc, tensors, constants),))
        return replace(rows, aligned=("input_gradient", "output_gradient"), fallback=general)
    if _gathers_channels(desc):  # four channels per invocation, in 4-element chunks
        four = Program((_gradient_block_pass(AVERAGE_POOL_GRAD_CHANNELS, desc, tensors, block_constants,
                                             channels_per_lane=4),))
        return replace(four, aligned=("input_gradient", "output_gradient"), fallback=general)
    return general


# ---------------------------------------------------------------------------------------
# Max unpooling: deterministic winner selection (integer atomicMax), then a gather (each
# output element copies its winner) or, into dense outputs, a scatter (each winner copies itself)

def _unpool_source_kernel(file: str, slots: tuple, value_slot: str, chunks: bool, library: tuple = ()) -> Kernel:
    """A pass over input elements (common/unpool_source.wgsl), reading the indices one by one
    or (``chunks``) in 4-element chunks."""
    idx = Slot("idx", False, snippet="read4_index_{storage}.wgsl" if chunks else "")
    source = ("grid.wgsl", "unpool_source.wgsl", "unpool_indices4.wgsl" if chunks else "unpool_indices1.wgsl")
    return Kernel(file, (idx,) + slots, value_slot=value_slot, library=source + library)


MAX_UNPOOL_WINNERS, MAX_UNPOOL_WINNERS_CHUNKS = (
    _unpool_source_kernel("max_unpool_winners.wgsl", (Slot("winner", True, snippet="atomic_b32.wgsl"),), "idx", chunks)
    for chunks in (False, True))
MAX_UNPOOL_SCATTER, MAX_UNPOOL_SCATTER_CHUNKS = (
    _unpool_source_kernel(
        "max_unpool_scatter.wgsl", (Slot("winner", True, snippet="atomic_b32.wgsl"), Slot("x", False), Slot("y", True)),
        "x", chunks, ("divide.wgsl",))
    for chunks in (False, True))
ZERO_FILL = Kernel("zero_fill.wgsl", (Slot("y", True, snippet="write4_{storage}.wgsl"),), value_slot="y")
MAX_UNPOOL = Kernel(
    "max_unpool.wgsl", (Slot("x", False), Slot("winner", True, snippet="take_b32.wgsl"), Slot("y", True)),
    value_slot="x", library=("grid.wgsl", "unpool_walk.wgsl"),
)
MAX_UNPOOL_ROWS = Kernel(
    "max_unpool.wgsl",
    (Slot("x", False), Slot("winner", True, snippet="take4_b32.wgsl"), Slot("y", True, snippet="write4_{storage}.wgsl")),
    value_slot="x", library=("grid.wgsl", "unpool_walk_rows.wgsl"),
)


def _max_unpool_program(desc, gpu: bool) -> Program:
    x, indices, y = desc.input, desc.indices, desc.output
    n, c, in_d, in_h, in_w = as_5d(x.sizes, x.strides)[0]
    _, _, out_d, out_h, out_w = as_5d(y.sizes, y.strides)[0]
    in_columns = -(-in_w // 4)  # common/unpool_source.wgsl: four input elements per invocation
    in_constants, in_params, in_grid = lines_grid(in_columns, in_h, n * c * in_d)
    sizes = {"channels": c, "in_d": in_d, "in_h": in_h, "in_w": in_w}
    out_plane, in_plane = out_d * out_h * out_w, in_d * in_h * in_w
    # the passes over input elements (common/unpool_source.wgsl)
    source_constants = {**in_constants, "WIDE_INDICES": indices.data_type == DataType.UINT64}
    source_params = {**sizes, **tensor_stride_params("idx", indices), **in_params, **_target_range(out_plane, 0, n * c)}
    winners = Pass(
        MAX_UNPOOL_WINNERS, ("indices", "winner"), sorted_constants(source_constants), source_params, in_grid,
        # indices scatter anywhere: the winners of a chunk of output planes are picked over
        # every input plane
        Split(in_d, partial(_lines_regrid, in_columns, in_h), scatter="winner",
              filter=partial(_target_range, out_plane)),
    )

    def write(kernel: Kernel, columns: int) -> Pass:
        constants, grid_params, grid = lines_grid(columns, out_h, n * c * out_d)
        constants["PACKED_INPUT"] = x.is_packed
        params = {**sizes, "out_d": out_d, "out_h": out_h, "out_w": out_w,
                  **tensor_stride_params("x", x), **tensor_stride_params("y", y), **grid_params,
                  **_source_range(in_plane, 0, n * c, True, True)}
        # each output element copies its winner's input element, anywhere: only the general
        # walk copies winners in ranges (for inputs larger than a binding)
        split = Split(out_d, partial(_lines_regrid, columns, out_h), gather="input",
                      filter=partial(_source_range, in_plane), ranged=kernel is MAX_UNPOOL)
        return Pass(kernel, ("input", "winner", "output"), sorted_constants(constants), params, grid, split)

    # The winner scratch starts zero-filled and the last pass (write or scatter) leaves it
    # zeroed again.
    scratch = (("winner", TensorDesc(DataType.UINT32, y.sizes)),)
    general = Program((winners, write(MAX_UNPOOL, out_w)), scratch=scratch)
    # Indices contiguous along W are read in 4-element chunks where they start at a multiple
    # of 4 elements (else the general program runs).
    chunks = _contiguous_along([indices], "w")
    source_kernels = (MAX_UNPOOL_WINNERS_CHUNKS, MAX_UNPOOL_SCATTER_CHUNKS) if chunks else \
        (MAX_UNPOOL_WINNERS, MAX_UNPOOL_SCATTER)
    fast_winners = replace(winners, kernel=source_kernels[0])
    aligned = ("indices",) if chunks else ()
    if max_offset(y) + 1 == y.element_count and y.element_count % 4 == 0:
        # A dense output (any order of its dimensions): zero it whole in 4-element chunks,
        # then only the winners write, walking the input, not the (larger) output and its
        # whole scratch (with the grid and index chunks above, on lavapipe case A 1.8x
        # faster, channels-last 3x; whole tensors only: each chunk of a scattered output
        # would walk the whole input).
        scatter = Pass(
            source_kernels[1], ("indices", "winner", "input", "output"),
            sorted_constants({**source_constants, "PACKED_OUTPUT": y.is_packed}),
            {**source_params, **divisor_params("out_d", out_d), **divisor_params("out_h", out_h),
             **divisor_params("out_w", out_w), **divisor_params("channels", c),
             **tensor_stride_params("x", x), **tensor_stride_params("y", y)},
            in_grid,
        )
        sparse = Program((_zero_fill_pass(y), fast_winners, scatter), scratch=scratch, whole_only=True)
        return replace(sparse, aligned=("output",) + aligned, fallback=general)
    if out_w % 4 == 0 and _contiguous_along([y], "w"):
        rows = Program((fast_winners, write(MAX_UNPOOL_ROWS, out_w // 4)), scratch=scratch)
        return replace(rows, aligned=("output",) + aligned, fallback=general)
    if chunks:
        return Program((fast_winners, general.passes[1]), scratch=scratch, aligned=aligned, fallback=general)
    return general


def _zero_fill_pass(y: TensorDesc) -> Pass:
    """zero_fill.wgsl over the dense tensor ``y`` (its element count a multiple of 4)."""
    wg_x, quads_per_lane = 64, 4
    quads = y.element_count // 4
    return Pass(ZERO_FILL, ("output",), sorted_constants({"WG_X": wg_x, "QUADS": quads_per_lane}),
                {"quads": quads}, fold_groups(math.ceil(quads / (wg_x * quads_per_lane))))


def _target_range(out_plane: int, first: int, planes: int, *_) -> dict:
    """max_unpool_winners.wgsl: only indices into output planes [first, first + planes) count."""
    return {"out_first": first * out_plane, "out_count": planes * out_plane}


def _source_range(in_plane: int, first: int, planes: int, first_range: bool, last_range: bool) -> dict:
    """max_unpool.wgsl: copy only winners in input planes [first, first + planes); outputs
    without a winner are zeroed with the first range, winners reset with the last."""
    return {"source_first": first * in_plane, "source_count": planes * in_plane,
            "zeros": int(first_range), "reset": int(last_range)}


# =======================================================================================
# The adaptive pooling gradients and the max unpooling gradient: straightforward gathers
# (each dx element visits what lands on it, in a fixed order: deterministic, no float
# atomics), one invocation per dx element (four along W for unpooling).

_ADAPTIVE_GATHER_LIBRARY = ("wide_int.wgsl", "adaptive_range.wgsl", "adaptive_gather.wgsl", "flat_index.wgsl")
ADAPTIVE_MAX_POOL_GRAD = Kernel(
    "adaptive_max_pool_grad.wgsl", (Slot("dy", False), Slot("arg", False), Slot("dx", True)), value_slot="dy",
    library=_ADAPTIVE_GATHER_LIBRARY,
)
ADAPTIVE_AVERAGE_POOL_GRAD = Kernel(
    "adaptive_average_pool_grad.wgsl", (Slot("dy", False), Slot("dx", True)), value_slot="dy",
    library=_ADAPTIVE_GATHER_LIBRARY + ("as_written.wgsl",),
)
MAX_UNPOOL_GRAD = _unpool_source_kernel(
    "max_unpool_grad.wgsl",
    (Slot("winner", True, snippet="atomic_b32.wgsl"), Slot("dy", False), Slot("dx", True)), "dy", chunks=False,
    library=("divide.wgsl",),
)


def _adaptive_gather_pass(kernel: Kernel, desc, tensors: dict, described: dict) -> Pass:
    """One invocation per element of ``desc.output_gradient`` (dx), in chunks of its (n, c)
    planes.  ``tensors`` maps slot names to roles, ``described`` roles to TensorDescs."""
    dy, dx = desc.input_gradient, desc.output_gradient
    in_sizes, out_sizes = as_5d(dx.sizes, dx.strides)[0], as_5d(dy.sizes, dy.strides)[0]
    total = math.prod(in_sizes)
    params = {
        "total": total, "origin": 0, "channels": in_sizes[1],
        "in_d": in_sizes[2], "in_h": in_sizes[3], "in_w": in_sizes[4],
        "out_d": out_sizes[2], "out_h": out_sizes[3], "out_w": out_sizes[4],
    }
    for slot, role in tensors.items():
        params.update(tensor_stride_params(slot, described[role]))
    split = Split(math.prod(in_sizes[2:]), partial(_flat_regrid, BINNED_WG_X))
    return Pass(kernel, tuple(tensors.values()), sorted_constants({"WG_X": BINNED_WG_X}), params,
                flat_grid(total, BINNED_WG_X), split)


def _adaptive_max_pool_grad_program(desc, gpu: bool) -> Program:
    """Adaptive max pooling's argmax of every bin into scratch (the forward binned pass,
    writing only indices), then the gather adding each bin's dy at its argmax."""
    forward = desc.forward
    bins_pass, table = _adaptive_bins_pass(forward)
    argmax = _binned_pass(BINNED_MAX, forward, roi=False)
    renamed = {"output": None, "output_indices": "argmax"}
    argmax = replace(argmax, tensors=tuple(renamed.get(role, role) for role in argmax.tensors))
    described = {"input_gradient": desc.input_gradient, "argmax": forward.output_indices,
                 "output_gradient": desc.output_gradient}
    gather = _adaptive_gather_pass(ADAPTIVE_MAX_POOL_GRAD, desc,
                                   {"dy": "input_gradient", "arg": "argmax", "dx": "output_gradient"}, described)
    return Program((bins_pass, argmax, gather), scratch=(("bins", table), ("argmax", forward.output_indices)))


def _adaptive_average_pool_grad_program(desc, gpu: bool) -> Program:
    described = {"input_gradient": desc.input_gradient, "output_gradient": desc.output_gradient}
    return Program((_adaptive_gather_pass(ADAPTIVE_AVERAGE_POOL_GRAD, desc,
                                          {"dy": "input_gradient", "dx": "output_gradient"}, described),))


def _unpool_grad_range(out_plane: int, first: int, planes: int, *_) -> dict:
    """max_unpool_grad.wgsl: gather dy planes [first, first + planes); the chunk holding
    plane 0 also zeroes dx where the index lies outside dy."""
    return {**_target_range(out_plane, first, planes), "zeros": int(first == 0)}


def _max_unpool_grad_program(desc, gpu: bool) -> Program:
    """The winners of max unpooling (max_unpool_winners.wgsl), then the gather over dx
    (max_unpool_grad.wgsl)."""
    indices, dy, dx = desc.indices, desc.input_gradient, desc.output_gradient
    n, c, in_d, in_h, in_w = as_5d(indices.sizes, indices.strides)[0]
    _, _, out_d, out_h, out_w = as_5d(dy.sizes, dy.strides)[0]
    in_columns = -(-in_w // 4)  # common/unpool_source.wgsl: four elements per invocation
    grid_constants, grid_params, grid = lines_grid(in_columns, in_h, n * c * in_d)
    constants = sorted_constants({**grid_constants, "WIDE_INDICES": indices.data_type == DataType.UINT64})
    out_plane = out_d * out_h * out_w
    params = {"channels": c, "in_d": in_d, "in_h": in_h, "in_w": in_w, **tensor_stride_params("idx", indices),
              **grid_params}
    regrid = partial(_lines_regrid, in_columns, in_h)
    winners = Pass(MAX_UNPOOL_WINNERS, ("indices", "winner"), constants,
                   {**params, **_target_range(out_plane, 0, n * c)}, grid,
                   Split(in_d, regrid, scatter="winner", filter=partial(_target_range, out_plane)))
    gather_params = {
        **params, "out_d": out_d, "out_h": out_h, "out_w": out_w, "dy_count": dy.element_count,
        **divisor_params("out_d", out_d), **divisor_params("out_h", out_h), **divisor_params("out_w", out_w),
        **divisor_params("channels", c), **tensor_stride_params("dy", dy), **tensor_stride_params("dx", dx),
        **_unpool_grad_range(out_plane, 0, n * c),
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

# (end of the adaptive and unpooling gradients)
# =======================================================================================


# 16-byte loads and stores: src and dst bound as array<vec4<u32>> (common/{read,write}_v4.wgsl).
COPY = Kernel("copy.wgsl", (Slot("src", False, snippet="read_v4.wgsl"), Slot("dst", True, snippet="write_v4.wgsl")),
              value_slot="src")


def _copy_program(desc, gpu: bool) -> Program:
    """The bench's bandwidth roofline (``CopyDesc`` in bench/roofline.py, not an operator):
    ``desc.input`` read once and ``desc.output`` written once, 16 bytes per access,
    ``desc.vec4s_per_thread`` words per invocation in workgroups of ``desc.workgroup_size``."""
    src_vec4s = desc.input.total_size_in_bytes // 16
    dst_vec4s = desc.output.total_size_in_bytes // 16
    per_group = desc.workgroup_size * desc.vec4s_per_thread
    groups = max(1, math.ceil(max(src_vec4s, dst_vec4s) / per_group))
    grid = (min(groups, MAX_WORKGROUPS_PER_DIM), math.ceil(groups / MAX_WORKGROUPS_PER_DIM), 1)
    params = {"src_vec4s": src_vec4s, "dst_vec4s": dst_vec4s}
    constants = sorted_constants({"WG": desc.workgroup_size, "ITEMS": desc.vec4s_per_thread})
    return Program((Pass(COPY, ("input", "output"), constants, params, grid),))


# Operator (a description's ``kernel``) -> the function building its Program.
REGISTRY = {
    "max_pool": _max_pool_program,
    "average_pool": _average_pool_program,
    "lp_pool": _lp_pool_program,
    "adaptive_max_pool": _adaptive_max_pool_program,
    "adaptive_average_pool": _adaptive_average_pool_program,
    "roi_pool": _roi_pool_program,
    "max_pool_grad": _max_pool_grad_program,
    "average_pool_grad": _average_pool_grad_program,
    "max_unpool": _max_unpool_program,
    "adaptive_max_pool_grad": _adaptive_max_pool_grad_program,
    "adaptive_average_pool_grad": _adaptive_average_pool_grad_program,
    "max_unpool_grad": _max_unpool_grad_program,
    "copy": _copy_program,
}


def program_for(desc, max_binding: Optional[int] = None, gpu: bool = False) -> Program:
    """The description's program, tuned for a GPU (``gpu``) or a software adapter (see
    _walk_for); with ``max_binding`` (bytes), chunked so that no dispatch binds more of a
    tensor (see :func:`chunked`)."""
    program = REGISTRY[desc.kernel](desc, gpu)
    if max_binding is None:
        return program
    tensors = dict(desc.input_tensors() + desc.output_tensors())
    return chunked(program, {role: t for role, t in tensors.items() if t is not None}, max_binding)


# ---------------------------------------------------------------------------------------
# Tensors larger than a storage binding: the program runs in chunks of (n, c) planes (planes
# numbered n * C + c), each dispatch restricted to its planes' units (Split.regrid) and
# binding only the bytes those planes span (a View: the same buffer, bound from the chunk's
# first byte; kernels still address elements from the tensor's start, with a base offset
# that wraps around below the binding, exact in u32 arithmetic).


def max_offset(desc: TensorDesc) -> int:
    """The largest element offset of the tensor's elements."""
    return sum((size - 1) * stride for size, stride in zip(desc.sizes, desc.strides))


def plane_count(desc: TensorDesc) -> int:
    return desc.sizes[0] * desc.sizes[1]


def plane_span(desc: TensorDesc, first: int, stop: int) -> tuple:
    """(lowest, highest) element offset of the tensor's (n, c) planes [first, stop)."""
    channels = desc.sizes[1]
    stride_n, stride_c = desc.strides[:2]
    rest = sum((size - 1) * stride for size, stride in zip(desc.sizes[2:], desc.strides[2:]))
    n0, c0 = divmod(first, channels)
    n1, c1 = divmod(stop - 1, channels)
    # the run as boxes of (n, c); strides are non-negative, so a box's corners bound it
    boxes = [(n0, c0, n1, c1)] if n0 == n1 else [(n0, c0, n0, channels - 1), (n1, 0, n1, c1)]
    if n1 > n0 + 1:
        boxes.append((n0 + 1, 0, n1 - 1, channels - 1))
    low = min(n * stride_n + c * stride_c for n, c, _, _ in boxes)
    high = max(n * stride_n + c * stride_c for _, _, n, c in boxes)
    return low, high + rest


class _Chunker:
    """Plans and emits a chunked program (see :func:`chunked`)."""

    def __init__(self, program: Program, descs: Mapping[str, TensorDesc], limit: int):
        self.descs = dict(descs, **dict(program.scratch))
        self.limit = limit
        self.split = [p for p in program.passes if p.split is not None]
        whole = {r for p in program.passes for r in p.tensors if r is not None and (p.split is None or r in p.split.whole)}
        # scratch used plane by plane shrinks to one chunk's planes (packed, so plane q holds
        # elements [q * plane, (q + 1) * plane))
        self.scratch_planes = {
            name: math.prod(t.sizes[2:]) for name, t in program.scratch if name not in whole
        }
        for role in sorted(whole):
            size = (max_offset(self.descs[role]) + 1) * self.descs[role].data_type.size
            if size > limit:
                raise DeviceError(
                    f"{role}: bound whole, its {size} bytes exceed what one storage binding of this device "
                    f"holds ({limit} bytes usable); use fewer ROIs or smaller outputs"
                )

    def span_bytes(self, role: str, first: int, stop: int) -> int:
        if role in self.scratch_planes:
            return (stop - first) * self.scratch_planes[role] * 4
        low, high = plane_span(self.descs[role], first, stop)
        return (high - low + 1) * self.descs[role].data_type.size

    def units_roles(self, p: Pass) -> list:
        s = p.split
        return [r for r in p.tensors if r is not None and r not in s.whole and r not in (s.gather, s.scatter)]

    def unit_range(self, p: Pass, first: int, stop: int) -> tuple:
        """The pass's (first unit, units) for planes [first, stop) of its units tensors."""
        if p.split.whole_n:
            channels = self.descs[self.units_roles(p)[0]].sizes[1]
            first, stop = first // channels, stop // channels
        return first * p.split.per_plane, (stop - first) * p.split.per_plane

    def too_big(self, roles, first: int, stop: int, p: Optional[Pass] = None):
        """(what, bytes) of the first role spanning more than the limit over planes
        [first, stop) (or of the pass's grid past its limits); None if all fit."""
        for role in roles:
            size = self.span_bytes(role, first, stop)
            if size > self.limit:
                return role, size
        if p is not None and not grid_fits(p.split.regrid(*self.unit_range(p, first, stop))[2]):
            return f"{p.kernel.file}'s grid", None
        return None

    def program_too_big(self, first: int, stop: int):
        for p in self.split:
            if p.split.scatter:
                problem = self.too_big([p.split.scatter], first, stop)
            else:
                problem = self.too_big(self.units_roles(p), first, stop, p)
            if problem:
                return problem
        return None

    def runs(self, total: int, step: int, too_big) -> list:
        """Runs [first, stop) covering [0, total), each as long as `too_big` allows, in
        multiples of `step`."""
        runs, first = [], 0
        while first < total:
            def bad(steps):
                return too_big(first, min(first + steps * step, total))

            problem = bad(1)
            if problem:
                role, size = problem
                unit = "batch" if step > 1 else "(n, c) plane"
                spans = f"spans {size} bytes" if size is not None else "needs too many workgroups"
                raise DeviceError(
                    f"{role}: one {unit} {spans}, more than one storage binding of this device holds "
                    f"({self.limit} bytes usable): poolgpu splits large tensors along N and C only; "
                    "use smaller spatial sizes or a device with larger bindings"
                )
            good, most = 1, -(-(total - first) // step)
            while good < most and not bad(min(2 * good, most)):
                good = min(2 * good, most)
            high = min(2 * good, most)  # bad(high) or good == most
            while high - good > 1:
                middle = (good + high) // 2
                good, high = (middle, high) if not bad(middle) else (good, middle)
            stop = min(first + good * step, total)
            runs.append((first, stop))
            first = stop
        return runs

    def view(self, role: str, first: int, stop: int) -> View:
        if role in self.scratch_planes:
            plane = self.scratch_planes[role]
            return View(role, first * plane, stop * plane - 1, shift=-first * plane)
        return View(role, *plane_span(self.descs[role], first, stop))

    def emit(self, p: Pass, units: tuple, planes: Optional[tuple], first_range: bool, last_range: bool) -> Pass:
        s = p.split
        constants, params, grid = s.regrid(*self.unit_range(p, *units))
        params = {**p.params, **params}
        constants = sorted_constants({**dict(p.constants), **constants})
        if planes is not None:
            params.update(s.filter(planes[0], planes[1] - planes[0], first_range, last_range))
        views = []
        for role in p.tensors:
            if role is None:
                views.append(None)
            elif role in s.whole:
                views.append(View(role, 0, max_offset(self.descs[role])))
            else:
                views.append(self.view(role, *(planes if role in (s.gather, s.scatter) else units)))
        return replace(p, tensors=tuple(views), constants=constants, params=params, grid=grid, split=None)

    def program(self, program: Program) -> Program:
        first_split = self.split[0]
        units_role = first_split.split.scatter or self.units_roles(first_split)[0]
        total = plane_count(self.descs[units_role])
        step = self.descs[units_role].sizes[1] if any(p.split.whole_n for p in self.split) else 1
        chunks = self.runs(total, step, self.program_too_big)
        own_runs = {}  # a scatter pass's units and a gather role's planes, in ranges of their own
        for p in self.split:
            s = p.split
            if s.scatter:
                roles = self.units_roles(p)
                own_runs[id(p)] = self.runs(plane_count(self.descs[roles[0]]), 1,
                                            lambda a, b, p=p, roles=roles: self.too_big(roles, a, b, p))
            elif s.gather:
                own_runs[id(p)] = self.runs(plane_count(self.descs[s.gather]), 1,
                                            lambda a, b, g=s.gather: self.too_big([g], a, b))
                if len(own_runs[id(p)]) > 1 and not s.ranged:
                    raise _NeedsRanges()
        passes = []
        for index, chunk in enumerate(chunks):
            for p in program.passes:
                s = p.split
                if s is None:  # whole tensors (a bin table): once, before the first chunk needs it
                    if index == 0:
                        passes.append(p)
                elif s.scatter:
                    passes += [self.emit(p, units, chunk, True, True) for units in own_runs[id(p)]]
                else:
                    ranges = own_runs.get(id(p), [None])
                    passes += [self.emit(p, chunk, r, k == 0, k == len(ranges) - 1) for k, r in enumerate(ranges)]
        longest = max(stop - first for first, stop in chunks)
        scratch = tuple(
            (name, TensorDesc(DataType.UINT32, (1, 1, longest * self.scratch_planes[name])))
            if name in self.scratch_planes else (name, t)
            for name, t in program.scratch
        )
        return replace(program, passes=tuple(passes), scratch=scratch)


def _fits_whole(program: Program, descs: Mapping[str, TensorDesc], limit: int) -> bool:
    descs = dict(descs, **dict(program.scratch))
    for p in program.passes:
        if not grid_fits(p.grid):
            return False
        for role in p.tensors:
            if role is not None and (max_offset(descs[role]) + 1) * descs[role].data_type.size > limit:
                return False
    return True


class _NeedsRanges(Exception):
    """A pass reads a tensor too large to bind whole but cannot read it in ranges."""


def chunked(program: Program, descs: Mapping[str, TensorDesc], limit: int) -> Program:
    """``program`` as dispatches that each bind at most ``limit`` bytes of every tensor (of
    ``descs``: role -> TensorDesc) and fit the grid limits: the program itself where it
    does; else its passes run chunk by chunk over runs of (n, c) planes (see Split), each
    chunk's dispatches binding :class:`View` s of the tensors, and plane-wise scratch shrinks
    to one chunk.  Raises DeviceError where a single plane is too large."""
    if _fits_whole(program, descs, limit):
        return program
    fallback = program.fallback and chunked(program.fallback, descs, limit)
    if program.whole_only:
        return fallback
    if not any(p.split for p in program.passes):
        raise DeviceError(f"{program.passes[0].kernel.file}: a tensor exceeds this device's largest storage binding")
    try:
        return replace(_Chunker(program, descs, limit).program(program), fallback=fallback)
    except _NeedsRanges:
        return fallback
