"""Robustness: no byte written outside an output whatever the (valid) layout, device loss and
out-of-memory as DeviceError, one Device shared by threads, no leaks, bounded caches.

POOLGPU_STRESS=1 runs the full counts (8 threads x 500 operations, 10,000
functional calls); the default counts keep CI quick."""

import gc
import os
import threading
import time

import numpy as np
import pytest
import wgpu

import poolgpu as pg
import reference
from helpers import same_bits
from test_scale import OPERATORS, describe, run

# The adapter is this file's subject: every case runs on every adapter (conftest.py).
pytestmark = pytest.mark.every_adapter

STRESS = os.environ.get("POOLGPU_STRESS") == "1"


# ---------------------------------------------------------------------------------------
# Canaries: adversarial but valid descriptions write only their outputs' elements

ADVERSARIAL = {  # (input layout, output layout, extra total_size_in_bytes)
    "odd_strides": ("gaps", "gaps", 0),
    "nhwc": ("channels_last", "channels_last", 0),
    "broadcast_input": ("broadcast", "packed", 0),
    "reversed": ("reversed", "reversed", 0),
    "oversized_total": ("packed", "gaps", 36),
}


def adversarial_case(operator, data_type, dims, setting, seed):
    in_layout, out_layout, extra = ADVERSARIAL[setting]
    return dict(operator=operator, sizes=(2, 4) + (5, 6, 7)[:dims] if operator != "roi" else (2, 4, 5, 6),
                window_size=(3, 2, 2)[:dims], strides=(2, 1, 2)[:dims], dilations=(1, 2, 1)[:dims],
                start_padding=(1, 0, 1)[:dims], end_padding=(0, 1, 1)[:dims], output_size=(2, 3, 4)[:dims],
                data_type=data_type, indices="uint64", in_layout=in_layout, out_layout=out_layout,
                extra_bytes=extra, seed=seed)


@pytest.mark.parametrize("setting", sorted(ADVERSARIAL))
@pytest.mark.parametrize("operator", OPERATORS)
def test_outputs_are_written_within_their_elements_whatever_the_layout(device, operator, setting):
    """Canary bytes around and between the output's elements stay intact (``run`` checks),
    and the values are the packed layout's: layouts change where values live, nothing else."""
    dims = 2 if operator == "roi" else 1 + len(setting) % 3
    data_type = pg.DataType.INT16 if operator in ("max", "unpool", "adaptive_max") else pg.DataType.FLOAT16
    for dt in (data_type, pg.DataType.FLOAT32):
        case = adversarial_case(operator, dt, dims, setting, seed=11)
        desc, arrays = describe(case)
        packed, _ = describe(dict(case, in_layout="packed", out_layout="packed", extra_bytes=0))
        _, got = run(device, desc, arrays)
        _, expected = run(device, packed, arrays)
        for a, b in zip(got, expected):
            assert same_bits(a, b)


# ---------------------------------------------------------------------------------------
# Device loss and out of memory


def fresh_device(device):
    return pg.Device(backend=device.backend, adapter=device.name)


def test_a_lost_device_raises_device_errors_and_others_keep_working(device):
    lost = fresh_device(device)
    x = np.arange(32, dtype=np.float32).reshape(1, 2, 16)
    xt = lost.upload(x)
    op = lost.compile(pg.MaxPoolingDesc(xt.desc, window_size=(2,), strides=(2,)))
    y = op(xt)
    lost.wgpu_device.destroy()  # what a driver reset or a removed GPU does
    with pytest.raises(pg.DeviceError, match=r"was lost .*make a new pg\.Device\(\)"):
        op(xt, out=y)
    assert lost.lost
    attempts = {
        "call": lambda: op(xt), "read back": y.numpy, "upload": lambda: lost.upload(x),
        "allocate": lambda: lost.empty(xt.desc), "synchronize": lost.synchronize,
        "compile": lambda: lost.compile(pg.MaxPoolingDesc(xt.desc, window_size=(3,))),
        "functional": lambda: pg.max_pool(x, (2,), device=lost),
    }
    for what, attempt in attempts.items():
        with pytest.raises(pg.DeviceError, match="lost"):
            attempt()
    with pytest.raises(pg.DeviceError, match="lost"):
        with lost.batch():
            op(xt)
    # other devices keep working, and a new Device can be made
    expected = reference.max_pool(x, (2,), (2,))[0]
    assert same_bits(pg.max_pool(x, (2,), strides=(2,), device=device), expected)
    assert same_bits(pg.max_pool(x, (2,), strides=(2,), device=fresh_device(device)), expected)


