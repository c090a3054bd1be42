"""poolgpu.onnx: every ONNX backend node test case of the pooling operators (generated in
memory from the onnx package's own collection), plus random attribute combinations
against onnx.reference.ReferenceEvaluator, on every adapter."""

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

import poolgpu as pg  # noqa: E402
from poolgpu import onnx as pgo  # noqa: E402
from poolgpu.onnx._operators import _geometry  # noqa: E402

OPERATORS = {
    "MaxPool": pgo.max_pool, "AveragePool": pgo.average_pool, "LpPool": pgo.lp_pool,
    "GlobalMaxPool": pgo.global_max_pool, "GlobalAveragePool": pgo.global_average_pool,
    "GlobalLpPool": pgo.global_lp_pool, "MaxUnpool": getattr(pgo, "max_unpool", None),
    "MaxRoiPool": getattr(pgo, "max_roi_pool", None),
}


def _node_cases():
    from onnx.backend.test.case.node import collect_testcases

    with np.errstate(all="ignore"):
        cases = collect_testcases(None)
    return [c for c in cases if c.model.graph.node[0].op_type in OPERATORS and len(c.model.graph.node) == 1]


NODE_CASES = _node_cases()


def run_node(node, inputs, device):
    """Run one ONNX node through poolgpu.onnx on `device`."""
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    attrs = {k: v.decode() if isinstance(v, bytes) else v for k, v in attrs.items()}
    function = OPERATORS[node.op_type]
    tensors = [device.upload(a) if a.dtype != np.int64 or node.op_type != "MaxUnpool" else a for a in inputs]
    if node.op_type == "MaxPool" and len(node.output) == 2:
        attrs["return_indices"] = True
    if node.op_type == "MaxUnpool" and len(inputs) == 3:
        attrs["output_shape"] = tuple(int(v) for v in inputs[2])
        tensors = tensors[:2]
    result = function(*tensors, **attrs)
    result = result if isinstance(result, tuple) else (result,)
    return [r.numpy() if isinstance(r, pg.Tensor) else r for r in result]


def test_the_collection_holds_every_pooling_operator():
    found = {c.model.graph.node[0].op_type for c in NODE_CASES}
    assert {"MaxPool", "AveragePool", "LpPool", "GlobalMaxPool", "GlobalAveragePool", "MaxUnpool"} <= found
    assert len(NODE_CASES) >= 50


# The one node case poolgpu answers differently, on purpose (see poolgpu.onnx's docstring):
# ONNX's reference unpools into the inferred shape and pads that at the ends; poolgpu, like
# ONNX Runtime and PyTorch, reads the indices as flat positions in output_shape.
DIFFERS_ON_PURPOSE = {"test_maxunpool_export_with_output_shape"}


def _check_documented_difference(node, case, device):
    """The case's expected output is ONNX's padded reading, and poolgpu gives the
    output_shape reading instead (and so differs from the case)."""
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    for inputs, expected in case.data_sets:
        x, indices, shape = inputs
        got = run_node(node, inputs, device)[0]
        ours = np.zeros(tuple(shape), x.dtype)
        ours.ravel()[indices.ravel()] = x.ravel()
        np.testing.assert_array_equal(got, ours)
        inferred = x.shape[:2] + tuple((n - 1) * s + k for n, s, k in zip(x.shape[2:], attrs["strides"],
                                                                            attrs["kernel_shape"]))
        padded = np.zeros(inferred, x.dtype)
        padded.ravel()[indices.ravel()] = x.ravel()
        padded = np.pad(padded, [(0, int(o) - i) for o, i in zip(shape, inferred)])
        np.testing.assert_array_equal(expected[0], padded)  # the case encodes ONNX's reading
        assert not np.array_equal(got, expected[0])


def test_the_documented_exception_is_still_in_the_collection():
    assert DIFFERS_ON_PURPOSE <= {c.name for c in NODE_CASES}


