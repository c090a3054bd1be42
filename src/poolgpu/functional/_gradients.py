"""The gradient functions of the functional API: deterministic gathers."""

from __future__ import annotations

from typing import Optional, Sequence

from ..arguments import array, integers
from ..descs import (AdaptiveAveragePoolingGradDesc, AdaptiveMaxPoolingGradDesc, AveragePoolingGradDesc,
                     FractionalMaxPoolingGradDesc, LpPoolingGradDesc, MaxPoolingGradDesc, MaxUnpoolingGradDesc,
                     RoiPoolingGradDesc, described, made)
from ..device import Device
from ..errors import ValidationError
from ..interop import unsigned_indices
from ..tensor import Tensor
from ._common import ArrayLike, Result, Window, _run, _window
from ._pooling import roi_array

__all__ = [
    "max_pool_grad", "average_pool_grad", "adaptive_max_pool_grad", "adaptive_average_pool_grad", "max_unpool_grad",
    "lp_pool_grad", "roi_pool_grad", "fractional_max_pool_grad",
]


def max_pool_grad(x: ArrayLike, dy: ArrayLike, window_size: Window, strides: Optional[Window] = None,
                  start_padding: Optional[Window] = None, end_padding: Optional[Window] = None,
                  dilations: Optional[Window] = None, device: Optional[Device] = None) -> Result:
    """Max pooling gradient (DirectML's MAX_POOLING_GRAD): ``dx`` of ``x``'s sizes, zero
    except each window's ``dy`` added at the window's argmax (the forward rule).
    Deterministic: bit-identical run after run.

    Parameters
    ----------
    x : ndarray, Tensor or array-like
        The forward input (FLOAT32 or FLOAT16).
    dy : ndarray, Tensor or array-like
        The gradient of the forward output, of its sizes and ``x``'s type.
    window_size, strides, start_padding, end_padding, dilations
        The forward pass's window (see :func:`max_pool`).
    device : Device, optional
        Where to run (see :func:`max_pool`).

    Returns
    -------
    ndarray or Tensor
        ``dx``.

    Raises
    ------
    ValidationError
        For mismatched sizes or types, or an invalid window.
    """

    def describe(input, input_gradient):
        return made(MaxPoolingGradDesc, input, input_gradient, **_window(
            input, window_size=window_size, strides=strides, start_padding=start_padding, end_padding=end_padding,
            dilations=dilations))

    return _run(describe, (x, dy), device, names=("x", "dy"))


def average_pool_grad(dy: ArrayLike, input_sizes: Sequence[int], window_size: Window,
                      strides: Optional[Window] = None, start_padding: Optional[Window] = None,
                      end_padding: Optional[Window] = None, dilations: Optional[Window] = None,
                      include_padding: bool = False, device: Optional[Device] = None, *,
                      counted_end_padding: Optional[Sequence[int]] = None,
                      divisor_override: Optional[int] = None) -> Result:
    """Average pooling gradient (DirectML's AVERAGE_POOLING_GRAD): ``dx`` of the forward
    input's ``input_sizes``, each window's ``dy / divisor`` added to every input element it
    covers.  Deterministic.

    Parameters
    ----------
    dy : ndarray, Tensor or array-like
        The gradient of the forward output (FLOAT32 or FLOAT16).
    input_sizes : sequence of int
        The forward input's full sizes {N, C, spatial...}.
    window_size, strides, start_padding, end_padding, dilations, include_padding
        The forward pass's window and divisor rule (see :func:`average_pool`).
    device : Device, optional
        Where to run (see :func:`max_pool`).
    counted_end_padding, divisor_override : optional
        The forward pass's divisor extensions (see :func:`average_pool`).

    Returns
    -------
    ndarray or Tensor
        ``dx``.

    Raises
    ------
    ValidationError
        For sizes that do not match the forward pass, or an invalid window.
    """
    input_sizes = integers(input_sizes, "input_sizes", minimum=1, maximum=None)

    def describe(input_gradient):
        output_gradient = described(input_gradient.data_type, input_sizes, "input_sizes")
        return made(AveragePoolingGradDesc,
            input_gradient, output_gradient, include_padding=include_padding,
            counted_end_padding=counted_end_padding, divisor_override=divisor_override, **_window(
                output_gradient, window_size=window_size, strides=strides, start_padding=start_padding,
                end_padding=end_padding, dilations=dilations),
        )

    return _run(describe, (dy,), device, names=("dy",))


