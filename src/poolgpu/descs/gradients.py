"""Training-side operators: the pooling gradients, max unpooling and its gradient, and
the gradients of Lp, ROI and adaptive pooling (poolgpu extensions)."""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass
from typing import Optional

from ..arguments import flag
from ..dtypes import ALL_TYPES, FLOAT_TYPES, INDEX_TYPES, DataType
from ..errors import ValidationError
from ..tensor_desc import TensorDesc
from ._common import (Roles, _check_divisor_fields, _check_tensor, _check_type, _Description, _output_like,
                      _pooling_window, _set, _WindowedDescription)
from .binned import AdaptiveMaxPoolingDesc, RoiPoolingDesc
from .pooling import LpPooling1Desc, MaxPooling2Desc

__all__ = [
    "MaxPoolingGradDesc", "AveragePoolingGradDesc", "MaxUnpoolingDesc", "AdaptiveMaxPoolingGradDesc",
    "AdaptiveAveragePoolingGradDesc", "MaxUnpoolingGradDesc", "LpPoolingGradDesc", "RoiPoolingGradDesc",
]


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
class MaxPoolingGradDesc(_WindowedDescription):
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

    $raises_window
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

    def __post_init__(self) -> None:
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

    def input_tensors(self) -> Roles:
        return (("input", self.input), ("input_gradient", self.input_gradient))

    def output_tensors(self) -> Roles:
        return (("output_gradient", self.output_gradient),)


