"""ONNX Runtime's quantized average pooling operators (domain ``com.microsoft``):
QLinearAveragePool and QLinearGlobalAveragePool, with ONNX Runtime's results.

ONNX Runtime computes them two ways, and so do these: a window that covers each whole
input plane without padding (QLinearGlobalAveragePool, and QLinearAveragePool with such a
kernel) goes through MLAS's global average (integer sums, one float32 multiplier:
``rounding="onnxruntime_global"``); any other window dequantizes its taps and sums them in
float32 in the window's order, adding the zero point before rounding
(``rounding="onnxruntime"``).  docs/semantics.md writes both out."""

from __future__ import annotations

import math
from typing import Optional, Sequence, Union

import numpy as np

from ..arguments import flag
from ..device import Device
from ..dtypes import DataType
from ..errors import ValidationError
from ..functional import ArrayLike, Result, Scale, ZeroPoint, quantized_average_pool
from ..tensor import Tensor
from ..tensor_desc import TensorDesc
from ._operators import _geometry, _input, _onnx_names, _spatial

__all__ = ["qlinear_average_pool", "qlinear_global_average_pool"]

# MLAS's global average refuses these (ONNX Runtime raises): images of 2^24 elements or more,
# and multipliers x_scale / (y_scale * image size) outside [2^-32, 256).
_GLOBAL_IMAGE_LIMIT = 1 << 24
_GLOBAL_SCALES = (np.float32(2.0 ** -32), np.float32(256.0))


def _per_tensor(value, name: str, kind: str, data_type: Optional[DataType]):
    """A per-tensor scale or zero point as ONNX Runtime takes it (a scalar or a 1-D tensor of
    one element): the value (read back from a Tensor), or None for an absent zero point."""
    if value is None:
        if kind == "scale":
            raise ValidationError(name, "required: the scale of a quantized tensor (a positive float), got None")
        return None
    values = value.numpy() if isinstance(value, Tensor) else np.asarray(value)
    if values.size != 1 or values.ndim > 1:
        raise ValidationError(name, f"expected a scalar or a 1-D tensor of one element (ONNX Runtime's {kind}s are "
                                    f"per tensor), got shape {values.shape}")
    if values.dtype.kind not in "iuf":
        raise ValidationError(name, f"expected a real number (an integer or a float), got {values.dtype} {value!r}")
    return values.reshape(()) if kind == "zero point" else values.reshape(()).astype(np.float32)


def _channels_first(x):
    """A channels_last input {N, spatial..., C} as a view {N, C, spatial...} (a Tensor over
    the same buffer, or a NumPy view)."""
    if isinstance(x, Tensor):
        d = x.desc
        sizes = d.sizes[:1] + d.sizes[-1:] + d.sizes[1:-1]
        strides = d.strides[:1] + d.strides[-1:] + d.strides[1:-1]
        return x.device.wrap(x.buffer, TensorDesc(d.data_type, sizes, strides, d.total_size_in_bytes), x.offset)
    return np.moveaxis(x, -1, 1)


def _check_global(x_scale, y_scale, image: int) -> None:
    """ONNX Runtime's limits of its global average (MLAS), checked as it checks them."""
    if image >= _GLOBAL_IMAGE_LIMIT:
        raise ValidationError("x", f"ONNX Runtime's global average takes images below 2^24 elements, got {image}")
    with np.errstate(over="ignore", under="ignore", divide="ignore"):
        multiplier = np.float32(x_scale / np.float32(y_scale * np.float32(image)))
    if not _GLOBAL_SCALES[0] <= multiplier < _GLOBAL_SCALES[1]:
        raise ValidationError("x_scale", f"x_scale / (y_scale * image size) = {float(multiplier)!r} lies outside "
                                         "[2^-32, 256), which ONNX Runtime's global average refuses (its outputs "
                                         "would all be one value)")


