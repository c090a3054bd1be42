"""Host overhead: what poolgpu costs the CPU around the GPU work, on a tiny tensor."""

from __future__ import annotations

import statistics
import time

import numpy as np

import poolgpu as pg

ROUNDS = 7


def _per_call_us(run, calls: int, rounds: int, after=None) -> dict:
    """Median and min over ``rounds`` of the host time per call of ``run`` (``calls`` calls in
    a row), ``after()`` (untimed) between rounds."""
    per_call = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            run()
        per_call.append((time.perf_counter() - start) / calls * 1e6)
        if after is not None:
            after()
    return {"median_us": statistics.median(per_call), "min_us": min(per_call), "calls": calls, "rounds": rounds}


def measure(device, quick: bool = False) -> dict:
    rounds = 3 if quick else ROUNDS
    x = np.arange(64, dtype=np.float32).reshape(1, 1, 8, 8)
    op = device.compile(pg.MaxPoolingDesc(pg.TensorDesc("float32", x.shape), window_size=(2, 2), strides=(2, 2)))
    xt = device.upload(x)
    y = device.empty(op.desc.output)
    for _ in range(20):  # warm: pipeline, bind group and uniforms cached
        op(xt, out=y)
    device.synchronize()

    def batch_of_100():
        with device.batch():
            for _ in range(100):
                op(xt, out=y)

    def numpy_round_trip():
        pg.max_pool(x, (2, 2), strides=(2, 2), device=device)

    numpy_round_trip()
    batch = _per_call_us(batch_of_100, 1, rounds, device.synchronize)
    for key in ("median_us", "min_us"):
        batch[key] /= 100
    results = {
        "op_call": dict(_per_call_us(lambda: op(xt, out=y), 100, rounds, device.synchronize),
                        what="a cached op(x, out=y) on 1x1x8x8 float32: host time per call (one submission each)"),
        "numpy_round_trip": dict(_per_call_us(numpy_round_trip, 10, rounds),
                                 what="pg.max_pool(numpy 1x1x8x8) -> numpy: upload, dispatch, wait, read back"),
        "batch_per_op": dict(batch, calls=100,
                             what="100 cached ops in one dev.batch(): host time per op, submission included"),
    }
    if device.info["type"] == "cpu":
        results.update(_torch_round_trip(device, x, numpy_round_trip, rounds))
    else:  # PyTorch in the bench's process slowed every kernel timed on an H100 2-5x
        results["torch_round_trip"] = {"what": "left out on GPUs: PyTorch stays out of the bench's process there"}
    return results


def _torch_round_trip(device, x, numpy_round_trip, rounds: int) -> dict:
    """poolgpu.torch's host time around the same work as ``numpy_round_trip`` (measured in
    alternating rounds with it, so that both see the same machine), where torch is installed."""
    try:
        import torch

        import poolgpu.torch as pgt
    except ImportError:
        return {}
    xt = torch.from_numpy(x)

    def torch_round_trip():
        pgt.max_pool2d(xt, 2, device=device)

    torch_round_trip()
    core, through_torch = [], []
    for _ in range(rounds):
        core.append(_per_call_us(numpy_round_trip, 10, 1)["median_us"])
        through_torch.append(_per_call_us(torch_round_trip, 10, 1)["median_us"])
    row = {"median_us": statistics.median(through_torch), "min_us": min(through_torch), "calls": 10, "rounds": rounds,
           "core_median_us": statistics.median(core),
           "what": "pgt.max_pool2d(torch 1x1x8x8, 2) -> torch: numpy_round_trip's work through poolgpu.torch"}
    row["vs_core"] = row["median_us"] / row["core_median_us"]
    return {"torch_round_trip": row}
