"""Fractional max pooling: ``fractional_max_pool2d``, ``fractional_max_pool3d``."""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence, Tuple, Union

import numpy as np
import torch

from ..arguments import number, sequence, shown
from ..descs import FractionalMaxPoolingDesc, FractionalMaxPoolingGradDesc, made
from ..descs.fractional import SAMPLE_ORDER, window_starts
from ..device import Device
from ..dtypes import DataType
from ..errors import ValidationError
from ..tensor import Tensor
from ..tensor_desc import TensorDesc
from ._arguments import checked, return_flag, sizes_arg
from ._call import (FLOATS, BFLOAT16_BITS, Call, Input, Plan, Result, Size, as_float, gradient_plan, host_values,
                    of_type, plane_indices)
from ._forms import function_forms
from ._ops import define_family, dispatch, torch_function

__all__ = ["fractional_max_pool2d", "fractional_max_pool3d"]

Ratio = Union[float, Sequence[float]]


def _samples_type(value) -> str:
    """The name of an array's type (a torch tensor's, a pg.Tensor's, a NumPy array's)."""
    if isinstance(value, torch.Tensor):
        return str(value.dtype).rpartition(".")[2]
    if isinstance(value, Tensor):
        return value.data_type.name.lower()
    return value.dtype.name


def _check_samples(function: str, call: Call, samples, dims: int) -> None:
    """PyTorch's checks of ``_random_samples``: the input's type, (N' >= N, C, dims)."""
    name = _samples_type(samples) if isinstance(samples, (torch.Tensor, Tensor, np.ndarray)) else None
    if name != _samples_type(call.source):
        raise ValidationError("_random_samples", f"{function}: expected _random_samples of the input's type, got "
                                                 f"{shown(samples) if name is None else name}")
    shape = tuple(samples.shape)
    n, c = call.sizes[:2]
    if len(shape) != 3 or shape[0] < n or shape[1] != c or shape[2] != dims:
        raise ValidationError("_random_samples", f"{function}: expected _random_samples of shape (N, C, {dims}) "
                                                 f"with N at least the input's batch {n} and C = {c}, got {shape}")


def _plan(function, input, kernel, output_size, samples, *, device, return_indices=False):
    dims = len(kernel)
    call = Call(input, function, dims, FLOATS, device)
    call.require_nonzero()
    _check_samples(function, call, samples, dims)
    for axis, n, k, o in zip("DHW"[3 - dims:], call.sizes[2:], kernel, output_size):
        # (PyTorch's checks: output + kernel - 1 at most the input in 2d, below it in 3d)
        if o + k - 1 > n or (dims == 3 and o + k - 1 == n):
            bound = "at most" if dims == 2 else "below"
            raise ValidationError("kernel_size", f"{function}: a window of {k} is too large for {o} outputs along "
                                                 f"{axis} of an input of {n} (output + kernel - 1 {bound} the input, "
                                                 f"as PyTorch checks)")
    out_sizes = call.sizes[:2] + tuple(output_size)

    def uploaded_samples() -> Tuple[Tensor, bool]:
        """(the samples on the device, whether all lie in [0, 1)), PyTorch's windows checked."""
        host = samples.detach().cpu() if isinstance(samples, torch.Tensor) else samples
        if isinstance(host, torch.Tensor):
            host = host.view(torch.int16).numpy().view(BFLOAT16_BITS) if host.dtype == torch.bfloat16 else host.numpy()
        elif isinstance(host, Tensor):
            host = host_values(host)
        elif host.dtype.name == "bfloat16":
            host = host.view(BFLOAT16_BITS)
        host = np.ascontiguousarray(host[:call.sizes[0]])
        return call.upload_host(host), _windows_inside(function, call, as_float(host), kernel, output_size)

    def forward():
        x, (s, _) = call.tensor(), uploaded_samples()
        desc = made(FractionalMaxPoolingDesc, x.desc, s.desc,
                    output_indices=DataType.UINT32 if return_indices else None, window_size=tuple(kernel),
                    output_size=tuple(output_size))
        result = call.compute(desc, x, s)
        if not return_indices:
            return result
        return result[0], plane_indices(result[1], math.prod(call.sizes[2:]))

    indices = ((out_sizes, np.dtype(np.int64)),) if return_indices else ()
    return Plan(call, ((out_sizes, call.dtype),) + indices, forward), uploaded_samples


_DATA_TYPES = {np.dtype(np.float32): DataType.FLOAT32, np.dtype(np.float16): DataType.FLOAT16,
               BFLOAT16_BITS: DataType.BFLOAT16}


