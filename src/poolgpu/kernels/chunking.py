"""Tensors larger than a storage binding: the program runs in chunks of (n, c) planes (planes
numbered n * C + c), each dispatch restricted to its planes' units (Split.regrid) and
binding only the bytes those planes span (a View: the same buffer, bound from the chunk's
first byte; kernels still address elements from the tensor's start, with a base offset
that wraps around below the binding, exact in u32 arithmetic)."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Mapping, Optional

from ..dtypes import DataType
from ..errors import DeviceError
from ..tensor_desc import TensorDesc
from .core import Pass, Program, View
from .grids import grid_fits, sorted_constants

def max_offset(desc: TensorDesc) -> int:
    """The largest element offset of the tensor's elements."""
    return sum((size - 1) * stride for size, stride in zip(desc.sizes, desc.strides))


def plane_count(desc: TensorDesc) -> int:
    return desc.sizes[0] * desc.sizes[1]


def plane_span(desc: TensorDesc, first: int, stop: int) -> tuple:
    """(lowest, highest) element offset of the tensor's (n, c) planes [first, stop)."""
    channels = desc.sizes[1]
    stride_n, stride_c = desc.strides[:2]
    rest = sum((size - 1) * stride for size, stride in zip(desc.sizes[2:], desc.strides[2:]))
    n0, c0 = divmod(first, channels)
    n1, c1 = divmod(stop - 1, channels)
    # the run as boxes of (n, c); strides are non-negative, so a box's corners bound it
    boxes = [(n0, c0, n1, c1)] if n0 == n1 else [(n0, c0, n0, channels - 1), (n1, 0, n1, c1)]
    if n1 > n0 + 1:
        boxes.append((n0 + 1, 0, n1 - 1, channels - 1))
    low = min(n * stride_n + c * stride_c for n, c, _, _ in boxes)
    high = max(n * stride_n + c * stride_c for _, _, n, c in boxes)
    return low, high + rest


