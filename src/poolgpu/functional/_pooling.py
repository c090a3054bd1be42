"""The forward pooling functions of the functional API (and max unpooling)."""

from __future__ import annotations

from typing import Optional, Sequence, Union

import numpy as np

from ..arguments import array, flag, integers, is_integer
from ..descs import (AdaptiveAveragePoolingDesc, AdaptiveMaxPoolingDesc, AveragePooling1Desc,
                     FractionalMaxPoolingDesc, LpPooling1Desc, MaxPooling2Desc, MaxUnpoolingDesc, RoiPoolingDesc,
                     described, made)
from ..device import Device
from ..dtypes import DataType
from ..errors import ValidationError
from ..interop import unsigned_indices
from ..tensor import Tensor
from ._common import ArrayLike, Result, Window, _run, _window

__all__ = [
    "max_pool", "average_pool", "lp_pool", "roi_pool", "adaptive_max_pool", "adaptive_average_pool", "max_unpool",
    "fractional_max_pool",
]


def max_pool(x: ArrayLike, window_size: Window, strides: Optional[Window] = None,
             start_padding: Optional[Window] = None, end_padding: Optional[Window] = None,
             dilations: Optional[Window] = None, return_indices: bool = False,
             indices_type: Union[str, DataType, np.dtype] = "uint32",
             device: Optional[Device] = None) -> Union[Result, tuple]:
    """Max pooling (DirectML's MAX_POOLING2), any of the ten data types.

    Parameters
    ----------
    x : ndarray, Tensor or array-like
        The input {N, C, [D,] [H,] W}, one to three spatial dimensions.
    window_size : int or sequence of int
        The window's size per spatial dimension (one int: every dimension, as for every
        window argument here).
    strides, dilations : int or sequence of int, optional
        Per spatial dimension; default all 1.
    start_padding, end_padding : int or sequence of int, optional
        Padding before and after each spatial dimension; default all 0.  Padding is never
        selected.
    return_indices : bool, default False
        Also return the flat index of each maximum in the input's logical row-major order
        (N and C included); ties go to the lowest index, a NaN wins over every number.
    indices_type : str, DataType or dtype, default "uint32"
        The indices' type: UINT32 or UINT64.
    device : Device, optional
        Where to run; default the Tensor's device, or ``pg.default_device()`` for arrays.

    Returns
    -------
    ndarray or Tensor, or a tuple (values, indices)
        Of the input's kind and type; sizes from :func:`pooling_output_sizes`.

    Raises
    ------
    ValidationError
        For an unsupported type or an invalid window (naming the argument).
    """
    indices = DataType.of(indices_type, "indices_type") if flag(return_indices, "return_indices") else None

    def describe(input):
        return made(MaxPooling2Desc, input, output_indices=indices, **_window(
            input, window_size=window_size, strides=strides, start_padding=start_padding, end_padding=end_padding,
            dilations=dilations))

    return _run(describe, (x,), device)


def average_pool(x: ArrayLike, window_size: Window, strides: Optional[Window] = None,
                 start_padding: Optional[Window] = None, end_padding: Optional[Window] = None,
                 dilations: Optional[Window] = None, include_padding: bool = False,
                 device: Optional[Device] = None, *, counted_end_padding: Optional[Sequence[int]] = None,
                 divisor_override: Optional[int] = None) -> Result:
    """Average pooling (DirectML's AVERAGE_POOLING1), FLOAT32 and FLOAT16 (accumulated in float32).

    Parameters
    ----------
    x : ndarray, Tensor or array-like
        The input {N, C, [D,] [H,] W}.
    window_size : int or sequence of int
        The window's size per spatial dimension (one int: every dimension).
    strides, dilations : int or sequence of int, optional
        Default all 1.
    start_padding, end_padding : int or sequence of int, optional
        Default all 0.
    include_padding : bool, default False
        Divide by the window's element count (padding included) instead of the number of
        input elements the window covers.
    device : Device, optional
        Where to run (see :func:`max_pool`).
    counted_end_padding : sequence of int, optional
        Of the end padding, how much ``include_padding`` counts in the divisor (default: all
        of it). ONNX's and PyTorch's ``ceil_mode`` extend the end padding without counting
        the extension.
    divisor_override : int, optional
        Divide every window's sum by this instead (PyTorch's ``divisor_override``).

    Returns
    -------
    ndarray or Tensor
        The means, of the input's kind and type.

    Raises
    ------
    ValidationError
        For an unsupported type or an invalid window.
    """

    def describe(input):
        return made(AveragePooling1Desc,
            input, include_padding=include_padding, counted_end_padding=counted_end_padding,
            divisor_override=divisor_override, **_window(
                input, window_size=window_size, strides=strides, start_padding=start_padding,
                end_padding=end_padding, dilations=dilations))

    return _run(describe, (x,), device)


