"""The device layer: adapters, tensors, compiled operators, caches and submission.

Data flows one way: a validated description -> the registry's kernel and launch geometry
-> a cached pipeline -> per-call bind groups (cached per set of tensors) -> a dispatch,
recorded into the current thread's batch or submitted at once.
"""

from __future__ import annotations

import contextlib
import os
import threading
import weakref
from collections import OrderedDict
from typing import Optional

import numpy as np
import wgpu

from . import _native, kernels
from .dtypes import DataType
from .errors import DeviceError, ValidationError
from .tensor_desc import TensorDesc

_BACKENDS = {"vulkan": "vulkan", "metal": "metal", "d3d12": "d3d12", "opengl": "opengl", "gl": "opengl"}
# Adapter preference: real GPUs before software ones, native APIs before OpenGL.
_TYPE_RANK = {"discretegpu": 0, "integratedgpu": 1, "virtualgpu": 2, "cpu": 3}
_BACKEND_RANK = {"vulkan": 0, "metal": 0, "d3d12": 0, "opengl": 1}
# Features used where present; nothing requires them.
_OPTIONAL_FEATURES = ("timestamp-query", "shader-f16", "subgroup")
_LIMITS = (
    "max-storage-buffer-binding-size",
    "max-buffer-size",
    "max-storage-buffers-per-shader-stage",
    "max-compute-workgroup-storage-size",
    "max-compute-invocations-per-workgroup",
    "max-compute-workgroup-size-x",
)
_NO_ADAPTER_HELP = (
    "poolgpu needs a WebGPU adapter (Vulkan, Metal, D3D12 or OpenGL). On Linux without a GPU, "
    "install a software driver: `apt-get install mesa-vulkan-drivers` (lavapipe) or Mesa's OpenGL "
    "(llvmpipe, libgl1-mesa-dri)."
)
_BUFFER_USAGE = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
_BIND_GROUP_CACHE_SIZE = 16
# Compiled ops and pipelines are cached by description; the caches are bounded (least
# recently used out) so that a process sweeping over many shapes does not grow without end.
_OP_CACHE_SIZE = 128
_PIPELINE_CACHE_SIZE = 256
_LOST_HELP = (
    "its tensors and compiled ops are gone: make a new pg.Device() (pg.default_device() makes one "
    "itself) and upload the data again"
)
_OOM_HELP = "free tensors you no longer need (del them), use smaller tensors or batches, or a device with more memory"


def _describe(adapter) -> dict:
    info = adapter.info
    return {
        "name": info["device"],
        "backend": info["backend_type"].lower(),
        "type": info["adapter_type"].lower(),
        "description": info.get("description", ""),
        "features": sorted(adapter.features),
    }


def _enumerate():
    try:
        return list(wgpu.gpu.enumerate_adapters_sync())
    except Exception as exc:  # no loader, no driver, broken install
        raise DeviceError(f"could not list WebGPU adapters ({exc}). {_NO_ADAPTER_HELP}") from exc


def list_adapters() -> list:
    """The adapters wgpu offers: dicts with name, backend, type, description and features."""
    return [_describe(a) for a in _enumerate()]


def _pick_adapter(backend: Optional[str], adapter: Optional[str]):
    candidates = _enumerate()
    if backend is not None:
        wanted = _BACKENDS.get(backend.lower())
        if wanted is None:
            raise DeviceError(f"unknown backend {backend!r}; expected one of vulkan, metal, d3d12, opengl")
        candidates = [a for a in candidates if _describe(a)["backend"] == wanted]
    if adapter is not None:
        candidates = [a for a in candidates if adapter.lower() in _describe(a)["name"].lower()]
    if not candidates:
        found = ", ".join(f"{d['name']} ({d['backend']})" for d in list_adapters()) or "none"
        raise DeviceError(
            f"no adapter matches backend={backend!r} adapter={adapter!r}; adapters found: {found}. "
            + _NO_ADAPTER_HELP
        )
    return min(
        candidates,
        key=lambda a: (_TYPE_RANK.get(_describe(a)["type"], 4), _BACKEND_RANK.get(_describe(a)["backend"], 2)),
    )


