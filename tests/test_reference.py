"""Tests of the NumPy reference itself (tests/reference.py): hand-checked cases, a scalar
brute-force oracle written straight from the wording of docs/semantics.md, and PyTorch cross-checks
where the semantics coincide.  Nothing here touches the GPU or poolgpu's code."""

import itertools
import math

import numpy as np
import pytest

import reference as ref

ALL_TYPES = ["float32", "float16", "int64", "int32", "int16", "int8",
             "uint64", "uint32", "uint16", "uint8"]


# --------------------------------------------------------------------------------------
# a scalar oracle: one window at a time, Python scalars, no vectorisation
# --------------------------------------------------------------------------------------


def _norm(k, v, default):
    return [default] * k if v is None else list(v)


def _oracle_windows(in_sizes, window, strides, start, end, dil):
    """Yield (output spatial position, list of covered input spatial positions)."""
    k = len(window)
    strides, start = _norm(k, strides, 1), _norm(k, start, 0)
    end, dil = _norm(k, end, 0), _norm(k, dil, 1)
    spatial = in_sizes[2:]
    out = []
    for i in range(k):
        extent = (window[i] - 1) * dil[i] + 1
        out.append((spatial[i] + start[i] + end[i] - extent) // strides[i] + 1)
    for o in itertools.product(*[range(v) for v in out]):
        covered = []
        for t in itertools.product(*[range(v) for v in window]):
            pos = tuple(o[i] * strides[i] - start[i] + t[i] * dil[i] for i in range(k))
            if all(0 <= pos[i] < spatial[i] for i in range(k)):
                covered.append(pos)
        yield o, covered, tuple(out)


def _flat(sizes, n, c, pos):
    idx = n * sizes[1] + c
    for i, p in enumerate(pos):
        idx = idx * sizes[2 + i] + p
    return idx


def _beats(a, ia, b, ib):
    """Does candidate (a, ia) beat the current best (b, ib) under the documented rule?"""
    a_nan = isinstance(a, float) and math.isnan(a)
    b_nan = isinstance(b, float) and math.isnan(b)
    if a_nan or b_nan:
        if a_nan and b_nan:
            return ia < ib
        return a_nan
    return a > b or (a == b and ia < ib)


def oracle_max_pool(x, window, strides=None, start=None, end=None, dil=None):
    sizes = x.shape
    out_idx = {}
    outs = None
    for n in range(sizes[0]):
        for c in range(sizes[1]):
            for o, covered, outs in _oracle_windows(sizes, window, strides, start, end, dil):
                best, best_i = None, None
                for pos in covered:
                    v = x[(n, c) + pos].item()
                    i = _flat(sizes, n, c, pos)
                    if best_i is None or _beats(v, i, best, best_i):
                        best, best_i = v, i
                out_idx[(n, c) + o] = best_i
    idx = np.zeros(sizes[:2] + outs, dtype=np.int64)
    for key, i in out_idx.items():
        idx[key] = i
    return x.ravel()[idx], idx


def oracle_average_pool(x, window, strides=None, start=None, end=None, dil=None,
                        include_padding=False):
    sizes = x.shape
    res = {}
    for n in range(sizes[0]):
        for c in range(sizes[1]):
            for o, covered, outs in _oracle_windows(sizes, window, strides, start, end, dil):
                s = math.fsum(float(x[(n, c) + pos]) for pos in covered)
                d = math.prod(window) if include_padding else len(covered)
                res[(n, c) + o] = s / d
    y = np.zeros(sizes[:2] + outs)
    for key, v in res.items():
        y[key] = v
    return y


def oracle_lp_pool(x, window, strides=None, start=None, end=None, dil=None, p=2):
    sizes = x.shape
    res = {}
    for n in range(sizes[0]):
        for c in range(sizes[1]):
            for o, covered, outs in _oracle_windows(sizes, window, strides, start, end, dil):
                s = math.fsum(abs(float(x[(n, c) + pos])) ** p for pos in covered)
                res[(n, c) + o] = s ** (1.0 / p)
    y = np.zeros(sizes[:2] + outs)
    for key, v in res.items():
        y[key] = v
    return y


def oracle_average_pool_grad(dy, in_sizes, window, strides=None, start=None, end=None,
                             dil=None, include_padding=False):
    dx = np.zeros(in_sizes)
    for n in range(in_sizes[0]):
        for c in range(in_sizes[1]):
            for o, covered, _ in _oracle_windows(in_sizes, window, strides, start, end, dil):
                d = math.prod(window) if include_padding else len(covered)
                for pos in covered:
                    dx[(n, c) + pos] += float(dy[(n, c) + o]) / d
    return dx


def _random(dtype, shape, rng, low=None, high=None):
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return rng.standard_normal(shape).astype(dt)
    info = np.iinfo(dt)
    lo = info.min if low is None else low
    hi = info.max if high is None else high
    return rng.integers(lo, hi, size=shape, dtype=dt, endpoint=True)


# --------------------------------------------------------------------------------------
# output sizes
# --------------------------------------------------------------------------------------


def test_output_sizes_dilated_formula():
    # extent = (3-1)*2+1 = 5; (10 + 1 + 2 - 5) // 2 + 1 = 5
    assert ref.output_sizes((2, 3, 10), (3,), (2,), (1,), (2,), (2,)) == (2, 3, 5)
    assert ref.output_sizes((10,), (3,), (2,), (1,), (2,), (2,)) == (5,)
    assert ref.output_sizes((1, 1, 7, 6, 5), (2, 3, 1)) == (1, 1, 6, 4, 5)
    assert ref.output_sizes((1, 1, 4, 4), (2, 2), (2, 2)) == (1, 1, 2, 2)
    with pytest.raises(ValueError):
        ref.output_sizes((1, 1, 3), (3,), None, None, None, (2,))  # extent 5 > 3
    with pytest.raises(ValueError):
        ref.output_sizes((1, 1, 3), (0,))


def test_window_entirely_in_padding_is_invalid():
    x = np.ones((1, 1, 2), np.float32)
    with pytest.raises(ValueError):
        ref.max_pool(x, (1,), None, (1,), (0,))
    with pytest.raises(ValueError):
        ref.average_pool(x, (2,), (1,), (3,), (0,))


# --------------------------------------------------------------------------------------
# max pooling: hand-checked rules
# --------------------------------------------------------------------------------------


def test_max_pool_simple_2d():
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    y, idx = ref.max_pool(x, (2, 2), (2, 2))
    np.testing.assert_array_equal(y[0, 0], [[5, 7], [13, 15]])
    np.testing.assert_array_equal(idx[0, 0], [[5, 7], [13, 15]])
    assert y.dtype == np.float32 and idx.dtype == np.int64


def test_max_pool_ties_go_to_lowest_flat_index():
    x = np.ones((1, 1, 3, 3), np.float32)
    y, idx = ref.max_pool(x, (2, 2), (1, 1))
    np.testing.assert_array_equal(idx[0, 0], [[0, 1], [3, 4]])
    # a later row's element equal to an earlier one loses
    x = np.array([[[[0, 9, 0], [9, 0, 9], [0, 9, 0]]]], np.float32)
    y, idx = ref.max_pool(x, (3, 3))
    assert idx.item() == 1 and y.item() == 9


def test_max_pool_signed_zeros_compare_equal():
    x = np.array([[[-0.0, 0.0, 0.0, -0.0]]], np.float32)
    y, idx = ref.max_pool(x, (2,), (2,))
    np.testing.assert_array_equal(idx[0, 0], [0, 2])
    assert np.signbit(y[0, 0, 0]) and not np.signbit(y[0, 0, 1])


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_max_pool_nan_wins_first_nan_bit_exact(dtype):
    dt = np.dtype(dtype)
    uint = np.uint32 if dt.itemsize == 4 else np.uint16
    nan_a = np.array([0x7FC00123 if dt.itemsize == 4 else 0x7E12], uint).view(dt)[0]
    nan_b = np.array([0xFFC00456 if dt.itemsize == 4 else 0xFE34], uint).view(dt)[0]
    x = np.array([[[1, nan_a, np.inf, nan_b, 5, -1]]], dt)
    y, idx = ref.max_pool(x, (4,), (1,))
    # windows: [1 a inf b], [a inf b 5], [inf b 5 -1]
    np.testing.assert_array_equal(idx[0, 0], [1, 1, 3])
    got = y.view(uint)[0, 0]
    want = np.array([nan_a, nan_a, nan_b], dt).view(uint)
    np.testing.assert_array_equal(got, want)


def test_max_pool_padding_never_selected_minus_inf():
    x = np.full((1, 1, 3, 3), -np.inf, np.float32)
    y, idx = ref.max_pool(x, (3, 3), (1, 1), (1, 1), (1, 1))
    assert np.all(y == -np.inf)
    # top-left window covers input rows 0..1 / cols 0..1 -> first covered element, index 0
    np.testing.assert_array_equal(idx[0, 0], [[0, 0, 1], [0, 0, 1], [3, 3, 4]])
    # negative values with padding: the max is a real element, never a padded 0
    x = -np.arange(1, 5, dtype=np.float32).reshape(1, 1, 4)
    y, idx = ref.max_pool(x, (3,), (1,), (2,), (2,))
    np.testing.assert_array_equal(y[0, 0], [-1, -1, -1, -2, -3, -4])
    np.testing.assert_array_equal(idx[0, 0], [0, 0, 0, 1, 2, 3])


def test_max_pool_indices_include_n_and_c():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 5, 4)).astype(np.float32)
    y, idx = ref.max_pool(x, (2, 2), (1, 2))
    np.testing.assert_array_equal(x.ravel()[idx], y)
    planes = idx // (5 * 4)
    n_idx, c_idx = np.indices(idx.shape)[:2]
    np.testing.assert_array_equal(planes, n_idx * 3 + c_idx)


