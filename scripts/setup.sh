# Sourced by test.sh and bench.sh: everything a fresh machine lacks, idempotent, quiet when
# everything is there.
#   - a private XDG_RUNTIME_DIR (silences Mesa's warnings)
#   - on Debian and Ubuntu, the system packages that are missing (installed as root with
#     apt-get, named otherwise):
#       mesa-vulkan-drivers   Mesa's software Vulkan adapter (lavapipe), when no Vulkan driver is installed
#       libegl1 libegl-mesa0 libgl1-mesa-dri
#                             Mesa's software OpenGL adapter (llvmpipe) through EGL, as wgpu opens
#                             OpenGL: the EGL loader, Mesa's EGL and its llvmpipe driver
#       python3-venv          when Python cannot make a virtual environment
#   - the virtual environment .venv (or POOLGPU_VENV) with poolgpu (built as a wheel, as
#     users get it) and the extras named in POOLGPU_EXTRAS (default: test); PYTHON names the
#     Python that makes it (default python3)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-python3}"
VENV="${POOLGPU_VENV:-$ROOT/.venv}"

if [ -z "${XDG_RUNTIME_DIR:-}" ] || [ ! -w "${XDG_RUNTIME_DIR}" ]; then
  export XDG_RUNTIME_DIR="${TMPDIR:-/tmp}/poolgpu-xdg-$(id -u)"
fi
mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"

# -- system packages (Debian, Ubuntu) ---------------------------------------------------
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
can_make_venv() {  # Debian's Python makes a venv only with python3-venv (ensurepip)
  local probe; probe="$(mktemp -d)"
  if "$PY" -m venv "$probe/v" >/dev/null 2>&1; then rm -rf "$probe"; return 0; fi
  rm -rf "$probe"; return 1
}
missing=()
if command -v dpkg-query >/dev/null 2>&1; then
  # (either directory may be missing: ask for any match at all)
  if ! compgen -G "/usr/share/vulkan/icd.d/*.json" >/dev/null && ! compgen -G "/etc/vulkan/icd.d/*.json" >/dev/null; then
    missing+=(mesa-vulkan-drivers)
  fi
  for pkg in libegl1 libegl-mesa0 libgl1-mesa-dri; do
    installed "$pkg" || missing+=("$pkg")
  done
  if [ ! -x "$VENV/bin/python" ] && ! can_make_venv; then
    missing+=(python3-venv)
  fi
fi
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing ${missing[*]} (apt-get)"
    if ! { apt-get update -qq &&
           DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; }; then
      echo "setup: apt-get could not install ${missing[*]}; going on without them" >&2
    fi
  else
    echo "setup: missing system packages: ${missing[*]}; install them as root:" >&2
    echo "setup:   apt-get install ${missing[*]}" >&2
    echo "setup: going on without them (adapters they provide will not be found)" >&2
  fi
fi

# -- the virtual environment --------------------------------------------------------------
if [ ! -x "$VENV/bin/python" ]; then
  rm -rf "$VENV"  # a venv left half-made by a failed attempt
  if ! "$PY" -m venv "$VENV"; then
    if can_make_venv; then
      echo "setup: could not make the virtual environment $VENV (see above)" >&2
    else
      echo "setup: $PY cannot make a virtual environment; on Debian or Ubuntu: apt-get install python3-venv" >&2
    fi
    exit 1
  fi
fi
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
