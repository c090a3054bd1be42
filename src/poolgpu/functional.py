"""The functional API: NumPy arrays in, NumPy arrays out; Tensors in, Tensors out."""

from __future__ import annotations

import numpy as np

from .descs import AveragePooling1Desc, LpPooling1Desc, MaxPooling2Desc
from .device import Tensor, default_device
from .dtypes import DataType


def on_device(inputs, device):
    """(tensors, device, as_numpy): NumPy inputs uploaded packed to ``device`` (default: the
    default device); Tensor inputs kept, on their own device unless one is given."""
    as_numpy = not isinstance(inputs[0], Tensor)
    if device is None:
        device = default_device() if as_numpy else inputs[0].device
    tensors = [x if isinstance(x, Tensor) else device.upload(np.asarray(x)) for x in inputs]
    return tensors, device, as_numpy


def answer(outputs, as_numpy: bool):
    """Outputs in kind: read back to NumPy when the inputs were NumPy arrays."""
    if not as_numpy:
        return outputs
    if isinstance(outputs, Tensor):
        return outputs.numpy()
    return tuple(t.numpy() for t in outputs)


def _run(desc_factory, inputs, device):
    """Build the description from the inputs' TensorDescs, run it, and answer in kind."""
    tensors, device, as_numpy = on_device(inputs, device)
    desc = desc_factory(*(t.desc for t in tensors))
    return answer(device.compile(desc)(*tensors), as_numpy)


def max_pool(x, window_size, strides=None, start_padding=None, end_padding=None, dilations=None,
             return_indices=False, indices_type="uint32", device=None):
    """Max pooling; with ``return_indices`` also the flat logical index of each maximum."""
    indices = DataType.of(indices_type, "indices_type") if return_indices else None

    def describe(input):
        return MaxPooling2Desc(
            input, output_indices=indices, window_size=window_size, strides=strides,
            start_padding=start_padding, end_padding=end_padding, dilations=dilations,
        )

    return _run(describe, (x,), device)


def average_pool(x, window_size, strides=None, start_padding=None, end_padding=None, dilations=None,
                 include_padding=False, device=None):
    """Average pooling (FLOAT32, FLOAT16): the divisor counts padding when ``include_padding``."""

    def describe(input):
        return AveragePooling1Desc(
            input, window_size=window_size, strides=strides, start_padding=start_padding,
            end_padding=end_padding, dilations=dilations, include_padding=include_padding,
        )

    return _run(describe, (x,), device)


def lp_pool(x, window_size, strides=None, start_padding=None, end_padding=None, dilations=None, p=2,
            device=None):
    """Lp pooling (FLOAT32, FLOAT16): ``(sum |x|^p)^(1/p)`` over each window's input elements."""

    def describe(input):
        return LpPooling1Desc(
            input, window_size=window_size, strides=strides, start_padding=start_padding,
            end_padding=end_padding, dilations=dilations, p=p,
        )

    return _run(describe, (x,), device)