def test_max_pool_strided_input_logical_indices():
    rng = np.random.default_rng(1)
    base = rng.standard_normal((3, 2, 6, 5)).astype(np.float32)
    x = np.transpose(base, (1, 0, 2, 3))  # non-contiguous {2, 3, 6, 5}
    y1, i1 = ref.max_pool(x, (3, 2), (2, 1), (1, 0), (0, 1))
    y2, i2 = ref.max_pool(np.ascontiguousarray(x), (3, 2), (2, 1), (1, 0), (0, 1))
    np.testing.assert_array_equal(y1, y2)
    np.testing.assert_array_equal(i1, i2)


def test_max_pool_int64_beyond_2_53():
    big = 2**62
    x = np.array([[[big, big + 1, big, -(2**63), 2**63 - 1, 2**63 - 2]]], np.int64)
    assert float(big) == float(big + 1)  # indistinguishable through float64
    y, idx = ref.max_pool(x, (2,), (2,))
    assert y.tolist() == [[[big + 1, big, 2**63 - 1]]]
    assert idx.tolist() == [[[1, 2, 4]]]
    y, idx = ref.max_pool(x, (3,), (1,))
    assert y[0, 0].tolist() == [big + 1, big + 1, 2**63 - 1, 2**63 - 1]


def test_max_pool_uint64_extremes():
    top = 2**64 - 1
    x = np.array([[[top - 1, top, 2**63, 2**63 + 1, 0, 1]]], np.uint64)
    y, idx = ref.max_pool(x, (2,), (2,))
    assert y.tolist() == [[[top, 2**63 + 1, 1]]]
    assert idx.tolist() == [[[1, 3, 5]]]
    assert y.dtype == np.uint64


