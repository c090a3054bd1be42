"""Max unpooling (MAX_UNPOOLING) on every adapter, all ten data types with UINT32 and UINT64
indices: against the independent NumPy reference (bit-exact), PyTorch's max_unpool*d, the
round trip through max pooling, determinism, layouts and untouched canaries."""

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import poolgpu as pg
import reference
from poolgpu import kernels
from helpers import (ALL_TYPES, tuned_for, assert_canaries_intact, canary_tensor, finfo, layout_strides, random_values, same_bits,
                     upload)

GPU_SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
INDEX_TYPES = ("uint32", "uint64")
F32 = pg.DataType.FLOAT32


def random_indices(rng, count, out_count, index_type):
    """Mostly inside [0, out_count) with many repeats; some just past the end, the type's
    maximum, and for UINT64 values whose low word is inside but whose high word is not zero."""
    idx = rng.integers(0, out_count, count).astype(np.uint64)
    kind = rng.random(count)
    idx[kind < 0.1] = out_count + rng.integers(0, 3, (kind < 0.1).sum())
    idx[(kind >= 0.1) & (kind < 0.15)] = np.iinfo(index_type).max
    if index_type == "uint64":
        wide = (kind >= 0.15) & (kind < 0.25)
        idx[wide] = (np.uint64(rng.integers(1, 2**32)) << np.uint64(32)) | rng.integers(0, out_count, wide.sum()).astype(np.uint64)
    return idx.astype(index_type)


@st.composite
def unpool_cases(draw):
    dims = draw(st.integers(1, 3))
    lead = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    return dict(
        sizes=lead + tuple(draw(st.integers(1, 6)) for _ in range(dims)),
        out_sizes=lead + tuple(draw(st.integers(1, 9)) for _ in range(dims)),
        data_type=draw(st.sampled_from(ALL_TYPES)),
        index_type=draw(st.sampled_from(INDEX_TYPES)),
        in_layout=draw(st.sampled_from(["packed", "channels_last", "reversed", "gaps", "broadcast"])),
        idx_layout=draw(st.sampled_from(["packed", "channels_last", "reversed", "gaps"])),
        out_layout=draw(st.sampled_from(["packed", "channels_last", "gaps", "reversed"])),
        seed=draw(st.integers(0, 2**31)),
    )


@GPU_SETTINGS
@given(case=unpool_cases())
def test_max_unpool_matches_reference(device, case):
    rng = np.random.default_rng(case["seed"])
    dt, sizes, out_sizes = case["data_type"], case["sizes"], case["out_sizes"]
    x = random_values(dt, sizes, rng)
    if case["in_layout"] == "broadcast":  # one plane repeated over N and C
        x = np.broadcast_to(x[:1, :1], x.shape).copy()
    idx = random_indices(rng, int(np.prod(sizes)), int(np.prod(out_sizes)), case["index_type"]).reshape(sizes)
    output = pg.TensorDesc(dt, out_sizes, layout_strides(out_sizes, case["out_layout"]))
    desc = pg.MaxUnpoolingDesc(
        pg.TensorDesc(dt, sizes, layout_strides(sizes, case["in_layout"])),
        pg.TensorDesc(case["index_type"], sizes, layout_strides(sizes, case["idx_layout"])),
        output,
    )
    y = canary_tensor(device, output)
    assert device.compile(desc)(upload(device, x, case["in_layout"]), upload(device, idx, case["idx_layout"]), out=y) is y
    assert same_bits(y.numpy(), reference.max_unpool(x, idx, out_sizes))
    assert_canaries_intact(y)


def type_extremes(data_type):
    dtype = data_type.numpy
    if data_type.is_float:
        info = finfo(dtype)
        return np.array([info.min, info.max, info.tiny, -np.inf, np.inf, -0.0, np.nan, 1.0], dtype)
    info = np.iinfo(dtype)
    values = [info.min, info.max, info.min + 1, info.max - 1, 0, 1, 7, 3]
    if data_type.size == 8:  # beyond 2^53, where float64 would round
        values[5] = 2**53 + 1
        values[6] = -(2**53) - 1 if info.min < 0 else 2**63 + 1
    return np.array(values, dtype)


