"""The Lp and ROI pooling gradients (poolgpu extensions) on every adapter: against the
independent NumPy reference, PyTorch's autograd (Lp with p = 1, 2, 3 on positive inputs),
torchvision's arithmetic (tests/test_torch_fractional.py, through poolgpu.torch), windows
of zeros, determinism and split gathers."""

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import poolgpu as pg
import reference
from helpers import FLOAT_TYPES, layout_strides, random_values, same_bits, tuned_for, upload
from poolgpu import kernels
from test_grad import describable, geometry_of, gradient_cases, random_dy, run_output

GPU_SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def assert_lp_gradient_close(got, want, dy):
    """dx sums a window's worth of f32 terms, each through pow (8 ulp on Mesa) and a
    division, rounded once to its type."""
    scale = float(np.abs(dy.astype(np.float64)).max(initial=0))
    rtol, atol = {np.dtype(np.float32): (2e-5, 2e-5)}.get(got.dtype, (8e-3, 8e-3))
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=rtol, atol=atol * scale)


@st.composite
def lp_grad_cases(draw):
    """test_grad's gradient cases, with an exponent p."""
    return dict(draw(gradient_cases()), p=draw(st.sampled_from([1, 2, 3, 1.5, 4])))


@GPU_SETTINGS
@given(case=lp_grad_cases())
def test_lp_pool_grad_matches_reference(device, case):
    geometry, dt, p = geometry_of(case), case["data_type"], case["p"]
    x_desc = pg.TensorDesc(dt, case["sizes"], layout_strides(case["sizes"], case["in_layout"]))
    assume(describable(lambda: pg.LpPooling1Desc(x_desc, **geometry)))
    out_sizes = pg.pooling_output_sizes(case["sizes"], **geometry)
    rng = np.random.default_rng(case["seed"])
    # finite values of both signs and zeros (NaN and infinities: test_lp_pool_grad_special_values)
    x = random_values(dt, case["sizes"], rng, specials=False)
    x[rng.random(x.shape) < 0.1] = 0
    if case["in_layout"] == "broadcast":
        x = np.broadcast_to(x[:1, :1], x.shape).copy()
    dy = random_dy(case, out_sizes, rng)
    dy_desc = pg.TensorDesc(dt, out_sizes, layout_strides(out_sizes, case["in_layout"]))
    dx_desc = pg.TensorDesc(dt, case["sizes"], layout_strides(case["sizes"], case["out_layout"]))
    desc = pg.LpPoolingGradDesc(x_desc, dy_desc, dx_desc, p=p, **geometry)
    got = run_output(device, desc, (upload(device, x, case["in_layout"]), upload(device, dy, case["in_layout"])),
                     dx_desc)
    # the reference's y from the forward result poolgpu rounds to the type (as the kernel's pass 1)
    want = reference.lp_pool_grad(x, dy, p=p, **geometry)
    assert_lp_gradient_close(got, want, dy)


@pytest.mark.parametrize("p", [1, 2, 3])
def test_lp_pool_grad_matches_pytorch(device, p):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(p)
    for shape, kernel, stride in (((2, 3, 9, 11), (3, 2), (2, 2)), ((1, 2, 7, 8, 9), (2, 3, 2), (2, 1, 3)),
                                  ((2, 4, 12), (3,), (1,))):
        x = (rng.random(shape) + 0.05).astype(np.float32)   # positive: PyTorch's x ** p is |x| ** p there
        lp = {1: torch.nn.functional.lp_pool1d, 2: torch.nn.functional.lp_pool2d,
              3: torch.nn.functional.lp_pool3d}[len(kernel)]
        tx = torch.from_numpy(x).requires_grad_()
        y = lp(tx, p, kernel[0] if len(kernel) == 1 else kernel, stride)   # (lp_pool1d multiplies by an int)
        dy = rng.standard_normal(tuple(y.shape)).astype(np.float32)
        y.backward(torch.from_numpy(dy))
        got = pg.lp_pool_grad(x, dy, kernel, strides=stride, p=p, device=device)
        np.testing.assert_allclose(got, tx.grad.numpy(), rtol=2e-5, atol=2e-6)


