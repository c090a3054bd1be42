"""ROI align (pg.RoiAlignDesc, pg.RoiAlign1Desc, pg.roi_align) against the NumPy reference
(tests/roi_align_reference.py, itself checked against ONNX Runtime in test_onnx_roi_align.py),
on every adapter: both reductions and interpolations, the pixel offsets, corner alignment,
the out-of-bounds value, sample limits, batch index types, data types, split walks."""

import dataclasses

import numpy as np
import pytest

import poolgpu as pg
from poolgpu import kernels
from helpers import tuned_for
from roi_align_reference import roi_align as reference, torchvision_roi_align

RNG = np.random.default_rng(7)
X = RNG.standard_normal((2, 3, 7, 9)).astype(np.float32)
ROIS = np.array([
    [0.5, 1.0, 6.5, 5.0],      # inside
    [-2.0, -1.5, 3.0, 2.5],    # partly outside at the top left
    [5.0, 4.0, 14.0, 11.0],    # partly outside at the bottom right
    [6.0, 5.0, 1.0, 2.0],      # inverted: mirrored
    [3.0, 3.0, 3.0, 3.0],      # empty: one point
    [-9.0, -9.0, -4.0, -3.0],  # wholly outside
    [1.2, 0.3, 1.4, 6.8],      # thinner than an element
], np.float32)
BATCH = np.array([0, 1, 1, 0, 1, 0, 1])


def run(device, x, rois, batch, size, **fields):
    xt, rt = device.upload(x), device.upload(rois.reshape(1, 1, -1, 4).astype(x.dtype))
    bt = device.upload(np.asarray(batch).reshape(1, 1, -1).astype(fields.pop("batch_type", np.uint32)))
    cls = pg.RoiAlignDesc if fields.pop("version", 1) == 0 else pg.RoiAlign1Desc
    desc = cls(xt.desc, rt.desc, bt.desc, output_size=size, **fields)
    return device.compile(desc)(xt, rt, bt).numpy()


CASES = [
    dict(),
    dict(reduction_function="max"),
    dict(reduction_function="max", weighted_corner_max=True),
    dict(interpolation_mode="nearest_neighbor"),
    dict(interpolation_mode="nearest_neighbor", reduction_function="max"),
    dict(minimum_samples_per_output=2, maximum_samples_per_output=2),
    dict(minimum_samples_per_output=0, input_pixel_offset=0.0),
    dict(minimum_samples_per_output=3, maximum_samples_per_output=5, spatial_scale_x=0.5, spatial_scale_y=2.0),
    dict(input_pixel_offset=0.0, output_pixel_offset=0.0, minimum_region_size=1.0),
    dict(align_regions_to_corners=True),
    dict(align_regions_to_corners=True, minimum_samples_per_output=2, maximum_samples_per_output=2),
    dict(out_of_bounds_input_value=2.5),
    dict(out_of_bounds_input_value=-7.0, reduction_function="max"),
]
NAMES = {"reduction_function": "reduce", "interpolation_mode": "interp", "weighted_corner_max": "weighted",
         "minimum_samples_per_output": "min", "maximum_samples_per_output": "max", "input_pixel_offset": "in",
         "output_pixel_offset": "out", "spatial_scale_x": "sx", "spatial_scale_y": "sy",
         "minimum_region_size": "region", "align_regions_to_corners": "corners", "out_of_bounds_input_value": "oob"}


def reference_of(x, rois, batch, size, fields):
    f = dict(fields)
    return reference(x, rois, batch, size, f.get("reduction_function", "average"),
                     f.get("interpolation_mode", "linear"), f.get("spatial_scale_x", 1.0),
                     f.get("spatial_scale_y", 1.0), f.get("input_pixel_offset", 0.5), f.get("output_pixel_offset", -0.5),
                     f.get("out_of_bounds_input_value", 0.0), f.get("minimum_samples_per_output", 1),
                     f.get("maximum_samples_per_output", 2**32 - 1), f.get("align_regions_to_corners", False),
                     f.get("minimum_region_size"), f.get("weighted_corner_max", False))


