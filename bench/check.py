"""Checking a measured output against the reference before its time counts, and what a
row that failed to run reports."""

from __future__ import annotations

import numpy as np

# Float results (averages, norms, gradient sums) are accumulated in float32 (or better) and
# rounded once to the output type: allow a few roundings of the output type, relative to the
# result, plus a small part of the magnitude of what was summed (a mean near zero of values
# near 4 carries the summation's error, not its own).
_TOLERANCE = {"float32": 1e-5, "float16": 2e-3, "bfloat16": 1.6e-2}


def compare(name: str, actual: np.ndarray, expected: np.ndarray, exact: bool, scale: float = 0.0) -> str:
    """"" when ``actual`` matches, else what differs (short).  ``scale``: the largest
    magnitude among the inputs summed."""
    actual = np.asarray(actual)
    if actual.shape != expected.shape:
        return f"{name}: shape {actual.shape}, expected {expected.shape}"
    floats = [a.dtype.kind == "f" or a.dtype.name == "bfloat16" for a in (actual, expected)]  # (ml_dtypes': kind V)
    if exact:
        if all(floats):
            same = np.array_equal(actual.astype(np.float32), expected.astype(np.float32), equal_nan=True)
        else:
            same = np.array_equal(actual.astype(np.int64), expected.astype(np.int64))
        if same:
            return ""
        wrong = np.flatnonzero(actual.ravel() != expected.ravel())
        return f"{name}: {wrong.size} of {actual.size} differ (first at {wrong[0]}: {actual.ravel()[wrong[0]]} != {expected.ravel()[wrong[0]]})"
    rtol = _TOLERANCE.get(actual.dtype.name, 1e-5)
    want = expected.astype(np.float64)
    got = actual.astype(np.float64)
    scale = max(scale, float(np.abs(want).max(initial=0.0)), 1e-30)
    error = np.abs(got - want)
    bad = error > rtol * (np.abs(want) + scale * 1e-2)
    if not bad.any():
        return ""
    worst = int(np.argmax(np.where(bad, error, -1).ravel()))
    return (f"{name}: {int(bad.sum())} of {actual.size} off (worst at {worst}: {got.ravel()[worst]:.7g} "
            f"vs {want.ravel()[worst]:.7g})")


def check(outputs: dict, problem) -> str:
    """"" when every expected output of ``problem`` matches, else the first difference."""
    for name, (want, exact) in problem.expected.items():
        if name not in outputs:
            return f"{name}: missing"
        difference = compare(name, outputs[name], want, exact, problem.input_scale)
        if difference:
            return difference
    return ""


def error_reason(exc: BaseException) -> str:
    """The reason reported for a row (or a peer's) that raised ``exc``: its type and first line."""
    return f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"[:300]
