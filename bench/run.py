"""The bench's entry point: ``python -m bench [options]`` (``bash scripts/bench.sh``).

For every selected case, data type, operator and layout (a *row*): poolgpu's result is
checked against the reference, then its time is taken interleaved with the copy roofline
moving the same bytes; then each available peer is checked and timed on the same inputs.
Host overhead is measured first.  Outputs: a terminal table (progress on stderr), and a
JSON file, a Markdown table and a PNG plot under bench/results/ (ignored by git).  A full run
(every case, operator and default variant, not --quick or --tiny) is also kept, committed: on
a CPU adapter (lavapipe) as bench/latest.json, on a GPU as bench/gpu/<date>-<gpu>.json; then
docs/bench-tables.md, bench/latest.png and README.md's table are made again from those
(bench/report.py).  ``--scale`` adds the bandwidth rows (cases.SCALE_BATCH) and the ceiling
measured three ways (bench/ceiling.py)."""

from __future__ import annotations

import argparse
import datetime
import fnmatch
import json
import os
import platform
import sys
import time
from importlib import metadata
from pathlib import Path

import numpy as np

import poolgpu as pg

from . import ROOT, ceiling, host, new_shapes, provenance, ratios, report
from . import plan as plan_module
from .cases import CASES, DTYPES, LAYOUTS, NEEDS, SCALE_BATCH, Data, build
from .check import check, error_reason
from .peer_base import Unsupported
from .peers import NAMES as PEER_NAMES
from .peers import SAME_DRIVER, discover
from .poolgpu_run import PoolgpuRun, descriptions, rotating_runs
from .roofline import Roofline
from .timing import ROTATE, SUMMARY, GpuTimer, interleaved, repeat, stats
RATIOS = "ratios"  # a plan entry: the ratio targets of a case and data type (bench/ratios.py)
DEFAULT_VARIANTS = (("float32", "nchw"), ("float16", "nchw"), ("float32", "nhwc"))
RESULTS = ROOT / "bench" / "results"
SCALE_MEMORY = 6 << 30  # host memory --scale needs on a CPU adapter (its rows, copies and peers' copies)


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m bench",
        description="poolgpu's bench: every operator on the standard cases, against the copy roofline and peers.",
    )
    p.add_argument("--backend", help="vulkan, metal, d3d12 or opengl (default: the best adapter)")
    p.add_argument("--adapter", help="a substring of the adapter's name")
    p.add_argument("--cases", default=",".join(CASES), help="comma-separated case names (default: %(default)s)")
    p.add_argument("--ops", default="*", help="comma-separated operator names or patterns, e.g. 'max*,avg' "
                                              f"(operators: {', '.join(NEEDS)})")
    p.add_argument("--dtype", help="float32, float16, bfloat16, comma-separated, for every case (default: cases "
                                    "A, B, C in float32 NCHW, float16 NCHW and float32 NHWC; the others in their "
                                    "types (float32; FR also bfloat16, BF bfloat16 only), NCHW)")
    p.add_argument("--layout", help="nchw, nhwc or both, comma-separated (NHWC: channels last, inputs and outputs)")
    p.add_argument("--reps", type=int, default=5, help="repetitions per measurement (default: %(default)s)")
    p.add_argument("--warmup", type=int, default=1, help="untimed runs first (default: %(default)s)")
    p.add_argument("--warmup-s", type=float, default=0.0,
                   help="untimed runs go on for at least this many seconds: real GPUs run slowly until a "
                        "sustained load raises their clocks (an H100: up to 4x); e.g. 0.5 (default: %(default)s)")
    p.add_argument("--budget", type=float, default=0.4,
                   help="seconds after which a measurement stops repeating, once 3 repetitions are done "
                        "(default: %(default)s)")
    p.add_argument("--quick", action="store_true",
                   help="a quick look: float32 NCHW only (unless --dtype/--layout say otherwise), 3 repetitions")
    p.add_argument("--tiny", action="store_true", help="tiny shapes with the same windows (tests the plumbing)")
    p.add_argument("--scale", action="store_true",
                   help="GPU scale: also cases " + ", ".join(f"{c} at N={n}" for c, n in SCALE_BATCH.items())
                        + " (a few hundred MB per input: bandwidth rows, first; the standard ones measure latency), "
                        "and the bandwidth ceiling three ways at about 1 GB (the copy kernel, copy_buffer_to_buffer, "
                        "PyTorch's clone() on CUDA)")
    p.add_argument("--deadline-s", type=float,
                   help="rows not started within this many seconds are reported as not run (a GPU machine held for minutes)")
    p.add_argument("--resume", nargs="?", type=Path, const=report.GPU_RUNS, metavar="DIR",
                   help="measure first the rows that the runs kept in DIR (default: bench/gpu) for this GPU lack, "
                        "then those whose kernels changed since, then the rest (bench/plan.py)")
    p.add_argument("--compile-rows", metavar="PATTERNS",
                   help="the rows torch-cuda-compile runs on, as comma-separated CASE/OP/DTYPE/LAYOUT patterns "
                        "with N=... for GPU scale, e.g. 'A N=*/max/float32/nchw' (default: every row)")
    p.add_argument("--peers", dest="peers", action="store_true", default=True, help="measure the peers (default)")
    p.add_argument("--no-peers", dest="peers", action="store_false", help="poolgpu and its roofline only")
    p.add_argument("--peer", default=",".join(PEER_NAMES), help="which peers (default: %(default)s)")
    p.add_argument("--peer-rows", choices=("float32-nchw", "all"), default="float32-nchw",
                   help="rows the peers run on (default: %(default)s, what they all support; PyTorch CUDA "
                        "runs on every row: its data types and memory formats are poolgpu's)")
    p.add_argument("--ort-webgpu-python", help="the Python of a venv with onnxruntime-webgpu "
                                               "(default: .venv-ort-webgpu, made by scripts/bench.sh)")
    p.add_argument("--no-ratios", dest="ratios", action="store_false",
                   help="skip the ratio targets (max with indices, average, Lp, forward plus gradient against max, "
                        "each timed in one submission with max: bench/ratios.py)")
    p.add_argument("--timer", choices=("auto", "timestamp", "passes", "wall"), default="auto",
                   help="timestamp: GPU timestamps around one dispatch per submission; passes: timestamps, "
                        "each row's operator and copy alternating in one submission, passes of 8 dispatches "
                        "over 4 tensor copies (GPUs' clocks stay up); wall: wall clock around a synchronised "
                        "submission; auto (default): passes on GPUs, timestamp on CPU adapters, wall without "
                        "timestamp-query")
    p.add_argument("--out", type=Path, default=RESULTS, help="directory of the outputs (default: bench/results)")
    p.add_argument("--json", type=Path, help="the JSON file (default: OUT/bench.json)")
    p.add_argument("--md", type=Path, help="the Markdown table (default: OUT/bench.md)")
    p.add_argument("--png", type=Path, help="the plot (default: OUT/bench.png)")
    p.add_argument("--save-latest", action="store_true",
                   help="keep this run as bench/latest.json (CPU adapters; automatic for a full run there)")
    p.add_argument("--save-gpu-run", nargs="?", type=Path, const=report.GPU_RUNS, metavar="DIR",
                   help="keep this run as DIR/<date>-<gpu>.json (default DIR: bench/gpu; GPUs only; automatic "
                        "for a full run on a GPU)")
    p.add_argument("--no-save", action="store_true", help="keep a full run under --out only")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--list", action="store_true", help="list the cases and their operators, and exit")
    args = p.parse_args(argv)
    if args.quick:
        args.reps = min(args.reps, 3)
    dtypes = _choice(args.dtype, DTYPES, "--dtype")
    layouts = _choice(args.layout, LAYOUTS, "--layout")
    args.chosen_variants = args.dtype is not None or args.layout is not None
    if args.chosen_variants:
        args.variants = tuple((d, lay) for d in dtypes for lay in layouts)
    else:
        args.variants = DEFAULT_VARIANTS[:1] if args.quick else DEFAULT_VARIANTS
    args.case_names = _choice(args.cases, tuple(CASES), "--cases")
    args.op_patterns = [pattern.strip() for pattern in args.ops.split(",") if pattern.strip()]
    args.peer_names = _choice(args.peer, PEER_NAMES, "--peer") if args.peers else ()
    args.full = (not (args.quick or args.tiny or args.chosen_variants) and args.op_patterns == ["*"]
                 and set(args.case_names) == set(CASES))
    args.json = args.json or args.out / "bench.json"
    args.md = args.md or args.out / "bench.md"
    args.png = args.png or args.out / "bench.png"
    return args


