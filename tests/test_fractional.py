"""Fractional max pooling and its gradient on every adapter, against the independent NumPy
reference and PyTorch's CPU kernels: values bit-exact, indices exact, in 2D and 3D, every
data type, samples of float32, float16 and bfloat16, any layout; the gradient a
deterministic gather (PyTorch's autograd in tests/test_torch_fractional.py)."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import poolgpu as pg
import reference
from helpers import (ALL_TYPES, assert_canaries_intact, canary_tensor, layout_strides, random_values, same_bits,
                     sentinel_input, tuned_for)
from poolgpu.kernels.fractional import covering_bound

GPU_SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
SAMPLE_TYPES = ("float32", "float16", "bfloat16")


@st.composite
def fractional_cases(draw, types=ALL_TYPES):
    dims = draw(st.integers(2, 3))
    spatial = [draw(st.integers(1, 13 if dims == 2 else 7)) for _ in range(dims)]
    window = [draw(st.integers(1, s)) for s in spatial]
    output = [draw(st.integers(1, s - k + 1)) for s, k in zip(spatial, window)]
    return dict(
        sizes=(draw(st.integers(1, 2)), draw(st.integers(1, 3))) + tuple(spatial),
        window_size=tuple(window), output_size=tuple(output),
        data_type=draw(st.sampled_from(types)), sample_type=draw(st.sampled_from(SAMPLE_TYPES)),
        in_layout=draw(st.sampled_from(["packed", "channels_last", "reversed", "gaps"])),
        out_layout=draw(st.sampled_from(["packed", "channels_last", "gaps"])),
        indices=draw(st.sampled_from([None, "uint32", "uint64"])),
        seed=draw(st.integers(0, 2**31)),
    )


def samples_of(case, rng):
    """Samples in [0, 1) of the case's type, with the extremes 0 and the largest below 1."""
    shape = case["sizes"][:2] + (len(case["window_size"]),)
    u = rng.random(shape).astype(np.float32)
    u.ravel()[:2] = [0.0, 0.99999994][:u.size]
    u = u.astype(pg.DataType.of(case["sample_type"]).numpy)
    return np.minimum(u, np.nextafter(u.dtype.type(1), u.dtype.type(0)))   # (rounding may reach 1)


@GPU_SETTINGS
@given(case=fractional_cases())
def test_fractional_max_pool_matches_reference(device, case):
    rng = np.random.default_rng(case["seed"])
    x = random_values(case["data_type"], case["sizes"], rng)
    u = samples_of(case, rng)
    xt = sentinel_input(device, x, layout_strides(x.shape, case["in_layout"]))
    out_sizes = x.shape[:2] + case["output_size"]
    output = pg.TensorDesc(case["data_type"], out_sizes, layout_strides(out_sizes, case["out_layout"]))
    indices = pg.TensorDesc(case["indices"], out_sizes, layout_strides(out_sizes, case["out_layout"])) \
        if case["indices"] else None
    samples = device.upload(u)
    desc = pg.FractionalMaxPoolingDesc(xt.desc, samples.desc, output, indices, window_size=case["window_size"])
    outs = [canary_tensor(device, output)] + ([canary_tensor(device, indices, lead_bytes=40)] if indices else [])
    device.compile(desc)(xt, samples, out=tuple(outs))
    y_ref, i_ref = reference.fractional_max_pool(x, case["window_size"], case["output_size"], u.astype(np.float32),
                                                 case["sample_type"])
    assert same_bits(outs[0].numpy(), y_ref), "values differ"
    if indices:
        np.testing.assert_array_equal(outs[1].numpy(), i_ref.astype(case["indices"]))
    for t in outs:
        assert_canaries_intact(t)


@st.composite
def fractional_grad_cases(draw):
    """fractional_cases of the float types, and whether dy holds small integers (every sum
    exact: the gather's bits are the reference's)."""
    case = draw(fractional_cases(types=(pg.DataType.FLOAT32, pg.DataType.FLOAT16, pg.DataType.BFLOAT16)))
    return dict(case, integer_dy=draw(st.booleans()))


