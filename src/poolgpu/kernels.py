"""The kernel registry: each operator's Program (its passes: .wgsl file, tensors, override
constants, uniform values, dispatch geometry) and how a shader's source is assembled.

A shader is one file in ``wgsl/``.  Before compiling, one small visible step prepends:

1. the value snippet of its main tensor's data type (``wgsl/common/value_*.wgsl``: the
   ``Raw`` and ``Key`` types, how values compare, and for floats ``to_f32``/``from_f32``;
   FLOAT16's is preceded by ``float16_convert.wgsl``),
2. one I/O snippet per tensor (``wgsl/common/{read,write}_b{8,16,32,64}.wgsl`` or
   ``absent.wgsl``, or the slot's own ``snippet``), with ``$name``, ``$binding`` and
   ``$access`` substituted, giving the kernel ``x_load(e)``, ``y_store(e, v)``, ... over
   u32 words whatever the type, and
3. the kernel's ``helpers``: shared functions from ``wgsl/common``.

Everything else is specialised by override constants.  Binding 0 is the kernel's
``struct Params`` uniform; Python fills it by field name (see :func:`params_fields`), so
the shader's struct is the one place that fixes its layout.
"""

from __future__ import annotations

import math
import re
import struct
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from string import Template
from typing import Mapping

from .dtypes import DataType
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
    the data type's read/write one (e.g. ``atomic_b32.wgsl`` for atomic scratch words)."""

    name: str
    output: bool
    snippet: str = ""


@dataclass(frozen=True)
class Kernel:
    """A .wgsl file and its tensor slots, bound in order from binding 1 (0 is Params)."""

    file: str
    slots: tuple
    value_slot: str  # the slot whose data type picks the value snippet
    helpers: tuple = ()  # wgsl/common snippets of shared functions the file calls


@dataclass(frozen=True)
class Pass:
    """One dispatch of a kernel: which tensor feeds each slot (a role of the description, a
    scratch name, or None for an absent optional output), its override constants, its
    uniform values (all but the per-slot ``<name>_base`` offsets) and its workgroup grid."""

    kernel: Kernel
    tensors: tuple
    constants: tuple  # sorted (name, value) pairs: hashable, part of the pipeline key
    params: Mapping[str, int]
    grid: tuple


@dataclass(frozen=True)
class Program:
    """What a compiled operator dispatches, in order, plus the scratch tensors its passes
    share (allocated once per compiled operator)."""

    passes: tuple
    scratch: tuple = ()  # (name, TensorDesc) pairs


def _value_snippet(data_type: DataType) -> str:
    if data_type == DataType.FLOAT16:
        # FLOAT16's to_f32/from_f32 use the exact integer-op conversions.
        return read_wgsl("common/float16_convert.wgsl") + read_wgsl("common/value_float16.wgsl")
    if data_type.is_float:
        return read_wgsl(f"common/value_{data_type.name.lower()}.wgsl")
    signed = data_type.name.startswith("INT")
    bits = 8 * data_type.size
    file = "common/value_int64.wgsl" if bits == 64 else "common/value_int.wgsl"
    sign_bit = 1 << (min(bits, 32) - 1) if signed else 0
    return Template(read_wgsl(file)).substitute(sign_bit=hex(sign_bit))


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
        snippet = read_wgsl(f"common/{slot.snippet or f'{direction}_{data_type.storage}.wgsl'}")
        parts.append(Template(snippet).substitute(name=slot.name, binding=binding, access=access))
    parts.extend(read_wgsl(f"common/{helper}") for helper in kernel.helpers)
    parts.append(read_wgsl(kernel.file))
    return "\n".join(parts)


@lru_cache(maxsize=None)
def params_fields(kernel_file: str) -> tuple:
    """Field names of the kernel's ``struct Params`` (all u32), in declaration order."""
    match = re.search(r"struct\s+Params\s*\{(.*?)\}", read_wgsl(kernel_file), re.S)
    body = re.sub(r"//[^\n]*", "", match.group(1))
    fields = re.findall(r"(\w+)\s*:\s*(\w+)", body)
    assert all(t == "u32" for _, t in fields), f"{kernel_file}: Params must hold only u32 fields"
    return tuple(name for name, _ in fields)


def pack_params(kernel_file: str, values: Mapping[str, int]) -> bytes:
    names = params_fields(kernel_file)
    missing = set(names) - set(values)
    assert not missing, f"{kernel_file}: no value for Params fields {sorted(missing)}"
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


