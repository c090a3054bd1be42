"""The GPU kernel variants: Tuning choices written for GPUs, each taken by a preset once its kind
of adapter measured it (docs/performance.md, "Kernel variants"), run on every adapter under
both presets against the NumPy reference, and where a variant promises it, with the same bits
as the kernels it replaces (sums of whole planes within their last bits)."""

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import poolgpu as pg
import reference
import test_scale
from helpers import (CPU_TAKEN, GPU_TAKEN, VARIANT_FIELDS, VARIANTS_LEFT, assert_canaries_intact, canary_tensor,
                     forward_walk, layout_strides, random_values, same_bits, sentinel_input, tuned_for, with_variants,
                     without_variants)

PRESETS = ("cpu", "gpu")


def outputs(device, desc, arrays, tuning, strides=None) -> tuple:
    """``desc``'s outputs (NumPy) computed with the kernels ``tuning`` chooses (the arrays
    uploaded at ``strides``)."""
    op = pg.Op(device, desc, tuning)
    result = op(*(device.upload(a, strides=strides) for a in arrays))
    return tuple(t.numpy() for t in (result if isinstance(result, tuple) else (result,)))


def test_each_preset_takes_the_variants_its_adapters_measured():
    for preset, taken in (("cpu", CPU_TAKEN), ("gpu", GPU_TAKEN)):
        tuning = pg.Tuning.preset(preset)
        for field, value in VARIANT_FIELDS.items():
            expected = value if field in taken else VARIANTS_LEFT[field]
            assert getattr(tuning, field) == expected, (preset, field)
    with pytest.raises(pg.ValidationError, match="plane_chunks"):
        pg.Tuning(plane_chunks=3)


def _merged_sums(desc) -> bool:
    """Whether ``desc`` sums whole planes (average or Lp pooling to one output per plane):
    tunings merging different lanes or parts of them may round its last bit differently
    (docs/semantics.md)."""
    sums = desc.kernel in ("average_pool", "lp_pool", "adaptive_average_pool")
    return sums and all(s == 1 for s in desc.output.sizes[2:])


def same_or_last_bits(got, expected) -> bool:
    """The same bits, or for sums of whole planes the same within 2 ulp (NaN where NaN)."""
    if same_bits(got, expected):
        return True
    nan = np.isnan(expected)
    if not np.array_equal(np.isnan(got), nan):
        return False
    try:
        np.testing.assert_array_max_ulp(got[~nan], expected[~nan], maxulp=2)
    except AssertionError:
        return False
    return True


# Every operator, small and in chunks of planes (tensors larger than a binding: the grids
# restricted to a run of planes), with every variant taken: the bits of the kernels they
# replace (sums of whole planes, which packed planes merge over other lanes, within their
# last bits).
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=test_scale.chunk_cases(), preset=st.sampled_from(PRESETS))
def test_every_operator_with_the_variants_gives_the_bits_of_the_kernels_they_replace(device, case, preset):
    try:
        desc, arrays = test_scale.describe(case)
    except pg.ValidationError:
        assume(False)
    with tuned_for(device, without_variants(preset)):
        _, expected = test_scale.run(device, desc, arrays)
    with tuned_for(device, with_variants(preset)):
        _, got = test_scale.run(device, desc, arrays)
    small = test_scale.smallest_bounded(device, desc)
    with tuned_for(small, with_variants(preset)):
        _, chunked = test_scale.run(small, desc, arrays)
    for a, b, c in zip(got, chunked, expected):
        assert same_bits(a, b)
        assert same_or_last_bits(a, c) if _merged_sums(desc) else same_bits(a, c)


