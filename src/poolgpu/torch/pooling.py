"""Fixed-window pooling: ``max_pool*``, ``avg_pool*``, ``lp_pool*``."""

from __future__ import annotations

import math
from typing import Optional

import numpy as np

from ..arguments import number
from ..descs import (AveragePooling1Desc, AveragePoolingGradDesc, LpPooling1Desc, MaxPooling2Desc,
                     MaxPoolingGradDesc)
from ..descs.pooling import LP_MAX_P
from ..device import Device
from ..tensor import Tensor
from ..dtypes import DataType
from ..tensor_desc import TensorDesc
from ._arguments import boolean, checked, integer_arg, return_flag, sizes_arg, window
from ._call import FLOATS, MAX_TYPES, Call, Input, Output, Result, Size, empty_result, plane_indices

__all__ = ["max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d",
           "lp_pool1d", "lp_pool2d", "lp_pool3d"]


def _max_pool(dims, function, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, device):
    call = Call(input, function, dims, MAX_TYPES, device)
    call.require_nonzero()
    fields, out = window(call, dims, kernel_size, stride, padding, dilation, ceil_mode)
    return_indices = return_flag(return_indices, function)
    out_sizes = call.sizes[:2] + out

    def forward():
        if call.sizes[0] == 0:
            return empty_result(out_sizes, call.dtype), empty_result(out_sizes, np.int64)
        x = call.tensor()
        desc = MaxPooling2Desc(x.desc, output_indices=DataType.UINT32 if return_indices else None, **fields)
        result = call.device.compile(desc)(x)
        if not return_indices:
            return (result,)
        return result[0], plane_indices(result[1], math.prod(call.sizes[2:]))

    def backward(dy: Tensor) -> Tensor:
        x = call.tensor()
        return call.device.compile(MaxPoolingGradDesc(x.desc, dy.desc, **fields))(x, dy)

    results = call.run(forward, backward)
    return results if return_indices else results[0]


def max_pool1d(input: Input, kernel_size: Size, stride: Optional[Size] = None, padding: Size = 0, dilation: Size = 1,
               ceil_mode: bool = False, return_indices: bool = False, *,
               device: Optional[Device] = None) -> Result:
    """``torch.nn.functional.max_pool1d`` on poolgpu: the maximum of each window.

    Ties go to the first maximum in the window; a window holding NaN gives NaN and the index
    of its first NaN (PyTorch's CPU: its last).

    Parameters
    ----------
    input : torch.Tensor, numpy.ndarray or pg.Tensor
        (N, C, L) or unbatched (C, L); float32, float16, int8, uint8, int16, int32 or int64.
    kernel_size : int or tuple of int
        The window: an int, or a tuple of one int.
    stride : int or tuple of int, optional
        The window's step; None (default) or ``()`` is ``kernel_size``.
    padding : int or tuple of int, default 0
        Implicit -inf padding on both ends, at most half of ``kernel_size``.
    dilation : int or tuple of int, default 1
        The spacing of the window's elements.
    ceil_mode : bool, default False
        Round the output size up; a window that would start in the end padding is dropped.
    return_indices : bool, default False
        Also return the maxima's int64 positions within each (n, c) plane (what
        :func:`max_unpool1d` takes).
    device : pg.Device, optional, keyword-only
        Where to run: default the pg.Tensor input's device, else ``pg.default_device()``.

    Returns
    -------
    output, or (output, indices)
        Of the input's kind (torch, NumPy or poolgpu) and data type; indices int64.

    Raises
    ------
    pg.ValidationError
        Where PyTorch raises (naming the argument), and for a data type poolgpu lacks
        (saying what to convert to).
    """
    return _max_pool(1, "max_pool1d", input, kernel_size, stride, padding, dilation, ceil_mode, return_indices,
                     device)


def max_pool2d(input: Input, kernel_size: Size, stride: Optional[Size] = None, padding: Size = 0, dilation: Size = 1,
               ceil_mode: bool = False, return_indices: bool = False, *,
               device: Optional[Device] = None) -> Result:
    """``torch.nn.functional.max_pool2d`` on poolgpu: the maximum of each window.

    Parameters
    ----------
    input : torch.Tensor, numpy.ndarray or pg.Tensor
        (N, C, H, W) or unbatched (C, H, W); the types of :func:`max_pool1d`.
    kernel_size : int or tuple of int
        One size for both dimensions, or (kH, kW).
    stride, padding, dilation : int or tuple of int, optional
        As :func:`max_pool1d`'s, one value or one per dimension (defaults None, 0, 1).
    ceil_mode, return_indices : bool, default False
        As :func:`max_pool1d`'s.
    device : pg.Device, optional, keyword-only
        Where to run (see :func:`max_pool1d`).

    Returns
    -------
    output, or (output, indices)
        As :func:`max_pool1d`'s.

    Raises
    ------
    pg.ValidationError
        Where PyTorch raises, naming the argument; for a data type poolgpu lacks.
    """
    return _max_pool(2, "max_pool2d", input, kernel_size, stride, padding, dilation, ceil_mode, return_indices,
                     device)