def test_lp_pool_grad_special_values(device):
    # a window of zeros gives 0 (PyTorch: NaN); x = 0 gives 0; NaN propagates
    x = np.array([[[0, 0, 0, 3, -4, 0, np.nan, 1]]], np.float32)
    dy = np.array([[[5, 7, 11, 13]]], np.float32)
    for p in (1, 2, 3):
        dx = pg.lp_pool_grad(x, dy, (2,), strides=(2,), p=p, device=device)
        assert dx[0, 0, :3].tolist() == [0, 0, 0]
        assert np.isnan(dx[0, 0, 6]) and not np.isnan(dx[0, 0, :6]).any()
        # a NaN in the window: y is NaN, and so is its neighbour's (|x| / y)^(p - 1), but for p = 1
        assert dx[0, 0, 7] == 13 if p == 1 else np.isnan(dx[0, 0, 7])
    dx = pg.lp_pool_grad(x, dy, (2,), strides=(2,), p=2, device=device)
    assert dx[0, 0, 2:6].tolist() == [0, 7, -11, 0]   # (x / |x|: each window holds one non-zero)
    assert pg.lp_pool_grad(x, dy, (2,), strides=(2,), p=1, device=device)[0, 0, 3:5].tolist() == [7, -11]
    # large p on tiny and huge values: the ratio keeps the power in range
    big = np.array([[[1e-30, 2e-30, 1e30, 3e30]]], np.float32)
    dx = pg.lp_pool_grad(big, np.ones((1, 1, 2), np.float32), (2,), strides=(2,), p=20, device=device)
    assert np.isfinite(dx).all() and dx[0, 0, 1] > 0.99 and dx[0, 0, 3] > 0.99


# Windows that do not overlap (strides at least the dilated window: larger, padded, dilated,
# 3-D, global, channels-last) in one pass (Tuning.lp_gradient_one_pass): the two passes' bits,
# NaN, infinities and signed zeros included, under both presets; overlapping windows and windows
# past the loop budget keep the two passes.
DISJOINT_LP = (((2, 3, 8, 8), dict(window_size=(2, 2), strides=(2, 2)), None),
               ((2, 3, 9, 11), dict(window_size=(2, 3), strides=(3, 4), start_padding=(1, 0), end_padding=(1, 2)),
                "channels_last"),
               ((1, 2, 5, 7, 9), dict(window_size=(2, 2, 2), strides=(2, 3, 4), dilations=(1, 1, 2)), None),
               ((2, 3, 7, 7), dict(window_size=(7, 7)), None),
               ((2, 2, 20), dict(window_size=(3,), strides=(5,), dilations=(2,)), None))


@pytest.mark.parametrize("preset", ["cpu", "gpu"])
def test_lp_pool_grad_in_one_pass_over_disjoint_windows(device, preset):
    import dataclasses
    one = dataclasses.replace(pg.Tuning.preset(preset), lp_gradient_one_pass=True)
    two = dataclasses.replace(one, lp_gradient_one_pass=False)
    rng = np.random.default_rng(21)
    for k, (sizes, geometry, layout) in enumerate(DISJOINT_LP):
        dt = (pg.DataType.FLOAT32, pg.DataType.FLOAT16)[k % 2]
        strides = layout_strides(sizes, layout) if layout else None
        x_desc = pg.TensorDesc(dt, sizes, strides)
        out = pg.LpPooling1Desc(x_desc, **geometry).output.sizes
        x = random_values(dt, sizes, rng)
        dy = random_values(dt, out, rng, specials=False)
        for p in (1, 2, 3) if k == 0 else (1 + k % 3,):
            desc = pg.LpPoolingGradDesc(x_desc, pg.TensorDesc(dt, out), x_desc, p=p, **geometry)
            assert len(kernels.program_for(desc, one).passes) == 1 < len(kernels.program_for(desc, two).passes)
            got, want = (pg.Op(device, desc, t)(upload(device, x, layout or "packed"), device.upload(dy)).numpy()
                         for t in (one, two))
            assert same_bits(got, want), (sizes, p)
    x_desc = pg.TensorDesc("float32", (1, 2, 17, 17))
    for geometry, tuning in ((dict(window_size=(3, 3), strides=(2, 2)), one),
                             (dict(window_size=(17, 17)), dataclasses.replace(one, loop_budget=256))):
        desc = pg.LpPoolingGradDesc(x_desc, pg.LpPooling1Desc(x_desc, **geometry).output, x_desc, **geometry)
        assert len(kernels.program_for(desc, tuning).passes) > 1