@pytest.mark.parametrize("index_type", INDEX_TYPES)
@pytest.mark.parametrize("data_type", ALL_TYPES, ids=lambda t: t.name)
def test_max_unpool_every_type_round_trips_max_pooling(device, data_type, index_type):
    rng = np.random.default_rng(int(data_type) * 7 + len(index_type))
    x = random_values(data_type, (2, 3, 6, 8), rng)
    x[0, 0, 0, :8] = type_extremes(data_type)  # window maxima among the extremes
    geometry = dict(window_size=(2, 2), strides=(2, 2))
    y, idx = pg.max_pool(x, return_indices=True, indices_type=index_type, device=device, **geometry)
    assert idx.dtype == np.dtype(index_type)
    out = pg.max_unpool(y, idx, x.shape, device=device)
    assert same_bits(out, reference.max_unpool(y, idx, x.shape))
    # each window's winner back in place, every other element the type's zero
    winners = np.zeros(x.size, bool)
    winners[idx.ravel().astype(np.int64)] = True
    assert same_bits(out.ravel()[winners], x.ravel()[winners])
    assert not out.ravel()[~winners].view(np.uint8).any()
    # overlapping windows: several outputs share an argmax (same value, any j wins)
    y, idx = pg.max_pool(x, (3, 3), strides=(1, 1), return_indices=True, indices_type=index_type, device=device)
    assert same_bits(pg.max_unpool(y, idx, (6, 8), device=device), reference.max_unpool(y, idx, x.shape))


@pytest.mark.parametrize("layout", ["channels_last", "reversed", "gaps"])
@pytest.mark.parametrize("data_type", [t for t in ALL_TYPES if t.size < 4], ids=lambda t: t.name)
def test_max_unpool_narrow_types_into_odd_output_strides(device, data_type, layout):
    # 8- and 16-bit outputs share u32 words between elements owned by different invocations
    rng = np.random.default_rng(9)
    x = random_values(data_type, (2, 3, 5, 3), rng)
    out_sizes = (2, 3, 7, 5)
    idx = random_indices(rng, x.size, int(np.prod(out_sizes)), "uint32").reshape(x.shape)
    output = pg.TensorDesc(data_type, out_sizes, layout_strides(out_sizes, layout))
    y = canary_tensor(device, output, lead_bytes=3)
    op = device.compile(pg.MaxUnpoolingDesc(pg.TensorDesc(data_type, x.shape), pg.TensorDesc("uint32", x.shape), output))
    op(device.upload(x), device.upload(idx), out=y)
    assert same_bits(y.numpy(), reference.max_unpool(x, idx, out_sizes))
    assert_canaries_intact(y)


@pytest.mark.parametrize("layout", ["packed", "channels_last"])
@pytest.mark.parametrize("data_type", ["uint8", "float16", "float32", "int64"])
def test_max_unpool_into_dense_outputs_at_any_offset(device, data_type, layout):
    # Dense outputs with a multiple of 4 elements are zeroed whole, then only the winners
    # are written; at a start that is not a multiple of 4 elements (of the output, or of
    # the indices, read in chunks) the two-pass program runs.
    rng = np.random.default_rng(11)
    dt = pg.DataType[data_type.upper()]
    x = random_values(dt, (2, 3, 5, 8), rng)   # rows of 8: indices in chunks
    out_sizes = (2, 3, 8, 10)
    idx = random_indices(rng, x.size, int(np.prod(out_sizes)), "uint64").reshape(x.shape)
    output = pg.TensorDesc(dt, out_sizes, layout_strides(out_sizes, layout))
    op = device.compile(pg.MaxUnpoolingDesc(pg.TensorDesc(dt, x.shape), pg.TensorDesc("uint64", x.shape), output))
    assert op._program.passes[0].kernel.file == "zero_fill.wgsl"
    want = reference.max_unpool(x, idx, out_sizes)
    xt, it = device.upload(x), device.upload(idx)
    for lead in range(0, 5 * dt.size, dt.size):
        y = canary_tensor(device, output, lead_bytes=32 + lead)
        for _ in range(2):  # the winner scratch is left clean for the next call
            op(xt, it, out=y)
            assert same_bits(y.numpy(), want)
        assert_canaries_intact(y)
    # indices at any offset: read in 4-element chunks only from a multiple of 4 elements
    for lead in range(0, 5 * 8, 8):
        shifted = canary_tensor(device, it.desc, lead_bytes=32 + lead)
        device.wgpu_device.queue.write_buffer(shifted.buffer, shifted.offset, idx.tobytes())
        y = op(xt, shifted)
        assert same_bits(y.numpy(), want)


