"""The pooling gradients (MAX_POOLING_GRAD, AVERAGE_POOLING_GRAD) on every adapter: against
the independent NumPy reference, finite differences of the forward operators, PyTorch's
backward passes, exact FLOAT16 rounding, determinism, layouts and untouched canaries."""

import functools
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import poolgpu as pg
import reference
from poolgpu import kernels
from helpers import (FLOAT_TYPES, assert_canaries_intact, canary_tensor, draw_row_geometry, layout_strides,
                     random_values, same_bits, sentinel_input, tuned_for, upload)

GPU_SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
GEOMETRY = ("window_size", "strides", "dilations", "start_padding", "end_padding")
F32, F16 = pg.DataType.FLOAT32, pg.DataType.FLOAT16


@st.composite
def gradient_cases(draw):
    dims = draw(st.integers(1, 3))
    return dict(
        sizes=(draw(st.integers(1, 3)), draw(st.integers(1, 3))) + tuple(draw(st.integers(1, 8)) for _ in range(dims)),
        window_size=tuple(draw(st.integers(1, 4)) for _ in range(dims)),
        strides=tuple(draw(st.integers(1, 3)) for _ in range(dims)),
        dilations=tuple(draw(st.sampled_from([1, 1, 2, 3])) for _ in range(dims)),
        start_padding=tuple(draw(st.integers(0, 2)) for _ in range(dims)),
        end_padding=tuple(draw(st.integers(0, 2)) for _ in range(dims)),
        data_type=draw(st.sampled_from(FLOAT_TYPES)),
        include_padding=draw(st.booleans()),
        # small integer dy: every f32 sum is exact, so max pooling's dx must equal the reference
        integer_dy=draw(st.booleans()),
        in_layout=draw(st.sampled_from(["packed", "channels_last", "reversed", "gaps", "broadcast"])),
        out_layout=draw(st.sampled_from(["packed", "channels_last", "gaps", "reversed"])),
        seed=draw(st.integers(0, 2**31)),
    )


def geometry_of(case):
    return {k: case[k] for k in GEOMETRY}


def describable(make) -> bool:
    """Whether the case's description is valid (e.g. no window wholly in padding); invalid
    geometries are the validation tests' business."""
    try:
        make()
        return True
    except pg.ValidationError:
        return False


def random_dy(case, sizes, rng):
    dtype = case["data_type"].numpy
    if case["integer_dy"]:
        dy = rng.integers(-8, 9, sizes).astype(dtype)
    else:
        dy = rng.standard_normal(sizes).astype(dtype)
    if case["in_layout"] == "broadcast":  # one plane repeated over N and C
        dy = np.broadcast_to(dy[:1, :1], dy.shape).copy()
    return dy


def assert_gradient_close(got, want, dy, exact=False):
    """``want`` is the float64 reference; dx sums at most a window's worth of f32 terms and
    is rounded once to its type.  ``exact``: every f32 sum is exact (small integers)."""
    dtype = got.dtype
    if exact:
        np.testing.assert_array_equal(got, want.astype(dtype))
        return
    scale = float(np.abs(dy.astype(np.float64)).max(initial=0))
    if dtype == np.float16:
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=2e-3, atol=1e-3 * scale)
    else:
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=1e-5, atol=1e-5 * scale)


def run_output(device, desc, inputs, out_layout_desc):
    """Run ``desc`` on uploaded ``inputs`` into a canary-guarded dx; return dx's values."""
    op = device.compile(desc)
    dx = canary_tensor(device, out_layout_desc)
    assert op(*inputs, out=dx) is dx
    assert_canaries_intact(dx)
    return dx.numpy()


@GPU_SETTINGS
@given(case=gradient_cases())
def test_max_pool_grad_matches_reference(device, case):
    geometry, dt = geometry_of(case), case["data_type"]
    x_desc = pg.TensorDesc(dt, case["sizes"], layout_strides(case["sizes"], case["in_layout"]))
    assume(describable(lambda: pg.MaxPooling2Desc(x_desc, **geometry)))
    out_sizes = pg.pooling_output_sizes(case["sizes"], **geometry)
    rng = np.random.default_rng(case["seed"])
    x = random_values(dt, case["sizes"], rng)  # NaN, infinities, signed zeros and ties included
    if case["in_layout"] == "broadcast":
        x = np.broadcast_to(x[:1, :1], x.shape).copy()
    dy = random_dy(case, out_sizes, rng)
    dy_desc = pg.TensorDesc(dt, out_sizes, layout_strides(out_sizes, case["in_layout"]))
    dx_desc = pg.TensorDesc(dt, case["sizes"], layout_strides(case["sizes"], case["out_layout"]))
    desc = pg.MaxPoolingGradDesc(x_desc, dy_desc, dx_desc, **geometry)
    got = run_output(device, desc, (upload(device, x, case["in_layout"]), upload(device, dy, case["in_layout"])), dx_desc)
    assert_gradient_close(got, reference.max_pool_grad(x, dy, **geometry), dy, exact=case["integer_dy"])


@GPU_SETTINGS
@given(case=gradient_cases())
def test_average_pool_grad_matches_reference(device, case):
    geometry, dt = geometry_of(case), case["data_type"]
    dx_desc = pg.TensorDesc(dt, case["sizes"], layout_strides(case["sizes"], case["out_layout"]))
    assume(describable(lambda: pg.MaxPooling2Desc(pg.TensorDesc(dt, case["sizes"]), **geometry)))
    out_sizes = pg.pooling_output_sizes(case["sizes"], **geometry)
    rng = np.random.default_rng(case["seed"])
    dy = random_dy(case, out_sizes, rng)
    dy_desc = pg.TensorDesc(dt, out_sizes, layout_strides(out_sizes, case["in_layout"]))
    desc = pg.AveragePoolingGradDesc(dy_desc, dx_desc, include_padding=case["include_padding"], **geometry)
    got = run_output(device, desc, (upload(device, dy, case["in_layout"]),), dx_desc)
    want = reference.average_pool_grad(dy, case["sizes"], include_padding=case["include_padding"], **geometry)
    assert_gradient_close(got, want, dy)


def test_average_pool_grad_directml_example(device):
    dy = np.array([[1, 2], [3, 4]], np.float32).reshape(1, 1, 2, 2)
    dx = pg.average_pool_grad(dy, (1, 1, 3, 3), (2, 2), strides=(1, 1), device=device)
    want = np.array([[0.25, 0.75, 0.5], [1, 2.5, 1.5], [0.75, 1.75, 1]], np.float32).reshape(1, 1, 3, 3)
    assert same_bits(dx, want)
    dx16 = pg.average_pool_grad(dy.astype(np.float16), (1, 1, 3, 3), (2, 2), device=device)
    assert same_bits(dx16, want.astype(np.float16))


def test_average_pool_grad_divisor_with_and_without_padding(device):
    # 1-D, 4 inputs, window 3, padding 1 each side: windows cover 2, 3, 3, 2 inputs.
    dy = np.array([6.0, 6.0, 6.0, 6.0], np.float32).reshape(1, 1, 4)
    counted = pg.average_pool_grad(dy, (1, 1, 4), (3,), start_padding=(1,), end_padding=(1,), include_padding=False,
                                   device=device)
    np.testing.assert_allclose(counted.ravel(), [3 + 2, 3 + 2 + 2, 2 + 2 + 3, 2 + 3], rtol=1e-6)
    padded = pg.average_pool_grad(dy, (1, 1, 4), (3,), start_padding=(1,), end_padding=(1,), include_padding=True,
                                  device=device)
    np.testing.assert_array_equal(padded.ravel(), [4, 6, 6, 4])


