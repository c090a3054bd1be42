"""Scale: tensors larger than a storage binding (chunked programs) and grids past 65535
workgroups per dimension, for every operator, on every adapter.

Chunking is exercised on small data through Devices that share the test device's GPU but
bind at most a few hundred bytes (``bounded``): a chunked run must give the bits of the
unchunked run and write nothing outside its outputs.  One test moves a real tensor larger
than the adapter's largest binding."""

import dataclasses
import functools
import math
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import poolgpu as pg
import reference
from helpers import (ALL_TYPES, FLOAT_TYPES, assert_canaries_intact, canary_tensor, layout_strides, random_values,
                     same_bits, tuned_for)
from poolgpu import kernels
from test_grad import assert_gradient_close

FUZZ = os.environ.get("POOLGPU_FUZZ") == "1"
CHUNK_SETTINGS = settings(max_examples=int(os.environ.get("POOLGPU_FUZZ_EXAMPLES", 2000)) if FUZZ else 25,
                          deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                HealthCheck.too_slow])
LIMITS = tuple(2**k for k in range(7, 17))  # binding sizes tried, smallest first
_bounded = {}


def bounded(device, limit):
    """A Device on `device`'s GPU that binds at most `limit` bytes per tensor (sharing its
    pipeline cache, which depends only on the GPU)."""
    key = (id(device), limit)
    if key not in _bounded:
        small = pg.Device(wgpu_device=device.wgpu_device)
        small.limits["max-storage-buffer-binding-size"] = limit
        small._pipelines, small._pipeline_lock = device._pipelines, device._pipeline_lock
        _bounded[key] = small
    return _bounded[key]


def usable(op) -> int:
    return op._max_binding - op._align - 16


def span_bytes(desc) -> int:
    return (kernels.max_offset(desc) + 1) * desc.data_type.size


# ---------------------------------------------------------------------------------------
# Cases: every operator with many small (n, c) planes, in adversarial layouts

OPERATORS = ("max", "average", "lp", "max_grad", "average_grad", "unpool", "adaptive_max", "adaptive_average", "roi",
             "adaptive_max_grad", "adaptive_average_grad", "unpool_grad")


@st.composite
def chunk_cases(draw, operators=OPERATORS):
    operator = draw(st.sampled_from(operators))
    dims = 2 if operator == "roi" else draw(st.integers(1, 3))
    types = ALL_TYPES if operator in ("max", "unpool", "adaptive_max", "unpool_grad") else FLOAT_TYPES
    return dict(
        operator=operator,
        sizes=(draw(st.integers(1, 5)), draw(st.integers(1, 6))) + tuple(draw(st.integers(1, 6)) for _ in range(dims)),
        window_size=tuple(draw(st.integers(1, 3)) for _ in range(dims)),
        strides=tuple(draw(st.integers(1, 3)) for _ in range(dims)),
        dilations=tuple(draw(st.sampled_from([1, 1, 2])) for _ in range(dims)),
        start_padding=tuple(draw(st.integers(0, 1)) for _ in range(dims)),
        end_padding=tuple(draw(st.integers(0, 1)) for _ in range(dims)),
        output_size=tuple(draw(st.integers(1, 5)) for _ in range(dims)),
        data_type=draw(st.sampled_from(types)),
        indices=draw(st.sampled_from([None, "uint32", "uint64"])),
        in_layout=draw(st.sampled_from(["packed", "channels_last", "gaps", "broadcast"])),
        out_layout=draw(st.sampled_from(["packed", "channels_last", "gaps"])),
        extra_bytes=draw(st.sampled_from([0, 0, 12])),
        seed=draw(st.integers(0, 2**31)),
    )


def _tensor(data_type, sizes, layout, extra_bytes=0):
    desc = pg.TensorDesc(data_type, sizes, layout_strides(sizes, layout))
    return pg.TensorDesc(data_type, sizes, desc.strides, desc.total_size_in_bytes + extra_bytes)


