"""Adapters: what wgpu offers and which one a Device takes."""

from __future__ import annotations

import ctypes
import importlib.util
import os
import sys
import threading
from typing import Optional

import wgpu

from .errors import DeviceError, ValidationError

__all__ = ["list_adapters"]

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


def _enumerate():
    _load_triton_first()
    try:
        return list(wgpu.gpu.enumerate_adapters_sync())
    except Exception as exc:  # no loader, no driver, broken install
        raise DeviceError(f"could not list WebGPU adapters ({exc}). {_NO_ADAPTER_HELP}") from exc


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