@GPU_SETTINGS
@given(case=fractional_grad_cases())
def test_fractional_max_pool_grad_matches_reference(device, case):
    integer_dy = case["integer_dy"]
    rng = np.random.default_rng(case["seed"])
    x = random_values(case["data_type"], case["sizes"], rng)
    u = samples_of(case, rng)
    dtype = x.dtype
    out_sizes = x.shape[:2] + case["output_size"]
    dy = (rng.integers(-8, 9, out_sizes) if integer_dy else rng.standard_normal(out_sizes)).astype(dtype)
    dx = pg.fractional_max_pool_grad(x, dy, case["window_size"], u, device=device)
    expected = reference.fractional_max_pool_grad(x, dy, case["window_size"], u.astype(np.float32),
                                                  case["sample_type"])
    if integer_dy:
        assert same_bits(dx, expected.astype(dtype))
    else:
        np.testing.assert_allclose(dx.astype(np.float64), expected, rtol=1e-2 if dtype != np.float32 else 1e-6,
                                   atol=1e-2 if dtype != np.float32 else 1e-6)


def test_windows_by_pytorchs_formula(device):
    # each plane's windows, read back as the maxima of a ramp: start(i) + window - 1
    n, c, size, window, out = 1, 4, 25, 2, 7
    x = np.broadcast_to(np.arange(size, dtype=np.float32), (n, c, 1, size)).copy()
    u = np.array([[[0.0, 0.0], [0.5, 0.0], [0.9999, 0.0], [0.37, 0.0]]], np.float32)
    y = pg.fractional_max_pool(x, (1, window), (1, out), u, device=device)
    alpha = np.float32(size - window) / np.float32(out - 1)
    for plane in range(c):
        s = u[0, plane, 0]
        starts = [int(np.float32(np.float32(i) + s) * alpha) - int(np.float32(s * alpha)) for i in range(out - 1)]
        assert y[0, plane, 0].tolist() == [v + window - 1 for v in starts] + [size - 1]


def test_samples_in_pytorchs_order(device):
    # 2D: samples[..., 0] moves the windows along W, [..., 1] along H; 3D: D, H, W
    x = np.arange(23 * 23, dtype=np.float32).reshape(1, 1, 23, 23)
    along_w = pg.fractional_max_pool(x, 2, 5, np.array([[[0.9, 0.0]]], np.float32), device=device)
    along_h = pg.fractional_max_pool(x, 2, 5, np.array([[[0.0, 0.9]]], np.float32), device=device)
    still = pg.fractional_max_pool(x, 2, 5, np.zeros((1, 1, 2), np.float32), device=device)
    # (a NumPy integer is an output size for every dimension, as an int is)
    assert np.array_equal(pg.fractional_max_pool(x, 2, np.int64(5), np.zeros((1, 1, 2), np.float32), device=device),
                          still)
    assert not np.array_equal(along_w[0, 0, 0], still[0, 0, 0]) and np.array_equal(along_w[0, 0, :, 0], still[0, 0, :, 0])
    assert not np.array_equal(along_h[0, 0, :, 0], still[0, 0, :, 0]) and np.array_equal(along_h[0, 0, 0], still[0, 0, 0])
    x3 = np.arange(12 ** 3, dtype=np.float32).reshape(1, 1, 12, 12, 12)
    for axis in range(3):
        u = np.zeros((1, 1, 3), np.float32)
        u[..., axis] = 0.9
        moved = pg.fractional_max_pool(x3, 2, 4, u, device=device) != pg.fractional_max_pool(x3, 2, 4, 0 * u,
                                                                                            device=device)
        assert moved.any(axis=tuple(a for a in (2, 3, 4) if a != 2 + axis)).any()


def test_samples_outside_0_1_follow_pytorchs_formula_inside_the_input(device):
    x = np.arange(2 * 3 * 16 * 16, dtype=np.float32).reshape(2, 3, 16, 16)
    u = np.array([[[-1, 2], [np.nan, np.inf], [4.9624, -0.713]], [[5, 0.5], [35087244, -0.0], [1e30, -2.3e7]]],
                 np.float32)   # (35087244 along W: window 2 would start past the input; 1e30: C's int overflows)
    for window, out in ((1, 8), (2, 5), (3, 4)):
        y, i = pg.fractional_max_pool(x, window, out, u, return_indices=True, device=device)
        y_ref, i_ref = reference.fractional_max_pool(x, (window, window), (out, out), u)
        assert same_bits(y, y_ref) and np.array_equal(i, i_ref), (window, out)
    dy = np.ones((2, 3, 4, 4), np.float32)
    with pytest.raises(pg.ValidationError, match="samples in .0, 1.") as e:
        pg.fractional_max_pool_grad(x, dy, 3, u, device=device)
    assert e.value.field == "samples"


