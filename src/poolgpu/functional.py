"""The functional API: NumPy arrays in, NumPy arrays out; Tensors in, Tensors out."""

from __future__ import annotations

import numpy as np

from .descs import (AdaptiveAveragePoolingDesc, AdaptiveMaxPoolingDesc, AveragePooling1Desc, LpPooling1Desc,
                    MaxPooling2Desc, RoiPoolingDesc)
from .descs import AveragePoolingGradDesc, MaxPoolingGradDesc, MaxUnpoolingDesc
from .descs import AdaptiveAveragePoolingGradDesc, AdaptiveMaxPoolingGradDesc, MaxUnpoolingGradDesc
from .device import Tensor, default_device
from .dtypes import FLOAT_TYPES, DataType
from .errors import ValidationError
from .tensor_desc import TensorDesc, _int_tuple


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
                 include_padding=False, device=None, *, counted_end_padding=None, divisor_override=None):
    """Average pooling (FLOAT32, FLOAT16): the divisor counts padding when ``include_padding``
    (of the end padding, only ``counted_end_padding`` where given); ``divisor_override``
    divides every window by one number (see AveragePoolingDesc)."""

    def describe(input):
        return AveragePooling1Desc(
            input, window_size=window_size, strides=strides, start_padding=start_padding,
            end_padding=end_padding, dilations=dilations, include_padding=include_padding,
            counted_end_padding=counted_end_padding, divisor_override=divisor_override,
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


def _roi_array(rois, x) -> np.ndarray:
    """A NumPy ``rois`` ((R, 5) or {1, 1, R, 5}) as the {1, 1, R, 5} array of the input's
    float type that RoiPoolingDesc takes."""
    rois = np.asarray(rois)
    if rois.ndim == 2 and rois.shape[1] == 5:
        rois = rois.reshape((1, 1) + rois.shape)
    if rois.ndim != 4 or rois.shape[:2] != (1, 1) or rois.shape[3] != 5:
        raise ValidationError("rois", f"expected an (R, 5) array of [batch, x1, y1, x2, y2], got shape {rois.shape}")
    if rois.shape[2] == 0:
        raise ValidationError("rois", "expected at least one ROI (a tensor cannot have a zero size)")
    x_dtype = x.data_type.numpy if isinstance(x, Tensor) else np.asarray(x).dtype
    if any(x_dtype == t.numpy for t in FLOAT_TYPES):
        rois = rois.astype(x_dtype)  # the ROI tensor has the input's type (DirectML's rule)
    return rois


def roi_pool(x, rois, pooled_size, spatial_scale=1.0, device=None):
    """DirectML ROI pooling: for each ROI ``[batch, x1, y1, x2, y2]`` of ``rois`` (an (R, 5)
    array, converted to the input's type, or a {1, 1, R, 5} Tensor), the max over each of
    ``pooled_size`` = (height, width) bins -> {R, C, pooled_h, pooled_w}."""
    if not isinstance(rois, Tensor):
        rois = _roi_array(rois, x)

    def describe(input, roi):
        return RoiPoolingDesc(input, roi, spatial_scale=spatial_scale, pooled_size=pooled_size)

    return _run(describe, (x, rois), device)


def adaptive_max_pool(x, output_size, return_indices=False, indices_type="uint32", device=None):
    """PyTorch's adaptive max pooling to the spatial ``output_size``; with ``return_indices``
    also the flat logical index of each maximum."""
    indices = DataType.of(indices_type, "indices_type") if return_indices else None
    return _run(lambda input: AdaptiveMaxPoolingDesc(input, output_indices=indices, output_size=output_size), (x,), device)


def adaptive_average_pool(x, output_size, device=None):
    """PyTorch's adaptive average pooling to the spatial ``output_size``."""
    return _run(lambda input: AdaptiveAveragePoolingDesc(input, output_size=output_size), (x,), device)


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
                      dilations=None, include_padding=False, device=None, *, counted_end_padding=None,
                      divisor_override=None):
    """Average pooling gradient: dx of the forward input's ``input_sizes``, each window's
    ``dy / divisor`` added to every input element it covers (the divisor as for
    :func:`average_pool`).  Deterministic."""
    input_sizes = _int_tuple(input_sizes, "input_sizes")

    def describe(input_gradient):
        output_gradient = TensorDesc(input_gradient.data_type, input_sizes)
        return AveragePoolingGradDesc(
            input_gradient, output_gradient, window_size=window_size, strides=strides,
            start_padding=start_padding, end_padding=end_padding, dilations=dilations,
            include_padding=include_padding, counted_end_padding=counted_end_padding,
            divisor_override=divisor_override,
        )

    return _run(describe, (dy,), device)