@pytest.mark.parametrize("data_type", ["uint8", "float16", "float32", "int64"])
def test_max_unpool_channels_last_indices_in_runs_of_four_channels(device, data_type):
    # Channels-last indices with C a multiple of 4: the passes over input elements take runs
    # of four channels (ALONG_C); repeated indices (the largest j wins) and indices outside
    # the output (ignored) as elsewhere; C = 6 and indices at an offset that is no multiple
    # of 4 elements take the runs along W and the general program.
    rng = np.random.default_rng(12)
    dt = pg.DataType[data_type.upper()]
    for channels, along_c in ((8, True), (6, False)):
        x = random_values(dt, (2, channels, 5, 3), rng)
        out_sizes = (2, channels, 9, 7)
        idx = random_indices(rng, x.size, int(np.prod(out_sizes)), "uint32").reshape(x.shape)
        # every other index in its own (n, c) plane, as max pooling's are (the winner slots'
        # shorter way to an element's offset), the others anywhere
        out_plane = int(np.prod(out_sizes[2:]))
        planes = np.arange(x.size).reshape(x.shape) // int(np.prod(x.shape[2:]))
        own = planes * out_plane + rng.integers(0, out_plane, x.shape)
        idx[..., ::2] = own[..., ::2]
        idx.flat[::7] = idx.flat[3]                 # repeats
        idx.flat[5] = np.prod(out_sizes) + 3        # outside the output
        idx_desc = pg.TensorDesc("uint32", x.shape, layout_strides(x.shape, "channels_last"))
        for out_layout in ("packed", "channels_last"):
            output = pg.TensorDesc(dt, out_sizes, layout_strides(out_sizes, out_layout))
            with tuned_for(device, "cpu"):   # (the atomic pick: the GPU preset gathers on these planes)
                op = device.compile(pg.MaxUnpoolingDesc(pg.TensorDesc(dt, x.shape), idx_desc, output))
            passes = op._program.passes
            assert [dict(p.constants).get("ALONG_C", False) for p in passes[1:]] == [along_c] * 2
            assert [dict(p.constants)["SLOTS_AT_OFFSETS"] for p in passes[1:]] == [out_layout != "packed"] * 2
            want = reference.max_unpool(x, idx, out_sizes)
            xt, it = device.upload(x), device.upload(idx, strides=idx_desc.strides)
            assert same_bits(op(xt, it).numpy(), want)
            shifted = canary_tensor(device, it.desc, lead_bytes=32 + 4)   # (the general program)
            raw = device.wgpu_device.queue.read_buffer(it.buffer, it.offset, it.desc.total_size_in_bytes)
            device.wgpu_device.queue.write_buffer(shifted.buffer, shifted.offset, raw)
            assert same_bits(op(xt, shifted).numpy(), want)


def test_divisor_constants_divide_every_u32():
    # common/divide.wgsl's arithmetic, step by step in 32-bit words, with kernels.divisor_params'
    # constants (the GPU runs it in max_unpool_scatter.wgsl over channels-last outputs)
    def divide(n, d, magic, shift):
        a_lo, a_hi, b_lo, b_hi = n & 0xFFFF, n >> 16, magic & 0xFFFF, magic >> 16
        hi_lo = a_hi * b_lo
        cross = ((a_lo * b_lo) >> 16) + (hi_lo & 0xFFFF) + a_lo * b_hi
        assert cross < 2**32
        t = (a_hi * b_hi + (hi_lo >> 16) + (cross >> 16)) & 0xFFFFFFFF
        return (t + ((n - t) >> (0 if d == 1 else 1))) >> shift

    rng = np.random.default_rng(3)
    divisors = list(range(1, 300)) + [2**16 - 1, 2**16, 2**16 + 1, 2**31, 2**31 + 1, 2**32 - 1]
    divisors += [int(d) for d in rng.integers(1, 2**32, 500, dtype=np.uint64)]
    for d in divisors:
        params = kernels.divisor_params("size", d)
        assert params["size"] == d and 0 <= params["size_magic"] < 2**32
        top = (2**32 - 1) // d * d
        for n in [0, 1, d - 1, d, d + 1, top - 1, top, 2**31, 2**32 - 1] + [int(v) for v in rng.integers(0, 2**32, 50, dtype=np.uint64)]:
            n %= 2**32
            assert divide(n, d, params["size_magic"], params["size_shift"]) == n // d, (n, d)