@pytest.mark.parametrize("case", NODE_CASES, ids=[c.name for c in NODE_CASES])
def test_onnx_backend_node_case(device, case):
    node = case.model.graph.node[0]
    if OPERATORS[node.op_type] is None:
        pytest.fail(f"poolgpu.onnx lacks {node.op_type}")
    if case.name in DIFFERS_ON_PURPOSE:
        return _check_documented_difference(node, case, device)
    for inputs, expected in case.data_sets:
        got = run_node(node, inputs, device)
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            assert g.dtype == e.dtype and g.shape == e.shape
            np.testing.assert_allclose(g.astype(np.float64), e.astype(np.float64), rtol=max(case.rtol, 1e-5),
                                       atol=max(case.atol, 1e-6))


def onnx_model(op_type, x, n_outputs=1, **attrs):
    node = helper.make_node(op_type, ["x"], ["y", "i"][:n_outputs], **attrs)
    elem = helper.np_dtype_to_tensor_dtype(x.dtype)
    outputs = [helper.make_tensor_value_info("y", elem, None)]
    if n_outputs == 2:
        outputs.append(helper.make_tensor_value_info("i", TensorProto.INT64, None))
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", elem, x.shape)], outputs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)])


@st.composite
def attribute_sets(draw):
    dims = draw(st.integers(1, 3))
    shape = (draw(st.integers(1, 2)), draw(st.integers(1, 3))) + tuple(draw(st.integers(2, 9)) for _ in range(dims))
    kernel = [draw(st.integers(1, 4)) for _ in range(dims)]
    attrs = dict(kernel_shape=kernel, strides=[draw(st.integers(1, 3)) for _ in range(dims)])
    auto_pad = draw(st.sampled_from(["NOTSET", "NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"]))
    if auto_pad == "NOTSET":
        attrs["pads"] = [draw(st.integers(0, k - 1)) for k in kernel] * 2
        attrs["pads"][dims:] = [draw(st.integers(0, k - 1)) for k in kernel]
        attrs["ceil_mode"] = draw(st.integers(0, 1))
        if draw(st.booleans()):
            attrs["dilations"] = [draw(st.integers(1, 2)) for _ in range(dims)]
    else:
        attrs["auto_pad"] = auto_pad
    return shape, attrs, draw(st.sampled_from(["MaxPool", "AveragePool0", "AveragePool1", "LpPool"])), draw(st.integers(0, 2**31))


