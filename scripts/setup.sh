# Sourced by test.sh and bench.sh: everything a fresh machine lacks, idempotent.
#   - a private XDG_RUNTIME_DIR (silences Mesa's warnings)
#   - a software Vulkan adapter (Mesa lavapipe) when no Vulkan driver is installed
#   - the virtual environment .venv with poolgpu (built as a wheel, as users get it)
#     and the extras named in POOLGPU_EXTRAS (default: test)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

if [ -z "${XDG_RUNTIME_DIR:-}" ] || [ ! -w "${XDG_RUNTIME_DIR}" ]; then
  export XDG_RUNTIME_DIR="${TMPDIR:-/tmp}/poolgpu-xdg-$(id -u)"
fi
mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"

# (either directory may be missing: ls fails if one is, so ask for any match at all)
if ! compgen -G "/usr/share/vulkan/icd.d/*.json" >/dev/null && ! compgen -G "/etc/vulkan/icd.d/*.json" >/dev/null; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "setup: no Vulkan driver found; installing Mesa's software one (mesa-vulkan-drivers)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mesa-vulkan-drivers >/dev/null
  else
    echo "setup: no Vulkan driver found and cannot apt-get it; only other adapters will be used" >&2
  fi
fi

PY="${PYTHON:-python3}"
VENV="$ROOT/.venv"
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
export PATH="$VENV/bin:$PATH"
export PIP_DISABLE_PIP_VERSION_CHECK=1
extras="${POOLGPU_EXTRAS:-test}"
pip_quietly() {  # pip's output only when it fails
  local log; log="$(mktemp)"
  if ! python -m pip install -q "$@" >"$log" 2>&1; then cat "$log" >&2; rm -f "$log"; return 1; fi
  rm -f "$log"
}
# Dependencies first (cached after the first run), then poolgpu itself as a fresh wheel so
# the tests run what `pip install .` gives a user, shaders included.
pip_quietly "$ROOT[$extras]"
pip_quietly --force-reinstall --no-deps "$ROOT"
