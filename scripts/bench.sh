#!/usr/bin/env bash
# The bench command: set-up on a fresh machine (the bench's extras and peers included), then
# the bench on the default adapter. Options go to the bench: bash scripts/bench.sh --help.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# Dawn, the WebGPU implementation under two peers (tinygrad's WEBGPU backend and ONNX
# Runtime's WebGPU provider), needs Mesa >= 25 for the software Vulkan driver (lavapipe).
# Debian 12 ships Mesa 22.3.6 and bookworm-backports 25.x: as root on Debian 12, install it
# from there. Elsewhere nothing is changed, and the bench reports those peers unavailable
# when the driver is too old.
mesa_major() {
  dpkg-query -W -f='${Version}' mesa-vulkan-drivers 2>/dev/null | sed -E 's/^[0-9]+://; s/\..*//' || true
}
codename="$( (. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}") || true)"
major="$(command -v dpkg-query >/dev/null 2>&1 && mesa_major || true)"
if [ "$codename" = bookworm ] && { [ -z "$major" ] || [ "$major" -lt 25 ]; }; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "bench: the Dawn-based peers need Mesa >= 25 (lavapipe); installing mesa-vulkan-drivers from bookworm-backports"
    if ! grep -rqs "bookworm-backports" /etc/apt/sources.list /etc/apt/sources.list.d/; then
      echo "bench: adding the bookworm-backports source (/etc/apt/sources.list.d/bookworm-backports.sources)"
      printf '%s\n' "Types: deb" "URIs: http://deb.debian.org/debian" "Suites: bookworm-backports" \
        "Components: main" "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg" \
        >/etc/apt/sources.list.d/bookworm-backports.sources
    fi
    if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
           apt-get install -y -qq -t bookworm-backports mesa-vulkan-drivers >/dev/null; }; then
      echo "bench: could not install Mesa from bookworm-backports; the Dawn-based peers will be reported unavailable" >&2
    fi
  else
    echo "bench: Mesa ${major:-?} is older than 25 and apt-get needs root; the Dawn-based peers will be reported unavailable" >&2
  fi
fi

export POOLGPU_EXTRAS=bench
source "$HERE/setup.sh"

# onnxruntime-webgpu is another wheel of the same `onnxruntime` module as the CPU one, so it
# gets a virtual environment of its own; the bench runs it in a worker process from there.
ORT_WEBGPU_VENV="$ROOT/.venv-ort-webgpu"
if ! { { [ -x "$ORT_WEBGPU_VENV/bin/python" ] || "$PY" -m venv "$ORT_WEBGPU_VENV"; } &&
       (PATH="$ORT_WEBGPU_VENV/bin:$PATH" && pip_quietly numpy onnxruntime-webgpu==1.27.0); }; then
  echo "bench: onnxruntime-webgpu could not be installed; its peer will be reported unavailable" >&2
fi

cd "$ROOT"
exec python -m bench --ort-webgpu-python "$ORT_WEBGPU_VENV/bin/python" "$@"