def max_pool3d(input: Input, kernel_size: Size, stride: Optional[Size] = None, padding: Size = 0, dilation: Size = 1,
               ceil_mode: bool = False, return_indices: bool = False, *,
               device: Optional[Device] = None) -> Result:
    """``torch.nn.functional.max_pool3d`` on poolgpu: the maximum of each window.

    Parameters
    ----------
    input : torch.Tensor, numpy.ndarray or pg.Tensor
        (N, C, D, H, W) or unbatched (C, D, H, W); the types of :func:`max_pool1d`.
    kernel_size : int or tuple of int
        One size for every dimension, or (kD, kH, kW).
    stride, padding, dilation : int or tuple of int, optional
        As :func:`max_pool1d`'s, one value or one per dimension (defaults None, 0, 1).
    ceil_mode, return_indices : bool, default False
        As :func:`max_pool1d`'s.
    device : pg.Device, optional, keyword-only
        Where to run (see :func:`max_pool1d`).

    Returns
    -------
    output, or (output, indices)
        As :func:`max_pool1d`'s.

    Raises
    ------
    pg.ValidationError
        Where PyTorch raises, naming the argument; for a data type poolgpu lacks.
    """
    return _max_pool(3, "max_pool3d", input, kernel_size, stride, padding, dilation, ceil_mode, return_indices,
                     device)


# ---------------------------------------------------------------------------------------
# Average pooling


def _avg_pool(dims, function, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override,
              device):
    call = Call(input, function, dims, FLOATS, device)
    call.require_nonzero()
    fields, out = window(call, dims, kernel_size, stride, padding, 1, ceil_mode, check_input_size=dims == 3)
    if divisor_override is not None:  # PyTorch takes any int but 0; DirectML's divisor is positive
        divisor_override = integer_arg(divisor_override, "divisor_override", function, minimum=1)
    divisor = dict(include_padding=boolean(count_include_pad, "count_include_pad", function),
                   counted_end_padding=fields["start_padding"], divisor_override=divisor_override)
    out_sizes = call.sizes[:2] + out

    def forward():
        if call.sizes[0] == 0:
            return (empty_result(out_sizes, call.dtype),)
        x = call.tensor()
        return (call.device.compile(AveragePooling1Desc(x.desc, **divisor, **fields))(x),)

    def backward(dy: Tensor) -> Tensor:
        dx = TensorDesc(dy.data_type, call.sizes)
        return call.device.compile(AveragePoolingGradDesc(dy.desc, dx, **divisor, **fields))(dy)

    return call.run(forward, backward)[0]


def avg_pool1d(input: Input, kernel_size: Size, stride: Optional[Size] = None, padding: Size = 0,
               ceil_mode: bool = False, count_include_pad: bool = True, *,
               device: Optional[Device] = None) -> Output:
    """``torch.nn.functional.avg_pool1d`` on poolgpu: the average of each window.

    Parameters
    ----------
    input : torch.Tensor, numpy.ndarray or pg.Tensor
        (N, C, L) or unbatched (C, L); float32 or float16.
    kernel_size : int or tuple of int
        The window: an int, or a tuple of one int.
    stride : int or tuple of int, optional
        The window's step; None (default) or ``()`` is ``kernel_size``.
    padding : int or tuple of int, default 0
        Implicit zero padding on both ends, at most half of ``kernel_size``.
    ceil_mode : bool, default False
        Round the output size up; a window that would start in the end padding is dropped.
    count_include_pad : bool, default True
        Divide by the window clipped to the padded input (``ceil_mode``'s extra end does not
        count); False: by the input elements the window covers.
    device : pg.Device, optional, keyword-only
        Where to run: default the pg.Tensor input's device, else ``pg.default_device()``.

    Returns
    -------
    output
        Of the input's kind and data type; sums accumulate in float32.

    Raises
    ------
    pg.ValidationError
        Where PyTorch raises (naming the argument), and for a data type poolgpu lacks.
    """
    return _avg_pool(1, "avg_pool1d", input, kernel_size, stride, padding, ceil_mode, count_include_pad, None, device)