@st.composite
def roi_grad_cases(draw):
    n, c, h, w = draw(st.integers(1, 2)), draw(st.integers(1, 3)), draw(st.integers(1, 12)), draw(st.integers(1, 12))
    count = draw(st.integers(1, 6))
    corner = st.floats(-3, 15, allow_nan=False, width=32)
    rois = [[draw(st.integers(-1, n))] + [draw(corner) for _ in range(4)] for _ in range(count)]
    return dict(sizes=(n, c, h, w), rois=rois, pooled=(draw(st.integers(1, 4)), draw(st.integers(1, 4))),
                scale=draw(st.sampled_from([1.0, 0.5, 2.0, 0.3])), data_type=draw(st.sampled_from(FLOAT_TYPES)),
                integer_dy=draw(st.booleans()), seed=draw(st.integers(0, 2**31)))


@GPU_SETTINGS
@given(case=roi_grad_cases())
def test_roi_pool_grad_matches_reference(device, case):
    rng = np.random.default_rng(case["seed"])
    dtype = case["data_type"].numpy
    # distinct values (no ties), some equal ones too
    x = rng.permutation(np.prod(case["sizes"])).reshape(case["sizes"]).astype(np.float32) / 8
    x = x.astype(dtype)
    rois = np.array(case["rois"], np.float32).astype(dtype)
    out_sizes = (len(rois), case["sizes"][1]) + case["pooled"]
    dy = (rng.integers(-8, 9, out_sizes) if case["integer_dy"] else rng.standard_normal(out_sizes)).astype(dtype)
    got = pg.roi_pool_grad(x, rois, dy, case["pooled"], case["scale"], device=device)
    want = reference.roi_pool_grad(x, rois, dy, case["pooled"], case["scale"])
    if case["integer_dy"]:
        assert same_bits(got, want.astype(dtype))
    else:
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=1e-2 if dtype != np.float32 else 1e-6,
                                   atol=1e-2 if dtype != np.float32 else 1e-6)


def test_roi_pool_grad_splits_over_runs_of_rois(device):
    """Many ROIs: at a small loop budget the gather runs over runs of ROIs, one pass each,
    carrying the sums; every element still adds its bins in one chain, in increasing (r, oh,
    ow) order, so the bits are the whole gather's (dy not integers: any other order of the
    additions would show)."""
    import dataclasses
    rng = np.random.default_rng(9)
    x = rng.standard_normal((2, 3, 10, 14)).astype(np.float32)
    rois = np.concatenate([rng.integers(0, 2, (300, 1)), rng.uniform(-2, 15, (300, 4))], axis=1).astype(np.float32)
    dy = rng.standard_normal((300, 3, 3, 2)).astype(np.float32)
    # the float32 sums of the bins in increasing (r, c, oh, ow) order, one addition at a time
    _, arg = reference._roi_max(x, rois, 3, 2, 1.0)
    chained = np.zeros(x.size, np.float32)
    np.add.at(chained, arg.ravel()[arg.ravel() >= 0], dy.ravel()[arg.ravel() >= 0])
    whole = pg.roi_pool_grad(x, rois, dy, (3, 2), device=device)
    assert same_bits(whole, chained.reshape(x.shape))
    tuning = dataclasses.replace(device.tuning, loop_budget=256)
    desc = pg.RoiPoolingGradDesc(pg.TensorDesc("float32", x.shape), pg.TensorDesc("float32", (1, 1, 300, 5)),
                                 pg.TensorDesc("float32", dy.shape), spatial_scale=1.0, pooled_size=(3, 2))
    gathers = [p for p in kernels.program_for(desc, tuning, None).passes if p.kernel.file == "roi_pool_grad.wgsl"]
    runs = [(p.params["roi_first"], p.params["roi_end"]) for p in gathers]
    assert len(runs) > 2 and runs[0][0] == 0 and runs[-1][1] == 300
    assert all(end == next_first for (_, end), (next_first, _) in zip(runs, runs[1:]))
    with tuned_for(device, tuning):
        assert same_bits(whole, pg.roi_pool_grad(x, rois, dy, (3, 2), device=device))


