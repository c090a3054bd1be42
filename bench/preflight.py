"""The first step on a GPU machine (scripts/gpu_bench.sh): within seconds, the adapters,
where poolgpu is imported from and what it is, and an exit status that stops the run unless
a discrete NVIDIA GPU is listed on Vulkan (measuring a software adapter there with the GPU
plan would spend the machine on nothing).

    python -m bench.preflight [--source DIR]

``POOLGPU_GPU_FAKE_NVIDIA=1`` takes any Vulkan adapter instead (the rehearsal on machines
without a GPU, tests/test_gpu_run.py).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

FAKE_ENV = "POOLGPU_GPU_FAKE_NVIDIA"
NVIDIA_VENDOR_ID = 0x10DE


def nvidia_gpus(adapters: list) -> list:
    """The discrete NVIDIA GPUs among pg.list_adapters()' Vulkan ones."""
    return [a for a in adapters if a["backend"] == "vulkan" and a["type"] == "discretegpu"
            and "nvidia" in (a["name"] + " " + a["description"]).lower()]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.preflight", description=__doc__.split("\n\n")[0])
    p.add_argument("--source", type=Path, help="the directory poolgpu must be imported from (the tree that travelled)")
    p.add_argument("--json", type=Path, help="also write what was found here")
    args = p.parse_args(argv)
    try:
        import poolgpu as pg
    except Exception as exc:  # (a missing wgpu or cffi: say so, and stop)
        print(f"preflight: poolgpu does not import: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 3
    from . import provenance

    where = Path(pg.__file__).resolve().parent
    print(f"preflight: poolgpu {pg.__version__} from {where}")
    if args.source is not None and where != (args.source / "poolgpu").resolve():
        print(f"preflight: poolgpu is imported from {where}, not from {args.source}: the measurements would be of "
              "other kernels than the tree's (PYTHONPATH must put the tree's src/ first)", file=sys.stderr)
        return 3
    found = provenance.describe()
    print(f"preflight: commit {found.get('commit')}{' (with changes)' if found.get('dirty') else ''}, "
          f"shaders {found['shaders']}")
    if found.get("shaders_when_carried") not in (None, found["shaders"]):
        print(f"preflight: note: the shaders changed since the carried provenance was written "
              f"({found['shaders_when_carried']}); the commit recorded is the older one", file=sys.stderr)
    try:
        adapters = pg.list_adapters()
    except pg.DeviceError as exc:
        adapters, why = [], str(exc)
    else:
        why = "no adapter listed"
    for a in adapters:
        print(f"preflight: adapter {a['backend']} {a['type']} {a['name']} ({a['description']})")
    gpus = nvidia_gpus(adapters)
    fake = os.environ.get(FAKE_ENV) == "1"
    if args.json is not None:
        args.json.write_text(json.dumps({"provenance": found, "adapters": adapters, "nvidia": gpus,
                                         "fake": fake}, indent=1) + "\n")
    if gpus:
        print(f"preflight: ok, {gpus[0]['name']}")
        return 0
    if fake and any(a["backend"] == "vulkan" for a in adapters):
        print(f"preflight: ok ({FAKE_ENV}=1: a rehearsal on {next(a for a in adapters if a['backend'] == 'vulkan')['name']})")
        return 0
    print("preflight: no discrete NVIDIA GPU on Vulkan: " + (why if not adapters else "only the adapters above")
          + f"; VK_DRIVER_FILES={os.environ.get('VK_DRIVER_FILES', '(unset)')}. NVIDIA's Vulkan driver needs the "
          "Vulkan loader and glvnd (libvulkan1, libglvnd0, libegl1, libgl1, libglx0, libopengl0, libgles2: "
          "scripts/gpu_bench.sh prepare carries them)", file=sys.stderr)
    return 3


if __name__ == "__main__":
    raise SystemExit(main())