# The plane walk, each lane loading 2 or 4 chunks per step: planes whose lanes take several
# steps and a ragged rest (under both presets' lanes: 8 and 256), planes starting between
# chunks (9003 elements) and split into runs merged by a second pass.
@pytest.mark.parametrize("preset, chunks", [("cpu", 4), ("gpu", 2)])
def test_the_plane_walk_in_steps_of_chunks(device, preset, chunks):
    base = pg.Tuning.preset(preset)
    rng = np.random.default_rng(chunks)
    for plane, part, desc_class in (((64, 80), 16384, pg.AveragePooling1Desc), ((9003,), 4096, pg.LpPooling1Desc)):
        tuning = dataclasses.replace(base, plane_chunks=chunks, plane_part=part)
        x = random_values(pg.DataType.FLOAT32, (2, 3) + plane, rng, specials=False)
        x_desc = pg.TensorDesc("float32", x.shape)
        max_desc = pg.MaxPooling2Desc(x_desc, output_indices="uint32", window_size=plane)
        assert forward_walk(max_desc, tuning) == "plane"
        y, idx = outputs(device, max_desc, (x,), tuning)
        y_ref, i_ref = reference.max_pool(x, plane)
        assert same_bits(y, y_ref)
        np.testing.assert_array_equal(idx, i_ref)
        # each lane feeds its chunks in the same order: the same bits as one chunk per step
        desc = desc_class(x_desc, window_size=plane, **({"p": 2} if desc_class is pg.LpPooling1Desc else {}))
        got, = outputs(device, desc, (x,), tuning)
        assert same_bits(got, outputs(device, desc, (x,), dataclasses.replace(tuning, plane_chunks=1))[0])
        expected = (reference.lp_pool(x, plane, p=2) if desc_class is pg.LpPooling1Desc else
                    reference.average_pool(x, plane))
        np.testing.assert_allclose(got, expected, rtol=1e-5)


# The channels walk written out: blocks of 2 x 2 outputs over 5 x 5 input positions (3x3
# stride 2), spans of 6 (dilated), 1-D and 3-D windows, and a span of 7 (left to the loops).
CHANNELS_GEOMETRIES = (
    ((2, 8, 9, 10), dict(window_size=(3, 3), strides=(2, 2), start_padding=(1, 1), end_padding=(1, 1))),
    ((1, 4, 8, 9), dict(window_size=(2, 2), strides=(2, 2), start_padding=(0, 0), end_padding=(1, 0))),
    ((1, 8, 9, 9), dict(window_size=(3, 3), dilations=(2, 2), start_padding=(1, 0), end_padding=(0, 1))),
    ((1, 4, 13), dict(window_size=(4,), strides=(1,), dilations=(2,), start_padding=(1,), end_padding=(2,))),
    ((1, 4, 5, 6, 7), dict(window_size=(3, 2, 3), strides=(2, 1, 2), start_padding=(1, 0, 1), end_padding=(1, 1, 1))),
)


@pytest.mark.parametrize("preset", PRESETS)
def test_the_channels_walk_written_out(device, preset):
    tuning = dataclasses.replace(pg.Tuning.preset(preset), channels_written_out=True)
    rng = np.random.default_rng(7)
    written_out = 0
    for k, (sizes, geometry) in enumerate(CHANNELS_GEOMETRIES):
        data_type = (pg.DataType.FLOAT32, pg.DataType.FLOAT16, pg.DataType.INT8)[k % 3]
        x = random_values(data_type, sizes, rng)
        x_desc = pg.TensorDesc(data_type, sizes, layout_strides(sizes, "channels_last"))
        out = pg.MaxPooling2Desc(x_desc, **geometry).output.sizes
        desc = pg.MaxPooling2Desc(x_desc, pg.TensorDesc(data_type, out, layout_strides(out, "channels_last")),
                                  pg.TensorDesc("uint32", out, layout_strides(out, "channels_last")), **geometry)
        assert forward_walk(desc, tuning) == "channels"
        written_out += dict(pg.kernels.program_for(desc, tuning).passes[0].constants).get("WRITTEN_OUT", False)
        y, idx = outputs(device, desc, (x,), tuning, x_desc.strides)
        y_ref, i_ref = reference.max_pool(x, **geometry)
        assert same_bits(y, y_ref)
        np.testing.assert_array_equal(idx, i_ref)
        if data_type.is_float:  # the same taps in the same order: the loops' bits
            desc = pg.AveragePooling1Desc(x_desc, **geometry)
            got, = outputs(device, desc, (x,), tuning, x_desc.strides)
            loops = dataclasses.replace(tuning, channels_written_out=False)
            assert same_bits(got, outputs(device, desc, (x,), loops, x_desc.strides)[0])
    assert written_out == len(CHANNELS_GEOMETRIES) - 1


