"""Host overhead: what poolgpu costs the CPU around the GPU work, on a tiny tensor."""

from __future__ import annotations

import statistics
import time
from pathlib import Path

import numpy as np

import poolgpu as pg

from .roofline import Roofline
from .timing import GpuTimer

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


def measure(device, quick: bool = False, tiny: bool = False) -> dict:
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
    results["round_trips"] = round_trips(device, quick)
    if device.info["type"] == "cpu":
        results.update(_torch_round_trip(device, x, numpy_round_trip, rounds))
        results.update(_converted_models(device, quick, tiny))
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


def _converted_models(device, quick: bool, tiny: bool) -> dict:
    """bench/models.py's rows, where torch is installed."""
    try:
        from . import models
    except ImportError:
        return {}
    return {"converted_models": models.measure(device, quick, tiny)}


# -- host round trips against the floor -------------------------------------------------
#
# The floor: what a wgpu program pays around any operator with every buffer reused: a
# queue.write_buffer of the input's bytes, a dispatch that does nothing (bench/empty.wgsl)
# and the copy of the output's bytes into a mapped buffer, in one submission, read into a
# new array.  poolgpu's calls on host arrays are measured beside it, in alternating rounds.

SMALL = (1, 64, 20, 20)  # 100 KB of float32, pooled 2x2 / 2
STEM = (1, 64, 112, 112)  # ResNet's stem pooling: 3.2 MB of float32, 3x3 / 2, padding 1
TRANSFER = STEM  # the bytes of the upload and read-back rows


class _Floor:
    """A bare write_buffer, an empty dispatch and a mapped read-back, with reused buffers."""

    def __init__(self, device, in_bytes: int, out_bytes: int) -> None:
        import wgpu

        from poolgpu import _native

        self.device, self.wgpu_device = device, device.wgpu_device
        self.map_read = _native.MAP_READ  # (poolgpu's own mode: no empty submission before the map)
        self.out_bytes = out_bytes
        usage = wgpu.BufferUsage
        self.buffer = self.wgpu_device.create_buffer(size=max(in_bytes, out_bytes),
                                                     usage=usage.STORAGE | usage.COPY_DST | usage.COPY_SRC)
        self.staging = self.wgpu_device.create_buffer(size=out_bytes, usage=usage.MAP_READ | usage.COPY_DST)
        module = self.wgpu_device.create_shader_module(code=(Path(__file__).with_name("empty.wgsl")).read_text())
        self.pipeline = self.wgpu_device.create_compute_pipeline(layout="auto",
                                                                 compute={"module": module, "entry_point": "main"})

    def write(self, data) -> None:
        self.wgpu_device.queue.write_buffer(self.buffer, 0, data)

    def submit(self, dispatch: bool = True) -> None:
        encoder = self.wgpu_device.create_command_encoder()
        if dispatch:
            compute_pass = encoder.begin_compute_pass()
            compute_pass.set_pipeline(self.pipeline)
            compute_pass.dispatch_workgroups(1)
            compute_pass.end()
        encoder.copy_buffer_to_buffer(self.buffer, 0, self.staging, 0, self.out_bytes)
        self.wgpu_device.queue.submit([encoder.finish()])

    def read(self) -> np.ndarray:
        self.staging.map_sync(self.map_read)
        mapped = self.staging.read_mapped(copy=False)
        values = np.frombuffer(mapped, np.uint8).copy()
        del mapped
        self.staging.unmap()
        return values

    def round_trip(self, data) -> np.ndarray:
        self.write(data)
        self.submit()
        return self.read()


def _alternating(runs: dict, calls: int, rounds: int) -> dict:
    """Per-call host time of each of ``runs`` (name -> function), ``calls`` calls in a row,
    in ``rounds`` alternating rounds: {name: {"median_us", "min_us"}}."""
    times = {name: [] for name in runs}
    for name, run in runs.items():  # warm
        run()
    for _ in range(rounds):
        for name, run in runs.items():
            start = time.perf_counter()
            for _ in range(calls):
                run()
            times[name].append((time.perf_counter() - start) / calls * 1e6)
    return {name: {"median_us": statistics.median(t), "min_us": min(t), "calls": calls, "rounds": rounds}
            for name, t in times.items()}