def adaptive_max_pool_grad(x: ArrayLike, dy: ArrayLike, device: Optional[Device] = None) -> Result:
    """Gradient of adaptive max pooling (PyTorch's bins; deterministic).

    Parameters
    ----------
    x : array or Tensor
        The forward input ``{N, C, spatial...}`` (float32 or float16).
    dy : array or Tensor
        The gradient of the forward output: x's type, N and C; its spatial sizes are the
        forward ``output_size``.
    device : Device, optional
        Where to run (default: the inputs' device, or the default device).

    Returns
    -------
    dx : array or Tensor
        x's sizes: zero except that each bin's ``dy`` is added at the bin's argmax (ties to
        the lowest flat index, NaN larger than every number).
    """
    return _run(lambda input, input_gradient: made(AdaptiveMaxPoolingGradDesc, input, input_gradient), (x, dy), device,
                names=("x", "dy"))


def adaptive_average_pool_grad(dy: ArrayLike, input_sizes: Sequence[int], device: Optional[Device] = None) -> Result:
    """Gradient of adaptive average pooling (PyTorch's bins; deterministic).

    Parameters
    ----------
    dy : array or Tensor
        The gradient of the forward output (float32 or float16).
    input_sizes : sequence of int
        The forward input's sizes ``{N, C, spatial...}``.
    device : Device, optional
        Where to run (default: the inputs' device, or the default device).

    Returns
    -------
    dx : array or Tensor
        Of ``input_sizes``: each bin's ``dy / (its element count)`` added to every element
        the bin covers, summed in float32.
    """
    input_sizes = integers(input_sizes, "input_sizes", minimum=1, maximum=None)

    def describe(input_gradient):
        return made(AdaptiveAveragePoolingGradDesc, input_gradient,
                    described(input_gradient.data_type, input_sizes, "input_sizes"))

    return _run(describe, (dy,), device, names=("dy",))


def max_unpool_grad(dy: ArrayLike, indices: ArrayLike, device: Optional[Device] = None) -> Result:
    """Gradient of max unpooling (deterministic).

    Parameters
    ----------
    dy : array or Tensor
        The gradient of the unpooled output (any of the ten types).
    indices : array or Tensor
        The unpooling's indices, flat positions over the whole unpooled output (N and C
        included), as :func:`max_unpool` takes them: uint32 or uint64, or int32/int64 read
        as their unsigned bits (a negative index lies outside).
    device : Device, optional
        Where to run (default: the inputs' device, or the default device).

    Returns
    -------
    dx : array or Tensor
        The indices' sizes, dy's type: ``dx[j] = dy.flat[indices.flat[j]]``, or 0 where the
        index lies outside dy or a larger ``j`` has the same index (it did not reach the
        output).
    """
    return _run(lambda input_gradient, idx: made(MaxUnpoolingGradDesc, input_gradient, idx),
                (dy, unsigned_indices(indices)), device, names=("dy", "indices"))


def lp_pool_grad(x: ArrayLike, dy: ArrayLike, window_size: Window, strides: Optional[Window] = None,
                 start_padding: Optional[Window] = None, end_padding: Optional[Window] = None,
                 dilations: Optional[Window] = None, p: float = 2, device: Optional[Device] = None) -> Result:
    """Lp pooling gradient: d/dx of each window's ``(sum |x|^p)^(1/p)`` times its ``dy``,
    summed over the windows covering each element (``sign(x) * (|x| / y)^(p - 1)`` per
    window of result ``y``; 0 for a window of zeros).  Deterministic.

    Parameters
    ----------
    x : ndarray, Tensor or array-like
        The forward input (float32, float16 or bfloat16).
    dy : ndarray, Tensor or array-like
        The gradient of the forward output, of its sizes and ``x``'s type.
    window_size, strides, start_padding, end_padding, dilations, p
        The forward pass's (see :func:`lp_pool`).
    device : Device, optional
        Where to run (see :func:`max_pool`).

    Returns
    -------
    ndarray or Tensor
        ``dx``, of ``x``'s sizes, summed in float32.

    Raises
    ------
    ValidationError
        For mismatched sizes or types, ``p`` outside 1 to 64, or an invalid window.
    """

    def describe(input, input_gradient):
        return made(LpPoolingGradDesc, input, input_gradient, p=p, **_window(
            input, window_size=window_size, strides=strides, start_padding=start_padding, end_padding=end_padding,
            dilations=dilations))

    return _run(describe, (x, dy), device, names=("x", "dy"))


