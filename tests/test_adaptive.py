"""Adaptive max and average pooling (PyTorch's bins) on every adapter, against the
independent NumPy reference and PyTorch: max values bit-exact and indices exact, averages
within float32 accumulation error (FLOAT16 correctly rounded), no byte outside an output
written, nothing outside the input read."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import poolgpu as pg
import reference
from helpers import (ALL_TYPES, FLOAT_TYPES, assert_canaries_intact, canary_tensor, layout_strides, random_values,
                     same_bits, sentinel_input)
from poolgpu import kernels

GPU_SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@st.composite
def adaptive_cases(draw, types):
    dims = draw(st.integers(1, 3))
    spatial = [draw(st.integers(1, 9)) for _ in range(dims)]
    # a mix of divisors of the input (uniform bins: the fixed-window path) and any size,
    # larger than the input included (overlapping bins)
    output = [draw(st.one_of(st.sampled_from([d for d in range(1, s + 1) if s % d == 0]), st.integers(1, 12)))
              for s in spatial]
    return dict(
        sizes=(draw(st.integers(1, 3)), draw(st.integers(1, 4))) + tuple(spatial),
        output_size=tuple(output),
        data_type=draw(st.sampled_from(types)),
        in_layout=draw(st.sampled_from(["packed", "channels_last", "reversed", "gaps", "broadcast"])),
        out_layout=draw(st.sampled_from(["packed", "channels_last", "gaps", "reversed"])),
        indices=draw(st.sampled_from([None, "uint32", "uint64"])),
        seed=draw(st.integers(0, 2**31)),
    )


def make_input(case):
    x = random_values(case["data_type"], case["sizes"], np.random.default_rng(case["seed"]))
    if case["in_layout"] == "broadcast":  # one plane repeated over N and C
        x = np.broadcast_to(x[:1, :1], x.shape).copy()
    return x


def out_desc(data_type, sizes, layout):
    return pg.TensorDesc(data_type, sizes, layout_strides(sizes, layout))


@GPU_SETTINGS
@given(case=adaptive_cases(ALL_TYPES))
def test_adaptive_max_pool_matches_reference(device, case):
    x = make_input(case)
    xt = sentinel_input(device, x, layout_strides(x.shape, case["in_layout"]))
    out_sizes = x.shape[:2] + case["output_size"]
    output = out_desc(case["data_type"], out_sizes, case["out_layout"])
    indices = out_desc(case["indices"], out_sizes, case["out_layout"]) if case["indices"] else None
    desc = pg.AdaptiveMaxPoolingDesc(xt.desc, output, indices, output_size=case["output_size"])
    outs = [canary_tensor(device, output)] + ([canary_tensor(device, indices, lead_bytes=40)] if indices else [])
    device.compile(desc)(xt, out=tuple(outs))
    y_ref, i_ref = reference.adaptive_max_pool(x, case["output_size"])
    assert same_bits(outs[0].numpy(), y_ref), "values differ"
    if indices:
        np.testing.assert_array_equal(outs[1].numpy(), i_ref.astype(case["indices"]))
    for t in outs:
        assert_canaries_intact(t)


def assert_average_close(y, expected, data_type):
    """Within float32 accumulation error of the float64 mean; FLOAT16 rounded from it."""
    expected = np.asarray(expected, np.float64)
    got = y.astype(np.float64)
    special = ~np.isfinite(expected)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_array_equal(got[special & ~np.isnan(expected)], expected[special & ~np.isnan(expected)])
    finite = ~special
    tolerance = 1e-6 * np.abs(expected[finite]) + 1e-6
    if data_type == pg.DataType.FLOAT16:  # plus the f16 rounding: half an f16 ulp
        tolerance += 0.5 * np.spacing(np.abs(expected[finite]).astype(np.float16)).astype(np.float64)
    assert (np.abs(got[finite] - expected[finite]) <= tolerance).all(), np.abs(got[finite] - expected[finite]).max()


@GPU_SETTINGS
@given(case=adaptive_cases(FLOAT_TYPES))
def test_adaptive_average_pool_matches_reference(device, case):
    x = make_input(case)
    # bounded values, so that float32 sums stay well inside the tolerance
    x = np.where(np.isfinite(x), np.clip(x, -100, 100), x).astype(x.dtype)
    xt = sentinel_input(device, x, layout_strides(x.shape, case["in_layout"]))
    output = out_desc(case["data_type"], x.shape[:2] + case["output_size"], case["out_layout"])
    desc = pg.AdaptiveAveragePoolingDesc(xt.desc, output, output_size=case["output_size"])
    out = canary_tensor(device, output)
    device.compile(desc)(xt, out=out)
    with np.errstate(invalid="ignore"):  # inf + -inf in the reference's sums
        expected = reference.adaptive_average_pool(x, case["output_size"])
    assert_average_close(out.numpy(), expected, case["data_type"])
    assert_canaries_intact(out)


def test_float16_averages_are_correctly_rounded_from_float32(device):
    # Means of two FLOAT16 values are exact in float32 here, so the expected FLOAT16 is
    # NumPy's correctly rounded conversion of the float32 mean: ties (to even), subnormals.
    rng = np.random.default_rng(8)
    tiny = np.float16(2.0**-24)
    pairs = [(1.0, np.float16(1.0) + np.spacing(np.float16(1.0))), (3 * tiny, 0.0), (tiny, 0.0), (5 * tiny, 0.0),
             (-3 * tiny, 0.0), (65504.0, 65504.0), (-65504.0, 65504.0), (2048.0, 2049.0), (2048.0, 2051.0),
             (np.float16(2.0**-14), tiny), (1e-3, -1e-3)]
    # magnitudes in [0.01, 60): two such FLOAT16 values sum exactly in float32's 24 bits
    pairs += [tuple(rng.choice([-1, 1], 2) * rng.uniform(0.01, 60, 2)) for _ in range(200)]
    x = np.array(pairs, np.float16).reshape(1, len(pairs), 2)
    y = pg.adaptive_average_pool(x, (1,), device=device)
    mean32 = (x[..., 0].astype(np.float32) + x[..., 1].astype(np.float32)) / np.float32(2)
    assert np.array_equal(mean32.astype(np.float64), (x[..., 0].astype(np.float64) + x[..., 1]) / 2)  # exact
    assert same_bits(y[..., 0], mean32.astype(np.float16))


def test_average_of_infinities_and_nan(device):
    inf, nan = np.inf, np.nan
    for dtype in (np.float32, np.float16):
        x = np.array([[1, inf], [-inf, 2], [inf, -inf], [nan, 1], [inf, nan], [inf, inf]], dtype).reshape(1, 6, 2)
        y = pg.adaptive_average_pool(x, (1,), device=device).ravel()
        np.testing.assert_array_equal(y, np.array([inf, -inf, nan, nan, nan, inf], dtype))


torch = pytest.importorskip("torch") if False else None  # imported lazily below: only these tests need it

TORCH_SHAPES = [
    ((2, 3, 10), (4,)), ((1, 2, 7), (7,)), ((2, 2, 5), (9,)),
    ((2, 3, 9, 11), (4, 5)), ((1, 4, 7, 7), (1, 1)), ((2, 2, 5, 6), (8, 13)), ((1, 3, 13, 4), (5, 3)),
    ((1, 2, 16, 32), (4, 16)),  # uniform bins in rows wide enough for the fixed-window kernels
    ((1, 2, 5, 6, 7), (2, 3, 4)), ((2, 1, 4, 9, 3), (3, 2, 5)), ((1, 1, 4, 6, 16), (2, 3, 8)),
]


def torch_flat_indices(indices, shape):
    """PyTorch's adaptive max indices count within each (n, c) plane: make them flat logical."""
    plane = int(np.prod(shape[2:]))
    return indices + (np.arange(shape[0] * shape[1]) * plane).reshape(shape[:2] + (1,) * (len(shape) - 2))


