"""The bench's kept runs and what is made from them: bench/latest.json and bench/gpu/*.json
in the bench's schema, docs/bench-tables.md made from them (and current), the plot, and
which runs the bench keeps."""

import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import report, run  # noqa: E402
from bench.cases import CASES  # noqa: E402

ROW_FIELDS = ("case", "op", "dtype", "layout", "status", "pct_of_copy", "poolgpu", "copy")


def test_docs_bench_tables_are_made_from_the_committed_runs_and_current():
    runs, sources = zip(*report.published_runs())
    assert sources[0] == "bench/latest.json" and str(report.newest_gpu_run().relative_to(ROOT)) in sources[1]
    made = report.document(list(runs), list(sources))
    assert report.TABLES.read_text() == made, "regenerate: python -m bench.report --publish"


def test_the_readme_table_is_made_from_the_committed_runs_and_current():
    cpu, gpu, cpu_source, gpu_source = report.readme_sources()
    assert cpu is not None and gpu == report.merged_gpu_run()[0]
    assert (cpu_source, gpu_source) == ("bench/latest.json", str(report.newest_gpu_run().relative_to(ROOT)))
    text = report.README.read_text()
    made = report.readme_block(cpu, gpu, cpu_source, gpu_source)
    assert text.count(report.README_BEGIN) == 1 and text.count(report.README_END) == 1
    start = text.index(report.README_BEGIN)
    assert text[start:text.index(report.README_END) + len(report.README_END)] == made, \
        "regenerate: python -m bench.report --publish"
    assert report.spliced(text, made) == text


@pytest.mark.parametrize("path", [report.LATEST] + report.gpu_runs(), ids=lambda p: p.name)
def test_kept_runs_hold_the_bench_schema(path):
    results = report.load(path)
    for key in ("date", "summary", "adapter", "timer", "peers", "rows"):
        assert key in results, key
    stat = results["summary"]
    assert stat in ("min_ms", "median_ms")
    gpu = path.parent == report.GPU_RUNS
    assert (results["adapter"].get("type") != "cpu") == gpu
    if gpu:
        assert report.is_gpu_run_name(path.name, results)
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
                       ("2026-11-30-rtx-4090.json", "2026-11-30T23:00:00+00:00"),
                       ("tuning-2026-12-02-h100.json", "2026-12-02T10:00:00+00:00")):  # a sweep's table, no run
        (tmp_path / name).write_text(json.dumps({"date": date}))
    assert report.newest_gpu_run(tmp_path) == tmp_path / "2026-12-01-a100.json"
    assert [p.name for p in report.gpu_runs(tmp_path)] == ["2026-11-30-rtx-4090.json", "2026-12-01-a100.json",
                                                           "2026-12-01-h100.json"]
    assert report.newest_gpu_run(tmp_path / "none") is None


def _gpu_run(date, rows, shaders="s1", name="NVIDIA H100 80GB HBM3"):
    return {"date": date, "adapter": {"name": name, "backend": "vulkan"}, "provenance": {"shaders": shaders},
            "rows": [dict(case="A", op=op, dtype="float32", layout="nchw", status=status) for op, status in rows]}


