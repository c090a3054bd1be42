"""Fractional max pooling and its gradient on every adapter, against the independent NumPy
reference and PyTorch's CPU kernels: values bit-exact, indices exact, in 2D and 3D, every
data type, samples of float32, float16 and bfloat16, any layout; the gradient a
deterministic gather (PyTorch's autograd in tests/test_torch_fractional.py)."""

import dataclasses

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
        y_ref, i_ref = reference.fractional_max_pool(x, (window, window), (out, out), u)
        for tuning in (bins_tuning("cpu"), walks_tuning("cpu"), walks_tuning("gpu")):
            with tuned_for(device, tuning):
                y, i = pg.fractional_max_pool(x, window, out, u, return_indices=True, device=device)
            assert same_bits(y, y_ref) and np.array_equal(i, i_ref), (window, out, tuning)
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
    # the gather's loops rest on it: over a grid of samples, no input (no run of `span`
    # inputs: the gather's four along W) meets more windows; and it is no mere `out`
    rng = np.random.default_rng(3)
    below_out = 0
    for _ in range(60):
        size = int(rng.integers(2, 300))
        k = int(rng.integers(1, min(size, 12) + 1))
        out = int(rng.integers(1, size - k + 2))
        for span in (1, 4):
            bound = covering_bound(size, k, out, pg.DataType.of(sample_type), span)
            below_out += bound < out
            for u in np.linspace(0, 0.99999994, 23, dtype=np.float32):
                starts = np.clip(reference.fractional_starts(u, size, k, out, sample_type), 0, size - k)
                cover = np.zeros(size + span, int)   # windows meeting inputs [i, i + span)
                for s in starts:
                    cover[max(s - span + 1, 0):s + k] += 1
                assert cover.max() <= bound, (size, k, out, span, u)
    assert below_out > 30


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


# -- the fractional walks (Tuning.fractional_walks) ------------------------------------------

def walks_tuning(preset):
    return dataclasses.replace(pg.Tuning.preset(preset), fractional_walks=True)


def bins_tuning(preset):
    return dataclasses.replace(pg.Tuning.preset(preset), fractional_walks=False)


@st.composite
def walk_cases(draw):
    """fractional_cases of every type, under either preset, with rows of 4 to 24 elements
    (four outputs per invocation from chunks, stored four at a time or one by one)."""
    case = draw(fractional_cases())
    spatial = case["sizes"][2:-1] + (draw(st.sampled_from([4, 8, 9, 16, 24])),)
    window = case["window_size"][:-1] + (draw(st.integers(1, min(6, spatial[-1]))),)
    output = case["output_size"][:-1] + (draw(st.integers(1, spatial[-1] - window[-1] + 1)),)
    output = tuple(min(o, s - k + 1) for o, s, k in zip(output, spatial, window))
    return dict(case, sizes=case["sizes"][:2] + spatial, window_size=window, output_size=output,
                preset=draw(st.sampled_from(["cpu", "gpu"])))


@GPU_SETTINGS
@given(case=walk_cases())
def test_fractional_walks_give_the_bins_walks_bits(device, case):
    rng = np.random.default_rng(case["seed"])
    x = random_values(case["data_type"], case["sizes"], rng)
    u = samples_of(case, rng)
    x_desc = pg.TensorDesc(case["data_type"], x.shape, layout_strides(x.shape, case["in_layout"]))
    out_sizes = x.shape[:2] + case["output_size"]
    output = pg.TensorDesc(case["data_type"], out_sizes, layout_strides(out_sizes, case["out_layout"]))
    indices = pg.TensorDesc(case["indices"] or "uint32", out_sizes, layout_strides(out_sizes, case["out_layout"]))
    samples = device.upload(u)
    desc = pg.FractionalMaxPoolingDesc(x_desc, samples.desc, output, indices, window_size=case["window_size"])
    walks = walks_tuning(case["preset"])
    assert pg.kernels.program_for(desc, walks).passes[1].kernel.file == "fractional_max_pool.wgsl"
    results = []
    for tuning in (bins_tuning(case["preset"]), walks):
        outs = (canary_tensor(device, output), canary_tensor(device, indices, lead_bytes=40))
        pg.Op(device, desc, tuning)(sentinel_input(device, x, x_desc.strides), samples, out=outs)
        for t in outs:
            assert_canaries_intact(t)
        results.append([t.numpy() for t in outs])
    y_ref, i_ref = reference.fractional_max_pool(x, case["window_size"], case["output_size"], u.astype(np.float32),
                                                 case["sample_type"])
    for y, i in results:
        assert same_bits(y, y_ref)
        np.testing.assert_array_equal(i, i_ref.astype(np.uint32))
    # the gradient: the same sums in the same order (exact where dy holds small integers)
    if case["data_type"].is_float:
        dy = rng.integers(-8, 9, out_sizes).astype(x.dtype)
        noisy = rng.standard_normal(out_sizes).astype(x.dtype)
        grad = pg.FractionalMaxPoolingGradDesc(x_desc, samples.desc, pg.TensorDesc(case["data_type"], out_sizes),
                                               pg.TensorDesc(case["data_type"], x.shape), window_size=case["window_size"])
        assert pg.kernels.program_for(grad, walks).passes[-1].kernel.file == "fractional_max_pool_grad.wgsl"
        expected = reference.fractional_max_pool_grad(x, dy, case["window_size"], u.astype(np.float32),
                                                      case["sample_type"]).astype(x.dtype)
        xt = sentinel_input(device, x, x_desc.strides)
        got = [[pg.Op(device, grad, tuning)(xt, samples, device.upload(d)).numpy() for d in (dy, noisy)]
               for tuning in (bins_tuning(case["preset"]), walks)]
        assert same_bits(got[0][0], expected) and same_bits(got[1][0], expected)
        assert same_bits(got[1][1], got[0][1])


