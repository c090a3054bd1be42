"""Timing: GPU timestamps around a compute pass where the adapter has ``timestamp-query``,
else wall clock around one synchronised submission; repetitions after warm-up, interleaved
between the things compared, and their statistics."""

from __future__ import annotations

import statistics
import time

import numpy as np
import wgpu

from .peer_base import PER_PASS, ROTATE  # noqa: F401 (the peers' workers share them without wgpu)


def _timestamp_period_ns(wgpu_device) -> float:
    """Nanoseconds per timestamp tick.  WebGPU promises nanoseconds, but wgpu-native
    resolves raw ticks unless its instance normalises them; wgpu-py does not expose the
    period, so ask wgpu-native's C API (1.0 where that is not possible, e.g. Mesa)."""
    try:
        from wgpu.backends.wgpu_native._api import libf

        period = float(libf.wgpuQueueGetTimestampPeriod(wgpu_device.queue._internal))
        return period if period > 0 else 1.0
    except Exception:
        return 1.0


class GpuTimer:
    """``seconds(record)`` records poolgpu ops (``record()`` calls them) into one compute
    pass through ``Device.recording_into``, submits it alone and waits for it.

    ``kind``: "timestamp" (GPU timestamps around that pass), "wall" (wall clock around the
    synchronised submission) or "passes": the bench's rows then time an operator and its copy
    roofline alternating in one submission (``interleaved``), which the auto mode picks on
    GPUs, whose clocks drop between submissions; ``seconds`` still times single passes (the
    roofline's tuning) with timestamps."""

    def __init__(self, device, mode: str = "auto"):
        self.device = device
        has_timestamps = "timestamp-query" in device.features
        if mode in ("timestamp", "passes") and not has_timestamps:
            raise SystemExit(f"--timer {mode}: {device.name} has no timestamp-query feature")
        if mode == "auto":
            mode = ("passes" if device.tuned_for == "gpu" else "timestamp") if has_timestamps else "wall"
        self.kind = mode
        self.note = "" if has_timestamps else "the adapter has no timestamp-query"
        self.period_ns = None
        if self.kind != "wall":
            wgpu_device = device.wgpu_device
            self.period_ns = _timestamp_period_ns(wgpu_device)
            self._queries = wgpu_device.create_query_set(type="timestamp", count=2)
            self._resolved = wgpu_device.create_buffer(
                size=16, usage=wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC
            )

    def describe(self) -> dict:
        return {"kind": self.kind, "period_ns": self.period_ns, "note": self.note}

    def seconds(self, record) -> float:
        wgpu_device = self.device.wgpu_device
        timestamps = self.kind != "wall"
        writes = None
        if timestamps:
            writes = {"query_set": self._queries, "beginning_of_pass_write_index": 0, "end_of_pass_write_index": 1}
        encoder = wgpu_device.create_command_encoder()
        compute_pass = encoder.begin_compute_pass(timestamp_writes=writes)
        with self.device.recording_into(compute_pass):
            record()
        compute_pass.end()
        if timestamps:
            encoder.resolve_query_set(self._queries, 0, 2, self._resolved, 0)
        commands = encoder.finish()
        start = time.perf_counter()
        wgpu_device.queue.submit([commands])
        if timestamps:
            raw = wgpu_device.queue.read_buffer(self._resolved)  # waits for the submission
        else:
            self.device.synchronize()
        wall = time.perf_counter() - start
        if not timestamps:
            return wall
        begin, end = (int(v) for v in np.frombuffer(raw, np.uint64))
        gpu = (end - begin) * self.period_ns * 1e-9
        # A pass cannot take longer than its submission took to come back: where it seems
        # to, the timestamps are not to be trusted (a driver quirk); fall back for good.
        if end < begin or gpu > 1.5 * wall + 1e-4:
            self.kind = "wall"
            self.note = f"timestamps disagreed with the wall clock ({gpu * 1e3:.3f} ms > {wall * 1e3:.3f} ms)"
            return wall
        return gpu


def repeat(measures, warmup: int, reps: int, budget: float, min_reps: int = 3, warmup_s: float = 0.0) -> list:
    """Run every measure (a callable returning seconds) ``warmup`` times and for at least
    ``warmup_s`` seconds, then up to ``reps`` rounds, each measure once per round (so slow
    drifts hit all alike), stopping early once ``budget`` seconds have passed and
    ``min_reps`` rounds are done."""
    start, warmed = time.perf_counter(), 0
    while warmed < warmup or time.perf_counter() - start < warmup_s:
        for measure in measures:
            measure()
        warmed += 1
    series = [[] for _ in measures]
    start = time.perf_counter()
    for done in range(1, max(reps, 1) + 1):
        for times, measure in zip(series, measures):
            times.append(measure())
        if done >= min(min_reps, reps) and time.perf_counter() - start > budget:
            break
    return series


