"""The kernel layer's model: a Program of Passes, each a Kernel (a .wgsl file and its
tensor Slots) with override constants, uniform values and a workgroup grid, and how a
shader's source is assembled.

A shader is one file in ``wgsl/``.  Before compiling, one small visible step prepends:

1. the kernel's header (``wgsl/common/header.wgsl``): its ``struct Params`` uniform at
   binding 0, generated from the Kernel's declaration (``Kernel.fields``: one u32 per
   field), and the workgroup width ``WG_X`` the grids share;
2. the value snippet of its main tensor's data type (``wgsl/common/value_*.wgsl``: the
   ``Raw`` and ``Key`` types and how values compare), and
3. one I/O snippet per tensor (``wgsl/common/{read,write}_b{8,16,32,64}.wgsl`` or
   ``absent.wgsl``), with ``$name``, ``$binding`` and ``$access`` substituted, giving the
   kernel ``x_load(e)``, ``y_store(e, v)``, ... over u32 words whatever the type.

Everything else is specialised by override constants.  The declaration is the one place
that fixes Params' layout: Python packs the values in its order (:func:`pack_params`), and a
Kernel whose WGSL reads a field it does not declare fails when it is declared (at import).
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
    the data type's read/write one (e.g. ``atomic_b32.wgsl`` for atomic scratch words), or
    several, separated by spaces, each adding to those before it (``read_{storage}.wgsl
    read4_any.wgsl``); ``{storage}`` in it becomes the data type's storage class
    (``read4_{storage}.wgsl``)."""

    name: str
    output: bool
    snippet: str = ""


@dataclass(frozen=True)
class Kernel:
    """A .wgsl file and its tensor slots, bound in order from binding 1 (0 is Params).
    ``library`` lists shared files (``wgsl/common/``) appended after it, such as the
    window walk that calls the operator's accumulator.  ``params`` names the u32 fields of
    its Params uniform after the slots' ``<slot>_base`` offsets (which the device layer
    fills); the header declares them (see :func:`shader_source`).  ``loops(constants,
    params)`` gives, for each loop variable of its WGSL, the most iterations one invocation
    runs of that loop in a pass with these override constants and uniform values (see
    :mod:`.split`)."""

    file: str
    slots: tuple
    value_slot: str  # the slot whose data type picks the value snippet
    library: tuple = ()
    params: tuple = ()
    loops: Optional[Callable] = None

    def __post_init__(self):
        fields = self.fields
        if len(set(fields)) != len(fields):
            raise ValueError(f"{self.file}: Params fields declared twice: {sorted(f for f in fields if fields.count(f) > 1)}")
        read = set(re.findall(r"\bparams\.(\w+)", _without_comments(self.sources())))
        if not read <= set(fields):
            raise ValueError(f"{self.file}: the WGSL reads Params fields it does not declare: {sorted(read - set(fields))}")

    @property
    def fields(self) -> tuple:
        """Its Params fields, in order: the slots' ``<slot>_base``, then ``params``."""
        return tuple(f"{slot.name}_base" for slot in self.slots) + self.params

    def sources(self) -> str:
        """The kernel's own WGSL: its file and library (not the prepended snippets)."""
        return "\n".join([read_wgsl(self.file)] + [read_wgsl(f"common/{name}") for name in self.library])


def _without_comments(wgsl: str) -> str:
    return re.sub(r"//[^\n]*", "", wgsl)


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
    ``<name>_base`` offsets), its workgroup grid, and how it splits for large tensors.
    ``value_type`` gives the data type of the kernel's values where its value slot is
    absent (a split max walk's merge writing only indices)."""

    kernel: Kernel
    tensors: tuple
    constants: tuple  # sorted (name, value) pairs: hashable, part of the pipeline key
    params: Mapping[str, int]
    grid: tuple
    split: Optional[Split] = None
    value_type: Optional[DataType] = None  # the value snippet's type where the value slot is absent


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
def shader_source(kernel: Kernel, data_types: tuple, writable_inputs: frozenset = frozenset(),
                  value_type: Optional[DataType] = None) -> str:
    """The full WGSL of ``kernel`` for the data types of its slots (None: absent output);
    ``value_type``: its values' type where the value slot is absent.

    ``writable_inputs`` names input slots to declare read_write: WebGPU forbids a buffer
    bound read-only and writable in one dispatch, so an input sharing a buffer with an
    output must be declared writable (it is still only read)."""
    fields = "\n".join(f"    {name}: u32," for name in kernel.fields)
    parts = [Template(read_wgsl("common/header.wgsl")).substitute(fields=fields)]
    by_slot = dict(zip((s.name for s in kernel.slots), data_types))
    parts.append(_value_snippet(by_slot[kernel.value_slot] or value_type))
    for binding, (slot, data_type) in enumerate(zip(kernel.slots, data_types), start=1):
        if data_type is None:
            parts.append(Template(read_wgsl("common/absent.wgsl")).substitute(name=slot.name))
            continue
        direction = "write" if slot.output else "read"
        access = "read_write" if slot.name in writable_inputs else "read"
        for file in (slot.snippet or direction + "_{storage}.wgsl").split():
            snippet = read_wgsl("common/" + file.format(storage=data_type.storage))
            parts.append(Template(snippet).substitute(name=slot.name, binding=binding, access=access))
    parts.append(kernel.sources())
    return "\n".join(parts)


def pack_params(kernel: Kernel, values: Mapping[str, int]) -> bytes:
    """The kernel's Params uniform holding ``values`` (field name -> u32), in its order."""
    names = kernel.fields
    values = {"opaque_zero": 0, **values}  # always 0: common/as_written.wgsl
    missing = set(names) - set(values)
    if missing:
        raise ValueError(f"{kernel.file}: no value for Params fields {sorted(missing)}")
    words = [values[n] for n in names]
    # A uniform struct's size is padded to its 16-byte alignment.
    words += [0] * (-len(words) % 4)
    return struct.pack(f"<{len(words)}I", *words)
