"""The bench's ratio targets, each measured in one submission.

Max with indices, average, Lp and max pooling's forward plus gradient are each compared
with max pooling on the same case, data type and layout.  The bench's rows time each
operator in its own submissions, minutes apart, and on shared machines load comes in
phases that moved those ratios by up to 3x between runs.  Here max and the others
alternate, ROUNDS rounds of one timestamped pass per operator in one submission
(timing.interleaved), so each round's ratio compares passes timed side by side; reported
is the median over the rounds and their range.  Every operator's result is checked
against the reference first; one that fails is reported, never timed."""

from __future__ import annotations

import statistics

from .cases import CASES, Data, build
from .check import check, error_reason
from .poolgpu_run import rotating_runs
from .timing import interleaved

TARGETS = {"max_idx": 1.2, "avg": 1.3, "lp2": 1.3, "max_fwd_bwd": 3.0}  # op: its time / max's, at most
BASE = "max"
MEASURED_CASES = ("A", "B", "C")
ROUNDS = 8


def applies(case_name: str, ops: list) -> list:
    """The target operators a ratio measurement of this case compares with max (those
    among ``ops`` the case has), or [] where there is none or max itself is not among them."""
    case = CASES[case_name]
    if case_name not in MEASURED_CASES or BASE not in ops:
        return []
    return [op for op in TARGETS if op in ops and op in case.ops]


def measure(device, data: Data, layout: str, ops: list, rounds: int = ROUNDS) -> dict:
    """{op: result} for max and each of ``ops`` on ``data``'s case and data type in
    ``layout``: max's times, and each other's ratio to max ("ratio": the median over rounds,
    "range", "target", "met"), or its status where it failed to run or to check."""
    runs, results = {}, {}
    for op in [BASE] + list(ops):
        problem = build(op, data)
        if problem is None:
            continue
        try:
            rotating = rotating_runs(device, problem, layout)
            for run in rotating:
                run.record()
            mismatch = check(rotating[0].outputs(), problem)
        except Exception as exc:  # reported, never hiding the other operators
            results[op] = {"status": "error", "reason": error_reason(exc)}
            continue
        if mismatch:
            results[op] = {"status": "check failed", "reason": mismatch}
        else:
            runs[op] = rotating
    if BASE not in runs:
        return dict(results, **{op: {"status": "not timed", "reason": f"{BASE} failed"} for op in runs})
    timings = dict(zip(runs, interleaved(device, [[run.record for run in rotating] for rotating in runs.values()],
                                         rounds)))
    base = [float(t) for t in timings[BASE]]
    for op, seconds in timings.items():
        seconds = [float(t) for t in seconds]
        result = {"status": "ok", "min_ms": min(seconds) * 1e3, "median_ms": statistics.median(seconds) * 1e3,
                  "rounds": len(seconds)}
        if op != BASE:
            ratios = [t / b for t, b in zip(seconds, base)]
            ratio = statistics.median(ratios)
            result.update(ratio=ratio, range=[min(ratios), max(ratios)], target=TARGETS[op], met=ratio <= TARGETS[op])
        results[op] = result
    return results
