"""Max unpooling: ``max_unpool*``, taking PyTorch's per-plane int64 indices."""

from __future__ import annotations

import math
from typing import Optional, Sequence

import numpy as np
import torch

from .. import functional as _functional
from ..arguments import is_integer, shown
from ..descs import MaxUnpoolingDesc, made
from ..device import Device
from ..errors import ValidationError
from ..tensor import Tensor
from ..tensor_desc import TensorDesc
from ._arguments import from_tensor, sizes_arg
from ._call import MAX_TYPES, Call, Input, Output, Plan, Size, gradient_plan
from ._forms import function_forms
from ._ops import define_family, dispatch, torch_function

__all__ = ["max_unpool1d", "max_unpool2d", "max_unpool3d"]


def _indices_arg(indices, input, function: str):
    """PyTorch's int64 indices: a torch tensor for a torch input (the operator's argument)."""
    if not isinstance(indices, (torch.Tensor, Tensor, np.ndarray)):
        raise ValidationError("indices", f"{function}: expected the int64 indices max_pool returns (a tensor or "
                                         f"array), got {shown(indices)}")
    name = indices.dtype.name if isinstance(indices, Tensor) else str(indices.dtype).rpartition(".")[2]
    if name != "int64":
        raise ValidationError("indices", f"{function}: expected int64 indices (as max_pool returns), got {name}")
    if isinstance(input, torch.Tensor) and not isinstance(indices, torch.Tensor):
        return torch.from_numpy(indices.numpy() if isinstance(indices, Tensor) else indices)
    return indices


def _plan(function, input, indices, kernel, strides, padding, output_size, *, device):
    dims = len(kernel)
    call = Call(input, function, dims, MAX_TYPES, device)
    default = tuple((n - 1) * s + k - 2 * p for n, s, k, p in zip(call.sizes[2:], strides, kernel, padding))
    if output_size is None:
        sizes = default
    else:  # each within the stride of the default, as PyTorch checks
        sizes = tuple(output_size)
        for d, (o, s, size) in enumerate(zip(sizes, strides, default)):
            if not size - s < o < size + s:
                raise ValidationError("output_size", f"{function}: invalid output_size {sizes} (dimension {d} "
                                                     f"must be between {size - s} and {size + s}, exclusive)")
    if any(s < 0 for s in sizes):
        raise ValidationError("output_size", f"{function}: output sizes must be non-negative, got {sizes}")
    out_sizes = call.sizes[:2] + sizes
    call.check_output(out_sizes, "output_size" if output_size is not None else "kernel_size")
    shape = tuple(indices.shape)
    if ((1,) + shape if call.unbatched else shape) != call.sizes:
        raise ValidationError("indices", f"{function}: expected indices of the input's shape "
                                         f"{call.sizes[1:] if call.unbatched else call.sizes}, got {shape}")
    plane = math.prod(sizes)
    index_type = np.uint32 if math.prod(out_sizes) < 2**32 else np.uint64
    held = {}

    def global_indices() -> Tensor:
        """Each plane's indices checked and moved to its place in the whole output (on the host)."""
        if "indices" not in held:
            host = call.host_of(indices)
            bad = (host < 0) | (host >= plane)
            if bad.any():
                raise ValidationError("indices", f"{function}: found an invalid max index {host[bad].flat[0]} (the "
                                                 f"output planes have {plane} elements, {sizes})")
            offsets = np.arange(math.prod(call.sizes[:2]), dtype=np.int64).reshape(call.sizes[:2] + (1,) * dims)
            held["indices"] = call.device.upload((host + offsets * plane).astype(index_type))
        return held["indices"]

    def forward():
        x, idx = call.tensor(), global_indices()
        return call.compute(made(MaxUnpoolingDesc, x.desc, idx.desc, TensorDesc(x.data_type, out_sizes)), x, idx)

    return Plan(call, ((out_sizes, call.dtype),), forward), global_indices


def _gradient(function, grad_output, input, *arguments, device):
    plan, global_indices = _plan(function, input, *arguments, device=device)
    call = plan.call
    return gradient_plan(plan, lambda: (_functional.max_unpool_grad(call.upload(grad_output), global_indices()),))


define_family("max_unpool", "Tensor input, Tensor indices, int[] kernel_size, int[] stride, int[] padding, "
                            "int[]? output_size, int? device_key", lambda *a, **k: _plan(*a, **k)[0], _gradient,
              lambda form, _: torch_function(form))


def _max_unpool_form(dims: int):
    def max_unpool(input: Input, indices: Input, kernel_size: Size, stride: Optional[Size] = None, padding: Size = 0,
                   output_size: Optional[Sequence[int]] = None, *, device: Optional[Device] = None) -> Output:
        f = f"max_unpool{dims}d"
        # PyTorch reads these with _pair/_triple, which repeat an int but not a tuple of one
        one_each = (dims,)
        kernel = sizes_arg(kernel_size, dims, "kernel_size", f, lengths=one_each)
        strides = kernel if stride is None else sizes_arg(stride, dims, "stride", f, lengths=one_each)
        padding = sizes_arg(padding, dims, "padding", f, minimum=0, lengths=one_each)
        if output_size is not None:  # PyTorch: a sequence of dims (or dims + 2) ints
            # (while tracing, a tensor's sizes are 0-d tensors: read as the numbers they are)
            sizes = [from_tensor(s) for s in output_size] if isinstance(output_size, (tuple, list)) else None
            if sizes is None or len(sizes) not in (dims, dims + 2) or not all(is_integer(s) for s in sizes):
                raise ValidationError("output_size", f"{f}: expected a tuple of {dims} or {dims + 2} ints "
                                                     f"(e.g. the pooled input's shape), got {shown(output_size)}")
            output_size = [int(s) for s in sizes[-dims:]]
        return dispatch(f, input, _indices_arg(indices, input, f), kernel, strides, padding, output_size,
                        device=device)

    return max_unpool


max_unpool1d, max_unpool2d, max_unpool3d = function_forms("max_unpool", _max_unpool_form, """\
``torch.nn.functional.{name}`` on poolgpu: zeros except each input value at its index, as
:func:`max_pool{d}d` returns them.

Where indices repeat, the last value wins (as on PyTorch's CPU).

Parameters
----------
input : torch.Tensor, numpy.ndarray or pg.Tensor
    {shape}; float32, float16, bfloat16, int8, uint8, int16, int32 or int64.
indices : torch.Tensor, numpy.ndarray or pg.Tensor
    int64 positions within each (n, c) output plane, of the input's shape.
kernel_size : int or tuple of int
    The pooling's window: an int or a tuple of {d}.
stride : int or tuple of int, optional
    The pooling's step, an int or a tuple of {d}; None (default) is ``kernel_size``.
padding : int or tuple of int, default 0
    The pooling's padding (non-negative), an int or a tuple of {d}.
output_size : tuple of int, optional
    The output's spatial size (or its whole shape), each within ``stride`` of the default
    ``(n - 1) * stride + kernel_size - 2 * padding``; None: the default.
{device}

{returns}

{raises}
    An index outside its plane is an ``indices`` error.
""", __name__)
