"""The device layer: adapters, tensors, compiled operators, batches and errors."""

import dataclasses
import os
import re
import subprocess
import sys

import numpy as np
import pytest
import wgpu

import poolgpu as pg
import reference
from helpers import ALL_TYPES, layout_strides, random_values, same_bits, tuned_for

# The adapter is this file's subject: every case runs on every adapter (conftest.py).
pytestmark = pytest.mark.every_adapter


def test_list_adapters_describes_each_adapter():
    adapters = pg.list_adapters()
    for a in adapters:
        assert {"name", "backend", "type", "features"} <= set(a)
        assert a["backend"] in {"vulkan", "metal", "d3d12", "opengl"}


def test_a_misspelt_backend_is_an_argument_mistake_a_missing_adapter_a_device_error():
    for backend in ("vulcan", "glide", 3):
        with pytest.raises(pg.ValidationError, match="^backend: expected one of 'vulkan'"):
            pg.Device(backend=backend)
    with pytest.raises(pg.ValidationError, match="^adapter"):
        pg.Device(adapter=5)
    with pytest.raises(pg.ValidationError, match="^wgpu_device"):
        pg.Device(wgpu_device="gpu")
    with pytest.raises(pg.DeviceError, match="mesa-vulkan-drivers"):
        pg.Device(adapter="no adapter has this name")
    code = "import poolgpu as pg\ntry:\n    pg.default_device()\nexcept pg.ValidationError as e:\n    print(e.field)"
    out = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, POOLGPU_BACKEND="vulcan"),
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "POOLGPU_BACKEND"


def test_default_device_follows_the_environment(device):
    code = "import poolgpu as pg; d = pg.default_device(); assert d is pg.default_device(); print(d.backend)"
    env = dict(os.environ, POOLGPU_BACKEND=device.backend)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == device.backend


@pytest.mark.parametrize("data_type", ALL_TYPES, ids=lambda t: t.name)
@pytest.mark.parametrize("layout", ["packed", "channels_last", "gaps", "reversed"])
def test_upload_and_read_back_every_type_and_layout(device, data_type, layout):
    x = random_values(data_type, (2, 3, 5), np.random.default_rng(0))
    t = device.upload(x, strides=layout_strides(x.shape, layout))
    assert t.sizes == x.shape and t.data_type == data_type and t.device is device
    assert t.desc.strides == (layout_strides(x.shape, layout) or t.desc.strides)
    assert same_bits(t.numpy(), x)


def test_upload_with_broadcast_strides_stores_one_plane(device):
    x = np.broadcast_to(np.arange(4, dtype=np.int16).reshape(1, 1, 4), (3, 2, 4))
    t = device.upload(x, strides=(0, 0, 1))
    assert t.desc.total_size_in_bytes == 8
    assert same_bits(t.numpy(), np.ascontiguousarray(x))


USAGE = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST


def test_wrap_views_an_existing_buffer_at_an_offset(device):
    values = np.arange(40, dtype=np.float32)
    buffer = device.wgpu_device.create_buffer_with_data(data=values, usage=USAGE)
    t = device.wrap(buffer, pg.TensorDesc("float32", (1, 2, 3, 4)), offset=8 * 4)
    np.testing.assert_array_equal(t.numpy(), values[8:32].reshape(1, 2, 3, 4))
    assert t.buffer is buffer and t.offset == 32
    y = device.compile(pg.MaxPoolingDesc(t.desc, window_size=(3, 4)))(t)
    np.testing.assert_array_equal(y.numpy().ravel(), [19, 31])
    with pytest.raises(pg.ValidationError, match="^offset"):
        device.wrap(buffer, pg.TensorDesc("float32", (1, 1, 4)), offset=2)
    with pytest.raises(pg.ValidationError, match="^desc.total_size_in_bytes"):
        device.wrap(buffer, pg.TensorDesc("float32", (1, 1, 40)), offset=4)


