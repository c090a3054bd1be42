"""Threads x Devices x adapters, in a process of its own: run by tests/test_threads.py, so
that an abort inside wgpu-native fails one test instead of ending the test run.

    python tests/stress_threads.py example <backend>      the two-thread program below
    python tests/stress_threads.py mixed <seconds> [<seed>] [--report <seconds>]

``example``: one thread keeps an OpenGL Device busy while the main thread opens twelve
Devices on ``<backend>`` one after another (wgpu-native alone aborts such a process:
docs/design.md, "Threads, devices and OpenGL").

``mixed``: six threads for ``<seconds>``, each drawing operators, shapes and values at
random and checking every result against tests/reference.py, on Devices shared by all
threads (one per adapter) and on Devices of their own, made, retuned and dropped while the
others work; a lost Device (its wgpu device destroyed) and one out of memory must raise
DeviceError while the others go on.  ``--report`` prints, every that many seconds, the
process's RSS and the wgpu objects alive, as one JSON line each (``sample``).

Exit status 0 and a last line ``ok ...`` when every check passed; 1 with the failures.
"""

import gc
import json
import os
import sys
import threading
import time

import numpy as np
import wgpu

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference  # noqa: E402

import poolgpu as pg  # noqa: E402

THREADS = 6
CASES = 8


def example(backend: str) -> None:
    x = np.random.rand(4, 8, 256, 256).astype(np.float32)
    busy = pg.Device(backend="opengl")
    stop = False
    expected_busy = reference.average_pool(x[:1, :2], (3, 3))
    errors = []

    def work():
        try:
            while not stop:
                y = pg.average_pool(x, (3, 3), device=busy)
                if not np.allclose(y[:1, :2], expected_busy, rtol=1e-5, atol=1e-6):
                    errors.append("average_pool on the busy OpenGL Device gave wrong values")
        except Exception as exc:  # reported by the main thread
            errors.append(repr(exc))

    t = threading.Thread(target=work)
    t.start()
    try:
        expected = reference.max_pool(x[:1], (2, 2), (2, 2))[0]
        for _ in range(12):
            d = pg.Device(backend=backend)
            if not np.array_equal(pg.max_pool(x[:1], (2, 2), strides=(2, 2), device=d), expected):
                errors.append(f"max_pool on a new {backend} Device gave wrong values")
    finally:
        stop = True
        t.join()
    if errors:
        sys.exit("\n".join(["failures:"] + errors))
    print(f"ok example {backend}")


# ---------------------------------------------------------------------------------------
# mixed: random operators on random Devices


def random_case(rng):
    """(name, run(device) -> tuple of arrays, expected tuple, exact): an operator with a
    fixed window geometry over random sizes and values."""
    kind = str(rng.choice(["max", "max_int", "average", "unpool"]))
    dims = 1 if kind == "max_int" else 2
    spatial = tuple(int(v) for v in rng.integers(4, 12, dims))
    shape = (int(rng.integers(1, 3)), int(rng.integers(1, 4))) + spatial
    window, strides = ((3,), (2,)) if dims == 1 else ((3, 2), (2, 1))
    x = rng.standard_normal(shape).astype(np.float32)
    if kind == "max":
        y, i = reference.max_pool(x, window, strides)
        return kind, lambda d: pg.max_pool(x, window, strides=strides, return_indices=True, device=d), \
            (y, i.astype(np.uint32)), True
    if kind == "max_int":
        xi = rng.integers(-100, 100, shape).astype(np.int16)
        return kind, lambda d: (pg.max_pool(xi, window, strides=strides, device=d),), \
            (reference.max_pool(xi, window, strides)[0],), True
    if kind == "average":
        return kind, lambda d: (pg.average_pool(x, window, strides=strides, device=d),), \
            (reference.average_pool(x, window, strides).astype(np.float32),), False
    y, i = reference.max_pool(x, window, strides)
    # unpool: back to the input's sizes, through the forward's indices
    indices = i.astype(np.uint32)
    return kind, lambda d: (pg.max_unpool(y, indices, x.shape, device=d),), \
        (reference.max_unpool(y, indices, x.shape),), True


def agrees(got, expected, exact) -> bool:
    if len(got) != len(expected):
        return False
    for g, e in zip(got, expected):
        g = np.asarray(g)
        if g.shape != e.shape:
            return False
        if exact and not np.array_equal(g, e):
            return False
        if not exact and not np.allclose(g, e, rtol=1e-4, atol=1e-5):
            return False
    return True


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def live_wgpu_objects() -> dict:
    return {k: v for k, v in wgpu.diagnostics.object_counts.tracker.counts.items() if v}