def test_max_unpool_largest_j_wins_and_out_of_range_is_ignored(device):
    x = np.arange(1, 13, dtype=np.int16).reshape(1, 2, 6)
    # indices repeat; 2**32 + 1 (low word 1) is outside any output here
    idx = np.array([[3, 3, 0, 20, 3, 0], [5, 4, 4, 2**32 + 1, 7, 5]], np.uint64).reshape(1, 2, 6)
    out = pg.max_unpool(x, idx, (1, 2, 2), device=device)  # 4 elements: only 3 and 0 are inside
    np.testing.assert_array_equal(out.ravel(), [6, 0, 0, 5])
    out = pg.max_unpool(x, idx, (1, 2, 4), device=device)  # 8 elements: 5 (j = 6, 11), 4 (j = 7, 8), 7 too
    np.testing.assert_array_equal(out.ravel(), [6, 0, 0, 5, 9, 12, 0, 11])


def test_max_unpool_is_bit_identical_run_after_run_and_across_calls_in_a_batch(device):
    rng = np.random.default_rng(10)
    x = rng.standard_normal((2, 4, 16, 16)).astype(np.float32)
    crowded = rng.integers(0, 20, x.shape).astype(np.uint32)  # hundreds of j per target
    sparse = rng.integers(0, 2 * 4 * 32 * 32, x.shape).astype(np.uint32)
    op = device.compile(pg.MaxUnpoolingDesc(pg.TensorDesc(F32, x.shape), pg.TensorDesc("uint32", x.shape),
                                            pg.TensorDesc(F32, (2, 4, 32, 32))))
    xt, crowded_t, sparse_t = device.upload(x), device.upload(crowded), device.upload(sparse)
    want_crowded = reference.max_unpool(x, crowded, (2, 4, 32, 32))
    want_sparse = reference.max_unpool(x, sparse, (2, 4, 32, 32))
    with device.batch():  # the op's winner scratch is reused by every call
        outs = [op(xt, crowded_t), op(xt, sparse_t), op(xt, crowded_t), op(xt, sparse_t)]
    for out, want in zip(outs, [want_crowded, want_sparse] * 2):
        assert same_bits(out.numpy(), want)
    for _ in range(2):
        assert same_bits(op(xt, sparse_t).numpy(), want_sparse)


def test_max_unpool_folds_many_rows_over_the_grid(device):
    rng = np.random.default_rng(11)
    x = rng.integers(-100, 100, (2, 40000, 2)).astype(np.int8)
    idx = rng.integers(0, 2 * 40000 * 3, x.shape).astype(np.uint32)
    assert same_bits(pg.max_unpool(x, idx, (3,), device=device), reference.max_unpool(x, idx, (3,)))


@pytest.mark.parametrize("dims, shape, kernel, stride, padding", [
    (1, (2, 3, 11), 3, 2, 1),
    (2, (2, 3, 9, 8), 2, 2, 0),
    (2, (1, 2, 9, 9), 3, 2, 1),
    (3, (1, 2, 5, 6, 7), 2, 2, 1),
])
def test_max_unpool_matches_pytorch(device, dims, shape, kernel, stride, padding):
    torch = pytest.importorskip("torch")
    functional = torch.nn.functional
    rng = np.random.default_rng(12)
    x = torch.tensor(rng.standard_normal(shape).astype(np.float32))
    y, plane_idx = getattr(functional, f"max_pool{dims}d")(x, kernel, stride, padding, return_indices=True)
    want = getattr(functional, f"max_unpool{dims}d")(y, plane_idx, kernel, stride, padding, output_size=shape[2:])
    # PyTorch's indices count within each (n, c) plane; poolgpu's over the whole tensor
    planes = np.arange(shape[0] * shape[1]).reshape(shape[:2] + (1,) * dims) * int(np.prod(shape[2:]))
    idx = (plane_idx.numpy() + planes).astype(np.uint64)
    out = pg.max_unpool(y.numpy(), idx, shape[2:], device=device)
    assert same_bits(out, want.numpy())


def test_max_unpool_tensor_in_tensor_out_and_signed_numpy_indices(device):
    x = device.upload(np.array([5, 6, 7], np.uint8).reshape(1, 1, 3))
    idx = device.upload(np.array([2, 0, 9], np.uint32).reshape(1, 1, 3))
    out = pg.max_unpool(x, idx, (1, 1, 4))
    assert isinstance(out, pg.Tensor) and out.device is device
    np.testing.assert_array_equal(out.numpy().ravel(), [6, 0, 5, 0])
    # PyTorch-style int64 indices from NumPy: negative ones lie outside the output
    out = pg.max_unpool(np.array([5.0, 6.0, 7.0], np.float16).reshape(1, 1, 3),
                        np.array([2, -1, 0], np.int64).reshape(1, 1, 3), (4,), device=device)
    np.testing.assert_array_equal(out.ravel(), [7, 0, 5, 0])