@pytest.mark.parametrize("fields", CASES, ids=["-".join(f"{NAMES[k]}{v}" for k, v in c.items()) or "default"
                                               for c in CASES])
@pytest.mark.parametrize("size", [(2, 3), (1, 1), (4, 2)])
def test_matches_reference(device, fields, size):
    got = run(device, X, ROIS, BATCH, size, **fields)
    np.testing.assert_allclose(got, reference_of(X, ROIS, BATCH, size, fields), rtol=2e-6, atol=2e-6)


def test_roi_align_is_roi_align1_at_half_pixels(device):
    for reduce in ("average", "max"):
        a = run(device, X, ROIS, BATCH, (3, 3), version=0, reduction_function=reduce)
        b = run(device, X, ROIS, BATCH, (3, 3), reduction_function=reduce)
        assert np.array_equal(a, b)


def test_the_documented_nearest_neighbour_example(device):
    # DirectML's ROI_ALIGN_GRAD page: four 2 x 2 crops of a 4 x 4 input, 1 x 3 outputs
    x = np.arange(1, 17, dtype=np.float32).reshape(1, 1, 4, 4)
    rois = np.array([[0, 0, 2, 2], [2, 0, 4, 2], [0, 2, 2, 4], [2, 2, 4, 4]], np.float32)
    got = run(device, x, rois, [0, 0, 0, 0], (1, 3), interpolation_mode="nearest_neighbor",
              minimum_samples_per_output=1, maximum_samples_per_output=1)
    assert got.reshape(4, 3).tolist() == [[1, 1, 2], [3, 3, 4], [9, 9, 10], [11, 11, 12]]


@pytest.mark.parametrize("batch_type", [np.uint32, np.int32, np.uint64, np.int64])
def test_batch_index_types_and_indices_outside(device, batch_type):
    batch = np.array([0, 1, 2, 1, 0, 1, 0]) if batch_type in (np.uint32, np.uint64) else np.array([0, 1, -1, 1, 0, 1, 5])
    got = run(device, X, ROIS, batch, (2, 2), batch_type=batch_type, out_of_bounds_input_value=3.0)
    assert np.all(got[2] == 3.0)   # every sample of an image that is not there reads the value
    keep = [0, 1, 3, 4, 5]
    np.testing.assert_allclose(got[keep], reference_of(X, ROIS[keep], batch[keep], (2, 2),
                                                       {"out_of_bounds_input_value": 3.0}), rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_types(device, dtype):
    if dtype == "bfloat16":
        ml_dtypes = pytest.importorskip("ml_dtypes")
        np_type = ml_dtypes.bfloat16
    else:
        np_type = np.float16
    x = X.astype(np_type)
    rois = ROIS.astype(np_type)
    got = pg.roi_align(x, rois, BATCH, (2, 3), device=device)
    assert got.dtype == np_type
    boxes = np.concatenate([BATCH[:, None], rois.astype(np.float32)], axis=1)
    want = torchvision_roi_align(x.astype(np.float32), boxes, (2, 3), aligned=True).astype(np_type)
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("aligned", [True, False])
@pytest.mark.parametrize("ratio", [0, 2, -1])
def test_function_as_torchvision(device, aligned, ratio):
    boxes = np.concatenate([BATCH[:, None], ROIS], axis=1).astype(np.float32)
    got = pg.roi_align(X, ROIS, BATCH, (3, 2), 0.5, ratio, aligned=aligned, device=device)
    np.testing.assert_allclose(got, torchvision_roi_align(X, boxes, (3, 2), 0.5, ratio, aligned), rtol=2e-6,
                               atol=2e-6)


def test_tensors_in_tensors_out(device):
    x, r = device.upload(X), device.upload(ROIS.reshape(1, 1, -1, 4))
    b = device.upload(BATCH.astype(np.int64).reshape(1, 1, -1))
    y = pg.roi_align(x, r, b, 2, mode="max")
    assert isinstance(y, pg.Tensor)
    assert np.array_equal(y.numpy(), pg.roi_align(X, ROIS, BATCH, 2, mode="max", device=device))


def test_long_bins_split_and_merge(device):
    # A ROI over the whole of a long input with one output: hundreds of samples per output;
    # at a small loop budget the walk splits them over parts and merges in sample order.
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 2, 5, 2000)).astype(np.float32)
    rois = np.array([[0, 0, 2000, 5], [-40, -3, 2030, 9], [20, 1, 21, 4]], np.float32)
    tuning = dataclasses.replace(device.tuning, loop_budget=256)
    for fields in (dict(), dict(reduction_function="max"), dict(minimum_samples_per_output=0)):
        desc = pg.RoiAlign1Desc(pg.TensorDesc("float32", x.shape), pg.TensorDesc("float32", (1, 1, 3, 4)),
                                pg.TensorDesc("uint32", (1, 1, 3)), output_size=(1, 2), **fields)
        files = [p.kernel.file for p in kernels.program_for(desc, tuning, None).passes]
        assert files.count("roi_align_merge.wgsl") >= 2   # a split walk and merges in levels
        whole = run(device, x, rois, [0, 0, 0], (1, 2), **fields)
        np.testing.assert_allclose(whole, reference_of(x, rois, [0, 0, 0], (1, 2), fields), rtol=1e-5, atol=1e-6)
        with tuned_for(device, tuning):
            split = run(device, x, rois, [0, 0, 0], (1, 2), **fields)
        np.testing.assert_allclose(split, whole, rtol=1e-5, atol=1e-6)
        if fields.get("reduction_function") == "max":
            assert np.array_equal(split, whole)


