"""The functional API: NumPy arrays in, NumPy arrays out; Tensors in, Tensors out."""

from __future__ import annotations

import numpy as np

from .descs import (AdaptiveAveragePoolingDesc, AdaptiveMaxPoolingDesc, AveragePooling1Desc, LpPooling1Desc,
                    MaxPooling2Desc, RoiPoolingDesc)
from .arguments import array, flag, integers
from .descs import AveragePoolingGradDesc, MaxPoolingGradDesc, MaxUnpoolingDesc, described
from .device import Tensor, default_device
from .dtypes import FLOAT_TYPES, DataType
from .errors import ValidationError
from .tensor_desc import TensorDesc


def on_device(inputs, device, names=("x",)):
    """(tensors, device, as_numpy): NumPy inputs (``names``: the arguments they came in,
    for errors) uploaded packed to ``device`` (default: the default device); Tensor inputs
    kept, on their own device unless one is given."""
    as_numpy = not isinstance(inputs[0], Tensor)
    arrays = [x if isinstance(x, Tensor) else array(x, name) for x, name in zip(inputs, names + ("x",) * len(inputs))]
    if device is None:
        device = default_device() if as_numpy else inputs[0].device
    tensors = [x if isinstance(x, Tensor) else device.upload(x) for x in arrays]
    return tensors, device, as_numpy


def answer(outputs, as_numpy: bool):
    """Outputs in kind: read back to NumPy when the inputs were NumPy arrays."""
    if not as_numpy:
        return outputs
    if isinstance(outputs, Tensor):
        return outputs.numpy()
    return tuple(t.numpy() for t in outputs)


def _run(desc_factory, inputs, device, names=("x",)):
    """Build the description from the inputs' TensorDescs, run it, and answer in kind."""
    tensors, device, as_numpy = on_device(inputs, device, names)
    desc = desc_factory(*(t.desc for t in tensors))
    return answer(device.compile(desc)(*tensors), as_numpy)


def max_pool(x, window_size, strides=None, start_padding=None, end_padding=None, dilations=None,
             return_indices=False, indices_type="uint32", device=None):
    """Max pooling; with ``return_indices`` also the flat logical index of each maximum."""
    indices = DataType.of(indices_type, "indices_type") if flag(return_indices, "return_indices") else None

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


def _roi_array(rois, x) -> np.ndarray:
    """A NumPy ``rois`` ((R, 5) or {1, 1, R, 5}) as the {1, 1, R, 5} array of the input's
    float type that RoiPoolingDesc takes."""
    rois = array(rois, "rois", ranks=None, typed=False)
    if rois.dtype.kind == "b":
        raise ValidationError("rois", "expected numbers [batch, x1, y1, x2, y2], got booleans")
    if rois.ndim == 2 and rois.shape[1] == 5:
        rois = rois.reshape((1, 1) + rois.shape)
    if rois.ndim != 4 or rois.shape[:2] != (1, 1) or rois.shape[3] != 5:
        raise ValidationError("rois", f"expected an (R, 5) array of [batch, x1, y1, x2, y2], got shape {rois.shape}")
    x_dtype = x.data_type.numpy if isinstance(x, Tensor) else x.dtype
    if any(x_dtype == t.numpy for t in FLOAT_TYPES):
        # The ROI tensor has the input's type (DirectML's rule).  A corner beyond its range
        # becomes infinite (or NaN stays NaN): such a ROI pools nothing and gives zeros.
        with np.errstate(over="ignore", invalid="ignore"):
            rois = rois.astype(x_dtype)
    return rois


def roi_pool(x, rois, pooled_size, spatial_scale=1.0, device=None):
    """DirectML ROI pooling: for each ROI ``[batch, x1, y1, x2, y2]`` of ``rois`` (an (R, 5)
    array, converted to the input's type, or a {1, 1, R, 5} Tensor), the max over each of
    ``pooled_size`` = (height, width) bins -> {R, C, pooled_h, pooled_w}."""
    if not isinstance(x, Tensor):
        x = array(x, "x")
    if not isinstance(rois, Tensor):
        rois = _roi_array(rois, x)

    def describe(input, roi):
        return RoiPoolingDesc(input, roi, spatial_scale=spatial_scale, pooled_size=pooled_size)

    return _run(describe, (x, rois), device, ("x", "rois"))


def adaptive_max_pool(x, output_size, return_indices=False, indices_type="uint32", device=None):
    """PyTorch's adaptive max pooling to the spatial ``output_size``; with ``return_indices``
    also the flat logical index of each maximum."""
    indices = DataType.of(indices_type, "indices_type") if flag(return_indices, "return_indices") else None
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

    return _run(describe, (x, dy), device, ("x", "dy"))


def average_pool_grad(dy, input_sizes, window_size, strides=None, start_padding=None, end_padding=None,
                      dilations=None, include_padding=False, device=None):
    """Average pooling gradient: dx of the forward input's ``input_sizes``, each window's
    ``dy / divisor`` added to every input element it covers.  Deterministic."""
    input_sizes = integers(input_sizes, "input_sizes", minimum=1, maximum=None)

    def describe(input_gradient):
        output_gradient = described(input_gradient.data_type, input_sizes, "input_sizes")
        return AveragePoolingGradDesc(
            input_gradient, output_gradient, window_size=window_size, strides=strides,
            start_padding=start_padding, end_padding=end_padding, dilations=dilations,
            include_padding=include_padding,
        )

    return _run(describe, (dy,), device, ("dy",))


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
    indices = array(indices, "indices")
    unsigned = _UNSIGNED_INDICES.get(DataType.of(indices.dtype, "indices")) if indices.dtype.kind == "i" else None
    return indices if unsigned is None else indices.view(unsigned.numpy)


def max_unpool(x, indices, output_sizes, device=None):
    """Max unpooling: zeros except ``out.flat[indices.flat[j]] = x.flat[j]`` (largest ``j``
    wins on repeats; indices outside the output are ignored).

    ``output_sizes`` is the output's full sizes ``{N, C, spatial...}`` or just its spatial
    sizes (N and C are then ``x``'s).  Indices of type INT32/INT64 (PyTorch's, ONNX's) are
    read as UINT32/UINT64, so negative ones lie outside the output."""
    output_sizes = integers(output_sizes, "output_sizes", minimum=1, maximum=None)

    def describe(input, indices):
        sizes = output_sizes
        if len(sizes) == input.rank - 2:
            sizes = input.sizes[:2] + sizes
        elif len(sizes) != input.rank:
            raise ValidationError(
                "output_sizes", f"expected {input.rank} sizes (or {input.rank - 2} spatial ones), got {sizes}"
            )
        return MaxUnpoolingDesc(input, indices, described(input.data_type, sizes, "output_sizes"))

    return _run(describe, (x, _unsigned_indices(indices)), device, ("x", "indices"))