def _windows_inside(function: str, call: Call, samples: np.ndarray, kernel, output_size) -> bool:
    """Whether every sample lies in [0, 1), torch.rand's range, where poolgpu's gradient
    gather applies.  PyTorch applies its formula to any sample, and so does poolgpu; where
    a window would leave the input, PyTorch's CPU kernel stops with an internal assertion,
    and this is a ValidationError."""
    if ((samples >= 0) & (samples < 1)).all():
        return True
    dims = len(kernel)
    for axis, n, k, o in zip("dhw"[3 - dims:], call.sizes[2:], kernel, output_size):
        u = samples[..., SAMPLE_ORDER[dims][axis]]
        starts = window_starts(u, n, k, o, _DATA_TYPES[call.dtype])
        outside = (starts < 0) | (starts > n - k)
        if outside.any():
            where = tuple(int(i) for i in np.argwhere(outside)[0])
            raise ValidationError("_random_samples", f"{function}: the sample {u[where[:2]]:g} (plane {where[:2]}) "
                                                     f"puts window {where[2]} along {axis.upper()} at {starts[where]}, "
                                                     f"outside the input's {n} (PyTorch's CPU kernel stops with an "
                                                     f"internal assertion there); samples in [0, 1) always fit")
    return False


def _added_at(indices: np.ndarray, dy: np.ndarray, sizes: tuple, dtype: np.dtype) -> np.ndarray:
    """The input gradient: each dy added at its per-plane index, in the outputs' order and in
    dy's type, each sum rounded to it (PyTorch's CPU backward: ``gradInput[index] +=
    gradOutput``, plane by plane)."""
    planes, plane = sizes[0] * sizes[1], math.prod(sizes[2:])
    at = indices.reshape(planes, -1) + np.arange(planes)[:, None] * plane
    if dtype != BFLOAT16_BITS:
        dx = np.zeros(planes * plane, dtype)
        np.add.at(dx, at.ravel(), dy.reshape(planes, -1).ravel())
        return dx.reshape(sizes)
    dx, values = np.zeros(planes * plane, np.float32), as_float(dy.reshape(planes, -1)).astype(np.float32)
    for o in range(at.shape[1]):   # (each plane's o-th output at once: their indices differ)
        dx[at[:, o]] = as_float(of_type(dx[at[:, o]] + values[:, o], BFLOAT16_BITS))
    return of_type(dx, BFLOAT16_BITS).reshape(sizes)


def _gradient(function, grad_output, input, kernel, output_size, samples, *, device):
    plan, uploaded_samples = _plan(function, input, kernel, output_size, samples, device=device)
    call = plan.call

    def compute():
        s, inside = uploaded_samples()
        if not inside:  # poolgpu's gather bounds the windows covering an input for samples in [0, 1)
            indices = _plan(function, input, kernel, output_size, samples, device=device,
                            return_indices=True)[0].forward()[1]
            return (_added_at(indices, call.host_of(grad_output), call.sizes, call.dtype),)
        x, dy = call.tensor(), call.upload(grad_output)
        return call.compute(made(FractionalMaxPoolingGradDesc, x.desc, s.desc, dy.desc, window_size=tuple(kernel)),
                            x, s, dy)

    return gradient_plan(plan, compute)


def _exported(form: str, indices: bool):
    """``torch.nn.functional.<form>`` with the operator's arguments (what ONNX exports record;
    they have no fractional pooling and say so)."""
    function = torch_function(form, return_indices=indices)
    return lambda input, kernel, output_size, samples: function(input, kernel, output_size, _random_samples=samples)


define_family("fractional_max_pool", "Tensor input, int[] kernel_size, int[] output_size, Tensor samples, "
                                     "int? device_key", lambda *a, **k: _plan(*a, **k)[0], _gradient,
              _exported, with_indices=True, dims=(2, 3))


def _draw_samples(input, dims: int):
    """The samples PyTorch draws: ``torch.rand(N, C, dims, dtype=input.dtype)`` (N = 1 for an
    unbatched input), on the input's torch device; as an array for an array input."""
    shape = tuple(input.shape)
    batched = len(shape) == dims + 2
    size = (shape[0] if batched else 1, shape[-dims - 1] if len(shape) > dims else 1, dims)
    name = _samples_type(input)
    if name not in FLOATS:  # (the plan refuses the input's type, naming it)
        return torch.zeros(size) if isinstance(input, torch.Tensor) else np.zeros(size, np.float32)
    if isinstance(input, torch.Tensor):
        return torch.rand(size, dtype=input.dtype, device=input.device)
    drawn = torch.rand(size, dtype=getattr(torch, name))
    if name == "bfloat16":
        bits = drawn.view(torch.int16).numpy().view(BFLOAT16_BITS)
        return bits.view(input.dtype) if isinstance(input, np.ndarray) else _bits_tensor(bits, input)
    return drawn.numpy() if isinstance(input, np.ndarray) else input.device.upload(drawn.numpy())