def lp_pool(x: ArrayLike, window_size: Window, strides: Optional[Window] = None,
            start_padding: Optional[Window] = None, end_padding: Optional[Window] = None,
            dilations: Optional[Window] = None, p: float = 2, device: Optional[Device] = None) -> Result:
    """Lp pooling (DirectML's LP_POOLING1): ``(sum |x|^p)^(1/p)`` over each window's input
    elements, FLOAT32 and FLOAT16; scaled by the window's largest ``|x|`` so that it neither
    overflows nor underflows where the result is representable.

    Parameters
    ----------
    x : ndarray, Tensor or array-like
        The input {N, C, [D,] [H,] W}.
    window_size : int or sequence of int
        The window's size per spatial dimension (one int: every dimension).
    strides, dilations : int or sequence of int, optional
        Default all 1.
    start_padding, end_padding : int or sequence of int, optional
        Default all 0; padding adds nothing to the sum.
    p : float, default 2
        A number from 1 to 64 (larger orders lose the smaller terms in float32).
    device : Device, optional
        Where to run (see :func:`max_pool`).

    Returns
    -------
    ndarray or Tensor

    Raises
    ------
    ValidationError
        For an unsupported type, ``p`` outside 1 to 64 or an invalid window.
    """

    def describe(input):
        return made(LpPooling1Desc, input, p=p, **_window(
            input, window_size=window_size, strides=strides, start_padding=start_padding, end_padding=end_padding,
            dilations=dilations))

    return _run(describe, (x,), device)


def roi_array(rois, x) -> np.ndarray:
    """A NumPy ``rois`` ((R, 5) or {1, 1, R, 5}) as the {1, 1, R, 5} array of the input's
    float type that RoiPoolingDesc takes."""
    rois = array(rois, "rois", ranks=None, typed=False)
    if rois.dtype.kind == "b":
        raise ValidationError("rois", "expected numbers [batch, x1, y1, x2, y2], got booleans")
    if rois.ndim == 2 and rois.shape[1] == 5:
        rois = rois.reshape((1, 1) + rois.shape)
    if rois.ndim != 4 or rois.shape[:2] != (1, 1) or rois.shape[3] != 5:
        raise ValidationError("rois", f"expected an (R, 5) array of [batch, x1, y1, x2, y2], got shape {rois.shape}")
    data_type = x.data_type if isinstance(x, Tensor) else DataType.of(x.dtype, "x")
    if data_type.is_float:
        # The ROI tensor has the input's type (DirectML's rule).  A corner beyond its range
        # becomes infinite (or NaN stays NaN): such a ROI pools nothing and gives zeros.
        with np.errstate(over="ignore", invalid="ignore"):
            rois = rois.astype(data_type.numpy)
    return rois


