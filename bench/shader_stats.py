"""A GPU compiler's view of poolgpu's kernels without a GPU: per kernel of each operator, the
instructions, registers, spills, scratch, LDS and memory instructions an AMD GPU's compiler
gives it, and its occupancy (subgroups per SIMD).

Two worker processes, on the Mesa that scripts/mesa25.sh unpacks into .cache/mesa25:

1. poolgpu compiles the operators on that Mesa's lavapipe, which writes each pipeline's
   SPIR-V, as naga makes it from poolgpu's WGSL for Vulkan (override constants folded in),
   into a directory (``MESA_SPIRV_DUMP_PATH``);
2. that Mesa's RADV, on its null device (``RADV_FORCE_FAMILY``: an AMD GPU without the
   hardware), compiles each SPIR-V and reports its statistics (bench/pipeline_stats.py).

    python -m bench.shader_stats --cases A,B --ops max,avg --tuned-for gpu [--variant packed1] [--family navi21] [--json PATH]

Nothing runs on a GPU: these are the compiler's counts, a signal to track (a change that adds
spills, scratch or instructions shows), not times.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from .cases import CASES, NEEDS
from .peers import MESA_DIR, private_mesa

COLUMNS = {"Instructions": "instr", "VGPRs": "VGPRs", "SGPRs": "SGPRs", "Spilled VGPRs": "spilled V",
           "Scratch size": "scratch", "LDS size": "LDS", "VMEM": "VMEM", "SMEM": "SMEM", "VALU": "VALU",
           "SALU": "SALU", "Latency": "latency", "Subgroups per SIMD": "waves/SIMD"}


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.shader_stats", description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", default="A,B,G,1D,3D", help="comma-separated (default: %(default)s)")
    p.add_argument("--ops", default="*", help="operator names or patterns (default: every one)")
    p.add_argument("--dtype", default="float32", help="float32, float16 or both, comma-separated (default: %(default)s)")
    p.add_argument("--layout", default="nchw", help="nchw, nhwc or both, comma-separated (default: %(default)s)")
    p.add_argument("--tuned-for", default="gpu", choices=("cpu", "gpu"), help="the Tuning preset (default: %(default)s)")
    p.add_argument("--variant", default="current", help="a kernel variant of the preset (bench/variants.py's names, "
                                                         "e.g. packed1, '+' composing them; default: %(default)s)")
    p.add_argument("--family", default="navi21", help="the AMD GPU RADV compiles for (RADV_FORCE_FAMILY: navi21, "
                                                      "navi31, gfx90a ...; default: %(default)s)")
    p.add_argument("--tiny", action="store_true", help="the cases' tiny shapes (kernels chosen for them)")
    p.add_argument("--json", type=Path, help="write the statistics here too")
    p.add_argument("--capture", type=Path, help=argparse.SUPPRESS)  # (worker 1: the plan to this directory)
    p.add_argument("--compile", type=Path, help=argparse.SUPPRESS)  # (worker 2: the directory's SPIR-V)
    return p.parse_args(argv)


def plan(args) -> list:
    entries = []
    for name in args.cases.split(","):
        for dtype in args.dtype.split(","):
            for layout in args.layout.split(","):
                # (and operators no case runs by default, named exactly: lp2_bwd)
                ops = CASES[name].ops + tuple(op for op in args.ops.split(",") if op in NEEDS and op not in CASES[name].ops)
                entries += [(name, dtype, layout, op) for op in ops
                            if any(fnmatch.fnmatchcase(op, pattern) for pattern in args.ops.split(","))]
    return entries


def capture(args) -> None:
    """Compile every entry's operators on this process's lavapipe, which writes their SPIR-V
    into args.capture; write which pipeline each pass of each operator uses (manifest.json)."""
    import poolgpu as pg
    from poolgpu.dispatches import Planner

    from .cases import Data, build
    from .poolgpu_run import descriptions

    from .variants import variant

    device = pg.Device(backend="vulkan", tuning=variant(args.variant, pg.Tuning.preset(args.tuned_for)))
    directory, seen, manifest = args.capture, {}, []

    def dumped():
        return sorted(directory.glob("spirv-*.spirv"), key=lambda p: int(p.stem.split("-")[1]))

    for name, dtype, layout, op in plan(args):
        problem = build(op, Data(CASES[name], dtype, args.tiny, 0))
        if problem is None:
            continue
        passes = []
        for _, desc in descriptions(problem, layout):
            planner = Planner(desc, device.tuning, device.limits["max-storage-buffer-binding-size"],
                              device.limits.get("min-storage-buffer-offset-alignment", 256))
            keys = [planner.pipeline_key(p) for p in planner.program.passes]
            before = len(dumped())
            device.compile(desc)  # builds its pipelines: lavapipe writes the new ones' SPIR-V
            new = [str(p.name) for p in dumped()[before:]]
            unseen = list(dict.fromkeys(k for k in keys if k not in seen))
            if len(new) != len(unseen):
                raise RuntimeError(f"{name} {op}: {len(unseen)} new pipelines wrote {len(new)} SPIR-V files")
            seen.update(zip(unseen, new))
            passes += [{"kernel": Path(k[0].file).name, "types": [t.name if t else None for t in k[1]],
                        "constants": dict(k[3]), "spirv": seen[k]} for k in keys]
        manifest.append({"case": name, "dtype": dtype, "layout": layout, "op": op, "passes": passes})
    (directory / "manifest.json").write_text(json.dumps({"device": device.name, "description": device.info["description"],
                                                         "entries": manifest}))


def compile_all(args) -> None:
    from .pipeline_stats import Compiler

    compiler = Compiler()
    directory = args.compile
    manifest = json.loads((directory / "manifest.json").read_text())
    names = sorted({k["spirv"] for e in manifest["entries"] for k in e["passes"]})  # (not wgpu's own shaders)
    stats = {name: compiler.statistics(directory / name)[0] for name in names}
    (directory / "stats.json").write_text(json.dumps({"device": compiler.name, "stats": stats}))


def _worker(args, mode: str, directory: Path, env: dict) -> None:
    argv = [sys.executable, "-m", "bench.shader_stats", f"--{mode}", str(directory), "--cases", args.cases,
            "--ops", args.ops, "--dtype", args.dtype, "--layout", args.layout, "--tuned-for", args.tuned_for,
            "--variant", args.variant]
    done = subprocess.run(argv + (["--tiny"] if args.tiny else []), env=dict(os.environ, **env),
                          cwd=Path(__file__).resolve().parents[1], capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        raise SystemExit(f"shader_stats: the {mode} step failed: {done.stderr.strip()[-1500:]}")


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.capture:
        capture(args)
        return 0
    if args.compile:
        compile_all(args)
        return 0
    mesa = private_mesa()
    radv = sorted((MESA_DIR / "root").rglob("libvulkan_radeon.so")) if mesa else []
    if not radv:
        print("shader_stats: needs the Mesa that scripts/mesa25.sh unpacks into .cache/mesa25 (its lavapipe writes "
              "the SPIR-V, its RADV compiles it)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="poolgpu-shader-stats-") as tmp:
        directory = Path(tmp)
        _worker(args, "capture", directory, dict(mesa, MESA_SPIRV_DUMP_PATH=str(directory)))
        icd = directory / "radeon_icd.json"
        icd.write_text(json.dumps({"file_format_version": "1.0.0",
                                   "ICD": {"api_version": "1.3.0", "library_path": str(radv[0])}}))
        _worker(args, "compile", directory, dict(mesa, VK_ICD_FILENAMES=str(icd), VK_DRIVER_FILES=str(icd),
                                                 RADV_FORCE_FAMILY=args.family))
        captured = json.loads((directory / "manifest.json").read_text())
        compiled = json.loads((directory / "stats.json").read_text())
    results = {"compiler": compiled["device"], "spirv_from": f"{captured['device']}, {captured['description']}",
               "tuned_for": args.tuned_for, "variant": args.variant, "tiny": args.tiny, "entries": captured["entries"]}
    for entry in results["entries"]:
        for kernel in entry["passes"]:
            kernel["stats"] = compiled["stats"][kernel.pop("spirv")]
    print(f"{results['compiler']} (RADV_FORCE_FAMILY={args.family}), SPIR-V by naga for {results['spirv_from']}; "
          f"kernels for {args.tuned_for}" + ("" if args.variant == "current" else f", variant {args.variant}"))
    head = ["case", "op", "type", "layout", "kernel"] + list(COLUMNS.values())
    body = [[e["case"], e["op"], e["dtype"][-2:], e["layout"], k["kernel"].removesuffix(".wgsl")]
            + [str(k["stats"].get(name, "")) for name in COLUMNS] for e in results["entries"] for k in e["passes"]]
    widths = [max(len(row[i]) for row in [head] + body) for i in range(len(head))]
    for row in [head] + body:
        print("  ".join(cell.ljust(w) if i < 5 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths))))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