# What wgpu would refuse once the tensor is bound or copied, refused by wrap instead.  The
# cases run in a child process, one after the other: before wrap refused them, the first
# aborted the process (wgpu-native panics in wgpuQueueSubmit, exit code 134), so an abort
# is the failure here, of the case it happened in.
WRAP_CASES = {
    "another_device": ("buffer = other.create_buffer(size=256, usage=USAGE)", "buffer: the buffer belongs to another wgpu device"),
    "no_copy_src": ("buffer = wgpu_device.create_buffer(size=256, usage=USAGE & ~wgpu.BufferUsage.COPY_SRC)",
                    "buffer: the buffer lacks COPY_SRC usage"),
    "no_copy_dst": ("buffer = wgpu_device.create_buffer(size=256, usage=USAGE & ~wgpu.BufferUsage.COPY_DST)",
                    "buffer: the buffer lacks COPY_DST usage"),
    "no_storage": ("buffer = wgpu_device.create_buffer(size=256, usage=USAGE & ~wgpu.BufferUsage.STORAGE)",
                   "buffer: the buffer lacks STORAGE usage"),
    "mapped": ("buffer = wgpu_device.create_buffer(size=256, usage=USAGE, mapped_at_creation=True)",
               "buffer: the buffer is mapped (map_state 'mapped'); unmap it first"),
    "odd_size": ("buffer = wgpu_device.create_buffer(size=258, usage=USAGE)", "buffer: its size 258 is no multiple of 4"),
    "beyond_the_end": ("buffer = wgpu_device.create_buffer(size=256, usage=USAGE); offset = 4",
                       "desc.total_size_in_bytes: the tensor needs bytes [4, 260)"),
}
_WRAP_CHILD = """
import numpy as np, sys, wgpu, poolgpu as pg
USAGE = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
device = pg.Device(backend={backend!r}, adapter={adapter!r})
wgpu_device, other = device.wgpu_device, pg.Device(backend={backend!r}, adapter={adapter!r}).wgpu_device
for case, make in {cases!r}.items():
    print("CASE", case, flush=True)
    offset = 0
    exec(make)
    try:
        t = device.wrap(buffer, pg.TensorDesc("float32", (1, 1, 8, 8)), offset=offset)
    except pg.ValidationError as e:
        print("REFUSED", e, flush=True)
    else:  # what came next before wrap refused it
        y = pg.max_pool(t, 2, strides=2)
        print("COMPUTED", t.numpy().sum(), y.numpy().sum(), flush=True)
"""


def test_wrap_refuses_what_wgpu_would_refuse_in_a_child_process(device):
    code = _WRAP_CHILD.format(backend=device.backend, adapter=device.name,
                              cases={case: make for case, (make, _) in WRAP_CASES.items()})
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    answers, case = {}, None
    for line in out.stdout.splitlines():
        if line.startswith("CASE "):
            case = line[5:]
        else:
            answers[case] = line
    assert out.returncode == 0, f"the process ended with exit code {out.returncode} in case {case}: " \
                                f"{out.stderr[-2000:]}"
    for case, (_, message) in WRAP_CASES.items():
        assert answers.get(case, "").startswith("REFUSED " + message), (case, answers.get(case))


def test_recording_into_a_pass_of_another_device_is_refused(device):
    other = pg.Device(backend=device.backend, adapter=device.name)
    encoder = other.wgpu_device.create_command_encoder()
    compute_pass = encoder.begin_compute_pass()
    with pytest.raises(pg.ValidationError, match="^compute_pass: the pass belongs to another wgpu device"):
        with device.recording_into(compute_pass):
            pass
    with pytest.raises(pg.ValidationError, match="^compute_pass"):
        with device.recording_into("pass"):
            pass
    compute_pass.end()
    other.wgpu_device.queue.submit([encoder.finish()])
    with pytest.raises(pg.ValidationError, match="^desc"):
        device.empty((1, 1, 4))


def test_compile_caches_ops_and_out_writes_in_place(device):
    desc = pg.MaxPooling1Desc(pg.TensorDesc("float32", (1, 1, 6)), output_indices="uint32", window_size=(2,), strides=(2,))
    op = device.compile(desc)
    assert device.compile(pg.MaxPooling1Desc(pg.TensorDesc("float32", (1, 1, 6)), output_indices="uint32",
                                             window_size=(2,), strides=(2,))) is op
    x = device.upload(np.array([[[3, 1, 4, 1, 5, 9]]], np.float32))
    y, i = op(x)
    y2, i2 = device.empty(desc.output), device.empty(desc.output_indices)
    assert op(x, out=(y2, i2)) == (y2, i2)
    for a, b in ((y, y2), (i, i2)):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    np.testing.assert_array_equal(y.numpy().ravel(), [3, 4, 9])
    np.testing.assert_array_equal(i.numpy().ravel(), [0, 2, 5])


