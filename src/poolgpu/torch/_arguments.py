"""PyTorch's argument rules for the pooling functions, and the window geometry they give.

The rules are those of ``torch.nn.functional`` and its argument parser (torch 2.13, found by
experiment): a bool argument takes only ``True`` or ``False`` (not 0, 1 or NumPy's bools);
an ``int`` or ``int[]`` argument takes Python and NumPy integers and integer tensors of one
element (an ``int[]`` also a tuple or list of them, or a 1-D integer tensor), never a bool
or a float.  Where PyTorch takes a value without a meaning (a negative ``max_unpool``
stride or padding, a longer tuple whose extra entries it ignores) poolgpu refuses it.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Optional

import torch

from ..arguments import COORDINATE_MAX, flag, integer, is_integer, per_dimension, shown
from ..errors import ValidationError
from ..shapes import ceil_mode_extension


def checked(function: str, check: Callable, *args, **kwargs):
    """``check(*args, **kwargs)`` (a shared check of poolgpu.arguments), its error naming
    ``function`` too."""
    try:
        return check(*args, **kwargs)
    except ValidationError as exc:
        raise exc.renamed(exc.field, f"{function}: ") from None


def from_tensor(value: Any) -> Any:
    """An integer torch tensor as PyTorch's parser reads it: one of no dimensions as its int,
    one of one dimension as a tuple of ints; anything else unchanged."""
    if isinstance(value, torch.Tensor) and not (value.is_floating_point() or value.is_complex()) \
            and value.dtype != torch.bool and value.dim() <= 1:
        return value.item() if value.dim() == 0 else tuple(value.tolist())
    return value


def boolean(value: Any, name: str, function: str) -> bool:
    """PyTorch's bool arguments: exactly ``True`` or ``False``."""
    if not isinstance(value, bool):
        raise ValidationError(name, f"{function}: expected True or False, got {shown(value)}")
    return value


def return_flag(value: Any, function: str) -> bool:
    """``return_indices``: PyTorch reads it as a Python truth value; poolgpu takes the values
    that mean one (True, False, NumPy's bools, 0, 1) and refuses the rest as mistakes."""
    return checked(function, flag, value, "return_indices")


def integer_arg(value: Any, name: str, function: str, *, minimum: Optional[int] = None) -> int:
    """An ``int`` argument (``divisor_override``)."""
    return checked(function, integer, from_tensor(value), name, minimum=minimum)


def sizes_arg(value: Any, dims: int, name: str, function: str, *, minimum: int = 1,
              lengths: Optional[tuple] = None) -> tuple:
    """An ``int[]`` argument: an int, or a tuple or list of 1 or ``dims`` ints (``lengths``
    where given: the lengths a sequence may have), as ``dims`` ints of at least ``minimum``
    and at most 2**31 - 1 (PyTorch's pooling reads them as 32-bit ints)."""
    value = from_tensor(value)
    lengths = (1, dims) if lengths is None else lengths
    if isinstance(value, (tuple, list)) and lengths:
        value = tuple(from_tensor(v) for v in value)
        if len(value) not in lengths:
            want = " or ".join(str(n) for n in sorted(set(lengths)))
            raise ValidationError(name, f"{function}: expected an int or a tuple of {want} ints, got {shown(value)}")
    elif not is_integer(value):
        want = f"an int or a tuple of {dims} ints" if lengths else "an int"
        raise ValidationError(name, f"{function}: expected {want}, got {shown(value)}")
    return checked(function, per_dimension, value, name, dims, minimum=minimum, maximum=COORDINATE_MAX)


def no_stride(stride: Any) -> bool:
    """PyTorch's default stride (the kernel size): None or an empty tuple or list."""
    return stride is None or (isinstance(stride, (tuple, list)) and len(stride) == 0)


@functools.lru_cache(maxsize=512)
def geometry(function: str, spatial: tuple, kernel: tuple, stride: tuple, padding: tuple, dilation: tuple,
             ceil_mode: bool, check_input_size: bool) -> tuple:
    """PyTorch's checks and output sizes of a fixed-window pooling, and the DirectML window
    that computes it: (window fields, output spatial sizes)."""
    if any(p > k // 2 for p, k in zip(padding, kernel)):
        raise ValidationError("padding", f"{function}: padding must be at most half of kernel_size, got padding "
                                         f"{padding} and kernel_size {kernel}")
    if check_input_size and any(n < k for n, k in zip(spatial, kernel)):
        raise ValidationError("kernel_size", f"{function}: the input's spatial sizes {spatial} are smaller than "
                                             f"kernel_size {kernel}")
    out, end = [], []
    for n, k, s, p, d in zip(spatial, kernel, stride, padding, dilation):
        extent = (k - 1) * d + 1
        o, extra = ceil_mode_extension(n, p, p, extent, s) if ceil_mode else ((n + 2 * p - extent) // s + 1, 0)
        out.append(o)
        end.append(p + extra)
    if any(o < 1 for o in out):
        raise ValidationError("kernel_size", f"{function}: the input's spatial sizes {spatial} are too small for "
                                             f"kernel_size {kernel} with padding {padding} and dilation {dilation} "
                                             f"(the output would be {tuple(out)})")
    fields = dict(window_size=kernel, strides=stride, start_padding=padding, end_padding=tuple(end),
                  dilations=dilation)
    return fields, tuple(out)


def window_args(dims: int, function: str, kernel_size: Any, stride: Any, padding: Any, dilation: Any,
                ceil_mode: Any, kernel: Optional[tuple] = None) -> tuple:
    """The checked window arguments of a fixed-window pooling, as the custom operators take
    them: (kernel_size, stride, padding, dilation, ceil_mode).  ``kernel``: ``kernel_size``
    already read."""
    arguments = (kernel_size, stride, padding, dilation)
    if kernel is None and type(ceil_mode) is bool and all(_plain_ints(a) for a in arguments) \
            and not torch.compiler.is_compiling():   # (Dynamo warns of a cache it would bypass)
        # (the same few window arguments on every call of a model's layer: checked once)
        return _checked_window(dims, function, *arguments, ceil_mode)
    return _window_args(dims, function, *arguments, ceil_mode, kernel)


def _plain_ints(value: Any) -> bool:
    """Whether ``value`` is None, an int or a tuple of ints (no bools, which equal ints as
    keys): arguments whose checked form a cache may keep."""
    return value is None or type(value) is int or (type(value) is tuple and all(type(v) is int for v in value))


@functools.lru_cache(maxsize=256)
def _checked_window(dims: int, function: str, kernel_size, stride, padding, dilation, ceil_mode: bool) -> tuple:
    return _window_args(dims, function, kernel_size, stride, padding, dilation, ceil_mode)


def _window_args(dims: int, function: str, kernel_size: Any, stride: Any, padding: Any, dilation: Any,
                 ceil_mode: Any, kernel: Optional[tuple] = None) -> tuple:
    f = function
    kernel = kernel or sizes_arg(kernel_size, dims, "kernel_size", f)
    strides = kernel if no_stride(stride) else sizes_arg(stride, dims, "stride", f)
    return (kernel, strides, sizes_arg(padding, dims, "padding", f, minimum=0),
            sizes_arg(dilation, dims, "dilation", f), boolean(ceil_mode, "ceil_mode", f))
