"""Windows, bins and planes longer than one invocation may walk: split walks and gathers,
merged in a fixed order, against the NumPy reference on every adapter and both presets.

llvmpipe (the software adapters) ends an invocation's loops after 65535 iterations in all,
without an error; before the walks split, such windows came out wrong.  The cases:

- the examples that came out wrong, at full size (windows and bins of 70,000 to 262,144
  taps, under the presets' own loop budgets);
- drawn geometries of hundreds to thousands of taps under a loop budget of 256, so that
  every family splits (windows, bins, planes, gathers; 1-D to 3-D, padded, dilated, strided,
  every layout) on inputs small enough to draw many;
- the loop declarations themselves (tests/test_loop_bounds.py): at a budget of the whole
  65535 the walks that just fit, unsplit, are still exact on llvmpipe.
"""

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import poolgpu as pg
import reference
import test_adaptive
import test_adaptive_unpool_grad
import test_average_lp
import test_grad
import test_max_pool
import test_roi
from helpers import ALL_TYPES, FLOAT_TYPES, same_bits, tuned_for
from poolgpu import kernels
from poolgpu.kernels.split import loop_total

LONG_SETTINGS = settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                               HealthCheck.too_slow])
PRESETS = {"cpu": pg.Tuning.for_cpu(), "gpu": pg.Tuning.for_gpu()}
# Small budgets split windows of a few hundred taps: the tests' inputs stay small.
SPLITTING = {name: dataclasses.replace(t, loop_budget=256, plane_part=1024) for name, t in PRESETS.items()}
LAYOUTS = ["packed", "channels_last", "reversed", "gaps"]


# -- the examples that came out wrong ------------------------------------------------------

@pytest.fixture(params=list(PRESETS), ids=list(PRESETS))
def preset(device, request):
    with tuned_for(device, PRESETS[request.param]):
        yield device


def test_averages_of_long_windows(preset):
    x = np.zeros((1, 1, 512, 512), np.float32)
    x[0, 0, 256:] = 1  # the lower half: the first 65535 taps alone average to 0
    assert pg.average_pool(x, (512, 512), device=preset).item() == 0.5
    assert pg.adaptive_average_pool(x, (1, 1), device=preset).item() == 0.5
    assert pg.adaptive_average_pool(np.ones((1, 1, 100000), np.float32), 1, device=preset).item() == 1.0
    lp = pg.lp_pool(x, (512, 512), p=2, device=preset).item()
    assert lp == pytest.approx(np.sqrt(256 * 512), rel=1e-6)


def test_maxima_of_long_windows_keep_their_last_elements(preset):
    z = np.zeros((1, 1, 300, 300), np.float32)
    z[0, 0, -1, -1] = 1
    y, idx = pg.max_pool(z, (300, 300), return_indices=True, device=preset)
    assert (y.item(), idx.item()) == (1.0, 89999)
    y, idx = pg.adaptive_max_pool(z, (1, 1), return_indices=True, device=preset)
    assert (y.item(), idx.item()) == (1.0, 89999)
    dx = pg.adaptive_max_pool_grad(z, np.full((1, 1, 1, 1), 3, np.float32), device=preset)
    assert dx.ravel().nonzero()[0].tolist() == [89999] and dx[0, 0, -1, -1] == 3
    assert pg.roi_pool(z, np.array([[0, 0, 0, 299, 299]], np.float32), (1, 1), device=preset).item() == 1.0
    # a 1-D global maximum over 70,000 distinct values, first of two equal maxima
    v = np.random.default_rng(0).permutation(70000).astype(np.float32).reshape(1, 1, -1)
    v[0, 0, -1] = v.max()
    y, idx = pg.max_pool(v, (70000,), return_indices=True, device=preset)
    assert (y.item(), idx.item()) == (69999.0, int(np.argmax(v)))


def test_the_onnx_and_pytorch_layers_pool_long_windows(preset):
    from poolgpu import onnx as pgo
    x = np.zeros((1, 1, 512, 512), np.float32)
    x[0, 0, 256:] = 1
    assert pgo.global_average_pool(x, device=preset).item() == 0.5
    torch = pytest.importorskip("torch")
    import poolgpu.torch as pgt
    assert pgt.adaptive_avg_pool2d(torch.from_numpy(x), 1, device=preset).item() == 0.5
    assert pgt.adaptive_avg_pool1d(torch.ones(1, 1, 100000), 1, device=preset).item() == 1.0
    z = torch.zeros(1, 1, 300, 300, requires_grad=True)
    with torch.no_grad():
        z[0, 0, -1, -1] = 1
    y, idx = pgt.adaptive_max_pool2d(z, 1, return_indices=True, device=preset)
    assert idx.item() == 89999
    y.sum().backward()
    assert z.grad.flatten().nonzero().flatten().tolist() == [89999]