@pytest.mark.parametrize("preset", PRESETS)
def test_whole_workgroups_numbered_past_65535(device, preset):
    # positions numbered flat over more workgroups than a grid dimension holds (folded), each
    # workgroup's lanes over several lines and planes (the general walk: an invocation per output)
    tuning = dataclasses.replace(pg.Tuning.preset(preset), whole_workgroups=True, lines_workgroup=8, walk="general")
    x = np.random.default_rng(9).standard_normal((1, 3, 2, 200_001)).astype(np.float32)
    desc = pg.MaxPooling2Desc(pg.TensorDesc("float32", x.shape), output_indices="uint32", window_size=(1, 3),
                              strides=(1, 1), start_padding=(0, 1), end_padding=(0, 1))
    walk = pg.kernels.program_for(desc, tuning).passes[0]
    assert dict(walk.constants)["FLAT"] and walk.grid[1] > 1
    y, idx = outputs(device, desc, (x,), tuning)
    y_ref, i_ref = reference.max_pool(x, (1, 3), strides=(1, 1), start_padding=(0, 1), end_padding=(0, 1))
    assert same_bits(y, y_ref)
    np.testing.assert_array_equal(idx, i_ref)


def test_narrow_lines_numbered_flat(device):
    # unpooling 1 x 1 inputs: the passes over input elements have lines one column wide,
    # numbered flat under flat_lines_under (a 64-lane workgroup, not 1 x 1 x 64), with the
    # same results as the workgroups shaped to lines (C = 67: not in runs of four channels)
    x = np.random.default_rng(4).standard_normal((3, 67, 1, 1)).astype(np.float32)
    indices = np.random.default_rng(5).integers(0, 3 * 67 * 49, x.shape).astype(np.uint32)
    desc = pg.MaxUnpoolingDesc(pg.TensorDesc("float32", x.shape), pg.TensorDesc("uint32", x.shape),
                               pg.TensorDesc("float32", (3, 67, 7, 7)))
    expected = reference.max_unpool(x, indices, (3, 67, 7, 7))
    for under, flat in ((4, True), (1, False)):
        tuning = dataclasses.replace(without_variants("cpu"), flat_lines_under=under)
        passes = pg.kernels.program_for(desc, tuning).passes
        winners = next(p for p in passes if p.kernel.file == "max_unpool_winners.wgsl")
        assert dict(winners.constants).get("FLAT", False) == flat
        got, = outputs(device, desc, (x, indices), tuning)
        assert same_bits(got, expected)


# Packed planes: global pooling and its gradients over planes of any size, groups of lanes
# sized to the plane (one lane to a whole workgroup), many groups to a workgroup and a
# ragged last one; planes starting between chunks (odd sizes, planes with gaps between them),
# in chunks of planes (tensors larger than a binding).  Maxima and indices are the
# reference's, sums within their rounding, the gradients the bits of the kernels packed
# planes replace.
PACKED_SHAPES = ((3, 7, 1, 1), (2, 3, 2), (5, 9, 7, 7), (2, 5, 13), (1, 3, 3, 3, 3), (2, 3, 20, 30))


def _gradient_descs(x_desc, dy_desc, window):
    yield pg.MaxPoolingGradDesc(x_desc, dy_desc, x_desc, window_size=window), ("input", "input_gradient")
    yield pg.AveragePoolingGradDesc(dy_desc, x_desc, window_size=window, include_padding=True), ("input_gradient",)
    yield pg.AveragePoolingGradDesc(dy_desc, x_desc, window_size=window, divisor_override=7), ("input_gradient",)
    yield pg.AdaptiveMaxPoolingGradDesc(x_desc, dy_desc, x_desc), ("input", "input_gradient")
    yield pg.AdaptiveAveragePoolingGradDesc(dy_desc, x_desc), ("input_gradient",)


