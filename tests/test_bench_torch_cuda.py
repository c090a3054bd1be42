"""The torch-cuda peers (bench/peer_torch_cuda.py): reported unavailable, with the reason,
where there is no CUDA device; their operators (the same code on the CPU here, on the GPU
where there is one) agree with the reference in every layout; torch.compile's too."""

import json
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import cases, run  # noqa: E402
from bench.check import check  # noqa: E402
from bench.peer_base import Unsupported  # noqa: E402
from bench.peers import discover  # noqa: E402


def test_without_a_cuda_device_the_torch_cuda_peers_are_unavailable_and_say_why(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # no device, even on a machine with one
    peers = discover(["torch-cuda", "torch-cuda-compile"], [], tmp_path)
    for peer in peers:
        assert peer.status.startswith("unavailable: torch ") and "CUDA" in peer.status, peer.status
        assert peer.worker.process is None  # its worker is gone
    assert [p.describe()["label"] for p in peers] == ["PyTorch CUDA", "torch.compile CUDA"]


def test_a_bench_run_reports_the_unavailable_peer_in_every_row_and_the_legend(device, tmp_path, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    argv = ["--quick", "--tiny", "--backend", device.backend, "--adapter", device.name, "--out", str(tmp_path),
            "--cases", "C", "--ops", "max,avg_bwd", "--dtype", "float32", "--layout", "nchw,nhwc",
            "--peer", "torch-cuda,torch-cuda-compile",
            "--no-ratios"]
    assert run.main(argv) == 0
    results = json.loads((tmp_path / "bench.json").read_text())
    assert results["peers"]["torch-cuda"]["status"].startswith("unavailable")
    assert len(results["rows"]) == 4
    for row in results["rows"]:
        # PyTorch CUDA, eager and compiled, on every row (poolgpu's types and layouts)
        assert row["status"] == "ok"
        assert row["peers"]["torch-cuda"]["status"] == row["peers"]["torch-cuda-compile"]["status"] == "unavailable"
    assert "PyTorch CUDA: unavailable" in (tmp_path / "bench.md").read_text()


def _agree(device: str, dtypes, compile: bool = False, ops=None) -> int:
    from bench import peer_torch_cuda

    ran = 0
    for case in cases.CASES.values():
        for dtype in dtypes:
            data = cases.Data(case, dtype, tiny=True, seed=2)
            for op in ops or case.ops:
                problem = cases.build(op, data) if op in case.ops else None
                if problem is None:
                    continue
                for layout in ("nchw", "nhwc"):
                    try:
                        prepared = peer_torch_cuda.prepare(problem.spec, problem.inputs, layout, device=device,
                                                           compile=compile)
                    except Unsupported:
                        continue
                    assert check(prepared.outputs(), problem) == "", (case.name, dtype, op, layout)
                    assert prepared.seconds() > 0
                    prepared.release()
                    ran += 1
    return ran


def test_its_operators_agree_with_the_reference_in_both_layouts_on_the_cpu():
    # gradients through autograd, channels_last for NHWC, float16: the code the GPU runs, on the CPU
    # (where only 3D average pooling lacks float16)
    assert _agree("cpu", ["float32", "float16"]) >= 120


def test_compiled_it_runs_on_every_operator_in_float16_channels_last(monkeypatch):
    # dynamo's graphs of every operator (the compiler proper, inductor, only on a GPU or in the slow test)
    from bench import peer_torch_cuda

    monkeypatch.setattr(peer_torch_cuda, "COMPILE_BACKEND", "eager")
    ran = 0
    data = cases.Data(cases.CASES["A"], "float16", tiny=True, seed=2)
    for op in cases.CASES["A"].ops:
        problem = cases.build(op, data)
        try:
            prepared = peer_torch_cuda.prepare(problem.spec, problem.inputs, "nhwc", device="cpu", compile=True)
        except Unsupported:
            continue
        assert check(prepared.outputs(), problem) == "", op
        ran += 1
    assert ran >= 9


def test_pytorchs_clone_is_a_ceiling_checked_where_it_runs():
    from bench import peer_torch_cuda

    prepared = peer_torch_cuda.prepare({"op": "clone", "bytes": 1 << 16}, {}, "nchw", device="cpu")
    assert prepared.outputs() == {"same": True} and prepared.seconds() > 0


@pytest.mark.slow
def test_torch_compile_gives_the_reference_results_too():
    assert _agree("cpu", ["float32"], compile=True, ops=["max_idx", "max_fwd_bwd"]) >= 6


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_on_a_cuda_device_every_operator_type_and_layout_agrees_with_the_reference():
    assert _agree("cuda", ["float32", "float16"]) >= 120
