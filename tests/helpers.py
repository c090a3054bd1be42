"""Test helpers: random data per type, layouts expressed as strides, canary-guarded outputs."""

import contextlib
import copy
import dataclasses

import numpy as np
import wgpu

import poolgpu as pg

ALL_TYPES = tuple(pg.DataType)
FLOAT_TYPES = (pg.DataType.FLOAT32, pg.DataType.FLOAT16)
CANARY = 0xA5


def random_values(data_type, shape, rng, specials=True):
    """Random values over the type's whole range, with its extremes (and for floats NaN,
    infinities, signed zeros) sprinkled in, and some repeats so that ties happen."""
    data_type = pg.DataType.of(data_type)
    dtype = data_type.numpy
    count = int(np.prod(shape))
    if data_type.is_float:
        values = rng.standard_normal(count) * 4
        if specials:
            extra = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-7, -65504.0], dtype=np.float64)
            mask = rng.random(count) < 0.08
            values[mask] = rng.choice(extra, mask.sum())
        values = values.astype(dtype)
    else:
        info = np.iinfo(dtype)
        raw = rng.integers(0, 2**64, size=count, dtype=np.uint64, endpoint=False)
        values = raw.view(np.int64).astype(dtype) if info.min < 0 else raw.astype(dtype)
        if specials:
            mask = rng.random(count) < 0.1
            values[mask] = rng.choice(np.array([info.min, info.max, 0, 1], dtype=dtype), mask.sum())
    # repeats make ties between window elements likely
    repeat = rng.random(count) < 0.15
    if count > 1 and repeat.any():
        values[repeat] = values[rng.integers(0, count, repeat.sum())]
    return values.reshape(shape)


def finfo(dtype):
    """np.finfo of a float type, ml_dtypes' for bfloat16 (NumPy's refuses it)."""
    if np.dtype(dtype).name == "bfloat16":
        import ml_dtypes
        return ml_dtypes.finfo(dtype)
    return np.finfo(dtype)


def layout_strides(sizes, layout, rng=None):
    """Strides (elements) for a named layout of a {N, C, spatial...} tensor."""
    sizes = tuple(sizes)
    rank = len(sizes)
    if layout == "packed":
        return None
    if layout == "channels_last":  # NHWC / NDHWC / NWC
        order = [0] + list(range(2, rank)) + [1]
    elif layout == "reversed":  # W outermost: worst-case gathers
        order = list(range(rank - 1, -1, -1))
    elif layout == "gaps":  # packed, but every dimension padded by one element
        strides, step = [0] * rank, 1
        for d in range(rank - 1, -1, -1):
            strides[d] = step
            step *= sizes[d] + 1
        return tuple(strides)
    elif layout == "broadcast":  # N and C broadcast (inputs only)
        return (0, 0) + pg.TensorDesc("uint8", (1, 1) + sizes[2:]).strides[2:]
    else:
        raise ValueError(layout)
    strides, step = [0] * rank, 1
    for d in reversed(order):
        strides[d] = step
        step *= sizes[d]
    return tuple(strides)


def upload(device, array, layout="packed"):
    return device.upload(array, strides=layout_strides(array.shape, layout))


def canary_tensor(device, desc, lead_bytes=32, tail_bytes=20):
    """A tensor over a buffer filled with CANARY bytes, starting `lead_bytes` in.  The
    default start is a multiple of 4 elements of every type, so the chunked kernels run
    (an unaligned start, e.g. 12, tests their fallback instead)."""
    lead = lead_bytes - lead_bytes % desc.data_type.size
    size = lead + desc.total_size_in_bytes + tail_bytes
    size = (size + 3) & ~3
    buffer = device.wgpu_device.create_buffer_with_data(
        data=np.full(size, CANARY, np.uint8),
        usage=wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST,
    )
    return device.wrap(buffer, desc, offset=lead)


def assert_canaries_intact(tensor):
    """Every byte of the buffer outside the tensor's elements still holds CANARY."""
    data = np.frombuffer(tensor.device.wgpu_device.queue.read_buffer(tensor.buffer), np.uint8)
    desc = tensor.desc
    item = desc.data_type.size
    offsets = np.zeros(1, np.int64)
    for size, stride in zip(desc.sizes, desc.strides):
        offsets = (offsets[:, None] + np.arange(size) * stride).ravel()
    owned = np.zeros(data.size, bool)
    starts = tensor.offset + offsets * item
    for b in range(item):
        owned[starts + b] = True
    outside = data[~owned]
    bad = np.nonzero(outside != CANARY)[0]
    assert bad.size == 0, f"{bad.size} bytes outside the tensor were overwritten"


