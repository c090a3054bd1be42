"""ROI pooling (DirectML ROI_POOLING) on every adapter, against the independent NumPy
reference and hand-checked cases: values bit-exact, no byte outside the output written,
nothing outside the input read, whatever the ROI data."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import poolgpu as pg
import reference
from helpers import (FLOAT_TYPES, assert_canaries_intact, canary_tensor, layout_strides, random_values, same_bits,
                     sentinel_input)

GPU_SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

# ROI values that are data errors or extremes: each must give a defined result.
ODD_VALUES = [np.nan, np.inf, -np.inf, 1e30, -3e38, 3e38, 65504.0, -65504.0, 1e-40, -0.0, 2**31, -(2**31)]
SCALES = [1.0, 0.5, 0.25, 0.0625, 1 / 3, 2.0, 0.1, 1e-3, 1e20]


@st.composite
def roi_cases(draw):
    n, c = draw(st.integers(1, 3)), draw(st.sampled_from([1, 2, 3, 4, 8]))   # (4, 8: four channels an invocation)
    h, w = draw(st.integers(1, 12)), draw(st.integers(1, 12))
    scale = draw(st.sampled_from(SCALES))
    count = draw(st.integers(1, 6))

    def coordinate(extent):
        kind = draw(st.sampled_from(["pixel"] * 6 + ["half"] * 3 + ["odd"]))
        if kind == "odd":
            return draw(st.sampled_from(ODD_VALUES))
        # in the input's coordinates before scaling, reaching a little beyond it
        value = draw(st.integers(-4, int(min((extent + 4) / scale, 1e6))))
        return value + 0.5 if kind == "half" else float(value)

    def batch():
        if draw(st.integers(0, 3)):
            return float(draw(st.integers(0, n - 1)))
        return draw(st.sampled_from([0.7, n - 0.01, -0.5, -0.0, -1.0, float(n), n + 0.5, np.nan, np.inf, 1e10]))

    rois = [[batch(), coordinate(w), coordinate(h), coordinate(w), coordinate(h)] for _ in range(count)]
    return dict(
        sizes=(n, c, h, w), rois=rois, scale=scale,
        pooled=(draw(st.integers(1, 4)), draw(st.integers(1, 4))),
        data_type=draw(st.sampled_from(FLOAT_TYPES)),
        in_layout=draw(st.sampled_from(["packed", "channels_last", "reversed", "gaps", "broadcast"])),
        roi_layout=draw(st.sampled_from(["packed", "reversed", "gaps"])),
        out_layout=draw(st.sampled_from(["packed", "channels_last", "gaps", "reversed"])),
        seed=draw(st.integers(0, 2**31)),
    )


def run_case(device, case):
    dtype = pg.DataType.of(case["data_type"]).numpy
    rng = np.random.default_rng(case["seed"])
    x = random_values(case["data_type"], case["sizes"], rng)
    if case["in_layout"] == "broadcast":  # one plane repeated over N and C
        x = np.broadcast_to(x[:1, :1], x.shape).copy()
    with np.errstate(over="ignore"):
        rois = np.array(case["rois"], np.float64).astype(dtype).reshape(1, 1, -1, 5)
    xt = sentinel_input(device, x, layout_strides(x.shape, case["in_layout"]))
    roit = sentinel_input(device, rois, layout_strides(rois.shape, case["roi_layout"]))
    out_sizes = (rois.shape[2], x.shape[1]) + case["pooled"]
    output = pg.TensorDesc(dtype, out_sizes, layout_strides(out_sizes, case["out_layout"]))
    desc = pg.RoiPoolingDesc(xt.desc, roit.desc, output, spatial_scale=case["scale"], pooled_size=case["pooled"])
    out = canary_tensor(device, output)
    assert device.compile(desc)(xt, roit, out=out) is out
    expected = reference.roi_pool(x, rois, case["pooled"], case["scale"])
    assert same_bits(out.numpy(), expected), "values differ"
    assert_canaries_intact(out)


@GPU_SETTINGS
@given(case=roi_cases())
def test_roi_pool_matches_reference(device, case):
    run_case(device, case)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_roi_pool_four_channels_per_invocation(device, dtype):
    # C a multiple of 4: the walk (and the gradient's argmax walk) takes four channels an
    # invocation, sharing the bin, neighbouring lanes on neighbouring bins or on neighbouring
    # runs of channels; the bits of one channel an invocation and the reference's, for ROIs
    # inside, across and outside the map, of a batch past N, with NaN among the values
    import dataclasses
    from helpers import tuned_for
    rng = np.random.default_rng(17)
    x = random_values(pg.DataType.of(dtype), (2, 8, 11, 13), rng)
    rois = np.array([[0, 0, 0, 12, 10], [1, 2.5, 1, 7, 9], [1, -3, -2, 20, 4], [0, 14, 12, 19, 15],
                     [3, 1, 1, 4, 4], [0, 5, 5, 5, 5]], dtype)
    dy = random_values(pg.DataType.of(dtype), (len(rois), 8, 3, 2), rng)
    got = {}
    for channels, lanes in ((4, True), (4, False), (1, False)):
        tuning = dataclasses.replace(device.tuning, roi_pool_channels=channels, roi_pool_channel_lanes=lanes)
        x_desc, roi_desc = pg.TensorDesc(dtype, x.shape), pg.TensorDesc(dtype, (1, 1) + rois.shape)
        descs = (pg.RoiPoolingDesc(x_desc, roi_desc, spatial_scale=1.0, pooled_size=(3, 2)),
                 pg.RoiPoolingGradDesc(x_desc, roi_desc, pg.TensorDesc(dtype, dy.shape), spatial_scale=1.0,
                                       pooled_size=(3, 2)))
        walks = [p for desc in descs for p in pg.kernels.program_for(desc, tuning).passes
                 if p.kernel.file == "max_pool.wgsl"]
        assert [dict(p.constants).get("CHANNELS", 1) for p in walks] == [channels, channels]
        assert [dict(p.constants).get("CHANNEL_LANES", False) for p in walks] == [lanes, lanes]
        with tuned_for(device, tuning):
            got[channels, lanes] = (pg.roi_pool(x, rois, (3, 2), device=device),
                                    pg.roi_pool_grad(x, rois, dy, (3, 2), device=device))
    for grouped in ((4, True), (4, False)):
        assert same_bits(got[grouped][0], got[1, False][0]) and same_bits(got[grouped][1], got[1, False][1])
    assert same_bits(got[1, False][0], reference.roi_pool(x, rois.reshape(1, 1, -1, 5), (3, 2)))


def test_roi_pool_reads_nothing_outside_the_input_whatever_the_rois(device):
    # The input sits in NaN: any read outside its elements would make a NaN output.
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 6, 5)).astype(np.float32)
    wild = [[0, -1e30, -3e38, 1e30, 3e38], [1, 3e38, 3e38, -3e38, -3e38], [1.9, -2**31, 0, 2**31, 5],
            [0, 4, 5, 1e9, 1e9], [0, -1e9, -1e9, 0, 0], [-0.9, 2, 2, 1e20, 3], [1, 4.5, 5.5, 4.5, 5.5]]
    rois = np.array(wild, np.float32)
    for scale in (1.0, 0.0625, 7.0):
        xt = sentinel_input(device, x, layout_strides(x.shape, "gaps"))
        y = device.compile(pg.RoiPoolingDesc(xt.desc, pg.TensorDesc("float32", (1, 1, len(wild), 5)),
                                             spatial_scale=scale, pooled_size=(3, 4)))(xt, device.upload(rois.reshape(1, 1, -1, 5)))
        y = y.numpy()
        assert not np.isnan(y).any()
        assert same_bits(y, reference.roi_pool(x, rois, (3, 4), scale))


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_roi_covering_the_whole_input_is_the_global_max(device, dtype):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((3, 4, 7, 9)).astype(dtype)
    rois = np.array([[n, 0, 0, 8, 6] for n in (2, 0, 1)], dtype)
    y = pg.roi_pool(x, rois, (1, 1), device=device)
    np.testing.assert_array_equal(y[:, :, 0, 0], x[[2, 0, 1]].max(axis=(2, 3)))
    # as many bins as input elements: bins of one element reproduce the input
    y = pg.roi_pool(x, rois, (7, 9), device=device)
    assert same_bits(y, x[[2, 0, 1]])


def test_roi_in_image_pixels_with_spatial_scale_one_sixteenth(device):
    # A 128x128 image seen through a stride-16 feature map of 8x8: the ROI's pixel corners
    # (16, 32) .. (111, 95) scale to (1, 2) .. (6.9375 -> 7, 5.9375 -> 6).
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    rois = np.array([[1, 16, 32, 111, 95]], np.float32)
    y = pg.roi_pool(x, rois, (1, 1), spatial_scale=0.0625, device=device)
    np.testing.assert_array_equal(y[0, :, 0, 0], x[1, :, 2:7, 1:8].max(axis=(1, 2)))
    # 5 rows into 2 bins: [0, 3) and [2, 5); 7 columns into 3 bins: [0, 3), [2, 5), [4, 7)
    y = pg.roi_pool(x, rois, (2, 3), spatial_scale=0.0625, device=device)
    region = x[1, :, 2:7, 1:8]
    for i, (r0, r1) in enumerate([(0, 3), (2, 5)]):
        for j, (c0, c1) in enumerate([(0, 3), (2, 5), (4, 7)]):
            np.testing.assert_array_equal(y[0, :, i, j], region[:, r0:r1, c0:c1].max(axis=(1, 2)))


def test_roi_bins_clamped_to_the_input_and_empty_bins_give_zero(device):
    x = -np.arange(1, 2 * 64 + 1, dtype=np.float32).reshape(1, 2, 8, 8)  # all negative: a 0 can only be an empty bin
    # 19 x 19 region from (2, 2) in 2 x 2 bins: [2, 12) clamps to [2, 8), [11, 21) to [8, 8): empty
    y = pg.roi_pool(x, np.array([[0, 2, 2, 20, 20]]), (2, 2), device=device)
    np.testing.assert_array_equal(y[0, :, 0, 0], x[0, :, 2:8, 2:8].max(axis=(1, 2)))
    assert (y[0, :, 0, 1] == 0).all() and (y[0, :, 1, :] == 0).all()
    # a ROI wholly left of the input: every bin empty
    y = pg.roi_pool(x, np.array([[0, -10, 1, -5, 3]]), (2, 2), device=device)
    assert same_bits(y, np.zeros((1, 2, 2, 2), np.float32))


def test_roi_corners_round_half_away_from_zero(device):
    x = np.arange(1, 1 + 6 * 6, dtype=np.float32).reshape(1, 1, 6, 6)
    # 2.5 -> 3 and 0.5 -> 1 (ties to even would give 2 and 0): the single element x[1, 3]
    y = pg.roi_pool(x, np.array([[0, 2.5, 0.5, 2.5, 0.5]]), (1, 1), device=device)
    assert y.item() == x[0, 0, 1, 3]
    # 5 * 0.5 = 2.5 -> 3 and 3 * 0.5 = 1.5 -> 2 through spatial_scale
    y = pg.roi_pool(x, np.array([[0, 5, 3, 5, 3]]), (1, 1), spatial_scale=0.5, device=device)
    assert y.item() == x[0, 0, 2, 3]
    # The product is rounded to float32 first: 5 * 0.7f is 3.49999994 exactly but 3.5 in float32 -> 4
    y = pg.roi_pool(x, np.array([[0, 5, 0, 5, 0]]), (1, 1), spatial_scale=0.7, device=device)
    assert y.item() == x[0, 0, 0, 4]
    # Subnormal ROI values are not flushed to zero: 9e-39 * 3e38 = 2.7 -> 3
    y = pg.roi_pool(x, np.array([[0, 9e-39, 0, 9e-39, 0]]), (1, 1), spatial_scale=3e38, device=device)
    assert y.item() == x[0, 0, 0, 3]
    # -0.5 -> -1 (not -0): a region [-1, 0] of width 2 whose first bin is empty after clamping
    y = pg.roi_pool(x, np.array([[0, -0.5, 1, 0.4, 1]]), (1, 2), device=device)
    np.testing.assert_array_equal(y.ravel(), [0, x[0, 0, 1, 0]])
    # -1.5 -> -2: region [-2, 1], 4 wide, 2 bins [-2, 0) (empty) and [0, 2)
    y = pg.roi_pool(x, np.array([[0, -1.5, 2, 1, 2]]), (1, 2), device=device)
    np.testing.assert_array_equal(y.ravel(), [0, x[0, 0, 2, :2].max()])


def test_roi_batch_index_and_non_finite_rois(device):
    rng = np.random.default_rng(6)
    x = rng.standard_normal((3, 2, 4, 5)).astype(np.float32) + 10  # all positive: zeros are the invalid ROIs
    box = [0, 0, 4, 3]
    rois = np.array([[1.99] + box, [-0.5] + box, [2] + box, [-1] + box, [3] + box, [np.nan] + box,
                     [0, np.inf, 0, 4, 3], [1, 0, 0, 4, np.nan], [1, 0, 0, 4, 3e38]], np.float32)
    y = pg.roi_pool(x, rois, (1, 1), spatial_scale=2.0, device=device)[:, :, 0, 0]
    # truncated toward zero: 1.99 -> 1, -0.5 -> 0; the corners scale by 2 beyond the input and clamp
    np.testing.assert_array_equal(y[:3], x[[1, 0, 2]].max(axis=(2, 3)))
    # batch outside [0, N), a NaN anywhere, a non-finite corner or product: zeros
    assert (y[3:] == 0).all()
    assert same_bits(pg.roi_pool(x, rois, (1, 1), spatial_scale=2.0, device=device)[:, :, 0, 0], y)  # deterministic


def test_reversed_corners_give_a_one_element_region(device):
    x = np.arange(1, 1 + 5 * 5, dtype=np.float32).reshape(1, 1, 5, 5)
    # x2 < x1 and y2 < y1: region size max(x2 - x1 + 1, 1) = 1, starting at (x1, y1)
    y = pg.roi_pool(x, np.array([[0, 3, 2, 1, 0]]), (2, 2), device=device)
    np.testing.assert_array_equal(y[0, 0], np.full((2, 2), x[0, 0, 2, 3]))


def test_roi_pool_tensors_in_tensors_out(device):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 3, 6, 6)).astype(np.float16)
    rois = np.array([[1, 0, 1, 4, 5], [0, 2, 2, 3, 3]], np.float16)
    yt = pg.roi_pool(device.upload(x), device.upload(rois.reshape(1, 1, 2, 5)), (2, 3), spatial_scale=1.0)
    assert isinstance(yt, pg.Tensor) and yt.sizes == (2, 3, 2, 3)
    assert same_bits(yt.numpy(), reference.roi_pool(x, rois, (2, 3)))
    # a NumPy (R, 5) array of integer pixel boxes is converted to the input's type
    y = pg.roi_pool(device.upload(x), np.array([[1, 0, 1, 4, 5], [0, 2, 2, 3, 3]]), (2, 3))
    assert same_bits(y.numpy(), yt.numpy())


# -- validation (no GPU) -------------------------------------------------------------------

F32, F16 = pg.DataType.FLOAT32, pg.DataType.FLOAT16
X = pg.TensorDesc(F32, (2, 3, 8, 8))
ROI = pg.TensorDesc(F32, (1, 1, 4, 5))


def roi_desc(**changes):
    args = dict(input=X, roi=ROI, output=None, spatial_scale=0.5, pooled_size=(2, 3))
    args.update(changes)
    return pg.RoiPoolingDesc(**args)


def test_roi_pooling_desc_infers_the_output():
    desc = roi_desc()
    assert desc.output == pg.TensorDesc(F32, (4, 3, 2, 3))
    assert desc.pooled_size == (2, 3) and desc.spatial_scale == 0.5
    assert [r for r, _ in desc.input_tensors()] == ["input", "roi"]
    assert hash(desc) == hash(roi_desc(pooled_size=[2, 3]))


@pytest.mark.parametrize("changes, field", [
    (dict(roi=pg.TensorDesc(F32, (1, 1, 4, 4))), "roi.sizes"),
    (dict(roi=pg.TensorDesc(F32, (1, 2, 4, 5))), "roi.sizes"),
    (dict(roi=pg.TensorDesc(F32, (1, 4, 5))), "roi.sizes"),
    (dict(roi=pg.TensorDesc(F16, (1, 1, 4, 5))), "roi.data_type"),
    (dict(roi=np.zeros((4, 5))), "roi"),
    (dict(input=pg.TensorDesc(F32, (2, 3, 4, 8, 8))), "input.sizes"),
    (dict(input=pg.TensorDesc(F32, (2, 3, 8))), "input.sizes"),
    (dict(input=pg.TensorDesc("int32", (2, 3, 8, 8)), roi=pg.TensorDesc("int32", (1, 1, 4, 5))), "input.data_type"),
    (dict(pooled_size=(0, 3)), "pooled_size"),
    (dict(pooled_size=(2,)), "pooled_size"),
    (dict(pooled_size=(2, 3, 1)), "pooled_size"),
    (dict(pooled_size=(2, 1.5)), "pooled_size"),
    (dict(spatial_scale=0.0), "spatial_scale"),
    (dict(spatial_scale=-0.25), "spatial_scale"),
    (dict(spatial_scale=float("nan")), "spatial_scale"),
    (dict(spatial_scale=float("inf")), "spatial_scale"),
    (dict(spatial_scale=1e39), "spatial_scale"),   # infinite in float32
    (dict(spatial_scale=1e-50), "spatial_scale"),  # zero in float32
    (dict(spatial_scale="0.5"), "spatial_scale"),
    (dict(spatial_scale=True), "spatial_scale"),
    (dict(output=pg.TensorDesc(F32, (4, 3, 3, 2))), "output.sizes"),
    (dict(output=pg.TensorDesc(F32, (2, 3, 2, 3))), "output.sizes"),
    (dict(output=pg.TensorDesc(F16, (4, 3, 2, 3))), "output.data_type"),
    (dict(output=pg.TensorDesc(F32, (4, 3, 2, 3), strides=(0, 6, 3, 1))), "output.strides"),
])
def test_roi_pooling_validation_names_the_field(changes, field):
    with pytest.raises(pg.ValidationError) as e:
        roi_desc(**changes)
    assert e.value.field == field


@pytest.mark.parametrize("rois", [np.zeros((3, 4)), np.zeros((0, 5)), np.zeros(5), np.zeros((1, 2, 3, 5))])
def test_roi_pool_refuses_badly_shaped_rois(rois):
    with pytest.raises(pg.ValidationError) as e:
        pg.roi_pool(np.zeros((1, 1, 4, 4), np.float32), rois, (2, 2))
    assert e.value.field == "rois"