def avg_pool2d(input: Input, kernel_size: Size, stride: Optional[Size] = None, padding: Size = 0,
               ceil_mode: bool = False, count_include_pad: bool = True, divisor_override: Optional[int] = None, *,
               device: Optional[Device] = None) -> Output:
    """``torch.nn.functional.avg_pool2d`` on poolgpu: the average of each window.

    Parameters
    ----------
    input : torch.Tensor, numpy.ndarray or pg.Tensor
        (N, C, H, W) or unbatched (C, H, W); float32 or float16.
    kernel_size : int or tuple of int
        One size for both dimensions, or (kH, kW).
    stride, padding : int or tuple of int, optional
        As :func:`avg_pool1d`'s, one value or one per dimension (defaults None, 0).
    ceil_mode : bool, default False
        As :func:`avg_pool1d`'s.
    count_include_pad : bool, default True
        As :func:`avg_pool1d`'s.
    divisor_override : int, optional
        If given, every window's sum is divided by it (poolgpu: a positive int).
    device : pg.Device, optional, keyword-only
        Where to run (see :func:`avg_pool1d`).

    Returns
    -------
    output
        Of the input's kind and data type.

    Raises
    ------
    pg.ValidationError
        Where PyTorch raises, naming the argument; for a data type poolgpu lacks.
    """
    return _avg_pool(2, "avg_pool2d", input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override, device)


def avg_pool3d(input: Input, kernel_size: Size, stride: Optional[Size] = None, padding: Size = 0,
               ceil_mode: bool = False, count_include_pad: bool = True, divisor_override: Optional[int] = None, *,
               device: Optional[Device] = None) -> Output:
    """``torch.nn.functional.avg_pool3d`` on poolgpu: the average of each window.

    Parameters
    ----------
    input : torch.Tensor, numpy.ndarray or pg.Tensor
        (N, C, D, H, W) or unbatched (C, D, H, W); float32 or float16; each spatial size
        at least the kernel's (as PyTorch checks).
    kernel_size : int or tuple of int
        One size for every dimension, or (kD, kH, kW).
    stride, padding : int or tuple of int, optional
        As :func:`avg_pool1d`'s, one value or one per dimension (defaults None, 0).
    ceil_mode, count_include_pad : bool, defaults False, True
        As :func:`avg_pool1d`'s.
    divisor_override : int, optional
        As :func:`avg_pool2d`'s.
    device : pg.Device, optional, keyword-only
        Where to run (see :func:`avg_pool1d`).

    Returns
    -------
    output
        Of the input's kind and data type.

    Raises
    ------
    pg.ValidationError
        Where PyTorch raises, naming the argument; for a data type poolgpu lacks.
    """
    return _avg_pool(3, "avg_pool3d", input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override, device)


# ---------------------------------------------------------------------------------------
# Lp pooling


def _lp_pool(dims, function, input, norm_type, kernel_size, stride, ceil_mode, device):
    call = Call(input, function, dims, FLOATS, device)
    call.require_nonzero()
    # PyTorch's lp_pool1d multiplies by kernel_size (an int); lp_pool2d/3d unpack it into 2 or 3
    kernel = sizes_arg(kernel_size, dims, "kernel_size", function, lengths=(dims,) if dims > 1 else ())
    fields, out = window(call, dims, kernel_size, stride, 0, 1, ceil_mode, check_input_size=dims == 3, kernel=kernel)
    if isinstance(norm_type, (int, float)) and norm_type == math.inf:  # PyTorch's test for its max_pool path
        p = math.inf
    else:  # poolgpu's Lp pooling needs p >= 1 (and refuses a p whose powers overflow)
        p = checked(function, number, norm_type, "norm_type", minimum=1, maximum=LP_MAX_P)
    out_sizes = call.sizes[:2] + out

    def forward():
        if call.sizes[0] == 0:
            return (empty_result(out_sizes, call.dtype),)
        if math.isinf(p):  # PyTorch: max_pool of |x|
            x = call.device.upload(np.abs(call.host()))
            return (call.device.compile(MaxPooling2Desc(x.desc, **fields))(x),)
        x = call.tensor()
        y = call.device.compile(LpPooling1Desc(x.desc, p=p, **fields))(x)
        if fields["end_padding"] == fields["start_padding"]:  # no window clipped by ceil_mode
            return (y,)
        # PyTorch scales (sum |x|^p / covered * prod(kernel)) ** (1/p): a clipped window by
        # (prod(kernel) / covered) ** (1/p).
        covered = np.ones((1,) * len(out), np.float64)
        for axis, (n, k, s, o) in enumerate(zip(call.sizes[2:], fields["window_size"], fields["strides"], out)):
            starts = np.arange(o) * s
            counts = np.minimum(starts + k, n) - starts
            covered = covered * counts.reshape((-1,) + (1,) * (len(out) - 1 - axis))
        scale = (math.prod(fields["window_size"]) / covered) ** (1 / p)
        return ((y.numpy().astype(np.float64) * scale).astype(call.dtype),)

    return call.run(forward, None, "Lp pooling is not differentiated here")[0]