def _choice(value, allowed, option) -> tuple:
    if value is None:
        return tuple(allowed)
    chosen = tuple(v.strip() for v in value.split(",") if v.strip())
    unknown = [v for v in chosen if v not in allowed]
    if unknown:
        raise SystemExit(f"{option}: unknown {', '.join(unknown)}; expected some of {', '.join(allowed)}")
    return chosen


class Progress:
    """A one-line progress bar on stderr (a line per tenth when stderr is not a terminal)."""

    def __init__(self, total: int):
        self.total, self.done, self.start = max(total, 1), 0, time.perf_counter()
        self.tty = sys.stderr.isatty()
        self._last_tenth = -1

    def show(self, label: str) -> None:
        fraction = self.done / self.total
        elapsed = time.perf_counter() - self.start
        eta = f", ~{elapsed / fraction * (1 - fraction):.0f}s left" if self.done else ""
        bar = "#" * int(fraction * 30) + "-" * (30 - int(fraction * 30))
        text = f"[{bar}] {self.done}/{self.total} {elapsed:.0f}s{eta}  {label}"
        if self.tty:
            sys.stderr.write("\r\033[K" + text[: os.get_terminal_size(2).columns - 1])
            sys.stderr.flush()
        elif int(fraction * 10) != self._last_tenth:
            self._last_tenth = int(fraction * 10)
            print(text, file=sys.stderr, flush=True)

    def step(self, label: str = "") -> None:
        self.done += 1
        self.show(label)

    def close(self) -> None:
        if self.tty:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()


