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
    """Shared behaviour of the forward fixed-window pooling descriptions."""

    @property
    def dimension_count(self) -> int:
        return len(self.window_size)

    def _validate_forward(self, value_types, dilations=None) -> None:
        input = _check_tensor(self.input, "input")
        _check_type(input, "input", value_types)
        window = _pooling_window(self, input, dilations)
        out_sizes = input.sizes[:2] + window.output_spatial_sizes(input.sizes[2:])
        _set(self, output=_output_like(self.output, "output", out_sizes, input.data_type), window=window)

    def input_tensors(self):
        return (("input", self.input),)


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

    def output_tensors(self):
        return (("output", self.output),)


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
        self._validate_forward(ALL_TYPES, getattr(self, "dilations", None))
        _set(self, output_indices=_indices_like(self.output_indices, self.output.sizes))

    def output_tensors(self):
        return (("output", self.output), ("output_indices", self.output_indices))


@dataclass(frozen=True)
class MaxPooling2Desc(MaxPooling1Desc):
    """DML_MAX_POOLING2_OPERATOR_DESC: MaxPooling1 with dilations."""

    _: KW_ONLY
    dilations: Optional[tuple] = None

    def __post_init__(self):
        super().__post_init__()
        _set(self, dilations=self.window.dilations)


# ---------------------------------------------------------------------------------------
# Training-side operators: the pooling gradients and max unpooling


def _input_gradient(value, sizes: tuple, data_type: DataType) -> TensorDesc:
    """The incoming gradient dy: a given tensor of the forward output's sizes and type."""
    tensor = _check_tensor(value, "input_gradient")
    if tensor.data_type != data_type:
        raise ValidationError(
            "input_gradient.data_type", f"expected {data_type.name} (the forward tensors' type), got {tensor.data_type.name}"
        )
    if tensor.sizes != sizes:
        raise ValidationError(
            "input_gradient.sizes", f"expected {sizes} (the forward pass's output sizes), got {tensor.sizes}"
        )
    return tensor


@dataclass(frozen=True)
class MaxPoolingGradDesc:
    """DML_MAX_POOLING_GRAD_OPERATOR_DESC: ``output_gradient`` (dx, the forward input's sizes)
    is zero except that each window's ``input_gradient`` (dy) is added at the window's argmax
    under the forward max rule.  ``forward`` is the MaxPooling2 description (with UINT32
    indices) of the forward pass whose argmax the gradient follows."""

    input: TensorDesc
    input_gradient: TensorDesc
    output_gradient: Optional[TensorDesc] = None
    _: KW_ONLY
    window_size: tuple
    strides: Optional[tuple] = None
    start_padding: Optional[tuple] = None
    end_padding: Optional[tuple] = None
    dilations: Optional[tuple] = None

    kernel = "max_pool_grad"

    def __post_init__(self):
        input = _check_tensor(self.input, "input")
        _check_type(input, "input", FLOAT_TYPES)
        forward = MaxPooling2Desc(
            input, output_indices=DataType.UINT32, window_size=self.window_size, strides=self.strides,
            start_padding=self.start_padding, end_padding=self.end_padding, dilations=self.dilations,
        )
        window = forward.window
        _set(
            self,
            window_size=window.window_size, strides=window.strides, dilations=window.dilations,
            start_padding=window.start_padding, end_padding=window.end_padding,
            input_gradient=_input_gradient(self.input_gradient, forward.output.sizes, input.data_type),
            output_gradient=_output_like(self.output_gradient, "output_gradient", input.sizes, input.data_type),
            window=window, forward=forward,
        )

    @property
    def dimension_count(self) -> int:
        return len(self.window_size)

    def input_tensors(self):
        return (("input", self.input), ("input_gradient", self.input_gradient))

    def output_tensors(self):
        return (("output_gradient", self.output_gradient),)


@dataclass(frozen=True)
class AveragePoolingGradDesc:
    """DML_AVERAGE_POOLING_GRAD_OPERATOR_DESC: each window's ``input_gradient`` (dy) divided
    by the window's divisor is added to every input element the window covers.
    ``output_gradient`` (dx) must be given: its sizes are the forward input's, which the
    forward output's sizes do not determine."""

    input_gradient: TensorDesc
    output_gradient: Optional[TensorDesc] = None
    _: KW_ONLY
    window_size: tuple
    strides: Optional[tuple] = None
    start_padding: Optional[tuple] = None
    end_padding: Optional[tuple] = None
    dilations: Optional[tuple] = None
    include_padding: bool = False

    kernel = "average_pool_grad"

    def __post_init__(self):
        if self.output_gradient is None:
            raise ValidationError(
                "output_gradient",
                "must be given: its sizes are the forward input's, which cannot be derived from input_gradient",
            )
        dx = _check_tensor(self.output_gradient, "output_gradient")
        _check_type(dx, "output_gradient", FLOAT_TYPES)
        dx.check_no_aliasing("output_gradient.strides")
        if not isinstance(self.include_padding, (bool, np.bool_)):
            raise ValidationError("include_padding", f"expected a bool, got {self.include_padding!r}")
        window = _pooling_window(self, dx, self.dilations)
        out_sizes = dx.sizes[:2] + window.output_spatial_sizes(dx.sizes[2:])
        _set(
            self,
            dilations=window.dilations, include_padding=bool(self.include_padding),
            input_gradient=_input_gradient(self.input_gradient, out_sizes, dx.data_type),
            window=window,
        )

    @property
    def dimension_count(self) -> int:
        return len(self.window_size)

    def input_tensors(self):
        return (("input_gradient", self.input_gradient),)

    def output_tensors(self):
        return (("output_gradient", self.output_gradient),)


@dataclass(frozen=True)
class MaxUnpoolingDesc:
    """DML_MAX_UNPOOLING_OPERATOR_DESC: ``output`` is zero except
    ``output.flat[indices.flat[j]] = input.flat[j]`` (flat = logical row-major); where indices
    repeat the largest ``j`` wins, and indices outside the output are ignored.

    ``output`` must be given: unpooling cannot infer the forward input's sizes.  Its rank,
    N and C equal the input's; its spatial sizes are free."""

    input: TensorDesc
    indices: TensorDesc
    output: Optional[TensorDesc] = None

    kernel = "max_unpool"

    def __post_init__(self):
        input = _check_tensor(self.input, "input")
        _check_type(input, "input", ALL_TYPES)
        indices = _check_tensor(self.indices, "indices")
        _check_type(indices, "indices", INDEX_TYPES)
        if indices.sizes != input.sizes:
            raise ValidationError("indices.sizes", f"expected the input's sizes {input.sizes}, got {indices.sizes}")
        if self.output is None:
            raise ValidationError(
                "output", "must be given: the unpooled sizes cannot be inferred from the input "
                "(pg.max_unpool takes output_sizes)",
            )
        output = _check_tensor(self.output, "output")
        if output.data_type != input.data_type:
            raise ValidationError("output.data_type", f"expected {input.data_type.name}, got {output.data_type.name}")
        if output.rank != input.rank or output.sizes[:2] != input.sizes[:2]:
            raise ValidationError(
                "output.sizes",
                f"expected rank {input.rank} with N, C = {input.sizes[:2]} (the input's), got {output.sizes}",
            )
        output.check_no_aliasing("output.strides")

    def input_tensors(self):
        return (("input", self.input), ("indices", self.indices))

    def output_tensors(self):
        return (("output", self.output),)
