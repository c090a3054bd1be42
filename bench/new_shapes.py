"""New input sizes: what an operator's first call, a new size of it and its warm calls cost,
with the shape-generic pipelines (``Tuning.generic_calls``, the default) and without
(``generic_calls=0``: every size builds its specialised pipelines), and the first forward of
a converted resnet18-shaped model (bench/models.py's) at new sizes.  Each setting is measured in a process of
its own (a process keeps its pipelines: nothing built before may hide a build), with Mesa's
on-disk shader cache off.

``python -m bench.new_shapes [--backend B] [--quick]`` prints the table."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

import poolgpu as pg

STEM = (3, 2, 1)  # resnet's stem pooling: 3x3, stride 2, padding 1
# (name, what, (first input, first new input), the step of H and W between new inputs)
OPS = (
    ("stem_max_pool", "max pooling 3x3 / 2, padding 1, of float32 1x64xHxW", ((1, 64, 112, 112), (1, 64, 120, 120)), 8),
    ("global_average", "global average pooling of float32 1x512xHxW", ((1, 512, 7, 7), (1, 512, 8, 8)), 1),
)
RESNET_SIZES = (224, 240, 256, 288)


def _desc(name: str, x):
    if name == "stem_max_pool":
        k, s, p = STEM
        return pg.MaxPoolingDesc(x, window_size=(k, k), strides=(s, s), start_padding=(p, p), end_padding=(p, p))
    return pg.AveragePoolingDesc(x, window_size=x.sizes[2:])


def _call_ms(device, op, x, y) -> float:
    start = time.perf_counter()
    op(x, out=y)
    device.synchronize()
    return (time.perf_counter() - start) * 1e3


def _operator_rows(device, warm_calls: int, new_sizes: int) -> dict:
    """Per operator: its first call (the op compiled, its pipelines built), then
    ``new_sizes`` new sizes one after another, each compiled and called once (``new_shape``),
    called until it has its specialised pipelines (the last of those calls builds them:
    ``specialise``), then warm; medians over the new sizes.  Last, the warm calls of the
    specialised and the generic form of the last size, in alternating rounds."""
    rows = {}
    rng = np.random.default_rng(0)
    for name, what, (first, new), step in OPS:
        x = device.upload(rng.standard_normal(first).astype(np.float32))
        start = time.perf_counter()
        op = device.compile(_desc(name, x.desc))
        y = device.empty(op.desc.output)
        row = {"what": what, "first_call_ms": (time.perf_counter() - start) * 1e3 + _call_ms(device, op, x, y)}
        news, ratios, specialise, warms, built = [], [], [], [], 0
        for k in range(new_sizes):
            sizes = new[:2] + tuple(s + step * k for s in new[2:])
            x = device.upload(rng.standard_normal(sizes).astype(np.float32))
            before = device._pipelines_built
            start = time.perf_counter()
            op = device.compile(_desc(name, x.desc))
            y = device.empty(op.desc.output)
            news.append((time.perf_counter() - start) * 1e3 + _call_ms(device, op, x, y))
            built += device._pipelines_built - before
            # (the call after the new size's first generic_calls: it builds the specialised pipelines)
            specialise.append([_call_ms(device, op, x, y) for _ in range(max(device.tuning.generic_calls, 1))][-1])
            warms.append(statistics.median(_call_ms(device, op, x, y) for _ in range(warm_calls)))
            ratios.append(news[-1] / warms[-1])
        row.update(sizes=f"{first} then {new_sizes} new sizes from {new}", new_shape_ms=statistics.median(news),
                   new_shape_pipelines=built, specialise_ms=statistics.median(specialise),
                   warm_ms=statistics.median(warms), new_shape_vs_warm=statistics.median(ratios))
        generic = pg.Op(device, op.desc, device.tuning.shape_generic())
        specialised = pg.Op(device, op.desc, dataclasses.replace(device.tuning, generic_calls=0))
        times = {"specialised": [], "generic": []}
        for _ in range(warm_calls):
            for form, form_op in (("specialised", specialised), ("generic", generic)):
                times[form].append(_call_ms(device, form_op, x, y))
        row["warm_forms_ms"] = {form: statistics.median(t) for form, t in times.items()}
        rows[name] = row
    return rows


def _resnet_rows(device, warm_calls: int) -> dict:
    try:
        import torch

        import poolgpu.torch as pgt

        from .models import MODELS  # (torchvision's resnet18 layers, written there)
    except ImportError:
        return {}
    torch.manual_seed(0)
    model = pgt.convert(MODELS["resnet18"]().eval(), device)
    pooling = [0.0]  # the pooling layers' time in a forward (the convolutions' varies most on a loaded machine)

    def started(module, args):
        module.started = time.perf_counter()

    def ended(module, args, result):
        pooling[0] += (time.perf_counter() - module.started) * 1e3

    for module in model.modules():
        if type(module).__module__.startswith("poolgpu"):
            module.register_forward_pre_hook(started)
            module.register_forward_hook(ended)

    def forward(x) -> tuple:
        pooling[0] = 0.0
        start = time.perf_counter()
        model(x)
        return (time.perf_counter() - start) * 1e3, pooling[0]

    rows = {}
    with torch.no_grad():
        for size in RESNET_SIZES:
            x = torch.randn(1, 3, size, size)
            built = device._pipelines_built
            first, first_pooling = forward(x)
            pipelines = device._pipelines_built - built
            for _ in range(device.tuning.generic_calls + 1):  # (one of them builds the specialised pipelines)
                model(x)
            warm = [forward(x) for _ in range(warm_calls)]
            rows[str(size)] = {"first_forward_ms": first, "pipelines": pipelines,
                               "warm_ms": statistics.median(w for w, _ in warm), "warm_min_ms": min(w for w, _ in warm),
                               "first_pooling_ms": first_pooling,
                               "warm_pooling_ms": statistics.median(p for _, p in warm)}
    return rows


PARTS = ("operators", "resnet18_shaped")


def _measure_here(backend, generic_calls: int, part: str, quick: bool) -> dict:
    device = pg.Device(backend=backend)
    device.tuning = dataclasses.replace(device.tuning, generic_calls=generic_calls)
    if part == "operators":
        rows = _operator_rows(device, 5 if quick else 15, 2 if quick else 5)
    else:
        rows = _resnet_rows(device, 3 if quick else 7)
    return {"device": device.name, part: rows}


def measure(device, quick: bool = False) -> dict:
    """The rows with the shape-generic pipelines (default) and without, each part in a
    process of its own on ``device``'s backend."""
    results = {}
    for label, calls in (("generic_calls_2", 2), ("generic_calls_0", 0)):
        results[label] = {}
        for part in PARTS:
            argv = [sys.executable, "-m", "bench.new_shapes", "--backend", device.backend, "--generic-calls",
                    str(calls), "--part", part, "--json"] + (["--quick"] if quick else [])
            # (Mesa's on-disk shader cache off: every pipeline a size needs is compiled, as
            # the first time that size is seen)
            env = dict(os.environ, MESA_SHADER_CACHE_DISABLE="true")
            done = subprocess.run(argv, capture_output=True, text=True, timeout=900, env=env)
            if done.returncode != 0:
                results[label][part] = {"error": done.stderr[-2000:]}
                continue
            results[label].update(json.loads(done.stdout.strip().splitlines()[-1]))
    return results


