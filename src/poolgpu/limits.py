"""Device limits that shape what poolgpu dispatches: WebGPU's guaranteed ones (what every
WebGPU device offers, and what bundles are planned for unless asked otherwise), the workgroup
sizes a program takes, and whether a Tuning or a program fits a device.  Pure arithmetic, no
GPU: the kernel layer shapes workgroups within WEBGPU, the device layer checks what it
compiles against its own device's limits."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterable, Mapping, Optional

from .errors import ValidationError
from .tuning import Tuning

__all__ = ["WEBGPU", "WORKGROUP_OVERRIDES", "workgroup_size", "workgroup_needs", "check_tuning", "check_workgroups"]

#: WebGPU's guaranteed limits that poolgpu's programs depend on (the spec's defaults, by
#: wgpu's names): every WebGPU device offers at least these.
WEBGPU = {
    "max-storage-buffer-binding-size": 128 * 2**20,
    "min-storage-buffer-offset-alignment": 256,
    "max-compute-workgroup-size-x": 256,
    "max-compute-workgroup-size-y": 256,
    "max-compute-workgroup-size-z": 64,
    "max-compute-invocations-per-workgroup": 256,
}


def _workgroup_overrides() -> tuple:
    """The override constants every shader sizes its workgroups by (x, y, z), with their
    defaults, as common/header.wgsl and common/grid.wgsl declare them (one definition)."""
    common = Path(__file__).parent / "wgsl" / "common"
    declared = "".join((common / name).read_text() for name in ("header.wgsl", "grid.wgsl"))
    found = dict(re.findall(r"override (WG_[XYZ]): u32 = (\d+)u;", declared))
    return tuple((name, int(found[name])) for name in ("WG_X", "WG_Y", "WG_Z"))


#: The workgroup-size overrides of every shader and their defaults: a shader's workgroup is
#: (WG_X, WG_Y, WG_Z).
WORKGROUP_OVERRIDES = _workgroup_overrides()
# The Tuning fields that size workgroups along x (each at most 256: Tuning checks that)
_TUNING_WORKGROUP_FIELDS = ("lines_workgroup", "block_workgroup", "flat_workgroup", "plane_lanes")
_NAMES = ("max-compute-workgroup-size-x", "max-compute-workgroup-size-y", "max-compute-workgroup-size-z",
          "max-compute-invocations-per-workgroup")


def workgroup_size(constants: Mapping) -> tuple:
    """(x, y, z) of a pass with these override constants."""
    constants = dict(constants)
    return tuple(int(constants.get(name, default)) for name, default in WORKGROUP_OVERRIDES)


def workgroup_needs(constants_of_passes: Iterable[Mapping]) -> dict:
    """The largest workgroup size along x, y and z and the most invocations per workgroup
    that passes with these override constants take, by wgpu's limit names."""
    most = [1, 1, 1, 1]
    for constants in constants_of_passes:
        x, y, z = workgroup_size(constants)
        most = [max(m, s) for m, s in zip(most, (x, y, z, x * y * z))]
    return dict(zip(_NAMES, most))


def _limit(limits: Mapping, name: str) -> int:
    return int(limits.get(name, WEBGPU[name]))


def check_tuning(tuning: Tuning, limits: Mapping, where: str = "tuning") -> None:
    """ValidationError naming ``where`` where one of ``tuning``'s workgroup sizes exceeds
    what a device of these ``limits`` runs (invocations per workgroup and size along x)."""
    most = min(_limit(limits, "max-compute-invocations-per-workgroup"), _limit(limits, "max-compute-workgroup-size-x"))
    over = [f"{name}={getattr(tuning, name)}" for name in _TUNING_WORKGROUP_FIELDS if getattr(tuning, name) > most]
    if over:
        raise ValidationError(where, f"{', '.join(over)}: this device runs at most {most} invocations per workgroup; "
                                     f"use dataclasses.replace(tuning, ...) with values of at most {most}")


def check_workgroups(constants_of_passes: Iterable[Mapping], limits: Mapping,
                     tuning: Optional[Tuning] = None) -> None:
    """ValidationError (naming "tuning") where a program's workgroups exceed a device's
    limits: never a pipeline error later."""
    needs = workgroup_needs(constants_of_passes)
    over = [f"{name} {needs[name]} (the device's: {_limit(limits, name)})" for name in _NAMES
            if needs[name] > _limit(limits, name)]
    if over:
        fields = ", ".join(f"{n}={getattr(tuning, n)}" for n in _TUNING_WORKGROUP_FIELDS) if tuning else ""
        raise ValidationError("tuning", "its workgroups exceed this device's limits: " + "; ".join(over)
                              + (f" (from {fields}: choose smaller ones)" if fields else ""))
