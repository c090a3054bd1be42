"""The bench's plumbing, not its speed: a ``--quick --tiny`` run through the same entry point
as ``bash scripts/bench.sh`` (peers off) on every adapter, the copy roofline's correctness,
a failed check keeping a time from counting, and the peer worker protocol."""

import dataclasses
import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

import poolgpu as pg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import cases, ratios, run, variants  # noqa: E402
from bench.check import check  # noqa: E402
from bench.roofline import CONFIGS, CopyDesc, Roofline, checked_words, expected_words  # noqa: E402
from bench.timing import GpuTimer  # noqa: E402
from helpers import tuned_for  # noqa: E402


def _bench(device, tmp_path, *options):
    argv = ["--quick", "--tiny", "--no-peers", "--backend", device.backend, "--adapter", device.name,
            "--out", str(tmp_path), *options]
    code = run.main(argv)
    return code, json.loads((tmp_path / "bench.json").read_text())


def test_a_quick_tiny_run_measures_every_available_operator_and_records_everything(device, tmp_path, capsys):
    code, results = _bench(device, tmp_path)
    assert code == 0
    for key in ("date", "settings", "adapter", "machine", "versions", "timer", "host", "peers", "rows", "elapsed_s"):
        assert key in results, key
    assert results["adapter"]["backend"] == device.backend and results["adapter"]["driver"]
    assert results["timer"]["kind"] == (("timestamp" if device.info["type"] == "cpu" else "passes")
                                        if "timestamp-query" in device.features else "wall")
    assert results["versions"]["poolgpu"] == pg.__version__
    for name in ("op_call", "numpy_round_trip", "batch_per_op"):
        assert 0 < results["host"][name]["min_us"] <= results["host"][name]["median_us"]
    trips = results["host"]["round_trips"]
    for name in ("floor_100kb", "numpy_100kb", "floor_stem", "numpy_stem", "upload_bare", "upload_poolgpu",
                 "read_back_bare", "read_back_poolgpu"):
        assert 0 < trips[name]["min_us"] <= trips[name]["median_us"], name
    assert trips["numpy_100kb"]["vs_floor"] > 0 and trips["upload_poolgpu"]["gb_per_s"] > 0
    for label in ("100kb", "stem"):
        assert trips[f"kernel_{label}"]["median_us"] > 0
        assert trips[f"copy_{label}"]["vs_floor"] == pytest.approx(
            trips[f"copy_{label}"]["median_us"] / trips[f"floor_{label}"]["median_us"])
        kernel_share = trips[f"kernel_{label}"]["median_us"] / trips[f"floor_{label}"]["median_us"]
        assert trips[f"numpy_{label}"]["beyond_kernel_vs_floor"] == pytest.approx(
            trips[f"numpy_{label}"]["vs_floor"] - kernel_share)
    if device.info["type"] == "cpu" and importlib.util.find_spec("torch"):  # (torch stays out on GPUs)
        models = results["host"]["converted_models"]
        assert set(models) == {"resnet18", "googlenet", "efficientnet_b0"}
        for name, row in models.items():
            assert row["same_outputs"], name
            assert row["pooling_layers"] == len(row["layers_us"]) == {"resnet18": 2, "googlenet": 14,
                                                                      "efficientnet_b0": 17}[name]
            assert row["converted_ms"] > 0 and row["layer_vs_floor"] > 0 and row["floor_ms"] > 0
            assert all(layer["kernel"] > 0 for layer in row["layers_us"]), name
            assert (row["in_model_vs_floor"] is None) == (row["floor_per_layer_us"] <= 0), name

    rows = results["rows"]
    expected = {(c.name, op) for c in cases.CASES.values() for op in c.ops}
    assert {(r["case"], r["op"]) for r in rows} == expected
    assert all(r["layout"] == "nchw" and (r["dtype"] == "float32" or r["dtype"] in cases.CASES[r["case"]].dtypes)
               for r in rows)
    assert {(r["case"], r["dtype"]) for r in rows if r["dtype"] != "float32"} == {("FR", "bfloat16"), ("BF", "bfloat16"),
                                                                              ("Q", "uint8")}
    for row in rows:
        if row["status"] == "not available":  # only where poolgpu really lacks the operator
            assert any(not hasattr(pg, name) for name in cases.NEEDS[row["op"]]), row
            continue
        if row["status"] == "not applicable":
            continue
        assert row["status"] == "ok" and row["check"] == "ok", row
        for timed in ("poolgpu", "copy"):
            stats = row[timed]
            assert 3 <= stats["reps"] == len(stats["times_ms"])
            assert 0 < stats["min_ms"] <= stats["median_ms"] and stats["gb_per_s"] > 0
        assert row["copy"]["read_bytes"] >= row["read_bytes"] and row["copy"]["written_bytes"] >= row["written_bytes"]
        assert row["pct_of_copy"] == pytest.approx(100 * row["copy"]["min_ms"] / row["poolgpu"]["min_ms"])
    measured = {(r["case"], r["op"]) for r in rows if r["status"] == "ok"}
    assert {("A", "max"), ("A", "max_idx"), ("B", "max_dil2"), ("1D", "max"), ("3D", "max_idx")} <= measured

    # the ratio targets, each operator timed against max in one submission (timestamps only)
    if "timestamp-query" in device.features:
        assert results["ratios_note"] is None
        assert [(m["case"], m["dtype"], m["layout"]) for m in results["ratios"]] == [
            (case, "float32", "nchw") for case in ("A", "B", "C")]
        for m in results["ratios"]:
            assert set(m["ops"]) == {"max", "max_idx", "avg", "lp2", "max_fwd_bwd"}
            assert 0 < m["ops"]["max"]["min_ms"] <= m["ops"]["max"]["median_ms"]
            for op, target in ratios.TARGETS.items():
                r = m["ops"][op]
                assert r["status"] == "ok" and r["rounds"] == ratios.ROUNDS // 2 and r["target"] == target
                assert 0 < r["range"][0] <= r["ratio"] <= r["range"][1] and r["met"] == (r["ratio"] <= target)
    else:
        assert results["ratios"] == [] and "timestamp-query" in results["ratios_note"]

    table = capsys.readouterr().out
    assert "% of copy" in table and "A     max " in table and "Host:" in table and "Ratio targets" in table
    assert (tmp_path / "bench.md").read_text().startswith("| case | operator |")