def wall_seconds(run) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start




def interleaved(device, groups: list, rounds: int) -> list:
    """Seconds per dispatch of each group in each round: ``groups`` are lists of records
    (``record()`` calls poolgpu ops; a group's records cycle over ROTATE tensor copies).
    Every group is timed in ONE submission, ``rounds`` rounds of one timestamped pass per
    group, each pass PER_PASS dispatches: GPUs' clocks drop whenever they idle between
    submissions (an H100's copy kernel ran 0.017 or 0.037 ms for the same bytes in one
    bench run), and on shared machines load comes in phases, which then hit neighbouring
    passes alike.  Passes of independent dispatches overlap a little: these are
    throughputs.  Needs timestamp-query."""
    g = device.wgpu_device
    count = rounds * len(groups)
    queries = g.create_query_set(type="timestamp", count=2 * count)
    resolved = g.create_buffer(size=16 * count, usage=wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC)
    encoder = g.create_command_encoder()
    for i in range(count):
        group = groups[i % len(groups)]
        writes = {"query_set": queries, "beginning_of_pass_write_index": 2 * i, "end_of_pass_write_index": 2 * i + 1}
        compute_pass = encoder.begin_compute_pass(timestamp_writes=writes)
        with device.recording_into(compute_pass):
            for j in range(PER_PASS):
                group[j % len(group)]()
        compute_pass.end()
    encoder.resolve_query_set(queries, 0, 2 * count, resolved, 0)
    g.queue.submit([encoder.finish()])
    ticks = np.frombuffer(g.queue.read_buffer(resolved), np.uint64).astype(np.float64).reshape(rounds, len(groups), 2)
    seconds = (ticks[..., 1] - ticks[..., 0]) * _timestamp_period_ns(g) * 1e-9 / PER_PASS
    return [list(seconds[:, j]) for j in range(len(groups))]


def encoder_copies(device, copies: list, rounds: int) -> tuple:
    """(seconds per copy in each round, how they were timed) of the command encoder's own
    copy (``copy_buffer_to_buffer``): ``copies`` are (source buffer, destination buffer,
    bytes), cycled, PER_PASS per round, every round in ONE submission (as interleaved()
    times passes).  A copy is no compute pass, so each round is bracketed by two empty
    timestamped passes, the end of one before it and the beginning of one after; where the
    adapter has no timestamp-query, or the timestamps disagree with the wall clock, the
    wall clock around the submission, per copy."""
    g = device.wgpu_device
    timestamps = "timestamp-query" in device.features
    encoder = g.create_command_encoder()
    if timestamps:
        queries = g.create_query_set(type="timestamp", count=2 * rounds)
        resolved = g.create_buffer(size=16 * rounds, usage=wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC)
    for i in range(rounds):
        if timestamps:
            encoder.begin_compute_pass(timestamp_writes={"query_set": queries, "end_of_pass_write_index": 2 * i}).end()
        for j in range(PER_PASS):
            source, destination, size = copies[j % len(copies)]
            encoder.copy_buffer_to_buffer(source, 0, destination, 0, size)
        if timestamps:
            encoder.begin_compute_pass(timestamp_writes={"query_set": queries,
                                                         "beginning_of_pass_write_index": 2 * i + 1}).end()
    if timestamps:
        encoder.resolve_query_set(queries, 0, 2 * rounds, resolved, 0)
    start = time.perf_counter()
    g.queue.submit([encoder.finish()])
    if timestamps:
        raw = g.queue.read_buffer(resolved)
    else:
        device.synchronize()
    wall = (time.perf_counter() - start) / (rounds * PER_PASS)
    if timestamps:
        ticks = np.frombuffer(raw, np.uint64).astype(np.float64).reshape(rounds, 2)
        seconds = (ticks[:, 1] - ticks[:, 0]) * _timestamp_period_ns(g) * 1e-9 / PER_PASS
        if (seconds > 0).all() and seconds.mean() <= 1.5 * wall + 1e-4:
            return list(seconds), "GPU timestamps around each round's copies"
        return [wall] * rounds, "wall clock (the timestamps disagreed with it)"
    return [wall] * rounds, "wall clock (the adapter has no timestamp-query)"


# The statistic of a row's repetitions that its tables, ratios and % of copy use.  The
# shared CPU machines this runs on only ever add time, in phases that can slow one kernel
# 3x for a few repetitions and not the next (the copy roofline included), so the fastest
# repetition is the steadiest estimate of what a kernel costs; medians are recorded too.
SUMMARY = "min_ms"


def stats(seconds: list) -> dict:
    return {
        "median_ms": statistics.median(seconds) * 1e3,
        "min_ms": min(seconds) * 1e3,
        "reps": len(seconds),
        "times_ms": [round(s * 1e3, 6) for s in seconds],
    }
