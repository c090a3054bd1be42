#!/usr/bin/env bash
# The test command: set-up on a fresh machine, then the whole suite on every adapter found.
# Extra arguments go to pytest (e.g. -k max_pool, -x).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
# PyTorch cross-checks run when torch installs (a local CPU build here); they skip otherwise.
python -c "import torch" 2>/dev/null || pip_quietly torch==2.13.0 || \
  echo "test: torch unavailable; PyTorch cross-checks will skip"
if [ "${CI:-}" = "true" ]; then
  # CI must exercise both software adapters: Vulkan (lavapipe) and OpenGL (llvmpipe).
  export POOLGPU_REQUIRE_BACKENDS="${POOLGPU_REQUIRE_BACKENDS:-vulkan,opengl}"
fi
cd "$ROOT"
exec python -m pytest "$@"