@pytest.mark.parametrize("dtype", ALL_TYPES)
def test_max_pool_all_types_extremes(dtype):
    dt = np.dtype(dtype)
    if dt.kind == "f":
        lo, hi = -np.finfo(dt).max, np.finfo(dt).max
    else:
        lo, hi = np.iinfo(dt).min, np.iinfo(dt).max
    x = np.array([[[lo, hi, hi, lo, lo, lo]]], dt)
    y, idx = ref.max_pool(x, (2,), (1,))
    assert y.dtype == dt
    assert y[0, 0].tolist() == [hi, hi, hi, lo, lo]
    assert idx[0, 0].tolist() == [1, 1, 2, 3, 4]


@pytest.mark.parametrize("dtype", ALL_TYPES)
@pytest.mark.parametrize("case", [
    ((2, 3, 9), (3,), (2,), (1,), (2,), (2,)),
    ((1, 2, 5, 6), (2, 3), (1, 2), (1, 0), (1, 2), (2, 1)),
    ((2, 1, 3, 4, 5), (2, 2, 3), (1, 2, 1), (0, 1, 1), (1, 0, 1), (1, 1, 2)),
])
def test_max_pool_matches_oracle(dtype, case):
    sizes, window, strides, start, end, dil = case
    rng = np.random.default_rng(2)
    # few distinct values so ties are frequent
    x = _random(dtype, sizes, rng, 0, 3) if np.dtype(dtype).kind != "f" else \
        rng.integers(-2, 3, sizes).astype(dtype)
    y, idx = ref.max_pool(x, window, strides, start, end, dil)
    oy, oidx = oracle_max_pool(x, window, strides, start, end, dil)
    np.testing.assert_array_equal(idx, oidx)
    np.testing.assert_array_equal(y, oy)
    # and on full-range random values
    x = _random(dtype, sizes, rng)
    y, idx = ref.max_pool(x, window, strides, start, end, dil)
    oy, oidx = oracle_max_pool(x, window, strides, start, end, dil)
    np.testing.assert_array_equal(idx, oidx)
    np.testing.assert_array_equal(y, oy)


def test_max_pool_matches_oracle_with_nans():
    rng = np.random.default_rng(3)
    x = rng.integers(-2, 3, (2, 2, 6, 7)).astype(np.float32)
    x[rng.random(x.shape) < 0.15] = np.nan
    x[rng.random(x.shape) < 0.1] = -0.0
    args = ((3, 2), (1, 2), (1, 1), (2, 0), (1, 2))
    y, idx = ref.max_pool(x, *args)
    oy, oidx = oracle_max_pool(x, *args)
    np.testing.assert_array_equal(idx, oidx)
    np.testing.assert_array_equal(y.view(np.uint32), oy.view(np.uint32))


# --------------------------------------------------------------------------------------
# average and Lp pooling
# --------------------------------------------------------------------------------------


def test_average_pool_padding_divisors():
    x = np.array([[[1, 2, 3]]], np.float32)
    y = ref.average_pool(x, (2,), (1,), (1,), (1,))
    np.testing.assert_array_equal(y[0, 0], [1, 1.5, 2.5, 3])
    y = ref.average_pool(x, (2,), (1,), (1,), (1,), include_padding=True)
    np.testing.assert_array_equal(y[0, 0], [0.5, 1.5, 2.5, 1.5])
    assert y.dtype == np.float64


def test_average_pool_dilated():
    x = np.array([[[1, 2, 3, 4, 5]]], np.float32)
    y = ref.average_pool(x, (2,), dilations=(2,))
    np.testing.assert_array_equal(y[0, 0], [2, 3, 4])
    # dilated window partly in the padding: count only covered elements
    y = ref.average_pool(x, (3,), (2,), (2,), (2,), (2,))
    # windows start at -2, 0, 2: {-2,0,2}->1,3 ; {0,2,4}->1,3,5 ; {2,4,6}->3,5
    np.testing.assert_array_equal(y[0, 0], [2, 3, 4])
    y = ref.average_pool(x, (3,), (2,), (2,), (2,), (2,), include_padding=True)
    np.testing.assert_allclose(y[0, 0], [4 / 3, 3, 8 / 3])


@pytest.mark.parametrize("include_padding", [False, True])
@pytest.mark.parametrize("case", [
    ((2, 3, 9), (3,), (2,), (1,), (2,), (2,)),
    ((1, 2, 5, 6), (2, 3), (1, 2), (1, 0), (1, 2), (2, 1)),
    ((2, 1, 3, 4, 5), (2, 2, 3), (1, 2, 1), (0, 1, 1), (1, 0, 1), (1, 1, 2)),
])
def test_average_pool_matches_oracle(case, include_padding):
    sizes, window, strides, start, end, dil = case
    x = np.random.default_rng(4).standard_normal(sizes).astype(np.float32)
    y = ref.average_pool(x, window, strides, start, end, dil, include_padding)
    oy = oracle_average_pool(x, window, strides, start, end, dil, include_padding)
    np.testing.assert_allclose(y, oy, rtol=1e-13, atol=1e-15)