@pytest.mark.parametrize("shape, output_size", TORCH_SHAPES, ids=str)
def test_adaptive_pooling_matches_pytorch(device, shape, output_size):
    torch = pytest.importorskip("torch")
    functional = torch.nn.functional
    dims = len(shape) - 2
    rng = np.random.default_rng(sum(shape) * 31 + sum(output_size))
    x = rng.standard_normal(shape).astype(np.float32)
    y, idx = pg.adaptive_max_pool(x, output_size, return_indices=True, indices_type="uint64", device=device)
    ty, tidx = getattr(functional, f"adaptive_max_pool{dims}d")(torch.from_numpy(x), output_size, return_indices=True)
    np.testing.assert_array_equal(y, ty.numpy())
    np.testing.assert_array_equal(idx, torch_flat_indices(tidx.numpy(), shape))
    avg = pg.adaptive_average_pool(x, output_size, device=device)
    tavg = getattr(functional, f"adaptive_avg_pool{dims}d")(torch.from_numpy(x), output_size).numpy()
    np.testing.assert_allclose(avg, tavg, rtol=1e-5, atol=1e-6)


def test_resnet_head_global_average(device):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(9).standard_normal((2, 64, 7, 7)).astype(np.float16)
    y = pg.adaptive_average_pool(x, (1, 1), device=device)
    expected = torch.nn.AdaptiveAvgPool2d((1, 1))(torch.from_numpy(x.astype(np.float32))).numpy()
    assert_average_close(y, expected, pg.DataType.FLOAT16)


