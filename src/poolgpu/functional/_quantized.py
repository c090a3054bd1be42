"""Quantized average pooling in the functional API: int8 or uint8 values with their scales
and zero points."""

from __future__ import annotations

from typing import Optional, Sequence, Union

import numpy as np

from ..arguments import array, shown
from ..descs import QuantizedLinearAveragePoolingDesc, made
from ..device import Device
from ..dtypes import DataType
from ..errors import ValidationError
from ..interop import answer, on_device
from ..tensor import Tensor
from ._common import ArrayLike, Result, Window, _window

__all__ = ["quantized_average_pool", "quantization_array", "Scale", "ZeroPoint"]

#: A scale: a number, or an array or Tensor of one (per tensor) or C (per channel) numbers.
Scale = Union[float, ArrayLike]
#: A zero point: an int, an array or Tensor of one or C integers, or None (0).
ZeroPoint = Optional[Union[int, ArrayLike]]

# The least normal float32: GPUs may flush smaller (subnormal) numbers to zero.
_LEAST_NORMAL = np.float32(2.0 ** -126)


def quantization_array(value: Union[Scale, ZeroPoint], name: str, kind: str, data_type: DataType,
                       sizes: tuple) -> np.ndarray:
    """A scale (``kind`` "scale": float32) or zero point ("zero point": ``data_type``) for an
    input of ``sizes`` {N, C, ...}, as the array of its TensorDesc: a number or one-element
    array (per tensor: all sizes 1), C values (per channel: {1, C, 1, ...}), or an array of
    that shape already.  Scales must be positive normal float32 numbers; zero points integers
    in the type's range.

    Raises
    ------
    ValidationError
        Naming ``name``, saying what was expected.
    """
    values = array(value, name, ranks=None, typed=False)
    rank, channels = len(sizes), sizes[1]
    per_tensor, per_channel = (1,) * rank, (1, channels) + (1,) * (rank - 2)
    if values.size == 1:
        shape = per_tensor
    elif values.ndim == 1 and values.size == channels or values.shape == per_channel:
        shape = per_channel
    else:
        raise ValidationError(name, f"expected one {kind} (per tensor) or {channels} (per channel: one per channel of "
                                    f"the input), got shape {values.shape}")
    if kind == "scale":
        if values.dtype.kind not in "iuf":
            raise ValidationError(name, f"expected numbers, got {values.dtype}")
        with np.errstate(over="ignore", under="ignore"):
            scales = values.astype(np.float32)
        bad = ~(np.isfinite(scales) & (scales >= _LEAST_NORMAL))
        if bad.any():
            first = values.ravel()[bad.ravel()][0]
            raise ValidationError(name, f"every scale must be a positive, finite, normal float32 number (at least "
                                        f"2^-126: GPUs may flush smaller ones to zero), got {shown(first)}")
        return scales.reshape(shape)
    if values.dtype.kind not in "iu":
        raise ValidationError(name, f"expected integers (of {data_type.name}'s range), got {values.dtype}")
    info = np.iinfo(data_type.numpy)
    outside = (values < info.min) | (values > info.max)
    if outside.any():
        raise ValidationError(name, f"expected integers from {info.min} to {info.max} ({data_type.name}, the input's "
                                    f"type), got {int(values.ravel()[outside.ravel()][0])}")
    return values.astype(data_type.numpy).reshape(shape)