def test_average_pool_float16_input():
    x = np.array([[[65504, 65504, 1]]], np.float16)
    y = ref.average_pool(x, (2,))
    np.testing.assert_array_equal(y[0, 0], [65504, 32752.5])


def test_lp_pool_hand_values():
    x = np.array([[[3, -4, 0, 0, 5]]], np.float32)
    np.testing.assert_allclose(ref.lp_pool(x, (2,), (1,))[0, 0], [5, 4, 0, 5])
    np.testing.assert_allclose(ref.lp_pool(x, (2,), (1,), p=1)[0, 0], [7, 4, 0, 5])
    x = np.array([[[3, 4, 5]]], np.float32)
    np.testing.assert_allclose(ref.lp_pool(x, (3,), p=3)[0, 0], [6.0], rtol=1e-15)
    # padding is not data: |x| of padded elements is never summed
    x = np.array([[[3, 4]]], np.float32)
    np.testing.assert_allclose(ref.lp_pool(x, (2,), (1,), (1,), (1,))[0, 0], [3, 5, 4])


@pytest.mark.parametrize("p", [1, 2, 3, 2.5])
@pytest.mark.parametrize("magnitude", [1e30, 1e-30, 1e38, 1e-38])
def test_lp_pool_no_overflow_or_underflow(p, magnitude):
    x = np.full((1, 1, 4), magnitude, np.float32)
    x[0, 0, 1] *= -1
    got = ref.lp_pool(x, (4,), p=p)
    want = float(np.float32(magnitude)) * 4 ** (1 / p)
    np.testing.assert_allclose(got[0, 0], [want], rtol=1e-14)


def test_lp_pool_special_values():
    x = np.array([[[0, 0, np.nan, 1, np.inf, 1, 0, 0]]], np.float32)
    y = ref.lp_pool(x, (2,), (2,))
    assert y[0, 0, 0] == 0
    assert np.isnan(y[0, 0, 1])
    assert y[0, 0, 2] == np.inf
    assert y[0, 0, 3] == 0
    x = np.array([[[np.nan, np.inf]]], np.float32)
    assert np.isnan(ref.lp_pool(x, (2,))[0, 0, 0])


@pytest.mark.parametrize("p", [1, 2, 3])
def test_lp_pool_matches_oracle(p):
    x = np.random.default_rng(5).standard_normal((2, 2, 6, 5)).astype(np.float32)
    args = ((3, 2), (2, 1), (1, 0), (2, 1), (1, 2))
    np.testing.assert_allclose(ref.lp_pool(x, *args, p=p), oracle_lp_pool(x, *args, p=p),
                               rtol=1e-13)


# --------------------------------------------------------------------------------------
# gradients and unpooling
# --------------------------------------------------------------------------------------


def test_average_pool_grad_directml_example():
    dy = np.array([[[[1, 2], [3, 4]]]], np.float32)
    dx = ref.average_pool_grad(dy, (1, 1, 3, 3), (2, 2), (1, 1))
    np.testing.assert_array_equal(
        dx[0, 0], [[0.25, 0.75, 0.5], [1, 2.5, 1.5], [0.75, 1.75, 1]])


@pytest.mark.parametrize("include_padding", [False, True])
@pytest.mark.parametrize("case", [
    ((2, 3, 9), (3,), (2,), (1,), (2,), (2,)),
    ((1, 2, 5, 6), (2, 3), (1, 2), (1, 0), (1, 2), (2, 1)),
    ((2, 1, 3, 4, 5), (2, 2, 3), (1, 2, 1), (0, 1, 1), (1, 0, 1), (1, 1, 2)),
])
def test_average_pool_grad_matches_oracle(case, include_padding):
    sizes, window, strides, start, end, dil = case
    out = ref.output_sizes(sizes, window, strides, start, end, dil)
    dy = np.random.default_rng(6).standard_normal(out).astype(np.float32)
    dx = ref.average_pool_grad(dy, sizes, window, strides, start, end, dil, include_padding)
    odx = oracle_average_pool_grad(dy, sizes, window, strides, start, end, dil, include_padding)
    np.testing.assert_allclose(dx, odx, rtol=1e-13, atol=1e-15)


def test_average_pool_grad_is_adjoint_of_forward():
    rng = np.random.default_rng(7)
    sizes = (2, 2, 7, 6)
    args = ((3, 2), (2, 1), (1, 1), (1, 0), (1, 2))
    for include_padding in (False, True):
        x = rng.standard_normal(sizes)
        y = ref.average_pool(x, *args, include_padding=include_padding)
        dy = rng.standard_normal(y.shape)
        dx = ref.average_pool_grad(dy, sizes, *args, include_padding=include_padding)
        assert math.isclose(np.vdot(y, dy), np.vdot(x, dx), rel_tol=1e-12)


def test_average_pool_grad_shape_mismatch():
    with pytest.raises(ValueError):
        ref.average_pool_grad(np.zeros((1, 1, 3, 3)), (1, 1, 3, 3), (2, 2))


