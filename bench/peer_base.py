"""What every peer module shares (NumPy and the standard library only, so that a peer can run
in a worker process of another virtual environment).

A peer module has ``NAME``, ``version()`` and ``prepare(spec, inputs, layout, **extra)``
returning a :class:`Prepared` or raising :class:`Unsupported`.  ``spec`` describes the
operator (see bench/cases.py ``Problem.spec``), ``inputs`` are logical NumPy arrays by
name, and the outputs come back by name in poolgpu's conventions (indices flat over the
whole input, N and C included)."""

from __future__ import annotations

import math
import time

import numpy as np

# Timing on GPUs (bench/timing.py's interleaved(), the torch-cuda peer's events): dispatches
# per timed pass, and copies of the tensors they cycle over so that a dispatch reads data
# the previous ones left out of cache (case A's 32 MB fit an H100's 50 MB L2).
PER_PASS = 8
ROTATE = 4


class Unsupported(Exception):
    """The peer cannot compute this operator (or not this way); the message says why."""


class Prepared:
    """One operator, set up with its inputs on the peer's device."""

    def run(self) -> None:
        """Compute once and wait until the result is complete."""
        raise NotImplementedError

    def seconds(self) -> float:
        """One timed computation (wall clock, unless the peer can do better)."""
        start = time.perf_counter()
        self.run()
        return time.perf_counter() - start

    def outputs(self) -> dict:
        """The last run's outputs by name, as NumPy arrays in poolgpu's conventions."""
        raise NotImplementedError

    def release(self) -> None:
        pass


def plane_size(x_sizes) -> int:
    return math.prod(x_sizes[2:])


def flat_from_plane(indices: np.ndarray, x_sizes) -> np.ndarray:
    """Per-plane indices (PyTorch, tinygrad) -> flat over the whole input (poolgpu, ONNX)."""
    n, c = indices.shape[:2]
    offsets = (np.arange(n * c, dtype=np.int64) * plane_size(x_sizes)).reshape((n, c) + (1,) * (indices.ndim - 2))
    return indices.astype(np.int64) + offsets


def plane_from_flat(indices: np.ndarray, x_sizes) -> np.ndarray:
    return indices.astype(np.int64) % plane_size(x_sizes)
