"""scripts/gpu_bench.sh rehearsed here: ``prepare`` carries what a GPU machine without a
package index lacks, and ``all`` (POOLGPU_GPU_DRY_RUN=1: tiny sizes, a few cases,
PyTorch's CPU build standing in for CUDA) runs every step a GPU machine runs, through the
same commands, paths and JSON, leaving under $OUT what comes back from such a machine."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

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
    """What ``prepare`` carries (downloads kept in .cache/gpu-carry: only the first run needs PyPI and Debian)."""
    pytest.importorskip("torch")
    carry = tmp_path_factory.mktemp("carry")
    env = dict(os.environ, POOLGPU_GPU_CARRY=str(carry), POOLGPU_GPU_PREPARE_PYTHON=sys.executable)
    prepared = _run("prepare", env, timeout=600)
    if prepared.returncode != 0:
        pytest.skip(f"prepare could not download what it carries: {prepared.stderr.strip()[-300:]}")
    return carry


def test_prepare_carries_the_wheels_and_the_vulkan_loader_within_the_limit(carried):
    names = {p.name for p in carried.rglob("*") if p.is_file()}
    for pattern in (r"poolgpu-.*\.whl", r"wgpu-.*-py3-none-manylinux.*\.whl", r"cffi-.*-cp312-.*\.whl",
                    r"pycparser-.*\.whl", r"rendercanvas-.*\.whl", r"libvulkan1_.*_amd64\.deb"):
        assert any(re.fullmatch(pattern, name) for name in names), (pattern, names)
    assert (carried / "python-version").read_text().strip() == "3.12"
    manifest = (carried / "MANIFEST").read_text().splitlines()
    assert sum(int(line.split()[0]) for line in manifest) < 60 << 20  # the repository travels with it, 64 MiB in all


def test_all_runs_end_to_end_and_leaves_what_comes_back(carried, tmp_path):
    out, work = tmp_path / "out", tmp_path / "work"
    env = dict(os.environ, POOLGPU_GPU_CARRY=str(carried), POOLGPU_GPU_DRY_RUN="1", OUT=str(out),
               POOLGPU_GPU_WORK=str(work), POOLGPU_GPU_PYTHON=sys.executable,
               POOLGPU_REQUIRE_BACKENDS="vulkan,opengl")  # (as CI sets it: the suite there asks for Vulkan alone)
    done = _run("all", env, timeout=300)
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
        "run.log", "bench.log", "bench.md", "peers.log", "tests.log"}

    # the run, named as bench/gpu/ keeps it, at GPU scale with both PyTorch peers on every row
    results = json.loads(runs[0].read_text())
    assert runs[0].name == report.gpu_run_name(results) and "partial" not in results
    assert results["settings"]["scale"] and results["settings"]["peers"] == ["torch-cuda", "torch-cuda-compile"]
    rows = [r for r in results["rows"] if r["status"] == "ok"]
    assert {(r["dtype"], r["layout"]) for r in rows} == {("float32", "nchw"), ("float16", "nchw"), ("float32", "nhwc")}
    scaled = [r for r in rows if r.get("scaled")]
    assert scaled and rows[: len(scaled)] == scaled and len(scaled) == len(rows) - len(scaled)  # bandwidth rows first
    assert all(r["batch"] == SCALE_BATCH[r["case"]] for r in scaled)
    for row in rows:
        for peer in ("torch-cuda", "torch-cuda-compile"):
            assert row["peers"][peer]["status"] == "ok" and row["peers"][peer]["check"] == "ok", (row["op"], peer)
    assert all(way["status"] == "ok" for way in results["ceiling"].values() if isinstance(way, dict)), results["ceiling"]
    assert "POOLGPU_BENCH_TORCH_DEVICE=cpu" in results["peers"]["torch-cuda"]["version"]  # said, not hidden
    made = report.document([results], [runs[0].name])  # what --publish makes of it
    assert "N=" in made and "Ceiling" in made and "PyTorch CUDA" in made

    # the sweep's table, and the suite's report
    tuning = json.loads(tunings[0].read_text())
    assert tunings[0].name == report.TUNING_PREFIX + report.gpu_run_name(tuning)
    assert tuning["entries"] and all(e["status"] == "ok" and e["variants"]["current"]["status"] == "ok"
                                     for e in tuning["entries"])
    assert "current" in tuning["summary"]
    assert re.search(r"\d+ passed", (out / "tests.log").read_text())
    for step in ("== install", "== bench at GPU scale", "== Tuning sweep", "== the suite", "== done"):
        assert step in log, step
    assert "unpacks a libvulkan.so.1" in log and f"from {work}/site/poolgpu/" in log


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
    assert START_S + limit_s <= MACHINE_S - 3 * 60  # a failure in the first minute leaves the command again
    shorter_s, shorter_limit_s = map(int, re.search(
        r"`POOLGPU_GPU_RUN_S=(\d+) bash\s+scripts/gpu_bench.sh all` \(a limit of (\d+) s\)", section).groups())
    assert shorter_s + 2 * 15 <= shorter_limit_s and START_S + 60 + START_S + shorter_limit_s <= MACHINE_S - 60
    assert f"{total_s * 3 // 5} s" in section and f"{total_s // 5} s" in section  # the steps' shares, as said
