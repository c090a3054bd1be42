"""The kernel layer's model: a Program of Passes, each a Kernel (a .wgsl file and its
tensor Slots) with override constants, uniform values and a workgroup grid, and how a
shader's source is assembled.

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

import re
import struct
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from string import Template
from typing import Callable, Mapping, Optional

from ..dtypes import DataType

WGSL_DIR = Path(__file__).parent.parent / "wgsl"


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