@pytest.mark.parametrize("data_type", [np.float32, np.float16])
def test_four_channels_per_invocation(device, data_type):
    # C a multiple of 4: an invocation samples a bin of four channels; each channel's result
    # has the bits of that channel alone (one per invocation), and the reference's values
    x = RNG.standard_normal((2, 8, 7, 9)).astype(data_type)
    tuning = dataclasses.replace(device.tuning, roi_align_channels=4)
    for fields in CASES:
        desc = pg.RoiAlign1Desc(pg.TensorDesc(x.dtype.name, x.shape), pg.TensorDesc(x.dtype.name, (1, 1, 7, 4)),
                                pg.TensorDesc("uint32", (1, 1, 7)), output_size=(2, 3), **fields)
        walk = kernels.program_for(desc, tuning, None).passes[1]
        assert dict(walk.constants)["CHANNELS"] == 4
        with tuned_for(device, tuning):
            got = run(device, x, ROIS, BATCH, (2, 3), **fields)
        for k in range(8):
            alone = run(device, np.ascontiguousarray(x[:, k:k + 1]), ROIS, BATCH, (2, 3), **fields)
            assert np.array_equal(got[:, k:k + 1].view(np.uint16 if data_type == np.float16 else np.uint32),
                                  alone.view(np.uint16 if data_type == np.float16 else np.uint32)), (fields, k)
        if data_type == np.float32:
            np.testing.assert_allclose(got, reference_of(x, ROIS, BATCH, (2, 3), fields), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("data_type", [np.float32, np.float16])
def test_channels_last_walk(device, data_type):
    # The average or maximum of samples (bilinear or nearest) over a packed channels-last input
    # (C a multiple of 4): the input itself where it is one (at an odd offset: the fallback),
    # else a copy of it (packed, with gaps) where the output has at least the input's element
    # count; the buffers NaN outside the input's elements, so that a read there would show.
    # The bits of the walk over the input as it is, in every case the walk takes and those it
    # leaves (outputs smaller than the input, copied)
    from helpers import layout_strides, same_bits, sentinel_input
    x = RNG.standard_normal((2, 8, 7, 9)).astype(data_type)
    x[0, 5, 2, 3] = x[1, 2, 4, 6] = np.nan   # (the maximum's NaN rule, channel by channel)
    on = dataclasses.replace(device.tuning, roi_align_channels_last=True)
    off = dataclasses.replace(device.tuning, roi_align_channels_last=False)
    rois = device.upload(ROIS.reshape(1, 1, -1, 4).astype(data_type))
    batch = device.upload(BATCH.reshape(1, 1, -1).astype(np.uint32))
    for fields in CASES:
        for layout, lead, size in (("packed", 16, (5, 6)), ("gaps", 16, (5, 6)), ("packed", 16, (2, 3)),
                                   ("channels_last", 16, (2, 3)), ("channels_last", 2 * x.itemsize, (5, 6))):
            xt = sentinel_input(device, x, layout_strides(x.shape, layout), lead_bytes=lead)
            desc = pg.RoiAlign1Desc(xt.desc, rois.desc, batch.desc, output_size=size, **fields)
            copied = layout != "channels_last"
            walked = not copied or desc.output.element_count >= x.size   # (2 x 3: 336 outputs of 1,008)
            files = [p.kernel.file for p in kernels.program_for(desc, on, None).passes]
            assert ("roi_align_channels_last.wgsl" in files) == walked, (fields, files)
            assert ("to_channels_last.wgsl" in files) == (walked and copied), (fields, files)
            got = {}
            for tuning in (on, off):
                with tuned_for(device, tuning):
                    got[tuning] = device.compile(desc)(xt, rois, batch).numpy()
            assert same_bits(got[on], got[off]), (fields, layout)
        if data_type == np.float32:
            np.testing.assert_allclose(got[on], reference_of(x, ROIS, BATCH, (5, 6), fields), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("channels_last", [False, True])
def test_weighted_maximum_keeps_a_nan_first_corner(device, channels_last):
    # ONNX Runtime's max(max(max(a, b), c), d) keeps a NaN a (std::max) and drops a NaN b, c
    # or d: on every adapter (OpenGL's compiler once made the comparisons a max(), which drops
    # a NaN a), by both walks
    x = np.arange(2 * 4 * 6 * 6, dtype=np.float32).reshape(2, 4, 6, 6) / 10
    x[0, 1, 2, 2] = x[0, 2, 3, 3] = x[1, 3, 1, 4] = np.nan
    rois = np.array([[1.25, 1.25, 4.5, 4.5], [0.0, 0.0, 5.0, 5.0], [2.5, 0.5, 5.5, 3.5]], np.float32)
    batch = [0, 0, 1]
    fields = dict(reduction_function="max", weighted_corner_max=True)
    tuning = dataclasses.replace(device.tuning, roi_align_channels_last=channels_last)
    with tuned_for(device, tuning):
        got = run(device, x, rois, batch, (4, 4), **fields)
    want = reference_of(x, rois, batch, (4, 4), fields)
    assert np.isnan(want).any() and not np.isnan(want).all()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_same_bits_run_after_run(device):
    first = pg.roi_align(X, ROIS, BATCH, (3, 3), device=device)
    for _ in range(3):
        assert np.array_equal(first.view(np.uint32), pg.roi_align(X, ROIS, BATCH, (3, 3), device=device).view(np.uint32))


GRAD_CASES = [dict(), dict(reduction_function="max"), dict(reduction_function="max", weighted_corner_max=True),
              dict(interpolation_mode="nearest_neighbor"),
              dict(interpolation_mode="nearest_neighbor", reduction_function="max"),
              dict(minimum_samples_per_output=2, maximum_samples_per_output=3, spatial_scale_x=0.7),
              dict(minimum_samples_per_output=0, input_pixel_offset=0.0, minimum_region_size=1.0),
              dict(align_regions_to_corners=True)]


def gradient(device, x, rois, batch, dy, **fields):
    xt, rt = device.upload(x), device.upload(rois.reshape(1, 1, -1, 4).astype(x.dtype))
    bt, dyt = device.upload(np.asarray(batch).reshape(1, 1, -1).astype(np.uint32)), device.upload(dy)
    desc = pg.RoiAlignGradDesc(xt.desc, dyt.desc, rt.desc, bt.desc, **fields)
    return device.compile(desc)(xt, dyt, rt, bt).numpy()


def reference_grad(x, rois, batch, dy, fields):
    from roi_align_reference import roi_align_grad
    f = dict(fields)
    return roi_align_grad(x, rois, batch, dy, dy.shape[2:], f.get("reduction_function", "average"),
                          f.get("interpolation_mode", "linear"), f.get("spatial_scale_x", 1.0),
                          f.get("spatial_scale_y", 1.0), f.get("input_pixel_offset", 0.5),
                          f.get("output_pixel_offset", -0.5), f.get("minimum_samples_per_output", 1),
                          f.get("maximum_samples_per_output", 2**32 - 1), f.get("align_regions_to_corners", False),
                          f.get("minimum_region_size"), f.get("weighted_corner_max", False))


@pytest.mark.parametrize("fields", GRAD_CASES, ids=["-".join(f"{NAMES[k]}{v}" for k, v in c.items()) or "default"
                                                    for c in GRAD_CASES])
def test_gradient_matches_reference(device, fields):
    dy = np.random.default_rng(5).standard_normal((len(ROIS), 3, 3, 2)).astype(np.float32)
    got = gradient(device, X, ROIS, BATCH, dy, **fields)
    np.testing.assert_allclose(got, reference_grad(X, ROIS, BATCH, dy, fields), rtol=1e-5, atol=1e-5)
    assert np.array_equal(got, gradient(device, X, ROIS, BATCH, dy, **fields))   # the same bits again


def test_gradient_of_many_rois_splits(device):
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 2, 12, 10)).astype(np.float32)
    rois = rng.uniform(-3, 14, (90, 4)).astype(np.float32)
    batch = rng.integers(0, 2, 90)
    dy = rng.standard_normal((90, 2, 2, 2)).astype(np.float32)
    whole = gradient(device, x, rois, batch, dy)
    np.testing.assert_allclose(whole, reference_grad(x, rois, batch, dy, {}), rtol=1e-4, atol=1e-5)
    for channels in (1, 64):   # the gather by invocations, by workgroups of channels
        tuning = dataclasses.replace(device.tuning, loop_budget=256, roi_align_grad_channels=channels)
        with tuned_for(device, tuning):
            split = gradient(device, x, rois, batch, dy)
        # runs of whole ROIs: each element's sum continues from the run before it, one chain
        # of additions, so the same bits as in one run
        assert np.array_equal(split, whole), channels


