"""Correctness on a GPU in seconds: every kernel on the portable cases (tests/portable_cases.py:
every operator family, data type, layout, dimension count, tuning and distinct shader),
compared bit for bit with the results a software adapter gave, shipped with the run rather
than recomputed there.  What only a GPU gets wrong shows here: denormals flushed in sums,
barriers, drivers' limits, another compiler's arithmetic.

    python -m bench.gpu_check --write PATH      # here, on a software adapter: the cases and their results
    python -m bench.gpu_check --expected PATH   # there: run them, compare, report

Maxima, indices, unpooling and every integer type must be the same bits; a float result of
a sum, a division or a power may differ in its last bits where the GPU's arithmetic rounds
otherwise (Vulkan lets a division be 2.5 ulp off, ``pow`` more): each is reported with its
largest difference in ulp, and fails past ``FLOAT_ULP``.  NaNs count as equal whatever their
payload bits.
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import json
import sys
import time
from pathlib import Path

import numpy as np

import poolgpu as pg

from . import ROOT

sys.path.insert(0, str(ROOT / "tests"))
import portable_cases  # noqa: E402  (tests/portable_cases.py)

FLOAT_ULP = 256  # past this a float result is wrong, not rounded otherwise (H100: up to 64 seen, 2026-11-27)
EXACT_OPERATORS = ("max", "unpool", "unpool_grad", "adaptive_max", "fractional_max", "roi")


def _case_fields(case) -> dict:
    fields = dataclasses.asdict(case)
    fields["data_type"] = case.data_type.name
    return fields


def _case(fields: dict):
    return portable_cases.Case(**dict(fields, data_type=pg.DataType[fields["data_type"]]))


def run_case(device, case) -> dict:
    """{output role: logical array} of ``case`` on ``device`` with the case's tuning."""
    desc, arrays = case.describe()
    op = pg.Op(device, desc, portable_cases.TUNINGS[case.tuning])
    inputs = [device.upload(arrays[role], strides=t.strides) for role, t in desc.input_tensors()]
    outputs = op(*inputs)
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    roles = [role for role, t in desc.output_tensors() if t is not None]
    return {role: t.numpy() for role, t in zip(roles, outputs)}


def input_digest(case) -> str:
    """The case's inputs as made here and there (NumPy's generators must agree)."""
    import hashlib

    _, arrays = case.describe()
    digest = hashlib.sha256()
    for role in sorted(arrays):
        digest.update(role.encode() + np.ascontiguousarray(arrays[role]).tobytes())
    return digest.hexdigest()[:16]


def write(path: Path, device, count: int = None) -> int:
    """The cases (the first ``count``), their inputs' digests and their results on ``device``
    into ``path`` (.npz)."""
    cases = portable_cases.cases()[:count]
    arrays, index = {}, []
    for k, case in enumerate(cases):
        results = run_case(device, case)
        for role, array in results.items():
            arrays[f"{k}/{role}"] = _bits(array)
        index.append({"case": _case_fields(case), "id": case.id, "inputs": input_digest(case),
                      "outputs": {role: array.dtype.name for role, array in results.items()}})
    arrays["index"] = np.frombuffer(json.dumps({"adapter": device.name, "backend": device.backend,
                                                "cases": index}).encode(), np.uint8)
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    path.write_bytes(buffer.getvalue())
    print(f"gpu_check: {len(cases)} cases on {device.name} -> {path} ({path.stat().st_size >> 10} KiB)")
    return 0


def _as_float32(bits: np.ndarray, type_name: str) -> np.ndarray:
    """Float values of raw bits of a float type (bfloat16: the top half of a float32)."""
    if type_name == "bfloat16":
        return (bits.astype(np.uint32) << 16).view(np.float32)
    return bits.view({2: np.float16, 4: np.float32, 8: np.float64}[bits.dtype.itemsize]).astype(np.float32)


def _ulps(a: np.ndarray, b: np.ndarray, type_name: str) -> int:
    """The largest difference in ulp between the raw bits of two float arrays (NaNs equal)."""
    width = 8 * a.dtype.itemsize
    signed = {16: np.int16, 32: np.int32, 64: np.int64}[width]
    top = np.int64(1) << (width - 1)
    ia, ib = (np.where(x < 0, -(x + top), x) for x in (a.view(signed).astype(np.int64), b.view(signed).astype(np.int64)))
    both_nan = np.isnan(_as_float32(a, type_name)) & np.isnan(_as_float32(b, type_name))
    return int(np.where(both_nan, 0, np.abs(ia - ib)).max(initial=0))


