"""The average descriptions' divisor extensions, ``counted_end_padding`` (ceil_mode's end
padding left out of the include-padding divisor) and ``divisor_override``, forward and
gradient, on every adapter and with the GPU tuning: against the NumPy reference and
PyTorch's avg_pool{1,2,3}d forward and backward (ceil_mode, count_include_pad,
divisor_override)."""

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import poolgpu as pg
import reference
from helpers import FLOAT_TYPES, layout_strides, same_bits, tuned_for, upload
from poolgpu import kernels
from test_average_lp import assert_accurate
from test_grad import assert_gradient_close, run_output

GPU_SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
F32 = pg.DataType.FLOAT32
X = pg.TensorDesc(F32, (2, 3, 8, 8))


# -- descriptions ---------------------------------------------------------------------------


def test_the_fields_default_to_the_plain_divisor():
    d = pg.AveragePoolingDesc(X, window_size=(3, 3), end_padding=(2, 1))
    assert d.counted_end_padding == (2, 1) and d.divisor_override is None
    assert d == pg.AveragePoolingDesc(X, window_size=(3, 3), end_padding=(2, 1), counted_end_padding=(2, 1))
    one = pg.AveragePooling1Desc(X, window_size=(3, 3), end_padding=(2, 1), counted_end_padding=[1, 0],
                                 divisor_override=np.int64(5))
    assert one.counted_end_padding == (1, 0) and one.divisor_override == 5 and type(one.divisor_override) is int
    grad = pg.AveragePoolingGradDesc(one.output, X, window_size=(3, 3), end_padding=(2, 1), divisor_override=7)
    assert grad.counted_end_padding == (2, 1) and grad.divisor_override == 7


def test_the_fields_are_keyword_only():
    with pytest.raises(TypeError):
        pg.AveragePoolingDesc(X, None, (2, 2))


@pytest.mark.parametrize("kwargs, field", [
    (dict(counted_end_padding=(1,)), "counted_end_padding"),
    (dict(counted_end_padding=(0, -1)), "counted_end_padding"),
    (dict(counted_end_padding=(2, 0)), "counted_end_padding"),   # beyond the end padding (1, 1)
    (dict(counted_end_padding="11"), "counted_end_padding"),
    (dict(divisor_override=0), "divisor_override"),
    (dict(divisor_override=-3), "divisor_override"),
    (dict(divisor_override=2.0), "divisor_override"),
    (dict(divisor_override=True), "divisor_override"),
    (dict(divisor_override=2**32), "divisor_override"),
])
@pytest.mark.parametrize("make", ["forward", "forward1", "gradient"])
def test_bad_fields_name_the_field(make, kwargs, field):
    geometry = dict(window_size=(3, 3), start_padding=(1, 1), end_padding=(1, 1))
    with pytest.raises(pg.ValidationError) as e:
        if make == "gradient":
            pg.AveragePoolingGradDesc(pg.TensorDesc(F32, (2, 3, 8, 8)), X, **geometry, **kwargs)
        else:
            (pg.AveragePoolingDesc if make == "forward" else pg.AveragePooling1Desc)(X, **geometry, **kwargs)
    assert e.value.field == field and str(e.value).startswith(field)


def test_the_onnx_layer_uses_the_public_field():
    from poolgpu import onnx
    assert not hasattr(onnx, "_CeilAveragePoolingDesc")


def test_constants_name_the_divisor():
    x = pg.TensorDesc(F32, (1, 1, 9, 9))
    geometry = dict(window_size=(3, 3), strides=(2, 2), start_padding=(1, 1), end_padding=(2, 1))
    clipped = dict(kernels.window.average_divisor_constants(
        pg.AveragePooling1Desc(x, include_padding=True, counted_end_padding=(1, 1), **geometry)))
    assert clipped["CLIP_DIVISOR"] and (clipped["EH"], clipped["EW"]) == (1, 1)
    # without include_padding the end padding never counts: nothing to clip
    assert "CLIP_DIVISOR" not in kernels.window.average_divisor_constants(
        pg.AveragePooling1Desc(x, counted_end_padding=(1, 1), **geometry))
    assert kernels.window.average_divisor_constants(pg.AveragePooling1Desc(x, divisor_override=3, **geometry)) == \
        {"INCLUDE_PADDING": True, "DIVISOR_OVERRIDE": 3}


# -- against the reference ----------------------------------------------------------------------


