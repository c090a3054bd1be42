"""poolgpu.onnx.run_node and poolgpu.onnx.OPS against ONNX Runtime's CPU provider: nodes
built with onnx.helper for every pooling op type and the attributes that change results,
and a small model through onnx.reference.ReferenceEvaluator with pgo.OPS, on every adapter.

ONNX Runtime reads models of IR version 10 and below, so the models compared set it."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

import poolgpu as pg  # noqa: E402
from poolgpu import onnx as pgo  # noqa: E402

IR_VERSION = 10  # the newest ONNX Runtime 1.31 reads


def elem_type(array):
    return helper.np_dtype_to_tensor_dtype(np.asarray(array).dtype)


def model_of(nodes, inputs, outputs, opset=22):
    """A model of `nodes`; `inputs`: name -> array; `outputs`: names, of the first input's type
    except those named "i" (int64 indices)."""
    first = elem_type(next(iter(inputs.values())))
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info(n, elem_type(a), a.shape) for n, a in inputs.items()],
        [helper.make_tensor_value_info(n, TensorProto.INT64 if n == "i" else first, None) for n in outputs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = IR_VERSION
    return model


def onnx_runtime(model, feeds):
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def node_and_inputs(op_type, arrays, outputs=("y",), **attributes):
    names = [f"in{i}" if a is not None else "" for i, a in enumerate(arrays)]
    return helper.make_node(op_type, names, list(outputs), **attributes), names


def compare(device, op_type, arrays, outputs=("y",), opset=22, **attributes):
    """run_node against ONNX Runtime on one node: same outputs, types and shapes."""
    node, names = node_and_inputs(op_type, arrays, outputs, **attributes)
    feeds = {n: a for n, a in zip(names, arrays) if n}
    expected = onnx_runtime(model_of([node], feeds, [o for o in outputs if o], opset), feeds)
    got = pgo.run_node(node, arrays, opset=opset, device=device)
    assert len(got) == len(outputs)
    for g, e in zip([g for g, o in zip(got, outputs) if o], expected):
        assert isinstance(g, np.ndarray) and g.dtype == e.dtype and g.shape == e.shape, (g.dtype, g.shape, e.shape)
        if g.dtype.kind == "f":
            tol = 2e-3 if g.dtype == np.float16 else 1e-5
            np.testing.assert_allclose(g, e, rtol=tol, atol=tol)
        else:
            np.testing.assert_array_equal(g, e)
    return got


def values(shape, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind in "iu":
        return rng.permutation(np.prod(shape)).reshape(shape).astype(dtype) % 120
    return rng.standard_normal(shape).astype(dtype)


X2 = values((2, 3, 7, 6))
WINDOWED = [  # (op type, input, attributes), each with the node's every attribute as ONNX names it
    ("MaxPool", X2, dict(kernel_shape=[3, 2], pads=[1, 0, 2, 1], strides=[2, 1])),
    ("MaxPool", X2, dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1)),
    ("MaxPool", X2, dict(kernel_shape=[2, 3], dilations=[2, 2], strides=[1, 2])),
    ("MaxPool", X2, dict(kernel_shape=[2, 3], strides=[1, 2], storage_order=1)),
    ("MaxPool", X2, dict(kernel_shape=[3, 2], strides=[2, 2], auto_pad="SAME_UPPER")),
    ("MaxPool", X2, dict(kernel_shape=[3, 2], strides=[2, 2], auto_pad="SAME_LOWER")),
    ("MaxPool", X2, dict(kernel_shape=[3, 2], strides=[2, 1], auto_pad="VALID")),
    ("MaxPool", values((1, 2, 9)), dict(kernel_shape=[4], strides=[3], pads=[2, 1], ceil_mode=1)),
    ("MaxPool", values((1, 2, 4, 5, 6)), dict(kernel_shape=[2, 2, 3], strides=[2, 2, 2], storage_order=1)),
    ("MaxPool", values((1, 2, 6, 5), np.int8), dict(kernel_shape=[2, 2], strides=[2, 2], pads=[0, 0, 1, 1])),
    ("MaxPool", values((1, 2, 6, 5), np.uint8), dict(kernel_shape=[3, 3], auto_pad="SAME_UPPER")),
    ("AveragePool", X2, dict(kernel_shape=[3, 3], pads=[1, 1, 2, 1])),
    ("AveragePool", X2, dict(kernel_shape=[3, 3], pads=[1, 1, 2, 1], count_include_pad=1)),
    ("AveragePool", X2, dict(kernel_shape=[3, 2], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1, count_include_pad=1)),
    ("AveragePool", X2, dict(kernel_shape=[2, 2], dilations=[2, 3], pads=[1, 1, 1, 1], count_include_pad=1)),
    ("AveragePool", X2, dict(kernel_shape=[3, 2], strides=[2, 2], auto_pad="SAME_LOWER", count_include_pad=1)),
    ("AveragePool", values((1, 2, 6, 5), np.float16), dict(kernel_shape=[2, 3], strides=[2, 1], pads=[0, 1, 1, 1])),
    ("LpPool", X2, dict(kernel_shape=[3, 2], pads=[1, 0, 1, 1], p=3)),
    ("LpPool", X2, dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1, p=1)),
    ("LpPool", X2, dict(kernel_shape=[2, 2], dilations=[2, 2], pads=[0, 1, 1, 1])),
]


@pytest.mark.parametrize("op_type, x, attributes", WINDOWED,
                         ids=[f"{op}-{i}" for i, (op, _, _) in enumerate(WINDOWED)])
def test_windowed_nodes_match_onnx_runtime(device, op_type, x, attributes):
    outputs = ("y", "i") if op_type == "MaxPool" else ("y",)
    compare(device, op_type, [x], outputs, **attributes)


def test_maxpool_without_its_indices_output(device):
    got = compare(device, "MaxPool", [X2], ("y", ""), kernel_shape=[2, 2], strides=[2, 2])
    assert got[1] is None  # left out, not computed
    compare(device, "MaxPool", [X2], ("y",), kernel_shape=[2, 2], strides=[2, 2])


@pytest.mark.parametrize("op_type, attributes", [("GlobalMaxPool", {}), ("GlobalAveragePool", {}),
                                                 ("GlobalLpPool", {}), ("GlobalLpPool", {"p": 3})])
def test_global_nodes_match_onnx_runtime(device, op_type, attributes):
    opset = 21  # ONNX Runtime 1.31 implements GlobalLpPool up to its version 2, not 22
    compare(device, op_type, [X2], opset=opset, **attributes)
    compare(device, op_type, [values((1, 2, 3, 4, 5), seed=1)], opset=opset, **attributes)


def test_maxunpool_with_and_without_output_shape(device):
    x = values((1, 2, 5, 7))
    window = dict(kernel_shape=[2, 2], strides=[2, 2])
    y, i = pgo.run_node(helper.make_node("MaxPool", ["x"], ["y", "i"], **window), [x], device=device)
    compare(device, "MaxUnpool", [y, i, np.array(x.shape, np.int64)], **window)  # every maximum back in place
    even = values((1, 2, 4, 6), seed=2)
    y, i = pgo.run_node(helper.make_node("MaxPool", ["x"], ["y", "i"], **window), [even], device=device)
    (expected,) = compare(device, "MaxUnpool", [y, i], **window)
    # the optional input named "" (ONNX Runtime 1.31 then fails with "input count mismatch")
    node = helper.make_node("MaxUnpool", ["y", "i", ""], ["u"], **window)
    for inputs in ([y, i, None], [y, i]):
        np.testing.assert_array_equal(pgo.run_node(node, inputs, device=device)[0], expected)


def test_maxunpool_indices_past_the_inferred_output_say_to_pass_output_shape(device):
    """5x7 pooled by 2x2 windows infers a 4x6 output that cannot hold every index: ONNX
    Runtime refuses it, and poolgpu says what to do."""
    x = values((1, 1, 5, 7))
    window = dict(kernel_shape=[2, 2], strides=[2, 2])
    y, i = pgo.run_node(helper.make_node("MaxPool", ["x"], ["y", "i"], **window), [x], device=device)
    assert i.max() >= 24  # indices reach past the inferred 4x6 output
    node, names = node_and_inputs("MaxUnpool", [y, i], **window)
    with pytest.raises(Exception, match="out of bounds"):
        onnx_runtime(model_of([node], dict(zip(names, [y, i])), ["y"]), dict(zip(names, [y, i])))
    for indices in (i, device.upload(i), -i - 1):
        with pytest.raises(pg.ValidationError, match="^indices: .*outside the inferred output shape .*pass "
                                                     "MaxPool's input shape as output_shape"):
            pgo.max_unpool(y, indices, **window, device=device)


def test_maxroipool_matches_onnx_runtime(device):
    x = values((2, 3, 9, 11))
    rois = np.array([[0, 1, 1, 6, 5], [1, 0, 2, 10, 8], [0, 3.4, 2.6, 7.5, 8.5], [1, -2, -1, 3, 4]], np.float32)
    opset = 21  # ONNX Runtime 1.31 implements MaxRoiPool's version 1, not 22
    compare(device, "MaxRoiPool", [x, rois], opset=opset, pooled_shape=[2, 3])
    compare(device, "MaxRoiPool", [x, rois], opset=opset, pooled_shape=[3, 2], spatial_scale=0.5)


def test_an_older_opset_gives_its_attributes_and_defaults(device):
    """Attributes an opset lacks are refused, as ONNX Runtime refuses the model."""
    compare(device, "MaxPool", [X2], ("y", "i"), opset=8, kernel_shape=[2, 2], strides=[2, 1], storage_order=1)
    compare(device, "AveragePool", [X2], opset=11, kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=1)
    compare(device, "LpPool", [X2], opset=11, kernel_shape=[2, 3])
    node, names = node_and_inputs("AveragePool", [X2], kernel_shape=[2, 2], dilations=[2, 2])
    with pytest.raises(Exception):
        onnx_runtime(model_of([node], {names[0]: X2}, ["y"], opset=11), {names[0]: X2})
    with pytest.raises(pg.ValidationError, match=r"^dilations: AveragePool-11 \(in force at opset 11\) has no attribute 'dilations'"):
        pgo.run_node(node, [X2], opset=11, device=device)
    with pytest.raises(pg.ValidationError, match=r"^node.output: MaxPool-1 \(in force at opset 7\) has at most 1"):
        pgo.run_node(helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[2, 2]), [X2], opset=7)
    with pytest.raises(pg.ValidationError, match="^opset: MaxUnpool does not exist in opset 8"):
        pgo.run_node(helper.make_node("MaxUnpool", ["x", "i"], ["y"], kernel_shape=[2]), [X2, X2], opset=8)


def test_auto_pad_same_with_dilations_follows_onnx_not_onnx_runtime(device):
    """ONNX's shape inference (and its operator text) pads SAME by the dilated window, to an
    output of ceil(in / stride); ONNX Runtime pads by the undilated kernel and so gives a
    smaller output.  poolgpu follows ONNX."""
    attributes = dict(kernel_shape=[3, 2], dilations=[2, 2], strides=[1, 2], auto_pad="SAME_UPPER")
    node = helper.make_node("MaxPool", ["x"], ["y"], **attributes)
    model = model_of([node], {"x": X2}, ["y"])
    inferred = onnx.shape_inference.infer_shapes(model).graph.output[0].type.tensor_type.shape
    inferred = tuple(d.dim_value for d in inferred.dim)
    (got,) = pgo.run_node(node, [X2], device=device)
    assert got.shape == inferred == (2, 3, 7, 3)
    assert onnx_runtime(model, {"x": X2})[0].shape != inferred
    padded = np.pad(X2, [(0, 0), (0, 0), (2, 2), (0, 1)], constant_values=-np.inf)  # total (7-1)*1+5-7=4, 1
    expected = np.stack([padded[:, :, dh:dh + 7, dw:dw + 5:2] for dh in (0, 2, 4) for dw in (0, 2)]).max(axis=0)
    np.testing.assert_array_equal(got, expected)


def test_run_node_refuses_what_is_no_pooling_node(device):
    with pytest.raises(pg.ValidationError, match="^node.op_type: Conv is no ONNX pooling operator; run_node takes "
                                                 "MaxPool, AveragePool"):
        pgo.run_node(helper.make_node("Conv", ["x", "w"], ["y"]), [X2, X2])
    with pytest.raises(pg.ValidationError, match="^node.op_type: com.example::MaxPool"):
        pgo.run_node(helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], domain="com.example"), [X2])
    with pytest.raises(pg.ValidationError, match="^node: expected an onnx.NodeProto"):
        pgo.run_node("MaxPool", [X2])
    with pytest.raises(pg.ValidationError, match=r"^kernel_shapes: MaxPool-\d+ .*has no attribute 'kernel_shapes'"):
        pgo.run_node(helper.make_node("MaxPool", ["x"], ["y"], kernel_shapes=[2, 2]), [X2])
    with pytest.raises(pg.ValidationError, match=r"^kernel_shape: MaxPool-\d+ .*needs the attribute"):
        pgo.run_node(helper.make_node("MaxPool", ["x"], ["y"]), [X2])
    with pytest.raises(pg.ValidationError, match="^auto_pad: expected one of 'NOTSET'"):
        pgo.run_node(helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], auto_pad="SAME"), [X2])
    with pytest.raises(pg.ValidationError, match="^inputs"):
        pgo.run_node(helper.make_node("MaxUnpool", ["x", "i"], ["y"], kernel_shape=[2, 2]), [X2])
    with pytest.raises(pg.ValidationError, match="^inputs"):
        pgo.run_node(helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2]), [X2, X2])


def test_string_attributes_may_be_bytes(device):
    node = helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[3, 2], auto_pad="SAME_LOWER")
    attributes = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    assert attributes["auto_pad"] == b"SAME_LOWER"
    np.testing.assert_array_equal(pgo.average_pool(X2, **attributes, device=device),
                                  pgo.average_pool(X2, kernel_shape=[3, 2], auto_pad="SAME_LOWER", device=device))


def test_a_model_runs_through_the_reference_evaluator_with_its_pooling_on_poolgpu(device, monkeypatch):
    monkeypatch.setattr("poolgpu.device._default_device", device)  # where pgo.OPS runs its nodes
    x = values((1, 3, 9, 7), seed=4)
    rois = np.array([[0, 1, 1, 5, 6], [0, 0, 0, 6, 8]], np.float32)
    nodes = [
        helper.make_node("MaxPool", ["x"], ["p", "i"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("MaxUnpool", ["p", "i", "shape"], ["u"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Relu", ["u"], ["r"]),
        helper.make_node("AveragePool", ["r"], ["a"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], ceil_mode=1,
                         strides=[2, 2], count_include_pad=1),
        helper.make_node("LpPool", ["a"], ["l"], kernel_shape=[2, 2], p=3),
        helper.make_node("GlobalAveragePool", ["l"], ["g"]),
        helper.make_node("MaxRoiPool", ["x", "rois"], ["roi"], pooled_shape=[2, 2]),
        helper.make_node("GlobalMaxPool", ["roi"], ["gm"]),
        helper.make_node("GlobalLpPool", ["u"], ["gl"]),
    ]
    feeds = {"x": x, "rois": rois}
    model = model_of(nodes, feeds, ["g", "i", "gm", "gl"], opset=21)  # ONNX Runtime's MaxRoiPool, GlobalLpPool
    evaluator = ReferenceEvaluator(model, new_ops=pgo.OPS)
    pooling = [n for n in evaluator.rt_nodes_ if n.onnx_node.op_type not in ("Shape", "Relu")]
    assert len(pooling) == 8 and all(type(n) in tuple(pgo.OPS) for n in pooling)
    got = evaluator.run(None, feeds)
    expected = onnx_runtime(model, feeds)
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype and g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)


def test_the_package_imports_onnx_only_for_nodes():
    import subprocess
    import sys

    code = ("import sys, poolgpu, poolgpu.onnx as pgo\n"
            "from poolgpu.onnx import *\n"
            "assert 'onnx' not in sys.modules, 'imported onnx'\n"
            "print(len(pgo.OPS), sorted(n for n in dir(pgo) if not n.startswith('_')) == sorted(pgo.__all__))\n"
            "pgo.OPS[0]\n"
            "assert 'onnx' in sys.modules")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.split() == ["11", "True"], out.stderr
    assert [c.__name__ for c in pgo.OPS] == ["MaxPool", "AveragePool", "LpPool", "GlobalMaxPool",
                                            "GlobalAveragePool", "GlobalLpPool", "MaxUnpool", "MaxRoiPool",
                                            "RoiAlign", "QLinearAveragePool", "QLinearGlobalAveragePool"]
    assert {c.op_domain for c in pgo.OPS[9:]} == {"com.microsoft"}