@pytest.mark.parametrize("preset, lane_chunks", [("cpu", 16), ("cpu", 1), ("gpu", 1), ("gpu", 4)])
def test_packed_planes(device, preset, lane_chunks):
    base = pg.Tuning.preset(preset)
    tuning = dataclasses.replace(base, packed_planes=True, plane_lane_chunks=lane_chunks)
    unpacked = dataclasses.replace(base, packed_planes=False)
    rng = np.random.default_rng(lane_chunks)
    groups = set()
    for k, shape in enumerate(PACKED_SHAPES):
        data_type = (pg.DataType.FLOAT32, pg.DataType.FLOAT16)[k % 2]
        window = shape[2:]
        layout = ("packed", "gaps")[k % 2 if len(shape) == 3 else 0]   # (gaps keep 1-D planes contiguous)
        x = random_values(data_type, shape, rng)
        x_desc = pg.TensorDesc(data_type, shape, layout_strides(shape, layout))
        max_desc = pg.MaxPooling2Desc(x_desc, output_indices="uint32", window_size=window)
        assert forward_walk(max_desc, tuning) == "plane"
        groups.add(dict(pg.kernels.program_for(max_desc, tuning).passes[0].constants)["PLANE_LANES"])
        y, idx = outputs(device, max_desc, (x,), tuning, x_desc.strides)
        y_ref, i_ref = reference.max_pool(x, window)
        assert same_bits(y, y_ref)
        np.testing.assert_array_equal(idx, i_ref)
        tolerance = dict(rtol=1e-5, atol=1e-6) if data_type == pg.DataType.FLOAT32 else dict(rtol=2e-3, atol=1e-6)
        x_plain = random_values(data_type, shape, rng, specials=False)
        for desc, expected in ((pg.AveragePooling1Desc(x_desc, window_size=window), reference.average_pool(x_plain, window)),
                               (pg.LpPooling1Desc(x_desc, window_size=window, p=2), reference.lp_pool(x_plain, window, p=2)),
                               (pg.AdaptiveAveragePoolingDesc(x_desc, output_size=(1,) * len(window)),
                                reference.adaptive_average_pool(x_plain, (1,) * len(window)))):
            got, = outputs(device, desc, (x_plain,), tuning, x_desc.strides)
            np.testing.assert_allclose(got.astype(np.float64), expected, **tolerance)
        dy = random_values(data_type, shape[:2] + (1,) * len(window), rng, specials=False)
        dy_desc = pg.TensorDesc(data_type, dy.shape)
        arrays = {"input": x, "input_gradient": dy}
        for desc, roles in _gradient_descs(x_desc, dy_desc, window):
            assert pg.kernels.program_for(desc, tuning).passes[0].kernel in (
                pg.kernels.planes.MAX_POOL_GRAD_PLANE, pg.kernels.planes.AVERAGE_POOL_GRAD_PLANE)
            op = pg.Op(device, desc, tuning)
            got = op(*(device.upload(arrays[r], strides=t.strides) for r, t in desc.input_tensors())).numpy()
            want = pg.Op(device, desc, unpacked)(*(device.upload(arrays[r], strides=t.strides)
                                                   for r, t in desc.input_tensors())).numpy()
            assert same_bits(got, want), (shape, type(desc).__name__)
            small = test_scale.smallest_bounded(device, desc)   # (in chunks of planes)
            chunked = pg.Op(small, desc, tuning)(*(small.upload(arrays[r], strides=t.strides)
                                                   for r, t in desc.input_tensors())).numpy()
            assert same_bits(chunked, want), (shape, type(desc).__name__)
    assert len(groups) > 1


def test_planes_cut_for_a_number_of_workgroups(device):
    # few large planes: more runs merged (a plane of 9003 elements starting between chunks), and
    # packed planes given more lanes
    rng = np.random.default_rng(11)
    for shape in ((1, 2, 9003), (1, 3, 7, 7)):
        x = random_values(pg.DataType.FLOAT32, shape, rng, specials=False)
        x_desc = pg.TensorDesc("float32", shape)
        desc = pg.MaxPooling2Desc(x_desc, output_indices="uint32", window_size=shape[2:])
        for preset in PRESETS:
            base = dataclasses.replace(pg.Tuning.preset(preset), packed_planes=True)
            tuning = dataclasses.replace(base, plane_workgroups=64)
            before, after = (dict(pg.kernels.program_for(desc, t).passes[0].constants) for t in (base, tuning))
            assert (after["PARTS"], after["PLANE_LANES"]) > (before["PARTS"], before["PLANE_LANES"])
            y, idx = outputs(device, desc, (x,), tuning)
            y_ref, i_ref = reference.max_pool(x, shape[2:])
            assert same_bits(y, y_ref)
            np.testing.assert_array_equal(idx, i_ref)
            got, = outputs(device, pg.AveragePooling1Desc(x_desc, window_size=shape[2:]), (x,), tuning)
            np.testing.assert_allclose(got, reference.average_pool(x, shape[2:]), rtol=1e-6)


