"""The fixed-window forward descriptions: max, average and Lp pooling, DirectML's versions."""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass
from typing import Optional

from ..arguments import flag, number
from ..dtypes import ALL_TYPES, FLOAT_TYPES
from ..tensor_desc import TensorDesc
from ._common import (Roles, _check_divisor_fields, _check_tensor, _check_type, _indices_like, _output_like,
                      _pooling_window, _set, _WindowedDescription)

__all__ = [
    "MaxPoolingDesc", "MaxPooling1Desc", "MaxPooling2Desc", "AveragePoolingDesc", "AveragePooling1Desc",
    "LpPoolingDesc", "LpPooling1Desc", "LP_MAX_P",
]


class _FixedWindowPooling(_WindowedDescription):
    """Shared behaviour of the forward fixed-window pooling descriptions.  Versions with a
    ``dilations`` field get it validated and filled in; the others pool undilated."""

    def _validate_forward(self, value_types) -> None:
        input = _check_tensor(self.input, "input")
        _check_type(input, "input", value_types)
        window = _pooling_window(self, input, getattr(self, "dilations", None))
        out_sizes = input.sizes[:2] + window.output_spatial_sizes(input.sizes[2:])
        _set(self, output=_output_like(self.output, "output", out_sizes, input.data_type), window=window)
        if hasattr(self, "dilations"):
            _set(self, dilations=window.dilations)

    def input_tensors(self) -> Roles:
        return (("input", self.input),)

    def output_tensors(self) -> Roles:
        return (("output", self.output),)


@dataclass(frozen=True)
class MaxPoolingDesc(_FixedWindowPooling):
    """DML_MAX_POOLING_OPERATOR_DESC.

    Parameters
    ----------
    $window_fields

    $raises_window
    """

    input: TensorDesc
    output: Optional[TensorDesc] = None
    _: KW_ONLY
    window_size: tuple
    strides: Optional[tuple] = None
    start_padding: Optional[tuple] = None
    end_padding: Optional[tuple] = None

    kernel = "max_pool"

    def __post_init__(self) -> None:
        self._validate_forward(ALL_TYPES)


@dataclass(frozen=True)
class MaxPooling1Desc(_FixedWindowPooling):
    """DML_MAX_POOLING1_OPERATOR_DESC: max pooling with optional flat indices of the maxima.

    ``output_indices`` may be a TensorDesc, or just an index data type (UINT32/UINT64) for
    a packed tensor of the output's sizes.

    Parameters
    ----------
    $window_fields
    output_indices : TensorDesc or data type, optional
        UINT32 or UINT64 flat indices of the maxima; default None: not computed.

    $raises_window
    """

    input: TensorDesc
    output: Optional[TensorDesc] = None
    output_indices: Optional[TensorDesc] = None
    _: KW_ONLY
    window_size: tuple
    strides: Optional[tuple] = None
    start_padding: Optional[tuple] = None
    end_padding: Optional[tuple] = None

    kernel = "max_pool"

    def __post_init__(self) -> None:
        self._validate_forward(ALL_TYPES)
        _set(self, output_indices=_indices_like(self.output_indices, self.output.sizes))

    def output_tensors(self) -> Roles:
        return (("output", self.output), ("output_indices", self.output_indices))


@dataclass(frozen=True)
class MaxPooling2Desc(MaxPooling1Desc):
    """DML_MAX_POOLING2_OPERATOR_DESC: MaxPooling1 with dilations.

    $dilated MaxPooling1Desc

    $raises_window
    """

    _: KW_ONLY
    dilations: Optional[tuple] = None


@dataclass(frozen=True)
class AveragePoolingDesc(_FixedWindowPooling):
    """DML_AVERAGE_POOLING_OPERATOR_DESC: the mean over each window.  The divisor is the
    window's element count when ``include_padding``, else the number of input elements the
    window covers.

    Parameters
    ----------
    $window_fields
    include_padding : bool, default False
        Divide by the window's size, padding included.
    counted_end_padding : sequence of int, optional, keyword-only
        An extension (not DirectML's) for ONNX's and PyTorch's divisors: per spatial
        dimension, how much of ``end_padding`` ``include_padding`` counts in the divisor
        (None, the default: all of it).  ONNX's and PyTorch's ``ceil_mode`` extend the end
        padding without counting the extension.
    divisor_override : int, optional, keyword-only
        An extension (not DirectML's): a positive integer every window's sum is divided by,
        as PyTorch's ``divisor_override``; ``include_padding`` is then irrelevant.

    $raises_window
    """

    input: TensorDesc
    output: Optional[TensorDesc] = None
    _: KW_ONLY
    window_size: tuple
    strides: Optional[tuple] = None
    start_padding: Optional[tuple] = None
    end_padding: Optional[tuple] = None
    include_padding: bool = False
    counted_end_padding: Optional[tuple] = None
    divisor_override: Optional[int] = None

    kernel = "average_pool"

    def __post_init__(self) -> None:
        self._validate_forward(FLOAT_TYPES)
        _set(self, include_padding=flag(self.include_padding, "include_padding"))
        _check_divisor_fields(self, self.window)


@dataclass(frozen=True)
class AveragePooling1Desc(AveragePoolingDesc):
    """DML_AVERAGE_POOLING1_OPERATOR_DESC: AveragePooling with dilations.

    $dilated AveragePoolingDesc

    $raises_window
    """

    _: KW_ONLY
    dilations: Optional[tuple] = None


# The largest p Lp pooling computes: lp_pool.wgsl sums |x|^p scaled so that the largest
# |x| lies in [0.5, 1), its term at least 2^-p; terms below 2^-126 flush to zero.  Up to
# p = 64 the n flushed ones change the sum by less than n * 2^-62 of it (under float32's
# rounding for any window of at most 2^32 elements); at p = 126 a term of 0.499 * 2^e
# already vanishes.  (p = 64 gives the max |x| to within 2^(4/64) - 1 = 4.4 %.)
LP_MAX_P = 64


@dataclass(frozen=True)
class LpPoolingDesc(_FixedWindowPooling):
    """DML_LP_POOLING_OPERATOR_DESC: ``(sum |x|^p)^(1/p)`` over the input elements of each
    window.  ``p`` is any number from 1 to 64 (DirectML takes integers).

    Parameters
    ----------
    $window_fields
    p : float, default 2
        From 1 to 64.

    $raises_window
    """

    input: TensorDesc
    output: Optional[TensorDesc] = None
    _: KW_ONLY
    window_size: tuple
    strides: Optional[tuple] = None
    start_padding: Optional[tuple] = None
    end_padding: Optional[tuple] = None
    p: float = 2

    kernel = "lp_pool"

    def __post_init__(self) -> None:
        self._validate_forward(FLOAT_TYPES)
        _set(self, p=number(self.p, "p", minimum=1, maximum=LP_MAX_P))


@dataclass(frozen=True)
class LpPooling1Desc(LpPoolingDesc):
    """DML_LP_POOLING1_OPERATOR_DESC: LpPooling with dilations.

    $dilated LpPoolingDesc

    $raises_window
    """

    _: KW_ONLY
    dilations: Optional[tuple] = None
