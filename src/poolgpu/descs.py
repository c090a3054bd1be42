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

from .arguments import COORDINATE_MAX, U32_MAX, flag, integer, integers, is_integer, number, sequence, shown
from .dtypes import ALL_TYPES, FLOAT_TYPES, INDEX_TYPES, DataType
from .errors import ValidationError
from .shapes import Window, make_window
from .tensor_desc import TensorDesc

__all__ = [
    "MaxPoolingDesc", "MaxPooling1Desc", "MaxPooling2Desc", "AveragePoolingDesc", "AveragePooling1Desc",
    "LpPoolingDesc", "LpPooling1Desc", "RoiPoolingDesc", "AdaptiveMaxPoolingDesc", "AdaptiveAveragePoolingDesc",
    "MaxPoolingGradDesc", "AveragePoolingGradDesc", "MaxUnpoolingDesc", "described",
]


def _set(desc, **fields) -> None:
    for name, value in fields.items():
        object.__setattr__(desc, name, value)


def _check_tensor(value, field: str) -> TensorDesc:
    if not isinstance(value, TensorDesc):
        raise ValidationError(field, f"expected a TensorDesc, got {type(value).__name__}")
    return value


def described(data_type, sizes, field: str) -> TensorDesc:
    """A packed TensorDesc of ``sizes`` that poolgpu infers (an output, a function's
    ``output_sizes``), its errors about the sizes named ``field`` (e.g. ``output.sizes``):
    the field or argument the sizes come from.

    Raises
    ------
    ValidationError
        Naming ``field`` where the sizes make no tensor (e.g. over 2^32 - 1 elements).
    """
    try:
        return TensorDesc(data_type, sizes)
    except ValidationError as exc:
        if exc.field != "sizes":
            raise
        raise ValidationError(field, str(exc).split(": ", 1)[1]) from None


def _check_type(tensor: TensorDesc, field: str, allowed) -> None:
    if tensor.data_type not in allowed:
        names = ", ".join(t.name for t in DataType if t in allowed)
        raise ValidationError(
            f"{field}.data_type", f"{tensor.data_type.name} is not supported here; expected one of {names}"
        )


def _output_like(value, field: str, sizes: tuple, data_type: DataType) -> TensorDesc:
    """The given output (checked against the expected sizes and type) or a packed inferred one."""
    if value is None:
        return described(data_type, sizes, f"{field}.sizes")
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
        value = described(DataType.of(value, "output_indices"), sizes, "output_indices.sizes")
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


@dataclass(frozen=True)
class MaxPoolingDesc(_FixedWindowPooling):
    """DML_MAX_POOLING_OPERATOR_DESC.

    Parameters
    ----------
    input : TensorDesc
        {N, C, [D,] [H,] W}.
    output : TensorDesc, optional
        Default None: a packed tensor of the input's type and the formula's sizes.
    window_size : sequence of int
        One positive size per spatial dimension (``dimension_count`` of them).
    strides : sequence of int, optional
        Positive; default None: all 1.
    start_padding, end_padding : sequence of int, optional
        Non-negative; default None: all 0.

    Raises
    ------
    ValidationError
        Naming the field (``window_size``, ``output.sizes``, ``input.data_type``, ...) that
        is malformed, out of range (DirectML's u32 fields; window extents and padded sizes
        at most 2^31 - 1) or inconsistent with the others; see docs/validation.md.
    """

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
    a packed tensor of the output's sizes.

    Parameters
    ----------
    input : TensorDesc
        {N, C, [D,] [H,] W}.
    output : TensorDesc, optional
        Default None: a packed tensor of the input's type and the formula's sizes.
    window_size : sequence of int
        One positive size per spatial dimension (``dimension_count`` of them).
    strides : sequence of int, optional
        Positive; default None: all 1.
    start_padding, end_padding : sequence of int, optional
        Non-negative; default None: all 0.
    output_indices : TensorDesc or data type, optional
        UINT32 or UINT64 flat indices of the maxima; default None: not computed.

    Raises
    ------
    ValidationError
        Naming the field (``window_size``, ``output.sizes``, ``input.data_type``, ...) that
        is malformed, out of range (DirectML's u32 fields; window extents and padded sizes
        at most 2^31 - 1) or inconsistent with the others; see docs/validation.md.
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

    def __post_init__(self):
        self._validate_forward(ALL_TYPES)
        _set(self, output_indices=_indices_like(self.output_indices, self.output.sizes))

    def output_tensors(self):
        return (("output", self.output), ("output_indices", self.output_indices))