def test_windows_of_more_than_2_to_the_32_elements_divide_by_their_count(preset):
    # 70000 x 70000 taps, padding counted: a divisor past u32 (4.9e9).  Window (oh, ow)
    # starts 69999 before the input and covers its rows up to oh and columns up to ow.
    x = np.random.default_rng(4).standard_normal((1, 2, 3, 2)).astype(np.float32)
    window = dict(window_size=(70000, 70000), start_padding=(69999, 69999), include_padding=True)
    divisor = 70000.0 ** 2
    want = x.astype(np.float64).cumsum(axis=2).cumsum(axis=3) / divisor
    test_average_lp.assert_accurate(pg.average_pool(x, **window, device=preset), want, np.float32)
    dy = np.random.default_rng(5).standard_normal(x.shape).astype(np.float32)
    want = dy.astype(np.float64)[:, :, ::-1, ::-1].cumsum(axis=2).cumsum(axis=3)[:, :, ::-1, ::-1] / divisor
    test_grad.assert_gradient_close(pg.average_pool_grad(dy, x.shape, **window, device=preset), want, dy)


def test_a_long_strided_window(preset):
    x = np.random.default_rng(1).standard_normal((1, 2, 110000)).astype(np.float32)
    geometry = dict(window_size=(70000,), strides=(40000,))
    y, idx = pg.max_pool(x, **geometry, return_indices=True, device=preset)
    y_ref, i_ref = reference.max_pool(x, **geometry)
    assert same_bits(y, y_ref)
    np.testing.assert_array_equal(idx, i_ref)
    test_average_lp.assert_accurate(pg.average_pool(x, **geometry, device=preset), reference.average_pool(x, **geometry),
                                    np.float32)


def test_long_windows_are_the_same_bits_run_after_run(preset):
    x = np.random.default_rng(2).standard_normal((1, 2, 262144)).astype(np.float32)
    for pool in (lambda: pg.average_pool(x, (262144,), device=preset), lambda: pg.lp_pool(x, (262144,), device=preset),
                 lambda: pg.average_pool(x, (70001,), strides=(64000,), device=preset)):
        first = pool()
        assert all(same_bits(pool(), first) for _ in range(2))


# -- drawn long geometries, split at a small loop budget ------------------------------------