def test_max_pool_grad_ties_and_overlap():
    x = np.array([[[1, 1, 1, 0]]], np.float32)
    dy = np.array([[[10, 20, 30]]], np.float32)
    dx = ref.max_pool_grad(x, dy, (2,), (1,))
    np.testing.assert_array_equal(dx[0, 0], [10, 20, 30, 0])
    x = np.array([[[0, 5, 0, 0]]], np.float32)
    dx = ref.max_pool_grad(x, dy, (2,), (1,))
    np.testing.assert_array_equal(dx[0, 0], [0, 30, 30, 0])
    x = np.array([[[0, np.nan, 7, np.nan]]], np.float32)
    dx = ref.max_pool_grad(x, dy, (2,), (1,))
    np.testing.assert_array_equal(dx[0, 0], [0, 30, 0, 30])


def test_max_pool_grad_padding_and_dilation():
    x = -np.arange(1, 6, dtype=np.float32).reshape(1, 1, 5)
    y, idx = ref.max_pool(x, (2,), (1,), (2,), (1,), (2,))
    dy = np.arange(1, y.size + 1, dtype=np.float32).reshape(y.shape)
    dx = ref.max_pool_grad(x, dy, (2,), (1,), (2,), (1,), (2,))
    want = np.zeros(5)
    np.add.at(want, idx.ravel(), dy.ravel())
    np.testing.assert_array_equal(dx.ravel(), want)


def test_max_unpool_repeats_and_out_of_range():
    x = np.array([[[[1, 2], [3, 4]]]], np.float32)
    idx = np.array([[[[5, 5], [100, 0]]]], np.uint32)
    out = ref.max_unpool(x, idx, (1, 1, 3, 3))
    want = np.zeros((1, 1, 3, 3), np.float32)
    want.flat[5] = 2
    want.flat[0] = 4
    np.testing.assert_array_equal(out, want)
    # spatial-only output sizes are accepted too
    np.testing.assert_array_equal(ref.max_unpool(x, idx, (3, 3)), want)


def test_max_unpool_uint64_huge_indices_and_int64_values():
    x = np.array([[[2**62 + 1, -(2**63), 2**63 - 1]]], np.int64)
    idx = np.array([[[2, 2**64 - 1, 0]]], np.uint64)
    out = ref.max_unpool(x, idx, (1, 1, 4))
    assert out.dtype == np.int64
    assert out.tolist() == [[[2**63 - 1, 0, 2**62 + 1, 0]]]
    idx = np.array([[[2, -1, 0]]], np.int64)  # a negative index is outside too
    assert ref.max_unpool(x, idx, (1, 1, 4)).tolist() == [[[2**63 - 1, 0, 2**62 + 1, 0]]]


def test_max_unpool_round_trip():
    rng = np.random.default_rng(8)
    x = rng.standard_normal((2, 3, 6, 8)).astype(np.float32)
    y, idx = ref.max_pool(x, (2, 2), (2, 2))
    back = ref.max_unpool(y, idx, x.shape)
    mask = np.zeros(x.size, bool)
    mask[idx.ravel()] = True
    np.testing.assert_array_equal(back.ravel()[mask], x.ravel()[mask])
    assert np.all(back.ravel()[~mask] == 0)
    # overlapping windows: the same index repeats with the same value
    y, idx = ref.max_pool(x, (3, 3), (1, 1))
    back = ref.max_unpool(y, idx, x.shape)
    np.testing.assert_array_equal(back.ravel()[idx.ravel()], x.ravel()[idx.ravel()])


# --------------------------------------------------------------------------------------
# ROI pooling
# --------------------------------------------------------------------------------------


def _round_half_away(v):
    return math.floor(v + 0.5) if v >= 0 else -math.floor(-v + 0.5)