@dataclass(frozen=True)
class MaxPooling2Desc(MaxPooling1Desc):
    """DML_MAX_POOLING2_OPERATOR_DESC: MaxPooling1 with dilations.

    Parameters
    ----------
    dilations : sequence of int, optional
        Positive; default None: all 1.  The other fields are MaxPooling1Desc's.

    Raises
    ------
    ValidationError
        Naming the field (``window_size``, ``output.sizes``, ``input.data_type``, ...) that
        is malformed, out of range (DirectML's u32 fields; window extents and padded sizes
        at most 2^31 - 1) or inconsistent with the others; see docs/validation.md.
    """

    _: KW_ONLY
    dilations: Optional[tuple] = None


def _check_divisor_fields(desc, window: Window) -> None:
    """Validate and fill in the average descriptions' divisor extensions:
    ``counted_end_padding`` (None: all of ``end_padding``) and ``divisor_override``."""
    counted = desc.counted_end_padding
    if counted is None:
        counted = window.end_padding
    else:
        counted = integers(counted, "counted_end_padding", window.dims, minimum=0)
        if any(c < 0 or c > e for c, e in zip(counted, window.end_padding)):
            raise ValidationError(
                "counted_end_padding",
                f"every value must lie between 0 and the end padding {window.end_padding}, got {counted}",
            )
    override = desc.divisor_override
    if override is not None:
        override = integer(override, "divisor_override", minimum=1)
    _set(desc, counted_end_padding=counted, divisor_override=override)


@dataclass(frozen=True)
class AveragePoolingDesc(_FixedWindowPooling):
    """DML_AVERAGE_POOLING_OPERATOR_DESC: the mean over each window.  The divisor is the
    window's element count when ``include_padding``, else the number of input elements the
    window covers.

    Parameters
    ----------
    input : TensorDesc
        {N, C, [D,] [H,] W}.
    output : TensorDesc, optional
        Default None: a packed tensor of the input's type and the formula's sizes.
    window_size : sequence of int
        One positive size per spatial dimension (``dimension_count`` of them).
    strides : sequence of int, optional
        Positive; default None: all 1.
    start_padding, end_padding : sequence of int, optional
        Non-negative; default None: all 0.
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

    Raises
    ------
    ValidationError
        Naming the field (``window_size``, ``output.sizes``, ``input.data_type``, ...) that
        is malformed, out of range (DirectML's u32 fields; window extents and padded sizes
        at most 2^31 - 1) or inconsistent with the others; see docs/validation.md.
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

    def __post_init__(self):
        self._validate_forward(FLOAT_TYPES)
        _set(self, include_padding=flag(self.include_padding, "include_padding"))
        _check_divisor_fields(self, self.window)


@dataclass(frozen=True)
class AveragePooling1Desc(AveragePoolingDesc):
    """DML_AVERAGE_POOLING1_OPERATOR_DESC: AveragePooling with dilations.

    Parameters
    ----------
    dilations : sequence of int, optional
        Positive; default None: all 1.  The other fields are AveragePoolingDesc's.

    Raises
    ------
    ValidationError
        Naming the field (``window_size``, ``output.sizes``, ``input.data_type``, ...) that
        is malformed, out of range (DirectML's u32 fields; window extents and padded sizes
        at most 2^31 - 1) or inconsistent with the others; see docs/validation.md.
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
    input : TensorDesc
        {N, C, [D,] [H,] W}.
    output : TensorDesc, optional
        Default None: a packed tensor of the input's type and the formula's sizes.
    window_size : sequence of int
        One positive size per spatial dimension (``dimension_count`` of them).
    strides : sequence of int, optional
        Positive; default None: all 1.
    start_padding, end_padding : sequence of int, optional
        Non-negative; default None: all 0.
    p : float, default 2
        From 1 to 64.

    Raises
    ------
    ValidationError
        Naming the field (``window_size``, ``output.sizes``, ``input.data_type``, ...) that
        is malformed, out of range (DirectML's u32 fields; window extents and padded sizes
        at most 2^31 - 1) or inconsistent with the others; see docs/validation.md.
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

    def __post_init__(self):
        self._validate_forward(FLOAT_TYPES)
        _set(self, p=number(self.p, "p", minimum=1, maximum=LP_MAX_P))