# -- finite differences --------------------------------------------------------------------


def perturbed_batch(x, h):
    """2M copies of x (one (n, c) item, M elements): copy 2i has element i raised by h, copy
    2i + 1 lowered by h.  Returns the batch and the actual float step of each element."""
    m = x.size
    batch = np.repeat(x.reshape(1, -1), 2 * m, axis=0)
    batch[2 * np.arange(m), np.arange(m)] += h
    batch[2 * np.arange(m) + 1, np.arange(m)] -= h
    step = batch[2 * np.arange(m), np.arange(m)].astype(np.float64) - batch[2 * np.arange(m) + 1, np.arange(m)]
    return batch.reshape((2 * m,) + x.shape[1:]), step


@pytest.mark.parametrize("shape, geometry", [
    ((1, 2, 9), dict(window_size=(3,), strides=(2,), start_padding=(1,), end_padding=(1,))),
    ((1, 2, 6, 7), dict(window_size=(3, 2), strides=(1, 2), dilations=(2, 1), start_padding=(1, 0))),
    ((1, 1, 4, 5, 4), dict(window_size=(2, 3, 2), strides=(1, 1, 2), end_padding=(1, 1, 0))),
])
def test_max_pool_grad_is_the_derivative_of_max_pool(device, shape, geometry):
    rng = np.random.default_rng(3)
    # distinct values 0.25 apart: no ties, and a step of 0.01 never changes which element wins
    x = (rng.permutation(int(np.prod(shape))).reshape(shape) * 0.25 - 3).astype(np.float32)
    y = pg.max_pool(x, device=device, **geometry)
    w = rng.standard_normal(y.shape).astype(np.float32)  # f(x) = sum(w * max_pool(x))
    batch, step = perturbed_batch(x, 0.01)
    f = (pg.max_pool(batch, device=device, **geometry).astype(np.float64) * w).reshape(batch.shape[0], -1).sum(1)
    numeric = ((f[0::2] - f[1::2]) / step).reshape(shape)
    dx = pg.max_pool_grad(x, w, device=device, **geometry)
    np.testing.assert_allclose(dx, numeric, rtol=1e-5, atol=1e-5)
    assert np.count_nonzero(dx) > 0


@pytest.mark.parametrize("include_padding", [False, True])
@pytest.mark.parametrize("shape, geometry", [
    ((1, 2, 9), dict(window_size=(3,), strides=(2,), start_padding=(1,), end_padding=(2,))),
    ((1, 2, 6, 7), dict(window_size=(3, 2), strides=(1, 2), dilations=(2, 1), start_padding=(1, 1))),
    ((1, 1, 4, 5, 4), dict(window_size=(2, 3, 2), strides=(1, 1, 2), end_padding=(1, 1, 0))),
])
def test_average_pool_grad_is_the_derivative_of_average_pool(device, shape, geometry, include_padding):
    rng = np.random.default_rng(4)
    x = rng.standard_normal(shape)
    w = rng.standard_normal(reference.output_sizes(shape, **geometry))
    batch, step = perturbed_batch(x, 1e-3)
    y = reference.average_pool(batch, include_padding=include_padding, **geometry)
    f = (y * w).reshape(batch.shape[0], -1).sum(1)
    numeric = ((f[0::2] - f[1::2]) / step).reshape(shape)
    dx = pg.average_pool_grad(w.astype(np.float32), shape, include_padding=include_padding, device=device, **geometry)
    np.testing.assert_allclose(dx, numeric, rtol=1e-5, atol=1e-5)


# -- PyTorch --------------------------------------------------------------------------------

def torch_pool(kind, dims):
    torch_ = pytest.importorskip("torch")
    return torch_, getattr(torch_.nn.functional, f"{kind}_pool{dims}d")


