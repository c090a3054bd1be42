"""Dispatch planning: what a compiled operator dispatches for one placement of its tensors.

For each pass of the kernel layer's program (the aligned one or its fallback, chosen by the
tensors' offsets): the pipeline it needs (kernel, data types, read-write inputs, override
constants), the byte range of each tensor each binding covers, its Params uniform and its
workgroup grid.  Pure arithmetic, no GPU: the Op (ops.py) binds what it plans on its
buffers, and ``op.export`` (bundle.py) writes the same plan into a bundle for other hosts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping, Optional

from . import kernels
from .dtypes import DataType
from .errors import DeviceError
from .tuning import Tuning

if TYPE_CHECKING:
    from .descs import Description

__all__ = ["Placement", "Binding", "Dispatch", "Planner", "buffer_size"]


def buffer_size(total_size_in_bytes: int) -> int:
    """The size of the buffer poolgpu allocates for a tensor of ``total_size_in_bytes``:
    whole 16-byte chunks (bindings span whole chunks, for the kernels reading 4 elements at
    once), at least 16.

    Parameters
    ----------
    total_size_in_bytes : int

    Returns
    -------
    int
    """
    return max(16, (total_size_in_bytes + 15) & ~15)


@dataclass(frozen=True)
class Placement:
    """Where a tensor sits: the size of its buffer and the byte offset of its element 0.

    Parameters
    ----------
    buffer_size : int
        Bytes in the buffer holding the tensor.
    offset : int, default 0
        Bytes from the buffer's start to element 0.
    """

    buffer_size: int
    offset: int = 0


@dataclass(frozen=True)
class Binding:
    """A storage binding of one dispatch: ``size`` bytes of tensor ``role``'s buffer from
    byte ``offset``, bound read-write where ``writable``.

    Parameters
    ----------
    binding : int
        The binding number in group 0 (1 and up; 0 is the Params uniform).
    role : str
        The tensor: a role of the description or a scratch name.
    offset, size : int
        The bound bytes of its buffer.
    writable : bool
        Bound read-write (``storage``) rather than read-only.
    """

    binding: int
    role: str
    offset: int
    size: int
    writable: bool


@dataclass(frozen=True)
class Dispatch:
    """One dispatch: its pipeline (``kernel`` specialised by ``data_types`` of its slots,
    the ``writable_inputs`` slots declared read-write, and ``constants``), its storage
    ``bindings``, its Params uniform (``params`` by field, packed as ``uniform``) and its
    workgroup ``grid``.

    Parameters
    ----------
    kernel : kernels.Kernel
    data_types : tuple
        One DataType per slot; None for an absent optional output.
    writable_inputs : frozenset
        Input slots declared read-write (they share a buffer with an output).
    constants : tuple
        Sorted ``(name, value)`` override constants.
    bindings : tuple of Binding
    params : Mapping[str, int]
        Every Params field's value.
    uniform : bytes
        ``params`` packed in the kernel's field order.
    grid : tuple of int
        Workgroups along x, y, z.
    value_type : DataType, optional
        The values' type where the kernel's value slot is absent (``Pass.value_type``).
    """

    kernel: kernels.Kernel
    data_types: tuple
    writable_inputs: frozenset
    constants: tuple
    bindings: tuple
    params: Mapping[str, int]
    uniform: bytes
    grid: tuple
    value_type: Optional[DataType] = None

    @property
    def pipeline_key(self) -> tuple:
        """``(kernel, data_types, writable_inputs, constants, value_type)``: what its
        pipeline depends on."""
        return (self.kernel, self.data_types, self.writable_inputs, self.constants, self.value_type)

    @property
    def source(self) -> str:
        """Its shader's complete WGSL (``kernels.shader_source``)."""
        return kernels.shader_source(self.kernel, self.data_types, self.writable_inputs, self.value_type)