class _Chunker:
    """Plans and emits a chunked program (see :func:`chunked`)."""

    def __init__(self, program: Program, descs: Mapping[str, TensorDesc], limit: int):
        self.descs = dict(descs, **dict(program.scratch))
        self.limit = limit
        self.split = [p for p in program.passes if p.split is not None]
        whole = {r for p in program.passes for r in p.tensors if r is not None and (p.split is None or r in p.split.whole)}
        # scratch used plane by plane shrinks to one chunk's planes (packed, so plane q holds
        # elements [q * plane, (q + 1) * plane))
        self.scratch_planes = {
            name: math.prod(t.sizes[2:]) for name, t in program.scratch if name not in whole
        }
        for role in sorted(whole):
            size = (max_offset(self.descs[role]) + 1) * self.descs[role].data_type.size
            if size > limit:
                raise DeviceError(
                    f"{role}: bound whole, its {size} bytes exceed what one storage binding of this device "
                    f"holds ({limit} bytes usable); use fewer ROIs or smaller outputs"
                )

    def span_bytes(self, role: str, first: int, stop: int) -> int:
        if role in self.scratch_planes:
            return (stop - first) * self.scratch_planes[role] * 4
        low, high = plane_span(self.descs[role], first, stop)
        return (high - low + 1) * self.descs[role].data_type.size

    def units_roles(self, p: Pass) -> list:
        s = p.split
        return [r for r in p.tensors if r is not None and r not in s.whole and r not in (s.gather, s.scatter)]

    def unit_range(self, p: Pass, first: int, stop: int) -> tuple:
        """The pass's (first unit, units) for planes [first, stop) of its units tensors."""
        if p.split.whole_n:
            channels = self.descs[self.units_roles(p)[0]].sizes[1]
            first, stop = first // channels, stop // channels
        return first * p.split.per_plane, (stop - first) * p.split.per_plane

    def too_big(self, roles, first: int, stop: int, p: Optional[Pass] = None):
        """(what, bytes) of the first role spanning more than the limit over planes
        [first, stop) (or of the pass's grid past its limits); None if all fit."""
        for role in roles:
            size = self.span_bytes(role, first, stop)
            if size > self.limit:
                return role, size
        if p is not None and not grid_fits(p.split.regrid(*self.unit_range(p, first, stop))[2]):
            return f"{p.kernel.file}'s grid", None
        return None

    def program_too_big(self, first: int, stop: int):
        for p in self.split:
            if p.split.scatter:
                problem = self.too_big([p.split.scatter], first, stop)
            else:
                problem = self.too_big(self.units_roles(p), first, stop, p)
            if problem:
                return problem
        return None

    def runs(self, total: int, step: int, too_big) -> list:
        """Runs [first, stop) covering [0, total), each as long as `too_big` allows, in
        multiples of `step`."""
        runs, first = [], 0
        while first < total:
            def bad(steps):
                return too_big(first, min(first + steps * step, total))

            problem = bad(1)
            if problem:
                role, size = problem
                unit = "batch" if step > 1 else "(n, c) plane"
                spans = f"spans {size} bytes" if size is not None else "needs too many workgroups"
                raise DeviceError(
                    f"{role}: one {unit} {spans}, more than one storage binding of this device holds "
                    f"({self.limit} bytes usable): poolgpu splits large tensors along N and C only; "
                    "use smaller spatial sizes or a device with larger bindings"
                )
            good, most = 1, -(-(total - first) // step)
            while good < most and not bad(min(2 * good, most)):
                good = min(2 * good, most)
            high = min(2 * good, most)  # bad(high) or good == most
            while high - good > 1:
                middle = (good + high) // 2
                good, high = (middle, high) if not bad(middle) else (good, middle)
            stop = min(first + good * step, total)
            runs.append((first, stop))
            first = stop
        return runs

    def view(self, role: str, first: int, stop: int) -> View:
        if role in self.scratch_planes:
            plane = self.scratch_planes[role]
            return View(role, first * plane, stop * plane - 1, shift=-first * plane)
        return View(role, *plane_span(self.descs[role], first, stop))

    def emit(self, p: Pass, units: tuple, planes: Optional[tuple], first_range: bool, last_range: bool) -> Pass:
        s = p.split
        constants, params, grid = s.regrid(*self.unit_range(p, *units))
        params = {**p.params, **params}
        constants = sorted_constants({**dict(p.constants), **constants})
        if planes is not None:
            params.update(s.filter(planes[0], planes[1] - planes[0], first_range, last_range))
        views = []
        for role in p.tensors:
            if role is None:
                views.append(None)
            elif role in s.whole:
                views.append(View(role, 0, max_offset(self.descs[role])))
            else:
                views.append(self.view(role, *(planes if role in (s.gather, s.scatter) else units)))
        return replace(p, tensors=tuple(views), constants=constants, params=params, grid=grid, split=None)

    def program(self, program: Program) -> Optional[Program]:
        """The chunked program, or None where a pass would have to read a tensor too large
        to bind whole in ranges of planes but cannot (not ``Split.ranged``)."""
        first_split = self.split[0]
        units_role = first_split.split.scatter or self.units_roles(first_split)[0]
        total = plane_count(self.descs[units_role])
        step = self.descs[units_role].sizes[1] if any(p.split.whole_n for p in self.split) else 1
        chunks = self.runs(total, step, self.program_too_big)
        own_runs = {}  # a scatter pass's units and a gather role's planes, in ranges of their own
        for p in self.split:
            s = p.split
            if s.scatter:
                roles = self.units_roles(p)
                own_runs[id(p)] = self.runs(plane_count(self.descs[roles[0]]), 1,
                                            lambda a, b, p=p, roles=roles: self.too_big(roles, a, b, p))
            elif s.gather:
                own_runs[id(p)] = self.runs(plane_count(self.descs[s.gather]), 1,
                                            lambda a, b, g=s.gather: self.too_big([g], a, b))
                if len(own_runs[id(p)]) > 1 and not s.ranged:
                    return None
        passes = []
        for index, chunk in enumerate(chunks):
            for p in program.passes:
                s = p.split
                if s is None:  # whole tensors (a bin table): once, before the first chunk needs it
                    if index == 0:
                        passes.append(p)
                elif s.scatter:
                    passes += [self.emit(p, units, chunk, True, True) for units in own_runs[id(p)]]
                else:
                    ranges = own_runs.get(id(p), [None])
                    passes += [self.emit(p, chunk, r, k == 0, k == len(ranges) - 1) for k, r in enumerate(ranges)]
        longest = max(stop - first for first, stop in chunks)
        scratch = tuple(
            (name, TensorDesc(DataType.UINT32, (1, 1, longest * self.scratch_planes[name])))
            if name in self.scratch_planes else (name, t)
            for name, t in program.scratch
        )
        return replace(program, passes=tuple(passes), scratch=scratch)


def _fits_whole(program: Program, descs: Mapping[str, TensorDesc], limit: int) -> bool:
    descs = dict(descs, **dict(program.scratch))
    for p in program.passes:
        if not grid_fits(p.grid):
            return False
        for role in p.tensors:
            if role is not None and (max_offset(descs[role]) + 1) * descs[role].data_type.size > limit:
                return False
    return True


def chunked(program: Program, descs: Mapping[str, TensorDesc], limit: int) -> Program:
    """``program`` as dispatches that each bind at most ``limit`` bytes of every tensor (of
    ``descs``: role -> TensorDesc) and fit the grid limits: the program itself where it
    does; else its passes run chunk by chunk over runs of (n, c) planes (see Split), each
    chunk's dispatches binding :class:`View` s of the tensors, and plane-wise scratch shrinks
    to one chunk.  Raises DeviceError where a single plane is too large."""
    if _fits_whole(program, descs, limit):
        return program
    fallback = program.fallback and chunked(program.fallback, descs, limit)
    if program.whole_only:
        if fallback is None:
            raise DeviceError(
                f"{program.passes[0].kernel.file}: a tensor exceeds this device's largest storage binding "
                f"({limit} bytes usable), and this operator runs only on tensors that each fit one: split the "
                "call along N or C (several calls on parts of the tensors)")
        return fallback
    if not any(p.split for p in program.passes):
        raise DeviceError(f"{program.passes[0].kernel.file}: a tensor exceeds this device's largest storage binding")
    planned = _Chunker(program, descs, limit).program(program)
    return fallback if planned is None else replace(planned, fallback=fallback)