@pytest.mark.parametrize("dims, shape, kernel, stride, padding, dilation", [
    (1, (2, 3, 11), 3, 2, 1, 1),
    (2, (2, 3, 9, 8), 3, 1, 1, 2),     # heavy overlap and dilation
    (2, (1, 4, 10, 10), 2, 2, 0, 1),
    (3, (1, 2, 5, 6, 7), 3, 2, 1, 1),
])
def test_max_pool_grad_matches_pytorch(device, dims, shape, kernel, stride, padding, dilation):
    torch_, pool = torch_pool("max", dims)
    rng = np.random.default_rng(5)
    x = rng.standard_normal(shape).astype(np.float32)
    xt = torch_.tensor(x, requires_grad=True)
    y = pool(xt, kernel, stride, padding, dilation)
    dy = rng.standard_normal(tuple(y.shape)).astype(np.float32)
    y.backward(torch_.tensor(dy))
    geometry = dict(window_size=(kernel,) * dims, strides=(stride,) * dims, start_padding=(padding,) * dims,
                    end_padding=(padding,) * dims, dilations=(dilation,) * dims)
    dx = pg.max_pool_grad(x, dy, device=device, **geometry)
    np.testing.assert_allclose(dx, xt.grad.numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("count_include_pad", [False, True])
@pytest.mark.parametrize("dims, shape, kernel, stride, padding", [
    (1, (2, 3, 11), 3, 2, 1),
    (2, (2, 3, 9, 8), 3, 1, 1),
    (2, (1, 4, 10, 10), 4, 3, 2),
    (3, (1, 2, 5, 6, 7), 3, 2, 1),
])
def test_average_pool_grad_matches_pytorch(device, dims, shape, kernel, stride, padding, count_include_pad):
    torch_, pool = torch_pool("avg", dims)
    rng = np.random.default_rng(6)
    xt = torch_.tensor(rng.standard_normal(shape).astype(np.float32), requires_grad=True)
    y = pool(xt, kernel, stride, padding, count_include_pad=count_include_pad)
    dy = rng.standard_normal(tuple(y.shape)).astype(np.float32)
    y.backward(torch_.tensor(dy))
    dx = pg.average_pool_grad(dy, shape, (kernel,) * dims, strides=(stride,) * dims, start_padding=(padding,) * dims,
                              end_padding=(padding,) * dims, include_padding=count_include_pad, device=device)
    np.testing.assert_allclose(dx, xt.grad.numpy(), rtol=1e-5, atol=1e-6)


# -- FLOAT16: f32 sums, each rounded once to nearest even ----------------------------------


def all_finite_float16():
    values = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    return values[np.isfinite(values)]


@pytest.mark.parametrize("divisor", [1, 2, 4])
def test_average_pool_grad_float16_rounds_every_value_to_nearest_even(device, divisor):
    # One window per dx element with a power-of-two divisor: dx = dy / divisor exactly in
    # f32, so dx must be NumPy's correctly rounded f16 of it, for every finite f16 (the
    # halved subnormals exercise ties).  The sign of a zero result is the compiler's: it may
    # fold the sum's 0 + dy into dy.
    dy = all_finite_float16()
    dx = pg.average_pool_grad(dy.reshape(1, 1, -1), (1, 1, dy.size * divisor), (divisor,), strides=(divisor,),
                              device=device)
    want = np.repeat((dy.astype(np.float32) / np.float32(divisor)).astype(np.float16), divisor)
    dx, zero = dx.ravel(), want == 0
    np.testing.assert_array_equal(dx[~zero].view(np.uint16), want[~zero].view(np.uint16))
    assert (dx[zero] == 0).all()


def test_max_pool_grad_float16_sums_overflow_and_round_to_even(device):
    # Windows of 2 with stride 1 over [0, 10, 0]: both take element 1, so dx[1] = dy0 + dy1.
    pairs = np.array([
        (65504, 65504), (65504, 16), (65504, 8), (-65504, -65504), (-65504, -16),
        (1, 2.0**-11), (1 + 2.0**-10, 2.0**-11), (2.0**-24, 2.0**-24), (-(2.0**-14), 2.0**-24), (3, -3),
    ])
    x = np.tile(np.array([0, 10, 0], np.float16), (len(pairs), 1)).reshape(len(pairs), 1, 3)
    dy = pairs.astype(np.float16).reshape(len(pairs), 1, 2)
    dx = pg.max_pool_grad(x, dy, (2,), device=device)
    f32_sum = dy[:, 0, 0].astype(np.float32) + dy[:, 0, 1].astype(np.float32)  # exact for these pairs
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(dx[:, 0, 1].view(np.uint16), f32_sum.astype(np.float16).view(np.uint16))
    assert (dx[:, 0, [0, 2]] == 0).all()


# -- determinism, layouts, large grids ----------------------------------------------------


@pytest.mark.parametrize("data_type", FLOAT_TYPES, ids=lambda t: t.name)
def test_gradients_are_bit_identical_run_after_run(device, data_type):
    rng = np.random.default_rng(7)
    shape = (2, 3, 17, 19)
    x = rng.standard_normal(shape).astype(data_type.numpy)
    x[:, :, ::3, ::2] = 1.5  # many ties
    geometry = dict(window_size=(3, 3), strides=(1, 1), start_padding=(1, 1), end_padding=(1, 1))
    dy = rng.standard_normal(shape).astype(data_type.numpy)
    runs = [pg.max_pool_grad(x, dy, device=device, **geometry) for _ in range(3)]
    runs += [pg.average_pool_grad(dy, shape, device=device, **geometry) for _ in range(3)]
    assert all(same_bits(r, runs[0]) for r in runs[1:3])
    assert all(same_bits(r, runs[3]) for r in runs[4:])
    assert_gradient_close(runs[0], reference.max_pool_grad(x, dy, **geometry), dy)
    assert_gradient_close(runs[3], reference.average_pool_grad(dy, shape, **geometry), dy)


def test_gradients_fold_many_rows_over_the_grid(device):
    # N * C * D * H above 65535 rows: rows fold over workgroups y and z
    rng = np.random.default_rng(8)
    shape = (2, 40000, 3)
    x = rng.standard_normal(shape).astype(np.float32)
    dy = rng.standard_normal((2, 40000, 2)).astype(np.float32)
    np.testing.assert_allclose(pg.max_pool_grad(x, dy, (2,), device=device), reference.max_pool_grad(x, dy, (2,)),
                               rtol=1e-6)
    np.testing.assert_allclose(pg.average_pool_grad(dy, shape, (2,), device=device),
                               reference.average_pool_grad(dy, shape, (2,)), rtol=1e-6)


def test_gradients_tensor_in_tensor_out(device):
    x = device.upload(np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4))
    dy = device.upload(np.ones((1, 1, 2, 2), np.float32))
    dx = pg.max_pool_grad(x, dy, (2, 2), strides=(2, 2))
    assert isinstance(dx, pg.Tensor) and dx.device is device
    np.testing.assert_array_equal(dx.numpy()[0, 0], [[0, 0, 0, 0], [0, 1, 0, 1], [0, 0, 0, 0], [0, 1, 0, 1]])
    dx = pg.average_pool_grad(dy, (1, 1, 4, 4), (2, 2), strides=(2, 2))
    assert isinstance(dx, pg.Tensor)
    np.testing.assert_array_equal(dx.numpy(), np.full((1, 1, 4, 4), 0.25, np.float32))


# -- validation (no GPU) ---------------------------------------------------------------------

X = pg.TensorDesc(F32, (2, 3, 8, 8))
DY = pg.TensorDesc(F32, (2, 3, 7, 7))  # window 2, stride 1


def max_grad(**kwargs):
    kwargs.setdefault("window_size", (2, 2))
    return pg.MaxPoolingGradDesc(kwargs.pop("input", X), kwargs.pop("input_gradient", DY), **kwargs)


def avg_grad(**kwargs):
    kwargs.setdefault("window_size", (2, 2))
    return pg.AveragePoolingGradDesc(kwargs.pop("input_gradient", DY), kwargs.pop("output_gradient", X), **kwargs)


def test_gradient_descriptions_fill_in_defaults_and_outputs():
    d = max_grad(strides=[1, 1])
    assert d.output_gradient == X and d.dilations == (1, 1) and d.start_padding == (0, 0) and d.dimension_count == 2
    assert d.input_tensors() == (("input", X), ("input_gradient", DY))
    assert d.output_tensors() == (("output_gradient", X),)
    assert d == max_grad() and hash(d) == hash(max_grad())
    a = avg_grad()
    assert a.include_padding is False and a.dilations == (1, 1) and a.input_tensors() == (("input_gradient", DY),)
    assert a.output_tensors() == (("output_gradient", X),)
    dilated = pg.MaxPoolingGradDesc(X, pg.TensorDesc(F32, (2, 3, 6, 6)), window_size=(2, 2), dilations=(2, 2))
    assert dilated.output_gradient == X