@dataclass(frozen=True)
class LpPooling1Desc(LpPoolingDesc):
    """DML_LP_POOLING1_OPERATOR_DESC: LpPooling with dilations.

    Parameters
    ----------
    dilations : sequence of int, optional
        Positive; default None: all 1.  The other fields are LpPoolingDesc's.

    Raises
    ------
    ValidationError
        Naming the field (``window_size``, ``output.sizes``, ``input.data_type``, ...) that
        is malformed, out of range (DirectML's u32 fields; window extents and padded sizes
        at most 2^31 - 1) or inconsistent with the others; see docs/validation.md.
    """

    _: KW_ONLY
    dilations: Optional[tuple] = None


# ---------------------------------------------------------------------------------------
# Variable-window pooling: each output pools its own bin, not a window of fixed geometry.


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
class RoiPoolingDesc:
    """DML_ROI_POOLING_OPERATOR_DESC: the max over each of ``pooled_size`` bins of each region
    of interest.

    ``input`` is {N, C, H, W} (FLOAT32 or FLOAT16); ``roi`` is {1, 1, R, 5} of the input's
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

    Raises
    ------
    ValidationError
        Naming the field (``window_size``, ``output.sizes``, ``input.data_type``, ...) that
        is malformed, out of range (DirectML's u32 fields; window extents and padded sizes
        at most 2^31 - 1) or inconsistent with the others; see docs/validation.md.
    """

    input: TensorDesc
    roi: TensorDesc
    output: Optional[TensorDesc] = None
    _: KW_ONLY
    spatial_scale: float
    pooled_size: tuple

    kernel = "roi_pool"

    def __post_init__(self):
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
        )

    def input_tensors(self):
        return (("input", self.input), ("roi", self.roi))

    def output_tensors(self):
        return (("output", self.output),)


