"""The order a run on a GPU measures its rows in (``python -m bench --resume DIR``): a GPU
is lent for minutes, so each run measures first what the runs kept for the same GPU model
lack, then the rows whose kernels changed since they were kept (a hash of each row's shaders
and constants, bench/provenance.py), and only then measures again what is current.
Successive runs so complete the table rather than repeat its first rows; the published
tables take each row from the newest run that measured it (report.merged_gpu_runs)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from . import provenance, report
from .cases import Data, build
from .poolgpu_run import descriptions


def row_key(row: dict) -> tuple:
    """What makes a row the same row in another run."""
    return (row["case"], row["op"], row["dtype"], row["layout"], bool(row.get("scaled")))


def kept_kernels(directory: Path, model: str) -> dict:
    """{row key: the kernels hash it was measured with, or None} over the runs kept in
    ``directory`` for GPU ``model`` (report.gpu_model), the newest run's where several have a row."""
    kept = {}
    for path in report.gpu_runs(directory):
        results = report.load(path)
        if report.gpu_model(results["adapter"]["name"]) != model:
            continue
        for row in results["rows"]:
            if row["status"] == "ok":
                kept.setdefault(row_key(row), []).append((results["date"], row.get("kernels")))
    return {key: max(found, key=lambda f: f[0])[1] for key, found in kept.items()}


class _Shapes(Data):
    """A Data whose inputs are zero-stride stand-ins of the right sizes and types: what a
    row's descriptions need (its kernels' hash), without making its inputs."""

    def __init__(self, case, dtype, tiny: bool, repeats: int):
        super().__init__(case, dtype, tiny, 0)
        self.sizes = (self.sizes[0] * repeats,) + tuple(self.sizes[1:])
        self.shape_repeats = repeats

    def _stand_in(self, sizes, dtype=None):
        return np.broadcast_to(np.zeros(1, dtype or self.dtype), tuple(sizes))

    @property
    def x(self):
        return self._stand_in(self.sizes)

    def dy(self, sizes):
        return self._stand_in(sizes)

    def boxes_dy(self, sizes, integers: bool = False):
        return self._stand_in(sizes)

    def boxes(self, count, scale=1 / 16):   # (repeated Data repeats its boxes)
        return super().boxes(count * self.shape_repeats, scale)

    def max_pool(self, dilations=None):
        out = self.out_sizes(dilations)
        return self._stand_in(out), self._stand_in(out, np.int64)


def kernels_of_entry(case, dtype: str, op: str, layout: str, repeats: int, tiny: bool, tuning, limits):
    """The kernels hash a plan entry's row will be measured with (None where it does not apply)."""
    problem = build(op, _Shapes(case, dtype, tiny, repeats))
    if problem is None:
        return None
    return provenance.kernels_hash([desc for _, desc in descriptions(problem, layout)], tuning, limits)


def order(plan: list, kept: dict, key_of, kernels_of) -> tuple:
    """(the plan reordered: entries missing from ``kept`` first, then those kept with other
    kernels, then the rest, each group in the plan's order; {"missing", "changed",
    "current"}: how many of each).  ``key_of(entry)``: its row key (None: no row, such as
    the ratio targets, which go last); ``kernels_of(entry)``: its kernels hash."""
    groups = {"missing": [], "changed": [], "current": [], "other": []}
    for entry in plan:
        key = key_of(entry)
        if key is None:
            groups["other"].append(entry)
        elif key not in kept:
            groups["missing"].append(entry)
        elif kept[key] is None or kept[key] != kernels_of(entry):
            groups["changed"].append(entry)
        else:
            groups["current"].append(entry)
    counts = {name: len(entries) for name, entries in groups.items() if name != "other"}
    return groups["missing"] + groups["changed"] + groups["current"] + groups["other"], counts