def test_a_run_cut_short_is_completed_by_the_earlier_runs_of_the_same_shaders_and_gpu(tmp_path):
    runs = {"2026-12-01-h100.json": _gpu_run("2026-12-01T10:00", [("max", "ok"), ("avg", "ok"), ("lp2", "ok")]),
            "2026-12-01-h100-2.json": _gpu_run("2026-12-01T11:00", [("max", "not run"), ("avg", "ok"), ("lp2", "not run")]),
            "2026-12-01-a100.json": _gpu_run("2026-12-01T09:00", [("max", "ok"), ("unpool", "ok")], name="NVIDIA A100"),
            "2026-11-30-h100.json": _gpu_run("2026-11-30T10:00", [("lp2", "ok"), ("unpool", "ok")], shaders="s0"),
            "2026-12-02-h100.json": _gpu_run("2026-12-02T10:00", [("max", "not run"), ("avg", "ok")])}
    for name, results in runs.items():
        (tmp_path / name).write_text(json.dumps(results))
    merged, paths = report.merged_gpu_run(tmp_path)
    assert [p.name for p in paths] == ["2026-12-01-h100.json", "2026-12-01-h100-2.json", "2026-12-02-h100.json"]
    by_op = {r["op"]: r for r in merged["rows"]}
    assert by_op["max"]["status"] == "ok" and by_op["max"]["run"] == "2026-12-01T10:00"  # the newest that measured it
    assert by_op["avg"] == runs["2026-12-02-h100.json"]["rows"][1]  # the newest run's own
    assert by_op["lp2"]["run"] == "2026-12-01T10:00" and "unpool" not in by_op  # other shaders, other GPUs: left out
    assert merged["merged_from"] == ["2026-12-01-h100.json", "2026-12-01-h100-2.json"]
    # a second run on one day is kept beside the first
    later = _gpu_run("2026-12-02T18:00", [])
    assert report.gpu_run_name(later, tmp_path) == "2026-12-02-h100-2.json"
    assert report.gpu_run_name(runs["2026-12-02-h100.json"], tmp_path) == "2026-12-02-h100.json"
    assert report.is_gpu_run_name("2026-12-02-h100-2.json", later) and not report.is_gpu_run_name("2026-12-02-a100.json", later)
    # a sweep's table is named against the tables kept, not the runs
    for hour, name in (("11", "2026-12-02-h100.json"), ("12", "2026-12-02-h100-2.json")):
        (tmp_path / (report.TUNING_PREFIX + name)).write_text(json.dumps(_gpu_run(f"2026-12-02T{hour}:00", [])))
    assert report.gpu_run_name(later, tmp_path, report.TUNING_PREFIX) == "2026-12-02-h100-3.json"


@pytest.mark.parametrize("path", sorted(report.GPU_RUNS.glob(report.TUNING_PREFIX + "*.json")), ids=lambda p: p.name)
def test_kept_sweeps_hold_the_sweep_schema(path):
    table = report.load(path)
    assert path.name.startswith(report.TUNING_PREFIX)
    assert report.is_gpu_run_name(path.name[len(report.TUNING_PREFIX):], table)
    assert table["entries"] and "current" in table["summary"] and table["tuning"]["target"] in ("cpu", "gpu")
    for entry in table["entries"]:
        if entry["status"] == "ok" and "best" in entry:
            assert entry["variants"][entry["best"]]["status"] == "ok"


def _scaled(results: dict) -> dict:
    """``results`` with each float32 NCHW row of A also at GPU scale: twice the % of copy, and
    PyTorch CUDA, eager and compiled, as peers."""
    results = json.loads(json.dumps(results))
    results["peers"] = {name: {"label": report.LABELS[name], "status": "available", "version": "2.11.0"}
                        for name in ("torch-cuda", "torch-cuda-compile")}
    scaled = []
    for row in results["rows"]:
        row["peers"] = {"torch-cuda": {"status": "ok", "ratio": 0.5, "min_ms": 1.0, "median_ms": 1.0},
                        "torch-cuda-compile": {"status": "ok", "ratio": 0.8, "min_ms": 1.0, "median_ms": 1.0}}
        if row["case"] == "A" and (row["dtype"], row["layout"]) == ("float32", "nchw") and row["status"] == "ok":
            big = json.loads(json.dumps(row))
            big.update(scaled=True, batch=64, input_sizes=[64, 64, 112, 112], pct_of_copy=2 * row["pct_of_copy"])
            big["poolgpu"]["gb_per_s"] = 2000.0
            scaled.append(big)
    results["rows"] = scaled + results["rows"]
    results["ceiling"] = {"bytes": 1 << 30, "size_note": "",
                          "copy_kernel": {"status": "ok", "min_ms": 0.72, "median_ms": 0.73, "gb_per_s": 2982.6,
                                          "timer": "passes", "workgroup_size": 256, "vec4s_per_thread": 4},
                          "copy_buffer_to_buffer": {"status": "ok", "min_ms": 0.7, "median_ms": 0.71,
                                                    "gb_per_s": 3067.8, "timer": "GPU timestamps"},
                          "torch_clone": {"status": "ok", "min_ms": 0.69, "median_ms": 0.7, "gb_per_s": 3112.3,
                                          "version": "2.11.0 on NVIDIA H100 80GB HBM3"}}
    return results