@pytest.mark.parametrize("make, field", [
    (lambda: max_grad(input=pg.TensorDesc("int32", (2, 3, 8, 8))), "input.data_type"),
    (lambda: max_grad(input="x"), "input"),
    (lambda: max_grad(input_gradient=None), "input_gradient"),
    (lambda: max_grad(input_gradient=pg.TensorDesc(F32, (2, 3, 8, 8))), "input_gradient.sizes"),
    (lambda: max_grad(input_gradient=pg.TensorDesc(F16, (2, 3, 7, 7))), "input_gradient.data_type"),
    (lambda: max_grad(output_gradient=pg.TensorDesc(F32, (2, 3, 7, 7))), "output_gradient.sizes"),
    (lambda: max_grad(output_gradient=pg.TensorDesc(F16, (2, 3, 8, 8))), "output_gradient.data_type"),
    (lambda: max_grad(output_gradient=pg.TensorDesc(F32, (2, 3, 8, 8), strides=(64, 0, 8, 1))), "output_gradient.strides"),
    (lambda: max_grad(window_size=(2,)), "window_size"),
    (lambda: max_grad(strides=(0, 1)), "strides"),
    (lambda: max_grad(dilations=(1, 0)), "dilations"),
    (lambda: max_grad(start_padding=(-1, 0)), "start_padding"),
    (lambda: max_grad(window_size=(2, 2), strides=(3, 3), end_padding=(3, 3)), "window_size"),
    (lambda: avg_grad(output_gradient=None), "output_gradient"),
    (lambda: avg_grad(output_gradient=pg.TensorDesc("uint8", (2, 3, 8, 8))), "output_gradient.data_type"),
    (lambda: avg_grad(output_gradient=pg.TensorDesc(F32, (2, 3, 8, 8), strides=(0, 64, 8, 1))), "output_gradient.strides"),
    (lambda: avg_grad(input_gradient=pg.TensorDesc(F32, (2, 3, 6, 7))), "input_gradient.sizes"),
    (lambda: avg_grad(input_gradient=pg.TensorDesc(F32, (2, 2, 7, 7))), "input_gradient.sizes"),
    (lambda: avg_grad(input_gradient=pg.TensorDesc(F16, (2, 3, 7, 7))), "input_gradient.data_type"),
    (lambda: avg_grad(include_padding="yes"), "include_padding"),
    (lambda: avg_grad(window_size=(2, 2, 2)), "window_size"),
    (lambda: avg_grad(end_padding=(1,)), "end_padding"),
    (lambda: avg_grad(dilations=(9, 1)), "window_size"),
])
def test_gradient_validation_names_the_field(make, field):
    with pytest.raises(pg.ValidationError) as e:
        make()
    assert e.value.field == field
    assert str(e.value).startswith(field)


def test_functional_gradients_validate_before_running(device):
    with pytest.raises(pg.ValidationError) as e:
        pg.max_pool_grad(np.zeros((1, 1, 4), np.float32), np.zeros((1, 1, 2), np.float32), (2,), device=device)
    assert e.value.field == "input_gradient.sizes"
    with pytest.raises(pg.ValidationError) as e:
        pg.average_pool_grad(np.zeros((1, 1, 2), np.float32), (1, 1, 4), (2,), device=device)
    assert e.value.field == "input_gradient.sizes"
    with pytest.raises(pg.ValidationError) as e:
        pg.max_pool_grad(np.zeros((1, 1, 4), np.int32), np.zeros((1, 1, 3), np.int32), (2,), device=device)
    assert e.value.field == "input.data_type"


# -- the one-pass variant for windows that do not overlap -------------------------------------


@pytest.mark.parametrize("geometry", [
    dict(window_size=(2, 2), strides=(2, 2)),
    dict(window_size=(2, 3), strides=(3, 4), start_padding=(1, 1), end_padding=(1, 2)),  # gaps between windows
    dict(window_size=(2, 2), strides=(4, 5), dilations=(2, 3), start_padding=(0, 1)),
])
def test_max_pool_grad_of_disjoint_windows_runs_in_one_pass_and_copies_dy_exactly(device, geometry):
    rng = np.random.default_rng(13)
    x = random_values(F32, (2, 3, 11, 13), rng)  # NaN, infinities, signed zeros, ties
    desc = pg.MaxPoolingGradDesc(pg.TensorDesc(F32, x.shape), pg.TensorDesc(F32, pg.pooling_output_sizes(x.shape, **geometry)),
                                 **geometry)
    assert len(kernels.program_for(desc).passes) == 1
    dy = random_values(F32, desc.input_gradient.sizes, rng)  # each lands alone: bits kept, NaN payloads included
    dx = pg.max_pool_grad(x, dy, device=device, **geometry)
    _, idx = reference.max_pool(x, **geometry)
    want = np.zeros(x.size, np.float32)
    want[idx.ravel()] = dy.ravel()
    assert same_bits(dx, want.reshape(x.shape))


@pytest.mark.parametrize("data_type", FLOAT_TYPES)
@pytest.mark.parametrize("geometry", [
    dict(window_size=(2, 2), strides=(2, 2)),
    dict(window_size=(2, 3), strides=(3, 3), start_padding=(1, 0), end_padding=(1, 2)),  # a window in end padding
    dict(window_size=(2, 2), strides=(4, 5), dilations=(2, 2)),  # gaps, a column past the last window
    dict(window_size=(1, 4), strides=(2, 8), end_padding=(0, 3)),
    dict(window_size=(2, 5), strides=(2, 5), in_w=44),  # a row's last block holds no window
    dict(window_size=(2, 2), strides=(2, 2), in_w=32),  # float16: pairs; dy in chunks
    dict(window_size=(2, 4), strides=(2, 4), in_w=40),  # float16: pairs, the last block half past out_w
    dict(window_size=(1, 6), strides=(2, 8), in_w=36),  # dy in chunks, a block wholly past out_w
    dict(window_size=(2, 3), strides=(2, 8), dilations=(1, 2), in_w=48),  # float16: pairs, gaps
])
def test_disjoint_windows_over_rows_read_and_write_in_chunks(device, data_type, geometry):
    """x and dx contiguous along W: four windows per invocation, chunked (the last block of
    a row reaches past in_w, the last windows past out_w); every element of dx written.
    16-bit x and dx in pairs of chunks and dy in one chunk per block where their layouts
    allow (see the test below)."""
    geometry = dict(geometry)
    in_w = geometry.pop("in_w", 28)
    rng = np.random.default_rng(17)
    x = random_values(data_type, (2, 3, 9, in_w), rng)
    out_sizes = pg.pooling_output_sizes(x.shape, **geometry)
    desc = pg.MaxPoolingGradDesc(pg.TensorDesc(data_type, x.shape), pg.TensorDesc(data_type, out_sizes), **geometry)
    program = kernels.program_for(desc)
    assert [p.kernel.file for p in program.passes] == ["max_pool_grad_disjoint_rows.wgsl"]
    dy = random_values(data_type, out_sizes, rng)
    dx = canary_tensor(device, pg.TensorDesc(data_type, x.shape))
    device.compile(desc)(device.upload(x), device.upload(dy), out=dx)
    _, idx = reference.max_pool(x, **geometry)
    want = np.zeros(x.size, x.dtype)
    want[idx.ravel()] = dy.ravel()
    assert same_bits(dx.numpy(), want.reshape(x.shape))
    assert_canaries_intact(dx)


@pytest.mark.parametrize("data_type, in_w, strides, libraries", [
    (F16, 32, (2, 2), ("disjoint_rows_pairs.wgsl", "disjoint_rows_dy4.wgsl")),
    (F32, 32, (2, 2), ("disjoint_rows_chunks.wgsl", "disjoint_rows_dy4.wgsl")),
    (F16, 28, (2, 2), ("disjoint_rows_chunks.wgsl", "disjoint_rows_dy1.wgsl")),  # rows of 28: not whole pairs
    (F16, 32, (3, 3), ("disjoint_rows_chunks.wgsl", "disjoint_rows_dy1.wgsl")),  # odd stride: blocks of 12
    (F16, 40, (2, 4), ("disjoint_rows_pairs.wgsl", "disjoint_rows_dy1.wgsl")),   # 10 windows a row
])
def test_disjoint_windows_over_rows_take_pairs_and_dy_chunks_where_layouts_allow(data_type, in_w, strides, libraries):
    desc = pg.MaxPoolingGradDesc(pg.TensorDesc(data_type, (2, 3, 8, in_w)),
                                 pg.TensorDesc(data_type, pg.pooling_output_sizes((2, 3, 8, in_w), strides, strides)),
                                 window_size=strides, strides=strides)
    (pass_,) = kernels.program_for(desc).passes
    assert pass_.kernel.library[-2:] == libraries


