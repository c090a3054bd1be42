"""`python -m poolgpu`, the diagnostics command, run as a user runs it: a subprocess."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import poolgpu as pg
from conftest import ADAPTERS
from poolgpu import __main__ as diagnostics

# The adapter is this file's subject: every case runs on every adapter (conftest.py).
pytestmark = pytest.mark.every_adapter

ROOT = Path(__file__).resolve().parents[1]


def run(*args, **env):
    environ = dict(os.environ)
    # the source tree first, as for the tests themselves
    environ["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), environ.get("PYTHONPATH", "")])
    for key in ("POOLGPU_BACKEND", "POOLGPU_ADAPTER"):
        environ.pop(key, None)
    environ.update(env)
    return subprocess.run([sys.executable, "-m", "poolgpu", *args], capture_output=True, text=True,
                          env=environ, timeout=300)


@pytest.fixture(scope="module")
def report():
    done = run("--json")
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)


def test_versions_are_reported_without_importing_torch(report):
    _, r = report
    v = r["versions"]
    assert v["poolgpu"].startswith(pg.__version__)
    assert v["numpy"] == np.__version__
    import wgpu
    assert v["wgpu"] == wgpu.__version__
    assert v["python"].startswith(".".join(map(str, sys.version_info[:3])))
    # torch is reported from its metadata, and importing poolgpu never imports it
    done = subprocess.run([sys.executable, "-c", "import sys, poolgpu.__main__ as m; m.versions(); "
                           "print('torch' in sys.modules)"], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert done.stdout.strip() == "False", done.stderr


def test_every_adapter_is_listed_with_its_features_and_limits(report):
    _, r = report
    listed = {(a["backend"], a["name"]) for a in r["adapters"]}
    assert listed == {(a["backend"], a["name"]) for a in pg.list_adapters()}
    for a in r["adapters"]:
        assert set(a["features"]) == {"shader-f16", "timestamp-query", "subgroup"}
        assert a["limits"]["maxStorageBufferBindingSize"] > 0
        assert a["limits"]["maxComputeWorkgroupsPerDimension"] >= 65535
        assert a["limits"]["maxComputeInvocationsPerWorkgroup"] >= 256


@pytest.mark.skipif(not ADAPTERS, reason="no WebGPU adapter found")
def test_usable_adapters_pass_the_self_test_and_the_exit_status_says_so(report):
    code, r = report
    usable = {(a["backend"], a["name"]) for a in ADAPTERS}
    for a in r["adapters"]:
        if (a["backend"], a["name"]) in usable:
            assert a["self_test"]["passed"], a
    assert code == 0


@pytest.mark.skipif(not ADAPTERS, reason="no WebGPU adapter found")
def test_the_default_is_the_adapter_default_device_opens(report):
    _, r = report
    chosen = r["adapters"][r["default"]["index"]]
    dev = pg.default_device()
    assert (chosen["backend"], chosen["name"]) == (dev.backend, dev.name)
    assert any("preference" in reason for reason in r["default"]["reasons"])


@pytest.mark.parametrize("backend", ["vulkan", "opengl"])
def test_poolgpu_backend_moves_the_default(backend):
    if backend not in {a["backend"] for a in pg.list_adapters()}:
        pytest.skip(f"no {backend} adapter here")
    done = run("--json", "--no-self-test", POOLGPU_BACKEND=backend)
    r = json.loads(done.stdout)
    assert r["adapters"][r["default"]["index"]]["backend"] == backend
    assert any(f"POOLGPU_BACKEND={backend}" in reason for reason in r["default"]["reasons"])


def test_an_adapter_name_that_matches_nothing_is_explained():
    done = run("--no-self-test", POOLGPU_ADAPTER="no-such-adapter-anywhere")
    assert "no adapter matches" in done.stdout
    assert "POOLGPU_ADAPTER=no-such-adapter-anywhere" in done.stdout


def test_the_text_report_names_each_adapter_and_verdict():
    done = run()
    assert "poolgpu diagnostics" in done.stdout
    for a in pg.list_adapters():
        assert a["name"] in done.stdout
    assert "maxStorageBufferBindingSize" in done.stdout
    if ADAPTERS:
        assert "self-test: passed" in done.stdout
        assert done.returncode == 0


def test_no_adapter_at_all_exits_1():
    # Point the Vulkan loader and EGL at nothing: wgpu then finds no adapter.
    done = run(VK_ICD_FILENAMES=str(ROOT / "no-such-icd.json"),
               __EGL_VENDOR_LIBRARY_FILENAMES=str(ROOT / "no-such-vendor.json"))
    if "Adapters (0)" not in done.stdout:
        pytest.skip("an adapter is still found without Vulkan ICDs and EGL vendors (another platform)")
    assert done.returncode == 1
    assert "none" in done.stdout


def test_the_self_test_reports_an_adapter_that_does_not_open():
    result = diagnostics.self_test("vulkan", "no-such-adapter-anywhere")
    assert not result["passed"]
    assert "DeviceError" in result["detail"]


def test_the_self_test_reference_is_numpy_pooling():
    # The self-test's own answer, checked by hand on a 1x1x4x4 input.
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    y, idx = diagnostics._pool_reference(x, 2, 2, 0, average=False)
    assert y[0, 0].tolist() == [[5, 7], [13, 15]]
    assert idx[0, 0].tolist() == [[5, 7], [13, 15]]
    a, _ = diagnostics._pool_reference(x, 2, 2, 0, average=True)
    assert a[0, 0].tolist() == [[2.5, 4.5], [10.5, 12.5]]
    # padded 3x3 stride 2: the corner window covers x[0:2, 0:2]; ties go to the first maximum
    t = np.ones((1, 1, 3, 3), np.float32)
    y, idx = diagnostics._pool_reference(t, 3, 2, 1, average=False)
    assert idx[0, 0].tolist() == [[0, 1], [3, 4]]