def reference_run(op_type, x, attrs):
    n_outputs = 2 if op_type == "MaxPool" else 1
    return ReferenceEvaluator(onnx_model(op_type, x, n_outputs, **attrs)).run(None, {"x": x})


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(params=attribute_sets())
def test_random_attributes_match_the_onnx_reference(device, params):
    shape, attrs, op, seed = params
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    op_type = op.rstrip("01")
    if op_type == "AveragePool":
        attrs["count_include_pad"] = int(op[-1])
    # ONNX's reference shifts windows when ceil_mode needs two or more extra padding
    # elements (it spreads them over both ends); those cases are checked against our own
    # derivation in test_ceil_mode_follows_pytorch instead.
    ceil_extra = _geometry(shape[2:], attrs["kernel_shape"], attrs.get("auto_pad", "NOTSET"), attrs.get("ceil_mode", 0),
                               attrs.get("dilations"), attrs.get("pads"), attrs["strides"])
    declared_end = ceil_extra[1]
    assume(all(e - d <= 1 for e, d in zip(ceil_extra[0]["end_padding"], declared_end)))
    # SAME_* with a stride larger than the window asks for negative padding: ONNX's reference
    # then crops the start (pad // 2 = -1) while ONNX Runtime and TensorFlow do not; poolgpu
    # clamps the padding at 0 like them (see README), so the reference is not the judge here.
    # ONNX's reference MaxPool has two paths; the one for unit strides and dilations gets
    # asymmetric pads and indices wrong, so compare against its strided path only (unit
    # strides are covered by the node cases and by test_ceil_mode_follows_pytorch).
    if op_type == "MaxPool":
        assume(any(s != 1 for s in attrs["strides"] + attrs.get("dilations", [1])))
    # ONNX's reference LpPool is PyTorch's (K * mean of |x|^p)^(1/p), which differs from
    # the specification's (and ONNX's own node tests') sum over the window wherever a window
    # holds padding; compare it on windows without padding.
    if op_type == "LpPool":
        assume(not any(ceil_extra[0]["start_padding"]) and not any(ceil_extra[0]["end_padding"]))
    # ONNX's reference MaxPool treats SAME_LOWER as SAME_UPPER on its strided path (odd
    # padding at the end, and output floor(in / stride) instead of ceil); SAME_LOWER MaxPool
    # is covered by the node case test_maxpool_2d_same_lower.
    if op_type == "MaxPool":
        assume(attrs.get("auto_pad") != "SAME_LOWER")
    if attrs.get("auto_pad", "").startswith("SAME"):
        assume(all((-(-n // s) - 1) * s + k >= n for n, s, k in zip(shape[2:], attrs["strides"], attrs["kernel_shape"])))
    try:
        expected = reference_run(op_type, x, attrs)
    except Exception:
        assume(False)  # combinations ONNX's reference does not handle
    kwargs = {k: v for k, v in attrs.items()}
    if op_type == "MaxPool":
        kwargs["return_indices"] = True
    try:
        got = OPERATORS[op_type](device.upload(x), **kwargs)
    except pg.ValidationError:
        # refused only where ONNX's output is empty or has windows wholly in padding (NaN, -inf)
        assert expected[0].size == 0 or not np.isfinite(expected[0]).all()
        return
    got = got if isinstance(got, tuple) else (got,)
    np.testing.assert_allclose(got[0].numpy().astype(np.float64), expected[0].astype(np.float64), rtol=1e-5, atol=1e-6)
    if op_type == "MaxPool":
        np.testing.assert_array_equal(got[1].numpy(), expected[1])


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_ceil_mode_follows_pytorch(device, dims):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(dims)
    x = rng.standard_normal((2, 3) + (6,) * dims).astype(np.float32)
    F = torch.nn.functional
    for kernel, stride, pad in ((3, 2, 1), (4, 3, 1), (2, 2, 0), (5, 3, 2)):
        kw = dict(kernel_shape=[kernel] * dims, strides=[stride] * dims, pads=[pad] * (2 * dims), ceil_mode=1)
        tx = torch.from_numpy(x)
        y, i = pgo.max_pool(x, return_indices=True, **kw)
        ty, ti = getattr(F, f"max_pool{dims}d")(tx, kernel, stride, pad, ceil_mode=True, return_indices=True)
        np.testing.assert_array_equal(y, ty.numpy())
        plane = np.arange(6).reshape(2, 3, *([1] * dims)) * 6**dims
        np.testing.assert_array_equal(i, ti.numpy() + plane)
        for include in (0, 1):
            got = pgo.average_pool(x, count_include_pad=include, **kw)
            expected = getattr(F, f"avg_pool{dims}d")(tx, kernel, stride, pad, ceil_mode=True, count_include_pad=bool(include))
            np.testing.assert_allclose(got, expected.numpy(), rtol=1e-5, atol=1e-6)


def test_storage_order_gives_column_major_indices(device):
    x = np.random.default_rng(5).standard_normal((2, 3, 5, 7)).astype(np.float32)
    y0, i0 = pgo.max_pool(device.upload(x), [2, 3], strides=[1, 2], return_indices=True)
    y1, i1 = pgo.max_pool(device.upload(x), [2, 3], strides=[1, 2], storage_order=1, return_indices=True)
    np.testing.assert_array_equal(y0.numpy(), y1.numpy())
    assert i0.data_type == pg.DataType.INT64
    plane, rest = np.divmod(i0.numpy(), 35)
    h, w = np.divmod(rest, 7)
    np.testing.assert_array_equal(i1.numpy(), plane * 35 + w * 5 + h)
    expected = ReferenceEvaluator(onnx_model("MaxPool", x, 2, kernel_shape=[2, 3], strides=[1, 2], storage_order=1)).run(None, {"x": x})
    np.testing.assert_array_equal(i1.numpy(), expected[1])


def test_onnx_types(device):
    for dtype in (np.int8, np.uint8, np.float16):
        x = np.random.default_rng(6).integers(-100, 100, (1, 2, 5, 5)).astype(dtype)
        # strides 2: ONNX's reference pads integers with NaN on its unit-stride path
        y = pgo.max_pool(device.upload(x), [2, 2], strides=[2, 2]).numpy()
        expected = ReferenceEvaluator(onnx_model("MaxPool", x, 1, kernel_shape=[2, 2], strides=[2, 2])).run(None, {"x": x})[0]
        np.testing.assert_array_equal(y, expected)
    with pytest.raises(pg.ValidationError):
        pgo.max_pool(np.zeros((1, 1, 4, 4)), [2, 2])  # float64 is not a DirectML type


def test_global_pools(device):
    x = np.random.default_rng(7).standard_normal((2, 3, 4, 5)).astype(np.float32)
    t = device.upload(x)
    np.testing.assert_allclose(pgo.global_max_pool(t).numpy(), x.max(axis=(2, 3), keepdims=True))
    np.testing.assert_allclose(pgo.global_average_pool(t).numpy(), x.mean(axis=(2, 3), keepdims=True), rtol=1e-6)
    np.testing.assert_allclose(pgo.global_lp_pool(t, p=3).numpy(),
                               (np.abs(x.astype(np.float64)) ** 3).sum(axis=(2, 3), keepdims=True) ** (1 / 3), rtol=1e-5)


def test_bad_attributes_are_named():
    x = np.zeros((1, 1, 4, 4), np.float32)
    for kwargs, field in ((dict(kernel_shape=[2]), "kernel_shape"), (dict(kernel_shape=[2, 2], auto_pad="SAME"), "auto_pad"),
                          (dict(kernel_shape=[2, 2], pads=[1, 1]), "pads"),
                          (dict(kernel_shape=[2, 2], storage_order=2, return_indices=True), "storage_order")):
        with pytest.raises(pg.ValidationError) as e:
            pgo.max_pool(x, **kwargs)
        assert e.value.field == field


@pytest.mark.parametrize("shape", [(1, 1, 5, 5), (2, 3, 7, 4), (1, 2, 5), (1, 1, 3, 5, 7)])
def test_max_unpool_with_output_shape_restores_every_maximum(device, shape):
    """MaxPool's indices unpooled with output_shape=x.shape land where the maxima came from
    (what ONNX Runtime and PyTorch do), for odd sizes too."""
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(8).permutation(np.prod(shape)).reshape(shape).astype(np.float32)
    dims = len(shape) - 2
    kw = dict(kernel_shape=[2] * dims, strides=[2] * dims)
    y, i = pgo.max_pool(device.upload(x), return_indices=True, **kw)
    got = pgo.max_unpool(y, i, output_shape=x.shape, **kw).numpy()
    expected = np.zeros_like(x)
    flat = i.numpy().ravel()
    expected.ravel()[flat] = x.ravel()[flat]
    np.testing.assert_array_equal(got, expected)
    assert np.count_nonzero(got) == y.numpy().size  # nothing dropped
    unpool = getattr(torch.nn.functional, f"max_unpool{dims}d")
    ty, ti = getattr(torch.nn.functional, f"max_pool{dims}d")(torch.from_numpy(x), 2, 2, return_indices=True)
    np.testing.assert_array_equal(got, unpool(ty, ti, 2, 2, output_size=x.shape[2:]).numpy())
