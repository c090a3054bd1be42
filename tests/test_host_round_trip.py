"""Host round trips (docs/design.md, "Host round trips"): arrays written from their own
memory, pooled buffers given back only after the read-back that waited for them, bind
groups found again, one submission per call, read-backs through a reused staging buffer."""

import copy
import dataclasses
import gc
import threading
import weakref

import numpy as np
import pytest

import poolgpu as pg
from poolgpu.device import _BufferPool

import reference
from helpers import same_bits

# The adapter is this file's subject: every case runs on every adapter (conftest.py).
pytestmark = pytest.mark.every_adapter


def fresh_device(device):
    """A new Device on ``device``'s adapter whose ops build their specialised pipelines at
    once (the switch from the shape-generic ones would bind anew: docs/design.md, "New shapes")."""
    return pg.Device(backend=device.backend, adapter=device.name,
                     tuning=dataclasses.replace(device.tuning, generic_calls=0))


def expected_max_pool(x, window, strides):
    return reference.max_pool(x, window, strides)[0]


def test_a_round_trip_reuses_its_buffers_and_bind_groups(device):
    dev = fresh_device(device)
    x = np.random.default_rng(0).standard_normal((1, 8, 12, 10)).astype(np.float32)
    first = pg.max_pool(x, (2, 2), strides=(2, 2), device=dev)
    idle = dev._tensor_pool.idle_bytes, dev._staging_pool.idle_bytes
    assert idle[0] > 0 and idle[1] > 0  # input and output, staging: back in the pools
    op = dev.compile(pg.MaxPooling2Desc(pg.TensorDesc("float32", x.shape), window_size=(2, 2), strides=(2, 2)))
    bound = dict(op._bound)
    for k in range(3):
        again = pg.max_pool(x + k, (2, 2), strides=(2, 2), device=dev)
        assert same_bits(again, expected_max_pool(x + k, (2, 2), (2, 2)))
        assert (dev._tensor_pool.idle_bytes, dev._staging_pool.idle_bytes) == idle  # nothing new allocated
        assert dict(op._bound) == bound  # the same buffers: the same bind groups
    assert same_bits(first, expected_max_pool(x, (2, 2), (2, 2)))  # a result is the caller's own array


def test_outputs_of_successive_calls_never_share_a_buffer(device):
    """Tensors a caller holds get buffers of their own: the pool never hands out a buffer
    whose tensor is alive or whose work may not have run."""
    dev = fresh_device(device)
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal((1, 2, 8, 8)).astype(np.float32) for _ in range(4)]
    pg.max_pool(xs[0], 2, strides=2, device=dev)  # fills the pool
    ts = [dev.upload(x) for x in xs]
    ys = [pg.max_pool(t, 2, strides=2) for t in ts]
    ys.append(pg.max_pool(ts[0], 2, strides=2))
    assert len({id(y.buffer) for y in ys}) == len(ys)
    assert not {id(y.buffer) for y in ys} & {id(t.buffer) for t in ts}
    for y, x in zip(ys, xs + xs[:1]):
        assert same_bits(y.numpy(), expected_max_pool(x, (2, 2), (2, 2)))


def test_round_trips_inside_a_batch_see_the_work_recorded_before(device):
    dev = fresh_device(device)
    x = np.arange(64, dtype=np.float32).reshape(1, 1, 8, 8)
    t = dev.upload(x)
    with dev.batch():
        y = pg.max_pool(t, 2, strides=2)  # recorded, not submitted
        twice = pg.max_pool(y.numpy(), 2, strides=2, device=dev)  # a round trip after it
        again = pg.max_pool(x, 2, strides=2, device=dev)
    assert same_bits(twice, expected_max_pool(expected_max_pool(x, (2, 2), (2, 2)), (2, 2), (2, 2)))
    assert same_bits(again, y.numpy())


