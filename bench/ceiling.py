"""The bandwidth ceiling, measured three ways on one large tensor (``--scale``): the copy
roofline's kernel (bench/copy.wgsl, its steps written out, its launch shape tuned as for the
rows), the command encoder's own copy (``copy_buffer_to_buffer``: the driver's), and
PyTorch's ``clone()`` on the CUDA device (the torch-cuda peer's worker), where there is one.
Each moves the size read plus the size written: GB/s = 2 x size / time.  The rows' % of copy
uses the roofline of their own bytes; these say how close that roofline is to the device's."""

from __future__ import annotations

import time

from .check import error_reason
from .timing import PER_PASS, ROTATE, SUMMARY, encoder_copies, interleaved, repeat, stats

GPU_BYTES = 1 << 30  # about 1 GB: far past any L2, long past a dispatch's ramp-up
CPU_BYTES = 256 << 20  # CPU adapters: their memory is the host's, past its caches at this size too
TINY_BYTES = 1 << 20  # --tiny (plumbing)
ROUNDS = 8


def size_for(device, tiny: bool) -> tuple:
    """(bytes, why that size) of the ceiling's tensor on ``device``."""
    if tiny:
        return TINY_BYTES, "--tiny"
    if device.info["type"] == "cpu":
        return CPU_BYTES, "a CPU adapter: its memory is the host's"
    limit = device.limits["max-buffer-size"] // 2 // 16 * 16
    return (GPU_BYTES, "") if limit >= GPU_BYTES else (limit, "half the device's max-buffer-size")


def _timed(times: list, nbytes: int, **more) -> dict:
    result = dict(stats(times), status="ok", **more)
    result["gb_per_s"] = 2 * nbytes / (result[SUMMARY] * 1e6)
    return result


def measure(device, timer, roofline, torch_peer, tiny: bool, warmup_s: float = 0.0, rounds: int = ROUNDS) -> dict:
    """The ceiling three ways; ``torch_peer``: the torch-cuda peer (or None)."""
    nbytes, why = size_for(device, tiny)
    result = {"bytes": nbytes, "size_note": why}

    record, info = roofline.for_bytes(nbytes, nbytes)  # tuned (and checked) under the rows' conditions
    if timer.kind == "passes":
        group = [roofline.rotating(nbytes, nbytes, ROTATE)]
        start = time.perf_counter()
        while time.perf_counter() - start < warmup_s:
            interleaved(device, group, 1)
        times = interleaved(device, group, rounds)[0]
    else:
        (times,) = repeat([lambda: timer.seconds(record)], 1, rounds, budget=float("inf"))
    result["copy_kernel"] = _timed(times, info["read_bytes"], timer=timer.kind,
                                   **{k: info[k] for k in ("workgroup_size", "vec4s_per_thread", "planes", "launch_shapes_ms")})

    source, destination = roofline.tensors(nbytes, nbytes)
    size = min(source.desc.total_size_in_bytes, destination.desc.total_size_in_bytes)
    copies = [(source.buffer, destination.buffer, size)]
    encoder_copies(device, copies, 1)  # warm-up
    times, how = encoder_copies(device, copies, rounds)
    queue = device.wgpu_device.queue
    same = all(bytes(queue.read_buffer(destination.buffer, at, 4096)) == bytes(queue.read_buffer(source.buffer, at, 4096))
               for at in (0, size - 4096))
    result["copy_buffer_to_buffer"] = (_timed(times, size, timer=how, copies_per_round=PER_PASS) if same else
                                       {"status": "check failed", "reason": "the destination's ends differ from the source's"})

    result["torch_clone"] = _torch_clone(torch_peer, nbytes, rounds)
    return result


def _torch_clone(peer, nbytes: int, rounds: int) -> dict:
    if peer is None:
        return {"status": "unavailable", "reason": "the torch-cuda peer was not asked for"}
    if peer.status:
        return {"status": "unavailable", "reason": peer.status}
    try:
        prepared = peer.prepare_clone(nbytes)
        try:
            if not prepared.outputs()["same"]:
                return {"status": "check failed", "reason": "the clone differs from its source"}
            (times,) = repeat([prepared.seconds], 1, rounds, budget=float("inf"))
        finally:
            prepared.release()
    except Exception as exc:  # reported, never fatal
        return {"status": "error", "reason": error_reason(exc)}
    return _timed(times, nbytes, version=peer.version)