class Tensor:
    """A tensor in a GPU buffer: ``desc`` says how its logical values sit from ``offset``."""

    __slots__ = ("device", "desc", "buffer", "offset", "__weakref__")

    def __init__(self, device: "Device", desc: TensorDesc, buffer, offset: int = 0):
        self.device = device
        self.desc = desc
        self.buffer = buffer
        self.offset = offset

    @property
    def sizes(self) -> tuple:
        return self.desc.sizes

    @property
    def data_type(self) -> DataType:
        return self.desc.data_type

    # NumPy habits: ``t.shape``, ``t.dtype`` and ``np.asarray(t)`` (a read-back), as for arrays.

    @property
    def shape(self) -> tuple:
        """The sizes, as ``ndarray.shape`` names them."""
        return self.desc.sizes

    @property
    def dtype(self) -> np.dtype:
        """The NumPy dtype of the elements."""
        return self.desc.data_type.numpy

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        """``np.asarray(t)``: the values read back (always a new array, so ``copy=False``
        cannot be honoured and raises, as NumPy 2 asks)."""
        if copy is False:
            raise ValueError("a poolgpu Tensor lives on the GPU: reading it back always copies (use copy=None)")
        array = self.numpy()
        return array if dtype is None else array.astype(dtype, copy=False)

    def numpy(self) -> np.ndarray:
        """The logical values, as a new packed array of ``sizes``."""
        desc = self.desc
        raw = self.device._read(self.buffer, self.offset, desc.total_size_in_bytes)
        item = desc.data_type.size
        flat = np.frombuffer(raw, dtype=desc.data_type.numpy, count=len(raw) // item)
        view = np.lib.stride_tricks.as_strided(flat, desc.sizes, tuple(s * item for s in desc.strides))
        return np.array(view)

    def __repr__(self) -> str:
        return f"Tensor({self.desc.data_type.name}, sizes={self.sizes}, offset={self.offset})"


class Device:
    """A WebGPU device with poolgpu's caches.

    ``Device()`` takes the best adapter; ``backend=`` ("vulkan", "metal", "d3d12",
    "opengl") and ``adapter=`` (a substring of the adapter's name) narrow the choice;
    ``wgpu_device=`` shares an existing wgpu GPUDevice instead.

    Thread safety: one Device may be shared by threads.  ``batch()`` collects only the
    calling thread's operations; submissions, read-backs and the caches are locked.  Once the
    GPU device is lost, every use raises DeviceError (``lost`` says so).
    """

    def __init__(self, backend: Optional[str] = None, adapter: Optional[str] = None, wgpu_device=None):
        if wgpu_device is not None:
            self.wgpu_device = wgpu_device
            self.adapter = wgpu_device.adapter
        else:
            self.adapter = _pick_adapter(backend, adapter)
            limits = self.adapter.limits
            try:
                self.wgpu_device = self.adapter.request_device_sync(
                    label="poolgpu",
                    required_features=[f for f in _OPTIONAL_FEATURES if f in self.adapter.features],
                    required_limits={k: limits[k] for k in _LIMITS if k in limits},
                )
            except Exception as exc:
                raise DeviceError(f"could not open a device on {self.adapter.summary}: {exc}") from exc
        self.info = _describe(self.adapter)
        self.features = frozenset(self.wgpu_device.features)
        self.limits = dict(self.wgpu_device.limits)
        # Which kernels ops compile to: "cpu" on software adapters (lavapipe, llvmpipe), whose
        # SIMD lanes load one by one, so that several outputs per invocation sharing their
        # loads win; "gpu" elsewhere: two outputs per invocation, coalesced, and a workgroup
        # per output for global pooling (kernels._walk_for).  Settable: ops compiled after a
        # change follow it (the tests run the "gpu" kernels on software adapters this way).
        self.tuned_for = "cpu" if self.info["type"] == "cpu" else "gpu"
        self._lock = threading.RLock()  # submission, read-back and the caches of ops and bind groups
        self._pipeline_lock = threading.RLock()
        self._local = threading.local()
        self._pipelines = OrderedDict()
        self._ops = OrderedDict()
        self._lost = None  # what happened, once the device is lost
        self._native = _native.available(self.wgpu_device)  # the hot path in C calls (_native.py)

    def __repr__(self) -> str:
        return f"Device({self.info['name']!r}, backend={self.info['backend']!r})"

    @property
    def name(self) -> str:
        return self.info["name"]

    @property
    def backend(self) -> str:
        return self.info["backend"]

    @property
    def lost(self) -> bool:
        """Whether the GPU device was lost (every use then raises DeviceError)."""
        return self._lost is not None

    # -- errors -------------------------------------------------------------------------

    def _check_alive(self) -> None:
        if self._lost is not None:
            raise DeviceError(f"this Device was lost ({self._lost}); {_LOST_HELP}")

    def _device_error(self, exc: Exception, action: str):
        """The DeviceError for a wgpu error raised while `action`, or None for any other error.
        wgpu-py reports a lost device as a validation error of the next call ("Parent device
        is lost"), so the Device remembers it."""
        if isinstance(exc, wgpu.GPUOutOfMemoryError):
            return DeviceError(f"out of GPU memory while {action} on {self.name}: {_OOM_HELP}")
        text = str(exc)
        if isinstance(exc, wgpu.GPUError) and "lost" in text.lower():
            self._lost = text.strip().splitlines()[-1].strip()
            return DeviceError(f"the GPU device {self.name} was lost while {action} ({self._lost}); {_LOST_HELP}")
        return None

    @contextlib.contextmanager
    def _guard(self, action: str):
        """Run wgpu calls: a lost device or exhausted memory becomes a DeviceError that says
        what happened and what to do."""
        self._check_alive()
        try:
            yield
        except Exception as exc:
            error = self._device_error(exc, action)
            if error is None:
                raise
            raise error from exc

    # -- tensors ------------------------------------------------------------------------

    def _create_buffer(self, size: int, usage=_BUFFER_USAGE, data=None):
        size = max(16, (size + 15) & ~15)  # whole 16-byte chunks (see Op._binding_range)
        if size > self.limits["max-buffer-size"]:
            raise DeviceError(
                f"a buffer of {size} bytes exceeds this device's max-buffer-size "
                f"({self.limits['max-buffer-size']}); split the tensor along N (or C)"
            )
        with self._guard(f"allocating a buffer of {size} bytes"):
            if data is not None:
                return self.wgpu_device.create_buffer_with_data(data=data, usage=usage)
            return self.wgpu_device.create_buffer(size=size, usage=usage)

    def empty(self, desc: TensorDesc) -> Tensor:
        """A new zero-filled tensor laid out as ``desc``."""
        return Tensor(self, desc, self._create_buffer(desc.total_size_in_bytes))

    def upload(self, array, strides=None) -> Tensor:
        """A new tensor holding ``array``'s values, laid out by ``strides`` (elements)."""
        array = np.asarray(array)
        data_type = DataType.of(array.dtype, "array")
        desc = TensorDesc(data_type, array.shape, strides)
        item = data_type.size
        raw = np.zeros(max(16, (desc.total_size_in_bytes + 15) & ~15), dtype=np.uint8)
        flat = raw[: len(raw) // item * item].view(data_type.numpy)
        # A zero stride repeats one element: write the first entry along such dimensions.
        keep = tuple(slice(0, 1) if st == 0 else slice(None) for st in desc.strides)
        source = array[keep]
        target = np.lib.stride_tricks.as_strided(flat, source.shape, tuple(s * item for s in desc.strides))
        target[...] = source
        return Tensor(self, desc, self._create_buffer(len(raw), data=raw))

    def wrap(self, buffer, desc: TensorDesc, offset: int = 0) -> Tensor:
        """A tensor over an existing GPUBuffer of this device (no copy)."""
        if not isinstance(desc, TensorDesc):
            raise ValidationError("desc", f"expected a TensorDesc, got {type(desc).__name__}")
        if offset < 0 or offset % desc.data_type.size:
            raise ValidationError("offset", f"{offset} must be a non-negative multiple of the element size {desc.data_type.size}")
        if offset + desc.total_size_in_bytes > buffer.size:
            raise ValidationError(
                "desc.total_size_in_bytes",
                f"the tensor needs bytes [{offset}, {offset + desc.total_size_in_bytes}) but the buffer holds {buffer.size}",
            )
        if not buffer.usage & wgpu.BufferUsage.STORAGE:
            raise ValidationError("buffer", "the buffer needs STORAGE usage (and COPY_SRC to be read back)")
        return Tensor(self, desc, buffer, offset)

    # -- operators ----------------------------------------------------------------------

    def compile(self, desc) -> "Op":
        """A callable operator for the (already validated) description ``desc``; cached (the
        most recently used _OP_CACHE_SIZE)."""
        key = (desc, self.tuned_for)
        with self._lock:
            op = self._ops.get(key)
            if op is not None:
                self._ops.move_to_end(key)
                return op
        if not hasattr(desc, "kernel"):
            raise ValidationError("desc", f"{type(desc).__name__} is not an operator description")
        self._check_alive()
        op = Op(self, desc)  # outside the lock: other threads' calls go on meanwhile
        with self._lock:
            op = self._ops.setdefault(key, op)
            self._ops.move_to_end(key)
            while len(self._ops) > _OP_CACHE_SIZE:
                self._ops.popitem(last=False)
        return op

    def _pipeline(self, kernel, data_types: tuple, writable_inputs: frozenset, constants: tuple):
        key = (kernel, data_types, writable_inputs, constants)
        with self._pipeline_lock:  # not the device lock: building takes long, dispatches go on
            entry = self._pipelines.get(key)
            if entry is not None:
                self._pipelines.move_to_end(key)
                return entry
            with self._guard(f"building the pipeline of {kernel.file}"):
                entry = self._build_pipeline(kernel, data_types, writable_inputs, constants)
            self._pipelines[key] = entry
            while len(self._pipelines) > _PIPELINE_CACHE_SIZE:
                self._pipelines.popitem(last=False)
            return entry

    def _build_pipeline(self, kernel, data_types: tuple, writable_inputs: frozenset, constants: tuple):
        source = kernels.shader_source(kernel, data_types, writable_inputs)
        entries = [{"binding": 0, "visibility": wgpu.ShaderStage.COMPUTE, "buffer": {"type": "uniform"}}]
        for binding, (slot, data_type) in enumerate(zip(kernel.slots, data_types), start=1):
            if data_type is None:
                continue
            writable = slot.output or slot.name in writable_inputs
            entries.append({
                "binding": binding,
                "visibility": wgpu.ShaderStage.COMPUTE,
                "buffer": {"type": "storage" if writable else "read-only-storage"},
            })
        device = self.wgpu_device
        layout = device.create_bind_group_layout(entries=entries)
        module = device.create_shader_module(label=kernel.file, code=source)
        pipeline = device.create_compute_pipeline(
            label=kernel.file,
            layout=device.create_pipeline_layout(bind_group_layouts=[layout]),
            compute={"module": module, "entry_point": "main", "constants": dict(constants)},
        )
        return pipeline, layout

    # -- submission ---------------------------------------------------------------------

    def _dispatch(self, bound: "_Bound") -> None:
        """Record a call's dispatches, in order, into the current thread's batch, or submit
        them at once (one command buffer)."""
        compute_pass = getattr(self._local, "compute_pass", None)
        try:
            if compute_pass is not None:  # the thread's own pass (or its caller's): no lock needed
                if bound.raw is not None and _native.can_record_into(compute_pass):
                    _native.record(compute_pass, bound.raw)
                else:
                    self._record(compute_pass, bound.dispatches)
                return
            self._check_alive()
            if bound.raw is not None:
                _native.submit(self.wgpu_device, bound.raw, self._lock)
                return
            encoder = self.wgpu_device.create_command_encoder()
            compute_pass = encoder.begin_compute_pass()
            self._record(compute_pass, bound.dispatches)
            compute_pass.end()
            command_buffer = encoder.finish()
            with self._lock:
                self.wgpu_device.queue.submit([command_buffer])
        except Exception as exc:  # (no `_guard` here: a context manager costs microseconds)
            error = self._device_error(exc, "submitting work")
            if error is None:
                raise
            raise error from exc

    @staticmethod
    def _record(compute_pass, dispatches) -> None:
        for pipeline, bind_group, grid in dispatches:
            compute_pass.set_pipeline(pipeline)
            compute_pass.set_bind_group(0, bind_group)
            compute_pass.dispatch_workgroups(*grid)

    @contextlib.contextmanager
    def batch(self):
        """Operations called inside are recorded into one submission, made at exit."""
        local = self._local
        depth = getattr(local, "depth", 0)
        if depth == 0:
            self._begin_batch()
        local.depth = depth + 1
        try:
            yield self
        finally:
            local.depth -= 1
            if local.depth == 0:
                self._end_batch()

    @contextlib.contextmanager
    def recording_into(self, compute_pass):
        """Ops called inside (by this thread) are recorded into ``compute_pass``: a compute
        pass of ``wgpu_device`` that the caller began and will end and submit itself.

        For wgpu code that wraps poolgpu's dispatches in its own pass, e.g. between the
        pass's timestamp writes (the bench times ops so).  Nothing is submitted inside, so
        reading a tensor back or ``synchronize()`` there raises."""
        local = self._local
        if getattr(local, "compute_pass", None) is not None:
            raise RuntimeError("recording_into() cannot be used inside batch() or another recording_into()")
        local.compute_pass, local.foreign_pass = compute_pass, True
        local.depth = getattr(local, "depth", 0) + 1  # a batch() inside records into this pass too
        try:
            yield self
        finally:
            local.depth -= 1
            local.compute_pass, local.foreign_pass = None, False

    def _begin_batch(self) -> None:
        with self._guard("starting a batch"):
            self._local.encoder = self.wgpu_device.create_command_encoder()
            self._local.compute_pass = self._local.encoder.begin_compute_pass()

    def _end_batch(self) -> None:
        local = self._local
        compute_pass, encoder = local.compute_pass, local.encoder
        local.compute_pass = local.encoder = None
        with self._guard("submitting a batch"):
            compute_pass.end()
            command_buffer = encoder.finish()
            with self._lock:
                self.wgpu_device.queue.submit([command_buffer])

    def _flush(self) -> None:
        """Submit what the current thread's batch recorded so far (before a read-back)."""
        if getattr(self._local, "foreign_pass", False):
            raise RuntimeError(
                "cannot read back or synchronize inside recording_into(): end and submit the pass first"
            )
        if getattr(self._local, "compute_pass", None) is not None:
            self._end_batch()
            self._begin_batch()

    def _read(self, buffer, offset: int, size: int) -> memoryview:
        self._flush()
        start = offset & ~3
        end = min(buffer.size, (offset + size + 3) & ~3)
        with self._guard(f"reading back {size} bytes"), self._lock:
            data = self.wgpu_device.queue.read_buffer(buffer, start, end - start)
        return memoryview(data)[offset - start: offset - start + size]

    def synchronize(self) -> None:
        """Wait until all work submitted to this device has finished."""
        self._flush()
        poll = getattr(self.wgpu_device, "_poll_wait", None)
        if poll is None:  # another backend: a read-back waits for everything submitted before it
            self._read(self._create_buffer(4), 0, 4)
            return
        with self._guard("waiting for the GPU"), self._lock:
            poll()


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
    another."""

    def __init__(self, device: Device, desc):
        self.device = device
        self.desc = desc
        align = device.limits.get("min-storage-buffer-offset-alignment", 256)
        self._align = max(align, 8)
        self._max_binding = device.limits["max-storage-buffer-binding-size"]
        # a binding starts up to one alignment before its tensor and is rounded up to 16 bytes
        self._program = kernels.program_for(desc, self._max_binding - self._align - 16, gpu=device.tuned_for == "gpu")
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
        return self.device._pipeline(pass_.kernel, data_types, writable, pass_.constants)

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

    def __call__(self, *inputs, out=None):
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


_default_device: Optional[Device] = None
_default_lock = threading.Lock()


def default_device() -> Device:
    """The shared Device, made on first use (and again after the device is lost);
    POOLGPU_BACKEND / POOLGPU_ADAPTER choose it."""
    global _default_device
    if _default_device is None or _default_device.lost:
        with _default_lock:
            if _default_device is None or _default_device.lost:  # a lost one is replaced
                _default_device = Device(
                    backend=os.environ.get("POOLGPU_BACKEND") or None,
                    adapter=os.environ.get("POOLGPU_ADAPTER") or None,
                )
    return _default_device