class Mixed:
    def __init__(self, seconds: float, seed: int) -> None:
        self.deadline = time.monotonic() + seconds
        self.seed = seed
        self.backends = sorted({a["backend"] for a in pg.list_adapters()} & {"vulkan", "opengl"})
        self.shared = {b: pg.Device(backend=b) for b in self.backends}
        # The calls draw from a few cases drawn per seed: the workgroup sizes follow the
        # shapes, so each new shape builds pipelines, which takes seconds on lavapipe.
        rng = np.random.default_rng(seed)
        self.cases = [random_case(rng) for _ in range(CASES)]
        self.failures = []
        self.counts = {}
        self.lock = threading.Lock()

    def count(self, what: str) -> None:
        with self.lock:
            self.counts[what] = self.counts.get(what, 0) + 1

    def fail(self, what: str) -> None:
        with self.lock:
            self.failures.append(what)

    def check(self, device, rng, where: str) -> None:
        name, run, expected, exact = self.cases[rng.integers(len(self.cases))]
        if rng.random() < 0.2:
            with device.batch():  # two calls in one submission, read back inside
                got = tuple(np.asarray(a) for a in run(device))
                again = tuple(np.asarray(a) for a in run(device))
            if not agrees(again, expected, exact):
                self.fail(f"{name} on {where} (batched) gave wrong values")
        else:
            got = tuple(np.asarray(a) for a in run(device))
        if not agrees(got, expected, exact):
            self.fail(f"{name} on {where} gave wrong values")
        self.count(name)

    def lose(self, backend: str, rng) -> None:
        """A Device whose wgpu device is destroyed (what a driver reset does) raises
        DeviceError on every use; the others go on."""
        d = pg.Device(backend=backend)
        self.check(d, rng, f"a {backend} Device about to be lost")
        d.wgpu_device.destroy()
        for attempt in (lambda: pg.max_pool(np.ones((1, 1, 4), np.float32), (2,), device=d), d.synchronize,
                        lambda: d.upload(np.ones((1, 1, 4), np.float32))):
            try:
                attempt()
            except pg.DeviceError as exc:
                if "lost" not in str(exc):
                    self.fail(f"a lost {backend} Device raised {exc!r}")
            else:
                self.fail(f"a lost {backend} Device did not raise DeviceError")
        if not d.lost:
            self.fail(f"a lost {backend} Device does not say so")
        self.count("lost")

    def out_of_memory(self, backend: str, rng) -> None:
        """A Device whose allocations fail raises DeviceError and recovers."""
        d = pg.Device(backend=backend)

        def refuse(*args, **kwargs):
            raise wgpu.GPUOutOfMemoryError("Out of Memory")

        d.wgpu_device.create_buffer = refuse  # (this wgpu device only)
        try:
            pg.max_pool(np.ones((1, 1, 4), np.float32), (2,), device=d)
        except pg.DeviceError as exc:
            if "out of GPU memory" not in str(exc):
                self.fail(f"out of memory on {backend} raised {exc!r}")
        else:
            self.fail(f"out of memory on {backend} did not raise DeviceError")
        finally:
            del d.wgpu_device.create_buffer
        if d.lost:
            self.fail(f"out of memory made the {backend} Device lost")
        self.check(d, rng, f"a {backend} Device after running out of memory")
        self.count("out of memory")

    def worker(self, k: int) -> None:
        rng = np.random.default_rng(self.seed * 1000 + k)
        own = None
        try:
            while time.monotonic() < self.deadline:
                backend = str(rng.choice(self.backends))
                roll = rng.random()
                if roll < 0.5:
                    self.check(self.shared[backend], rng, f"the shared {backend} Device")
                elif roll < 0.8:
                    if own is None or rng.random() < 0.1:  # the previous one dropped here
                        own = pg.Device(backend=backend, tuning=pg.Tuning.for_gpu() if rng.random() < 0.2 else None)
                        self.count("Devices made")
                    self.check(own, rng, f"a {own.backend} Device of one thread")
                elif roll < 0.87:
                    self.shared[backend].synchronize()
                elif roll < 0.92:
                    own = None
                    gc.collect()  # frees dropped Devices, their ops and buffers, on this thread
                elif roll < 0.96:
                    self.lose(backend, rng)
                else:
                    self.out_of_memory(backend, rng)
        except Exception as exc:  # reported by the main thread
            self.fail(f"thread {k}: {exc!r}")

    def run(self, report_every) -> None:
        threads = [threading.Thread(target=self.worker, args=(k,)) for k in range(THREADS)]
        for t in threads:
            t.start()
        started = time.monotonic()
        while any(t.is_alive() for t in threads):
            time.sleep(report_every or 0.5)
            if report_every:
                sample = {"s": round(time.monotonic() - started, 1), "rss_mib": round(rss_mib(), 1),
                          "wgpu_objects": live_wgpu_objects()}
                print("sample " + json.dumps(sample), flush=True)
        for t in threads:
            t.join()
        if self.failures:
            sys.exit("\n".join(["failures:"] + self.failures[:50]))
        print("ok mixed " + json.dumps({"backends": self.backends, "calls": self.counts}))


def main(argv) -> None:
    if argv[:1] == ["example"]:
        example(argv[1])
    elif argv[:1] == ["mixed"]:
        report = float(argv[argv.index("--report") + 1]) if "--report" in argv else None
        args = [a for a in argv[1:] if not a.startswith("--")]
        if report is not None:
            args.remove(argv[argv.index("--report") + 1])
        Mixed(float(args[0]), int(args[1]) if len(args) > 1 else 0).run(report)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