def _table(results: dict) -> str:
    lines = []
    for label, run in results.items():
        lines.append(f"{label}: {run.get('device', '')}")
        for part in PARTS:
            if "error" in run.get(part, {}):
                lines.append(f"  {part}: {run[part]['error']}")
                run[part] = {}
        for name, row in run.get("operators", {}).items():
            forms = row["warm_forms_ms"]
            lines.append(f"  {name:16s} first {row['first_call_ms']:7.1f} ms  new shape {row['new_shape_ms']:6.1f} ms "
                         f"({row['new_shape_pipelines']} built, {row['new_shape_vs_warm']:.2f}x warm)  "
                         f"specialising {row['specialise_ms']:6.1f} ms  warm {row['warm_ms']:.2f} ms  "
                         f"(alternating: specialised {forms['specialised']:.2f}, generic {forms['generic']:.2f})")
        for size, row in run.get("resnet18_shaped", {}).items():
            lines.append(f"  resnet18-shaped {size}: first forward {row['first_forward_ms']:7.1f} ms "
                         f"({row['pipelines']} built)  warm {row['warm_ms']:6.1f} ms (min {row['warm_min_ms']:6.1f}, "
                         f"{row['first_forward_ms'] / row['warm_min_ms']:.2f}x)  pooling layers: first "
                         f"{row['first_pooling_ms']:6.1f} ms, warm {row['warm_pooling_ms']:5.1f} ms")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.new_shapes", description=__doc__)
    parser.add_argument("--backend", default=None)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--generic-calls", type=int, default=None, help="measure this setting in this process")
    parser.add_argument("--part", choices=PARTS, default="operators", help="with --generic-calls: what to measure")
    parser.add_argument("--json", action="store_true", help="print the results as one JSON line")
    args = parser.parse_args(argv)
    if args.generic_calls is not None:
        results = _measure_here(args.backend, args.generic_calls, args.part, args.quick)
        print(json.dumps(results) if args.json else _table({f"generic_calls_{args.generic_calls}": results}))
        return 0
    device = pg.Device(backend=args.backend)
    results = measure(device, args.quick)
    print(json.dumps(results) if args.json else _table(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
