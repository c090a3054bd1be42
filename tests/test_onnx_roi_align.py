"""poolgpu.onnx.roi_align and RoiAlign nodes (opsets 10, 16 and 22, both modes, every
attribute) against ONNX Runtime's CPU provider, on every adapter; and the NumPy reference
(tests/roi_align_reference.py) against ONNX Runtime, bit for bit, without a GPU."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper  # noqa: E402

import poolgpu as pg  # noqa: E402
from poolgpu import onnx as pgo  # noqa: E402
from roi_align_reference import onnx_roi_align  # noqa: E402

IR_VERSION = 10  # the newest ONNX Runtime 1.31 reads


def roi_align_node(**attributes):
    return helper.make_node("RoiAlign", ["X", "rois", "batch_indices"], ["Y"], **attributes)


def onnx_runtime(node, x, rois, batch, opset):
    graph = helper.make_graph([node], "g", [
        helper.make_tensor_value_info("X", TensorProto.FLOAT, x.shape),
        helper.make_tensor_value_info("rois", TensorProto.FLOAT, rois.shape),
        helper.make_tensor_value_info("batch_indices", TensorProto.INT64, batch.shape)],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = IR_VERSION
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {"X": x, "rois": rois, "batch_indices": batch})[0]


def random_case(rng, proper):
    n, c, h, w = (int(v) for v in rng.integers(1, 9, 4))
    n, c = min(n, 2), min(c, 3)
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    r = int(rng.integers(1, 5))
    rois = rng.uniform(-3, max(h, w) + 3, (r, 4)).astype(np.float32)
    if proper:  # ONNX Runtime fails on a ROI inverted along one axis only (SafeInt overflow)
        rois[:, 2:] = np.maximum(rois[:, 2:], rois[:, :2])
    return x, rois, rng.integers(0, n, r).astype(np.int64)


def attributes_of(rng, trial):
    return dict(mode=["avg", "max"][trial % 2], output_height=int(rng.integers(1, 4)),
                output_width=int(rng.integers(1, 4)), sampling_ratio=int(rng.integers(0, 3)),
                spatial_scale=float(rng.choice([1.0, 0.5, 2.0, 0.25])),
                coordinate_transformation_mode=["half_pixel", "output_half_pixel"][trial // 2 % 2])


def test_the_reference_is_onnx_runtime_bit_for_bit():
    rng = np.random.default_rng(0)
    for trial in range(120):
        x, rois, batch = random_case(rng, proper=trial % 3 != 0)
        attributes = attributes_of(rng, trial)
        try:
            want = onnx_runtime(roi_align_node(**attributes), x, rois, batch, 16)
        except Exception as exc:  # (ONNX Runtime's SafeInt error on one-axis inverted ROIs)
            assert "SafeInt" in str(exc) or "overflow" in str(exc).lower()
            continue
        got = onnx_roi_align(x, rois, batch, **attributes)
        assert np.array_equal(got, want), (trial, attributes)


@pytest.mark.parametrize("opset", [10, 16, 22])
def test_nodes_match_onnx_runtime(device, opset):
    """(ONNX Runtime 1.31 has no RoiAlign-22, whose attributes and rules are 16's: it is
    compared with ONNX Runtime's RoiAlign-16.)"""
    rng = np.random.default_rng(opset)
    for trial in range(12):
        x, rois, batch = random_case(rng, proper=True)
        attributes = attributes_of(rng, trial)
        if opset == 10:
            del attributes["coordinate_transformation_mode"]
        node = roi_align_node(**attributes)
        want = onnx_runtime(node, x, rois, batch, min(opset, 16))
        (got,) = pgo.run_node(node, [x, rois, batch], opset=opset, device=device)
        assert got.dtype == np.float32 and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=str(attributes))


def test_inverted_and_empty_regions_give_onnx_runtimes_zeros(device):
    x = np.arange(2 * 25, dtype=np.float32).reshape(1, 2, 5, 5)
    rois = np.array([[3, 3, 1, 1], [1, 3, 3, 2.5], [2, 2, 2, 2]], np.float32)
    batch = np.zeros(3, np.int64)
    for mode in ("avg", "max"):
        want = onnx_runtime(roi_align_node(mode=mode, output_height=2, output_width=2), x, rois, batch, 16)
        got = pgo.roi_align(x, rois, batch, mode=mode, output_height=2, output_width=2, device=device)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_max_is_onnx_runtimes_weighted_corners_and_pg_roi_align_interpolates(device):
    x = np.ones((1, 1, 4, 4), np.float32)
    rois = np.array([[1, 1, 3, 3]], np.float32)   # one sample, at (2, 2) less half a pixel: between four ones
    onnx_max = pgo.roi_align(x, rois, [0], mode="max", sampling_ratio=1, device=device)
    interpolated = pg.roi_align(x, rois, [0], 1, sampling_ratio=1, mode="max", device=device)
    # the sample sits between four ones: interpolated 1, each weighted corner 1/4
    assert onnx_max.ravel().tolist() == [0.25] and interpolated.ravel().tolist() == [1.0]


def test_attributes_are_checked():
    x, rois, batch = np.zeros((1, 1, 4, 4), np.float32), np.zeros((1, 4), np.float32), np.zeros(1, np.int64)
    for name, value in (("mode", "sum"), ("coordinate_transformation_mode", "align_corners"),
                        ("sampling_ratio", -1), ("output_height", 0), ("spatial_scale", float("nan"))):
        with pytest.raises(pg.ValidationError) as e:
            pgo.roi_align(x, rois, batch, **{name: value})
        assert e.value.field == name
    with pytest.raises(pg.ValidationError) as e:
        pgo.roi_align(x, rois, np.array([1]))
    assert e.value.field == "batch_indices"
    assert pgo.roi_align(x, rois, batch, mode=b"max").shape == (1, 1, 1, 1)   # bytes, as onnx gives them
