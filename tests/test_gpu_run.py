"""scripts/gpu_bench.sh rehearsed here: ``prepare`` carries what a GPU machine without a
package index lacks, and ``all`` (POOLGPU_GPU_DRY_RUN=1: tiny sizes, a few cases,
PyTorch's CPU build standing in for CUDA) runs every step a GPU machine runs, through the
same commands, paths and JSON, leaving under $OUT what comes back from such a machine."""

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

import poolgpu as pg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import report  # noqa: E402
from bench.cases import SCALE_BATCH  # noqa: E402

SCRIPT = ROOT / "scripts" / "gpu_bench.sh"
MAX_FILES, MAX_BYTES = 8, 16 << 20  # what comes back from such a machine's $OUT


def _run(mode: str, env: dict, timeout: int) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPT), mode], env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="module")
def carried(tmp_path_factory):
    """What ``prepare`` carries (downloads kept in .cache/gpu-carry: only the first run needs
    PyPI and Debian), the correctness check's reference cut to a few cases."""
    pytest.importorskip("torch")
    carry = tmp_path_factory.mktemp("carry")
    env = dict(os.environ, POOLGPU_GPU_CARRY=str(carry), POOLGPU_GPU_PREPARE_PYTHON=sys.executable,
               POOLGPU_GPU_CHECK_CASES="6")
    prepared = _run("prepare", env, timeout=600)
    if prepared.returncode != 0:
        pytest.skip(f"prepare could not download what it carries: {prepared.stderr.strip()[-300:]}")
    return carry


def test_prepare_carries_the_wheels_the_loaders_the_commit_and_the_check_within_the_limit(carried):
    names = {p.name for p in carried.rglob("*") if p.is_file()}
    for pattern in (r"wgpu-.*-py3-none-manylinux.*\.whl", r"cffi-.*-cp312-.*\.whl", r"pycparser-.*\.whl",
                    r"rendercanvas-.*\.whl", r"provenance\.json", r"check\.npz"):
        assert any(re.fullmatch(pattern, name) for name in names), (pattern, names)
    # NVIDIA's Vulkan driver needs the loader and glvnd beside it
    for package in ("libvulkan1", "libglvnd0", "libegl1", "libgl1", "libglx0", "libopengl0", "libgles2"):
        assert any(re.fullmatch(rf"{package}_.*_amd64\.deb", name) for name in names), package
    assert not any(name.startswith("poolgpu-") for name in names)  # poolgpu runs from the tree that travels
    assert (carried / "python-version").read_text().strip() == "3.12"
    provenance = json.loads((carried / "provenance.json").read_text())
    assert re.fullmatch(r"[0-9a-f]{40}", provenance["commit"]) and provenance["shaders"]
    manifest = (carried / "MANIFEST").read_text().splitlines()
    assert sum(int(line.split()[0]) for line in manifest) < 60 << 20  # the repository travels with it, 64 MiB in all


def _rehearsal_env(carried, tmp_path, **extra) -> dict:
    return dict(os.environ, POOLGPU_GPU_CARRY=str(carried), POOLGPU_GPU_DRY_RUN="1", OUT=str(tmp_path / "out"),
                POOLGPU_GPU_WORK=str(tmp_path / "work"), POOLGPU_GPU_PYTHON=sys.executable, **extra)


