"""The bandwidth roofline: a plain copy kernel (bench/copy.wgsl) that reads as many bytes as
an operator reads and writes as many as it writes, on the same device, timed in the same
way.  Its launch shape (workgroup size, 16-byte words per invocation) is tuned per size
under the rows' own conditions (on GPUs: passes of rotating copies in one submission, after
the same warm-up), fastest first, so that it is an honest limit rather than a strawman."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import poolgpu as pg
from poolgpu.errors import ValidationError
from poolgpu.kernels import Kernel, Pass, Program, Slot, Split, register
from poolgpu.kernels.grids import fold_groups

from .timing import ROTATE, interleaved

# (workgroup size, 16-byte words per invocation): the launch shapes tried.
CONFIGS = ((64, 4), (64, 16), (128, 8), (256, 1), (256, 4), (256, 16))
MAX_ITEMS = 16  # copy.wgsl writes out 16 steps
PLANE_BYTES = 16 << 20  # the most bytes of a plane (copy.wgsl): a chunked dispatch binds whole planes
TUNING_ROUNDS = 3  # timed passes per launch shape (GPUs), after the warm-up
CHECKED_WORDS = 1 << 16  # the most 16-byte words of a copy compared with their expected value


@dataclass(frozen=True)
class CopyDesc:
    """Bench-only description of the copy roofline (its program: :func:`copy_program`): reads
    ``input`` once and writes ``output`` once.  Both are packed UINT32 tensors of the same
    number of planes {1, P, words * 4} (:meth:`shapes` makes them), whole 16-byte words."""

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
            if len(tensor.sizes) != 3 or tensor.sizes[0] != 1 or tensor.sizes[2] % 4:
                raise ValidationError(f"{role}.sizes", "expected {1, planes, whole 16-byte words}")
        if self.input.sizes[1] != self.output.sizes[1]:
            raise ValidationError("output.sizes", "expected as many planes as the input")
        if self.workgroup_size < 1 or not 1 <= self.vec4s_per_thread <= MAX_ITEMS:
            raise ValidationError("workgroup_size", f"expected positive launch sizes, at most {MAX_ITEMS} words per invocation")

    @staticmethod
    def shapes(read_bytes: int, written_bytes: int) -> tuple:
        """(input, output) TensorDescs of a copy moving at least these bytes: as many planes
        as the larger needs to keep each plane within PLANE_BYTES, each plane of whole
        16-byte words (at most 16 bytes per plane more than asked)."""
        planes = max(1, -(-max(read_bytes, written_bytes) // PLANE_BYTES))

        def desc(nbytes):
            words = max(1, -(-nbytes // (16 * planes)))
            return pg.TensorDesc("uint32", (1, planes, 4 * words))

        return desc(read_bytes), desc(written_bytes)

    def input_tensors(self):
        return (("input", self.input),)

    def output_tensors(self):
        return (("output", self.output),)


# 16-byte loads and stores: src and dst bound as array<vec4<u32>> (common/{read,write}_v4.wgsl).
# The shader lives beside this file (an absolute path: the kernel layer reads it from there).
COPY = Kernel(str(Path(__file__).with_name("copy.wgsl")),
              (Slot("src", False, snippet="read_v4.wgsl"), Slot("dst", True, snippet="write_v4.wgsl")),
              value_slot="src", params=("src_plane_vec4s", "dst_plane_vec4s", "first_plane"))


@register("copy")
def copy_program(desc, tuning) -> Program:
    """``desc.input`` read once and ``desc.output`` written once, 16 bytes per access,
    ``desc.vec4s_per_thread`` words per invocation in workgroups of ``desc.workgroup_size``
    (whatever the device's tuning: the roofline tunes its own launch shape).  Its planes
    are its units: where the tensors exceed a storage binding, poolgpu's chunking runs it
    as dispatches over runs of planes."""
    planes = desc.input.sizes[1]
    src_plane, dst_plane = desc.input.sizes[2] // 4, desc.output.sizes[2] // 4
    groups = fold_groups(math.ceil(max(src_plane, dst_plane) / (desc.workgroup_size * desc.vec4s_per_thread)))

    def regrid(first_plane, count):
        return {}, {"first_plane": first_plane}, groups[:2] + (count,)

    params = {"src_plane_vec4s": src_plane, "dst_plane_vec4s": dst_plane, "first_plane": 0}
    constants = tuple(sorted({"WG": desc.workgroup_size, "ITEMS": desc.vec4s_per_thread}.items()))
    return Program((Pass(COPY, ("input", "output"), constants, params, groups[:2] + (planes,),
                         split=Split(per_plane=1, regrid=regrid)),))


def expected_words(src: np.ndarray, dst_plane_vec4s: int, workgroup_size: int, per_thread: int,
                   at: np.ndarray) -> np.ndarray:
    """What copy.wgsl writes to the destination's 16-byte words ``at`` (numbered flat over
    the planes), as (len(at), 4) u32: ``src`` is the source, (planes, words, 4).  In a plane,
    word j belongs to invocation (j // (WG * ITEMS), j % WG) of the plane's workgroups, which
    XOR-folds the source words it owns and stores the fold in the destination words it owns."""
    q, i = np.divmod(np.asarray(at, np.int64), dst_plane_vec4s)
    block = workgroup_size * per_thread
    owned = (i // block * block + i % workgroup_size)[:, None] + workgroup_size * np.arange(per_thread)
    inside = owned < src.shape[1]
    words = src[q[:, None], np.minimum(owned, src.shape[1] - 1)]
    return np.bitwise_xor.reduce(np.where(inside[..., None], words, 0), axis=1).astype(np.uint32)


def checked_words(total: int, planes: int, rng) -> np.ndarray:
    """The destination words a copy's check compares: all of them up to CHECKED_WORDS, else
    each plane's first and last words, the tensor's ends and a random sample."""
    if total <= CHECKED_WORDS:
        return np.arange(total)
    plane = total // planes
    edges = (np.arange(planes)[:, None] * plane + np.r_[0:64, plane - 64:plane]).ravel()
    sample = rng.integers(0, total, CHECKED_WORDS // 2)
    return np.unique(np.concatenate([edges, np.r_[0:4096, total - 4096:total], sample]).clip(0, total - 1))


class _Tuned:
    """The fastest launch shape of one size: its op and its tensor sets (sources, destinations)."""

    def __init__(self, op, sources, destinations, info):
        self.op, self.sources, self.destinations, self.info = op, sources, destinations, info
        self._records = {}

    def record(self, k: int):
        """Records the copy on tensor set k (the same callable each time)."""
        if k not in self._records:
            self._records[k] = lambda: self.op(self.sources[k], out=self.destinations[k])
        return self._records[k]


class Roofline:
    """``for_bytes(read, written)`` -> (record, info): ``record()`` dispatches the fastest
    correct copy moving those bytes (every launch shape checked once); cached per size until
    ``clear()``.  ``warmup_s``: the GPU is kept busy at least this long before the launch
    shapes are timed (as before a row)."""

    def __init__(self, device, timer, seed: int = 0, warmup_s: float = 0.0):
        self.device, self.timer, self.warmup_s = device, timer, warmup_s
        self._rng = np.random.default_rng(seed)
        self._cache = {}

    def clear(self) -> None:
        self._cache.clear()

    def _tuned(self, read_bytes: int, written_bytes: int) -> _Tuned:
        key = (read_bytes, written_bytes)
        if key not in self._cache:
            self._cache[key] = self._tune(*CopyDesc.shapes(read_bytes, written_bytes))
        return self._cache[key]

    def for_bytes(self, read_bytes: int, written_bytes: int):
        tuned = self._tuned(read_bytes, written_bytes)
        return tuned.record(0), tuned.info

    def tensors(self, read_bytes: int, written_bytes: int) -> tuple:
        """(source, destination) of for_bytes' copy (for other copies of the same bytes)."""
        tuned = self._tuned(read_bytes, written_bytes)
        return tuned.sources[0], tuned.destinations[0]

    def rotating(self, read_bytes: int, written_bytes: int, count: int) -> list:
        """``count`` records of for_bytes' copy, each on its own tensors (the first is
        for_bytes' own), for timing.interleaved's rotating copies."""
        tuned = self._tuned(read_bytes, written_bytes)
        while len(tuned.sources) < count:
            self._add_set(tuned.sources, tuned.destinations, tuned.op.desc.input, tuned.op.desc.output)
        return [tuned.record(k) for k in range(count)]

    def _add_set(self, sources, destinations, src_desc, dst_desc, words=None) -> None:
        if words is None:
            words = self._rng.integers(0, 2**32, src_desc.sizes, dtype=np.uint32)
        sources.append(self.device.upload(words))
        destinations.append(self.device.empty(dst_desc))

    def _tune(self, src_desc, dst_desc) -> _Tuned:
        device = self.device
        words = self._rng.integers(0, 2**32, src_desc.sizes, dtype=np.uint32)
        sources, destinations = [], []
        for _ in range(ROTATE if self.timer.kind == "passes" else 1):
            self._add_set(sources, destinations, src_desc, dst_desc, words)
        planes, dst_plane = dst_desc.sizes[1], dst_desc.sizes[2] // 4
        at = checked_words(planes * dst_plane, planes, self._rng)
        src = words.reshape(planes, -1, 4)
        ops, seconds = [], []
        for workgroup_size, per_thread in CONFIGS:
            op = device.compile(CopyDesc(src_desc, dst_desc, workgroup_size, per_thread))
            fresh = device.empty(dst_desc)  # zeroed: a word left unwritten shows

            def record(op=op, fresh=fresh):
                op(sources[0], out=fresh)

            first = self.timer.seconds(record)
            written = fresh.numpy().reshape(-1, 4)[at]
            if not np.array_equal(written, expected_words(src, dst_plane, workgroup_size, per_thread, at)):
                raise AssertionError(f"the copy kernel wrote wrong data (workgroup {workgroup_size}, {per_thread}/thread)")
            ops.append(op)
            if self.timer.kind != "passes":
                seconds.append(min(first, self.timer.seconds(record)))
            del fresh, record
        if self.timer.kind == "passes":  # as the rows are timed: alternating in one submission
            groups = [[lambda op=op, k=k: op(sources[k], out=destinations[k]) for k in range(len(sources))]
                      for op in ops]
            start = time.perf_counter()
            while True:
                interleaved(device, groups, 1)
                if time.perf_counter() - start >= self.warmup_s:
                    break
            seconds = [min(times) for times in interleaved(device, groups, TUNING_ROUNDS)]
        best = int(np.argmin(seconds))
        workgroup_size, per_thread = CONFIGS[best]
        info = {"workgroup_size": workgroup_size, "vec4s_per_thread": per_thread, "planes": planes,
                "read_bytes": src_desc.total_size_in_bytes, "written_bytes": dst_desc.total_size_in_bytes,
                "launch_shapes_ms": {f"{w}x{p}": round(s * 1e3, 6) for (w, p), s in zip(CONFIGS, seconds)}}
        return _Tuned(ops[best], sources, destinations, info)