def test_gradient_by_blocks(device):
    """The gather by 8 x 8 blocks of dx: boxes spanning many blocks (adaptive samples: the
    ROIs chain through scratch in runs), partly and wholly outside the map, and 70 boxes on
    one block (three words of its tile's mask); then runs of one ROI's output rows, and of one
    row's columns (smaller loop budgets)."""
    rng = np.random.default_rng(21)
    x = rng.standard_normal((2, 2, 19, 27)).astype(np.float32)
    spanning = np.array([[-3, -2, 29, 20], [1.5, 0.5, 25.5, 18.0], [14, 9, 40, 33], [-20, -20, -5, -3],
                         [28, 20, 40, 33], [10, -10, 20, -2], [26.2, 3, 26.4, 16]], np.float32)
    corner = rng.uniform(8, 15, (70, 2))
    one_block = np.concatenate([corner, corner + rng.uniform(0, 4, (70, 2))], axis=1).astype(np.float32)
    rois = np.concatenate([one_block[:35], spanning, one_block[35:]])
    batch = np.concatenate([np.zeros(35, int), rng.integers(0, 2, len(spanning)), np.ones(35, int)])
    dy = rng.standard_normal((len(rois), 2, 3, 4)).astype(np.float32)
    for fields in (dict(), dict(reduction_function="max")):
        want = reference_grad(x, rois, batch, dy, fields)
        got = gradient(device, x, rois, batch, dy, **fields)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
        assert np.array_equal(got, gradient(device, x, rois, batch, dy, **fields))   # the same bits again
    few = rois[33:37], batch[33:37], dy[33:37]   # (some runs of the outputs of one ROI each)
    want = reference_grad(x, *few[:2], few[2], {})
    for budget in (1024, 256):   # runs of output rows, then of columns
        with tuned_for(device, dataclasses.replace(device.tuning, loop_budget=budget)):
            np.testing.assert_allclose(gradient(device, x, *few), want, rtol=1e-4, atol=1e-5)