def tensor_stride_params(name: str, tensor) -> dict:
    if tensor is None:
        return {f"{name}_{axis}": 0 for axis in "ncdhw"}
    _, strides = as_5d(tensor.sizes, tensor.strides)
    return {f"{name}_{axis}": s for axis, s in zip("ncdhw", strides)}


def row_grid(columns: int, rows: int, wg_x: int) -> tuple:
    """Workgroups for `rows` rows of `columns` invocations; rows fold over y and z."""
    rows_per_z = min(rows, MAX_WORKGROUPS_PER_DIM)
    return (math.ceil(columns / wg_x), rows_per_z, math.ceil(rows / rows_per_z)), rows_per_z


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


MAX_POOL = Kernel(
    "max_pool.wgsl", (Slot("x", False), Slot("y", True), Slot("idx", True)), value_slot="x",
    helpers=("window_max.wgsl",),
)


def _max_pool_program(desc) -> Program:
    window = desc.window
    in_sizes, _ = as_5d(desc.input.sizes, desc.input.strides)
    out_sizes, _ = as_5d(desc.output.sizes, desc.output.strides)
    n, c, out_d, out_h, out_w = out_sizes
    wg_x = 64
    constants = {"WG_X": wg_x, **window_constants(window)}
    rows = n * c * out_d * out_h
    grid, rows_per_z = row_grid(out_w, rows, wg_x)
    params = {
        "channels": c,
        "in_d": in_sizes[2], "in_h": in_sizes[3], "in_w": in_sizes[4],
        "out_d": out_d, "out_h": out_h, "out_w": out_w,
        "rows": rows, "rows_per_z": rows_per_z,
    }
    indices = getattr(desc, "output_indices", None)
    for name, tensor in (("x", desc.input), ("y", desc.output), ("idx", indices)):
        params.update(tensor_stride_params(name, tensor))
    roles = ("input", "output", "output_indices" if indices is not None else None)
    return Program((Pass(MAX_POOL, roles, sorted_constants(constants), params, grid),))


# ---------------------------------------------------------------------------------------
# Gradients: each invocation owns a block of dx elements and gathers what lands on them
# (deterministic: no atomics, a fixed summation order)

MAX_POOL_GRAD = Kernel(
    "max_pool_grad.wgsl", (Slot("dy", False), Slot("arg", False), Slot("dx", True)), value_slot="dy",
    helpers=("windows_covering.wgsl",),
)
MAX_POOL_GRAD_DISJOINT = Kernel(
    "max_pool_grad_disjoint.wgsl", (Slot("x", False), Slot("dy", False), Slot("dx", True)), value_slot="x",
    helpers=("windows_covering.wgsl", "window_max.wgsl"),
)
AVERAGE_POOL_GRAD = Kernel(
    "average_pool_grad.wgsl", (Slot("dy", False), Slot("dx", True)), value_slot="dy",
    helpers=("windows_covering.wgsl",),
)


