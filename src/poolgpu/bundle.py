"""Portable kernels: a compiled operator written as a bundle that any WebGPU host runs.

A bundle is a directory: ``manifest.json`` (format ``poolgpu-bundle/1``: the operator, its
tensors, and every dispatch in order with its pipeline, bindings, uniform bytes and
workgroup counts) and one complete ``.wgsl`` file per distinct shader.  The dispatches are
the Op's own plan (dispatches.py) for tensors in buffers of their own, from byte 0; the
format is documented in docs/portable.md, and ``js/poolgpu.mjs`` runs it.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import os
import re
import struct
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Union

from .dispatches import Planner
from .dtypes import DataType
from .errors import ValidationError
from .limits import WEBGPU, workgroup_needs
from .tensor_desc import TensorDesc
from .tuning import Tuning

if TYPE_CHECKING:
    from .descs import Description

__all__ = ["FORMAT", "WEBGPU_MAX_BINDING", "WEBGPU_ALIGNMENT", "export", "write_bundle"]

#: The bundle format this module writes (``manifest["format"]``).
FORMAT = "poolgpu-bundle/1"
#: WebGPU's default ``maxStorageBufferBindingSize`` and ``minStorageBufferOffsetAlignment``,
#: which every WebGPU device has: what ``pg.export`` and ``op.export`` plan for.
WEBGPU_MAX_BINDING = WEBGPU["max-storage-buffer-binding-size"]
WEBGPU_ALIGNMENT = WEBGPU["min-storage-buffer-offset-alignment"]


def export(desc: "Description", directory: Union[str, os.PathLike], tuning: Optional[Tuning] = None) -> Path:
    """Write the operator ``desc`` describes as a bundle that any WebGPU host runs, without
    a Device: ``manifest.json`` and one ``.wgsl`` file per shader (docs/portable.md).

    It is planned for WebGPU's default limits (128 MiB storage bindings, 256-byte offset
    alignment), which every WebGPU device has; ``op.export`` writes what a compiled op
    dispatches on its own device instead.

    Parameters
    ----------
    desc : MaxPoolingDesc, MaxPooling1Desc, ... (any operator description)
        What to compute.
    directory : str or os.PathLike
        Where to write the bundle: a new or empty directory, or one holding a bundle
        (replaced).
    tuning : Tuning, optional
        Which kernels; default None: ``Tuning.for_gpu()`` (bundles usually run on GPUs).

    Returns
    -------
    pathlib.Path
        The bundle's directory.

    Raises
    ------
    ValidationError
        ``desc`` is no operator description, ``tuning`` no Tuning, or ``directory`` holds
        other files.
    DeviceError
        A tensor's (n, c) plane exceeds 128 MiB.
    """
    if not hasattr(desc, "kernel"):
        raise ValidationError("desc", f"{type(desc).__name__} is not an operator description")
    if tuning is None:
        tuning = Tuning.for_gpu()
    elif not isinstance(tuning, Tuning):
        raise ValidationError("tuning", f"expected a pg.Tuning, got {type(tuning).__name__}")
    return write_bundle(Planner(desc, tuning, WEBGPU_MAX_BINDING, WEBGPU_ALIGNMENT), desc, tuning, directory)


def write_bundle(plan: Planner, desc: "Description", tuning: Tuning, directory: Union[str, os.PathLike],
                 planned_for: str = "webgpu-defaults") -> Path:
    """Write ``plan``'s dispatches, for tensors in buffers of their own, as a bundle in
    ``directory``; ``desc`` and ``tuning`` are recorded in its manifest.  What
    ``op.export`` and :func:`export` do (their docstrings: the arguments and errors).

    Parameters
    ----------
    plan : Planner
        The operator's program for a device's limits (an Op's own, or WebGPU's defaults).
    desc : MaxPoolingDesc, MaxPooling1Desc, ... (any operator description)
    tuning : Tuning
    directory : str or os.PathLike
    planned_for : str
        Whose limits ``plan`` is for: ``"webgpu-defaults"`` or ``"device: <name>"`` (the
        manifest's ``planned_for``).

    Returns
    -------
    pathlib.Path
    """
    from . import __version__  # (the package imports this module)

    placements = plan.standalone()
    dispatches = plan.dispatches(placements)
    shaders = {}  # source -> file name
    written = []
    for dispatch in dispatches:
        source = dispatch.source
        if source not in shaders:
            stem = dispatch.kernel.file.removesuffix(".wgsl")
            taken = sum(name.startswith(stem + "-") or name == stem + ".wgsl" for name in shaders.values())
            shaders[source] = f"{stem}.wgsl" if not taken else f"{stem}-{taken + 1}.wgsl"
        written.append(_dispatch_entry(dispatch, shaders[source]))
    kinds = [(role, t, "input") for role, t in plan.inputs] + [(role, t, "output") for role, t in plan.outputs]
    kinds += [(name, t, "scratch") for name, t in plan.scratch.items()]
    tensors = [dict(role=role, kind=kind, **_tensor_entry(t), buffer_size=placements[role].buffer_size)
               for role, t, kind in kinds]
    manifest = {
        "format": FORMAT,
        "poolgpu": __version__,
        "operator": desc.kernel,
        "description": {"type": type(desc).__name__,
                        "fields": {f.name: _json_value(getattr(desc, f.name)) for f in dataclasses.fields(desc)}},
        "tuning": dataclasses.asdict(tuning),
        "planned_for": planned_for,
        "limits": {
            "minStorageBufferOffsetAlignment": plan.alignment,
            "maxStorageBufferBindingSize": max((b.size for d in dispatches for b in d.bindings), default=16),
            "maxBufferSize": max(t["buffer_size"] for t in tensors),
            "maxStorageBuffersPerShaderStage": max(len(d.bindings) for d in dispatches),
            "maxComputeWorkgroupsPerDimension": max(max(d.grid) for d in dispatches),
            **_workgroup_limits(dispatches),
        },
        "tensors": tensors,
        "shaders": list(shaders.values()),
        "dispatches": written,
    }
    directory = _empty_bundle_directory(Path(directory))
    for source, name in shaders.items():
        (directory / name).write_text(source, encoding="utf-8")
    (directory / "manifest.json").write_text(_readable_json(manifest), encoding="utf-8")
    return directory


def _workgroup_limits(dispatches) -> dict:
    """The largest workgroup sizes the dispatches take, as WebGPU's limits name them."""
    needs = workgroup_needs(d.constants for d in dispatches)
    return {"maxComputeWorkgroupSizeX": needs["max-compute-workgroup-size-x"],
            "maxComputeWorkgroupSizeY": needs["max-compute-workgroup-size-y"],
            "maxComputeWorkgroupSizeZ": needs["max-compute-workgroup-size-z"],
            "maxComputeInvocationsPerWorkgroup": needs["max-compute-invocations-per-workgroup"]}


def _dispatch_entry(dispatch, shader: str) -> dict:
    fields = dispatch.kernel.fields
    bindings = [{"binding": 0, "type": "uniform", "bytes": dispatch.uniform.hex()}]
    bindings += [{"binding": b.binding, "type": "storage" if b.writable else "read-only-storage",
                  "tensor": b.role, "offset": b.offset, "size": b.size} for b in dispatch.bindings]
    return {
        "shader": shader,
        "kernel": dispatch.kernel.file,
        "entry_point": "main",
        # WebGPU takes override values as numbers (a bool override: 0 or 1)
        "constants": {name: int(value) if isinstance(value, bool) else value for name, value in dispatch.constants},
        "bindings": bindings,
        # the uniform's words by field name, for people reading the manifest
        "params": dict(zip(fields, struct.unpack(f"<{len(fields)}I", dispatch.uniform[:4 * len(fields)]))),
        "workgroups": list(dispatch.grid),
    }


def _tensor_entry(t: TensorDesc) -> dict:
    return {"data_type": t.data_type.name, "element_size": t.data_type.size, "sizes": list(t.sizes),
            "strides": list(t.strides), "byte_size": t.total_size_in_bytes}


def _json_value(value):
    """A description field's value as JSON: tensors as their descriptions, data types by name."""
    if isinstance(value, TensorDesc):
        return _tensor_entry(value)
    if isinstance(value, (DataType, enum.Enum)):
        return value.name
    if isinstance(value, (tuple, list)):
        return [_json_value(v) for v in value]
    return value


def _readable_json(value) -> str:
    """Indented JSON with lists of numbers or strings on one line."""
    text = json.dumps(value, indent=1)
    return re.sub(r"\[\s+([^\[\]{}]*?)\s+\]", lambda m: "[" + re.sub(r",\s+", ", ", m.group(1)) + "]", text) + "\n"


def _empty_bundle_directory(directory: Path) -> Path:
    """``directory``, made if missing; a bundle already there is removed (its manifest and
    shaders), anything else refused."""
    if directory.exists() and not directory.is_dir():
        raise ValidationError("directory", f"{directory} is a file; give a new or empty directory")
    directory.mkdir(parents=True, exist_ok=True)
    manifest = directory / "manifest.json"
    old = []
    if manifest.is_file():
        try:
            previous = json.loads(manifest.read_text(encoding="utf-8"))
            if str(previous.get("format", "")).startswith("poolgpu-bundle/"):
                old = [manifest] + [directory / name for name in previous.get("shaders", ())]
        except (ValueError, AttributeError):
            pass
    others = sorted(p.name for p in directory.iterdir() if p not in old)
    if others:
        shown = ", ".join(others[:5]) + (", ..." if len(others) > 5 else "")
        raise ValidationError("directory", f"{directory} holds files that are not a poolgpu bundle's ({shown}); "
                              "give a new or empty directory")
    for path in old:
        path.unlink(missing_ok=True)
    return directory