def test_op_checks_its_tensors(device):
    desc = pg.MaxPoolingDesc(pg.TensorDesc("float32", (1, 1, 6)), window_size=(2,))
    op = device.compile(desc)
    with pytest.raises(pg.ValidationError, match="^input"):
        op(device.upload(np.zeros((1, 1, 7), np.float32)))
    with pytest.raises(pg.ValidationError, match="^input"):
        op(device.upload(np.zeros((1, 1, 6), np.float16)))
    with pytest.raises(pg.ValidationError, match="^input"):
        op(np.zeros((1, 1, 6), np.float32))
    with pytest.raises(pg.ValidationError, match="^output"):
        op(device.upload(np.zeros((1, 1, 6), np.float32)), out=device.empty(pg.TensorDesc("float32", (1, 1, 6))))
    with pytest.raises(TypeError):
        op()


def test_an_output_overlapping_an_input_is_refused_but_sharing_a_buffer_works(device):
    values = np.arange(16, dtype=np.float32)
    buffer = device.wgpu_device.create_buffer_with_data(data=values, usage=USAGE)
    x = device.wrap(buffer, pg.TensorDesc("float32", (1, 1, 8)))
    op = device.compile(pg.MaxPoolingDesc(x.desc, window_size=(2,), strides=(2,)))
    with pytest.raises(pg.ValidationError, match="^output"):
        op(x, out=device.wrap(buffer, pg.TensorDesc("float32", (1, 1, 4)), offset=16))
    y = device.wrap(buffer, pg.TensorDesc("float32", (1, 1, 4)), offset=32)  # bytes after the input
    op(x, out=y)
    np.testing.assert_array_equal(y.numpy().ravel(), [1, 3, 5, 7])
    np.testing.assert_array_equal(x.numpy().ravel(), values[:8])


def test_batch_records_one_submission_and_reads_flush_it(device):
    x = np.random.default_rng(3).standard_normal((1, 2, 16, 16)).astype(np.float32)
    op1 = device.compile(pg.MaxPoolingDesc(pg.TensorDesc("float32", x.shape), window_size=(2, 2), strides=(2, 2)))
    op2 = device.compile(pg.MaxPoolingDesc(op1.desc.output, window_size=(2, 2), strides=(2, 2)))
    with device.batch():
        with device.batch():  # nesting joins the outer batch
            y1 = op1(device.upload(x))
        y2 = op2(y1)
        inside = y2.numpy()
    expected = reference.max_pool(reference.max_pool(x, (2, 2), (2, 2))[0], (2, 2), (2, 2))[0]
    np.testing.assert_array_equal(inside, expected)
    np.testing.assert_array_equal(y2.numpy(), expected)
    device.synchronize()


def test_a_shared_wgpu_device_works(device):
    shared = pg.Device(wgpu_device=device.wgpu_device)
    assert shared.wgpu_device is device.wgpu_device and shared.backend == device.backend
    y = pg.max_pool(np.arange(8, dtype=np.uint8).reshape(1, 1, 8), (4,), strides=(4,), device=shared)
    np.testing.assert_array_equal(y.ravel(), [3, 7])
    # a buffer of the shared wgpu device is this Device's to wrap, whichever Device made it
    x = shared.wrap(device.upload(np.arange(8, dtype=np.uint8).reshape(1, 1, 8)).buffer, pg.TensorDesc("uint8", (1, 1, 8)))
    np.testing.assert_array_equal(pg.max_pool(x, 4, strides=4).numpy().ravel(), [3, 7])


