"""tinygrad's WEBGPU backend (Dawn, from dawn-python) as a peer, in a worker process: Dawn
and wgpu-native are two WebGPU implementations that should not share one process, and a
driver crash must not end the bench.  Each operator runs as a TinyJit-captured function
(kernels compiled once, replayed), timed to the end of a device synchronisation."""

from __future__ import annotations

import math
import os

os.environ.setdefault("DEV", "WEBGPU")

import numpy as np  # noqa: E402
from tinygrad import Device, Tensor, TinyJit  # noqa: E402

from .peer_base import Prepared, Unsupported, flat_from_plane  # noqa: E402

NAME = "tinygrad"


def version() -> str:
    from importlib.metadata import version as installed

    return installed("tinygrad")


class _Jitted(Prepared):
    def __init__(self, function, args, names, convert):
        self._jit = TinyJit(function)
        self._args, self._names, self._convert = args, names, convert
        self._last = None
        for _ in range(2):  # TinyJit compiles on the first call and captures on the second
            self.run()

    def run(self) -> None:
        result = self._jit(*self._args)
        self._last = result if isinstance(result, tuple) else (result,)
        Device[Device.DEFAULT].synchronize()

    def outputs(self) -> dict:
        return {name: self._convert.get(name, lambda a: a)(t.numpy()) for name, t in zip(self._names, self._last)}


def prepare(spec: dict, inputs: dict, layout: str, **_) -> Prepared:
    if layout != "nchw":
        raise Unsupported("tinygrad has no strided layouts (NCHW only)")
    op, dims = spec["op"], spec["dims"]
    if spec["dtype"] == "bfloat16":
        raise Unsupported("the bench hands tinygrad no bfloat16 (NumPy's is ml_dtypes')")
    x_sizes = tuple(spec["x_sizes"])
    pad = tuple(spec["start_padding"])
    if pad != tuple(spec["end_padding"]):
        raise Unsupported("asymmetric padding")
    pool = dict(kernel_size=tuple(spec["window_size"]), stride=tuple(spec["strides"]), padding=pad)
    dilation = tuple(spec.get("dilations") or (1,) * dims)
    spatial = tuple(range(2, 2 + dims))
    tensors = {name: Tensor(np.ascontiguousarray(a)).realize() for name, a in inputs.items() if name != "idx"}
    convert = {"idx": lambda a: flat_from_plane(a, x_sizes)}

    if op in ("max", "max_dil2"):
        return _Jitted(lambda x: x.max_pool2d(dilation=dilation, **pool).realize(), (tensors["x"],), ("y",), convert)
    if op == "max_idx":
        def max_with_indices(x):
            y, i = x.max_pool2d(dilation=dilation, return_indices=True, **pool)
            return y.realize(), i.realize()

        return _Jitted(max_with_indices, (tensors["x"],), ("y", "idx"), convert)
    if op in ("avg", "avg_incl_pad"):
        include = spec["include_padding"]
        return _Jitted(lambda x: x.avg_pool2d(count_include_pad=include, **pool).realize(), (tensors["x"],), ("y",), convert)
    if op == "lp2":
        # No Lp pooling in tinygrad: sqrt of the window sums of squares (padding adds zeros).
        count = math.prod(spec["window_size"])
        return _Jitted(lambda x: ((x * x).avg_pool2d(count_include_pad=True, **pool) * count).sqrt().realize(),
                       (tensors["x"],), ("y",), convert)
    if op == "max_fwd_bwd":
        def forward_backward(x, dy):
            y = x.max_pool2d(dilation=dilation, **pool)
            (dx,) = y.gradient(x, gradient=dy)
            return y.realize(), dx.realize()

        return _Jitted(forward_backward, (tensors["x"], tensors["dy"]), ("y", "dx"), convert)
    if op == "avg_bwd":
        # The gradient of average pooling does not depend on x's values: the backward alone.
        x = Tensor.zeros(*x_sizes, dtype=tensors["dy"].dtype).contiguous().realize()

        def backward(x, dy):
            (dx,) = x.avg_pool2d(count_include_pad=spec["include_padding"], **pool).gradient(x, gradient=dy)
            return dx.realize()

        return _Jitted(backward, (x, tensors["dy"]), ("dx",), convert)
    if op in ("adaptive_max", "adaptive_avg"):
        if any(s != 1 for s in spec["output_size"]):
            raise Unsupported("no adaptive pooling but global (to 1)")
        if op == "adaptive_max":
            return _Jitted(lambda x: x.max(axis=spatial, keepdim=True).realize(), (tensors["x"],), ("y",), convert)
        return _Jitted(lambda x: x.mean(axis=spatial, keepdim=True).realize(), (tensors["x"],), ("y",), convert)
    if op == "max_bwd":
        raise Unsupported("no max-pooling backward without its forward (autograd only)")
    if op == "unpool":
        raise Unsupported("max_unpool2d is a one-hot over the output plane, O(input x output): skipped")
    raise Unsupported(f"no {op}")