def lp_pool1d(input: Input, norm_type: float, kernel_size: int, stride: Optional[Size] = None,
              ceil_mode: bool = False, *, device: Optional[Device] = None) -> Output:
    """``torch.nn.functional.lp_pool1d`` on poolgpu: ``(sum x ** p) ** (1 / p)`` over each window.

    PyTorch's result for non-negative inputs and even integer ``norm_type`` (poolgpu sums
    ``|x| ** p``).  PyTorch computes ``(avg_pool(x ** p) * kernel_size) ** (1 / p)``, so a
    window ``ceil_mode`` clips is scaled by ``(kernel_size / covered) ** (1 / p)``; so is
    poolgpu's.  Not differentiable: ``backward`` raises.

    Parameters
    ----------
    input : torch.Tensor, numpy.ndarray or pg.Tensor
        (N, C, L) or unbatched (C, L); float32 or float16.
    norm_type : float
        ``p``, from 1 to 64, or ``math.inf`` (the maximum of ``|x|``).
    kernel_size : int
        The window (an int, as PyTorch multiplies by it).
    stride : int or tuple of int, optional
        The window's step; None (default) or ``()`` is ``kernel_size``.
    ceil_mode : bool, default False
        Round the output size up; a window that would start past the input is dropped.
    device : pg.Device, optional, keyword-only
        Where to run: default the pg.Tensor input's device, else ``pg.default_device()``.

    Returns
    -------
    output
        Of the input's kind and data type.

    Raises
    ------
    pg.ValidationError
        Where PyTorch raises (naming the argument), for ``norm_type`` below 1 or above 64,
        and for a data type poolgpu lacks.
    """
    return _lp_pool(1, "lp_pool1d", input, norm_type, kernel_size, stride, ceil_mode, device)


def lp_pool2d(input: Input, norm_type: float, kernel_size: Size, stride: Optional[Size] = None,
              ceil_mode: bool = False, *, device: Optional[Device] = None) -> Output:
    """``torch.nn.functional.lp_pool2d`` on poolgpu; see :func:`lp_pool1d`.

    Parameters
    ----------
    input : torch.Tensor, numpy.ndarray or pg.Tensor
        (N, C, H, W) or unbatched (C, H, W); float32 or float16.
    norm_type : float
        As :func:`lp_pool1d`'s.
    kernel_size : int or tuple of int
        An int, or (kH, kW) (two values, as PyTorch unpacks it).
    stride : int or tuple of int, optional
        One value or one per dimension; None (default) or ``()`` is ``kernel_size``.
    ceil_mode : bool, default False
        As :func:`lp_pool1d`'s.
    device : pg.Device, optional, keyword-only
        Where to run (see :func:`lp_pool1d`).

    Returns
    -------
    output
        Of the input's kind and data type.

    Raises
    ------
    pg.ValidationError
        As :func:`lp_pool1d`.
    """
    return _lp_pool(2, "lp_pool2d", input, norm_type, kernel_size, stride, ceil_mode, device)


def lp_pool3d(input: Input, norm_type: float, kernel_size: Size, stride: Optional[Size] = None,
              ceil_mode: bool = False, *, device: Optional[Device] = None) -> Output:
    """``torch.nn.functional.lp_pool3d`` on poolgpu; see :func:`lp_pool1d`.

    Parameters
    ----------
    input : torch.Tensor, numpy.ndarray or pg.Tensor
        (N, C, D, H, W) or unbatched (C, D, H, W); float32 or float16; each spatial size at
        least the kernel's.
    norm_type : float
        As :func:`lp_pool1d`'s.
    kernel_size : int or tuple of int
        An int, or (kD, kH, kW).
    stride : int or tuple of int, optional
        One value or one per dimension; None (default) or ``()`` is ``kernel_size``.
    ceil_mode : bool, default False
        As :func:`lp_pool1d`'s.
    device : pg.Device, optional, keyword-only
        Where to run (see :func:`lp_pool1d`).

    Returns
    -------
    output
        Of the input's kind and data type.

    Raises
    ------
    pg.ValidationError
        As :func:`lp_pool1d`.
    """
    return _lp_pool(3, "lp_pool3d", input, norm_type, kernel_size, stride, ceil_mode, device)