# -- the gather over the output (Tuning.unpool_gather) ----------------------------------------

def gather_tuning(preset="cpu", smallest_plane=1):
    return dataclasses.replace(pg.Tuning.preset(preset), unpool_gather=True, unpool_gather_plane=smallest_plane)


def unpool_both_ways(device, desc, arrays, layouts, preset):
    """``desc`` run with the atomic winners and as the gather, under the preset's other
    choices: (the two outputs, the gather's kernel files)."""
    results = []
    for tuning in (dataclasses.replace(pg.Tuning.preset(preset), unpool_gather=False), gather_tuning(preset)):
        op = pg.Op(device, desc, tuning)
        y = canary_tensor(device, desc.output)
        op(*(upload(device, a, layout) for a, layout in zip(arrays, layouts)), out=y)
        assert_canaries_intact(y)
        results.append(y.numpy())
    return results, [p.kernel.file for p in pg.kernels.program_for(desc, gather_tuning(preset)).passes]


@st.composite
def pooled_unpool_cases(draw):
    """Indices written by max pooling (inside their windows: the gather's bands), of any
    geometry, some overwritten by strays (elsewhere in the plane, in other planes, past the
    output) or by repeats of a neighbour's (ties: the largest j wins), unpooled into the
    default output size or a larger one."""
    dims = draw(st.integers(1, 3))
    window = tuple(draw(st.integers(1, 4)) for _ in range(dims))
    strides = tuple(draw(st.integers(1, 3)) for _ in range(dims))
    padding = tuple(draw(st.integers(0, (k - 1) // 2)) for k in window)
    spatial = tuple(draw(st.integers(k, 3 * k + 4)) for k in window)
    return dict(
        sizes=(draw(st.integers(1, 2)), draw(st.sampled_from([1, 3, 4, 8]))) + spatial,
        window=window, strides=strides, padding=padding,
        extra=tuple(draw(st.sampled_from([0, 0, 1, 3])) for _ in range(dims)),
        strays=draw(st.sampled_from([0.0, 0.0, 0.05, 0.5])), ties=draw(st.sampled_from([0.0, 0.2])),
        data_type=draw(st.sampled_from([pg.DataType.FLOAT32, pg.DataType.FLOAT16, pg.DataType.BFLOAT16,
                                        pg.DataType.INT8, pg.DataType.INT64])),
        index_type=draw(st.sampled_from(INDEX_TYPES)),
        layout=draw(st.sampled_from(["packed", "packed", "channels_last", "gaps", "reversed"])),
        preset=draw(st.sampled_from(["cpu", "gpu"])),
        seed=draw(st.integers(0, 2**31)),
    )


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=pooled_unpool_cases())
def test_unpool_gather_gives_the_atomic_winners_bits(device, case):
    rng = np.random.default_rng(case["seed"])
    dt, sizes = case["data_type"], case["sizes"]
    x = random_values(dt, sizes, rng)
    geometry = dict(window_size=case["window"], strides=case["strides"], start_padding=case["padding"],
                    end_padding=case["padding"])
    y_ref, idx = reference.max_pool(x, **geometry)
    out_sizes = sizes[:2] + tuple(s + e for s, e in zip(sizes[2:], case["extra"]))
    if any(case["extra"]):  # the same positions, counted in the larger output
        coords = np.unravel_index(idx.astype(np.int64), sizes)
        idx = np.ravel_multi_index(coords, out_sizes)
    idx = idx.astype(case["index_type"])
    flat = idx.ravel()
    pick = rng.random(flat.size)
    flat[pick < case["strays"]] = rng.integers(0, np.prod(out_sizes) + 4, (pick < case["strays"]).sum())
    ties = (pick >= case["strays"]) & (pick < case["strays"] + case["ties"])
    flat[ties] = flat[np.maximum(np.flatnonzero(ties) - 1, 0)]
    layout = case["layout"]
    desc = pg.MaxUnpoolingDesc(pg.TensorDesc(dt, y_ref.shape, layout_strides(y_ref.shape, layout)),
                               pg.TensorDesc(case["index_type"], idx.shape, layout_strides(idx.shape, layout)),
                               pg.TensorDesc(dt, out_sizes, layout_strides(out_sizes, layout)))
    (atomic, gathered), files = unpool_both_ways(device, desc, (y_ref, idx), (layout, layout), case["preset"])
    assert files[:2] == ["max_unpool_strays.wgsl", "max_unpool_gather.wgsl"]
    want = reference.max_unpool(y_ref, idx, out_sizes)
    assert same_bits(atomic, want)
    assert same_bits(gathered, want)


@pytest.mark.parametrize("preset", ["cpu", "gpu"])
@pytest.mark.parametrize("layout", ["packed", "channels_last"])
def test_unpool_gather_runs_of_four_and_their_fallback_at_any_offset(device, layout, preset):
    # rows of 16 (runs of four along W) or 8 channels (four along C, their indices in
    # chunks): at offsets that are not multiples of 4 elements the runs of one read the
    # same candidates; strays left in the scratch by one call never reach the next
    rng = np.random.default_rng(13)
    sizes, out_sizes = (2, 8, 6, 8), (2, 8, 12, 16)
    x = random_values(pg.DataType.FLOAT16, (2, 8, 12, 16), rng)
    y, pooled = reference.max_pool(x, (3, 3), strides=(2, 2), start_padding=(1, 1), end_padding=(1, 1))
    pooled = pooled.astype(np.uint32)
    stray = pooled.copy()
    stray.ravel()[::7] = rng.integers(0, np.prod(out_sizes), stray.size)[::7]
    strides = layout_strides(sizes, layout)
    desc = pg.MaxUnpoolingDesc(pg.TensorDesc("float16", sizes, strides), pg.TensorDesc("uint32", sizes, strides),
                               pg.TensorDesc("float16", out_sizes, layout_strides(out_sizes, layout)))
    tuning = gather_tuning(preset)
    program = pg.kernels.program_for(desc, tuning)
    assert dict(program.passes[1].constants)["RUN"] == 4 and program.fallback is not None
    assert dict(program.fallback.passes[1].constants)["RUN"] == 1
    op = pg.Op(device, desc, tuning)
    xt = upload(device, y, layout)
    for lead in (0, 2, 4, 6):
        for idx in (stray, pooled, stray):
            it = canary_tensor(device, desc.indices, lead_bytes=32 + 4 * lead)
            device.wgpu_device.queue.write_buffer(it.buffer, it.offset, _packed_as(idx, it.desc.strides))
            out = canary_tensor(device, desc.output, lead_bytes=32 + 2 * lead)
            op(xt, it, out=out)
            assert same_bits(out.numpy(), reference.max_unpool(y, idx, out_sizes)), (lead, idx is pooled)
            assert_canaries_intact(out)


def _packed_as(array, strides):
    """``array``'s bytes laid out at ``strides`` (elements, a permutation of packed ones)."""
    order = np.argsort(strides)[::-1]
    return np.ascontiguousarray(array.transpose(order)).tobytes()


def test_unpool_gather_strays_into_other_planes_and_ties_across_them(device):
    # every j of plane 0 names plane 1's elements and the reverse; plane 2 keeps its
    # pooled indices; repeats across planes: the largest j wins wherever it lies
    x = np.arange(1, 3 * 16 + 1, dtype=np.float32).reshape(1, 3, 4, 4)
    pooled_x = np.zeros((1, 3, 8, 8), np.float32)
    _, pooled = reference.max_pool(pooled_x, (2, 2), strides=(2, 2))
    idx = pooled.astype(np.uint32).copy()
    idx[0, 0], idx[0, 1] = pooled[0, 1], pooled[0, 0]
    idx[0, 2, 0, 0] = idx[0, 0, 3, 3]   # plane 2's first names plane 1's last window too
    want = reference.max_unpool(x, idx, (1, 3, 8, 8))
    for preset in ("cpu", "gpu"):
        out = pg.Op(device, pg.MaxUnpoolingDesc(pg.TensorDesc(F32, x.shape), pg.TensorDesc("uint32", x.shape),
                                                pg.TensorDesc(F32, (1, 3, 8, 8))), gather_tuning(preset))(
            device.upload(x), device.upload(idx))
        assert same_bits(out.numpy(), want)


# The gather from a plane size on (Tuning.unpool_gather_plane): output planes below it take the
# atomic pick, planes of that size and more the gather, each with the other path's bits; the GPU
# preset leaves global pooling's 7 x 7 planes (bench case C) to the atomic pick and takes the
# gather on case B's 56 x 56.
@pytest.mark.parametrize("preset", ["cpu", "gpu"])
def test_unpool_gather_from_a_plane_size(device, preset):
    rng = np.random.default_rng(17)
    smallest = 64
    for in_sizes, out_sizes, window in (((2, 3, 1, 1), (2, 3, 7, 7), (7, 7)),      # 49 elements: below
                                        ((2, 3, 4, 4), (2, 3, 8, 8), (2, 2))):     # 64: from it on
        x = random_values(F32, out_sizes, rng)
        y, idx = reference.max_pool(x, window, strides=window)
        idx = idx.astype(np.uint32)
        idx.ravel()[::5] = rng.integers(0, idx.size * 4, idx.size)[::5]   # strays, some into other planes
        desc = pg.MaxUnpoolingDesc(pg.TensorDesc(F32, in_sizes), pg.TensorDesc("uint32", in_sizes),
                                   pg.TensorDesc(F32, out_sizes))
        want = reference.max_unpool(y, idx, out_sizes)
        tuning = gather_tuning(preset, smallest)
        gathers = np.prod(out_sizes[2:]) >= smallest
        files = [p.kernel.file for p in pg.kernels.program_for(desc, tuning).passes]
        assert ("max_unpool_gather.wgsl" in files) == gathers, files
        other = gather_tuning(preset) if not gathers else dataclasses.replace(tuning, unpool_gather=False)
        got, theirs = (pg.Op(device, desc, t)(device.upload(y), device.upload(idx)).numpy() for t in (tuning, other))
        assert same_bits(got, want) and same_bits(theirs, want), (out_sizes, files)
    for sizes, gathers in (((8, 512, 7, 7), False), ((8, 256, 56, 56), True)):
        pooled = sizes[:2] + (1, 1) if sizes[2] == 7 else sizes[:2] + (28, 28)
        desc = pg.MaxUnpoolingDesc(pg.TensorDesc(F32, pooled), pg.TensorDesc("uint32", pooled), pg.TensorDesc(F32, sizes))
        files = [p.kernel.file for p in pg.kernels.program_for(desc, pg.Tuning.preset(preset)).passes]
        assert ("max_unpool_gather.wgsl" in files) == (gathers and preset == "gpu"), (sizes, files)


# -- validation (no GPU) ---------------------------------------------------------------------

X = pg.TensorDesc(F32, (2, 3, 4, 4))
IDX = pg.TensorDesc("uint32", (2, 3, 4, 4))
Y = pg.TensorDesc(F32, (2, 3, 8, 8))


def unpool(**kwargs):
    return pg.MaxUnpoolingDesc(kwargs.get("input", X), kwargs.get("indices", IDX), kwargs.get("output", Y))


def test_max_unpooling_description_roles():
    d = unpool()
    assert d.input_tensors() == (("input", X), ("indices", IDX))
    assert d.output_tensors() == (("output", Y),)
    assert d == unpool() and hash(d) == hash(unpool())
    # spatial sizes are free, even smaller than the input's
    assert unpool(output=pg.TensorDesc(F32, (2, 3, 2, 9))).output.sizes == (2, 3, 2, 9)


@pytest.mark.parametrize("make, field", [
    (lambda: unpool(output=None), "output"),
    (lambda: unpool(input=None), "input"),
    (lambda: unpool(indices="uint32"), "indices"),
    (lambda: unpool(indices=pg.TensorDesc("int64", (2, 3, 4, 4))), "indices.data_type"),
    (lambda: unpool(indices=pg.TensorDesc("uint16", (2, 3, 4, 4))), "indices.data_type"),
    (lambda: unpool(indices=pg.TensorDesc("uint32", (2, 3, 4, 5))), "indices.sizes"),
    (lambda: unpool(output=pg.TensorDesc(F32, (2, 3, 8))), "output.sizes"),
    (lambda: unpool(output=pg.TensorDesc(F32, (2, 4, 8, 8))), "output.sizes"),
    (lambda: unpool(output=pg.TensorDesc(F32, (1, 3, 8, 8))), "output.sizes"),
    (lambda: unpool(output=pg.TensorDesc("float16", (2, 3, 8, 8))), "output.data_type"),
    (lambda: unpool(output=pg.TensorDesc(F32, (2, 3, 8, 8), strides=(192, 64, 0, 1))), "output.strides"),
])
def test_max_unpooling_validation_names_the_field(make, field):
    with pytest.raises(pg.ValidationError) as e:
        make()
    assert e.value.field == field
    assert str(e.value).startswith(field)


def test_functional_max_unpool_validates_output_sizes(device):
    x, idx = np.zeros((1, 2, 3), np.float32), np.zeros((1, 2, 3), np.uint32)
    with pytest.raises(pg.ValidationError) as e:
        pg.max_unpool(x, idx, (1, 2, 3, 4), device=device)
    assert e.value.field == "output_sizes"
    with pytest.raises(pg.ValidationError) as e:
        pg.max_unpool(x, idx, (1, 3, 5), device=device)
    assert e.value.field == "output.sizes"
    with pytest.raises(pg.ValidationError) as e:
        pg.max_unpool(x, idx.astype(np.uint16), (5,), device=device)
    assert e.value.field == "indices.data_type"


# -- ONNX MaxUnpool ----------------------------------------------------------------------------


@pytest.mark.parametrize("shape, kernel, strides, pads, output_shape", [
    # input shapes that MaxPool's output unpools back to exactly (ONNX's reference refuses
    # indices beyond the inferred shape); with output_shape, only where it is the inferred
    # shape: elsewhere poolgpu reads the indices in output_shape, not ONNX's reference's way
    # (test_max_unpool_output_shape_holds_the_indices)
    ((2, 3, 8, 6), (2, 2), (2, 2), None, None),
    ((1, 2, 9), (3,), (2,), (1, 1), None),
    ((1, 2, 9), (3,), (2,), (1, 1), (1, 2, 9)),
    ((1, 2, 4, 5, 7), (2, 3, 2), (2, 2, 2), (0, 1, 0, 0, 1, 1), None),
])
def test_onnx_max_unpool_matches_onnx_reference(device, shape, kernel, strides, pads, output_shape):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    from onnx.reference import ReferenceEvaluator
    from poolgpu import onnx as pgo

    rng = np.random.default_rng(14)
    x = rng.standard_normal(shape).astype(np.float32)
    y, idx = pgo.max_pool(device.upload(x), kernel, pads=pads, strides=strides, return_indices=True)
    assert idx.data_type == pg.DataType.INT64  # ONNX's indices, passed on as a Tensor
    got = pgo.max_unpool(y, idx, kernel, pads=pads, strides=strides, output_shape=output_shape).numpy()
    attrs = dict(kernel_shape=list(kernel), strides=list(strides))
    if pads:
        attrs["pads"] = list(pads)
    inputs = ["x", "i"] + (["shape"] if output_shape else [])
    node = helper.make_node("MaxUnpool", inputs, ["y"], **attrs)
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, None), helper.make_tensor_value_info("i", TensorProto.INT64, None)]
        + ([helper.make_tensor_value_info("shape", TensorProto.INT64, None)] if output_shape else []),
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    feeds = {"x": y.numpy(), "i": idx.numpy()}
    if output_shape:
        feeds["shape"] = np.array(output_shape, np.int64)
    (want,) = ReferenceEvaluator(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)])).run(None, feeds)
    assert same_bits(got, want)
    assert onnx is not None