# Every operator reducing whole planes takes packed planes under the CPU preset, on planes of
# odd sizes (one element, fewer than a chunk, 7 x 7, sizes starting planes between chunks,
# around a power of two) in every float type: maxima and indices the reference's and the
# unpacked kernels' bits, sums within their last bits of the unpacked kernels', gradients the
# unpacked kernels' bits.
ODD_PLANES = ((2, 3, 1), (3, 5, 3), (2, 4, 7, 7), (2, 3, 50), (1, 3, 255), (2, 2, 257), (1, 2, 5, 5, 5))


def _run(device, desc, arrays, tuning):
    tensors = (device.upload(arrays[role], strides=t.strides) for role, t in desc.input_tensors())
    result = pg.Op(device, desc, tuning)(*tensors)
    return tuple(t.numpy() for t in (result if isinstance(result, tuple) else (result,)))


@pytest.mark.parametrize("data_type", [pg.DataType.FLOAT32, pg.DataType.FLOAT16, pg.DataType.BFLOAT16])
def test_packed_planes_of_odd_sizes_under_the_cpu_preset(device, data_type):
    packed = pg.Tuning.for_cpu()
    assert packed.packed_planes
    unpacked = dataclasses.replace(packed, packed_planes=False)
    plane_kernels = (pg.kernels.planes.MAX_POOL_GRAD_PLANE, pg.kernels.planes.AVERAGE_POOL_GRAD_PLANE)
    rng = np.random.default_rng(5)
    for shape in ODD_PLANES:
        window, ones = shape[2:], (1,) * (len(shape) - 2)
        x_desc = pg.TensorDesc(data_type, shape)
        dy_desc = pg.TensorDesc(data_type, shape[:2] + ones)
        arrays = {"input": random_values(data_type, shape, rng),
                  "input_gradient": random_values(data_type, dy_desc.sizes, rng, specials=False)}
        plain = {"input": random_values(data_type, shape, rng, specials=False)}
        forward = ((pg.MaxPooling2Desc(x_desc, output_indices="uint32", window_size=window), arrays),
                   (pg.AdaptiveMaxPoolingDesc(x_desc, output_indices="uint32", output_size=ones), arrays),
                   (pg.AveragePooling1Desc(x_desc, window_size=window), plain),
                   (pg.LpPooling1Desc(x_desc, window_size=window, p=2), plain),
                   (pg.AdaptiveAveragePoolingDesc(x_desc, output_size=ones), plain))
        for desc, values in forward:
            assert forward_walk(desc, packed) == "plane", (shape, desc.kernel)
            got, want = _run(device, desc, values, packed), _run(device, desc, values, unpacked)
            if desc.kernel in ("max_pool", "adaptive_max_pool"):
                y_ref, i_ref = reference.max_pool(values["input"], window)
                assert same_bits(got[0], y_ref) and same_bits(got[0], want[0]), (shape, desc.kernel)
                np.testing.assert_array_equal(got[1], i_ref)
                np.testing.assert_array_equal(got[1], want[1])
            else:
                assert same_or_last_bits(got[0], want[0]), (shape, desc.kernel, got[0], want[0])
        for desc, _ in _gradient_descs(x_desc, dy_desc, window):
            assert pg.kernels.program_for(desc, packed).passes[0].kernel in plane_kernels, (shape, desc.kernel)
            got, want = _run(device, desc, arrays, packed), _run(device, desc, arrays, unpacked)
            assert same_bits(got[0], want[0]), (shape, desc.kernel)


