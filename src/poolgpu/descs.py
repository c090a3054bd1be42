"""Operator descriptions: frozen dataclasses named after DirectML's structs.

Each description validates itself when it is made (raising ValidationError naming the
field) and fills in what was left out: per-dimension defaults and inferred output tensors.
A made description is therefore always valid, and the kernel layer reads it without
re-checking.  Besides its public fields every description answers:

- ``kernel``: the registry key of the shader variant that computes it;
- ``input_tensors()`` / ``output_tensors()``: ``(role, TensorDesc or None)`` pairs in call
  and return order (None for an optional output that was not asked for);
- ``window``: the validated :class:`~poolgpu.shapes.Window` (fixed-window operators).
"""

from __future__ import annotations

import math
from dataclasses import KW_ONLY, dataclass
from typing import Optional

import numpy as np

from .dtypes import ALL_TYPES, FLOAT_TYPES, INDEX_TYPES, DataType
from .errors import ValidationError
from .shapes import Window, make_window
from .tensor_desc import TensorDesc


def _set(desc, **fields) -> None:
    for name, value in fields.items():
        object.__setattr__(desc, name, value)


def _check_tensor(value, field: str) -> TensorDesc:
    if not isinstance(value, TensorDesc):
        raise ValidationError(field, f"expected a TensorDesc, got {type(value).__name__}")
    return value


def _check_type(tensor: TensorDesc, field: str, allowed) -> None:
    if tensor.data_type not in allowed:
        names = ", ".join(t.name for t in DataType if t in allowed)
        raise ValidationError(
            f"{field}.data_type", f"{tensor.data_type.name} is not supported here; expected one of {names}"
        )


def _output_like(value, field: str, sizes: tuple, data_type: DataType) -> TensorDesc:
    """The given output (checked against the expected sizes and type) or a packed inferred one."""
    if value is None:
        return TensorDesc(data_type, sizes)
    tensor = _check_tensor(value, field)
    if tensor.data_type != data_type:
        raise ValidationError(
            f"{field}.data_type", f"expected {data_type.name}, got {tensor.data_type.name}"
        )
    if tensor.sizes != sizes:
        raise ValidationError(f"{field}.sizes", f"expected {sizes} (from the pooling formula), got {tensor.sizes}")
    tensor.check_no_aliasing(f"{field}.strides")
    return tensor


def _indices_like(value, sizes: tuple) -> Optional[TensorDesc]:
    """output_indices: None (not computed), a TensorDesc, or a data type (a packed tensor of it)."""
    if value is None:
        return None
    if not isinstance(value, TensorDesc):
        value = TensorDesc(DataType.of(value, "output_indices"), sizes)
    _check_type(value, "output_indices", INDEX_TYPES)
    return _output_like(value, "output_indices", sizes, value.data_type)


def _pooling_window(desc, input: TensorDesc, dilations=None) -> Window:
    """Validate the window fields of a fixed-window pooling description against its input."""
    window = make_window(desc.window_size, desc.strides, desc.start_padding, desc.end_padding, dilations)
    if window.dims != input.rank - 2:
        raise ValidationError(
            "window_size",
            f"{window.dims} spatial dimensions given, but the input {input.sizes} has {input.rank - 2} "
            f"(dimension_count must equal the input's rank - 2)",
        )
    window.check_windows_cover_input(input.sizes[2:])
    _set(
        desc,
        window_size=window.window_size,
        strides=window.strides,
        start_padding=window.start_padding,
        end_padding=window.end_padding,
    )
    return window


class _FixedWindowPooling:
    """Shared behaviour of the forward fixed-window pooling descriptions.  Versions with a
    ``dilations`` field get it validated and filled in; the others pool undilated."""

    @property
    def dimension_count(self) -> int:
        return len(self.window_size)

    def _validate_forward(self, value_types) -> None:
        input = _check_tensor(self.input, "input")
        _check_type(input, "input", value_types)
        window = _pooling_window(self, input, getattr(self, "dilations", None))
        out_sizes = input.sizes[:2] + window.output_spatial_sizes(input.sizes[2:])
        _set(self, output=_output_like(self.output, "output", out_sizes, input.data_type), window=window)
        if hasattr(self, "dilations"):
            _set(self, dilations=window.dilations)

    def input_tensors(self):
        return (("input", self.input),)

    def output_tensors(self):
        return (("output", self.output),)


