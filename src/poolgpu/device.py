"""Device: a WebGPU device with poolgpu's caches of compiled ops and pipelines, buffers,
and submission (one dispatch at a time, or a thread's batch in one command buffer).

The device layer: :mod:`.adapters` (which adapter), :mod:`.tensor` (Tensor),
:mod:`.ops` (Op: a compiled operator and its bindings) and this module.  Data flows one
way: a validated description -> the kernel layer's program -> cached pipelines -> per-call
bind groups (cached per set of tensors) -> dispatches, recorded into the current thread's
batch or submitted at once.
"""

from __future__ import annotations

import contextlib
import os
import threading
import weakref
from collections import OrderedDict
from typing import TYPE_CHECKING, Iterator, Optional, Sequence

import numpy as np
import numpy.typing as npt
import wgpu

from . import _native, arguments, kernels
from .adapters import _describe, _pick_adapter, end_lease, lease, list_adapters  # noqa: F401 (re-exported)
from .descs import Description
from .dispatches import buffer_size
from .dtypes import DataType
from .errors import DeviceError, ValidationError
from .gate import DEFAULT_TIMEOUT, Gated, for_backend
from .ops import Op
from .tensor import Tensor
from .tensor_desc import TensorDesc
from .limits import check_tuning
from .tuning import Tuning

if TYPE_CHECKING:
    from .ops import _Bound

__all__ = ["Device", "default_device"]

_BUFFER_USAGE = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
_STAGING_USAGE = wgpu.BufferUsage.COPY_DST | wgpu.BufferUsage.MAP_READ
# Compiled ops and pipelines are cached by description; the caches are bounded (least
# recently used out) so that a process sweeping over many shapes does not grow without end.
_OP_CACHE_SIZE = 128
_PIPELINE_CACHE_SIZE = 256
# Idle buffers a Device keeps for reuse (its pool, below): at most this many bytes, per kind
# (tensors, read-back staging); the least recently used sizes go first.
_POOL_BYTES = 64 << 20
_LOST_HELP = (
    "its tensors and compiled ops are gone: make a new pg.Device() (pg.default_device() makes one "
    "itself) and upload the data again"
)
_OOM_HELP = "free tensors you no longer need (del them), use smaller tensors or batches, or a device with more memory"