@pytest.mark.parametrize("operator", ["max", "average"])
def test_global_window_gradients_take_one_tap_per_element(device, operator):
    """A dimension with a single window (global pooling) is gathered as if its windows could
    not overlap, whatever its stride: the max gradient runs the one-pass kernel, and both
    match the reference."""
    rng = np.random.default_rng(23)
    x = random_values(F32, (2, 5, 7, 6), rng, specials=False)
    geometry = dict(window_size=(7, 3), strides=(1, 3), start_padding=(0, 1), end_padding=(0, 2))
    dy = random_values(F32, pg.pooling_output_sizes(x.shape, **geometry), rng, specials=False)
    assert dy.shape[2] == 1
    if operator == "max":
        desc = pg.MaxPoolingGradDesc(pg.TensorDesc(F32, x.shape), pg.TensorDesc(F32, dy.shape), **geometry)
        assert [p.kernel.file for p in kernels.program_for(desc).passes] == ["max_pool_grad_disjoint.wgsl"]
        got, want = pg.max_pool_grad(x, dy, device=device, **geometry), reference.max_pool_grad(x, dy, **geometry)
    else:
        got = pg.average_pool_grad(dy, x.shape, device=device, **geometry)
        want = reference.average_pool_grad(dy, x.shape, **geometry)
    assert_gradient_close(got, want, dy)


@pytest.mark.parametrize("operator", ["max", "average"])
@pytest.mark.parametrize("data_type", FLOAT_TYPES)
@pytest.mark.parametrize("geometry", [
    dict(window_size=(3, 3), strides=(2, 2), start_padding=(1, 1), end_padding=(1, 1)),
    dict(window_size=(2, 3), strides=(1, 2), dilations=(2, 1), end_padding=(1, 0)),
])
def test_channels_last_gradients_four_channels_at_a_time(device, operator, data_type, geometry):
    """dy and dx (and for max, x) channels-last with C a multiple of 4: the block gather
    takes four channels per invocation in 4-element chunks (for max, from a channels-last
    argmax written by the channels walk)."""
    rng = np.random.default_rng(29)
    x = random_values(data_type, (2, 8, 7, 9), rng)  # NaN, infinities, ties
    out_sizes = pg.pooling_output_sizes(x.shape, **geometry)
    dy = random_values(data_type, out_sizes, rng, specials=False)
    nhwc = lambda sizes: pg.TensorDesc(data_type, sizes, layout_strides(sizes, "channels_last"))  # noqa: E731
    if operator == "max":
        desc = pg.MaxPoolingGradDesc(nhwc(x.shape), nhwc(out_sizes), nhwc(x.shape), **geometry)
        inputs = (upload(device, x, "channels_last"), upload(device, dy, "channels_last"))
        want = reference.max_pool_grad(x, dy, **geometry)
        assert kernels.program_for(desc).passes[0].kernel.library[-1] == "window_walk_channels.wgsl"
    else:
        desc = pg.AveragePoolingGradDesc(nhwc(out_sizes), nhwc(x.shape), include_padding=True, **geometry)
        inputs = (upload(device, dy, "channels_last"),)
        want = reference.average_pool_grad(dy, x.shape, include_padding=True, **geometry)
    gather = kernels.program_for(desc).passes[-1]
    assert gather.kernel.library[-1] in ("gather_lanes4.wgsl", "argmax_lanes4.wgsl")
    dx = canary_tensor(device, desc.output_gradient)
    device.compile(desc)(*inputs, out=dx)
    assert_canaries_intact(dx)
    assert_gradient_close(dx.numpy(), want, dy)


@pytest.mark.parametrize("data_type", FLOAT_TYPES)
@pytest.mark.parametrize("geometry", [
    dict(window_size=(2, 2), strides=(2, 2)),
    dict(window_size=(2, 3), strides=(3, 3), start_padding=(1, 0), end_padding=(1, 2)),  # gaps, end padding
])
def test_channels_last_disjoint_max_pool_grad_four_channels_at_a_time(device, data_type, geometry):
    """Disjoint windows over channels-last x, dy and dx with C a multiple of 4: one pass of
    four channels per invocation, x, dy and dx in 4-element chunks; dy's bits copied."""
    rng = np.random.default_rng(37)
    x = random_values(data_type, (2, 8, 7, 9), rng)  # NaN, infinities, ties
    out_sizes = pg.pooling_output_sizes(x.shape, **geometry)
    dy = random_values(data_type, out_sizes, rng)
    nhwc = lambda sizes: pg.TensorDesc(data_type, sizes, layout_strides(sizes, "channels_last"))  # noqa: E731
    desc = pg.MaxPoolingGradDesc(nhwc(x.shape), nhwc(out_sizes), nhwc(x.shape), **geometry)
    (gather,) = kernels.program_for(desc).passes
    assert gather.kernel.library[-1] == "disjoint_lanes4.wgsl"
    dx = canary_tensor(device, desc.output_gradient)
    device.compile(desc)(upload(device, x, "channels_last"), upload(device, dy, "channels_last"), out=dx)
    assert_canaries_intact(dx)
    _, idx = reference.max_pool(x, **geometry)
    want = np.zeros(x.size, x.dtype)
    want[idx.ravel()] = dy.ravel()
    assert same_bits(dx.numpy(), want.reshape(x.shape))


@pytest.mark.parametrize("operator", ["max", "average"])
@pytest.mark.parametrize("data_type", FLOAT_TYPES)
@pytest.mark.parametrize("in_w, geometry", [
    (24, dict(window_size=(3, 3), strides=(2, 2), start_padding=(1, 1), end_padding=(1, 1))),
    (20, dict(window_size=(2, 3), strides=(1, 1), dilations=(1, 2), end_padding=(1, 0))),  # in_w = 8k + 4
    (36, dict(window_size=(3, 4), strides=(2, 3), start_padding=(0, 1), end_padding=(1, 1))),
    (12, dict(window_size=(1, 5), strides=(1, 1), start_padding=(0, 2), end_padding=(0, 2))),
    # a window 51 wide: blocks far from the row's start reach 16 chunks of dy
    (128, dict(window_size=(1, 11), strides=(1, 1), dilations=(1, 5), start_padding=(0, 1), end_padding=(0, 1))),
])
def test_row_gathers_take_eight_dx_elements_from_chunks_of_dy(device, operator, data_type, in_w, geometry):
    """dx and dy contiguous along W (in_w and out_w multiples of 4): the gather computes
    2 x 8 dx elements per invocation from 4-element chunks of dy (and the argmax); the
    last eight of a row may be four, the last two rows one (in_h = 7), and the chunks
    reach past the windows."""
    rng = np.random.default_rng(in_w)
    x = random_values(data_type, (2, 3, 7, in_w), rng)  # NaN, infinities, ties
    out_sizes = pg.pooling_output_sizes(x.shape, **geometry)
    assert out_sizes[-1] % 4 == 0
    dy = random_values(data_type, out_sizes, rng, specials=False)
    if operator == "max":
        desc = pg.MaxPoolingGradDesc(pg.TensorDesc(data_type, x.shape), pg.TensorDesc(data_type, out_sizes), **geometry)
        inputs, want = (device.upload(x), device.upload(dy)), reference.max_pool_grad(x, dy, **geometry)
    else:
        desc = pg.AveragePoolingGradDesc(pg.TensorDesc(data_type, out_sizes), pg.TensorDesc(data_type, x.shape),
                                         **geometry)
        inputs, want = (device.upload(dy),), reference.average_pool_grad(dy, x.shape, **geometry)
    assert kernels.program_for(desc).passes[-1].kernel.file == f"{operator}_pool_grad_rows.wgsl"
    dx = canary_tensor(device, desc.output_gradient)
    device.compile(desc)(*inputs, out=dx)
    assert_canaries_intact(dx)
    assert_gradient_close(dx.numpy(), want, dy)