def test_threads_sharing_a_device_get_their_own_results(device):
    dev = fresh_device(device)
    rng = np.random.default_rng(2)
    arrays = [rng.standard_normal((1, 4, 10, 9)).astype(np.float32) for _ in range(4)]
    expected = [expected_max_pool(x, (3, 2), (2, 1)) for x in arrays]
    failures = []

    def work(k):
        try:
            for i in range(15):
                j = (k + i) % len(arrays)
                got = pg.max_pool(arrays[j], (3, 2), strides=(2, 1), device=dev)
                if not same_bits(got, expected[j]):
                    failures.append(f"thread {k}, call {i}: wrong values")
        except Exception as exc:  # reported below
            failures.append(f"thread {k}: {exc!r}")

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


@pytest.mark.parametrize("case", ["strided", "fortran", "negative_strides", "odd_bytes_uint8", "float16",
                                  "int64", "big_endian", "zero_stride_broadcast"])
def test_arrays_of_any_layout_and_type_come_back_right(device, case):
    rng = np.random.default_rng(3)
    base = rng.integers(0, 100, (2, 3, 9, 7))
    x = {
        "strided": base.astype(np.float32)[:, :, ::2, 1:],
        "fortran": np.asfortranarray(base.astype(np.float32)),
        "negative_strides": base.astype(np.float32)[:, ::-1, :, ::-1],
        "odd_bytes_uint8": base.astype(np.uint8)[:1, :1, :3, :3],  # 9 bytes: no whole words
        "float16": base.astype(np.float16)[:, :, :, :5],
        "int64": base.astype(np.int64) - 50,
        "big_endian": base.astype(">f4"),
        "zero_stride_broadcast": np.broadcast_to(base[:1, :1].astype(np.int8), (2, 3, 9, 7)),
    }[case]
    got = pg.max_pool(x, (2, 2), strides=(1, 1), device=device)
    expected = expected_max_pool(np.ascontiguousarray(x).astype(x.dtype.newbyteorder("=")), (2, 2), (1, 1))
    assert same_bits(got, expected)
    assert same_bits(device.upload(x).numpy(), np.ascontiguousarray(x).astype(x.dtype.newbyteorder("=")))


def test_an_upload_writes_only_its_tensors_elements(device):
    """A strided upload leaves zeros in the gaps and after its end, even in a reused
    buffer; an odd number of bytes comes back whole."""
    dev = fresh_device(device)
    x = np.arange(1, 11, dtype=np.uint8).reshape(1, 1, 10)
    garbage = dev.upload(np.full((1, 1, 32), 0xA5, np.uint8))
    garbage_buffer = garbage._buffer
    del garbage  # its buffer goes back to the pool, for the next upload of 17 to 32 bytes
    t = dev.upload(x, strides=(20, 20, 2))  # 19 bytes
    assert t._buffer is garbage_buffer
    raw = np.frombuffer(dev._read(t.buffer, 0, t.buffer.size), np.uint8)
    assert raw[:19:2].tolist() == x.ravel().tolist() and not raw[1:19:2].any() and not raw[19:].any()
    assert same_bits(t.numpy(), x)


def test_freed_tensors_give_their_buffers_to_the_next_upload_and_result(device):
    dev = fresh_device(device)
    x = np.random.default_rng(4).standard_normal((1, 2, 8, 8)).astype(np.float32)
    t = dev.upload(x)
    y = pg.max_pool(t, 2, strides=2)
    assert same_bits(y.numpy(), expected_max_pool(x, (2, 2), (2, 2)))
    t_buffer, y_buffer = t._buffer, y._buffer
    del t, y
    t = dev.upload(-x)
    y = pg.max_pool(t, 2, strides=2)
    assert t._buffer is t_buffer and y._buffer is y_buffer
    assert same_bits(y.numpy(), expected_max_pool(-x, (2, 2), (2, 2)))
    z = pg.max_pool(t, 2, strides=2)  # y is alive: a buffer of its own
    assert z._buffer is not y_buffer and same_bits(z.numpy(), y.numpy())


def test_a_handed_out_buffer_is_never_reused(device):
    dev = fresh_device(device)
    x = np.arange(64, dtype=np.float32).reshape(1, 1, 64)
    t = dev.upload(x)
    mine = t.buffer  # for the caller's own bind groups, say
    view = dev.wrap(mine, t.desc)
    del t
    other = dev.upload(-x)
    assert other._buffer is not mine
    assert same_bits(view.numpy(), x)


