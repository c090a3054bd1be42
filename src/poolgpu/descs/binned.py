"""Variable-window pooling: each output pools its own bin, not a window of fixed geometry
(ROI pooling, adaptive pooling)."""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass
from typing import Optional

import numpy as np

from ..arguments import COORDINATE_MAX, U32_MAX, integers, is_integer, number, sequence, shown
from ..dtypes import ALL_TYPES, FLOAT_TYPES
from ..errors import ValidationError
from ..tensor_desc import TensorDesc
from ._common import Roles, _Description, _check_tensor, _check_type, _indices_like, _output_like, _set
from .quantized import QUANTIZED_TYPES

__all__ = ["RoiPoolingDesc", "AdaptiveMaxPoolingDesc", "AdaptiveAveragePoolingDesc"]


def _spatial_scale(value) -> float:
    """A positive number that stays positive and finite as the float32 ROI corners are scaled by."""
    scale = number(value, "spatial_scale", positive=True)
    with np.errstate(over="ignore", under="ignore"):
        as_f32 = np.float32(scale)
    if not (np.isfinite(as_f32) and as_f32 > 0):
        raise ValidationError(
            "spatial_scale",
            f"expected a positive number, finite and non-zero in float32 (corners are scaled in float32), got {shown(value)}",
        )
    return scale


@dataclass(frozen=True)
class RoiPoolingDesc(_Description):
    """DML_ROI_POOLING_OPERATOR_DESC: the max over each of ``pooled_size`` bins of each region
    of interest.

    ``input`` is {N, C, H, W} (FLOAT32, FLOAT16 or BFLOAT16); ``roi`` is {1, 1, R, 5} of the input's
    type, one ``[batch, x1, y1, x2, y2]`` per ROI (x along W, y along H, inclusive corners in
    the input's coordinates divided by ``spatial_scale``); ``output`` is {R, C, pooled_h,
    pooled_w}.  ``pooled_size`` is (height, width), the order of the output's spatial sizes
    (DirectML's DML_SIZE_2D lists the width first).

    Parameters
    ----------
    input, roi : TensorDesc
    output : TensorDesc, optional
        Default None: inferred.
    spatial_scale : float
        Positive, finite and non-zero in float32.
    pooled_size : sequence of int
        Two positive sizes (height, width).
    output_indices : TensorDesc or data type, optional, keyword-only
        An extension (not DirectML's): UINT32 or UINT64 flat indices of each bin's maximum
        in the input (as for MaxPooling1Desc; an empty bin gives 0); default None: not
        computed.

    $raises_window
    """

    input: TensorDesc
    roi: TensorDesc
    output: Optional[TensorDesc] = None
    _: KW_ONLY
    spatial_scale: float
    pooled_size: tuple
    output_indices: Optional[TensorDesc] = None

    kernel = "roi_pool"

    def __post_init__(self) -> None:
        input = _check_tensor(self.input, "input")
        _check_type(input, "input", FLOAT_TYPES)
        if input.rank != 4:
            raise ValidationError("input.sizes", f"ROI pooling takes a 4-D input {{N, C, H, W}}, got {input.sizes}")
        roi = _check_tensor(self.roi, "roi")
        if roi.data_type != input.data_type:
            raise ValidationError(
                "roi.data_type", f"expected the input's type {input.data_type.name}, got {roi.data_type.name}"
            )
        if roi.rank != 4 or roi.sizes[:2] != (1, 1) or roi.sizes[3] != 5:
            raise ValidationError("roi.sizes", f"expected {{1, 1, R, 5}} (one [batch, x1, y1, x2, y2] per ROI), got {roi.sizes}")
        pooled_size = integers(self.pooled_size, "pooled_size", 2, minimum=1)
        # The kernels tabulate each ROI's bins: 1 + 2 * (1 + pooled_h + pooled_w) u32 entries.
        table = roi.sizes[2] * (3 + 2 * sum(pooled_size))
        if table > U32_MAX:
            raise ValidationError(
                "pooled_size", f"{pooled_size} for {roi.sizes[2]} ROIs needs a bin table of {table} entries; "
                f"at most 2^32 - 1 (ROIs * (3 + 2 * (pooled_h + pooled_w)))",
            )
        out_sizes = (roi.sizes[2], input.sizes[1]) + pooled_size
        _set(
            self,
            spatial_scale=_spatial_scale(self.spatial_scale),
            pooled_size=pooled_size,
            output=_output_like(self.output, "output", out_sizes, input.data_type),
            output_indices=_indices_like(self.output_indices, out_sizes),
        )

    def input_tensors(self) -> Roles:
        return (("input", self.input), ("roi", self.roi))

    def output_tensors(self) -> Roles:
        return (("output", self.output), ("output_indices", self.output_indices))