@pytest.mark.parametrize("data_type", FLOAT_TYPES)
def test_max_gradient_finds_argmaxes_of_rows_that_start_anywhere_on_the_rows_walk(device, data_type):
    """Rows 14 wide (Inception's 3x3 stride 1 pooling): pass 1 finds the argmaxes on the
    rows walk from single loads, pass 2 gathers them; the input also placed 4 bytes into
    its buffer (NaN around it)."""
    rng = np.random.default_rng(14)
    geometry = dict(window_size=(3, 3), strides=(1, 1), start_padding=(1, 1), end_padding=(1, 1))
    x = random_values(data_type, (2, 3, 9, 14), rng)
    dy = random_values(data_type, x.shape, rng, specials=False)
    desc = pg.MaxPoolingGradDesc(pg.TensorDesc(data_type, x.shape), pg.TensorDesc(data_type, x.shape), **geometry)
    assert kernels.program_for(desc).passes[0].kernel == kernels.window.MAX_POOL["rows_any"]
    dx = canary_tensor(device, desc.output_gradient)
    device.compile(desc)(sentinel_input(device, x, lead_bytes=4, tail_bytes=0), device.upload(dy), out=dx)
    assert_canaries_intact(dx)
    assert_gradient_close(dx.numpy(), reference.max_pool_grad(x, dy, **geometry), dy)


@pytest.mark.parametrize("operator", ["max", "average"])
@pytest.mark.parametrize("data_type", FLOAT_TYPES)
@pytest.mark.parametrize("in_w, geometry", [
    (14, dict(window_size=(3, 3), strides=(1, 1), start_padding=(1, 1), end_padding=(1, 1))),  # Inception's
    (7, dict(window_size=(3, 3), strides=(1, 1), start_padding=(1, 1), end_padding=(1, 1))),
    (13, dict(window_size=(5, 5), strides=(1, 1), start_padding=(2, 2), end_padding=(2, 2))),
    (15, dict(window_size=(3, 3), strides=(2, 2), end_padding=(1, 1))),  # ceil_mode
    (21, dict(window_size=(2, 3), strides=(1, 2), dilations=(2, 1), start_padding=(0, 1))),
    (16, dict(window_size=(3, 3), strides=(1, 1), start_padding=(1, 1), end_padding=(1, 1))),  # whole chunks
])
def test_row_gathers_from_rows_that_start_anywhere(device, operator, data_type, in_w, geometry):
    """dx and dy rows of widths that are no multiple of 4, dy (and x) placed 4 bytes into
    their buffers (NaN around them): the row gathers assemble chunks from single loads, the
    columns of a row's last chunk past its end are no windows, and dx is stored element by
    element within its rows.  Rows of whole chunks at such offsets take them too."""
    rng = np.random.default_rng(in_w + FLOAT_TYPES.index(data_type))
    x = random_values(data_type, (2, 3, 7, in_w), rng)
    out_sizes = pg.pooling_output_sizes(x.shape, **geometry)
    dy = random_values(data_type, out_sizes, rng, specials=False)
    dy_t = sentinel_input(device, dy, lead_bytes=4, tail_bytes=0)
    if operator == "max":
        desc = pg.MaxPoolingGradDesc(pg.TensorDesc(data_type, x.shape), pg.TensorDesc(data_type, out_sizes), **geometry)
        inputs = (sentinel_input(device, x, lead_bytes=4, tail_bytes=0), dy_t)
        want = reference.max_pool_grad(x, dy, **geometry)
    else:
        desc = pg.AveragePoolingGradDesc(pg.TensorDesc(data_type, out_sizes), pg.TensorDesc(data_type, x.shape),
                                         **geometry)
        inputs, want = (dy_t,), reference.average_pool_grad(dy, x.shape, **geometry)
    program = kernels.program_for(desc)
    gather = (program.fallback if program.aligned else program).passes[-1].kernel
    assert gather == getattr(kernels.gradients, f"{operator.upper()}_POOL_GRAD_ROWS")["rows_any"]
    dx = canary_tensor(device, desc.output_gradient)
    device.compile(desc)(*inputs, out=dx)
    assert_canaries_intact(dx)
    assert_gradient_close(dx.numpy(), want, dy)


@settings(GPU_SETTINGS, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.filter_too_much])
@given(data=st.data())
def test_row_gathers_on_random_row_geometries(device, data):
    """dx and dy contiguous along W, with whole chunks or rows that start anywhere: the row
    gathers over random windows,
    strides, dilations and paddings (2 x 8 dx elements per invocation), against the
    reference; nothing written outside dx."""
    data_type = data.draw(st.sampled_from(FLOAT_TYPES))
    operator = data.draw(st.sampled_from(["max", "average"]))
    in_h, in_w = data.draw(st.integers(1, 11)), data.draw(st.sampled_from([4, 8, 12, 20, 32, 7, 13, 14]))
    geometry = draw_row_geometry(data)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    x = random_values(data_type, (2, 3, in_h, in_w), rng)
    try:
        out_sizes = pg.pooling_output_sizes(x.shape, **geometry)
        if operator == "max":
            desc = pg.MaxPoolingGradDesc(pg.TensorDesc(data_type, x.shape), pg.TensorDesc(data_type, out_sizes),
                                         **geometry)
        else:
            desc = pg.AveragePoolingGradDesc(pg.TensorDesc(data_type, out_sizes), pg.TensorDesc(data_type, x.shape),
                                             **geometry)
    except (pg.ValidationError, ValueError):
        assume(False)
    assume(kernels.program_for(desc).passes[-1].kernel.file == f"{operator}_pool_grad_rows.wgsl")
    dy = rng.integers(-8, 9, out_sizes).astype(x.dtype)  # small integers: every f32 sum exact
    if operator == "max":
        inputs, want = (device.upload(x), device.upload(dy)), reference.max_pool_grad(x, dy, **geometry)
    else:
        inputs, want = (device.upload(dy),), reference.average_pool_grad(dy, x.shape, **geometry)
    dx = canary_tensor(device, desc.output_gradient)
    device.compile(desc)(*inputs, out=dx)
    assert_canaries_intact(dx)
    assert_gradient_close(dx.numpy(), want, dy, exact=operator == "max" and data_type == F32)


