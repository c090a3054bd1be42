"""The bandwidth roofline: a plain copy kernel (bench/copy.wgsl) that reads as
many bytes as an operator reads and writes as many as it writes, on the same device, timed
in the same way.  Its launch shape (workgroup size, 16-byte words per invocation) is tuned
per size, fastest first, so that it is an honest limit rather than a strawman."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import poolgpu as pg
from poolgpu.errors import ValidationError
from poolgpu.kernels import Kernel, Pass, Program, Slot, register

# (workgroup size, 16-byte words per invocation): the launch shapes tried.
CONFIGS = ((64, 4), (64, 16), (256, 4), (256, 16))


@dataclass(frozen=True)
class CopyDesc:
    """Bench-only description of the copy roofline (its program: :func:`copy_program`): reads
    ``input`` once and writes ``output`` once.  Both are packed UINT32 tensors whose sizes
    are whole 16-byte words."""

    input: pg.TensorDesc
    output: pg.TensorDesc
    workgroup_size: int = 256
    vec4s_per_thread: int = 1

    kernel = "copy"

    def __post_init__(self):
        for role in ("input", "output"):
            tensor = getattr(self, role)
            if tensor.data_type != pg.DataType.UINT32 or tensor.strides != pg.TensorDesc("uint32", tensor.sizes).strides:
                raise ValidationError(role, "expected a packed UINT32 tensor")
            if tensor.total_size_in_bytes % 16:
                raise ValidationError(f"{role}.sizes", "expected whole 16-byte words")
        if self.workgroup_size < 1 or self.vec4s_per_thread < 1:
            raise ValidationError("workgroup_size", "expected positive launch sizes")

    @staticmethod
    def words(nbytes: int) -> pg.TensorDesc:
        return pg.TensorDesc("uint32", (1, 1, max(4, -(-nbytes // 16) * 4)))

    def input_tensors(self):
        return (("input", self.input),)

    def output_tensors(self):
        return (("output", self.output),)


# 16-byte loads and stores: src and dst bound as array<vec4<u32>> (common/{read,write}_v4.wgsl).
# The shader lives beside this file (an absolute path: the kernel layer reads it from there).
COPY = Kernel(str(Path(__file__).with_name("copy.wgsl")),
              (Slot("src", False, snippet="read_v4.wgsl"), Slot("dst", True, snippet="write_v4.wgsl")),
              value_slot="src", params=("src_vec4s", "dst_vec4s"))  # 16-byte words to read and to write


@register("copy")
def copy_program(desc, tuning) -> Program:
    """``desc.input`` read once and ``desc.output`` written once, 16 bytes per access,
    ``desc.vec4s_per_thread`` words per invocation in workgroups of ``desc.workgroup_size``
    (whatever the device's tuning: the roofline tunes its own launch shape)."""
    src_vec4s = desc.input.total_size_in_bytes // 16
    dst_vec4s = desc.output.total_size_in_bytes // 16
    per_group = desc.workgroup_size * desc.vec4s_per_thread
    groups = max(1, math.ceil(max(src_vec4s, dst_vec4s) / per_group))
    grid = (min(groups, 65535), math.ceil(groups / 65535), 1)
    params = {"src_vec4s": src_vec4s, "dst_vec4s": dst_vec4s}
    constants = tuple(sorted({"WG": desc.workgroup_size, "ITEMS": desc.vec4s_per_thread}.items()))
    return Program((Pass(COPY, ("input", "output"), constants, params, grid),))


def expected_copy(src_words: np.ndarray, dst_vec4s: int, workgroup_size: int, per_thread: int) -> np.ndarray:
    """What copy.wgsl writes: 16-byte word j belongs to invocation (j // (WG * ITEMS), j % WG)
    of its workgroup, which XOR-folds the source words it owns and stores the fold in the
    destination words it owns."""
    src = src_words.reshape(-1, 4)
    block = workgroup_size * per_thread
    groups = -(-max(len(src), dst_vec4s) // block)
    padded = np.zeros((groups * block, 4), np.uint32)
    padded[: len(src)] = src
    fold = np.bitwise_xor.reduce(padded.reshape(groups, per_thread, workgroup_size, 4), axis=1, keepdims=True)
    return np.broadcast_to(fold, (groups, per_thread, workgroup_size, 4)).reshape(-1, 4)[:dst_vec4s].ravel()


class Roofline:
    """``for_bytes(read, written)`` -> (record, info): ``record()`` dispatches the fastest
    correct copy moving those bytes (checked once); cached per size until ``clear()``."""

    def __init__(self, device, timer, seed: int = 0):
        self.device, self.timer = device, timer
        self._rng = np.random.default_rng(seed)
        self._cache = {}

    def clear(self) -> None:
        self._cache.clear()

    def for_bytes(self, read_bytes: int, written_bytes: int):
        src_desc, dst_desc = CopyDesc.words(read_bytes), CopyDesc.words(written_bytes)
        key = (src_desc.sizes, dst_desc.sizes)
        if key not in self._cache:
            self._cache[key] = self._tune(src_desc, dst_desc)
        return self._cache[key]

    def rotating(self, read_bytes: int, written_bytes: int, count: int) -> list:
        """``count`` records of for_bytes' copy, each on its own tensors (the first is
        for_bytes' own), for timing.interleaved's rotating copies."""
        record, info = self.for_bytes(read_bytes, written_bytes)
        src_desc, dst_desc = CopyDesc.words(read_bytes), CopyDesc.words(written_bytes)
        desc = CopyDesc(src_desc, dst_desc, info["workgroup_size"], info["vec4s_per_thread"])
        op, records = self.device.compile(desc), [record]
        for _ in range(count - 1):
            src = self.device.upload(self._rng.integers(0, 2**32, src_desc.sizes, dtype=np.uint32))
            dst = self.device.empty(dst_desc)
            records.append(lambda src=src, dst=dst: op(src, out=dst))
        return records

    def _tune(self, src_desc, dst_desc):
        device = self.device
        words = self._rng.integers(0, 2**32, src_desc.sizes, dtype=np.uint32)
        src = device.upload(words)
        dst_vec4s = dst_desc.total_size_in_bytes // 16
        best = None
        for workgroup_size, per_thread in CONFIGS:
            desc = CopyDesc(src_desc, dst_desc, workgroup_size, per_thread)
            op, dst = device.compile(desc), device.empty(dst_desc)  # a fresh, zeroed destination each

            def record(op=op, dst=dst):
                op(src, out=dst)

            first = self.timer.seconds(record)
            expected = expected_copy(words.ravel(), dst_vec4s, workgroup_size, per_thread)
            if not np.array_equal(dst.numpy().ravel(), expected):
                raise AssertionError(f"the copy kernel wrote wrong data (workgroup {workgroup_size}, {per_thread}/thread)")
            seconds = min(first, self.timer.seconds(record))
            if best is None or seconds < best[0]:
                best = (seconds, record, {"workgroup_size": workgroup_size, "vec4s_per_thread": per_thread})
        _, record, config = best
        info = dict(config, read_bytes=src_desc.total_size_in_bytes, written_bytes=dst_desc.total_size_in_bytes)
        return record, info
