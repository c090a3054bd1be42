"""Any number of Devices, threads and adapters in one process: no abort, no hang.

The scenarios of tests/stress_threads.py run in child processes, all at once, so that an
abort inside wgpu-native fails its test instead of ending the run, and a hang fails it
after HANG_S: the program that used to abort (a busy OpenGL Device in one thread, twelve
new Devices in another; once with Vulkan Devices, once with OpenGL ones), and six threads
drawing random operators on Devices of both adapters, shared, private, made and dropped,
lost and out of memory while the others work, each result checked against the reference.

POOLGPU_SOAK=<seconds> runs the mixed scenario that long instead (e.g. 1800), sampling the
RSS and the wgpu objects alive every tenth of it, and checks that they stay flat; run with
``-s`` to see the samples.
"""

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import poolgpu as pg
from poolgpu import gate

# The adapter is this file's subject: every case runs on every adapter (conftest.py).
pytestmark = pytest.mark.every_adapter

SCRIPT = Path(__file__).with_name("stress_threads.py")
SOAK_S = float(os.environ.get("POOLGPU_SOAK", "0") or 0)
MIXED_S = 25  # the mixed scenario's length in CI
HANG_S = 240 + SOAK_S  # past this a child counts as hung (the scenarios end by themselves in under a minute)
SCENARIOS = {
    "example_vulkan": ["example", "vulkan"],
    "example_opengl": ["example", "opengl"],
    "mixed": ["mixed", str(MIXED_S), "1"],
}
if SOAK_S:
    SCENARIOS = {"soak": ["mixed", str(SOAK_S), "2", "--report", str(SOAK_S / 10)]}

try:
    BACKENDS = {a["backend"] for a in pg.list_adapters()}
except pg.DeviceError:
    BACKENDS = set()
both_adapters = pytest.mark.skipif(not {"vulkan", "opengl"} <= BACKENDS,
                                   reason="the scenarios need both a Vulkan and an OpenGL adapter")


@pytest.fixture(scope="module")
def children():
    """The scenarios' processes, started together (each waits mostly on its GPU work)."""
    started = {name: subprocess.Popen([sys.executable, str(SCRIPT), *args], stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True)
               for name, args in SCENARIOS.items()}
    yield started
    for process in started.values():
        if process.poll() is None:
            process.kill()
            process.wait()


def finished(process) -> str:
    try:
        output, _ = process.communicate(timeout=HANG_S)
    except subprocess.TimeoutExpired:
        process.kill()
        output, _ = process.communicate()
        pytest.fail(f"hung: no end after {HANG_S:g} s; its output:\n{output[-3000:]}")
    if process.returncode != 0:
        how = "aborted (SIGABRT)" if process.returncode in (-6, 134) else f"exit status {process.returncode}"
        pytest.fail(f"{how}; its output:\n{output[-3000:]}")
    return output


@both_adapters
@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_scenario_ends_with_every_result_right(children, scenario):
    output = finished(children[scenario])
    last = output.strip().splitlines()[-1]
    assert last.startswith("ok "), output[-3000:]
    if scenario == "soak":
        samples = [json.loads(line[len("sample "):]) for line in output.splitlines() if line.startswith("sample ")]
        print("\n".join(f"{s['s']:8.1f} s  RSS {s['rss_mib']:7.1f} MiB  wgpu objects {sum(s['wgpu_objects'].values())}"
                        f"  {s['wgpu_objects']}" for s in samples))
        assert_flat(samples)


def assert_flat(samples) -> None:
    """From a third of the run on (caches and wgpu devices made by then), RSS grows by less
    than 64 MiB and no kind of wgpu object by more than half, plus 20."""
    warm = samples[len(samples) // 3:]
    assert len(warm) >= 3, samples
    first, last = warm[0], warm[-1]
    assert last["rss_mib"] - first["rss_mib"] < 64, f"RSS grew from {first['rss_mib']} to {last['rss_mib']} MiB"
    kinds = {k for s in warm for k in s["wgpu_objects"]}
    early = {k: max(s["wgpu_objects"].get(k, 0) for s in warm[:2]) for k in kinds}
    grown = {k: (early[k], v) for k, v in last["wgpu_objects"].items() if v > early[k] * 1.5 + 20}
    assert grown == {}, f"wgpu objects alive grew: {grown}"


# ---------------------------------------------------------------------------------------
# The OpenGL gate's memory of a wait that passed its deadline


def test_the_gate_waits_for_a_stalled_wait_within_each_deadline():
    g = gate.Gate("test")
    settled = threading.Event()  # set when the map settles
    g.acquire(1.0)
    g.stalled(settled, None, "reading back 4 bytes on a test adapter")
    g.release()
    with pytest.raises(pg.DeviceError, match="has not answered since reading back 4 bytes .*waited 0.05 s more"):
        g.acquire(0.05)
    settled.set()  # the GPU answered
    g.acquire(0.05)
    g.acquire(0.05)  # re-entrant
    g.release()
    g.release()
    assert g._stall is None and g._depth == 0


def test_the_gate_releases_what_died_while_it_was_held():
    g = gate.Gate("test")
    released = []
    g.pending_releases.append((released.append, 7))
    g.acquire(1.0)
    assert released == [7]  # what died before, at once
    g.pending_releases.append((released.append, 8))
    g.release()
    assert released == [7, 8] and g.pending_releases == []
