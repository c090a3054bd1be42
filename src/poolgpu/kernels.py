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
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from string import Template
from typing import Mapping

from .dtypes import DataType

WGSL_DIR = Path(__file__).parent / "wgsl"
MAX_WORKGROUPS_PER_DIM = 65535


@lru_cache(maxsize=None)
def read_wgsl(name: str) -> str:
    return (WGSL_DIR / name).read_text()


@dataclass(frozen=True)
class Slot:
    """A tensor binding of a shader: its prefix in WGSL (``x`` gives ``x_load``) and whether
    the shader writes it."""

    name: str
    output: bool


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
        snippet = read_wgsl(f"common/{direction}_{data_type.storage}.wgsl")
        parts.append(Template(snippet).substitute(name=slot.name, binding=binding, access=access))
    parts += [read_wgsl(kernel.file)] + [read_wgsl(f"common/{name}") for name in kernel.library]
    return "\n".join(parts)


@lru_cache(maxsize=None)
def params_fields(kernel: Kernel) -> tuple:
    """Field names of the kernel's ``struct Params`` (all u32), in declaration order."""
    text = "\n".join([read_wgsl(kernel.file)] + [read_wgsl(f"common/{name}") for name in kernel.library])
    match = re.search(r"struct\s+Params\s*\{(.*?)\}", text, re.S)
    body = re.sub(r"//[^\n]*", "", match.group(1))
    fields = re.findall(r"(\w+)\s*:\s*(\w+)", body)
    assert all(t == "u32" for _, t in fields), f"{kernel.file}: Params must hold only u32 fields"
    return tuple(name for name, _ in fields)


def pack_params(kernel: Kernel, values: Mapping[str, int]) -> bytes:
    names = params_fields(kernel)
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


_POOLING_SLOTS = (Slot("x", False), Slot("y", True), Slot("idx", True))
MAX_POOL = Kernel("max_pool.wgsl", _POOLING_SLOTS, "x", library=("window_walk.wgsl",))
AVERAGE_POOL = Kernel("avg_pool.wgsl", _POOLING_SLOTS, "x", library=("compensated_sum.wgsl", "window_walk.wgsl"))
LP_POOL = Kernel("lp_pool.wgsl", _POOLING_SLOTS, "x", library=("compensated_sum.wgsl", "window_walk.wgsl"))


def _window_walk_pass(kernel: Kernel, desc, roles: tuple, **constants) -> Pass:
    """A pass of a kernel built on common/window_walk.wgsl: one invocation per output."""
    window = desc.window
    in_sizes, _ = as_5d(desc.input.sizes, desc.input.strides)
    out_sizes, _ = as_5d(desc.output.sizes, desc.output.strides)
    n, c, out_d, out_h, out_w = out_sizes
    wg_x = 64
    constants.update({"PADDED": window.has_padding, "WG_X": wg_x})
    for axis, k, s, l, p in zip(
        "DHW",
        as_3d(window.window_size, 1),
        as_3d(window.strides, 1),
        as_3d(window.dilations, 1),
        as_3d(window.start_padding, 0),
    ):
        constants.update({f"K{axis}": k, f"S{axis}": s, f"L{axis}": l, f"P{axis}": p})
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
    return Pass(kernel, roles, sorted_constants(constants), params, grid)


def _max_pool_program(desc) -> Program:
    indices = "output_indices" if getattr(desc, "output_indices", None) is not None else None
    return Program((_window_walk_pass(MAX_POOL, desc, ("input", "output", indices)),))


def _average_pool_program(desc) -> Program:
    constants = {"INCLUDE_PADDING": desc.include_padding}
    # ONNX's ceil_mode: padding past the declared end padding is not counted in the divisor
    counted_end = getattr(desc, "counted_end_padding", None)
    if counted_end is not None and tuple(counted_end) != desc.window.end_padding:
        constants["CLIP_DIVISOR"] = True
        constants.update(zip(("ED", "EH", "EW"), as_3d(counted_end, 0)))
    return Program((_window_walk_pass(AVERAGE_POOL, desc, ("input", "output", None), **constants),))


def _lp_pool_program(desc) -> Program:
    return Program((_window_walk_pass(LP_POOL, desc, ("input", "output", None), P=desc.p),))


# Operator (a description's ``kernel``) -> the function building its Program.
REGISTRY = {
    "max_pool": _max_pool_program,
    "average_pool": _average_pool_program,
    "lp_pool": _lp_pool_program,
}


def program_for(desc) -> Program:
    return REGISTRY[desc.kernel](desc)
