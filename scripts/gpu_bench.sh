#!/usr/bin/env bash
# The bench on a GPU machine that has Python (3.12 expected) with PyTorch for CUDA but cannot
# reach a package index; see docs/performance-method.md ("On a GPU").
#   bash scripts/gpu_bench.sh prepare        # here: wheels (wgpu and what it needs), the Vulkan
#                                            # loader and glvnd, the commit, and the software
#                                            # adapter's results of the correctness check, into
#                                            # bench/results/carry
#   bash scripts/gpu_bench.sh all            # there, in one go (8 minutes): install what was
#                                            # carried, the preflight (stops in seconds without an
#                                            # NVIDIA GPU), the correctness check, the bench at GPU
#                                            # scale resuming the kept runs, the Tuning sweep
#   bash scripts/gpu_bench.sh check          # there: the correctness check alone
#   bash scripts/gpu_bench.sh bench [ARGS]   # there: the bench alone (ARGS: the bench's)
#   bash scripts/gpu_bench.sh sweep [ARGS]   # there: the Tuning sweep alone (ARGS: bench.sweep's)
#   bash scripts/gpu_bench.sh tests [ARGS]   # there: the suite on the Vulkan adapter (ARGS: pytest's)
# There, poolgpu runs from the tree that travelled (src/ first on the path); results go under
# $OUT (default bench/results/gpu): the run as <date>-<gpu>.json and the sweep's table as
# tuning-<date>-<gpu>.json (commit both under bench/gpu/), check.json, bench.md, the logs.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CARRY="${POOLGPU_GPU_CARRY:-$ROOT/bench/results/carry}"  # (bench/results/ is not committed)
DOWNLOADS="$ROOT/.cache/gpu-carry"  # what prepare downloaded, kept for the next time (.cache is not committed)
CARRY_LIMIT=$((60 << 20))  # what travels with a GPU machine's command: 64 MiB, the repository included
PY_THERE="${POOLGPU_GPU_PYTHON_VERSION:-3.12}"
OUT="${OUT:-$ROOT/bench/results/gpu}"
PYTHON="${POOLGPU_GPU_PYTHON:-python3}"  # the machine's Python (there: the one with PyTorch for CUDA)
DRY_RUN="${POOLGPU_GPU_DRY_RUN:-}"  # 1: a rehearsal on a CPU adapter (tests/test_gpu_run.py)
WORK="${POOLGPU_GPU_WORK:-/tmp/poolgpu-gpu}"  # scratch there: the installed wheels, the bench's extra outputs
# The packages NVIDIA's Vulkan driver needs beside it: the loader, and glvnd (its
# libGLX_nvidia.so.0 links libGLdispatch.so.0)
LOADER_DEBS=(libvulkan1 libglvnd0 libegl1 libgl1 libglx0 libopengl0 libgles2)
NVIDIA_ICD=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
NVIDIA_EGL=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
mode="${1:-}"
shift || true
if [ -n "$DRY_RUN" ]; then
  # The same steps on tiny sizes, a few cases, PyTorch's CPU build in place of CUDA
  # (torch.compile by dynamo alone: inductor's C++ would take minutes here), any Vulkan
  # adapter taken for NVIDIA's, a few cases of the correctness check.
  : "${POOLGPU_GPU_RUN_BENCH_ARGS=--tiny --cases A,C --ops max,max_bwd --reps 2 --budget 0}"
  : "${POOLGPU_GPU_RUN_SWEEP_ARGS=--tiny --cases G --ops max --rounds 2}"
  : "${POOLGPU_GPU_CHECK_CASES:=6}"
  : "${POOLGPU_GPU_RUN_S:=300}" "${POOLGPU_GPU_BENCH_S:=150}" "${POOLGPU_GPU_SWEEP_S:=60}"
  : "${POOLGPU_GPU_FAKE_NVIDIA:=1}"
  export POOLGPU_BENCH_TORCH_DEVICE=cpu POOLGPU_BENCH_TORCH_COMPILE_BACKEND=eager POOLGPU_GPU_FAKE_NVIDIA
fi

# -- prepare: here, where pip and apt-get reach their indexes ------------------------------
download_once() {  # download_once PATTERN COMMAND...: COMMAND fills $DOWNLOADS unless PATTERN matches there
  compgen -G "$DOWNLOADS/$1" >/dev/null || (cd "$DOWNLOADS" && "${@:2}")
  compgen -G "$DOWNLOADS/$1" >/dev/null || { echo "gpu_bench: nothing matches $1 after downloading it" >&2; return 1; }
}

