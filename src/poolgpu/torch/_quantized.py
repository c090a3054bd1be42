"""Quantized tensors (per-tensor ``torch.quint8``, ``torch.qint8``) in ``max_pool2d``,
``avg_pool2d`` and ``adaptive_avg_pool2d``, with the results of PyTorch's CPU kernels (its
default x86 and fbgemm engines), their scale and zero point those of the input, as PyTorch
gives them.

PyTorch has two kernels of each average (docs/semantics.md writes their arithmetic out):
one for contiguous inputs and one for inputs contiguous in channels_last (4-D tensors whose
channels are innermost, C = 1 and 1 x 1 planes among them), whose vectorised channels (the
first multiple of 8 on AVX2, of 16 on AVX-512) round before adding the zero point.  Which
one, and how many channels it vectorises, is read from the input and from
``torch.backends.cpu.get_cpu_capability()``, so the results are this process's PyTorch's.
Quantized tensors do not go through the custom operators (PyTorch's QuantizedCPU tensors
have no autograd and do not compile)."""

from __future__ import annotations

from typing import Optional

import numpy as np
import torch

from .. import functional as _functional
from ..device import Device, default_device
from ..errors import ValidationError
from ._arguments import geometry
from ._call import checked_device

__all__ = ["is_quantized", "check_two_values", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d"]

_TYPES = {torch.quint8: np.uint8, torch.qint8: np.int8}
_VECTOR_LANES = {"AVX2": 8, "AVX512": 16}   # quantized channels per vector of PyTorch's x86 kernels


def is_quantized(input) -> bool:
    """Whether ``input`` is a quantized torch tensor (which the functions here take)."""
    return isinstance(input, torch.Tensor) and input.is_quantized


class _Quantized:
    """A quantized input: its integer values batched as NumPy {N, C, H, W}, scale, zero point
    and layout, and how results go back (``give``)."""

    def __init__(self, input: torch.Tensor, function: str, device: Optional[Device]):
        if input.qscheme() != torch.per_tensor_affine:
            raise ValidationError("input", f"{function} takes per-tensor quantized tensors (torch.per_tensor_affine), "
                                           f"got {input.qscheme()}: dequantize it, or quantize it per tensor")
        if input.dtype not in _TYPES:
            raise ValidationError("input", f"{function} takes quantized tensors of torch.quint8 or torch.qint8, got "
                                           f"{input.dtype}")
        if input.dim() not in (3, 4):
            raise ValidationError("input", f"{function} expects a 3-D or 4-D input ((C, H, W) or (N, C, H, W)), got "
                                           f"shape {tuple(input.shape)}")
        if any(n == 0 for n in input.shape[1:]):
            raise ValidationError("input", f"{function}: the input's sizes must be positive, got {tuple(input.shape)}")
        self.function, self.input = function, input
        self.unbatched = input.dim() == 3
        # PyTorch takes its channels_last kernels for 4-D inputs contiguous so (C = 1 among them)
        self.channels_last = input.dim() == 4 and input.is_contiguous(memory_format=torch.channels_last)
        values = input.int_repr().cpu().numpy()
        self.values = values[None] if self.unbatched else values
        self.scale, self.zero = np.float32(input.q_scale()), int(input.q_zero_point())
        self.device = checked_device(device, function) or default_device()

    @property
    def vectorized_channels(self) -> int:
        """The channels PyTorch's channels_last average kernel rounds as vectors (0 for contiguous inputs)."""
        lanes = _VECTOR_LANES.get(torch.backends.cpu.get_cpu_capability(), 0)
        channels = self.values.shape[1]
        return channels - channels % lanes if self.channels_last and lanes else 0

    def give(self, values: np.ndarray) -> torch.Tensor:
        """Integer results as a quantized tensor of the input's scale, zero point, layout and device."""
        t = torch.from_numpy(np.ascontiguousarray(values[0] if self.unbatched else values))
        if self.channels_last and t.dim() == 4:
            t = t.contiguous(memory_format=torch.channels_last)
        q = torch._make_per_tensor_quantized_tensor(t, self.input.q_scale(), self.input.q_zero_point())
        return q.to(self.input.device)


def check_two_values(function: str, **arguments) -> None:
    """PyTorch's quantized max_pool2d reads its kernel_size, stride, padding and dilation as an
    int or two values: one value in a sequence it refuses, or misreads (padding ``(p,)`` as
    ``(p, 0)``); poolgpu refuses it."""
    for name, value in arguments.items():
        if isinstance(value, (tuple, list)) and len(value) == 1:
            raise ValidationError(name, f"{function} of a quantized tensor takes an int or 2 values for {name}, as "
                                        f"PyTorch's quantized kernel does, got {value!r}")


def max_pool2d(input: torch.Tensor, kernel, stride, padding, dilation, ceil_mode, return_indices: bool,
               device: Optional[Device]) -> torch.Tensor:
    """PyTorch's quantized max_pool2d: the maximum of each window of the integer values (the
    scale is positive: the order of the values is theirs)."""
    f = "max_pool2d"
    if return_indices:  # (as PyTorch refuses)
        raise ValidationError("return_indices", f"{f}: PyTorch's quantized max pooling has no indices; dequantize the "
                                                "input for them")
    q = _Quantized(input, f, device)
    fields, _ = geometry(f, q.values.shape[2:], kernel, stride, padding, dilation, ceil_mode, False)
    return q.give(_functional.max_pool(q.values, device=q.device, **fields))


def avg_pool2d(input: torch.Tensor, kernel, stride, padding, ceil_mode, count_include_pad: bool,
               divisor_override: Optional[int], device: Optional[Device]) -> torch.Tensor:
    """PyTorch's quantized avg_pool2d: ``round(A * m + zero)`` with A the window's integer sum
    minus zero times its count and m = 1 / divisor in float32 (or ``round(A * m) + zero`` in
    the channels PyTorch's channels_last kernel vectorises)."""
    f = "avg_pool2d"
    q = _Quantized(input, f, device)
    fields, _ = geometry(f, q.values.shape[2:], kernel, stride, padding, (1, 1), ceil_mode, False)
    scale = q.device.upload(np.full((1, 1, 1, 1), q.scale, np.float32))
    x_scale = scale
    if divisor_override is not None and divisor_override < 0:  # m = 1 / divisor, negative: the input scale negated
        x_scale = q.device.upload(np.full((1, 1, 1, 1), -q.scale, np.float32))
        divisor_override = -divisor_override
    zero = q.device.upload(np.full((1, 1, 1, 1), q.zero, q.values.dtype))
    y = _functional.quantized_average_pool(
        q.device.upload(q.values), x_scale, zero, scale, zero, include_padding=count_include_pad,
        counted_end_padding=fields["start_padding"], divisor_override=divisor_override, rounding="pytorch",
        vectorized_channels=q.vectorized_channels, **fields)
    return q.give(y.numpy())


def adaptive_avg_pool2d(input: torch.Tensor, output_size: list, device: Optional[Device]) -> torch.Tensor:
    """PyTorch's quantized adaptive_avg_pool2d: of a contiguous input ``round(X * r)``, X the
    bin's integer sum and r = 1 / kH / kW in float32; of a channels_last one, where the bins
    are a fixed window (the input's sizes multiples of the output's), avg_pool2d's
    arithmetic over it, and elsewhere the contiguous input's (docs/torch.md: where they
    differ)."""
    f = "adaptive_avg_pool2d"
    q = _Quantized(input, f, device)
    spatial = q.values.shape[2:]
    sizes = tuple(n if s is None else s for s, n in zip(output_size, spatial))
    if any(s == 0 for s in sizes):   # (PyTorch gives an empty output)
        return q.give(np.zeros(q.values.shape[:2] + sizes, q.values.dtype))
    if q.channels_last and all(n % s == 0 for n, s in zip(spatial, sizes)):
        window = tuple(n // s for n, s in zip(spatial, sizes))
        scale = np.float32(q.scale)
        # (PyTorch's vectorised channels of this kernel fuse A * m + zero into one rounding: the
        # rest's arithmetic, docs/torch.md)
        y = _functional.quantized_average_pool(q.values, scale, q.zero, scale, q.zero, window, window,
                                               device=q.device, rounding="pytorch")
        return q.give(y)
    return q.give(_functional.adaptive_average_pool(q.values, sizes, device=q.device))
