"""poolgpu beside Triton, the compiler PyPI's default (CUDA) torch brings and torch.compile
imports.  Loading Triton's LLVM after a Mesa driver's (lavapipe, llvmpipe) crashes the
process; poolgpu loads Triton's first.  Each case runs in a child process (a crash ends
it).  scripts/test.sh installs Triton; POOLGPU_REQUIRE_TRITON=1 (CI) makes its absence a
failure rather than a skip."""

import importlib.util
import os
import signal
import subprocess
import sys

import pytest

import poolgpu as pg


def _require_triton():
    if importlib.util.find_spec("triton") is None:
        if os.environ.get("POOLGPU_REQUIRE_TRITON") == "1":
            pytest.fail("POOLGPU_REQUIRE_TRITON=1 but Triton is not installed (scripts/test.sh installs it)")
        pytest.skip("Triton is not installed")


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)


def _mesa() -> bool:
    try:
        names = [a["name"] for a in pg.list_adapters()]
    except pg.DeviceError:
        return False
    return any(n.startswith(("llvmpipe", "lavapipe")) for n in names)


def test_a_process_opening_adapters_with_poolgpu_then_loading_triton_lives():
    _require_triton()
    done = _run("import poolgpu as pg\npg.list_adapters()\nimport triton\nprint('lived')")
    assert done.returncode == 0 and "lived" in done.stdout, (done.returncode, done.stderr[-2000:])
    if _mesa():  # the same order without poolgpu's care crashes: what the case above guards against
        bare = _run("import wgpu\nwgpu.gpu.enumerate_adapters_sync()\nimport triton\nprint('lived')")
        assert bare.returncode == -signal.SIGSEGV, (
            f"Triton after Mesa no longer crashes here ({bare.returncode}); poolgpu's loading of Triton "
            f"first (adapters._load_triton_first) may no longer be needed")


def test_torch_compile_of_poolgpu_calls_beside_triton():
    _require_triton()
    pytest.importorskip("torch")
    code = """
import torch
import poolgpu as pg, poolgpu.torch as pgt
device = pg.default_device()
x = torch.rand(1, 2, 6, 6)
y = torch.compile(lambda t: pgt.max_pool2d(t, 2, device=device) + 1, fullgraph=True, backend="aot_eager")(x)
assert torch.equal(y, torch.nn.functional.max_pool2d(x, 2) + 1)
import sys
assert "triton" in sys.modules  # torch.compile imported it after poolgpu opened its device
print("lived")
"""
    done = _run(code)
    assert done.returncode == 0 and "lived" in done.stdout, (done.returncode, done.stderr[-2000:])


def test_poolgpu_does_not_load_triton_after_a_mesa_llvm_already_loaded():
    """A program that opened an adapter itself: loading Triton then would crash, so poolgpu
    leaves it."""
    _require_triton()
    done = _run("import wgpu\nwgpu.gpu.enumerate_adapters_sync()\nimport poolgpu as pg\npg.list_adapters()\n"
                "print('lived')")
    assert done.returncode == 0 and "lived" in done.stdout, (done.returncode, done.stderr[-2000:])