def _pool(x, x_scale, x_zero_point, y_scale, y_zero_point, channels_last, device, window: Optional[dict] = None):
    """The pooling of ``x`` (channels first or last) by ``window`` (None: global)."""
    channels_last = flag(channels_last, "channels_last")
    x = _input(x)
    data_type = x.data_type if isinstance(x, Tensor) else DataType.of(x.dtype, "x")
    if data_type not in (DataType.INT8, DataType.UINT8):
        raise ValidationError("x", f"expected int8 or uint8 values, got {data_type.name}")
    scales = {name: _per_tensor(value, name, kind, data_type) for name, value, kind in (
        ("x_scale", x_scale, "scale"), ("x_zero_point", x_zero_point, "zero point"),
        ("y_scale", y_scale, "scale"), ("y_zero_point", y_zero_point, "zero point"))}
    view = _channels_first(x) if channels_last else x
    spatial = _spatial(view)
    if window is None:
        window = dict(window_size=spatial)
    whole = tuple(window["window_size"]) == spatial and not any(window.get("start_padding", ()) +
                                                                  window.get("end_padding", ()))
    if whole:  # (ONNX Runtime's global average: the window's strides and divisor do not matter)
        _check_global(scales["x_scale"], scales["y_scale"], math.prod(spatial))
        window, include = dict(window_size=spatial), False
    else:
        include = window.pop("include_padding")
    y = quantized_average_pool(view, *scales.values(), include_padding=include, device=device,
                               rounding="onnxruntime_global" if whole else "onnxruntime", **window)
    if not channels_last:
        return y
    if isinstance(y, Tensor):  # (its channels_last form: the same buffer, N and C in ONNX's order)
        d = y.desc
        wanted = TensorDesc(d.data_type, d.sizes[:1] + d.sizes[2:] + d.sizes[1:2],
                            d.strides[:1] + d.strides[2:] + d.strides[1:2], d.total_size_in_bytes)
        return y.device.wrap(y.buffer, wanted, y.offset)
    return np.ascontiguousarray(np.moveaxis(y, 1, -1))


def qlinear_average_pool(x: ArrayLike, x_scale: Scale, x_zero_point: ZeroPoint, y_scale: Scale,
                         y_zero_point: ZeroPoint, kernel_shape: Sequence[int],
                         auto_pad: Union[str, bytes] = "NOTSET", ceil_mode: int = 0, channels_last: int = 0,
                         count_include_pad: int = 0, pads: Optional[Sequence[int]] = None,
                         strides: Optional[Sequence[int]] = None, device: Optional[Device] = None) -> Result:
    """ONNX Runtime's QLinearAveragePool (``com.microsoft``): average pooling of int8 or
    uint8 values, dequantized with ``x_scale``, ``x_zero_point`` and quantized with
    ``y_scale``, ``y_zero_point``, with ONNX Runtime's results bit for bit
    (docs/semantics.md).

    Parameters
    ----------
    x : array_like or Tensor
        X, int8 or uint8: {N, C, D1, ...} with 1 to 3 spatial dimensions, or with
        ``channels_last`` {N, D1, ..., C}.
    x_scale, y_scale : number, array or Tensor
        Per tensor: a scalar or a 1-D tensor of one element, positive normal float32.
    x_zero_point, y_zero_point : int, array, Tensor or None
        Per tensor, of ``x``'s type; None: 0.
    kernel_shape, auto_pad, ceil_mode, pads, strides
        As for :func:`average_pool` (QLinearAveragePool has no dilations).
    channels_last : int, default 0
        1: ``x`` and the result are channels-last.
    count_include_pad : int, default 0
        1: divide by the kernel's size (ONNX Runtime counts ``ceil_mode``'s extension too).
    device : Device, optional
        As for :func:`max_pool`.

    Returns
    -------
    Y
        Of ``x``'s type and layout; a NumPy array for array input, a Tensor for a Tensor.

    Raises
    ------
    ValidationError
        Before any GPU work, naming the attribute or input; what ONNX Runtime's global
        average refuses (an image of 2^24 elements or more, a multiplier
        ``x_scale / (y_scale * image size)`` outside [2^-32, 256)) too.
    """
    x = _input(x)
    plane = _spatial(_channels_first(x)) if flag(channels_last, "channels_last") else _spatial(x)
    window, _ = _geometry(plane, kernel_shape, auto_pad, ceil_mode, None, pads, strides)
    del window["dilations"]
    window["include_padding"] = flag(count_include_pad, "count_include_pad")
    with _onnx_names():
        return _pool(x, x_scale, x_zero_point, y_scale, y_zero_point, channels_last, device, window)


def qlinear_global_average_pool(x: ArrayLike, x_scale: Scale, x_zero_point: ZeroPoint, y_scale: Scale,
                                y_zero_point: ZeroPoint, channels_last: int = 0,
                                device: Optional[Device] = None) -> Result:
    """ONNX Runtime's QLinearGlobalAveragePool (``com.microsoft``): the quantized average
    over all spatial dimensions, kept as size 1, with ONNX Runtime's results bit for bit
    (MLAS's global average, docs/semantics.md).

    Parameters
    ----------
    x : array_like or Tensor
        X, int8 or uint8, channels first or (``channels_last`` 1) last.
    x_scale, x_zero_point, y_scale, y_zero_point, channels_last, device
        As for :func:`qlinear_average_pool`.

    Returns
    -------
    Y
        {N, C, 1, ...} (channels last: {N, 1, ..., C}).

    Raises
    ------
    ValidationError
        As for :func:`qlinear_average_pool`.
    """
    return _pool(x, x_scale, x_zero_point, y_scale, y_zero_point, channels_last, device)
