"""Max unpooling: ``max_unpool*``, taking PyTorch's per-plane int64 indices."""

from __future__ import annotations

import math
from typing import Optional, Sequence

import numpy as np
import torch

from .. import functional as _functional
from ..arguments import shown
from ..descs import MaxUnpoolingDesc
from ..device import Device
from ..tensor import Tensor
from ..errors import ValidationError
from ..tensor_desc import TensorDesc
from ._arguments import sizes_arg
from ._call import MAX_TYPES, Call, Input, Output, Size, empty_result

__all__ = ["max_unpool1d", "max_unpool2d", "max_unpool3d"]


def _host_indices(indices, call: Call) -> np.ndarray:
    """PyTorch's int64 indices as a batched host array of the input's sizes."""
    f = call.function
    if isinstance(indices, torch.Tensor):
        if indices.dtype != torch.int64:
            raise ValidationError("indices", f"{f}: expected int64 indices (as max_pool returns), got {indices.dtype}")
        array = indices.detach().cpu().numpy()
    elif isinstance(indices, (Tensor, np.ndarray)):
        array = indices.numpy() if isinstance(indices, Tensor) else indices
        if array.dtype != np.int64:
            raise ValidationError("indices", f"{f}: expected int64 indices (as max_pool returns), got {array.dtype}")
    else:
        raise ValidationError("indices", f"{f}: expected the int64 indices max_pool returns (a tensor or array), "
                                         f"got {shown(indices)}")
    if call.unbatched:
        array = array[None]
    if array.shape != call.sizes:
        shape = call.sizes[1:] if call.unbatched else call.sizes
        raise ValidationError("indices", f"{f}: expected indices of the input's shape {shape}, got {np.shape(indices)}")
    return array


def _max_unpool(dims, function, input, indices, kernel_size, stride, padding, output_size, device):
    call = Call(input, function, dims, MAX_TYPES, device)
    # PyTorch's max_unpool reads these with _pair/_triple, which repeat an int but not a tuple of one
    one_each = (dims,)
    kernel = sizes_arg(kernel_size, dims, "kernel_size", function, lengths=one_each)
    strides = kernel if stride is None else sizes_arg(stride, dims, "stride", function, lengths=one_each)
    padding = sizes_arg(padding, dims, "padding", function, minimum=0, lengths=one_each)
    default = tuple((n - 1) * s + k - 2 * p for n, s, k, p in zip(call.sizes[2:], strides, kernel, padding))
    if output_size is None:
        sizes = default
    else:  # PyTorch: a sequence of dims (or dims + 2) Python ints, each within the stride of the default
        if not isinstance(output_size, (tuple, list)) or len(output_size) not in (dims, dims + 2) \
                or not all(isinstance(s, int) and not isinstance(s, bool) for s in output_size):
            raise ValidationError("output_size", f"{function}: expected a tuple of {dims} or {dims + 2} ints "
                                                 f"(e.g. the pooled input's shape), got {shown(output_size)}")
        sizes = tuple(output_size[-dims:])
        for d, (o, s, size) in enumerate(zip(sizes, strides, default)):
            if not size - s < o < size + s:
                raise ValidationError("output_size", f"{function}: invalid output_size {sizes} (dimension {d} "
                                                     f"must be between {size - s} and {size + s}, exclusive)")
    if any(s < 0 for s in sizes):
        raise ValidationError("output_size", f"{function}: output sizes must be non-negative, got {sizes}")
    out_sizes = call.sizes[:2] + sizes
    call.check_output(out_sizes, "output_size" if output_size is not None else "kernel_size")
    plane = math.prod(sizes)
    host = _host_indices(indices, call)
    bad = (host < 0) | (host >= plane)
    if bad.any():
        raise ValidationError("indices", f"{function}: found an invalid max index {host[bad].flat[0]} (the output "
                                         f"planes have {plane} elements, {sizes})")
    index_type = np.uint32 if math.prod(out_sizes) < 2**32 else np.uint64
    holder = {}

    def global_indices() -> Tensor:  # each plane's indices moved to its place in the whole output (on the host)
        if "indices" not in holder:
            offsets = np.arange(math.prod(call.sizes[:2]), dtype=np.int64).reshape(call.sizes[:2] + (1,) * dims)
            holder["indices"] = call.device.upload((host + offsets * plane).astype(index_type))
        return holder["indices"]

    def forward():
        if 0 in out_sizes or 0 in call.sizes:
            return (empty_result(out_sizes, call.dtype),)
        x, idx = call.tensor(), global_indices()
        return (call.device.compile(MaxUnpoolingDesc(x.desc, idx.desc, TensorDesc(x.data_type, out_sizes)))(x, idx),)

    def backward(dy: Tensor) -> Tensor:
        return _functional.max_unpool_grad(dy, global_indices())

    return call.run(forward, backward)[0]