def roi_pool_grad(x: ArrayLike, rois: ArrayLike, dy: ArrayLike, pooled_size: Sequence[int],
                  spatial_scale: float = 1.0, device: Optional[Device] = None) -> Result:
    """ROI pooling gradient: ``dx`` of ``x``'s sizes, zero except each bin's ``dy`` added at
    the bin's argmax (the forward rule; :func:`roi_pool`'s bins), as torchvision's
    ``roi_pool`` backward adds it.  Deterministic: each element sums its bins in ROI order.

    Parameters
    ----------
    x : ndarray, Tensor or array-like
        The forward input {N, C, H, W} (float32, float16 or bfloat16).
    rois : ndarray, Tensor or array-like
        The forward pass's ROIs, as :func:`roi_pool` takes them.
    dy : ndarray, Tensor or array-like
        The gradient of the forward output {R, C, pooled_h, pooled_w}, of ``x``'s type.
    pooled_size : sequence of two int
        (height, width), the forward pass's.
    spatial_scale : float, default 1.0
        The forward pass's.
    device : Device, optional
        Where to run (see :func:`max_pool`).

    Returns
    -------
    ndarray or Tensor
        ``dx``, summed in float32.

    Raises
    ------
    ValidationError
        For mismatched sizes or types, a bad ``rois`` shape, a non-positive ``pooled_size``
        or ``spatial_scale``.
    """
    if not isinstance(x, Tensor):
        x = array(x, "x")
    if not isinstance(rois, Tensor):
        rois = roi_array(rois, x)

    def describe(input, roi, input_gradient):
        return made(RoiPoolingGradDesc, input, roi, input_gradient, spatial_scale=spatial_scale,
                    pooled_size=pooled_size)

    return _run(describe, (x, rois, dy), device, names=("x", "rois", "dy"))


def fractional_max_pool_grad(x: ArrayLike, dy: ArrayLike, window_size: Window, samples: ArrayLike,
                             device: Optional[Device] = None) -> Result:
    """Fractional max pooling gradient: ``dx`` of ``x``'s sizes, zero except each window's
    ``dy`` added at the window's argmax (the forward rule; :func:`fractional_max_pool`'s
    windows).  Deterministic.

    Parameters
    ----------
    x : ndarray, Tensor or array-like
        The forward input {N, C, H, W} or {N, C, D, H, W} (float32, float16 or bfloat16).
    dy : ndarray, Tensor or array-like
        The gradient of the forward output: ``x``'s type, N and C; its spatial sizes are the
        forward ``output_sizes``.
    window_size : int or sequence of int
        The forward pass's.
    samples : ndarray, Tensor or array-like
        The forward pass's (N, C, dims) samples, in ``[0, 1)`` (the gather's bound on the
        windows covering one input holds for those; poolgpu.torch computes the gradient of
        others).
    device : Device, optional
        Where to run (see :func:`max_pool`).

    Returns
    -------
    ndarray or Tensor
        ``dx``, summed in float32.

    Raises
    ------
    ValidationError
        For mismatched sizes or types, samples of the wrong shape or type, or host samples
        outside ``[0, 1)``.
    """
    if not isinstance(samples, Tensor):   # (a pg.Tensor's are not read back)
        values = array(samples, "samples", ranks=None, typed=False, empty=True)
        if values.dtype.kind in "fV" and not ((values >= 0) & (values < 1)).all():
            raise ValidationError("samples", "fractional_max_pool_grad takes samples in [0, 1) (torch.rand's), got "
                                             f"{values[~((values >= 0) & (values < 1))].flat[0]}; "
                                             "poolgpu.torch.fractional_max_pool2d/3d differentiate others")

    def describe(input, sample_values, input_gradient):
        return made(FractionalMaxPoolingGradDesc, input, sample_values, input_gradient,
                                            **_window(input, window_size=window_size))

    return _run(describe, (x, samples, dy), device, names=("x", "samples", "dy"))