class Bench:
    def __init__(self, args, device):
        self.args, self.device = args, device
        self.resumed = None  # with --resume: how many rows were missing, changed, current
        self.timer = GpuTimer(device, args.timer)
        self.roofline = Roofline(device, self.timer, args.seed, args.warmup_s)
        self.peers = discover(args.peer_names, pg.list_adapters(), args.out, args.ort_webgpu_python)
        self.scale_note = scale_problem(device) if args.scale and not args.tiny else None
        # why the ratio targets are not measured (None: they are)
        self.ratios_note = None
        if not args.ratios:
            self.ratios_note = "skipped (--no-ratios)"
        elif "timestamp-query" not in device.features or args.timer == "wall":
            self.ratios_note = "not measured: they need GPU timestamps (timestamp-query)"

    def measure(self, times_of, warmed: bool = False):
        """Repetitions of ``times_of``; ``warmed``: set-up already ran it once (untimed)."""
        return repeat(times_of, max(self.args.warmup - warmed, 0), self.args.reps, self.args.budget,
                      warmup_s=self.args.warmup_s)

    def measure_passes(self, problem, layout: str, run: PoolgpuRun) -> tuple:
        """Seconds per dispatch of the op and its copy roofline, alternating in one submission
        (timing.interleaved), ``reps`` rounds after the warm-up ones."""
        runs = rotating_runs(self.device, problem, layout, first=run)
        copies = self.roofline.rotating(run.read_bytes, run.written_bytes, ROTATE)
        groups = [[r.record for r in runs], copies]
        start = time.perf_counter()
        while True:  # warm-up: at least one round, and warmup_s seconds
            interleaved(self.device, groups, max(self.args.warmup, 1))
            if time.perf_counter() - start >= self.args.warmup_s:
                break
        return interleaved(self.device, groups, self.args.reps)

    def poolgpu_row(self, problem, layout: str) -> dict:
        row = {}
        missing = [name for name in NEEDS[problem.op] if not hasattr(pg, name)]
        if missing:
            return {"status": "not available", "reason": "poolgpu has no " + ", ".join(f"pg.{n}" for n in missing)}
        # where a row's seconds go (a GPU machine's minutes are counted): "reference" is the
        # NumPy reference, computed once per case, type and operator
        phases, clock = {}, time.perf_counter()

        def phase(name):
            nonlocal clock
            now = time.perf_counter()
            phases[name] = round(now - clock, 3)
            clock = now

        row["phases_s"] = phases
        try:
            run = PoolgpuRun(self.device, problem, layout)
            self.timer.seconds(run.record)
        except Exception as exc:  # reported (and failing the run), never hiding the other rows
            return {"status": "error", "reason": error_reason(exc)}
        phase("setup")
        problem.expected  # noqa: B018 (computed here to be timed apart from the check)
        phase("reference")
        mismatch = check(run.outputs(), problem)
        phase("check")
        row.update(read_bytes=run.read_bytes, written_bytes=run.written_bytes,
                   tensors={name: {"sizes": t.sizes, "strides": t.desc.strides, "data_type": t.data_type.name}
                            for name, t in run.tensors.items()})
        if mismatch:
            return dict(row, status="check failed", reason=mismatch)
        copy, copy_info = self.roofline.for_bytes(run.read_bytes, run.written_bytes)
        phase("roofline")
        if self.timer.kind == "passes":
            op_times, copy_times = self.measure_passes(problem, layout, run)
        else:
            op_times, copy_times = self.measure([lambda: self.timer.seconds(run.record),
                                                 lambda: self.timer.seconds(copy)])
        phase("measure")
        moved = run.read_bytes + run.written_bytes
        ours, roof = stats(op_times), stats(copy_times)
        ours["gb_per_s"] = moved / (ours[SUMMARY] * 1e6)
        roof["gb_per_s"] = (copy_info["read_bytes"] + copy_info["written_bytes"]) / (roof[SUMMARY] * 1e6)
        roof.update(copy_info)
        return dict(row, status="ok", check="ok", poolgpu=ours, copy=roof,
                    pct_of_copy=100 * roof[SUMMARY] / ours[SUMMARY])

    def peer_row(self, peer, problem, layout: str, row: dict) -> dict:
        if peer.status:
            return {"status": "unavailable", "reason": peer.status}
        try:
            prepared = peer.prepare(problem, layout)
        except Unsupported as exc:
            return {"status": "unsupported", "reason": str(exc)}
        except Exception as exc:  # a peer's failure (WorkerError included) is reported, never fatal
            return {"status": "error", "reason": error_reason(exc)}
        try:
            mismatch = check(prepared.outputs(), problem)
            timed = [prepared.seconds] + ([prepared.copy_seconds] if peer.has_copy else [])
            times = self.measure(timed, warmed=True)  # prepare() ran it: its outputs
        except Exception as exc:
            return {"status": "error", "reason": error_reason(exc)}
        finally:
            prepared.release()
        result = dict(stats(times[0]), status="mismatch" if mismatch else "ok", check=mismatch or "ok")
        if peer.has_copy:  # % of the copy on its own driver
            result["copy"] = stats(times[1])
            result["pct_of_copy"] = 100 * result["copy"][SUMMARY] / result[SUMMARY]
        if row.get("status") == "ok":
            result["ratio"] = row["poolgpu"][SUMMARY] / result[SUMMARY]
            result.setdefault("pct_of_copy", 100 * row["copy"][SUMMARY] / result[SUMMARY])
        return result

    def same_driver_ratios(self, measured: dict) -> None:
        """Each peer's time against poolgpu's on the same driver, where poolgpu ran on its
        (the Dawn peers on a private Mesa: ``ratio_same_driver``)."""
        same = measured.get(SAME_DRIVER, {})
        if same.get("status") != "ok":
            return
        driver = next(p.driver for p in self.peers if p.name == SAME_DRIVER)
        for peer in self.peers:
            result = measured.get(peer.name, {})
            if peer.name != SAME_DRIVER and peer.driver == driver and result.get("status") in ("ok", "mismatch"):
                result["ratio_same_driver"] = same[SUMMARY] / result[SUMMARY]

    def selected_ops(self, case) -> list:
        return [op for op in case.ops if any(fnmatch.fnmatchcase(op, pat) for pat in self.args.op_patterns)]

    def case_variants(self, case) -> tuple:
        if not (self.args.chosen_variants or case.every_variant):
            return tuple((d, "nchw") for d in case.dtypes)  # the extra cases: their types, NCHW, unless asked otherwise
        return self.args.variants

    def plan(self) -> list:
        """(case, dtype, op, layout, repeats) in run order: with --scale, the bandwidth rows
        first (repeats > 1: the case's data repeated along N), variant by variant, then the
        standard ones, case by case (a case's data type shares inputs and reference results
        across operators, layouts and peers, and the bandwidth rows the standard ones')."""
        plan = []
        if self.args.scale and self.scale_note is None:
            variants = list(self.args.variants)  # then the variants of the cases run in their own types
            variants += [v for name in self.args.case_names for v in self.case_variants(CASES[name]) if v not in variants]
            for variant in dict.fromkeys(variants):
                for name in self.args.case_names:
                    case = CASES[name]
                    if name in SCALE_BATCH and variant in self.case_variants(case):
                        repeats = SCALE_BATCH[name] // case.sizes[0]
                        plan += [(case, variant[0], op, variant[1], repeats) for op in self.selected_ops(case)]
        for name in self.args.case_names:
            case = CASES[name]
            ops = self.selected_ops(case)
            variants = self.case_variants(case)
            for dtype in dict.fromkeys(d for d, _ in variants):
                layouts = [lay for d, lay in variants if d == dtype]
                plan += [(case, dtype, op, layout, 1) for op in ops for layout in layouts]
                if self.ratios_note is None and ratios.applies(case.name, ops):
                    plan += [(case, dtype, RATIOS, layout, 1) for layout in layouts]  # while the case's data is at hand
        if self.args.resume is not None:
            kept = plan_module.kept_kernels(self.args.resume, report.gpu_model(self.device.name))
            plan, self.resumed = plan_module.order(plan, kept, self.entry_key, self.entry_kernels)
        return plan

    @staticmethod
    def entry_key(entry) -> tuple:
        """A plan entry's row key (plan.row_key), None for the ratio targets."""
        case, dtype, op, layout, repeats = entry
        return None if op == RATIOS else (case.name, op, dtype, layout, repeats > 1)

    def entry_kernels(self, entry):
        case, dtype, op, layout, repeats = entry
        return plan_module.kernels_of_entry(case, dtype, op, layout, repeats, self.args.tiny, self.device.tuning,
                                            self.device.limits)

    def compiles(self, row: dict) -> bool:
        """Whether torch-cuda-compile runs on ``row`` (--compile-rows)."""
        if self.args.compile_rows is None:
            return True
        name = f"{report.case_label(row)}/{row['op']}/{row['dtype']}/{row['layout']}"
        return any(fnmatch.fnmatchcase(name, p.strip()) for p in self.args.compile_rows.split(",") if p.strip())

    def data_for(self, plan: list, index: int) -> Data:
        """The Data of plan entry ``index``: the standard ones kept until their last entry
        (the bandwidth rows' references are theirs), a repeated one only while in use."""
        case, dtype, _, _, repeats = plan[index]
        key = (case.name, dtype)
        if key not in self._data:
            self._data[key] = Data(case, dtype, self.args.tiny, self.args.seed)
        data = self._data[key]
        if repeats > 1:
            if self._repeated is None or self._repeated[0] != (key, repeats):
                self._repeated = ((key, repeats), data.repeated(repeats))
            data = self._repeated[1]
        later = {(c.name, d) for c, d, *_ in plan[index + 1:]}
        if key not in later:
            del self._data[key]
        return data

    def run(self) -> dict:
        args = self.args
        plan = self.plan()
        progress = Progress(1 + bool(args.scale) + len(plan))
        progress.show("host overhead")
        results = self.header()
        if args.resume is not None:
            results["resumed"] = dict(self.resumed, kept_in=str(args.resume))
        results["ratios"] = []
        results["ratios_note"] = self.ratios_note
        results["host"] = host.measure(self.device, args.quick, args.tiny)
        # (four processes of their own at real sizes, a converted model's forwards: seconds on
        # a GPU, minutes on a software adapter; not with --quick, nor --tiny, whose sizes they are not)
        results["new_shapes"] = ({"note": "left out with --quick or --tiny"} if args.quick or args.tiny
                                 else new_shapes.measure(self.device))
        progress.step()
        if args.scale:
            progress.show("the ceiling, three ways")
            torch_cuda = next((p for p in self.peers if p.name == "torch-cuda"), None)
            results["ceiling"] = (ceiling.measure(self.device, self.timer, self.roofline, torch_cuda, args.tiny,
                                                  args.warmup_s) if self.scale_note is None else None)
            results["scale_note"] = self.scale_note
            self.roofline.clear()
            progress.step()
        self._data, self._repeated, current, not_run = {}, None, None, 0
        for index, (case, dtype, op, layout, repeats) in enumerate(plan):
            if args.deadline_s is not None and time.perf_counter() - progress.start > args.deadline_s:
                not_run += op != RATIOS
                if op != RATIOS:
                    results["rows"].append(dict(self.row_fields(case, dtype, op, layout, plan[index]), status="not run",
                                                reason=f"the run's time limit (--deadline-s {args.deadline_s:g})"))
                continue
            data = self.data_for(plan, index)
            if current != (case.name, dtype, repeats):
                current = (case.name, dtype, repeats)
                self.roofline.clear()  # frees the previous case's copy buffers
            if op == RATIOS:
                progress.show(f"{case.name} {dtype} {layout}: ratios in one submission")
                ops = ratios.applies(case.name, self.selected_ops(case))
                rounds = ratios.ROUNDS // 2 if args.quick else ratios.ROUNDS
                measured = ratios.measure(self.device, data, layout, ops, rounds)
                results["ratios"].append({"case": case.name, "dtype": dtype, "layout": layout, "ops": measured})
                progress.step()
                continue
            problem = build(op, data)
            row = dict(self.row_fields(case, dtype, op, layout, plan[index]), input_sizes=data.sizes,
                       geometry=data.geometry)
            if problem is not None:
                row["kernels"] = provenance.kernels_hash([d for _, d in descriptions(problem, layout)],
                                                         self.device.tuning, self.device.limits)
            progress.show(report.row_label(row))
            started = time.perf_counter()
            if problem is None:
                row.update(status="not applicable", reason="the window does not fit this case")
            else:
                row.update(self.poolgpu_row(problem, layout))
                every = args.peer_rows == "all" or (dtype, layout) == ("float32", "nchw")
                peers = [peer for peer in self.peers if (every or peer.every_row)
                         and (peer.name != "torch-cuda-compile" or self.compiles(row))]
                if row["status"] == "ok" and peers:
                    row["peers"] = {}
                    for peer in peers:
                        peer_started = time.perf_counter()
                        row["peers"][peer.name] = self.peer_row(peer, problem, layout, row)
                        row["peers"][peer.name]["bench_s"] = round(time.perf_counter() - peer_started, 2)
                    self.same_driver_ratios(row["peers"])
            row["bench_s"] = round(time.perf_counter() - started, 2)  # what the row cost the bench, peers included
            results["rows"].append(row)
            self.checkpoint(results)
            progress.step(report.row_label(row))
        if args.deadline_s is not None:
            results["deadline"] = {"deadline_s": args.deadline_s, "rows_not_run": not_run}
        self._data, self._repeated = {}, None
        progress.close()
        results["elapsed_s"] = round(time.perf_counter() - progress.start, 1)
        results["machine"]["load_avg_at_end"] = [round(v, 2) for v in os.getloadavg()]  # (1, 5, 15 minutes)
        results["timer"] = self.timer.describe()
        return results

    @staticmethod
    def row_fields(case, dtype, op, layout, entry) -> dict:
        fields = {"case": case.name, "op": op, "dtype": dtype, "layout": layout}
        return dict(fields, scaled=True, batch=SCALE_BATCH[case.name]) if entry[4] > 1 else fields

    def checkpoint(self, results: dict) -> None:
        """The run so far, as --json (a run cut short keeps its rows; the end rewrites it)."""
        self.args.json.parent.mkdir(parents=True, exist_ok=True)
        partial = dict(results, partial=True, timer=self.timer.describe())
        self.args.json.write_text(json.dumps(partial, indent=1, default=_jsonable) + "\n")

    def header(self) -> dict:
        device, args = self.device, self.args
        info = device.adapter.info
        return {
            "bench": "poolgpu",
            "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
            "summary": SUMMARY,
            "settings": {
                "argv": sys.argv[1:], "cases": list(args.case_names), "ops": args.op_patterns,
                "variants": [list(v) for v in args.variants], "reps": args.reps, "warmup": args.warmup,
                "warmup_s": args.warmup_s,
                "budget_s": args.budget, "quick": args.quick, "tiny": args.tiny, "seed": args.seed,
                "scale": args.scale, "deadline_s": args.deadline_s,
                "peers": list(args.peer_names), "peer_rows": args.peer_rows,
                "resume": None if args.resume is None else str(args.resume), "compile_rows": args.compile_rows,
            },
            "provenance": provenance.describe(),
            "adapter": dict(device.info, vendor=info.get("vendor", ""), architecture=info.get("architecture", ""),
                            driver=info.get("description", ""), limits={k: device.limits[k] for k in sorted(device.limits)}),
            "machine": {"platform": platform.platform(), "python": platform.python_version(),
                        "cpus": os.cpu_count(), "processor": _processor(),
                        "load_avg_at_start": [round(v, 2) for v in os.getloadavg()]},
            "versions": _versions(),
            "peers": {peer.name: peer.describe() for peer in self.peers},
            "rows": [],
        }


