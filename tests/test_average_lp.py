"""Average and Lp pooling (AVERAGE_POOLING, AVERAGE_POOLING1, LP_POOLING, LP_POOLING1) on
every adapter: accuracy against the float64 reference, PyTorch and ONNX cross-checks,
overflow/underflow safety, layouts and validation."""

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import poolgpu as pg
import reference
from helpers import assert_canaries_intact, canary_tensor, forward_walk, layout_strides, sentinel_input, upload

F32, F16 = pg.DataType.FLOAT32, pg.DataType.FLOAT16
GPU_SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def ulp_error(got, exact, dtype):
    """|got - exact| in units of the last place of `exact` rounded to `dtype`."""
    with np.errstate(invalid="ignore", over="ignore"):
        spacing = np.spacing(np.abs(exact.astype(dtype))).astype(np.float64)
        err = np.abs(got.astype(np.float64) - exact)
        same = (got.astype(np.float64) == exact) | (np.isnan(got) & np.isnan(exact))
        return np.where(same, 0.0, err / spacing)


def assert_accurate(got, exact, dtype, ulps=4):
    """FLOAT32: within `ulps` (4) ulp of the float64 value; FLOAT16: within 1 ulp of its rounding."""
    assert got.dtype == dtype
    np.testing.assert_array_equal(np.isnan(got), np.isnan(exact))
    if dtype == np.float16:
        err = ulp_error(got, exact.astype(np.float16).astype(np.float64), np.float16)
        assert err.max(initial=0) <= 1, f"max error {err.max()} ulp"
    else:
        err = ulp_error(got, exact, np.float32)
        assert err.max(initial=0) <= ulps, f"max error {err.max()} ulp"


OPERATORS = {
    "average": (pg.AveragePooling1Desc, reference.average_pool),
    "average_with_padding": (pg.AveragePooling1Desc, reference.average_pool),
    "lp2": (pg.LpPooling1Desc, reference.lp_pool),
    "lp1": (pg.LpPooling1Desc, reference.lp_pool),
    "lp3.5": (pg.LpPooling1Desc, reference.lp_pool),
}


def operator_args(name):
    return {
        "average": {"include_padding": False}, "average_with_padding": {"include_padding": True},
        "lp2": {"p": 2}, "lp1": {"p": 1}, "lp3.5": {"p": 3.5},
    }[name]


@st.composite
def cases(draw):
    dims = draw(st.integers(1, 3))
    sizes = [draw(st.integers(1, 2)), draw(st.integers(1, 3))] + [draw(st.integers(1, 8)) for _ in range(dims)]
    return dict(
        sizes=tuple(sizes),
        window_size=tuple(draw(st.integers(1, 4)) for _ in range(dims)),
        strides=tuple(draw(st.integers(1, 3)) for _ in range(dims)),
        dilations=tuple(draw(st.sampled_from([1, 1, 2])) for _ in range(dims)),
        start_padding=tuple(draw(st.integers(0, 2)) for _ in range(dims)),
        end_padding=tuple(draw(st.integers(0, 2)) for _ in range(dims)),
        operator=draw(st.sampled_from(sorted(OPERATORS))),
        data_type=draw(st.sampled_from([F32, F16])),
        in_layout=draw(st.sampled_from(["packed", "channels_last", "gaps", "broadcast"])),
        out_layout=draw(st.sampled_from(["packed", "channels_last", "reversed"])),
        seed=draw(st.integers(0, 2**31)),
    )


@GPU_SETTINGS
@given(case=cases())
def test_average_and_lp_match_the_reference(device, case):
    run_case(device, case)


def run_case(device, case):
    """Run ``case`` into a canary-guarded output: accurate (assert_accurate, within
    ``case["ulps"]``, default 4), no byte outside the output written."""
    geometry = {k: case[k] for k in ("window_size", "strides", "dilations", "start_padding", "end_padding")}
    desc_class, ref = OPERATORS[case["operator"]]
    args = operator_args(case["operator"])
    dtype = case["data_type"].numpy
    x = (np.random.default_rng(case["seed"]).standard_normal(case["sizes"]) * 3).astype(dtype)
    if case["in_layout"] == "broadcast":
        x = np.broadcast_to(x[:1, :1], x.shape).copy()
    input_desc = pg.TensorDesc(case["data_type"], x.shape, layout_strides(x.shape, case["in_layout"]))
    try:
        plain = desc_class(input_desc, **geometry, **args)
    except pg.ValidationError:
        assume(False)
    out = pg.TensorDesc(case["data_type"], plain.output.sizes, layout_strides(plain.output.sizes, case["out_layout"]))
    op = device.compile(desc_class(input_desc, out, **geometry, **args))
    y = canary_tensor(device, out)
    assert op(upload(device, x, case["in_layout"]), out=y) is y
    assert_accurate(y.numpy(), ref(x, **geometry, **args), dtype, case.get("ulps", 4))
    assert_canaries_intact(y)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("name", sorted(OPERATORS))
