#!/usr/bin/env bash
# The bench on a GPU machine that has Python (3.12 expected) with PyTorch for CUDA but cannot
# reach a package index; see docs/performance-method.md.
#   bash scripts/gpu_bench.sh prepare        # here: wheels (poolgpu, wgpu and what it needs)
#                                            # and the Vulkan loader into bench/results/carry
#   bash scripts/gpu_bench.sh tests [ARGS]   # there: the suite on its Vulkan adapter (ARGS: pytest's)
#   bash scripts/gpu_bench.sh bench [ARGS]   # there: the bench with the torch-cuda peers (ARGS: the bench's)
# There, results go under $OUT (default bench/results/gpu): tests.log, bench.log, the run as
# <date>-<gpu>.json (commit it as bench/gpu/<date>-<gpu>.json), its table and plot.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CARRY="$ROOT/bench/results/carry"  # (bench/results/ is not committed)
PY_THERE="${POOLGPU_GPU_PYTHON_VERSION:-3.12}"
OUT="${OUT:-$ROOT/bench/results/gpu}"
mode="${1:-}"
shift || true

prepare() {
  local py="${PYTHON:-$ROOT/.venv/bin/python}"
  [ -x "$py" ] || py=python3
  rm -rf "$CARRY" && mkdir -p "$CARRY/whl" "$CARRY/deb" "$CARRY/apt/lists/partial"
  "$py" -m pip wheel -q --no-deps -w "$CARRY/whl" "$ROOT"
  local wgpu; wgpu="$("$py" -c 'from importlib.metadata import version; print(version("wgpu"))')"
  # wgpu's wheel is the same for every Python; cffi's is built per Python version
  "$py" -m pip download -q --no-deps --only-binary=:all: --python-version "$PY_THERE" --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d "$CARRY/whl" "wgpu==$wgpu" cffi pycparser rendercanvas
  echo "$PY_THERE" >"$CARRY/python-version"
  # The Vulkan loader, in case the machine has none (private lists: /etc/apt stays as it is)
  local apt=(-o "Dir::State::Lists=$CARRY/apt/lists" -o "Dir::Cache=$CARRY/apt" -o Debug::NoLocking=1
             -o APT::Architecture=amd64 -o APT::Architectures=amd64)
  apt-get "${apt[@]}" -qq update && (cd "$CARRY/deb" && apt-get "${apt[@]}" -qq download libvulkan1) ||
    echo "gpu_bench: could not download libvulkan1; the machine's own loader will have to do" >&2
  rm -rf "$CARRY/apt"
  du -sh "$CARRY"
  echo "Now, on the GPU machine, from the repository's root, with bench/results/carry carried:"
  echo "  bash scripts/gpu_bench.sh tests    and    bash scripts/gpu_bench.sh bench"
}

setup_there() {
  [ -d "$CARRY/whl" ] || { echo "gpu_bench: no $CARRY: run 'bash scripts/gpu_bench.sh prepare' where pip works" >&2; exit 2; }
  local have; have="$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
  echo "gpu_bench: python3 is $have ($(command -v python3)); the wheels were fetched for $(cat "$CARRY/python-version")"
  python3 -c 'import torch; print("gpu_bench: torch", torch.__version__, "CUDA", torch.version.cuda,
                                  torch.cuda.get_device_name() if torch.cuda.is_available() else "(no CUDA device)")' ||
    echo "gpu_bench: no torch here: the torch-cuda peers will be reported unavailable" >&2
  if ! ldconfig -p | grep -q libvulkan.so.1; then
    for deb in "$CARRY"/deb/*.deb; do dpkg -x "$deb" /; done
    ldconfig
  fi
  if ! compgen -G "/usr/share/vulkan/icd.d/*.json" >/dev/null && ! compgen -G "/etc/vulkan/icd.d/*.json" >/dev/null \
     && [ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]; then
    export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  fi
  local wheels=("$CARRY"/whl/poolgpu-*.whl "$CARRY"/whl/wgpu-*.whl "$CARRY"/whl/rendercanvas-*.whl)
  python3 -c 'import cffi' 2>/dev/null || wheels+=("$CARRY"/whl/cffi-*.whl "$CARRY"/whl/pycparser-*.whl)
  if ! python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/poolgpu-site "${wheels[@]}"; then
    echo "gpu_bench: the wheels do not install on Python $have (cffi's is built per version):" \
         "run 'POOLGPU_GPU_PYTHON_VERSION=$have bash scripts/gpu_bench.sh prepare' here first" >&2
    exit 2
  fi
  export PYTHONPATH="/tmp/poolgpu-site${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
  export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp/poolgpu-xdg}"
  mkdir -p "$XDG_RUNTIME_DIR" "$OUT" && chmod 700 "$XDG_RUNTIME_DIR"
  python3 -c 'import poolgpu as pg; [print("gpu_bench: adapter", a["backend"], a["name"], a["description"]) for a in pg.list_adapters()]'
}

case "$mode" in
  prepare) prepare ;;
  tests)
    setup_there
    cd "$ROOT"
    # every test on the Vulkan adapter; the wheel-building test needs a package index
    POOLGPU_TEST_BACKENDS=vulkan python3 -m pytest tests -q -p no:cacheprovider \
      --deselect tests/test_packaging.py::test_the_wheel_carries_every_shader "$@" 2>&1 | tee "$OUT/tests.log"
    ;;
  bench)
    setup_there
    cd "$ROOT"
    # PyTorch CUDA on every row (eager), torch.compile and ORT CPU on float32 NCHW; the run
    # is kept as $OUT/<date>-<gpu>.json; the clocks warm up for 0.3 s before each row
    status=0
    python3 -m bench --backend vulkan --peer torch-cuda,torch-cuda-compile,ort-cpu --warmup-s 0.3 \
      --out /tmp/poolgpu-bench --save-gpu-run "$OUT" "$@" 2>&1 | tee "$OUT/bench.log" || status=$?
    cp /tmp/poolgpu-bench/bench.md /tmp/poolgpu-bench/bench.png "$OUT"/ 2>/dev/null || true
    cat /tmp/poolgpu-bench/peer-*.log >"$OUT/peers.log" 2>/dev/null || true
    exit "$status"
    ;;
  *) sed -n '2,9p' "$0"; exit 2 ;;
esac
