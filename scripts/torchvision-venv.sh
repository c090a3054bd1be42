#!/usr/bin/env bash
# Makes .venv-torchvision: PyPI's torch and torchvision (CUDA builds, which run on the CPU too)
# with wgpu, for tests/test_torchvision.py's cross-check of poolgpu.torch's ROI functions
# against torchvision itself.  PyPI's torchvision links libtorch_cuda, so it does not import
# beside the CPU torch of the test venv.  Several GB; the test skips where it is absent.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv-torchvision"
"${PYTHON:-python3}" -m venv "$VENV"
# (no local CPU wheels: torchvision needs PyPI's own torch build; `===` matches the version
# exactly, so that a "2.13.0+cpu" wheel in a pip configuration's find-links is not taken)
PIP_FIND_LINKS= "$VENV/bin/python" -m pip install -q --no-cache-dir "torch===2.13.0" "torchvision===0.28.0" numpy \
  "wgpu>=0.32"