prepare() {
  local py="${POOLGPU_GPU_PREPARE_PYTHON:-$ROOT/.venv/bin/python}"
  [ -x "$py" ] || py=python3
  rm -rf "$CARRY" && mkdir -p "$CARRY/whl" "$CARRY/deb" "$DOWNLOADS/apt/lists/partial"
  local wgpu; wgpu="$("$py" -c 'from importlib.metadata import version; print(version("wgpu"))')"
  # What the machine lacks beside PyTorch, NumPy and pytest (docs/performance-method.md):
  # wgpu (one wheel for every Python), cffi (built per Python version), pycparser, rendercanvas.
  # poolgpu itself is not among them: it runs from the tree that travels with the command.
  local pip_there=("$py" -m pip download -q --retries 1 --timeout 20 --no-deps --only-binary=:all: --python-version "$PY_THERE"
                   --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64
                   --platform manylinux2014_x86_64 -d .)
  download_once "wgpu-$wgpu-*.whl" "${pip_there[@]}" "wgpu==$wgpu"
  download_once "cffi-*-cp${PY_THERE//./}-*.whl" "${pip_there[@]}" cffi
  download_once "pycparser-*.whl" "${pip_there[@]}" pycparser
  download_once "rendercanvas-*.whl" "${pip_there[@]}" rendercanvas
  cp "$DOWNLOADS"/wgpu-"$wgpu"-*.whl "$DOWNLOADS"/cffi-*-cp"${PY_THERE//./}"-*.whl "$DOWNLOADS"/pycparser-*.whl \
     "$DOWNLOADS"/rendercanvas-*.whl "$CARRY/whl/"
  # The Vulkan loader and glvnd, for a machine without them (private lists: /etc/apt stays as it is)
  local apt=(-o "Dir::State::Lists=$DOWNLOADS/apt/lists" -o "Dir::Cache=$DOWNLOADS/apt" -o Debug::NoLocking=1
             -o APT::Architecture=amd64 -o APT::Architectures=amd64)
  local deb
  for deb in "${LOADER_DEBS[@]}"; do
    if download_once "${deb}_*.deb" sh -c 'apt-get "$@" -qq update && apt-get "$@" -qq download "'"$deb"'"' apt "${apt[@]}"; then
      cp "$DOWNLOADS/${deb}"_*.deb "$CARRY/deb/"
    else
      echo "gpu_bench: could not download $deb; the machine's own will have to do" >&2
    fi
  done
  echo "$PY_THERE" >"$CARRY/python-version"
  # What the run records as its commit (the repository's history does not travel)
  (cd "$ROOT" && "$py" -c 'import json; from bench import provenance; print(json.dumps(provenance.describe()))') \
    >"$CARRY/provenance.json"
  # The correctness check's reference: every portable case on the Vulkan software adapter
  (cd "$ROOT" && XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp}" "$py" -m bench.gpu_check --backend vulkan \
     --write "$CARRY/check.npz" ${POOLGPU_GPU_CHECK_CASES:+--count "$POOLGPU_GPU_CHECK_CASES"})
  (cd "$CARRY" && find . -type f ! -name MANIFEST -printf '%s %p\n' | sort -k2 >MANIFEST)
  local size; size="$(du -sb "$CARRY" | cut -f1)"
  if [ "$size" -gt "$CARRY_LIMIT" ]; then
    echo "gpu_bench: $CARRY holds $size bytes, more than a GPU machine's command carries ($CARRY_LIMIT)" >&2
    exit 1
  fi
  echo "gpu_bench: $CARRY ready ($((size >> 20)) MiB):"
  sed 's/^/  /' "$CARRY/MANIFEST"
}

