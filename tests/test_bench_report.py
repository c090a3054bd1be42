"""The bench's kept runs and what is made from them: bench/latest.json and bench/gpu/*.json
in the bench's schema, docs/bench-tables.md made from them (and current), the plot, and
which runs the bench keeps."""

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import report, run  # noqa: E402
from bench.cases import CASES  # noqa: E402

ROW_FIELDS = ("case", "op", "dtype", "layout", "status", "pct_of_copy", "poolgpu", "copy")


def test_docs_bench_tables_are_made_from_the_committed_runs_and_current():
    sources = report.published_sources()
    assert report.LATEST in sources and report.newest_gpu_run() in sources
    made = report.document([report.load(p) for p in sources], [str(p.relative_to(ROOT)) for p in sources])
    assert report.TABLES.read_text() == made, "regenerate: python -m bench.report --publish"


@pytest.mark.parametrize("path", [report.LATEST] + sorted(report.GPU_RUNS.glob("*.json")), ids=lambda p: p.name)
def test_kept_runs_hold_the_bench_schema(path):
    results = report.load(path)
    for key in ("date", "summary", "adapter", "timer", "peers", "rows"):
        assert key in results, key
    stat = results["summary"]
    assert stat in ("min_ms", "median_ms")
    gpu = path.parent == report.GPU_RUNS
    assert (results["adapter"].get("type") != "cpu") == gpu
    if gpu:
        assert path.name == report.gpu_run_name(results)
    assert results["rows"]
    for row in results["rows"]:
        if row["status"] != "ok":
            continue
        for field in ROW_FIELDS:
            assert field in row, (row, field)
        assert row["case"] in CASES and row["op"] in CASES[row["case"]].ops
        # % of copy is the copy's time over poolgpu's (the converted table's rounded to whole percents)
        assert row["pct_of_copy"] == pytest.approx(100 * row["copy"][stat] / row["poolgpu"][stat], abs=0.6)
        for name, peer in (row.get("peers") or {}).items():
            assert name in results["peers"], name
            if peer["status"] == "ok":
                assert peer["ratio"] == pytest.approx(row["poolgpu"][stat] / peer[stat], rel=0.06)


def test_the_converted_h100_run_gives_back_its_table():
    results = report.load(report.GPU_RUNS / "2026-11-23-h100.json")
    assert "no torch-cuda column" in results["note"] and results["summary"] == "median_ms"
    assert len(results["rows"]) == 105
    text = report.markdown(results)
    assert "| A | max | f32 | NCHW | 0.0401 | 801.53 | 0.0172 | 43% | 0.623 (0.064x) |" in text
    assert "| C | adaptive_avg | f16 | NCHW | 0.0636 | 6.44 | 0.0164 | 26% |" in text
    assert "times are medians over repetitions after warm-up, GPU timestamps" in text


@pytest.mark.parametrize("name, model, file", [
    ("NVIDIA H100 80GB HBM3", "H100", "h100"),
    ("NVIDIA GeForce RTX 4090", "GeForce RTX 4090", "geforce-rtx-4090"),
    ("AMD Radeon RX 7900 XTX", "Radeon RX 7900", "radeon-rx-7900"),
    ("Apple M2 Max", "M2", "m2"),
])
def test_gpu_runs_are_named_by_date_and_model(name, model, file):
    assert report.gpu_model(name) == model
    results = {"date": "2026-12-01T10:00:00+00:00", "adapter": {"name": name, "backend": "vulkan"}}
    assert report.gpu_run_name(results) == f"2026-12-01-{file}.json"
    assert report.run_name(dict(results, adapter=dict(results["adapter"], type="discrete-gpu"))) == model


def test_the_newest_gpu_run_is_the_latest_by_date(tmp_path):
    for name, date in (("2026-12-01-h100.json", "2026-12-01T10:00:00+00:00"),
                       ("2026-12-01-a100.json", "2026-12-01T12:00:00+00:00"),
                       ("2026-11-30-rtx-4090.json", "2026-11-30T23:00:00+00:00")):
        (tmp_path / name).write_text(json.dumps({"date": date}))
    assert report.newest_gpu_run(tmp_path) == tmp_path / "2026-12-01-a100.json"
    assert report.newest_gpu_run(tmp_path / "none") is None


def test_the_headline_puts_each_runs_percent_of_copy_and_peer_ratios_side_by_side():
    gpu = report.load(report.GPU_RUNS / "2026-11-23-h100.json")
    cpu = json.loads(json.dumps(gpu))
    cpu["adapter"] = {"name": "llvmpipe (LLVM 19.1.7, 256 bits)", "backend": "vulkan", "type": "cpu"}
    for row in cpu["rows"]:
        row["pct_of_copy"] /= 2
    head, body = report.headline([cpu, gpu])
    assert head == ["case", "operator", "% of copy, lavapipe", "% of copy, H100", "ORT CPU (lavapipe)", "ORT CPU (H100)"]
    assert len(body) == 47  # the float32 NCHW rows
    assert body[0] == ["A", "max", "22%", "43%", "0.064x", "0.064x"]
    assert ["A", "max_fwd_bwd", "6%", "11%", "n/a", "n/a"] in body


def test_the_plot_has_a_row_of_panels_per_run(tmp_path):
    pytest.importorskip("matplotlib")
    gpu = report.load(report.GPU_RUNS / "2026-11-23-h100.json")
    assert report.plot([gpu, gpu], tmp_path / "two.png") == ""
    assert report.plot(gpu, tmp_path / "one.png") == ""
    from matplotlib.image import imread

    two, one = imread(tmp_path / "two.png"), imread(tmp_path / "one.png")
    assert two.shape[1] == one.shape[1] and two.shape[0] > 1.6 * one.shape[0]


def test_which_runs_the_bench_keeps():
    assert run.parse_args([]).full and run.parse_args(["--peer", "ort-cpu", "--warmup-s", "0.3"]).full
    for partial in (["--quick"], ["--tiny"], ["--cases", "A"], ["--ops", "max"], ["--dtype", "float32"]):
        assert not run.parse_args(partial).full, partial


def test_a_kept_run_on_a_cpu_adapter_becomes_latest_and_the_tables_are_made_again(device, tmp_path, monkeypatch):
    if device.info["type"] != "cpu":
        pytest.skip("a GPU's runs go to bench/gpu/")
    monkeypatch.setattr(report, "LATEST", tmp_path / "latest.json")
    monkeypatch.setattr(report, "TABLES", tmp_path / "docs" / "bench-tables.md")
    monkeypatch.setattr(report, "PLOT", tmp_path / "latest.png")
    argv = ["--quick", "--tiny", "--no-peers", "--no-ratios", "--backend", device.backend, "--adapter", device.name,
            "--out", str(tmp_path / "out"), "--cases", "C", "--ops", "max"]
    with pytest.raises(SystemExit, match="CPU adapter"):
        run.main(argv + ["--save-gpu-run", str(tmp_path)])
    assert run.main(argv + ["--save-latest"]) == 0
    kept = report.load(tmp_path / "latest.json")
    assert kept["rows"] == report.load(tmp_path / "out" / "bench.json")["rows"] and kept["summary"] == "min_ms"
    tables = report.TABLES.read_text()
    assert str(tmp_path / "latest.json") in tables and "## H100: NVIDIA H100 80GB HBM3" in tables
    assert "| C | max | " in tables