class _BufferPool:
    """Idle wgpu buffers of one usage, by size, for reuse (thread-safe).

    A buffer is given back only by code that knows no work recorded or submitted uses it any
    more (after the read-back that waited for that work), so a buffer taken is never one in
    flight.  At most ``limit`` bytes wait here; giving back more drops the least recently
    used sizes' buffers (Python frees them: on OpenGL under the gate).  The pool and its
    buffers go with their Device."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._idle = OrderedDict()  # size -> [buffer, ...], least recently used size first
        self._bytes = 0
        self._lock = threading.Lock()

    def take(self, size: int, prefer=None):
        """An idle buffer of ``size`` bytes (``prefer`` where it is idle), or None."""
        with self._lock:
            buffers = self._idle.get(size)
            if buffers is None:
                return None
            self._bytes -= size
            at = next((i for i in range(len(buffers) - 1, -1, -1) if buffers[i] is prefer), -1)
            buffer = buffers.pop(at)
            if buffers:
                self._idle.move_to_end(size)
            else:  # (no empty lists: giving more evicts from the first size on)
                del self._idle[size]
            return buffer

    def give(self, buffer, wait: bool = True) -> None:
        """Keep ``buffer`` for reuse; with ``wait=False`` (a finaliser, which may run while
        this thread holds the lock) drop it instead where the lock is taken."""
        size = buffer.size
        if size > self.limit:
            return
        if not self._lock.acquire(blocking=wait):
            return
        try:
            while self._bytes + size > self.limit:
                old_size, old = next(iter(self._idle.items()))
                old.pop()
                self._bytes -= old_size
                if not old:
                    del self._idle[old_size]
            self._idle.setdefault(size, []).append(buffer)
            self._idle.move_to_end(size)
            self._bytes += size
        finally:
            self._lock.release()

    @property
    def idle_bytes(self) -> int:
        return self._bytes

    def clear(self) -> None:
        with self._lock:
            self._idle.clear()
            self._bytes = 0


class Device:
    """A WebGPU device with poolgpu's caches.

    ``Device()`` takes the best adapter; ``backend=`` ("vulkan", "metal", "d3d12",
    "opengl") and ``adapter=`` (a substring of the adapter's name) narrow the choice;
    ``wgpu_device=`` shares an existing wgpu GPUDevice instead.  ``tuning=`` chooses the
    kernels (a :class:`pg.Tuning`; default: the preset for the adapter's type); ``tuning``
    may be set later: ops compiled after follow it.  ``timeout=`` bounds every wait on the
    GPU (settable too).

    Thread safety: any number of Devices, on any adapters, may be made, used and dropped
    by any threads, and one Device may be shared by threads.  ``batch()`` collects only
    the calling thread's operations; submissions, read-backs and the caches are locked; on
    OpenGL every call of every Device is serialised (docs/design.md, "Threads, devices and
    OpenGL").  Once the GPU device is lost, every use raises DeviceError (``lost`` says so).

    Parameters
    ----------
    backend : str, optional
        ``"vulkan"``, ``"metal"``, ``"d3d12"`` or ``"opengl"`` (``"gl"``); default None: any.
    adapter : str, optional
        A substring of the adapter's name (e.g. ``"llvmpipe"``); default None: any.
    wgpu_device : wgpu.GPUDevice, optional
        An existing device to share (e.g. pygfx's); ``backend`` and ``adapter`` are then
        ignored.  Default None: open one on the best matching adapter.
    tuning : Tuning, optional
        Which kernels ops compile to; default None: ``Tuning.for_cpu()`` on software
        adapters, ``Tuning.for_gpu()`` elsewhere.
    timeout : float, optional
        Seconds any wait on the GPU may take (a read-back, ``synchronize()``, on OpenGL
        another thread's calls) before DeviceError; default None: 600.

    Raises
    ------
    DeviceError
        No adapter matches, or no device opens on it.
    ValidationError
        ``backend`` is none of the four (a misspelling such as ``"vulcan"``), ``adapter``
        is no str, ``wgpu_device`` no GPUDevice, ``tuning`` no Tuning, or ``timeout`` no
        positive number of seconds.
    """

    def __init__(self, backend: Optional[str] = None, adapter: Optional[str] = None,
                 wgpu_device: Optional[wgpu.GPUDevice] = None, tuning: Optional[Tuning] = None,
                 timeout: Optional[float] = None) -> None:
        timeout = arguments.number(DEFAULT_TIMEOUT if timeout is None else timeout, "timeout", positive=True)
        self._lease = None  # the wgpu device poolgpu lent it (adapters.py), unless it shares one
        if wgpu_device is not None:
            if not isinstance(wgpu_device, wgpu.GPUDevice):
                raise ValidationError("wgpu_device", f"expected a wgpu GPUDevice, got {type(wgpu_device).__name__}")
            self.wgpu_device = wgpu_device
            self.adapter = wgpu_device.adapter
        else:
            self.adapter = _pick_adapter(backend, adapter)
            self._lease = lease(self.adapter, timeout)
            self.wgpu_device = self._lease.wgpu_device
            weakref.finalize(self, end_lease, self._lease)  # its wgpu device waits for the next Device
        self.info = _describe(self.adapter)
        self.features = frozenset(self.wgpu_device.features)
        self.limits = dict(self.wgpu_device.limits)
        self.tuning = tuning if tuning is not None else Tuning.preset("cpu" if self.info["type"] == "cpu" else "gpu")
        # `with self._gate:` around every wgpu call: on OpenGL the process's one gate (gate.py),
        # elsewhere nothing.
        self._gate = Gated(for_backend(self.info["backend"]), timeout)
        # Pipelines depend on the wgpu device only: those of a lent one stay with it.
        self._pipelines, self._pipeline_lock = (
            (self._lease.pipelines, self._lease.pipeline_lock) if self._lease is not None
            else (OrderedDict(), threading.RLock()))
        self._pipelines_built = 0  # by this Device (a count the tests read)
        self._lock = threading.RLock()  # submission, read-back and the cache of ops
        if self._gate.gate is not None:  # on OpenGL the gate locks all of it
            self._lock = self._pipeline_lock = self._gate
        self._local = threading.local()
        self._ops = OrderedDict()
        self._lost = None  # what happened, once the device is lost
        self._native = _native.available(self.wgpu_device)  # the hot path in C calls (_native.py)
        # Buffers reused by the calls that round-trip host arrays (one upload, one
        # submission, one read-back), and the staging buffers every read-back maps.
        self._tensor_pool = _BufferPool(_POOL_BYTES)
        self._staging_pool = _BufferPool(_POOL_BYTES)
        # The pool also takes back the buffers of freed tensors it made (_reclaim), but not
        # while any thread records a batch() or into a pass (work on them may be recorded and
        # not yet submitted) and never those recorded into a caller's pass (_handed_out).
        self._recording = 0
        self._recording_lock = threading.Lock()
        self._handed_out = weakref.WeakSet()

    def __repr__(self) -> str:
        return f"Device({self.info['name']!r}, backend={self.info['backend']!r})"

    @property
    def tuning(self) -> Tuning:
        """The kernels ops compile to (see :class:`Tuning`); by default the preset for the
        adapter's type: ``Tuning.for_cpu()`` on software adapters (lavapipe, llvmpipe),
        ``Tuning.for_gpu()`` elsewhere.  Settable: ops compiled after a change follow it
        (ops and pipelines are cached per tuning, so switching back finds them again); ops
        compiled before keep theirs."""
        return self._tuning

    @tuning.setter
    def tuning(self, tuning: Tuning) -> None:
        if not isinstance(tuning, Tuning):
            raise ValidationError("tuning", f"expected a pg.Tuning, got {type(tuning).__name__}")
        check_tuning(tuning, self.limits)  # workgroups this device cannot run: said now
        self._tuning = tuning

    @property
    def timeout(self) -> float:
        """Seconds any wait on the GPU may take before DeviceError: a read-back,
        ``synchronize()`` and, on OpenGL, another thread's calls (every Device there is
        served one call at a time).  Default 600, enough for the largest tensor a software
        adapter holds through a slow operator; settable."""
        return self._gate.timeout

    @timeout.setter
    def timeout(self, seconds: float) -> None:
        self._gate.timeout = arguments.number(seconds, "timeout", positive=True)

    @property
    def tuned_for(self) -> str:
        """The class of device the tuning was made for: "cpu" or "gpu" (``tuning.target``)."""
        return self._tuning.target

    @property
    def name(self) -> str:
        """The adapter's name (e.g. ``"llvmpipe (LLVM 15.0.7, 256 bits)"``)."""
        return self.info["name"]

    @property
    def backend(self) -> str:
        """The adapter's backend: ``"vulkan"``, ``"metal"``, ``"d3d12"`` or ``"opengl"``."""
        return self.info["backend"]

    @property
    def lost(self) -> bool:
        """Whether the GPU device was lost (every use then raises DeviceError)."""
        return self._lost is not None

    # -- errors -------------------------------------------------------------------------

    def _check_alive(self) -> None:
        if self._lost is None and _native.stopped(self.wgpu_device):
            self._mark_lost("its wgpu device was destroyed")
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
            self._mark_lost(text.strip().splitlines()[-1].strip())
            return DeviceError(f"the GPU device {self.name} was lost while {action} ({self._lost}); {_LOST_HELP}")
        return None

    def _mark_lost(self, what: str) -> None:
        """Remember that the GPU device is lost: every later use raises, and poolgpu never
        lends its wgpu device again (adapters.py)."""
        self._lost = what
        if self._lease is not None:
            self._lease.retired = True

    @contextlib.contextmanager
    def _guard(self, action: str):
        """Run wgpu calls, through the gate (on OpenGL): a lost device or exhausted memory
        becomes a DeviceError that says what happened and what to do."""
        self._check_alive()
        with self._gate:
            try:
                yield
            except Exception as exc:
                error = self._device_error(exc, action)
                if error is None:
                    raise
                raise error from exc

    def _release_under_gate(self, obj):
        """``obj``, a wgpu object this Device made, released under the gate (on OpenGL) once
        Python frees it, whichever thread drops it (gate.py)."""
        gate = self._gate.gate
        if gate is not None:
            gate.defer_release(obj)
        return obj

    # -- tensors ------------------------------------------------------------------------

    def _create_buffer(self, size: int, usage=_BUFFER_USAGE, data=None):
        size = buffer_size(size)  # whole 16-byte chunks (see dispatches.Planner.binding_range)
        if size > self.limits["max-buffer-size"]:
            raise DeviceError(
                f"a buffer of {size} bytes exceeds this device's max-buffer-size "
                f"({self.limits['max-buffer-size']}); split the tensor along N (or C)"
            )
        with self._guard(f"allocating a buffer of {size} bytes"):
            if data is not None:
                buffer = self.wgpu_device.create_buffer_with_data(data=data, usage=usage)
            else:
                buffer = self.wgpu_device.create_buffer(size=size, usage=usage)
            return self._release_under_gate(buffer)

    def empty(self, desc: TensorDesc) -> Tensor:
        """A new zero-filled tensor laid out as ``desc``.

        Parameters
        ----------
        desc : TensorDesc
            Its type, sizes and strides.

        Returns
        -------
        Tensor

        Raises
        ------
        ValidationError
            Naming ``desc`` where it is no TensorDesc.
        DeviceError
            The device is lost or out of memory, or the buffer exceeds ``max-buffer-size``.
        """
        if not isinstance(desc, TensorDesc):
            raise ValidationError("desc", f"expected a TensorDesc, got {type(desc).__name__}")
        return self._own(desc, self._create_buffer(desc.total_size_in_bytes))

    def upload(self, array: npt.ArrayLike, strides: Optional[Sequence[int]] = None) -> Tensor:
        """A new tensor holding ``array``'s values, laid out by ``strides`` (elements).

        Parameters
        ----------
        array : array-like
            Read by ``np.asarray``; 3 to 5 dimensions of a DirectML data type.
        strides : sequence of int, optional
            In elements, one per dimension; default None: packed row-major.  A zero stride
            stores the first entry along that dimension.

        Returns
        -------
        Tensor
            Of ``array``'s shape and data type.

        Raises
        ------
        ValidationError
            ``array``'s type or shape makes no TensorDesc (naming ``array``, ``sizes`` or
            ``strides``).
        DeviceError
            The device is lost or out of memory.
        """
        array = arguments.array(array, "array", ranks=None)
        desc = TensorDesc(DataType.of(array.dtype, "array"), array.shape, strides)
        # A freed tensor's buffer where one of the size is idle: _write rewrites all of it.
        buffer = self._tensor_pool.take(buffer_size(desc.total_size_in_bytes))
        if buffer is None:
            buffer = self._create_buffer(desc.total_size_in_bytes)
        self._write(buffer, array, desc)
        return self._own(desc, buffer)

    def _output(self, desc: TensorDesc) -> Tensor:
        """A new result of an op, which writes each of its elements: where they fill all its
        bytes, a freed tensor's buffer of the size if one is idle; else a new one (zeros in
        the gaps and padding, as before)."""
        filled = desc.is_packed and desc.total_size_in_bytes == desc.element_count * desc.data_type.size
        buffer = self._tensor_pool.take(buffer_size(desc.total_size_in_bytes)) if filled else None
        return self._own(desc, buffer if buffer is not None else self._create_buffer(desc.total_size_in_bytes))

    def _own(self, desc: TensorDesc, buffer) -> Tensor:
        """A tensor over ``buffer``, made for it alone: reused once the tensor is freed.

        The finaliser holds the buffer (a weakref.finalize, not ``Tensor.__del__``): when a
        tensor dies in a reference cycle, Python's collector may finalise everything only the
        cycle reaches, the buffer too (wgpu-py's release), before a ``__del__`` could give it
        back; a buffer the finaliser holds is never part of the cycle's garbage."""
        tensor = Tensor(self, desc, buffer)
        tensor._give_back = weakref.finalize(tensor, self._reclaim, buffer)
        tensor._give_back.atexit = False
        return tensor

    def _reclaim(self, buffer) -> None:
        """Take back the buffer of a freed tensor (its finaliser: ``_own``) into the pool,
        where no work that is recorded and not yet submitted may use it: the work submitted
        before runs before whatever the queue does with it next."""
        if self._recording or self._lost is not None or buffer in self._handed_out:
            return
        self._tensor_pool.give(buffer, wait=False)

    def _count_recording(self, change: int) -> None:
        with self._recording_lock:
            self._recording += change

    def _write(self, buffer, array: np.ndarray, desc: TensorDesc) -> None:
        """Write ``array``'s values into ``buffer`` (from byte 0) as ``desc`` lays them out,
        through the queue (ordered after the work submitted before, before the work
        submitted after).  A packed C-contiguous array of the tensor's type is written from
        its own memory; other layouts are packed into a host copy first (zeros in the gaps).
        The bytes from the tensor's end to the end of its 16-byte chunk become zeros (the
        queue writes whole words; a reused buffer would show another tensor's bytes there);
        those past them are left as they are."""
        data_type = desc.data_type
        item = data_type.size
        if array.dtype == data_type.numpy and array.flags.c_contiguous and desc.is_packed:
            data = array.reshape(-1).view(np.uint8)
        else:  # gaps or a zero stride: the tensor's bytes laid out on the host
            data = np.zeros(desc.total_size_in_bytes, dtype=np.uint8)
            flat = data[: len(data) // item * item].view(data_type.numpy)
            # A zero stride repeats one element: write the first entry along such dimensions.
            keep = tuple(slice(0, 1) if st == 0 else slice(None) for st in desc.strides)
            source = array[keep]
            target = np.lib.stride_tricks.as_strided(flat, source.shape, tuple(s * item for s in desc.strides))
            target[...] = source
        size = len(data)
        head = size & ~3  # the queue writes whole 4-byte words
        end = min(buffer.size, buffer_size(size))
        with self._guard(f"uploading {size} bytes"):
            queue = self.wgpu_device.queue
            if head:
                queue.write_buffer(buffer, 0, data, 0, head)
            if head < end:  # the last chunk: the tensor's bytes, then zeros
                tail = np.zeros(end - head, dtype=np.uint8)
                tail[: size - head] = data[head:]
                queue.write_buffer(buffer, head, tail)

    # Tensors of a call that round-trips host arrays (interop.round_trip): their buffers come
    # from the Device's pool and go back to it once the call's read-back has waited for them.

    def _temporary(self, desc: TensorDesc, prefer=None) -> Tensor:
        """A tensor of ``desc`` in a pooled buffer (``prefer`` where it is idle: the
        buffer the same op's last call used, whose bind groups it has), its values
        unspecified."""
        size = buffer_size(desc.total_size_in_bytes)
        buffer = self._tensor_pool.take(size, prefer)
        return Tensor(self, desc, buffer if buffer is not None else self._create_buffer(size))

    def _recycle(self, tensors: Sequence[Tensor]) -> None:
        """Give the buffers of ``_temporary`` tensors back to the pool.  Only once no work
        recorded or submitted uses them any more: after a read-back that waited for it."""
        for tensor in tensors:
            self._tensor_pool.give(tensor._buffer)

    def wrap(self, buffer: wgpu.GPUBuffer, desc: TensorDesc, offset: int = 0) -> Tensor:
        """A tensor over an existing GPUBuffer of this device (no copy).

        Everything wgpu would refuse later (and wgpu-native may answer by aborting the
        process at the next submission) is refused here, before any GPU work.  The buffer
        must stay alive and not be destroyed while tensors over it are used: wgpu offers no
        way to ask whether a buffer was destroyed.

        Parameters
        ----------
        buffer : wgpu.GPUBuffer
            A buffer of ``wgpu_device`` (this Device's own, or of another Device sharing
            it), with ``STORAGE``, ``COPY_SRC`` and ``COPY_DST`` usage, not mapped, its size
            a multiple of 4 bytes (as storage bindings need).
        desc : TensorDesc
            How the tensor's values sit in the buffer from ``offset``.
        offset : int, default 0
            Bytes to element 0; a multiple of the element size.

        Returns
        -------
        Tensor

        Raises
        ------
        ValidationError
            Naming ``desc``, ``offset``, ``desc.total_size_in_bytes`` (the tensor overruns the
            buffer) or ``buffer`` (not a GPUBuffer, of another wgpu device, a usage missing,
            mapped, or a size that is no multiple of 4).
        """
        if not isinstance(desc, TensorDesc):
            raise ValidationError("desc", f"expected a TensorDesc, got {type(desc).__name__}")
        self._check_buffer(buffer)
        offset = arguments.integer(offset, "offset", minimum=0, maximum=None)
        if offset % desc.data_type.size:
            raise ValidationError("offset", f"{offset} must be a non-negative multiple of the element size {desc.data_type.size}")
        if offset + desc.total_size_in_bytes > buffer.size:
            raise ValidationError(
                "desc.total_size_in_bytes",
                f"the tensor needs bytes [{offset}, {offset + desc.total_size_in_bytes}) but the buffer holds {buffer.size}",
            )
        return Tensor(self, desc, buffer, offset)

    def _check_buffer(self, buffer) -> None:
        """Refuse a buffer that wgpu would refuse once bound or copied (see :meth:`wrap`)."""
        if not isinstance(buffer, wgpu.GPUBuffer):
            raise ValidationError("buffer", f"expected a wgpu GPUBuffer, got {type(buffer).__name__}")
        # wgpu-py keeps the owning device privately; a buffer of another device would make
        # wgpu-native abort the process at the next submission.
        owner = getattr(buffer, "_device", self.wgpu_device)
        if owner is not self.wgpu_device:
            raise ValidationError(
                "buffer", "the buffer belongs to another wgpu device; create it with this Device's wgpu_device "
                "(or make the Device with pg.Device(wgpu_device=...) of the buffer's device)",
            )
        if buffer.usage & _BUFFER_USAGE != _BUFFER_USAGE:
            missing = [name for name in ("STORAGE", "COPY_SRC", "COPY_DST")
                       if not buffer.usage & getattr(wgpu.BufferUsage, name)]
            raise ValidationError(
                "buffer", f"the buffer lacks {' and '.join(missing)} usage; poolgpu binds tensors as storage and "
                "copies them to read back and write: create it with usage=wgpu.BufferUsage.STORAGE | "
                "wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST",
            )
        if buffer.map_state != "unmapped":
            raise ValidationError("buffer", f"the buffer is mapped (map_state {buffer.map_state!r}); unmap it first "
                                            "(buffer.unmap())")
        if buffer.size % 4:
            raise ValidationError("buffer", f"its size {buffer.size} is no multiple of 4 bytes, which storage "
                                            "bindings need; create it with a size rounded up to 4")

    # -- operators ----------------------------------------------------------------------

    def compile(self, desc: Description) -> Op:
        """A callable operator for the (already validated) description ``desc``; cached per
        description and tuning (the 128 most recently used).

        Parameters
        ----------
        desc : MaxPoolingDesc, MaxPooling1Desc, ... (any operator description)
            What to compute.

        Returns
        -------
        Op
            Its pipelines built, following this device's ``tuning``.

        Raises
        ------
        ValidationError
            Naming ``desc`` where it is no operator description.
        DeviceError
            The device is lost, or a tensor's (n, c) plane exceeds a storage binding.
        """
        if not hasattr(desc, "kernel"):
            raise ValidationError("desc", f"{type(desc).__name__} is not an operator description")
        tuning = self._tuning
        key = (desc, tuning)
        with self._lock:
            op = self._ops.get(key)
            if op is not None:
                self._ops.move_to_end(key)
                return op
        self._check_alive()
        op = Op(self, desc, tuning)  # outside the lock: other threads' calls go on meanwhile
        with self._lock:
            op = self._ops.setdefault(key, op)
            self._ops.move_to_end(key)
            while len(self._ops) > _OP_CACHE_SIZE:
                self._ops.popitem(last=False)
        return op

    def _pipeline(self, kernel, data_types: tuple, writable_inputs: frozenset, constants: tuple, value_type=None):
        key = (kernel, data_types, writable_inputs, constants, value_type)
        with self._pipeline_lock:  # not the device lock: dispatches go on
            entry = self._pipelines.get(key)
            if entry is not None:
                self._pipelines.move_to_end(key)
                return entry
        # Built outside the cache's lock (seconds on lavapipe): other threads' lookups go on,
        # and two threads wanting the same new pipeline at once may both build it.
        with self._guard(f"building the pipeline of {kernel.file}"):
            entry = self._build_pipeline(kernel, data_types, writable_inputs, constants, value_type)
        self._pipelines_built += 1
        with self._pipeline_lock:
            entry = self._pipelines.setdefault(key, entry)
            self._pipelines.move_to_end(key)
            while len(self._pipelines) > _PIPELINE_CACHE_SIZE:
                self._pipelines.popitem(last=False)
            return entry

    def _has_pipeline(self, kernel, data_types: tuple, writable_inputs: frozenset, constants: tuple,
                      value_type=None) -> bool:
        """Whether the pipeline of this key is built (in the cache)."""
        with self._pipeline_lock:
            return (kernel, data_types, writable_inputs, constants, value_type) in self._pipelines

    def _build_pipeline(self, kernel, data_types: tuple, writable_inputs: frozenset, constants: tuple, value_type):
        source = kernels.shader_source(kernel, data_types, writable_inputs, value_type)
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
        return self._release_under_gate(pipeline), self._release_under_gate(layout)

    # -- submission ---------------------------------------------------------------------

    def _dispatch(self, bound: "_Bound") -> None:
        """Record a call's dispatches, in order, into the current thread's batch, or submit
        them at once (one command buffer); through the gate on OpenGL."""
        if self._gate.gate is None:
            self._record_or_submit(bound)
        else:
            with self._gate:
                self._record_or_submit(bound)

    def _record_or_submit(self, bound: "_Bound") -> None:
        compute_pass = getattr(self._local, "compute_pass", None)
        try:
            if compute_pass is not None:  # the thread's own pass (or its caller's): no lock needed
                if getattr(self._local, "foreign_pass", False):  # the caller submits it, at a time unknown
                    self._handed_out.update(filter(None, (ref() for ref in bound.refs)))
                if bound.raw is not None and _native.can_record_into(compute_pass):
                    _native.record(compute_pass, bound.raw)
                else:
                    self._record(compute_pass, bound.dispatches)
                return
            self._check_alive()
            if bound.raw is not None:
                _native.submit(self.wgpu_device, bound.raw, self._lock)
                return
            encoder = self._release_under_gate(self.wgpu_device.create_command_encoder())
            compute_pass = self._release_under_gate(encoder.begin_compute_pass())
            self._record(compute_pass, bound.dispatches)
            compute_pass.end()
            command_buffer = self._release_under_gate(encoder.finish())
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
    def batch(self) -> Iterator["Device"]:
        """Operations called inside (by this thread) are recorded into one submission, made
        at exit; batches nest (the outermost submits).

        Returns
        -------
        context manager
            Yielding this Device.
        """
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
    def recording_into(self, compute_pass: wgpu.GPUComputePassEncoder) -> Iterator["Device"]:
        """Ops called inside (by this thread) are recorded into ``compute_pass``: a compute
        pass of ``wgpu_device`` that the caller began and will end and submit itself.

        For wgpu code that wraps poolgpu's dispatches in its own pass, e.g. between the
        pass's timestamp writes (the bench times ops so).  Nothing is submitted inside, so
        reading a tensor back or ``synchronize()`` there raises.

        Parameters
        ----------
        compute_pass : wgpu.GPUComputePassEncoder
            A pass the caller began on ``wgpu_device``.

        Returns
        -------
        context manager
            Yielding this Device.

        Raises
        ------
        RuntimeError
            Inside ``batch()`` or another ``recording_into()``.
        ValidationError
            Naming ``compute_pass`` where it is no compute pass of ``wgpu_device``.
        """
        if not isinstance(compute_pass, wgpu.GPUComputePassEncoder):
            raise ValidationError("compute_pass", f"expected a wgpu GPUComputePassEncoder, got "
                                                  f"{type(compute_pass).__name__}")
        if getattr(compute_pass, "_device", self.wgpu_device) is not self.wgpu_device:
            raise ValidationError("compute_pass", "the pass belongs to another wgpu device; begin it on this "
                                                  "Device's wgpu_device")
        local = self._local
        if getattr(local, "compute_pass", None) is not None:
            raise RuntimeError("recording_into() cannot be used inside batch() or another recording_into()")
        local.compute_pass, local.foreign_pass = compute_pass, True
        local.depth = getattr(local, "depth", 0) + 1  # a batch() inside records into this pass too
        self._count_recording(1)
        try:
            yield self
        finally:
            self._count_recording(-1)
            local.depth -= 1
            local.compute_pass, local.foreign_pass = None, False

    def _begin_batch(self) -> None:
        with self._guard("starting a batch"):
            encoder = self._release_under_gate(self.wgpu_device.create_command_encoder())
            self._local.encoder = encoder
            self._local.compute_pass = self._release_under_gate(encoder.begin_compute_pass())
            self._count_recording(1)

    def _end_batch(self) -> None:
        local = self._local
        compute_pass, encoder = local.compute_pass, local.encoder
        local.compute_pass = local.encoder = None
        try:
            with self._guard("submitting a batch"):
                compute_pass.end()
                command_buffer = self._release_under_gate(encoder.finish())
                with self._lock:
                    self.wgpu_device.queue.submit([command_buffer])
        finally:
            self._count_recording(-1)

    def _flush(self) -> None:
        """Submit what the current thread's batch recorded so far (before a read-back)."""
        if getattr(self._local, "foreign_pass", False):
            raise RuntimeError(
                "cannot read back or synchronize inside recording_into(): end and submit the pass first"
            )
        if getattr(self._local, "compute_pass", None) is not None:
            self._end_batch()
            self._begin_batch()

    def _read(self, buffer, offset: int, size: int) -> bytes:
        """Bytes [offset, offset + size) of ``buffer``, once the work submitted before has run."""
        return self._read_back([(buffer, offset, size, bytes)], f"reading back {size} bytes")[0]

    def _read_tensors(self, tensors: Sequence[Tensor], bound: Optional["_Bound"] = None) -> list:
        """The values of ``tensors`` as new packed arrays (``Tensor.numpy``), read back in one
        submission, after ``bound`` (an op's call writing them) where given."""
        regions = [(t._buffer, t.offset, t.desc.total_size_in_bytes, t.desc) for t in tensors]
        size = sum(r[2] for r in regions)
        return self._read_back(regions, f"reading back {size} bytes", bound)

    def _read_back(self, regions: list, action: str, bound: Optional["_Bound"] = None) -> list:
        """For each region (buffer, offset, size, convert) ``convert(bytes)`` (a TensorDesc
        converts to its packed array) of the bytes [offset, offset + size) of the buffer,
        once the work submitted before has run, and ``bound``'s dispatches.

        One command buffer holds ``bound``'s dispatches and the copies of every region into
        one staging buffer (the Device's, reused), one map waits for it within ``timeout``;
        the values are converted from the mapped memory itself.  Inside the thread's
        ``batch()`` the dispatches join the batch, which is submitted first."""
        if bound is not None and getattr(self._local, "compute_pass", None) is not None:
            self._record_or_submit(bound)
            bound = None
        self._flush()
        copies, staged = [], 0
        for buffer, offset, size, _ in regions:
            start = offset & ~3  # copies move whole 4-byte words
            end = min(buffer.size, (offset + size + 3) & ~3)
            copies.append((buffer, start, staged, end - start))
            staged += end - start
        staging_size = buffer_size(staged)
        with self._guard(action), self._lock:
            staging = self._staging_pool.take(staging_size)
            if staging is None:
                staging = self._create_buffer(staging_size, _STAGING_USAGE)
            self._submit(bound, [(source, start, staging, at, length) for source, start, at, length in copies])
            mapping = (_native.CMapping(self.wgpu_device, staging, staged) if self._native
                       else _native.Mapping(staging, staged))
            self._wait(mapping, action)
            try:
                mapped = mapping.view()
                results = [_converted(mapped, at + offset - start, size, convert)
                           for (_, start, at, _), (_, offset, size, convert) in zip(copies, regions)]
                del mapped  # (no view of the mapped memory may outlive the map)
            finally:
                mapping.unmap()
            self._staging_pool.give(staging)
        return results

    def _submit(self, bound: Optional["_Bound"], copies: list) -> None:
        """One command buffer: ``bound``'s dispatches in one pass (if any), then ``copies``
        (source, source offset, target, target offset, size); the caller holds the lock."""
        if self._native:
            _native.submit(self.wgpu_device, bound.raw if bound is not None else (), self._lock, copies)
            return
        device = self.wgpu_device
        encoder = self._release_under_gate(device.create_command_encoder())
        if bound is not None:
            compute_pass = self._release_under_gate(encoder.begin_compute_pass())
            self._record(compute_pass, bound.dispatches)
            compute_pass.end()
        for source, source_offset, target, target_offset, size in copies:
            encoder.copy_buffer_to_buffer(source, source_offset, target, target_offset, size)
        device.queue.submit([self._release_under_gate(encoder.finish())])

    def _wait(self, mapping: "_native.Mapping", action: str) -> None:
        """Wait for a staging buffer's map (of this device, the caller holding the gate) at
        most ``timeout`` seconds.  Past it, DeviceError; the Device stays usable (the work
        goes on), and on OpenGL the gate waits for this map before any other call."""
        event = mapping.event
        if event is not None and not event.wait(self.timeout):
            if self._gate.gate is not None:
                self._gate.gate.stalled(event, self.wgpu_device, f"{action} on {self.name}")
            raise DeviceError(
                f"the GPU device {self.name} did not finish {action} (and the work submitted before it) within "
                f"{self.timeout:g} s. The Device stays usable: raise its timeout (dev.timeout = seconds) for longer "
                "work, or make a new pg.Device() if the GPU hangs"
            )
        try:
            mapping.check()  # settled: its error raised
        except Exception as exc:  # (wgpu-py raises no GPUError here, even for a lost device)
            self._check_alive()
            raise DeviceError(f"the GPU device {self.name} failed {action}: {exc}") from exc

    def synchronize(self) -> None:
        """Wait until all work submitted to this device has finished (submitting the calling
        thread's open ``batch()`` first).

        Raises
        ------
        RuntimeError
            Inside ``recording_into()``.
        DeviceError
            The device is lost, or the work did not finish within ``timeout`` seconds.
        """
        self._flush()
        # A copy waits for the work submitted before it.  (wgpu-py 0.32's
        # queue.on_submitted_work_done_async does not run against its wgpu-native.)
        buffer = self._tensor_pool.take(16)
        if buffer is None:
            buffer = self._create_buffer(16)
        self._read_back([(buffer, 0, 4, bytes)], "waiting for the work submitted")
        self._tensor_pool.give(buffer)


def _converted(mapped: memoryview, at: int, size: int, convert):
    """``convert`` of ``size`` bytes of mapped memory from ``at``: a TensorDesc gives its
    packed array (one copy, straight from the mapped memory), anything else is called."""
    if not isinstance(convert, TensorDesc):
        return convert(mapped[at: at + size])
    item = convert.data_type.size
    flat = np.frombuffer(mapped, dtype=convert.data_type.numpy, count=size // item, offset=at)
    if convert.is_packed:  # (as_strided alone costs more than copying a small tensor)
        return flat[:convert.element_count].reshape(convert.sizes).copy()
    view = np.lib.stride_tricks.as_strided(flat, convert.sizes, tuple(s * item for s in convert.strides))
    return np.array(view)


_default_device: Optional[Device] = None
_default_lock = threading.Lock()


def default_device() -> Device:
    """The shared Device, made on first use (and again after the device is lost);
    the environment variables POOLGPU_BACKEND / POOLGPU_ADAPTER choose it as ``backend=``
    and ``adapter=`` do.

    Returns
    -------
    Device

    Raises
    ------
    DeviceError
        No adapter matches, or no device opens.
    ValidationError
        Naming ``POOLGPU_BACKEND`` where it is none of the backends.
    """
    global _default_device
    if _default_device is None or _default_device.lost:
        with _default_lock:
            if _default_device is None or _default_device.lost:  # a lost one is replaced
                try:
                    _default_device = Device(
                        backend=os.environ.get("POOLGPU_BACKEND") or None,
                        adapter=os.environ.get("POOLGPU_ADAPTER") or None,
                    )
                except ValidationError as exc:  # it came from the environment, not an argument
                    raise exc.renamed("POOLGPU_" + exc.field.upper()) from None
    return _default_device