def same_bits(a, b):
    """Exact equality including NaN payloads and signed zeros."""
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def sentinel_input(device, array, strides=None, lead_bytes=16, tail_bytes=32):
    """An input tensor whose buffer is all-ones bytes (NaN for floats, the maximum for
    unsigned types) everywhere but its elements: before and after it and in the gaps of its
    strides.  A kernel reading anything but the input's elements pools such a value, which
    then shows in max and average results."""
    array = np.asarray(array)
    desc = pg.TensorDesc(array.dtype, array.shape, strides)
    item = desc.data_type.size
    lead = lead_bytes - lead_bytes % item
    raw = np.full((lead + desc.total_size_in_bytes + tail_bytes + 3) & ~3, 0xFF, np.uint8)
    flat = raw[lead: lead + desc.total_size_in_bytes // item * item].view(array.dtype)
    # A zero stride repeats one element: write the first entry along such dimensions.
    keep = tuple(slice(0, 1) if st == 0 else slice(None) for st in desc.strides)
    target = np.lib.stride_tricks.as_strided(flat, array[keep].shape, tuple(s * item for s in desc.strides))
    target[...] = array[keep]
    buffer = device.wgpu_device.create_buffer_with_data(
        data=raw, usage=wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
    )
    return device.wrap(buffer, desc, offset=lead)


def draw_row_geometry(data):
    """A random 2-D window geometry (hypothesis ``st.data()``) for the row kernels' tests:
    small along H, wider along W, any strides, dilations and paddings."""
    from hypothesis import strategies as st

    draw = lambda low, high: data.draw(st.integers(low, high))  # noqa: E731
    return dict(window_size=(draw(1, 3), draw(1, 5)), strides=(draw(1, 3), draw(1, 4)),
                dilations=(draw(1, 2), draw(1, 3)), start_padding=(draw(0, 1), draw(0, 3)),
                end_padding=(draw(0, 1), draw(0, 3)))


@contextlib.contextmanager
def tuned_for(device, tuning):
    """Ops compiled inside compile for ``tuning`` (a pg.Tuning, or a preset's name: "cpu"
    or "gpu"), its specialised kernels from the first call (``generic_calls=0``)."""
    before = device.tuning
    tuning = copy.copy(as_tuning(tuning))
    object.__setattr__(tuning, "generic_calls", 0)  # (not replace(): some tests go past the limits on purpose)
    device.tuning = tuning
    try:
        yield device
    finally:
        device.tuning = before


def forward_walk(desc, tuning=None):
    """The window walk of the forward pooling ``desc`` under ``tuning`` (default: the CPU
    preset), read off its program (poolgpu.kernels.window's kernels by walk)."""
    kernel = pg.kernels.program_for(desc, tuning).passes[0].kernel
    window = pg.kernels.window
    walk = next((walk for family in (window.MAX_POOL, window.AVERAGE_POOL, window.LP_POOL)
                 for walk, k in family.items() if k == kernel), "bins")  # (else adaptive pooling's bins)
    return "general" if walk in window.GENERAL_ENTRIES else walk  # (the general walk's other entry points)


#: The GPU kernel variants (Tuning fields written for GPUs, docs/performance.md, "Kernel
#: variants") at a value that takes each, and at the value that leaves each at the kernels it
#: replaces: the tests run both under both presets.  Each preset takes those its kind of
#: adapter measured faster: CPU_TAKEN on lavapipe, GPU_TAKEN on a GPU.
_VARIANTS = {"plane_chunks": (4, 1), "channels_written_out": (True, False), "whole_workgroups": (True, False),
             "packed_planes": (True, False), "unpool_gather": (True, False), "fractional_walks": (True, False),
             "paired_words": (True, False), "lp_gradient_one_pass": (True, False),
             "flat_lines_under": (7, 1), "roi_align_channels": (4, 1), "roi_align_channels_last": (True, False),
             "roi_align_grad_channels": (64, 1), "roi_pool_channels": (4, 1), "roi_pool_channel_lanes": (True, False),
             "roi_pool_grad_channel_lanes": (True, False), "any_rows": (True, False)}   # field: (taken, left)
VARIANT_FIELDS = {field: taken for field, (taken, _) in _VARIANTS.items()}
VARIANTS_LEFT = {field: left for field, (_, left) in _VARIANTS.items()}
CPU_TAKEN = ("packed_planes", "fractional_walks", "paired_words", "lp_gradient_one_pass", "flat_lines_under",
             "roi_align_channels", "roi_align_channels_last", "roi_align_grad_channels", "roi_pool_channels",
             "roi_pool_channel_lanes", "roi_pool_grad_channel_lanes", "any_rows")
GPU_TAKEN = ("packed_planes", "fractional_walks", "paired_words", "channels_written_out", "unpool_gather",
             "roi_align_channels")
#: The sizes from which a preset takes a variant, at a value that takes it at every size: set with
#: the variants taken, so that small tensors run them too (Tuning.unpool_gather_plane: for_gpu()
#: leaves the smallest planes to the kernels the gather replaces).
EVERY_SIZE = {"unpool_gather_plane": 1}
#: Tuning.plane_workgroups, a variant too, at a value that cuts the planes of small tensors
#: (taken apart from the others, which it would hide: small planes get whole workgroups).
PLANE_WORKGROUPS = 512


def as_tuning(tuning) -> pg.Tuning:
    """``tuning`` itself, or the preset it names ("cpu" or "gpu")."""
    return tuning if isinstance(tuning, pg.Tuning) else pg.Tuning.preset(tuning)


def with_variants(tuning, **fields):
    """``tuning`` (a pg.Tuning or a preset's name) with every GPU kernel variant taken at every
    size, and ``fields`` besides."""
    return dataclasses.replace(as_tuning(tuning), **{**VARIANT_FIELDS, **EVERY_SIZE, **fields})


def without_variants(tuning, **fields):
    """``tuning`` (a pg.Tuning or a preset's name) with every GPU kernel variant left at the
    kernels it replaces, and ``fields`` besides."""
    return dataclasses.replace(as_tuning(tuning), **VARIANTS_LEFT, **fields)