def test_a_plane_larger_than_a_binding_is_a_device_error(device):
    small = pg.Device(wgpu_device=device.wgpu_device)
    small.limits["max-storage-buffer-binding-size"] = 4096  # as if the device bound 4 KiB at most
    with pytest.raises(pg.DeviceError, match="^input: one \\(n, c\\) plane spans 8000 bytes"):
        small.compile(pg.MaxPoolingDesc(pg.TensorDesc("float32", (2, 1, 2000)), window_size=(2,)))


def test_functional_api_keeps_tensors_on_the_gpu(device):
    x = device.upload(np.arange(12, dtype=np.int32).reshape(1, 1, 3, 4))
    y, i = pg.max_pool(x, (3, 2), strides=(1, 2), return_indices=True, indices_type="uint64")
    assert isinstance(y, pg.Tensor) and y.device is device and i.data_type == pg.DataType.UINT64
    np.testing.assert_array_equal(y.numpy().ravel(), [9, 11])
    np.testing.assert_array_equal(i.numpy().ravel(), [9, 11])


def test_recording_into_a_callers_pass_with_timestamps(device):
    x = np.random.default_rng(4).standard_normal((1, 2, 8, 8)).astype(np.float32)
    op = device.compile(pg.MaxPoolingDesc(pg.TensorDesc("float32", x.shape), window_size=(2, 2), strides=(2, 2)))
    xt = device.upload(x)
    y = device.empty(op.desc.output)
    wgpu_device = device.wgpu_device
    timestamps = "timestamp-query" in device.features
    writes = None
    if timestamps:
        query_set = wgpu_device.create_query_set(type="timestamp", count=2)
        writes = {"query_set": query_set, "beginning_of_pass_write_index": 0, "end_of_pass_write_index": 1}
        resolved = wgpu_device.create_buffer(size=16, usage=wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC)
    encoder = wgpu_device.create_command_encoder()
    compute_pass = encoder.begin_compute_pass(timestamp_writes=writes)
    with device.recording_into(compute_pass):
        op(xt, out=y)
        with device.batch():  # joins the caller's pass
            y2 = op(xt)
        with pytest.raises(RuntimeError, match="recording_into"):
            y.numpy()
        with pytest.raises(RuntimeError, match="recording_into"):
            device.synchronize()
        with pytest.raises(RuntimeError, match="inside batch"):
            with device.recording_into(compute_pass):
                pass
    compute_pass.end()
    if timestamps:
        encoder.resolve_query_set(query_set, 0, 2, resolved, 0)
    wgpu_device.queue.submit([encoder.finish()])
    expected = reference.max_pool(x, (2, 2), (2, 2))[0]
    np.testing.assert_array_equal(y.numpy(), expected)
    np.testing.assert_array_equal(y2.numpy(), expected)
    if timestamps:
        begin, end = np.frombuffer(wgpu_device.queue.read_buffer(resolved), np.uint64)
        assert end >= begin
    with device.batch():  # the device records normally again afterwards
        y3 = op(xt)
    np.testing.assert_array_equal(y3.numpy(), expected)


def test_cached_bind_groups_die_with_their_buffers(device):
    # (specialised at once: the switch from the shape-generic pipelines drops the op's bind groups)
    op = pg.Op(device, pg.MaxPoolingDesc(pg.TensorDesc("float32", (1, 1, 64)), window_size=(2,), strides=(2,)),
               dataclasses.replace(device.tuning, generic_calls=0))
    kept = device.empty(op.desc.input)
    kept_out = op(kept)
    for _ in range(3):
        op(device.empty(op.desc.input))
    device.synchronize()
    # Freed tensors' buffers wait in the Device's pool, and their entries with them (found
    # again when the pool hands the buffers out). A bind group holds its buffers' memory, so
    # once the pool lets them go, their entries must not wait to age out of the cache.
    assert len(op._bound) == 4
    device._tensor_pool.clear()
    assert len(op._bound) == 1
    del kept_out
    assert len(op._bound) == 1  # (its buffer is in the pool now)
    device._tensor_pool.clear()
    assert len(op._bound) == 0