def quantized_average_pool(x: ArrayLike, x_scale: Scale, x_zero_point: ZeroPoint, y_scale: Scale,
                           y_zero_point: ZeroPoint, window_size: Window,
                           strides: Optional[Window] = None, start_padding: Optional[Window] = None,
                           end_padding: Optional[Window] = None, dilations: Optional[Window] = None,
                           include_padding: bool = False, device: Optional[Device] = None, *,
                           rounding: str = "directml", counted_end_padding: Optional[Sequence[int]] = None,
                           divisor_override: Optional[int] = None, vectorized_channels: int = 0) -> Result:
    """Quantized average pooling (DirectML's QUANTIZED_LINEAR_AVERAGE_POOLING) of int8 or
    uint8 values: ``clamp(round(S / divisor / y_scale) + y_zero_point)``, S the float32
    sum, in the window's order, of ``(x - x_zero_point) * x_scale`` over the input elements
    the window covers, round() half to even (docs/semantics.md).

    Parameters
    ----------
    x : ndarray, Tensor or array-like
        The input {N, C, [D,] [H,] W}, int8 or uint8.
    x_scale, y_scale : number, array or Tensor
        Per tensor (a number, or an array or Tensor of one element) or per channel (C
        values, or {1, C, 1, 1}); positive normal float32 numbers (other numbers are
        converted to float32, as DirectML's scale tensors hold them).
    x_zero_point, y_zero_point : int, array, Tensor or None
        Per tensor or per channel, integers of ``x``'s type; None: 0.
    window_size : int or sequence of int
        The window's size per spatial dimension (one int: every dimension).
    strides, dilations : int or sequence of int, optional
        Default all 1.
    start_padding, end_padding : int or sequence of int, optional
        Default all 0.
    include_padding : bool, default False
        Divide by the window's element count, padding included.
    device : Device, optional
        Where to run (see :func:`max_pool`).
    rounding : str, default "directml"
        Whose arithmetic, bit for bit: "directml", "onnxruntime", "onnxruntime_global" or
        "pytorch" (QuantizedLinearAveragePoolingDesc's ``rounding``).
    counted_end_padding, divisor_override : optional
        As for :func:`average_pool`.
    vectorized_channels : int, default 0
        With ``rounding="pytorch"``: the channels rounded as PyTorch's vectorised
        channels_last kernel rounds them.

    Returns
    -------
    ndarray or Tensor
        Of the input's kind and type.

    Raises
    ------
    ValidationError
        For an unsupported type, a scale or zero point that is not one (naming it), or an
        invalid window.
    """
    x_given = x if isinstance(x, Tensor) else array(x, "x")
    sizes = tuple(x_given.sizes if isinstance(x_given, Tensor) else x_given.shape)
    data_type = x_given.data_type if isinstance(x_given, Tensor) else DataType.of(x_given.dtype, "x")
    if data_type not in (DataType.INT8, DataType.UINT8):
        raise ValidationError("x", f"quantized average pooling takes INT8 or UINT8 values, got {data_type.name}")
    names = ("x_scale", "x_zero_point", "y_scale", "y_zero_point")
    operands = {}
    for name, value in zip(names, (x_scale, x_zero_point, y_scale, y_zero_point)):
        if value is None or isinstance(value, Tensor):
            operands[name] = value
        else:
            kind = "scale" if name.endswith("scale") else "zero point"
            operands[name] = quantization_array(value, name, kind, data_type, sizes)
    given = [name for name in names if operands[name] is not None]
    tensors, device, as_numpy = on_device([x_given] + [operands[n] for n in given], device, ["x"] + given)
    on = dict(zip(given, tensors[1:]))
    try:
        desc = made(QuantizedLinearAveragePoolingDesc,
            tensors[0].desc, *(on[n].desc if n in on else None for n in names),
            include_padding=include_padding, counted_end_padding=counted_end_padding,
            divisor_override=divisor_override, rounding=rounding, vectorized_channels=vectorized_channels, **_window(
                tensors[0].desc, window_size=window_size, strides=strides, start_padding=start_padding,
                end_padding=end_padding, dilations=dilations))
    except ValidationError as exc:  # (the description's operand fields are this function's arguments)
        head, dot, rest = exc.field.partition(".")
        if head not in _ARGUMENTS:
            raise
        raise exc.renamed(_ARGUMENTS[head] + dot + rest) from None
    return answer(device.compile(desc)(*tensors), as_numpy)


_ARGUMENTS = {"input_scale": "x_scale", "input_zero_point": "x_zero_point", "output_scale": "y_scale",
              "output_zero_point": "y_zero_point"}
