"""ONNX Runtime's quantized average pooling (com.microsoft QLinearAveragePool,
QLinearGlobalAveragePool) against its CPU provider, bit for bit: pgo's functions, run_node
and a model through onnx.reference.ReferenceEvaluator with pgo.OPS, on every adapter;
and what ONNX Runtime refuses, refused alike."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

import poolgpu as pg  # noqa: E402
from poolgpu import onnx as pgo  # noqa: E402

IR_VERSION = 10  # the newest ONNX Runtime 1.31 reads
MS = "com.microsoft"


def quantized_model(op_type, x, x_zero_point=True, y_zero_point=True, **attributes):
    """A model of one quantized node over inputs x, xs, [xz], ys, [yz] (scalars but x)."""
    element = helper.np_dtype_to_tensor_dtype(x.dtype)
    names = ["x", "xs", "xz" if x_zero_point else "", "ys", "yz" if y_zero_point else ""]
    while not names[-1]:
        names.pop()
    node = helper.make_node(op_type, names, ["y"], domain=MS, **attributes)
    types = {"x": (element, x.shape), "xs": (TensorProto.FLOAT, []), "xz": (element, []), "ys": (TensorProto.FLOAT, []),
             "yz": (element, [])}
    inputs = [helper.make_tensor_value_info(n, *types[n]) for n in names if n]
    graph = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("y", element, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)])
    model.ir_version = IR_VERSION
    return model, node


def feeds_of(x, xs, xz, ys, yz):
    feeds = {"x": x, "xs": np.array(xs, np.float32), "ys": np.array(ys, np.float32)}
    if xz is not None:
        feeds["xz"] = np.array(xz, x.dtype)
    if yz is not None:
        feeds["yz"] = np.array(yz, x.dtype)
    return feeds


def onnx_runtime(model, feeds):
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL  # (the node as written)
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)[0]


def _cases():
    """Geometries of 1 to 3 dimensions, both types, every attribute that changes results:
    ceil_mode, count_include_pad, channels_last, auto_pad, zero points left out, kernels
    covering whole planes (ONNX Runtime's global average) with and without padding."""
    rng = np.random.default_rng(11)
    cases = []
    for i in range(14):
        dims = (1, 2, 3)[i % 3]
        spatial = tuple(int(v) for v in rng.integers(2, 9, dims))
        kernel = [int(rng.integers(1, s + 1)) for s in spatial]
        attributes = dict(kernel_shape=kernel, strides=[int(rng.integers(1, 3)) for _ in spatial],
                          ceil_mode=i % 2, count_include_pad=(i // 2) % 2, channels_last=(i // 4) % 2)
        if i % 7 == 3:
            attributes["auto_pad"] = ("SAME_UPPER", "SAME_LOWER", "VALID")[i % 3]
        else:
            attributes["pads"] = [int(rng.integers(0, k)) for k in kernel] * 2
        if i % 5 == 4:   # a kernel covering each plane, unpadded: the global average
            attributes.update(kernel_shape=list(spatial), pads=[0] * (2 * dims), auto_pad="NOTSET")
        dtype = (np.int8, np.uint8)[i % 2]
        scale = np.float32(rng.choice([0.1, 0.05, 0.37, 1 / 3]))
        y_scale = scale if i % 3 else np.float32(rng.uniform(0.01, 0.5))
        zeros = (i % 4 != 1, i % 6 != 2)
        cases.append((dtype, (2, 3) + spatial, scale, y_scale, zeros, attributes, int(rng.integers(2**31))))
    return cases


@pytest.mark.parametrize("case", _cases(), ids=lambda c: f"{np.dtype(c[0]).name}-{len(c[1]) - 2}d")
def test_qlinear_average_pool_gives_onnx_runtimes_bits(device, case):
    dtype, sizes, scale, y_scale, zeros, attributes, seed = case
    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max + 1, sizes).astype(dtype)
    if attributes["channels_last"]:
        x = np.ascontiguousarray(np.moveaxis(x, 1, -1))
    xz = int(rng.integers(info.min, info.max + 1)) if zeros[0] else None
    yz = int(rng.integers(info.min, info.max + 1)) if zeros[1] else None
    # (ONNX Runtime's type inference refuses a node without x_zero_point, which its kernel reads
    # as 0: its results are compared given 0)
    model, _ = quantized_model("QLinearAveragePool", x, True, zeros[1], **attributes)
    want = onnx_runtime(model, feeds_of(x, scale, 0 if xz is None else xz, y_scale, yz))
    _, node = quantized_model("QLinearAveragePool", x, *zeros, **attributes)
    got = pgo.qlinear_average_pool(x, scale, xz, y_scale, yz, device=device, **attributes)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    # the node itself, its zero points left out where the case leaves them out
    inputs = [x, np.float32(scale), xz if xz is None else np.array(xz, dtype), np.float32(y_scale),
              yz if yz is None else np.array(yz, dtype)]
    np.testing.assert_array_equal(pgo.run_node(node, inputs[:len(node.input)], device=device)[0], want)


@pytest.mark.parametrize("channels_last", [0, 1])
def test_qlinear_global_average_pool_gives_onnx_runtimes_bits(device, channels_last):
    rng = np.random.default_rng(12)
    for dtype, sizes in ((np.uint8, (2, 5, 7, 7)), (np.int8, (1, 3, 5)), (np.uint8, (2, 4, 3, 4, 5))):
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max + 1, sizes).astype(dtype)
        if channels_last:
            x = np.ascontiguousarray(np.moveaxis(x, 1, -1))
        xz, yz = (int(v) for v in rng.integers(info.min, info.max + 1, 2))
        for y_scale in (np.float32(0.02), np.float32(0.013)):
            model, node = quantized_model("QLinearGlobalAveragePool", x, channels_last=channels_last)
            want = onnx_runtime(model, feeds_of(x, 0.02, xz, y_scale, yz))
            got = pgo.qlinear_global_average_pool(x, 0.02, xz, y_scale, yz, channels_last=channels_last, device=device)
            np.testing.assert_array_equal(got, want)
            inputs = [x, np.float32(0.02), np.array(xz, dtype), y_scale, np.array(yz, dtype)]
            np.testing.assert_array_equal(pgo.run_node(node, inputs, device=device)[0], want)


def test_a_model_runs_through_the_reference_evaluator_with_pgo_ops():  # (on the default device)
    x = np.random.default_rng(13).integers(0, 256, (1, 4, 9, 9)).astype(np.uint8)
    model, _ = quantized_model("QLinearAveragePool", x, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    feeds = feeds_of(x, 0.05, 128, 0.05, 120)
    want = onnx_runtime(model, feeds)
    got = ReferenceEvaluator(model, new_ops=pgo.OPS).run(None, feeds)[0]
    np.testing.assert_array_equal(got, want)


def test_what_onnx_runtime_refuses_is_refused(device):
    x = np.random.default_rng(14).integers(0, 256, (1, 2, 4, 4)).astype(np.uint8)
    # scales per channel: ONNX Runtime's operators take scalars
    with pytest.raises(pg.ValidationError, match="x_scale"):
        pgo.qlinear_average_pool(x, np.array([0.1, 0.2], np.float32), 0, 0.1, 0, [2, 2], device=device)
    # the global average's multiplier x_scale / (y_scale * 16) below 2^-32
    model, _ = quantized_model("QLinearGlobalAveragePool", x)
    with pytest.raises(Exception, match="out of computation range"):
        onnx_runtime(model, feeds_of(x, 1e-3, 0, 1e8, 0))
    with pytest.raises(pg.ValidationError, match="2\\^-32"):
        pgo.qlinear_global_average_pool(x, 1e-3, 0, 1e8, 0, device=device)
    # ... and QLinearGlobalAveragePool's zero points are required
    node = helper.make_node("QLinearGlobalAveragePool", ["x", "xs", "", "ys", ""], ["y"], domain=MS)
    with pytest.raises(pg.ValidationError, match="x_zero_point, y_zero_point"):
        pgo.run_node(node, [x, np.float32(0.1), None, np.float32(0.1), None], device=device)
    node = helper.make_node("QLinearAveragePool", ["x", "xs", "", "ys"], ["y"], domain=MS, kernel_shape=[2, 2],
                            dilations=[1, 1])
    with pytest.raises(pg.ValidationError, match="no attribute 'dilations'"):
        pgo.run_node(node, [x, np.float32(0.1), None, np.float32(0.1)], device=device)