def test_tensors_freed_inside_a_batch_are_not_reused_before_it_is_submitted(device):
    dev = fresh_device(device)
    x = np.arange(64, dtype=np.float32).reshape(1, 1, 8, 8)
    with dev.batch():
        t = dev.upload(x)
        y = pg.max_pool(t, 2, strides=2)  # recorded, not submitted
        del t
        other = dev.upload(-x)  # written through the queue: before the batch's work runs
    assert same_bits(y.numpy(), expected_max_pool(x, (2, 2), (2, 2)))
    assert same_bits(other.numpy(), -x)


def test_tensors_recorded_into_a_callers_pass_are_never_reused(device):
    dev = fresh_device(device)
    x = np.arange(64, dtype=np.float32).reshape(1, 1, 8, 8)
    op = dev.compile(pg.MaxPoolingDesc(pg.TensorDesc("float32", x.shape), window_size=(2, 2), strides=(2, 2)))
    t, y = dev.upload(x), dev.empty(op.desc.output)
    encoder = dev.wgpu_device.create_command_encoder()
    compute_pass = encoder.begin_compute_pass()
    with dev.recording_into(compute_pass):
        op(t, out=y)
    compute_pass.end()
    del t  # the pass is not submitted yet
    other = dev.upload(-x)
    dev.wgpu_device.queue.submit([encoder.finish()])
    assert same_bits(y.numpy(), expected_max_pool(x, (2, 2), (2, 2)))
    assert same_bits(other.numpy(), -x)


def test_a_dropped_device_frees_its_pooled_buffers(device):
    dev = fresh_device(device)
    pg.max_pool(np.ones((1, 2, 8, 8), np.float32), 2, strides=2, device=dev)
    pooled = [weakref.ref(b) for pool in (dev._tensor_pool, dev._staging_pool)
              for buffers in pool._idle.values() for b in buffers]
    assert len(pooled) >= 3  # input, output, staging
    del dev
    gc.collect()
    assert all(ref() is None for ref in pooled)


class _Buffer:
    def __init__(self, size):
        self.size = size


def test_the_pool_is_bounded_and_drops_the_least_recently_used_sizes():
    pool = _BufferPool(limit=100)
    a, b, c = _Buffer(40), _Buffer(40), _Buffer(30)
    pool.give(a)
    pool.give(b)
    assert pool.take(40) is b and pool.take(40) is a and pool.take(40) is None
    pool.give(a)
    pool.give(c)
    pool.give(_Buffer(50))  # over the limit: the 40 goes, the most recent sizes stay
    assert pool.idle_bytes == 80 and pool.take(40) is None and pool.take(30) is c
    pool.give(_Buffer(101))  # larger than the limit: not kept
    assert pool.idle_bytes == 50
    pool.clear()
    assert pool.idle_bytes == 0 and pool.take(50) is None
    # a size taken to its last buffer leaves nothing behind for the eviction to trip on
    pool.give(a)
    pool.give(c)
    assert pool.take(40) is a
    pool.give(_Buffer(60))
    pool.give(_Buffer(50))   # over the limit: the 30, then the 60 go
    assert pool.idle_bytes == 50 and pool.take(30) is None and pool.take(60) is None


def test_poolgpu_torch_calls_give_their_uploads_back_and_stay_right(device):
    torch = pytest.importorskip("torch")
    import poolgpu.torch as pgt

    dev = fresh_device(device)
    x = torch.randn(2, 3, 9, 8, requires_grad=True)
    expected = torch.nn.functional.max_pool2d(x, 3, 2, 1)
    expected_grad, = torch.autograd.grad(expected.sum(), x)
    idle = None
    for _ in range(3):
        y = pgt.max_pool2d(x, 3, 2, 1, device=dev)
        grad, = torch.autograd.grad(y.sum(), x)
        assert torch.equal(y, expected) and torch.equal(grad, expected_grad)
        assert dev._tensor_pool.idle_bytes > 0  # the input and the gradient went back
        idle = idle or dev._tensor_pool.idle_bytes
        assert dev._tensor_pool.idle_bytes == idle  # and were taken again: nothing new pooled
    t = dev.upload(x.detach().numpy())
    kept = pgt.max_pool2d(t, 3, 2, 1)  # pg.Tensors in, pg.Tensors out: no pooled buffer
    assert kept.buffer is not t.buffer and torch.equal(torch.from_numpy(kept.numpy()), expected.detach())