def test_sizes_whose_bin_products_exceed_32_bits(device):
    # 70000 * 65537 > 2^32: the bins are computed with wide integer products
    x = np.random.default_rng(10).standard_normal((1, 1, 70000)).astype(np.float32)
    y, idx = pg.adaptive_max_pool(x, (65537,), return_indices=True, device=device)
    y_ref, i_ref = reference.adaptive_max_pool(x, (65537,))
    assert same_bits(y, y_ref)
    np.testing.assert_array_equal(idx, i_ref)
    assert_average_close(pg.adaptive_average_pool(x, 65537, device=device),
                         reference.adaptive_average_pool(x, (65537,)), pg.DataType.FLOAT32)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_adaptive_max_nan_wins_and_ties_go_to_the_lowest_index(device, dtype):
    x = np.array([1, np.nan, 5, np.nan, 7, 7, -0.0, 0.0, 0.0], dtype).reshape(1, 1, 9)
    x[0, 0, 3] = np.frombuffer(np.array([0x7FC00123 if dtype == np.float32 else 0x7E01],
                                        np.uint32 if dtype == np.float32 else np.uint16).tobytes(), dtype)[0]
    # bins of 9 -> 4: [0, 3), [2, 5), [4, 7), [6, 9)
    y, idx = pg.adaptive_max_pool(x, 4, return_indices=True, device=device)
    np.testing.assert_array_equal(idx.ravel(), [1, 3, 4, 6])
    assert same_bits(y.ravel()[:2], x.ravel()[[1, 3]])  # the first NaN of each bin, payload kept
    assert same_bits(y.ravel()[3:], np.array([-0.0], dtype))  # -0 first: ties keep it


