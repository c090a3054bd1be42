"""Op: a compiled operator, its program's pipelines, bind groups and uniforms per call."""

from __future__ import annotations

import os
import threading
import weakref
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Sequence, Union

import numpy as np
import wgpu

from . import _native
from .bundle import WEBGPU_ALIGNMENT, WEBGPU_MAX_BINDING, write_bundle
from .dispatches import Placement, Planner
from .errors import ValidationError
from .limits import check_tuning, check_workgroups
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

    __slots__ = ("dispatches", "raw", "uniforms", "refs", "plan")


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
        check_tuning(self.tuning, device.limits)
        self._binding_limits = (device.limits["max-storage-buffer-binding-size"],
                                device.limits.get("min-storage-buffer-offset-alignment", 256))
        self._specialised = None   # its specialised plan, once planned (_specialised_plan)
        # The shape-generic program first (Tuning.generic_calls), where the specialised
        # pipelines are not built yet and the generic ones differ: a new size of an operator
        # already used then builds nothing.  None: this op runs its specialised program.
        self._generic_calls_left = plan = None
        if self.tuning.generic_calls:
            generic = Planner(desc, self.tuning.shape_generic(), *self._binding_limits)
            if self._built(generic):
                # (an operator already used, at a new size: the usual case.  Its specialised
                # program is planned when its calls switch to it, not at every new size.)
                plan, self._generic_calls_left = generic, self.tuning.generic_calls
            else:
                specialised = self._specialised_plan()
                if not self._built(specialised) and _pipeline_keys(generic) != _pipeline_keys(specialised):
                    check_workgroups((p.constants for p in specialised.program.passes), device.limits, self.tuning)
                    plan, self._generic_calls_left = generic, self.tuning.generic_calls
        plan = plan or self._specialised_plan()
        # every workgroup within the device's limits: a clear error now, never a pipeline's
        check_workgroups((p.constants for p in plan.program.passes), device.limits, self.tuning)
        self._scratch = {}
        self._use(plan)
        self._bound = OrderedDict()
        # `_bound`'s lock, and the entries whose buffers died while it was held (see _bind)
        self._bound_lock, self._dead = threading.Lock(), []
        self._uniforms = {}
        self._input_roles = tuple(role for role, _ in self._inputs)
        self._output_roles = tuple(role for role, _ in self._outputs)
        # The last call's tensors: (bound, weak references to the Tensors, their (buffer
        # id, offset, desc)), so that calling again on the same tensors skips checking and
        # binding them.  Cleared with the bound entry when one of its buffers dies.
        self._memo = None
        self._recent = {}  # role -> weak reference to the pooled buffer of the last round trip
        for key in _pipeline_keys(plan):  # build the pipelines now, not on the first call
            device._pipeline(*key)

    def _use(self, plan: Planner) -> None:
        """Run ``plan`` (its scratch tensors allocated where the current ones do not fit)."""
        self._plan, self._program, self._align, self._max_binding = plan, plan.program, plan.alignment, plan.max_binding
        self._inputs, self._outputs = plan.inputs, plan.outputs
        for name, t in plan.scratch.items():
            if name not in self._scratch or self._scratch[name].desc != t:
                self._scratch[name] = self.device.empty(t)

    def _built(self, plan: Planner) -> bool:
        return all(self.device._has_pipeline(*key) for key in _pipeline_keys(plan))

    def _specialised_plan(self) -> Planner:
        """The plan of this op's specialised program, planned on first use (by two threads
        at once, twice: the same plan)."""
        if self._specialised is None:
            self._specialised = Planner(self.desc, self.tuning, *self._binding_limits)
        return self._specialised

    def _count_generic_call(self) -> None:
        """A call while the op runs its shape-generic program: past ``tuning.generic_calls``
        of them, build the specialised pipelines and run those from this call on."""
        left = self._generic_calls_left
        if left is None:
            return
        if left > 0:
            self._generic_calls_left = left - 1
            return
        plan = self._specialised_plan()
        check_workgroups((p.constants for p in plan.program.passes), self.device.limits, self.tuning)
        for key in _pipeline_keys(plan):  # (built before the switch: other threads' calls go on)
            self.device._pipeline(*key)
        same_kernels = _pipeline_keys(plan) == _pipeline_keys(self._plan)
        with self._bound_lock:
            if self._generic_calls_left is None:  # (another thread switched first)
                return
            if same_kernels:  # (a program whose kernels take no sizes: the generic one serves on)
                self._generic_calls_left = None
                return
            self._use(plan)
            self._bound.clear()
            self._uniforms = {}
            self._memo = None
            self._generic_calls_left = None

    def __repr__(self) -> str:
        return f"Op({type(self.desc).__name__})"

    def export(self, directory: Union[str, os.PathLike], limits: str = "webgpu") -> Path:
        """Write this op as a bundle that any WebGPU host runs (a browser, Node, Dawn, wgpu):
        ``manifest.json`` and one ``.wgsl`` file per shader (docs/portable.md).

        The bundle holds the dispatches of this op's kernels for tensors in buffers of
        their own, from byte 0 (its aligned program), chunks included, planned for WebGPU's
        guaranteed limits (128 MiB bindings, offsets aligned to 256 bytes), which every
        WebGPU device offers, or for this device's own (the manifest's ``limits`` says what
        a host's device needs, ``planned_for`` which).

        Parameters
        ----------
        directory : str or os.PathLike
            A new or empty directory, or one holding a bundle (replaced).
        limits : {"webgpu", "device"}
            ``"webgpu"`` (default): WebGPU's guaranteed limits; ``"device"``: this device's
            (larger bindings, finer offsets: the dispatches this op makes here, which a
            device with WebGPU's default limits may refuse).

        Returns
        -------
        pathlib.Path
            The bundle's directory.

        Raises
        ------
        ValidationError
            ``directory`` is a file or holds other files, or ``limits`` is neither.
        """
        if limits == "device":
            return write_bundle(self._specialised_plan(), self.desc, self.tuning, directory,
                                planned_for=f"device: {self.device.name}")
        if limits != "webgpu":
            raise ValidationError("limits", f"expected 'webgpu' or 'device', got {limits!r}")
        return write_bundle(Planner(self.desc, self.tuning, WEBGPU_MAX_BINDING, WEBGPU_ALIGNMENT), self.desc,
                            self.tuning, directory)

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
        if self._generic_calls_left is not None:
            self._count_generic_call()
        memo = self._memo
        if memo is not None and out is not None:  # the hot path: the same tensors as last time
            outputs = (out,) if out.__class__ is Tensor else tuple(out)
            tensors = inputs + outputs
            bound, refs, states = memo
            if len(tensors) == len(refs):
                for ref, t, (buffer_id, offset, desc) in zip(refs, tensors, states):
                    if ref() is not t or id(t._buffer) != buffer_id or t.offset != offset or t.desc is not desc:
                        break
                else:
                    self.device._dispatch(bound)
                    return outputs[0] if len(outputs) == 1 else outputs
        bound, outputs = self._prepare(inputs, out)
        self.device._dispatch(bound)
        return outputs[0] if len(outputs) == 1 else outputs

    def _round_trip(self, arrays: Sequence[np.ndarray]) -> tuple:
        """The outputs on host ``arrays`` (packed as the op's inputs, already read by
        ``arguments.array``) as new NumPy arrays: the inputs written into buffers of the
        device's pool, then :meth:`_to_host`; the buffers given back once it is done."""
        device = self.device
        inputs = tuple(self._temporary(role, desc) for role, desc in self._inputs)
        for tensor, array in zip(inputs, arrays):
            device._write(tensor._buffer, array, tensor.desc)
        results = self._to_host(inputs)
        self._recent.update((role, weakref.ref(t._buffer)) for role, t in zip(self._input_roles, inputs))
        device._recycle(inputs)  # (the read-back waited for every use of them)
        return results

    def _to_host(self, inputs: tuple, read_as=None) -> tuple:
        """The outputs on the Tensors ``inputs`` as new NumPy arrays: outputs in buffers of
        the device's pool, the dispatches and the read-back in one submission, the outputs'
        buffers given back once it is done.  ``read_as(output)``: the Tensor read in its
        place (a view of the same bytes as another type), where given."""
        if self._generic_calls_left is not None:
            self._count_generic_call()
        outputs = tuple(self._temporary(role, desc) for role, desc in self._outputs)
        bound, outputs = self._prepare(inputs, outputs)
        results = self.device._read_tensors(outputs if read_as is None else tuple(map(read_as, outputs)), bound)
        self._recent.update((role, weakref.ref(t._buffer)) for role, t in zip(self._output_roles, outputs))
        self.device._recycle(outputs)
        return tuple(results)

    def _temporary(self, role: str, desc: TensorDesc) -> Tensor:
        """A tensor of ``desc`` in a pooled buffer: the one ``role`` had in the op's last
        round trip where that one is idle, so that the op's bind groups for it are found
        again."""
        ref = self._recent.get(role)
        return self.device._temporary(desc, ref() if ref is not None else None)

    def _prepare(self, inputs: tuple, out) -> tuple:
        """(the bound dispatches, the output tensors) of a call: inputs and ``out`` checked
        (new outputs where None) and bound."""
        if len(inputs) != len(self._inputs):
            names = ", ".join(self._input_roles)
            raise TypeError(f"{self!r} takes {len(self._inputs)} input tensor(s) ({names}), got {len(inputs)}")
        for tensor, (role, expected) in zip(inputs, self._inputs):
            self._check(role, tensor, expected)
        if out is None:
            outputs = tuple(self.device._output(t) for _, t in self._outputs)
        else:
            outputs = (out,) if isinstance(out, Tensor) else tuple(out)
            if len(outputs) != len(self._outputs):
                raise ValidationError("out", f"expected {len(self._outputs)} output tensor(s), got {len(outputs)}")
            for tensor, (role, expected) in zip(outputs, self._outputs):
                self._check(role, tensor, expected)
        tensors = dict(zip(self._input_roles, inputs))
        tensors.update(zip(self._output_roles, outputs))
        bound = self._bind(tensors)
        if out is not None and bound.plan is self._plan:  # (not a generic binding the switch outdated)
            called = inputs + outputs
            self._memo = (bound, tuple(weakref.ref(t) for t in called),
                          tuple((id(t._buffer), t.offset, t.desc) for t in called))
        return bound, outputs

    def _bind(self, tensors: dict) -> _Bound:
        key = tuple((id(t._buffer), t.offset) for t in tensors.values())
        lock, cache, dead = self._bound_lock, self._bound, self._dead
        with lock:
            _forget(cache, dead)
            bound = cache.get(key)
            if bound is not None and all(ref() is not None for ref in bound.refs):
                cache.move_to_end(key)
                return bound
        writable_roles = self._check_overlaps(tensors)
        tensors = dict(tensors, **self._scratch)
        device = self.device
        bound = _Bound()
        bound.dispatches, bound.uniforms, bound.plan = [], [], self._plan
        placements = {role: Placement(t._buffer.size, t.offset) for role, t in tensors.items()}
        with device._guard("binding tensors"):
            for dispatch in bound.plan.dispatches(placements, writable_roles):
                pipeline, layout = device._pipeline(*dispatch.pipeline_key)
                entries = [{"binding": b.binding, "resource": {"buffer": tensors[b.role]._buffer, "offset": b.offset,
                                                               "size": b.size}} for b in dispatch.bindings]
                uniform = self._uniform(dispatch.uniform)
                entries.insert(0, {"binding": 0, "resource": {"buffer": uniform, "offset": 0, "size": uniform.size}})
                bind_group = device._release_under_gate(device.wgpu_device.create_bind_group(layout=layout,
                                                                                             entries=entries))
                bound.dispatches.append((pipeline, bind_group, dispatch.grid))
                bound.uniforms.append(uniform)
        bound.raw = _native.handles(bound.dispatches) if device._native else None
        op = weakref.ref(self)

        def forget(ref, key=key):
            # A bind group keeps its buffers' memory alive: drop the entry (and the memo of
            # the last call) as soon as one of its buffers is gone, not only when it ages out.
            # Python calls this where it frees the buffer, on any thread, maybe while a thread
            # (this one, even) holds the lock: then the entry goes when the lock is next held.
            alive = op()
            if alive is not None and alive._memo is not None and any(r is ref for r in alive._memo[0].refs):
                alive._memo = None
            dead.append((key, ref))
            if lock.acquire(blocking=False):
                try:
                    _forget(cache, dead)
                finally:
                    lock.release()

        bound.refs = tuple(weakref.ref(t._buffer, forget) for t in tensors.values())
        with lock:
            if bound.plan is self._plan:  # (a generic binding the switch outdated meanwhile: used once)
                cache[key] = bound
            while len(cache) > _BIND_GROUP_CACHE_SIZE:
                cache.popitem(last=False)
            _forget(cache, dead)
        return bound

    def _uniform(self, data: bytes):
        """A uniform buffer holding `data` (shared by the op's calls that need the same)."""
        uniform = self._uniforms.get(data)
        if uniform is None:
            if len(self._uniforms) >= _UNIFORM_CACHE_SIZE:
                self._uniforms.clear()
            uniform = self.device._release_under_gate(
                self.device.wgpu_device.create_buffer_with_data(data=data, usage=wgpu.BufferUsage.UNIFORM))
            self._uniforms[data] = uniform
        return uniform

    def _check_overlaps(self, tensors: dict) -> frozenset:
        """Refuse outputs overlapping any other tensor of the call; return the roles of
        inputs that share a buffer with an output (they must be bound read-write)."""
        output_roles = {r for r, _ in self._outputs}
        ranges = [(role, t._buffer, t.offset, t.offset + t.desc.total_size_in_bytes) for role, t in tensors.items()]
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


def _pipeline_keys(plan: Planner) -> tuple:
    """The device's pipeline keys of ``plan``'s program (its fallback's are built when a call
    needs it)."""
    return tuple(plan.pipeline_key(pass_) for pass_ in plan.program.passes)


def _forget(cache: OrderedDict, dead: list) -> None:
    """Drop the entries of ``cache`` (an Op's bound tensors) whose buffers died, as ``dead``
    lists them (key, weak reference to the buffer); the caller holds the cache's lock."""
    while dead:
        key, ref = dead.pop()
        entry = cache.get(key)
        if entry is not None and any(r is ref for r in entry.refs):
            del cache[key]