def test_rows_at_gpu_scale_say_their_batch_and_lead_the_headline_and_readme():
    gpu = report.load(report.GPU_RUNS / "2026-11-23-h100.json")
    scaled = _scaled(gpu)
    text = report.markdown(scaled)
    assert "| A N=64 | max | f32 | NCHW | 0.0401 | 2000.00 | 0.0172 | 86% |" in text
    assert "| A | max | f32 | NCHW | 0.0401 | 801.53 | 0.0172 | 43% |" in text  # the latency row stays
    assert "| copy kernel (bench/copy.wgsl) | 0.73 | 2983 | passes; workgroups of 256, 4 x 16 B per invocation |" in text
    assert "| PyTorch clone() (CUDA) | 0.7 | 3112 |" in text and "Ceiling: one 1 GiB tensor copied" in text
    head, body = report.headline([scaled])
    assert head[2] == "% of copy, H100 at GPU scale"
    assert body[0][:3] == ["A", "max", "86%"] and ["B", "max", "31%", "0.5x", "0.8x"] in body  # B: no scaled row
    block = report.readme_block(None, scaled, gpu_source="bench/gpu/x.json")
    lines = block.splitlines()
    assert lines[1] == "| case | operator | H100 % of copy | H100 GB/s | PyTorch CUDA (H100) | torch.compile CUDA (H100) |"
    assert lines[3] == "| A | max | 86% | 2000 | 0.5x | 0.8x |" and "| B | max | 31% | 261 | 0.5x | 0.8x |" in lines
    assert "at GPU scale (A N=64)" in lines[-2]
    assert report.row_label(scaled["rows"][0]) == "A N=64 max f32 NCHW"


def test_rows_past_the_time_limit_are_counted_not_listed():
    results = report.load(report.GPU_RUNS / "2026-11-23-h100.json")
    results["rows"] += [{"case": "3D", "op": "max", "dtype": "float32", "layout": "nhwc", "status": "not run",
                         "reason": "the run's time limit (--deadline-s 190)"}] * 2
    text = report.markdown(results)
    assert "Not run: 2 rows, past the run's time limit (the run's time limit (--deadline-s 190))." in text
    assert "| 3D | max | f32 | NHWC |" not in text


def test_the_new_shape_rows_are_summed_up_in_a_line():
    results = report.load(report.GPU_RUNS / "2026-11-23-h100.json")
    assert "New shapes" not in report.markdown(results)
    operator = dict(new_shape_vs_warm=1.84, first_call_ms=300.0, new_shape_ms=2.0, warm_ms=1.1)
    model = dict(first_forward_ms=90.0, warm_min_ms=60.0)
    results["new_shapes"] = {"generic_calls_2": {"operators": {"max_pool": operator},
                                                 "resnet18_shaped": {"240": model}},
                             "generic_calls_0": {"operators": {"max_pool": dict(operator, new_shape_vs_warm=300.0)}}}
    assert ("compiles everything; Mesa's on-disk shader cache off): max_pool 2.0 ms (1.8x); resnet18-shaped first forward "
            "at 240 90 ms (1.5x).") in report.markdown(results)


def test_a_run_is_named_as_bench_gpu_keeps_it(tmp_path, capsys):
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"date": "2026-12-01T10:00:00+00:00", "adapter": {"name": "NVIDIA H200"}}))
    assert report.main(["--kept-name", str(path)]) == 0
    assert capsys.readouterr().out == "2026-12-01-h200.json\n"


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


def _with_peers(results: dict, peers: dict, ratio: float) -> dict:
    """``results`` with only ``peers`` ({name: status}), each with ``ratio`` on its rows' float32 NCHW rows."""
    results = json.loads(json.dumps(results))
    results["peers"] = {name: {"label": report.LABELS[name], "status": status, "version": "1.0"}
                        for name, status in peers.items()}
    for row in results["rows"]:
        row["peers"] = {name: {"status": "ok", "ratio": ratio} for name in peers}
    return results


