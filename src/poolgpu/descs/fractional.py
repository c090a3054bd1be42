"""Fractional max pooling (PyTorch's, after Graham 2014) and its gradient: windows of a fixed
size whose starts each (n, c) plane draws from its own samples (poolgpu extensions)."""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass
from typing import Optional

import numpy as np

from ..arguments import U32_MAX, integers, is_integer
from ..dtypes import ALL_TYPES, FLOAT_TYPES, DataType
from ..errors import ValidationError
from ..tensor_desc import TensorDesc
from ._common import Roles, _check_tensor, _check_type, _Description, _indices_like, _output_like, _set

__all__ = ["FractionalMaxPoolingDesc", "FractionalMaxPoolingGradDesc", "SAMPLE_ORDER", "alpha", "rounded",
           "window_starts"]

#: Which entry of a plane's samples each spatial dimension takes, by number of spatial
#: dimensions, in PyTorch's order (torch 2.13): 2D (W, H), 3D (D, H, W).
SAMPLE_ORDER = {2: {"h": 1, "w": 0}, 3: {"d": 0, "h": 1, "w": 2}}


def rounded(value, data_type: DataType):
    """``value`` rounded to ``data_type`` (to nearest, ties to even) and back, as PyTorch's
    float16 and bfloat16 arithmetic rounds each step.

    Parameters
    ----------
    value : float or ndarray
        float32 values (converted to float32 first).
    data_type : DataType
        FLOAT32 (unchanged), FLOAT16 or BFLOAT16.

    Returns
    -------
    numpy.float32 or ndarray
        Of ``value``'s shape (a scalar stays a NumPy scalar).
    """
    value = np.asarray(value, np.float32)
    if data_type == DataType.FLOAT16:
        with np.errstate(over="ignore"):
            value = value.astype(np.float16).astype(np.float32)
    elif data_type == DataType.BFLOAT16:
        bits = value.view(np.uint32).astype(np.uint64)
        kept = (((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16) & 0xFFFFFFFF
        value = np.where((bits & 0x7FFFFFFF) > 0x7F800000, np.float32(np.nan), kept.astype(np.uint32).view(np.float32))
    return value[()]  # (a scalar stays a NumPy scalar)


def alpha(size_in: int, window: int, out: int, data_type: DataType) -> np.float32:
    """PyTorch's ``alpha = (in - window) / (out - 1)`` in the samples' type: float32, or each
    operand and the quotient rounded to float16 or bfloat16 (0 for a single window).

    Parameters
    ----------
    size_in, window, out : int
        The input's size, the window's and the output's, along one dimension.
    data_type : DataType
        The samples' type.

    Returns
    -------
    numpy.float32
    """
    if out == 1:
        return np.float32(0)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        quotient = rounded(size_in - window, data_type) / rounded(out - 1, data_type)
    return rounded(quotient, data_type)


def _truncated(values: np.ndarray) -> np.ndarray:
    """C's ``static_cast<int>`` of float32 values as x86-64 computes it (cvttss2si): toward
    zero; NaN and values outside int's range (undefined in C++) give int's minimum."""
    inside = np.abs(values) < 2.0**31   # (False for NaN)
    return np.where(inside, np.trunc(np.where(inside, values, 0)), -2.0**31).astype(np.int64)


def window_starts(samples, size_in: int, window: int, out: int, data_type: DataType) -> np.ndarray:
    """The window starts PyTorch's CPU kernel computes along one dimension for each sample
    (any value, host-side): ``samples`` (...) of float32 values of ``data_type`` -> (..., out)
    int64.  Window ``i < out - 1`` starts at ``int((i + u) * alpha) - int(u * alpha)`` (C's
    int: 32 bits, wrapping, :func:`_truncated`), the last at ``in - window``, in the
    samples' type as :func:`alpha`.  Samples in [0, 1) always give starts in
    ``[0, in - window]``; PyTorch stops with an internal assertion where others do not.

    Parameters
    ----------
    samples : array-like
        The samples of one dimension, of any shape.
    size_in, window, out : int
        The input's size, the window's and the output's, along that dimension.
    data_type : DataType
        The samples' type (FLOAT32, FLOAT16 or BFLOAT16).

    Returns
    -------
    ndarray
        int64 starts, ``samples``' shape + ``(out,)``.
    """
    u = np.asarray(samples, np.float32)[..., None]
    i = np.arange(out - 1, dtype=np.float32)   # (as f32_of: to nearest, ties to even)
    a = alpha(size_in, window, out, data_type)
    with np.errstate(over="ignore", invalid="ignore"):
        x = rounded(rounded(rounded(i, data_type) + u, data_type) * a, data_type)
        y = rounded(u * a, data_type)
    starts = (_truncated(x) - _truncated(y) + 2**31) % 2**32 - 2**31
    last = np.full(u.shape[:-1] + (1,), size_in - window, np.int64)
    return np.concatenate([starts, last], axis=-1)


def _sizes(value, dims: int, name: str) -> tuple:
    """One positive int for every spatial dimension, or one per dimension."""
    if is_integer(value):
        value = (value,) * dims
    return integers(value, name, dims, minimum=1)


class _Fractional(_Description):
    """What both fractional descriptions check: a 4-D or 5-D input, its samples, the window
    and the output's spatial sizes (``output_spatial``), as PyTorch checks them."""

    def _validate_fractional(self, input: TensorDesc, output_spatial, value_types) -> tuple:
        _check_type(input, "input", value_types)
        if input.rank not in (4, 5):
            raise ValidationError("input.sizes", f"fractional max pooling takes {{N, C, H, W}} or {{N, C, D, H, W}}, "
                                                 f"got {input.sizes}")
        dims = input.rank - 2
        samples = _check_tensor(self.samples, "samples")
        _check_type(samples, "samples", FLOAT_TYPES)
        if samples.sizes != input.sizes[:2] + (dims,):
            raise ValidationError("samples.sizes", f"expected {input.sizes[:2] + (dims,)}: per (n, c) plane of the "
                                                   f"input, one sample per spatial dimension; got {samples.sizes}")
        window = _sizes(self.window_size, dims, "window_size")
        output_spatial = _sizes(output_spatial, dims, "output_size")
        for axis, size, k, out in zip("DHW"[3 - dims:], input.sizes[2:], window, output_spatial):
            if out + k - 1 > size:
                raise ValidationError(
                    "output_size", f"{out} outputs of windows of {k} along {axis} need an input of at least "
                                   f"{out + k - 1} (output + window - 1), got {size}")
        # The kernels tabulate each plane's windows: 1 + 2 * (out_d + out_h + out_w) u32 words.
        table = input.sizes[0] * input.sizes[1] * (1 + 2 * (sum(output_spatial) + 3 - dims))
        if table > U32_MAX:
            raise ValidationError("output_size", f"{output_spatial} for {input.sizes[0] * input.sizes[1]} planes "
                                                 f"needs a window table of {table} entries; at most 2^32 - 1")
        _set(self, window_size=window, samples=samples)
        return output_spatial

    @property
    def dimension_count(self) -> int:
        """The number of spatial dimensions, ``len(window_size)``."""
        return len(self.window_size)


@dataclass(frozen=True)
class FractionalMaxPoolingDesc(_Fractional):
    """PyTorch's fractional max pooling (a poolgpu extension): the maximum over windows of
    ``window_size`` whose starts each (n, c) plane draws from its ``samples``.

    Along each spatial dimension, with ``u`` the plane's sample for it, ``alpha = (in -
    window) / (out - 1)`` and window ``i < out - 1`` starts at ``int((i + u) * alpha) -
    int(u * alpha)``, the last at ``in - window``, computed in the samples' type as
    PyTorch's CPU kernel computes it (float32; float16 and bfloat16 round every step; any
    sample value, ``int`` as C's on x86-64: :func:`window_starts`); a window that would
    leave the input (only for samples outside ``[0, 1)``; PyTorch stops with an internal
    assertion there) is clamped into it.  Max pooling's rules
    (ties to the first maximum, NaN above every number, bits copied) and flat indices.

    Parameters
    ----------
    input : TensorDesc
        {N, C, H, W} or {N, C, D, H, W}, any data type.
    samples : TensorDesc
        {N, C, dims} of FLOAT32, FLOAT16 or BFLOAT16, in PyTorch's order: 2D ``[..., 0]``
        for W, ``[..., 1]`` for H; 3D ``[..., 0]`` D, ``[..., 1]`` H, ``[..., 2]`` W.
    output : TensorDesc, optional
        Default None: a packed tensor of the input's type and ``output_size``.
    output_indices : TensorDesc or data type, optional
        UINT32 or UINT64 flat indices of the maxima, as for MaxPooling1Desc; default None.
    window_size : int or sequence of int
        Positive, one per spatial dimension (one int: every dimension).
    output_size : int or sequence of int, optional
        The output's spatial sizes; default None: the given output's.  ``output + window -
        1`` may not pass the input's size (PyTorch's rule).

    Raises
    ------
    ValidationError
        Naming the field (``samples.sizes``, ``output_size``, ``input.data_type``, ...) that
        is malformed, of an unsupported type, or inconsistent with the others.
    """

    input: TensorDesc
    samples: TensorDesc
    output: Optional[TensorDesc] = None
    output_indices: Optional[TensorDesc] = None
    _: KW_ONLY
    window_size: tuple
    output_size: Optional[tuple] = None

    kernel = "fractional_max_pool"

    def __post_init__(self) -> None:
        input = _check_tensor(self.input, "input")
        output_size = self.output_size
        if output_size is None:
            if self.output is None:
                raise ValidationError("output_size", "give the output's spatial sizes, or an output tensor")
            output_size = _check_tensor(self.output, "output").sizes[2:]
        output_size = self._validate_fractional(input, output_size, ALL_TYPES)
        output = _output_like(self.output, "output", input.sizes[:2] + output_size, input.data_type)
        _set(self, output_size=output_size, output=output,
             output_indices=_indices_like(self.output_indices, output.sizes))

    def input_tensors(self) -> Roles:
        return (("input", self.input), ("samples", self.samples))

    def output_tensors(self) -> Roles:
        return (("output", self.output), ("output_indices", self.output_indices))


@dataclass(frozen=True)
class FractionalMaxPoolingGradDesc(_Fractional):
    """The gradient of fractional max pooling (a poolgpu extension; the windows of
    :class:`FractionalMaxPoolingDesc`): ``output_gradient`` (dx, the input's sizes) is zero
    except that each window's ``input_gradient`` (dy) is added at the window's argmax under
    the forward max rule.  A gather, in float32: deterministic.

    Parameters
    ----------
    input : TensorDesc
        The forward input x (FLOAT32, FLOAT16 or BFLOAT16).
    samples : TensorDesc
        The forward pass's samples, in ``[0, 1)``: the gather visits the windows that can
        cover an input for such samples (others may place more windows over one input,
        whose gradients it would miss; :func:`poolgpu.fractional_max_pool_grad` refuses
        them).
    input_gradient : TensorDesc
        dy: x's type, N and C; its spatial sizes are the forward output's.
    output_gradient : TensorDesc, optional
        dx; default None: a packed tensor of x's sizes and type.
    window_size : int or sequence of int
        The forward pass's.

    $raises_plain
    """

    input: TensorDesc
    samples: TensorDesc
    input_gradient: TensorDesc
    output_gradient: Optional[TensorDesc] = None
    _: KW_ONLY
    window_size: tuple

    kernel = "fractional_max_pool_grad"

    def __post_init__(self) -> None:
        input = _check_tensor(self.input, "input")
        dy = _check_tensor(self.input_gradient, "input_gradient")
        if dy.data_type != input.data_type:
            raise ValidationError("input_gradient.data_type", f"expected {input.data_type.name} (the input's type), "
                                                              f"got {dy.data_type.name}")
        if dy.rank != input.rank or dy.sizes[:2] != input.sizes[:2]:
            raise ValidationError("input_gradient.sizes", f"expected rank {input.rank} with N, C = {input.sizes[:2]} "
                                                          f"(the input's), got {dy.sizes}")
        self._validate_fractional(input, dy.sizes[2:], FLOAT_TYPES)
        forward = FractionalMaxPoolingDesc(input, self.samples, output_indices=DataType.UINT32,
                                           window_size=self.window_size, output_size=dy.sizes[2:])
        _set(self, forward=forward, output_gradient=_output_like(self.output_gradient, "output_gradient", input.sizes,
                                                                 input.data_type))

    def input_tensors(self) -> Roles:
        return (("input", self.input), ("samples", self.samples), ("input_gradient", self.input_gradient))

    def output_tensors(self) -> Roles:
        return (("output_gradient", self.output_gradient),)
