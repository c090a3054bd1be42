"""Adapters: what wgpu offers, which one a Device takes, and the wgpu devices poolgpu opens
on them.

Adapters are listed once per process and kept: on OpenGL every listing makes wgpu's one
EGL context current and gives adapter objects with a lock of their own over it, so devices
from two listings abort the process when used at once (gate.py).  A wgpu device poolgpu
opened is not released while it works: when its Device is freed it waits, idle, for the
next Device on the same adapter (releasing one stops wgpu-py's poll thread with a 1 s
timeout and then frees the device under a poll that may still run; on OpenGL it frees GL
objects on whichever thread Python's collector runs).  A lost one, which nothing polls any
more, is let go: on OpenGL its release waits for the gate.
"""

from __future__ import annotations

import ctypes
import gc
import importlib.util
import os
import sys
import threading
import weakref
from collections import OrderedDict
from typing import Optional

import wgpu

from . import _native
from .errors import DeviceError, ValidationError
from .gate import DEFAULT_TIMEOUT, GL, Gated, for_backend

__all__ = ["Lease", "end_lease", "lease", "list_adapters"]

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


def _describe(adapter) -> dict:
    info = adapter.info
    return {
        "name": info["device"],
        "backend": info["backend_type"].lower(),
        "type": info["adapter_type"].lower(),
        "description": info.get("description", ""),
        "features": sorted(adapter.features),
    }


_triton_checked = False
_triton_lock = threading.Lock()  # a thread listing adapters waits until Triton's library is in
# Mesa's drivers and the LLVM they load, as /proc/self/maps names them
_MESA_LIBRARIES = ("libLLVM", "libvulkan_lvp", "libgallium", "_dri.so")


def _load_triton_first() -> None:
    """Load Triton's LLVM (``libtriton.so``) before any adapter is opened, where Triton is
    installed (PyPI's CUDA torch brings it; torch.compile imports it).

    A Mesa driver (lavapipe, llvmpipe) loads its own LLVM when wgpu lists adapters;
    loading Triton's after it crashes the process in Triton's static initialisers, while
    the other order works.  Loading the library is enough (about 40 ms and 80 MB, once per
    process); Triton's Python package imports it later as usual.  Where a Mesa driver is
    already loaded (the program opened an adapter itself), loading Triton would crash:
    nothing is loaded then."""
    global _triton_checked
    with _triton_lock:
        if _triton_checked or not sys.platform.startswith("linux"):
            return
        _triton_checked = True
        try:
            spec = importlib.util.find_spec("triton")
        except (ImportError, ValueError):
            return
        folders = (spec.submodule_search_locations or []) if spec is not None else []
        libraries = [p for p in (os.path.join(f, "_C", "libtriton.so") for f in folders) if os.path.exists(p)]
        if not libraries:
            return
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            loaded = maps.read()
        if any(name in loaded for name in _MESA_LIBRARIES):
            return
        try:
            ctypes.CDLL(libraries[0])
        except OSError:  # a broken install: Triton fails by itself, as it would without poolgpu
            pass


_adapters = None  # the process's one listing, once made
_listing_lock = threading.Lock()


def _enumerate() -> list:
    global _adapters
    if _adapters is None:
        _load_triton_first()
        # (under the OpenGL gate: a listing makes the EGL context current)
        with _listing_lock, Gated(GL, DEFAULT_TIMEOUT):
            if _adapters is None:
                try:
                    _adapters = tuple(wgpu.gpu.enumerate_adapters_sync())
                except Exception as exc:  # no loader, no driver, broken install: tried again next time
                    raise DeviceError(f"could not list WebGPU adapters ({exc}). {_NO_ADAPTER_HELP}") from exc
    return list(_adapters)


def list_adapters() -> list:
    """The adapters wgpu offers.

    Returns
    -------
    list of dict
        One per adapter: ``name``, ``backend`` (``"vulkan"``, ``"metal"``, ``"d3d12"``,
        ``"opengl"``), ``type`` (``"discretegpu"``, ``"integratedgpu"``, ``"virtualgpu"``,
        ``"cpu"``), ``description`` and ``features`` (a sorted list).

    Raises
    ------
    DeviceError
        wgpu cannot list adapters (no loader or driver), saying what to install.
    """
    return [_describe(a) for a in _enumerate()]