def scale_problem(device) -> str:
    """Why --scale's bandwidth rows cannot run on ``device``, or None: on a CPU adapter the
    tensors live in host memory, of which they need about SCALE_MEMORY free."""
    if device.info["type"] != "cpu":
        return None
    try:
        meminfo = Path("/proc/meminfo").read_text()
        free = int(next(line.split()[1] for line in meminfo.splitlines() if line.startswith("MemAvailable:"))) * 1024
    except (OSError, StopIteration, ValueError):
        return None
    if free >= SCALE_MEMORY:
        return None
    return (f"skipped: on a CPU adapter the scaled rows live in host memory and need about "
            f"{SCALE_MEMORY >> 30} GiB free ({free / 2**30:.1f} GiB available)")


def _processor() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def _versions() -> dict:
    versions = {"poolgpu": pg.__version__}
    for dist in ("wgpu", "numpy", "torch", "onnx", "onnxruntime", "tinygrad", "dawn-python", "matplotlib"):
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            versions[dist] = None
    return versions


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.list:
        for case in CASES.values():
            print(f"{case.name:4} {str(case.sizes):22} {case.note}\n     {', '.join(case.ops)}")
        return 0
    try:
        device = pg.Device(backend=args.backend, adapter=args.adapter)
    except pg.DeviceError as exc:
        print(f"bench: {exc}", file=sys.stderr)
        return 2
    keep = where_kept(args, device)
    print(f"bench: {device.name} ({device.backend}); {len(args.variants)} variant(s), "
          f"{'peers: ' + ', '.join(args.peer_names) if args.peer_names else 'no peers'}", file=sys.stderr)
    bench = Bench(args, device)
    try:
        results = bench.run()
    finally:
        for peer in bench.peers:
            peer.close()
    for path in (args.json, args.md, args.png):
        path.parent.mkdir(parents=True, exist_ok=True)
    results["outputs"] = {"json": str(args.json), "markdown": str(args.md), "png": str(args.png)}
    why_no_plot = report.plot(results, args.png)
    if why_no_plot:
        results["outputs"]["png"] = None
        print(f"bench: no plot: {why_no_plot}", file=sys.stderr)
    args.json.write_text(json.dumps(results, indent=1, default=_jsonable) + "\n")
    args.md.write_text(report.markdown(results))
    print(report.text_table(results))
    print(f"\nWritten: {args.json}, {args.md}" + ("" if why_no_plot else f", {args.png}"), f"({results['elapsed_s']} s)")
    cut_short = sum(r["status"] == "not run" for r in results["rows"])
    if keep is not None and cut_short and not (args.save_gpu_run or args.save_latest):
        print(f"bench: not kept as a full run: {cut_short} row(s) not run (--deadline-s)", file=sys.stderr)
        keep = None
    if keep is not None:
        kept = keep / report.gpu_run_name(results, keep) if keep.suffix != ".json" else keep
        kept.parent.mkdir(parents=True, exist_ok=True)
        kept.write_text(json.dumps(dict(results, outputs=None), indent=1, default=_jsonable) + "\n")
        print(f"Kept: {kept}")
        if kept.resolve() == report.LATEST.resolve() or kept.resolve().parent == report.GPU_RUNS.resolve():
            why_no_plot = report.publish()
            made = f"{report.TABLES}, README.md's table" + (f" (no plot: {why_no_plot})" if why_no_plot
                                                            else f", {report.PLOT}")
            print(f"Made again from the kept runs: {made}")
    failed = [report.row_label(r) for r in results["rows"] if r["status"] in ("check failed", "error")]
    failed += [report.row_label(dict(m, op=f"{op} (ratios)")) for m in results["ratios"]
               for op, r in m["ops"].items() if r["status"] in ("check failed", "error")]
    if failed:
        print(f"bench: {len(failed)} row(s) failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


def where_kept(args, device):
    """Where this run is kept beside --out: bench/latest.json (a CPU adapter), a directory for
    bench/gpu/-style names (a GPU), or None."""
    gpu = device.info["type"] != "cpu"
    if args.save_gpu_run and not gpu:
        raise SystemExit(f"--save-gpu-run: {device.name} is a CPU adapter (its runs go to bench/latest.json)")
    if args.save_latest and gpu:
        raise SystemExit(f"--save-latest: {device.name} is a GPU (its runs go to bench/gpu/: --save-gpu-run)")
    if args.save_gpu_run:
        return args.save_gpu_run
    if args.save_latest:
        return report.LATEST
    if args.full and not args.no_save:
        return report.GPU_RUNS if gpu else report.LATEST
    return None


def _jsonable(value):
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        return value.item()
    if isinstance(value, (tuple, set, frozenset)):
        return list(value)
    return str(value)
