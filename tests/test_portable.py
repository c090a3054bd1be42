"""Portable kernels: a bundle written by ``op.export`` / ``pg.export`` runs in another WebGPU
host with poolgpu's bits.

- The manifest describes the op completely (no GPU): tensors, shaders, dispatches.
- Every case of portable_cases.py (every operator family, data type, layout and kernel, chunked
  programs, long windows) runs under Node's WebGPU (Dawn, whose WGSL compiler is Tint, not
  naga): all bundles in one Node process (js/run-node.mjs), and the bytes of every output
  equal poolgpu's own on every adapter.
- A host written from the manifest alone in Python (examples/wgpu_host.py) gives the same
  bytes on every adapter.
"""

import dataclasses
import importlib.util
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import poolgpu as pg
from conftest import ADAPTERS, _devices
from poolgpu import kernels
from portable_cases import TUNINGS, cases, chunked_cases, covered_kernels, directml_bytes
from test_scale import smallest_bounded

ROOT = Path(__file__).resolve().parents[1]
JS = ROOT / "js"
ALL_CASES = [(case, False) for case in cases()] + [(case, True) for case in chunked_cases()]
CASE_IDS = [case.id + ("-chunked" if chunked else "") for case, chunked in ALL_CASES]


def _wgpu_host():
    spec = importlib.util.spec_from_file_location("wgpu_host", ROOT / "examples" / "wgpu_host.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def poolgpu_bytes(device, desc, arrays, tuning) -> dict:
    """Each output's DirectML bytes as poolgpu computes them (in new buffers of their own)."""
    op = pg.Op(device, desc, tuning)
    inputs = [device.upload(arrays[role], strides=t.strides) for role, t in desc.input_tensors()]
    outputs = op(*inputs)
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    roles = [role for role, t in desc.output_tensors() if t is not None]
    return {role: bytes(device._read(t.buffer, t.offset, t.desc.total_size_in_bytes)) for role, t in zip(roles, outputs)}


def export_case(device, case, chunked: bool, directory: Path):
    """Export the case's bundle into directory/bundle and its inputs into directory/inputs;
    returns (desc, arrays)."""
    desc, arrays = case.describe()
    if chunked:
        small = smallest_bounded(device, desc)
        op = pg.Op(small, desc, TUNINGS[case.tuning])
        assert len(op._program.passes) > len(kernels.program_for(desc, TUNINGS[case.tuning]).passes), "not chunked"
    else:
        op = pg.Op(device, desc, TUNINGS[case.tuning])
    op.export(directory / "bundle", limits="device")  # exactly what it dispatches here, chunks included
    (directory / "inputs").mkdir(parents=True, exist_ok=True)
    for role, t in desc.input_tensors():
        (directory / "inputs" / f"{role}.bin").write_bytes(directml_bytes(arrays[role], t))
    return desc, arrays


def assert_same_bytes(got: dict, expected: dict):
    assert set(got) == set(expected)
    for role, data in expected.items():
        if got[role] != data:
            a, b = np.frombuffer(got[role], np.uint8), np.frombuffer(data, np.uint8)
            if a.size != b.size:
                pytest.fail(f"{role}: {a.size} bytes, poolgpu's {b.size}")
            bad = np.nonzero(a != b)[0]
            pytest.fail(f"{role}: {bad.size} of {a.size} bytes differ from poolgpu's, first at byte {bad[0]}: "
                        f"{a[bad[0]:bad[0] + 8].tolist()} vs {b[bad[0]:bad[0] + 8].tolist()}")


#: How far Lp pooling with p >= 3 may differ between drivers: WGSL leaves pow()'s precision
#: to the implementation (Mesa 22.3 and 25.0 gave results 1 ulp apart; naga and Tint on
#: the same driver, the same bits).
POW_ULPS = 4
#: The gradient composes two of them (the window's root, then (|x| / y)^(p - 1)), whose
#: errors add: Dawn on Mesa 25 and poolgpu on Mesa 22 gave gradients up to 5 ulp apart.
POW_GRADIENT_ULPS = 8


def assert_within_ulps(got: bytes, expected: bytes, data_type, ulps: int):
    a = np.frombuffer(got, f"int{8 * data_type.size}").astype(np.int64)
    b = np.frombuffer(expected, f"int{8 * data_type.size}").astype(np.int64)
    assert a.size == b.size and ((a < 0) == (b < 0)).all()  # (the results are never negative)
    distance = np.abs(a - b)
    assert distance.max() <= ulps, f"{(distance > ulps).sum()} values more than {ulps} ulp from poolgpu's"


# ---------------------------------------------------------------------------------------
# The manifest (no GPU)


def test_a_bundle_holds_the_manifest_and_one_complete_shader_per_distinct_source(tmp_path):
    x = pg.TensorDesc("float16", (2, 3, 9, 14))
    desc = pg.MaxPooling1Desc(x, output_indices="uint64", window_size=(3, 3), strides=(2, 2), start_padding=(1, 1))
    path = pg.export(desc, tmp_path / "b")
    assert path == tmp_path / "b"
    manifest = json.loads((path / "manifest.json").read_text())
    assert manifest["format"] == "poolgpu-bundle/1" and manifest["operator"] == "max_pool"
    assert manifest["description"]["type"] == "MaxPooling1Desc"
    fields = manifest["description"]["fields"]
    assert fields["window_size"] == [3, 3] and fields["start_padding"] == [1, 1]
    assert fields["input"]["sizes"] == [2, 3, 9, 14] and fields["output_indices"]["data_type"] == "UINT64"
    assert manifest["tuning"] == dataclasses.asdict(pg.Tuning.for_gpu())  # pg.export's default
    tensors = {t["role"]: t for t in manifest["tensors"]}
    assert [(t["role"], t["kind"]) for t in manifest["tensors"]] == [
        ("input", "input"), ("output", "output"), ("output_indices", "output")]
    for role, t in desc.input_tensors() + desc.output_tensors():
        assert tensors[role]["data_type"] == t.data_type.name and tensors[role]["sizes"] == list(t.sizes)
        assert tensors[role]["strides"] == list(t.strides) and tensors[role]["byte_size"] == t.total_size_in_bytes
        assert tensors[role]["buffer_size"] >= t.total_size_in_bytes and tensors[role]["buffer_size"] % 16 == 0
    assert sorted(p.name for p in path.iterdir()) == sorted(["manifest.json"] + manifest["shaders"])
    program = kernels.program_for(desc, pg.Tuning.for_gpu())
    assert len(manifest["dispatches"]) == len(program.passes)
    for dispatch, pass_ in zip(manifest["dispatches"], program.passes):
        source = (path / dispatch["shader"]).read_text()
        data_types = tuple(desc.input.data_type if r == "input" else None if r is None else
                           dict(desc.output_tensors())[r].data_type for r in pass_.tensors)
        assert source == kernels.shader_source(pass_.kernel, data_types)  # complete: nothing to include
        assert dispatch["constants"] == {k: int(v) if isinstance(v, bool) else v for k, v in pass_.constants}
        assert dispatch["workgroups"] == list(pass_.grid) and dispatch["entry_point"] == "main"
        uniform = bytes.fromhex(dispatch["bindings"][0]["bytes"])
        assert dispatch["bindings"][0] == {"binding": 0, "type": "uniform", "bytes": uniform.hex()}
        assert len(uniform) % 16 == 0 and list(dispatch["params"]) == list(pass_.kernel.fields)
        for b in dispatch["bindings"][1:]:
            assert b["offset"] == 0 and b["size"] <= tensors[b["tensor"]]["buffer_size"]
            assert b["type"] == ("storage" if tensors[b["tensor"]]["kind"] == "output" else "read-only-storage")
    limits = manifest["limits"]
    assert limits["minStorageBufferOffsetAlignment"] == 256 and limits["maxBufferSize"] == tensors["input"]["buffer_size"]
    assert limits["maxStorageBuffersPerShaderStage"] == 3 and limits["maxComputeWorkgroupsPerDimension"] >= 1
    size = [dict(manifest["dispatches"][0]["constants"]).get(f"WG_{a}", 1) for a in "XYZ"]
    assert [limits[f"maxComputeWorkgroupSize{a}"] for a in "XYZ"] == size  # (the walk's @workgroup_size)
    assert limits["maxComputeInvocationsPerWorkgroup"] == size[0] * size[1] * size[2]


def test_a_chunked_op_exports_every_dispatch_with_its_byte_ranges(tmp_path, device):
    case = chunked_cases()[0]
    desc, _ = export_case(device, case, True, tmp_path)
    manifest = json.loads((tmp_path / "bundle" / "manifest.json").read_text())
    limits = manifest["limits"]
    assert limits["maxStorageBufferBindingSize"] <= 2**16
    assert len(manifest["dispatches"]) > len(kernels.program_for(desc, TUNINGS[case.tuning]).passes)
    offsets = {b["offset"] for d in manifest["dispatches"] for b in d["bindings"][1:]}
    assert len(offsets) > 1 and all(o % limits["minStorageBufferOffsetAlignment"] == 0 for o in offsets)


def test_a_bundle_replaces_a_bundle_and_refuses_other_files(tmp_path):
    small = pg.AveragePooling1Desc(pg.TensorDesc("float32", (1, 1, 8)), window_size=(2,))
    big = pg.MaxUnpoolingDesc(pg.TensorDesc("float32", (1, 1, 4)), pg.TensorDesc("uint32", (1, 1, 4)),
                              pg.TensorDesc("float32", (1, 1, 8)))
    pg.export(big, tmp_path / "b")
    pg.export(small, tmp_path / "b")  # the unpooling's shaders go with its manifest
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert sorted(p.name for p in (tmp_path / "b").iterdir()) == sorted(["manifest.json"] + manifest["shaders"])
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(pg.ValidationError, match="directory.*notes.txt.*new or empty"):
        pg.export(small, tmp_path / "other")
    with pytest.raises(pg.ValidationError, match="directory.*is a file"):
        pg.export(small, tmp_path / "other" / "notes.txt")
    assert (tmp_path / "other" / "notes.txt").read_text() == "mine"


def test_export_refuses_what_is_not_a_description_or_a_tuning(tmp_path):
    with pytest.raises(pg.ValidationError, match="desc"):
        pg.export(pg.TensorDesc("float32", (1, 1, 8)), tmp_path)
    with pytest.raises(pg.ValidationError, match="tuning"):
        pg.export(pg.MaxPoolingDesc(pg.TensorDesc("float32", (1, 1, 8)), window_size=(2,)), tmp_path, tuning="gpu")


def test_every_case_has_a_name_of_its_own():
    # (each case's bundle, inputs and outputs go into a directory named by it)
    repeated = sorted({i for i in CASE_IDS if CASE_IDS.count(i) > 1})
    assert not repeated, f"cases named alike: {repeated}: Case.id must tell them apart"


def test_the_cases_reach_every_kernel():
    missing = [f"{k.file} ({', '.join(k.library[-1:])})" for k in kernels.all_kernels() if k not in covered_kernels()]
    assert not missing, f"no portable case dispatches {missing}: add a case reaching them to PINNED in portable_cases.py"


# ---------------------------------------------------------------------------------------
# A host written from the manifest alone: examples/wgpu_host.py on every adapter

WGPU_HOST_CASES = [(case, chunked) for k, (case, chunked) in enumerate(ALL_CASES) if chunked or k % 10 == 0]


@pytest.mark.parametrize("case, chunked", WGPU_HOST_CASES,
                         ids=[i for i, c in zip(CASE_IDS, ALL_CASES) if c in WGPU_HOST_CASES])
def test_a_python_host_written_from_the_manifest_gives_poolgpus_bytes(device, case, chunked, tmp_path):
    desc, arrays = export_case(device, case, chunked, tmp_path)
    inputs = {role: (tmp_path / "inputs" / f"{role}.bin").read_bytes() for role, _ in desc.input_tensors()}
    got = _wgpu_host().run_bundle(device.wgpu_device, tmp_path / "bundle", inputs)
    assert_same_bytes(got, poolgpu_bytes(device, desc, arrays, TUNINGS[case.tuning]))


# ---------------------------------------------------------------------------------------
# Node's WebGPU (Dawn, Tint): every case in one Node process


class NodeRun:
    def __init__(self, root: Path, log: str):
        self.root, self.log = root, log

    def outputs(self, case_id: str) -> dict:
        directory = self.root / case_id / "outputs"
        error = directory / "error.txt"
        if error.is_file():
            pytest.fail(f"Node's WebGPU could not run the bundle: {error.read_text()}")
        if not directory.is_dir():
            pytest.fail(f"run-node.mjs wrote no outputs; its log:\n{self.log[-3000:]}")
        return {p.stem: p.read_bytes() for p in directory.glob("*.bin")}


def node_problem():
    """Why the Node tests cannot run here, or None."""
    if shutil.which("node") is None:
        return "Node.js is not installed (scripts/test.sh installs Debian's nodejs and npm)"
    if not (JS / "node_modules" / "webgpu").is_dir():
        return "js/node_modules lacks the webgpu package: run `npm install` in js/ (scripts/test.sh does)"
    if not ADAPTERS:
        return "no WebGPU adapter to compute poolgpu's results"
    return None


@pytest.fixture(scope="session")
def node_run(tmp_path_factory):
    problem = node_problem()
    if problem:
        pytest.skip(problem)
    adapter = ADAPTERS[0]
    device = _devices[(adapter["backend"], adapter["name"])]
    root = tmp_path_factory.mktemp("bundles")
    args = []
    for (case, chunked), case_id in zip(ALL_CASES, CASE_IDS):
        export_case(device, case, chunked, root / case_id)
        args += [str(root / case_id / d) for d in ("bundle", "inputs", "outputs")]
    for name, spoil in BROKEN.items():  # bundles that must fail, each saying why
        export_case(device, ALL_CASES[0][0], False, root / name)
        spoil(root / name)
        args += [str(root / name / d) for d in ("bundle", "inputs", "outputs")]
    env = dict(os.environ)
    proc = subprocess.run(["node", str(JS / "run-node.mjs"), *args], capture_output=True, text=True, env=env,
                          timeout=900)
    log = proc.stdout + proc.stderr
    if proc.returncode == 3:
        pytest.skip("Node's WebGPU (Dawn) found no adapter: " + log.strip().splitlines()[-1])
    if proc.returncode not in (0, 1):
        pytest.fail(f"run-node.mjs exited with {proc.returncode}:\n{log[-3000:]}")
    return NodeRun(root, log)


def _edit_manifest(directory: Path, edit):
    path = directory / "bundle" / "manifest.json"
    manifest = json.loads(path.read_text())
    edit(manifest)
    path.write_text(json.dumps(manifest))


def _spoil_shader(directory: Path):
    shader = next((directory / "bundle").glob("*.wgsl"))
    shader.write_text(shader.read_text() + "\nfn broken( {\n")


def _truncate_input(directory: Path):
    path = directory / "inputs" / "input.bin"
    path.write_bytes(path.read_bytes()[:-8])


# name -> how the bundle (or its inputs) is spoiled; what run-node.mjs must say
BROKEN = {
    "broken-format": lambda d: _edit_manifest(d, lambda m: m.update(format="poolgpu-bundle/0")),
    "broken-shader": _spoil_shader,
    "broken-input": _truncate_input,
    "broken-limit": lambda d: _edit_manifest(d, lambda m: m["limits"].update(maxComputeWorkgroupsPerDimension=2**40)),
}
BROKEN_SAYS = {
    "broken-format": r"not a poolgpu-bundle/1 bundle \(format: \"poolgpu-bundle/0\"\)",
    "broken-shader": r"\.wgsl does not compile:\n  \S+\.wgsl:\d+:\d+: ",
    "broken-input": r"run: input has \d+ bytes; its [A-Z]+[0-9]+ elements \[.*\] at strides \[.*\] take \d+",
    "broken-limit": r"the device's maxComputeWorkgroupsPerDimension is \d+, the bundle needs 1099511627776",
}


@pytest.mark.parametrize("name", BROKEN)
def test_node_webgpu_refuses_a_broken_bundle_saying_why(node_run, name):
    error = node_run.root / name / "outputs" / "error.txt"
    assert error.is_file(), f"run-node.mjs ran the {name} bundle"
    assert re.search(BROKEN_SAYS[name], error.read_text()), error.read_text()


@pytest.mark.parametrize("case, chunked", ALL_CASES, ids=CASE_IDS)
def test_node_webgpu_gives_poolgpus_bytes(node_run, device, case, chunked):
    case_id = case.id + ("-chunked" if chunked else "")
    desc, arrays = case.describe()
    got, expected = node_run.outputs(case_id), poolgpu_bytes(device, desc, arrays, TUNINGS[case.tuning])
    if case.operator in ("lp", "lp_grad") and desc.p not in (1, 2):
        # pow's precision is the driver's (WGSL): Node's Dawn runs on Mesa 25's lavapipe
        role = "output" if case.operator == "lp" else "output_gradient"
        assert_within_ulps(got[role], expected[role], getattr(desc, role).data_type,
                           POW_ULPS if case.operator == "lp" else POW_GRADIENT_ULPS)
    else:
        assert_same_bytes(got, expected)


@pytest.mark.parametrize("data_type", ["float32", "float16", "bfloat16"])
def test_a_computed_nan_is_the_canonical_quiet_nan_on_every_adapter(device, data_type):
    # (WGSL leaves an arithmetic NaN's sign and payload to the implementation)
    x = np.array([[[np.nan, 1.0, -np.nan, 2.0, np.inf, -np.inf]]], np.float32).astype(pg.DataType.of(data_type).numpy)
    canonical = {"float32": 0x7FC00000, "float16": 0x7E00, "bfloat16": 0x7FC0}[data_type]
    average = pg.average_pool(x, (2,), strides=(2,), device=device)
    lp = pg.lp_pool(x, (2,), p=3, strides=(2,), device=device)
    for y, nans in ((average, 3), (lp, 2)):
        bits = np.asarray(y).view(f"uint{8 * x.itemsize}").ravel()
        assert (bits[:nans] == canonical).all(), [hex(b) for b in bits]
    assert np.asarray(lp).ravel()[2] == np.inf