def _gather_kernel(desc, tuning) -> list:
    return [p for p in kernels.program_for(desc, tuning, None).passes if "roi_align_grad" in p.kernel.file]


def test_gradient_by_workgroups_of_channels(device):
    """The average's gather by workgroups of channels (Tuning.roi_align_grad_channels), the
    samples' weights computed once per workgroup: the bits of the gather by invocations, for
    C = 5 (lanes past C idle), workgroups of 2, 8 and (capped at C's next power of two) 64
    channels, and boxes spanning many blocks, outside the map, and 70 on one block; in runs
    of the ROIs (smaller loop budgets) too.  The maximum, and outputs past 32 rows or columns,
    keep the gather by invocations."""
    rng = np.random.default_rng(21)
    x = rng.standard_normal((2, 5, 19, 27)).astype(np.float32)
    spanning = np.array([[-3, -2, 29, 20], [1.5, 0.5, 25.5, 18.0], [14, 9, 40, 33], [-20, -20, -5, -3],
                         [26.2, 3, 26.4, 16]], np.float32)
    corner = rng.uniform(8, 15, (70, 2))
    rois = np.concatenate([spanning, np.concatenate([corner, corner + rng.uniform(0, 4, (70, 2))], axis=1)])
    rois = rois.astype(np.float32)
    batch = np.concatenate([rng.integers(0, 2, len(spanning)), np.arange(70) % 2])
    dy = rng.standard_normal((len(rois), 5, 3, 4)).astype(np.float32)
    for fields in [f for f in GRAD_CASES if f.get("reduction_function") != "max"]:
        with tuned_for(device, dataclasses.replace(device.tuning, roi_align_grad_channels=1)):
            alone = gradient(device, x, rois, batch, dy, **fields)
        for lanes, budget in ((2, 32768), (8, 32768), (64, 32768), (8, 2048)):
            tuning = dataclasses.replace(device.tuning, roi_align_grad_channels=lanes, loop_budget=budget)
            desc = pg.RoiAlignGradDesc(pg.TensorDesc("float32", x.shape), pg.TensorDesc("float32", dy.shape),
                                       pg.TensorDesc("float32", (1, 1, len(rois), 4)),
                                       pg.TensorDesc("uint32", (1, 1, len(rois))), **fields)
            gathers = _gather_kernel(desc, tuning)
            assert {p.kernel.file for p in gathers} == {"roi_align_grad_shared.wgsl"}
            assert dict(gathers[0].constants)["WG_X"] == min(lanes, 8)
            assert (len(gathers) > 1) == (budget < 32768)   # (runs of the ROIs)
            with tuned_for(device, tuning):
                got = gradient(device, x, rois, batch, dy, **fields)
            assert np.array_equal(got, alone), (fields, lanes, budget)
    tuning = dataclasses.replace(device.tuning, roi_align_grad_channels=64)
    for fields, size in ((dict(reduction_function="max"), (3, 4)), (dict(), (3, 33))):
        desc = pg.RoiAlignGradDesc(pg.TensorDesc("float32", x.shape), pg.TensorDesc("float32", (4, 5) + size),
                                   pg.TensorDesc("float32", (1, 1, 4, 4)), pg.TensorDesc("uint32", (1, 1, 4)),
                                   **fields)
        assert {p.kernel.file for p in _gather_kernel(desc, tuning)} == {"roi_align_grad.wgsl"}


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_gradient_half_types(device, dtype):
    if dtype == "bfloat16":
        np_type = pytest.importorskip("ml_dtypes").bfloat16
    else:
        np_type = np.float16
    x, rois = X.astype(np_type), ROIS.astype(np_type)
    dy = np.random.default_rng(6).standard_normal((len(ROIS), 3, 3, 2)).astype(np_type)
    got = gradient(device, x, ROIS, BATCH, dy)
    assert got.dtype == np_type
    want = reference_grad(x.astype(np.float32), rois.astype(np.float32), BATCH, dy.astype(np.float32), {})
    np.testing.assert_allclose(got.astype(np.float32), want, rtol=1e-2, atol=1e-2)