@st.composite
def long_geometries(draw):
    """Sizes and window fields of 1 to 3 dimensions whose windows hold hundreds to thousands
    of taps (some reaching far into padding, dilated or strided)."""
    dims = draw(st.integers(1, 3))
    longest = {1: 3000, 2: 48, 3: 12}[dims]
    spatial = [draw(st.integers(2, longest)) for _ in range(dims)]
    dilations = [draw(st.sampled_from([1, 1, 1, 2, 3])) for _ in range(dims)]
    windows = [max(1, (draw(st.integers(s // 2, s)) - 1) // d + 1) for s, d in zip(spatial, dilations)]
    start = [draw(st.integers(0, (w - 1) * d)) for w, d in zip(windows, dilations)]
    end = [draw(st.integers(0, (w - 1) * d)) for w, d in zip(windows, dilations)]
    strides = [draw(st.sampled_from([1, 1, 2, 3, max(1, w // 3), w])) for w in windows]
    return dict(sizes=(draw(st.integers(1, 2)), draw(st.integers(1, 3))) + tuple(spatial),
                window_size=tuple(windows), strides=tuple(strides), dilations=tuple(dilations),
                start_padding=tuple(start), end_padding=tuple(end), seed=draw(st.integers(0, 2**31)))


def _splitting(draw):
    return SPLITTING[draw(st.sampled_from(list(SPLITTING)))]


def _layouts(draw) -> dict:
    return dict(in_layout=draw(st.sampled_from(LAYOUTS)), out_layout=draw(st.sampled_from(LAYOUTS)))


@st.composite
def long_max_cases(draw):
    return dict(draw(long_geometries()), data_type=draw(st.sampled_from(ALL_TYPES)),
                indices=draw(st.sampled_from([None, "uint32"])), tuning=_splitting(draw), **_layouts(draw))


@st.composite
def long_average_cases(draw):
    # (Lp with p other than 1 and 2 goes through pow twice: within 8 ulp, docs/semantics.md)
    operator = draw(st.sampled_from(["average", "average_with_padding", "lp2", "lp3.5"]))
    return dict(draw(long_geometries()), data_type=draw(st.sampled_from(FLOAT_TYPES)), operator=operator,
                ulps=8 if operator == "lp3.5" else 4, tuning=_splitting(draw), **_layouts(draw))


@st.composite
def long_gradient_cases(draw):
    return dict(draw(long_geometries()), data_type=draw(st.sampled_from(FLOAT_TYPES)), integer_dy=draw(st.booleans()),
                include_padding=draw(st.booleans()), tuning=_splitting(draw), **_layouts(draw))


@LONG_SETTINGS
@given(case=long_max_cases())
def test_long_max_pooling(device, case):
    with tuned_for(device, case["tuning"]):
        test_max_pool.run_case(device, case)


@LONG_SETTINGS
@given(case=long_average_cases())
def test_long_average_and_lp_pooling(device, case):
    with tuned_for(device, case["tuning"]):
        test_average_lp.run_case(device, case)


@LONG_SETTINGS
@given(case=long_gradient_cases())
def test_long_gradients(device, case):
    with tuned_for(device, case["tuning"]):
        test_grad.test_max_pool_grad_matches_reference.hypothesis.inner_test(device, case)
        test_grad.test_average_pool_grad_matches_reference.hypothesis.inner_test(device, case)


@st.composite
def long_bins(draw):
    """Adaptive pooling with bins of hundreds to thousands of elements, or with outputs so
    much larger than the input that hundreds of bins cover each element (its gradients)."""
    dims = draw(st.integers(1, 3))
    if draw(st.booleans()):  # long bins
        spatial = tuple(draw(st.integers(1, {1: 4000, 2: 60, 3: 14}[dims])) for _ in range(dims))
        output = tuple(draw(st.integers(1, max(1, s // 40))) for s in spatial)
    else:  # many bins per element
        spatial = tuple(draw(st.integers(1, {1: 40, 2: 4, 3: 3}[dims])) for _ in range(dims))
        output = tuple(draw(st.integers(s, {1: 300, 2: 20, 3: 8}[dims] * s)) for s in spatial)
    data_type = draw(st.sampled_from(ALL_TYPES))
    return dict(sizes=(draw(st.integers(1, 2)), draw(st.integers(1, 3))) + spatial, output_size=output,
                data_type=data_type, indices=draw(st.sampled_from([None, "uint64"])), integer_dy=draw(st.booleans()),
                tuning=_splitting(draw), seed=draw(st.integers(0, 2**31)), **_layouts(draw))


@LONG_SETTINGS
@given(case=long_bins())
def test_long_adaptive_pooling(device, case):
    with tuned_for(device, case["tuning"]):
        test_adaptive.test_adaptive_max_pool_matches_reference.hypothesis.inner_test(device, case)
        if case["data_type"] in FLOAT_TYPES:
            test_adaptive.test_adaptive_average_pool_matches_reference.hypothesis.inner_test(device, case)


@LONG_SETTINGS
@given(case=long_bins())
def test_long_adaptive_gradients(device, case):
    if case["data_type"] not in FLOAT_TYPES:
        case = dict(case, data_type=pg.DataType.FLOAT32)
    test_adaptive_unpool_grad.test_adaptive_max_pool_grad_matches_reference.hypothesis.inner_test(device, case)
    test_adaptive_unpool_grad.test_adaptive_average_pool_grad_matches_reference.hypothesis.inner_test(device, case)


@st.composite
def long_roi_cases(draw):
    """ROI pooling over planes of up to 70 x 70, every other ROI the whole plane in one bin
    row (bins of up to 2450 elements)."""
    case = draw(test_roi.roi_cases())
    height, width = draw(st.integers(20, 70)), draw(st.integers(20, 70))
    rois = [[r[0], 0.0, 0.0, float(width), float(height)] if k % 2 else r for k, r in enumerate(case["rois"])]
    return dict(case, sizes=case["sizes"][:2] + (height, width), rois=rois, pooled=(1, 2), tuning=_splitting(draw))


@LONG_SETTINGS
@given(case=long_roi_cases())
def test_roi_pooling_over_large_bins(device, case):
    with tuned_for(device, case["tuning"]):
        test_roi.run_case(device, case)


# -- the loop declarations at llvmpipe's limit -----------------------------------------------

def _at_the_limit(tuning):
    """``tuning`` with the whole of llvmpipe's 65535 iterations as its budget (past the public
    range: the walks that fit it then loop as long as an invocation may)."""
    tuning = dataclasses.replace(tuning)
    object.__setattr__(tuning, "loop_budget", 65535)
    return tuning


def _longest_unsplit(describe, tuning, most=65535):
    """The largest n <= ``most`` whose description ``describe(n)`` runs unsplit (no partial
    results) under ``tuning``, and the most loop iterations declared for one of its passes
    (the budget, nearly)."""
    def unsplit(n):
        return not any(name.endswith("part") for name, _ in kernels.program_for(describe(n), tuning).scratch)
    low, high = 1, most
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if unsplit(middle) else (low, middle - 1)
    return low, max(loop_total(p.kernel, p.constants, p.params) for p in kernels.program_for(describe(low), tuning).passes)


def test_walks_that_just_fit_the_limit_are_exact(device):
    # Each walk or gather at the longest window, bin or tap run that it walks unsplit at a
    # budget of 65535: declared within a few iterations of it, and exact on llvmpipe.
    rng = np.random.default_rng(3)
    tuning = _at_the_limit(pg.Tuning(plane_walk=False))
    x = rng.standard_normal((1, 2, 65600)).astype(np.float32)
    x_desc = pg.TensorDesc("float32", x.shape)
    with tuned_for(device, tuning):
        # the general walk
        taps, declared = _longest_unsplit(lambda n: pg.MaxPooling2Desc(x_desc, window_size=(n,)), tuning)
        assert declared >= 65530
        y, idx = pg.max_pool(x, (taps,), return_indices=True, device=device)
        y_ref, i_ref = reference.max_pool(x, (taps,))
        assert same_bits(y, y_ref) and np.array_equal(idx, i_ref)
        # the bins walk: one bin
        size, declared = _longest_unsplit(
            lambda n: pg.AdaptiveMaxPoolingDesc(pg.TensorDesc("float32", (1, 2, n)), output_size=(1,)), tuning)
        assert declared >= 65530
        y, idx = pg.adaptive_max_pool(x[..., :size], 1, return_indices=True, device=device)
        y_ref, i_ref = reference.adaptive_max_pool(x[..., :size], (1,))
        assert same_bits(y, y_ref) and np.array_equal(idx, i_ref)
        # the block gathers: 3 dx elements, each in every one of a window's n taps (windows
        # o = 0 .. n + 1 over [o - n + 1, o], the rest padding; rows contiguous along W take
        # the row gathers, which never split, unless the tuning turns them off)
        def window(n):
            return dict(window_size=(n,), start_padding=(n - 1,), end_padding=(n - 1,))
        blocks = _at_the_limit(pg.Tuning(plane_walk=False, row_gathers=False))
        taps, declared = _longest_unsplit(lambda n: pg.AveragePoolingGradDesc(
            pg.TensorDesc("float32", (1, 2, n + 2)), pg.TensorDesc("float32", (1, 2, 3)), **window(n)), blocks)
        assert declared >= 65530
        dy = rng.standard_normal((1, 2, taps + 2)).astype(np.float32)
        o = np.arange(taps + 2)
        shares = dy / (np.minimum(o, 2) - np.maximum(o - taps + 1, 0) + 1)   # each window's dy / its input elements
        want = np.stack([shares[..., e:e + taps].astype(np.float64).sum(axis=-1) for e in range(3)], axis=-1)
        with tuned_for(device, blocks):
            got = pg.average_pool_grad(dy, (1, 2, 3), **window(taps), device=device)
        test_grad.assert_gradient_close(got, want, dy)
        # the adaptive gathers: every bin covers the one element
        bins, declared = _longest_unsplit(lambda n: pg.AdaptiveAveragePoolingGradDesc(
            pg.TensorDesc("float32", (1, 2, n)), pg.TensorDesc("float32", (1, 2, 1))), tuning)
        assert declared >= 65530
        dy = rng.standard_normal((1, 2, bins)).astype(np.float32)
        test_grad.assert_gradient_close(pg.adaptive_average_pool_grad(dy, (1, 2, 1), device=device),
                                        reference.adaptive_average_pool_grad(dy, (1, 2, 1)), dy)