def _as_torch(samples) -> torch.Tensor:
    """Samples given as a NumPy array or a pg.Tensor, for a torch input (the operator takes a
    tensor); bfloat16 by its bits."""
    values = host_values(samples) if isinstance(samples, Tensor) else np.asarray(samples)
    if _samples_type(samples) == "bfloat16":
        return torch.from_numpy(np.ascontiguousarray(values).view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(np.ascontiguousarray(values))


def _bits_tensor(bits: np.ndarray, like: Tensor) -> Tensor:
    t = like.device.upload(bits)
    return like.device.wrap(t.buffer, TensorDesc(DataType.BFLOAT16, t.sizes, t.desc.strides, t.desc.total_size_in_bytes),
                            t.offset)


def _output_sizes(function: str, dims: int, input, output_size: Any, output_ratio: Any) -> list:
    """PyTorch's output sizes: ``output_size`` (an int or a tuple of ``dims`` ints), else
    ``int(in * ratio)`` of ``output_ratio`` (a number or a tuple of ``dims``)."""
    if output_size is None and output_ratio is None:
        raise ValidationError("output_size", f"{function} requires specifying either an output_size or an "
                                             f"output_ratio")
    if output_size is not None:
        return list(sizes_arg(output_size, dims, "output_size", function, minimum=0, lengths=(dims,)))
    ratios = sequence(output_ratio, "output_ratio") if isinstance(output_ratio, (tuple, list)) else (output_ratio,) * dims
    if len(ratios) != dims:
        raise ValidationError("output_ratio", f"{function}: expected a number or a tuple of {dims} numbers, got "
                                              f"{shown(output_ratio)}")
    ratios = [checked(function, number, r, "output_ratio", positive=True) for r in ratios]
    shape = tuple(input.shape)
    return [int(n * r) for n, r in zip(shape[-dims:], ratios)]


def _fractional_form(dims: int):
    def fractional_max_pool(input: Input, kernel_size: Size, output_size: Optional[Size] = None,
                            output_ratio: Optional[Ratio] = None, return_indices: bool = False,
                            _random_samples: Optional[Input] = None, *, device: Optional[Device] = None) -> Result:
        f = f"fractional_max_pool{dims}d"
        kernel = list(sizes_arg(kernel_size, dims, "kernel_size", f, lengths=(dims,)))
        if not isinstance(input, (torch.Tensor, np.ndarray, Tensor)):
            raise ValidationError("input", f"{f} takes a torch.Tensor, a NumPy array or a pg.Tensor, "
                                           f"got {shown(input)}")
        sizes = _output_sizes(f, dims, input, output_size, output_ratio)
        samples = _draw_samples(input, dims) if _random_samples is None else _random_samples
        if isinstance(input, torch.Tensor) and isinstance(samples, (Tensor, np.ndarray)):
            samples = _as_torch(samples)
        suffix = "_with_indices" if return_flag(return_indices, f) else ""
        return dispatch(f + suffix, input, kernel, sizes, samples, device=device)

    return fractional_max_pool


fractional_max_pool2d, fractional_max_pool3d = function_forms("fractional_max_pool", _fractional_form, """\
``torch.nn.functional.{name}`` on poolgpu: the maximum over windows placed pseudo-randomly
(Graham's fractional max pooling), each (n, c) plane by its own samples.

PyTorch's windows, as its CPU kernel computes them from the samples: along each dimension,
``alpha = (in - kernel) / (out - 1)`` and window ``i < out - 1`` starts at ``int((i + u) *
alpha) - int(u * alpha)``, the last at ``in - kernel`` (in the input's type: float16 and
bfloat16 round every step).  Without ``_random_samples`` the samples are drawn as PyTorch
draws them, ``torch.rand(N, C, {d}, dtype=input.dtype)``, so under the same
``torch.manual_seed`` the result is PyTorch's.  Ties go to the first maximum in the window;
a window holding NaN gives NaN and the index of its first NaN (PyTorch's CPU: its last).
Differentiable: each window's gradient added at its argmax, in a deterministic gather.

Parameters
----------
input : torch.Tensor, numpy.ndarray or pg.Tensor
    {shape}; float32, float16 or bfloat16.
kernel_size : int or tuple of int
    The window: {sizes_exact}.
output_size : int or tuple of int, optional
    The output's spatial size: {sizes_exact}; ``output + kernel - 1`` at most the input's.
output_ratio : float or tuple of float, optional
    Instead of ``output_size``: the output's size as ``int(in * ratio)`` per dimension.
return_indices : bool, default False
    Also return the maxima's int64 positions within each (n, c) plane (what
    :func:`max_unpool{d}d` takes).
_random_samples : tensor, optional
    (N, C, {d}) samples in ``[0, 1)`` of the input's type, PyTorch's order (2d: W's, then
    H's; 3d: D's, H's, W's); None: drawn as PyTorch draws them.
{device}

Returns
-------
output, or (output, indices)
    Of the input's kind (torch, NumPy or poolgpu) and data type; indices int64.

{raises}
""", __name__, dims=(2, 3), sizes_exact=("an int for both dimensions or a tuple of 2 ints",
                                         "an int for every dimension or a tuple of 3 ints"))
