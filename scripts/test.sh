#!/usr/bin/env bash
# The test command: set-up on a fresh machine, then the whole suite on every adapter found.
# Extra arguments go to pytest (e.g. -k max_pool, -x).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
# The cross-checks against PyTorch need torch; its CPU build is enough (and much smaller):
# from PyTorch's CPU index where it is reachable (its local version, +cpu, wins over PyPI's
# build), else from PyPI. Without torch those tests skip.
if ! python -c "import torch" 2>/dev/null; then
  echo "test: installing PyTorch's CPU build for the cross-checks against PyTorch"
  pip_quietly --retries 0 torch==2.13.0 --extra-index-url https://download.pytorch.org/whl/cpu ||
    pip_quietly torch==2.13.0 ||
    echo "test: torch unavailable; the cross-checks against PyTorch will skip"
fi
# PyPI's default (CUDA) torch brings Triton, whose LLVM crashes a process that loads it after
# Mesa's; poolgpu loads it first (docs/torch.md). Triton alone reproduces that, so the test of
# it (tests/test_torch_triton.py) gets Triton where PyPI has it (Linux x86_64), as the whole
# suite then runs beside it.
triton_here=false
if [ "$(uname -s)-$(uname -m)" = "Linux-x86_64" ]; then
  triton_here=true
  if ! python -c "import triton" 2>/dev/null; then
    echo "test: installing Triton (PyPI's CUDA torch brings it) for the test of poolgpu beside it"
    pip_quietly triton==3.8.0 || echo "test: Triton unavailable; the test of poolgpu beside it will skip"
  fi
fi
if [ "${CI:-}" = "true" ]; then
  # CI must exercise both software adapters: Vulkan (lavapipe) and OpenGL (llvmpipe), and
  # poolgpu beside Triton.
  export POOLGPU_REQUIRE_BACKENDS="${POOLGPU_REQUIRE_BACKENDS:-vulkan,opengl}"
  if [ "$triton_here" = true ]; then export POOLGPU_REQUIRE_TRITON="${POOLGPU_REQUIRE_TRITON:-1}"; fi
fi
cd "$ROOT"
exec python -m pytest "$@"
