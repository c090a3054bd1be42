"""The documentation's examples run: every ```python block of README.md and docs/*.md, on
every adapter (the examples' default device is the adapter under test), each file's blocks
in order in one namespace, as a reader would paste them.

A block fenced as ```python no-run is shown, not run: only for what needs a real GPU or a
library the tests do not install (pygfx).  Blocks that import torch skip without it.  Every
relative link of those files must point at a file of the repository."""

import re
from pathlib import Path

import pytest

import poolgpu.device

# A file's blocks build on each other: every block runs on every adapter (conftest.py).
pytestmark = pytest.mark.every_adapter

ROOT = Path(__file__).resolve().parents[1]
FILES = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
FENCE = re.compile(r"^```(\S*)([^\n]*)\n(.*?)^```", re.S | re.M)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")

def _blocks():
    found = []
    for path in FILES:
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8")
        index = 0
        for match in FENCE.finditer(text):
            language, info, code = match.group(1), match.group(2).split(), match.group(3)
            if language != "python" or "no-run" in info:
                continue
            line = text.count("\n", 0, match.start()) + 1
            found.append(pytest.param(path, index, code, id=f"{path.relative_to(ROOT).as_posix()}:{line}"))
            index += 1
    return found


BLOCKS = _blocks()
_namespaces = {}  # (adapter, file) -> the namespace its blocks share, kept (and its Devices alive) for the whole run


def test_the_documentation_has_examples():
    assert len(BLOCKS) >= 20
    assert {p.values[0].name for p in BLOCKS} >= {"README.md", "api.md", "semantics.md"}


@pytest.mark.parametrize("path, index, code", BLOCKS)
def test_example(path, index, code, device, monkeypatch):
    if re.search(r"^\s*(import torch|from torch|import poolgpu\.torch)", code, re.M):
        pytest.importorskip("torch")
    # The examples' pg.default_device() is the adapter under test.
    monkeypatch.setattr(poolgpu.device, "_default_device", device)
    namespace = _namespaces.setdefault((device.backend, device.name, path), {"__name__": "__docs__"})
    exec(compile(code, f"{path.name}[{index}]", "exec"), namespace)


@pytest.mark.parametrize("path", [p for p in FILES if p.is_file()], ids=lambda p: p.relative_to(ROOT).as_posix())
def test_relative_links_point_at_files(path):
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    missing = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        file = (path.parent / target.split("#")[0]).resolve()
        if not file.exists():
            missing.append(target)
    assert not missing, f"{path.name} links to missing files: {missing}"