def _check_bool(value, field: str) -> bool:
    if isinstance(value, (bool, np.bool_)) or (isinstance(value, (int, np.integer)) and value in (0, 1)):
        return bool(value)
    raise ValidationError(field, f"expected a boolean, got {value!r}")


def _check_p(value) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValidationError("p", f"expected a number >= 1, got {value!r}")
    if not (math.isfinite(value) and value >= 1):
        raise ValidationError("p", f"expected a finite number >= 1, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class MaxPoolingDesc(_FixedWindowPooling):
    """DML_MAX_POOLING_OPERATOR_DESC."""

    input: TensorDesc
    output: Optional[TensorDesc] = None
    _: KW_ONLY
    window_size: tuple
    strides: Optional[tuple] = None
    start_padding: Optional[tuple] = None
    end_padding: Optional[tuple] = None

    kernel = "max_pool"

    def __post_init__(self):
        self._validate_forward(ALL_TYPES)


@dataclass(frozen=True)
class MaxPooling1Desc(_FixedWindowPooling):
    """DML_MAX_POOLING1_OPERATOR_DESC: max pooling with optional flat indices of the maxima.

    ``output_indices`` may be a TensorDesc, or just an index data type (UINT32/UINT64) for
    a packed tensor of the output's sizes."""

    input: TensorDesc
    output: Optional[TensorDesc] = None
    output_indices: Optional[TensorDesc] = None
    _: KW_ONLY
    window_size: tuple
    strides: Optional[tuple] = None
    start_padding: Optional[tuple] = None
    end_padding: Optional[tuple] = None

    kernel = "max_pool"

    def __post_init__(self):
        self._validate_forward(ALL_TYPES)
        _set(self, output_indices=_indices_like(self.output_indices, self.output.sizes))

    def output_tensors(self):
        return (("output", self.output), ("output_indices", self.output_indices))


@dataclass(frozen=True)
class MaxPooling2Desc(MaxPooling1Desc):
    """DML_MAX_POOLING2_OPERATOR_DESC: MaxPooling1 with dilations."""

    _: KW_ONLY
    dilations: Optional[tuple] = None


@dataclass(frozen=True)
class AveragePoolingDesc(_FixedWindowPooling):
    """DML_AVERAGE_POOLING_OPERATOR_DESC: the mean over each window.  The divisor is the
    window's element count when ``include_padding``, else the number of input elements the
    window covers."""

    input: TensorDesc
    output: Optional[TensorDesc] = None
    _: KW_ONLY
    window_size: tuple
    strides: Optional[tuple] = None
    start_padding: Optional[tuple] = None
    end_padding: Optional[tuple] = None
    include_padding: bool = False

    kernel = "average_pool"

    def __post_init__(self):
        self._validate_forward(FLOAT_TYPES)
        _set(self, include_padding=_check_bool(self.include_padding, "include_padding"))


@dataclass(frozen=True)
class AveragePooling1Desc(AveragePoolingDesc):
    """DML_AVERAGE_POOLING1_OPERATOR_DESC: AveragePooling with dilations."""

    _: KW_ONLY
    dilations: Optional[tuple] = None


@dataclass(frozen=True)
class LpPoolingDesc(_FixedWindowPooling):
    """DML_LP_POOLING_OPERATOR_DESC: ``(sum |x|^p)^(1/p)`` over the input elements of each
    window.  ``p`` is any finite number >= 1 (DirectML takes integers)."""

    input: TensorDesc
    output: Optional[TensorDesc] = None
    _: KW_ONLY
    window_size: tuple
    strides: Optional[tuple] = None
    start_padding: Optional[tuple] = None
    end_padding: Optional[tuple] = None
    p: float = 2

    kernel = "lp_pool"

    def __post_init__(self):
        self._validate_forward(FLOAT_TYPES)
        _set(self, p=_check_p(self.p))


@dataclass(frozen=True)
class LpPooling1Desc(LpPoolingDesc):
    """DML_LP_POOLING1_OPERATOR_DESC: LpPooling with dilations."""

    _: KW_ONLY
    dilations: Optional[tuple] = None
