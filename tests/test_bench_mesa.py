"""The Dawn-based peers' private Mesa (scripts/mesa25.sh unpacks it into .cache/mesa25):
only their workers are pointed at it, and such a worker sees its lavapipe while the bench's
own process (poolgpu's rows) keeps the system's driver."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import poolgpu as pg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import peers  # noqa: E402

OLD_MESA = [{"backend": "vulkan", "description": "Mesa 22.3.6 (LLVM 15.0.6)"}]


def _fake_unpack(directory: Path) -> Path:
    library = directory / "root" / "usr" / "lib" / "x86_64-linux-gnu" / "libvulkan_lvp.so"
    library.parent.mkdir(parents=True)
    library.write_bytes(b"")
    (directory / "lvp_icd.json").write_text(json.dumps({"ICD": {"library_path": str(library)}}))
    (directory / "version").write_text("25.0.7-2~bpo12+1\n")
    return library


def test_the_private_mesa_environment_puts_its_icd_and_libraries_first(tmp_path, monkeypatch):
    monkeypatch.setenv("LD_LIBRARY_PATH", "/somewhere/else")
    assert peers.private_mesa(tmp_path / "none") == {}
    library = _fake_unpack(tmp_path)
    env = peers.private_mesa(tmp_path)
    assert env["VK_ICD_FILENAMES"] == env["VK_DRIVER_FILES"] == str(tmp_path / "lvp_icd.json")
    assert env["LD_LIBRARY_PATH"] == f"{library.parent}:/somewhere/else"
    assert peers._private_driver(env) == "Mesa 25.0.7-2~bpo12+1 (lavapipe) from .cache/mesa25"


def test_dawn_peers_are_unavailable_on_an_old_mesa_unless_they_have_the_private_one(tmp_path):
    assert "Dawn needs Mesa >= 25 (found Mesa 22.3)" in peers.dawn_problem(OLD_MESA)
    _fake_unpack(tmp_path)
    assert peers.dawn_problem(OLD_MESA, peers.private_mesa(tmp_path)) == ""
    assert peers.dawn_problem([{"backend": "vulkan", "description": "Mesa 25.0.7"}]) == ""


@pytest.mark.skipif(not (peers.MESA_DIR / "lvp_icd.json").is_file(), reason="no .cache/mesa25 (scripts/mesa25.sh)")
def test_a_worker_pointed_at_the_private_mesa_sees_its_lavapipe_and_the_bench_keeps_the_systems(tmp_path):
    env = dict(os.environ, **peers.private_mesa())
    script = ("import wgpu; print([a.info['description'] for a in wgpu.gpu.enumerate_adapters_sync() "
              "if a.info['backend_type'] == 'Vulkan'])")
    seen = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert seen.returncode == 0, seen.stderr[-500:]
    version = (peers.MESA_DIR / "version").read_text().strip()
    assert f"Mesa {version}" in seen.stdout, seen.stdout
    # finding the Dawn peers leaves the bench's own process (poolgpu's rows) on the system's driver
    before = dict(os.environ)
    found = peers.discover(["tinygrad", "ort-webgpu"], pg.list_adapters(), tmp_path)
    for peer in found:
        peer.close()
    assert dict(os.environ) == before