def max_unpool1d(input: Input, indices: Input, kernel_size: Size, stride: Optional[Size] = None, padding: Size = 0,
                 output_size: Optional[Sequence[int]] = None, *, device: Optional[Device] = None) -> Output:
    """``torch.nn.functional.max_unpool1d`` on poolgpu: zeros except each input value at its
    index, as :func:`max_pool1d` returns them.

    Where indices repeat, the last value wins (as on PyTorch's CPU).

    Parameters
    ----------
    input : torch.Tensor, numpy.ndarray or pg.Tensor
        (N, C, L) or unbatched (C, L); float32, float16, int8, uint8, int16, int32 or int64.
    indices : torch.Tensor, numpy.ndarray or pg.Tensor
        int64 positions within each (n, c) output plane, of the input's shape.
    kernel_size : int or tuple of int
        The pooling's window.
    stride : int or tuple of int, optional
        The pooling's step; None (default) is ``kernel_size``.
    padding : int or tuple of int, default 0
        The pooling's padding (non-negative).
    output_size : tuple of int, optional
        The output's spatial size (or its whole shape), each within ``stride`` of the
        default ``(L - 1) * stride + kernel_size - 2 * padding``; None: the default.
    device : pg.Device, optional, keyword-only
        Where to run: default the pg.Tensor input's device, else ``pg.default_device()``.

    Returns
    -------
    output
        Of the input's kind and data type.

    Raises
    ------
    pg.ValidationError
        Where PyTorch raises (naming the argument: an index outside its plane is an
        ``indices`` error), and for a data type poolgpu lacks.
    """
    return _max_unpool(1, "max_unpool1d", input, indices, kernel_size, stride, padding, output_size, device)


def max_unpool2d(input: Input, indices: Input, kernel_size: Size, stride: Optional[Size] = None, padding: Size = 0,
                 output_size: Optional[Sequence[int]] = None, *, device: Optional[Device] = None) -> Output:
    """``torch.nn.functional.max_unpool2d`` on poolgpu; see :func:`max_unpool1d`.

    Parameters
    ----------
    input : torch.Tensor, numpy.ndarray or pg.Tensor
        (N, C, H, W) or unbatched (C, H, W); the types of :func:`max_unpool1d`.
    indices : torch.Tensor, numpy.ndarray or pg.Tensor
        int64 positions within each (n, c) output plane, as :func:`max_pool2d` returns them.
    kernel_size : int or tuple of int
        The pooling's window, an int or (kH, kW).
    stride, padding : int or tuple of int, optional
        The pooling's: an int, or one per dimension (defaults None, 0).
    output_size : tuple of int, optional
        (H, W) or (N, C, H, W), as :func:`max_unpool1d`'s.
    device : pg.Device, optional, keyword-only
        Where to run (see :func:`max_unpool1d`).

    Returns
    -------
    output
        Of the input's kind and data type.

    Raises
    ------
    pg.ValidationError
        As :func:`max_unpool1d`.
    """
    return _max_unpool(2, "max_unpool2d", input, indices, kernel_size, stride, padding, output_size, device)


def max_unpool3d(input: Input, indices: Input, kernel_size: Size, stride: Optional[Size] = None, padding: Size = 0,
                 output_size: Optional[Sequence[int]] = None, *, device: Optional[Device] = None) -> Output:
    """``torch.nn.functional.max_unpool3d`` on poolgpu; see :func:`max_unpool1d`.

    Parameters
    ----------
    input : torch.Tensor, numpy.ndarray or pg.Tensor
        (N, C, D, H, W) or unbatched (C, D, H, W); the types of :func:`max_unpool1d`.
    indices : torch.Tensor, numpy.ndarray or pg.Tensor
        int64 positions within each (n, c) output plane, as :func:`max_pool3d` returns them.
    kernel_size : int or tuple of int
        The pooling's window, an int or (kD, kH, kW).
    stride, padding : int or tuple of int, optional
        The pooling's: an int, or one per dimension (defaults None, 0).
    output_size : tuple of int, optional
        (D, H, W) or (N, C, D, H, W), as :func:`max_unpool1d`'s.
    device : pg.Device, optional, keyword-only
        Where to run (see :func:`max_unpool1d`).

    Returns
    -------
    output
        Of the input's kind and data type.

    Raises
    ------
    pg.ValidationError
        As :func:`max_unpool1d`.
    """
    return _max_unpool(3, "max_unpool3d", input, indices, kernel_size, stride, padding, output_size, device)