def _gradient_block_pass(kernel: Kernel, desc, tensors: dict, constants: dict) -> Pass:
    """One invocation per block of stride-many dx elements along each dimension (see
    wgsl/common/windows_covering.wgsl), rows of blocks folded as in max pooling.
    ``tensors`` maps slot names to description roles."""
    dy, dx, window = desc.input_gradient, desc.output_gradient, desc.window
    n, c, in_d, in_h, in_w = as_5d(dx.sizes, dx.strides)[0]
    _, _, out_d, out_h, out_w = as_5d(dy.sizes, dy.strides)[0]
    # blocks b * stride - pad % stride + [0, stride) cover [0, size)
    blocks_d, blocks_h, blocks_w = (
        -(-(size + pad % stride) // stride)
        for size, stride, pad in zip((in_d, in_h, in_w), as_3d(window.strides, 1), as_3d(window.start_padding, 0))
    )
    wg_x = 64
    rows = n * c * blocks_d * blocks_h
    grid, rows_per_z = row_grid(blocks_w, rows, wg_x)
    params = {
        "channels": c,
        "in_d": in_d, "in_h": in_h, "in_w": in_w,
        "out_d": out_d, "out_h": out_h, "out_w": out_w,
        "blocks_d": blocks_d, "blocks_h": blocks_h, "blocks_w": blocks_w,
        "rows": rows, "rows_per_z": rows_per_z,
    }
    described = dict(desc.input_tensors() + desc.output_tensors())
    for slot, role in tensors.items():
        if role in described:
            params.update(tensor_stride_params(slot, described[role]))
    constants = {"WG_X": wg_x, **window_constants(window), **constants}
    return Pass(kernel, tuple(tensors.values()), sorted_constants(constants), params, grid)


def _tap_steps(window) -> dict:
    """T{D,H,W} and I{D,H,W} of windows_covering.wgsl's first_tap: the taps landing on one
    block element recur every step = stride / gcd(dilation, stride) taps."""
    constants = {}
    for axis, s, l in zip("DHW", as_3d(window.strides, 1), as_3d(window.dilations, 1)):
        step = s // math.gcd(l, s)
        constants.update({f"T{axis}": step, f"I{axis}": pow(l // (s // step), -1, step)})
    return constants


def _max_pool_grad_program(desc) -> Program:
    window = desc.window
    if all(s >= e for s, e in zip(window.strides, window.extents)):
        # No dx element lies in two windows: one pass finds each argmax and writes its block.
        tensors = {"x": "input", "dy": "input_gradient", "dx": "output_gradient"}
        return Program((_gradient_block_pass(MAX_POOL_GRAD_DISJOINT, desc, tensors, {}),))
    # Pass 1: forward max pooling writing only each window's argmax (into scratch);
    # pass 2: the gather adding each window's dy at its argmax.
    (argmax,) = _max_pool_program(desc.forward).passes
    argmax = replace(argmax, tensors=("input", None, "argmax"))  # no forward values needed
    tensors = {"dy": "input_gradient", "arg": "argmax", "dx": "output_gradient"}
    gather = _gradient_block_pass(MAX_POOL_GRAD, desc, tensors, _tap_steps(desc.window))
    return Program((argmax, gather), scratch=(("argmax", desc.forward.output_indices),))


def _average_pool_grad_program(desc) -> Program:
    tensors = {"dy": "input_gradient", "dx": "output_gradient"}
    constants = {"INCLUDE_PADDING": desc.include_padding, **_tap_steps(desc.window)}
    return Program((_gradient_block_pass(AVERAGE_POOL_GRAD, desc, tensors, constants),))


# ---------------------------------------------------------------------------------------
# Max unpooling: deterministic winner selection (integer atomicMax), then a gather

MAX_UNPOOL_WINNERS = Kernel(
    "max_unpool_winners.wgsl", (Slot("idx", False), Slot("winner", True, snippet="atomic_b32.wgsl")),
    value_slot="idx",
)
MAX_UNPOOL = Kernel(
    "max_unpool.wgsl", (Slot("x", False), Slot("winner", True, snippet="atomic_b32.wgsl"), Slot("y", True)),
    value_slot="x",
)


def _max_unpool_program(desc) -> Program:
    x, indices, y = desc.input, desc.indices, desc.output
    n, c, in_d, in_h, in_w = as_5d(x.sizes, x.strides)[0]
    _, _, out_d, out_h, out_w = as_5d(y.sizes, y.strides)[0]
    wg_x = 64
    constants = sorted_constants({"WG_X": wg_x})
    in_rows, out_rows = n * c * in_d * in_h, n * c * out_d * out_h
    in_grid, in_rows_per_z = row_grid(in_w, in_rows, wg_x)
    out_grid, out_rows_per_z = row_grid(out_w, out_rows, wg_x)
    sizes = {"channels": c, "in_d": in_d, "in_h": in_h, "in_w": in_w}
    winners = Pass(
        MAX_UNPOOL_WINNERS, ("indices", "winner"),
        sorted_constants({"WG_X": wg_x, "WIDE_INDICES": indices.data_type == DataType.UINT64}),
        {**sizes, **tensor_stride_params("idx", indices), "out_count": y.element_count,
         "rows": in_rows, "rows_per_z": in_rows_per_z},
        in_grid,
    )
    write = Pass(
        MAX_UNPOOL, ("input", "winner", "output"), constants,
        {**sizes, "out_d": out_d, "out_h": out_h, "out_w": out_w,
         **tensor_stride_params("x", x), **tensor_stride_params("y", y),
         "rows": out_rows, "rows_per_z": out_rows_per_z},
        out_grid,
    )
    # The winner scratch starts zero-filled and the write pass leaves it zeroed again.
    return Program((winners, write), scratch=(("winner", TensorDesc(DataType.UINT32, y.sizes)),))


# Operator (a description's ``kernel``) -> the function building its Program.
REGISTRY = {
    "max_pool": _max_pool_program,
    "max_pool_grad": _max_pool_grad_program,
    "average_pool_grad": _average_pool_grad_program,
    "max_unpool": _max_unpool_program,
}


def program_for(desc) -> Program:
    return REGISTRY[desc.kernel](desc)
