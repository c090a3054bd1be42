"""What a run measured: the commit, a hash of every shader, and per row a hash of the
kernels it dispatched, so that a later run (bench/plan.py) can tell which kept rows are of
the kernels as they are now."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess

import poolgpu as pg
from poolgpu import kernels
from poolgpu.kernels.core import WGSL_DIR
from poolgpu.dispatches import Planner

from . import ROOT

# Where a machine without the repository's history reads the commit: written by
# `scripts/gpu_bench.sh prepare` beside what it carries (POOLGPU_PROVENANCE names it).
PROVENANCE_ENV = "POOLGPU_PROVENANCE"


def shaders_hash() -> str:
    """sha256 of every .wgsl file poolgpu imports its kernels from (names and contents)."""
    digest = hashlib.sha256()
    for path in sorted(WGSL_DIR.rglob("*.wgsl")):
        digest.update(path.relative_to(WGSL_DIR).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _git(*args) -> str:
    try:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=10,
                              check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def describe() -> dict:
    """{"commit", "dirty", "shaders", "poolgpu_from"}: the commit from the file
    POOLGPU_PROVENANCE names where it is set (written by ``scripts/gpu_bench.sh prepare``
    where the repository is: a GPU machine's copy of the tree may carry an older history),
    else from git; "shaders": the hash of the shaders imported now, whichever tree they come
    from ("shaders_when_carried": the carried file's, where they differ)."""
    found = {"commit": None, "dirty": None}
    carried_file = os.environ.get(PROVENANCE_ENV)
    if carried_file:
        try:
            carried = json.loads(open(carried_file).read())
            found = {"commit": carried.get("commit"), "dirty": carried.get("dirty"),
                     "shaders_when_carried": carried.get("shaders")}
        except (OSError, ValueError):
            pass
    if found["commit"] is None:
        found = {"commit": _git("rev-parse", "HEAD") or None, "dirty": None}
        if found["commit"]:
            found["dirty"] = bool(_git("status", "--porcelain", "--untracked-files=no"))
    shaders = shaders_hash()
    if found.get("shaders_when_carried") == shaders:
        del found["shaders_when_carried"]
    return dict(found, shaders=shaders, poolgpu_from=os.path.dirname(pg.__file__))


def kernels_hash(descriptions, tuning: pg.Tuning, limits: dict) -> str:
    """A hash of what these descriptions dispatch under ``tuning`` within ``limits``: each
    pass's complete WGSL and override constants (two rows of equal hash ran the same kernels)."""
    digest = hashlib.sha256()
    for desc in descriptions:
        planner = Planner(desc, tuning, limits["max-storage-buffer-binding-size"],
                          limits.get("min-storage-buffer-offset-alignment", 256))
        for pass_ in planner.program.passes:
            kernel, data_types, writable, constants, value_type = planner.pipeline_key(pass_)
            digest.update(kernels.shader_source(kernel, data_types, writable, value_type).encode())
            digest.update(repr(constants).encode())
    return digest.hexdigest()[:16]