def test_the_default_device_is_replaced_once_lost(device, monkeypatch):
    lost = fresh_device(device)
    lost.wgpu_device.destroy()
    with pytest.raises(pg.DeviceError):
        lost.upload(np.zeros((1, 1, 4), np.float32))
    monkeypatch.setattr(pg.device, "_default_device", lost)
    replacement = pg.default_device()
    assert replacement is not lost and not replacement.lost
    assert replacement is pg.default_device()


def out_of_memory(*args, **kwargs):
    raise wgpu.GPUOutOfMemoryError("Out of Memory")


@pytest.mark.parametrize("method", ["create_buffer", "create_buffer_with_data", "create_compute_pipeline"])
def test_out_of_memory_is_a_device_error_and_the_device_recovers(device, monkeypatch, method):
    dev = pg.Device(wgpu_device=device.wgpu_device)
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 16)
    with monkeypatch.context() as patch:
        patch.setattr(type(dev.wgpu_device), method, out_of_memory)
        with pytest.raises(pg.DeviceError, match="out of GPU memory while .*free tensors"):
            pg.max_pool(x, (2,), strides=(2,), device=dev)
    assert not dev.lost
    assert same_bits(pg.max_pool(x, (2,), strides=(2,), device=dev), reference.max_pool(x, (2,), (2,))[0])


def test_a_freed_devices_wgpu_device_goes_to_the_next_device_unless_lost(device):
    idle = pg.adapters._idle.setdefault(id(device.adapter), [])
    first = fresh_device(device)
    kept = first.wgpu_device
    del first
    gc.collect()
    assert any(d is kept for d, _ in idle)
    taken = [fresh_device(device) for _ in range(len(idle))]
    assert any(d.wgpu_device is kept for d in taken)
    lost = taken[0]
    gone = lost.wgpu_device
    gone.destroy()
    with pytest.raises(pg.DeviceError, match="lost"):
        lost.upload(np.zeros((1, 1, 4), np.float32))
    del taken, lost
    gc.collect()
    assert not any(d is gone for d, _ in idle)