class _AdaptivePooling:
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

    def input_tensors(self):
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

    Raises
    ------
    ValidationError
        Naming the field (``window_size``, ``output.sizes``, ``input.data_type``, ...) that
        is malformed, out of range (DirectML's u32 fields; window extents and padded sizes
        at most 2^31 - 1) or inconsistent with the others; see docs/validation.md.
    """

    input: TensorDesc
    output: Optional[TensorDesc] = None
    output_indices: Optional[TensorDesc] = None
    _: KW_ONLY
    output_size: Optional[tuple] = None

    kernel = "adaptive_max_pool"

    def __post_init__(self):
        self._validate_adaptive(ALL_TYPES)
        _set(self, output_indices=_indices_like(self.output_indices, self.output.sizes))

    def output_tensors(self):
        return (("output", self.output), ("output_indices", self.output_indices))


@dataclass(frozen=True)
class AdaptiveAveragePoolingDesc(_AdaptivePooling):
    """Adaptive average pooling (a poolgpu extension; see :class:`_AdaptivePooling`):
    the mean of each bin, accumulated in float32.

    Parameters
    ----------
    input : TensorDesc
    output : TensorDesc, optional
        Default None: inferred from ``output_size``.
    output_size : int or sequence of int or None, optional
        See :class:`_AdaptivePooling`; default None: the given output's spatial sizes.

    Raises
    ------
    ValidationError
        Naming the field (``window_size``, ``output.sizes``, ``input.data_type``, ...) that
        is malformed, out of range (DirectML's u32 fields; window extents and padded sizes
        at most 2^31 - 1) or inconsistent with the others; see docs/validation.md.
    """

    input: TensorDesc
    output: Optional[TensorDesc] = None
    _: KW_ONLY
    output_size: Optional[tuple] = None

    kernel = "adaptive_average_pool"

    def __post_init__(self):
        self._validate_adaptive(FLOAT_TYPES)

    def output_tensors(self):
        return (("output", self.output),)


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
    indices) of the forward pass whose argmax the gradient follows.

    Parameters
    ----------
    input : TensorDesc
        The forward input x (FLOAT32 or FLOAT16).
    input_gradient : TensorDesc
        dy, the forward output's sizes.
    output_gradient : TensorDesc, optional
        dx; default None: a packed tensor of the input's sizes.
    window_size, strides, start_padding, end_padding, dilations
        The forward pass's, as for MaxPooling2Desc.

    Raises
    ------
    ValidationError
        Naming the field (``window_size``, ``output.sizes``, ``input.data_type``, ...) that
        is malformed, out of range (DirectML's u32 fields; window extents and padded sizes
        at most 2^31 - 1) or inconsistent with the others; see docs/validation.md.
    """

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
    forward output's sizes do not determine.

    Parameters
    ----------
    input_gradient : TensorDesc
        dy, the forward output's sizes.
    output_gradient : TensorDesc
        dx, the forward input's sizes (required).
    window_size, strides, start_padding, end_padding, dilations, include_padding
        The forward pass's, as for AveragePooling1Desc.
    counted_end_padding, divisor_override : optional, keyword-only
        The forward pass's divisor extensions, as for AveragePoolingDesc.

    Raises
    ------
    ValidationError
        Naming the field (``window_size``, ``output.sizes``, ``input.data_type``, ...) that
        is malformed, out of range (DirectML's u32 fields; window extents and padded sizes
        at most 2^31 - 1) or inconsistent with the others; see docs/validation.md.
    """

    input_gradient: TensorDesc
    output_gradient: Optional[TensorDesc] = None
    _: KW_ONLY
    window_size: tuple
    strides: Optional[tuple] = None
    start_padding: Optional[tuple] = None
    end_padding: Optional[tuple] = None
    dilations: Optional[tuple] = None
    include_padding: bool = False
    counted_end_padding: Optional[tuple] = None
    divisor_override: Optional[int] = None

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
        window = _pooling_window(self, dx, self.dilations)
        out_sizes = dx.sizes[:2] + window.output_spatial_sizes(dx.sizes[2:])
        _set(
            self,
            dilations=window.dilations, include_padding=flag(self.include_padding, "include_padding"),
            input_gradient=_input_gradient(self.input_gradient, out_sizes, dx.data_type),
            window=window,
        )
        _check_divisor_fields(self, window)

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
    N and C equal the input's; its spatial sizes are free.

    Parameters
    ----------
    input : TensorDesc
    indices : TensorDesc
        UINT32 or UINT64, the input's sizes.
    output : TensorDesc
        Required.

    Raises
    ------
    ValidationError
        Naming the field (``window_size``, ``output.sizes``, ``input.data_type``, ...) that
        is malformed, out of range (DirectML's u32 fields; window extents and padded sizes
        at most 2^31 - 1) or inconsistent with the others; see docs/validation.md.
    """

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


# ---------------------------------------------------------------------------------------
# Gradients of adaptive pooling and of max unpooling (poolgpu extensions)


def _gradient_like(value, field: str, like: TensorDesc, what: str) -> TensorDesc:
    """A gradient tensor whose rank, N and C must be ``like``'s (its spatial sizes are free)."""
    tensor = _check_tensor(value, field)
    if tensor.data_type != like.data_type:
        raise ValidationError(f"{field}.data_type", f"expected {like.data_type.name} ({what}'s type), got "
                                                    f"{tensor.data_type.name}")
    if tensor.rank != like.rank or tensor.sizes[:2] != like.sizes[:2]:
        raise ValidationError(
            f"{field}.sizes", f"expected rank {like.rank} with N, C = {like.sizes[:2]} ({what}'s), got {tensor.sizes}"
        )
    return tensor