class Planner:
    """The program of one operator for one device's limits, and its dispatches for any
    placement of its tensors.

    Parameters
    ----------
    desc : MaxPoolingDesc, MaxPooling1Desc, ... (any operator description)
        What to compute.
    tuning : Tuning
        Which kernels.
    max_binding : int
        The device's largest storage binding in bytes (``maxStorageBufferBindingSize``).
    alignment : int
        The device's ``minStorageBufferOffsetAlignment``: bindings start at multiples of
        it (and of 8).
    """

    def __init__(self, desc: "Description", tuning: Tuning, max_binding: int, alignment: int) -> None:
        self.alignment = max(alignment, 8)
        self.max_binding = max_binding
        # a binding starts up to one alignment before its tensor and is rounded up to 16 bytes
        self.program = kernels.program_for(desc, tuning, max_binding - self.alignment - 16)
        self.inputs = desc.input_tensors()
        self.outputs = tuple((role, t) for role, t in desc.output_tensors() if t is not None)
        scratch = {}
        for program in (self.program, self.program.fallback):
            for name, t in program.scratch if program else ():
                if name not in scratch or t.total_size_in_bytes > scratch[name].total_size_in_bytes:
                    scratch[name] = t
        self.scratch = scratch  # name -> TensorDesc, large enough for either program
        self.descs = dict(self.inputs + self.outputs + tuple(scratch.items()))

    def pipeline_key(self, pass_: kernels.Pass, writable_roles: frozenset = frozenset()) -> tuple:
        """``(kernel, data_types, writable input slots, constants, value_type)`` of a pass
        whose inputs in ``writable_roles`` share a buffer with an output."""
        roles = [_role(t) for t in pass_.tensors]
        data_types = tuple(None if r is None else self.descs[r].data_type for r in roles)
        writable = frozenset(
            slot.name for slot, role in zip(pass_.kernel.slots, roles)
            if role in writable_roles and not slot.output
        )
        return pass_.kernel, data_types, writable, pass_.constants, pass_.value_type

    def view(self, entry) -> kernels.View:
        """A pass's tensor entry as a View (a role alone: the whole tensor)."""
        if isinstance(entry, kernels.View):
            return entry
        return kernels.View(entry, 0, kernels.max_offset(self.descs[entry]))

    def binding_range(self, view: kernels.View, placement: Placement) -> tuple:
        """(bind offset, bind size, `<slot>_base`) for the view of a tensor placed so: the
        binding starts at the alignment below the view's first element and spans whole
        16-byte chunks (for the chunked kernels); `<slot>_base`, the index in the binding of
        the tensor's element 0, wraps around below the binding (u32) where a view starts
        past it."""
        item = self.descs[view.role].data_type.size
        first = placement.offset + (view.first + view.shift) * item
        start = first - first % self.alignment
        end = placement.offset + (view.last + view.shift + 1) * item
        size = min((end - start + 15) & ~15, placement.buffer_size - start)
        if size > self.max_binding:  # kernels.chunked keeps views within the limit
            raise DeviceError(f"{view.role}: a binding of {size} bytes exceeds this device's limit ({self.max_binding})")
        return start, size, ((placement.offset - start) // item + view.shift) % 2**32

    def program_for(self, placements: Mapping[str, Placement]) -> kernels.Program:
        """The program, or its fallback where a chunked kernel's tensor does not start at a
        multiple of its chunk (4 elements, or 8) or a binding cannot span whole 16-byte
        chunks."""
        program = self.program
        if not program.aligned:
            return program
        for pass_ in program.passes:
            for entry in pass_.tensors:
                if entry is None or _role(entry) not in program.aligned:
                    continue
                placement = placements[_role(entry)]
                _, size, _ = self.binding_range(self.view(entry), placement)
                item = self.descs[_role(entry)].data_type.size
                if placement.offset % (program.aligned_elements * item) or size % 16:
                    return program.fallback
        return program

    def dispatches(self, placements: Mapping[str, Placement],
                   writable_roles: frozenset = frozenset()) -> tuple:
        """Every dispatch, in order, for tensors placed so (every role and scratch name ->
        Placement), inputs in ``writable_roles`` sharing a buffer with an output."""
        planned = []
        for pass_ in self.program_for(placements).passes:
            kernel, data_types, writable, constants, value_type = self.pipeline_key(pass_, writable_roles)
            params = dict(pass_.params)
            bindings = []
            for number, (slot, entry) in enumerate(zip(kernel.slots, pass_.tensors), start=1):
                params[f"{slot.name}_base"] = 0
                if entry is None:
                    continue
                view = self.view(entry)
                start, size, base = self.binding_range(view, placements[view.role])
                params[f"{slot.name}_base"] = base
                bindings.append(Binding(number, view.role, start, size, slot.output or slot.name in writable))
            uniform = kernels.pack_params(kernel, params)
            planned.append(Dispatch(kernel, data_types, writable, constants, tuple(bindings), params, uniform,
                                    tuple(pass_.grid), value_type))
        return tuple(planned)

    def standalone(self) -> dict:
        """Every tensor in a buffer of its own, from byte 0 (role -> Placement)."""
        return {role: Placement(buffer_size(t.total_size_in_bytes)) for role, t in self.descs.items()}


def _role(entry) -> Optional[str]:
    """The role of a pass's tensor entry (a role, a View of one, or None)."""
    return entry.role if isinstance(entry, kernels.View) else entry