def oracle_roi_pool(x, rois, pooled, scale):
    """The DirectML formulas, literally, one output element at a time."""
    n, c, h, w = x.shape
    ph, pw = pooled
    out = np.zeros((len(rois), c, ph, pw), x.dtype)
    for r, (b, x1, y1, x2, y2) in enumerate(np.asarray(rois, np.float32)):
        b = int(b)
        if not 0 <= b < n:
            continue
        s = np.float32(scale)
        x1, y1, x2, y2 = (_round_half_away(float(np.float32(v) * s)) for v in (x1, y1, x2, y2))
        rh, rw = max(y2 - y1 + 1, 1), max(x2 - x1 + 1, 1)
        for i in range(ph):
            for j in range(pw):
                hs = min(max(i * rh // ph + y1, 0), h)
                he = min(max(((i + 1) * rh + ph - 1) // ph + y1, 0), h)
                ws = min(max(j * rw // pw + x1, 0), w)
                we = min(max(((j + 1) * rw + pw - 1) // pw + x1, 0), w)
                if he <= hs or we <= ws:
                    continue
                for ch in range(c):
                    out[r, ch, i, j] = x[b, ch, hs:he, ws:we].max()
    return out


def test_roi_covering_whole_input_is_global_max():
    rng = np.random.default_rng(9)
    x = rng.standard_normal((2, 3, 5, 7)).astype(np.float32)
    out = ref.roi_pool(x, [[1, 0, 0, 6, 4]], (1, 1))
    np.testing.assert_array_equal(out[0, :, 0, 0], x[1].max(axis=(1, 2)))
    # the {1, 1, R, 5} form
    out4 = ref.roi_pool(x, np.array([[[[1, 0, 0, 6, 4]]]], np.float32), (1, 1))
    np.testing.assert_array_equal(out4, out)


def test_roi_bins_of_one_element():
    x = np.arange(2 * 4 * 5, dtype=np.float32).reshape(1, 2, 4, 5)
    out = ref.roi_pool(x, [[0, 1, 1, 3, 2]], (2, 3))  # region 2 x 3 -> 2 x 3 bins
    np.testing.assert_array_equal(out[0], x[0, :, 1:3, 1:4])


def test_roi_spatial_scale_pixels():
    # a 256x256 image seen through a feature map of stride 16: 16x16
    x = np.arange(16 * 16, dtype=np.float32).reshape(1, 1, 16, 16)
    rois = [[0, 32, 64, 95, 127]]  # pixel corners -> feature 2..5.9375 -> round 2, 4, 6, 8
    out = ref.roi_pool(x, rois, (2, 2), spatial_scale=0.0625)
    # x1 = 2, x2 = round(5.9375) = 6; y1 = 4, y2 = round(7.9375) = 8; widths 5 and 5
    # bins: rows [4, 7), [6, 9); cols [2, 5), [4, 7)
    want = [[x[0, 0, 4:7, 2:5].max(), x[0, 0, 4:7, 4:7].max()],
            [x[0, 0, 6:9, 2:5].max(), x[0, 0, 6:9, 4:7].max()]]
    np.testing.assert_array_equal(out[0, 0], want)


def test_roi_rounding_half_away_from_zero():
    x = np.arange(6, dtype=np.float32).reshape(1, 1, 1, 6) + 1
    # 8 * 0.0625 = 0.5 -> 1 ; 24 * 0.0625 = 1.5 -> 2 ; 40 * 0.0625 = 2.5 -> 3
    out = ref.roi_pool(x, [[0, 8, 0, 8, 0], [0, 24, 0, 24, 0], [0, 40, 0, 40, 0]],
                       (1, 1), 0.0625)
    assert out[:, 0, 0, 0].tolist() == [2, 3, 4]
    # -0.5 -> -1 (outside), region [-1, 0]: bin covers column 0 only after clamping
    out = ref.roi_pool(x, [[0, -8, 0, 0, 0]], (1, 2), 0.0625)
    assert out[0, 0, 0].tolist() == [0, 1]  # bin 0 = column -1 (empty -> 0), bin 1 = column 0
    # just below one half rounds down
    below = float(np.nextafter(np.float32(0.5), np.float32(0)))
    out = ref.roi_pool(x, [[0, below, 0, below, 0]], (1, 1))
    assert out[0, 0, 0, 0] == 1


def test_roi_empty_bins_after_clamping():
    x = np.ones((1, 1, 4, 4), np.float32) * 7
    out = ref.roi_pool(x, [[0, 2, 0, 5, 3]], (1, 4))  # columns 2, 3 | 4, 5 outside
    assert out[0, 0, 0].tolist() == [7, 7, 0, 0]
    out = ref.roi_pool(x, [[0, 10, 10, 12, 12]], (2, 2))  # entirely outside
    assert np.all(out == 0)


def test_roi_data_errors_are_defined():
    x = np.arange(1, 17, dtype=np.float32).reshape(1, 1, 4, 4)
    out = ref.roi_pool(x, [[1, 0, 0, 3, 3], [-1, 0, 0, 3, 3], [np.nan, 0, 0, 3, 3],
                           [0, np.nan, 0, 3, 3], [0, 0, 0, np.inf, 3]], (2, 2))
    assert np.all(out == 0)
    # batch values are truncated toward zero
    out = ref.roi_pool(x, [[0.9, 0, 0, 3, 3], [-0.5, 0, 0, 3, 3]], (1, 1))
    assert out[:, 0, 0, 0].tolist() == [16, 16]
    # reversed corners: a one-element region at (x1, y1)
    out = ref.roi_pool(x, [[0, 2, 1, 0, 0]], (2, 2))
    assert np.all(out[0, 0] == x[0, 0, 1, 2])


def test_roi_nan_and_float16():
    x = np.arange(16, dtype=np.float16).reshape(1, 1, 4, 4)
    x[0, 0, 1, 1] = np.nan
    out = ref.roi_pool(x, [[0, 0, 0, 3, 3]], (2, 2))
    assert out.dtype == np.float16
    assert np.isnan(out[0, 0, 0, 0])
    assert out[0, 0].ravel()[1:].tolist() == [7, 13, 15]


def test_roi_matches_literal_formulas():
    rng = np.random.default_rng(10)
    x = rng.standard_normal((3, 2, 9, 11)).astype(np.float32)
    r = 40
    rois = np.stack([rng.integers(-1, 4, r), rng.uniform(-40, 200, r), rng.uniform(-40, 170, r),
                     rng.uniform(-40, 200, r), rng.uniform(-40, 170, r)], 1).astype(np.float32)
    for pooled in [(1, 1), (2, 3), (7, 7)]:
        got = ref.roi_pool(x, rois, pooled, 0.0625)
        np.testing.assert_array_equal(got, oracle_roi_pool(x, rois, pooled, 0.0625))


# --------------------------------------------------------------------------------------
# adaptive pooling: hand checks
# --------------------------------------------------------------------------------------


def test_adaptive_bins():
    x = np.arange(5, dtype=np.float32).reshape(1, 1, 5)
    # out 3 over in 5: [0, 2), [1, 4), [3, 5)
    y, idx = ref.adaptive_max_pool(x, (3,))
    assert y[0, 0].tolist() == [1, 3, 4] and idx[0, 0].tolist() == [1, 3, 4]
    np.testing.assert_allclose(ref.adaptive_average_pool(x, (3,))[0, 0], [0.5, 2, 3.5])
    # output larger than input: every output sees one or two elements
    y, idx = ref.adaptive_max_pool(x[..., :2], (5,))
    # in 2 out 5: [0,1) [0,1) [0,2) [1,2) [1,2)
    assert idx[0, 0].tolist() == [0, 0, 1, 1, 1]


@pytest.mark.parametrize("dtype", ALL_TYPES)
def test_adaptive_max_all_types_and_ties(dtype):
    x = np.zeros((2, 2, 4, 6), dtype)
    y, idx = ref.adaptive_max_pool(x, (3, 4))
    assert y.dtype == np.dtype(dtype)
    o = ref.adaptive_max_pool(x, 1)[1]
    assert o.ravel().tolist() == [0, 24, 48, 72]
    # compare with the global max pooling of the same input
    rng = np.random.default_rng(11)
    x = _random(dtype, (2, 3, 4, 5), rng)
    y, idx = ref.adaptive_max_pool(x, (1, 1))
    y2, idx2 = ref.max_pool(x, (4, 5))
    np.testing.assert_array_equal(y, y2)
    np.testing.assert_array_equal(idx, idx2)


def test_adaptive_uniform_bins_equal_fixed_windows():
    rng = np.random.default_rng(12)
    x = rng.standard_normal((2, 3, 6, 8, 4)).astype(np.float32)
    y, idx = ref.adaptive_max_pool(x, (3, 2, 4))
    y2, idx2 = ref.max_pool(x, (2, 4, 1), (2, 4, 1))
    np.testing.assert_array_equal(y, y2)
    np.testing.assert_array_equal(idx, idx2)
    np.testing.assert_allclose(ref.adaptive_average_pool(x, (3, 2, 4)),
                               ref.average_pool(x, (2, 4, 1), (2, 4, 1)), rtol=1e-15)


def test_adaptive_max_nan():
    x = np.array([[[1, np.nan, 3, np.nan, 0]]], np.float32)
    y, idx = ref.adaptive_max_pool(x, (2,))  # [0, 3), [2, 5)
    assert idx[0, 0].tolist() == [1, 3]
    assert np.isnan(y).all()


# --------------------------------------------------------------------------------------
# speed sanity: ~100k elements in reasonable time
# --------------------------------------------------------------------------------------


def test_reference_is_fast_enough():
    import time
    x = np.random.default_rng(13).standard_normal((4, 8, 56, 56)).astype(np.float32)
    t = time.perf_counter()
    ref.max_pool(x, (3, 3), (2, 2), (1, 1), (1, 1))
    ref.average_pool(x, (3, 3), (1, 1), (1, 1), (1, 1))
    ref.lp_pool(x, (3, 3), (1, 1), (1, 1), (1, 1))
    ref.adaptive_max_pool(x, (5, 7))
    dy = np.ones(ref.output_sizes(x.shape, (3, 3), (2, 2), (1, 1), (1, 1)))
    ref.max_pool_grad(x, dy, (3, 3), (2, 2), (1, 1), (1, 1))
    ref.average_pool_grad(dy, x.shape, (3, 3), (2, 2), (1, 1), (1, 1))
    assert time.perf_counter() - t < 20


# --------------------------------------------------------------------------------------
# PyTorch cross-checks
# --------------------------------------------------------------------------------------


def _torch():
    return pytest.importorskip("torch")


def _flat_from_plane(idx_plane, in_shape):
    """Torch's per-(n, c)-plane indices -> flat logical indices over all dims."""
    n, c = in_shape[:2]
    plane = int(np.prod(in_shape[2:]))
    nn, cc = np.indices(idx_plane.shape)[:2]
    return (nn * c + cc) * plane + idx_plane


TORCH_MAX_CASES = [
    # sizes, kernel, stride, padding (<= kernel/2), dilation
    ((2, 3, 17), (3,), (2,), (1,), (1,)),
    ((2, 3, 17), (4,), (1,), (2,), (3,)),
    ((2, 3, 9, 11), (3, 2), (2, 1), (1, 1), (1, 2)),
    ((1, 4, 12, 10), (2, 2), (2, 2), (0, 0), (1, 1)),
    ((1, 2, 5, 6, 7), (3, 2, 3), (1, 2, 2), (1, 1, 0), (1, 2, 2)),
    ((2, 2, 4, 4, 4), (2, 2, 2), (2, 2, 2), (0, 1, 1), (1, 1, 1)),
]


def _torch_max(F, k):
    return {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}[k]


@pytest.mark.parametrize("case", TORCH_MAX_CASES)
def test_max_pool_vs_torch(case):
    torch = _torch()
    F = torch.nn.functional
    sizes, kernel, stride, pad, dil = case
    k = len(kernel)
    rng = np.random.default_rng(14)
    for x in (rng.standard_normal(sizes).astype(np.float32),
              rng.integers(-2, 3, sizes).astype(np.float32)):   # the second has many ties
        ty, ti = _torch_max(F, k)(torch.from_numpy(x), kernel, stride, pad, dil,
                                  return_indices=True)
        y, idx = ref.max_pool(x, kernel, stride, pad, pad, dil)
        np.testing.assert_array_equal(y, ty.numpy())
        np.testing.assert_array_equal(idx, _flat_from_plane(ti.numpy(), sizes))


@pytest.mark.parametrize("case", TORCH_MAX_CASES)
def test_max_pool_grad_vs_torch(case):
    torch = _torch()
    F = torch.nn.functional
    sizes, kernel, stride, pad, dil = case
    rng = np.random.default_rng(15)
    x = rng.permutation(np.prod(sizes)).reshape(sizes).astype(np.float64)  # no ties
    tx = torch.from_numpy(x).requires_grad_(True)
    ty = _torch_max(F, len(kernel))(tx, kernel, stride, pad, dil)
    dy = rng.standard_normal(ty.shape)
    ty.backward(torch.from_numpy(dy))
    dx = ref.max_pool_grad(x, dy, kernel, stride, pad, pad, dil)
    np.testing.assert_allclose(dx, tx.grad.numpy(), rtol=1e-14, atol=1e-14)


TORCH_AVG_CASES = [
    ((2, 3, 17), (3,), (2,), (1,)),
    ((2, 3, 16), (4,), (1,), (2,)),
    ((2, 3, 9, 11), (3, 2), (2, 1), (1, 1)),
    ((1, 4, 12, 10), (5, 4), (2, 3), (2, 2)),
    ((1, 2, 5, 6, 7), (3, 2, 3), (1, 2, 2), (1, 1, 0)),
]


def _torch_avg(F, k):
    return {1: F.avg_pool1d, 2: F.avg_pool2d, 3: F.avg_pool3d}[k]


@pytest.mark.parametrize("include_padding", [False, True])
@pytest.mark.parametrize("case", TORCH_AVG_CASES)
def test_average_pool_and_grad_vs_torch(case, include_padding):
    torch = _torch()
    F = torch.nn.functional
    sizes, kernel, stride, pad = case
    rng = np.random.default_rng(16)
    x = rng.standard_normal(sizes)
    tx = torch.from_numpy(x).requires_grad_(True)
    ty = _torch_avg(F, len(kernel))(tx, kernel, stride, pad, count_include_pad=include_padding)
    y = ref.average_pool(x, kernel, stride, pad, pad, include_padding=include_padding)
    np.testing.assert_allclose(y, ty.detach().numpy(), rtol=1e-13, atol=1e-15)
    dy = rng.standard_normal(ty.shape)
    ty.backward(torch.from_numpy(dy))
    dx = ref.average_pool_grad(dy, sizes, kernel, stride, pad, pad,
                               include_padding=include_padding)
    np.testing.assert_allclose(dx, tx.grad.numpy(), rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("p", [1, 2, 3])
@pytest.mark.parametrize("case", [
    ((2, 3, 17), (3,), (2,)),
    ((2, 3, 9, 11), (3, 2), (2, 1)),
    ((1, 2, 5, 6, 7), (3, 2, 3), (1, 2, 2)),
])
def test_lp_pool_vs_torch(case, p):
    torch = _torch()
    F = torch.nn.functional
    sizes, kernel, stride = case
    x = np.random.default_rng(17).standard_normal(sizes)
    if p % 2 == 1:
        x = np.abs(x)  # torch sums x**p, not |x|**p; they coincide for x >= 0
    fn = {1: F.lp_pool1d, 2: F.lp_pool2d, 3: F.lp_pool3d}[len(kernel)]
    kern = kernel[0] if len(kernel) == 1 else kernel
    strd = stride[0] if len(stride) == 1 else stride
    ty = fn(torch.from_numpy(x), p, kern, strd)
    np.testing.assert_allclose(ref.lp_pool(x, kernel, stride, p=p), ty.numpy(), rtol=1e-12)


@pytest.mark.parametrize("case", [
    ((2, 3, 16), (2,), (2,)),
    ((2, 3, 8, 10), (2, 2), (2, 2)),
    ((2, 3, 9, 11), (3, 3), (3, 3)),
    ((1, 2, 4, 6, 8), (2, 3, 2), (2, 3, 2)),
])
def test_max_unpool_vs_torch(case):
    torch = _torch()
    F = torch.nn.functional
    sizes, kernel, stride = case
    k = len(kernel)
    x = np.random.default_rng(18).standard_normal(sizes).astype(np.float32)
    ty, ti = _torch_max(F, k)(torch.from_numpy(x), kernel, stride, return_indices=True)
    unpool = {1: F.max_unpool1d, 2: F.max_unpool2d, 3: F.max_unpool3d}[k]
    tout = unpool(ty, ti, kernel, stride, output_size=sizes[2:])
    y, idx = ref.max_pool(x, kernel, stride)
    out = ref.max_unpool(y, idx, sizes)
    np.testing.assert_array_equal(out, tout.numpy())


@pytest.mark.parametrize("case", [
    ((2, 3, 17), (5,)),
    ((2, 3, 5), (7,)),
    ((2, 3, 10, 7), (3, 4)),
    ((1, 2, 6, 5), (6, 9)),
    ((1, 2, 7, 5, 9), (2, 3, 4)),
    ((2, 1, 3, 4, 5), (5, 4, 3)),
])
def test_adaptive_vs_torch(case):
    torch = _torch()
    F = torch.nn.functional
    sizes, out = case
    k = len(out)
    rng = np.random.default_rng(19)
    x = rng.standard_normal(sizes).astype(np.float32)
    amax = {1: F.adaptive_max_pool1d, 2: F.adaptive_max_pool2d, 3: F.adaptive_max_pool3d}[k]
    aavg = {1: F.adaptive_avg_pool1d, 2: F.adaptive_avg_pool2d, 3: F.adaptive_avg_pool3d}[k]
    ty, ti = amax(torch.from_numpy(x), out, return_indices=True)
    y, idx = ref.adaptive_max_pool(x, out)
    np.testing.assert_array_equal(y, ty.numpy())
    np.testing.assert_array_equal(idx, _flat_from_plane(ti.numpy(), sizes))
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(ref.adaptive_average_pool(x, out),
                               aavg(torch.from_numpy(x64), out).numpy(), rtol=1e-13, atol=1e-15)