def roi_pool(x: ArrayLike, rois: ArrayLike, pooled_size: Sequence[int], spatial_scale: float = 1.0,
             device: Optional[Device] = None) -> Result:
    """ROI pooling (DirectML's ROI_POOLING): the max over each bin of each region of interest.

    Parameters
    ----------
    x : ndarray, Tensor or array-like
        The input {N, C, H, W}, FLOAT32 or FLOAT16.
    rois : ndarray, Tensor or array-like
        An (R, 5) array of ``[batch, x1, y1, x2, y2]`` (converted to the input's type), or a
        {1, 1, R, 5} Tensor of the input's type.  Corners are inclusive, in the input's
        coordinates divided by ``spatial_scale``.
    pooled_size : sequence of two int
        (height, width) of the bins per ROI.
    spatial_scale : float, default 1.0
        Multiplies the corners (in float32) before they are rounded (halves away from zero).
    device : Device, optional
        Where to run (see :func:`max_pool`).

    Returns
    -------
    ndarray or Tensor
        {R, C, pooled_h, pooled_w}; an empty bin (or an ROI with an invalid batch or a
        non-finite value) gives 0.

    Raises
    ------
    ValidationError
        For a bad ``rois`` shape, an unsupported type, a non-positive ``pooled_size`` or
        ``spatial_scale``.
    """
    if not isinstance(x, Tensor):
        x = array(x, "x")
    if not isinstance(rois, Tensor):
        rois = roi_array(rois, x)

    def describe(input, roi):
        return made(RoiPoolingDesc, input, roi, spatial_scale=spatial_scale, pooled_size=pooled_size)

    return _run(describe, (x, rois), device, names=("x", "rois"))


def adaptive_max_pool(x: ArrayLike, output_size: Union[int, Sequence[Optional[int]]], return_indices: bool = False,
                      indices_type: Union[str, DataType, np.dtype] = "uint32",
                      device: Optional[Device] = None) -> Union[Result, tuple]:
    """PyTorch's adaptive max pooling: along each spatial dimension output ``i`` pools input
    ``[floor(i * in / out), ceil((i + 1) * in / out))``; any of the ten data types.

    Parameters
    ----------
    x : ndarray, Tensor or array-like
        The input {N, C, [D,] [H,] W}.
    output_size : int or sequence of int or None
        The output's spatial sizes (one int: every dimension; ``None`` entries keep the
        input's size).
    return_indices : bool, default False
        Also return the flat logical index of each maximum (as :func:`max_pool`).
    indices_type : str, DataType or dtype, default "uint32"
        UINT32 or UINT64.
    device : Device, optional
        Where to run (see :func:`max_pool`).

    Returns
    -------
    ndarray or Tensor, or a tuple (values, indices)

    Raises
    ------
    ValidationError
        For an unsupported type or a non-positive output size.
    """
    indices = DataType.of(indices_type, "indices_type") if flag(return_indices, "return_indices") else None
    return _run(lambda input: made(AdaptiveMaxPoolingDesc, input, output_indices=indices, output_size=output_size),
                (x,), device)


def adaptive_average_pool(x: ArrayLike, output_size: Union[int, Sequence[Optional[int]]],
                          device: Optional[Device] = None) -> Result:
    """PyTorch's adaptive average pooling (bins as :func:`adaptive_max_pool`), FLOAT32 and
    FLOAT16, accumulated in float32.

    Parameters
    ----------
    x : ndarray, Tensor or array-like
        The input {N, C, [D,] [H,] W}.
    output_size : int or sequence of int or None
        The output's spatial sizes (``None`` entries keep the input's size).
    device : Device, optional
        Where to run (see :func:`max_pool`).

    Returns
    -------
    ndarray or Tensor

    Raises
    ------
    ValidationError
        For an unsupported type or a non-positive output size.
    """
    return _run(lambda input: made(AdaptiveAveragePoolingDesc, input, output_size=output_size), (x,), device)






def max_unpool(x: ArrayLike, indices: ArrayLike, output_sizes: Sequence[int],
               device: Optional[Device] = None) -> Result:
    """Max unpooling (DirectML's MAX_UNPOOLING): zeros except ``out.flat[indices.flat[j]] =
    x.flat[j]``; where indices repeat the largest ``j`` wins; indices outside the output are
    ignored.

    Parameters
    ----------
    x : ndarray, Tensor or array-like
        The pooled values, any of the ten data types.
    indices : ndarray, Tensor or array-like
        Flat positions in the output's logical row-major order (N and C included), of
        ``x``'s sizes: UINT32/UINT64, or INT32/INT64 (PyTorch's, ONNX's) read as their
        unsigned bits, so that negative ones lie outside the output.  PyTorch's per-plane
        indices need ``poolgpu.torch.max_unpool2d`` (or adding each plane's offset).
    output_sizes : sequence of int
        The output's full sizes {N, C, spatial...}, or only its spatial sizes (N and C are
        then ``x``'s).
    device : Device, optional
        Where to run (see :func:`max_pool`).

    Returns
    -------
    ndarray or Tensor

    Raises
    ------
    ValidationError
        For mismatched sizes, an index type other than the four integer ones above, or
        output sizes of the wrong length.
    """
    output_sizes = integers(output_sizes, "output_sizes", minimum=1, maximum=None)

    def describe(input, indices):
        sizes = output_sizes
        if len(sizes) == input.rank - 2:
            sizes = input.sizes[:2] + sizes
        elif len(sizes) != input.rank:
            raise ValidationError(
                "output_sizes", f"expected {input.rank} sizes (or {input.rank - 2} spatial ones), got {sizes}"
            )
        return made(MaxUnpoolingDesc, input, indices, described(input.data_type, sizes, "output_sizes"))

    return _run(describe, (x, unsigned_indices(indices)), device, names=("x", "indices"))