def test_loss_and_out_of_memory_while_other_threads_work(device):
    """A Device lost and one out of memory raise DeviceError while three threads keep
    calling operators on another Device of the same adapter, and get right results."""
    x = np.random.default_rng(3).standard_normal((2, 3, 10, 9)).astype(np.float32)
    expected = reference.max_pool(x, (3, 2), (2, 1))[0]
    stop, failures = threading.Event(), []

    def work(k):
        try:
            while not stop.is_set():
                if not same_bits(pg.max_pool(x, (3, 2), strides=(2, 1), device=device), expected):
                    failures.append(f"thread {k}: wrong values")
        except Exception as exc:  # reported by the main thread
            failures.append(f"thread {k}: {exc!r}")

    threads = [threading.Thread(target=work, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    try:
        lost = fresh_device(device)
        pg.max_pool(x, (3, 2), strides=(2, 1), device=lost)
        lost.wgpu_device.destroy()
        with pytest.raises(pg.DeviceError, match="lost"):
            pg.max_pool(x, (3, 2), strides=(2, 1), device=lost)
        full = fresh_device(device)
        full.wgpu_device.create_buffer = full.wgpu_device.create_buffer_with_data = out_of_memory  # (this one only)
        with pytest.raises(pg.DeviceError, match="out of GPU memory"):
            pg.max_pool(x, (3, 2), strides=(2, 1), device=full)
        del full.wgpu_device.create_buffer, full.wgpu_device.create_buffer_with_data
        assert same_bits(pg.max_pool(x, (3, 2), strides=(2, 1), device=full), expected) and not full.lost
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert failures == []


class _Unanswered:
    """A wait opened on wgpu-py's poll thread without waking it: the device is never polled
    for the answer (how a read-back hung once on OpenGL)."""

    def set_done(self):
        pass


def test_a_read_back_without_an_answer_is_a_device_error_past_the_timeout(device):
    """Past ``timeout``, DeviceError saying what did not answer; the Device stays usable and,
    once the GPU answers, reads back the right values (on OpenGL after waiting for the
    unanswered read-back, the adapter being one for all Devices)."""
    dev = fresh_device(device)
    x = np.arange(64, dtype=np.float32).reshape(1, 1, 64)
    xt = dev.upload(x)
    dev.timeout = 0.2
    poller = dev.wgpu_device._poller
    poller.get_token = _Unanswered  # (this wgpu device's poll thread only)
    try:
        with pytest.raises(pg.DeviceError, match=r"did not finish reading back 256 bytes .*within 0\.2 s.*stays usable"):
            xt.numpy()
    finally:
        del poller.get_token
        dev.timeout = 600
    assert not dev.lost
    assert same_bits(xt.numpy(), x)
    assert same_bits(pg.max_pool(x, (2,), strides=(2,), device=device), reference.max_pool(x, (2,), (2,))[0])


@pytest.mark.skipif("opengl" not in {a["backend"] for a in pg.list_adapters()}, reason="no OpenGL adapter")
def test_a_call_behind_another_threads_long_opengl_work_is_a_device_error_past_the_timeout():
    """On OpenGL a submission runs its work before it returns and every Device's calls take
    turns: a call waiting for its turn longer than ``timeout`` raises DeviceError saying
    so, and the Device stays usable."""
    dev = pg.Device(backend="opengl")
    x = np.random.default_rng(4).standard_normal((2, 8, 256, 256)).astype(np.float32)
    xt, small = dev.upload(x), dev.upload(x[:1, :1, :8, :8])
    long_op = dev.compile(pg.AveragePoolingDesc(xt.desc, window_size=(15, 15)))
    y = dev.empty(long_op.desc.output)
    long_op(xt, out=y)  # (pipelines and bindings made: the call below only submits)
    worker = threading.Thread(target=long_op, args=(xt,), kwargs={"out": y})
    held = pg.gate.GL._lock
    worker.start()
    while worker.is_alive() and held.acquire(blocking=False):  # until its submission holds the adapter
        held.release()
        time.sleep(0.001)
    dev.timeout = 0.01
    try:
        with pytest.raises(pg.DeviceError, match=r"OpenGL adapter did not answer within 0\.01 s: another thread"):
            small.numpy()
    finally:
        dev.timeout = 600
        worker.join()
    assert not dev.lost
    assert same_bits(small.numpy(), x[:1, :1, :8, :8])


def test_the_timeout_is_a_positive_number_of_seconds(device):
    assert device.timeout == 600
    for bad in (0, -1, float("inf"), "10", None):
        with pytest.raises(pg.ValidationError, match="timeout"):
            pg.Device(wgpu_device=device.wgpu_device, timeout=bad) if bad is not None else setattr(
                pg.Device(wgpu_device=device.wgpu_device), "timeout", bad)
    dev = pg.Device(wgpu_device=device.wgpu_device, timeout=2.5)
    assert dev.timeout == 2.5
    dev.timeout = 30
    assert dev.timeout == 30.0


def test_a_buffer_beyond_the_device_limit_is_a_device_error(device):
    limit = device.limits["max-buffer-size"]
    with pytest.raises(pg.DeviceError, match="max-buffer-size"):
        device.empty(pg.TensorDesc("float32", (2, 1, limit // 8 + 1)))


# ---------------------------------------------------------------------------------------
# Threads: one Device, many threads


def thread_workload(seed):
    """(name, run(device) -> tuple of arrays) pairs of mixed operations."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((2, 3, 9, 8)).astype(np.float32)
    x16 = x.astype(np.float16)
    dy = rng.standard_normal((2, 3, 4, 4)).astype(np.float32)
    y, i = reference.max_pool(x, (3, 2), (2, 2), (1, 0), (0, 0))
    indices = i.astype(np.uint32)
    return [
        ("max", lambda d: pg.max_pool(x, (3, 2), strides=(2, 2), start_padding=(1, 0), return_indices=True, device=d)),
        ("average", lambda d: (pg.average_pool(x16, (2, 2), device=d),)),
        ("lp", lambda d: (pg.lp_pool(x, (3, 3), strides=(2, 1), p=3, device=d),)),
        ("max_grad", lambda d: (pg.max_pool_grad(x, dy, (2, 2), strides=(2, 2), device=d),)),
        ("average_grad", lambda d: (pg.average_pool_grad(dy, x.shape, (3, 2), strides=(2, 2), start_padding=(1, 0), device=d),)),
        ("unpool", lambda d: (pg.max_unpool(y, indices, x.shape, device=d),)),
        ("adaptive", lambda d: pg.adaptive_max_pool(x, (3, 5), return_indices=True, device=d)),
        ("roi", lambda d: (pg.roi_pool(x, [[1, 0, 0, 5, 7], [0, 2, 1, 7, 8]], (2, 2), device=d),)),
    ]


def test_one_device_shared_by_eight_threads(device):
    """8 threads x mixed operations (500 each with POOLGPU_STRESS=1) on one Device give the
    bits of the same operations run alone: functional calls, ops compiled concurrently, and
    batches holding dependent ops and a read-back."""
    shared = pg.Device(wgpu_device=device.wgpu_device)  # fresh caches: filled concurrently
    per_thread = 500 if STRESS else 30
    work = thread_workload(0)
    expected = [run_op(device) for _, run_op in work]  # deterministic: the same bits every run
    x = np.random.default_rng(1).standard_normal((1, 4, 16, 16)).astype(np.float32)
    pooled = reference.max_pool(reference.max_pool(x, (2, 2), (2, 2))[0], (3, 3), (1, 1), (1, 1), (1, 1))[0]
    failures = []

    def worker(k):
        try:
            for i in range(per_thread):
                if i % 7 == 3:
                    op1 = shared.compile(pg.MaxPoolingDesc(pg.TensorDesc("float32", x.shape), window_size=(2, 2),
                                                           strides=(2, 2)))
                    op2 = shared.compile(pg.MaxPoolingDesc(op1.desc.output, window_size=(3, 3),
                                                           start_padding=(1, 1), end_padding=(1, 1)))
                    with shared.batch():
                        got = (op2(op1(shared.upload(x))).numpy(),)
                    want = (pooled,)
                else:
                    index = (k + i) % len(work)
                    got, want = work[index][1](shared), expected[index]
                if not all(same_bits(a, b) for a, b in zip(got, want)):
                    failures.append((k, i))
        except Exception as exc:  # reported by the main thread
            failures.append((k, repr(exc)))

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


# ---------------------------------------------------------------------------------------
# No leaks, bounded caches


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def live_gpu_objects() -> dict:
    return {k: v for k, v in wgpu._classes.object_tracker.counts.items() if v}


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="RSS read from /proc")
def test_no_leaks_over_many_functional_calls(device):
    """RSS and live wgpu objects stay flat over 10,000 functional calls (POOLGPU_STRESS=1;
    600 by default)."""
    calls = 10_000 if STRESS else 600
    work = thread_workload(2)

    def call(i):
        work[i % len(work)][1](device)

    for i in range(60):  # warm: ops, pipelines and buffers of every kind made once
        call(i)
    device.synchronize()
    gc.collect()
    objects, rss = live_gpu_objects(), rss_bytes()
    for i in range(calls):
        call(i)
    device.synchronize()
    gc.collect()
    after = live_gpu_objects()
    grown = {k: (objects.get(k, 0), v) for k, v in after.items() if v > objects.get(k, 0) + 2}
    assert grown == {}, f"live wgpu objects grew: {grown}"
    assert rss_bytes() - rss < 48 << 20, f"RSS grew by {(rss_bytes() - rss) >> 20} MiB over {calls} calls"


def test_op_and_pipeline_caches_are_bounded(device):
    dev = pg.Device(wgpu_device=device.wgpu_device)
    first = None
    for n in range(1, pg.device._OP_CACHE_SIZE + 12):
        op = dev.compile(pg.MaxPoolingDesc(pg.TensorDesc("uint8", (n, 1, 4)), window_size=(2,)))
        first = first or op
    assert len(dev._ops) == pg.device._OP_CACHE_SIZE
    assert len(dev._pipelines) <= pg.device._PIPELINE_CACHE_SIZE
    assert first not in dev._ops.values()  # the least recently used went first
    x = np.arange(4, dtype=np.uint8).reshape(1, 1, 4)
    np.testing.assert_array_equal(first(dev.upload(x)).numpy().ravel(), [1, 2, 3])  # still usable


# ---------------------------------------------------------------------------------------
# The hot path: a call on the tensors of the previous call skips checking and binding them


def test_repeated_calls_follow_their_tensors(device):
    op = device.compile(pg.MaxPoolingDesc(pg.TensorDesc("float32", (1, 2, 8)), window_size=(2,), strides=(2,)))
    a, b = (np.arange(16, dtype=np.float32).reshape(1, 2, 8) * s for s in (1, -1))
    xa, xb = device.upload(a), device.upload(b)
    ya, yb = device.empty(op.desc.output), device.empty(op.desc.output)
    for x, y, values in ((xa, ya, a), (xa, ya, a), (xb, ya, b), (xb, yb, b), (xa, ya, a)):
        assert op(x, out=y) is y
        assert same_bits(y.numpy(), reference.max_pool(values, (2,), (2,))[0])
    assert op(xa, out=(yb,)) is yb  # outputs as a tuple
    # a tensor moved to other memory (its attributes are public) is bound anew
    moved = device.upload(b)
    xa.buffer, xa.offset = moved.buffer, moved.offset
    op(xa, out=ya)
    assert same_bits(ya.numpy(), reference.max_pool(b, (2,), (2,))[0])
    # the remembered call holds no tensor alive (nor buffer, once the pool lets go of them)
    del xa, xb, ya, yb, moved, x, y
    gc.collect()
    device._tensor_pool.clear()
    assert op._memo is None and len(op._bound) == 0


def test_the_public_wgpu_api_path_gives_the_same_bits(device):
    """Where wgpu-native's C calls are not available the same steps go through wgpu-py."""
    assert device._native, "wgpu-native fast path unavailable: wgpu-py's internals moved (see _native.py)"
    plain = pg.Device(wgpu_device=device.wgpu_device)
    plain._native = False
    x = np.random.default_rng(5).standard_normal((2, 3, 9, 9)).astype(np.float32)
    for dev in (device, plain):
        op = dev.compile(pg.MaxPooling2Desc(pg.TensorDesc("float32", x.shape), output_indices="uint32",
                                            window_size=(3, 3), strides=(2, 2)))
        xt = dev.upload(x)
        outs = (dev.empty(op.desc.output), dev.empty(op.desc.output_indices))
        op(xt, out=outs)
        with dev.batch():
            op(xt, out=outs)
            op(xt, out=outs)
        y, i = reference.max_pool(x, (3, 3), (2, 2))
        assert same_bits(outs[0].numpy(), y) and np.array_equal(outs[1].numpy(), i)