def test_nhwc_and_float16_rows_are_laid_out_as_asked(device, tmp_path):
    code, results = _bench(device, tmp_path, "--cases", "A", "--ops", "max_idx", "--dtype", "float16",
                           "--layout", "nchw,nhwc")
    assert code == 0
    nchw, nhwc = results["rows"]
    assert (nchw["layout"], nhwc["layout"]) == ("nchw", "nhwc") and nhwc["status"] == "ok"
    x = nhwc["tensors"]["x"]
    assert x["data_type"] == "FLOAT16" and x["strides"][1] == 1  # channels last
    assert nhwc["tensors"]["idx"]["strides"][1] == 1 and nchw["tensors"]["x"]["strides"][-1] == 1


def test_a_result_that_fails_its_check_is_never_timed(device, tmp_path, monkeypatch):
    real = cases.Data.max_pool

    def off_by_one(self, dilations=None):
        y, idx = real(self, dilations)
        return y + 1, idx

    monkeypatch.setattr(cases.Data, "max_pool", off_by_one)
    code, results = _bench(device, tmp_path, "--cases", "C", "--ops", "max")
    assert code == 1
    (row,) = results["rows"]
    assert row["status"] == "check failed" and row["reason"].startswith("y:")
    assert "poolgpu" not in row and "copy" not in row


