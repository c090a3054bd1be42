"""Fixed-window pooling: ``max_pool*``, ``avg_pool*``, ``lp_pool*``."""

from __future__ import annotations

import math
from typing import Optional

import numpy as np

from ..arguments import number
from ..descs import (AveragePooling1Desc, AveragePoolingGradDesc, LpPooling1Desc, LpPoolingGradDesc,
                     MaxPooling2Desc, MaxPoolingGradDesc, made)
from ..descs.pooling import LP_MAX_P
from ..device import Device
from ..dtypes import DataType
from ..errors import ValidationError
from ..tensor_desc import TensorDesc
from . import _quantized as quantized
from ._arguments import boolean, checked, integer_arg, return_flag, sizes_arg, window_args
from ._call import (FLOATS, MAX_TYPES, Call, Input, Output, Plan, Result, Size, as_float, as_host, gradient_plan,
                    negated, of_type, plane_indices)
from ._forms import function_forms
from ._ops import define_family, dispatch, torch_function

__all__ = ["max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d",
           "lp_pool1d", "lp_pool2d", "lp_pool3d"]

_WINDOW = "int[] kernel_size, int[] stride, int[] padding"


# -- max pooling ----------------------------------------------------------------------------


def _max_pool_plan(function, input, kernel, stride, padding, dilation, ceil_mode, *, device, return_indices):
    call = Call(input, function, len(kernel), MAX_TYPES, device)
    call.require_nonzero()
    fields, out = call.geometry(kernel, stride, padding, dilation, ceil_mode)
    out_sizes = call.sizes[:2] + out

    def forward():
        x = call.tensor()
        result = call.compute(made(MaxPooling2Desc, x.desc, output_indices=DataType.UINT32 if return_indices else None,
                                   **fields), x)
        if not return_indices:
            return result
        return result[0], plane_indices(result[1], math.prod(call.sizes[2:]))

    return Plan(call, ((out_sizes, call.dtype),) + (((out_sizes, np.dtype(np.int64)),) if return_indices else ()),
                forward)


def _max_pool_gradient(function, grad_output, input, kernel, stride, padding, dilation, ceil_mode, *, device):
    plan = _max_pool_plan(function, input, kernel, stride, padding, dilation, ceil_mode, device=device,
                          return_indices=False)
    call, fields = plan.call, plan.call.geometry(kernel, stride, padding, dilation, ceil_mode)[0]

    def compute():
        x, dy = call.tensor(), call.upload(grad_output)
        return call.compute(made(MaxPoolingGradDesc, x.desc, dy.desc, **fields), x, dy)

    return gradient_plan(plan, compute)


define_family("max_pool", f"Tensor input, {_WINDOW}, int[] dilation, bool ceil_mode, int? device_key",
              _max_pool_plan, _max_pool_gradient,
              lambda form, indices: torch_function(form, return_indices=indices), with_indices=True)


def _max_pool_form(dims: int):
    def max_pool(input: Input, kernel_size: Size, stride: Optional[Size] = None, padding: Size = 0,
                 dilation: Size = 1, ceil_mode: bool = False, return_indices: bool = False, *,
                 device: Optional[Device] = None) -> Result:
        f = f"max_pool{dims}d"
        window = window_args(dims, f, kernel_size, stride, padding, dilation, ceil_mode)
        if dims == 2 and quantized.is_quantized(input):
            quantized.check_two_values(f, kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation)
            return quantized.max_pool2d(input, *window, return_flag(return_indices, f), device)
        suffix = "_with_indices" if return_flag(return_indices, f) else ""
        return dispatch(f + suffix, input, *window, device=device)

    return max_pool


