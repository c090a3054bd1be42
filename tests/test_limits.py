"""Workgroups and offsets within a device's limits: WebGPU's guaranteed sizes whatever the
Tuning, a Tuning a device cannot run refused when set or compiled (never a pipeline error),
and bundles planned for WebGPU's defaults unless the device's own are asked for."""

import dataclasses
import json

import pytest

import poolgpu as pg
from poolgpu import limits
from poolgpu.dispatches import Planner
from poolgpu.kernels import grids
from portable_cases import TUNINGS, cases

# The adapter is this file's subject: every case runs on every adapter (conftest.py).
pytestmark = pytest.mark.every_adapter


def test_line_grids_stay_within_webgpus_workgroup_sizes_whatever_the_workgroup():
    for workgroup in (64, 128, 256):
        for columns, lines, planes in ((1, 1, 4096), (1, 7, 512), (3, 1, 1000), (300, 2, 2), (7, 7, 10**6)):
            constants, _, _ = grids.lines_grid(columns, lines, planes, workgroup)
            x, y, z = limits.workgroup_size(constants)
            assert z <= 64 and x <= 256 and y <= 256 and x * y * z <= workgroup, (workgroup, columns, lines, planes)


@pytest.mark.parametrize("tuning", ["cpu", "gpu"])
def test_every_portable_case_fits_webgpus_guaranteed_limits_with_the_widest_workgroups(tuning):
    wide = dataclasses.replace(pg.Tuning.preset(tuning), lines_workgroup=256, block_workgroup=256,
                               flat_workgroup=256, plane_lanes=256)
    for case in cases():
        desc, _ = case.describe(with_arrays=False)
        plan = Planner(desc, wide, limits.WEBGPU["max-storage-buffer-binding-size"],
                       limits.WEBGPU["min-storage-buffer-offset-alignment"])
        limits.check_workgroups((p.constants for p in plan.program.passes), limits.WEBGPU, wide)


def test_a_tuning_the_device_cannot_run_is_refused_by_name():
    small = dict(limits.WEBGPU, **{"max-compute-invocations-per-workgroup": 128})
    limits.check_tuning(pg.Tuning(lines_workgroup=128), small)
    with pytest.raises(pg.ValidationError, match=r"tuning.*lines_workgroup=256.*at most 128"):
        limits.check_tuning(pg.Tuning(lines_workgroup=256), small)
    with pytest.raises(pg.ValidationError, match=r"max-compute-workgroup-size-z 64 \(the device's: 32\)"):
        limits.check_workgroups([{"WG_X": 1, "WG_Y": 1, "WG_Z": 64}], dict(small, **{"max-compute-workgroup-size-z": 32}))


def test_a_device_refuses_such_a_tuning_when_set_and_when_compiling(device):
    desc = pg.MaxPoolingDesc(pg.TensorDesc("float32", (1, 2, 8, 8)), window_size=(2, 2))
    wide = dataclasses.replace(device.tuning, lines_workgroup=256)
    saved = device.limits
    try:
        device.limits = dict(saved, **{"max-compute-invocations-per-workgroup": 128})
        with pytest.raises(pg.ValidationError, match="lines_workgroup=256"):
            device.tuning = wide
        with pytest.raises(pg.ValidationError, match="lines_workgroup=256"):
            pg.Op(device, desc, wide)
    finally:
        device.limits = saved
    pg.Op(device, desc, wide)  # within its real limits


def test_op_export_plans_for_webgpus_defaults_unless_asked_for_the_devices(device, tmp_path):
    desc = pg.MaxPoolingDesc(pg.TensorDesc("float32", (1, 2, 8, 8)), window_size=(2, 2))
    op = device.compile(desc)
    portable = json.loads((op.export(tmp_path / "a") / "manifest.json").read_text())
    assert portable["planned_for"] == "webgpu-defaults"
    assert portable["limits"]["minStorageBufferOffsetAlignment"] == 256
    assert all(portable["limits"][name] <= bound for name, bound in (
        ("maxComputeWorkgroupSizeX", 256), ("maxComputeWorkgroupSizeY", 256), ("maxComputeWorkgroupSizeZ", 64),
        ("maxComputeInvocationsPerWorkgroup", 256), ("maxStorageBufferBindingSize", 128 << 20)))
    own = json.loads((op.export(tmp_path / "b", limits="device") / "manifest.json").read_text())
    assert own["planned_for"] == f"device: {device.name}"
    assert own["limits"]["minStorageBufferOffsetAlignment"] == device.limits.get("min-storage-buffer-offset-alignment", 256)
    with pytest.raises(pg.ValidationError, match="limits"):
        op.export(tmp_path / "c", limits="browser")