@pytest.mark.parametrize("budget", (None, 256))
def test_roi_pool_grad_lanes_on_channels_or_blocks(device, budget):
    """The gather numbered with the channels fastest (neighbouring lanes: one block of
    neighbouring planes) or with the blocks fastest gives the reference's bits, whole and
    split over runs of ROIs; 5 channels (no multiple of a workgroup), blocks cut at the
    edges."""
    import dataclasses
    rng = np.random.default_rng(23)
    x = rng.permutation(3 * 5 * 13 * 21).reshape(3, 5, 13, 21).astype(np.float32)
    rois = np.concatenate([rng.integers(0, 3, (200, 1)), rng.uniform(-2, 22, (200, 4))], axis=1).astype(np.float32)
    dy = rng.integers(-4, 5, (200, 5, 4, 3)).astype(np.float32)
    want = reference.roi_pool_grad(x, rois, dy, (4, 3)).astype(np.float32)
    desc = pg.RoiPoolingGradDesc(pg.TensorDesc("float32", x.shape), pg.TensorDesc("float32", (1, 1, 200, 5)),
                                 pg.TensorDesc("float32", dy.shape), spatial_scale=1.0, pooled_size=(4, 3))
    for lanes in (True, False):
        tuning = dataclasses.replace(device.tuning, roi_pool_grad_channel_lanes=lanes,
                                     loop_budget=budget or device.tuning.loop_budget)
        gathers = [p for p in kernels.program_for(desc, tuning, None).passes if p.kernel.file == "roi_pool_grad.wgsl"]
        assert {dict(p.constants)["CHANNEL_LANES"] for p in gathers} == {lanes}
        assert (len(gathers) > 1) == (budget is not None)
        with tuned_for(device, tuning):
            assert same_bits(pg.roi_pool_grad(x, rois, dy, (4, 3), device=device), want)


@pytest.mark.parametrize("data_type", FLOAT_TYPES + (pg.DataType.BFLOAT16,))
def test_roi_pool_grad_of_many_rois_by_blocks(device, data_type, monkeypatch):
    """1,500 ROIs over two 19 x 27 images (blocks of 8 x 8 cut at the edges): overlapping,
    partly and wholly outside, inverted (empty bins), bins smaller than an element; against
    the reference, bit for bit (integer dy: exact sums), and the same bits run after run; then
    with tiles of 16 and 32 (masks capped), each holding several blocks."""
    from poolgpu.kernels import roi_align as roi_align_kernels
    dtype = data_type.numpy
    rng = np.random.default_rng(15)
    x = (rng.permutation(2 * 3 * 19 * 27).reshape(2, 3, 19, 27) % 250).astype(np.float32).astype(dtype)
    count = 1500
    corner = rng.uniform(-10, 30, (count, 2))
    rois = np.concatenate([rng.integers(0, 2, (count, 1)), corner, corner + rng.uniform(-3, 12, (count, 2))],
                          axis=1).astype(np.float32).astype(dtype)
    dy = rng.integers(-4, 5, (count, 3, 3, 4)).astype(dtype)
    want = reference.roi_pool_grad(x, rois, dy, (3, 4), 0.75)
    got = pg.roi_pool_grad(x, rois, dy, (3, 4), 0.75, device=device)
    assert same_bits(got, want.astype(dtype))
    assert same_bits(got, pg.roi_pool_grad(x, rois, dy, (3, 4), 0.75, device=device))
    for cap in (2 * 8 * 47, 2 * 3 * 47):   # words of masks: tiles of 16, then 32
        monkeypatch.setattr(roi_align_kernels, "MASK_WORDS", cap)
        tiles = roi_align_kernels.tile_layout(2, 19, 27, count)["tile"]
        assert tiles == (16 if cap > 300 else 32)
        wider = np.concatenate([x, x[:, :, :, :1]], axis=3) if cap > 300 else np.concatenate([x, x[:, :, :1]], axis=2)
        rows = reference.roi_pool_grad(wider, rois, dy, (3, 4), 0.75)   # (a new shape: a new op, with those tiles)
        assert same_bits(pg.roi_pool_grad(wider, rois, dy, (3, 4), 0.75, device=device), rows.astype(dtype))


def test_roi_pool_with_indices(device):
    x = np.arange(2 * 16, dtype=np.float32).reshape(1, 2, 4, 4)
    roi = device.upload(np.array([[[[0, 0, 0, 3, 3], [0, 5, 5, 6, 6]]]], np.float32))   # the second: empty bins
    xt = device.upload(x)
    desc = pg.RoiPoolingDesc(xt.desc, roi.desc, spatial_scale=1.0, pooled_size=(2, 2), output_indices="uint32")
    y, i = device.compile(desc)(xt, roi)
    assert np.array_equal(x.ravel()[i.numpy()[0]], y.numpy()[0])
    assert not i.numpy()[1].any() and not y.numpy()[1].any()