max_pool1d, max_pool2d, max_pool3d = function_forms("max_pool", _max_pool_form, """\
``torch.nn.functional.{name}`` on poolgpu: the maximum of each window.

Ties go to the first maximum in the window; a window holding NaN gives NaN and the index of
its first NaN (PyTorch's CPU: its last).

Parameters
----------
input : torch.Tensor, numpy.ndarray or pg.Tensor
    {shape}; float32, float16, bfloat16, int8, uint8, int16, int32 or int64.
kernel_size : int or tuple of int
    The window: {sizes}.
stride : int or tuple of int, optional
    The window's step, {sizes}; None (default) or ``()`` is ``kernel_size``.
padding : int or tuple of int, default 0
    Implicit -inf padding on both sides, {sizes}; at most half of ``kernel_size``.
dilation : int or tuple of int, default 1
    The spacing of the window's elements, {sizes}.
ceil_mode : bool, default False
    Round the output size up; a window that would start in the end padding is dropped.
return_indices : bool, default False
    Also return the maxima's int64 positions within each (n, c) plane (what
    :func:`max_unpool{d}d` takes).
{device}

Returns
-------
output, or (output, indices)
    Of the input's kind (torch, NumPy or poolgpu) and data type; indices int64.

{raises}
""", __name__)


# -- average pooling ------------------------------------------------------------------------


def _avg_pool_plan(function, input, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override, *,
                   device):
    dims = len(kernel)
    call = Call(input, function, dims, FLOATS, device)
    call.require_nonzero()
    fields, out = call.geometry(kernel, stride, padding, (1,) * dims, ceil_mode, check_input_size=dims == 3)
    # DirectML's divisor is positive; PyTorch's any int but 0: a negative one negates (exactly)
    negate = divisor_override is not None and divisor_override < 0
    divisor = dict(include_padding=count_include_pad, counted_end_padding=fields["start_padding"],
                   divisor_override=abs(divisor_override) if negate else divisor_override)

    def forward():
        x = call.tensor()
        y, = call.compute(made(AveragePooling1Desc, x.desc, **divisor, **fields), x)
        return (negated(as_host(y)) if negate else y,)

    plan = Plan(call, ((call.sizes[:2] + out, call.dtype),), forward)
    return plan, fields, divisor, negate


def _avg_pool_gradient(function, grad_output, input, *arguments, device):
    plan, fields, divisor, negate = _avg_pool_plan(function, input, *arguments, device=device)
    call = plan.call

    def compute():
        dy = call.upload_host(negated(call.host_of(grad_output))) if negate else call.upload(grad_output)
        dx = TensorDesc(dy.data_type, call.sizes)
        return call.compute(made(AveragePoolingGradDesc, dy.desc, dx, **divisor, **fields), dy)

    return gradient_plan(plan, compute)


def _exported_avg_pool(form: str, _):
    function = torch_function(form)
    if form == "avg_pool1d":  # (no divisor_override there)
        return lambda input, kernel, stride, padding, ceil_mode, count_include_pad, _: function(
            input, kernel, stride, padding, ceil_mode, count_include_pad)
    return function


define_family("avg_pool", f"Tensor input, {_WINDOW}, bool ceil_mode, bool count_include_pad, int? divisor_override, "
                          f"int? device_key", lambda *a, **k: _avg_pool_plan(*a, **k)[0], _avg_pool_gradient,
              _exported_avg_pool)


def _avg_pool(dims, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, device):
    f = f"avg_pool{dims}d"
    kernel, strides, padding, _, ceil_mode = window_args(dims, f, kernel_size, stride, padding, 1, ceil_mode)
    if divisor_override is not None:  # PyTorch takes any int but 0
        divisor_override = integer_arg(divisor_override, "divisor_override", f, minimum=-(2**32 - 1))
        if divisor_override == 0:
            raise ValidationError("divisor_override", f"{f}: divisor_override must not be 0")
    count_include_pad = boolean(count_include_pad, "count_include_pad", f)
    if dims == 2 and quantized.is_quantized(input):
        return quantized.avg_pool2d(input, kernel, strides, padding, ceil_mode, count_include_pad, divisor_override,
                                    device)
    return dispatch(f, input, kernel, strides, padding, ceil_mode, count_include_pad, divisor_override, device=device)


def _avg_pool_form(dims: int):
    if dims == 1:  # as PyTorch's avg_pool1d: no divisor_override
        def avg_pool(input: Input, kernel_size: Size, stride: Optional[Size] = None, padding: Size = 0,
                     ceil_mode: bool = False, count_include_pad: bool = True, *,
                     device: Optional[Device] = None) -> Output:
            return _avg_pool(1, input, kernel_size, stride, padding, ceil_mode, count_include_pad, None, device)
        return avg_pool

    def avg_pool(input: Input, kernel_size: Size, stride: Optional[Size] = None, padding: Size = 0,
                 ceil_mode: bool = False, count_include_pad: bool = True, divisor_override: Optional[int] = None, *,
                 device: Optional[Device] = None) -> Output:
        return _avg_pool(dims, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override,
                         device)

    return avg_pool


