"""The Dawn-based peers' private Mesa (scripts/mesa25.sh unpacks it into .cache/mesa25):
only their workers are pointed at it, and such a worker sees its lavapipe while the bench's
own process (poolgpu's rows) keeps the system's driver."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import poolgpu as pg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import peers  # noqa: E402

OLD_MESA = [{"backend": "vulkan", "description": "Mesa 22.3.6 (LLVM 15.0.6)"}]


def _fake_unpack(directory: Path) -> Path:
    library = directory / "root" / "usr" / "lib" / "x86_64-linux-gnu" / "libvulkan_lvp.so"
    library.parent.mkdir(parents=True)
    library.write_bytes(b"")
    (directory / "lvp_icd.json").write_text(json.dumps({"ICD": {"library_path": str(library)}}))
    (directory / "version").write_text("25.0.7-2~bpo12+1\n")
    return library


def test_the_private_mesa_environment_puts_its_icd_and_libraries_first(tmp_path, monkeypatch):
    monkeypatch.setenv("LD_LIBRARY_PATH", "/somewhere/else")
    assert peers.private_mesa(tmp_path / "none") == {}
    library = _fake_unpack(tmp_path)
    env = peers.private_mesa(tmp_path)
    assert env["VK_ICD_FILENAMES"] == env["VK_DRIVER_FILES"] == str(tmp_path / "lvp_icd.json")
    assert env["LD_LIBRARY_PATH"] == f"{library.parent}:/somewhere/else"
    assert peers._private_driver(env) == "Mesa 25.0.7-2~bpo12+1 (lavapipe) from .cache/mesa25"


def test_dawn_peers_are_unavailable_on_an_old_mesa_unless_they_have_the_private_one(tmp_path):
    assert "Dawn needs Mesa >= 25 (found Mesa 22.3)" in peers.dawn_problem(OLD_MESA)
    _fake_unpack(tmp_path)
    assert peers.dawn_problem(OLD_MESA, peers.private_mesa(tmp_path)) == ""
    assert peers.dawn_problem([{"backend": "vulkan", "description": "Mesa 25.0.7"}]) == ""


@pytest.mark.skipif(not (peers.MESA_DIR / "lvp_icd.json").is_file(), reason="no .cache/mesa25 (scripts/mesa25.sh)")
def test_a_worker_pointed_at_the_private_mesa_sees_its_lavapipe_and_the_bench_keeps_the_systems(tmp_path):
    env = dict(os.environ, **peers.private_mesa())
    script = ("import wgpu; print([a.info['description'] for a in wgpu.gpu.enumerate_adapters_sync() "
              "if a.info['backend_type'] == 'Vulkan'])")
    seen = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert seen.returncode == 0, seen.stderr[-500:]
    version = (peers.MESA_DIR / "version").read_text().strip()
    assert f"Mesa {version}" in seen.stdout, seen.stdout
    # finding the Dawn peers leaves the bench's own process (poolgpu's rows) on the system's driver
    before = dict(os.environ)
    found = peers.discover(["tinygrad", "ort-webgpu"], pg.list_adapters(), tmp_path)
    for peer in found:
        peer.close()
    assert dict(os.environ) == before


def test_poolgpu_on_the_dawn_peers_driver_is_needed_only_under_an_older_system_mesa(tmp_path):
    (peer,) = peers.discover(["poolgpu-mesa25"], [{"backend": "vulkan", "description": "Mesa 25.0.7"}], tmp_path)
    assert peer.status.startswith("unavailable: needed only where the Dawn peers run on a private Mesa")
    assert peer.worker is None


def test_the_dawn_peers_are_compared_with_poolgpu_on_their_driver():
    from types import SimpleNamespace

    from bench import run

    private = "Mesa 25.0.7 (lavapipe) from .cache/mesa25"
    bench = SimpleNamespace(peers=[SimpleNamespace(name="tinygrad", driver=private),
                                   SimpleNamespace(name="torch", driver=None),
                                   SimpleNamespace(name=peers.SAME_DRIVER, driver=private)])
    measured = {"tinygrad": {"status": "ok", "min_ms": 4.0}, "torch": {"status": "ok", "min_ms": 1.0},
                peers.SAME_DRIVER: {"status": "ok", "min_ms": 2.0}}
    run.Bench.same_driver_ratios(bench, measured)
    assert measured["tinygrad"]["ratio_same_driver"] == 0.5
    assert "ratio_same_driver" not in measured["torch"] and "ratio_same_driver" not in measured[peers.SAME_DRIVER]


@pytest.mark.skipif(not (peers.MESA_DIR / "lvp_icd.json").is_file(), reason="no .cache/mesa25 (scripts/mesa25.sh)")
def test_the_bench_runs_poolgpus_rows_again_on_the_dawn_peers_driver(tmp_path):
    from bench import report, run

    if not any("Mesa 2" in a.get("description", "") and int(a["description"].split("Mesa ")[1].split(".")[0]) < 25
               for a in pg.list_adapters() if a["backend"] == "vulkan"):
        pytest.skip("the system's Mesa is the Dawn peers' already")
    argv = ["--quick", "--tiny", "--backend", "vulkan", "--out", str(tmp_path), "--cases", "C", "--ops", "max,avg",
            "--peer", peers.SAME_DRIVER, "--no-ratios"]
    assert run.main(argv) == 0
    results = json.loads((tmp_path / "bench.json").read_text())
    described = results["peers"][peers.SAME_DRIVER]
    version = (peers.MESA_DIR / "version").read_text().strip()
    assert described["status"] == "available" and f"Mesa {version}" in described["version"]  # its worker's adapter
    assert described["driver"] == f"Mesa {version} (lavapipe) from .cache/mesa25"
    for row in results["rows"]:
        same = row["peers"][peers.SAME_DRIVER]
        assert same["status"] == "ok" and same["check"] == "ok"  # checked against the reference, as every peer
        assert same["pct_of_copy"] == pytest.approx(100 * same["copy"]["min_ms"] / same["min_ms"])  # its own copy
        assert same["ratio"] == pytest.approx(row["poolgpu"]["min_ms"] / same["min_ms"])
    head, body = report.same_driver_table(results)
    assert head[:5] == ["case", "operator", "poolgpu ms", "poolgpu on Mesa 25 ms", "its % of copy"] and len(body) == 2
    assert "Like with like" in (tmp_path / "bench.md").read_text()


@pytest.mark.skipif(not list((peers.MESA_DIR / "root").rglob("libvulkan_radeon.so")) if peers.MESA_DIR.is_dir() else True,
                    reason="no RADV in .cache/mesa25 (scripts/mesa25.sh)")
def test_an_amd_compilers_statistics_of_each_kernel_without_the_gpu(tmp_path, capsys):
    from bench import shader_stats

    out = tmp_path / "stats.json"
    assert shader_stats.main(["--cases", "B", "--ops", "max,max_fwd_bwd", "--tiny", "--json", str(out)]) == 0
    results = json.loads(out.read_text())
    assert results["compiler"].startswith("Null hardware (RADV NAVI21)") and results["tuned_for"] == "gpu"
    kernels = [(e["op"], k["kernel"]) for e in results["entries"] for k in e["passes"]]
    assert kernels == [("max", "max_pool.wgsl"), ("max_fwd_bwd", "max_pool.wgsl"),
                       ("max_fwd_bwd", "max_pool_grad_disjoint_rows.wgsl")]  # what B's operators compile to on GPUs
    for entry in results["entries"]:
        for kernel in entry["passes"]:
            assert set(shader_stats.COLUMNS) <= set(kernel["stats"]) and kernel["stats"]["Instructions"] > 0
            assert kernel["constants"]["WG_X"] >= 1 and kernel["types"][0] == "FLOAT32"
    assert "max_pool_grad_disjoint_rows" in capsys.readouterr().out


def test_poolgpu_on_the_dawn_peers_driver_runs_on_the_benchs_inputs():
    # the worker rebuilds each row from its spec: every input must be the bench's own, also
    # those the case draws from its generator after x (the regions' gradients)
    from bench.cases import CASES, Data, build
    from bench.peer_poolgpu import _data

    for case in CASES.values():
        data = Data(case, "float32" if case.name != "Q" else "uint8", True, 0)
        for op in case.ops:
            problem = build(op, data)
            if problem is None:
                continue
            inputs = {name: array.copy() for name, array in problem.inputs.items()}
            rebuilt = build(op, _data(problem.spec, inputs))
            assert rebuilt.inputs.keys() == problem.inputs.keys(), (case.name, op)
            for name, array in problem.inputs.items():
                assert np.array_equal(rebuilt.inputs[name], array), (case.name, op, name)
