"""The OpenGL gate: poolgpu's calls into wgpu's OpenGL backend, one thread at a time.

wgpu-native's OpenGL backend (wgpu-hal's EGL code) works through one EGL context per
process.  Each call makes it current on the calling thread under a mutex of the adapter
object it came from, and panics, aborting the process, when the context is current on
another thread (EGL ``BadAccess``: two adapter objects from two enumerations each have
a mutex of their own over the one context) or when it waited for the mutex more than a few
seconds ("Could not lock adapter context": on llvmpipe a submission runs its dispatches
before it returns, holding the mutex as long).  So poolgpu:

- lists adapters once per process (``adapters.py``), so that every OpenGL device it opens
  shares one adapter object and its mutex;
- holds this gate around every call that may reach the OpenGL backend (listing adapters,
  opening a device, allocating, building pipelines, binding, recording, submitting, reading
  back, waiting): its threads queue here, in Python, with a deadline, never on the mutex;
- defers the release of the wgpu objects it made on OpenGL (Python frees an object on
  whichever thread drops it last, possibly in the middle of another thread's long
  submission) to the next time the gate is held;
- remembers a wait that passed its deadline: wgpu-py's poll thread may then still be waiting
  inside the backend, holding the mutex, so gated calls wait for that work first (within
  their own deadline) rather than on the mutex.

docs/design.md ("Threads, devices and OpenGL") says what this guarantees.
"""

from __future__ import annotations

import threading
from typing import Optional

from . import _native
from .errors import DeviceError

__all__ = ["DEFAULT_TIMEOUT", "Gate", "Gated", "GL", "for_backend"]

# Seconds a Device waits for the GPU (a read-back, a synchronize, another thread's calls on
# OpenGL) before DeviceError: the default of ``Device.timeout``.  Generous for software
# adapters: the largest tensor they hold (2 GiB) through a slow operator takes minutes
# there (docs/design.md, "Deadlines").
DEFAULT_TIMEOUT = 600.0


class Gate:
    """A lock for one wgpu backend's calls, with releases deferred to it and the memory of a
    wait that did not finish."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._lock = threading.RLock()
        self._depth = 0  # how deep the holding thread is (only the holder reads or writes it)
        self.pending_releases = []  # (release function, handle), from _native.release_later
        self._stall = None  # (event, wgpu device, what): a wait that passed its deadline, until the event is set

    def acquire(self, timeout: float) -> None:
        """Hold the gate (re-entrant), waiting at most ``timeout`` seconds for another
        thread's calls and for a wait that passed its deadline."""
        if not self._lock.acquire(timeout=timeout):
            raise DeviceError(
                f"the {self.name} adapter did not answer within {timeout:g} s: another thread's work on it was still "
                "running. Raise the Device's timeout (pg.Device(timeout=...) or dev.timeout) if that work is "
                "expected to take longer"
            )
        self._depth += 1
        if self._depth > 1:
            return
        try:
            self._wait_for_stall(timeout)
            self.release_pending()
        except BaseException:
            self._depth -= 1
            self._lock.release()
            raise

    def release(self) -> None:
        if self._depth == 1:
            try:
                self.release_pending()  # what died while the gate was held, at once
            finally:
                self._depth -= 1
                self._lock.release()
        else:
            self._depth -= 1
            self._lock.release()

    def release_pending(self) -> None:
        """Release the wgpu objects Python freed since (the caller holds the gate)."""
        pending = self.pending_releases
        while pending:
            function, handle = pending.pop()
            function(handle)

    def defer_release(self, obj):
        """``obj`` (a wgpu object poolgpu made) released under this gate once Python frees
        it; returns ``obj``."""
        _native.release_later(obj, self.pending_releases)
        return obj

    def stalled(self, event: threading.Event, wgpu_device, what: str) -> None:
        """A wait for ``event`` (set when a map of ``wgpu_device`` settles) passed its
        deadline (the caller holds the gate): later calls wait for it to be set first."""
        self._stall = (event, wgpu_device, what)

    def _wait_for_stall(self, timeout: float) -> None:
        if self._stall is None:
            return
        event, wgpu_device, what = self._stall
        if not event.is_set():
            _native.wake(wgpu_device)  # (in case its poll thread missed the wait: it alone then polls)
        if not event.wait(timeout):
            raise DeviceError(
                f"the {self.name} adapter has not answered since {what} passed its deadline, and it is one for the "
                f"whole process: waited {timeout:g} s more. Wait and retry, or restart the process"
            )
        self._stall = None


class Gated:
    """A Device's context manager for its gate: ``with dev._gate:`` around every wgpu call,
    waiting at most the Device's ``timeout``.  Without a gate (backends whose wgpu calls
    are thread-safe) it does nothing."""

    __slots__ = ("gate", "timeout")

    def __init__(self, gate: Optional[Gate], timeout: float) -> None:
        self.gate = gate
        self.timeout = timeout

    def __enter__(self) -> None:
        if self.gate is not None:
            self.gate.acquire(self.timeout)

    def __exit__(self, *exc) -> None:
        if self.gate is not None:
            self.gate.release()


# wgpu-native's OpenGL backend: one EGL context per process, so one gate.
GL = Gate("OpenGL")


def for_backend(backend: str) -> Optional[Gate]:
    """The gate of a backend (``"opengl"``: ``GL``), or None where wgpu's calls are
    thread-safe (Vulkan, Metal, D3D12)."""
    return GL if backend == "opengl" else None