_AT_LEAST = ("", "", "; each spatial size at least the kernel's (as PyTorch checks)")
_DIVISOR = """
divisor_override : int, optional
    If given, every window's sum is divided by it: any int but 0, as PyTorch takes (at most
    2**32 - 1 either way)."""

avg_pool1d, avg_pool2d, avg_pool3d = function_forms("avg_pool", _avg_pool_form, """\
``torch.nn.functional.{name}`` on poolgpu: the average of each window.

Parameters
----------
input : torch.Tensor, numpy.ndarray or pg.Tensor
    {shape}; float32, float16 or bfloat16{at_least}.
kernel_size : int or tuple of int
    The window: {sizes}.
stride : int or tuple of int, optional
    The window's step, {sizes}; None (default) or ``()`` is ``kernel_size``.
padding : int or tuple of int, default 0
    Implicit zero padding on both sides, {sizes}; at most half of ``kernel_size``.
ceil_mode : bool, default False
    Round the output size up; a window that would start in the end padding is dropped.
count_include_pad : bool, default True
    Divide by the window clipped to the padded input (``ceil_mode``'s extra end does not
    count); False: by the input elements the window covers.{divisor}
{device}

{returns}  Sums accumulate in float32.

{raises}
""", __name__, divisor=("", _DIVISOR, _DIVISOR), at_least=_AT_LEAST)


# -- Lp pooling -----------------------------------------------------------------------------


def _lp_pool_plan(function, input, p, kernel, stride, ceil_mode, *, device):
    return _lp_pool_parts(function, input, p, kernel, stride, ceil_mode, device=device)[0]


def _lp_pool_parts(function, input, p, kernel, stride, ceil_mode, *, device):
    """(the plan, the window fields, each output's scale: PyTorch computes
    ``(avg_pool(x ** p) * prod(kernel)) ** (1 / p)``, so a window that ``ceil_mode`` clips is
    scaled by ``(prod(kernel) / covered) ** (1 / p)``, None where no window is clipped)."""
    dims = len(kernel)
    call = Call(input, function, dims, FLOATS, device)
    call.require_nonzero()
    fields, out = call.geometry(kernel, stride, (0,) * dims, (1,) * dims, ceil_mode, check_input_size=dims == 3)
    scale = None
    if fields["end_padding"] != fields["start_padding"] and not math.isinf(p):
        covered = np.ones((1,) * len(out), np.float64)
        for axis, (n, k, s, o) in enumerate(zip(call.sizes[2:], fields["window_size"], fields["strides"], out)):
            starts = np.arange(o) * s
            counts = np.minimum(starts + k, n) - starts
            covered = covered * counts.reshape((-1,) + (1,) * (len(out) - 1 - axis))
        scale = (math.prod(fields["window_size"]) / covered) ** (1 / p)

    def forward():
        if math.isinf(p):  # PyTorch: max_pool of |x|
            x = call.upload_host(_magnitudes(call.host()))
            return call.compute(made(MaxPooling2Desc, x.desc, **fields), x)
        x = call.tensor()
        y, = call.compute(made(LpPooling1Desc, x.desc, p=p, **fields), x)
        return (y,) if scale is None else (of_type(as_float(as_host(y)) * scale, call.dtype),)

    return Plan(call, ((call.sizes[:2] + out, call.dtype),), forward), fields, scale


def _magnitudes(values: np.ndarray) -> np.ndarray:
    """|values|, exactly (bfloat16's bits: the sign bit cleared)."""
    return values & np.uint16(0x7FFF) if values.dtype == np.uint16 else np.abs(values)