class _AdaptivePooling(_Description):
    """Adaptive pooling (PyTorch's): along each spatial dimension, output ``i`` pools input
    ``[floor(i * in / out), ceil((i + 1) * in / out))``.  A poolgpu extension: DirectML has
    no such operator.

    ``output_size`` gives the output's spatial sizes: a sequence (``None`` entries keep the
    input's size, as in PyTorch), one int for every dimension, or ``None`` to take them from
    the given ``output``."""

    def _validate_adaptive(self, value_types) -> None:
        input = _check_tensor(self.input, "input")
        _check_type(input, "input", value_types)
        dims = input.rank - 2
        output_size = self.output_size
        if output_size is None:
            if self.output is None:
                raise ValidationError("output_size", "give the output's spatial sizes, or an output tensor")
            output = _check_tensor(self.output, "output")
            if output.rank != input.rank:
                raise ValidationError("output.sizes", f"expected {input.rank} dimensions like the input, got {output.sizes}")
            output_size = output.sizes[2:]
        elif is_integer(output_size):
            output_size = (output_size,) * dims
        else:
            output_size = sequence(output_size, "output_size", "integers (None keeps the input's size)")
            if len(output_size) == dims:
                output_size = tuple(size if s is None else s for s, size in zip(output_size, input.sizes[2:]))
        output_size = integers(output_size, "output_size", dims, minimum=1)
        # The kernels tabulate every bin's (start, end) along D, H and W (unit ones too) in
        # one row of u32-indexed entries.
        bins = sum(output_size) + 3 - dims
        if bins > COORDINATE_MAX:
            raise ValidationError(
                "output_size", f"{output_size} makes {bins} bins along all spatial dimensions together "
                f"(unit ones included); at most 2^31 - 1",
            )
        _set(
            self,
            output_size=output_size,
            output=_output_like(self.output, "output", input.sizes[:2] + output_size, input.data_type),
        )

    def input_tensors(self) -> Roles:
        return (("input", self.input),)


@dataclass(frozen=True)
class AdaptiveMaxPoolingDesc(_AdaptivePooling):
    """Adaptive max pooling (a poolgpu extension; see :class:`_AdaptivePooling`), with max
    pooling's rules and optional flat indices (``output_indices`` as for MaxPooling1Desc).

    Parameters
    ----------
    input : TensorDesc
    output : TensorDesc, optional
        Default None: inferred from ``output_size``.
    output_indices : TensorDesc or data type, optional
        As for MaxPooling1Desc.
    output_size : int or sequence of int or None, optional
        See :class:`_AdaptivePooling`; default None: the given output's spatial sizes.

    $raises_window
    """

    input: TensorDesc
    output: Optional[TensorDesc] = None
    output_indices: Optional[TensorDesc] = None
    _: KW_ONLY
    output_size: Optional[tuple] = None

    kernel = "adaptive_max_pool"

    def __post_init__(self) -> None:
        self._validate_adaptive(ALL_TYPES)
        _set(self, output_indices=_indices_like(self.output_indices, self.output.sizes))

    def output_tensors(self) -> Roles:
        return (("output", self.output), ("output_indices", self.output_indices))


@dataclass(frozen=True)
class AdaptiveAveragePoolingDesc(_AdaptivePooling):
    """Adaptive average pooling (a poolgpu extension; see :class:`_AdaptivePooling`):
    the mean of each bin, accumulated in float32.  INT8 and UINT8 values are averaged as
    PyTorch's quantized kernel averages a contiguous input (whose output shares its scale
    and zero point): ``round(float32(sum) * (1 / kD / kH / kW))``, the bin's sizes divided
    in float32, round() half to even (docs/semantics.md); there ``(in + 1) * out`` must
    stay below 2^32 along each dimension.

    Parameters
    ----------
    input : TensorDesc
    output : TensorDesc, optional
        Default None: inferred from ``output_size``.
    output_size : int or sequence of int or None, optional
        See :class:`_AdaptivePooling`; default None: the given output's spatial sizes.

    $raises_window
    """

    input: TensorDesc
    output: Optional[TensorDesc] = None
    _: KW_ONLY
    output_size: Optional[tuple] = None

    kernel = "adaptive_average_pool"

    def __post_init__(self) -> None:
        self._validate_adaptive(FLOAT_TYPES | QUANTIZED_TYPES)
        if self.input.data_type in QUANTIZED_TYPES:
            for size_in, size_out in zip(self.input.sizes[2:], self.output_size):
                if (size_in + 1) * size_out > U32_MAX:
                    raise ValidationError(
                        "output_size", f"integer adaptive averages need (in + 1) * out below 2^32 along each "
                        f"dimension, got in {size_in}, out {size_out}",
                    )

    def output_tensors(self) -> Roles:
        return (("output", self.output),)
