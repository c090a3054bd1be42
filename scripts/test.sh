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
# -- portable kernels: Node's WebGPU (Dawn) and headless Chromium ---------------------------
# tests/test_portable*.py run exported bundles under Node's `webgpu` package and open the
# browser example in Chromium; they skip, saying why, where these cannot be had:
#   nodejs, npm, chromium   Debian's packages, where the commands are missing (as root, apt-get)
#   js/node_modules         npm ci in js/: the webgpu package js/package.json pins
#   .cache/mesa25           Dawn needs Mesa >= 25 for lavapipe: scripts/mesa25.sh (Debian 12)
portable_missing=()
command -v node >/dev/null 2>&1 || portable_missing+=(nodejs)
command -v npm >/dev/null 2>&1 || portable_missing+=(npm)
command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || portable_missing+=(chromium)
if [ "${#portable_missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "test: installing ${portable_missing[*]} (apt-get) for the portable-kernel tests"
    { apt-get update -qq &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${portable_missing[@]}" >/dev/null; } ||
      echo "test: apt-get could not install ${portable_missing[*]}; the tests needing them will skip" >&2
  else
    echo "test: missing ${portable_missing[*]} (apt-get install ${portable_missing[*]}); the tests needing them will skip" >&2
  fi
fi
if command -v npm >/dev/null 2>&1 && ! (cd "$ROOT/js" && node -e '
    const pinned = require("./package.json").dependencies.webgpu;
    process.exit(require("./node_modules/webgpu/package.json").version === pinned ? 0 : 1)' 2>/dev/null); then
  echo "test: npm ci in js/ (the webgpu package)"
  (cd "$ROOT/js" && npm ci --no-audit --no-fund --loglevel=error >/dev/null) ||
    echo "test: npm could not install js/'s packages; the Node tests will skip" >&2
fi
bash "$ROOT/scripts/mesa25.sh" >/dev/null || true  # (its failures go to stderr)
# -- end of portable kernels ----------------------------------------------------------------

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
# Files run in parallel, a file's tests in one process (its fixtures set up once): the
# suite is bound by compiling shaders and computing references, one core each. Up to four
# processes, each with its own devices; POOLGPU_TEST_WORKERS=1 runs them all in this one.
workers="${POOLGPU_TEST_WORKERS:-$(python -c 'import os; print(max(1, min(4, len(os.sched_getaffinity(0)))))')}"
if [ "$workers" -gt 1 ]; then
  exec python -m pytest -n "$workers" --dist loadfile "$@"
fi
exec python -m pytest "$@"