def test_the_readme_table_shows_the_chosen_rows_and_the_peers_with_numbers():
    gpu = report.load(report.GPU_RUNS / "2026-11-23-h100.json")
    cpu = _with_peers(gpu, {"torch": "available", "tinygrad": "not installed (tinygrad)", "ort-cpu": "available"}, 0.5)
    cpu["adapter"] = {"name": "llvmpipe (LLVM 19.1.7, 256 bits)", "backend": "vulkan", "type": "cpu",
                      "driver": "Mesa 25.0.7"}
    cpu["machine"], cpu["summary"] = {"cpus": 2}, "min_ms"
    for row in cpu["rows"]:
        row["poolgpu"], row["pct_of_copy"] = {"min_ms": 12.34}, row["pct_of_copy"] / 2
        if row["case"] == "B" and row["op"] == "max_idx":
            row["peers"]["ort-cpu"] = {"status": "unsupported"}
    gpu = _with_peers(gpu, {"ort-cpu": "available", "torch-cuda": "available"}, 2.0)
    block = report.readme_block(cpu, gpu, "bench/latest.json", "bench/gpu/2026-11-23-h100.json")
    lines = block.splitlines()
    assert lines[0] == report.README_BEGIN and lines[-1] == report.README_END
    # the GPU run's CPU peer ran elsewhere: only its CUDA peer; a peer not installed has no column
    assert lines[1] == ("| case | operator | H100 % of copy | lavapipe % of copy | lavapipe ms | PyTorch CPU | ORT CPU "
                        "| PyTorch CUDA (H100) |")
    rows = [line.split(" | ")[:2] for line in lines[3:-3]]
    assert rows == [["| A", "max"], ["| A", "max_idx"], ["| A", "avg"], ["| A", "max_fwd_bwd"], ["| B", "max"],
                    ["| B", "max_idx"], ["| B", "avg"], ["| G", "max"], ["| G", "avg"], ["| 1D", "max"],
                    ["| 1D", "max_idx"], ["| 1D", "avg"], ["| 3D", "max"], ["| 3D", "max_idx"], ["| 3D", "avg"]]
    assert lines[3] == "| A | max | 43% | 22% | 12.3 | 0.5x | 0.5x | 2x |"
    assert "| B | max_idx | 36% | 18% | 12.3 | 0.5x | n/a | 2x |" in lines
    caption = lines[-2]
    assert caption.startswith("H100: NVIDIA H100 80GB HBM3, Vulkan, driver 580.159.04, 2026-11-23 "
                              "([bench/gpu/2026-11-23-h100.json](bench/gpu/2026-11-23-h100.json), medians); "
                              "lavapipe: llvmpipe (LLVM 19.1.7, 256 bits), Vulkan, driver Mesa 25.0.7, 2 CPU cores, "
                              "2026-11-23 ([bench/latest.json](bench/latest.json), fastest repetitions)")
    assert "peers on lavapipe: PyTorch CPU 1.0, ORT CPU 1.0; peers on H100: PyTorch CUDA 1.0." in caption


def test_the_readme_table_without_a_gpu_run_or_peers():
    cpu = report.load(report.LATEST)
    cpu = _with_peers(cpu, {"torch": "not installed (torch)"}, 1.0)
    block = report.readme_block(cpu, None)
    assert block.splitlines()[1] == "| case | operator | lavapipe % of copy | lavapipe ms |"
    assert "H100" not in block and "peers" not in block


def test_the_readme_block_is_spliced_between_its_markers():
    block = f"{report.README_BEGIN}\nnew\n{report.README_END}"
    text = f"# x\n\n{report.README_BEGIN}\n| old |\n{report.README_END}\n\nafter\n"
    assert report.spliced(text, block) == f"# x\n\n{block}\n\nafter\n"
    with pytest.raises(ValueError, match="bench-headline"):
        report.spliced("# no table\n", block)


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
    monkeypatch.setattr(report, "README", tmp_path / "README.md")
    report.README.write_text(f"# poolgpu\n\n{report.README_BEGIN}\n{report.README_END}\n")
    argv = ["--quick", "--tiny", "--no-peers", "--no-ratios", "--backend", device.backend, "--adapter", device.name,
            "--out", str(tmp_path / "out"), "--cases", "C", "--ops", "max"]
    with pytest.raises(SystemExit, match="CPU adapter"):
        run.main(argv + ["--save-gpu-run", str(tmp_path)])
    assert run.main(argv + ["--save-latest"]) == 0
    kept = report.load(tmp_path / "latest.json")
    assert kept["rows"] == report.load(tmp_path / "out" / "bench.json")["rows"] and kept["summary"] == "min_ms"
    tables = report.TABLES.read_text()
    assert str(tmp_path / "latest.json") in tables and re.search(r"^## H\d+: NVIDIA H\d+", tables, re.M)  # (the GPU runs')
    assert "| C | max | " in tables
    readme = report.README.read_text()
    assert f"([{tmp_path / 'latest.json'}]({tmp_path / 'latest.json'}), fastest repetitions)" in readme