def _bits(array: np.ndarray) -> np.ndarray:
    """An array's raw bits as unsigned integers (bfloat16 kept, NumPy's .npz cannot name it)."""
    return np.ascontiguousarray(array).view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[array.dtype.itemsize])


def compare(got: np.ndarray, expected_bits: np.ndarray, type_name: str, exact: bool) -> tuple:
    """(status, detail): "same", "same but NaN payloads", "rounded" (floats within FLOAT_ULP),
    or "wrong"; ``expected_bits``: the reference's raw bits (_bits)."""
    got_bits = _bits(got)
    if got.dtype.name != type_name or got_bits.shape != expected_bits.shape:
        return "wrong", f"{got.dtype}{got.shape}, expected {type_name}{expected_bits.shape}"
    if np.array_equal(got_bits, expected_bits):
        return "same", ""
    bad = int(np.count_nonzero(got_bits != expected_bits))
    if got.dtype.kind != "f" and type_name != "bfloat16":
        return "wrong", f"{bad} of {got.size} elements differ"
    ulps = _ulps(got_bits, expected_bits, type_name)
    if ulps == 0:
        return "same but NaN payloads", ""
    detail = f"{bad} of {got.size} elements differ, by at most {ulps} ulp"
    return ("wrong" if exact or ulps > FLOAT_ULP else "rounded"), detail


def check(path: Path, device, deadline_s: float, out: Path = None) -> int:
    """Run the cases of ``path`` on ``device``; report each; 1 if any is wrong."""
    started = time.perf_counter()
    with np.load(path) as stored:
        expected = {name: stored[name] for name in stored.files}
    index = json.loads(expected.pop("index").tobytes())
    report = {"device": device.name, "reference": f"{index['adapter']} ({index['backend']})", "cases": []}
    counts = {}
    for k, entry in enumerate(index["cases"]):
        case = _case(entry["case"])
        result = {"id": entry["id"]}
        if time.perf_counter() - started > deadline_s:
            result.update(status="not run", detail=f"past {deadline_s:g} s")
        elif input_digest(case) != entry["inputs"]:
            result.update(status="not compared", detail="the inputs made here differ from the reference's")
        else:
            try:
                got = run_case(device, case)
            except Exception as exc:  # reported, never hiding the other cases
                result.update(status="wrong", detail=f"{type(exc).__name__}: {exc}"[:500])
            else:
                exact = case.operator in EXACT_OPERATORS or case.data_type.name.startswith(("INT", "UINT"))
                statuses = {role: compare(got[role], expected[f"{k}/{role}"], type_name, exact)
                            for role, type_name in entry["outputs"].items()}
                worst = next((s for s in ("wrong", "rounded", "same but NaN payloads", "same")
                              if any(v[0] == s for v in statuses.values())), "same")
                result.update(status=worst, outputs={r: {"status": s, "detail": d} for r, (s, d) in statuses.items()})
        counts[result["status"]] = counts.get(result["status"], 0) + 1
        report["cases"].append(result)
        if result["status"] not in ("same", "same but NaN payloads"):
            print(f"gpu_check: {result['id']}: {result['status']} {result.get('detail', '')}"
                  + "".join(f"\n    {r}: {v['status']} {v['detail']}" for r, v in result.get("outputs", {}).items()
                            if v["status"] != "same"))
    report["counts"] = counts
    report["elapsed_s"] = round(time.perf_counter() - started, 1)
    print(f"gpu_check: {len(index['cases'])} cases on {device.name} against {report['reference']}: "
          + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) + f" ({report['elapsed_s']} s)")
    if out is not None:
        out.write_text(json.dumps(report, indent=1) + "\n")
    return 1 if counts.get("wrong") else 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.gpu_check", description=__doc__.split("\n\n")[0])
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--write", type=Path, help="run the cases here and keep their results in this .npz")
    what.add_argument("--expected", type=Path, help="compare with the results kept in this .npz")
    p.add_argument("--backend", default="vulkan")
    p.add_argument("--adapter", help="a substring of the adapter's name")
    p.add_argument("--deadline-s", type=float, default=30.0, help="cases not started by then are not run")
    p.add_argument("--json", type=Path, help="the report (with --expected)")
    p.add_argument("--count", type=int, help="with --write: the first COUNT cases only (a rehearsal)")
    args = p.parse_args(argv)
    device = pg.Device(backend=args.backend, adapter=args.adapter)
    if args.write:
        return write(args.write, device, args.count)
    return check(args.expected, device, args.deadline_s, args.json)


if __name__ == "__main__":
    raise SystemExit(main())