def _pooling_rows(device, label: str, shape: tuple, window: int, stride: int, padding: int, calls: int,
                  rounds: int, torch_too: bool) -> dict:
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    y = pg.max_pool(x, window, strides=stride, start_padding=padding, end_padding=padding, device=device)
    floor = _Floor(device, x.nbytes, y.nbytes)
    xt = device.upload(x)
    op = device.compile(pg.MaxPooling2Desc(xt.desc, window_size=(window,) * 2, strides=(stride,) * 2,
                                           start_padding=(padding,) * 2, end_padding=(padding,) * 2))
    yt = op(xt)

    def resident():  # the kernel's own time on top of the floor: the same bytes, the op's dispatches
        device.wgpu_device.queue.write_buffer(xt.buffer, 0, x)
        op(xt, out=yt)
        return yt.numpy()

    runs = {
        "floor": lambda: floor.round_trip(x),
        "resident": resident,
        "numpy": lambda: pg.max_pool(x, window, strides=stride, start_padding=padding, end_padding=padding,
                                     device=device),
    }
    if torch_too:
        import torch

        import poolgpu.torch as pgt

        x_torch = torch.from_numpy(x)
        runs["torch"] = lambda: pgt.max_pool2d(x_torch, window, stride, padding, device=device)
    # The op's own GPU time, timed between the rounds of the calls (bench/timing.py's timer:
    # GPU timestamps where the adapter has them), so that what a call adds beyond its kernel
    # is compared with the floor too.
    timer, kernel_us = GpuTimer(device), []
    runs["kernel"] = lambda: kernel_us.append(timer.seconds(lambda: op(xt, out=yt)) * 1e6)
    # The copy roofline of the same bytes, timed so: what any kernel reading x and writing y
    # costs on this adapter (a lower bound of the op's own).
    copy, copy_us = Roofline(device, timer).for_bytes(x.nbytes, y.nbytes)[0], []
    runs["copy"] = lambda: copy_us.append(timer.seconds(copy) * 1e6)
    timed = _alternating(runs, calls, rounds)
    kernel = statistics.median(kernel_us)
    floor_us = timed["floor"]["median_us"]
    what = f"max pooling {window}x{window} / {stride} of float32 {'x'.join(map(str, shape))} ({x.nbytes} bytes)"
    rows = {f"floor_{label}": dict(timed["floor"], what=f"write_buffer of {x.nbytes} bytes, an empty dispatch, "
                                                         f"read-back of {y.nbytes} bytes (buffers reused)"),
            f"kernel_{label}": {"median_us": kernel, "min_us": min(kernel_us), "timer": timer.kind,
                                "what": f"{what}: the op's dispatches alone, GPU time"},
            f"copy_{label}": {"median_us": statistics.median(copy_us), "min_us": min(copy_us), "timer": timer.kind,
                              "vs_floor": statistics.median(copy_us) / floor_us,
                              "what": f"the copy roofline of the same bytes ({x.nbytes} read, {y.nbytes} written) "
                                      "alone, GPU time"}}
    whats = {"resident": "op(x, out=y) on resident tensors after a write_buffer of x, then y.numpy()",
             "numpy": "pg.max_pool (NumPy) -> host", "torch": "pgt.max_pool2d (torch) -> host"}
    for kind in ("resident", "numpy", "torch"):
        if kind in timed:
            row = dict(timed[kind], what=f"{what}: {whats[kind]}")
            row["vs_floor"] = row["median_us"] / floor_us
            row["beyond_kernel_vs_floor"] = (row["median_us"] - kernel) / floor_us
            rows[f"{kind}_{label}"] = row
    return rows


def _transfer_rows(device, calls: int, rounds: int) -> dict:
    x = np.random.default_rng(1).standard_normal(TRANSFER).astype(np.float32)
    floor = _Floor(device, x.nbytes, x.nbytes)
    t = device.upload(x)

    def bare_upload():
        floor.write(x)

    def upload():
        device.upload(x)

    def bare_read():
        floor.submit(dispatch=False)
        floor.read()

    uploads = {"bare": lambda: [bare_upload() for _ in range(10)] and floor.round_trip(x[:1, :1, :1]),
               "poolgpu": lambda: [upload() for _ in range(10)] and device.synchronize()}
    timed_up = _alternating(uploads, max(1, calls // 10), rounds)
    timed_read = _alternating({"bare": bare_read, "poolgpu": t.numpy}, calls, rounds)
    rows = {}
    for name, timed, per in (("upload", timed_up, 10), ("read_back", timed_read, 1)):
        for who in ("bare", "poolgpu"):
            row = dict(timed[who])
            row["median_us"] /= per
            row["min_us"] /= per
            row["gb_per_s"] = x.nbytes / row["median_us"] / 1e3
            rows[f"{name}_{who}"] = row
        rows[f"{name}_poolgpu"]["vs_bare"] = rows[f"{name}_poolgpu"]["median_us"] / rows[f"{name}_bare"]["median_us"]
    rows["upload_bare"]["what"] = f"queue.write_buffer of {x.nbytes} bytes into a reused buffer (10, then a wait)"
    rows["upload_poolgpu"]["what"] = f"Device.upload of {x.nbytes} bytes (10, then synchronize())"
    rows["read_back_bare"]["what"] = f"copy of {x.nbytes} bytes into a reused mapped buffer, read into an array"
    rows["read_back_poolgpu"]["what"] = f"Tensor.numpy() of {x.nbytes} bytes"
    return rows


def round_trips(device, quick: bool = False) -> dict:
    """The host rows: per call of a 100 KB and a stem-sized max pooling through NumPy (and
    poolgpu.torch, on CPU adapters where torch is installed) against the floor measured in
    the same run, and upload and read-back of 3.2 MB against bare wgpu."""
    rounds = 3 if quick else ROUNDS
    torch_too = device.info["type"] == "cpu"
    if torch_too:
        try:
            import poolgpu.torch  # noqa: F401
        except ImportError:
            torch_too = False
    rows = _pooling_rows(device, "100kb", SMALL, 2, 2, 0, 10 if quick else 50, rounds, torch_too)
    rows.update(_pooling_rows(device, "stem", STEM, 3, 2, 1, 3 if quick else 10, rounds, torch_too))
    rows.update(_transfer_rows(device, 3 if quick else 10, rounds))
    return rows


def main(argv=None) -> int:
    """``python -m bench.host [--backend B] [--quick]``: the host rows alone, as a table."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m bench.host", description=main.__doc__)
    parser.add_argument("--backend", default=None)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    device = pg.Device(backend=args.backend)
    print(f"{device.name} ({device.backend})")
    for name, row in round_trips(device, args.quick).items():
        ratio = next((f"{row[k]:.2f}x {k[3:]}" for k in ("vs_floor", "vs_bare") if k in row), "")
        if "beyond_kernel_vs_floor" in row:
            ratio += f", {row['beyond_kernel_vs_floor']:.2f}x beyond the kernel"
        rate = f"{row['gb_per_s']:.2f} GB/s" if "gb_per_s" in row else ""
        print(f"{name:20s} {row['median_us']:10.0f} us  {rate:>11s}  {ratio}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
