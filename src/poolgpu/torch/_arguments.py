"""PyTorch's argument rules for the pooling functions, and the window geometry they give."""

from __future__ import annotations

import functools
import operator

import numpy as np

from ..errors import ValidationError
from ._call import Call


def integer_arg(value, name: str, function: str) -> int:
    if isinstance(value, (bool, np.bool_)):
        raise ValidationError(name, f"{function}: expected integers, got {value!r}")
    try:
        return operator.index(value)
    except TypeError:
        raise ValidationError(name, f"{function}: expected integers, got {value!r}") from None


def sizes_arg(value, dims: int, name: str, function: str) -> tuple:
    """An int or a sequence of 1 or ``dims`` ints, as ``dims`` ints (PyTorch's _pair, _triple)."""
    if not isinstance(value, (str, bytes)) and hasattr(value, "__len__"):
        items = tuple(integer_arg(v, name, function) for v in value)
        if len(items) == 1:
            items *= dims
        if len(items) != dims:
            raise ValidationError(name, f"{function}: {name} must be a single int or a tuple of {dims} ints, "
                                        f"got {tuple(value)}")
        return items
    return (integer_arg(value, name, function),) * dims


@functools.lru_cache(maxsize=512)
def geometry(function: str, spatial: tuple, kernel: tuple, stride: tuple, padding: tuple, dilation: tuple,
              ceil_mode: bool, check_input_size: bool):
    """PyTorch's checks and output sizes of a fixed-window pooling, and the DirectML window
    that computes it: (window fields, output spatial sizes)."""
    for name, values in (("kernel_size", kernel), ("stride", stride), ("dilation", dilation)):
        if any(v <= 0 for v in values):
            raise ValidationError(name, f"{function}: {name} must be greater than zero, got {values}")
    if any(p < 0 for p in padding):
        raise ValidationError("padding", f"{function}: padding must be non-negative, got {padding}")
    if any(p > k // 2 for p, k in zip(padding, kernel)):
        raise ValidationError("padding", f"{function}: padding must be at most half of kernel_size, got padding "
                                         f"{padding} and kernel_size {kernel}")
    if check_input_size and any(n < k for n, k in zip(spatial, kernel)):
        raise ValidationError("kernel_size", f"{function}: the input's spatial sizes {spatial} are smaller than "
                                             f"kernel_size {kernel}")
    out, end = [], []
    for n, k, s, p, d in zip(spatial, kernel, stride, padding, dilation):
        extent = (k - 1) * d + 1
        o = (n + 2 * p - extent + (s - 1 if ceil_mode else 0)) // s + 1
        if ceil_mode and (o - 1) * s >= n + p:  # the last window would start in the end padding
            o -= 1
        out.append(o)
        end.append(p + max(0, (o - 1) * s + extent - n - 2 * p))  # ceil_mode's extra end padding
    if any(o < 1 for o in out):
        raise ValidationError("kernel_size", f"{function}: the input's spatial sizes {spatial} are too small for "
                                             f"kernel_size {kernel} with padding {padding} and dilation {dilation} "
                                             f"(the output would be {tuple(out)})")
    fields = dict(window_size=kernel, strides=stride, start_padding=padding, end_padding=tuple(end),
                  dilations=dilation)
    return fields, tuple(out)


def window(call: Call, dims: int, kernel_size, stride, padding, dilation, ceil_mode, check_input_size=False):
    f = call.function
    kernel = sizes_arg(kernel_size, dims, "kernel_size", f)
    no_stride = stride is None or (hasattr(stride, "__len__") and len(stride) == 0)
    strides = kernel if no_stride else sizes_arg(stride, dims, "stride", f)
    return geometry(f, call.sizes[2:], kernel, strides, sizes_arg(padding, dims, "padding", f),
                     sizes_arg(dilation, dims, "dilation", f), bool(ceil_mode), check_input_size)