def _lp_pool_gradient(function, grad_output, input, p, kernel, stride, ceil_mode, *, device):
    """PyTorch's gradient where its forward agrees: ``d y / d x = sign(x) * (|x| / y) ** (p - 1)``
    of each window (poolgpu's Lp pooling gradient), times a clipped window's scale; for
    ``p = inf``, max pooling's gradient of ``|x|`` times ``sign(x)``."""
    plan, fields, scale = _lp_pool_parts(function, input, p, kernel, stride, ceil_mode, device=device)
    call = plan.call

    def compute():
        if math.isinf(p):
            host = call.host()
            x, dy = call.upload_host(_magnitudes(host)), call.upload(grad_output)
            dx, = call.compute(made(MaxPoolingGradDesc, x.desc, dy.desc, **fields), x, dy)
            return (of_type(as_float(as_host(dx)) * np.sign(as_float(host)), call.dtype),)
        x = call.tensor()
        if scale is None:
            dy = call.upload(grad_output)
        else:
            dy = call.upload_host(of_type(as_float(call.host_of(grad_output)) * scale, call.dtype))
        return call.compute(made(LpPoolingGradDesc, x.desc, dy.desc, p=p, **fields), x, dy)

    return gradient_plan(plan, compute)


def _exported_lp_pool(form: str, _):
    function = torch_function(form)
    if form == "lp_pool1d":  # (its kernel_size an int: it multiplies by it)
        return lambda input, p, kernel, stride, ceil_mode: function(input, p, kernel[0], stride, ceil_mode)
    return function


define_family("lp_pool", "Tensor input, float norm_type, int[] kernel_size, int[] stride, bool ceil_mode, "
                         "int? device_key", _lp_pool_plan, _lp_pool_gradient, _exported_lp_pool)


def _lp_pool_form(dims: int):
    def lp_pool(input: Input, norm_type: float, kernel_size: Size, stride: Optional[Size] = None,
                ceil_mode: bool = False, *, device: Optional[Device] = None) -> Output:
        f = f"lp_pool{dims}d"
        # PyTorch's lp_pool1d multiplies by kernel_size (an int); lp_pool2d/3d unpack it into 2 or 3
        kernel = sizes_arg(kernel_size, dims, "kernel_size", f, lengths=(dims,) if dims > 1 else ())
        kernel, strides, _, _, ceil_mode = window_args(dims, f, kernel_size, stride, 0, 1, ceil_mode, kernel=kernel)
        if isinstance(norm_type, (int, float)) and norm_type == math.inf:  # PyTorch's test for its max_pool path
            p = math.inf
        else:  # poolgpu's Lp pooling needs p >= 1 (and refuses a p whose powers overflow)
            p = float(checked(f, number, norm_type, "norm_type", minimum=1, maximum=LP_MAX_P))
        return dispatch(f, input, p, kernel, strides, ceil_mode, device=device)

    return lp_pool


lp_pool1d, lp_pool2d, lp_pool3d = function_forms("lp_pool", _lp_pool_form, """\
``torch.nn.functional.{name}`` on poolgpu: ``(sum x ** p) ** (1 / p)`` over each window.

PyTorch's result for non-negative inputs and even integer ``norm_type`` (poolgpu sums
``|x| ** p``).  PyTorch computes ``(avg_pool(x ** p) * prod(kernel_size)) ** (1 / p)``, so a
window ``ceil_mode`` clips is scaled by ``(prod(kernel_size) / covered) ** (1 / p)``; so is
poolgpu's.  Differentiable: PyTorch's gradient where the results agree, 0 for a window of
zeros (PyTorch's: NaN), through poolgpu's deterministic gather.

Parameters
----------
input : torch.Tensor, numpy.ndarray or pg.Tensor
    {shape}; float32, float16 or bfloat16{at_least}.
norm_type : float
    ``p``, from 1 to 64, or ``math.inf`` (the maximum of ``|x|``).
kernel_size : int or tuple of int
    The window: {lp_kernel}.
stride : int or tuple of int, optional
    The window's step, {sizes}; None (default) or ``()`` is ``kernel_size``.
ceil_mode : bool, default False
    Round the output size up; a window that would start past the input is dropped.
{device}

{returns}

{raises}
    Also for ``norm_type`` below 1 or above 64.
""", __name__, at_least=_AT_LEAST,
    lp_kernel=("an int (PyTorch multiplies by it)", "an int or a tuple of 2 ints (PyTorch unpacks it)",
               "an int or a tuple of 3 ints (PyTorch unpacks it)"))