def test_the_gather_over_rows_of_dx_gives_one_rows_bits(device):
    """The gradient's gather takes four elements along W of ``rows_per_invocation`` rows
    (10 rows: the last invocation of each plane has two); each element adds the same windows
    in the same order, whatever the rows (dy not integers: the bits would show another)."""
    rng = np.random.default_rng(31)
    x = rng.standard_normal((2, 3, 10, 16)).astype(np.float32)
    u = rng.random((2, 3, 2)).astype(np.float32)
    dy = rng.standard_normal((2, 3, 7, 11)).astype(np.float32)
    desc = pg.FractionalMaxPoolingGradDesc(pg.TensorDesc("float32", x.shape), pg.TensorDesc("float32", u.shape),
                                           pg.TensorDesc("float32", dy.shape), window_size=(2, 2))
    xt, samples, dyt = device.upload(x), device.upload(u), device.upload(dy)
    results = []
    for rows in (1, 2, 3, 4):
        tuning = dataclasses.replace(walks_tuning("cpu"), rows_per_invocation=rows)
        gather = pg.kernels.program_for(desc, tuning).passes[-1]
        assert gather.kernel.file == "fractional_max_pool_grad.wgsl" and dict(gather.constants)["ROWS"] == rows
        results.append(pg.Op(device, desc, tuning)(xt, samples, dyt).numpy())
    np.testing.assert_allclose(results[0], reference.fractional_max_pool_grad(x, dy, (2, 2), u), rtol=1e-6, atol=1e-6)
    for got in results[1:]:
        assert same_bits(got, results[0])


@pytest.mark.parametrize("preset", ["cpu", "gpu"])
def test_fractional_walks_fall_back_at_other_offsets_and_past_the_loop_budget(device, preset):
    # outputs of 8 (four per store); outputs at offsets that are not multiples of 4 elements
    # take the one-output walk (x at any offset: the four-output walk loads its taps one by
    # one); heavily overlapping windows past a small loop budget take the bins walk
    rng = np.random.default_rng(21)
    x = random_values(pg.DataType.FLOAT32, (2, 3, 12, 16), rng)
    u = rng.random((2, 3, 2)).astype(np.float32)
    desc = pg.FractionalMaxPoolingDesc(pg.TensorDesc("float32", x.shape), pg.TensorDesc("float32", u.shape),
                                       pg.TensorDesc("float32", (2, 3, 6, 8)), pg.TensorDesc("uint32", (2, 3, 6, 8)),
                                       window_size=(3, 3))
    tuning = walks_tuning(preset)
    program = pg.kernels.program_for(desc, tuning)
    walks = pg.kernels.fractional
    if preset == "cpu":   # (the GPU preset has no rows walks: one output per invocation)
        assert program.passes[1].kernel is walks.FRACTIONAL_WALK_ROWS
        assert program.fallback.passes[1].kernel is walks.FRACTIONAL_WALK
    else:
        assert program.passes[1].kernel is walks.FRACTIONAL_WALK
    y_ref, i_ref = reference.fractional_max_pool(x, (3, 3), (6, 8), u)
    op, samples = pg.Op(device, desc, tuning), device.upload(u)
    for lead in (0, 1, 2, 4):
        xt = sentinel_input(device, x, lead_bytes=16 + 4 * lead)
        outs = (canary_tensor(device, desc.output, lead_bytes=32 + 4 * lead),
                canary_tensor(device, desc.output_indices, lead_bytes=48 + 4 * lead))
        op(xt, samples, out=outs)
        assert same_bits(outs[0].numpy(), y_ref) and np.array_equal(outs[1].numpy(), i_ref), lead
    dense = pg.FractionalMaxPoolingGradDesc(pg.TensorDesc("float32", (1, 2, 40, 40)), pg.TensorDesc("float32", (1, 2, 2)),
                                            pg.TensorDesc("float32", (1, 2, 25, 26)), window_size=(16, 15))
    small = dataclasses.replace(tuning, loop_budget=256)
    assert "fractional_max_pool_grad.wgsl" not in [p.kernel.file for p in pg.kernels.program_for(dense, small).passes]