def test_bad_arguments():
    x = pg.TensorDesc("float32", (1, 2, 8, 8))
    s = pg.TensorDesc("float32", (1, 2, 2))
    with pytest.raises(pg.ValidationError, match="output_size"):
        pg.FractionalMaxPoolingDesc(x, s, window_size=(3, 3), output_size=(7, 4))   # 7 + 3 - 1 > 8
    with pytest.raises(pg.ValidationError, match="samples.sizes"):
        pg.FractionalMaxPoolingDesc(x, pg.TensorDesc("float32", (1, 2, 3)), window_size=2, output_size=4)
    with pytest.raises(pg.ValidationError, match="samples.data_type"):
        pg.FractionalMaxPoolingDesc(x, pg.TensorDesc("int32", (1, 2, 2)), window_size=2, output_size=4)
    with pytest.raises(pg.ValidationError, match="input.sizes"):
        pg.FractionalMaxPoolingDesc(pg.TensorDesc("float32", (1, 2, 8)), pg.TensorDesc("float32", (1, 2, 1)),
                                    window_size=2, output_size=4)
    with pytest.raises(pg.ValidationError, match="output_size"):
        pg.FractionalMaxPoolingDesc(x, s, window_size=2)
    with pytest.raises(pg.ValidationError, match="samples"):
        pg.fractional_max_pool(np.zeros((1, 2, 8, 8), np.float32), 2, 4, np.random.rand(1, 2, 2))   # float64
    with pytest.raises(pg.ValidationError, match="input_gradient.data_type"):
        pg.FractionalMaxPoolingGradDesc(x, s, pg.TensorDesc("float16", (1, 2, 4, 4)), window_size=2)


@pytest.mark.parametrize("sample_type", SAMPLE_TYPES)
def test_covering_bound_holds_for_every_sample(sample_type):
    # the gather's loops rest on it: over a grid of samples, no input is covered by more windows
    rng = np.random.default_rng(3)
    for _ in range(60):
        size = int(rng.integers(2, 300))
        k = int(rng.integers(1, min(size, 12) + 1))
        out = int(rng.integers(1, size - k + 2))
        bound = covering_bound(size, k, out, pg.DataType.of(sample_type))
        for u in np.linspace(0, 0.99999994, 23, dtype=np.float32):
            starts = np.clip(reference.fractional_starts(u, size, k, out, sample_type), 0, size - k)
            cover = np.zeros(size, int)
            for s in starts:
                cover[s:s + k] += 1
            assert cover.max() <= bound, (size, k, out, u)


def test_gradient_is_deterministic_and_splits(device):
    # windows overlapping heavily (alpha small): the gather visits many per element, split
    # over parts at a small loop budget, with the same sums as the unsplit gather where they are exact
    import dataclasses
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 2, 40, 40)).astype(np.float32)
    u = rng.random((1, 2, 2)).astype(np.float32)
    dy = rng.integers(-4, 5, (1, 2, 25, 26)).astype(np.float32)
    first = pg.fractional_max_pool_grad(x, dy, (16, 15), u, device=device)
    assert same_bits(first, pg.fractional_max_pool_grad(x, dy, (16, 15), u, device=device))
    assert same_bits(first, reference.fractional_max_pool_grad(x, dy, (16, 15), u).astype(np.float32))
    tuning = dataclasses.replace(device.tuning, loop_budget=256)
    desc = pg.FractionalMaxPoolingGradDesc(pg.TensorDesc("float32", x.shape), pg.TensorDesc("float32", u.shape),
                                           pg.TensorDesc("float32", dy.shape), window_size=(16, 15))
    assert len(pg.kernels.program_for(desc, tuning, None).passes) > 3   # split and merged
    with tuned_for(device, tuning):
        assert same_bits(first, pg.fractional_max_pool_grad(x, dy, (16, 15), u, device=device))