def test_ratios_time_nothing_against_a_max_that_fails_its_check(device, tmp_path, monkeypatch):
    if "timestamp-query" not in device.features:
        pytest.skip(f"{device.name} has no timestamp-query")
    real = cases.Data.max_pool
    monkeypatch.setattr(cases.Data, "max_pool", lambda self, dilations=None: (real(self, dilations)[0] + 1,
                                                                             real(self, dilations)[1]))
    code, results = _bench(device, tmp_path, "--cases", "C", "--ops", "max,avg")
    assert code == 1
    ((m),) = results["ratios"]
    assert m["ops"]["max"]["status"] == "check failed" and m["ops"]["avg"]["status"] == "not timed"
    assert "CHECK FAILED" in (tmp_path / "bench.md").read_text()


def test_rows_timed_in_passes_alternate_with_their_copy_in_one_submission(device, tmp_path):
    options = ("--cases", "C", "--ops", "max,max_fwd_bwd", "--timer", "passes", "--no-ratios")
    if "timestamp-query" not in device.features:
        with pytest.raises(SystemExit, match="timestamp-query"):
            _bench(device, tmp_path, *options)
        return
    code, results = _bench(device, tmp_path, *options)
    assert code == 0 and results["timer"]["kind"] == "passes" and results["ratios_note"] == "skipped (--no-ratios)"
    for row in results["rows"]:
        assert row["status"] == "ok" and row["check"] == "ok"
        assert row["poolgpu"]["reps"] == row["copy"]["reps"] == 3  # --quick: 3 rounds
        assert row["pct_of_copy"] == pytest.approx(100 * row["copy"]["min_ms"] / row["poolgpu"]["min_ms"])
    assert "in passes of 8" in (tmp_path / "bench.md").read_text()


def test_the_rotating_copies_each_move_their_own_bytes(device):
    timer = GpuTimer(device)
    roofline = Roofline(device, timer)
    records = roofline.rotating(4096, 1024, 4)
    assert len(records) == 4 and records[0] is roofline.for_bytes(4096, 1024)[0]
    assert all(timer.seconds(record) > 0 for record in records)


@pytest.mark.parametrize("read_bytes, written_bytes", [(4, 4), (1000, 52), (52, 3000), (70_000, 17_000)])
def test_the_copy_roofline_moves_the_bytes_it_claims_for_every_launch_shape(device, read_bytes, written_bytes):
    timer = GpuTimer(device)
    record, info = Roofline(device, timer).for_bytes(read_bytes, written_bytes)  # checks every launch shape
    assert (info["workgroup_size"], info["vec4s_per_thread"]) in CONFIGS
    assert set(info["launch_shapes_ms"]) == {f"{w}x{p}" for w, p in CONFIGS}
    assert read_bytes <= info["read_bytes"] < read_bytes + 64 and written_bytes <= info["written_bytes"] < written_bytes + 64
    assert timer.seconds(record) > 0


def test_a_copy_larger_than_a_binding_runs_in_planes_and_chunks_and_is_checked(device, monkeypatch):
    # source planes of 4000 bytes, bindings of 16 KiB: 40 planes in dispatches of 4, the
    # tensors' element 0 wrapping around below each binding
    from bench import roofline

    monkeypatch.setattr(roofline, "PLANE_BYTES", 4096)
    bounded = pg.Device(wgpu_device=device.wgpu_device)
    bounded.limits = dict(device.limits, **{"max-storage-buffer-binding-size": 16384})
    timer = GpuTimer(bounded)
    tuned = Roofline(bounded, timer)
    record, info = tuned.for_bytes(160_000, 40_960)
    assert info["planes"] == 40 and info["read_bytes"] == 160_000 and info["written_bytes"] == 40_960
    op = bounded.compile(CopyDesc(*CopyDesc.shapes(160_000, 40_960), info["workgroup_size"], info["vec4s_per_thread"]))
    assert [p.grid[2] for p in op._program.passes] == [4] * 10
    source, destination = tuned.tensors(160_000, 40_960)
    record()
    words = source.numpy().reshape(40, -1, 4)
    everything = np.arange(40 * 64)
    expected = expected_words(words, 64, info["workgroup_size"], info["vec4s_per_thread"], everything)
    np.testing.assert_array_equal(destination.numpy().reshape(-1, 4), expected)