def _pick_adapter(backend: Optional[str], adapter: Optional[str]):
    # Argument mistakes first: a misspelt backend is no missing adapter.
    wanted = None
    if backend is not None:
        wanted = _BACKENDS.get(backend.lower()) if isinstance(backend, str) else None
        if wanted is None:
            raise ValidationError("backend", f"expected one of 'vulkan', 'metal', 'd3d12', 'opengl' (or 'gl'), "
                                             f"got {backend!r}")
    if adapter is not None and not isinstance(adapter, str):
        raise ValidationError("adapter", f"expected a part of an adapter's name (a str), got {adapter!r}")
    candidates = _enumerate()
    if wanted is not None:
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


class Lease:
    """A wgpu device poolgpu opened, lent to one Device until that Device is freed;
    ``retired`` once it was lost: then it is let go (released once Python frees it) rather
    than lent again.  ``pipelines`` and ``pipeline_lock``: the Devices' cache of compiled
    pipelines, which depend on the wgpu device only, so that the next Device finds them."""

    __slots__ = ("adapter", "wgpu_device", "retired", "pipelines", "pipeline_lock", "__weakref__")

    def __init__(self, adapter, wgpu_device, pipelines=None) -> None:
        self.adapter, self.wgpu_device, self.retired = adapter, wgpu_device, False
        self.pipelines, self.pipeline_lock = pipelines or (OrderedDict(), threading.RLock())


_idle = {}  # id(adapter) -> [(wgpu device, its pipelines)] opened on it that no Device holds
_lent = {}  # id(adapter) -> WeakSet of the Leases of its wgpu devices that Devices hold
# With this many wgpu devices open on an adapter and none idle, a Device first runs Python's
# cyclic collector: a dropped Device sits in a reference cycle (with its compiled ops) and
# gives its wgpu device back only once the collector frees it.
_COLLECT_FROM = 4


def lease(adapter, timeout: float) -> Lease:
    """An idle wgpu device of ``adapter``, or a new one (waiting at most ``timeout`` seconds
    for the OpenGL gate)."""
    key = id(adapter)
    lent = _lent.setdefault(key, weakref.WeakSet())
    found = _take_idle(adapter)
    if found is None and len(lent) + len(_idle.get(key, ())) >= _COLLECT_FROM:
        gc.collect()
        found = _take_idle(adapter)
    if found is None:
        found = Lease(adapter, _open(adapter, timeout))
    lent.add(found)
    return found


def _take_idle(adapter) -> Optional[Lease]:
    idle = _idle.get(id(adapter), [])
    while idle:
        try:
            wgpu_device, pipelines = idle.pop()
        except IndexError:  # (another thread took the last one)
            break
        if not _native.stopped(wgpu_device):  # (else destroyed while idle: let go)
            return Lease(adapter, wgpu_device, pipelines)
    return None


def _open(adapter, timeout: float):
    limits = adapter.limits
    # Under the OpenGL gate whatever the backend: opening a device makes wgpu-native poll
    # every device of the process (wgpuInstanceProcessEvents), OpenGL ones included.
    with Gated(GL, timeout):
        try:
            wgpu_device = adapter.request_device_sync(
                label="poolgpu",
                required_features=[f for f in _OPTIONAL_FEATURES if f in adapter.features],
                required_limits={k: limits[k] for k in _LIMITS if k in limits},
            )
        except Exception as exc:
            raise DeviceError(f"could not open a device on {adapter.summary}: {exc}") from exc
    if for_backend(_describe(adapter)["backend"]) is GL:  # a lost one is let go: under the gate
        GL.defer_release(wgpu_device)
        GL.defer_release(wgpu_device.queue)
    return wgpu_device


def end_lease(lease: Lease) -> None:
    """The Device holding ``lease`` was freed: its wgpu device waits for the next Device,
    unless lost.  (Called by the garbage collector on any thread: it only appends to a list.)"""
    if not lease.retired:
        _idle.setdefault(id(lease.adapter), []).append((lease.wgpu_device, (lease.pipelines, lease.pipeline_lock)))
