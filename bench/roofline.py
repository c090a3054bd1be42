"""The bandwidth roofline: a plain copy kernel (src/poolgpu/wgsl/copy.wgsl) that reads as
many bytes as an operator reads and writes as many as it writes, on the same device, timed
in the same way.  Its launch shape (workgroup size, 16-byte words per invocation) is tuned
per size, fastest first, so that it is an honest limit rather than a strawman."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import poolgpu as pg
from poolgpu.errors import ValidationError

# (workgroup size, 16-byte words per invocation): the launch shapes tried.
CONFIGS = ((64, 4), (64, 16), (256, 4), (256, 16))


@dataclass(frozen=True)
class CopyDesc:
    """Bench-only description of the copy roofline (``kernels.REGISTRY["copy"]``): reads
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