def test_expected_words_fold_each_invocations_words_plane_by_plane():
    src = np.arange(2 * 10 * 4, dtype=np.uint32).reshape(2, 10, 4)  # 2 planes of 10 words of 16 bytes
    # workgroup 2, 2 words per invocation: group 0 has invocation 0 -> words 0, 2 and 1 -> 1, 3
    out = expected_words(src, 6, 2, 2, np.arange(12))
    np.testing.assert_array_equal(out[0], src[0, 0] ^ src[0, 2])
    np.testing.assert_array_equal(out[1], src[0, 1] ^ src[0, 3])
    np.testing.assert_array_equal(out[2], out[0])
    np.testing.assert_array_equal(out[4], src[0, 4] ^ src[0, 6])
    np.testing.assert_array_equal(out[6], src[1, 0] ^ src[1, 2])  # the second plane's first word
    np.testing.assert_array_equal(expected_words(src, 6, 2, 2, np.array([10, 4])), out[[10, 4]])


def test_large_copies_are_checked_on_each_planes_edges_and_a_sample():
    rng = np.random.default_rng(0)
    assert np.array_equal(checked_words(1000, 1, rng), np.arange(1000))
    at = checked_words(4 << 20, 4, rng)
    assert len(at) < 1 << 17 and at.min() == 0 and at.max() == (4 << 20) - 1
    assert {(1 << 20) - 1, 1 << 20, 3 << 20} <= set(at.tolist())  # the planes' edges


def test_copy_descriptions_are_validated():
    good, small = CopyDesc.shapes(100, 20)
    assert good.total_size_in_bytes % 16 == 0 and good.total_size_in_bytes >= 100 and good.sizes[:2] == small.sizes[:2]
    with pytest.raises(pg.ValidationError, match="^input"):
        CopyDesc(pg.TensorDesc("float32", good.sizes), good)
    with pytest.raises(pg.ValidationError, match="^output.sizes"):
        CopyDesc(good, pg.TensorDesc("uint32", (1, 1, 5)))
    with pytest.raises(pg.ValidationError, match="^output.sizes"):
        CopyDesc(good, pg.TensorDesc("uint32", (1, 2, 4)))  # planes differ
    with pytest.raises(pg.ValidationError, match="^workgroup_size"):
        CopyDesc(good, small, 64, 17)


