"""Long windows, bins and planes: split walks and their merge passes.

llvmpipe (lavapipe and Mesa's OpenGL, the software adapters) ends a shader invocation's
loops after LOOP_LIMIT iterations, all its loops together (nested loops multiply, loops one
after another add), and goes on with wrong values, without an error.  A real GPU resets an
invocation that runs for seconds (Windows after about 2 s), and a few invocations each
walking a huge window leave most of it idle.  So no kernel may loop more than a budget
(``Tuning.loop_budget``, below LOOP_LIMIT) in one invocation:

- every Kernel declares its loops (``Kernel.loops``): a function of a pass's override
  constants and uniform values giving, for each loop variable of its WGSL, the most
  iterations one invocation runs of it (tests/test_loop_bounds.py checks the names
  against the WGSL and the total of every pass of many programs against LOOP_LIMIT);
- where a window (or bin, or plane) holds more taps than that, its walk is split: each
  invocation walks one *part* of one output's window and saves its accumulator
  (common/*_partials.wgsl), and a merge pass (common/window_walk_merge.wgsl) merges each
  output's parts in a fixed order, in several passes where the parts are more than one
  invocation may merge.  Maxima keep the first maximum's index (acc_merge compares
  indices), sums stay compensated, and the same inputs give the same bits run after run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial
from typing import Callable, Optional

from ..dtypes import DataType
from ..tensor_desc import TensorDesc
from .core import Kernel, Pass, Slot, Split
from .grids import (GRID_LIBRARY, IN_SIZES, LINES_GRID, OUT_SIZES, as_5d, lines_grid, lines_regrid, sorted_constants,
                    stride_fields, tensor_stride_params)

#: llvmpipe's limit: the loop iterations one invocation may run, all its loops together.
LOOP_LIMIT = 65535


def loop_total(kernel: Kernel, constants, params) -> int:
    """The most loop iterations one invocation of ``kernel`` runs in a pass with these
    override constants and uniform values (its declared loops, summed)."""
    return sum(kernel.loops(dict(constants), params).values())


def iterations(runs: int, length: int) -> int:
    """What a loop of at most ``length`` iterations costs when entered ``runs`` times: its
    iterations and one test that ends it, each time."""
    return runs * (length + 1)


def search_probes(searches: int, count: int) -> int:
    """What ``searches`` binary searches of ``count`` bins cost (common/bin_search.wgsl's
    first_above: at most bit_length(count) probes, and the test that ends it)."""
    return iterations(searches, count.bit_length())


def longest_run(fits: Callable[[int], bool], first: int, last: int) -> int:
    """The largest end in (first, last] with fits(end) (a run [first, end) of what a
    split pass visits, fits monotonic in its length), or first + 1."""
    low, high = first + 1, last
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if fits(middle) else (low, middle - 1)
    return low


def fewest_parts(trips: Callable[[tuple], int], counts: tuple, budget: int) -> tuple:
    """Parts per dimension (outer first) for a walk whose loops run ``trips(parts)``
    iterations: none where the whole walk fits ``budget``, else the outer dimensions cut
    first, each into as few parts as fit (the parts' taps then stay whole rows); ``counts``
    holds how many taps each dimension can be cut into (0: it cannot be cut)."""
    parts = [1] * len(counts)
    for axis, count in enumerate(counts):
        if trips(tuple(parts)) <= budget:
            break
        if count <= 1:
            continue
        parts[axis] = count
        if trips(tuple(parts)) > budget:  # one tap per part along this axis is not enough
            continue
        low, high = 1, count  # trips(low) > budget >= trips(high)
        while high - low > 1:
            middle = (low + high) // 2
            parts[axis] = middle
            low, high = (low, middle) if trips(tuple(parts)) <= budget else (middle, high)
        parts[axis] = high
    return tuple(parts)


@dataclass(frozen=True)
class Accumulator:
    """An operator's accumulator (the interface of common/window_geometry.wgsl): its
    operator file (acc_value, acc_index), its library and its partial results' file and
    words (common/*_partials.wgsl).  ``operands``: (Slot, role) of the tensors it reads
    besides the walk's (a quantized average's scales and zero points), bound after the
    walk's slots, whole.  ``ordered``: its result depends on the order of the taps (a float
    sum in the window's order), so a split walk chains its parts (window_walk.wgsl's
    CHAINED) instead of merging them."""

    file: str
    library: tuple
    partials: str
    words: int
    operands: tuple = ()
    ordered: bool = False

    @property
    def slots(self) -> tuple:
        return tuple(slot for slot, _ in self.operands)


def merge_kernel(accumulator: Accumulator) -> Kernel:
    """The merge pass of ``accumulator``'s split walks."""
    slots = (Slot("part", False, snippet="words_read.wgsl"), Slot("merged", True, snippet="words_write.wgsl"),
             Slot("y", True), Slot("idx", True)) + accumulator.slots
    library = accumulator.library + (accumulator.partials,) + GRID_LIBRARY + ("window_constants.wgsl",
                                     "window_geometry.wgsl", "taps.wgsl", "window_walk_merge.wgsl", "store_one.wgsl")
    params = ("channels",) + IN_SIZES + OUT_SIZES + stride_fields("y", "idx") + LINES_GRID + ("opaque_zero",)
    return Kernel(accumulator.file, slots, "y", library=library, params=params, loops=_merge_loops)


def _merge_loops(constants: dict, params: dict) -> dict:
    return {"p": iterations(1, constants.get("GROUP", 1))}


def partials_desc(sizes: tuple, parts: int, words: int) -> TensorDesc:
    """The partial results of a split walk over outputs of ``sizes`` {N, C, ...}: ``words``
    words for each of ``parts`` parts of every output, plane by plane (so that chunks of
    planes can hold only their own)."""
    return TensorDesc(DataType.UINT32, (sizes[0], sizes[1], math.prod(sizes[2:]) * parts * words))


def merge_passes(kernel: Kernel, accumulator: Accumulator, out_sizes: tuple, parts: int, outputs: tuple,
                 params: dict, constants: dict, workgroup: int, budget: int,
                 value_type: Optional[DataType] = None, names: tuple = ("part", "merged"),
                 operands: tuple = ()) -> tuple:
    """(the passes merging ``parts`` partial results of every output (of 5-D ``out_sizes``)
    from scratch ``names[0]`` into the roles ``outputs`` (y, idx), the scratch they add:
    ``names[1]`` where a level of merges saves partial results again).  ``params``: the
    outputs' strides and sizes; ``constants``: the accumulator's; ``operands``: the roles
    of its operand slots (None: absent)."""
    n, c, out_d, out_h, out_w = out_sizes
    group = max(1, budget - 1)  # merge_loops: group + 1 iterations
    passes, scratch = [], []
    source, target = names
    while True:
        groups = -(-parts // group)
        final = groups == 1
        grid_constants, grid_params, grid = lines_grid(out_w, out_h, n * c * out_d * groups, workgroup)
        split = Split(out_d * groups, partial(lines_regrid, out_w, out_h, workgroup),
                      whole=tuple(r for r in operands if r is not None))
        roles = (source, None if final else target) + (outputs if final else (None, None))
        roles += tuple(operands) + (None,) * (len(kernel.slots) - len(roles) - len(operands))
        level_constants = {**constants, **grid_constants, "PARTS": parts, "GROUP": min(group, parts), "FINAL": final}
        passes.append(Pass(kernel, roles, sorted_constants(level_constants), {**params, **grid_params}, grid, split,
                           value_type=value_type))
        if final:
            return tuple(passes), tuple(scratch)
        if target == names[1] and not scratch:  # (a third level writes into names[0] again: it is larger)
            scratch.append((target, partials_desc(out_sizes, groups, accumulator.words)))
        parts, source, target = groups, target, source


# Split gathers (the gradients): their parts' f32 sums added in order (gradient_sum.wgsl)
GRADIENT_SUM = Accumulator("gradient_sum.wgsl", (), "gradient_partials.wgsl", 1)
GRADIENT_MERGE = merge_kernel(GRADIENT_SUM)


def gradient_merge_passes(dx: TensorDesc, parts: int, workgroup: int, budget: int) -> tuple:
    """(the passes adding a split gather's ``parts`` partial sums of every element of ``dx``
    (from scratch "dx_part") into it, the scratch they need, "dx_part" included).  The
    scratch has names of its own: the max gradient's pass 1 may split its walk too."""
    out_sizes, _ = as_5d(dx.sizes, dx.strides)
    params = {"channels": out_sizes[1], **dict(zip(IN_SIZES + OUT_SIZES, out_sizes[2:] * 2)),
              **tensor_stride_params("y", dx), **tensor_stride_params("idx", None)}
    merges, scratch = merge_passes(GRADIENT_MERGE, GRADIENT_SUM, out_sizes, parts, ("output_gradient", None), params, {},
                                   workgroup, budget, value_type=dx.data_type, names=("dx_part", "dx_merged"))
    return merges, (("dx_part", partials_desc(out_sizes, parts, GRADIENT_SUM.words)),) + scratch