@st.composite
def divisor_cases(draw):
    dims = draw(st.integers(1, 3))
    end_padding = tuple(draw(st.integers(0, 3)) for _ in range(dims))
    return dict(
        sizes=(draw(st.integers(1, 3)), draw(st.sampled_from([1, 3, 4, 8]))) +
        tuple(draw(st.integers(1, 9)) for _ in range(dims)),
        window_size=tuple(draw(st.integers(1, 4)) for _ in range(dims)),
        strides=tuple(draw(st.integers(1, 3)) for _ in range(dims)),
        dilations=tuple(draw(st.sampled_from([1, 1, 2])) for _ in range(dims)),
        start_padding=tuple(draw(st.integers(0, 2)) for _ in range(dims)),
        end_padding=end_padding,
        counted_end_padding=tuple(draw(st.integers(0, e)) for e in end_padding),
        divisor_override=draw(st.sampled_from([None, None, 1, 3, 7])),
        include_padding=draw(st.booleans()),
        data_type=draw(st.sampled_from(FLOAT_TYPES)),
        layout=draw(st.sampled_from(["packed", "channels_last", "gaps", "reversed"])),
        tuning=draw(st.sampled_from(["cpu", "gpu"])),
        seed=draw(st.integers(0, 2**31)),
    )


GEOMETRY = ("window_size", "strides", "dilations", "start_padding", "end_padding")
DIVISOR = ("include_padding", "counted_end_padding", "divisor_override")


def _fields(case, names):
    return {k: case[k] for k in names}


@GPU_SETTINGS
@given(case=divisor_cases())
def test_forward_matches_the_reference(device, case):
    dt, sizes = case["data_type"], case["sizes"]
    x_desc = pg.TensorDesc(dt, sizes, layout_strides(sizes, case["layout"]))
    try:
        desc = pg.AveragePooling1Desc(x_desc, **_fields(case, GEOMETRY + DIVISOR))
    except pg.ValidationError:
        assume(False)
    x = np.random.default_rng(case["seed"]).standard_normal(sizes).astype(dt.numpy)
    with tuned_for(device, case["tuning"]):
        y = device.compile(desc)(upload(device, x, case["layout"])).numpy()
    assert_accurate(y, reference.average_pool(x, **_fields(case, GEOMETRY + DIVISOR)), dt.numpy)


@GPU_SETTINGS
@given(case=divisor_cases())
def test_gradient_matches_the_reference(device, case):
    dt, sizes = case["data_type"], case["sizes"]
    try:
        out_sizes = pg.pooling_output_sizes(sizes, **_fields(case, GEOMETRY))
        dx_desc = pg.TensorDesc(dt, sizes, layout_strides(sizes, case["layout"]))
        dy_desc = pg.TensorDesc(dt, out_sizes, layout_strides(out_sizes, case["layout"]))
        desc = pg.AveragePoolingGradDesc(dy_desc, dx_desc, **_fields(case, GEOMETRY + DIVISOR))
    except pg.ValidationError:
        assume(False)
    dy = np.random.default_rng(case["seed"]).standard_normal(out_sizes).astype(dt.numpy)
    with tuned_for(device, case["tuning"]):
        got = run_output(device, desc, (upload(device, dy, case["layout"]),), dx_desc)
    assert_gradient_close(got, reference.average_pool_grad(dy, sizes, **_fields(case, GEOMETRY + DIVISOR)), dy)


@pytest.mark.parametrize("layout, width, gather", [
    ("packed", 16, "gather_rows_store4.wgsl"), ("packed", 13, "gather_rows_store_any.wgsl"),
    ("channels_last", 16, "gather_lanes4.wgsl"), ("reversed", 16, "gather_lanes1.wgsl")])
def test_every_gradient_kernel_clips_and_overrides(device, layout, width, gather):
    """The row gathers (W contiguous: whole chunks, and rows that start anywhere), the
    four-channel block gathers (channels-last) and the general block gathers, each with a
    clipped divisor and an override, windows first and not."""
    rng = np.random.default_rng(len(layout) + width)
    sizes = (2, 8, 7, width)
    for geometry in (dict(window_size=(3, 3), strides=(2, 2), start_padding=(1, 1), end_padding=(2, 1)),
                     dict(window_size=(3, 4), strides=(3, 1), start_padding=(0, 1), end_padding=(2, 2))):
        out_sizes = pg.pooling_output_sizes(sizes, **geometry)
        dy = rng.standard_normal(out_sizes).astype(np.float32)
        for divisor in (dict(include_padding=True, counted_end_padding=(1, 0)), dict(divisor_override=5)):
            described = lambda s: pg.TensorDesc(F32, s, layout_strides(s, layout))  # noqa: E731
            desc = pg.AveragePoolingGradDesc(described(out_sizes), described(sizes), **geometry, **divisor)
            assert kernels.program_for(desc).passes[-1].kernel.library[-1] == gather
            got = run_output(device, desc, (upload(device, dy, layout),), desc.output_gradient)
            assert_gradient_close(got, reference.average_pool_grad(dy, sizes, **geometry, **divisor), dy)