def test_the_backward_of_poolgpu_torch_reads_the_input_the_forward_uploaded(device, monkeypatch):
    torch = pytest.importorskip("torch")
    import poolgpu.torch as pgt

    dev = fresh_device(device)
    written = []
    write = pg.Device._write
    monkeypatch.setattr(pg.Device, "_write", lambda self, b, array, desc: written.append(array.shape) or
                        write(self, b, array, desc))
    x = torch.randn(2, 3, 9, 8, requires_grad=True)
    y = pgt.max_pool2d(x, 3, 2, 1, device=dev)
    assert written == [(2, 3, 9, 8)]
    written.clear()
    grad, = torch.autograd.grad(y.sum(), x)
    assert written == [tuple(y.shape)]  # the incoming gradient only
    expected = torch.nn.functional.max_pool2d(x, 3, 2, 1)
    assert torch.equal(y, expected) and torch.equal(grad, torch.autograd.grad(expected.sum(), x)[0])
    with torch.no_grad():
        x.mul_(-1)  # a new version of x: uploaded again
    written.clear()
    y = pgt.max_pool2d(x, 3, 2, 1, device=dev)
    grad, = torch.autograd.grad(y.sum(), x)
    assert written == [(2, 3, 9, 8), tuple(y.shape)]
    expected = torch.nn.functional.max_pool2d(x, 3, 2, 1)
    assert torch.equal(y, expected) and torch.equal(grad, torch.autograd.grad(expected.sum(), x)[0])



def test_poolgpu_torch_calls_on_host_inputs_are_one_submission_through_pooled_buffers(device, monkeypatch):
    torch = pytest.importorskip("torch")
    import poolgpu.torch as pgt

    dev = fresh_device(device)
    x = torch.randn(2, 3, 9, 8)
    for source in (x, x.numpy(), x.to(torch.bfloat16)):
        expected = torch.nn.functional.max_pool2d(torch.as_tensor(source), 3, 2, 1)
        pgt.max_pool2d(source, 3, 2, 1, device=dev)  # the first call makes buffers and bind groups
        idle = dev._tensor_pool.idle_bytes, dev._staging_pool.idle_bytes
        bound = {id(op): dict(op._bound) for op in dev._ops.values()}
        submitted, dispatched = [], []
        submit, dispatch = pg.Device._submit, pg.Device._dispatch
        monkeypatch.setattr(pg.Device, "_submit", lambda self, *a: submitted.append(a[0]) or submit(self, *a))
        monkeypatch.setattr(pg.Device, "_dispatch", lambda self, *a: dispatched.append(a) or dispatch(self, *a))
        for _ in range(2):
            submitted.clear()
            y = pgt.max_pool2d(source, 3, 2, 1, device=dev)
            assert type(y) is type(source)
            assert torch.equal(torch.as_tensor(y), expected)
            assert len(submitted) == 1 and submitted[0] is not None and not dispatched  # dispatches and read-back
            assert (dev._tensor_pool.idle_bytes, dev._staging_pool.idle_bytes) == idle  # nothing new allocated
            assert {id(op): dict(op._bound) for op in dev._ops.values()} == bound  # the same bind groups
        monkeypatch.undo()