def _unaligned_copy(device, tensor, offset=4):
    """The same values in a new buffer, starting `offset` bytes in (not 16-byte aligned)."""
    raw = np.zeros(offset + tensor.desc.total_size_in_bytes + 16, np.uint8)
    raw[offset:offset + tensor.desc.total_size_in_bytes] = np.frombuffer(
        device.wgpu_device.queue.read_buffer(tensor.buffer, tensor.offset, tensor.desc.total_size_in_bytes), np.uint8)
    buffer = device.wgpu_device.create_buffer_with_data(data=raw, usage=USAGE)
    return device.wrap(buffer, tensor.desc, offset=offset)


@pytest.mark.parametrize("operator", ["max", "max_indices", "average", "lp", "max_grad", "average_grad", "unpool"])
def test_chunked_kernels_fall_back_for_unaligned_tensors(device, operator):
    """The 4-element chunk kernels need 16-byte aligned tensors; others take the general ones."""
    rng = np.random.default_rng(9)
    x = device.upload(rng.standard_normal((1, 2, 8, 8)).astype(np.float32))
    window = dict(window_size=(3, 3), strides=(2, 2), start_padding=(1, 1), end_padding=(1, 1))
    forward = pg.MaxPooling2Desc(x.desc, output_indices="uint32", **window)
    dy = device.upload(rng.standard_normal(forward.output.sizes).astype(np.float32))
    indices = device.compile(forward)(x)[1]
    desc, inputs = {
        "max": (pg.MaxPooling2Desc(x.desc, **window), (x,)),
        "max_indices": (forward, (x,)),
        "average": (pg.AveragePooling1Desc(x.desc, **window), (x,)),
        "lp": (pg.LpPooling1Desc(x.desc, **window), (x,)),
        "max_grad": (pg.MaxPoolingGradDesc(x.desc, dy.desc, **window), (x, dy)),
        "average_grad": (pg.AveragePoolingGradDesc(dy.desc, x.desc, **window), (dy,)),
        "unpool": (pg.MaxUnpoolingDesc(dy.desc, indices.desc, x.desc), (dy, indices)),
    }[operator]
    with tuned_for(device, "cpu"):  # the chunked walks: on GPUs the forward takes the general one
        op = device.compile(desc)
    assert op._program.fallback is not None, "expected a chunked program with a fallback"
    aligned = op(*inputs)
    aligned = aligned if isinstance(aligned, tuple) else (aligned,)
    outs = tuple(_unaligned_copy(device, t) for t in aligned)
    result = op(*(_unaligned_copy(device, t) for t in inputs), out=outs if len(outs) > 1 else outs[0])
    result = result if isinstance(result, tuple) else (result,)
    for a, b in zip(aligned, result):
        assert same_bits(a.numpy(), b.numpy())


def test_tuning_presets_validation_and_the_op_cache(device):
    assert device.tuning == dataclasses.replace(pg.Tuning.preset(device.tuned_for),
                                                generic_calls=device.tuning.generic_calls)  # (conftest.py sets it)
    assert pg.Tuning.for_cpu() != pg.Tuning.for_gpu() and pg.Tuning.preset("gpu") == pg.Tuning.for_gpu()
    for field, value in (("walk", "diagonal"), ("outputs_per_invocation", 3), ("lines_workgroup", 0),
                         ("rows_walks", 1), ("target", "tpu"), ("flat_workgroup", 512)):
        with pytest.raises(pg.ValidationError, match=field):
            pg.Tuning(**{field: value})
    with pytest.raises(pg.ValidationError, match="tuning"):
        device.tuning = "gpu"
    desc = pg.MaxPooling2Desc(pg.TensorDesc("float32", (1, 4, 8, 16)), window_size=(3, 3), strides=(2, 2))
    general = pg.Tuning(walk="general")
    with tuned_for(device, general):
        op = device.compile(desc)
        assert op.tuning == dataclasses.replace(general, generic_calls=0)  # (tuned_for's)
        assert "window_walk.wgsl" in op._program.passes[0].kernel.library and device.tuned_for == "cpu"
    # the cache is keyed by tuning: the device's own tuning gives its own op, switching back finds the first
    assert device.compile(desc) is not op
    with tuned_for(device, pg.Tuning(walk="general")):
        assert device.compile(desc) is op
    other = pg.Device(wgpu_device=device.wgpu_device, tuning=general)
    assert other.tuning == general and "window_walk.wgsl" in other.compile(desc)._program.passes[0].kernel.library