def _gradient_call(device, operator: str, layout: str, data_type, x, dy, geometry: dict) -> tuple:
    """(the description, its uploaded inputs) of max (from ``x``) or average pooling's
    gradient of ``dy``, every tensor laid out by ``layout``."""
    described = lambda sizes: pg.TensorDesc(data_type, sizes, layout_strides(sizes, layout))  # noqa: E731
    if operator == "max":
        desc = pg.MaxPoolingGradDesc(described(x.shape), described(dy.shape), described(x.shape), **geometry)
        return desc, (upload(device, x, layout), upload(device, dy, layout))
    desc = pg.AveragePoolingGradDesc(described(dy.shape), described(x.shape), **geometry)
    return desc, (upload(device, dy, layout),)


@pytest.mark.parametrize("operator", ["max", "average"])
@pytest.mark.parametrize("layout", ["packed", "channels_last"])
@pytest.mark.parametrize("shape, geometry", [
    ((2, 8, 9, 11), dict(window_size=(3, 3), strides=(2, 2), start_padding=(1, 1), end_padding=(1, 1))),  # case A's
    ((2, 8, 7, 10), dict(window_size=(2, 2), strides=(2, 2), dilations=(2, 1), end_padding=(1, 0))),  # dilated
    ((2, 8, 6, 9), dict(window_size=(2, 3), strides=(1, 2), start_padding=(0, 1))),  # stride 1: one element, two windows
    ((1, 4, 5, 6, 7), dict(window_size=(3, 2, 3), strides=(2, 1, 2), start_padding=(1, 0, 0), end_padding=(0, 1, 1))),
    ((2, 8, 13), dict(window_size=(3,), strides=(2,), start_padding=(1,))),
])
def test_block_gathers_visit_each_window_once_with_the_bits_of_the_loops(device, operator, layout,
                                                                          shape, geometry):
    """Strides and windows reaching a block of at most 2 per dimension: the block gathers
    read each window once for every element it reaches (common/windows_first.wgsl), adding
    them in the loops' order: the reference's values, the loops' bits."""
    rng = np.random.default_rng(len(shape) * 100 + shape[-1])
    data_type = pg.DataType.FLOAT32
    x = random_values(data_type, shape, rng)  # NaN, infinities, ties
    out_sizes = pg.pooling_output_sizes(shape, **geometry)
    dy = random_values(data_type, out_sizes, rng, specials=False)
    desc, inputs = _gradient_call(device, operator, layout, data_type, x, dy, geometry)
    want = (reference.max_pool_grad(x, dy, **geometry) if operator == "max"
            else reference.average_pool_grad(dy, shape, **geometry))
    blocks = replace(device.tuning, row_gathers=False)  # (rows contiguous along W: else the row gathers)
    assert ("WINDOWS_FIRST", True) in kernels.program_for(desc, blocks).passes[-1].constants
    with tuned_for(device, blocks):
        got = run_output(device, desc, inputs, desc.output_gradient)
    assert_gradient_close(got, want, dy)
    taps_first = replace(blocks, windows_first=False)  # the loops
    assert ("WINDOWS_FIRST", True) not in kernels.program_for(desc, taps_first).passes[-1].constants
    loops = canary_tensor(device, desc.output_gradient)
    with tuned_for(device, taps_first):
        device.compile(desc)(*inputs, out=loops)
    assert same_bits(got, loops.numpy())


# Strides far beyond the input (up to DirectML's u32 limit), along one or several dimensions,
# with padding, dilations, windows in padding; and global windows over large planes (whose
# strides become the windows' extents): the block gathers take element blocks there.
FAR_STRIDES = [
    ((1, 2, 3, 2), dict(window_size=(3, 2), strides=(32768, 32768), start_padding=(1, 0))),
    ((2, 4, 5), dict(window_size=(2,), strides=(40000,))),
    ((1, 4, 5, 4), dict(window_size=(2, 2), strides=(40000, 1), start_padding=(1, 0))),
    ((1, 4, 4, 5), dict(window_size=(2, 3), strides=(2, 2**32 - 1), dilations=(1, 2), end_padding=(0, 2))),
    ((1, 4, 3, 4, 5), dict(window_size=(2, 2, 2), strides=(40000, 3, 40000), start_padding=(1, 1, 0))),
    ((2, 4, 5, 3, 4), dict(window_size=(2, 3, 2), strides=(1, 2**31 + 5, 70001), dilations=(2, 1, 3),
                           start_padding=(0, 2, 1), end_padding=(1, 0, 3))),
    ((1, 4, 4, 6, 5), dict(window_size=(3, 2, 2), strides=(2**32 - 1, 2**32 - 1, 2**32 - 1), start_padding=(2, 0, 1))),
    ((1, 2, 190, 190), dict(window_size=(190, 190))),
    ((1, 4, 40, 40, 40), dict(window_size=(40, 40, 40))),
]


@functools.lru_cache(maxsize=None)
def _far_strides_case(case: int, operator: str) -> tuple:
    """(x, dy, the reference dx) of FAR_STRIDES[case]: the same for every layout, tuning and
    adapter, and its reference takes seconds on the global windows."""
    shape, geometry = FAR_STRIDES[case]
    rng = np.random.default_rng(41)
    x = random_values(F32, shape, rng)
    dy = random_values(F32, pg.pooling_output_sizes(shape, **geometry), rng, specials=False)
    want = (reference.max_pool_grad(x, dy, **geometry) if operator == "max" else
            reference.average_pool_grad(dy, shape, **geometry))
    return x, dy, want


@pytest.mark.parametrize("operator", ["max", "average"])
@pytest.mark.parametrize("layout", ["packed", "channels_last"])
@pytest.mark.parametrize("tuning", ["cpu", "gpu"])
@pytest.mark.parametrize("case", range(len(FAR_STRIDES)))
def test_gradients_with_strides_far_beyond_the_input(device, operator, layout, tuning, case):
    """An invocation of the block gathers visits at most BLOCK_ELEMENTS_MAX dx elements,
    whatever the strides: no element left unwritten (llvmpipe cuts loops past 65535
    iterations; stride-long blocks were mostly outside dx), no u32 product overflowing."""
    geometry = FAR_STRIDES[case][1]
    x, dy, want = _far_strides_case(case, operator)
    desc, inputs = _gradient_call(device, operator, layout, F32, x, dy, geometry)
    with tuned_for(device, tuning):
        got = run_output(device, desc, inputs, desc.output_gradient)
    assert_gradient_close(got, want, dy)


@pytest.mark.parametrize("operator", ["max", "average"])
def test_gradient_first_taps_of_strides_above_65536(device, operator):
    """Stride 200000, dilation 3 (prime to it): the first tap landing on element q is
    q * (3^-1 mod 200000) mod 200000, a product past 2^32 from q = 64425 on (windows_covering.wgsl's
    first_tap then multiplies modulo the step by doubling)."""
    shape = (1, 1, 70000)
    geometry = dict(window_size=(22000,), strides=(200000,), dilations=(3,))
    dy = np.array([[[2.0]]], np.float32)
    if operator == "max":
        x = np.arange(70000, dtype=np.float32).reshape(shape)  # the argmax: the last tap, element 65997
        got = pg.max_pool_grad(x, dy, **geometry, device=device)
        want = reference.max_pool_grad(x, dy, **geometry)
    else:
        got = pg.average_pool_grad(dy, shape, **geometry, device=device)
        want = reference.average_pool_grad(dy, shape, **geometry)
    assert_gradient_close(got, want, dy)


