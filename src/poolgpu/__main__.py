"""``python -m poolgpu``: what poolgpu sees on this machine, for bug reports.

Prints the versions that matter (poolgpu, Python, NumPy, wgpu, wgpu-native, torch), every
adapter wgpu offers with the features and limits poolgpu cares about, which adapter
``pg.default_device()`` picks and why, and whether each adapter passes a short self-test
(a small max and average pooling checked against NumPy).  Exit status 0 when at least one
adapter passes.

Each self-test runs in a child process, so that a driver that crashes or hangs is reported
as such instead of taking the report down with it.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import os
import platform
import subprocess
import sys
import time
from typing import Optional, Sequence

__all__ = [
    "FEATURES", "LIMITS", "SELF_TEST_TIMEOUT_S", "webgpu_name", "versions", "adapters", "default_choice",
    "self_test", "self_test_in_child", "collect", "render", "ok", "main",
]

# Features poolgpu asks for where an adapter has them; it requires none of them.
FEATURES = {
    "timestamp-query": "GPU timestamps: the bench times kernels with them",
    "shader-f16": "not required: float16 is read and written as packed 32-bit words",
    "subgroup": "not required",
}
# The limits that bound what poolgpu can run (WebGPU's names; wgpu-py spells them in kebab-case).
LIMITS = (
    "max-storage-buffer-binding-size",  # larger tensors run in chunks of (n, c) planes
    "max-buffer-size",  # the largest tensor
    "max-compute-workgroups-per-dimension",  # larger grids are numbered flat
    "max-compute-invocations-per-workgroup",
    "max-compute-workgroup-storage-size",
    "max-storage-buffers-per-shader-stage",
    "min-storage-buffer-offset-alignment",
)
SELF_TEST_TIMEOUT_S = 60.0  # a hang, not a slow adapter: the test itself takes well under a second


def webgpu_name(limit: str) -> str:
    """'max-buffer-size' -> 'maxBufferSize', as the WebGPU specification names limits.

    Parameters
    ----------
    limit : str
        wgpu-py's name of a limit.

    Returns
    -------
    str
    """
    first, *rest = limit.split("-")
    return first + "".join(part.capitalize() for part in rest)


def _version(distribution: str) -> Optional[str]:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def versions() -> dict:
    """Versions, without importing torch (poolgpu never imports it unless asked to)."""
    import numpy
    import wgpu

    import poolgpu

    try:
        from wgpu.backends import wgpu_native
        native = getattr(wgpu_native, "__version__", None)
    except Exception:  # noqa: BLE001 - a broken wgpu-native is reported by the adapter listing
        native = None
    torch = _version("torch") if importlib.util.find_spec("torch") is not None else None
    return {
        "poolgpu": f"{poolgpu.__version__} ({os.path.dirname(poolgpu.__file__)})",
        "python": f"{platform.python_version()} ({platform.python_implementation()}, {sys.executable})",
        "platform": platform.platform(),
        "numpy": numpy.__version__,
        "wgpu": wgpu.__version__,
        "wgpu-native": native,
        "torch": torch,
    }


def adapters() -> list:
    """Every adapter wgpu offers: name, backend, type, description, the features of FEATURES
    it has, and LIMITS."""
    from poolgpu import adapters

    found = []
    for a in adapters._enumerate():
        info = adapters._describe(a)
        limits = dict(a.limits)
        found.append({
            "name": info["name"],
            "backend": info["backend"],
            "type": info["type"],
            "description": info["description"],
            "features": {f: f in info["features"] for f in FEATURES},
            "limits": {webgpu_name(k): limits.get(k) for k in LIMITS},
        })
    return found


def default_choice(found: list) -> dict:
    """Which adapter pg.default_device() takes, and why (the rules of adapters._pick_adapter).

    Parameters
    ----------
    found : list of dict
        :func:`adapters`' answer.

    Returns
    -------
    dict
        ``index`` (into ``found``, or None), ``reasons`` (lines) and, where none is taken,
        ``error``.
    """
    from poolgpu import adapters
    from poolgpu.errors import DeviceError

    backend = os.environ.get("POOLGPU_BACKEND") or None
    name = os.environ.get("POOLGPU_ADAPTER") or None
    reasons = []
    if backend:
        reasons.append(f"POOLGPU_BACKEND={backend} keeps the {backend} adapters")
    if name:
        reasons.append(f"POOLGPU_ADAPTER={name} keeps adapters whose name contains it")
    if not backend and not name:
        reasons.append("POOLGPU_BACKEND and POOLGPU_ADAPTER are not set")
    reasons.append("preference: discrete GPU, integrated GPU, virtual GPU, then CPU (software) adapters; "
                   "among those Vulkan, Metal and D3D12 before OpenGL; the first listed among equals")
    try:
        picked = adapters._describe(adapters._pick_adapter(backend, name))
    except DeviceError as exc:
        return {"index": None, "error": str(exc), "reasons": reasons}
    index = next((i for i, a in enumerate(found)
                  if (a["name"], a["backend"]) == (picked["name"], picked["backend"])), None)
    return {"index": index, "error": None, "reasons": reasons}


def _pool_reference(x, window: int, stride: int, pad: int, average: bool):
    """NumPy max (with flat indices) or average (padding not counted) pooling over a
    {N, C, H, W} array, square window: the self-test's independent answer."""
    import numpy as np

    n, c, h, w = x.shape
    oh, ow = (h + 2 * pad - window) // stride + 1, (w + 2 * pad - window) // stride + 1
    y = np.zeros((n, c, oh, ow), x.dtype)
    idx = np.zeros((n, c, oh, ow), np.uint32)
    for i in range(oh):
        for j in range(ow):
            r0, c0 = i * stride - pad, j * stride - pad
            r = slice(max(r0, 0), min(r0 + window, h))
            s = slice(max(c0, 0), min(c0 + window, w))
            block = x[:, :, r, s].reshape(n, c, -1)
            if average:
                y[:, :, i, j] = block.astype(np.float64).mean(axis=2)
            else:
                k = block.argmax(axis=2)  # the first maximum, as poolgpu's ties rule
                y[:, :, i, j] = np.take_along_axis(block, k[..., None], 2)[..., 0]
                rows, cols = r.start + k // (s.stop - s.start), s.start + k % (s.stop - s.start)
                planes = np.arange(n * c).reshape(n, c)
                idx[:, :, i, j] = (planes * h + rows) * w + cols
    return y, idx