@dataclass(frozen=True)
class LpPoolingGradDesc(_WindowedDescription):
    """The gradient of Lp pooling (a poolgpu extension; the windows of LpPooling1Desc):
    ``output_gradient`` (dx, the forward input's sizes) gathers, for each element ``x`` of
    a window with result ``y = (sum |x|^p)^(1/p)``, the window's ``input_gradient`` (dy)
    times ``d y / d x = sign(x) * (|x| / y)^(p - 1)``; 0 for a window of zeros.  A gather,
    in float32: deterministic.

    Parameters
    ----------
    input : TensorDesc
        The forward input x (FLOAT32, FLOAT16 or BFLOAT16).
    input_gradient : TensorDesc
        dy, the forward output's sizes.
    output_gradient : TensorDesc, optional
        dx; default None: a packed tensor of the input's sizes.
    window_size, strides, start_padding, end_padding, dilations, p
        The forward pass's, as for LpPooling1Desc.

    Raises
    ------
    ValidationError
        Naming the field (``window_size``, ``p``, ``input_gradient.sizes``, ...) that is
        malformed, out of range or inconsistent with the others; see docs/validation.md.
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
    p: float = 2

    kernel = "lp_pool_grad"

    def __post_init__(self) -> None:
        input = _check_tensor(self.input, "input")
        forward = LpPooling1Desc(
            input, window_size=self.window_size, strides=self.strides, start_padding=self.start_padding,
            end_padding=self.end_padding, dilations=self.dilations, p=self.p,
        )
        window = forward.window
        _set(
            self,
            window_size=window.window_size, strides=window.strides, dilations=window.dilations,
            start_padding=window.start_padding, end_padding=window.end_padding, p=forward.p,
            input_gradient=_input_gradient(self.input_gradient, forward.output.sizes, input.data_type),
            output_gradient=_output_like(self.output_gradient, "output_gradient", input.sizes, input.data_type),
            window=window, forward=forward,
        )

    def input_tensors(self) -> Roles:
        return (("input", self.input), ("input_gradient", self.input_gradient))

    def output_tensors(self) -> Roles:
        return (("output_gradient", self.output_gradient),)


@dataclass(frozen=True)
class RoiPoolingGradDesc(_Description):
    """The gradient of ROI pooling (a poolgpu extension; the bins of RoiPoolingDesc):
    ``output_gradient`` (dx, the input's sizes) is zero except that each bin's
    ``input_gradient`` (dy) is added at the bin's argmax under the forward max rule, as
    torchvision's ``roi_pool`` backward does.  A gather (each dx element visits the ROIs in
    order), in float32: deterministic.

    Parameters
    ----------
    input : TensorDesc
        The forward input x {N, C, H, W} (FLOAT32, FLOAT16 or BFLOAT16).
    roi : TensorDesc
        The forward pass's ROIs, {1, 1, R, 5} of the input's type.
    input_gradient : TensorDesc
        dy, the forward output's sizes {R, C, pooled_h, pooled_w}.
    output_gradient : TensorDesc, optional
        dx; default None: a packed tensor of the input's sizes.
    spatial_scale, pooled_size
        The forward pass's, as for RoiPoolingDesc.

    $raises_plain
    """

    input: TensorDesc
    roi: TensorDesc
    input_gradient: TensorDesc
    output_gradient: Optional[TensorDesc] = None
    _: KW_ONLY
    spatial_scale: float
    pooled_size: tuple

    kernel = "roi_pool_grad"

    def __post_init__(self) -> None:
        input = _check_tensor(self.input, "input")
        forward = RoiPoolingDesc(input, self.roi, output_indices=DataType.UINT32, spatial_scale=self.spatial_scale,
                                 pooled_size=self.pooled_size)
        _set(
            self,
            spatial_scale=forward.spatial_scale, pooled_size=forward.pooled_size,
            input_gradient=_input_gradient(self.input_gradient, forward.output.sizes, input.data_type),
            output_gradient=_output_like(self.output_gradient, "output_gradient", input.sizes, input.data_type),
            forward=forward,
        )

    def input_tensors(self) -> Roles:
        return (("input", self.input), ("roi", self.roi), ("input_gradient", self.input_gradient))

    def output_tensors(self) -> Roles:
        return (("output_gradient", self.output_gradient),)


@dataclass(frozen=True)
class AveragePoolingGradDesc(_WindowedDescription):
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

    $raises_window
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

    def __post_init__(self) -> None:
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

    def input_tensors(self) -> Roles:
        return (("input_gradient", self.input_gradient),)

    def output_tensors(self) -> Roles:
        return (("output_gradient", self.output_gradient),)


@dataclass(frozen=True)
class MaxUnpoolingDesc(_Description):
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

    $raises_window
    """

    input: TensorDesc
    indices: TensorDesc
    output: Optional[TensorDesc] = None

    kernel = "max_unpool"

    def __post_init__(self) -> None:
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

    def input_tensors(self) -> Roles:
        return (("input", self.input), ("indices", self.indices))

    def output_tensors(self) -> Roles:
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
class AdaptiveMaxPoolingGradDesc(_Description):
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

    $raises_tensors
    """

    input: TensorDesc
    input_gradient: TensorDesc
    output_gradient: Optional[TensorDesc] = None

    kernel = "adaptive_max_pool_grad"

    def __post_init__(self) -> None:
        input = _check_tensor(self.input, "input")
        _check_type(input, "input", FLOAT_TYPES)
        dy = _gradient_like(self.input_gradient, "input_gradient", input, "the input")
        forward = AdaptiveMaxPoolingDesc(input, output_indices=DataType.UINT32, output_size=dy.sizes[2:])
        _set(
            self,
            output_gradient=_output_like(self.output_gradient, "output_gradient", input.sizes, input.data_type),
            forward=forward,
        )

    def input_tensors(self) -> Roles:
        return (("input", self.input), ("input_gradient", self.input_gradient))

    def output_tensors(self) -> Roles:
        return (("output_gradient", self.output_gradient),)


@dataclass(frozen=True)
class AdaptiveAveragePoolingGradDesc(_Description):
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

    $raises_tensors
    """

    input_gradient: TensorDesc
    output_gradient: Optional[TensorDesc] = None

    kernel = "adaptive_average_pool_grad"

    def __post_init__(self) -> None:
        if self.output_gradient is None:
            raise ValidationError(
                "output_gradient",
                "must be given: its sizes are the forward input's, which cannot be derived from input_gradient",
            )
        dx = _check_tensor(self.output_gradient, "output_gradient")
        _check_type(dx, "output_gradient", FLOAT_TYPES)
        dx.check_no_aliasing("output_gradient.strides")
        _gradient_like(self.input_gradient, "input_gradient", dx, "output_gradient")

    def input_tensors(self) -> Roles:
        return (("input_gradient", self.input_gradient),)

    def output_tensors(self) -> Roles:
        return (("output_gradient", self.output_gradient),)


@dataclass(frozen=True)
class MaxUnpoolingGradDesc(_Description):
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

    $raises_tensors
    """

    input_gradient: TensorDesc
    indices: TensorDesc
    output_gradient: Optional[TensorDesc] = None

    kernel = "max_unpool_grad"

    def __post_init__(self) -> None:
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

    def input_tensors(self) -> Roles:
        return (("input_gradient", self.input_gradient), ("indices", self.indices))

    def output_tensors(self) -> Roles:
        return (("output_gradient", self.output_gradient),)