def test_windows_up_to_64_elements_are_accurate(device, dtype, name):
    _, ref = OPERATORS[name]
    args = operator_args(name)
    rng = np.random.default_rng(7)
    # heavy cancellation for averages: large terms of both signs around a small mean
    x = (rng.standard_normal((2, 4, 16, 16)) * 100 + 0.5).astype(dtype)
    for window, strides, pads in (((8, 8), (4, 4), (0, 0)), ((3, 3), (1, 1), (1, 1)), ((4, 16), (4, 1), (2, 0))):
        kw = dict(strides=strides, start_padding=pads, end_padding=pads)
        got = (pg.average_pool if "average" in name else pg.lp_pool)(x, window, device=device, **kw, **args)
        assert_accurate(got, ref(x, window, **kw, **args), dtype)


@pytest.mark.parametrize("name", ["average", "lp2", "lp1"])
def test_global_windows_of_ten_thousand_elements_stay_accurate(device, name):
    _, ref = OPERATORS[name]
    args = operator_args(name)
    x = (np.random.default_rng(8).standard_normal((2, 3, 112, 112)) + 0.01).astype(np.float32)
    got = (pg.average_pool if "average" in name else pg.lp_pool)(x, (112, 112), device=device, **args)
    exact = ref(x, (112, 112), **args)
    np.testing.assert_allclose(got, exact, rtol=1e-6, atol=0)


def test_directml_divisor_rules(device):
    x = np.arange(1, 10, dtype=np.float32).reshape(1, 1, 3, 3)
    kw = dict(strides=(2, 2), start_padding=(1, 1), end_padding=(1, 1), device=device)
    covered = pg.average_pool(x, (3, 3), include_padding=False, **kw)
    counted = pg.average_pool(x, (3, 3), include_padding=True, **kw)
    # the corner window covers x[0:2, 0:2] = 1, 2, 4, 5
    assert covered[0, 0, 0, 0] == np.float32(12 / 4)
    assert counted[0, 0, 0, 0] == np.float32(12 / 9)
    # a dilated window: taps 0 and 2 of a 3-wide input
    x = np.array([1, 100, 3], np.float32).reshape(1, 1, 3)
    assert pg.average_pool(x, (2,), dilations=(2,), device=device).ravel().tolist() == [2.0]


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_lp_neither_overflows_nor_underflows(device, dtype):
    big, small = (1e30, 1e-30) if dtype == np.float32 else (4000, 1e-5)
    for scale in (big, small):
        x = (np.array([3, 4, 0, 12, 5, 0], np.float64) * scale).astype(dtype).reshape(1, 1, 6)
        got = pg.lp_pool(x, (2,), strides=(2,), device=device)
        exact = reference.lp_pool(x, (2,), (2,))
        assert np.isfinite(got).all() and (got[0, 0, :2] > 0).all()
        assert_accurate(got, exact, dtype)


@pytest.mark.parametrize("p", [1, 2, 3, 4, 8])
def test_float16_lp_over_the_whole_float16_range(device, p):
    # float16 with p <= 4 sums unscaled |x|^p (lp_pool.wgsl's SCALED); p = 8 needs the
    # scaling (65504^8 overflows f32); results past 65504 are infinities
    rng = np.random.default_rng(p)
    magnitudes = np.exp2(rng.uniform(-24, 16, (2, 3, 16, 16)))
    x = (magnitudes * rng.choice([-1, 1], magnitudes.shape)).astype(np.float16)
    x[0, 0, :2, :] = 65504
    x[0, 1, :2, :] = np.float16(2**-24)   # the smallest subnormal: its |x|^p is still normal in f32
    for window, strides in (((2, 2), (2, 2)), ((3, 3), (1, 1)), ((8, 8), (4, 4))):
        got = pg.lp_pool(x, window, strides=strides, p=p, device=device)
        with np.errstate(over="ignore"):  # exact values past 65504 round to infinity
            assert_accurate(got, reference.lp_pool(x, window, strides, p=p), np.float16)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_nan_and_infinity_propagate(device, dtype):
    x = np.array([1, np.nan, 2, 3, np.inf, 4, -np.inf, 5, 0, 0, 0, 0], dtype).reshape(1, 1, 12)
    for p in (1, 2, 3):
        got = pg.lp_pool(x, (2,), strides=(2,), p=p, device=device)
        assert_accurate(got, reference.lp_pool(x, (2,), (2,), p=p), dtype)
        got = got.ravel()
        assert np.isnan(got[0]) and got[2] == np.inf and got[3] == np.inf and got[5] == 0
    got = pg.average_pool(x, (2,), strides=(2,), device=device).ravel()
    assert np.isnan(got[0]) and got[2] == np.inf and got[3] == -np.inf and got[5] == 0
    mixed = np.array([np.inf, -np.inf], dtype).reshape(1, 1, 2)
    assert np.isnan(pg.average_pool(mixed, (2,), device=device)).all()