def describe(case):
    """(description, input arrays by role) of a case; ValidationError for invalid geometry."""
    rng = np.random.default_rng(case["seed"])
    op, dt, sizes = case["operator"], case["data_type"], case["sizes"]
    window = {k: case[k] for k in ("window_size", "strides", "start_padding", "end_padding")}
    x_desc = _tensor(dt, sizes, case["in_layout"])
    x = random_values(dt, sizes, rng)
    if case["in_layout"] == "broadcast":
        x = np.broadcast_to(x[:1, :1], x.shape).copy()

    def out(sizes, data_type=dt):
        return _tensor(data_type, sizes, case["out_layout"], case["extra_bytes"])

    if op in ("max", "average", "lp"):
        make = {"max": pg.MaxPooling2Desc, "average": pg.AveragePooling1Desc, "lp": pg.LpPooling1Desc}[op]
        extra = {"output_indices": case["indices"]} if op == "max" else {}
        plain = make(x_desc, dilations=case["dilations"], **window, **extra)
        if op == "max" and case["indices"]:
            extra = {"output_indices": out(plain.output.sizes, case["indices"])}
        return make(x_desc, out(plain.output.sizes), dilations=case["dilations"], **window, **extra), {"input": x}
    if op == "max_grad":
        forward = pg.MaxPooling2Desc(x_desc, dilations=case["dilations"], **window)
        dy = random_values(dt, forward.output.sizes, rng, specials=False)
        dy_desc = pg.TensorDesc(dt, dy.shape, layout_strides(dy.shape, "gaps"))
        desc = pg.MaxPoolingGradDesc(x_desc, dy_desc, out(sizes), dilations=case["dilations"], **window)
        return desc, {"input": x, "input_gradient": dy}
    if op == "average_grad":
        forward = pg.AveragePooling1Desc(x_desc, dilations=case["dilations"], **window)
        dy = random_values(dt, forward.output.sizes, rng, specials=False)
        desc = pg.AveragePoolingGradDesc(pg.TensorDesc(dt, dy.shape), out(sizes), dilations=case["dilations"],
                                         include_padding=bool(case["seed"] % 2), **window)
        return desc, {"input_gradient": dy}
    if op == "unpool":
        out_sizes = sizes[:2] + tuple(s + o - 1 for s, o in zip(sizes[2:], case["output_size"]))
        index_type = case["indices"] or "uint32"
        count = math.prod(out_sizes)
        indices = rng.integers(0, count + count // 8 + 1, size=sizes).astype(index_type)  # some outside
        desc = pg.MaxUnpoolingDesc(x_desc, pg.TensorDesc(index_type, sizes), out(out_sizes))
        return desc, {"input": x, "indices": indices}
    if op == "unpool_grad":  # dy of the unpooled sizes, indices of the input's
        dy_sizes = sizes[:2] + tuple(s + o - 1 for s, o in zip(sizes[2:], case["output_size"]))
        index_type = case["indices"] or "uint32"
        count = math.prod(dy_sizes)
        indices = rng.integers(0, count + count // 8 + 1, size=sizes).astype(index_type)  # some outside
        dy = random_values(dt, dy_sizes, rng)
        if case["in_layout"] == "broadcast":
            dy = np.broadcast_to(dy[:1, :1], dy.shape).copy()
        desc = pg.MaxUnpoolingGradDesc(_tensor(dt, dy_sizes, case["in_layout"]), pg.TensorDesc(index_type, sizes),
                                       out(sizes))
        return desc, {"input_gradient": dy, "indices": indices}
    if op in ("adaptive_max_grad", "adaptive_average_grad"):
        out_sizes = sizes[:2] + case["output_size"]
        dy = random_values(dt, out_sizes, rng, specials=False)
        dy_desc = pg.TensorDesc(dt, out_sizes, layout_strides(out_sizes, "gaps"))
        if op == "adaptive_max_grad":
            return pg.AdaptiveMaxPoolingGradDesc(x_desc, dy_desc, out(sizes)), {"input": x, "input_gradient": dy}
        return pg.AdaptiveAveragePoolingGradDesc(dy_desc, out(sizes)), {"input_gradient": dy}
    if op in ("adaptive_max", "adaptive_average"):
        out_sizes = sizes[:2] + case["output_size"]
        if op == "adaptive_max":
            indices = out(out_sizes, case["indices"]) if case["indices"] else None
            return pg.AdaptiveMaxPoolingDesc(x_desc, out(out_sizes), indices), {"input": x}
        return pg.AdaptiveAveragePoolingDesc(x_desc, out(out_sizes)), {"input": x}
    # roi: batches (some outside the input) and corners anywhere near the input
    h, w = sizes[2:]
    count = int(rng.integers(1, 7))
    rois = np.stack([rng.integers(-1, sizes[0] + 1, count), rng.integers(-2, w + 2, count),
                     rng.integers(-2, h + 2, count), rng.integers(-2, w + 2, count),
                     rng.integers(-2, h + 2, count)], axis=1).astype(dt.numpy).reshape(1, 1, count, 5)
    pooled = case["output_size"]
    desc = pg.RoiPoolingDesc(x_desc, pg.TensorDesc(dt, rois.shape), out((count, sizes[1]) + pooled),
                             spatial_scale=1.0, pooled_size=pooled)
    return desc, {"input": x, "roi": rois}


def run(device, desc, arrays):
    """The outputs' values after running `desc` on `device` into canary-guarded outputs."""
    op = device.compile(desc)
    inputs = [device.upload(arrays[role], strides=t.strides) for role, t in desc.input_tensors()]
    outputs = tuple(canary_tensor(device, t) for _, t in desc.output_tensors() if t is not None)
    op(*inputs, out=outputs)
    for t in outputs:
        assert_canaries_intact(t)
    return op, [t.numpy() for t in outputs]


def smallest_bounded(device, desc):
    """The most constrained bounded Device that can run `desc` (a plane must fit)."""
    for limit in LIMITS:
        try:
            small = bounded(device, limit)
            small.compile(desc)
            return small
        except pg.DeviceError as exc:
            assert any(f in str(exc) for f in ("one (n, c) plane", "one batch", "bound whole")), exc
    raise AssertionError("no bounded device runs the case")


@CHUNK_SETTINGS
@given(case=chunk_cases())
def test_chunked_programs_give_the_unchunked_bits(device, case):
    try:
        desc, arrays = describe(case)
    except pg.ValidationError:
        assume(False)
    _, expected = run(device, desc, arrays)
    small = smallest_bounded(device, desc)
    op, got = run(small, desc, arrays)
    for a, b in zip(got, expected):
        assert same_bits(a, b)
    tensors = [t for _, t in desc.input_tensors() + desc.output_tensors() if t is not None]
    tensors += [t for _, t in op._program.scratch]
    if any(span_bytes(t) > usable(op) for t in tensors):
        assert len(op._program.passes) > len(device.compile(desc)._program.passes), "not chunked"


@CHUNK_SETTINGS
@given(case=chunk_cases(operators=("adaptive_max_grad", "adaptive_average_grad", "unpool_grad")))
def test_chunked_adaptive_and_unpooling_gradients_give_the_unchunked_bits(device, case):
    test_chunked_programs_give_the_unchunked_bits.hypothesis.inner_test(device, case)


@pytest.mark.parametrize("operator", OPERATORS)
def test_every_operator_chunks_over_many_planes(device, operator):
    # 60 planes of 3 x 5, a 256-byte binding: every tensor is split
    case = dict(operator=operator, sizes=(4, 15, 3, 5), window_size=(2, 2), strides=(1, 2), dilations=(1, 1),
                start_padding=(1, 0), end_padding=(0, 1), output_size=(2, 3), indices="uint64",
                data_type=pg.DataType.FLOAT32, in_layout="packed", out_layout="packed", extra_bytes=0, seed=7)
    desc, arrays = describe(case)
    _, expected = run(device, desc, arrays)
    op, got = run(bounded(device, 256), desc, arrays)
    assert len(op._program.passes) >= 4
    for a, b in zip(got, expected):
        assert same_bits(a, b)


@pytest.mark.parametrize("channels", [8, 70])
@pytest.mark.parametrize("operator", ["max_grad", "average_grad"])
def test_channels_last_gradients_chunk_over_whole_batches(device, operator, channels):
    """Channels-last dx: the block gathers run lanes along C (70: a partial group of 64),
    whose units are whole batches; the max gradient's argmax is channels-last too (8: from
    the channels walk)."""
    case = dict(operator=operator, sizes=(3, channels, 3, 5), window_size=(2, 2), strides=(1, 2), dilations=(1, 1),
                start_padding=(1, 0), end_padding=(0, 1), output_size=(2, 3), indices=None,
                data_type=pg.DataType.FLOAT32, in_layout="channels_last", out_layout="channels_last",
                extra_bytes=0, seed=3)
    desc, arrays = describe(case)
    program = kernels.program_for(desc)
    assert dict(program.passes[-1].constants).get("CHANNEL_LANES")
    if operator == "max_grad":
        walk = "window_walk_channels.wgsl" if channels % 4 == 0 else "window_walk.wgsl"
        assert walk in program.passes[0].kernel.library and program.scratch[0][1].strides[1] == 1
    _, expected = run(device, desc, arrays)
    geometry = {k: case[k] for k in ("window_size", "strides", "start_padding", "end_padding", "dilations")}
    if operator == "max_grad":
        want = reference.max_pool_grad(arrays["input"], arrays["input_gradient"], **geometry)
    else:
        want = reference.average_pool_grad(arrays["input_gradient"], case["sizes"], include_padding=True, **geometry)
    np.testing.assert_allclose(expected[0], want, rtol=1e-6, atol=1e-6)
    small = smallest_bounded(device, desc)
    op, got = run(small, desc, arrays)
    assert len(op._program.passes) > len(device.compile(desc)._program.passes), "not chunked"
    for a, b in zip(got, expected):
        assert same_bits(a, b)


def test_chunks_follow_whole_batches_for_channels_last_walks(device):
    # NHWC with C a multiple of 4: the channels walk, whose units are whole batches
    x = random_values("float32", (6, 8, 4, 4), np.random.default_rng(1))
    desc = pg.MaxPooling2Desc(_tensor("float32", x.shape, "channels_last"),
                              _tensor("float32", (6, 8, 2, 2), "channels_last"),
                              _tensor("uint32", (6, 8, 2, 2), "channels_last"), window_size=(2, 2), strides=(2, 2))
    _, expected = run(device, desc, {"input": x})
    op, got = run(bounded(device, 1024), desc, {"input": x})
    assert op._program.passes[0].kernel.library[-1] == "window_walk_channels.wgsl"
    assert len(op._program.passes) > 1
    for a, b in zip(got, expected):
        assert same_bits(a, b)


def test_max_unpool_scatters_across_chunks(device):
    # every index points into another batch: each output chunk gathers from every input chunk
    rng = np.random.default_rng(2)
    x = random_values("int32", (4, 3, 2, 8), rng)
    out_sizes = (4, 3, 4, 8)
    count = math.prod(out_sizes)
    indices = ((np.arange(x.size) * 7919 + count // 2) % count).reshape(x.shape).astype(np.uint32)
    indices.flat[::5] = indices.flat[1::5][: indices.flat[::5].size]  # repeats: the largest j wins
    desc = pg.MaxUnpoolingDesc(pg.TensorDesc("int32", x.shape), pg.TensorDesc("uint32", x.shape),
                               pg.TensorDesc("int32", out_sizes))
    op, (got,) = run(bounded(device, 256), desc, {"input": x, "indices": indices})
    assert same_bits(got, reference.max_unpool(x, indices, out_sizes))
    assert op._scratch["winner"].desc.element_count < count  # one chunk's winners, not the output's
    _, (again,) = run(bounded(device, 256), desc, {"input": x, "indices": indices})
    assert same_bits(again, got)  # the winner scratch was left clean


def test_roi_pooling_reads_its_batches_in_ranges(device):
    rng = np.random.default_rng(3)
    x = random_values("float32", (5, 4, 6, 6), rng, specials=False)
    rois = np.array([[b, 0, 0, 5, 5] for b in (4, 0, 3, 1, 2, 4, 7)], np.float32)  # 7: an invalid batch
    op_desc = pg.RoiPoolingDesc(pg.TensorDesc("float32", x.shape), pg.TensorDesc("float32", (1, 1, 7, 5)),
                                spatial_scale=1.0, pooled_size=(2, 3))
    op, (got,) = run(bounded(device, 512), op_desc, {"input": x, "roi": rois.reshape(1, 1, 7, 5)})
    assert same_bits(got, reference.roi_pool(x, rois, (2, 3)))
    assert len(op._program.passes) > 2


def test_roi_gradients_whose_argmax_and_gather_cannot_share_chunks_refuse_tensors_beyond_a_binding(device):
    # (their argmax runs over ROIs, their gather over images: no run of (n, c) planes serves both)
    rng = np.random.default_rng(5)
    x = random_values("float32", (3, 5, 12, 14), rng, specials=False)
    rois = np.array([[1, 0, 0, 9, 7], [0, 2, 3, 13, 11], [2, 4, 1, 8, 5]], np.float32)
    small = bounded(device, 2048)
    with pytest.raises(pg.DeviceError, match="split the call along N or C"):
        pg.roi_pool_grad(x, rois, np.ones((3, 5, 2, 3), np.float32), (2, 3), device=small)
    with pytest.raises(pg.DeviceError, match="split the call along N or C"):
        pg.roi_align_grad(x, rois[:, 1:], rois[:, 0].astype(np.int64), np.ones((3, 5, 3, 3), np.float32), 3,
                          sampling_ratio=2, mode="max", device=small)
    # the average's gradient chunks, with the unchunked bits
    dy = random_values("float32", (3, 5, 3, 3), rng, specials=False)
    args = (x, rois[:, 1:], rois[:, 0].astype(np.int64), dy, 3)
    assert same_bits(pg.roi_align_grad(*args, sampling_ratio=2, device=small),
                     pg.roi_align_grad(*args, sampling_ratio=2, device=device))


def test_a_tensor_whose_total_size_exceeds_a_binding_binds_only_its_elements(device):
    small = bounded(device, 1024)
    x = random_values("float32", (1, 2, 8), np.random.default_rng(4))
    desc = pg.MaxPooling2Desc(pg.TensorDesc("float32", x.shape, total_size_in_bytes=4096), window_size=(2,))
    op = small.compile(desc)
    assert len(op._program.passes) == len(device.compile(desc)._program.passes)  # nothing to split
    big = small.wrap(small._create_buffer(4096), desc.input)
    small.wgpu_device.queue.write_buffer(big.buffer, 0, x.tobytes())
    assert same_bits(op(big).numpy(), reference.max_pool(x, (2,))[0])


# ---------------------------------------------------------------------------------------
# A real tensor larger than the adapter's largest binding


@functools.lru_cache(maxsize=1)
def over_a_binding(limit: int):
    """A uint8 input of planes of 4 Mi elements, just over `limit` bytes, with its 2x2
    stride-2 max pooling and indices (computed cheaply: the four taps of each window in flat
    index order, the first maximum wins)."""
    planes = limit // (1 << 22) + 2
    x = np.empty((planes, 1, 1024, 4096), np.uint8)
    x[...] = (np.arange(4096, dtype=np.uint32) * 2654435761 >> 24).astype(np.uint8)
    x[:, :, 1::3] ^= np.arange(planes, dtype=np.uint8)[:, None, None, None]
    taps = [x[:, :, dh::2, dw::2] for dh in (0, 1) for dw in (0, 1)]
    best = np.maximum(np.maximum(taps[0], taps[1]), np.maximum(taps[2], taps[3]))
    first = np.full(best.shape, 3, np.uint32)
    for k in (2, 1, 0):
        first[taps[k] == best] = k
    corner = (np.arange(planes, dtype=np.uint32).reshape(planes, 1, 1, 1) * (1024 * 4096)
              + np.arange(512, dtype=np.uint32).reshape(1, 1, 512, 1) * 8192
              + np.arange(2048, dtype=np.uint32).reshape(1, 1, 1, 2048) * 2)
    return x, best, corner + (first >> 1) * 4096 + (first & 1)


def test_a_tensor_larger_than_the_largest_binding(device):
    limit = device.limits["max-storage-buffer-binding-size"]
    x, y_ref, i_ref = over_a_binding(limit)
    assert x.nbytes > limit
    y, i = pg.max_pool(x, (2, 2), strides=(2, 2), return_indices=True, device=device)
    np.testing.assert_array_equal(y, y_ref)
    np.testing.assert_array_equal(i, i_ref)


# ---------------------------------------------------------------------------------------
# Grids past 65535 workgroups in a dimension, on small data


def folded(desc, device) -> bool:
    """Whether the op's first pass numbers its workgroups flat (more than 65535 in a dimension)."""
    return dict(device.compile(desc)._program.passes[0].constants).get("FOLDED", False)


def test_rows_of_millions_fold_over_the_grid(device):
    # (65535 workgroups of 64 invocations of two outputs each, as GPUs compile it, hold 8.4M)
    x = random_values("uint8", (1, 1, 8_600_005), np.random.default_rng(5))
    xt = device.upload(x, strides=(2 * x.size, 2 * x.size, 2))  # not contiguous along W: the general walk
    op = device.compile(pg.MaxPooling1Desc(xt.desc, output_indices="uint32", window_size=(3,)))
    assert "window_walk.wgsl" in op._program.passes[0].kernel.library and folded(op.desc, device)
    y, i = op(xt)
    y_ref, i_ref = reference.max_pool(x, (3,))
    assert same_bits(y.numpy(), y_ref) and np.array_equal(i.numpy(), i_ref)


def test_lines_past_65535_fold_over_the_grid(device):
    x = random_values("int8", (1, 1, 140_000, 63), np.random.default_rng(6))   # (GPUs: two lines per workgroup)
    with tuned_for(device, dataclasses.replace(device.tuning, rows_walks=False)):  # (an invocation per output)
        y = pg.max_pool(x, (1, 2), device=device)
        assert same_bits(y, reference.max_pool(x, (1, 2))[0])
        assert folded(pg.MaxPooling2Desc(pg.TensorDesc("int8", x.shape), window_size=(1, 2)), device)
    # channels last with C = 4: one channel group per line (of two outputs), millions of lines,
    # in workgroups shaped to lines (folded) and, as the CPU preset numbers lines this narrow,
    # flat
    x = random_values("uint8", (1, 4, 8_400_001), np.random.default_rng(6))
    xt = device.upload(x, strides=layout_strides(x.shape, "channels_last"))
    out = pg.TensorDesc("uint8", (1, 4, 8_400_000), layout_strides((1, 4, 8_400_000), "channels_last"))
    expected = reference.max_pool(x, (2,))[0]
    for under in (1, 2):
        with tuned_for(device, dataclasses.replace(device.tuning, flat_lines_under=under)):
            op = device.compile(pg.MaxPoolingDesc(xt.desc, out, window_size=(2,)))
            walk = op._program.passes[0]
            assert walk.kernel.library[-1] == "window_walk_channels.wgsl"
            assert dict(walk.constants).get("FLAT", False) == (under == 2)
            assert folded(op.desc, device) == (under == 1)
            assert same_bits(op(xt, out=device.empty(out)).numpy(), expected)


def test_four_million_tiny_planes(device):
    x = random_values("float16", (2, 2_100_000, 1, 1), np.random.default_rng(7), specials=False)
    dy = random_values("float16", x.shape, np.random.default_rng(8), specials=False)
    assert same_bits(pg.max_pool(x, (1, 1), device=device), x)
    np.testing.assert_array_equal(pg.max_pool_grad(x, dy, (1, 1), device=device), dy)
    np.testing.assert_array_equal(pg.average_pool_grad(dy, x.shape, (1, 1), device=device), dy)
    y, i = pg.adaptive_max_pool(x, (1, 1), return_indices=True, device=device)
    assert same_bits(y, x) and np.array_equal(i.ravel(), np.arange(x.size))


@functools.lru_cache(maxsize=1)
def rows_of_millions():
    """A 1-D input of 4.4 million elements, dy, a permutation, and their references."""
    rng = np.random.default_rng(9)
    x = random_values("float32", (1, 1, 4_400_000), rng, specials=False)
    dy = random_values("float32", (1, 1, 4_400_000 - 2), rng, specials=False)
    indices = rng.permutation(x.size).astype(np.uint32).reshape(x.shape)
    return x, dy, indices, reference.max_pool_grad(x, dy, (3,)), reference.max_unpool(x, indices, x.shape)


def test_gradients_and_unpooling_of_rows_of_millions(device):
    x, dy, indices, dx_ref, unpooled_ref = rows_of_millions()
    got = pg.max_pool_grad(x, dy, (3,), device=device)  # overlapping windows: argmax walk, then the gather
    assert_gradient_close(got, dx_ref, dy)
    assert same_bits(pg.max_unpool(x, indices, x.shape, device=device), unpooled_ref)
    # into an output with gaps (not dense): the write pass walks a row of 4.4 million outputs
    spaced = pg.TensorDesc("float32", x.shape, (2 * x.size, 2 * x.size, 2))
    op = device.compile(pg.MaxUnpoolingDesc(pg.TensorDesc("float32", x.shape), pg.TensorDesc("uint32", x.shape), spaced))
    assert dict(op._program.passes[-1].constants).get("FOLDED", False)
    y = canary_tensor(device, spaced)
    op(device.upload(x), device.upload(indices), out=y)
    assert same_bits(y.numpy(), unpooled_ref)
    assert_canaries_intact(y)


@pytest.mark.parametrize("geometry", [
    dict(window_size=(3, 3), strides=(2, 2), start_padding=(1, 1), end_padding=(1, 1)),
    dict(window_size=(2, 2), strides=(2, 2)),  # disjoint: one pass
])
def test_channels_last_max_gradient_of_four_channels_chunks_over_whole_batches(device, geometry):
    rng = np.random.default_rng(31)
    x = random_values("float32", (5, 8, 6, 7), rng)
    out_sizes = pg.pooling_output_sizes(x.shape, **geometry)
    dy = random_values("float32", out_sizes, rng, specials=False)
    desc = pg.MaxPoolingGradDesc(_tensor("float32", x.shape, "channels_last"),
                                 _tensor("float32", out_sizes, "channels_last"),
                                 _tensor("float32", x.shape, "channels_last"), **geometry)
    passes = kernels.program_for(desc).passes
    assert dict(passes[-1].constants)["CHANNELS_PER_LANE"] == 4
    arrays = {"input": x, "input_gradient": dy}
    _, expected = run(device, desc, arrays)
    op, got = run(smallest_bounded(device, desc), desc, arrays)
    assert len(op._program.passes) > len(passes), "not chunked"
    assert same_bits(got[0], expected[0])
    np.testing.assert_allclose(expected[0], reference.max_pool_grad(x, dy, **geometry), rtol=1e-6)