@pytest.mark.parametrize("shape, kernel, strides, pads, output_shape", [
    ((1, 2, 9), (3,), (2,), (1, 1), (1, 2, 12)),          # larger than the inferred shape
    ((1, 2, 4, 5, 7), (2, 3, 2), (2, 2, 2), (0, 1, 0, 0, 1, 1), (1, 2, 5, 7, 8)),
    ((1, 1, 5, 5), (2, 2), (2, 2), None, (1, 1, 5, 5)),   # odd sizes: MaxPool's input shape
])
def test_max_unpool_output_shape_holds_the_indices(device, shape, kernel, strides, pads, output_shape):
    """With output_shape the indices are flat positions in a tensor of that shape (ONNX
    Runtime's and PyTorch's reading)."""
    from poolgpu import onnx as pgo

    x = np.random.default_rng(15).standard_normal(shape).astype(np.float32)
    y, idx = pgo.max_pool(device.upload(x), kernel, pads=pads, strides=strides, return_indices=True)
    got = pgo.max_unpool(y, idx, kernel, pads=pads, strides=strides, output_shape=output_shape).numpy()
    want = np.zeros(output_shape, np.float32)
    flat = idx.numpy().ravel()
    keep = flat < want.size
    want.ravel()[flat[keep]] = y.numpy().ravel()[keep]
    assert same_bits(got, want)


def test_onnx_max_unpool_rejects_an_output_shape_of_other_n_c_or_rank(device):
    from poolgpu import onnx as pgo

    x, idx = np.ones((1, 1, 2, 2), np.float32), np.zeros((1, 1, 2, 2), np.int64)
    for shape in ((1, 2, 4, 4), (2, 1, 4, 4), (1, 1, 16)):
        with pytest.raises(pg.ValidationError) as e:
            pgo.max_unpool(x, idx, (2, 2), strides=(2, 2), output_shape=shape, device=device)
        assert e.value.field == "output_shape"
