"""Adaptive pooling: ``adaptive_max_pool*``, ``adaptive_avg_pool*``."""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence, Union

import numpy as np

from .. import functional as _functional
from ..arguments import shown
from ..descs import AdaptiveAveragePoolingDesc, AdaptiveMaxPoolingDesc
from ..device import Device
from ..tensor import Tensor
from ..dtypes import DataType
from ..errors import ValidationError
from ._arguments import return_flag, sizes_arg
from ._call import FLOATS, MAX_TYPES, Call, Input, Output, Result, Size, empty_result, plane_indices

__all__ = ["adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d",
           "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d"]


def _adaptive_sizes(call: Call, dims: int, output_size: Any) -> tuple:
    """PyTorch's output_size: adaptive_*_pool1d's is an int[1] (an int or one int);
    2d and 3d take an int (a Python int) or a tuple or list of ``dims`` entries, each an int
    or None for the input's size."""
    f = call.function
    if any(n == 0 for n in call.sizes[2:]):
        raise ValidationError("input", f"{f}: the input's spatial sizes must be positive, got {call.sizes[2:]}")
    if dims == 1:
        sizes = sizes_arg(output_size, 1, "output_size", f, minimum=0)
    elif isinstance(output_size, int) and not isinstance(output_size, bool):
        sizes = sizes_arg(output_size, dims, "output_size", f, minimum=0)
    elif isinstance(output_size, (tuple, list)) and len(output_size) == dims:
        sizes = tuple(n if s is None else s for s, n in zip(output_size, call.sizes[2:]))
        sizes = sizes_arg(sizes, dims, "output_size", f, minimum=0, lengths=(dims,))
    else:
        raise ValidationError("output_size", f"{f}: expected an int or a tuple of {dims} ints or Nones, "
                                             f"got {shown(output_size)}")
    call.check_output(call.sizes[:2] + sizes, "output_size")
    return sizes


def _adaptive_max_pool(dims, function, input, output_size, return_indices, device):
    call = Call(input, function, dims, MAX_TYPES, device)
    sizes = _adaptive_sizes(call, dims, output_size)
    return_indices = return_flag(return_indices, function)
    out_sizes = call.sizes[:2] + sizes

    def forward():
        if 0 in out_sizes:
            return empty_result(out_sizes, call.dtype), empty_result(out_sizes, np.int64)
        x = call.tensor()
        desc = AdaptiveMaxPoolingDesc(x.desc, output_indices=DataType.UINT32 if return_indices else None,
                                      output_size=sizes)
        result = call.device.compile(desc)(x)
        if not return_indices:
            return (result,)
        return result[0], plane_indices(result[1], math.prod(call.sizes[2:]))

    def backward(dy: Tensor) -> Tensor:
        return _functional.adaptive_max_pool_grad(call.tensor(), dy)

    results = call.run(forward, backward)
    return results if return_indices else results[0]


def adaptive_max_pool1d(input: Input, output_size: Size, return_indices: bool = False, *,
                        device: Optional[Device] = None) -> Result:
    """``torch.nn.functional.adaptive_max_pool1d`` on poolgpu: output ``i`` is the maximum of
    input ``[floor(i * L / out), ceil((i + 1) * L / out))``.

    Parameters
    ----------
    input : torch.Tensor, numpy.ndarray or pg.Tensor
        (N, C, L) or unbatched (C, L); float32, float16, int8, uint8, int16, int32 or int64.
    output_size : int or tuple of int
        The output length: an int or a tuple of one int (0 gives an empty output).
    return_indices : bool, default False
        Also return the maxima's int64 positions within each (n, c) plane.
    device : pg.Device, optional, keyword-only
        Where to run: default the pg.Tensor input's device, else ``pg.default_device()``.

    Returns
    -------
    output, or (output, indices)
        Of the input's kind and data type; indices int64.

    Raises
    ------
    pg.ValidationError
        Where PyTorch raises (naming the argument), and for a data type poolgpu lacks.
    """
    return _adaptive_max_pool(1, "adaptive_max_pool1d", input, output_size, return_indices, device)


def adaptive_max_pool2d(input: Input, output_size: Union[int, Sequence[Optional[int]]], return_indices: bool = False,
                        *, device: Optional[Device] = None) -> Result:
    """``torch.nn.functional.adaptive_max_pool2d`` on poolgpu; see :func:`adaptive_max_pool1d`.

    Parameters
    ----------
    input : torch.Tensor, numpy.ndarray or pg.Tensor
        (N, C, H, W) or unbatched (C, H, W); the types of :func:`adaptive_max_pool1d`.
    output_size : int or tuple of (int or None)
        An int for both dimensions, or (H_out, W_out); None keeps the input's size.
    return_indices : bool, default False
        As :func:`adaptive_max_pool1d`'s.
    device : pg.Device, optional, keyword-only
        Where to run (see :func:`adaptive_max_pool1d`).

    Returns
    -------
    output, or (output, indices)
        As :func:`adaptive_max_pool1d`'s.

    Raises
    ------
    pg.ValidationError
        Where PyTorch raises, naming the argument; for a data type poolgpu lacks.
    """
    return _adaptive_max_pool(2, "adaptive_max_pool2d", input, output_size, return_indices, device)