# -- there: what every mode does first ----------------------------------------------------
setup_there() {
  [ -d "$CARRY/whl" ] || { echo "gpu_bench: no $CARRY: run 'bash scripts/gpu_bench.sh prepare' where pip works" >&2; exit 2; }
  local have; have="$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
  echo "gpu_bench: $PYTHON is Python $have ($(command -v "$PYTHON")); the wheels were fetched for $(cat "$CARRY/python-version")"
  "$PYTHON" -c 'import torch; print("gpu_bench: torch", torch.__version__, "CUDA", torch.version.cuda,
                                     torch.cuda.get_device_name() if torch.cuda.is_available() else "(no CUDA device)")' ||
    echo "gpu_bench: no torch here: the torch-cuda peers will be reported unavailable" >&2
  local deb
  for deb in "$CARRY"/deb/*.deb; do
    [ -e "$deb" ] || continue
    if [ -n "$DRY_RUN" ]; then  # unpacked beside, to see that it would
      mkdir -p "$WORK/sysroot" && dpkg -x "$deb" "$WORK/sysroot"
    else
      dpkg -x "$deb" /
    fi
  done
  if [ -n "$DRY_RUN" ]; then
    compgen -G "$WORK/sysroot/usr/lib/*/libvulkan.so.1" >/dev/null && compgen -G "$WORK/sysroot/usr/lib/*/libGLdispatch.so.0" >/dev/null ||
      { echo "gpu_bench: the carried packages hold no libvulkan.so.1 or libGLdispatch.so.0" >&2; exit 2; }
    echo "gpu_bench: (dry run) the carried packages unpack libvulkan.so.1 and libGLdispatch.so.0"
  else
    ldconfig
  fi
  # NVIDIA's driver wherever it is installed, whatever other drivers are listed
  if [ -f "$NVIDIA_ICD" ]; then export VK_DRIVER_FILES="$NVIDIA_ICD"; fi
  if [ -f "$NVIDIA_EGL" ]; then export __EGL_VENDOR_LIBRARY_FILENAMES="$NVIDIA_EGL"; fi
  local wheels=("$CARRY"/whl/wgpu-*.whl "$CARRY"/whl/rendercanvas-*.whl)
  "$PYTHON" -c 'import cffi' 2>/dev/null || wheels+=("$CARRY"/whl/cffi-*.whl "$CARRY"/whl/pycparser-*.whl)
  rm -rf "$WORK/site"
  if ! "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --target "$WORK/site" "${wheels[@]}"; then
    echo "gpu_bench: the wheels do not install on Python $have (cffi's is built per version):" \
         "run 'POOLGPU_GPU_PYTHON_VERSION=$have bash scripts/gpu_bench.sh prepare' here first" >&2
    exit 2
  fi
  # poolgpu from the tree that travelled, before anything installed
  export PYTHONPATH="$ROOT/src:$WORK/site${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
  export POOLGPU_PROVENANCE="$CARRY/provenance.json"
  export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp/poolgpu-xdg}"
  mkdir -p "$XDG_RUNTIME_DIR" "$OUT" && chmod 700 "$XDG_RUNTIME_DIR"
}

preflight() {  # stops the run within 30 s unless a discrete NVIDIA GPU is listed on Vulkan
  (cd "$ROOT" && timeout -k 5 30 "$PYTHON" -m bench.preflight --source "$ROOT/src")
}

# -- the steps (each mode, and `all`) -------------------------------------------------
# At GPU scale, resuming the runs kept in bench/gpu/ (what they lack first); PyTorch CUDA eager
# on every row, torch.compile (warmed once, inductor compiling each shape) on a few.
COMPILE_ROWS="A N=*/max/float32/nchw,A N=*/avg/float32/nchw,A N=*/max_bwd/float32/nchw,C N=*/adaptive_avg/float32/nchw"
BENCH_ARGS=(--backend vulkan --scale --resume "$ROOT/bench/gpu" --peer torch-cuda,torch-cuda-compile
            --compile-rows "$COMPILE_ROWS" --reps 3 --warmup-s 0.1 --budget 0.2)
SWEEP_ARGS=(--backend vulkan --warmup-s 0.2 --rounds 4)  # (0.05 s left the first entries' clocks settling)
# (the wheel-building test needs a package index; the rehearsal of this script is for machines without a GPU)
TESTS_ARGS=(tests -q -p no:cacheprovider -m "not slow" --ignore tests/test_gpu_run.py
            --deselect tests/test_packaging.py::test_the_wheel_carries_every_shader)

run_check() {  # run_check SECONDS: every portable case against the software adapter's bits
  local seconds="$1"
  (cd "$ROOT" && timeout -s INT -k 10 "$seconds" "$PYTHON" -m bench.gpu_check --backend vulkan \
     --expected "$CARRY/check.npz" --deadline-s "$((seconds - 10))" --json "$OUT/check.json")
}

run_tests() {  # run_tests SECONDS ARGS...: the suite on the Vulkan adapter, stopped (SIGINT: it reports) at SECONDS
  local seconds="$1"; shift
  local parallel=()
  "$PYTHON" -c 'import xdist' 2>/dev/null && parallel=(-n "$(($(nproc) > 12 ? 12 : $(nproc)))")
  (cd "$ROOT" && POOLGPU_TEST_BACKENDS=vulkan POOLGPU_REQUIRE_BACKENDS=vulkan timeout -s INT -k 15 "$seconds" \
     "$PYTHON" -m pytest "${TESTS_ARGS[@]}" "${parallel[@]}" "$@") 2>&1 | tee "$OUT/tests.log"
}

run_bench() {  # run_bench SECONDS ARGS...: stopped at SECONDS (its rows so far stay in its JSON)
  local seconds="$1"; shift
  local extra=(); [ -n "${POOLGPU_GPU_RUN_BENCH_ARGS:-}" ] && read -r -a extra <<<"$POOLGPU_GPU_RUN_BENCH_ARGS"
  local status=0
  (cd "$ROOT" && timeout -s INT -k 15 "$seconds" "$PYTHON" -m bench "${BENCH_ARGS[@]}" --out "$WORK/bench" \
     --json "$OUT/run.json" --md "$OUT/bench.md" --png "$WORK/bench/bench.png" "${extra[@]}" "$@") || status=$?
  cat "$WORK"/bench/peer-*.log >"$OUT/peers.log" 2>/dev/null || true
  keep_as "$OUT/run.json" ""
  return "$status"
}

