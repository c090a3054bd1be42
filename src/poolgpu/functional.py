"""The functional API: NumPy arrays in, NumPy arrays out; Tensors in, Tensors out."""

from __future__ import annotations

import numpy as np

from .descs import MaxPooling2Desc
from .descs import AveragePoolingGradDesc, MaxPoolingGradDesc, MaxUnpoolingDesc
from .device import Tensor, default_device
from .dtypes import DataType
from .errors import ValidationError
from .tensor_desc import TensorDesc, _int_tuple


def _run(desc_factory, inputs, device):
    """Build the description from the inputs' TensorDescs, run it, and answer in kind.

    NumPy inputs are uploaded (packed) and the outputs read back; Tensors stay on the GPU."""
    as_numpy = not isinstance(inputs[0], Tensor)
    if device is None:
        device = inputs[0].device if not as_numpy else default_device()
    tensors = [x if isinstance(x, Tensor) else device.upload(np.asarray(x)) for x in inputs]
    desc = desc_factory(*(t.desc for t in tensors))
    outputs = device.compile(desc)(*tensors)
    if not as_numpy:
        return outputs
    if isinstance(outputs, Tensor):
        return outputs.numpy()
    return tuple(t.numpy() for t in outputs)


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


def max_pool_grad(x, dy, window_size, strides=None, start_padding=None, end_padding=None, dilations=None,
                  device=None):
    """Max pooling gradient: dx (``x``'s sizes), zero except each window's ``dy`` added at the
    window's argmax (the forward max rule).  Deterministic."""

    def describe(input, input_gradient):
        return MaxPoolingGradDesc(
            input, input_gradient, window_size=window_size, strides=strides,
            start_padding=start_padding, end_padding=end_padding, dilations=dilations,
        )

    return _run(describe, (x, dy), device)


def average_pool_grad(dy, input_sizes, window_size, strides=None, start_padding=None, end_padding=None,
                      dilations=None, include_padding=False, device=None):
    """Average pooling gradient: dx of the forward input's ``input_sizes``, each window's
    ``dy / divisor`` added to every input element it covers.  Deterministic."""
    input_sizes = _int_tuple(input_sizes, "input_sizes")

    def describe(input_gradient):
        output_gradient = TensorDesc(input_gradient.data_type, input_sizes)
        return AveragePoolingGradDesc(
            input_gradient, output_gradient, window_size=window_size, strides=strides,
            start_padding=start_padding, end_padding=end_padding, dilations=dilations,
            include_padding=include_padding,
        )

    return _run(describe, (dy,), device)


def max_unpool(x, indices, output_sizes, device=None):
    """Max unpooling: zeros except ``out.flat[indices.flat[j]] = x.flat[j]`` (largest ``j``
    wins on repeats; indices outside the output are ignored).

    ``output_sizes`` is the output's full sizes ``{N, C, spatial...}`` or just its spatial
    sizes (N and C are then ``x``'s).  NumPy indices of a signed type (e.g. PyTorch's int64)
    are taken as their unsigned counterpart, so negative ones are outside the output."""
    output_sizes = _int_tuple(output_sizes, "output_sizes")
    if not isinstance(indices, Tensor):
        indices = np.asarray(indices)
        if indices.dtype in (np.int32, np.int64):
            indices = indices.view(indices.dtype.name.replace("int", "uint"))

    def describe(input, indices):
        sizes = output_sizes
        if len(sizes) == input.rank - 2:
            sizes = input.sizes[:2] + sizes
        elif len(sizes) != input.rank:
            raise ValidationError(
                "output_sizes", f"expected {input.rank} sizes (or {input.rank - 2} spatial ones), got {sizes}"
            )
        return MaxUnpoolingDesc(input, indices, TensorDesc(input.data_type, sizes))

    return _run(describe, (x, indices), device)
