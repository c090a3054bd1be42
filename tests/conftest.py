"""One fixture, `device`, parametrized over every adapter wgpu finds (e.g. lavapipe through
Vulkan and llvmpipe through OpenGL here); GPU tests skip cleanly when there is none.

POOLGPU_TEST_BACKENDS (comma-separated, e.g. "vulkan") restricts the adapters tested;
POOLGPU_REQUIRE_BACKENDS makes the run fail unless adapters of those backends exist (CI).
Every test runs on every adapter; the first adapter runs all of a test's cases, the others a
fixed third of them (see `pytest_collection_modifyitems`), POOLGPU_TEST_EVERY_CASE=1 all.
An adapter on which no device opens (e.g. an OpenGL 3.3 context without compute shaders,
as NVIDIA's EGL gives) is left out and named in the report header: each of its tests would
only repeat that error."""

import os
from collections import Counter

import pytest

import poolgpu as pg


def _adapters():
    try:
        found = pg.list_adapters()
    except pg.DeviceError:
        return []
    wanted = os.environ.get("POOLGPU_TEST_BACKENDS")
    if wanted:
        allowed = {b.strip().lower() for b in wanted.split(",")}
        found = [a for a in found if a["backend"] in allowed]
    seen, unique = set(), []
    for a in found:
        key = (a["backend"], a["name"])
        if key not in seen:
            seen.add(key)
            unique.append(a)
    return unique


_devices = {}
_UNUSABLE = []  # (adapter, why no device opened on it)


def _usable(adapters):
    usable = []
    for a in adapters:
        try:
            _devices[(a["backend"], a["name"])] = pg.Device(backend=a["backend"], adapter=a["name"])
        except pg.DeviceError as exc:
            _UNUSABLE.append((a, str(exc).splitlines()[0]))
        else:
            usable.append(a)
    return usable


ADAPTERS = _usable(_adapters())


def pytest_configure(config):
    required = os.environ.get("POOLGPU_REQUIRE_BACKENDS")
    if required:
        missing = {b.strip() for b in required.split(",")} - {a["backend"] for a in ADAPTERS}
        if missing:
            raise pytest.UsageError(f"POOLGPU_REQUIRE_BACKENDS: no adapter for {sorted(missing)}")


#: On adapters after the first, one in this many of a test's cases runs (its first always).
OTHER_ADAPTERS_SHARE = 3


def pytest_collection_modifyitems(config, items):
    """The first adapter runs every case; the others run every test with a fixed third of its
    cases. They all run the same WGSL: what differs between adapters is the backend's
    translation of it and the device layer, which a third of the cases exercise, while all
    of them over again would double the suite's time. Files whose subject is the adapter
    itself (``pytestmark = pytest.mark.every_adapter``) run whole on each."""
    if os.environ.get("POOLGPU_TEST_EVERY_CASE") == "1" or len(ADAPTERS) < 2:
        return
    first = ADAPTERS[0]
    seen, kept, deselected = Counter(), [], []
    for item in items:
        callspec = getattr(item, "callspec", None)
        adapter = callspec.params.get("device") if callspec else None
        if adapter is None or adapter is first or item.get_closest_marker("every_adapter"):
            kept.append(item)
            continue
        key = (item.nodeid.partition("[")[0], adapter["backend"], adapter["name"])
        (kept if seen[key] % OTHER_ADAPTERS_SHARE == 0 else deselected).append(item)
        seen[key] += 1
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept


def pytest_report_header(config):
    names = ", ".join(f"{a['name']} ({a['backend']})" for a in ADAPTERS) or "none (GPU tests skip)"
    left_out = [f"poolgpu left out {a['name']} ({a['backend']}): {why}" for a, why in _UNUSABLE]
    sampled = [] if os.environ.get("POOLGPU_TEST_EVERY_CASE") == "1" or len(ADAPTERS) < 2 else [
        f"poolgpu runs every case on {ADAPTERS[0]['name']} ({ADAPTERS[0]['backend']}), one in "
        f"{OTHER_ADAPTERS_SHARE} on the others (POOLGPU_TEST_EVERY_CASE=1: every case everywhere)"]
    return [f"poolgpu adapters: {names}"] + left_out + sampled


@pytest.fixture(
    scope="session",
    params=ADAPTERS or [None],
    ids=[a["backend"] for a in ADAPTERS] or ["no-adapter"],
)
def device(request):
    adapter = request.param
    if adapter is None:
        pytest.skip("no WebGPU adapter found")
    return _devices[(adapter["backend"], adapter["name"])]