@dataclass(frozen=True)
class AdaptiveMaxPoolingGradDesc:
    """The gradient of adaptive max pooling (a poolgpu extension; the bins of
    :class:`AdaptiveMaxPoolingDesc`): ``output_gradient`` (dx, the forward input's sizes) is
    zero except that each bin's ``input_gradient`` (dy) is added at the bin's argmax under
    the forward max rule (ties to the lowest flat index, NaN above every number, its first
    NaN).  Deterministic.

    Parameters
    ----------
    input : TensorDesc
        The forward input x (FLOAT32 or FLOAT16).
    input_gradient : TensorDesc
        dy, the gradient of the forward output: x's type, rank, N and C; its spatial sizes
        are the forward ``output_size``.
    output_gradient : TensorDesc, optional
        dx, x's sizes and type; None for a packed one.
    """

    input: TensorDesc
    input_gradient: TensorDesc
    output_gradient: Optional[TensorDesc] = None

    kernel = "adaptive_max_pool_grad"

    def __post_init__(self):
        input = _check_tensor(self.input, "input")
        _check_type(input, "input", FLOAT_TYPES)
        dy = _gradient_like(self.input_gradient, "input_gradient", input, "the input")
        forward = AdaptiveMaxPoolingDesc(input, output_indices=DataType.UINT32, output_size=dy.sizes[2:])
        _set(
            self,
            output_gradient=_output_like(self.output_gradient, "output_gradient", input.sizes, input.data_type),
            forward=forward,
        )

    def input_tensors(self):
        return (("input", self.input), ("input_gradient", self.input_gradient))

    def output_tensors(self):
        return (("output_gradient", self.output_gradient),)


@dataclass(frozen=True)
class AdaptiveAveragePoolingGradDesc:
    """The gradient of adaptive average pooling (a poolgpu extension; the bins of
    :class:`AdaptiveAveragePoolingDesc`): each bin's ``input_gradient`` (dy) divided by its
    element count is added to every element of ``output_gradient`` (dx) the bin covers,
    in float32.  Deterministic.

    Parameters
    ----------
    input_gradient : TensorDesc
        dy (FLOAT32 or FLOAT16), the gradient of the forward output.
    output_gradient : TensorDesc
        dx, the forward input's sizes: must be given (dy's sizes do not determine them);
        dy's type, rank, N and C.
    """

    input_gradient: TensorDesc
    output_gradient: Optional[TensorDesc] = None

    kernel = "adaptive_average_pool_grad"

    def __post_init__(self):
        if self.output_gradient is None:
            raise ValidationError(
                "output_gradient",
                "must be given: its sizes are the forward input's, which cannot be derived from input_gradient",
            )
        dx = _check_tensor(self.output_gradient, "output_gradient")
        _check_type(dx, "output_gradient", FLOAT_TYPES)
        dx.check_no_aliasing("output_gradient.strides")
        _gradient_like(self.input_gradient, "input_gradient", dx, "output_gradient")

    def input_tensors(self):
        return (("input_gradient", self.input_gradient),)

    def output_tensors(self):
        return (("output_gradient", self.output_gradient),)


@dataclass(frozen=True)
class MaxUnpoolingGradDesc:
    """The gradient of max unpooling (a poolgpu extension; see :class:`MaxUnpoolingDesc`):
    ``output_gradient.flat[j] = input_gradient.flat[indices.flat[j]]`` where input element j
    reached the unpooled output, else 0: where its index lies outside ``input_gradient`` or
    a larger j has the same index.  Indices are flat logical positions over the whole
    unpooled output, N and C included.  Deterministic.

    Parameters
    ----------
    input_gradient : TensorDesc
        dy, the gradient of the unpooled output (any of the ten types).
    indices : TensorDesc
        The unpooling's indices (UINT32 or UINT64), the sizes of its input: dy's rank, N
        and C.
    output_gradient : TensorDesc, optional
        dx, the indices' sizes and dy's type; None for a packed one.
    """

    input_gradient: TensorDesc
    indices: TensorDesc
    output_gradient: Optional[TensorDesc] = None

    kernel = "max_unpool_grad"

    def __post_init__(self):
        dy = _check_tensor(self.input_gradient, "input_gradient")
        _check_type(dy, "input_gradient", ALL_TYPES)
        indices = _check_tensor(self.indices, "indices")
        _check_type(indices, "indices", INDEX_TYPES)
        if indices.rank != dy.rank or indices.sizes[:2] != dy.sizes[:2]:
            raise ValidationError(
                "indices.sizes", f"expected rank {dy.rank} with N, C = {dy.sizes[:2]} (input_gradient's), "
                                 f"got {indices.sizes}",
            )
        _set(self, output_gradient=_output_like(self.output_gradient, "output_gradient", indices.sizes, dy.data_type))

    def input_tensors(self):
        return (("input_gradient", self.input_gradient), ("indices", self.indices))

    def output_tensors(self):
        return (("output_gradient", self.output_gradient),)
