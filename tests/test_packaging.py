"""`pip install .` gives a wheel with the shaders inside, and every shader the registry
names exists."""

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import poolgpu
from poolgpu import kernels

ROOT = Path(__file__).resolve().parents[1]


def test_every_registered_shader_and_snippet_is_installed():
    installed = Path(poolgpu.__file__).parent / "wgsl"
    registered = kernels.all_kernels()
    assert registered
    for kernel in registered:
        assert (installed / kernel.file).is_file(), kernel.file
    sources = {p.relative_to(ROOT / "src" / "poolgpu" / "wgsl") for p in (ROOT / "src/poolgpu/wgsl").rglob("*.wgsl")}
    assert sources, "no shaders in the source tree"
    for rel in sources:
        assert (installed / rel).is_file(), f"{rel} is missing from the installed package"


@pytest.mark.skipif(not (ROOT / "pyproject.toml").is_file(), reason="not run from a source checkout")
def test_the_wheel_carries_every_shader(tmp_path):
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
        check=True, capture_output=True,
    )
    wheel = next(tmp_path.glob("poolgpu-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    for path in (ROOT / "src/poolgpu/wgsl").rglob("*.wgsl"):
        assert f"poolgpu/wgsl/{path.relative_to(ROOT / 'src/poolgpu/wgsl').as_posix()}" in names
    assert "poolgpu/py.typed" in names


@pytest.mark.skipif(not (ROOT / "pyproject.toml").is_file(), reason="not run from a source checkout")
def test_the_python_versions_agree_with_the_dependencies_and_the_readme():
    import importlib.metadata
    import tomllib

    from packaging.specifiers import SpecifierSet

    ours = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    lowest = ours.removeprefix(">=")
    for dependency in ("wgpu", "numpy"):   # each takes every Python poolgpu says it takes
        theirs = importlib.metadata.metadata(dependency)["Requires-Python"]
        assert not theirs or lowest in SpecifierSet(theirs), (dependency, theirs, ours)
    assert f"Python >= {lowest}," in (ROOT / "README.md").read_text()
