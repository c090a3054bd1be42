#!/usr/bin/env bash
# The bench command: set-up on a fresh machine (the bench's extras and peers included), then
# the bench on the default adapter. Options go to the bench: bash scripts/bench.sh --help.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

export POOLGPU_EXTRAS=bench
source "$HERE/setup.sh"  # (ROOT, PY, pip_quietly; a system Vulkan driver where there is none)

# Dawn, under two peers, needs Mesa >= 25 for lavapipe: on Debian 12, scripts/mesa25.sh unpacks
# bookworm-backports' driver privately for them (the system's packages stay as they are).
bash "$HERE/mesa25.sh" || true

# onnxruntime-webgpu is another wheel of the same `onnxruntime` module as the CPU one, so it
# gets a virtual environment of its own; the bench runs it in a worker process from there.
ORT_WEBGPU_VENV="$ROOT/.venv-ort-webgpu"
if ! { { [ -x "$ORT_WEBGPU_VENV/bin/python" ] || "$PY" -m venv "$ORT_WEBGPU_VENV"; } &&
       (PATH="$ORT_WEBGPU_VENV/bin:$PATH" && pip_quietly numpy onnxruntime-webgpu==1.27.0); }; then
  echo "bench: onnxruntime-webgpu could not be installed; its peer will be reported unavailable" >&2
fi

cd "$ROOT"
exec python -m bench --ort-webgpu-python "$ORT_WEBGPU_VENV/bin/python" "$@"