def test_wide_uniform_bins_reuse_the_fixed_window_kernels():
    def first_kernel(desc_class, sizes, output_size):
        desc = desc_class(pg.TensorDesc("float32", sizes), output_size=output_size)
        return kernels.program_for(desc).passes[0].kernel
    for desc_class, fixed in ((pg.AdaptiveMaxPoolingDesc, kernels.window.MAX_POOL), (pg.AdaptiveAveragePoolingDesc, kernels.window.AVERAGE_POOL)):
        assert first_kernel(desc_class, (1, 2, 16, 24), (8, 12)) in fixed.values()
        assert first_kernel(desc_class, (1, 2, 16, 24), (5, 12)) is kernels.binned.ADAPTIVE_BINS  # 16 % 5: bins differ
        assert first_kernel(desc_class, (1, 2, 14, 14), (7, 1)) is kernels.binned.ADAPTIVE_BINS  # narrow rows
        assert first_kernel(desc_class, (1, 2, 14, 14), (1, 1)) is fixed["plane"]  # global: the plane walk


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("shape, output_size", [((2, 3, 12, 12), (3, 2)), ((1, 4, 7, 7), (1, 1)), ((2, 2, 6, 64), (2, 8))])
def test_uniform_adaptive_average_is_average_pooling_bit_for_bit(device, dtype, shape, output_size):
    # Both kernels sum in the same order with the same compensated sum, so the bin kernel
    # (narrow rows) and the fixed-window kernel (wide rows) give average pooling's bits.
    x = np.random.default_rng(13).standard_normal(shape).astype(dtype) * 100
    window = tuple(i // o for i, o in zip(shape[2:], output_size))
    expected = pg.average_pool(x, window, strides=window, device=device)
    assert same_bits(pg.adaptive_average_pool(x, output_size, device=device), expected)


def test_adaptive_output_size_forms_and_tensors(device):
    x = np.random.default_rng(11).standard_normal((1, 2, 6, 5)).astype(np.float32)
    y = pg.adaptive_max_pool(x, 3, device=device)  # one int: every dimension
    assert same_bits(y, reference.adaptive_max_pool(x, (3, 3))[0])
    y = pg.adaptive_max_pool(x, (None, 2), device=device)  # None keeps the input's size (PyTorch)
    assert same_bits(y, reference.adaptive_max_pool(x, (6, 2))[0])
    desc = pg.AdaptiveAveragePoolingDesc(pg.TensorDesc("float32", x.shape), pg.TensorDesc("float32", (1, 2, 4, 4)))
    assert desc.output_size == (4, 4)  # taken from the given output
    yt = device.compile(desc)(device.upload(x))
    assert isinstance(yt, pg.Tensor)
    assert_average_close(yt.numpy(), reference.adaptive_average_pool(x, (4, 4)), pg.DataType.FLOAT32)
    assert same_bits(device.compile(desc)(device.upload(x)).numpy(), yt.numpy())  # deterministic


# -- validation (no GPU) -------------------------------------------------------------------

F32 = pg.DataType.FLOAT32
X = pg.TensorDesc(F32, (2, 3, 8, 8))


@pytest.mark.parametrize("make, field", [
    (lambda: pg.AdaptiveMaxPoolingDesc(X, output_size=(2,)), "output_size"),
    (lambda: pg.AdaptiveMaxPoolingDesc(X, output_size=(2, 2, 2)), "output_size"),
    (lambda: pg.AdaptiveMaxPoolingDesc(X, output_size=(0, 2)), "output_size"),
    (lambda: pg.AdaptiveMaxPoolingDesc(X, output_size=(2, 2.5)), "output_size"),
    (lambda: pg.AdaptiveMaxPoolingDesc(X, output_size="2"), "output_size"),
    (lambda: pg.AdaptiveMaxPoolingDesc(X), "output_size"),
    (lambda: pg.AdaptiveMaxPoolingDesc(X, pg.TensorDesc(F32, (2, 3, 4))), "output.sizes"),
    (lambda: pg.AdaptiveMaxPoolingDesc(X, pg.TensorDesc(F32, (2, 3, 4, 4)), output_size=(4, 5)), "output.sizes"),
    (lambda: pg.AdaptiveMaxPoolingDesc(X, pg.TensorDesc("float16", (2, 3, 4, 4))), "output.data_type"),
    (lambda: pg.AdaptiveMaxPoolingDesc(X, output_indices="int32", output_size=(2, 2)), "output_indices.data_type"),
    (lambda: pg.AdaptiveMaxPoolingDesc(X, output_indices=pg.TensorDesc("uint32", (2, 3, 3, 2)), output_size=(2, 2)),
     "output_indices.sizes"),
    (lambda: pg.AdaptiveMaxPoolingDesc("x", output_size=(2, 2)), "input"),
    (lambda: pg.AdaptiveAveragePoolingDesc(pg.TensorDesc("int32", (1, 1, 4)), output_size=(2,)), "input.data_type"),
    (lambda: pg.AdaptiveAveragePoolingDesc(X, output_size=(2, -1)), "output_size"),
    (lambda: pg.AdaptiveAveragePoolingDesc(X, pg.TensorDesc(F32, (2, 3, 4, 4), strides=(0, 0, 4, 1))), "output.strides"),
])
def test_adaptive_validation_names_the_field(make, field):
    with pytest.raises(pg.ValidationError) as e:
        make()
    assert e.value.field == field


def test_adaptive_descriptions_fill_in_output_and_indices():
    desc = pg.AdaptiveMaxPoolingDesc(X, output_indices="uint64", output_size=[3, None])
    assert desc.output_size == (3, 8)
    assert desc.output == pg.TensorDesc(F32, (2, 3, 3, 8))
    assert desc.output_indices == pg.TensorDesc("uint64", (2, 3, 3, 8))
    assert [r for r, _ in desc.output_tensors()] == ["output", "output_indices"]
    assert pg.AdaptiveAveragePoolingDesc(X, output_size=(1, 1)).output.sizes == (2, 3, 1, 1)