def test_gradient_gathers_declare_their_loops_and_fit_the_budget():
    """roi_align_grad.wgsl's passes (runs of ROIs, of one ROI's rows, of one row's columns;
    the samples searched near each block or not): every pass's declared loops fit its
    tuning's budget, and they name the loops of the WGSL."""
    import re
    from poolgpu.kernels.split import loop_total
    seen = set()
    for budget in (32768, 1024):
        tuning = dataclasses.replace(pg.Tuning.for_cpu(), loop_budget=budget)
        for rois, size, sizes, fields in ((2000, (7, 7), (2, 4, 30, 40), {}), (5, (7, 7), (1, 2, 300, 400), {}),
                                          (40, (14, 14), (1, 2, 300, 400), dict(reduction_function="max")),
                                          (3, (64, 64), (1, 2, 100, 100), dict(maximum_samples_per_output=2))):
            dy = pg.TensorDesc("bfloat16", (rois, sizes[1]) + size)
            x = pg.TensorDesc("bfloat16", sizes) if fields.get("reduction_function") else None
            desc = pg.RoiAlignGradDesc(x, dy, pg.TensorDesc("bfloat16", (1, 1, rois, 4)),
                                       pg.TensorDesc("int64", (1, 1, rois)), input_sizes=sizes, **fields)
            gathers = [p for p in kernels.program_for(desc, tuning, None).passes
                       if p.kernel.file == "roi_align_grad.wgsl"]
            for p in gathers:
                assert loop_total(p.kernel, p.constants, p.params) <= budget
                seen.add(frozenset(p.kernel.loops(dict(p.constants), p.params)))
    source = re.sub(r"//[^\n]*", "", kernels.roi_align.GATHER.sources())
    assert seen == {frozenset(re.findall(r"\bfor\s*\(\s*var\s+(\w+)", source))}


