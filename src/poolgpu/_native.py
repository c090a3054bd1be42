"""The hot path of a call through wgpu-native's C functions, where wgpu-py runs on it.

wgpu-py wraps every WebGPU call in Python (argument structs, error capture, an object per
encoder, pass and command buffer, released by ``__del__``): about 10 microseconds per call
on a cached operator, as much as poolgpu's own work.  Recording dispatches, submitting a
one-pass command buffer and mapping a staging buffer to read it back are the same few C
calls every time, so poolgpu makes them itself: with the C handles of pipelines and bind
groups kept when a call's bindings are made, and wgpu-py's error-capturing wrappers
(``libf``) where WebGPU reports errors (creating the encoder, ``finish``, ``submit``, the
map: a lost device or a validation error still raises, as from wgpu-py).  Commands
recorded into a pass report their errors at ``finish``.

Elsewhere (another wgpu backend, or a wgpu-py whose internals moved) ``available`` is
False and poolgpu uses wgpu-py's public API for the same steps.

More helpers reach into wgpu-py where its public API has no way (docs/design.md,
"Threads, devices and OpenGL"): ``finished`` (the event a promise sets when it settles, to
wait with a deadline: ``sync_wait`` has none), ``stopped`` (whether a wgpu device was
destroyed, which stops its poll thread), ``wake`` (its poll thread polls once more) and
``release_later`` (a wgpu object's release, when Python frees it, queued for the caller
instead of made on the spot).  Where wgpu-py's internals moved they fall back to waiting
without a deadline, to "not stopped", to nothing and to releasing on the spot.
"""

from __future__ import annotations

import itertools
import threading

try:
    from wgpu.backends.wgpu_native import _api
    from wgpu.backends.wgpu_native._ffi import ffi, lib

    _libf = _api.libf
    _NULL = ffi.NULL
    _set_pipeline = lib.wgpuComputePassEncoderSetPipeline
    _set_bind_group = lib.wgpuComputePassEncoderSetBindGroup
    _dispatch = lib.wgpuComputePassEncoderDispatchWorkgroups
    _DEVICE, _PASS, _OBJECT = _api.GPUDevice, _api.GPUComputePassEncoder, _api.GPUObjectBase
    # wgpu-py's own mode for read-backs: the copy was just submitted, so no extra empty submission
    MAP_READ = "READ_NOSYNC"
    _MAP_SUCCESS = lib.WGPUMapAsyncStatus_Success
    _MAP_MODE_READ = lib.WGPUMapMode_Read
    _ALLOW_PROCESS_EVENTS = lib.WGPUCallbackMode_AllowProcessEvents
    _map_async, _mapped_range, _unmap = _libf.wgpuBufferMapAsync, lib.wgpuBufferGetConstMappedRange, lib.wgpuBufferUnmap
    _string = _api.from_c_string_view
except Exception:  # not wgpu-native, or its layout changed: the public API serves
    lib = None
    MAP_READ = "READ"


def available(wgpu_device) -> bool:
    # (CMapping asks wgpu-py's poll thread to poll, as wgpu-py's own map_async does)
    return (lib is not None and isinstance(wgpu_device, _DEVICE)
            and hasattr(getattr(wgpu_device, "_poller", None), "get_token"))


def handles(dispatches) -> tuple:
    """The C handles of (pipeline, bind group, grid) dispatches, for :func:`record`."""
    return tuple((pipeline._internal, bind_group._internal) + tuple(grid) for pipeline, bind_group, grid in dispatches)


def can_record_into(compute_pass) -> bool:
    return lib is not None and isinstance(compute_pass, _PASS)


def record(compute_pass, raw) -> None:
    """Record :func:`handles` into a wgpu-py compute pass (wgpu-native's)."""
    record_raw(compute_pass._internal, raw)


def record_raw(pass_handle, raw) -> None:
    for pipeline, bind_group, x, y, z in raw:
        _set_pipeline(pass_handle, pipeline)
        _set_bind_group(pass_handle, 0, bind_group, 0, _NULL)
        _dispatch(pass_handle, x, y, z)


def submit(wgpu_device, raw, lock, copies=()) -> None:
    """One command buffer of one compute pass holding `raw` (none if `raw` is empty), then
    `copies` (wgpu-py source buffer, offset, target buffer, offset, size), submitted (under
    `lock`)."""
    encoder = _libf.wgpuDeviceCreateCommandEncoder(wgpu_device._internal, _NULL)
    try:
        if raw:
            compute_pass = lib.wgpuCommandEncoderBeginComputePass(encoder, _NULL)
            try:
                record_raw(compute_pass, raw)
                lib.wgpuComputePassEncoderEnd(compute_pass)
            finally:
                lib.wgpuComputePassEncoderRelease(compute_pass)
        for source, source_offset, target, target_offset, size in copies:
            lib.wgpuCommandEncoderCopyBufferToBuffer(encoder, source._internal, source_offset, target._internal,
                                                     target_offset, size)
        command_buffer = _libf.wgpuCommandEncoderFinish(encoder, _NULL)
    finally:
        lib.wgpuCommandEncoderRelease(encoder)
    try:
        buffers = ffi.new("WGPUCommandBuffer[1]", [command_buffer])
        with lock:
            _libf.wgpuQueueSubmit(wgpu_device.queue._internal, 1, buffers)
    finally:
        lib.wgpuCommandBufferRelease(command_buffer)