# Planes that are not contiguous (channels-last, W strided) leave packed planes for the other
# kernels, forward and gradients, with the same results; planes with gaps between them and a
# tensor starting between chunks keep them.
@pytest.mark.parametrize("preset", PRESETS)
def test_packed_planes_fall_back_where_planes_are_not_contiguous(device, preset):
    packed = dataclasses.replace(pg.Tuning.preset(preset), packed_planes=True)
    unpacked = dataclasses.replace(packed, packed_planes=False)
    plane_kernels = (pg.kernels.planes.MAX_POOL_GRAD_PLANE, pg.kernels.planes.AVERAGE_POOL_GRAD_PLANE)
    rng = np.random.default_rng(9)
    shape = (2, 6, 7, 7)
    x = random_values(pg.DataType.FLOAT32, shape, rng)
    dy = random_values(pg.DataType.FLOAT32, (2, 6, 1, 1), rng, specials=False)
    dy_desc = pg.TensorDesc("float32", dy.shape)
    w_strided = (2 * 294, 2 * 49, 14, 2)
    for layout, strides in (("channels_last", layout_strides(shape, "channels_last")), ("w_strided", w_strided),
                            ("planes_apart", (6 * 53, 53, 7, 1))):
        x_desc = pg.TensorDesc("float32", shape, strides)
        desc = pg.MaxPooling2Desc(x_desc, output_indices="uint32", window_size=(7, 7))
        assert (forward_walk(desc, packed) == "plane") == (layout == "planes_apart"), layout
        y, idx = outputs(device, desc, (x,), packed, strides)
        y_ref, i_ref = reference.max_pool(x, (7, 7))
        assert same_bits(y, y_ref), layout
        np.testing.assert_array_equal(idx, i_ref)
        arrays = {"input": x, "input_gradient": dy}
        for grad, _ in _gradient_descs(x_desc, dy_desc, (7, 7)):
            takes = pg.kernels.program_for(grad, packed).passes[0].kernel in plane_kernels
            assert takes == (layout == "planes_apart"), (layout, grad.kernel)
            got, want = _run(device, grad, arrays, packed), _run(device, grad, arrays, unpacked)
            assert same_bits(got[0], want[0]), (layout, grad.kernel)
    # a tensor starting 3 elements into its buffer, NaN around it (its planes between chunks):
    # the same bits, the plane walk reading nothing but its elements
    desc = pg.MaxPooling2Desc(pg.TensorDesc("float32", shape), output_indices="uint32", window_size=(7, 7))
    y, idx = (t.numpy() for t in pg.Op(device, desc, packed)(sentinel_input(device, x, lead_bytes=12)))
    assert same_bits(y, y_ref)
    np.testing.assert_array_equal(idx, i_ref)


# The gradients of global pooling write each plane's dx in whole chunks and its end chunks
# element by element (16-bit ones with word atomics): into a dx starting between chunks, its
# planes apart, nothing outside its elements changes, and the bits are the unpacked kernels'.
@pytest.mark.parametrize("data_type", [pg.DataType.FLOAT32, pg.DataType.FLOAT16])
def test_packed_plane_gradients_write_only_their_elements(device, data_type):
    packed = pg.Tuning.for_cpu()
    unpacked = dataclasses.replace(packed, packed_planes=False)
    rng = np.random.default_rng(4)
    shape = (2, 3, 5, 5)
    x = random_values(data_type, shape, rng)
    dy = random_values(data_type, (2, 3, 1, 1), rng, specials=False)
    x_desc, dy_desc = pg.TensorDesc(data_type, shape), pg.TensorDesc(data_type, dy.shape)
    dx_desc = pg.TensorDesc(data_type, shape, (3 * 27, 27, 5, 1))   # planes 2 elements apart
    arrays = {"input": x, "input_gradient": dy}
    for desc in (pg.MaxPoolingGradDesc(x_desc, dy_desc, dx_desc, window_size=(5, 5)),
                 pg.AveragePoolingGradDesc(dy_desc, dx_desc, window_size=(5, 5)),
                 pg.AdaptiveMaxPoolingGradDesc(x_desc, dy_desc, dx_desc),
                 pg.AdaptiveAveragePoolingGradDesc(dy_desc, dx_desc)):
        assert pg.kernels.program_for(desc, packed).passes[0].kernel in (
            pg.kernels.planes.MAX_POOL_GRAD_PLANE, pg.kernels.planes.AVERAGE_POOL_GRAD_PLANE)
        tensors = [device.upload(arrays[role]) for role, _ in desc.input_tensors()]
        dx = canary_tensor(device, dx_desc, lead_bytes=6)   # (one or three elements in)
        pg.Op(device, desc, packed)(*tensors, out=dx)
        want = pg.Op(device, desc, unpacked)(*tensors).numpy()
        assert same_bits(dx.numpy(), want), desc.kernel
        assert_canaries_intact(dx)