def test_a_peer_in_a_worker_process_answers_checked_results_and_is_sent_each_input_once(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    from bench import peers
    from bench.peers import Worker, _Remote

    data = cases.Data(cases.CASES["A"], "float32", tiny=True, seed=0)
    problem = cases.build("max_idx", data)
    worker = Worker("peer_torch", sys.executable, None, tmp_path / "worker.log")
    try:
        assert worker.start()["status"] == "ok"
        remote = _Remote(worker)
        remote._call(command="prepare", arguments=dict(spec=problem.spec, inputs=problem.inputs, layout="nhwc"))
        assert remote.seconds() > 0
        outputs = remote.outputs()
        assert check(outputs, problem) == ""
        # the same input again goes as its token: the worker holds it
        sent = []
        real_send = peers.send_frame
        monkeypatch.setattr(peers, "send_frame", lambda stream, message: (sent.append(message), real_send(stream, message)))
        avg = cases.build("avg", data)
        remote._call(command="prepare", arguments=dict(spec=avg.spec, inputs=avg.inputs, layout="nchw"))
        assert sent[-1]["arguments"]["inputs"]["x"] == {"cached": next(iter(worker.held))} and len(worker.held) == 1
        assert check(remote.outputs(), avg) == ""
        reply = worker.call(command="prepare", arguments=dict(spec=dict(problem.spec, op="roi"), inputs={}, layout="nchw"))
        assert reply["status"] == "unsupported" and "torchvision" in reply["reason"]
        worker.stop()
        worker.call(command="prepare", arguments=dict(spec=avg.spec, inputs=avg.inputs, layout="nchw"))  # restarted
        assert isinstance(sent[-1]["arguments"]["inputs"]["x"], np.ndarray)  # sent again: the new worker holds nothing
    finally:
        worker.stop()


@pytest.mark.parametrize("peer, module", [("torch", "torch"), ("ort-cpu", "onnxruntime")])
def test_in_process_peers_agree_with_the_reference_wherever_they_run(peer, module, tmp_path):
    pytest.importorskip(module)
    if peer.startswith("ort"):
        pytest.importorskip("onnx")  # the models are built with onnx.helper
    from bench.peer_base import Unsupported
    from bench.peers import discover

    (found,) = discover([peer], [], tmp_path)
    assert found.status is None, found.status
    ran = 0
    for case in cases.CASES.values():
        integer = all(np.dtype(d).kind in "iu" for d in case.dtypes)   # (case Q: quantized values)
        data = cases.Data(case, case.dtypes[0] if integer else "float32", tiny=True, seed=1)
        for op in case.ops:
            problem = cases.build(op, data)
            if problem is None:
                continue
            try:
                prepared = found.prepare(problem, "nchw")
            except Unsupported:
                continue
            assert check(prepared.outputs(), problem) == "", (case.name, op)
            assert prepared.seconds() > 0
            ran += 1
    assert ran >= 20


def test_kernel_variants_are_checked_then_timed_and_leave_the_tuning_as_it_was(device, monkeypatch):
    if "timestamp-query" not in device.features:
        pytest.skip(f"{device.name} has no timestamp-query")
    real_check = variants.check
    # a variant whose result is wrong (here: said to be) is reported, never timed
    monkeypatch.setattr(variants, "check", lambda outputs, problem: "wrong" if device.tuning.lines_workgroup == 64
                        else real_check(outputs, problem))
    problem = cases.build("max_idx", cases.Data(cases.CASES["A"], "float16", True, 0).repeated(8))  # 16 planes
    with tuned_for(device, "gpu"):
        results = variants.compare_problem(device, problem, "nchw", ["current", "out1+wg128", "wg64", "out2"], rounds=2)
        assert device.tuning == dataclasses.replace(pg.Tuning.for_gpu(), generic_calls=0)  # (tuned_for's)
    assert results.pop("wg64") == "check failed: wrong"
    # a variant compiling to the kernels of one before it is not run again (the GPU preset has two outputs)
    assert results.pop("out2") == "same kernels as current"
    assert set(results) == {"copy", "current", "out1+wg128"}
    assert all(isinstance(r, tuple) and 0 < r[0] <= r[1] for r in results.values())
    gpu = pg.Tuning.for_gpu()
    assert variants.variant("out1+wg128", gpu) == dataclasses.replace(gpu, outputs_per_invocation=1, lines_workgroup=128)
    with pytest.raises(SystemExit, match="unknown variant"):
        variants.variant("out2+nonsense", gpu)


def test_kernel_variants_in_both_layouts_are_timed_in_the_same_rounds(device):
    if "timestamp-query" not in device.features:
        pytest.skip(f"{device.name} has no timestamp-query")
    problem = cases.build("avg", cases.Data(cases.CASES["C"], "float32", True, 0))
    with tuned_for(device, "cpu"):
        results = variants.compare_problem(device, problem, ("nchw", "nhwc"), ["current", "nopacked"], rounds=2)
    # packed planes change the NCHW kernels only: channels-last planes are not contiguous
    assert results.pop("nopacked nhwc") == "same kernels as current nhwc"
    assert set(results) == {"copy", "current nchw", "nopacked nchw", "current nhwc"}
    assert all(isinstance(r, tuple) and 0 < r[0] <= r[1] for r in results.values())


def test_scale_runs_the_gpu_cases_repeated_along_n_first_and_measures_the_ceiling(device, tmp_path):
    if device.backend != "vulkan":  # (the plumbing is the adapter's no more than the other rows')
        pytest.skip("--scale is for GPUs, reached through Vulkan: its plumbing is tested on the Vulkan adapter")
    code, results = _bench(device, tmp_path, "--scale", "--cases", "A,C,3D", "--ops", "max,max_fwd_bwd", "--no-ratios")
    assert code == 0 and results["settings"]["scale"]
    rows = results["rows"]
    scaled = [r for r in rows if r.get("scaled")]
    # the bandwidth rows first, then the standard (latency) rows of every case
    assert [(r["case"], r["op"]) for r in scaled] == [(c, op) for c in ("A", "C", "3D") for op in ("max", "max_fwd_bwd")]
    assert rows[:6] == scaled and {r["case"] for r in rows[6:]} == {"A", "C", "3D"}
    for row in scaled:
        standard = next(r for r in rows[6:] if (r["case"], r["op"]) == (row["case"], row["op"]))
        assert row["status"] == "ok" and row["check"] == "ok" and row["batch"] == cases.SCALE_BATCH[row["case"]]
        repeats = cases.SCALE_BATCH[row["case"]] // cases.CASES[row["case"]].sizes[0]
        assert row["input_sizes"] == [standard["input_sizes"][0] * repeats] + standard["input_sizes"][1:]
        assert row["read_bytes"] == repeats * standard["read_bytes"]
    ceiling = results["ceiling"]
    assert ceiling["bytes"] == 1 << 20 and ceiling["size_note"] == "--tiny"
    for way in ("copy_kernel", "copy_buffer_to_buffer"):
        assert ceiling[way]["status"] == "ok" and ceiling[way]["gb_per_s"] > 0, ceiling[way]
        assert ceiling[way]["gb_per_s"] == pytest.approx(2 * (1 << 20) / (ceiling[way]["min_ms"] * 1e6))
    assert ceiling["torch_clone"]["status"] == "unavailable"  # --no-peers
    table = (tmp_path / "bench.md").read_text()
    assert "| A N=8 | max |" in table and "| A | max |" in table and "copy_buffer_to_buffer" in table


def test_repeated_data_holds_the_references_of_the_standard_data_repeated():
    for name in cases.SCALE_BATCH:
        base = cases.Data(cases.CASES[name], "float16", tiny=True, seed=3)
        big = base.repeated(2)
        for op in cases.CASES[name].ops:
            if op.endswith("1000"):  # (the 100-region rows' boxes, ten times over: the same repetition)
                continue
            problem = cases.build(op, big)
            if problem is None:
                continue
            direct = cases._build(op, big)  # the reference run on the repeated input itself
            assert check({k: v for k, (v, _) in problem.expected.items()}, direct) == "", (name, op)
            assert problem.spec["x_sizes"][0] == 2 * base.sizes[0]
        assert cases.build("max", big) is cases.build("max", big)  # built once per Data


def test_a_deadline_leaves_the_rows_it_does_not_reach_as_not_run(device, tmp_path):
    code, results = _bench(device, tmp_path, "--cases", "C", "--ops", "max,avg", "--deadline-s", "0")
    assert code == 0
    assert [r["status"] for r in results["rows"]] == ["not run", "not run"] and results["ratios"] == []
    assert results["deadline"] == {"deadline_s": 0.0, "rows_not_run": 2}
    assert "Not run: 2 rows" in (tmp_path / "bench.md").read_text()


def test_every_row_is_written_as_it_is_measured(device, tmp_path, monkeypatch):
    written = []
    real = run.Bench.checkpoint
    monkeypatch.setattr(run.Bench, "checkpoint", lambda self, results: (
        real(self, results), written.append(json.loads(self.args.json.read_text()))))
    _bench(device, tmp_path, "--cases", "C", "--ops", "max,avg", "--no-ratios")
    assert [len(w["rows"]) for w in written] == [1, 2] and all(w["partial"] for w in written)
    assert "partial" not in json.loads((tmp_path / "bench.json").read_text())