def adaptive_max_pool3d(input: Input, output_size: Union[int, Sequence[Optional[int]]], return_indices: bool = False,
                        *, device: Optional[Device] = None) -> Result:
    """``torch.nn.functional.adaptive_max_pool3d`` on poolgpu; see :func:`adaptive_max_pool1d`.

    Parameters
    ----------
    input : torch.Tensor, numpy.ndarray or pg.Tensor
        (N, C, D, H, W) or unbatched (C, D, H, W); the types of :func:`adaptive_max_pool1d`.
    output_size : int or tuple of (int or None)
        An int for every dimension, or (D_out, H_out, W_out); None keeps the input's size.
    return_indices : bool, default False
        As :func:`adaptive_max_pool1d`'s.
    device : pg.Device, optional, keyword-only
        Where to run (see :func:`adaptive_max_pool1d`).

    Returns
    -------
    output, or (output, indices)
        As :func:`adaptive_max_pool1d`'s.

    Raises
    ------
    pg.ValidationError
        Where PyTorch raises, naming the argument; for a data type poolgpu lacks.
    """
    return _adaptive_max_pool(3, "adaptive_max_pool3d", input, output_size, return_indices, device)


def _adaptive_avg_pool(dims, function, input, output_size, device):
    call = Call(input, function, dims, FLOATS, device)
    sizes = _adaptive_sizes(call, dims, output_size)
    out_sizes = call.sizes[:2] + sizes

    def forward():
        if 0 in out_sizes:
            return (empty_result(out_sizes, call.dtype),)
        x = call.tensor()
        return (call.device.compile(AdaptiveAveragePoolingDesc(x.desc, output_size=sizes))(x),)

    def backward(dy: Tensor) -> Tensor:
        return _functional.adaptive_average_pool_grad(dy, call.sizes)

    return call.run(forward, backward)[0]


def adaptive_avg_pool1d(input: Input, output_size: Size, *, device: Optional[Device] = None) -> Output:
    """``torch.nn.functional.adaptive_avg_pool1d`` on poolgpu: output ``i`` is the average of
    input ``[floor(i * L / out), ceil((i + 1) * L / out))``.

    Parameters
    ----------
    input : torch.Tensor, numpy.ndarray or pg.Tensor
        (N, C, L) or unbatched (C, L); float32 or float16.
    output_size : int or tuple of int
        The output length: an int or a tuple of one int (0 gives an empty output).
    device : pg.Device, optional, keyword-only
        Where to run: default the pg.Tensor input's device, else ``pg.default_device()``.

    Returns
    -------
    output
        Of the input's kind and data type.

    Raises
    ------
    pg.ValidationError
        Where PyTorch raises (naming the argument), and for a data type poolgpu lacks.
    """
    return _adaptive_avg_pool(1, "adaptive_avg_pool1d", input, output_size, device)


def adaptive_avg_pool2d(input: Input, output_size: Union[int, Sequence[Optional[int]]], *,
                        device: Optional[Device] = None) -> Output:
    """``torch.nn.functional.adaptive_avg_pool2d`` on poolgpu; see :func:`adaptive_avg_pool1d`.

    Parameters
    ----------
    input : torch.Tensor, numpy.ndarray or pg.Tensor
        (N, C, H, W) or unbatched (C, H, W); float32 or float16.
    output_size : int or tuple of (int or None)
        An int for both dimensions, or (H_out, W_out); None keeps the input's size.
    device : pg.Device, optional, keyword-only
        Where to run (see :func:`adaptive_avg_pool1d`).

    Returns
    -------
    output
        Of the input's kind and data type.

    Raises
    ------
    pg.ValidationError
        Where PyTorch raises, naming the argument; for a data type poolgpu lacks.
    """
    return _adaptive_avg_pool(2, "adaptive_avg_pool2d", input, output_size, device)


def adaptive_avg_pool3d(input: Input, output_size: Union[int, Sequence[Optional[int]]], *,
                        device: Optional[Device] = None) -> Output:
    """``torch.nn.functional.adaptive_avg_pool3d`` on poolgpu; see :func:`adaptive_avg_pool1d`.

    Parameters
    ----------
    input : torch.Tensor, numpy.ndarray or pg.Tensor
        (N, C, D, H, W) or unbatched (C, D, H, W); float32 or float16.
    output_size : int or tuple of (int or None)
        An int for every dimension, or (D_out, H_out, W_out); None keeps the input's size.
    device : pg.Device, optional, keyword-only
        Where to run (see :func:`adaptive_avg_pool1d`).

    Returns
    -------
    output
        Of the input's kind and data type.

    Raises
    ------
    pg.ValidationError
        Where PyTorch raises, naming the argument; for a data type poolgpu lacks.
    """
    return _adaptive_avg_pool(3, "adaptive_avg_pool3d", input, output_size, device)