@pytest.mark.parametrize("function", ["roi_pool", "ps_roi_align"])
def test_poolgpu_torch_roi_calls_on_host_inputs_are_one_submission(device, monkeypatch, function):
    """The ROI paths read a view of their result (ROI pooling's bins as ROIs, the
    position-sensitive diagonal): still one submission, and the bits of a pg.Tensor's call."""
    torch = pytest.importorskip("torch")
    import poolgpu.torch as pgt

    dev = fresh_device(device)
    x = torch.randn(2, 8, 9, 8)
    boxes = torch.tensor([[0, 0.5, 1.0, 6.0, 7.5], [1, 2.0, 0.0, 8.0, 5.0], [0, 3.0, 3.0, 3.5, 4.0]])
    call = {"roi_pool": lambda source: pgt.roi_pool(source, boxes, (2, 2), 0.9, device=dev),
            "ps_roi_align": lambda source: pgt.ps_roi_align(source, boxes, (2, 2), 0.9, 2, device=dev)}[function]
    expected = np.asarray(call(dev.upload(x.numpy())))   # (a pg.Tensor's call: the result on the device)
    call(x)   # the first call makes buffers and bind groups
    idle = dev._tensor_pool.idle_bytes, dev._staging_pool.idle_bytes
    submitted, dispatched = [], []
    submit, dispatch = pg.Device._submit, pg.Device._dispatch
    monkeypatch.setattr(pg.Device, "_submit", lambda self, *a: submitted.append(a[0]) or submit(self, *a))
    monkeypatch.setattr(pg.Device, "_dispatch", lambda self, *a: dispatched.append(a) or dispatch(self, *a))
    y = call(x)
    assert len(submitted) == 1 and submitted[0] is not None and not dispatched  # dispatches and read-back
    assert (dev._tensor_pool.idle_bytes, dev._staging_pool.idle_bytes) == idle  # nothing new allocated
    monkeypatch.undo()
    assert same_bits(y.numpy(), expected)


def test_poolgpu_torch_skips_torchs_dispatcher_only_where_nothing_of_torch_follows_the_call(device, monkeypatch):
    torch = pytest.importorskip("torch")
    import poolgpu.torch as pgt
    from poolgpu.torch import _ops

    dev = fresh_device(device)
    through = []
    call = _ops.call
    monkeypatch.setattr(_ops, "call", lambda name, *a: through.append(name) or call(name, *a))
    x = torch.randn(1, 2, 6, 6)
    expected = torch.nn.functional.max_pool2d(x, 2)
    assert torch.equal(pgt.max_pool2d(x, 2, device=dev), expected) and through == []
    w = x.clone().requires_grad_()
    y = pgt.max_pool2d(w, 2, device=dev)  # autograd records it
    assert through == ["max_pool2d"] and y.requires_grad
    with torch.no_grad():
        assert not pgt.max_pool2d(w, 2, device=dev).requires_grad and through == ["max_pool2d"]
    traced = torch.jit.trace(lambda t: pgt.max_pool2d(t, 2, device=dev), x)  # a tracer follows it
    assert len(through) > 1 and set(through) == {"max_pool2d"}
    x2 = torch.randn(1, 2, 6, 6)
    assert torch.equal(traced(x2), torch.nn.functional.max_pool2d(x2, 2))
    assert pgt.max_pool2d(x.to("meta"), 2, device=dev).shape == (1, 2, 3, 3)  # shapes only: its fake
    assert through[-1] == "max_pool2d"


def test_a_copied_tensor_keeps_its_buffer_from_the_pool(device):
    dev = fresh_device(device)
    x = np.arange(64, dtype=np.float32).reshape(1, 1, 64)
    t = dev.upload(x)
    twin = copy.copy(t)
    assert twin.buffer is t.buffer
    del t
    other = dev.upload(-x)
    assert other._buffer is not twin.buffer and same_bits(twin.numpy(), x)


def test_a_tensor_freed_in_a_reference_cycle_gives_back_a_live_buffer(device):
    """Python's collector finalises what only a cycle reaches; the buffer it gives back must
    not be one wgpu-py released meanwhile."""
    dev = fresh_device(device)
    x = np.arange(64, dtype=np.float32).reshape(1, 1, 64)

    class Holder:
        pass

    for k in range(8):
        holder = Holder()
        holder.tensors = [dev.upload(x + k) for _ in range(3)]
        holder.itself = holder   # a cycle: only the collector frees it
        del holder
        gc.collect()
        again = [dev.upload(x - k) for _ in range(3)]   # (the cycle's buffers, from the pool)
        assert all(same_bits(t.numpy(), x - k) for t in again)