run_sweep() {  # run_sweep SECONDS ARGS...
  local seconds="$1"; shift
  local extra=(); [ -n "${POOLGPU_GPU_RUN_SWEEP_ARGS:-}" ] && read -r -a extra <<<"$POOLGPU_GPU_RUN_SWEEP_ARGS"
  local status=0
  (cd "$ROOT" && timeout -s INT -k 15 "$seconds" "$PYTHON" -m bench.sweep "${SWEEP_ARGS[@]}" \
     --json "$OUT/tuning.json" "${extra[@]}" "$@") || status=$?
  keep_as "$OUT/tuning.json" tuning-
  return "$status"
}

keep_as() {  # keep_as JSON PREFIX: renamed PREFIX<date>-<gpu>.json beside it, as bench/gpu/ keeps it
  [ -s "$1" ] || { echo "gpu_bench: no $1" >&2; return 0; }
  local name; name="$(cd "$ROOT" && "$PYTHON" -m bench.report --kept-name "$1" --prefix "$2")" || return 0
  mv "$1" "$(dirname "$1")/$2$name" && echo "gpu_bench: kept $(dirname "$1")/$2$name"
}

# `all`: everything, in one command on a fresh GPU machine, within POOLGPU_GPU_RUN_S seconds
# (480 by default: such a machine is held for 15 minutes at most, its start included, and runs
# one command for at most 10; docs/performance-method.md): the preflight (30 s at most), the
# correctness check (40 s), then the bench (the evidence the machine is there for, 2/3 of
# the time) and the sweep in the time left, each under its own limit so that the later ones
# keep theirs.
CHECK_S=40
run_all() {
  mkdir -p "$OUT" "$WORK"
  all_steps 2>&1 | tee "$OUT/run.log"
  return "${PIPESTATUS[0]}"
}

all_steps() {
  local total_s="${POOLGPU_GPU_RUN_S:-480}"
  local bench_s="${POOLGPU_GPU_BENCH_S:-$((total_s * 2 / 3))}"
  local failed=() started=$SECONDS
  echo "gpu_bench all: $(date -Is), $(uname -n), limits: ${total_s} s in all, bench ${bench_s} s${DRY_RUN:+ (dry run)}"
  step() { echo; echo "== $1 ($((SECONDS - started)) s in)"; }
  step install
  setup_there
  step preflight
  if ! preflight; then
    echo "gpu_bench all: FAILED: the preflight (above): nothing measured"
    return 3
  fi
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv || true
  step "correctness: the portable cases against the software adapter's bits"
  run_check "$CHECK_S" || failed+=("check (see check.json)")
  step "bench at GPU scale, resuming bench/gpu/, PyTorch CUDA on every row"
  run_bench "$bench_s" --deadline-s "$((bench_s - 40))" >"$OUT/bench.log" 2>&1 || failed+=("bench (see bench.log)")
  tail -n 25 "$OUT/bench.log"
  local sweep_s="${POOLGPU_GPU_SWEEP_S:-$((total_s - (SECONDS - started) - 15))}"
  step "Tuning sweep at GPU scale, for at most ${sweep_s} s"
  if [ "$sweep_s" -gt 30 ]; then
    run_sweep "$sweep_s" --deadline-s "$((sweep_s - 25))" || failed+=(sweep)
  else
    echo "gpu_bench: no time left for the sweep"
  fi
  step "done"
  local files; files="$(find "$OUT" -type f | wc -l)"
  find "$OUT" -type f -printf '  %p %s bytes\n' | sort
  [ "$files" -le 8 ] || failed+=("$files files under \$OUT, more than the 8 that come back")
  if [ "${#failed[@]}" -gt 0 ]; then
    echo "gpu_bench all: FAILED: ${failed[*]}"
    return 1
  fi
  echo "gpu_bench all: copy \$OUT's <date>-<gpu>.json and tuning-<date>-<gpu>.json into bench/gpu/," \
       "run python -m bench.report --publish, commit them with what it wrote"
}

case "$mode" in
  prepare) prepare ;;
  all) run_all ;;
  check)
    setup_there && preflight
    run_check 100000
    ;;
  tests)
    setup_there && preflight
    run_tests 100000 "$@"
    ;;
  bench)
    setup_there && preflight
    run_bench 100000 "$@"
    ;;
  sweep)
    setup_there && preflight
    run_sweep 100000 "$@"
    ;;
  *) sed -n '2,18p' "$0"; exit 2 ;;
esac
