"""Op: a compiled operator, its program's pipelines, bind groups and uniforms per call."""

from __future__ import annotations

import weakref
from collections import OrderedDict
from typing import TYPE_CHECKING, Optional, Union

import wgpu

from . import _native, kernels
from .errors import DeviceError, ValidationError
from .tensor import Tensor
from .tensor_desc import TensorDesc
from .tuning import Tuning

if TYPE_CHECKING:
    from .descs import Description
    from .device import Device

__all__ = ["Op"]

_BIND_GROUP_CACHE_SIZE = 16


class _Bound:
    """The bind groups (one per dispatch) and uniform buffers for one set of tensors, with
    weak references to their buffers so that the cache entry dies with them; ``raw``: the
    dispatches' C handles (_native.py), where the device runs on wgpu-native."""

    __slots__ = ("dispatches", "raw", "uniforms", "refs")


# Distinct uniform contents kept per op: a call on new tensors at the usual offsets reuses
# its uniform buffers (the functional API allocates new tensors every call).
_UNIFORM_CACHE_SIZE = 64


class Op:
    """A compiled operator: ``op(*inputs, out=None)`` -> output Tensor(s).

    Its program is chunked where a tensor exceeds the device's largest storage binding
    (kernels.chunked).  Concurrent calls may share its scratch tensors: a call's passes are
    recorded together into one command buffer, and the queue runs command buffers one after
    another.  Made by ``Device.compile``, which caches them.

    Parameters
    ----------
    device : Device
        The device it runs on (``op.device``).
    desc : MaxPoolingDesc, MaxPooling1Desc, ... (any operator description)
        What it computes (``op.desc``).
    tuning : Tuning, optional
        Which kernels; default None: ``device.tuning``.
    """

    def __init__(self, device: "Device", desc: "Description", tuning: Optional[Tuning] = None) -> None:
        self.device = device
        self.desc = desc
        self.tuning = device.tuning if tuning is None else tuning
        align = device.limits.get("min-storage-buffer-offset-alignment", 256)
        self._align = max(align, 8)
        self._max_binding = device.limits["max-storage-buffer-binding-size"]
        # a binding starts up to one alignment before its tensor and is rounded up to 16 bytes
        self._program = kernels.program_for(desc, self.tuning, self._max_binding - self._align - 16)
        self._inputs = desc.input_tensors()
        self._outputs = tuple((role, t) for role, t in desc.output_tensors() if t is not None)
        scratch = {}
        for program in (self._program, self._program.fallback):
            for name, t in program.scratch if program else ():
                if name not in scratch or t.total_size_in_bytes > scratch[name].total_size_in_bytes:
                    scratch[name] = t
        self._descs = dict(self._inputs + self._outputs + tuple(scratch.items()))
        self._scratch = {name: device.empty(t) for name, t in scratch.items()}
        self._bound = OrderedDict()
        self._uniforms = {}
        self._input_roles = tuple(role for role, _ in self._inputs)
        self._output_roles = tuple(role for role, _ in self._outputs)
        # The last call's tensors: (bound, weak references to the Tensors, their (buffer
        # id, offset, desc)), so that calling again on the same tensors skips checking and
        # binding them.  Cleared with the bound entry when one of its buffers dies.
        self._memo = None
        for pass_ in self._program.passes:  # build the pipelines now, not on the first call
            self._pass_pipeline(pass_, frozenset())

    def __repr__(self) -> str:
        return f"Op({type(self.desc).__name__})"

    def _pass_pipeline(self, pass_, writable_roles: frozenset):
        roles = [_role(t) for t in pass_.tensors]
        data_types = tuple(None if r is None else self._descs[r].data_type for r in roles)
        writable = frozenset(
            slot.name for slot, role in zip(pass_.kernel.slots, roles)
            if role in writable_roles and not slot.output
        )
        return self.device._pipeline(pass_.kernel, data_types, writable, pass_.constants, pass_.value_type)

    def _view(self, entry) -> kernels.View:
        """A pass's tensor entry as a View (a role alone: the whole tensor)."""
        if isinstance(entry, kernels.View):
            return entry
        return kernels.View(entry, 0, kernels.max_offset(self._descs[entry]))

    def _binding_range(self, view: kernels.View, tensor) -> tuple:
        """(bind offset, bind size, `<slot>_base`) for the view of `tensor`: the binding starts
        at the device's offset alignment below the view's first element and spans whole
        16-byte chunks (for the chunked kernels); `<slot>_base`, the index in the binding of
        the tensor's element 0, wraps around below the binding (u32) where a view starts
        past it."""
        item = tensor.desc.data_type.size
        first = tensor.offset + (view.first + view.shift) * item
        start = first - first % self._align
        end = tensor.offset + (view.last + view.shift + 1) * item
        size = min((end - start + 15) & ~15, tensor.buffer.size - start)
        if size > self._max_binding:  # kernels.chunked keeps views within the limit
            raise DeviceError(f"{view.role}: a binding of {size} bytes exceeds this device's limit ({self._max_binding})")
        return start, size, ((tensor.offset - start) // item + view.shift) % 2**32

    def _check(self, role: str, tensor, expected: TensorDesc) -> None:
        if not isinstance(tensor, Tensor):
            raise ValidationError(role, f"expected a poolgpu Tensor, got {type(tensor).__name__} (use device.upload)")
        if tensor.device is not self.device:
            raise ValidationError(role, "the tensor lives on another Device")
        got = tensor.desc
        if (got.data_type, got.sizes, got.strides) != (expected.data_type, expected.sizes, expected.strides):
            raise ValidationError(
                role,
                f"the tensor is {got.data_type.name} {got.sizes} strides {got.strides}, the description expects "
                f"{expected.data_type.name} {expected.sizes} strides {expected.strides}",
            )

    def __call__(self, *inputs: Tensor,
                 out: Union[Tensor, tuple, None] = None) -> Union[Tensor, tuple]:
        """Run the operator.

        Parameters
        ----------
        *inputs : Tensor
            The description's input tensors in the order of its fields (``input``; the max
            gradient ``input, input_gradient``; unpooling ``input, indices``; ROI pooling
            ``input, roi``), on this op's device, each matching its TensorDesc (type, sizes
            and strides).
        out : Tensor or tuple of Tensor, optional
            Existing tensors to write the results into, matching the description's outputs;
            default None: new ones.

        Returns
        -------
        Tensor or tuple of Tensor
            The output, or ``(output, output_indices)`` for max pooling with indices.  Work
            is submitted when the call returns (or at the end of a ``batch()``).

        Raises
        ------
        ValidationError
            Naming the tensor that does not match its description, lives on another Device
            or overlaps an output.
        TypeError
            The wrong number of inputs.
        DeviceError
            The device is lost or out of memory.
        """
        memo = self._memo
        if memo is not None and out is not None:  # the hot path: the same tensors as last time
            outputs = (out,) if out.__class__ is Tensor else tuple(out)
            tensors = inputs + outputs
            bound, refs, states = memo
            if len(tensors) == len(refs):
                for ref, t, (buffer_id, offset, desc) in zip(refs, tensors, states):
                    if ref() is not t or id(t.buffer) != buffer_id or t.offset != offset or t.desc is not desc:
                        break
                else:
                    self.device._dispatch(bound)
                    return outputs[0] if len(outputs) == 1 else outputs
        return self._call(inputs, out)

    def _call(self, inputs: tuple, out):
        if len(inputs) != len(self._inputs):
            names = ", ".join(self._input_roles)
            raise TypeError(f"{self!r} takes {len(self._inputs)} input tensor(s) ({names}), got {len(inputs)}")
        for tensor, (role, expected) in zip(inputs, self._inputs):
            self._check(role, tensor, expected)
        if out is None:
            outputs = tuple(self.device.empty(t) for _, t in self._outputs)
        else:
            outputs = (out,) if isinstance(out, Tensor) else tuple(out)
            if len(outputs) != len(self._outputs):
                raise ValidationError("out", f"expected {len(self._outputs)} output tensor(s), got {len(outputs)}")
            for tensor, (role, expected) in zip(outputs, self._outputs):
                self._check(role, tensor, expected)
        tensors = dict(zip(self._input_roles, inputs))
        tensors.update(zip(self._output_roles, outputs))
        bound = self._bind(tensors)
        self.device._dispatch(bound)
        if out is not None:
            called = inputs + outputs
            self._memo = (bound, tuple(weakref.ref(t) for t in called),
                          tuple((id(t.buffer), t.offset, t.desc) for t in called))
        return outputs[0] if len(outputs) == 1 else outputs

    def _bind(self, tensors: dict) -> _Bound:
        key = tuple((id(t.buffer), t.offset) for t in tensors.values())
        lock = self.device._lock
        with lock:
            bound = self._bound.get(key)
            if bound is not None and all(ref() is not None for ref in bound.refs):
                self._bound.move_to_end(key)
                return bound
        writable_roles = self._check_overlaps(tensors)
        tensors = dict(tensors, **self._scratch)
        device = self.device
        bound = _Bound()
        bound.dispatches, bound.uniforms = [], []
        with device._guard("binding tensors"):
            for pass_ in self._program_for(tensors).passes:
                pipeline = self._pass_pipeline(pass_, writable_roles)
                params = dict(pass_.params)
                entries = []
                for binding, (slot, entry) in enumerate(zip(pass_.kernel.slots, pass_.tensors), start=1):
                    params[f"{slot.name}_base"] = 0
                    if entry is None:
                        continue
                    view = self._view(entry)
                    tensor = tensors[view.role]
                    start, size, base = self._binding_range(view, tensor)
                    params[f"{slot.name}_base"] = base
                    entries.append({"binding": binding, "resource": {"buffer": tensor.buffer, "offset": start, "size": size}})
                uniform = self._uniform(kernels.pack_params(pass_.kernel, params))
                entries.insert(0, {"binding": 0, "resource": {"buffer": uniform, "offset": 0, "size": uniform.size}})
                bind_group = device.wgpu_device.create_bind_group(layout=pipeline[1], entries=entries)
                bound.dispatches.append((pipeline[0], bind_group, pass_.grid))
                bound.uniforms.append(uniform)
        bound.raw = _native.handles(bound.dispatches) if device._native else None
        cache = self._bound
        op = weakref.ref(self)

        def forget(ref, key=key):
            # A bind group keeps its buffers' memory alive: drop the entry (and the memo of
            # the last call) as soon as one of its buffers is gone, not only when it ages out.
            with lock:
                entry = cache.get(key)
                if entry is not None and any(r is ref for r in entry.refs):
                    del cache[key]
                alive = op()
                if alive is not None and alive._memo is not None and any(r is ref for r in alive._memo[0].refs):
                    alive._memo = None

        bound.refs = tuple(weakref.ref(t.buffer, forget) for t in tensors.values())
        with lock:
            cache[key] = bound
            while len(cache) > _BIND_GROUP_CACHE_SIZE:
                cache.popitem(last=False)
        return bound

    def _uniform(self, data: bytes):
        """A uniform buffer holding `data` (shared by the op's calls that need the same)."""
        uniform = self._uniforms.get(data)
        if uniform is None:
            if len(self._uniforms) >= _UNIFORM_CACHE_SIZE:
                self._uniforms.clear()
            uniform = self.device.wgpu_device.create_buffer_with_data(data=data, usage=wgpu.BufferUsage.UNIFORM)
            self._uniforms[data] = uniform
        return uniform

    def _program_for(self, tensors: dict):
        """The op's program, or its fallback where a chunked kernel's tensor does not start
        at a multiple of its chunk (4 elements, or 8) or a binding cannot span whole 16-byte
        chunks."""
        program = self._program
        if not program.aligned:
            return program
        for pass_ in program.passes:
            for entry in pass_.tensors:
                if entry is None or _role(entry) not in program.aligned:
                    continue
                t = tensors[_role(entry)]
                start, size, _ = self._binding_range(self._view(entry), t)
                if t.offset % (program.aligned_elements * t.desc.data_type.size) or size % 16:
                    return program.fallback
        return program

    def _check_overlaps(self, tensors: dict) -> frozenset:
        """Refuse outputs overlapping any other tensor of the call; return the roles of
        inputs that share a buffer with an output (they must be bound read-write)."""
        output_roles = {r for r, _ in self._outputs}
        ranges = [(role, t.buffer, t.offset, t.offset + t.desc.total_size_in_bytes) for role, t in tensors.items()]
        writable = set()
        for role, buffer, lo, hi in ranges:
            if role not in output_roles:
                continue
            for other, other_buffer, other_lo, other_hi in ranges:
                if other == role or other_buffer is not buffer:
                    continue
                if lo < other_hi and other_lo < hi:
                    raise ValidationError(
                        role, f"the output's bytes [{lo}, {hi}) overlap those of {other} [{other_lo}, {other_hi})"
                    )
                if other not in output_roles:
                    writable.add(other)
        return frozenset(writable)


def _role(entry):
    """The role of a pass's tensor entry (a role, a View of one, or None)."""
    return entry.role if isinstance(entry, kernels.View) else entry
