"""Adaptive pooling: ``adaptive_max_pool*``, ``adaptive_avg_pool*``."""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence, Union

import numpy as np

from .. import functional as _functional
from ..arguments import shown
from ..descs import AdaptiveAveragePoolingDesc, AdaptiveMaxPoolingDesc, made
from ..device import Device
from ..dtypes import DataType
from ..errors import ValidationError
from . import _quantized as quantized
from ._arguments import return_flag, sizes_arg
from ._call import FLOATS, MAX_TYPES, Call, Input, Output, Plan, Result, gradient_plan, plane_indices
from ._forms import function_forms
from ._ops import define_family, dispatch, torch_function

__all__ = ["adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d",
           "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d"]

OutputSize = Union[int, Sequence[Optional[int]]]


#: In the operators' ``output_size``: the input's size (a None of the public functions).  An
#: ``int?[]`` argument would keep None, but torch.jit.trace records no list of optionals.
KEEP = -1


def _output_size_arg(dims: int, function: str, output_size: Any) -> list:
    """PyTorch's output_size forms: adaptive_*_pool1d's is an int[1] (an int or one int); 2d
    and 3d take an int (a Python int) or a tuple or list of ``dims`` entries, each an int or
    None (the input's size, read in the plan: KEEP)."""
    f = function
    if dims == 1 or (isinstance(output_size, int) and not isinstance(output_size, bool)):
        return list(sizes_arg(output_size, dims, "output_size", f, minimum=0, lengths=(1,) if dims == 1 else None))
    if isinstance(output_size, (tuple, list)) and len(output_size) == dims:
        given = [s for s in output_size if s is not None]
        checked = iter(sizes_arg(given, len(given), "output_size", f, minimum=0, lengths=(len(given),))) if given \
            else iter(())
        return [KEEP if s is None else next(checked) for s in output_size]
    raise ValidationError("output_size", f"{f}: expected an int or a tuple of {dims} ints or Nones, "
                                         f"got {shown(output_size)}")


def _plan(types: tuple):
    """The plan of an adaptive pooling on ``types``."""

    def plan(function, input, output_size, *, device, return_indices=False):
        dims = len(output_size)
        call = Call(input, function, dims, types, device)
        if any(n == 0 for n in call.sizes[2:]):
            raise ValidationError("input", f"{function}: the input's spatial sizes must be positive, "
                                           f"got {call.sizes[2:]}")
        sizes = tuple(n if s == KEEP else s for s, n in zip(output_size, call.sizes[2:]))
        out_sizes = call.sizes[:2] + sizes
        call.check_output(out_sizes, "output_size")
        if types == FLOATS:
            def forward():
                x = call.tensor()
                return call.compute(made(AdaptiveAveragePoolingDesc, x.desc, output_size=sizes), x)
        else:
            def forward():
                x = call.tensor()
                desc = made(AdaptiveMaxPoolingDesc, x.desc,
                            output_indices=DataType.UINT32 if return_indices else None, output_size=sizes)
                result = call.compute(desc, x)
                if not return_indices:
                    return result
                return result[0], plane_indices(result[1], math.prod(call.sizes[2:]))
        indices = ((out_sizes, np.dtype(np.int64)),) if return_indices else ()
        return Plan(call, ((out_sizes, call.dtype),) + indices, forward)

    return plan


def _adaptive_max_gradient(function, grad_output, input, output_size, *, device):
    plan = _plan(MAX_TYPES)(function, input, output_size, device=device)
    call = plan.call
    return gradient_plan(plan, lambda: (_functional.adaptive_max_pool_grad(call.tensor(), call.upload(grad_output)),))


def _adaptive_avg_gradient(function, grad_output, input, output_size, *, device):
    plan = _plan(FLOATS)(function, input, output_size, device=device)
    call = plan.call
    return gradient_plan(plan, lambda: (_functional.adaptive_average_pool_grad(call.upload(grad_output), call.sizes),))


def _exported(form: str, indices: bool):
    """``torch.nn.functional.<form>`` with the operator's arguments (what ONNX exports record)."""
    function = torch_function(form, **(dict(return_indices=indices) if form.startswith("adaptive_max") else {}))
    return lambda input, output_size: function(input, [None if s == KEEP else s for s in output_size])


define_family("adaptive_max_pool", "Tensor input, int[] output_size, int? device_key", _plan(MAX_TYPES),
              _adaptive_max_gradient, _exported, with_indices=True)
define_family("adaptive_avg_pool", "Tensor input, int[] output_size, int? device_key", _plan(FLOATS),
              _adaptive_avg_gradient, _exported)


def _adaptive_max_form(dims: int):
    def adaptive_max_pool(input: Input, output_size: OutputSize, return_indices: bool = False, *,
                          device: Optional[Device] = None) -> Result:
        f = f"adaptive_max_pool{dims}d"
        sizes = _output_size_arg(dims, f, output_size)
        suffix = "_with_indices" if return_flag(return_indices, f) else ""
        return dispatch(f + suffix, input, sizes, device=device)

    return adaptive_max_pool


def _adaptive_avg_form(dims: int):
    def adaptive_avg_pool(input: Input, output_size: OutputSize, *, device: Optional[Device] = None) -> Output:
        f = f"adaptive_avg_pool{dims}d"
        sizes = _output_size_arg(dims, f, output_size)
        if dims == 2 and quantized.is_quantized(input):
            return quantized.adaptive_avg_pool2d(input, [None if s == KEEP else s for s in sizes], device)
        return dispatch(f, input, sizes, device=device)

    return adaptive_avg_pool


_BINS = "output ``i`` of each dimension is the {what} of input ``[floor(i * n / out), ceil((i + 1) * n / out))``"

adaptive_max_pool1d, adaptive_max_pool2d, adaptive_max_pool3d = function_forms(
    "adaptive_max_pool", _adaptive_max_form, """\
``torch.nn.functional.{name}`` on poolgpu: {bins}.

Parameters
----------
input : torch.Tensor, numpy.ndarray or pg.Tensor
    {shape}; float32, float16, bfloat16, int8, uint8, int16, int32 or int64.
output_size : int or tuple of (int or None)
    The output's spatial size: {output_size}; 0 gives an empty output.
return_indices : bool, default False
    Also return the maxima's int64 positions within each (n, c) plane.
{device}

Returns
-------
output, or (output, indices)
    Of the input's kind and data type; indices int64.

{raises}
""".replace("{bins}", _BINS.format(what="maximum")), __name__)

adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d = function_forms(
    "adaptive_avg_pool", _adaptive_avg_form, """\
``torch.nn.functional.{name}`` on poolgpu: {bins}.

Parameters
----------
input : torch.Tensor, numpy.ndarray or pg.Tensor
    {shape}; float32, float16 or bfloat16.
output_size : int or tuple of (int or None)
    The output's spatial size: {output_size}; 0 gives an empty output.
{device}

{returns}

{raises}
""".replace("{bins}", _BINS.format(what="average")), __name__)