def test_override_divides_once(device):
    # a sum of 3 divided by 3 is 1 exactly; by a reciprocal (0.333...) it would not be
    x = np.ones((1, 1, 3, 3), np.float32)
    y = pg.average_pool(x, (3, 3), start_padding=(1, 1), end_padding=(1, 1), divisor_override=3, device=device)
    want = np.array([[4, 6, 4], [6, 9, 6], [4, 6, 4]], np.float32) / np.float32(3)
    assert same_bits(y, want.reshape(1, 1, 3, 3))
    dy = np.full((1, 1, 3, 3), 3.0, np.float32)
    dx = pg.average_pool_grad(dy, (1, 1, 3, 3), (3, 3), start_padding=(1, 1), end_padding=(1, 1),
                              divisor_override=3, device=device)
    assert same_bits(dx, np.array([[4, 6, 4], [6, 9, 6], [4, 6, 4]], np.float32).reshape(1, 1, 3, 3))


def test_gradients_with_the_fields_are_bit_identical_run_after_run(device):
    rng = np.random.default_rng(2)
    dy = rng.standard_normal((2, 3, 6, 6)).astype(np.float32)
    geometry = dict(window_size=(3, 3), strides=(2, 2), start_padding=(1, 1), end_padding=(2, 2))
    runs = [pg.average_pool_grad(dy, (2, 3, 11, 11), include_padding=True, counted_end_padding=(1, 1),
                                 device=device, **geometry) for _ in range(3)]
    assert all(same_bits(r, runs[0]) for r in runs[1:])


# -- PyTorch ----------------------------------------------------------------------------------


def torch_geometry(spatial, kernel, stride, padding, ceil_mode):
    """poolgpu's window fields for PyTorch's symmetric padding and ceil_mode (PyTorch's
    output size: ceil, less a last window starting past the input and its start padding)."""
    end = []
    for size in spatial:
        if ceil_mode:
            out = -(-(size + 2 * padding - kernel) // stride) + 1
            if (out - 1) * stride >= size + padding:
                out -= 1
        else:
            out = (size + 2 * padding - kernel) // stride + 1
        end.append(padding + max(0, (out - 1) * stride + kernel - size - 2 * padding))
    dims = len(spatial)
    return dict(window_size=(kernel,) * dims, strides=(stride,) * dims, start_padding=(padding,) * dims,
                end_padding=tuple(end))


@pytest.mark.parametrize("tuning", ["cpu", "gpu"])
@pytest.mark.parametrize("divisor_override", [None, 5])
@pytest.mark.parametrize("count_include_pad", [False, True])
@pytest.mark.parametrize("dims, shape, kernel, stride, padding", [
    (1, (2, 3, 10), 3, 2, 1),
    (2, (2, 3, 8, 9), 3, 2, 1),
    (2, (1, 8, 10, 7), 4, 3, 2),
    (2, (1, 4, 7, 16), 2, 2, 1),
    (3, (1, 2, 6, 5, 7), 3, 2, 1),
])
def test_matches_pytorch_forward_and_backward(device, dims, shape, kernel, stride, padding, count_include_pad,
                                              divisor_override, tuning):
    torch = pytest.importorskip("torch")
    if dims == 1 and divisor_override is not None:
        pytest.skip("avg_pool1d has no divisor_override")
    pool = getattr(torch.nn.functional, f"avg_pool{dims}d")
    rng = np.random.default_rng(dims * 10 + kernel)
    x = rng.standard_normal(shape).astype(np.float32)
    xt = torch.tensor(x, requires_grad=True)
    kwargs = dict(ceil_mode=True, count_include_pad=count_include_pad)
    if divisor_override is not None:
        kwargs["divisor_override"] = divisor_override
    y = pool(xt, kernel, stride, padding, **kwargs)
    dy = rng.standard_normal(tuple(y.shape)).astype(np.float32)
    y.backward(torch.tensor(dy))
    geometry = torch_geometry(shape[2:], kernel, stride, padding, ceil_mode=True)
    divisor = dict(include_padding=count_include_pad, counted_end_padding=(padding,) * dims,
                   divisor_override=divisor_override)
    with tuned_for(device, tuning):
        got = pg.average_pool(x, device=device, **geometry, **divisor)
        dx = pg.average_pool_grad(dy, shape, device=device, **geometry, **divisor)
    assert got.shape == tuple(y.shape)
    np.testing.assert_allclose(got, y.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dx, xt.grad.numpy(), rtol=1e-5, atol=1e-6)