def test_float16_results_are_correctly_rounded_and_saturate(device):
    # the mean of 65504 and 65504 is 65504; of two values near the top, rounding must not overflow
    x = np.array([65504, 65504, 65504, 65472, 60000, 60000], np.float16).reshape(1, 1, 6)
    got = pg.average_pool(x, (2,), strides=(2,), device=device).ravel()
    np.testing.assert_array_equal(got, np.array([65504, 65488, 60000], np.float16))
    # Lp of large f16 values overflows f16: infinity, not garbage
    got = pg.lp_pool(np.array([60000, 60000], np.float16).reshape(1, 1, 2), (2,), device=device)
    assert got.ravel().tolist() == [np.inf]
    # subnormal results
    tiny = np.array([2**-24, 2**-24, 2**-24, 0], np.float16).reshape(1, 1, 4)
    got = pg.average_pool(tiny, (2,), strides=(2,), device=device).ravel()
    np.testing.assert_array_equal(got, np.array([2**-24, 0], np.float16))  # 2^-25 ties to even: 0


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_average_matches_pytorch(device, dims):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(dims)
    x = rng.standard_normal((2, 3) + (9,) * dims).astype(np.float32)
    pool = getattr(torch.nn.functional, f"avg_pool{dims}d")
    for include in (False, True):
        expected = pool(torch.from_numpy(x), 3, 2, 1, count_include_pad=include).numpy()
        got = pg.average_pool(x, (3,) * dims, strides=(2,) * dims, start_padding=(1,) * dims,
                              end_padding=(1,) * dims, include_padding=include, device=device)
        np.testing.assert_allclose(got, expected, rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize("dims", [1, 2, 3])
@pytest.mark.parametrize("p", [1, 2, 3])
def test_lp_matches_pytorch(device, dims, p):
    torch = pytest.importorskip("torch")
    if dims == 3 and not hasattr(torch.nn.functional, "lp_pool3d"):
        pytest.skip("this torch has no lp_pool3d")
    rng = np.random.default_rng(10 * dims + p)
    x = np.abs(rng.standard_normal((2, 3) + (8,) * dims)).astype(np.float32)  # torch sums x^p, not |x|^p
    pool = getattr(torch.nn.functional, f"lp_pool{dims}d")
    expected = pool(torch.from_numpy(x), p, 2, 2).numpy()
    got = pg.lp_pool(x, (2,) * dims, strides=(2,) * dims, p=p, device=device)
    np.testing.assert_allclose(got, expected, rtol=1e-5)


def test_dilated_average_and_lp_match_onnx(device):
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    from onnx.reference import ReferenceEvaluator

    x = np.random.default_rng(4).standard_normal((1, 2, 9, 10)).astype(np.float32)
    for op_type, attrs, ours in (
        ("AveragePool", dict(count_include_pad=0), lambda **kw: pg.average_pool(x, **kw)),
        ("AveragePool", dict(count_include_pad=1), lambda **kw: pg.average_pool(x, include_padding=True, **kw)),
        ("LpPool", dict(p=2), lambda **kw: pg.lp_pool(x, **kw)),
    ):
        node = helper.make_node(op_type, ["x"], ["y"], kernel_shape=[3, 2], dilations=[2, 3], strides=[1, 2],
                                pads=[1, 0, 2, 1], **attrs)
        graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
        expected = ReferenceEvaluator(model).run(None, {"x": x})[0]
        got = ours(window_size=(3, 2), dilations=(2, 3), strides=(1, 2), start_padding=(1, 0), end_padding=(2, 1),
                   device=device)
        if op_type == "LpPool":  # ONNX's reference LpPool counts padding as zeros: same sum
            np.testing.assert_allclose(got, expected, rtol=1e-5)
        else:
            np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_descriptions_validate_their_fields():
    x = pg.TensorDesc(F32, (1, 2, 6, 6))
    cases = [
        (lambda: pg.AveragePoolingDesc(pg.TensorDesc("int32", (1, 2, 6, 6)), window_size=(2, 2)), "input.data_type"),
        (lambda: pg.LpPoolingDesc(pg.TensorDesc("uint8", (1, 2, 6, 6)), window_size=(2, 2)), "input.data_type"),
        (lambda: pg.AveragePoolingDesc(x, window_size=(2, 2), include_padding=2), "include_padding"),
        (lambda: pg.LpPoolingDesc(x, window_size=(2, 2), p=0.5), "p"),
        (lambda: pg.LpPoolingDesc(x, window_size=(2, 2), p=float("inf")), "p"),
        (lambda: pg.LpPooling1Desc(x, window_size=(2, 2), p="2"), "p"),
        (lambda: pg.AveragePooling1Desc(x, window_size=(2, 2), dilations=(0, 1)), "dilations"),
        (lambda: pg.AveragePooling1Desc(x, pg.TensorDesc(F16, (1, 2, 5, 5)), window_size=(2, 2)), "output.data_type"),
        (lambda: pg.LpPooling1Desc(x, pg.TensorDesc(F32, (1, 2, 4, 5)), window_size=(2, 2)), "output.sizes"),
        (lambda: pg.AveragePoolingDesc(x, window_size=(2,)), "window_size"),
    ]
    for make, field in cases:
        with pytest.raises(pg.ValidationError) as e:
            make()
        assert e.value.field == field
    d = pg.LpPooling1Desc(x, window_size=(3, 3), dilations=(2, 2))
    assert d.p == 2.0 and d.output.sizes == (1, 2, 2, 2) and d.dilations == (2, 2)
    assert not hasattr(pg.AveragePoolingDesc(x, window_size=(2, 2)), "dilations")


@pytest.mark.parametrize("out_layout", ["packed", "channels_last"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("name", sorted(OPERATORS))
def test_rows_walk_with_any_output_layout(device, name, dtype, out_layout):
    """Inputs contiguous along W, outputs not in 4-element rows (out_w = 7; channels last
    with 3 channels): the rows walk with scalar stores, accurate, within its elements."""
    desc_class, ref = OPERATORS[name]
    args = operator_args(name)
    x = (np.random.default_rng(3).standard_normal((2, 3, 6, 16)) * 3).astype(dtype)
    geometry = dict(window_size=(3, 2), strides=(2, 2), dilations=(1, 2), start_padding=(1, 0), end_padding=(1, 0))
    plain = desc_class(pg.TensorDesc(dtype, x.shape), **geometry, **args)
    out = pg.TensorDesc(dtype, plain.output.sizes, layout_strides(plain.output.sizes, out_layout))
    desc = desc_class(pg.TensorDesc(dtype, x.shape), out, **geometry, **args)
    assert out.sizes[-1] == 7
    assert forward_walk(desc) == "rows_tail"
    y = canary_tensor(device, out)
    device.compile(desc)(device.upload(x), out=y)
    assert_accurate(y.numpy(), ref(x, **geometry, **args), dtype)
    assert_canaries_intact(y)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("name", sorted(OPERATORS))
def test_rows_walk_from_rows_that_start_anywhere(device, name, dtype):
    """Rows 14 elements wide (Inception's 3x3 stride 1 pooling of 14 x 14 planes), the input
    placed 4 bytes into its buffer: the rows walk from single loads, accurate, within the
    input's elements (those around it are NaN)."""
    desc_class, ref = OPERATORS[name]
    args = operator_args(name)
    x = (np.random.default_rng(4).standard_normal((2, 3, 9, 14)) * 3).astype(dtype)
    geometry = dict(window_size=(3, 3), strides=(1, 1), start_padding=(1, 1), end_padding=(1, 1))
    desc = desc_class(pg.TensorDesc(dtype, x.shape), **geometry, **args)
    assert forward_walk(desc) == "rows_any"
    y = canary_tensor(device, desc.output)
    device.compile(desc)(sentinel_input(device, x, lead_bytes=4, tail_bytes=0), out=y)
    assert_accurate(y.numpy(), ref(x, **geometry, **args), dtype)
    assert_canaries_intact(y)