# Pairs from shared words: 16-bit inputs whose rows start at even elements, two outputs per
# invocation of the general walk (also under the CPU preset, whose general walk computes one)
# from the words holding both windows' rows: windows starting at either parity in their
# words (start padding 1 or 2), overlapping, disjoint and dilated, spans of 2 to 8 elements,
# a looping D (5 taps), odd input and output widths (rows apart by an even stride; the last
# output alone), outputs with gaps; max pooling the reference's bits, read from an input
# with NaN around it and in its gaps (a stray word read would show), average and Lp pooling
# the plain walk's bits.
PAIRED_GEOMETRIES = (
    ((2, 3, 9, 14), dict(window_size=(3, 3), strides=(2, 2), start_padding=(1, 1), end_padding=(1, 1))),
    ((1, 4, 6, 15), dict(window_size=(2, 2), strides=(2, 2), start_padding=(0, 0), end_padding=(0, 0))),
    ((1, 2, 7, 12), dict(window_size=(2, 3), strides=(1, 1), dilations=(1, 2), start_padding=(0, 2), end_padding=(1, 2))),
    ((1, 2, 5, 18), dict(window_size=(1, 4), strides=(1, 3), start_padding=(0, 1), end_padding=(0, 2))),
    ((2, 2, 20), dict(window_size=(1,), strides=(1,), start_padding=(0,), end_padding=(0,))),
    ((1, 2, 7, 3, 9), dict(window_size=(5, 2, 3), strides=(1, 2, 2), start_padding=(2, 0, 1), end_padding=(2, 1, 1))),
)


def paired(p) -> bool:
    """Whether a pass is the general walk's for 16-bit pairs sharing words."""
    return "window_walk_pairs.wgsl" in p.kernel.library


@pytest.mark.parametrize("preset", PRESETS)
def test_paired_words(device, preset):   # (the CPU preset: the first two geometries)
    base = dataclasses.replace(pg.Tuning.preset(preset), rows_walks=False, paired_words=False)
    tuning = dataclasses.replace(base, paired_words=True)
    rng = np.random.default_rng(11)
    for k, (sizes, geometry) in enumerate(PAIRED_GEOMETRIES[:2] if preset == "cpu" else PAIRED_GEOMETRIES):
        data_type = (pg.DataType.FLOAT16, pg.DataType.BFLOAT16)[k % 2]
        x = random_values(data_type, sizes, rng)
        x_desc = pg.TensorDesc(data_type, sizes, layout_strides(sizes, "gaps") if sizes[-1] % 2 else None)
        out = pg.MaxPooling2Desc(x_desc, **geometry).output.sizes
        out_strides = layout_strides(out, "gaps") if k in (2, 5) else None
        desc = pg.MaxPooling2Desc(x_desc, pg.TensorDesc(data_type, out, out_strides),
                                  pg.TensorDesc("uint32", out, out_strides), **geometry)
        program = pg.kernels.program_for(desc, tuning)
        assert paired(program.passes[0]) and program.aligned_elements == 2, k
        assert not paired(program.fallback.passes[0])
        y_ref, i_ref = reference.max_pool(x, **geometry)
        for lead in (16, 18) if k == 1 else (16,):   # (an odd element in: the fallback)
            xt = sentinel_input(device, x, x_desc.strides, lead_bytes=lead)
            y, idx = (t.numpy() for t in pg.Op(device, desc, tuning)(xt))
            assert same_bits(y, y_ref), (k, lead)
            np.testing.assert_array_equal(idx, i_ref)
        summed = [pg.AveragePooling1Desc(x_desc, include_padding=k % 2 == 0, **geometry)]
        for summed in summed + ([pg.LpPooling1Desc(x_desc, p=3, **geometry)] if k == 0 else []):
            got = pg.Op(device, summed, tuning)(xt).numpy()
            assert same_bits(got, pg.Op(device, summed, base)(xt).numpy()), (k, summed.kernel)
    # not taken: 32-bit inputs, rows starting at odd elements, rows not contiguous, the rows walk
    shape = (1, 2, 8, 16)
    for desc, walks in ((pg.MaxPooling2Desc(pg.TensorDesc("float32", shape), window_size=(2, 2)), tuning),
                        (pg.MaxPooling2Desc(pg.TensorDesc("float16", (1, 2, 8, 15)), window_size=(2, 2)), tuning),
                        (pg.MaxPooling2Desc(pg.TensorDesc("float16", shape, layout_strides(shape, "channels_last")),
                                            window_size=(2, 2)), tuning),
                        (pg.MaxPooling2Desc(pg.TensorDesc("float16", shape), window_size=(2, 2)),
                         dataclasses.replace(tuning, rows_walks=True))):
        assert not any(paired(p) for p in pg.kernels.program_for(desc, walks).passes)