def self_test(backend: str, name: str) -> dict:
    """Open a Device on the adapter and run a small max pooling (with indices) and average
    pooling against NumPy.

    Parameters
    ----------
    backend : str
        The adapter's backend.
    name : str
        The adapter's name.

    Returns
    -------
    dict
        ``passed`` (bool), ``seconds`` and ``detail`` (what differed, or the exception).
    """
    import numpy as np

    import poolgpu as pg

    start = time.perf_counter()
    try:
        dev = pg.Device(backend=backend, adapter=name)
        rng = np.random.default_rng(0)
        # Distinct values, so that the maxima and their indices are unique.
        x = rng.permutation(2 * 3 * 11 * 13).astype(np.float32).reshape(2, 3, 11, 13) / 8
        y, idx = pg.max_pool(x, (3, 3), strides=(2, 2), start_padding=(1, 1), end_padding=(1, 1),
                             return_indices=True, device=dev)
        want_y, want_idx = _pool_reference(x, 3, 2, 1, average=False)
        problems = []
        if not np.array_equal(y, want_y):
            problems.append("max pooling values differ from NumPy's")
        if not np.array_equal(idx, want_idx):
            problems.append("max pooling indices differ from NumPy's")
        a = pg.average_pool(x, (2, 2), strides=(2, 2), device=dev)
        want_a, _ = _pool_reference(x, 2, 2, 0, average=True)
        if not np.allclose(a, want_a, rtol=1e-6, atol=0):
            problems.append("average pooling differs from NumPy's")
        detail = "; ".join(problems) or f"max and average pooling match NumPy (kernels tuned for {dev.tuned_for})"
        return {"passed": not problems, "seconds": time.perf_counter() - start, "detail": detail}
    except Exception as exc:  # noqa: BLE001 - any failure is the answer
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        return {"passed": False, "seconds": time.perf_counter() - start, "detail": f"{type(exc).__name__}: {first}"}


def self_test_in_child(backend: str, name: str, timeout: float = SELF_TEST_TIMEOUT_S) -> dict:
    """:func:`self_test` in a child process, so that a crash or hang is reported, not suffered.

    Parameters
    ----------
    backend, name : str
        As for :func:`self_test`.
    timeout : float, default SELF_TEST_TIMEOUT_S (60)
        Seconds before the child counts as hung.

    Returns
    -------
    dict
        As :func:`self_test`'s; a crash or hang is a failure saying so.
    """
    code = "import json, sys; from poolgpu.__main__ import self_test; print(json.dumps(self_test(*sys.argv[1:3])))"
    start = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, "-c", code, backend, name], capture_output=True, text=True,
                              timeout=timeout, env=os.environ.copy())
    except subprocess.TimeoutExpired:
        return {"passed": False, "seconds": timeout, "detail": f"no answer within {timeout:.0f} s (hung)"}
    lines = done.stdout.strip().splitlines()
    if done.returncode == 0 and lines:
        try:
            return json.loads(lines[-1])
        except json.JSONDecodeError:
            pass
    tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
    how = f"signal {-done.returncode}" if done.returncode < 0 else f"exit status {done.returncode}"
    return {"passed": False, "seconds": time.perf_counter() - start,
            "detail": f"the test process ended with {how}: {tail}"}


