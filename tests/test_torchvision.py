"""poolgpu.torch's roi_align, ps_roi_align, roi_pool and a Mask R-CNN-style head through
pgt.convert against torchvision itself (tests/torchvision_check.py), in the Python of
.venv-torchvision (scripts/torchvision-venv.sh: PyPI's torch and torchvision, which do not
import beside the CPU torch here), on the Vulkan adapter; skipped where that venv is absent."""

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PYTHON = ROOT / ".venv-torchvision" / "bin" / "python"


def test_matches_torchvision_and_its_mask_rcnn_head():
    if not PYTHON.exists() or subprocess.run([PYTHON, "-c", "import torchvision, wgpu"],
                                             capture_output=True).returncode != 0:
        pytest.skip("no .venv-torchvision with torchvision and wgpu (bash scripts/torchvision-venv.sh makes it)")
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    out = subprocess.run([PYTHON, ROOT / "tests" / "torchvision_check.py", "vulkan"], capture_output=True, text=True,
                         env=env, timeout=600)
    assert out.returncode == 0 and out.stdout.rstrip().splitlines()[-1].startswith("ok"), out.stdout + out.stderr