_UNSIGNED_INDICES = {DataType.INT32: DataType.UINT32, DataType.INT64: DataType.UINT64}


def _unsigned_indices(indices):
    """Signed indices (PyTorch's and ONNX's int64) as their unsigned bits, no copy: a
    negative index becomes one far outside any output."""
    if isinstance(indices, Tensor):
        unsigned = _UNSIGNED_INDICES.get(indices.data_type)
        if unsigned is None:
            return indices
        d = indices.desc
        return indices.device.wrap(indices.buffer, TensorDesc(unsigned, d.sizes, d.strides, d.total_size_in_bytes),
                                   indices.offset)
    indices = np.asarray(indices)
    unsigned = _UNSIGNED_INDICES.get(DataType.of(indices.dtype, "indices")) if indices.dtype.kind == "i" else None
    return indices if unsigned is None else indices.view(unsigned.numpy)


def max_unpool(x, indices, output_sizes, device=None):
    """Max unpooling: zeros except ``out.flat[indices.flat[j]] = x.flat[j]`` (largest ``j``
    wins on repeats; indices outside the output are ignored).

    ``output_sizes`` is the output's full sizes ``{N, C, spatial...}`` or just its spatial
    sizes (N and C are then ``x``'s).  Indices of type INT32/INT64 (PyTorch's, ONNX's) are
    read as UINT32/UINT64, so negative ones lie outside the output."""
    output_sizes = _int_tuple(output_sizes, "output_sizes")

    def describe(input, indices):
        sizes = output_sizes
        if len(sizes) == input.rank - 2:
            sizes = input.sizes[:2] + sizes
        elif len(sizes) != input.rank:
            raise ValidationError(
                "output_sizes", f"expected {input.rank} sizes (or {input.rank - 2} spatial ones), got {sizes}"
            )
        return MaxUnpoolingDesc(input, indices, TensorDesc(input.data_type, sizes))

    return _run(describe, (x, _unsigned_indices(indices)), device)


def adaptive_max_pool_grad(x, dy, device=None):
    """Gradient of adaptive max pooling (PyTorch's bins; deterministic).

    Parameters
    ----------
    x : array or Tensor
        The forward input ``{N, C, spatial...}`` (float32 or float16).
    dy : array or Tensor
        The gradient of the forward output: x's type, N and C; its spatial sizes are the
        forward ``output_size``.
    device : Device, optional
        Where to run (default: the inputs' device, or the default device).

    Returns
    -------
    dx : array or Tensor
        x's sizes: zero except that each bin's ``dy`` is added at the bin's argmax (ties to
        the lowest flat index, NaN larger than every number).
    """
    return _run(lambda input, input_gradient: AdaptiveMaxPoolingGradDesc(input, input_gradient), (x, dy), device)


def adaptive_average_pool_grad(dy, input_sizes, device=None):
    """Gradient of adaptive average pooling (PyTorch's bins; deterministic).

    Parameters
    ----------
    dy : array or Tensor
        The gradient of the forward output (float32 or float16).
    input_sizes : sequence of int
        The forward input's sizes ``{N, C, spatial...}``.
    device : Device, optional
        Where to run (default: the inputs' device, or the default device).

    Returns
    -------
    dx : array or Tensor
        Of ``input_sizes``: each bin's ``dy / (its element count)`` added to every element
        the bin covers, summed in float32.
    """
    input_sizes = _int_tuple(input_sizes, "input_sizes")

    def describe(input_gradient):
        return AdaptiveAveragePoolingGradDesc(input_gradient, TensorDesc(input_gradient.data_type, input_sizes))

    return _run(describe, (dy,), device)


def max_unpool_grad(dy, indices, device=None):
    """Gradient of max unpooling (deterministic).

    Parameters
    ----------
    dy : array or Tensor
        The gradient of the unpooled output (any of the ten types).
    indices : array or Tensor
        The unpooling's indices, flat positions over the whole unpooled output (N and C
        included), as :func:`max_unpool` takes them: uint32 or uint64, or int32/int64 read
        as their unsigned bits (a negative index lies outside).
    device : Device, optional
        Where to run (default: the inputs' device, or the default device).

    Returns
    -------
    dx : array or Tensor
        The indices' sizes, dy's type: ``dx[j] = dy.flat[indices.flat[j]]``, or 0 where the
        index lies outside dy or a larger ``j`` has the same index (it did not reach the
        output).
    """
    return _run(lambda input_gradient, idx: MaxUnpoolingGradDesc(input_gradient, idx), (dy, _unsigned_indices(indices)),
                device)