def test_all_runs_end_to_end_and_leaves_what_comes_back(carried, tmp_path):
    out, work = tmp_path / "out", tmp_path / "work"
    done = _run("all", _rehearsal_env(carried, tmp_path), timeout=500)
    log = (out / "run.log").read_text()
    assert done.returncode == 0, log[-3000:]

    # at most 8 files of at most 16 MiB, named plainly, no deeper than two folders
    files = [p for p in out.rglob("*") if p.is_file()]
    assert len(files) <= MAX_FILES and all(p.stat().st_size <= MAX_BYTES for p in files), files
    assert all(re.fullmatch(r"[A-Za-z0-9._-]+", p.name) and len(p.relative_to(out).parts) <= 3 for p in files)
    runs = [p for p in files if re.fullmatch(r"\d{4}-\d\d-\d\d-.+\.json", p.name)]
    tunings = [p for p in files if p.name.startswith(report.TUNING_PREFIX)]
    assert len(runs) == 1 and len(tunings) == 1, files
    assert {p.name for p in files} - {runs[0].name, tunings[0].name} == {
        "run.log", "bench.log", "bench.md", "peers.log", "check.json"}

    # the preflight, then poolgpu from the tree that travelled, its commit and shaders recorded
    assert "preflight: ok (POOLGPU_GPU_FAKE_NVIDIA=1" in log and f"poolgpu {pg.__version__} from {ROOT}/src/poolgpu" in log
    results = json.loads(runs[0].read_text())
    assert results["provenance"]["commit"] == json.loads((carried / "provenance.json").read_text())["commit"]
    assert results["provenance"]["poolgpu_from"] == str(ROOT / "src" / "poolgpu")

    # the correctness check: every carried case, the same bits as the software adapter's
    check = json.loads((out / "check.json").read_text())
    assert len(check["cases"]) == 6 and check["counts"] == {"same": 6}, check["counts"]

    # the run, named as bench/gpu/ keeps it, at GPU scale first, resuming what bench/gpu/ keeps
    assert report.is_gpu_run_name(runs[0].name, results) and "partial" not in results
    assert results["settings"]["scale"] and results["settings"]["peers"] == ["torch-cuda", "torch-cuda-compile"]
    resumed = results["resumed"]
    assert results["settings"]["resume"] == resumed["kept_in"] == str(ROOT / "bench" / "gpu")
    assert resumed["missing"] + resumed["changed"] + resumed["current"] > 0
    rows = [r for r in results["rows"] if r["status"] == "ok"]
    assert {(r["dtype"], r["layout"]) for r in rows} == {("float32", "nchw"), ("float16", "nchw"), ("float32", "nhwc")}
    scaled = [r for r in rows if r.get("scaled")]
    assert scaled and rows[: len(scaled)] == scaled and len(scaled) == len(rows) - len(scaled)  # bandwidth rows first
    assert all(r["batch"] == SCALE_BATCH[r["case"]] for r in scaled) and {r["case"] for r in scaled} == {"A", "C"}
    assert all(re.fullmatch(r"[0-9a-f]{16}", r["kernels"]) for r in rows)
    for row in rows:  # PyTorch eager on every row, torch.compile on the few named
        assert row["peers"]["torch-cuda"]["status"] == "ok" and row["peers"]["torch-cuda"]["check"] == "ok", row["op"]
        compiled = bool(row.get("scaled")) and (row["case"], row["dtype"], row["layout"]) == ("A", "float32", "nchw")
        assert ("torch-cuda-compile" in row["peers"]) == compiled, (row["case"], row["op"])
        if compiled:
            assert row["peers"]["torch-cuda-compile"]["status"] == "ok"
    assert all(way["status"] == "ok" for way in results["ceiling"].values() if isinstance(way, dict)), results["ceiling"]
    assert "POOLGPU_BENCH_TORCH_DEVICE=cpu" in results["peers"]["torch-cuda"]["version"]  # said, not hidden
    made = report.document([results], [runs[0].name])  # what --publish makes of it
    assert "N=" in made and "Ceiling" in made and "PyTorch CUDA" in made

    # the sweep's table: the entries some variant changes, each with the variants changing it
    tuning = json.loads(tunings[0].read_text())
    assert report.is_gpu_run_name(tunings[0].name[len(report.TUNING_PREFIX):], tuning)
    assert tuning["entries"] and all(e["status"] == "ok" and e["variants"]["current"]["status"] == "ok"
                                     for e in tuning["entries"])
    assert all(len(e["variants"]) > 1 for e in tuning["entries"]) and "current" in tuning["summary"]
    for step in ("== install", "== preflight", "== correctness", "== bench at GPU scale", "== Tuning sweep", "== done"):
        assert step in log, step
    assert "unpack libvulkan.so.1 and libGLdispatch.so.0" in log


def test_the_preflight_stops_the_run_in_seconds_without_an_nvidia_gpu(carried, tmp_path):
    started = time.monotonic()
    done = _run("all", _rehearsal_env(carried, tmp_path, POOLGPU_GPU_FAKE_NVIDIA="0"), timeout=120)
    log = (tmp_path / "out" / "run.log").read_text()
    assert done.returncode == 3 and time.monotonic() - started < 60, log[-2000:]
    assert "no discrete NVIDIA GPU on Vulkan" in log and "nothing measured" in log
    assert "== correctness" not in log and not list((tmp_path / "out").glob("20*.json"))


def test_what_the_suite_leaves_out_there_exists():
    # the machine has no package index: the test that needs one is left out by its id, and this file
    script = SCRIPT.read_text()
    (test_id,) = re.findall(r"--deselect (\S+)\)", script)
    path, name = test_id.split("::")
    assert f"def {name}(" in (ROOT / path).read_text()
    (ignored,) = re.findall(r"--ignore (\S+)", script)
    assert (ROOT / ignored).resolve() == Path(__file__).resolve()


# What such a machine allows (docs/performance-method.md, "On a GPU"): 15 minutes in all, its
# start (about 4) included, one command of at most 10 minutes.
MACHINE_S, START_S, COMMAND_MAX_S = 15 * 60, 4 * 60, 10 * 60


def test_the_documented_command_fits_a_gpu_machine_with_time_for_a_shorter_second_try():
    script, method = SCRIPT.read_text(), (ROOT / "docs" / "performance-method.md").read_text()
    (total_s,) = map(int, re.findall(r'total_s="\$\{POOLGPU_GPU_RUN_S:-(\d+)\}"', script))
    section = method[method.index("## On a GPU"):]
    assert "| command | `bash scripts/gpu_bench.sh all` |" in section
    assert "| carried (ignored paths) | `bench/results/carry` |" in section
    assert re.search(r"bench/results/carry\b", script) and "bench/results/" in (ROOT / ".gitignore").read_text()
    limit_s, said_s = map(int, re.search(r"\| time limit \| (\d+) s \(the command stops itself at (\d+) s\) \|",
                                         section).groups())
    # each step stops itself, then is killed 15 s later: the limit leaves room for both steps' kills
    assert said_s == total_s and total_s + 2 * 15 <= limit_s <= COMMAND_MAX_S
    assert START_S + limit_s <= MACHINE_S - 2 * 60  # the start, the command, and the minute it stays warm
    # a preflight failing in its first minute leaves a fresh start and a shorter run
    shorter_s, shorter_limit_s = map(int, re.search(
        r"`POOLGPU_GPU_RUN_S=(\d+) bash\s+scripts/gpu_bench.sh all` \(a limit of (\d+) s\)", section).groups())
    assert shorter_s + 2 * 15 <= shorter_limit_s and START_S + 60 + START_S + shorter_limit_s <= MACHINE_S - 60
    assert f"{total_s * 2 // 3} s" in section  # the bench's share, as said
