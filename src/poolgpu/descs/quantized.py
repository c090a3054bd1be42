"""Quantized average pooling: DirectML's QUANTIZED_LINEAR_AVERAGE_POOLING (DirectML 1.13,
feature level 6.2), with the arithmetic of ONNX Runtime's and PyTorch's quantized average
pooling as extensions."""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass
from typing import Optional

from ..arguments import U32_MAX, choice, flag, integer
from ..dtypes import DataType
from ..errors import ValidationError
from ..tensor_desc import TensorDesc
from ._common import (Roles, _check_divisor_fields, _check_tensor, _check_type, _output_like, _pooling_window, _set,
                      _WindowedDescription)

__all__ = ["QuantizedLinearAveragePoolingDesc", "QUANTIZED_TYPES", "ROUNDINGS"]

#: The data types of quantized values.
QUANTIZED_TYPES = frozenset({DataType.INT8, DataType.UINT8})
#: The arithmetic a QuantizedLinearAveragePoolingDesc may follow (docs/semantics.md).
ROUNDINGS = ("directml", "onnxruntime", "onnxruntime_global", "pytorch")


def _quantization(value, field: str, data_type: DataType, channels: int, required: bool) -> Optional[TensorDesc]:
    """A scale (FLOAT32) or zero point (``data_type``) tensor: per tensor, all sizes 1, or per
    channel, {1, C, 1, ...}."""
    if value is None:
        if required:
            raise ValidationError(field, "required: a FLOAT32 TensorDesc {1, 1, 1, 1} (per tensor) or {1, C, 1, 1} "
                                         "(per channel)")
        return None
    tensor = _check_tensor(value, field)
    if tensor.data_type != data_type:
        raise ValidationError(f"{field}.data_type", f"expected {data_type.name}, got {tensor.data_type.name}")
    sizes = tensor.sizes
    if sizes[0] != 1 or sizes[1] not in (1, channels) or any(s != 1 for s in sizes[2:]):
        raise ValidationError(
            f"{field}.sizes", f"expected all sizes 1 (per tensor, e.g. {{1, 1, 1, 1}}) or {{1, C, 1, ...}} (per channel, "
            f"C = {channels}: the input's channels), got {sizes}",
        )
    return tensor


@dataclass(frozen=True)
class QuantizedLinearAveragePoolingDesc(_WindowedDescription):
    """DML_QUANTIZED_LINEAR_AVERAGE_POOLING_OPERATOR_DESC: the average of each window of
    int8 or uint8 values, dequantized with the input's scale and zero point and quantized
    again with the output's: ``clamp(round(S / divisor / output_scale) + output_zero_point)``,
    S the float32 sum, in the window's order, of ``(x - input_zero_point) * input_scale``
    over the input elements the window covers; the divisor as average pooling's; round()
    half to even; clamp() to the output type (docs/semantics.md).

    Parameters
    ----------
    input : TensorDesc
        {N, C, [D,] [H,] W}, INT8 or UINT8.
    input_scale, output_scale : TensorDesc
        FLOAT32, per tensor (all sizes 1: {1, 1, 1, 1}) or per channel ({1, C, 1, 1}).
    input_zero_point, output_zero_point : TensorDesc, optional
        Of the input's type, per tensor or per channel; default None: 0.
    output : TensorDesc, optional
        Of the input's type; default None: packed, of the formula's sizes.
    window_size : sequence of int
        One positive size per spatial dimension (``dimension_count`` of them).
    strides, dilations : sequence of int, optional
        Positive; default None: all 1.
    start_padding, end_padding : sequence of int, optional
        Non-negative; default None: all 0.
    include_padding : bool, default False
        Divide by the window's size, padding included.
    counted_end_padding : sequence of int, optional, keyword-only
        An extension, as for AveragePoolingDesc: how much of ``end_padding``
        ``include_padding`` counts (PyTorch's ``ceil_mode``).
    divisor_override : int, optional, keyword-only
        An extension, as for AveragePoolingDesc (PyTorch's ``divisor_override``).
    rounding : str, default "directml", keyword-only
        An extension: whose arithmetic to follow, bit for bit: ``"directml"`` (above),
        ``"onnxruntime"`` (ONNX Runtime's QLinearAveragePool: the zero point added in
        float32 before rounding), ``"onnxruntime_global"`` (its global average: integer
        sums and one multiplier; no padding) or ``"pytorch"`` (PyTorch's avg_pool2d:
        integer sums; see docs/semantics.md).
    vectorized_channels : int, default 0, keyword-only
        An extension for ``rounding="pytorch"``: the channels below it round before adding
        the zero point, as PyTorch's vectorised channels_last kernel does.

    Raises
    ------
    ValidationError
        Naming the field (``input_scale.sizes``, ``output.data_type``, ``window_size``, ...)
        that is malformed or inconsistent with the others; see docs/validation.md.
    """

    input: TensorDesc
    input_scale: Optional[TensorDesc] = None
    input_zero_point: Optional[TensorDesc] = None
    output_scale: Optional[TensorDesc] = None
    output_zero_point: Optional[TensorDesc] = None
    output: Optional[TensorDesc] = None
    _: KW_ONLY
    window_size: tuple
    strides: Optional[tuple] = None
    start_padding: Optional[tuple] = None
    end_padding: Optional[tuple] = None
    dilations: Optional[tuple] = None
    include_padding: bool = False
    counted_end_padding: Optional[tuple] = None
    divisor_override: Optional[int] = None
    rounding: str = "directml"
    vectorized_channels: int = 0

    kernel = "quantized_average_pool"

    def __post_init__(self) -> None:
        input = _check_tensor(self.input, "input")
        _check_type(input, "input", QUANTIZED_TYPES)
        channels = input.sizes[1]
        window = _pooling_window(self, input, self.dilations)
        out_sizes = input.sizes[:2] + window.output_spatial_sizes(input.sizes[2:])
        rounding = choice(self.rounding, "rounding", ROUNDINGS)
        _set(
            self,
            input_scale=_quantization(self.input_scale, "input_scale", DataType.FLOAT32, channels, True),
            input_zero_point=_quantization(self.input_zero_point, "input_zero_point", input.data_type, channels, False),
            output_scale=_quantization(self.output_scale, "output_scale", DataType.FLOAT32, channels, True),
            output_zero_point=_quantization(self.output_zero_point, "output_zero_point", input.data_type, channels,
                                            False),
            output=_output_like(self.output, "output", out_sizes, input.data_type),
            window=window,
            dilations=window.dilations,
            include_padding=flag(self.include_padding, "include_padding"),
            rounding=rounding,
            vectorized_channels=integer(self.vectorized_channels, "vectorized_channels", minimum=0, maximum=U32_MAX),
        )
        _check_divisor_fields(self, window)
        if rounding == "onnxruntime_global" and any(window.start_padding + window.end_padding):
            raise ValidationError("rounding", "\"onnxruntime_global\" (ONNX Runtime's global average) takes windows "
                                              f"without padding, got start_padding {window.start_padding} and "
                                              f"end_padding {window.end_padding}")

    def input_tensors(self) -> Roles:
        roles = (("input", self.input), ("input_scale", self.input_scale), ("input_zero_point", self.input_zero_point),
                 ("output_scale", self.output_scale), ("output_zero_point", self.output_zero_point))
        return tuple((role, t) for role, t in roles if t is not None)

    def output_tensors(self) -> Roles:
        return (("output", self.output),)