def test_gradient_descriptions_are_checked():
    x, dy = pg.TensorDesc("float32", (1, 2, 5, 5)), pg.TensorDesc("float32", (3, 2, 2, 2))
    roi, batch = pg.TensorDesc("float32", (1, 1, 3, 4)), pg.TensorDesc("int64", (1, 1, 3))
    assert pg.RoiAlignGradDesc(None, dy, roi, batch, input_sizes=(1, 2, 5, 5)).output_gradient.sizes == (1, 2, 5, 5)
    for fields, field in ((dict(output_roi_gradient=roi), "output_roi_gradient"),
                          (dict(reduction_function="max", input_sizes=(1, 2, 5, 5)), "input"),
                          (dict(), "input_sizes"), (dict(input_sizes=(1, 3, 5, 5)), "input_gradient"),
                          (dict(input_sizes=(1, 2, 5, 5), minimum_samples_per_output=3,
                                maximum_samples_per_output=2), "minimum_samples_per_output")):
        with pytest.raises(pg.ValidationError) as e:
            pg.RoiAlignGradDesc(None, dy, roi, batch, **fields)
        assert e.value.field.split(".")[0] == field
    with pytest.raises(pg.ValidationError) as e:
        pg.RoiAlign1Desc(x, roi, pg.TensorDesc("int16", (1, 1, 3)), output_size=2)
    assert e.value.field == "batch_indices.data_type"
    with pytest.raises(pg.ValidationError) as e:
        pg.RoiAlign1Desc(x, pg.TensorDesc("float32", (1, 3, 5)), batch, output_size=2)
    assert e.value.field == "roi.sizes"
    with pytest.raises(pg.ValidationError) as e:
        pg.RoiAlign1Desc(x, roi, batch)
    assert e.value.field == "output_size"