@pytest.mark.parametrize("strides, axes", [
    ((1,), ""), ((2, 2), ""), ((16, 16, 16), ""), ((64, 64), ""), ((4096,), ""),
    ((4097,), "W"), ((65, 64), "H"), ((64, 65), "W"), ((17, 16, 16), "D"), ((40000, 1), "H"),
    ((40000, 40000), "HW"), ((3, 40000, 2**32 - 1), "HW"), ((2**32 - 1,) * 3, "DHW"), ((5000, 2, 3), "D"),
])
def test_element_block_axes_bound_the_elements_an_invocation_visits(strides, axes):
    """The largest strides take element blocks until the others' product is at most
    BLOCK_ELEMENTS_MAX; small strides keep their program exactly (no BY_ELEMENT_* constants).
    (The gathers' programs then take more where their loops would pass the loop budget:
    test_element_blocks_keep_the_gathers_within_the_loop_budget.)"""
    from poolgpu.kernels.gradients import BLOCK_ELEMENTS_MAX, element_block_axes
    dims = len(strides)
    shape, geometry = (1, 1) + (3,) * dims, dict(window_size=(1,) * dims, strides=strides)
    desc = pg.AveragePoolingGradDesc(pg.TensorDesc(F32, pg.pooling_output_sizes(shape, **geometry)),
                                     pg.TensorDesc(F32, shape), **geometry)
    assert element_block_axes(desc.window) == axes
    blocked = [s for axis, s in zip("DHW"[3 - dims:], strides) if axis not in axes]
    assert np.prod(blocked, dtype=object) <= BLOCK_ELEMENTS_MAX
    for tuning in ("cpu", "gpu"):
        constants = dict(kernels.program_for(desc, pg.Tuning.preset(tuning)).passes[-1].constants)
        assert {k for k in constants if k.startswith("BY_ELEMENT_")} == {f"BY_ELEMENT_{a}" for a in axes}



def test_element_blocks_keep_the_gathers_within_the_loop_budget():
    # a 1x4096x1 block (strides 1, 4096, 1: within BLOCK_ELEMENTS_MAX) of windows overlapping
    # along D loops past the default budget: element blocks along H, the largest stride
    from poolgpu.kernels.gradients import BLOCK_ELEMENTS_MAX, element_block_axes
    shape, geometry = (1, 1, 3, 3, 3), dict(window_size=(2, 1, 1), strides=(1, 4096, 1))
    desc = pg.AveragePoolingGradDesc(pg.TensorDesc(F32, pg.pooling_output_sizes(shape, **geometry)),
                                     pg.TensorDesc(F32, shape), **geometry)
    assert element_block_axes(desc.window) == "" and 4096 <= BLOCK_ELEMENTS_MAX
    for tuning in ("cpu", "gpu"):  # (the block gathers: rows along W take the row gathers on CPUs)
        blocks = replace(pg.Tuning.preset(tuning), row_gathers=False)
        constants = dict(kernels.program_for(desc, blocks).passes[-1].constants)
        assert {k for k in constants if k.startswith("BY_ELEMENT_")} == {"BY_ELEMENT_H"}

@pytest.mark.parametrize("layout", ["packed", "channels_last"])
@pytest.mark.parametrize("data_type", FLOAT_TYPES)
@pytest.mark.parametrize("shape, geometry", [
    ((2, 8, 7, 7), dict(window_size=(7, 7))),  # global: case C's head
    ((2, 8, 8, 10), dict(window_size=(2, 3), strides=(3, 4), start_padding=(1, 0), end_padding=(1, 2))),  # gaps
    ((2, 4, 9, 8), dict(window_size=(2, 2), strides=(4, 3), dilations=(2, 1), include_padding=True,
                        start_padding=(1, 1), end_padding=(0, 1))),
    ((1, 4, 5, 6, 7), dict(window_size=(2, 2, 3), strides=(2, 3, 3), start_padding=(1, 0, 1), end_padding=(0, 1, 1))),
    ((2, 4, 6, 9), dict(window_size=(3, 3), strides=(3, 3), divisor_override=5)),
])
def test_average_gradient_of_disjoint_windows_reads_each_window_once(device, layout, data_type, shape, geometry):
    """Windows that cannot overlap: the block gather reads its own window's dy once and
    writes its share to every element a tap lands on (zeros between dilated taps and in the
    gaps between windows), one channel or four at a time; the reference's values."""
    rng = np.random.default_rng(sum(shape))
    out_sizes = pg.pooling_output_sizes(shape, **{k: v for k, v in geometry.items()
                                                  if k not in ("include_padding", "divisor_override")})
    dy = random_values(data_type, out_sizes, rng, specials=False)
    described = lambda sizes: pg.TensorDesc(data_type, sizes, layout_strides(sizes, layout))  # noqa: E731
    desc = pg.AveragePoolingGradDesc(described(out_sizes), described(shape), **geometry)
    block_gathers = replace(device.tuning, row_gathers=False)
    program = kernels.program_for(desc, block_gathers)
    gathers = [p for p in program.passes + (program.fallback.passes if program.fallback else ())
               if p.kernel.file == "average_pool_grad.wgsl"]
    whole_planes = layout == "packed" and all(size == 1 for size in out_sizes[2:])  # (the packed planes' kernels)
    assert (gathers or whole_planes) and all(("DISJOINT", True) in p.constants for p in gathers)
    with tuned_for(device, block_gathers):
        got = run_output(device, desc, (upload(device, dy, layout),), desc.output_gradient)
    want = reference.average_pool_grad(dy, shape, **geometry)
    assert_gradient_close(got, want, dy)


@pytest.mark.parametrize("layout", ["packed", "channels_last"])
@pytest.mark.parametrize("operator, geometry", [
    ("max", dict(window_size=(3, 3), strides=(2, 2))),  # windows-first or the taps
    ("average", dict(window_size=(3, 3), strides=(2, 2))),
    ("average", dict(window_size=(3, 3), strides=(3, 3))),  # disjoint blocks
])
@pytest.mark.parametrize("windows_first, row_gathers", [(True, True), (True, False), (False, True), (False, False)])
def test_gathered_gradients_sum_from_positive_zero(device, operator, layout, geometry, windows_first, row_gathers):
    """Every gather's sums start at +0, as PyTorch's do: a dy of -0 gives +0 under every
    tuning (no compiler may fold 0 + v into v, which keeps -0).  The one-pass max gradient
    of disjoint windows copies dy's bits instead (docs/semantics.md)."""
    shape = (2, 8, 9, 16)
    out_sizes = pg.pooling_output_sizes(shape, **geometry)
    dy = np.full(out_sizes, -0.0, np.float32)
    x = np.random.default_rng(5).standard_normal(shape).astype(np.float32)
    desc, inputs = _gradient_call(device, operator, layout, F32, x, dy, geometry)
    with tuned_for(device, replace(device.tuning, windows_first=windows_first, row_gathers=row_gathers)):
        got = run_output(device, desc, inputs, desc.output_gradient)
    assert (got == 0).all() and not np.signbit(got).any()