def fractional_max_pool(x: ArrayLike, window_size: Window, output_sizes: Union[int, Sequence[int]],
                        samples: ArrayLike, return_indices: bool = False,
                        indices_type: Union[str, DataType, np.dtype] = "uint32",
                        device: Optional[Device] = None) -> Union[Result, tuple]:
    """PyTorch's fractional max pooling (Graham, 2014), in 2D and 3D: the maximum over
    windows of ``window_size`` whose starts each (n, c) plane draws from its ``samples``.

    Along each spatial dimension, with ``u`` the plane's sample for it, ``alpha = (in -
    window) / (out - 1)`` (in float32) and window ``i < out - 1`` starts at ``int((i + u) *
    alpha) - int(u * alpha)``, the last at ``in - window``: PyTorch's formula, computed as its
    CPU kernel computes it (float16 and bfloat16 samples round every step to their type).
    Max pooling's rules: the first maximum's index, NaN above every number, bits copied.

    Parameters
    ----------
    x : ndarray, Tensor or array-like
        The input {N, C, H, W} or {N, C, D, H, W}, any data type.
    window_size : int or sequence of int
        The windows' size per spatial dimension (one int: every dimension).
    output_sizes : int or sequence of int
        The output's spatial sizes (or its full sizes, N and C then ``x``'s); ``output +
        window - 1`` may not pass the input's size.
    samples : ndarray, Tensor or array-like
        (N, C, dims) of float32, float16 or bfloat16, in PyTorch's order: in 2D
        ``samples[..., 0]`` is W's and ``[..., 1]`` H's; in 3D ``[..., 0]`` D's, ``[..., 1]``
        H's, ``[..., 2]`` W's.  Usually in ``[0, 1)`` (``torch.rand``'s); any value is taken
        as PyTorch takes it (C's ``int`` as x86-64 computes it), a window that would leave
        the input clamped into it (PyTorch stops there with an internal assertion).
    return_indices : bool, default False
        Also return the flat logical index of each maximum (as :func:`max_pool`).
    indices_type : str, DataType or dtype, default "uint32"
        UINT32 or UINT64.
    device : Device, optional
        Where to run (see :func:`max_pool`).

    Returns
    -------
    ndarray or Tensor, or a tuple (values, indices)
        Of the input's kind and type.

    Raises
    ------
    ValidationError
        For samples of the wrong shape or type, windows too large for the output sizes, or
        an unsupported type.
    """
    indices = DataType.of(indices_type, "indices_type") if flag(return_indices, "return_indices") else None

    def describe(input, sample_values):
        sizes = (output_sizes,) * (input.rank - 2) if is_integer(output_sizes) else \
            integers(output_sizes, "output_sizes", minimum=1, maximum=None)
        if len(sizes) == input.rank:
            if sizes[:2] != input.sizes[:2]:
                raise ValidationError("output_sizes", f"expected N, C = {input.sizes[:2]} (x's), got {sizes}")
            sizes = sizes[2:]
        try:
            return made(FractionalMaxPoolingDesc, input, sample_values, output_indices=indices, output_size=sizes,
                                            **_window(input, window_size=window_size))
        except ValidationError as exc:   # (the description's output_size is this argument)
            if exc.field == "output_size":
                raise exc.renamed("output_sizes") from None
            raise

    return _run(describe, (x, samples), device, names=("x", "samples"))