def collect(run_self_test: bool = True) -> dict:
    """The whole report: versions, environment, adapters (each with its self-test) and the
    default choice.

    Parameters
    ----------
    run_self_test : bool, default True
        Self-test every adapter (False: only list them; their ``self_test`` is None).

    Returns
    -------
    dict
        ``versions``, ``environment``, ``adapters`` and ``default``; what ``--json`` prints.
    """
    from poolgpu.errors import DeviceError

    report = {"versions": versions(), "environment": {
        k: os.environ.get(k) for k in ("POOLGPU_BACKEND", "POOLGPU_ADAPTER", "XDG_RUNTIME_DIR")}}
    try:
        found = adapters()
    except DeviceError as exc:
        report.update(adapters=[], default={"index": None, "error": str(exc), "reasons": []})
        return report
    for a in found:
        a["self_test"] = self_test_in_child(a["backend"], a["name"]) if run_self_test else None
    report["adapters"] = found
    report["default"] = default_choice(found)
    return report


def _size(value) -> str:
    if value is None:
        return "?"
    if value >= 1 << 20 and value % (1 << 20) == 0:
        return f"{value} ({value >> 20} MiB)"
    return str(value)


def render(report: dict) -> str:
    """The report as text.

    Parameters
    ----------
    report : dict
        :func:`collect`'s answer.

    Returns
    -------
    str
    """
    lines = ["poolgpu diagnostics", ""]
    width = max(len(k) for k in report["versions"])
    for key, value in report["versions"].items():
        lines.append(f"{key:<{width}}  {value if value is not None else 'not installed'}")
    lines.append("")
    for key, value in report["environment"].items():
        lines.append(f"{key}={value}" if value is not None else f"{key} not set")
    lines += ["", f"Adapters ({len(report['adapters'])}):"]
    for i, a in enumerate(report["adapters"]):
        lines.append(f"  [{i}] {a['name']}")
        lines.append(f"      backend {a['backend']}, type {a['type']}, {a['description']}")
        for feature, has in a["features"].items():
            lines.append(f"      {feature:<16} {'yes' if has else 'no ':<4} {FEATURES[feature]}")
        for limit, value in a["limits"].items():
            lines.append(f"      {limit:<37} {_size(value)}")
        test = a.get("self_test")
        if test is not None:
            verdict = "passed" if test["passed"] else "FAILED"
            lines.append(f"      self-test: {verdict} in {test['seconds']:.2f} s: {test['detail']}")
    if not report["adapters"]:
        lines.append("  none")
    default = report["default"]
    lines += ["", "pg.default_device():"]
    if default["index"] is not None:
        a = report["adapters"][default["index"]]
        lines.append(f"  [{default['index']}] {a['name']} ({a['backend']})")
    else:
        lines.append(f"  none: {default['error']}")
    lines += [f"  {reason}" for reason in default["reasons"]]
    return "\n".join(lines)


def ok(report: dict, ran_self_test: bool) -> bool:
    """Whether the report is a success: an adapter passed its self-test (or, without
    self-tests, one was found).

    Parameters
    ----------
    report : dict
        :func:`collect`'s answer.
    ran_self_test : bool
        Whether ``report`` holds self-tests.

    Returns
    -------
    bool
    """
    if not ran_self_test:
        return bool(report["adapters"])
    return any(a["self_test"]["passed"] for a in report["adapters"])


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m poolgpu [--json] [--no-self-test]``: print the report.

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments; default None: ``sys.argv[1:]``.

    Returns
    -------
    int
        The exit status: 0 where :func:`ok`, else 1.
    """
    parser = argparse.ArgumentParser(prog="python -m poolgpu", description=__doc__.split("\n\n")[1])
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--no-self-test", action="store_true", help="only list, do not open a device on each adapter")
    args = parser.parse_args(argv)
    report = collect(run_self_test=not args.no_self_test)
    print(json.dumps(report, indent=2) if args.json else render(report))
    return 0 if ok(report, not args.no_self_test) else 1


if __name__ == "__main__":
    sys.exit(main())