def finished(promise):
    """The ``threading.Event`` set when a wgpu promise is fulfilled or rejected, or None
    where wgpu-py keeps none (then only ``promise.sync_wait()`` waits, without a deadline)."""
    event = getattr(promise, "_thread_event", None)
    return event if hasattr(event, "wait") and hasattr(event, "is_set") else None


class Mapping:
    """A staging buffer's bytes [0, size) being mapped for reading: ``event`` (set once the
    map settles, or None where only ``check`` can wait), ``check()`` (raises where it
    failed), then ``view()`` (the mapped bytes, valid until ``unmap()``) and ``unmap()``.
    Through wgpu-py's public API (any backend)."""

    __slots__ = ("buffer", "size", "promise", "event")

    def __init__(self, buffer, size: int) -> None:
        self.buffer, self.size = buffer, size
        self.promise = buffer.map_async(MAP_READ, 0, size)
        self.event = finished(self.promise)

    def check(self) -> None:
        self.promise.sync_wait()

    def view(self):
        return self.buffer.read_mapped(0, self.size, copy=False)

    def unmap(self) -> None:
        self.buffer.unmap()


class CMapping:
    """A :class:`Mapping` through wgpu-native's C functions: wgpu-py's ``map_async`` makes a
    C callback, a promise and its structs per call (~40 microseconds on a CPU adapter's
    host, a tenth of a small call's round trip); here one callback serves every map, and
    wgpu-py's poll thread is asked to poll as it would be.  wgpu-py's buffer object never
    learns of the map: only poolgpu's own staging buffers are mapped so.  Where
    ``available``."""

    __slots__ = ("buffer", "size", "event", "error", "_token")

    def __init__(self, wgpu_device, buffer, size: int) -> None:
        self.buffer, self.size, self.error = buffer, size, None
        self.event = threading.Event()
        self._token = wgpu_device._poller.get_token()
        key = next(_map_keys)
        _maps[key] = self
        info = ffi.new("WGPUBufferMapCallbackInfo *")
        info.mode = _ALLOW_PROCESS_EVENTS
        info.callback = _map_settled
        info.userdata1 = ffi.cast("void *", key)
        try:
            _map_async(buffer._internal, _MAP_MODE_READ, 0, size, info[0])
        except BaseException:
            _maps.pop(key, None)
            self._token.set_done()
            raise

    def settle(self, status, message) -> None:
        if status != _MAP_SUCCESS:
            self.error = f"could not map the staging buffer ({status}: {_string(message)})"
        self._token.set_done()
        self.event.set()

    def check(self) -> None:
        self.event.wait()
        if self.error is not None:
            raise RuntimeError(self.error)

    def view(self):
        pointer = _mapped_range(self.buffer._internal, 0, self.size)
        if pointer == _NULL:
            raise RuntimeError("the mapped staging buffer has no mapped range")
        return ffi.buffer(pointer, self.size)

    def unmap(self) -> None:
        _unmap(self.buffer._internal)


if lib is not None:
    _maps = {}  # key -> CMapping, until its map settles
    _map_keys = itertools.count(1)

    @ffi.callback("void(WGPUMapAsyncStatus, WGPUStringView, void *, void *)")
    def _map_settled(status, message, userdata1, userdata2):  # (on the thread polling the device)
        mapping = _maps.pop(int(ffi.cast("uintptr_t", userdata1)), None)
        if mapping is not None:
            mapping.settle(status, message)


def stopped(wgpu_device) -> bool:
    """Whether ``wgpu_device.destroy()`` was called (wgpu-py then stops its poll thread,
    and a read-back on it would wait for nothing)."""
    return lib is not None and isinstance(wgpu_device, _DEVICE) and getattr(wgpu_device, "_poller", True) is None


def wake(wgpu_device) -> None:
    """Make ``wgpu_device``'s poll thread poll (again): it polls while any wait of the
    device is open, and a wake-up is a wait opened and closed at once."""
    poller = getattr(wgpu_device, "_poller", None) if lib is not None else None
    try:
        poller.get_token().set_done()
    except Exception:  # (stopped, or wgpu-py's poller changed)
        pass


def release_later(obj, pending: list) -> None:
    """Make the release of ``obj``'s wgpu-native object, when Python frees ``obj`` (on
    whichever thread drops it last), append ``(release function, handle)`` to ``pending``
    instead, for the caller to call when it is safe.  Only for objects nothing maps (the
    release skips wgpu-py's unmapping of mapped ranges); a device's queue needs its own
    call (the release skips releasing it with the device)."""
    if lib is None or not isinstance(obj, _OBJECT):
        return
    function, handle = getattr(type(obj), "_release_function", None), getattr(obj, "_internal", None)
    if function is None or handle is None:
        return
    poller = getattr(obj, "_poller", None) if isinstance(obj, _DEVICE) else None
    if poller is not None:  # a device: its poll thread stops first, as wgpu-py's release does
        release_device = function

        def function(handle):
            poller.stop()
            release_device(handle)

    handles = [handle]

    def release():  # (wgpu-py's __del__ calls self._release(); this closure holds no reference to obj)
        if handles:
            pending.append((function, handles.pop()))

    obj._release = release
