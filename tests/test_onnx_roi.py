"""poolgpu.onnx.max_roi_pool (ONNX MaxRoiPool) on every adapter.

The expected values come from onnx.reference's ReferenceEvaluator where it implements
MaxRoiPool.  onnx 1.23 does not (building the evaluator raises "No registered implementation
for operator 'MaxRoiPool'"), and ONNX's operator page leaves the bin arithmetic to
implementations; DirectML implements MaxRoiPool with ROI_POOLING, so the tests then compare
against tests/reference.py's roi_pool, written from DirectML's formulas.
"""

import numpy as np
import pytest

import poolgpu as pg
import reference
from helpers import same_bits
from poolgpu import onnx as pgo

onnx = pytest.importorskip("onnx")


def onnx_max_roi_pool(x, rois, pooled_shape, spatial_scale=None):
    """Y from onnx.reference's ReferenceEvaluator, or None where it has no MaxRoiPool."""
    from onnx import TensorProto, helper
    from onnx.reference import ReferenceEvaluator

    attributes = {"pooled_shape": list(pooled_shape)}
    if spatial_scale is not None:
        attributes["spatial_scale"] = spatial_scale
    elem = TensorProto.FLOAT16 if x.dtype == np.float16 else TensorProto.FLOAT
    graph = helper.make_graph(
        [helper.make_node("MaxRoiPool", ["X", "rois"], ["Y"], **attributes)], "max_roi_pool",
        [helper.make_tensor_value_info("X", elem, None), helper.make_tensor_value_info("rois", elem, None)],
        [helper.make_tensor_value_info("Y", elem, None)],
    )
    try:
        evaluator = ReferenceEvaluator(helper.make_model(graph))
    except Exception as exc:  # onnx.reference raises its own RuntimeImplementationError
        if "No registered implementation" in str(exc):
            return None
        raise
    return evaluator.run(None, {"X": x, "rois": rois})[0]


def expected_y(x, rois, pooled_shape, spatial_scale=None):
    y = onnx_max_roi_pool(x, rois, pooled_shape, spatial_scale)
    if y is None:
        y = reference.roi_pool(x, rois, pooled_shape, 1.0 if spatial_scale is None else spatial_scale)
    return y


def random_rois(rng, count, n, h, w, scale):
    """ROIs in the input's coordinates divided by spatial_scale, some reaching beyond it."""
    batch = rng.integers(0, n, count)
    x1, x2 = np.sort(rng.integers(-2, int((w + 2) / scale), (2, count)), axis=0)
    y1, y2 = np.sort(rng.integers(-2, int((h + 2) / scale), (2, count)), axis=0)
    return np.stack([batch, x1, y1, x2, y2], axis=1)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("pooled_shape, spatial_scale", [((2, 3), None), ((7, 7), 0.0625), ((1, 4), 0.5), ((3, 1), 2.0)])
def test_max_roi_pool_matches_the_onnx_operator(device, dtype, pooled_shape, spatial_scale):
    rng = np.random.default_rng(sum(pooled_shape) + int(100 * (spatial_scale or 1)))
    x = rng.standard_normal((2, 3, 9, 11)).astype(dtype)
    rois = random_rois(rng, 6, 2, 9, 11, spatial_scale or 1.0).astype(dtype)
    kwargs = {} if spatial_scale is None else {"spatial_scale": spatial_scale}  # ONNX's default: 1.0
    y = pgo.max_roi_pool(x, rois, pooled_shape, device=device, **kwargs)
    assert y.shape == (6, 3) + pooled_shape
    assert same_bits(y, expected_y(x, rois, pooled_shape, spatial_scale))


def test_max_roi_pool_pooled_shape_is_height_then_width(device):
    x = np.arange(4 * 6, dtype=np.float32).reshape(1, 1, 4, 6)  # grows along W, then H
    y = pgo.max_roi_pool(x, np.array([[0, 0, 0, 5, 3]], np.float32), (2, 3), device=device)
    # 2 bins over the 4 rows, 3 over the 6 columns: each bin's max is its bottom-right element
    np.testing.assert_array_equal(y[0, 0], x[0, 0, 1::2, 1::2])


def test_max_roi_pool_tensors_in_tensors_out(device):
    x = np.random.default_rng(12).standard_normal((1, 2, 5, 5)).astype(np.float32)
    rois = np.array([[0, 1, 1, 3, 4]], np.float32)
    yt = pgo.max_roi_pool(device.upload(x), device.upload(rois.reshape(1, 1, 1, 5)), (2, 2))
    assert isinstance(yt, pg.Tensor)
    assert same_bits(yt.numpy(), expected_y(x, rois, (2, 2)))


@pytest.mark.parametrize("kwargs, field", [
    (dict(pooled_shape=(2,)), "pooled_shape"),
    (dict(pooled_shape=(2, 0)), "pooled_shape"),
    (dict(pooled_shape=(2, 2), spatial_scale=0.0), "spatial_scale"),
    (dict(pooled_shape=(2, 2), rois=np.zeros((2, 4), np.float32)), "rois"),
    (dict(pooled_shape=(2, 2), x=np.zeros((1, 1, 4, 4), np.int32)), "x.data_type"),
])
def test_max_roi_pool_validation(device, kwargs, field):
    args = dict(x=np.zeros((1, 1, 4, 4), np.float32), rois=np.zeros((2, 5), np.float32), device=device)
    args.update(kwargs)
    with pytest.raises(pg.ValidationError) as e:
        pgo.max_roi_pool(**args)
    assert e.value.field == field
